//! The accessibility tree: parsing a `uiautomator dump` into a compact arena, and the
//! query API the recognizers use.
//!
//! # Shape
//! Nodes live in one `Vec<Node>` in document (pre-)order; all their strings live in one
//! `String` buffer and are referred to by spans, so parsing allocates per dump, not per
//! node. Because the order is pre-order, a node's subtree is the contiguous range
//! `id+1 .. end`: descendants, children (`c = id+1; c = end(c)`) and "is inside" checks
//! need no child lists.
//!
//! # Windows
//! A dump lists every window on screen as a top-level `<node>`: the PDD app, the
//! `com.android.systemui` status bar, MIUI's `com.miui.home` gesture bar, … Only the
//! windows the [`WindowFilter`] keeps (by default: package `com.xunmeng.pinduoduo`) are
//! stored; the others are remembered by package and bounds only (for diagnostics and
//! the screen size).
//!
//! # Both dump shapes
//! The pretty uiautomator2 shape (indented, `visible-to-user`, `drawing-order`, `hint`,
//! `display-id`, `NAF`) and the old one-line shell shape, which has no
//! `visible-to-user` and is followed by the line "UI hierchary dumped to: /dev/tty"
//! (sic). Anything outside `<hierarchy>…</hierarchy>` is inspected only for the known
//! uiautomator error messages, which win over any XML (a dump printed after "null root
//! node" may be a stale file).

use std::fmt;

use regex::Regex;
use serde::Serialize;

use super::error::DumpError;

/// The PDD app's package name.
pub const PDD_PACKAGE: &str = "com.xunmeng.pinduoduo";

/// A rectangle in screen pixels, `[left,top][right,bottom]` as uiautomator prints it
/// (right/bottom exclusive).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Bounds {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

impl Bounds {
    pub const fn new(left: i32, top: i32, right: i32, bottom: i32) -> Self {
        Bounds {
            left,
            top,
            right,
            bottom,
        }
    }

    pub fn width(&self) -> i32 {
        self.right.saturating_sub(self.left).max(0)
    }

    pub fn height(&self) -> i32 {
        self.bottom.saturating_sub(self.top).max(0)
    }

    pub fn is_empty(&self) -> bool {
        self.width() == 0 || self.height() == 0
    }

    pub fn area(&self) -> i64 {
        i64::from(self.width()) * i64::from(self.height())
    }

    pub fn center(&self) -> Point {
        Point {
            x: self.left + self.width() / 2,
            y: self.top + self.height() / 2,
        }
    }

    /// The overlap of two rectangles; empty (all zero) when they do not overlap.
    pub fn intersect(&self, other: &Bounds) -> Bounds {
        let b = Bounds {
            left: self.left.max(other.left),
            top: self.top.max(other.top),
            right: self.right.min(other.right),
            bottom: self.bottom.min(other.bottom),
        };
        if b.is_empty() {
            Bounds::default()
        } else {
            b
        }
    }

    pub fn union(&self, other: &Bounds) -> Bounds {
        if self.is_empty() {
            return *other;
        }
        if other.is_empty() {
            return *self;
        }
        Bounds {
            left: self.left.min(other.left),
            top: self.top.min(other.top),
            right: self.right.max(other.right),
            bottom: self.bottom.max(other.bottom),
        }
    }

    /// True when `other` lies entirely inside `self`.
    pub fn contains(&self, other: &Bounds) -> bool {
        other.left >= self.left
            && other.top >= self.top
            && other.right <= self.right
            && other.bottom <= self.bottom
    }

    pub fn contains_point(&self, p: Point) -> bool {
        p.x >= self.left && p.x < self.right && p.y >= self.top && p.y < self.bottom
    }

    /// Parses `"[x1,y1][x2,y2]"`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Bounds> {
        let s = s.trim();
        let rest = s.strip_prefix('[')?;
        let (a, rest) = rest.split_once("][")?;
        let b = rest.strip_suffix(']')?;
        let (l, t) = a.split_once(',')?;
        let (r, bo) = b.split_once(',')?;
        Some(Bounds {
            left: l.trim().parse().ok()?,
            top: t.trim().parse().ok()?,
            right: r.trim().parse().ok()?,
            bottom: bo.trim().parse().ok()?,
        })
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{},{}][{},{}]",
            self.left, self.top, self.right, self.bottom
        )
    }
}

/// A screen point to tap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

/// Index of a node in its [`Tree`]; only meaningful for the tree it came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NodeId(u32);

