//! What makes a screen a checkout, shared by the SKU sheet, 确认订单 and the device
//! guard: the address block, the payment row, the order total line, and the
//! **order button** — the control that places (or pays) the order, whatever it reads.
//!
//! A sheet whose button reads 确定 / 立即购买 is a plain spec sheet only when it shows none
//! of the checkout's rows ([`CheckoutRows::any`]) and the button quotes no amount: then
//! its button opens 确认订单 and orders nothing. With an address, a payment row or a
//! total on it — or an amount on the button itself ("确定 ¥59": a button that quotes what
//! the order costs is a checkout's) — the same 确定 places the order
//! ([`OrderKind::CommittingProceed`]): it is treated as a submit — marked first, or
//! refused when the other proofs are missing — by the flows and by the guard alike.

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use super::controls::{is_pay_action, is_submit_control, proceed_carries_amount};
use super::cover::{covering_node, InAppCover};
use super::label_index::{trim_name, Page, CLOSE_DESC};
use super::payment::{OrderButton, SUBMIT_LABELS};
use super::target::Target;
use super::tree::{NodeRef, Tree};
use crate::money::{parse_price, price_from_parts, Fen};

/// The labels of a spec sheet's button that opens 确认订单 (or, on a checkout sheet, orders).
pub const PROCEED_LABELS: &[&str] = &["确定", "立即购买"];

/// Wordings that introduce the order total ("合计：¥74.8", "共2件 合计：", "实付款").
pub const TOTAL_WORDS: &[&str] = &["合计", "实付款", "实付", "需付款", "应付款", "应付", "总计"];

/// Wordings that ask for an address (no address on the account).
pub const NO_ADDRESS: &[&str] = &[
    "手动添加地址",
    "手动添加收货地址",
    "添加收货地址",
    "新建收货地址",
    "请添加收货地址",
    "请填写收货地址",
    "添加地址",
];

fn phone_mask_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"1\d{2}\*{4}\d{4}").expect("static regex"))
}

/// Whether these labels ask for an address (`Some(false)`: 手动添加地址, …), show one
/// (`Some(true)`: a masked phone number, 收货人, a street address), or neither (`None`).
pub fn address_in<'a>(labels: impl Iterator<Item = &'a str> + Clone) -> Option<bool> {
    if labels
        .clone()
        .any(|l| NO_ADDRESS.iter().any(|w| l.contains(w)))
    {
        return Some(false);
    }
    if labels.into_iter().any(|l| {
        phone_mask_re().is_match(l)
            || l.contains("收货人")
            || ((l.contains('省') || l.contains('市'))
                && (l.contains('区') || l.contains('县') || l.contains("街道") || l.contains('路')))
    }) {
        return Some(true);
    }
    None
}

/// The address block as text: the first of `nodes` that shows an address (a masked
/// phone, 收货人, a province/city street) and the other texts of its row — its nearest
/// clickable ancestor (the row that opens the address list), else its parent — joined
/// by a space. Service badges and shop names around the block stay out.
pub fn address_block<'t>(mut nodes: impl Iterator<Item = NodeRef<'t>>) -> Option<String> {
    let anchor = nodes.find(|n| address_in(std::iter::once(Page::label_of(n))) == Some(true))?;
    let small = |r: &NodeRef<'t>| r.texts().count() <= 6;
    let row = anchor
        .nearest_clickable()
        .filter(small)
        .or_else(|| anchor.parent().filter(small))
        .unwrap_or(anchor);
    join_address(row.texts())
}

/// The address block's labels joined by a space (controls such as 关闭 and 更换地址
/// dropped); `None` when nothing is left.
pub fn join_address<'a>(labels: impl Iterator<Item = &'a str>) -> Option<String> {
    const NOT_ADDRESS: &[&str] = &["关闭", "关闭弹窗", "返回", "更换地址", "修改地址", "默认"];
    let parts: Vec<&str> = labels
        .map(str::trim)
        .filter(|l| !l.is_empty() && !NOT_ADDRESS.contains(l))
        .collect();
    (!parts.is_empty()).then(|| parts.join(" "))
}

/// The payment row ("使用#微信支付，更换支付方式", "使用#先用后付，确认收货后自动付款",
/// "支付方式 …"), shared by the sheet and the 确认订单 page.
pub fn payment_row(page: &Page<'_>) -> Option<String> {
    page.labels(is_payment_row)
        .next()
        .map(|n| Page::label_of(&n).to_string())
}

