//! Goods-page facts the flows need beyond [`GoodsDetail`]: the shop name, the crossed-out
//! list price, whether the page is the task's goods, and "this goods does not exist"
//! pages. Pure functions over a parsed tree.

use crate::money::{parse_price, Fen};
use crate::screen::page::trim_name;
use crate::screen::{GoodsDetail, NodeRef, Tree};

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
pub fn buy_button(g: &GoodsDetail) -> Option<&crate::screen::BuyButton> {
    PREFERRED_BUY_BUTTONS
        .iter()
        .find_map(|w| g.buy_buttons.iter().find(|b| b.label == *w))
        .or_else(|| g.buy_buttons.first())
}

/// The shop name: the label next to the "进店" button (stable id `tv_enter_mall`),
/// else a short label ending like a shop (旗舰店, 专营店, …).
pub fn shop_name(tree: &Tree) -> Option<String> {
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
pub fn list_price(tree: &Tree) -> Option<Fen> {
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
pub fn title(tree: &Tree, page: &GoodsDetail) -> Option<String> {
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