impl NodeId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Where a string of a node lives in [`Tree::strings`].
#[derive(Clone, Copy, Debug, Default)]
struct Span {
    start: u32,
    len: u32,
}

/// Boolean attributes of a node, as bits.
mod flag {
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
}

#[derive(Clone, Debug)]
struct Node {
    parent: u32,
    /// End (exclusive) of this node's subtree in pre-order.
    end: u32,
    depth: u16,
    /// The `index` attribute: position among the parent's children as the app saw it.
    index: u32,
    flags: u16,
    bounds: Bounds,
    text: Span,
    desc: Span,
    resource_id: Span,
    class: Span,
    package: Span,
}

const NONE: u32 = u32::MAX;

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
    fn keeps(&self, package: &str) -> bool {
        match self {
            WindowFilter::All => true,
            WindowFilter::Packages(p) => package.is_empty() || p.contains(&package),
        }
    }
}

/// A parsed dump: the kept windows' nodes plus what was seen of the others.
#[derive(Clone, Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    strings: String,
    windows: Vec<Window>,
    screen: Bounds,
    shape: DumpShape,
    rotation: u8,
}

/// Substrings of uiautomator's failure messages, and the error each means.
fn known_failure(outside: &str) -> Option<DumpError> {
    if outside.contains("could not get idle state") {
        Some(DumpError::IdleState)
    } else if outside.contains("null root node") {
        Some(DumpError::NullRoot)
    } else if outside.contains("UiAutomationService") && outside.contains("already registered") {
        Some(DumpError::AutomationBusy)
    } else {
        None
    }
}

impl Tree {
    /// Parses the output of a UI dump, keeping the PDD window(s).
    pub fn parse(output: &str) -> Result<Tree, DumpError> {
        Tree::parse_with(output, WindowFilter::default())
    }

    /// Parses raw dump bytes; invalid UTF-8 is replaced, not fatal (labels only).
    pub fn parse_bytes(output: &[u8]) -> Result<Tree, DumpError> {
        Tree::parse(&String::from_utf8_lossy(output))
    }

    /// Parses the output of a UI dump, keeping the windows `filter` selects.
    pub fn parse_with(output: &str, filter: WindowFilter<'_>) -> Result<Tree, DumpError> {
        if output.trim().is_empty() {
            return Err(DumpError::Empty);
        }
        let Some(start) = output.find("<hierarchy") else {
            if let Some(err) = known_failure(output) {
                return Err(err);
            }
            return Err(DumpError::NoHierarchy {
                snippet: snippet(output),
            });
        };
        // The hierarchy ends at its closing tag (or a self-closed `<hierarchy/>`); without
        // one the dump was cut off and the XML reader reports where. Searching from the
        // end is cheap (only a trailer follows); a second hierarchy inside is caught below.
        const CLOSE: &str = "</hierarchy>";
        let end = output
            .rfind(CLOSE)
            .filter(|&i| i >= start)
            .map(|i| i + CLOSE.len())
            .unwrap_or(output.len());
        let outside_before = &output[..start];
        let outside_after = &output[end..];
        if let Some(err) = known_failure(outside_before).or_else(|| known_failure(outside_after)) {
            return Err(err);
        }
        if outside_after.contains("<hierarchy") {
            // Two dumps glued together (a stale file read after a fresh one): trust neither.
            return Err(DumpError::Malformed {
                detail: "more than one <hierarchy> in the output".into(),
                position: end as u64,
            });
        }
        let xml = &output[start..end];
        let (tree, consumed) = Builder::new(filter).run(xml, start)?;
        // What follows the first complete hierarchy inside the slice: nothing, or a
        // trailer after a self-closed `<hierarchy/>`.
        let rest = xml.get(consumed..).unwrap_or_default();
        if let Some(err) = known_failure(rest) {
            return Err(err);
        }
        if rest.contains("hierarchy") {
            return Err(DumpError::Malformed {
                detail: "more than one <hierarchy> in the output".into(),
                position: (start + consumed) as u64,
            });
        }
        if tree.nodes.is_empty() && tree.windows.is_empty() {
            return Err(DumpError::NoNodes);
        }
        Ok(tree)
    }

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

