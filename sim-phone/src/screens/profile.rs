//! The profile page (个人中心): the avatar, the account's nickname and masked phone, 我的订单 and the 待付款 badge, or the same drawn on canvas
//! (no accessible node) when the goods asks for `order_list_entry: "canvas"`.

use crate::ui::Node;

use super::nodes::{bottom_nav, label, r, tw, NAV_H, STATUS_H, W};
use super::view::View;

pub(crate) fn profile(v: &View<'_>, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let unpaid = v
        .ledger
        .orders()
        .iter()
        .filter(|o| o.status == "unpaid")
        .count();
    let mut row = Node::linear(r(0, 700, W, 900)).pdd();
    for (i, t) in ["待付款", "待分享", "待发货", "待收货", "评价"]
        .iter()
        .enumerate()
    {
        let x = i as i32 * 216;
        let mut cell = Node::new("android.widget.RelativeLayout", r(x, 700, x + 216, 900))
            .desc(*t)
            .tap(if *t == "待付款" {
                "orders"
            } else {
                "toast:"
            })
            .child(Node::image(r(x + 70, 720, x + 146, 796)).pdd())
            .child(label(x + 108 - tw(t, 38) / 2, 820, t, 38));
        if *t == "待付款" && unpaid > 0 {
            cell = cell.child(label(x + 140, 710, &unpaid.to_string(), 30));
        }
        row = row.child(cell);
    }
    let mut nodes = vec![
        Node::image(r(35, 180, 195, 340)).pdd().desc("头像"),
        label(230, 200, &v.account.nickname, 52),
        label(230, 280, &v.account.masked_phone, 38),
    ];
    if v.profile_canvas {
        // Drawn on canvas: 我的订单, 查看全部 and the 待付款 … cells are pixels in one view
        // with no text, no description and nothing a tap reaches.
        nodes.push(Node::view(r(0, 580, W, 900)).pdd());
    } else {
        nodes.push(
            Node::linear(r(0, 580, W, 690))
                .pdd()
                .child(label(35, 610, "我的订单", 48))
                .child(
                    Node::group(r(800, 590, 1045, 680))
                        .tap("orders:all")
                        .child(label(820, 615, "查看全部", 40)),
                ),
        );
        nodes.push(row);
    }
    nodes.push(bottom_nav(h, "个人中心"));
    vec![Node::frame(r(0, STATUS_H, W, bottom)).pdd().children(nodes)]
}
