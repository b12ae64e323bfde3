//! The parsed dump as an arena: [`Tree`] (nodes, strings, windows), [`NodeRef`] with its
//! accessors and navigation (parent, ancestors, children, descendants, tap points).
//! The scanner that fills it is `scanner.rs`; searches are `query.rs`.
//!
//! # Shape
//! Nodes live in one `Vec<Node>` in document (pre-)order; all their strings live in one
//! `String` buffer and are referred to by spans, so parsing allocates per dump, not per
//! node. Because the order is pre-order, a node's subtree is the contiguous range
//! `id+1 .. end`: descendants, children (`c = id+1; c = end(c)`) and "is inside" checks
//! need no child lists. The fields are visible to the scanner and the queries
//! (`pub(super)`); everything else reads nodes through [`NodeRef`].
//!
//! # Windows
//! A dump lists every window on screen as a top-level `<node>`: the PDD app, the
//! `com.android.systemui` status bar, MIUI's `com.miui.home` gesture bar, … Only the
//! windows the [`WindowFilter`] keeps (by default: package `com.xunmeng.pinduoduo`) are
//! stored; the others are remembered by package and bounds only (for diagnostics and
//! the screen size).

use std::fmt;

use serde::Serialize;

use super::geometry::{Bounds, Point};

/// The PDD app's package name.
pub const PDD_PACKAGE: &str = "com.xunmeng.pinduoduo";

/// Index of a node in its [`Tree`]; only meaningful for the tree it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(pub(super) u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where a string of a node lives in [`Tree::strings`].
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Span {
    pub(super) start: u32,
    pub(super) len: u32,
}

/// Boolean attributes of a node, as bits.
pub(super) mod flag {
    pub const CHECKABLE: u16 = 1 << 0;
    pub const CHECKED: u16 = 1 << 1;
    pub const CLICKABLE: u16 = 1 << 2;
    pub const ENABLED: u16 = 1 << 3;
    pub const FOCUSABLE: u16 = 1 << 4;
    pub const FOCUSED: u16 = 1 << 5;
    pub const SCROLLABLE: u16 = 1 << 6;
    pub const LONG_CLICKABLE: u16 = 1 << 7;
    pub const PASSWORD: u16 = 1 << 8;
    pub const SELECTED: u16 = 1 << 9;
    /// `visible-to-user` was present (pretty dumps only).
    pub const VISIBLE_KNOWN: u16 = 1 << 10;
    /// `visible-to-user="true"`.
    pub const VISIBLE: u16 = 1 << 11;
    /// `NAF="true"`: "not accessibility friendly", an unlabeled clickable.
    pub const NAF: u16 = 1 << 12;
    /// `bounds` was present and well-formed.
    pub const HAS_BOUNDS: u16 = 1 << 13;
    /// `enabled` was absent: treated as enabled.
    pub const ENABLED_DEFAULT: u16 = 1 << 14;
    /// `drawing-order` was present and a number (pretty dumps only).
    pub const HAS_DRAWING_ORDER: u16 = 1 << 15;
}

#[derive(Clone, Debug)]
pub(super) struct Node {
    pub(super) parent: u32,
    /// End (exclusive) of this node's subtree in pre-order.
    pub(super) end: u32,
    pub(super) depth: u16,
    /// The `index` attribute: position among the parent's children as the app saw it.
    pub(super) index: u32,
    /// The `drawing-order` attribute (valid with [`flag::HAS_DRAWING_ORDER`]): the place
    /// in its parent's z-order, higher drawn later (on top).
    pub(super) drawing_order: u32,
    pub(super) flags: u16,
    pub(super) bounds: Bounds,
    pub(super) text: Span,
    pub(super) desc: Span,
    pub(super) resource_id: Span,
    pub(super) class: Span,
    pub(super) package: Span,
}

/// `Node::parent` of a window root.
pub(super) const NONE: u32 = u32::MAX;

/// A top-level window of the dump.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Window {
    pub package: String,
    pub bounds: Bounds,
    /// The window's root node when it was kept.
    #[serde(skip)]
    pub root: Option<NodeId>,
}

/// Which of the two dump shapes was parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum DumpShape {
    /// uiautomator2 / newer `uiautomator dump`: has `visible-to-user` etc.
    Pretty,
    /// The old one-line shell dump without `visible-to-user`.
    Compact,
}

/// Which top-level windows to keep.
#[derive(Clone, Copy, Debug)]
pub enum WindowFilter<'a> {
    /// Keep windows of these packages (and windows without a package attribute).
    Packages(&'a [&'a str]),
    /// Keep every window (for inspecting another app).
    All,
}

impl Default for WindowFilter<'_> {
    fn default() -> Self {
        WindowFilter::Packages(&[PDD_PACKAGE])
    }
}

