//! The home page: search box, a two-column list of goods cards (title truncated in
//! `tv_title`, price split into siblings), the bottom tabs.

use crate::catalog::{format_yuan, Goods};
use crate::ui::{Node, PDD};

use super::nodes::{bottom_nav, label, r, tw, NAV_H, STATUS_H, W};
use super::view::View;

/// Card price row: wording, "¥", amount and sales as separate siblings (as on real cards).
fn price_row(x: i32, y: i32, g: &Goods) -> Node {
    let mut row = Node::linear(r(x, y, x + 478, y + 75)).pdd();
    let mut cx = x;
    if let Some(wd) = &g.price_wording {
        row = row.child(label(cx, y + 19, wd, 37));
        cx += tw(wd, 37) + 3;
    }
    row = row.child(label(cx, y + 24, "¥", 37));
    cx += 23;
    let amount = format_yuan(g.min_price_cent());
    row = row.child(Node::text(r(cx, y, cx + tw(&amount, 60), y + 66), amount.clone()).pdd());
    cx += tw(&amount, 60) + 9;
    if let Some(s) = &g.sales_text {
        row = row.child(label(cx, y + 12, s, 37));
    }
    row
}

pub(crate) fn home(v: &View<'_>, scroll: i32, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let list_vp = r(0, 330, W, bottom - 187);
    let search = Node::group(r(35, 120, 1045, 210))
        .desc("搜索")
        .tap("toast:搜索")
        .child(label(120, 140, "搜索商品", 43));
    let mut list = Node::recycler(list_vp).pdd().scrollable();
    for (i, g) in v.catalog.goods.iter().enumerate() {
        let col = (i % 2) as i32;
        let row = (i / 2) as i32;
        let x = 2 + col * 538;
        let y = 340 + row * 790 - scroll;
        let short: String = g.title.chars().take(8).collect();
        let mut title = Node::text(r(x + 23, y + 537, x + 513, y + 590), short)
            .rid("com.xunmeng.pinduoduo:id/tv_title")
            .desc(format!("{}\n", g.title));
        title.package = PDD;
        let card = Node::group(r(x, y, x + 538, y + 777))
            .tap(&format!("open:{}", g.goods_id))
            .child(
                Node::linear(r(x + 7, y + 7, x + 531, y + 770))
                    .child(
                        Node::frame(r(x + 7, y + 7, x + 531, y + 524))
                            .pdd()
                            .child(Node::image(r(x + 7, y + 7, x + 531, y + 524)).pdd()),
                    )
                    .child(
                        Node::linear(r(x + 7, y + 524, x + 531, y + 770))
                            .pdd()
                            .child(
                                Node::frame(r(x + 7, y + 524, x + 531, y + 590))
                                    .pdd()
                                    .child(title),
                            )
                            .child(price_row(x + 30, y + 680, g)),
                    ),
            );
        if let Some(c) = card.clip(&list_vp) {
            list = list.child(c);
        }
    }
    vec![Node::frame(r(0, STATUS_H, W, bottom))
        .pdd()
        .child(search)
        .child(list)
        .child(bottom_nav(h, "首页"))]
}
