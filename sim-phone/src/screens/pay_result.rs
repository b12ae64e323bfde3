//! After a payment attempt (which never completes): 支付未完成 and 查看订单.

use crate::ui::Node;

use super::nodes::{back_button, label, r};

pub(crate) fn pay_result(sn: &str) -> Vec<Node> {
    vec![
        back_button(),
        label(380, 600, "支付未完成", 60),
        label(250, 720, "订单将在15分钟后自动关闭", 44),
        Node::frame(r(290, 900, 790, 1030))
            .pdd()
            .tap(&format!("view_order:{sn}"))
            .child(label(430, 940, "查看订单", 48)),
    ]
}
