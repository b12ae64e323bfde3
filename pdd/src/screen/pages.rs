//! Recognizers for every page kind but the SKU sheet (see [`super::sku_sheet`]).
//!
//! Each page kind has a `detect_*` (cheap: "is this it?") and, where the flows need
//! fields, an `extract_*`. Detection order and precedence live in
//! [`super::recognize`]; here each function only answers for its own page.

use chrono::{DateTime, FixedOffset, NaiveDate, TimeZone};
use regex::Regex;
use serde::Serialize;
use std::sync::OnceLock;

use super::kind::ScreenKind;
use super::label_index::{
    first_price, has_money_word, is_skip_countdown, trim_name, Page, ABANDON_LEAVE, ABANDON_TITLE,
    ACCEPT_GIFT, CLOSE_DESC, DISMISS, LOGIN, MAX_KEYWORD_LABEL, ORDER_STATUSES, ORDER_TABS,
    PAYMENT_BUTTONS, PAYMENT_MARKERS, POPUP_MARKERS, RISK_STRONG, RISK_WEAK, SIGNS,
};
use super::sku_sheet::ListView;
use super::target::Target;
use super::tree::{Bounds, NodeRef, Point, Tree};
use crate::money::{parse_price, parse_yuan, price_from_parts, Fen};

// ---------------------------------------------------------------------------------------
// Risk and login
// ---------------------------------------------------------------------------------------

/// A verification / risk page: stop, a human is needed (`RISK_VERIFICATION`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RiskVerification {
    /// The label that gave it away ("安全验证", "拖动滑块完成拼图").
    pub marker: String,
}

pub fn detect_risk(page: &Page<'_>, weak_too: bool) -> Option<RiskVerification> {
    let hit = page
        .containing(RISK_STRONG)
        .or_else(|| weak_too.then(|| page.containing(RISK_WEAK)).flatten())?;
    Some(RiskVerification {
        marker: Page::label_of(&hit).to_string(),
    })
}

/// A login page or login sheet (`LOGIN_REQUIRED`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LoginRequired {
    pub marker: String,
}

pub fn detect_login(page: &Page<'_>) -> Option<LoginRequired> {
    let hit = page.containing(LOGIN).or_else(|| {
        // A bare "登录" button counts only next to a phone/code field.
        let button = page.exact(&["登录", "登 录"])?;
        page.containing(&["手机号", "验证码", "密码"])
            .map(|_| button)
    })?;
    Some(LoginRequired {
        marker: Page::label_of(&hit).to_string(),
    })
}

// ---------------------------------------------------------------------------------------
// Payment-abandon dialog
// ---------------------------------------------------------------------------------------

/// The retention dialog after backing out of payment ("确定放弃吗?", "继续支付，仅¥59",
/// "先去逛逛"). The way out is [`AbandonDialog::leave`]; never 继续支付.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AbandonDialog {
    pub title: Option<String>,
    /// The label of the leave button ("先去逛逛").
    pub leave_button: Option<String>,
    pub leave: Option<Target>,
    /// The dialog's unlabeled close icon, if any (a second way out).
    pub close: Option<Target>,
    /// The amount the "continue" button quotes ("，仅¥59" → 5900).
    #[serde(rename = "continue_amount_cent")]
    pub continue_amount: Option<Fen>,
}

pub fn detect_abandon(page: &Page<'_>) -> bool {
    let title = page.containing(ABANDON_TITLE).is_some();
    let cont = page.starting(&["继续支付", "继续付款"], 12).is_some();
    let leave = page.exact(ABANDON_LEAVE).is_some();
    (title && (cont || leave)) || (cont && leave)
}

pub fn extract_abandon(page: &Page<'_>) -> AbandonDialog {
    let title = page
        .containing(ABANDON_TITLE)
        .map(|n| Page::label_of(&n).to_string());
    // Leave labels are an allow-list; "放弃支付" is the only one with a money word.
    let leave = page
        .exact(ABANDON_LEAVE)
        .filter(|n| {
            let l = Page::label_of(n);
            !l.contains("继续") && !l.contains("立即") && !l.contains("去支付")
        })
        .and_then(Target::of);
    let cont = page.starting(&["继续支付", "继续付款"], 12);
    let continue_amount = cont.and_then(|c| {
        let parts: Vec<&str> = c.nearest_clickable().unwrap_or(c).texts().collect();
        price_from_parts(parts.iter().copied())
    });
    let anchor = page.containing(ABANDON_TITLE).or(cont);
    let close = dialog_close_icon(page, cont, anchor);
    AbandonDialog {
        title,
        leave_button: leave.as_ref().map(|t| t.label.clone()),
        leave,
        close,
        continue_amount,
    }
}

