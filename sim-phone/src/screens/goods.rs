//! A goods page: price row, title, delivery and service rows, the shop with 进店, and
//! the buy bar (单独购买 / 发起拼单, or 商品已下架).

use crate::catalog::{format_yuan, Goods};
use crate::ui::Node;

use super::nodes::{back_button, label, r, tw, NAV_H, STATUS_H, W};

pub(crate) fn goods_page(g: &Goods, h: i32, show_id: bool) -> Vec<Node> {
    let bottom = h - NAV_H;
    let mut nodes = vec![
        back_button(),
        Node::image(r(950, STATUS_H + 20, 1045, STATUS_H + 110))
            .pdd()
            .desc("分享")
            .tap("toast:分享"),
        Node::image(r(0, 225, W, 1175)).pdd().desc("商品图片"),
    ];
    // Price: wording, "¥", amount, list price, sales — separate siblings.
    let mut price = Node::linear(r(35, 1185, 1045, 1290)).pdd();
    let mut x = 35;
    if let Some(wd) = &g.price_wording {
        price = price.child(label(x, 1225, wd, 40));
        x += tw(wd, 40) + 6;
    }
    price = price.child(label(x, 1228, "¥", 40));
    x += 26;
    let amount = format_yuan(g.min_price_cent());
    price = price.child(Node::text(r(x, 1190, x + tw(&amount, 80), 1285), amount.clone()).pdd());
    x += tw(&amount, 80) + 16;
    if let Some(lp) = g.list_price_cent {
        let t = format!("¥{}", format_yuan(lp));
        price = price.child(label(x, 1232, &t, 36));
        x += tw(&t, 36) + 16;
    }
    if let Some(s) = &g.sales_text {
        price = price.child(label(x.min(700), 1232, s, 36));
    }
    nodes.push(price);
    nodes.push(
        Node::text(r(35, 1300, 1045, 1420), g.title.clone())
            .pdd()
            .desc(g.title.clone()),
    );
    nodes.push(
        Node::linear(r(0, 1440, W, 1530))
            .pdd()
            .child(label(35, 1460, "发货", 40))
            .child(label(160, 1460, "48小时内发货 · 包邮", 40)),
    );
    nodes.push(
        Node::linear(r(0, 1540, W, 1630))
            .pdd()
            .child(label(35, 1560, "服务", 40))
            .child(label(
                160,
                1560,
                "退货包运费 · 极速退款 · 7天无理由退货",
                40,
            )),
    );
    nodes.push(
        Node::group(r(0, 1660, W, 1860))
            .pdd()
            .child(Node::image(r(35, 1680, 195, 1840)).pdd())
            .child(label(220, 1700, &g.shop, 44))
            .child(
                Node::text(r(880, 1730, 1045, 1790), "进店")
                    .rid("com.xunmeng.pinduoduo:id/tv_enter_mall")
                    .tap("toast:进店"),
            ),
    );
    if show_id {
        nodes.push(label(35, 1880, &format!("商品编号：{}", g.goods_id), 36));
    }
    let bar_top = bottom - 152;
    let mut bar = Node::linear(r(0, bar_top, W, bottom)).pdd();
    for (i, t) in ["店铺", "收藏", "客服"].iter().enumerate() {
        let x = i as i32 * 150;
        bar = bar.child(
            Node::group(r(x, bar_top, x + 150, bottom))
                .desc(*t)
                .tap("toast:")
                .child(label(x + 45, bar_top + 90, t, 34)),
        );
    }
    if g.delisted {
        bar = bar.child(Node::group(r(450, bar_top, W, bottom)).pdd().child(label(
            640,
            bar_top + 45,
            "商品已下架",
            48,
        )));
    } else {
        let p = format!("¥{}", format_yuan(g.min_price_cent()));
        let single = Node::linear(r(450, bar_top, 765, bottom))
            .pdd()
            .tap("buy")
            .child(label(560, bar_top + 18, &p, 44))
            .child(label(535, bar_top + 80, "单独购买", 40));
        let group = Node::linear(r(765, bar_top, W, bottom))
            .pdd()
            .tap("buy_group")
            .child(label(870, bar_top + 18, &p, 44))
            .child(label(840, bar_top + 80, "发起拼单", 40));
        bar = bar.child(single).child(group);
    }
    nodes.push(bar);
    nodes
}
