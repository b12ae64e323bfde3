//! The real app's variants a goods can put on screen, and every wording they show — kept in
//! one place so the screens, the app model and the README agree.
//!
//! Wordings come from `shared/design/field-notes.md` §3/§3a and the real dumps: the payment
//! row `使用#微信支付，更换支付方式` (the `#` stands where the app draws an icon), 先用后付
//! accounts whose order button reads 0元下单 and whose orders read 确认收货后自动付款,
//! password-free 多多支付 (免密支付), the 待付款 list's deep link, and order details whose
//! paid amount is written `实付:` + `12.50元`.

use serde::{Deserialize, Serialize};

/// How the account pays for an order of this goods (catalog key `payment_method`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PaymentMethod {
    /// 微信支付: 提交订单 creates an unpaid order and opens the cashier (the default).
    #[default]
    Wechat,
    /// 先用后付: 提交订单 commits the order, payment is taken after delivery.
    PayLater,
    /// 多多支付 without a password (免密支付): 提交订单 pays at once.
    PasswordFree,
}

impl PaymentMethod {
    /// Text of the payment row on the sheet and on 确认订单.
    pub fn row_text(self) -> &'static str {
        match self {
            PaymentMethod::Wechat => "使用#微信支付，更换支付方式",
            PaymentMethod::PayLater => "使用#先用后付，确认收货后自动付款",
            PaymentMethod::PasswordFree => "使用#多多支付(免密支付)，更换支付方式",
        }
    }

    /// Label of the order button (the sheet's footer adds " ¥TOTAL").
    pub fn submit_label(self) -> &'static str {
        match self {
            PaymentMethod::Wechat | PaymentMethod::PasswordFree => "提交订单",
            PaymentMethod::PayLater => "先用后付 0元下单",
        }
    }

    /// Ledger status of an order placed with this method.
    pub fn placed_status(self) -> &'static str {
        match self {
            PaymentMethod::Wechat => STATUS_UNPAID,
            PaymentMethod::PayLater => STATUS_COMMITTED_UNPAID,
            PaymentMethod::PasswordFree => STATUS_PAID,
        }
    }
}

/// The order button of a sheet that orders directly, i.e. of goods without `confirm_page`
/// (catalog key `checkout_button`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CheckoutButton {
    /// "提交订单 ¥T" (or the 先用后付 wording): the default.
    #[default]
    Submit,
    /// "确定", with the total as two labels "合计：" + "¥T" where "添加" is otherwise.
    Confirm,
    /// "确定" with no total anywhere on the sheet (the left part stays "添加").
    ConfirmNoTotal,
    /// "立即支付 ¥T": places the order and pays it at once (支付成功).
    PayNow,
}

/// The footer button of `checkout_button: confirm` / `confirm_no_total`.
pub const CONFIRM: &str = "确定";
/// The label before the total on the footer's left part (`checkout_button: confirm`) and
/// on 确认订单's bottom bar.
pub const TOTAL_LABEL: &str = "合计：";

impl CheckoutButton {
    /// The footer's text for the shown total `total` ("47.2").
    pub fn footer_label(self, m: PaymentMethod, total: &str) -> String {
        match self {
            CheckoutButton::Submit => format!("{} ¥{total}", m.submit_label()),
            CheckoutButton::Confirm | CheckoutButton::ConfirmNoTotal => CONFIRM.to_string(),
            CheckoutButton::PayNow => format!("立即支付 ¥{total}"),
        }
    }

    /// The footer's left part shows 合计 + the total instead of 添加.
    pub fn total_on_the_left(self) -> bool {
        self == CheckoutButton::Confirm
    }

    /// The button pays as it orders.
    pub fn pays_at_once(self) -> bool {
        self == CheckoutButton::PayNow
    }
}

/// How 确认订单 draws the quantity (catalog key `confirm_page_quantity`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmPageQuantity {
    /// A label "x2" beside the unit price (the default).
    #[default]
    Text,
    /// The sheet's stepper (减少数量 / EditText / 增加数量), working on 确认订单 itself.
    Stepper,
}

