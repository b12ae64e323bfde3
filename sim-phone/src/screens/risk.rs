//! The risk-verification page (安全验证, 拖动滑块).

use crate::ui::Node;

use super::nodes::{back_button, label, r};

pub(crate) fn risk() -> Vec<Node> {
    vec![
        back_button(),
        label(430, 400, "安全验证", 56),
        label(230, 520, "账号存在风险，请完成验证", 44),
        Node::image(r(140, 700, 940, 1200)).pdd(),
        label(300, 1260, "请拖动滑块完成拼图", 44),
        Node::image(r(140, 1350, 290, 1470))
            .pdd()
            .desc("拖动滑块")
            .tap("toast:"),
    ]
}
