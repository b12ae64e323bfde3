//! The artifact viewer: one attempt's folder as one page.
//!
//! An attempt folder (`artifacts.rs`: `manifest.json`, the `NN-step.xml` dumps, the
//! `NN-step.png` screenshots, `device.json`, `trace.json`) becomes a list of steps, one
//! per dump. Each step shows what the recognisers read from the stored dump — the same
//! [`crate::screen::inspect`] `cmautobuy-client inspect` runs, so the page says what the
//! flow saw — and draws it as an SVG overlay in the dump's own coordinates (screen
//! pixels, scaled by a `viewBox`): option boxes and their selected / unavailable state,
//! the buy buttons, the submit control, the sheet's other controls, the total, and each
//! tap the driver made on that dump (from `trace.json`). The overlay sits over the
//! step's screenshot when one was taken on that very screen (no gesture between the
//! dump and the screenshot), else over a wireframe of the dump's nodes (the driver takes
//! screenshots only at a collect's end and on failure: a screenshot costs a round trip).
//! Below: the dump itself (escaped, collapsed) and the action trace.
//!
//! [`build`] and everything it calls are pure (the files come in through a reader);
//! [`load`] reads an attempt folder; [`ViewerBody`] is the page body's data and
//! `templates/viewer/body.html` its template ([`render`] renders it alone). Every text
//! that comes from a file is escaped once, by the template; files are addressed only by
//! the names the manifest lists ([`listed_file`]). The wireframe draws each node's box
//! with its text (or `content-desc`) inside; a money step's screenshot is the task's own
//! (the flow executor takes one at each money step). Artifacts never hold the token
//! (nothing that writes them sees it).

use std::fmt::Write as _;
use std::path::Path;

use crate::artifacts::{read_trace, ManifestEntry, TraceRecord, DEVICE_SIDECAR, TRACE_SIDECAR};
use crate::screen::{self, Bounds, Screen, Target, Tree};

/// The largest dump read for the viewer (a real dump is 20–200 KB).
pub const MAX_DUMP_BYTES: usize = 4 * 1024 * 1024;

/// One attempt, ready to render.
#[derive(Clone, Debug)]
pub struct AttemptView {
    /// `device.json`'s `pdd_version`, when the attempt read it.
    pub pdd_version: Option<String>,
    pub steps: Vec<StepView>,
    /// `trace.json` (empty for an attempt written before traces existed).
    pub trace: Vec<TraceRecord>,
    /// Every file of the manifest, in order.
    pub files: Vec<ManifestEntry>,
}

/// One step: a dump (with its screenshot when one shows the same screen), or a
/// screenshot on its own.
#[derive(Clone, Debug)]
pub struct StepView {
    pub step: String,
    pub taken_at: String,
    pub dump_file: Option<String>,
    pub screenshot: Option<String>,
    pub reading: Reading,
    /// The taps and swipes made on this dump, in order.
    pub taps: Vec<TapMark>,
    /// The dump's text (lossy UTF-8), for the collapsed listing.
    pub dump_text: Option<String>,
}

/// What was read from a step's dump.
#[derive(Clone, Debug)]
pub enum Reading {
    Screen {
        kind: String,
        /// `inspect`'s text form.
        text: String,
        /// The dump's screen rectangle: the overlay's `viewBox`.
        screen: Bounds,
        /// The recognisers' findings, to draw.
        shapes: Vec<Shape>,
        /// Every node's bounds and text (the wireframe when there is no screenshot).
        wire: Vec<WireNode>,
    },
    /// The dump did not parse (its code and message).
    Unusable { code: String, message: String },
    /// The file is missing or too large.
    Missing(String),
    /// A screenshot without a dump of the same screen.
    NoDump,
}

/// A finding drawn on the overlay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// `option`, `buy`, `submit`, `proceed`, `close`, `dismiss`, `stepper`, `nav`,
    /// `order`, `back`, `total`.
    pub kind: &'static str,
    pub bounds: Bounds,
    pub label: String,
    /// Options: selected.
    pub selected: bool,
    /// Options: available (false: sold out / greyed).
    pub available: bool,
}

/// A tap (or a swipe) the driver made on a step's dump.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapMark {
    pub at: [i32; 2],
    pub to: Option<[i32; 2]>,
    pub detail: String,
    pub submit: bool,
}

