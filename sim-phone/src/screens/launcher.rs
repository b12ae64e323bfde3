//! The MIUI launcher (the app is not in front): a few icons, 拼多多 among them.

use crate::ui::Node;

use super::nodes::{r, STATUS_H, W};

pub(crate) fn launcher(h: i32) -> Node {
    let home = "com.miui.home";
    let icon = |x: i32, y: i32, name: &str, act: Option<&str>| {
        let mut n = Node::text(r(x, y, x + 216, y + 260), name)
            .package(home)
            .desc(name);
        n.class = "android.widget.TextView";
        if let Some(a) = act {
            n = n.tap(a);
        } else {
            n = n.clickable();
        }
        n
    };
    Node::frame(r(0, 0, W, h)).package(home).child(
        Node::group(r(0, STATUS_H, W, h - 72))
            .package(home)
            .child(icon(40, 300, "相机", None))
            .child(icon(300, 300, "设置", None))
            .child(icon(560, 300, "拼多多", Some("launch")))
            .child(icon(820, 300, "微信", None)),
    )
}
