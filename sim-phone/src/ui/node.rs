//! The accessibility tree: rectangles, nodes with their attributes and tap actions, whole
//! screens; clipping to a scrolled viewport and hit testing.

/// Package of the simulated app.
pub const PDD: &str = "com.xunmeng.pinduoduo";
/// The app's catch-all resource id (almost every node on the real app carries it).
pub const RID_PDD: &str = "com.xunmeng.pinduoduo:id/pdd";

/// A rectangle `[left,top][right,bottom]` in screen pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rect {
    pub l: i32,
    pub t: i32,
    pub r: i32,
    pub b: i32,
}

impl Rect {
    pub const fn new(l: i32, t: i32, r: i32, b: i32) -> Rect {
        Rect { l, t, r, b }
    }
    pub fn contains(&self, x: i32, y: i32) -> bool {
        x >= self.l && x < self.r && y >= self.t && y < self.b
    }
    pub fn is_empty(&self) -> bool {
        self.r <= self.l || self.b <= self.t
    }
    pub fn intersect(&self, o: &Rect) -> Rect {
        Rect::new(
            self.l.max(o.l),
            self.t.max(o.t),
            self.r.min(o.r),
            self.b.min(o.b),
        )
    }
    pub fn translate(&self, dx: i32, dy: i32) -> Rect {
        Rect::new(self.l + dx, self.t + dy, self.r + dx, self.b + dy)
    }
    pub fn center(&self) -> (i32, i32) {
        ((self.l + self.r) / 2, (self.t + self.b) / 2)
    }
}

/// What tapping a node does; interpreted by the app model. Not part of the dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    None,
    /// A named action of the current screen (e.g. "buy_group", "submit").
    Do(String),
    /// Select option `option` of dimension `dim` on the sheet.
    Option {
        dim: usize,
        option: usize,
    },
}

/// One node of the accessibility tree.
#[derive(Debug, Clone)]
pub struct Node {
    pub class: &'static str,
    pub package: &'static str,
    pub text: String,
    pub rid: String,
    pub desc: String,
    pub clickable: bool,
    pub focusable: bool,
    pub scrollable: bool,
    pub selected: bool,
    pub enabled: bool,
    pub checkable: bool,
    pub checked: bool,
    /// uiautomator marks unlabeled clickable views "NAF" (not accessibility friendly).
    pub naf: bool,
    pub bounds: Rect,
    /// Overrides the drawing order (default: position among siblings + 1).
    pub drawing_order: Option<u32>,
    pub action: Action,
    pub children: Vec<Node>,
}

impl Node {
    pub fn new(class: &'static str, bounds: Rect) -> Node {
        Node {
            class,
            package: PDD,
            text: String::new(),
            rid: String::new(),
            desc: String::new(),
            clickable: false,
            focusable: false,
            scrollable: false,
            selected: false,
            enabled: true,
            checkable: false,
            checked: false,
            naf: false,
            bounds,
            drawing_order: None,
            action: Action::None,
            children: Vec::new(),
        }
    }
    pub fn frame(b: Rect) -> Node {
        Node::new("android.widget.FrameLayout", b)
    }
    pub fn linear(b: Rect) -> Node {
        Node::new("android.widget.LinearLayout", b)
    }
    pub fn group(b: Rect) -> Node {
        Node::new("android.view.ViewGroup", b)
    }
    pub fn view(b: Rect) -> Node {
        Node::new("android.view.View", b)
    }
    pub fn image(b: Rect) -> Node {
        Node::new("android.widget.ImageView", b)
    }
    pub fn text(b: Rect, text: impl Into<String>) -> Node {
        let mut n = Node::new("android.widget.TextView", b);
        n.text = text.into();
        n
    }
    pub fn recycler(b: Rect) -> Node {
        Node::new("android.support.v7.widget.RecyclerView", b)
    }
    pub fn pdd(mut self) -> Node {
        self.rid = RID_PDD.to_string();
        self
    }
    pub fn rid(mut self, rid: &str) -> Node {
        self.rid = rid.to_string();
        self
    }
    pub fn desc(mut self, d: impl Into<String>) -> Node {
        self.desc = d.into();
        self
    }
    pub fn package(mut self, p: &'static str) -> Node {
        self.package = p;
        self
    }
    /// Clickable (and focusable, as clickable views are) with what a tap does.
    pub fn on_tap(mut self, a: Action) -> Node {
        self.clickable = true;
        self.focusable = true;
        self.action = a;
        self
    }
    pub fn tap(self, name: &str) -> Node {
        self.on_tap(Action::Do(name.to_string()))
    }
    pub fn clickable(mut self) -> Node {
        self.clickable = true;
        self.focusable = true;
        self
    }
    pub fn focusable(mut self) -> Node {
        self.focusable = true;
        self
    }
    pub fn scrollable(mut self) -> Node {
        self.scrollable = true;
        self.focusable = true;
        self
    }
    pub fn selected(mut self, s: bool) -> Node {
        self.selected = s;
        self
    }
    pub fn enabled(mut self, e: bool) -> Node {
        self.enabled = e;
        self
    }
    pub fn naf(mut self) -> Node {
        self.naf = true;
        self
    }
    pub fn order(mut self, o: u32) -> Node {
        self.drawing_order = Some(o);
        self
    }
    pub fn child(mut self, c: Node) -> Node {
        self.children.push(c);
        self
    }
    pub fn children(mut self, cs: impl IntoIterator<Item = Node>) -> Node {
        self.children.extend(cs);
        self
    }
    /// Mark this node and every descendant selected (the real app does this for a chosen
    /// image tile).
    pub fn select_deep(mut self) -> Node {
        fn go(n: &mut Node) {
            n.selected = true;
            for c in &mut n.children {
                go(c);
            }
        }
        go(&mut self);
        self
    }

