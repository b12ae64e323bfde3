//! A recorded uiautomator dump as an index of its nodes (parsed with a real XML parser,
//! strictly: a `<hierarchy>` root, `<node>` elements only, every node with well-formed
//! `bounds`), and the scenario's tap selector matched against it.

use quick_xml::events::{BytesStart, Event};
use quick_xml::Reader;
use serde::Deserialize;

use crate::ui::{Node, Rect};

/// One `<node>` of a dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpNode {
    pub text: String,
    pub desc: String,
    pub resource_id: String,
    pub class: String,
    pub package: String,
    pub clickable: bool,
    pub enabled: bool,
    pub selected: bool,
    pub bounds: Rect,
    /// Index of the parent node, `None` for a top-level window.
    pub parent: Option<usize>,
    pub children: Vec<usize>,
}

/// Every node of a dump in document order.
#[derive(Debug, Clone, Default)]
pub struct DumpIndex {
    pub nodes: Vec<DumpNode>,
    /// The top-level nodes (windows), in dump order.
    pub roots: Vec<usize>,
}

/// Coordinates beyond this are no screen's (and would overflow drawing arithmetic).
const MAX_COORD: i32 = 100_000;

/// `[l,t][r,b]` with integers within ±100 000, nothing else.
pub fn parse_bounds(s: &str) -> Option<Rect> {
    let rest = s.strip_prefix('[')?;
    let (a, rest) = rest.split_once("][")?;
    let b = rest.strip_suffix(']')?;
    let pair = |p: &str| -> Option<(i32, i32)> {
        let (x, y) = p.split_once(',')?;
        let num = |v: &str| -> Option<i32> {
            let digits = v.strip_prefix('-').unwrap_or(v);
            if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            v.parse().ok().filter(|n: &i32| n.abs() <= MAX_COORD)
        };
        Some((num(x)?, num(y)?))
    };
    let (l, t) = pair(a)?;
    let (r, bb) = pair(b)?;
    Some(Rect::new(l, t, r, bb))
}

fn node_of(e: &BytesStart<'_>, parent: Option<usize>) -> Result<DumpNode, String> {
    let mut n = DumpNode {
        text: String::new(),
        desc: String::new(),
        resource_id: String::new(),
        class: String::new(),
        package: String::new(),
        clickable: false,
        enabled: true,
        selected: false,
        bounds: Rect::default(),
        parent,
        children: Vec::new(),
    };
    let mut has_bounds = false;
    for a in e.attributes() {
        let a = a.map_err(|err| format!("bad attribute: {err}"))?;
        let v = a
            .unescape_value()
            .map_err(|err| format!("bad attribute value: {err}"))?;
        match a.key.as_ref() {
            b"text" => n.text = v.into_owned(),
            b"content-desc" => n.desc = v.into_owned(),
            b"resource-id" => n.resource_id = v.into_owned(),
            b"class" => n.class = v.into_owned(),
            b"package" => n.package = v.into_owned(),
            b"clickable" => n.clickable = v == "true",
            b"enabled" => n.enabled = v != "false",
            b"selected" => n.selected = v == "true",
            b"bounds" => {
                n.bounds = parse_bounds(&v).ok_or_else(|| format!("node with bad bounds {v:?}"))?;
                has_bounds = true;
            }
            _ => {}
        }
    }
    if !has_bounds {
        return Err("a <node> without bounds".into());
    }
    Ok(n)
}

