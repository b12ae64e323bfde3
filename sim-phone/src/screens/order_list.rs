//! The order list (我的订单): the 待付款 tab, one clickable card per unpaid order, or the
//! 全部 tab, every order newest first with its status (the goods' unpaid wording, 待发货
//! with a 先用后付 label for orders placed under 先用后付, 已取消).

use crate::catalog::format_yuan;
use crate::ledger::Order;
use crate::page::OrderTab;
use crate::ui::Node;
use crate::variants::{PAY_LATER_LABEL, STATUS_CANCELLED, STATUS_COMMITTED_UNPAID, STATUS_UNPAID};

use super::nodes::{back_button, label, r, tw, NAV_H, STATUS_H, W};
use super::view::View;

pub(crate) fn order_list(v: &View<'_>, scroll: i32, tab: OrderTab, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let vp = r(0, 330, W, bottom);
    let mut tabs = Node::linear(r(0, 225, W, 330)).pdd();
    for (i, t) in [
        "全部",
        "待付款",
        "待分享",
        "待发货",
        "待收货",
        "评价",
        "退款/售后",
    ]
    .iter()
    .enumerate()
    {
        let x = i as i32 * 154;
        let (act, on) = match *t {
            "全部" => ("orders_tab:all", tab == OrderTab::All),
            "待付款" => ("orders_tab:unpaid", tab == OrderTab::Unpaid),
            _ => ("toast:", false),
        };
        tabs = tabs.child(
            Node::frame(r(x, 225, x + 154, 330))
                .pdd()
                .tap(act)
                .selected(on)
                .child(
                    Node::text(r(x + 20, 250, x + 20 + tw(t, 38).min(114), 305), *t)
                        .pdd()
                        .selected(on),
                ),
        );
    }
    let mut list = Node::recycler(vp).pdd().scrollable();
    let shown: Vec<&Order> = v
        .ledger
        .orders()
        .iter()
        .rev()
        .filter(|o| tab == OrderTab::All || o.status == STATUS_UNPAID)
        .collect();
    if shown.is_empty() {
        list = list.child(label(400, 800, "暂无相关订单", 46));
    }
    for (i, o) in shown.iter().enumerate() {
        let y = 360 + i as i32 * 640 - scroll;
        let shop = v
            .goods(&o.goods_id)
            .map(|g| g.shop.clone())
            .unwrap_or_default();
        let short: String = o.title.chars().take(18).collect();
        let sn = &o.order_sn;
        let unit = format!("¥{}", format_yuan(o.unit_price_cent));
        let total = format!("¥{}", format_yuan(o.shown_paid_cent()));
        let status = v.status_text(o);
        let mut head = Node::new("android.widget.RelativeLayout", r(24, y, 1056, y + 100))
            .pdd()
            .child(
                Node::text(r(60, y + 25, 700, y + 80), shop)
                    .rid("com.xunmeng.pinduoduo:id/tv_mall_name"),
            );
        if o.status == STATUS_COMMITTED_UNPAID {
            let lw = tw(PAY_LATER_LABEL, 34);
            head = head.child(Node::text(r(850 - lw, y + 30, 850, y + 75), PAY_LATER_LABEL).pdd());
        }
        let head = head.child(
            Node::text(
                r((1020 - tw(status, 40)).min(880), y + 25, 1020, y + 80),
                status,
            )
            .pdd(),
        );
        let price_row = Node::linear(r(330, y + 280, 1020, y + 340))
            .child(Node::text(r(330, y + 280, 500, y + 340), unit).pdd())
            .child(Node::text(r(900, y + 280, 1020, y + 340), format!("x{}", o.quantity)).pdd());
        let body = Node::linear(r(24, y + 100, 1056, y + 360))
            .pdd()
            .child(Node::image(r(60, y + 110, 300, y + 350)).pdd())
            .child(
                Node::linear(r(330, y + 110, 1020, y + 350))
                    .child(
                        Node::text(r(330, y + 110, 1020, y + 200), short)
                            .pdd()
                            .desc(o.title.clone()),
                    )
                    .child(Node::text(r(330, y + 210, 1000, y + 260), v.options_text(o)).pdd())
                    .child(price_row),
            );
        let paid = Node::linear(r(24, y + 370, 1056, y + 440))
            .pdd()
            .child(Node::text(r(560, y + 375, 760, y + 435), "实付：").pdd())
            .child(Node::text(r(770, y + 375, 1020, y + 435), total).pdd());
        let mut buttons = Node::linear(r(24, y + 460, 1056, y + 580)).pdd();
        if o.status == STATUS_UNPAID {
            buttons = buttons
                .child(
                    Node::frame(r(540, y + 470, 770, y + 570))
                        .pdd()
                        .tap(&format!("order_cancel:{sn}"))
                        .child(Node::text(r(560, y + 490, 750, y + 550), "取消订单").pdd()),
                )
                .child(
                    Node::frame(r(790, y + 470, 1020, y + 570))
                        .pdd()
                        .tap(&format!("order_pay:{sn}"))
                        .child(Node::text(r(810, y + 490, 1000, y + 550), "去支付").pdd()),
                );
        } else if o.status != STATUS_CANCELLED {
            // 待发货: only a reminder to the shop (a toast).
            buttons = buttons.child(
                Node::frame(r(790, y + 470, 1020, y + 570))
                    .pdd()
                    .tap("toast:已提醒商家发货")
                    .child(Node::text(r(810, y + 490, 1000, y + 550), "提醒发货").pdd()),
            );
        }
        let mut card = Node::linear(r(24, y, 1056, y + 620))
            .tap(&format!("order:{sn}"))
            .child(head)
            .child(body)
            .child(paid);
        if !buttons.children.is_empty() {
            card = card.child(buttons);
        }
        if let Some(c) = card.clip(&vp) {
            list = list.child(c);
        }
    }
    vec![Node::frame(r(0, STATUS_H, W, bottom)).pdd().children([
        Node::group(r(0, STATUS_H, W, 225))
            .child(back_button())
            .child(label(440, 130, "我的订单", 52)),
        tabs,
        list,
    ])]
}
