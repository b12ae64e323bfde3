//! The checkout / SKU bottom sheet: the page every purchase ends on.
//!
//! Layout as seen in real dumps (field notes §3), top to bottom:
//! address row ("手动添加地址" when none) → header (goods image `iv_goods_img`, stock and
//! unit price merged in one label "最后3件 ¥269", `tv_select_sku` "已选: …", quantity
//! stepper desc 减少数量 / EditText / desc 增加数量) → discounts ("优惠") → the groups
//! container (a RecyclerView: one heading per SKU group, then its options) → payment
//! method row → footer "提交订单 ¥269" (label and order total in one non-clickable
//! TextView inside a clickable parent).
//!
//! Options come in two forms:
//! - **text chips**: a clickable TextView whose text is the name (`selected="true"` on the
//!   chosen one), in a clickable parent that may also hold a stock label ("最后3件");
//! - **image grid**: a clickable ViewGroup whose content-desc is the name, inside a
//!   horizontally scrollable RecyclerView, with a `tv_content` label, "打开大图", and an
//!   optional stock label. Names may start with two spaces. Options past the screen edge
//!   are reported by uiautomator with their bounds already clipped (a 300 px tile shows
//!   as 76 px at the edge), so "clipped" is inferred by comparing with the siblings.

use regex::Regex;
use serde::Serialize;
use std::sync::OnceLock;

use super::checkout::{self, CheckoutRows, OrderControl, OrderCover, OrderKind};
pub use super::checkout::{address_block, address_in, join_address, payment_row, PROCEED_LABELS};
use super::label_index::{trim_name, Page};
use super::payment::{self, PaymentVerdict};
use super::target::Target;
use super::tree::{Bounds, NodeRef, Point, Tree};
use crate::money::{parse_price, price_from_parts, Fen};

/// What the flows need from the sheet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkuSheet {
    /// `Some(false)` when the sheet asks for an address ("手动添加地址"), `Some(true)`
    /// when an address (receiver + masked phone or a street address) is shown, `None`
    /// when neither is recognisable.
    pub address_present: Option<bool>,
    /// The address block's labels as PDD shows them (receiver, masked phone, address),
    /// joined by a space — only when an address is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_text: Option<String>,
    /// The order total: the order button's own amount ("提交订单 ¥269" → 26900 fen), or
    /// the sheet's 合计 line (a 确定 that places the order); both shown and different:
    /// `None` (fail closed).
    #[serde(rename = "total_cent")]
    pub total: Option<Fen>,
    /// The quantity in the stepper's field.
    pub quantity: Option<u32>,
    /// The raw "已选: …" text.
    pub selected_text: Option<String>,
    /// The header label holding stock and unit price ("最后3件 ¥269").
    pub unit_price_text: Option<String>,
    #[serde(rename = "unit_price_cent")]
    pub unit_price: Option<Fen>,
    /// The header stock wording before the price ("最后3件", "即将卖完").
    pub stock_text: Option<String>,
    /// SKU groups in page order.
    pub groups: Vec<SkuGroup>,
    pub quantity_stepper: Option<QuantityStepper>,
    /// The footer's order button, whatever it reads ([`super::checkout::order_control`]):
    /// 提交订单, a 确定 / 立即购买, or a pay action.
    pub order_button: Option<OrderControl>,
    /// Something PDD drew over the order button (its tap would press that instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_cover: Option<OrderCover>,
    /// The checkout rows the sheet shows (address block, payment row, total line): with
    /// any of them a 确定 / 立即购买 places the order.
    pub checkout: CheckoutRows,
    /// The button that places the order: 提交订单 / 确认下单, or a 确定 / 立即购买 on a
    /// sheet with checkout rows (marked first, like 提交订单). Tapping it creates
    /// an order.
    pub submit: Option<Target>,
    /// The footer button of a spec sheet that goes on to the full-page 确认订单 instead
    /// of ordering (确定 / 立即购买 on a sheet with no checkout row; field notes §3a).
    /// The order is placed on 确认订单 ([`super::confirm_order`]), where the total and the
    /// payment method are judged.
    pub proceed: Option<Target>,
    /// The sheet's close icon.
    pub close: Option<Target>,
    /// "使用#微信支付，更换支付方式".
    pub payment_method_text: Option<String>,
    /// Whether submitting here would need a human to pay (see [`super::payment`]).
    pub payment: PaymentVerdict,
    /// The vertical option list, when the sheet scrolls: its bounds and whether it
    /// hides options above or below.
    pub list: Option<ListView>,
}

