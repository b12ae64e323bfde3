//! What a tap inside PDD's own window would really press: a node
//! drawn later than the tap's target (higher in the z-order) can sit over it — a
//! 多多支付 promo bubble over the 提交订单 footer takes a tap at the footer's centre and
//! opens the promo (a payment enrolment) instead. Other packages' windows over the app
//! are [`super::windows`]' business; this module looks inside one window of the dump.
//!
//! # The touch's receiver, as Android finds it
//! [`receiver`] follows `ViewGroup.dispatchTouchEvent`: starting at the window's root,
//! the children of a node are offered the touch from the top of the z-order down —
//! descending `drawing-order`, ties broken by document order (the later sibling first);
//! when a child lacks the attribute (the old one-line dump shape prints none) document
//! order alone decides, a later sibling being drawn over an earlier one. Only children
//! that take part are offered it: bounds present, not `visible-to-user="false"`, and
//! the visible bounds hold the point. A child that passes it on (nothing clickable in
//! its branch) lets the next child below try; when no child takes it the node itself
//! does if it is clickable or long-clickable (a disabled one too: Android's
//! `onTouchEvent` consumes a touch on a disabled clickable view), else it goes back to
//! its parent. So the receiver is the deepest clickable on the first path, from the
//! top, that has one. (Views that consume touches without being marked clickable — a
//! custom touch listener — are not in the dump and cannot be seen.)
//!
//! # Covered
//! [`covering`] takes the node the tap aims at ([`super::aim::aimed_node`], the tap's
//! label deciding) and its control ([`controls::control_of`]: its nearest clickable
//! ancestor-or-self); the tap is **covered** when the touch's receiver in the aimed
//! node's window is neither the control nor inside it (a clickable nested inside the
//! control takes its own taps — an option tile's inner image — and that is fine; see
//! also [`controls::presses`]). A point where nothing takes the touch is not covered
//! (nothing is pressed). Only PDD's windows are judged (the aimed node's top-level root
//! must be PDD's and hold the point).
//!
//! # Another PDD window over the target
//! A PopupWindow of PDD's (a 多多支付 bubble drawn as its own window) is a separate PDD
//! root of the dump. The dump gives no layer between windows, but it lists them bottom
//! to top: the real dumps list PDD's activity window first, then the MIUI gesture bar and
//! the systemui status bar that are drawn over it; the simulated phone lists its popup
//! window after the page it covers. So a PDD root listed **after** the aimed node's root
//! whose visible bounds hold the point covers the tap, whatever takes the touch inside
//! it: the window above receives the touch (a view that does not consume it does not
//! hand it to the window below). Other packages' windows are [`super::windows`]'
//! business (the window stack, read by the guard).

use serde::Serialize;

use super::aim::aimed_node;
use super::arena::PDD_PACKAGE;
use super::target::control_of;
use super::tree::{Bounds, NodeRef, Point, Tree};

/// A node of PDD's own window that would take a tap meant for another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InAppCover {
    /// What takes the tap: its label (text, else content-desc), else the first label in
    /// its subtree; empty when it has none.
    pub label: String,
    /// Its bounds.
    pub bounds: Bounds,
    /// The label of the node the tap aimed at (its control's first label when the node
    /// has none).
    pub target: String,
    /// The bounds of the control the tap was meant for.
    pub target_bounds: Bounds,
    /// `true` when the receiver is drawn over the control (the control could take the
    /// touch at the point, but something above it gets it first); `false` when the
    /// control cannot take it at all there (not clickable, hidden, or the point outside
    /// it) and the receiver is what does.
    pub drawn_over: bool,
}