/// A close icon: a clickable node with a close content-desc, or an unlabeled (NAF)
/// small, roughly square clickable image. Never the same clickable as `avoid`.
///
/// A dialog is drawn after (on top of) the page it covers, so only candidates after
/// `anchor` in document order count when an anchor (the dialog's title or marker) is
/// known: the SKU sheet under a popup has its own "关闭", and tapping that would close
/// the sheet, not the popup. Without an anchor the last candidate wins.
fn dialog_close_icon(
    page: &Page<'_>,
    avoid: Option<NodeRef<'_>>,
    anchor: Option<NodeRef<'_>>,
) -> Option<Target> {
    let avoid_click = avoid.and_then(|a| a.nearest_clickable()).map(|a| a.id());
    let after = |n: &NodeRef<'_>| anchor.is_none_or(|a| n.id() > a.id());
    let by_desc = page
        .labels(|l| CLOSE_DESC.contains(&l))
        .filter(|n| CLOSE_DESC.contains(&trim_name(n.desc())))
        .filter(|n| n.nearest_clickable().map(|c| c.id()) != avoid_click)
        .filter(after)
        .last();
    if let Some(n) = by_desc {
        return Target::with_label(n, trim_name(n.desc()));
    }
    // Small and roughly square: an icon, not a banner or a row.
    let icon_side = page.tree.screen().width().max(1) / 6;
    page.tree
        .nodes()
        .rfind(|n| {
            let b = n.bounds();
            n.is_clickable()
                && n.is_visible()
                && n.text().trim().is_empty()
                && n.desc().trim().is_empty()
                && (n.is_naf() || n.class_name() == "ImageView")
                && n.children().next().is_none()
                && Some(n.id()) != avoid_click
                && after(n)
                && b.width() > 0
                && b.width() <= icon_side
                && b.height() <= icon_side
                && (b.width() - b.height()).abs() <= b.width().max(b.height()) / 2
        })
        .and_then(|n| Target::with_label(n, "×"))
}

// ---------------------------------------------------------------------------------------
// After the submit: the repeat-order dialog, payment offers, another payment app
// ---------------------------------------------------------------------------------------

/// Wordings of the dialog PDD raises on an order button when an unpaid order of the same
/// goods exists ("相同商品订单待支付", "您有1笔相同商品的订单尚未支付，是否继续下单？").
pub const REPEAT_ORDER_MARKERS: &[&str] = &[
    "相同商品",
    "同款商品的订单",
    "已有待支付订单",
    "有待支付订单",
];

/// The repeat-order dialog: its 继续下单 would place a second order and its 去支付 pays
/// the earlier one — neither is ever tapped; the way out is the close icon or BACK.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RepeatOrderDialog {
    /// The label that gave it away.
    pub marker: String,
    /// The close icon, when the dialog has one (else BACK).
    pub close: Option<Target>,
}

fn is_repeat_marker(l: &str) -> bool {
    REPEAT_ORDER_MARKERS.iter().any(|w| l.contains(w)) && l.chars().count() <= 40
}

/// 去支付 / 去付款 (an amount allowed): the dialog's way to pay the earlier order.
fn is_go_pay(l: &str) -> bool {
    matches!(
        crate::screen::controls::label_core(l).as_str(),
        "去支付" | "去付款"
    )
}

/// The repeat-order dialog: one of its wordings ([`REPEAT_ORDER_MARKERS`]) with a submit
/// control or 去支付 — or, whatever it says ("您有该商品的订单未支付"), a dialog holding
/// both a 继续下单-type control ([`crate::screen::controls::is_continue_order`]) and
/// 去支付: nothing else PDD shows offers both.
pub fn detect_repeat_order(page: &Page<'_>) -> bool {
    let marker = page.labels(is_repeat_marker).next().is_some();
    let cont = page
        .labels(crate::screen::controls::is_continue_order)
        .next()
        .is_some();
    let pay = page.labels(is_go_pay).next().is_some();
    let submit = page
        .labels(crate::screen::controls::is_submit_control)
        .next()
        .is_some();
    (marker && (submit || pay)) || (cont && pay)
}

pub fn extract_repeat_order(page: &Page<'_>) -> RepeatOrderDialog {
    let cont = page
        .labels(crate::screen::controls::is_submit_control)
        .next();
    // The wording that gave it away; without a known one, the dialog's message (the
    // label about an order, before its buttons), else the 继续下单 control itself.
    let marker = page
        .labels(|l| REPEAT_ORDER_MARKERS.iter().any(|w| l.contains(w)))
        .next()
        .or_else(|| {
            page.labels(|l| l.contains("订单") && l.chars().count() <= 40)
                .find(|n| cont.is_none_or(|c| n.id() < c.id()) && !is_go_pay(Page::label_of(n)))
        })
        .or(cont);
    RepeatOrderDialog {
        marker: marker
            .map(|n| Page::label_of(&n).to_string())
            .unwrap_or_default(),
        close: dialog_close_icon(page, cont, marker),
    }
}

/// Offers to turn payment without a human on: 开通免密支付, 开通先用后付.
pub const PAYMENT_OFFER_TITLES: &[&str] = &[
    "开通免密支付",
    "开通免密",
    "免密支付",
    "开通先用后付",
    "先用后付",
    "开通自动扣款",
];