    /// Nodes matching `query`, in document order.
    pub fn select<'t: 'a, 'a>(
        &'t self,
        query: &'a Query<'a>,
    ) -> impl Iterator<Item = NodeRef<'t>> + 'a {
        let range = match query.under {
            Some(root) => (root.0 + 1)..self.nodes[root.index()].end,
            None => 0..self.nodes.len() as u32,
        };
        range
            .map(move |id| NodeRef { tree: self, id })
            .filter(move |n| query.matches(n))
    }

    /// The first node matching `query` in document order.
    pub fn find<'t>(&'t self, query: &Query<'_>) -> Option<NodeRef<'t>> {
        self.nodes().find(|n| {
            query.matches(n)
                && query
                    .under
                    .is_none_or(|u| self.get(u).contains(n) && u != n.id())
        })
    }

    fn str_of(&self, span: Span) -> &str {
        let start = span.start as usize;
        self.strings
            .get(start..start + span.len as usize)
            .unwrap_or_default()
    }
}

fn snippet(output: &str) -> String {
    let t = output.trim();
    let mut s: String = t.chars().take(120).collect();
    if s.len() < t.len() {
        s.push('…');
    }
    s
}

/// Builds a [`Tree`] from the `<hierarchy>` slice of the output.
struct Builder<'f> {
    filter: WindowFilter<'f>,
    nodes: Vec<Node>,
    strings: String,
    windows: Vec<Window>,
    stack: Vec<u32>,
    shape: DumpShape,
    rotation: u8,
}

impl<'f> Builder<'f> {
    fn new(filter: WindowFilter<'f>) -> Self {
        Builder {
            filter,
            nodes: Vec::with_capacity(256),
            strings: String::with_capacity(8 * 1024),
            windows: Vec::new(),
            stack: Vec::with_capacity(64),
            shape: DumpShape::Compact,
            rotation: 0,
        }
    }

    /// Parses `xml` up to the end of its first hierarchy; returns the tree and how many
    /// bytes of `xml` that took.
    ///
    /// One pass over the bytes: each tag's attributes are read as its end is looked for
    /// (a dump is plain `key="value"` lists; see [`RawAttrs`]), so no byte is scanned
    /// twice. End tags must match their start tags; declarations, comments, CDATA and
    /// text are skipped; anything else malformed fails the whole dump.
    fn run(mut self, xml: &str, offset: usize) -> Result<(Tree, usize), DumpError> {
        let b = xml.as_bytes();
        let malformed = |detail: &str, pos: usize| DumpError::Malformed {
            detail: detail.to_string(),
            position: (offset + pos) as u64,
        };
        // Every open element's name, to check end tags (nodes also sit on `self.stack`).
        let mut open: Vec<&[u8]> = Vec::with_capacity(64);
        let mut in_hierarchy = false;
        let mut closed = false;
        let mut pos = 0usize;
        while let Some(lt) = memchr::memchr(b'<', &b[pos..]) {
            let at = pos + lt;
            match b.get(at + 1) {
                Some(b'?' | b'!') => {
                    pos = skip_markup(b, at)
                        .ok_or_else(|| malformed("unterminated comment or declaration", at))?;
                }
                Some(b'/') => {
                    let Some(gt) = memchr::memchr(b'>', &b[at..]).map(|g| at + g) else {
                        return Err(malformed("unterminated end tag", at));
                    };
                    let name = b[at + 2..gt].trim_ascii();
                    pos = gt + 1;
                    match open.pop() {
                        Some(o) if o == name => {}
                        Some(_) => {
                            return Err(malformed("end tag does not match its start tag", at))
                        }
                        None => return Err(malformed("end tag without a start tag", at)),
                    }
                    if name == b"hierarchy" {
                        closed = true;
                        break;
                    }
                    if name == b"node" {
                        let Some(id) = self.stack.pop() else {
                            return Err(malformed("unbalanced </node>", at));
                        };
                        self.close(id);
                    }
                }
                Some(_) => {
                    let name_end = tag_name_end(b, at);
                    let name = &b[at + 1..name_end];
                    if name.is_empty() || name.iter().any(|c| matches!(c, b'<' | b'"' | b'\'')) {
                        return Err(malformed("bad tag name", at));
                    }
                    let mut attrs = RawAttrs::new(b, name_end);
                    match name {
                        b"hierarchy" => {
                            if in_hierarchy {
                                return Err(malformed("nested <hierarchy>", at));
                            }
                            self.read_hierarchy_attrs(&mut attrs)
                                .map_err(|d| malformed(&d, attrs.at))?;
                            in_hierarchy = true;
                        }
                        b"node" => {
                            if !in_hierarchy {
                                return Err(malformed("<node> outside <hierarchy>", at));
                            }
                            let kept = self
                                .open_node(&mut attrs)
                                .map_err(|d| malformed(&d, attrs.at))?;
                            let (end, empty) =
                                attrs.end.ok_or_else(|| malformed("unterminated tag", at))?;
                            if !kept && !empty {
                                // A window we do not keep: skip its whole subtree.
                                pos = skip_element(b, end).map_err(|d| malformed(&d, end))?;
                                continue;
                            }
                        }
                        _ => {
                            // Unknown elements: nothing to keep, but they must be well formed.
                            while let Some(a) = attrs.next() {
                                a.map_err(|d| malformed(&d, attrs.at))?;
                            }
                        }
                    }
                    let (end, empty) =
                        attrs.end.ok_or_else(|| malformed("unterminated tag", at))?;
                    pos = end;
                    if empty {
                        if name == b"hierarchy" {
                            // `<hierarchy/>`: a dump of nothing.
                            closed = true;
                            break;
                        }
                    } else {
                        open.push(name);
                    }
                }
                None => return Err(malformed("the dump ends inside a tag", at)),
            }
        }
        if !closed {
            return Err(malformed(
                "the dump ends before </hierarchy> (truncated?)",
                b.len(),
            ));
        }
        let consumed = pos;
        let screen = self
            .windows
            .iter()
            .fold(Bounds::default(), |acc, w| acc.union(&w.bounds));
        let tree = Tree {
            nodes: self.nodes,
            strings: self.strings,
            windows: self.windows,
            screen,
            shape: self.shape,
            rotation: self.rotation,
        };
        Ok((tree, consumed))
    }