/// What the recogniser found on a screen, as shapes.
pub fn findings(screen: &Screen) -> Vec<Shape> {
    let mut out = Vec::new();
    let target = |out: &mut Vec<Shape>, kind: &'static str, t: &Target| {
        out.push(Shape {
            kind,
            bounds: t.bounds,
            label: t.label.clone(),
            selected: false,
            available: true,
        });
    };
    match screen {
        Screen::GoodsDetail(g) => {
            for b in &g.buy_buttons {
                let mut label = b.label.clone();
                if let Some(p) = b.price {
                    let _ = write!(label, " {p}");
                }
                out.push(Shape {
                    kind: "buy",
                    bounds: b.target.bounds,
                    label,
                    selected: false,
                    available: true,
                });
            }
        }
        Screen::SkuSheet(s) => {
            for g in &s.groups {
                for o in &g.options {
                    out.push(Shape {
                        kind: "option",
                        bounds: o.bounds,
                        label: format!("{}: {}", g.name, o.name),
                        selected: o.selected,
                        available: o.available,
                    });
                }
            }
            if let Some(q) = &s.quantity_stepper {
                for t in [&q.decrease, &q.increase, &q.field].into_iter().flatten() {
                    target(&mut out, "stepper", t);
                }
            }
            if let Some(t) = &s.close {
                target(&mut out, "close", t);
            }
            if let Some(t) = &s.proceed {
                target(&mut out, "proceed", t);
            }
            if let Some(t) = &s.submit {
                target(&mut out, "submit", t);
                if let Some(total) = s.total {
                    out.push(total_shape(t.bounds, total));
                }
            }
        }
        Screen::ConfirmOrder(c) => {
            if let Some(q) = &c.quantity_stepper {
                for t in [&q.decrease, &q.increase, &q.field].into_iter().flatten() {
                    target(&mut out, "stepper", t);
                }
            }
            if let Some(t) = &c.submit {
                target(&mut out, "submit", t);
                if let Some(total) = c.total {
                    out.push(total_shape(t.bounds, total));
                }
            }
        }
        Screen::Payment(p) => {
            if let Some(t) = &p.back {
                target(&mut out, "back", t);
            }
        }
        Screen::PaymentAbandonDialog(d) => {
            for t in [&d.leave, &d.close].into_iter().flatten() {
                target(&mut out, "dismiss", t);
            }
        }
        Screen::RepeatOrderDialog(d) => {
            if let Some(t) = &d.close {
                target(&mut out, "dismiss", t);
            }
        }
        Screen::PaymentOffer(o) => {
            if let Some(t) = &o.decline {
                target(&mut out, "dismiss", t);
            }
        }
        Screen::Popup(p) => {
            if let Some(t) = &p.dismiss {
                target(&mut out, "dismiss", t);
            }
        }
        Screen::OrderList(l) => {
            if let Some(t) = &l.pending_tab {
                target(&mut out, "nav", t);
            }
            for e in &l.entries {
                out.push(Shape {
                    kind: "order",
                    bounds: e.bounds,
                    label: e.status.clone().unwrap_or_default(),
                    selected: false,
                    available: true,
                });
            }
        }
        Screen::OrderDetail(d) => {
            if let Some(t) = &d.more_info {
                target(&mut out, "nav", t);
            }
        }
        Screen::Unknown(u) => {
            for t in &u.nav {
                target(&mut out, "nav", t);
            }
        }
        Screen::LoginRequired(_) | Screen::RiskVerification(_) => {}
    }
    out
}

/// The total, drawn as a label just above the submit control it goes with.
fn total_shape(submit: Bounds, total: crate::money::Fen) -> Shape {
    let h = submit.height().max(1);
    Shape {
        kind: "total",
        bounds: Bounds::new(
            submit.left,
            submit.top.saturating_sub(h),
            submit.right,
            submit.top,
        ),
        label: format!("合计 {total}"),
        selected: false,
        available: true,
    }
}