/// Exact labels that decline such an offer.
pub const OFFER_DECLINE: &[&str] = &[
    "暂不开通",
    "暂不",
    "以后再说",
    "下次再说",
    "残忍拒绝",
    "不开通",
];

/// A 免密支付 / 先用后付 offer (after a submit, over the cashier): its 立即开通 is never
/// tapped; the way out is 暂不开通 (or BACK).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PaymentOffer {
    /// What it offers: `password_free` or `pay_later`.
    pub offer: &'static str,
    pub title: String,
    /// 暂不开通 (an exact decline label), else `None` (BACK).
    pub decline: Option<Target>,
}

pub fn detect_payment_offer(page: &Page<'_>) -> bool {
    let accept = page.labels(|l| l == "立即开通" || l.starts_with("开通并") || l == "同意开通");
    let title = page.labels(|l| {
        l.chars().count() <= 12 && PAYMENT_OFFER_TITLES.iter().any(|t| l.starts_with(t))
    });
    accept.count() > 0 && title.count() > 0
}

pub fn extract_payment_offer(page: &Page<'_>) -> PaymentOffer {
    let title = page
        .labels(|l| {
            l.chars().count() <= 12 && PAYMENT_OFFER_TITLES.iter().any(|t| l.starts_with(t))
        })
        .next()
        .map(|n| Page::label_of(&n).to_string())
        .unwrap_or_default();
    let offer = if title.contains("先用后付") {
        "pay_later"
    } else {
        "password_free"
    };
    PaymentOffer {
        offer,
        title,
        decline: page.exact(OFFER_DECLINE).and_then(Target::of),
    }
}

/// Apps PDD may hand a payment to (field notes §3a: WeChat Pay can open `com.tencent.mm`
/// straight away instead of an in-app cashier).
pub const PAYMENT_APPS: &[&str] = &[
    "com.tencent.mm",
    "com.eg.android.AlipayGphone",
    "com.unionpay",
];

// ---------------------------------------------------------------------------------------
// Popups
// ---------------------------------------------------------------------------------------

/// A popup (promotion, upgrade, teen mode, …) over some page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Popup {
    /// What the popup seems to be about (a marker label such as "开心收下", "青少年模式").
    pub marker: Option<String>,
    /// The label of the element that dismisses it ("关闭弹窗", "跳过", "×" for an icon).
    pub dismiss_button: Option<String>,
    pub dismiss: Option<Target>,
    pub dismiss_kind: Option<DismissKind>,
    /// The page under the popup, when recognisable.
    pub underlying: Option<ScreenKind>,
}

/// How a popup is dismissed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DismissKind {
    /// A labelled dismiss button ("跳过", "我知道了", desc "关闭弹窗").
    Button,
    /// A close icon (desc "关闭" or an unlabeled NAF image in a corner).
    CloseIcon,
    /// Only an accept-gift button ("开心收下"): accepting closes it and buys nothing.
    AcceptGift,
}

/// A popup is on screen when a dismiss wording ("跳过", "暂不", "下次再说", …, or desc
/// 关闭弹窗) or a popup marker ("开心收下", "青少年模式", …) is visible.
pub fn detect_popup(page: &Page<'_>) -> bool {
    dismiss_button(page).is_some() || page.containing(POPUP_MARKERS).is_some()
}

fn dismiss_button<'t>(page: &Page<'t>) -> Option<NodeRef<'t>> {
    // Best first: the order of DISMISS.
    DISMISS
        .iter()
        .find_map(|w| page.labels(|l| l == *w).next())
        .or_else(|| page.labels(is_skip_countdown).next())
        .filter(|n| !has_money_word(Page::label_of(n)))
}

pub fn extract_popup(page: &Page<'_>, underlying: Option<ScreenKind>) -> Popup {
    let marker_node = page.containing(POPUP_MARKERS);
    let marker = marker_node.map(|n| Page::label_of(&n).to_string());
    let (dismiss, kind) = if let Some(t) = dismiss_button(page).and_then(Target::of) {
        (Some(t), Some(DismissKind::Button))
    } else if let Some(t) = dialog_close_icon(page, None, marker_node) {
        (Some(t), Some(DismissKind::CloseIcon))
    } else if let Some(t) = page.exact(ACCEPT_GIFT).and_then(Target::of) {
        (Some(t), Some(DismissKind::AcceptGift))
    } else {
        (None, None)
    };
    Popup {
        marker,
        dismiss_button: dismiss.as_ref().map(|t| t.label.clone()),
        dismiss,
        dismiss_kind: kind,
        underlying,
    }
}

// ---------------------------------------------------------------------------------------
// Payment
// ---------------------------------------------------------------------------------------

/// The payment (cashier) page reached after 提交订单. The flows never pay: they read the
/// amount and leave (back), which raises the abandon dialog.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Payment {
    #[serde(rename = "amount_cent")]
    pub amount: Option<Fen>,
    pub amount_text: Option<String>,
    /// The pay button's label, for logs only: there is deliberately no target for it.
    pub pay_label: Option<String>,
    /// A back / close control of the page, if labelled.
    pub back: Option<Target>,
}