impl InAppCover {
    /// The operator's reason: what takes the tap and what it was meant for.
    pub fn describe(&self) -> String {
        let what = if self.label.is_empty() {
            format!("an unlabelled clickable at {}", self.bounds)
        } else {
            format!("`{}`", short(&self.label))
        };
        let target = if self.target.is_empty() {
            format!("the control at {}", self.target_bounds)
        } else {
            format!("`{}`", short(&self.target))
        };
        if self.drawn_over {
            format!("{what} is drawn over {target} (a tap there would press it)")
        } else {
            format!("{what} would take a tap meant for {target} (a tap there would press it)")
        }
    }
}

/// At most 24 characters of a label, `…` when cut.
fn short(label: &str) -> String {
    const MAX: usize = 24;
    let mut s: String = label.chars().take(MAX).collect();
    if label.chars().count() > MAX {
        s.push('…');
    }
    s
}

/// Whether `n` is offered a touch at `at`: bounds known, not hidden, and its visible
/// part holds the point.
fn takes_part(n: &NodeRef<'_>, at: Point) -> bool {
    n.has_bounds() && n.visible_to_user() != Some(false) && n.visible_bounds().contains_point(at)
}

fn consumes(n: &NodeRef<'_>) -> bool {
    n.is_clickable() || n.is_long_clickable()
}

/// The children of `n` that are offered a touch at `at`, top of the z-order first
/// (module documentation).
fn offered<'t>(n: NodeRef<'t>, at: Point) -> Vec<NodeRef<'t>> {
    let mut kids: Vec<NodeRef<'t>> = n.children().filter(|c| takes_part(c, at)).collect();
    // Document order reversed: the later sibling is drawn later.
    kids.reverse();
    if kids.iter().all(|k| k.drawing_order().is_some()) {
        // Stable: equal drawing orders keep the later sibling first.
        kids.sort_by_key(|k| std::cmp::Reverse(k.drawing_order()));
    }
    kids
}

/// The node a touch at `at` reaches inside `root`'s subtree, found as
/// `ViewGroup.dispatchTouchEvent` finds it (module documentation); `None` when `root`
/// does not take part at the point or nothing there takes touches.
pub fn receiver<'t>(root: NodeRef<'t>, at: Point) -> Option<NodeRef<'t>> {
    if !takes_part(&root, at) {
        return None;
    }
    // Depth-first without recursion (a dump's depth is the app's, not ours to trust):
    // each frame is a node and the children it has not offered the touch to yet.
    struct Frame<'t> {
        node: NodeRef<'t>,
        kids: std::vec::IntoIter<NodeRef<'t>>,
    }
    let frame = |node: NodeRef<'t>| Frame {
        node,
        kids: offered(node, at).into_iter(),
    };
    let mut stack = vec![frame(root)];
    while let Some(top) = stack.last_mut() {
        if let Some(next) = top.kids.next() {
            stack.push(frame(next));
            continue;
        }
        // No child took it: the node itself, if it takes touches; else back to its parent.
        let done = stack.pop()?;
        if consumes(&done.node) {
            return Some(done.node);
        }
    }
    None
}

/// The top-level root (window) a node belongs to.
fn window_of(n: NodeRef<'_>) -> NodeRef<'_> {
    n.ancestors().last().unwrap_or(n)
}

/// The node of PDD's windows that a touch at `at` reaches: the receiver in the last PDD
/// root (dump order: the top-most window) whose visible bounds hold the point; `None`
/// when nothing in that window takes it.
pub fn receiver_at(tree: &Tree, at: Point) -> Option<NodeRef<'_>> {
    let top = tree
        .roots()
        .filter(|r| r.package() == PDD_PACKAGE && takes_part(r, at))
        .last()?;
    receiver(top, at)
}

/// The node's label, else the first label in its subtree (document order).
fn label_in(n: NodeRef<'_>) -> String {
    n.subtree()
        .map(|d| d.label())
        .find(|l| !l.is_empty())
        .unwrap_or_default()
        .to_string()
}