/// Reads what was found in one dump.
pub fn read_dump(text: &str) -> Reading {
    match Tree::parse(text) {
        Ok(tree) => {
            let screen = screen::classify(&tree);
            let wire = tree
                .nodes()
                .filter(|n| n.has_bounds())
                .map(|n| (n.bounds(), n))
                .filter(|(b, _)| !b.is_empty())
                .map(|(bounds, n)| WireNode {
                    bounds,
                    text: if n.text().trim().is_empty() {
                        n.desc().trim().to_string()
                    } else {
                        n.text().trim().to_string()
                    },
                })
                .collect();
            Reading::Screen {
                kind: screen.kind().as_str().to_string(),
                text: screen::render_text(&screen),
                screen: tree.screen(),
                shapes: findings(&screen),
                wire,
            }
        }
        Err(e) => Reading::Unusable {
            code: e.code().to_string(),
            message: e.to_string(),
        },
    }
}

/// Actions that may change the screen (a screenshot after one does not show the dump
/// before it).
fn is_gesture(kind: &str) -> bool {
    matches!(
        kind,
        "tap" | "swipe" | "back" | "open_url" | "collapse_shade"
    )
}

/// Builds the page's data from a manifest, a reader of the listed files, the trace and
/// `device.json`'s version. Pure.
pub fn build(
    manifest: Vec<ManifestEntry>,
    read: &dyn Fn(&str) -> Option<Vec<u8>>,
    trace: Vec<TraceRecord>,
    pdd_version: Option<String>,
) -> AttemptView {
    let trace_index = |file: &str| trace.iter().position(|r| r.file.as_deref() == Some(file));
    let mut steps: Vec<StepView> = Vec::new();
    // The trace position of the last step's dump (None: unknown, no trace).
    let mut last_dump_at: Option<usize> = None;
    let mut last_seq: Option<u32> = None;
    for e in &manifest {
        let seq = e
            .file
            .split_once('-')
            .and_then(|(n, _)| n.parse::<u32>().ok());
        if e.file.ends_with(".xml") {
            let bytes = read(&e.file);
            let (reading, dump_text) = match bytes {
                Some(b) if b.len() <= MAX_DUMP_BYTES => {
                    let text = String::from_utf8_lossy(&b).into_owned();
                    (read_dump(&text), Some(text))
                }
                Some(b) => (
                    Reading::Missing(format!("{} bytes: too large to show", b.len())),
                    None,
                ),
                None => (Reading::Missing("file missing".into()), None),
            };
            let at = trace_index(&e.file);
            let taps = at
                .map(|i| {
                    trace[i + 1..]
                        .iter()
                        .take_while(|r| r.kind != "observe")
                        .filter_map(|r| {
                            let at = r.at?;
                            Some(TapMark {
                                at,
                                to: r.to,
                                detail: r.detail.clone(),
                                submit: r.detail.contains("(submit)"),
                            })
                        })
                        .collect()
                })
                .unwrap_or_default();
            steps.push(StepView {
                step: e.step.clone(),
                taken_at: e.taken_at.clone(),
                dump_file: Some(e.file.clone()),
                screenshot: None,
                reading,
                taps,
                dump_text,
            });
            last_dump_at = at;
            last_seq = seq;
        } else if e.file.ends_with(".png") {
            // The same screen as the last dump: no gesture between the two in the trace
            // (or, without a trace, the very next file).
            let same_screen = match (last_dump_at, trace_index(&e.file)) {
                (Some(d), Some(s)) if s > d => !trace[d + 1..s].iter().any(|r| is_gesture(&r.kind)),
                (None, None) if trace.is_empty() => {
                    matches!((last_seq, seq), (Some(a), Some(b)) if b == a + 1)
                }
                _ => false,
            };
            match steps.last_mut() {
                Some(s) if same_screen && s.screenshot.is_none() && s.dump_file.is_some() => {
                    s.screenshot = Some(e.file.clone());
                }
                _ => steps.push(StepView {
                    step: e.step.clone(),
                    taken_at: e.taken_at.clone(),
                    dump_file: None,
                    screenshot: Some(e.file.clone()),
                    reading: Reading::NoDump,
                    taps: Vec::new(),
                    dump_text: None,
                }),
            }
            last_dump_at = None;
            last_seq = None;
        }
    }
    AttemptView {
        pdd_version,
        steps,
        trace,
        files: manifest,
    }
}

/// Errors of [`load`].
#[derive(Debug, thiserror::Error)]
pub enum ViewerError {
    #[error("no artifacts for this attempt (folder {0} has no readable manifest)")]
    NoManifest(String),
}

