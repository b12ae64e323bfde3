//! The human-readable form of `inspect` (the `--json` form is the serde shape of
//! [`Screen`]).

use std::fmt::Write;

use super::recognize::Screen;
use super::sku_sheet::SkuSheet;

/// A few lines an operator can read: the kind, then the extracted fields.
pub fn render_text(screen: &Screen) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "screen: {}", screen.kind());
    if let Screen::SkuSheet(s) = screen {
        render_sheet(&mut out, s);
        return out;
    }
    let value = serde_json::to_value(screen).unwrap_or_default();
    if let Some(map) = value.as_object() {
        for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "screen") {
            match v {
                serde_json::Value::Array(items) => {
                    let _ = writeln!(out, "{k}: ({} items)", items.len());
                    for item in items {
                        let _ = writeln!(out, "  - {item}");
                    }
                }
                serde_json::Value::Null => {}
                other => {
                    let _ = writeln!(out, "{k}: {other}");
                }
            }
        }
    }
    out
}

fn render_sheet(out: &mut String, s: &SkuSheet) {
    let opt = |v: Option<String>| v.unwrap_or_else(|| "?".into());
    let _ = writeln!(out, "total: {}", opt(s.total.map(|f| f.to_string())));
    let _ = writeln!(out, "quantity: {}", opt(s.quantity.map(|q| q.to_string())));
    let _ = writeln!(
        out,
        "address_present: {}",
        opt(s.address_present.map(|a| a.to_string()))
    );
    if let Some(a) = &s.address_text {
        let _ = writeln!(out, "address: {a}");
    }
    let _ = writeln!(out, "selected_text: {}", opt(s.selected_text.clone()));
    let _ = writeln!(out, "unit_price_text: {}", opt(s.unit_price_text.clone()));
    for g in &s.groups {
        let _ = writeln!(
            out,
            "group {:?} ({:?}{}):",
            g.name,
            g.form,
            if g.scrollable { ", scrollable" } else { "" }
        );
        for o in &g.options {
            let mut flags = Vec::new();
            if o.selected {
                flags.push("selected".to_string());
            }
            if !o.available {
                flags.push("unavailable".to_string());
            }
            if o.clipped {
                flags.push("clipped".to_string());
            }
            if o.offscreen {
                flags.push("offscreen".to_string());
            }
            if let Some(l) = &o.stock_label {
                flags.push(l.clone());
            }
            let tap = o
                .tap
                .map(|p| format!("tap ({},{})", p.x, p.y))
                .unwrap_or_else(|| "no tap".into());
            let _ = writeln!(out, "  - {:?} {tap} [{}]", o.name, flags.join(", "));
        }
    }
    if let Some(t) = &s.submit {
        let _ = writeln!(out, "submit: {:?} at ({},{})", t.label, t.tap.x, t.tap.y);
    }
}