pub fn detect_payment(page: &Page<'_>) -> bool {
    page.starting(PAYMENT_BUTTONS, 14).is_some()
        || page.containing(PAYMENT_MARKERS).is_some()
        || (page.exact(&["微信支付"]).is_some() && page.exact(&["支付宝", "支付宝支付"]).is_some())
}

pub fn extract_payment(page: &Page<'_>) -> Payment {
    let pay = page.starting(PAYMENT_BUTTONS, 14);
    // The amount: an "实付/需付款/支付金额" line, else the first price on the page, else
    // the pay button's own price.
    let mut amount = None;
    let mut amount_text = None;
    for n in page.labels(|l| {
        ["实付", "需付款", "需支付", "支付金额", "应付", "待支付"]
            .iter()
            .any(|w| l.starts_with(w))
    }) {
        let click = n.parent().unwrap_or(n);
        let parts: Vec<&str> = click.texts().collect();
        if let Some(p) = price_from_parts(parts.iter().copied()) {
            amount = Some(p);
            amount_text = Some(parts.concat());
            break;
        }
    }
    if amount.is_none() {
        let skip =
            |n: &NodeRef<'_>| pay.is_some_and(|p| p.nearest_clickable().unwrap_or(p).contains(n));
        (amount, amount_text) = first_price(page, &skip);
    }
    if amount.is_none() {
        if let Some(p) = pay {
            amount = parse_price(p.text());
            amount_text = amount.map(|_| trim_name(p.text()).to_string());
        }
    }
    let back = page
        .labels(|l| l == "返回" || l == "关闭")
        .find(|n| !n.desc().trim().is_empty())
        .and_then(Target::of);
    Payment {
        amount,
        amount_text,
        pay_label: pay.map(|p| Page::label_of(&p).to_string()),
        back,
    }
}

// ---------------------------------------------------------------------------------------
// Orders
// ---------------------------------------------------------------------------------------

/// The order detail page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrderDetail {
    /// 订单编号 ("241130-012345678901234").
    pub order_sn: Option<String>,
    /// 下单时间, with the page's offset or Asia/Shanghai (+08:00) when it shows none.
    pub ordered_at: Option<DateTime<FixedOffset>>,
    pub ordered_at_text: Option<String>,
    /// The status line ("待付款", "交易已取消", …).
    pub status: Option<String>,
    /// 实付款 / 需付款.
    #[serde(rename = "total_cent")]
    pub total: Option<Fen>,
    pub goods_title: Option<String>,
    pub spec_text: Option<String>,
    pub quantity: Option<u32>,
    /// The fold hiding 下单时间 and more (查看更多订单信息 / 查看更多订单和优惠信息), when on
    /// screen: tapping it shows them in its place.
    pub more_info: Option<Target>,
    /// The page's scroll container, when it has one (a detail longer than one screen).
    pub scroll: Option<ListView>,
    /// Every visible label of the page (the option names are matched in them).
    #[serde(skip_serializing)]
    pub labels: Vec<String>,
}

/// The labels of the fold on an order detail (field notes §3a).
pub const MORE_ORDER_INFO: &[&str] = &["查看更多订单信息", "查看更多订单和优惠信息"];

/// The words a paid amount follows on order pages, most specific first.
const PAID_WORDS: &[&str] = &["实付款", "实付", "需付款", "应付款", "订单金额"];

/// An order detail: its 订单编号 line — or, on a detail whose first screen does not reach
/// it (folded: the number sits below the first screen), the 订单详情 title with an order
/// status or a paid amount beside it.
pub fn detect_order_detail(page: &Page<'_>) -> bool {
    page.labels(|l| l.starts_with("订单编号")).next().is_some()
        || (page.exact(&["订单详情"]).is_some()
            && (page.exact(ORDER_STATUSES).is_some()
                || page
                    .labels(|l| PAID_WORDS.iter().any(|w| l.starts_with(w)))
                    .next()
                    .is_some()))
}

/// The amount in `parts` (a paid-amount label and the labels after it), whose first part
/// starts with `word`: a sign-written price ("实付款" "¥118", "实付：¥269"), else an amount
/// with the 元 unit in the same label or the next one ("实付:,12.50元,", "实付:" "12.50元").
fn paid_amount(parts: &[&str], word: &str) -> Option<Fen> {
    if let Some(p) = price_from_parts(parts.iter().copied()) {
        return Some(p);
    }
    let rest = parts.first()?.strip_prefix(word)?;
    if let Some(p) = parse_yuan(rest) {
        return Some(p);
    }
    let bare = rest.trim_matches([',', '，', ':', '：', ' ']);
    if bare.is_empty() {
        return parts.get(1).and_then(|n| parse_yuan(n));
    }
    None
}

fn order_sn_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"\d{6}-\d{6,}|\d{10,}").expect("static regex"))
}

fn quantity_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:[x×X]\s*(\d{1,4})|共\s*(\d{1,4})\s*件.*)$").expect("static regex")
    })
}