/// Whether a tap at `at` aimed at `aimed` would be taken by something else in its
/// window (module documentation); what takes it, or `None` when the tap reaches the
/// aimed node's control (or something inside it), nothing takes it, or the node is not
/// in a PDD window holding the point.
pub fn covering_node(aimed: NodeRef<'_>, at: Point) -> Option<InAppCover> {
    let window = window_of(aimed);
    if window.package() != PDD_PACKAGE {
        return None;
    }
    if let Some(c) = window_above(aimed, window, at) {
        return Some(c);
    }
    let got = receiver(window, at)?;
    let control = control_of(aimed);
    if control.contains(&got) {
        return None;
    }
    // The control could have taken it (clickable, offered the touch on its path): what
    // took it was offered the touch before it, i.e. it is drawn above.
    let path_ok = std::iter::once(control)
        .chain(control.ancestors())
        .all(|n| takes_part(&n, at));
    let target = if aimed.label().is_empty() {
        label_in(control)
    } else {
        aimed.label().to_string()
    };
    Some(InAppCover {
        label: label_in(got),
        bounds: got.bounds(),
        target,
        target_bounds: control.bounds(),
        drawn_over: consumes(&control) && path_ok && !got.contains(&control),
    })
}

/// A PDD window listed after `window` (drawn above it: module documentation) whose
/// visible bounds hold `at`: it receives the tap meant for `aimed`. What takes the touch
/// inside it is named when something does, else the window itself.
fn window_above(aimed: NodeRef<'_>, window: NodeRef<'_>, at: Point) -> Option<InAppCover> {
    let tree = window.tree();
    let above = tree
        .roots()
        .skip_while(|r| r.id() != window.id())
        .skip(1)
        .filter(|r| r.package() == PDD_PACKAGE && takes_part(r, at))
        .last()?;
    let got = receiver(above, at).unwrap_or(above);
    let control = control_of(aimed);
    let target = if aimed.label().is_empty() {
        label_in(control)
    } else {
        aimed.label().to_string()
    };
    Some(InAppCover {
        label: label_in(got),
        bounds: got.bounds(),
        target,
        target_bounds: control.bounds(),
        drawn_over: true,
    })
}