    fn read_hierarchy_attrs(&mut self, attrs: &mut RawAttrs<'_>) -> Result<(), String> {
        for attr in attrs {
            let (key, value) = attr?;
            if key == b"rotation" {
                if let Ok(v) = std::str::from_utf8(value) {
                    self.rotation = v.trim().parse().unwrap_or(0);
                }
            }
        }
        Ok(())
    }

    fn push_str(&mut self, value: &str) -> Span {
        let start = self.strings.len();
        // A dump is far below 4 GiB; saturate rather than wrap if it is not.
        let span = Span {
            start: u32::try_from(start).unwrap_or(u32::MAX),
            len: u32::try_from(value.len()).unwrap_or(0),
        };
        if span.start != u32::MAX && span.len as usize == value.len() {
            self.strings.push_str(value);
            span
        } else {
            Span::default()
        }
    }

    /// Records a `<node>` from its attributes (read to the end of the tag); returns false
    /// (and records nothing but the window) when it is a top-level window the filter
    /// drops.
    fn open_node(&mut self, attrs: &mut RawAttrs<'_>) -> Result<bool, String> {
        let mut node = Node {
            parent: self.stack.last().copied().unwrap_or(NONE),
            end: 0,
            depth: u16::try_from(self.stack.len()).unwrap_or(u16::MAX),
            index: 0,
            flags: flag::ENABLED_DEFAULT | flag::ENABLED,
            bounds: Bounds::default(),
            text: Span::default(),
            desc: Span::default(),
            resource_id: Span::default(),
            class: Span::default(),
            package: Span::default(),
        };
        let top_level = self.stack.is_empty();
        let mut package_value: Option<String> = None;
        for attr in attrs.by_ref() {
            // A broken attribute means a broken dump: money decisions are not made on it.
            let (key, raw_value) = attr?;
            let bit = match key {
                b"checkable" => flag::CHECKABLE,
                b"checked" => flag::CHECKED,
                b"clickable" => flag::CLICKABLE,
                b"enabled" => flag::ENABLED,
                b"focusable" => flag::FOCUSABLE,
                b"focused" => flag::FOCUSED,
                b"scrollable" => flag::SCROLLABLE,
                b"long-clickable" => flag::LONG_CLICKABLE,
                b"password" => flag::PASSWORD,
                b"selected" => flag::SELECTED,
                b"visible-to-user" => flag::VISIBLE,
                b"NAF" => flag::NAF,
                _ => 0,
            };
            if bit != 0 {
                let on = raw_value == b"true";
                if key == b"enabled" {
                    node.flags &= !(flag::ENABLED_DEFAULT | flag::ENABLED);
                }
                if key == b"visible-to-user" {
                    node.flags |= flag::VISIBLE_KNOWN;
                    self.shape = DumpShape::Pretty;
                }
                if on {
                    node.flags |= bit;
                }
                continue;
            }
            match key {
                b"text" | b"content-desc" | b"resource-id" | b"class" | b"package" => {
                    let value = decode_value(raw_value);
                    if top_level && key == b"package" {
                        package_value = Some(value.to_string());
                    }
                    let span = self.push_str(&value);
                    match key {
                        b"text" => node.text = span,
                        b"content-desc" => node.desc = span,
                        b"resource-id" => node.resource_id = span,
                        b"class" => node.class = span,
                        _ => node.package = span,
                    }
                }
                b"bounds" => {
                    if let Some(b) = std::str::from_utf8(raw_value).ok().and_then(Bounds::parse) {
                        node.bounds = b;
                        node.flags |= flag::HAS_BOUNDS;
                    }
                }
                b"index" => {
                    node.index = std::str::from_utf8(raw_value)
                        .ok()
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                }
                _ => {}
            }
        }
        if top_level {
            let package = package_value.unwrap_or_default();
            if !self.filter.keeps(&package) {
                // Undo the strings this node pushed: the window is not kept.
                let first = [
                    node.text,
                    node.desc,
                    node.resource_id,
                    node.class,
                    node.package,
                ]
                .iter()
                .filter(|s| s.len > 0)
                .map(|s| s.start as usize)
                .min();
                if let Some(first) = first {
                    self.strings.truncate(first);
                }
                self.windows.push(Window {
                    package,
                    bounds: node.bounds,
                    root: None,
                });
                return Ok(false);
            }
            self.windows.push(Window {
                package,
                bounds: node.bounds,
                root: Some(NodeId(self.nodes.len() as u32)),
            });
        }
        let Some((_, empty)) = attrs.end else {
            return Err("unterminated tag".into());
        };
        let id = self.nodes.len() as u32;
        self.nodes.push(node);
        if empty {
            self.close(id);
        } else {
            self.stack.push(id);
        }
        Ok(true)
    }