/// The value of a "名称：值" line: after the colon in the same label, or the next label.
fn field_value<'t>(page: &Page<'t>, name: &str) -> Option<(NodeRef<'t>, String)> {
    let pos = page
        .labelled
        .iter()
        .position(|n| trim_name(n.text()).starts_with(name))?;
    let n = page.labelled[pos];
    let rest = trim_name(n.text())[name.len()..].trim_start_matches([':', '：', ' ', '\u{3000}']);
    if !trim_name(rest).is_empty() {
        return Some((n, trim_name(rest).to_string()));
    }
    let next = page.labelled.get(pos + 1)?;
    Some((*next, trim_name(next.text()).to_string()))
}

/// Parses "2026-11-30 14:40:12" (also with `/`, `.`, 年月日, no seconds, an explicit
/// offset or `Z`). Without an offset the time is Beijing time (+08:00).
pub fn parse_order_time(text: &str) -> Option<DateTime<FixedOffset>> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(
            r"(\d{4})\s*[-/.年]\s*(\d{1,2})\s*[-/.月]\s*(\d{1,2})\s*日?[\sT]*(\d{1,2}):(\d{2})(?::(\d{2}))?\s*(Z|[+-]\d{2}:?\d{2})?",
        )
        .expect("static regex")
    });
    let c = re.captures(text)?;
    let num = |i: usize| -> Option<u32> { c.get(i)?.as_str().parse().ok() };
    let year: i32 = c.get(1)?.as_str().parse().ok()?;
    let date = NaiveDate::from_ymd_opt(year, num(2)?, num(3)?)?;
    let time = date.and_hms_opt(num(4)?, num(5)?, c.get(6).map_or(Some(0), |_| num(6))?)?;
    let offset = match c.get(7).map(|m| m.as_str()) {
        None => FixedOffset::east_opt(8 * 3600)?,
        Some("Z") => FixedOffset::east_opt(0)?,
        Some(o) => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let digits: String = o[1..].chars().filter(|c| c.is_ascii_digit()).collect();
            let h: i32 = digits.get(..2)?.parse().ok()?;
            let m: i32 = digits.get(2..4)?.parse().ok()?;
            FixedOffset::east_opt(sign * (h * 3600 + m * 60))?
        }
    };
    offset.from_local_datetime(&time).single()
}

fn find_status<'a>(mut labels: impl Iterator<Item = &'a str>) -> Option<String> {
    labels
        .find(|l| {
            ORDER_STATUSES.contains(l)
                || ORDER_STATUSES
                    .iter()
                    .any(|s| l.starts_with(s) && l.chars().count() <= s.chars().count() + 6)
        })
        .map(str::to_string)
}

pub fn extract_order_detail(page: &Page<'_>) -> OrderDetail {
    let order_sn = field_value(page, "订单编号")
        .and_then(|(_, v)| order_sn_re().find(&v).map(|m| m.as_str().to_string()));
    let time = field_value(page, "下单时间");
    let ordered_at = time.as_ref().and_then(|(_, v)| parse_order_time(v));
    let status = find_status(page.labelled.iter().map(Page::label_of));
    let total = PAID_WORDS.iter().find_map(|w| {
        let pos = page
            .labelled
            .iter()
            .position(|n| Page::label_of(n).starts_with(w))?;
        // The amount is in the label ("实付款：¥269", "实付:,12.50元,") or in the next
        // labels.
        let parts: Vec<&str> = page.labelled[pos..]
            .iter()
            .take(4)
            .map(Page::label_of)
            .collect();
        paid_amount(&parts, w)
    });
    let quantity = page.labelled.iter().find_map(|n| {
        quantity_re()
            .captures(trim_name(n.text()))
            .and_then(|c| c.get(1).or_else(|| c.get(2))?.as_str().parse().ok())
    });
    let goods_title = page
        .labelled
        .iter()
        .find(|n| matches!(n.id_name(), "tv_goods_name" | "tv_title" | "goods_name"))
        .map(|n| Page::label_of(n).to_string())
        .or_else(|| longest_text(page.labelled.iter().copied()));
    let spec_text = page
        .labelled
        .iter()
        .find(|n| {
            let t = trim_name(n.text());
            t.starts_with("规格") || t.starts_with("已选") || t.contains('：') && t.contains('；')
        })
        .map(|n| trim_name(n.text()).to_string());
    OrderDetail {
        order_sn,
        ordered_at,
        ordered_at_text: time.map(|(_, v)| v),
        status,
        total,
        goods_title,
        spec_text,
        quantity,
        more_info: MORE_ORDER_INFO.iter().find_map(|l| labelled(page.tree, l)),
        scroll: scroll_list(page.tree),
        labels: page
            .tree
            .nodes()
            .filter(|n| n.is_visible())
            .map(|n| n.label().to_string())
            .collect(),
    }
}

