//! The login page some goods demand before buying.

use crate::ui::Node;

use super::nodes::{back_button, label, r};

pub(crate) fn login() -> Vec<Node> {
    vec![
        back_button(),
        label(300, 500, "登录后才能继续购买", 52),
        Node::frame(r(90, 1500, 990, 1640))
            .pdd()
            .tap("toast:")
            .child(label(420, 1540, "微信登录", 52)),
        Node::frame(r(90, 1700, 990, 1840))
            .pdd()
            .tap("toast:")
            .child(label(390, 1740, "手机号登录", 52)),
    ]
}