/// One SKU dimension: its heading and its options in page order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkuGroup {
    /// The heading ("颜色", "尺码", "款式"); empty when options had no heading.
    pub name: String,
    pub form: OptionForm,
    /// The options can be scrolled sideways (image grid in a scrollable RecyclerView).
    pub scrollable: bool,
    /// Where the options are visible: the scroll container clipped to the screen.
    pub viewport: Bounds,
    pub options: Vec<SkuOption>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OptionForm {
    TextChips,
    ImageGrid,
}

/// One option of a group.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SkuOption {
    /// The name, trimmed ("乌龙奶茶+手持化妆镜+礼盒").
    pub name: String,
    /// The name as in the dump ("  乌龙奶茶+手持化妆镜+礼盒").
    pub raw_name: String,
    pub selected: bool,
    /// False when disabled or labelled sold out (售罄, 缺货, 无货, …).
    pub available: bool,
    /// The option's own stock label ("最后9件", "已售罄").
    pub stock_label: Option<String>,
    /// Centre of the option's visible part; `None` when off screen.
    pub tap: Option<Point>,
    /// Bounds of the option as dumped (already clipped by the app's layout).
    pub bounds: Bounds,
    /// Only part of the option is visible: scroll before tapping.
    pub clipped: bool,
    /// Not visible at all.
    pub offscreen: bool,
}

/// The quantity stepper.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct QuantityStepper {
    pub value: Option<u32>,
    pub decrease: Option<Target>,
    pub increase: Option<Target>,
    pub decrease_enabled: bool,
    pub increase_enabled: bool,
    pub field: Option<Target>,
}

/// A name reduced for comparison: whitespace removed, fullwidth ASCII folded
/// ("ＸＬ" → "XL"), 【】 and ［］ as [], lowercase. The sheet writes "【流砂限定】…" in
/// the option and "[流砂限定]…" in 已选; the Admin's spec may use either.
pub fn normalize_name(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '\u{3000}' && *c != '\u{a0}')
        .map(|c| match c {
            '【' | '［' => '[',
            '】' | '］' => ']',
            '（' => '(',
            '）' => ')',
            '\u{ff01}'..='\u{ff5e}' => char::from_u32(c as u32 - 0xff01 + 0x21).unwrap_or(c),
            _ => c,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

impl SkuGroup {
    /// The option whose name equals `name` after [`normalize_name`].
    pub fn option(&self, name: &str) -> Option<&SkuOption> {
        let want = normalize_name(name);
        self.options
            .iter()
            .find(|o| normalize_name(&o.name) == want)
    }

    /// The selected option, when exactly one is selected.
    pub fn selected(&self) -> Option<&SkuOption> {
        let mut it = self.options.iter().filter(|o| o.selected);
        let first = it.next()?;
        it.next().is_none().then_some(first)
    }
}

impl SkuSheet {
    /// The group whose heading equals `name` after [`normalize_name`].
    pub fn group(&self, name: &str) -> Option<&SkuGroup> {
        let want = normalize_name(name);
        self.groups.iter().find(|g| normalize_name(&g.name) == want)
    }

    /// The option marked selected in each group, by group name.
    pub fn selected_options(&self) -> impl Iterator<Item = (&str, Option<&SkuOption>)> {
        self.groups
            .iter()
            .map(|g| (g.name.as_str(), g.options.iter().find(|o| o.selected)))
    }
}

fn stock_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(
            r"^(?:(?:最后|仅剩|剩余|仅剩下|库存)\s*\d+\s*件[!！]?|即将(?:卖完|售罄|抢光)|已?售罄|已抢光|缺货|无货|暂时缺货|补货中|库存紧张|已下架)$",
        )
        .expect("static regex")
    })
}

