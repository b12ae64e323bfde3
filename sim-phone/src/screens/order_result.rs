//! After an order that needed no cashier: 支付成功 (免密支付, 立即支付) or 下单成功 (先用后付),
//! the amount, and 查看订单.

use crate::catalog::format_yuan;
use crate::ui::Node;
use crate::variants::{placed_headline, placed_note};

use super::nodes::{back_button, label, r};
use super::view::View;

pub(crate) fn order_result(v: &View<'_>, sn: &str) -> Vec<Node> {
    let order = v.order_by_sn(sn);
    // An account that pays by itself shows what a 立即支付 order shows: 支付成功, 实付¥T.
    let (method, button) = order
        .and_then(|o| v.goods(&o.goods_id))
        .map(|g| {
            let b = if g.pays_silently {
                crate::variants::CheckoutButton::PayNow
            } else {
                g.checkout_button
            };
            (g.payment_method, b)
        })
        .unwrap_or_default();
    let total = format_yuan(order.map(|o| o.shown_paid_cent()).unwrap_or(0));
    vec![
        back_button(),
        label(400, 600, placed_headline(method, button), 60),
        label(200, 720, &placed_note(method, button, &total), 44),
        Node::frame(r(290, 900, 790, 1030))
            .pdd()
            .tap(&format!("view_order:{sn}"))
            .child(label(430, 940, "查看订单", 48)),
    ]
}