fn longest_text<'t>(nodes: impl Iterator<Item = NodeRef<'t>>) -> Option<String> {
    nodes
        .map(|n| trim_name(n.text()))
        .filter(|t| {
            t.chars().count() >= 8
                && !t.contains(SIGNS)
                && !t.starts_with("订单编号")
                && !t.starts_with("下单时间")
                && !MORE_ORDER_INFO.contains(t)
                && !t.contains('：')
        })
        .max_by_key(|t| t.chars().count())
        .map(str::to_string)
}

/// The order list (个人中心 → 我的订单 / 待付款).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrderList {
    /// The selected tab ("待付款").
    pub tab: Option<String>,
    pub entries: Vec<OrderEntry>,
    /// Where to tap for the 待付款 tab (a label reading exactly that, or 待支付).
    pub pending_tab: Option<Target>,
    /// Where to tap for the 全部 tab.
    pub all_tab: Option<Target>,
    /// The list's scroll container and whether it hides cards above or below.
    pub list: Option<ListView>,
}

/// One order card of the list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrderEntry {
    pub status: Option<String>,
    pub shop: Option<String>,
    pub title: Option<String>,
    pub spec_text: Option<String>,
    pub quantity: Option<u32>,
    #[serde(rename = "total_cent")]
    pub total: Option<Fen>,
    /// Where to tap to open the order (the card's visible centre).
    pub tap: Option<Point>,
    pub bounds: Bounds,
    /// The whole card is on screen.
    pub fully_visible: bool,
    /// The visible labels inside the card (the option names are matched in them).
    #[serde(skip_serializing)]
    pub labels: Vec<String>,
    /// The centre of the card's title label: inside the card, away from its own buttons
    /// (取消订单, 去支付), whatever the card's extent.
    pub title_tap: Option<Point>,
}

pub fn detect_order_list(page: &Page<'_>) -> bool {
    let title = page.exact(&["我的订单", "全部订单"]).is_some();
    let tabs = ORDER_TABS
        .iter()
        .filter(|t| page.exact(&[**t]).is_some())
        .count();
    title || tabs >= 4
}

/// A node of the tab strip: a status word that is its own clickable tab.
fn is_tab(n: &NodeRef<'_>) -> bool {
    let l = Page::label_of(n);
    ORDER_TABS.contains(&l)
        && n.nearest_clickable().is_some_and(|c| {
            c.descendants()
                .filter(|d| !d.text().trim().is_empty())
                .count()
                <= 2
        })
        && n.nearest_clickable().is_some_and(|c| {
            c.parent().is_some_and(|row| {
                row.children()
                    .filter(|t| t.texts().any(|x| ORDER_TABS.contains(&x)))
                    .count()
                    >= 3
            })
        })
}

pub fn extract_order_list(page: &Page<'_>) -> OrderList {
    // The tab strip, computed once: it bounds the cards from above.
    let tabs: Vec<NodeRef<'_>> = page.labelled.iter().copied().filter(is_tab).collect();
    let tab = tabs
        .iter()
        .find(|n| n.is_selected() || n.nearest_clickable().is_some_and(|c| c.is_selected()))
        .map(|n| Page::label_of(n).to_string());
    // Status labels that are not tabs anchor the cards.
    let status_nodes: Vec<NodeRef<'_>> = page
        .tree
        .nodes()
        .filter(|n| {
            let t = trim_name(n.text());
            !t.is_empty() && ORDER_STATUSES.contains(&t) && !tabs.contains(n)
        })
        .collect();
    let mut entries = Vec::new();
    let mut cards = Vec::new();
    let screen = page.tree.screen();
    for s in &status_nodes {
        // The card: the highest ancestor holding this status and no other.
        let mut card = *s;
        for a in s.ancestors() {
            if status_nodes.iter().filter(|o| a.contains(o)).count() > 1
                || tabs.iter().any(|n| a.contains(n))
            {
                break;
            }
            card = a;
        }
        let texts: Vec<&str> = card.texts().collect();
        let total = ["实付", "需付款", "应付", "合计"].iter().find_map(|w| {
            let i = texts.iter().position(|t| t.starts_with(w))?;
            let parts: Vec<&str> = texts[i..].iter().take(4).copied().collect();
            paid_amount(&parts, w)
        });
        let quantity = texts.iter().find_map(|t| {
            quantity_re()
                .captures(t)
                .and_then(|c| c.get(1).or_else(|| c.get(2))?.as_str().parse().ok())
        });
        let shop = card
            .descendants()
            .find(|n| {
                let t = trim_name(n.text());
                !t.is_empty()
                    && (t.ends_with("店") || t.ends_with("旗舰店") || n.id_name().contains("mall"))
            })
            .map(|n| trim_name(n.text()).to_string());
        let title = longest_text(card.descendants().filter(|n| {
            let t = trim_name(n.text());
            Some(t) != shop.as_deref()
        }));
        let spec_text = texts
            .iter()
            .find(|t| {
                (t.contains('：') || t.contains('；') || t.contains(';') || t.starts_with("已选"))
                    && !t.contains(SIGNS)
                    && !["实付", "需付款", "应付", "合计", "订单"]
                        .iter()
                        .any(|w| t.starts_with(w))
            })
            .map(|t| t.to_string());
        let bounds = card.bounds();
        let vis = bounds.intersect(&screen);
        entries.push(OrderEntry {
            status: Some(trim_name(s.text()).to_string()),
            shop,
            title,
            spec_text,
            quantity,
            total,
            tap: (!vis.is_empty() && card.is_visible()).then(|| vis.center()),
            bounds,
            fully_visible: vis == bounds && card.is_visible(),
            labels: Vec::new(),
            title_tap: None,
        });
        cards.push(card);
    }
    // uiautomator clips bounds to the list, so a card cut by the list's edge looks like
    // a shorter card touching that edge.
    let max_h = entries.iter().map(|e| e.bounds.height()).max().unwrap_or(0);
    for (entry, card) in entries.iter_mut().zip(&cards) {
        let Some(list) = card.ancestors().find(|a| a.is_scrollable()) else {
            continue;
        };
        let lb = list.visible_bounds();
        let b = entry.bounds;
        if b.height() * 10 < max_h * 9 && (b.bottom >= lb.bottom - 1 || b.top <= lb.top + 1) {
            entry.fully_visible = false;
        }
    }
    for e in entries.iter_mut() {
        let inside = || {
            page.tree
                .nodes()
                .filter(|n| n.is_visible() && e.bounds.contains(&n.visible_bounds()))
        };
        e.labels = inside().map(|n| n.label().to_string()).collect();
        e.title_tap = inside()
            .find(|n| Some(trim_name(n.text())) == e.title.as_deref())
            .map(|n| n.visible_bounds().center());
    }
    OrderList {
        tab,
        entries,
        pending_tab: tabs
            .iter()
            .find(|n| matches!(Page::label_of(n), "待付款" | "待支付"))
            .and_then(|n| Target::with_label(*n, Page::label_of(n)))
            .or_else(|| labelled(page.tree, "待付款")),
        all_tab: tabs
            .iter()
            .find(|n| Page::label_of(n) == "全部")
            .and_then(|n| Target::with_label(*n, "全部")),
        list: scroll_list(page.tree),
    }
}