impl WindowFilter<'_> {
    pub(super) fn keeps(&self, package: &str) -> bool {
        match self {
            WindowFilter::All => true,
            WindowFilter::Packages(p) => package.is_empty() || p.contains(&package),
        }
    }
}

/// A parsed dump: the kept windows' nodes plus what was seen of the others.
#[derive(Clone, Debug)]
pub struct Tree {
    pub(super) nodes: Vec<Node>,
    pub(super) strings: String,
    pub(super) windows: Vec<Window>,
    pub(super) screen: Bounds,
    pub(super) shape: DumpShape,
    pub(super) rotation: u8,
}

impl Tree {
    /// Number of kept nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The screen rectangle: the union of all top-level windows (kept or not).
    pub fn screen(&self) -> Bounds {
        self.screen
    }

    pub fn shape(&self) -> DumpShape {
        self.shape
    }

    /// The `rotation` attribute of `<hierarchy>` (0–3).
    pub fn rotation(&self) -> u8 {
        self.rotation
    }

    /// Every top-level window in dump order, kept or not.
    pub fn windows(&self) -> &[Window] {
        &self.windows
    }

    /// Packages of the windows that were not kept (systemui, launchers, other apps).
    pub fn dropped_packages(&self) -> impl Iterator<Item = &str> {
        self.windows
            .iter()
            .filter(|w| w.root.is_none())
            .map(|w| w.package.as_str())
    }

    pub fn get(&self, id: NodeId) -> NodeRef<'_> {
        NodeRef {
            tree: self,
            id: id.0,
        }
    }

    /// All kept nodes in document order.
    pub fn nodes(&self) -> impl DoubleEndedIterator<Item = NodeRef<'_>> + '_ {
        (0..self.nodes.len() as u32).map(move |id| NodeRef { tree: self, id })
    }

    /// The roots of the kept windows.
    pub fn roots(&self) -> impl Iterator<Item = NodeRef<'_>> + '_ {
        self.windows
            .iter()
            .filter_map(|w| w.root)
            .map(move |id| self.get(id))
    }

    fn str_of(&self, span: Span) -> &str {
        let start = span.start as usize;
        self.strings
            .get(start..start + span.len as usize)
            .unwrap_or_default()
    }
}

/// A node of a [`Tree`], with accessors. Cheap to copy.
#[derive(Clone, Copy)]
pub struct NodeRef<'t> {
    pub(super) tree: &'t Tree,
    pub(super) id: u32,
}

impl fmt::Debug for NodeRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "#{} {} text={:?} desc={:?} {}",
            self.id,
            self.class_name(),
            self.text(),
            self.desc(),
            self.bounds()
        )
    }
}

impl PartialEq for NodeRef<'_> {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self.tree, other.tree) && self.id == other.id
    }
}