fn is_payment_row(l: &str) -> bool {
    l.contains("支付方式")
        || (l.starts_with("使用")
            && (l.contains("支付") || l.contains("付款") || l.contains("先用后付")))
}

/// Is `l` a total wording ("合计：", "合计:¥74.8", "共2件 合计：", "实付款")? Not a
/// discount line ("优惠合计", "共减¥3", "已省…").
pub fn is_total_label(l: &str) -> bool {
    if l.chars().count() > 16 || ["优惠", "减", "省", "券"].iter().any(|w| l.contains(w)) {
        return false;
    }
    let rest = l.trim_start_matches(|c: char| {
        c == '共' || c == '件' || c.is_ascii_digit() || c.is_whitespace() || matches!(c, ',' | '，')
    });
    TOTAL_WORDS.iter().any(|w| rest.starts_with(w))
}

/// The last total wording on the page (the bottom bar comes last).
pub fn total_node<'t>(page: &Page<'t>) -> Option<NodeRef<'t>> {
    page.labels(is_total_label).last()
}

/// The total after the wording node: in its own text ("合计：¥74.8"), else in the
/// siblings that follow it, up to the order button ("合计：" / "¥" / "74.8").
pub fn total_after(n: NodeRef<'_>, button: Option<NodeRef<'_>>) -> (Option<Fen>, Option<String>) {
    let own = trim_name(n.text());
    if let Some(p) = parse_price(own) {
        return (Some(p), Some(own.to_string()));
    }
    let Some(parent) = n.parent() else {
        return (None, None);
    };
    let mut parts: Vec<&str> = vec![own];
    let mut after = false;
    for c in parent.children() {
        if c.id() == n.id() {
            after = true;
            continue;
        }
        if !after {
            continue;
        }
        let is_button = button.is_some_and(|s| {
            let b = s.nearest_clickable().unwrap_or(s);
            c.contains(&b) || b.contains(&c)
        });
        if is_button {
            break;
        }
        parts.extend(c.texts().map(trim_name));
    }
    match price_from_parts(parts.iter().copied()) {
        Some(p) => (Some(p), Some(parts.concat())),
        None => (None, None),
    }
}

/// What an order button does, by its label.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderKind {
    /// 提交订单 / 确认下单 (an amount may follow).
    Submit,
    /// 确定 / 立即购买 on a screen without the checkout's rows, quoting no amount: opens
    /// 确认订单.
    Proceed,
    /// 确定 / 立即购买 on a screen with the checkout's rows, or quoting an amount ("确定
    /// ¥59"): places the order.
    CommittingProceed,
    /// A pay action (立即支付 ¥59, 确认支付, 先用后付 0元下单): pays or binds at once.
    Pays,
}

/// The screen's order button: its label, where to tap it, what it does, and the amount
/// its label carries ("提交订单 ¥269" → 26900, "确定 ¥59").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrderControl {
    pub kind: OrderKind,
    pub target: Target,
    /// The amount on the button's own label, if any.
    #[serde(rename = "amount_cent")]
    pub amount: Option<Fen>,
}

impl OrderControl {
    /// The button as [`super::payment::assess`] judges it.
    pub fn as_button(&self) -> OrderButton<'_> {
        let l = self.target.label.as_str();
        match self.kind {
            OrderKind::Submit => OrderButton::Submit(l),
            OrderKind::CommittingProceed => OrderButton::CommittingProceed(l),
            OrderKind::Pays => OrderButton::Pays(l),
            // A spec sheet's 确定 is judged on the next page; as a button it places
            // nothing here.
            OrderKind::Proceed => OrderButton::Missing,
        }
    }
}

/// Is `label` a 确定 / 立即购买 (an amount after it allowed: "确定 ¥59")?
pub fn is_proceed_label(label: &str) -> bool {
    let l = trim_name(label);
    PROCEED_LABELS.iter().any(|p| {
        l.strip_prefix(p).is_some_and(|rest| {
            let rest = rest.trim();
            rest.is_empty() || parse_price(rest).is_some()
        })
    })
}

/// The checkout rows a screen shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CheckoutRows {
    /// An address block, or 手动添加地址.
    pub address: bool,
    /// A payment row (使用#微信支付…, 支付方式).
    pub payment: bool,
    /// An order total line (合计 / 实付款 …).
    pub total: bool,
}

impl CheckoutRows {
    /// Any of them: a 确定 here would place the order.
    pub fn any(&self) -> bool {
        self.address || self.payment || self.total
    }
}