/// Whether a tap at `at` labelled `label` is covered inside PDD's window: the node it
/// aims at ([`aimed_node`]) and [`covering_node`]. `None` when no node is aimed at.
pub fn covering(tree: &Tree, at: Point, label: &str) -> Option<InAppCover> {
    covering_node(aimed_node(tree, at, label)?, at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::tree::Query;

    const PDD: &str = "com.xunmeng.pinduoduo";

    /// A pretty-shape dump: one PDD window around `body`.
    fn tree(body: &str) -> Tree {
        Tree::parse(&format!(
            r#"<hierarchy rotation="0"><node index="0" package="{PDD}" class="android.widget.FrameLayout" visible-to-user="true" drawing-order="0" bounds="[0,0][1080,2400]">{body}</node></hierarchy>"#
        ))
        .expect("tree")
    }

    /// The 提交订单 footer (a clickable FrameLayout around its label) and, as a later
    /// sibling, a clickable 多多支付 bubble over its centre with drawing order `bubble`.
    fn footer_with_bubble(footer_order: u32, bubble_order: u32) -> String {
        format!(
            r#"<node index="0" class="android.widget.FrameLayout" clickable="true" visible-to-user="true" drawing-order="{footer_order}" bounds="[334,2213][1080,2354]"><node index="0" text="提交订单 ¥47.2" visible-to-user="true" drawing-order="1" bounds="[548,2251][865,2316]"/></node><node index="1" class="android.widget.LinearLayout" clickable="true" visible-to-user="true" drawing-order="{bubble_order}" bounds="[500,2180][1000,2300]"><node index="0" text="开通多多支付，立减3元" visible-to-user="true" drawing-order="1" bounds="[520,2200][980,2280]"/></node>"#
        )
    }

    const FOOTER: Point = Point { x: 707, y: 2283 };
    const FOOTER_LABEL: &str = "提交订单 ¥47.2";

    #[test]
    fn a_clickable_drawn_over_the_target_covers_it() {
        let t = tree(&footer_with_bubble(1, 2));
        let c = covering(&t, FOOTER, FOOTER_LABEL).expect("covered");
        assert_eq!(c.label, "开通多多支付，立减3元");
        assert_eq!(c.bounds, Bounds::new(500, 2180, 1000, 2300));
        assert_eq!(c.target, FOOTER_LABEL);
        assert_eq!(c.target_bounds, Bounds::new(334, 2213, 1080, 2354));
        assert!(c.drawn_over);
        assert_eq!(
            c.describe(),
            "`开通多多支付，立减3元` is drawn over `提交订单 ¥47.2` (a tap there would press it)"
        );
        // Outside the bubble the footer takes its taps.
        assert_eq!(covering(&t, Point { x: 400, y: 2330 }, FOOTER_LABEL), None);
        let got = receiver_at(&t, FOOTER).unwrap();
        assert_eq!(got.bounds(), Bounds::new(500, 2180, 1000, 2300));
    }

    #[test]
    fn the_same_overlay_drawn_below_covers_nothing() {
        // The bubble is the later sibling but its drawing order puts it under the footer.
        let t = tree(&footer_with_bubble(3, 2));
        assert_eq!(covering(&t, FOOTER, FOOTER_LABEL), None);
        let got = receiver_at(&t, FOOTER).unwrap();
        assert_eq!(got.bounds(), Bounds::new(334, 2213, 1080, 2354));
        // Equal drawing orders: the later sibling (the bubble) is on top.
        let t = tree(&footer_with_bubble(2, 2));
        assert!(covering(&t, FOOTER, FOOTER_LABEL).is_some());
    }

    #[test]
    fn a_decoration_over_the_button_passes_the_touch_through() {
        // A non-clickable badge and a full-size non-clickable scrim drawn over the
        // footer: neither takes touches, the footer below does.
        let t = tree(
            r#"<node index="0" class="android.widget.FrameLayout" clickable="true" drawing-order="1" bounds="[334,2213][1080,2354]"><node index="0" text="提交订单 ¥47.2" drawing-order="1" bounds="[548,2251][865,2316]"/></node><node index="1" class="android.view.View" drawing-order="5" bounds="[0,2100][1080,2400]"><node index="0" text="限时优惠" drawing-order="1" bounds="[600,2200][900,2300]"/></node>"#,
        );
        assert_eq!(covering(&t, FOOTER, FOOTER_LABEL), None);
        // A hidden clickable over it does not take touches either.
        let t = tree(&footer_with_bubble(1, 2).replace(
            r#"clickable="true" visible-to-user="true" drawing-order="2""#,
            r#"clickable="true" visible-to-user="false" drawing-order="2""#,
        ));
        assert_eq!(covering(&t, FOOTER, FOOTER_LABEL), None);
    }

    #[test]
    fn a_clickable_nested_inside_the_control_is_fine() {
        // The real image tile: a clickable tile whose clickable inner image (same desc)
        // and clickable 打开大图 icon take taps inside it, under a non-clickable overlay.
        let t = tree(
            r#"<node index="0" class="android.view.ViewGroup" clickable="true" content-desc="  乌龙奶茶" drawing-order="1" bounds="[35,979][335,1374]"><node index="0" class="android.view.View" drawing-order="4" bounds="[35,979][335,1374]"/><node index="1" class="android.widget.ImageView" clickable="true" content-desc="  乌龙奶茶" drawing-order="1" bounds="[35,979][335,1279]"/><node index="2" class="android.widget.ImageView" clickable="true" content-desc="打开大图" drawing-order="2" bounds="[226,979][335,1088]"/></node>"#,
        );
        let tile = t
            .find(&Query::new().class("android.view.ViewGroup"))
            .unwrap();
        let centre = tile.bounds().center();
        // The inner image takes the tap; it is inside the tile.
        assert_eq!(receiver_at(&t, centre).unwrap().class_name(), "ImageView");
        assert_eq!(covering(&t, centre, "乌龙奶茶"), None);
        assert_eq!(covering_node(tile, centre), None);
        // 打开大图 inside the tile, aimed at by the tile's label: inside the control too.
        assert_eq!(covering_node(tile, Point { x: 300, y: 1000 }), None);
    }

    #[test]
    fn without_drawing_order_the_later_sibling_is_on_top() {
        // The old one-line shape: no drawing-order, no visible-to-user.
        let compact = |swap: bool| {
            let footer = r#"<node index="0" class="android.widget.FrameLayout" clickable="true" bounds="[334,2213][1080,2354]"><node index="0" text="提交订单 ¥47.2" bounds="[548,2251][865,2316]"/></node>"#;
            let bubble = r#"<node index="1" class="android.widget.LinearLayout" clickable="true" bounds="[500,2180][1000,2300]"><node index="0" text="开通多多支付" bounds="[520,2200][980,2280]"/></node>"#;
            let body = if swap {
                format!("{bubble}{footer}")
            } else {
                format!("{footer}{bubble}")
            };
            Tree::parse(&format!(
                r#"<hierarchy rotation="0"><node index="0" package="{PDD}" bounds="[0,0][1080,2400]">{body}</node></hierarchy>"#
            ))
            .unwrap()
        };
        let t = compact(false);
        assert!(t.nodes().all(|n| n.drawing_order().is_none()));
        let c = covering(&t, FOOTER, FOOTER_LABEL).expect("the later bubble is on top");
        assert_eq!(c.label, "开通多多支付");
        assert_eq!(covering(&compact(true), FOOTER, FOOTER_LABEL), None);
    }

    #[test]
    fn a_non_clickable_label_over_a_button_gives_the_touch_to_the_button() {
        // The aimed label has no clickable around it; the button drawn below it takes the
        // tap: it is not drawn over the label, it takes a tap meant for it.
        let t = tree(
            r#"<node index="0" text="去领券" clickable="true" drawing-order="1" bounds="[0,1000][1080,1200]"/><node index="1" text="说明文字" drawing-order="2" bounds="[100,1050][500,1150]"/>"#,
        );
        let c = covering(&t, Point { x: 300, y: 1100 }, "说明文字").expect("covered");
        assert_eq!(c.label, "去领券");
        assert!(!c.drawn_over);
        assert!(c
            .describe()
            .contains("would take a tap meant for `说明文字`"));
        // Where nothing takes touches, nothing is pressed.
        let t = tree(r#"<node index="0" text="说明文字" bounds="[100,1050][500,1150]"/>"#);
        assert_eq!(covering(&t, Point { x: 300, y: 1100 }, "说明文字"), None);
    }

    #[test]
    fn the_first_path_with_a_clickable_wins_and_deeper_beats_shallower() {
        // Top branch: a non-clickable group whose clickable child holds the point; below
        // it, a clickable container. The touch goes to the top branch's child.
        let t = tree(
            r#"<node index="0" clickable="true" drawing-order="1" bounds="[0,0][1080,1000]"><node index="0" text="行" clickable="true" drawing-order="1" bounds="[0,400][1080,600]"/></node><node index="1" drawing-order="2" bounds="[0,0][1080,1000]"><node index="0" drawing-order="1" bounds="[0,0][1080,1000]"><node index="0" text="浮层按钮" clickable="true" drawing-order="1" bounds="[400,450][700,550]"/></node></node>"#,
        );
        let got = receiver_at(&t, Point { x: 500, y: 500 }).unwrap();
        assert_eq!(got.text(), "浮层按钮");
        // Beside the floating button the upper branch passes: the row takes it.
        let got = receiver_at(&t, Point { x: 100, y: 500 }).unwrap();
        assert_eq!(got.text(), "行");
        // Outside the row: its clickable container.
        let got = receiver_at(&t, Point { x: 100, y: 800 }).unwrap();
        assert_eq!(got.bounds(), Bounds::new(0, 0, 1080, 1000));
    }

    #[test]
    fn a_pdd_window_listed_after_the_targets_covers_it() {
        // The sheet's footer in PDD's activity window, then a 多多支付 bubble as its own
        // PDD window (a PopupWindow) over it, then the status bar.
        let sheet = format!(
            r#"<node index="0" package="{PDD}" class="android.widget.FrameLayout" visible-to-user="true" drawing-order="0" bounds="[0,0][1080,2400]"><node index="0" class="android.widget.FrameLayout" clickable="true" visible-to-user="true" drawing-order="1" bounds="[334,2213][1080,2354]"><node index="0" text="提交订单 ¥47.2" visible-to-user="true" drawing-order="1" bounds="[548,2251][865,2316]"/></node></node>"#
        );
        let bubble = format!(
            r#"<node index="0" package="{PDD}" class="android.widget.FrameLayout" visible-to-user="true" drawing-order="0" bounds="[480,2160][1020,2320]"><node index="0" text="用多多支付减7.53元" clickable="true" visible-to-user="true" drawing-order="1" bounds="[500,2180][1000,2300]"/></node>"#
        );
        let bar = r#"<node index="0" package="com.android.systemui" bounds="[0,0][1080,95]"/>"#;
        let parse = |roots: &[&str]| {
            Tree::parse_with(
                &format!(r#"<hierarchy rotation="0">{}</hierarchy>"#, roots.concat()),
                crate::screen::WindowFilter::All,
            )
            .unwrap()
        };
        let t = parse(&[&sheet, &bubble, bar]);
        let c = covering(&t, FOOTER, FOOTER_LABEL).expect("the window above covers it");
        assert_eq!(c.label, "用多多支付减7.53元");
        assert_eq!(c.bounds, Bounds::new(500, 2180, 1000, 2300));
        assert_eq!(c.target, FOOTER_LABEL);
        assert_eq!(c.target_bounds, Bounds::new(334, 2213, 1080, 2354));
        assert!(c.drawn_over);
        assert_eq!(
            receiver_at(&t, FOOTER).unwrap().text(),
            "用多多支付减7.53元"
        );
        // Beside the bubble's window the footer takes its taps.
        assert_eq!(covering(&t, Point { x: 400, y: 2330 }, FOOTER_LABEL), None);
        // The same window listed before the sheet's is beneath it.
        let t = parse(&[&bubble, &sheet, bar]);
        assert_eq!(covering(&t, FOOTER, FOOTER_LABEL), None);
        // A PDD window above with nothing clickable at the point still takes the touch.
        let t = parse(&[&sheet, &bubble.replace(r#" clickable="true""#, ""), bar]);
        let c = covering(&t, FOOTER, FOOTER_LABEL).expect("covered by the window");
        assert_eq!(c.bounds, Bounds::new(480, 2160, 1020, 2320));
    }

    #[test]
    fn other_packages_windows_are_not_judged_here() {
        // A cashier in another app, its tree kept: its own nodes are not PDD's.
        let xml = r#"<hierarchy rotation="0"><node index="0" package="com.tencent.mm" bounds="[0,0][1080,2400]"><node text="确定" clickable="true" bounds="[100,2000][980,2150]"/><node text="广告" clickable="true" bounds="[100,2000][980,2150]"/></node></hierarchy>"#;
        let t = Tree::parse_with(xml, crate::screen::WindowFilter::All).unwrap();
        assert_eq!(covering(&t, Point { x: 500, y: 2050 }, "确定"), None);
        assert_eq!(receiver_at(&t, Point { x: 500, y: 2050 }), None);
    }
}