/// Reads an attempt folder's manifest.
/// Its artifact entries only (the files): action entries are skipped.
pub fn read_manifest(dir: &Path) -> Option<Vec<ManifestEntry>> {
    crate::artifacts::read_manifest_elements(dir).map(|e| crate::artifacts::artifact_entries(&e))
}

/// Whether `name` is a file the manifest lists (or one of the sidecars): the only names
/// ever read or served from an attempt folder, so no request can walk out of it.
pub fn listed_file(manifest: &[ManifestEntry], name: &str) -> bool {
    // One plain file name, whatever a manifest on disk says.
    let plain =
        !name.is_empty() && !name.starts_with('.') && !name.contains(['/', '\\', ':', '\0']);
    plain
        && (name == "manifest.json"
            || name == DEVICE_SIDECAR
            || name == TRACE_SIDECAR
            || manifest.iter().any(|e| e.file == name))
}

/// The content type of an artifact file, by its extension.
pub fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("png") => "image/png",
        Some("xml") => "application/xml; charset=utf-8",
        Some("json") => "application/json",
        Some("txt") => "text/plain; charset=utf-8",
        _ => "application/octet-stream",
    }
}

/// Reads an attempt folder into an [`AttemptView`] (files by manifest name only).
pub fn load(dir: &Path) -> Result<AttemptView, ViewerError> {
    let manifest =
        read_manifest(dir).ok_or_else(|| ViewerError::NoManifest(dir.display().to_string()))?;
    let names: Vec<String> = manifest.iter().map(|e| e.file.clone()).collect();
    let read = |name: &str| -> Option<Vec<u8>> {
        if !names.iter().any(|n| n == name) {
            return None;
        }
        let path = dir.join(name);
        let len = std::fs::metadata(&path).ok()?.len();
        if len > MAX_DUMP_BYTES as u64 {
            // Report the size without reading it.
            return Some(vec![0; MAX_DUMP_BYTES + 1]);
        }
        std::fs::read(path).ok()
    };
    let pdd_version = std::fs::read(dir.join(DEVICE_SIDECAR))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["pdd_version"].as_str().map(str::to_string));
    Ok(build(manifest, &read, read_trace(dir), pdd_version))
}

/// A node of the dump's wireframe: its box and what it says (`text`, else its
/// `content-desc`), drawn inside the box.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WireNode {
    pub bounds: Bounds,
    pub text: String,
}

/// The SVG overlay of one step, ready for its template (`templates/viewer/overlay.html`):
/// the `viewBox` is the dump's screen; the wireframe (boxes and their text) when asked,
/// then the findings, then the taps numbered in order.
#[derive(Clone, Debug)]
pub struct Overlay {
    /// `overlay`, plus `over` (on a screenshot) or `solo` (on its own) in a page.
    pub class: &'static str,
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    pub wireframe: bool,
    pub wire: Vec<WireBox>,
    pub shapes: Vec<ShapeBox>,
    pub taps: Vec<TapDot>,
}

/// A wireframe box with its text fitted inside.
#[derive(Clone, Debug)]
pub struct WireBox {
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    pub text: String,
    pub tx: i32,
    pub ty: i32,
    pub size: i32,
}

/// A finding's box.
#[derive(Clone, Debug)]
pub struct ShapeBox {
    pub kind: &'static str,
    pub selected: bool,
    pub available: bool,
    pub x: i32,
    pub y: i32,
    pub w: i32,
    pub h: i32,
    pub fill: &'static str,
    pub stroke: &'static str,
    pub width: i32,
    pub dash: &'static str,
    pub label: String,
    /// The total's text (drawn in the box above the submit control).
    pub total: Option<(i32, i32, i32)>,
}

/// A tap (or a swipe) drawn as a numbered dot.
#[derive(Clone, Debug)]
pub struct TapDot {
    pub n: usize,
    pub x: i32,
    pub y: i32,
    pub to: Option<(i32, i32)>,
    pub r: i32,
    pub color: &'static str,
    pub sw: i32,
    pub unit: i32,
    pub detail: String,
    pub ty: i32,
    pub size: i32,
}