    fn close(&mut self, id: u32) {
        let end = self.nodes.len() as u32;
        if let Some(n) = self.nodes.get_mut(id as usize) {
            n.end = end;
        }
    }
}

/// One `key="value"` pair (raw bytes), or why the tag is not a plain attribute list.
type RawAttr<'a> = Result<(&'a [u8], &'a [u8]), String>;

/// The `key="value"` pairs of a start tag, read straight from the dump's bytes up to the
/// tag's `>` or `/>` (then [`RawAttrs::end`] says where the tag ended and whether it was
/// self-closing).
///
/// A general XML reader finds the end of a tag first (scanning for quotes and `>`) and
/// then parses the attributes again; a dump's tags are plain `key="value"` lists, and
/// reading them once roughly halves parse time (see BENCHMARKS.md). Anything that is
/// not such a list is an error, which makes the whole dump malformed.
struct RawAttrs<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// After the last attribute: the offset just past the tag, and whether it was `/>`.
    end: Option<(usize, bool)>,
    done: bool,
    /// Where reading stopped: the offset an error is reported at.
    at: usize,
}

impl<'a> RawAttrs<'a> {
    /// Attributes of the tag whose name ends at `pos` in `bytes`.
    fn new(bytes: &'a [u8], pos: usize) -> Self {
        RawAttrs {
            bytes,
            pos,
            end: None,
            done: false,
            at: pos,
        }
    }

