//! The uiautomator XML of a screen: the "pretty" shape of current phones and the compact
//! one-line shape of old ones.

use std::fmt::Write as _;

use super::node::{Node, Screen};

fn esc(s: &str, out: &mut String) {
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' => out.push_str("&#9;"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "&#{};", c as u32);
            }
            c => out.push(c),
        }
    }
}

fn b(v: bool) -> &'static str {
    if v {
        "true"
    } else {
        "false"
    }
}

fn write_node(n: &Node, index: usize, order: u32, depth: usize, pretty: bool, out: &mut String) {
    if pretty {
        for _ in 0..depth {
            out.push_str("  ");
        }
    }
    out.push_str("<node ");
    if n.naf {
        out.push_str("NAF=\"true\" ");
    }
    let _ = write!(out, "index=\"{index}\" text=\"");
    esc(&n.text, out);
    out.push_str("\" resource-id=\"");
    esc(&n.rid, out);
    let _ = write!(
        out,
        "\" class=\"{}\" package=\"{}\" content-desc=\"",
        n.class, n.package
    );
    esc(&n.desc, out);
    let _ = write!(
        out,
        "\" checkable=\"{}\" checked=\"{}\" clickable=\"{}\" enabled=\"{}\" focusable=\"{}\" focused=\"false\" scrollable=\"{}\" long-clickable=\"false\" password=\"false\" selected=\"{}\" ",
        b(n.checkable),
        b(n.checked),
        b(n.clickable),
        b(n.enabled),
        b(n.focusable),
        b(n.scrollable),
        b(n.selected)
    );
    let r = n.bounds;
    if pretty {
        let _ = write!(
            out,
            "visible-to-user=\"true\" bounds=\"[{},{}][{},{}]\" drawing-order=\"{}\" hint=\"\" display-id=\"0\"",
            r.l,
            r.t,
            r.r,
            r.b,
            n.drawing_order.unwrap_or(order)
        );
    } else {
        let _ = write!(out, "bounds=\"[{},{}][{},{}]\"", r.l, r.t, r.r, r.b);
    }
    if n.children.is_empty() {
        out.push_str(if pretty { " />\n" } else { " />" });
        return;
    }
    out.push_str(if pretty { ">\n" } else { ">" });
    for (i, c) in n.children.iter().enumerate() {
        write_node(c, i, i as u32 + 1, depth + 1, pretty, out);
    }
    if pretty {
        for _ in 0..depth {
            out.push_str("  ");
        }
        out.push_str("</node>\n");
    } else {
        out.push_str("</node>");
    }
}

/// The dump as a current phone writes it (one node per line, two-space indent).
pub fn to_xml(screen: &Screen) -> String {
    let mut out = String::with_capacity(64 * 1024);
    out.push_str(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<hierarchy rotation=\"0\">\n",
    );
    for w in &screen.windows {
        // Every top-level window has index 0 and drawing order 0 in real dumps.
        write_node(w, 0, 0, 1, true, &mut out);
    }
    out.push_str("</hierarchy>\n");
    out
}

/// The one-line dump of older Android versions (no visible-to-user/drawing-order/hint/
/// display-id attributes).
pub fn to_xml_compact(screen: &Screen) -> String {
    let mut out = String::with_capacity(48 * 1024);
    out.push_str(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">",
    );
    for w in &screen.windows {
        write_node(w, 0, 0, 0, false, &mut out);
    }
    out.push_str("</hierarchy>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ui::node::Rect;

    #[test]
    fn xml_escapes_and_marks_naf() {
        let s = Screen {
            windows: vec![Node::frame(Rect::new(0, 0, 10, 10))
                .child(Node::text(Rect::new(0, 0, 5, 5), "a<\"&'\nb"))
                .child(Node::image(Rect::new(0, 0, 5, 5)).clickable().naf())],
        };
        let x = to_xml(&s);
        assert!(x.contains("text=\"a&lt;&quot;&amp;&apos;&#10;b\""));
        assert!(x.contains("<node NAF=\"true\" index=\"1\""));
        assert!(x.contains("drawing-order=\"2\" hint=\"\" display-id=\"0\""));
    }
}