/// The checkout rows the page shows (every visible label counts).
pub fn checkout_rows(page: &Page<'_>) -> CheckoutRows {
    let labels = || page.labelled.iter().map(Page::label_of);
    CheckoutRows {
        address: labels().any(|l| address_in(std::iter::once(l)).is_some()),
        payment: labels().any(is_payment_row),
        total: labels().any(is_total_label),
    }
}

/// The order button of a confirming screen: the last visible label in the bottom
/// quarter of the screen that reads as a submit control, a 确定 / 立即购买, or a pay
/// action, inside something clickable. A 确定 / 立即购买 is
/// [`OrderKind::CommittingProceed`] when `rows` has any checkout row.
pub fn order_control<'t>(
    page: &Page<'t>,
    rows: CheckoutRows,
) -> Option<(OrderControl, NodeRef<'t>)> {
    let screen = page.tree.screen();
    let footer_top = screen.top + (screen.bottom - screen.top) * 3 / 4;
    let node = page
        .labels(|l| {
            is_pay_action(l)
                || is_submit_control(l)
                || SUBMIT_LABELS.iter().any(|s| l.starts_with(s))
                || is_proceed_label(l)
        })
        .filter(|n| n.visible_bounds().top >= footer_top)
        .filter(|n| n.nearest_clickable().is_some() || n.is_clickable())
        .last()?;
    let label = Page::label_of(&node);
    let kind = if is_pay_action(label) {
        OrderKind::Pays
    } else if is_proceed_label(label) {
        // A 确定 that quotes what the order costs places it, checkout rows or not.
        if rows.any() || proceed_carries_amount(node) {
            OrderKind::CommittingProceed
        } else {
            OrderKind::Proceed
        }
    } else {
        OrderKind::Submit
    };
    let amount = parse_price(label).or_else(|| {
        let parts: Vec<&str> = node.nearest_clickable().unwrap_or(node).texts().collect();
        price_from_parts(parts.iter().copied())
    });
    let target = Target::of(node)?;
    Some((
        OrderControl {
            kind,
            target,
            amount,
        },
        node,
    ))
}

/// Something PDD drew over the order button (a 多多支付 promo bubble), and the
/// close control inside it that a tap reaches, if any.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct OrderCover {
    pub cover: InAppCover,
    /// A close of the cover (content-desc 关闭 / 关闭提示 …) whose own tap nothing covers.
    pub close: Option<Target>,
}

/// What covers the order button `node` at its tap point `at`, if anything does.
pub fn order_cover<'t>(
    page: &Page<'t>,
    node: NodeRef<'t>,
    at: super::tree::Point,
) -> Option<OrderCover> {
    let cover = covering_node(node, at)?;
    let inside = |n: &NodeRef<'_>| cover.bounds.contains(&n.visible_bounds());
    let close = page
        .labels(|l| CLOSE_DESC.contains(&l))
        .filter(inside)
        .filter_map(|n| {
            let t = Target::with_label(n, Page::label_of(&n))?;
            covering_node(n, t.tap).is_none().then_some(t)
        })
        .last();
    Some(OrderCover { cover, close })
}

/// Whether a tree is a checkout screen for the device guard: a payment row or a total
/// line anywhere, or an address block next to a quantity stepper. On such a screen a 确定
/// / 立即购买 places the order and is a submit control (the goods page — a buy button
/// labelled 立即购买 beside a "送至 浙江省杭州市…" delivery line — is not one).
pub fn is_checkout(tree: &Tree) -> bool {
    let page = Page::new(tree);
    let rows = checkout_rows(&page);
    let stepper = page
        .labels(|l| l == "减少数量" || l == "增加数量")
        .next()
        .is_some();
    rows.payment || rows.total || (rows.address && stepper)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proceed_labels_with_or_without_an_amount() {
        for l in ["确定", "立即购买", "确定 ¥59", "立即购买 ¥47.2"] {
            assert!(is_proceed_label(l), "{l}");
        }
        for l in ["确定放弃吗?", "确定收货", "立即购买省5元", "确认"] {
            assert!(!is_proceed_label(l), "{l}");
        }
    }

    #[test]
    fn totals_lines() {
        for l in ["合计：", "合计:¥74.8", "共2件 合计：", "实付款", "应付"] {
            assert!(is_total_label(l), "{l}");
        }
        for l in ["优惠合计", "共减¥3", "已减3元", "领券立减3元", "¥38.9"] {
            assert!(!is_total_label(l), "{l}");
        }
    }
}
