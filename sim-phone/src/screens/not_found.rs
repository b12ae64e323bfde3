//! The error page of unknown goods, orders and links, with 返回首页.

use crate::ui::Node;

use super::nodes::{back_button, label, r, tw};

pub(crate) fn not_found(message: &str) -> Vec<Node> {
    vec![
        back_button(),
        label(540 - tw(message, 48) / 2, 900, message, 48),
        Node::frame(r(340, 1050, 740, 1170))
            .pdd()
            .tap("home_from_error")
            .child(label(440, 1085, "返回首页", 44)),
    ]
}