impl DumpIndex {
    /// Parse a uiautomator dump; the error says what is wrong (and where).
    pub fn parse(xml: &str) -> Result<DumpIndex, String> {
        let mut r = Reader::from_str(xml);
        r.config_mut().trim_text(true);
        let mut idx = DumpIndex::default();
        // The open elements: None = <hierarchy>, Some(i) = node i.
        let mut open: Vec<Option<usize>> = Vec::new();
        let mut seen_root = false;
        loop {
            let pos = r.buffer_position();
            let ev = r
                .read_event()
                .map_err(|e| format!("XML error at byte {pos}: {e}"))?;
            match ev {
                Event::Start(e) => idx.open(&e, &mut open, &mut seen_root, false)?,
                Event::Empty(e) => idx.open(&e, &mut open, &mut seen_root, true)?,
                Event::End(_) => {
                    open.pop();
                }
                Event::Text(t) => {
                    // After the root closes: what `uiautomator dump /dev/tty` prints on old
                    // phones ("UI hierchary dumped to: /dev/tty") may trail a recording.
                    let trailing = seen_root && open.is_empty();
                    if !trailing && !t.iter().all(u8::is_ascii_whitespace) {
                        return Err(format!("text outside any attribute at byte {pos}"));
                    }
                }
                Event::Eof => break,
                Event::Decl(_) | Event::Comment(_) | Event::PI(_) | Event::DocType(_) => {}
                Event::CData(_) => return Err(format!("CDATA at byte {pos}")),
            }
        }
        if !seen_root {
            return Err("no <hierarchy> root element".into());
        }
        if !open.is_empty() {
            return Err("unclosed element at the end".into());
        }
        if idx.nodes.is_empty() {
            return Err("<hierarchy> has no <node>".into());
        }
        Ok(idx)
    }

    fn open(
        &mut self,
        e: &BytesStart<'_>,
        open: &mut Vec<Option<usize>>,
        seen_root: &mut bool,
        empty: bool,
    ) -> Result<(), String> {
        let name = e.name();
        match (name.as_ref(), open.last()) {
            (b"hierarchy", None) if open.is_empty() && !*seen_root => {
                *seen_root = true;
                if !empty {
                    open.push(None);
                }
                Ok(())
            }
            (b"node", Some(parent)) => {
                let parent = *parent;
                let i = self.nodes.len();
                self.nodes.push(node_of(e, parent)?);
                match parent {
                    Some(p) => self.nodes[p].children.push(i),
                    None => self.roots.push(i),
                }
                if !empty {
                    open.push(Some(i));
                }
                Ok(())
            }
            (n, _) => Err(format!(
                "unexpected <{}> (a dump is a <hierarchy> of <node>s)",
                String::from_utf8_lossy(n)
            )),
        }
    }

    /// The app's window among the top-level nodes, as a position in [`DumpIndex::roots`]:
    /// PDD's (the first of them in dump order when there are several); in a dump with no
    /// PDD window (the launcher, another app in front) the largest window, the first of
    /// the largest on a tie — the status and gesture bars are thin strips. Never the
    /// first root for being first: uiautomator lists its roots in no defined order (a
    /// real MIUI dump can put the `com.miui.home` gesture bar before PDD's window).
    /// `None` for a dump without windows.
    pub fn app_root(&self) -> Option<usize> {
        let pkg = |&(_, &i): &(usize, &usize)| self.nodes[i].package == crate::ui::PDD;
        self.roots
            .iter()
            .enumerate()
            .find(pkg)
            .or_else(|| {
                let area = |i: usize| {
                    let b = self.nodes[i].bounds;
                    i64::from((b.r - b.l).max(0)) * i64::from((b.b - b.t).max(0))
                };
                // max_by_key keeps the last of equals: compare reversed positions.
                self.roots
                    .iter()
                    .enumerate()
                    .max_by_key(|&(k, &i)| (area(i), std::cmp::Reverse(k)))
            })
            .map(|(k, _)| k)
    }

    /// The package of the app's window ([`DumpIndex::app_root`]).
    pub fn app_package(&self) -> Option<&str> {
        self.app_root()
            .map(|k| self.nodes[self.roots[k]].package.as_str())
    }

    /// The nearest clickable strict ancestor of node `i`.
    pub fn clickable_ancestor(&self, i: usize) -> Option<usize> {
        let mut p = self.nodes.get(i)?.parent;
        while let Some(j) = p {
            if self.nodes[j].clickable {
                return Some(j);
            }
            p = self.nodes[j].parent;
        }
        None
    }

    /// Whether a tap at (x, y) matches `sel`: some node matching the selector — or, for
    /// a node that is not clickable itself (a label inside its button), its nearest
    /// clickable ancestor — contains the point. A clickable node is its own target: the
    /// clickable panel around an option chip (a whole sheet is one) does not make every
    /// tap on the panel a tap on the chip.
    pub fn tap_matches(&self, sel: &Selector, x: i32, y: i32) -> bool {
        self.nodes.iter().enumerate().any(|(i, n)| {
            sel.matches(n)
                && (n.bounds.contains(x, y)
                    || !n.clickable
                        && self
                            .clickable_ancestor(i)
                            .is_some_and(|a| self.nodes[a].bounds.contains(x, y)))
        })
    }

