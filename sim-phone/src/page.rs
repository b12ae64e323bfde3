//! The app's pages and what sits over them: [`Page`] (the stack entries), the SKU sheet's
//! state, popups and when they appear, and the quantity limit the sheet enforces. Plain
//! data shared by the app model (`app.rs`) and the screens that draw it (`screens/`).

use crate::catalog::{Goods, Selection};

/// A popup the app may lay over a page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PopupKind {
    /// 专属现金红包 with 开心收下 and a 关闭弹窗 icon.
    RedPacket,
    /// 发现新版本 with 立即升级 / 下次再说.
    Upgrade,
    /// 青少年模式 with 我知道了.
    TeenMode,
}

/// When popups appear. A "page view" is every arrival on the home page or a goods page.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum PopupSchedule {
    /// Never.
    #[default]
    Off,
    /// On each page view with this probability (percent), kind chosen by the seeded RNG.
    Seeded { percent: u8 },
    /// Exactly at these page views (1-based).
    At(Vec<(u64, PopupKind)>),
}

/// The sheet's state: which goods, what is selected, how far things are scrolled.
#[derive(Debug, Clone, PartialEq)]
pub struct SheetState {
    pub goods_id: String,
    pub sel: Selection,
    pub qty: u32,
    /// Horizontal scroll offset of each dimension's image grid (px).
    pub hscroll: Vec<i32>,
    /// Vertical scroll offset of the option list (px).
    pub vscroll: i32,
    /// The quantity field has focus (`input text 3` then sets the quantity).
    pub qty_focused: bool,
    /// Opened through 发起拼单 (true) or 单独购买 (false).
    pub group_buy: bool,
    /// The footer still shows an earlier total: (that total, dumps left). Set by a
    /// selection or quantity change on goods with `total_lag_dumps`, counted down by dumps.
    pub lag: Option<(i64, u32)>,
    /// The 多多支付 promo bubble over the footer (`footer_promo`) was closed (关闭提示).
    pub promo_closed: bool,
}

/// The order list's tab on screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OrderTab {
    /// 全部: every order, newest first, with its status.
    All,
    /// 待付款: the unpaid orders only.
    #[default]
    Unpaid,
}

/// One page of the app.
#[derive(Debug, Clone, PartialEq)]
pub enum Page {
    Home {
        scroll: i32,
    },
    Goods {
        goods_id: String,
    },
    Sheet(SheetState),
    /// The full-page 确认订单 of goods with `confirm_page`: the sheet's choice (its quantity
    /// editable there with `confirm_page_quantity: stepper`).
    Confirm(SheetState),
    Payment {
        order_sn: String,
    },
    Abandon {
        order_sn: String,
    },
    PayResult {
        order_sn: String,
    },
    /// After an order that needed no cashier (先用后付, 免密支付): 下单成功 / 支付成功.
    OrderResult {
        order_sn: String,
    },
    Profile,
    OrderList {
        scroll: i32,
        tab: OrderTab,
    },
    /// `scroll` is the vertical offset; `expanded` once 查看更多订单信息 was tapped.
    OrderDetail {
        order_sn: String,
        scroll: i32,
        expanded: bool,
    },
    /// 相同商品订单待支付 over the sheet or 确认订单 (`repeat_order_prompt`): an unpaid order
    /// of this goods waits; the page it is over is the one below it on the stack.
    RepeatOrder {
        goods_id: String,
    },
    /// An offer (开通免密支付 / 开通先用后付) over the cashier of `order_sn`
    /// (`payment_offer`), which is below it on the stack.
    PaymentOffer {
        order_sn: String,
        offer: crate::variants::PaymentOffer,
    },
    /// 开通多多支付: what a tap on the promo bubble over the sheet's footer opens.
    PayPromo,
    Login,
    Risk,
    NotFound {
        message: String,
    },
}

