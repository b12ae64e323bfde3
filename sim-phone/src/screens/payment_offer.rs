//! The offer laid over the cashier after an order placed with 微信支付 (`payment_offer`):
//! 开通免密支付 or 开通先用后付, 立即开通 / 暂不开通, in the retention dialog's shape.

use crate::ui::Node;
use crate::variants::{PaymentOffer, ACTIVATE, DECLINE};

use super::nodes::{dialog_button, dialog_line, r, NAV_H, STATUS_H, W};

pub(crate) fn payment_offer(offer: PaymentOffer, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let g = Node::group;
    vec![Node::frame(r(0, STATUS_H, W, bottom)).focusable().child(
        g(r(0, STATUS_H, W, bottom)).pdd().child(
            g(r(80, 760, 999, 1560)).child(
                g(r(122, 802, 958, 1518))
                    .child(g(r(122, 802, 958, 1000)).child(Node::image(r(380, 812, 700, 990))))
                    .child(dialog_line(r(157, 1020, 923, 1100), offer.title(), 52, 1))
                    .child(dialog_line(r(157, 1120, 923, 1260), offer.text(), 44, 2))
                    .child(
                        g(r(122, 1280, 958, 1500))
                            .child(dialog_button(
                                r(168, 1300, 911, 1410),
                                ACTIVATE,
                                "offer_accept",
                            ))
                            .child(dialog_button(
                                r(300, 1420, 780, 1490),
                                DECLINE,
                                "dialog_close",
                            )),
                    ),
            ),
        ),
    )]
}