    /// The dump as the simulator's own tree (for rendering a screenshot).
    pub fn to_ui(&self) -> Vec<Node> {
        self.roots.iter().map(|&i| self.ui_node(i, 0)).collect()
    }

    fn ui_node(&self, i: usize, depth: usize) -> Node {
        let d = &self.nodes[i];
        let mut n = Node::new(static_class(&d.class), d.bounds);
        n.package = static_package(&d.package);
        n.text = d.text.clone();
        n.desc = d.desc.clone();
        n.rid = d.resource_id.clone();
        n.clickable = d.clickable;
        n.enabled = d.enabled;
        n.selected = d.selected;
        // Depth is bounded by the dump itself; a pathological one stops at 200 levels.
        if depth < 200 {
            n.children = d
                .children
                .iter()
                .map(|&c| self.ui_node(c, depth + 1))
                .collect();
        }
        n
    }
}

fn static_class(c: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "android.widget.FrameLayout",
        "android.widget.LinearLayout",
        "android.widget.RelativeLayout",
        "android.widget.TextView",
        "android.widget.ImageView",
        "android.widget.EditText",
        "android.widget.Button",
        "android.widget.ScrollView",
        "android.view.ViewGroup",
        "androidx.recyclerview.widget.RecyclerView",
        "android.webkit.WebView",
    ];
    KNOWN
        .iter()
        .find(|k| **k == c)
        .copied()
        .unwrap_or("android.view.View")
}

fn static_package(p: &str) -> &'static str {
    const KNOWN: &[&str] = &[crate::ui::PDD, "com.android.systemui", "com.miui.home"];
    KNOWN
        .iter()
        .find(|k| **k == p)
        .copied()
        .unwrap_or("android")
}

/// A tap's selector: every field given must hold.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Selector {
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub desc: Option<String>,
    #[serde(default)]
    pub resource_id: Option<String>,
    #[serde(default)]
    pub text_prefix: Option<String>,
    #[serde(default)]
    pub desc_prefix: Option<String>,
    #[serde(default)]
    pub bounds: Option<[i32; 4]>,
}

impl Selector {
    pub fn is_empty(&self) -> bool {
        *self == Selector::default()
    }

