//! The windows around the app's: the MIUI status bar with its clock, the gesture bar,
//! and the app window's decor frames that every page sits in.

use chrono::{DateTime, FixedOffset, Timelike};

use crate::ui::{Node, Rect};

use super::nodes::{r, NAV_H, STATUS_H, W};

/// "下午3:20" as the MIUI status bar shows it.
fn clock_text(now: &DateTime<FixedOffset>) -> String {
    let h = now.hour();
    let half = if h < 12 { "上午" } else { "下午" };
    let h12 = if h.is_multiple_of(12) { 12 } else { h % 12 };
    format!("{half}{h12}:{:02}", now.minute())
}

pub(crate) fn status_bar(now: &DateTime<FixedOffset>) -> Node {
    let sys = "com.android.systemui";
    let rid = |s: &str| format!("com.android.systemui:id/{s}");
    let f = |b: Rect| Node::frame(b).package(sys);
    let mut clock = Node::text(r(50, 28, 211, 92), clock_text(now)).package(sys);
    clock.rid = rid("clock");
    clock.drawing_order = Some(4);
    let mut left = Node::linear(r(50, 28, 504, 92)).package(sys).child(clock);
    left.rid = rid("phone_status_bar_left_container");
    let mut contents = Node::linear(r(47, 0, 1033, 92)).package(sys).child(left);
    contents.rid = rid("status_bar_contents");
    contents.drawing_order = Some(2);
    let mut bar = f(r(0, 0, W, STATUS_H)).child(contents);
    bar.rid = rid("status_bar");
    let mut container = f(r(0, 0, W, STATUS_H)).child(bar);
    container.rid = rid("status_bar_container");
    let mut anim = f(r(0, 0, W, STATUS_H));
    anim.rid = rid("status_bar_launch_animation_container");
    f(r(0, 0, W, STATUS_H)).child(anim).child(container)
}

pub(crate) fn gesture_bar(h: i32) -> Node {
    Node::frame(r(0, h - 72, W, h)).package("com.miui.home")
}

/// The app window: decor frame → content → the page's own frame.
pub(crate) fn app_window(h: i32, content: Vec<Node>) -> Node {
    let bottom = h - NAV_H;
    let page = Node::frame(r(0, STATUS_H, W, bottom))
        .pdd()
        .children(content);
    let mut android_content = Node::frame(r(0, STATUS_H, W, bottom)).child(page);
    android_content.rid = "android:id/content".into();
    Node::frame(r(0, 0, W, h))
        .child(Node::linear(r(0, 0, W, bottom)).child(android_content.order(2)))
}
