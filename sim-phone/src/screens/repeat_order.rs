//! 相同商品订单待支付: the dialog an order button raises while an unpaid order of the same
//! goods waits (`repeat_order_prompt`), shaped like the real retention dialog
//! (`abandon`): nested ViewGroups in a focusable FrameLayout, each button a clickable
//! ViewGroup › FrameLayout › TextView, an unlabeled NAF close icon in the top-right corner.

use crate::ui::Node;
use crate::variants::{
    repeat_order_message, REPEAT_ORDER_CONTINUE, REPEAT_ORDER_PAY, REPEAT_ORDER_TITLE,
    STATUS_UNPAID,
};

use super::nodes::{dialog_button, dialog_line, r, NAV_H, STATUS_H, W};
use super::view::View;

pub(crate) fn repeat_order(v: &View<'_>, goods_id: &str, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let count = v
        .ledger
        .orders()
        .iter()
        .filter(|o| o.goods_id == goods_id && o.status == STATUS_UNPAID)
        .count();
    let g = Node::group;
    vec![Node::frame(r(0, STATUS_H, W, bottom)).focusable().child(
        g(r(0, STATUS_H, W, bottom)).pdd().child(
            g(r(80, 780, 999, 1520))
                .child(
                    g(r(122, 822, 958, 1478))
                        .child(dialog_line(
                            r(157, 880, 923, 960),
                            REPEAT_ORDER_TITLE,
                            52,
                            1,
                        ))
                        .child(dialog_line(
                            r(157, 1000, 923, 1170),
                            &repeat_order_message(count),
                            44,
                            2,
                        ))
                        .child(
                            g(r(122, 1230, 958, 1440))
                                .child(dialog_button(
                                    r(168, 1270, 530, 1400),
                                    REPEAT_ORDER_PAY,
                                    "repeat_pay",
                                ))
                                .child(dialog_button(
                                    r(550, 1270, 911, 1400),
                                    REPEAT_ORDER_CONTINUE,
                                    "repeat_continue",
                                )),
                        ),
                )
                .child(
                    g(r(916, 780, 999, 864))
                        .child(Node::image(r(916, 780, 999, 864)).tap("dialog_close").naf()),
                ),
        ),
    )]
}
