//! The goods page: its recognizer ([`detect_goods`], [`extract_goods`] →
//! [`GoodsDetail`]: title, price, buy buttons, goods id, shop, list price, sold-out
//! notice), the buy button the flows open the sheet with, the identity check against a
//! task, and "this goods does not exist" pages.

use regex::Regex;
use serde::{Deserialize, Serialize};
use std::sync::OnceLock;

use super::label_index::{first_price, starts_short, trim_name, Page, BUY_BUTTONS, SIGNS};
use super::target::Target;
use super::tree::{NodeRef, Tree};
use crate::money::{parse_price, price_from_parts, Fen};

/// The goods page.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GoodsDetail {
    /// The full title (from content-desc when the text is truncated).
    pub title: Option<String>,
    #[serde(rename = "price_cent")]
    pub price: Option<Fen>,
    /// The price as printed (parts joined: "券后¥4.7").
    pub price_text: Option<String>,
    pub buy_buttons: Vec<BuyButton>,
    pub goods_id: Option<String>,
    /// A sold-out / off-shelf notice is visible (该款式售罄, 已售罄, 商品已下架).
    pub sold_out: bool,
    /// The title the flows report and match: a label whose content-desc holds the whole
    /// title and whose text is that title or its truncation (the real app's shape),
    /// else [`GoodsDetail::title`].
    pub full_title: Option<String>,
    /// The shop name (next to 进店).
    pub shop: Option<String>,
    /// The crossed-out list price next to the price.
    #[serde(rename = "list_price_cent")]
    pub list_price: Option<Fen>,
}

/// A buy button of the goods page ("发起拼单" with its price "¥12.7").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BuyButton {
    pub label: String,
    #[serde(rename = "price_cent")]
    pub price: Option<Fen>,
    pub target: Target,
}

pub fn detect_goods(page: &Page<'_>) -> bool {
    page.starting(BUY_BUTTONS, 16).is_some()
}

pub fn extract_goods(page: &Page<'_>) -> GoodsDetail {
    let mut buy_buttons: Vec<BuyButton> = Vec::new();
    let mut button_nodes: Vec<NodeRef<'_>> = Vec::new();
    for n in page.labels(|l| BUY_BUTTONS.iter().any(|w| starts_short(l, w, 16))) {
        let click = n.nearest_clickable().unwrap_or(n);
        if button_nodes.iter().any(|b| b.id() == click.id()) {
            continue;
        }
        let label = Page::label_of(&n);
        let word = BUY_BUTTONS
            .iter()
            .find(|w| label.starts_with(*w))
            .copied()
            .unwrap_or(label);
        let parts: Vec<&str> = click.texts().collect();
        let price = price_from_parts(parts.iter().copied());
        if let Some(target) = Target::with_label(n, word) {
            button_nodes.push(click);
            buy_buttons.push(BuyButton {
                label: word.to_string(),
                price,
                target,
            });
        }
    }
    let in_button = |n: &NodeRef<'_>| button_nodes.iter().any(|b| b.contains(n));

    let (price, price_text) = first_price(page, &in_button);
    let title = goods_title(page, &in_button);
    let goods_id = goods_id(page);
    let sold_out = page
        .containing(&["该款式售罄", "已售罄", "商品已下架", "已下架", "已抢光"])
        .is_some();
    let mut g = GoodsDetail {
        title,
        price,
        price_text,
        buy_buttons,
        goods_id,
        sold_out,
        full_title: None,
        shop: shop_name(page.tree),
        list_price: list_price(page.tree),
    };
    g.full_title = full_title(page.tree, &g);
    g
}