fn sold_out_word(s: &str) -> bool {
    ["售罄", "缺货", "无货", "抢光", "补货中", "已下架", "不可选"]
        .iter()
        .any(|w| s.contains(w))
        && !s.contains("即将")
}

/// A stock label: "最后9件", "即将卖完", "已售罄".
pub fn is_stock_label(s: &str) -> bool {
    stock_re().is_match(trim_name(s))
}

/// The "已选: …" node: by its stable id, else by its wording.
fn select_node<'t>(tree: &'t Tree) -> Option<NodeRef<'t>> {
    tree.nodes()
        .find(|n| n.id_name() == "tv_select_sku")
        .or_else(|| {
            tree.nodes()
                .find(|n| n.is_visible() && trim_name(n.text()).starts_with("已选"))
        })
}

fn stepper_node<'t>(tree: &'t Tree, desc: &str) -> Option<NodeRef<'t>> {
    tree.nodes().find(|n| trim_name(n.desc()) == desc)
}

/// Cheap check used by the classifier.
pub fn looks_like(page: &Page<'_>) -> bool {
    let selected = select_node(page.tree).is_some();
    let stepper = stepper_node(page.tree, "减少数量").is_some()
        || stepper_node(page.tree, "增加数量").is_some();
    let button = checkout::order_control(page, CheckoutRows::default()).is_some();
    (selected && (stepper || button)) || (stepper && button)
}

pub fn extract(page: &Page<'_>) -> SkuSheet {
    let tree = page.tree;
    let select = select_node(tree);
    // The header block: the parent of "已选" holds image, price and stepper.
    let header = select.and_then(|s| s.parent());

    let (unit_price_text, unit_price, stock_text) = header
        .map(|h| header_price(h))
        .unwrap_or((None, None, None));

    let stepper = extract_stepper(tree);
    let quantity = stepper.as_ref().and_then(|s| s.value);

    let address_present = address_present(page, select);
    let address_text = address_text(page, select).filter(|_| address_present == Some(true));
    let payment_method_text = payment_row(page);
    let total_line = checkout::total_node(page);
    let checkout = CheckoutRows {
        address: address_present.is_some(),
        payment: payment_method_text.is_some(),
        total: total_line.is_some(),
    };
    let button = checkout::order_control(page, checkout);
    let button_node = button.as_ref().map(|(_, n)| *n);
    let order_cover = button
        .as_ref()
        .and_then(|(c, n)| checkout::order_cover(page, *n, c.target.tap));
    let order_button = button.map(|(c, _)| c);

    // The total: the button's own amount, or the 合计 line; both and different: unreadable.
    let line_total = total_line.and_then(|n| checkout::total_after(n, button_node).0);
    let button_total = order_button.as_ref().and_then(|b| b.amount);
    let total = match (button_total, line_total) {
        (Some(a), Some(b)) if a != b => None,
        (a, b) => a.or(b),
    };

    let groups = extract_groups(tree, header, select, button_node);

    let close = page
        .labels(|l| l == "关闭")
        .find(|n| n.desc().trim() == "关闭")
        .and_then(Target::of);

    let labels = || page.labelled.iter().map(Page::label_of);
    let kind = order_button.as_ref().map(|b| b.kind);
    let payment = match (kind, &order_button) {
        // A spec sheet's 确定 / 立即购买 orders nothing: the payment is judged on 确认订单 —
        // unless this sheet already says the account commits or pays without a human.
        (Some(OrderKind::Proceed), _) => {
            match payment::committing(labels().chain(payment_method_text.as_deref())) {
                Some(refusal) => PaymentVerdict::NotAllowed {
                    reason: refusal.reason(),
                    refusal,
                },
                None => PaymentVerdict::OnNextPage,
            }
        }
        (_, b) => payment::assess(
            payment_method_text.as_deref(),
            b.as_ref()
                .map(OrderControl::as_button)
                .unwrap_or(payment::OrderButton::Missing),
            labels(),
        ),
    };
    let places = |k: OrderKind| matches!(k, OrderKind::Submit | OrderKind::CommittingProceed);
    let submit = order_button
        .as_ref()
        .filter(|b| places(b.kind))
        .map(|b| b.target.clone());
    let proceed = order_button
        .as_ref()
        .filter(|b| b.kind == OrderKind::Proceed)
        .map(|b| b.target.clone());

    let mut sheet = SkuSheet {
        address_present,
        address_text,
        total,
        quantity,
        selected_text: select.map(|s| trim_name(s.text()).to_string()),
        unit_price_text,
        unit_price,
        stock_text,
        groups,
        quantity_stepper: stepper,
        order_button,
        order_cover,
        checkout,
        submit,
        proceed,
        close,
        payment_method_text,
        payment,
        list: None,
    };
    sheet.list = list_view(tree, &sheet);
    sheet
}

