//! 开通多多支付: the page a tap on the promo bubble over the sheet's footer opens
//! (`footer_promo`). Its 立即开通 only raises a toast; the client must never get here.

use crate::ui::Node;
use crate::variants::{ACTIVATE, PAY_PROMO_TITLE};

use super::nodes::{back_button, label, r, tw, W};

pub(crate) fn pay_promo() -> Vec<Node> {
    vec![
        back_button(),
        label(540 - tw(PAY_PROMO_TITLE, 52) / 2, 130, PAY_PROMO_TITLE, 52),
        Node::image(r(0, 260, W, 900)).pdd(),
        label(180, 960, "开通后本单立减5元，支付更便捷", 44),
        label(180, 1040, "多多支付由拼多多提供", 38),
        Node::frame(r(90, 2060, 990, 2200))
            .pdd()
            .tap("toast:已提交开通申请")
            .child(label(540 - tw(ACTIVATE, 52) / 2, 2098, ACTIVATE, 52)),
    ]
}