/// The 多多支付 promo bubble over the sheet's order button (`footer_promo`) and the page a
/// tap on it opens.
pub const FOOTER_PROMO_TEXT: &str = "开通多多支付，本单立减5元";
/// Content-desc of the bubble's close icon.
pub const FOOTER_PROMO_CLOSE: &str = "关闭提示";
/// Title of the page the bubble opens.
pub const PAY_PROMO_TITLE: &str = "开通多多支付";
/// The page's (and the payment offers') sign-up button: never to be tapped.
pub const ACTIVATE: &str = "立即开通";

/// The status text of this goods' unpaid orders on their order-list card and detail page
/// (catalog key `unpaid_wording`; the list's tab reads 待付款 whatever it is).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub enum UnpaidWording {
    /// 待付款 (the default).
    #[default]
    #[serde(rename = "待付款")]
    DaiFuKuan,
    /// 待支付.
    #[serde(rename = "待支付")]
    DaiZhiFu,
    /// 等待付款.
    #[serde(rename = "等待付款")]
    DengDaiFuKuan,
}

impl UnpaidWording {
    pub fn text(self) -> &'static str {
        match self {
            UnpaidWording::DaiFuKuan => "待付款",
            UnpaidWording::DaiZhiFu => "待支付",
            UnpaidWording::DengDaiFuKuan => "等待付款",
        }
    }
}

/// The dialog an order button raises while an unpaid order of the same goods waits
/// (`repeat_order_prompt`).
pub const REPEAT_ORDER_TITLE: &str = "相同商品订单待支付";
/// Its 去支付 (the newest such order's cashier) and 继续下单 (a second order).
pub const REPEAT_ORDER_PAY: &str = "去支付";
pub const REPEAT_ORDER_CONTINUE: &str = "继续下单";

/// The dialog's message for `count` unpaid orders of the same goods.
pub fn repeat_order_message(count: usize) -> String {
    format!("您有{count}笔相同商品的订单尚未支付，是否继续下单？")
}

/// The offer laid over the cashier after an order placed with 微信支付 (catalog key
/// `payment_offer`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PaymentOffer {
    /// No offer (the default).
    #[default]
    None,
    /// 开通免密支付.
    PasswordFree,
    /// 开通先用后付.
    PayLater,
}

/// The offers' decline button (立即开通 is [`ACTIVATE`]).
pub const DECLINE: &str = "暂不开通";

impl PaymentOffer {
    pub fn title(self) -> &'static str {
        match self {
            PaymentOffer::PayLater => "开通先用后付",
            _ => "开通免密支付",
        }
    }
    pub fn text(self) -> &'static str {
        match self {
            PaymentOffer::PayLater => "先收货后付款，确认收货后自动付款",
            _ => "开通后小额订单无需输入密码，支付更便捷",
        }
    }
    /// The toast 立即开通 raises.
    pub fn accepted_toast(self) -> &'static str {
        match self {
            PaymentOffer::PayLater => "先用后付已开通",
            _ => "免密支付已开通",
        }
    }
}

/// Where the order button of a 微信支付 order hands the payment (catalog key
/// `payment_handoff`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum PaymentHandoff {
    /// PDD's own cashier (the default).
    #[default]
    None,
    /// WeChat (`com.tencent.mm`) comes to the front with its pay sheet; PDD's cashier waits
    /// behind it.
    Wechat,
}

/// The labels of WeChat's pay sheet (`payment_handoff: "wechat"`).
pub const WECHAT_PAY_TITLE: &str = "微信支付";
pub const WECHAT_PAY_PAYEE: &str = "支付给拼多多";
pub const WECHAT_PAY_BUTTON: &str = "立即支付";

/// An amount as WeChat's pay sheet writes it, always two decimals: "¥47.20".
pub fn yuan_two_decimals(cent: i64) -> String {
    let c = cent.max(0);
    format!("¥{}.{:02}", c / 100, c % 100)
}