    pub fn matches(&self, n: &DumpNode) -> bool {
        self.text.as_ref().is_none_or(|t| n.text == *t)
            && self.desc.as_ref().is_none_or(|t| n.desc == *t)
            && self
                .resource_id
                .as_ref()
                .is_none_or(|t| n.resource_id == *t)
            && self
                .text_prefix
                .as_ref()
                .is_none_or(|t| n.text.starts_with(t.as_str()))
            && self
                .desc_prefix
                .as_ref()
                .is_none_or(|t| n.desc.starts_with(t.as_str()))
            && self
                .bounds
                .is_none_or(|[l, t, r, b]| n.bounds == Rect::new(l, t, r, b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BUTTON: &str = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0">
  <node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.xunmeng.pinduoduo" content-desc="" clickable="false" bounds="[0,0][1080,2400]">
    <node index="0" text="" resource-id="" class="android.widget.LinearLayout" package="com.xunmeng.pinduoduo" content-desc="" clickable="true" bounds="[600,2200][1080,2350]">
      <node index="0" text="发起拼单" resource-id="" class="android.widget.TextView" package="com.xunmeng.pinduoduo" content-desc="" clickable="false" bounds="[760,2250][920,2300]" />
    </node>
    <node index="1" text="a &amp; b&#10;c" resource-id="com.xunmeng.pinduoduo:id/pdd" class="android.widget.TextView" package="com.xunmeng.pinduoduo" content-desc="说明" clickable="false" bounds="[0,100][100,200]" />
  </node>
</hierarchy>
"#;

    #[test]
    fn parses_nodes_parents_and_escapes() {
        let d = DumpIndex::parse(BUTTON).expect("dump");
        assert_eq!(d.nodes.len(), 4);
        assert_eq!(d.roots, vec![0]);
        assert_eq!(d.nodes[2].parent, Some(1));
        assert_eq!(d.nodes[3].text, "a & b\nc");
        assert_eq!(d.clickable_ancestor(2), Some(1));
        assert_eq!(d.clickable_ancestor(1), None);
        assert_eq!(d.app_package(), Some(crate::ui::PDD));
        // An old phone's /dev/tty dump carries uiautomator's line after the root.
        let tty = format!("{}UI hierchary dumped to: /dev/tty\n", BUTTON.trim_end());
        assert_eq!(DumpIndex::parse(&tty).expect("tty dump").nodes.len(), 4);
    }

    #[test]
    fn the_app_window_is_pdds_whatever_the_order_else_the_largest() {
        let win = |pkg: &str, b: &str| {
            format!(
                r#"<node package="{pkg}" bounds="{b}"><node package="{pkg}" bounds="{b}" /></node>"#
            )
        };
        let bar = win("com.miui.home", "[0,2328][1080,2400]");
        let status = win("com.android.systemui", "[0,0][1080,95]");
        let pdd = win(crate::ui::PDD, "[0,0][1080,2400]");
        let dump = |ws: &[&str]| {
            DumpIndex::parse(&format!(
                "<hierarchy rotation=\"0\">{}</hierarchy>",
                ws.concat()
            ))
            .expect("dump")
        };
        // The gesture bar first, PDD's window second.
        let d = dump(&[&bar, &pdd, &status]);
        assert_eq!(d.app_root(), Some(1));
        assert_eq!(d.app_package(), Some(crate::ui::PDD));
        // Two PDD windows: the first of them.
        let popup = win(crate::ui::PDD, "[60,800][1020,1600]");
        assert_eq!(dump(&[&status, &popup, &bar, &pdd]).app_root(), Some(1));
        // No PDD window: the largest, the first on a tie.
        let home = win("com.miui.home", "[0,0][1080,2400]");
        let other = win("com.tencent.mm", "[0,0][1080,2400]");
        let d = dump(&[&bar, &home, &status, &other]);
        assert_eq!(d.app_root(), Some(1));
        assert_eq!(d.app_package(), Some("com.miui.home"));
    }

    #[test]
    fn label_inside_button_matches_anywhere_in_the_button() {
        let d = DumpIndex::parse(BUTTON).expect("dump");
        let sel = Selector {
            text: Some("发起拼单".into()),
            ..Selector::default()
        };
        assert!(d.tap_matches(&sel, 800, 2270), "on the label");
        assert!(
            d.tap_matches(&sel, 650, 2210),
            "in the button, outside the label"
        );
        assert!(!d.tap_matches(&sel, 500, 2270), "outside the button");
        // Edges: l ≤ x < r, t ≤ y < b.
        assert!(d.tap_matches(&sel, 600, 2200));
        assert!(!d.tap_matches(&sel, 1080, 2200));
        assert!(!d.tap_matches(&sel, 700, 2350));
    }

    /// A clickable chip inside a clickable panel (the real sheets are one clickable
    /// ViewGroup around every option): a tap elsewhere on the panel is not a tap on it.
    #[test]
    fn a_clickable_node_is_its_own_target_not_its_panel() {
        let panel = r#"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>
<hierarchy rotation="0">
  <node index="0" text="" resource-id="" class="android.view.ViewGroup" package="com.xunmeng.pinduoduo" content-desc="" clickable="true" bounds="[0,332][1080,2354]">
    <node index="0" text="" resource-id="" class="android.view.ViewGroup" package="com.xunmeng.pinduoduo" content-desc="黑色" clickable="true" bounds="[35,979][335,1374]">
      <node index="0" text="黑色" resource-id="" class="android.widget.TextView" package="com.xunmeng.pinduoduo" content-desc="" clickable="false" bounds="[60,1300][300,1350]" />
    </node>
  </node>
</hierarchy>
"#;
        let d = DumpIndex::parse(panel).expect("dump");
        let desc = Selector {
            desc: Some("黑色".into()),
            ..Selector::default()
        };
        assert!(d.tap_matches(&desc, 185, 1176), "on the chip");
        assert!(
            !d.tap_matches(&desc, 922, 2278),
            "on the panel, far from the chip"
        );
        // Its label still matches anywhere in the chip, not in the panel.
        let text = Selector {
            text: Some("黑色".into()),
            ..Selector::default()
        };
        assert!(d.tap_matches(&text, 185, 1176));
        assert!(!d.tap_matches(&text, 922, 2278));
    }

    #[test]
    fn all_given_fields_must_hold() {
        let d = DumpIndex::parse(BUTTON).expect("dump");
        let mut sel = Selector {
            text_prefix: Some("发起".into()),
            ..Selector::default()
        };
        assert!(d.tap_matches(&sel, 800, 2270));
        sel.bounds = Some([760, 2250, 920, 2300]);
        assert!(d.tap_matches(&sel, 800, 2270));
        sel.bounds = Some([760, 2250, 920, 2301]);
        assert!(!d.tap_matches(&sel, 800, 2270));
        let by_desc = Selector {
            desc_prefix: Some("说".into()),
            resource_id: Some("com.xunmeng.pinduoduo:id/pdd".into()),
            ..Selector::default()
        };
        assert!(d.tap_matches(&by_desc, 50, 150));
        assert!(!d.tap_matches(&by_desc, 50, 250));
    }

    #[test]
    fn refuses_what_is_not_a_dump() {
        for (bad, why) in [
            ("", "no <hierarchy>"),
            ("<hierarchy rotation=\"0\"></hierarchy>", "no <node>"),
            (
                "<html><node bounds=\"[0,0][1,1]\"/></html>",
                "unexpected <html>",
            ),
            (
                "<hierarchy><node bounds=\"[0,0][1,1]\"><div/></node></hierarchy>",
                "unexpected <div>",
            ),
            (
                "<hierarchy><node bounds=\"[0,0][1,x]\"/></hierarchy>",
                "bad bounds",
            ),
            (
                "<hierarchy><node bounds=\"[0,0][1,1] \"/></hierarchy>",
                "bad bounds",
            ),
            (
                "<hierarchy><node text=\"x\"/></hierarchy>",
                "without bounds",
            ),
            ("<hierarchy><node bounds=\"[0,0][1,1]\">", "unclosed"),
            (
                "<hierarchy><node bounds=\"[0,0][1,1]\"></hierarchy>",
                "XML error",
            ),
            ("hello", "text outside"),
            (
                "<hierarchy>x<node bounds=\"[0,0][1,1]\"/></hierarchy>",
                "text outside",
            ),
            ("<hierarchy/><hierarchy/>", "unexpected <hierarchy>"),
        ] {
            match DumpIndex::parse(bad) {
                Ok(_) => panic!("accepted {bad:?}"),
                Err(e) => assert!(e.contains(why), "{bad:?}: {e}"),
            }
        }
        assert_eq!(
            parse_bounds("[-5,0][10,20]"),
            Some(Rect::new(-5, 0, 10, 20))
        );
        assert_eq!(parse_bounds("[+5,0][10,20]"), None);
        assert_eq!(parse_bounds("[5,0][10,20"), None);
        assert_eq!(parse_bounds("[99999999999,0][10,20]"), None);
        assert_eq!(parse_bounds("[100001,0][10,20]"), None);
    }

    /// Random mutations of a real-shaped dump never panic the parser, the tree
    /// conversion, the renderer or the matcher.
    #[test]
    fn mutated_dumps_never_panic() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(14);
        let base = BUTTON.as_bytes();
        let alphabet = b"<>/=\"[],-0123456789 &;#xnodehiarcy\n";
        let sel = Selector {
            text_prefix: Some("发".into()),
            ..Selector::default()
        };
        let mut accepted = 0;
        for _ in 0..3000 {
            let mut b = base.to_vec();
            for _ in 0..rng.gen_range(1..6) {
                let i = rng.gen_range(0..b.len());
                match rng.gen_range(0..3) {
                    0 => b[i] = alphabet[rng.gen_range(0..alphabet.len())],
                    1 => {
                        b.remove(i);
                    }
                    _ => b.insert(i, alphabet[rng.gen_range(0..alphabet.len())]),
                }
            }
            let s = String::from_utf8_lossy(&b);
            if let Ok(d) = DumpIndex::parse(&s) {
                accepted += 1;
                let _ = d.tap_matches(&sel, 800, 2270);
                let screen = crate::ui::Screen { windows: d.to_ui() };
                let _ = crate::render::render(&screen, 64, 128);
            }
        }
        assert!(accepted > 0, "some mutations keep the dump valid");
    }
}
