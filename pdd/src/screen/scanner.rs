//! The dump scanner: [`Tree::parse`] and friends, one pass over a `uiautomator dump`'s
//! bytes that builds the [`Tree`] arena (see BENCHMARKS.md for why it is hand-written).
//!
//! # Both dump shapes
//! The pretty uiautomator2 shape (indented, `visible-to-user`, `drawing-order`, `hint`,
//! `display-id`, `NAF`) and the old one-line shell shape, which has no
//! `visible-to-user` and is followed by the line "UI hierchary dumped to: /dev/tty"
//! (sic). Anything outside `<hierarchy>…</hierarchy>` is inspected only for the known
//! uiautomator error messages, which win over any XML (a dump printed after "null root
//! node" may be a stale file).

use super::arena::{flag, DumpShape, Node, NodeId, Span, Tree, Window, WindowFilter, NONE};
use super::error::DumpError;
use super::geometry::Bounds;

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
            drawing_order: 0,
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
                b"drawing-order" => {
                    // Not a number: as if absent (document order decides).
                    if let Some(v) = std::str::from_utf8(raw_value)
                        .ok()
                        .and_then(|v| v.trim().parse().ok())
                    {
                        node.drawing_order = v;
                        node.flags |= flag::HAS_DRAWING_ORDER;
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

    const PDD: &str = "com.xunmeng.pinduoduo";

    fn node(attrs: &str, inner: &str) -> String {
        format!(r#"<node package="{PDD}" {attrs}>{inner}</node>"#)
    }

    /// `drawing-order` is read where the dump prints it (the pretty shape); absent or not
    /// a number it is `None` (document order decides), and `index` is kept as printed.
    #[test]
    fn drawing_order_and_index_are_read() {
        let xml = format!(
            r#"<hierarchy rotation="0"><node index="0" package="{PDD}" drawing-order="0" bounds="[0,0][10,10]"><node index="3" drawing-order="11" text="a"/><node index="5" text="b"/><node index="6" drawing-order="x" text="c"/></node></hierarchy>"#
        );
        let tree = Tree::parse(&xml).unwrap();
        let got: Vec<(u32, Option<u32>)> = tree
            .nodes()
            .map(|n| (n.index(), n.drawing_order()))
            .collect();
        assert_eq!(got, [(0, Some(0)), (3, Some(11)), (5, None), (6, None)]);
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
}