/// The vertical option list: the scrollable container around the group headings, with
/// whether it hides content above or below.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ListView {
    pub bounds: Bounds,
    pub more_above: bool,
    pub more_below: bool,
}

/// Finds the scrollable list holding the sheet's groups, if the list can scroll.
fn list_view(tree: &Tree, sheet: &SkuSheet) -> Option<ListView> {
    // A heading node of a named group: its nearest scrollable ancestor is the list.
    let heading = sheet
        .groups
        .iter()
        .map(|g| trim_name(&g.name))
        .find(|n| !n.is_empty())?;
    let node = tree
        .nodes()
        .find(|n| n.is_visible() && trim_name(n.text()) == heading)?;
    let list = node.ancestors().find(|a| a.is_scrollable())?;
    let b = list.visible_bounds();
    let mut more_above = false;
    let mut more_below = false;
    for n in list.descendants() {
        if n.children().next().is_some() || !n.is_visible() {
            continue;
        }
        let nb = n.visible_bounds();
        if nb.is_empty() {
            continue;
        }
        // A leaf cut by the list's edge means content continues past it.
        if nb.bottom >= b.bottom - 2 {
            more_below = true;
        }
        if nb.top <= b.top + 2 {
            more_above = true;
        }
    }
    Some(ListView {
        bounds: b,
        more_above,
        more_below,
    })
}

/// The header's merged stock + unit price label ("最后3件 ¥269").
fn header_price(header: NodeRef<'_>) -> (Option<String>, Option<Fen>, Option<String>) {
    for n in header.descendants() {
        let text = trim_name(n.text());
        if text.is_empty() || !text.contains(['¥', '￥']) {
            continue;
        }
        let price = parse_price(text).or_else(|| {
            // Split form: "¥" / "269" siblings under one parent.
            n.parent().and_then(|p| {
                let parts: Vec<&str> = p.texts().collect();
                price_from_parts(parts.iter().copied())
            })
        });
        let stock = text
            .split(['¥', '￥'])
            .next()
            .map(trim_name)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        return (Some(text.to_string()), price, stock);
    }
    (None, None, None)
}

pub fn extract_stepper(tree: &Tree) -> Option<QuantityStepper> {
    let dec = stepper_node(tree, "减少数量");
    let inc = stepper_node(tree, "增加数量");
    if dec.is_none() && inc.is_none() {
        return None;
    }
    // The field sits between the two buttons, under their common parent.
    let anchor = dec.or(inc)?;
    let field = anchor.parent().and_then(|p| {
        p.descendants()
            .find(|n| n.class_name() == "EditText")
            .or_else(|| {
                p.descendants()
                    .find(|n| !n.text().trim().is_empty() && n.text().trim().parse::<u32>().is_ok())
            })
    });
    let value = field.and_then(|f| f.text().trim().parse::<u32>().ok());
    Some(QuantityStepper {
        value,
        decrease_enabled: dec.is_some_and(|n| n.is_enabled()),
        increase_enabled: inc.is_some_and(|n| n.is_enabled()),
        decrease: dec.and_then(Target::of),
        increase: inc.and_then(Target::of),
        field: field.and_then(Target::of),
    })
}