/// A node labelled exactly `label` (text or desc) and where to tap it.
fn labelled(tree: &Tree, label: &str) -> Option<Target> {
    tree.nodes()
        .filter(|n| n.is_visible() && trim_name(n.label()) == label)
        .find_map(|n| Target::with_label(n, label))
}

/// The first visible scroll container, and whether content is cut at its top / bottom
/// edge (more to see by scrolling that way).
fn scroll_list(tree: &Tree) -> Option<ListView> {
    let list = tree.nodes().find(|n| n.is_visible() && n.is_scrollable())?;
    let b = list.visible_bounds();
    let (mut more_below, mut more_above) = (false, false);
    for n in list.descendants() {
        if n.children().next().is_some() || !n.is_visible() {
            continue;
        }
        let nb = n.visible_bounds();
        if nb.is_empty() {
            continue;
        }
        more_below |= nb.bottom >= b.bottom - 2;
        more_above |= nb.top <= b.top + 2;
    }
    Some(ListView {
        bounds: b,
        more_above,
        more_below,
    })
}

/// The labels an unknown page may offer to get back to the orders, in the order the
/// reconciliation tries them.
pub const NAV_LABELS: &[&str] = &["待付款", "个人中心", "返回首页"];

/// Labels of a page that is not recognised, for the operator.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Unknown {
    /// Packages of the windows kept (the PDD app) — empty when PDD is not on screen.
    pub packages: Vec<String>,
    /// Packages of the other windows (systemui, launcher, another app).
    pub other_packages: Vec<String>,
    /// The first visible labels, in page order.
    pub labels: Vec<String>,
    /// Ways back to the orders found on the page, in [`NAV_LABELS`] order.
    pub nav: Vec<Target>,
}

impl Unknown {
    /// The payment app in front (WeChat, Alipay: [`PAYMENT_APPS`]) when no PDD window is
    /// on screen — after a submit, PDD handing the payment over (field notes §3a).
    pub fn payment_app(&self) -> Option<&str> {
        if !self.packages.is_empty() {
            return None;
        }
        self.other_packages
            .iter()
            .map(String::as_str)
            .find(|p| PAYMENT_APPS.contains(p))
    }
}