fn stroke_of(s: &Shape) -> (&'static str, &'static str, &'static str) {
    // (stroke, fill, dash)
    match s.kind {
        "option" if !s.available => ("#888888", "rgba(136,136,136,0.25)", "12 8"),
        "option" if s.selected => ("#16a34a", "rgba(22,163,74,0.30)", ""),
        "option" => ("#2563eb", "rgba(37,99,235,0.08)", ""),
        "submit" => ("#dc2626", "rgba(220,38,38,0.15)", ""),
        "total" => ("#dc2626", "rgba(255,255,255,0.80)", ""),
        _ => ("#f59e0b", "rgba(245,158,11,0.10)", ""),
    }
}

/// The overlay of one step (`None` without a readable dump).
pub fn overlay(step: &StepView, wireframe: bool) -> Option<Overlay> {
    let Reading::Screen {
        screen,
        shapes,
        wire,
        ..
    } = &step.reading
    else {
        return None;
    };
    let (w, h) = (screen.width().max(1), screen.height().max(1));
    let unit = (w.min(h) / 100).max(2);
    let wire = if wireframe {
        wire.iter()
            .map(|n| {
                let b = n.bounds;
                // One line of text fitted to the box's height (and roughly its width).
                let chars = n.text.chars().count().max(1) as i32;
                let size = (b.height() * 3 / 5)
                    .min(b.width() * 2 / chars.max(2))
                    .clamp(0, unit * 4);
                WireBox {
                    x: b.left,
                    y: b.top,
                    w: b.width(),
                    h: b.height(),
                    text: if size >= unit {
                        n.text.clone()
                    } else {
                        String::new()
                    },
                    tx: b.left + unit / 2,
                    ty: b.top + (b.height() + size) / 2,
                    size,
                }
            })
            .collect()
    } else {
        Vec::new()
    };
    let shapes = shapes
        .iter()
        .map(|s| {
            let (stroke, fill, dash) = stroke_of(s);
            let b = s.bounds;
            ShapeBox {
                kind: s.kind,
                selected: s.selected,
                available: s.available,
                x: b.left,
                y: b.top,
                w: b.width(),
                h: b.height(),
                fill,
                stroke,
                width: if s.kind == "submit" {
                    unit
                } else {
                    unit / 2 + 1
                },
                dash,
                label: s.label.clone(),
                total: (s.kind == "total").then(|| {
                    (
                        b.left + unit,
                        b.bottom - unit,
                        (b.height() * 2 / 3).max(unit * 3),
                    )
                }),
            }
        })
        .collect();
    let taps = step
        .taps
        .iter()
        .enumerate()
        .map(|(i, t)| TapDot {
            n: i + 1,
            x: t.at[0],
            y: t.at[1],
            to: t.to.map(|[x, y]| (x, y)),
            r: unit * 3,
            color: if t.submit { "#dc2626" } else { "#db2777" },
            sw: unit / 2 + 1,
            unit,
            detail: t.detail.clone(),
            ty: t.at[1] + unit,
            size: unit * 3,
        })
        .collect();
    Some(Overlay {
        class: "overlay",
        x: screen.left,
        y: screen.top,
        w,
        h,
        wireframe,
        wire,
        shapes,
        taps,
    })
}

/// The overlay alone, as SVG.
#[derive(askama::Template)]
#[template(path = "viewer/overlay_only.html")]
struct OverlaySvg<'a> {
    o: &'a Overlay,
}

/// The SVG overlay of one step (its `viewBox` is the dump's screen): the wireframe
/// when `wireframe`, then the findings, then the taps numbered in order.
pub fn overlay_svg(step: &StepView, wireframe: bool) -> String {
    use askama::Template as _;
    overlay(step, wireframe)
        .and_then(|o| OverlaySvg { o: &o }.render().ok())
        .unwrap_or_default()
}