fn address_present(page: &Page<'_>, select: Option<NodeRef<'_>>) -> Option<bool> {
    // Only the part of the sheet above the header counts: a goods title further down
    // may well mention 地址.
    let limit = select.map(|s| s.id().index()).unwrap_or(usize::MAX);
    address_in(
        page.labelled
            .iter()
            .filter(|n| n.id().index() < limit)
            .map(Page::label_of),
    )
}

/// The sheet's address block as text (the labels above the header, see
/// [`address_block`]).
fn address_text(page: &Page<'_>, select: Option<NodeRef<'_>>) -> Option<String> {
    let limit = select.map(|s| s.id().index()).unwrap_or(usize::MAX);
    address_block(
        page.labelled
            .iter()
            .filter(|n| n.id().index() < limit)
            .copied(),
    )
}

/// A candidate option found while scanning the groups container.
struct Found<'t> {
    container: NodeRef<'t>,
    name_node: NodeRef<'t>,
    raw_name: &'t str,
    form: OptionForm,
}

enum Item<'t> {
    Heading(&'t str),
    Option(Found<'t>),
}

const NOT_OPTION_DESC: &[&str] = &["打开大图", "减少数量", "增加数量", "关闭", "商品主图"];
/// Clickable texts in the groups area that are helpers, not options.
const NOT_OPTION_TEXT: &[&str] = &[
    "尺码表",
    "查看尺码表",
    "尺码助手",
    "尺码推荐",
    "展开",
    "收起",
    "更多",
];

fn is_scroll_container(n: &NodeRef<'_>) -> bool {
    let c = n.class_name();
    c.ends_with("RecyclerView") || c.ends_with("ListView") || c.ends_with("ScrollView")
}

fn extract_groups<'t>(
    tree: &'t Tree,
    header: Option<NodeRef<'t>>,
    select: Option<NodeRef<'t>>,
    submit: Option<NodeRef<'t>>,
) -> Vec<SkuGroup> {
    // The scan starts after the header (or 已选) and stops at the footer.
    let start = header
        .map(|h| {
            h.descendants()
                .next_back()
                .map_or(h.id().index() + 1, |d| d.id().index() + 1)
        })
        .or_else(|| select.map(|s| s.id().index() + 1))
        .unwrap_or(0);
    let stop = submit
        .and_then(|s| s.nearest_clickable().or(Some(s)))
        .map(|s| s.id().index())
        .unwrap_or(usize::MAX);
    // Prefer the groups RecyclerView after the header; discounts ("优惠 … 减7.53元")
    // sit between the header and it.
    let scope: Vec<NodeRef<'t>> = {
        let container = tree
            .nodes()
            .skip(start)
            .take_while(|n| n.id().index() < stop)
            .find(is_scroll_container);
        match container {
            Some(c) => c.descendants().filter(|n| n.id().index() < stop).collect(),
            None => tree
                .nodes()
                .skip(start)
                .take_while(|n| n.id().index() < stop)
                .collect(),
        }
    };

    let mut items: Vec<Item<'t>> = Vec::new();
    let mut skip_to = 0usize;
    for &n in &scope {
        let i = n.id().index();
        if i < skip_to {
            continue;
        }
        if let Some(found) = option_at(n) {
            skip_to = found
                .container
                .descendants()
                .next_back()
                .map_or(i, |d| d.id().index())
                + 1;
            items.push(Item::Option(found));
            continue;
        }
        let text = trim_name(n.text());
        if !text.is_empty()
            && !n.is_clickable()
            && n.class_name().ends_with("TextView")
            && text.chars().count() <= 15
            && !text.contains(['¥', '￥'])
            && !is_stock_label(text)
            && !text.starts_with("已选")
        {
            items.push(Item::Heading(text));
        }
    }

    let mut groups: Vec<(String, Vec<Found<'t>>)> = Vec::new();
    let mut pending: Option<&'t str> = None;
    for item in items {
        match item {
            Item::Heading(h) => pending = Some(h),
            Item::Option(f) => {
                if let Some(h) = pending.take() {
                    groups.push((h.to_string(), Vec::new()));
                } else if groups.is_empty() {
                    groups.push((String::new(), Vec::new()));
                }
                if let Some(g) = groups.last_mut() {
                    g.1.push(f);
                }
            }
        }
    }
    groups
        .into_iter()
        .map(|(name, found)| build_group(tree, name, found))
        .collect()
}