    fn skip_space(&mut self) {
        while let Some(b) = self.bytes.get(self.pos) {
            if matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    fn fail(&mut self, what: &str) -> Option<RawAttr<'a>> {
        self.done = true;
        self.at = self.pos;
        Some(Err(format!("bad attribute: {what}")))
    }
}

impl<'a> Iterator for RawAttrs<'a> {
    type Item = RawAttr<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        self.skip_space();
        match self.bytes.get(self.pos) {
            None => return self.fail("the dump ends inside a tag"),
            Some(b'>') => {
                self.done = true;
                self.end = Some((self.pos + 1, false));
                return None;
            }
            Some(b'/') => {
                if self.bytes.get(self.pos + 1) == Some(&b'>') {
                    self.done = true;
                    self.end = Some((self.pos + 2, true));
                    return None;
                }
                return self.fail("'/' inside a tag");
            }
            Some(_) => {}
        }
        let start = self.pos;
        while let Some(&b) = self.bytes.get(self.pos) {
            if b == b'=' || matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                break;
            }
            if matches!(b, b'"' | b'\'' | b'<' | b'>' | b'/') {
                return self.fail("unexpected character in a name");
            }
            self.pos += 1;
        }
        let key = &self.bytes[start..self.pos];
        self.skip_space();
        if self.bytes.get(self.pos) != Some(&b'=') {
            return self.fail("missing '='");
        }
        self.pos += 1;
        self.skip_space();
        let quote = match self.bytes.get(self.pos) {
            Some(&q @ (b'"' | b'\'')) => q,
            _ => return self.fail("unquoted value"),
        };
        self.pos += 1;
        let value_start = self.pos;
        // One pass finds the closing quote or a '<' before it (not allowed in a value).
        let Some(len) = memchr::memchr2(quote, b'<', &self.bytes[value_start..]) else {
            return self.fail("unterminated value");
        };
        if self.bytes[value_start + len] == b'<' {
            return self.fail("'<' in a value");
        }
        self.pos = value_start + len + 1;
        Some(Ok((key, &self.bytes[value_start..value_start + len])))
    }
}

/// Skips the `<?…?>`, `<!--…-->`, `<![CDATA[…]]>` or `<!…>` starting at `at`; returns
/// the offset just past it, or `None` when it is never closed.
fn skip_markup(b: &[u8], at: usize) -> Option<usize> {
    let rest = &b[at..];
    let close: &[u8] = if rest.starts_with(b"<?") {
        b"?>"
    } else if rest.starts_with(b"<!--") {
        b"-->"
    } else if rest.starts_with(b"<![CDATA[") {
        b"]]>"
    } else {
        b">"
    };
    let from = at + 2;
    memchr::memmem::find(b.get(from..)?, close).map(|i| from + i + close.len())
}

/// Where the name of the tag opened by the `<` at `at` ends.
fn tag_name_end(b: &[u8], at: usize) -> usize {
    b[at + 1..]
        .iter()
        .position(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | b'/' | b'>'))
        .map_or(b.len(), |n| at + 1 + n)
}

/// Skips the content of an element whose start tag ended at `from`, through its end
/// tag; returns the offset past it. Tags inside are read (quotes respected) but nothing
/// is recorded.
fn skip_element(b: &[u8], from: usize) -> Result<usize, String> {
    let mut depth = 1usize;
    let mut pos = from;
    while let Some(lt) = memchr::memchr(b'<', &b[pos..]) {
        let at = pos + lt;
        match b.get(at + 1) {
            Some(b'/') => {
                let gt = memchr::memchr(b'>', &b[at..])
                    .map(|g| at + g)
                    .ok_or("unterminated end tag")?;
                pos = gt + 1;
                depth -= 1;
                if depth == 0 {
                    return Ok(pos);
                }
            }
            Some(b'!' | b'?') => {
                pos = skip_markup(b, at).ok_or("unterminated comment or declaration")?;
            }
            Some(_) => {
                let mut attrs = RawAttrs::new(b, tag_name_end(b, at));
                for a in attrs.by_ref() {
                    a?;
                }
                let (end, empty) = attrs.end.ok_or("unterminated tag")?;
                pos = end;
                if !empty {
                    depth += 1;
                }
            }
            None => return Err("the dump ends inside a tag".into()),
        }
    }
    Err("the dump ends inside a skipped window".into())
}

/// An attribute value as text: entities (`&#10;`, `&amp;`, …) decoded. A value with a
/// broken entity is kept raw rather than failing the dump: it only affects a label.
fn decode_value(raw: &[u8]) -> std::borrow::Cow<'_, str> {
    let text = String::from_utf8_lossy(raw);
    if !text.contains('&') {
        return text;
    }
    match quick_xml::escape::unescape(&text) {
        Ok(v) => std::borrow::Cow::Owned(v.into_owned()),
        Err(_) => text,
    }
}