/// The viewer's stylesheet (served as `/viewer.css`: the console's Content-Security-Policy
/// allows no inline style).
pub const CSS: &str = "\
.step{border-top:1px solid #ddd;padding:.5em 0}\
.step-body{display:flex;gap:1em;align-items:flex-start;flex-wrap:wrap}\
.shot{position:relative;width:320px;flex:none;background:#f3f4f6}\
.shot-img{display:block;width:100%;height:auto}\
.overlay{display:block;width:100%;height:auto}\
.overlay.over{position:absolute;left:0;top:0;width:100%;height:100%}\
.reading{flex:1;min-width:280px}\
.reading pre{white-space:pre-wrap;word-break:break-all;font-size:12px;max-height:40em;overflow:auto;background:#fafafa}\
.trace table{border-collapse:collapse;font-size:12px}\
.trace td,.trace th{border:1px solid #ddd;padding:2px 6px;text-align:left}\
.money-step{color:#b00;font-weight:bold}\
.lg-option{color:#2563eb}.lg-selected{color:#16a34a}.lg-unavailable{color:#888}\
.lg-submit{color:#dc2626}.lg-other{color:#f59e0b}.lg-tap{color:#db2777}\
";

/// One step as the page shows it.
#[derive(Clone, Debug)]
pub struct StepBlock<'a> {
    pub n: usize,
    pub s: &'a StepView,
    /// A money step ([`crate::progress::MONEY_STEPS`]): its screenshot is the task's own
    /// evidence.
    pub money: bool,
    pub shot_url: Option<String>,
    pub dump_url: Option<String>,
    pub overlay: Option<Overlay>,
}

/// A row of the action trace.
#[derive(Clone, Debug)]
pub struct TraceRow<'a> {
    pub n: usize,
    pub r: &'a TraceRecord,
    pub file_url: Option<String>,
}

/// A file of the attempt.
#[derive(Clone, Debug)]
pub struct FileRow<'a> {
    pub e: &'a ManifestEntry,
    pub url: String,
    pub sha: &'a str,
}

/// The page body of one attempt, ready for `templates/viewer/body.html`.
#[derive(Clone, Debug)]
pub struct ViewerBody<'a> {
    pub pdd_version: &'a str,
    pub steps: Vec<StepBlock<'a>>,
    pub trace: Vec<TraceRow<'a>>,
    pub files: Vec<FileRow<'a>>,
}

impl<'a> ViewerBody<'a> {
    /// `file_url` gives the URL of a listed file.
    pub fn new(view: &'a AttemptView, file_url: &dyn Fn(&str) -> String) -> Self {
        ViewerBody {
            pdd_version: view.pdd_version.as_deref().unwrap_or("?"),
            steps: view
                .steps
                .iter()
                .enumerate()
                .map(|(i, s)| StepBlock {
                    n: i + 1,
                    money: crate::progress::is_money_step(&s.step),
                    shot_url: s.screenshot.as_deref().map(file_url),
                    dump_url: s.dump_file.as_deref().map(file_url),
                    overlay: overlay(s, s.screenshot.is_none()).map(|mut o| {
                        o.class = if s.screenshot.is_some() {
                            "overlay over"
                        } else {
                            "overlay solo"
                        };
                        o
                    }),
                    s,
                })
                .collect(),
            trace: view
                .trace
                .iter()
                .enumerate()
                .map(|(i, r)| TraceRow {
                    n: i + 1,
                    r,
                    file_url: r.file.as_deref().map(file_url),
                })
                .collect(),
            files: view
                .files
                .iter()
                .map(|e| FileRow {
                    e,
                    url: file_url(&e.file),
                    sha: e.sha256.get(..12).unwrap_or(&e.sha256),
                })
                .collect(),
        }
    }
}

/// The body alone (tests; the console includes `viewer/body.html` in its page).
#[derive(askama::Template)]
#[template(path = "viewer/body_only.html")]
struct BodyOnly<'a> {
    v: ViewerBody<'a>,
}