impl Page {
    /// Stable name for tests and logs.
    pub fn name(&self) -> &'static str {
        match self {
            Page::Home { .. } => "home",
            Page::Goods { .. } => "goods",
            Page::Sheet(_) => "sku_sheet",
            Page::Confirm(_) => "confirm_order",
            Page::OrderResult { .. } => "order_result",
            Page::Payment { .. } => "payment",
            Page::Abandon { .. } => "abandon_dialog",
            Page::PayResult { .. } => "pay_result",
            Page::Profile => "profile",
            Page::OrderList { .. } => "order_list",
            Page::OrderDetail { .. } => "order_detail",
            Page::PayPromo => "pay_promo",
            Page::RepeatOrder { .. } => "repeat_order_dialog",
            Page::PaymentOffer { .. } => "payment_offer_dialog",
            Page::Login => "login",
            Page::Risk => "risk",
            Page::NotFound { .. } => "not_found",
        }
    }

    /// Activity `dumpsys window` reports for this page.
    pub fn activity(&self) -> &'static str {
        match self {
            Page::Home { .. } | Page::Profile => {
                "com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.ui.activity.HomeActivity"
            }
            Page::Goods { .. }
            | Page::Sheet(_)
            | Page::Confirm(_)
            | Page::PayPromo
            | Page::RepeatOrder { .. }
            | Page::NotFound { .. } => {
                "com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.activity.NewPageActivity"
            }
            Page::Payment { .. }
            | Page::PaymentOffer { .. }
            | Page::Abandon { .. }
            | Page::PayResult { .. }
            | Page::OrderResult { .. } => {
                "com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.pay.PayActivity"
            }
            Page::OrderList { .. } | Page::OrderDetail { .. } => {
                "com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.order.OrderActivity"
            }
            Page::Login => "com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.login.LoginActivity",
            Page::Risk => "com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.risk.VerifyActivity",
        }
    }
}

impl Page {
    /// The order list on `tab`, at the top.
    pub fn order_list(tab: OrderTab) -> Page {
        Page::OrderList { scroll: 0, tab }
    }

    /// A detail page of `order_sn`, at the top, folded.
    pub fn order_detail(order_sn: impl Into<String>) -> Page {
        Page::OrderDetail {
            order_sn: order_sn.into(),
            scroll: 0,
            expanded: false,
        }
    }
}

/// The most anyone may order at once, whatever the goods allow.
pub const QTY_CAP: u32 = 999;

impl SheetState {
    /// The sheet as 单独购买 / 发起拼单 opens it: options preselected where there is one
    /// choice (or the goods preselect), quantity 1, nothing scrolled.
    pub fn new(g: &Goods, group_buy: bool) -> SheetState {
        let mut sel: Selection = vec![None; g.dimensions.len()];
        for (di, d) in g.dimensions.iter().enumerate() {
            let avail: Vec<usize> = (0..d.options.len())
                .filter(|&oi| g.option_available(&sel, di, oi))
                .collect();
            if (d.options.len() == 1 || g.preselect_first) && !avail.is_empty() {
                sel[di] = Some(avail[0]);
            }
        }
        SheetState {
            goods_id: g.goods_id.clone(),
            sel,
            qty: 1,
            hscroll: vec![0; g.dimensions.len()],
            vscroll: 0,
            qty_focused: false,
            group_buy,
            lag: None,
            promo_closed: false,
        }
    }
}

impl SheetState {
    /// The total the footer shows: a lagging earlier total, or the real one.
    pub fn shown_total(&self, g: &Goods) -> i64 {
        match self.lag {
            Some((t, n)) if n > 0 => t,
            _ => g.total_cent(&self.sel, self.qty),
        }
    }
}

/// Most a buyer may order of this selection: the purchase limit, and the stock once every
/// dimension is chosen.
pub fn qty_limit(g: &Goods, sel: &Selection) -> u32 {
    let mut limit = g.max_quantity.unwrap_or(QTY_CAP).min(QTY_CAP);
    if let Some(full) = sel.iter().copied().collect::<Option<Vec<usize>>>() {
        limit = limit.min(g.stock_of(&full));
    }
    limit
}