fn goods_title(page: &Page<'_>, skip: &dyn Fn(&NodeRef<'_>) -> bool) -> Option<String> {
    // 1. A truncated text whose content-desc holds the whole title.
    for n in page.labelled.iter().filter(|n| !skip(n)) {
        let t = trim_name(n.text());
        let d = trim_name(n.desc());
        if t.chars().count() >= 2 && d.len() > t.len() && d.starts_with(t.trim_end_matches('…')) {
            return Some(d.to_string());
        }
    }
    // 2. The stable title ids.
    if let Some(n) = page
        .labelled
        .iter()
        .find(|n| matches!(n.id_name(), "tv_title" | "goods_title" | "tv_goods_name"))
    {
        return Some(Page::label_of(n).to_string());
    }
    // 3. The longest plain text in the upper part of the screen.
    let limit = page.tree.screen().top + page.tree.screen().height() * 3 / 4;
    page.labelled
        .iter()
        .filter(|n| !skip(n) && n.bounds().top < limit)
        .map(|n| trim_name(n.text()))
        .filter(|t| t.chars().count() >= 8 && !t.contains(SIGNS) && !t.contains("已拼"))
        .max_by_key(|t| t.chars().count())
        .map(str::to_string)
}

fn goods_id_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"(?:goods_id=|商品(?:编号|ID|id|Id)\s*[:：]?\s*)(\d{6,20})")
            .expect("static regex")
    })
}

fn goods_id(page: &Page<'_>) -> Option<String> {
    page.labelled.iter().find_map(|n| {
        [n.text(), n.desc()].iter().find_map(|s| {
            goods_id_re()
                .captures(s)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_string())
        })
    })
}

/// Buy buttons in the order the flows prefer them. Collect and purchase must open the
/// sheet the same way: the group-buy (拼单) price is the one an order pays.
pub const PREFERRED_BUY_BUTTONS: &[&str] = &[
    "发起拼单",
    "去拼单",
    "参与拼单",
    "一键拼单",
    "单独购买",
    "免拼购买",
    "立即购买",
];

/// Picks the buy button to open the sheet with.
pub fn buy_button(g: &GoodsDetail) -> Option<&BuyButton> {
    PREFERRED_BUY_BUTTONS
        .iter()
        .find_map(|w| g.buy_buttons.iter().find(|b| b.label == *w))
        .or_else(|| g.buy_buttons.first())
}

/// The shop name: the label next to the "进店" button (stable id `tv_enter_mall`),
/// else a short label ending like a shop (旗舰店, 专营店, …).
fn shop_name(tree: &Tree) -> Option<String> {
    let enter = tree
        .nodes()
        .find(|n| n.id_name() == "tv_enter_mall" || trim_name(n.text()) == "进店");
    if let Some(parent) = enter.and_then(|e| e.parent()) {
        let name = parent
            .descendants()
            .filter(|n| n.is_visible())
            .map(|n| trim_name(n.text()))
            .find(|t| !t.is_empty() && *t != "进店" && t.chars().count() <= 40);
        if let Some(n) = name {
            return Some(n.to_string());
        }
    }
    const SHOP_ENDINGS: &[&str] = &["旗舰店", "专营店", "专卖店", "直营店", "工厂店", "官方店"];
    tree.nodes()
        .filter(|n| n.is_visible())
        .map(|n| trim_name(n.text()))
        .find(|t| t.chars().count() <= 30 && SHOP_ENDINGS.iter().any(|e| t.ends_with(e)))
        .map(str::to_string)
}

/// The crossed-out list price shown next to the goods price: in the price row (the
/// parent of the first lone currency sign), a later label with its own sign and an
/// amount above the price (the amount right after the sign).
fn list_price(tree: &Tree) -> Option<Fen> {
    let sign = tree.nodes().find(|n| {
        n.is_visible() && {
            let t = trim_name(n.text());
            t == "¥" || t == "￥"
        }
    })?;
    let row: NodeRef<'_> = sign.parent()?;
    let mut after = row
        .children()
        .filter(|c| c.id().index() > sign.id().index())
        .map(|c| trim_name(c.text()))
        .filter(|t| !t.is_empty());
    let price = parse_price(&format!("¥{}", after.next()?))?;
    after
        .filter_map(parse_price)
        .find(|p| p.get() > price.get())
}

/// The goods title: a label whose content-desc holds the whole title and whose text is
/// that title or its truncation (the real app's shape), else the classifier's guess.
fn full_title(tree: &Tree, page: &GoodsDetail) -> Option<String> {
    tree.nodes()
        .filter(|n| n.is_visible())
        .find_map(|n| {
            let t = trim_name(n.text()).trim_end_matches(['…', '.']);
            let d = trim_name(n.desc());
            (t.chars().count() >= 4
                && d.chars().count() >= 6
                && d.starts_with(t)
                && !d.contains(['¥', '￥']))
            .then(|| d.to_string())
        })
        .or_else(|| page.title.clone())
}