/// The page body of one attempt (HTML). `file_url` gives the URL of a listed file.
pub fn render(view: &AttemptView, file_url: &dyn Fn(&str) -> String) -> String {
    use askama::Template as _;
    BodyOnly {
        v: ViewerBody::new(view, file_url),
    }
    .render()
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHEET: &str = include_str!("../../fixtures/screens/sku_sheet_text_two_dims.xml");
    const CONFIRM: &str = include_str!("../../fixtures/screens/confirm_order.xml");

    fn entry(file: &str, step: &str) -> ManifestEntry {
        ManifestEntry {
            seq: None,
            action: None,
            id: format!("att-{}", &file[..2]),
            file: file.into(),
            sha256: "ab".repeat(32),
            step: step.into(),
            taken_at: "2026-12-02T03:00:00Z".into(),
        }
    }

    fn rec(kind: &str, detail: &str, at: Option<[i32; 2]>, file: Option<&str>) -> TraceRecord {
        TraceRecord {
            kind: kind.into(),
            step: Some("select_options".into()),
            detail: detail.into(),
            at,
            to: None,
            file: file.map(str::to_string),
        }
    }

    /// An attempt folder like the driver writes: the sheet dump, a tap on L, the
    /// 确认订单 dump, the submit tap, and a failure screenshot taken after it.
    fn folder() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("01-select_options.xml"), SHEET).unwrap();
        std::fs::write(d.join("02-confirm.xml"), CONFIRM).unwrap();
        std::fs::write(d.join("03-failure-confirm.png"), b"\x89PNG\r\n\x1a\nfake").unwrap();
        let manifest = vec![
            entry("01-select_options.xml", "select_options"),
            entry("02-confirm.xml", "confirm"),
            entry("03-failure-confirm.png", "failure-confirm"),
        ];
        std::fs::write(
            d.join("manifest.json"),
            serde_json::to_vec(&manifest).unwrap(),
        )
        .unwrap();
        let trace = vec![
            rec("observe", "sku_sheet", None, Some("01-select_options.xml")),
            rec("tap", "L @328,1472", Some([328, 1472]), None),
            rec("observe", "confirm_order", None, Some("02-confirm.xml")),
            rec(
                "tap",
                "提交订单 @707,2283 (submit)",
                Some([707, 2283]),
                None,
            ),
            rec(
                "screenshot",
                "failure",
                None,
                Some("03-failure-confirm.png"),
            ),
        ];
        std::fs::write(d.join(TRACE_SIDECAR), serde_json::to_vec(&trace).unwrap()).unwrap();
        std::fs::write(d.join(DEVICE_SIDECAR), br#"{"pdd_version": "7.36.0"}"#).unwrap();
        dir
    }

    #[test]
    fn the_overlay_draws_the_options_where_the_dump_has_them_and_the_tap_point() {
        let dir = folder();
        let view = load(dir.path()).unwrap();
        assert_eq!(view.pdd_version.as_deref(), Some("7.36.0"));
        assert_eq!(view.steps.len(), 3, "two dumps and a later screenshot");
        let sheet = &view.steps[0];
        let Reading::Screen { kind, screen, .. } = &sheet.reading else {
            panic!("{:?}", sheet.reading);
        };
        assert_eq!(kind, "sku_sheet");
        let svg = overlay_svg(sheet, true);
        assert!(
            svg.contains(&format!(
                r#"viewBox="{} {} {} {}""#,
                screen.left,
                screen.top,
                screen.width(),
                screen.height()
            )),
            "{svg}"
        );
        // 雾霾蓝 (selected) at [195,1222][369,1309], L (selected) at [279,1429][377,1516],
        // 燕麦色（已售罄） unavailable.
        assert!(
            svg.contains(r#"<rect data-kind="option" data-selected="true" data-available="true" x="195" y="1222" width="174" height="87""#),
            "{svg}"
        );
        assert!(svg.contains(r#"<rect data-kind="option" data-selected="true" data-available="true" x="279" y="1429" width="98" height="87""#));
        assert!(svg.contains(r#"data-kind="option" data-selected="false" data-available="false""#));
        assert!(svg.contains("<title>颜色: 雾霾蓝</title>"));
        // The submit control and the total above it; the tap on L, numbered.
        assert!(svg.contains(r#"<rect data-kind="submit""#));
        assert!(svg.contains("合计 ¥47.20"), "{svg}");
        assert!(
            svg.contains(r#"<circle data-kind="tap" data-n="1" cx="328" cy="1472""#),
            "{svg}"
        );
        // The wireframe only without a screenshot.
        assert!(svg.contains(r#"class="wire""#));
        assert!(!overlay_svg(sheet, false).contains(r#"class="wire""#));
        // 确认订单: the submit tap is drawn as the submit.
        let confirm = &view.steps[1];
        assert_eq!(confirm.taps.len(), 1);
        assert!(confirm.taps[0].submit);
        assert!(overlay_svg(confirm, true).contains(r#"cx="707" cy="2283""#));
        // The screenshot came after a tap: not drawn over the 确认订单 dump.
        assert!(confirm.screenshot.is_none());
        assert!(matches!(view.steps[2].reading, Reading::NoDump));
        assert_eq!(
            view.steps[2].screenshot.as_deref(),
            Some("03-failure-confirm.png")
        );
    }

    #[test]
    fn a_screenshot_of_the_same_screen_carries_the_overlay() {
        let trace = vec![
            rec("observe", "sku_sheet", None, Some("01-select_options.xml")),
            rec("screenshot", "", None, Some("02-select_options.png")),
            rec("tap", "L @328,1472", Some([328, 1472]), None),
        ];
        let read =
            |name: &str| (name == "01-select_options.xml").then(|| SHEET.as_bytes().to_vec());
        let view = build(
            vec![
                entry("01-select_options.xml", "select_options"),
                entry("02-select_options.png", "select_options"),
            ],
            &read,
            trace,
            None,
        );
        assert_eq!(view.steps.len(), 1);
        assert_eq!(
            view.steps[0].screenshot.as_deref(),
            Some("02-select_options.png")
        );
        // Taps after the screenshot still belong to the dump they were chosen on.
        assert_eq!(view.steps[0].taps.len(), 1);
        // Without a trace (an older attempt): the next file counts as the same screen.
        let view = build(
            vec![
                entry("01-select_options.xml", "select_options"),
                entry("02-select_options.png", "select_options"),
            ],
            &read,
            Vec::new(),
            None,
        );
        assert_eq!(view.steps.len(), 1);
        assert!(view.steps[0].taps.is_empty());
        let html = render(&view, &|f| format!("/artifacts/a/{f}"));
        assert!(html.contains(r#"<img class="shot-img" src="/artifacts/a/02-select_options.png""#));
        assert!(html.contains("no trace.json"));
    }

    #[test]
    fn the_page_escapes_what_the_dump_holds_and_lists_the_trace() {
        let dir = folder();
        let hostile = SHEET.replacen(
            "text=\"L\"",
            "text=\"&lt;script&gt;alert(1)&lt;/script&gt;\"",
            1,
        );
        std::fs::write(dir.path().join("01-select_options.xml"), hostile).unwrap();
        let view = load(dir.path()).unwrap();
        let html = render(&view, &|f| format!("/artifacts/x/{f}"));
        assert!(!html.contains("<script>"), "nothing from a dump is markup");
        // Escaped once, by the template (askama writes numeric entities).
        assert!(html.contains("&#60;script&#62;"));
        assert!(html.contains(r#"<b class="screen-kind">sku_sheet</b>"#));
        assert!(html.contains(r#"<details class="dump">"#));
        assert!(html.contains("<td>提交订单 @707,2283 (submit)</td>"));
        assert!(html.contains(r#"<a href="/artifacts/x/03-failure-confirm.png">"#));
    }

    #[test]
    fn only_listed_names_are_files_and_types_follow_the_extension() {
        let m = vec![entry("01-a.xml", "a"), entry("02-a.png", "a")];
        assert!(listed_file(&m, "01-a.xml"));
        assert!(listed_file(&m, "manifest.json"));
        assert!(listed_file(&m, TRACE_SIDECAR));
        for bad in [
            "../01-a.xml",
            "01-a.xml/..",
            "/etc/passwd",
            "..",
            "",
            "03-b.xml",
        ] {
            assert!(!listed_file(&m, bad), "{bad}");
        }
        assert_eq!(content_type("02-a.png"), "image/png");
        assert_eq!(content_type("01-a.xml"), "application/xml; charset=utf-8");
        assert_eq!(content_type("x.bin"), "application/octet-stream");
        // An unparsable or missing dump is a reading, not an error.
        let read =
            |_: &str| Some(b"ERROR: null root node returned by UiTestAutomationBridge.".to_vec());
        let v = build(vec![entry("01-a.xml", "a")], &read, Vec::new(), None);
        assert!(matches!(v.steps[0].reading, Reading::Unusable { .. }));
        let v = build(vec![entry("01-a.xml", "a")], &|_| None, Vec::new(), None);
        assert!(matches!(v.steps[0].reading, Reading::Missing(_)));
        assert!(load(Path::new("/nonexistent-attempt")).is_err());
    }
}
