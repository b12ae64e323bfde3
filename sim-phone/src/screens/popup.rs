//! The popups laid over home and goods pages (红包, 新版本, 青少年模式): a separate,
//! modal window.

use crate::page::PopupKind;
use crate::ui::Node;

use super::nodes::{label, r, tw, W};

pub(crate) fn popup(kind: PopupKind, h: i32) -> Node {
    let root = Node::frame(r(0, 0, W, h)).tap("noop");
    let dialog = Node::group(r(120, 700, 960, 1700)).pdd();
    let close = Node::image(r(860, 600, 960, 700))
        .pdd()
        .desc("关闭弹窗")
        .tap("popup_close");
    let button = |y: i32, t: &str| {
        Node::group(r(240, y, 840, y + 120))
            .pdd()
            .tap("popup_close")
            .child(label(540 - tw(t, 48) / 2, y + 35, t, 48))
    };
    let dialog = match kind {
        PopupKind::RedPacket => dialog
            .child(label(380, 800, "专属现金红包", 52))
            .child(label(400, 1000, "¥5 无门槛", 60))
            .child(button(1450, "开心收下")),
        PopupKind::Upgrade => dialog
            .child(label(420, 800, "发现新版本", 52))
            .child(button(1300, "立即升级"))
            .child(button(1450, "下次再说")),
        PopupKind::TeenMode => dialog
            .child(label(390, 800, "青少年模式", 52))
            .child(label(
                200,
                950,
                "为呵护未成年人健康成长，拼多多推出青少年模式",
                34,
            ))
            .child(button(1450, "我知道了")),
    };
    root.child(dialog).child(close)
}