/// Whether the page shown is the task's goods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// The page's goods id, or its title, matches the task.
    Confirmed,
    /// The page shows another goods (a redirect, a wrong link).
    Mismatch { seen: String },
    /// Nothing on the page can prove it either way (no goods id shown, no expected
    /// title in the task).
    Unverified,
}

/// What proved that the page shown is the task's goods (`goods_identity` in the result).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GoodsProof {
    /// The page printed the task's goods id.
    GoodsIdOnPage,
    /// `dumpsys activity top` showed exactly the task's goods id.
    ActivityTop,
    /// No goods id was observable; the page's title matched the task's expected title.
    Title,
    /// Nothing proved it: no observable goods id and no expected title.
    Unverified,
}

impl GoodsProof {
    /// The value reported as `goods_identity`.
    pub fn as_str(self) -> &'static str {
        match self {
            GoodsProof::GoodsIdOnPage => "goods_id_on_page",
            GoodsProof::ActivityTop => "activity_top",
            GoodsProof::Title => "title",
            GoodsProof::Unverified => "unverified",
        }
    }

    /// Whether anything proved the identity (enough for a collect or a dry run).
    pub fn proven(self) -> bool {
        self != GoodsProof::Unverified
    }

    /// Whether a goods id the phone showed proved it — the only proof a live order is
    /// placed on (a title match proves nothing about which goods a redirect or
    /// a look-alike shows).
    pub fn by_goods_id(self) -> bool {
        matches!(self, GoodsProof::GoodsIdOnPage | GoodsProof::ActivityTop)
    }
}

/// Checks the page against the task: the goods id when the page shows one, else the
/// expected title when the task gives one.
pub fn identity(
    goods_id: &str,
    expected_title: Option<&str>,
    page: &GoodsDetail,
    title: Option<&str>,
) -> Identity {
    if let Some(seen) = &page.goods_id {
        return if seen == goods_id {
            Identity::Confirmed
        } else {
            Identity::Mismatch {
                seen: format!("goods_id {seen}"),
            }
        };
    }
    match (
        expected_title.filter(|t| !t.trim().is_empty()),
        title.or(page.title.as_deref()),
    ) {
        (Some(want), Some(seen)) => {
            let other = page.title.as_deref().unwrap_or(seen);
            if titles_match(want, seen) || titles_match(want, other) {
                Identity::Confirmed
            } else {
                Identity::Mismatch {
                    seen: format!("title {seen}"),
                }
            }
        }
        _ => Identity::Unverified,
    }
}

/// Titles are compared on their letters and digits only (case-folded), and match when
/// equal or when one contains the other (pages truncate titles; shops append words).
pub fn titles_match(a: &str, b: &str) -> bool {
    let norm = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect()
    };
    let (a, b) = (norm(a), norm(b));
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let (short, long) = if a.chars().count() <= b.chars().count() {
        (&a, &b)
    } else {
        (&b, &a)
    };
    a == b || (short.chars().count() >= 6 && long.contains(short.as_str()))
}

/// "This goods does not exist / is off the shelf" wordings of error pages.
pub fn says_goods_gone(labels: &[String]) -> bool {
    const GONE: &[&str] = &[
        "商品不存在",
        "已下架",
        "商品已失效",
        "宝贝不存在",
        "页面不存在",
    ];
    labels.iter().any(|l| GONE.iter().any(|g| l.contains(g)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_match_on_letters_and_containment() {
        assert!(titles_match("加厚连帽卫衣 女", "加厚连帽卫衣女秋冬款"));
        assert!(!titles_match(
            "旧链接：加厚连帽卫衣女（已迁移）",
            "加厚连帽卫衣女秋冬款宽松百搭韩版学生上衣外套ins潮"
        ));
        assert!(!titles_match("", "x"));
        assert!(
            !titles_match("卫衣", "加厚连帽卫衣"),
            "too short to prove anything"
        );
    }
}