impl<'t> NodeRef<'t> {
    fn node(&self) -> &'t Node {
        &self.tree.nodes[self.id as usize]
    }

    fn has(&self, bit: u16) -> bool {
        self.node().flags & bit != 0
    }

    pub fn id(&self) -> NodeId {
        NodeId(self.id)
    }

    pub fn tree(&self) -> &'t Tree {
        self.tree
    }

    /// The `text` attribute, entities decoded, untrimmed.
    pub fn text(&self) -> &'t str {
        self.tree.str_of(self.node().text)
    }

    /// The `content-desc` attribute, entities decoded, untrimmed.
    pub fn desc(&self) -> &'t str {
        self.tree.str_of(self.node().desc)
    }

    /// The text if there is one, else the content-desc (trimmed).
    pub fn label(&self) -> &'t str {
        let t = self.text().trim();
        if t.is_empty() {
            self.desc().trim()
        } else {
            t
        }
    }

    pub fn resource_id(&self) -> &'t str {
        self.tree.str_of(self.node().resource_id)
    }

    /// The part of the resource id after `:id/` ("tv_select_sku").
    pub fn id_name(&self) -> &'t str {
        let rid = self.resource_id();
        rid.rsplit_once(":id/").map_or(rid, |(_, n)| n)
    }

    /// The full class name ("android.widget.TextView").
    pub fn class(&self) -> &'t str {
        self.tree.str_of(self.node().class)
    }

    /// The class name without its package ("TextView").
    pub fn class_name(&self) -> &'t str {
        let c = self.class();
        c.rsplit_once('.').map_or(c, |(_, n)| n)
    }

    pub fn package(&self) -> &'t str {
        self.tree.str_of(self.node().package)
    }

    pub fn bounds(&self) -> Bounds {
        self.node().bounds
    }

    pub fn has_bounds(&self) -> bool {
        self.has(flag::HAS_BOUNDS)
    }

    pub fn depth(&self) -> u16 {
        self.node().depth
    }

    /// The `index` attribute: the node's position among its parent's children (in the
    /// uiautomator2 shape nodes not important for accessibility are left out, so the
    /// numbers can have gaps; they still increase in document order).
    pub fn index(&self) -> u32 {
        self.node().index
    }

    /// The `drawing-order` attribute: the node's place in its parent's z-order, a higher
    /// number drawn later (over its lower siblings) and offered touches first. `None` in
    /// the old one-line dump shape, which does not print it: document order stands in
    /// for it there (a later sibling is drawn over an earlier one).
    pub fn drawing_order(&self) -> Option<u32> {
        self.has(flag::HAS_DRAWING_ORDER)
            .then(|| self.node().drawing_order)
    }

    pub fn is_clickable(&self) -> bool {
        self.has(flag::CLICKABLE)
    }
    pub fn is_long_clickable(&self) -> bool {
        self.has(flag::LONG_CLICKABLE)
    }
    pub fn is_selected(&self) -> bool {
        self.has(flag::SELECTED)
    }
    pub fn is_checked(&self) -> bool {
        self.has(flag::CHECKED)
    }
    pub fn is_checkable(&self) -> bool {
        self.has(flag::CHECKABLE)
    }
    /// Enabled, or no `enabled` attribute at all.
    pub fn is_enabled(&self) -> bool {
        self.has(flag::ENABLED)
    }
    pub fn is_focusable(&self) -> bool {
        self.has(flag::FOCUSABLE)
    }
    pub fn is_focused(&self) -> bool {
        self.has(flag::FOCUSED)
    }
    pub fn is_scrollable(&self) -> bool {
        self.has(flag::SCROLLABLE)
    }
    pub fn is_password(&self) -> bool {
        self.has(flag::PASSWORD)
    }
    /// `NAF="true"`: a clickable the app left unlabeled (often a close icon).
    pub fn is_naf(&self) -> bool {
        self.has(flag::NAF)
    }

    /// `visible-to-user` when the dump has it (pretty shape), `None` otherwise.
    pub fn visible_to_user(&self) -> Option<bool> {
        self.has(flag::VISIBLE_KNOWN)
            .then(|| self.has(flag::VISIBLE))
    }

    /// The part of the node on screen: its bounds clipped to the screen.
    pub fn visible_bounds(&self) -> Bounds {
        self.bounds().intersect(&self.tree.screen)
    }

    /// On screen: bounds overlap the screen and `visible-to-user` is not false.
    pub fn is_visible(&self) -> bool {
        self.visible_to_user() != Some(false) && !self.visible_bounds().is_empty()
    }

    pub fn parent(&self) -> Option<NodeRef<'t>> {
        let p = self.node().parent;
        (p != NONE).then_some(NodeRef {
            tree: self.tree,
            id: p,
        })
    }

    /// Ancestors, nearest first.
    pub fn ancestors(&self) -> impl Iterator<Item = NodeRef<'t>> + 't {
        std::iter::successors(self.parent(), |n| n.parent())
    }

    /// Direct children in document order.
    pub fn children(&self) -> impl Iterator<Item = NodeRef<'t>> + 't {
        let tree = self.tree;
        let end = self.node().end;
        let first = self.id + 1;
        std::iter::successors((first < end).then_some(first), move |&c| {
            let next = tree.nodes[c as usize].end;
            (next < end).then_some(next)
        })
        .map(move |id| NodeRef { tree, id })
    }

    /// All descendants in document order (not the node itself).
    pub fn descendants(&self) -> impl DoubleEndedIterator<Item = NodeRef<'t>> + 't {
        let tree = self.tree;
        (self.id + 1..self.node().end).map(move |id| NodeRef { tree, id })
    }

    /// The node itself, then its descendants.
    pub fn subtree(&self) -> impl DoubleEndedIterator<Item = NodeRef<'t>> + 't {
        let tree = self.tree;
        (self.id..self.node().end).map(move |id| NodeRef { tree, id })
    }

    /// True when `other` is this node or inside its subtree.
    pub fn contains(&self, other: &NodeRef<'_>) -> bool {
        other.id >= self.id && other.id < self.node().end
    }

    /// The node itself if clickable, else its nearest clickable ancestor: labels are
    /// often plain TextViews inside the clickable row that really takes the tap.
    pub fn nearest_clickable(&self) -> Option<NodeRef<'t>> {
        std::iter::once(*self)
            .chain(self.ancestors())
            .find(|n| n.is_clickable())
    }

    /// Where to tap for this node: the centre of the visible part of its nearest
    /// clickable ancestor (or itself). `None` when that is off screen.
    pub fn tap_point(&self) -> Option<Point> {
        let target = self.nearest_clickable().unwrap_or(*self);
        let vis = target.visible_bounds();
        (!vis.is_empty() && target.visible_to_user() != Some(false)).then(|| vis.center())
    }

    /// Non-empty texts of the subtree in document order (trimmed).
    pub fn texts(&self) -> impl Iterator<Item = &'t str> + 't {
        self.subtree()
            .map(|n| n.text().trim())
            .filter(|t| !t.is_empty())
    }
}