/// A node of a [`Tree`], with accessors. Cheap to copy.
#[derive(Clone, Copy)]
pub struct NodeRef<'t> {
    tree: &'t Tree,
    id: u32,
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

    /// The `index` attribute.
    pub fn index(&self) -> u32 {
        self.node().index
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

/// How a string attribute is matched. Exact and contains compare against the trimmed
/// value (the app pads some names with spaces); regexes see the raw value.
#[derive(Clone, Copy, Debug)]
pub enum Matcher<'q> {
    Exact(&'q str),
    Contains(&'q str),
    Regex(&'q Regex),
}

impl Matcher<'_> {
    pub fn matches(&self, value: &str) -> bool {
        match self {
            Matcher::Exact(s) => value.trim() == *s,
            Matcher::Contains(s) => value.contains(s),
            Matcher::Regex(r) => r.is_match(value),
        }
    }
}

/// A conjunction of conditions on a node; unset conditions match everything.
///
/// ```
/// use cmautobuy_client::screen::{Matcher, Query, Tree};
/// # let tree = Tree::parse(r#"<hierarchy><node text="提交订单 ¥88" package="com.xunmeng.pinduoduo" bounds="[0,0][10,10]"/></hierarchy>"#).unwrap();
/// let submit = tree.find(&Query::new().text(Matcher::Contains("提交订单")).visible());
/// assert!(submit.is_some());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Query<'q> {
    text: Option<Matcher<'q>>,
    desc: Option<Matcher<'q>>,
    label: Option<Matcher<'q>>,
    id: Option<&'q str>,
    class: Option<&'q str>,
    clickable: Option<bool>,
    within: Option<Bounds>,
    visible: bool,
    under: Option<NodeId>,
}

impl<'q> Query<'q> {
    pub fn new() -> Self {
        Query::default()
    }
    /// The `text` attribute matches.
    pub fn text(mut self, m: Matcher<'q>) -> Self {
        self.text = Some(m);
        self
    }
    /// The `content-desc` attribute matches.
    pub fn desc(mut self, m: Matcher<'q>) -> Self {
        self.desc = Some(m);
        self
    }
    /// The text or the content-desc matches.
    pub fn label(mut self, m: Matcher<'q>) -> Self {
        self.label = Some(m);
        self
    }
    /// The resource id equals `id`, or its part after `:id/` does.
    pub fn id(mut self, id: &'q str) -> Self {
        self.id = Some(id);
        self
    }
    /// The class equals `class`, or its short name does ("TextView").
    pub fn class(mut self, class: &'q str) -> Self {
        self.class = Some(class);
        self
    }
    pub fn clickable(mut self, yes: bool) -> Self {
        self.clickable = Some(yes);
        self
    }
    /// The node's bounds lie inside `b`.
    pub fn within(mut self, b: Bounds) -> Self {
        self.within = Some(b);
        self
    }
    /// The node is on screen ([`NodeRef::is_visible`]).
    pub fn visible(mut self) -> Self {
        self.visible = true;
        self
    }
    /// Only the descendants of `root`.
    pub fn under(mut self, root: NodeId) -> Self {
        self.under = Some(root);
        self
    }

    pub fn matches(&self, n: &NodeRef<'_>) -> bool {
        if let Some(m) = &self.text {
            if !m.matches(n.text()) {
                return false;
            }
        }
        if let Some(m) = &self.desc {
            if !m.matches(n.desc()) {
                return false;
            }
        }
        if let Some(m) = &self.label {
            if !m.matches(n.text()) && !m.matches(n.desc()) {
                return false;
            }
        }
        if let Some(id) = self.id {
            if n.resource_id() != id && n.id_name() != id {
                return false;
            }
        }
        if let Some(c) = self.class {
            if n.class() != c && n.class_name() != c {
                return false;
            }
        }
        if let Some(c) = self.clickable {
            if n.is_clickable() != c {
                return false;
            }
        }
        if let Some(b) = &self.within {
            if !b.contains(&n.bounds()) {
                return false;
            }
        }
        if self.visible && !n.is_visible() {
            return false;
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PDD: &str = "com.xunmeng.pinduoduo";

    fn node(attrs: &str, inner: &str) -> String {
        format!(r#"<node package="{PDD}" {attrs}>{inner}</node>"#)
    }

    /// The one-pass scanner reads what an XML reader would, and refuses what it would.
    #[test]
    fn scanner_reads_well_formed_dumps_and_refuses_the_rest() {
        // Declaration, comment, CDATA and text are skipped; '>' and '/' inside values are
        // data; entities are decoded; single quotes work; a window we do not keep is
        // skipped whole, nested nodes and '>' in its values included.
        let xml = format!(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<!-- a comment <node> -->\
             <hierarchy rotation=\"1\"><![CDATA[<node>]]>\
             <node package=\"com.android.systemui\" text=\"a > b\"><node text='x>'/><node/></node>\
             {}</hierarchy>\nUI hierchary dumped to: /dev/tty",
            node(
                r#"text="1 &gt; 0 &amp; a/b" bounds="[0,0][10,10]""#,
                &format!("text {}<node package='{PDD}' text='inner' />", "words"),
            )
        );
        let tree = Tree::parse(&xml).expect("well formed");
        assert_eq!(tree.rotation(), 1);
        assert_eq!(tree.len(), 2, "the systemui window is skipped, not kept");
        assert_eq!(tree.windows().len(), 2);
        let texts: Vec<&str> = tree.nodes().map(|n| n.text()).collect();
        assert_eq!(texts, ["1 > 0 & a/b", "inner"]);
        assert_eq!(tree.get(NodeId(0)).bounds(), Bounds::new(0, 0, 10, 10));

        for (bad, why) in [
            (
                format!("<hierarchy>{}</hierarchy>", r#"<node text="a"></nod>"#),
                "mismatched end tag",
            ),
            (
                "<hierarchy><node text=\"a\"/>".to_string(),
                "no </hierarchy>",
            ),
            (
                "<hierarchy><node text=\"a/>\n</hierarchy>".to_string(),
                "unterminated value",
            ),
            (
                "<hierarchy><node text=a /></hierarchy>".to_string(),
                "unquoted value",
            ),
            (
                "<hierarchy><node text /></hierarchy>".to_string(),
                "missing '='",
            ),
            (
                "<hierarchy><node text=\"<\" /></hierarchy>".to_string(),
                "'<' in a value",
            ),
            (
                "<hierarchy><node / text=\"\"></hierarchy>".to_string(),
                "'/' inside a tag",
            ),
            (
                "<hierarchy><node>a < b</node></hierarchy>".to_string(),
                "'<' in text",
            ),
            (
                "<hierarchy></node></hierarchy>".to_string(),
                "end tag without start",
            ),
            (
                "<hierarchy><!-- never closed </hierarchy>".to_string(),
                "open comment",
            ),
            (
                format!(
                    "<hierarchy>{}",
                    r#"<node package="com.android.systemui"><node>"#
                ),
                "a skipped window cut off",
            ),
        ] {
            match Tree::parse(&bad) {
                Err(DumpError::Malformed { .. }) => {}
                other => panic!("{why}: {bad:?} gave {other:?}"),
            }
        }
        // The position points at the fault: here the unquoted value.
        let bad = "<hierarchy><node text=a /></hierarchy>";
        match Tree::parse(bad) {
            Err(DumpError::Malformed { position, .. }) => {
                assert_eq!(position as usize, bad.find("a /").unwrap())
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bounds_parse() {
        assert_eq!(
            Bounds::parse("[0,95][1080,2354]"),
            Some(Bounds::new(0, 95, 1080, 2354))
        );
        assert_eq!(
            Bounds::parse("[-300,979][0,1374]"),
            Some(Bounds::new(-300, 979, 0, 1374))
        );
        for bad in ["", "[0,0]", "[a,0][1,1]", "[0,0][1,1", "0,0,1,1"] {
            assert_eq!(Bounds::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn children_and_descendants() {
        let xml = r#"<hierarchy rotation="0"><node index="0" package="com.xunmeng.pinduoduo" bounds="[0,0][100,100]"><node index="0" text="a" bounds="[0,0][10,10]"><node index="0" text="a1" bounds="[0,0][5,5]"/></node><node index="1" text="b" bounds="[10,0][20,10]"/></node><node package="com.android.systemui" bounds="[0,0][100,5]"><node text="12:00"/></node></hierarchy>"#;
        let t = Tree::parse(xml).unwrap();
        assert_eq!(t.len(), 4);
        let root = t.roots().next().unwrap();
        let kids: Vec<_> = root.children().map(|n| n.text()).collect();
        assert_eq!(kids, ["a", "b"]);
        let all: Vec<_> = root.descendants().map(|n| n.text()).collect();
        assert_eq!(all, ["a", "a1", "b"]);
        assert_eq!(
            t.dropped_packages().collect::<Vec<_>>(),
            ["com.android.systemui"]
        );
        assert_eq!(t.screen(), Bounds::new(0, 0, 100, 100));
        let a1 = t.find(&Query::new().text(Matcher::Exact("a1"))).unwrap();
        assert_eq!(a1.depth(), 2);
        assert_eq!(a1.ancestors().count(), 2);
        assert_eq!(t.shape(), DumpShape::Compact);
    }
}