    /// Move the subtree by (dx, dy).
    pub fn translate(mut self, dx: i32, dy: i32) -> Node {
        fn go(n: &mut Node, dx: i32, dy: i32) {
            n.bounds = n.bounds.translate(dx, dy);
            for c in &mut n.children {
                go(c, dx, dy);
            }
        }
        go(&mut self, dx, dy);
        self
    }

    /// Clip the subtree to `viewport`: nodes wholly outside disappear (recycled), the rest
    /// get their bounds intersected. Returns `None` when this node itself is outside.
    pub fn clip(mut self, viewport: &Rect) -> Option<Node> {
        let b = self.bounds.intersect(viewport);
        if b.is_empty() {
            return None;
        }
        self.bounds = b;
        let vp = b;
        self.children = std::mem::take(&mut self.children)
            .into_iter()
            .filter_map(|c| c.clip(&vp))
            .collect();
        Some(self)
    }

    /// Depth-first search for the deepest node containing (x, y) whose tap does something,
    /// walking children last-drawn first (as Android dispatches touches).
    pub fn hit(&self, x: i32, y: i32) -> Option<&Node> {
        if !self.bounds.contains(x, y) {
            return None;
        }
        for c in self.children.iter().rev() {
            if let Some(h) = c.hit(x, y) {
                return Some(h);
            }
        }
        if self.clickable && self.enabled && self.action != Action::None {
            Some(self)
        } else {
            None
        }
    }

    /// Every node, pre-order.
    pub fn walk<'a>(&'a self, out: &mut Vec<&'a Node>) {
        out.push(self);
        for c in &self.children {
            c.walk(out);
        }
    }
}

/// A whole screen: top-level windows in dump order (the app first, then the gesture bar,
/// then the status bar, as the real dumps list them).
#[derive(Debug, Clone)]
pub struct Screen {
    pub windows: Vec<Node>,
}

impl Screen {
    /// The node a tap at (x, y) lands on. Windows listed later are drawn on top.
    pub fn hit(&self, x: i32, y: i32) -> Option<&Node> {
        self.windows.iter().rev().find_map(|w| w.hit(x, y))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_drops_hidden_and_clips_partial() {
        let vp = Rect::new(0, 0, 1080, 2400);
        let n = Node::group(Rect::new(0, 0, 2000, 100))
            .child(Node::view(Rect::new(1004, 0, 1304, 100)))
            .child(Node::view(Rect::new(1400, 0, 1700, 100)));
        let c = n.clip(&vp).expect("visible");
        assert_eq!(c.children.len(), 1);
        assert_eq!(c.children[0].bounds, Rect::new(1004, 0, 1080, 100));
    }
}