/// Ledger status: waiting in 待付款 (the only status the simulated cashier produces).
pub const STATUS_UNPAID: &str = "unpaid";
/// Ledger status: committed under 先用后付 — binding, shipped, paid after delivery.
pub const STATUS_COMMITTED_UNPAID: &str = "committed_unpaid";
/// Ledger status: paid at once (免密支付).
pub const STATUS_PAID: &str = "paid";
/// Ledger status: 取消订单.
pub const STATUS_CANCELLED: &str = "cancelled";

/// Headline of the page after an order that needs no cashier.
pub fn placed_headline(m: PaymentMethod, b: CheckoutButton) -> &'static str {
    match (m, b) {
        (_, CheckoutButton::PayNow) | (PaymentMethod::PasswordFree, _) => "支付成功",
        _ => "下单成功",
    }
}

/// Line under the headline: 确认收货后自动付款¥P / 免密支付 实付¥P / 实付¥P (立即支付).
pub fn placed_note(m: PaymentMethod, b: CheckoutButton, total: &str) -> String {
    match (m, b) {
        (_, CheckoutButton::PayNow) => format!("实付¥{total}"),
        (PaymentMethod::PayLater, _) => format!("先用后付 确认收货后自动付款¥{total}"),
        _ => format!("免密支付 实付¥{total}"),
    }
}

/// How the profile page draws its 待付款 entry (catalog key `order_list_entry`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OrderListEntry {
    /// Accessible cells 待付款 / 待分享 / … (the default).
    #[default]
    Label,
    /// Drawn on canvas: one blank view, no text, no entry a dump can find or a tap reach.
    Canvas,
}

/// How an order's detail page is laid out (catalog key `order_detail`).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OrderDetailForm {
    /// Everything on the first screen, 实付款 + "¥118" (the default).
    #[default]
    Open,
    /// Longer than a screen, 实付: + "118.00元", 下单时间 behind 查看更多订单信息.
    Folded,
}

/// The fold's button on a folded order detail.
pub const MORE_ORDER_INFO: &str = "查看更多订单信息";

/// The 待付款 list's deep link (field notes §3a); `https://mobile.yangkeduo.com/` works too.
pub const UNPAID_ORDERS_URL: &str = "pinduoduo://com.xunmeng.pinduoduo/orders.html?type=1";

/// The sheet's button on goods that go through 确认订单: 确定 (拼单) / 立即购买 (单独购买).
pub fn confirm_button(group_buy: bool) -> &'static str {
    if group_buy {
        "确定"
    } else {
        "立即购买"
    }
}

/// Paid amount the folded detail writes without ¥: "12.50元".
pub fn yuan_with_unit(cent: i64) -> String {
    let c = cent.max(0);
    format!("{}.{:02}元", c / 100, c % 100)
}

/// Status of an order on its detail page and its order-list card: the goods' unpaid
/// wording, 待发货 (paid, or committed under 先用后付), 已取消.
pub fn order_status_text(status: &str, unpaid: UnpaidWording) -> &'static str {
    match status {
        STATUS_UNPAID => unpaid.text(),
        STATUS_COMMITTED_UNPAID | STATUS_PAID => "待发货",
        _ => "已取消",
    }
}

/// The label a 先用后付 order's card carries beside its status.
pub const PAY_LATER_LABEL: &str = "先用后付";

/// The 全部 tab's deep link (`type=0`); `type=1` is the 待付款 tab.
pub const ALL_ORDERS_URL: &str = "pinduoduo://com.xunmeng.pinduoduo/orders.html?type=0";

/// The detail page's 支付方式 line.
pub fn order_payment_text(status: &str) -> &'static str {
    match status {
        STATUS_UNPAID => "支付方式：未支付",
        STATUS_COMMITTED_UNPAID => "支付方式：先用后付",
        STATUS_PAID => "支付方式：多多支付",
        _ => "支付方式：—",
    }
}