pub fn extract_unknown(page: &Page<'_>) -> Unknown {
    let mut packages: Vec<String> = Vec::new();
    let mut other: Vec<String> = Vec::new();
    for w in page.tree.windows() {
        let list = if w.root.is_some() {
            &mut packages
        } else {
            &mut other
        };
        if !list.contains(&w.package) {
            list.push(w.package.clone());
        }
    }
    Unknown {
        packages,
        other_packages: other,
        labels: {
            let mut labels: Vec<String> = Vec::new();
            // A tab's desc and its text often repeat each other: keep one.
            for l in page.labelled.iter().map(Page::label_of) {
                if l.chars().count() <= MAX_KEYWORD_LABEL * 2
                    && labels.last().map(String::as_str) != Some(l)
                {
                    labels.push(l.to_string());
                }
                if labels.len() == 40 {
                    break;
                }
            }
            labels
        },
        nav: NAV_LABELS
            .iter()
            .filter_map(|l| labelled(page.tree, l))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paid_amounts_with_a_sign_or_the_yuan_unit() {
        let p = |parts: &[&str], w| paid_amount(parts, w).map(|f| f.get());
        assert_eq!(p(&["实付款", "¥118", "订单编号：1"], "实付款"), Some(11800));
        assert_eq!(p(&["实付：¥269"], "实付"), Some(26900));
        // The real order detail's desc, and the same split over two labels.
        assert_eq!(p(&["实付:,12.50元,"], "实付"), Some(1250));
        assert_eq!(p(&["实付:", "12.50元", "商家服务"], "实付"), Some(1250));
        assert_eq!(p(&["实付：", "¥12.5"], "实付"), Some(1250));
        // Not an amount of this label: a later unit amount, a discount, a float.
        assert_eq!(p(&["实付:", "商家服务", "12.50元"], "实付"), None);
        assert_eq!(p(&["实付:减7.53元"], "实付"), None);
        assert_eq!(p(&["实付:", "12.505元"], "实付"), None);
        assert_eq!(p(&["实付说明", "12元"], "实付"), None);
    }

    fn page_of(xml: &str, f: impl FnOnce(&Page<'_>)) {
        let tree = crate::screen::Tree::parse(xml).expect("dump");
        f(&Page::new(&tree));
    }

    fn node(text: &str, y: i32, extra: &str) -> String {
        format!(
            r#"<node text="{text}" resource-id="" class="android.widget.TextView" package="com.xunmeng.pinduoduo" content-desc="" clickable="false" enabled="true" visible-to-user="true" bounds="[35,{y}][700,{}]" {extra}/>"#,
            y + 50
        )
    }

    fn dump(nodes: &[String]) -> String {
        format!(
            r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation="0"><node text="" resource-id="" class="android.widget.FrameLayout" package="com.xunmeng.pinduoduo" content-desc="" clickable="false" enabled="true" visible-to-user="true" bounds="[0,0][1080,2400]">{}</node></hierarchy>"#,
            nodes.concat()
        )
    }

    #[test]
    fn too_frequent_is_a_risk_page() {
        let xml = dump(&[node("操作过于频繁，请稍后再试", 900, "")]);
        let tree = crate::screen::Tree::parse(&xml).expect("dump");
        assert!(matches!(
            crate::screen::classify(&tree),
            crate::screen::Screen::RiskVerification(_)
        ));
    }

    #[test]
    fn a_folded_detail_is_a_detail_before_its_number_shows() {
        // The first screen of a folded detail: title, status, the paid amount in 元.
        let top = dump(&[
            node("订单详情", 130, ""),
            node("待付款", 280, ""),
            node("实付:", 1275, ""),
            node("12.50元", 1345, ""),
        ]);
        page_of(&top, |p| {
            assert!(detect_order_detail(p));
            let d = extract_order_detail(p);
            assert_eq!(d.order_sn, None);
            assert_eq!(d.total, Some(Fen(1250)));
            assert_eq!(d.status.as_deref(), Some("待付款"));
        });
        // The fold, below the number: a target; the real wording variant too.
        for fold in MORE_ORDER_INFO {
            let mid = dump(&[
                node("订单详情", 130, ""),
                node("订单编号：260929-041041324390351", 1500, ""),
                node(fold, 1600, r#"clickable="true""#),
            ]);
            page_of(&mid, |p| {
                let d = extract_order_detail(p);
                assert_eq!(d.order_sn.as_deref(), Some("260929-041041324390351"));
                assert_eq!(d.more_info.map(|t| t.label).as_deref(), Some(*fold));
                assert_eq!(d.ordered_at, None);
            });
        }
        // A title alone, or a page that merely mentions 订单详情, is not a detail.
        page_of(&dump(&[node("订单详情", 130, "")]), |p| {
            assert!(!detect_order_detail(p));
        });
        page_of(
            &dump(&[node("订单详情", 130, ""), node("查看物流", 300, "")]),
            |p| {
                assert!(!detect_order_detail(p));
            },
        );
    }

    #[test]
    fn order_times() {
        let t = parse_order_time("2026-11-30 14:40:12").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-30T14:40:12+08:00");
        let t = parse_order_time("下单时间：2026/11/30 08:02").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-30T08:02:00+08:00");
        let t = parse_order_time("2026年11月30日 08:02:10").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-30T08:02:10+08:00");
        let t = parse_order_time("2026-11-30T00:02:10Z").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-30T00:02:10+00:00");
        let t = parse_order_time("2026-11-30 08:02:10 +09:00").unwrap();
        assert_eq!(t.to_rfc3339(), "2026-11-30T08:02:10+09:00");
        assert!(parse_order_time("2026-13-30 08:02:10").is_none());
        assert!(parse_order_time("2026-11-30 25:02").is_none());
        assert!(parse_order_time("昨天 08:02").is_none());
    }
}