/// Is `n` the container of an option? Image tiles: a clickable node with a name in its
/// content-desc and children. Text chips: a clickable TextView with text (its clickable
/// parent, if it holds nothing else clickable, is the container).
fn option_at(n: NodeRef<'_>) -> Option<Found<'_>> {
    let desc = n.desc();
    let d = trim_name(desc);
    if n.is_clickable()
        && !d.is_empty()
        && n.children().next().is_some()
        && !NOT_OPTION_DESC.contains(&d)
        && !d.contains(['¥', '￥'])
    {
        return Some(Found {
            container: n,
            name_node: n,
            raw_name: desc,
            form: OptionForm::ImageGrid,
        });
    }
    let text = n.text();
    let t = trim_name(text);
    let chip_class = matches!(
        n.class_name(),
        "TextView" | "CheckedTextView" | "Button" | "RadioButton" | "CheckBox"
    );
    if (n.is_clickable() || n.is_checkable())
        && chip_class
        && !t.is_empty()
        && !is_stock_label(t)
        && !t.contains(['¥', '￥'])
        && !NOT_OPTION_TEXT.contains(&t)
    {
        let container = n
            .parent()
            .filter(|p| {
                p.is_clickable()
                    && p.descendants()
                        .filter(|d| d.is_clickable() && !d.text().trim().is_empty())
                        .count()
                        == 1
            })
            .unwrap_or(n);
        return Some(Found {
            container,
            name_node: n,
            raw_name: text,
            form: OptionForm::TextChips,
        });
    }
    None
}

fn build_group(tree: &Tree, name: String, found: Vec<Found<'_>>) -> SkuGroup {
    let form = if found.iter().any(|f| f.form == OptionForm::ImageGrid) {
        OptionForm::ImageGrid
    } else {
        OptionForm::TextChips
    };
    // The viewport: the nearest scroll container around the first option, on screen.
    let scroller = found
        .first()
        .and_then(|f| f.container.ancestors().find(is_scroll_container));
    let scrollable = scroller.is_some_and(|s| s.is_scrollable());
    let viewport = scroller
        .map(|s| s.visible_bounds())
        .unwrap_or_else(|| tree.screen());
    let max_w = found
        .iter()
        .map(|f| f.container.bounds().width())
        .max()
        .unwrap_or(0);
    let max_h = found
        .iter()
        .map(|f| f.container.bounds().height())
        .max()
        .unwrap_or(0);

    let options = found
        .into_iter()
        .map(|f| {
            let bounds = f.container.bounds();
            let vis = bounds.intersect(&viewport);
            let offscreen = vis.is_empty()
                || f.container.visible_to_user() == Some(false)
                || !f.container.is_visible();
            // uiautomator clips bounds to the parent, so a partly visible tile looks
            // like a narrower tile touching the viewport edge.
            let uniform = form == OptionForm::ImageGrid || scrollable;
            let narrow_at_edge = uniform
                && ((bounds.width() * 10 < max_w * 9
                    && (bounds.right >= viewport.right - 1 || bounds.left <= viewport.left + 1))
                    || (bounds.height() * 10 < max_h * 9
                        && (bounds.bottom >= viewport.bottom - 1
                            || bounds.top <= viewport.top + 1)));
            let clipped = !offscreen && (vis != bounds || narrow_at_edge);
            let subtree: Vec<NodeRef<'_>> = f.container.subtree().collect();
            let selected = subtree.iter().any(|n| n.is_selected() || n.is_checked());
            let stock_label = subtree
                .iter()
                .filter(|n| *n != &f.name_node)
                .map(|n| trim_name(n.text()))
                .find(|t| is_stock_label(t))
                .map(str::to_string);
            let disabled = subtree.iter().any(|n| !n.is_enabled());
            let sold_out = stock_label.as_deref().is_some_and(sold_out_word)
                || sold_out_word(trim_name(f.raw_name))
                || subtree.iter().any(|n| sold_out_word(n.desc()));
            SkuOption {
                name: trim_name(f.raw_name).to_string(),
                raw_name: f.raw_name.to_string(),
                selected,
                available: !disabled && !sold_out,
                stock_label,
                tap: (!offscreen).then(|| vis.center()),
                bounds,
                clipped,
                offscreen,
            }
        })
        .collect();
    SkuGroup {
        name,
        form,
        scrollable,
        viewport,
        options,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_normalized() {
        assert_eq!(
            normalize_name("【流砂限定】鎏金盘OUIET BROWN"),
            normalize_name("[流砂限定]鎏金盘OUIET BROWN")
        );
        assert_eq!(normalize_name("  ＸＬ "), "xl");
        assert_ne!(normalize_name("L"), normalize_name("XL"));
    }

    #[test]
    fn a_footer_reading_confirm_goes_on_to_confirm_order_only_on_a_spec_sheet() {
        use crate::screen::{classify, Screen, Tree};
        let sheet = |xml: &str| match classify(&Tree::parse(xml).expect("parses")) {
            Screen::SkuSheet(s) => s,
            other => panic!("not a sheet: {other:?}"),
        };
        // The spec sheet (no address, no payment row, no total): 确定 / 立即购买 opens
        // 确认订单.
        let spec = include_str!("../../../fixtures/screens/sku_sheet_spec_confirm.xml");
        for label in ["确定", "立即购买"] {
            let s = sheet(&spec.replace("text=\"确定\"", &format!("text=\"{label}\"")));
            assert_eq!(s.proceed.map(|t| t.label), Some(label.to_string()));
            assert!(s.submit.is_none() && s.total.is_none());
            assert_eq!(s.payment, PaymentVerdict::OnNextPage);
        }
        // Committing wording on such a sheet is refused right there.
        let s = sheet(&spec.replace("text=\"添加\"", "text=\"先用后付\""));
        assert!(matches!(s.payment, PaymentVerdict::NotAllowed { .. }));
        // With an address row the same 确定 places the order: it is the submit.
        let with_address = include_str!("../../../fixtures/screens/sku_sheet_confirm_button.xml");
        let s = sheet(with_address);
        assert!(s.proceed.is_none());
        assert_eq!(s.submit.map(|t| t.label), Some("确定".to_string()));
        assert_eq!(
            s.order_button.map(|b| b.kind),
            Some(OrderKind::CommittingProceed)
        );
        // A sheet with 提交订单 has no proceed control.
        let s = sheet(&spec.replace("text=\"确定\"", "text=\"提交订单 ¥47.2\""));
        assert!(s.proceed.is_none() && s.submit.is_some());
    }

    #[test]
    fn stock_labels() {
        for s in [
            "最后9件",
            "最后 3 件",
            "仅剩2件",
            "即将卖完",
            "已售罄",
            "缺货",
        ] {
            assert!(is_stock_label(s), "{s}");
        }
        for s in ["黑色", "最后一件好物", "已选: 黑色"] {
            assert!(!is_stock_label(s), "{s}");
        }
    }
}
