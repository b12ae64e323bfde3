//! Shared node-building helpers of every screen: the screen's fixed geometry, label
//! sizing, the back button and the bottom tab bar.

use crate::catalog::PaymentMethod;
use crate::ui::{Node, Rect};

pub(crate) const W: i32 = 1080;
pub(crate) const STATUS_H: i32 = 95;
pub(crate) const NAV_H: i32 = 46;

/// Rough rendered width of a label: CJK glyphs are square, Latin about half as wide.
pub(crate) fn tw(s: &str, px: i32) -> i32 {
    s.chars()
        .map(|c| if c.is_ascii() { px * 11 / 20 } else { px })
        .sum()
}

pub(crate) fn label(x: i32, y: i32, s: &str, px: i32) -> Node {
    Node::text(Rect::new(x, y, (x + tw(s, px)).min(W), y + px + px / 4), s).pdd()
}

pub(crate) fn r(l: i32, t: i32, rr: i32, b: i32) -> Rect {
    Rect::new(l, t, rr, b)
}

/// The payment row (real sheet: a clickable ViewGroup, a divider, the label
/// "使用#微信支付，更换支付方式" in a LinearLayout, an arrow), 95 px tall from `top`.
pub(crate) fn payment_row(m: PaymentMethod, top: i32) -> Node {
    let text = m.row_text();
    // The real row: label from x=223, 46 px a glyph ('#' an icon as wide), arrow after it.
    let l = 223;
    let rr = (l + 46 * text.chars().count() as i32 - 2).min(W - 80);
    Node::group(r(0, top, W, top + 95))
        .pdd()
        .tap("toast:支付方式")
        .order(7)
        .child(Node::view(r(0, top, W, top + 1)).pdd())
        .child(
            Node::linear(r(l - 17, top + 20, rr, top + 74))
                .pdd()
                .order(2)
                .child(Node::text(r(l, top + 20, rr, top + 74), text).pdd()),
        )
        .child(
            Node::image(r(rr + 9, top + 33, rr + 38, top + 62))
                .pdd()
                .order(3),
        )
}

/// The quantity stepper of the real sheet (desc 减少数量 / EditText with the number / desc
/// 增加数量, the + disabled at the limit) in a focusable LinearLayout, 240 × 72 px from
/// (`l`, `t`).
pub(crate) fn quantity_stepper(l: i32, t: i32, qty: u32, plus_enabled: bool) -> Node {
    let mut field = Node::new("android.widget.EditText", r(l + 81, t, l + 159, t + 72))
        .pdd()
        .tap("qty_edit")
        .order(4);
    field.text = qty.to_string();
    Node::linear(r(l, t, l + 240, t + 72))
        .rid("com.xunmeng.pinduoduo:id/gnl")
        .focusable()
        .child(
            Node::linear(r(l, t, l + 240, t + 72))
                .child(
                    Node::image(r(l, t, l + 75, t + 72))
                        .pdd()
                        .desc("减少数量")
                        .tap("qty_minus"),
                )
                .child(field)
                .child(
                    Node::image(r(l + 165, t, l + 240, t + 72))
                        .pdd()
                        .desc("增加数量")
                        .tap("qty_plus")
                        .enabled(plus_enabled)
                        .order(6),
                ),
        )
}

pub(crate) fn back_button() -> Node {
    Node::image(r(0, STATUS_H, 130, 225))
        .pdd()
        .desc("返回")
        .tap("back")
}

pub(crate) fn bottom_nav(h: i32, selected: &str) -> Node {
    let bottom = h - NAV_H;
    let tabs = ["首页", "多多视频", "大促狂降价", "聊天", "个人中心"];
    let mut bar = Node::linear(r(0, bottom - 187, W, bottom))
        .pdd()
        .clickable();
    for (i, t) in tabs.iter().enumerate() {
        let x = i as i32 * 216;
        let act = match *t {
            "首页" => "nav_home",
            "个人中心" => "nav_profile",
            _ => "toast:敬请期待",
        };
        let tab = Node::new(
            "android.widget.RelativeLayout",
            r(x, bottom - 141, x + 216, bottom),
        )
        .desc(*t)
        .tap(act)
        .child(Node::image(r(x + 75, bottom - 128, x + 141, bottom - 62)).pdd())
        .child(label(x + 108 - tw(t, 38) / 2, bottom - 50, t, 38).selected(*t == selected));
        bar = bar.child(tab);
    }
    bar
}

/// A dialog button as the real retention dialog draws one: a clickable ViewGroup holding a
/// FrameLayout holding the label's TextView (centred).
pub(crate) fn dialog_button(b: Rect, text: &str, action: &str) -> Node {
    let w = tw(text, 48);
    let (cx, cy) = b.center();
    let lb = r(cx - w / 2, cy - 32, cx + w / 2, cy + 33);
    Node::group(b)
        .tap(action)
        .child(Node::frame(lb).child(Node::text(lb, text)))
}

/// A line of a dialog in its own ViewGroup › FrameLayout › TextView (the real dialog's
/// nesting), centred in `row`; `px` the glyph size; `lines` how many lines it wraps to.
pub(crate) fn dialog_line(row: Rect, text: &str, px: i32, lines: i32) -> Node {
    let w = (tw(text, px) / lines.max(1)).min(row.r - row.l - 20);
    let (cx, cy) = row.center();
    let h = px * 13 / 10 * lines.max(1);
    let lb = r(cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2);
    Node::group(row).child(Node::frame(lb).child(Node::text(lb, text)))
}
