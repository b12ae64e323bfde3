//! `replay-export`: an attempt's artifacts as a replay scenario (format v1,
//! `sim-phone/README.md`).
//!
//! The manifest is walked in `seq` order. Each dump becomes a screen (`s01`, `s02`, … a
//! linear chain, nothing merged); the device actions between dump k and dump k+1 lead
//! from screen k to screen k+1: a tap by the node it aimed at (its `text`, else `desc`,
//! else `resource_id`, else `bounds`), BACK as `back`, other keys as `key`, a swipe, a
//! deep link as a per-screen `url` (its distinctive part: the path and query), the
//! shade collapsed; two dumps with nothing sent between them (a stale re-dump, a wait
//! for a heads-up) as `dumped`. Several actions between two dumps (queued in-page taps)
//! pass through in-between screens that show dump k again (`s03_1`, …): the client
//! dumps nothing between them, so each tap matches on the dump it was chosen on. The
//! first deep link is also a global `urls` entry to `s01`. A `dumpsys activity top`
//! after dump k goes to screen k; the submit tap after the irreversible mark carries the
//! `order`. Actions that never reached the phone (a tap the guard refused, a tap another
//! window covered) and what the phone does not see (waits, the mid-task unlock) are left
//! out. A dump that showed only other packages' windows (the notification shade, a
//! system dialog: nothing is left of it after redaction) is left out with the actions
//! that answered it (the shade collapsed, BACK): the replayed phone never shows it, so
//! the client never answers it; the chain goes from the screen before to the one after.
//!
//! Everything goes through one [`Masker`] (module `redact`): dumps, selectors, links,
//! `activity top` texts. Screenshots are left out (the simulated phone renders one from
//! the redacted dump) unless asked for: a screenshot shows what the dump held.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::redact::Masker;
use crate::artifacts::{read_manifest_elements, ActionEntry, ManifestElement, MANIFEST};

/// Options of an export.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExportOptions {
    /// Copy the recorded screenshots (they are not redacted).
    pub keep_screenshots: bool,
}

/// Why an attempt folder cannot be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{0}: no manifest.json (not an attempt folder of the artifacts)")]
    NoManifest(PathBuf),
    #[error("{0}: the manifest has no action entries (recorded before replay support); it cannot be replayed")]
    NoActions(PathBuf),
    #[error("{0}: the manifest lists no dump")]
    NoDumps(PathBuf),
    #[error("{0}: the output folder is not empty")]
    OutNotEmpty(PathBuf),
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ExportError {
    /// A stable code for the problem.
    pub fn code(&self) -> &'static str {
        match self {
            ExportError::NoManifest(_) => "EXPORT_NO_MANIFEST",
            ExportError::NoActions(_) => "EXPORT_NOT_RECORDED",
            ExportError::NoDumps(_) => "EXPORT_NO_DUMPS",
            ExportError::OutNotEmpty(_) => "EXPORT_OUT_NOT_EMPTY",
            ExportError::Read { .. } => "EXPORT_READ",
            ExportError::Write { .. } => "EXPORT_WRITE",
        }
    }

    /// A problem with the input or the output folder (exit 2), not an I/O failure.
    pub fn is_usage(&self) -> bool {
        !matches!(self, ExportError::Read { .. } | ExportError::Write { .. })
    }
}

/// What an export wrote.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExportSummary {
    /// Recorded dumps (screens `s01`…).
    pub dumps: usize,
    /// Screens written, in-between ones included.
    pub screens: usize,
    pub transitions: usize,
    /// Windows of other packages dropped from the dumps.
    pub dropped_windows: usize,
    /// Attribute values masked in the dumps.
    pub masked_values: usize,
    /// Whether an order is placed on the way (a live submit).
    pub order: bool,
    pub screenshots: usize,
    /// Dumps left out: they showed only other packages' windows.
    pub foreign_dumps: usize,
}

/// One screen being written.
struct Screen {
    id: String,
    dump: String,
    screenshot: Option<String>,
    activity_top: Option<String>,
    on: Vec<Value>,
}

/// Exports `attempt_dir` into `out_dir` (created; must be empty or absent).
pub fn export(
    attempt_dir: &Path,
    out_dir: &Path,
    opts: ExportOptions,
    masker: &mut Masker,
) -> Result<ExportSummary, ExportError> {
    if !attempt_dir.join(MANIFEST).is_file() {
        return Err(ExportError::NoManifest(attempt_dir.to_path_buf()));
    }
    let mut elements = read_manifest_elements(attempt_dir)
        .ok_or_else(|| ExportError::NoManifest(attempt_dir.to_path_buf()))?;
    if !elements
        .iter()
        .any(|e| matches!(e, ManifestElement::Action(_)))
        || elements.iter().any(|e| e.seq().is_none())
    {
        return Err(ExportError::NoActions(attempt_dir.to_path_buf()));
    }
    elements.sort_by_key(|e| e.seq());
    let dumps = elements
        .iter()
        .filter(|e| e.artifact().is_some_and(|a| a.file.ends_with(".xml")))
        .count();
    if dumps == 0 {
        return Err(ExportError::NoDumps(attempt_dir.to_path_buf()));
    }
    if out_dir.read_dir().is_ok_and(|mut d| d.next().is_some()) {
        return Err(ExportError::OutNotEmpty(out_dir.to_path_buf()));
    }
    std::fs::create_dir_all(out_dir).map_err(|source| ExportError::Write {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let read = |file: &str| -> Result<Vec<u8>, ExportError> {
        // Manifest names are plain file names; anything else is not read.
        if file.contains(['/', '\\']) || file.starts_with('.') {
            return Err(ExportError::Read {
                path: attempt_dir.join(file),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "not a plain file name",
                ),
            });
        }
        let path = attempt_dir.join(file);
        std::fs::read(&path).map_err(|source| ExportError::Read { path, source })
    };
    let write = |name: &str, bytes: &[u8]| -> Result<(), ExportError> {
        let path = out_dir.join(name);
        std::fs::write(&path, bytes).map_err(|source| ExportError::Write { path, source })
    };
    let width = dumps.to_string().len().max(2);
    let mut summary = ExportSummary {
        dumps,
        ..ExportSummary::default()
    };
    let mut screens: Vec<Screen> = Vec::new();
    let mut pending: Vec<&ActionEntry> = Vec::new();
    let mut first_url: Option<String> = None;
    let mut marked: Option<&ActionEntry> = None;
    let mut dump_no = 0usize;
    // Since a dump that showed only other packages' windows: the actions that answered
    // it start at this index of `pending`.
    let mut answered_from: Option<usize> = None;
    for e in &elements {
        match e {
            ManifestElement::Artifact(a) => match a.action.as_deref() {
                Some("dump") => {
                    dump_no += 1;
                    let id = format!("s{dump_no:0width$}");
                    let file = format!("{id}.xml");
                    let xml = String::from_utf8_lossy(&read(&a.file)?).into_owned();
                    let r = masker.redact_dump(dump_document(&xml));
                    summary.dropped_windows += r.dropped_windows.len();
                    summary.masked_values += r.masked_values;
                    if r.kept_windows == 0 {
                        // Only other packages' windows (the shade, a system dialog):
                        // nothing of it is replayed, nor what answered it.
                        dump_no -= 1;
                        summary.foreign_dumps += 1;
                        answered_from.get_or_insert(pending.len());
                        continue;
                    }
                    if let Some(n) = answered_from.take() {
                        pending.truncate(n);
                    }
                    write(&file, r.xml.as_bytes())?;
                    // After a `dumped` link the replay is on this screen when the
                    // previous screen's `activity top` and screenshot were taken.
                    let mut carried = (None, None);
                    if let Some(prev) = screens.len().checked_sub(1) {
                        let actions = std::mem::take(&mut pending);
                        if actions.is_empty() {
                            carried = (
                                screens[prev].activity_top.clone(),
                                screens[prev].screenshot.clone(),
                            );
                        }
                        link(
                            &mut screens,
                            prev,
                            &actions,
                            &id,
                            masker,
                            &mut marked,
                            &mut summary,
                        );
                    } else {
                        // Before the first dump: the deep link that opened it.
                        for p in std::mem::take(&mut pending) {
                            if let (Some(url), None) = (&p.url, &first_url) {
                                first_url = Some(distinctive(&masker.mask_text(url)));
                            }
                        }
                    }
                    screens.push(Screen {
                        id,
                        dump: file,
                        screenshot: carried.1,
                        activity_top: carried.0,
                        on: Vec::new(),
                    });
                }
                Some("activity_top") if answered_from.is_none() => {
                    // The screen current when it was read (and the one a `dumped` link
                    // leads to, see above).
                    if let Some(s) = screens.last_mut() {
                        let text = String::from_utf8_lossy(&read(&a.file)?).into_owned();
                        let name = format!("{}.activity-top.txt", s.id);
                        write(&name, masker.mask_text(&text).as_bytes())?;
                        s.activity_top = Some(name);
                    }
                }
                Some("screenshot") if opts.keep_screenshots && answered_from.is_none() => {
                    if let Some(s) = screens.last_mut() {
                        let name = format!("{}.png", s.id);
                        write(&name, &read(&a.file)?)?;
                        s.screenshot = Some(name);
                        summary.screenshots += 1;
                    }
                }
                _ => {}
            },
            ManifestElement::Action(a) => match a.action.as_str() {
                "mark_irreversible" if a.result.as_deref() == Some("marked") => {
                    marked = Some(a);
                }
                "open_url" | "tap" | "swipe" | "key" | "collapse_shade" if a.reached_phone() => {
                    if a.action == "open_url" && first_url.is_none() {
                        if let Some(url) = &a.url {
                            first_url = Some(distinctive(&masker.mask_text(url)));
                        }
                    }
                    pending.push(a);
                }
                _ => {}
            },
        }
    }
    summary.dumps = dump_no;
    if screens.is_empty() {
        return Err(ExportError::NoDumps(attempt_dir.to_path_buf()));
    }
    // The scenario.
    let mut map = Map::new();
    for s in &screens {
        let mut screen = Map::new();
        screen.insert("dump".into(), json!(s.dump));
        if let Some(p) = &s.screenshot {
            screen.insert("screenshot".into(), json!(p));
        }
        if let Some(t) = &s.activity_top {
            screen.insert("activity_top".into(), json!(t));
        }
        if !s.on.is_empty() {
            screen.insert("on".into(), Value::Array(s.on.clone()));
        }
        map.insert(s.id.clone(), Value::Object(screen));
    }
    summary.screens = screens.len();
    let start = screens.first().map(|s| s.id.clone()).unwrap_or_default();
    let mut scenario = json!({"version": 1, "start": start, "screens": map});
    if let Some(url) = first_url {
        scenario["urls"] = json!([{"contains": url, "to": start}]);
    }
    let bytes = serde_json::to_vec_pretty(&scenario).unwrap_or_default();
    write("scenario.json", &bytes)?;
    Ok(summary)
}

/// The transitions from screen `from` to the screen `to` for the actions sent between
/// their dumps (see the module): none → `dumped`; several → in-between screens.
fn link(
    screens: &mut Vec<Screen>,
    from: usize,
    actions: &[&ActionEntry],
    to: &str,
    masker: &mut Masker,
    marked: &mut Option<&ActionEntry>,
    summary: &mut ExportSummary,
) {
    if actions.is_empty() {
        screens[from].on.push(json!({"dumped": true, "to": to}));
        summary.transitions += 1;
        return;
    }
    let base = screens[from].id.clone();
    let dump = screens[from].dump.clone();
    let mut at = from;
    for (i, a) in actions.iter().enumerate() {
        let last = i + 1 == actions.len();
        let next_id = if last {
            to.to_string()
        } else {
            format!("{base}_{}", i + 1)
        };
        let Some(mut t) = trigger(a, masker) else {
            continue;
        };
        t.insert("to".into(), json!(next_id));
        if a.action == "tap" && a.tap_kind.as_deref() == Some("submit") {
            if let Some(m) = marked.take() {
                t.insert(
                    "order".into(),
                    json!({
                        "goods_id": m.goods_id.clone().unwrap_or_default(),
                        "total_cent": m.total_cent.unwrap_or(0),
                        "quantity": m.quantity.unwrap_or(1),
                        "options": m.options.clone().unwrap_or_default(),
                    }),
                );
                summary.order = true;
            }
        }
        screens[at].on.push(Value::Object(t));
        summary.transitions += 1;
        if !last {
            screens.push(Screen {
                id: next_id,
                dump: dump.clone(),
                screenshot: None,
                activity_top: None,
                on: Vec::new(),
            });
            at = screens.len() - 1;
        }
    }
}

/// A recorded action as a transition's trigger (without `to`).
fn trigger(a: &ActionEntry, masker: &mut Masker) -> Option<Map<String, Value>> {
    let mut t = Map::new();
    match a.action.as_str() {
        "tap" => {
            let target = a.target.clone().flatten()?;
            let sel = if !target.text.is_empty() {
                json!({"text": masker.mask_label(&target.text)})
            } else if !target.desc.is_empty() {
                json!({"desc": masker.mask_label(&target.desc)})
            } else if !target.resource_id.is_empty() {
                json!({"resource_id": target.resource_id})
            } else {
                json!({"bounds": target.bounds})
            };
            t.insert("tap".into(), sel);
        }
        "key" => match a.keycode {
            Some(4) | None => {
                t.insert("back".into(), json!(true));
            }
            Some(k) => {
                t.insert("key".into(), json!(k));
            }
        },
        "swipe" => {
            t.insert(
                "swipe".into(),
                json!({"from": a.from.unwrap_or_default(), "to": a.to.unwrap_or_default()}),
            );
        }
        "open_url" => {
            let url = distinctive(&masker.mask_text(a.url.as_deref().unwrap_or_default()));
            t.insert("url".into(), json!({"contains": url}));
        }
        "collapse_shade" => {
            t.insert("collapse_shade".into(), json!(true));
        }
        _ => return None,
    }
    Some(t)
}

/// The dump document of what the phone printed: from `<?xml`/`<hierarchy` to
/// `</hierarchy>` and its line end. uiautomator's own lines around it ("UI hierchary
/// dumped to: /dev/tty") are the shell's, not the dump's: the replayed phone prints them
/// itself.
pub fn dump_document(output: &str) -> &str {
    let Some(h) = output.find("<hierarchy") else {
        return output;
    };
    let start = output[..h].rfind("<?xml").unwrap_or(h);
    let Some(close) = output.rfind("</hierarchy>").filter(|&c| c > h) else {
        return &output[start..];
    };
    let mut end = close + "</hierarchy>".len();
    if output[end..].starts_with("\r\n") {
        end += 2;
    } else if output[end..].starts_with('\n') {
        end += 1;
    }
    &output[start..end]
}

/// A deep link's distinctive part: its path and query, without scheme and host
/// (`pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=1` → `goods.html?goods_id=1`).
pub fn distinctive(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    match rest.split_once('/') {
        Some((_, path)) if !path.is_empty() => path.to_string(),
        _ => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::{AttemptArtifacts, TapTarget};
    use chrono::Utc;

    const GOODS: &str = r#"<hierarchy rotation="0"><node text="" package="com.xunmeng.pinduoduo" bounds="[0,0][1080,2400]"><node text="发起拼单" clickable="true" package="com.xunmeng.pinduoduo" bounds="[600,2200][1080,2350]"/></node></hierarchy>"#;
    const SHEET: &str = r#"<hierarchy rotation="0"><node text="" package="com.xunmeng.pinduoduo" bounds="[0,0][1080,2400]"><node text="张三 138****0000" package="com.xunmeng.pinduoduo" bounds="[0,300][1080,400]"/><node text="黑色" clickable="true" package="com.xunmeng.pinduoduo" bounds="[0,1000][300,1100]"/><node text="白色" clickable="true" package="com.xunmeng.pinduoduo" bounds="[300,1000][600,1100]"/></node></hierarchy>"#;

    fn tap(label: &str, at: [i32; 2], text: &str, bounds: [i32; 4]) -> ActionEntry {
        let mut t = ActionEntry::new("tap", Some("s"));
        t.at = Some(at);
        t.label = Some(label.into());
        t.tap_kind = Some("in_page".into());
        t.target = Some(Some(TapTarget {
            text: text.into(),
            bounds,
            ..TapTarget::default()
        }));
        t.result = Some("sent".into());
        t
    }

    fn record(dir: &Path) -> PathBuf {
        let mut a = AttemptArtifacts::create(dir, "t", "a").unwrap();
        let now = Utc::now();
        let mut open = ActionEntry::new("open_url", Some("open_goods"));
        open.url =
            Some("pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=602938475610".into());
        open.result = Some("sent".into());
        a.record(open);
        a.save("open_goods", "xml", GOODS.as_bytes(), now);
        a.save(
            "check_goods-activity-top",
            "txt",
            b"ACTIVITY com.xunmeng.pinduoduo/.ui.activity.NewPageActivity goods_id=602938475610",
            now,
        );
        a.save("check_goods", "png", b"\x89PNG\r\n\x1a\n", now);
        a.record(tap(
            "发起拼单",
            [840, 2275],
            "发起拼单",
            [600, 2200, 1080, 2350],
        ));
        a.save("open_sku_sheet", "xml", SHEET.as_bytes(), now);
        let mut covered = tap("黑色", [150, 1050], "黑色", [0, 1000, 300, 1100]);
        covered.result = Some("covered".into());
        a.record(covered);
        a.record(ActionEntry::new("wait", None));
        a.save("select_color", "xml", SHEET.as_bytes(), now);
        a.record(tap("黑色", [150, 1050], "黑色", [0, 1000, 300, 1100]));
        a.record(tap("白色", [450, 1050], "白色", [300, 1000, 600, 1100]));
        a.save("select_color", "xml", SHEET.as_bytes(), now);
        a.flush();
        a.dir().to_path_buf()
    }

    #[test]
    fn an_attempt_becomes_a_linear_chain_of_screens() {
        let root = tempfile::tempdir().unwrap();
        let dir = record(root.path());
        let out = root.path().join("out");
        let s = export(&dir, &out, ExportOptions::default(), &mut Masker::new()).unwrap();
        assert_eq!((s.dumps, s.screens, s.transitions), (4, 5, 4), "{s:?}");
        let sc: Value =
            serde_json::from_slice(&std::fs::read(out.join("scenario.json")).unwrap()).unwrap();
        assert_eq!(sc["start"], "s01");
        assert_eq!(
            sc["urls"][0]["contains"],
            "goods.html?goods_id=602938475610"
        );
        assert_eq!(sc["urls"][0]["to"], "s01");
        assert_eq!(sc["screens"]["s01"]["on"][0]["tap"]["text"], "发起拼单");
        assert_eq!(sc["screens"]["s01"]["on"][0]["to"], "s02");
        assert_eq!(sc["screens"]["s01"]["activity_top"], "s01.activity-top.txt");
        assert!(sc["screens"]["s01"].get("screenshot").is_none());
        // The covered tap never reached the phone: the screens are linked by the dump.
        assert_eq!(
            sc["screens"]["s02"]["on"],
            json!([{"dumped": true, "to": "s03"}])
        );
        // Two queued taps: through an in-between screen showing the same dump.
        assert_eq!(sc["screens"]["s03"]["on"][0]["to"], "s03_1");
        assert_eq!(sc["screens"]["s03_1"]["dump"], "s03.xml");
        assert_eq!(sc["screens"]["s03_1"]["on"][0]["tap"]["text"], "白色");
        assert_eq!(sc["screens"]["s03_1"]["on"][0]["to"], "s04");
        let sheet = std::fs::read_to_string(out.join("s02.xml")).unwrap();
        assert!(
            !sheet.contains("张三") && !sheet.contains("138****0000"),
            "{sheet}"
        );
        // The scenario loads in the simulated phone's replay mode.
        cmautobuy_sim_phone::replay::Scenario::load(&out).unwrap();
    }

    #[test]
    fn the_submit_after_the_mark_places_the_order() {
        let root = tempfile::tempdir().unwrap();
        let mut a = AttemptArtifacts::create(root.path(), "t", "live").unwrap();
        let now = Utc::now();
        a.save("confirm", "xml", SHEET.as_bytes(), now);
        let mut mark = ActionEntry::new("mark_irreversible", Some("submit_order"));
        mark.goods_id = Some("737116531267".into());
        mark.total_cent = Some(5900);
        mark.quantity = Some(1);
        mark.options = Some(vec!["黑色".into(), "L".into()]);
        mark.result = Some("marked".into());
        a.record(mark);
        let mut submit = tap("提交订单", [900, 2275], "黑色", [0, 1000, 300, 1100]);
        submit.tap_kind = Some("submit".into());
        a.record(submit);
        a.save("leave_payment", "xml", GOODS.as_bytes(), now);
        a.flush();
        let out = root.path().join("out");
        let s = export(a.dir(), &out, ExportOptions::default(), &mut Masker::new()).unwrap();
        assert!(s.order);
        let sc: Value =
            serde_json::from_slice(&std::fs::read(out.join("scenario.json")).unwrap()).unwrap();
        assert_eq!(
            sc["screens"]["s01"]["on"][0]["order"],
            json!({"goods_id": "737116531267", "total_cent": 5900, "quantity": 1, "options": ["黑色", "L"]})
        );
        cmautobuy_sim_phone::replay::Scenario::load(&out).unwrap();
    }

    #[test]
    fn the_dump_document_is_cut_from_the_shells_lines() {
        let doc = "<?xml version='1.0' ?><hierarchy rotation=\"0\"><node bounds=\"[0,0][1,1]\"/></hierarchy>\n";
        assert_eq!(
            dump_document(&format!("{doc}UI hierchary dumped to: /dev/tty\n")),
            doc
        );
        assert_eq!(dump_document(doc), doc);
        assert_eq!(dump_document("no dump"), "no dump");
    }

    #[test]
    fn refusals_name_the_problem() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("out");
        let e = export(
            root.path(),
            &out,
            ExportOptions::default(),
            &mut Masker::new(),
        )
        .unwrap_err();
        assert_eq!(e.code(), "EXPORT_NO_MANIFEST");
        assert!(e.to_string().contains("no manifest.json"));
        // A manifest from before replay support.
        let old = root.path().join("old");
        std::fs::create_dir_all(&old).unwrap();
        std::fs::write(old.join("manifest.json"), r#"[{"id":"a-01","file":"01-x.xml","sha256":"00","step":"x","taken_at":"2026-01-01T00:00:00Z"}]"#).unwrap();
        let e = export(&old, &out, ExportOptions::default(), &mut Masker::new()).unwrap_err();
        assert_eq!(e.code(), "EXPORT_NOT_RECORDED");
        assert!(e.to_string().contains("recorded before replay support"));
        // A non-empty output folder.
        let dir = record(root.path());
        std::fs::create_dir_all(&out).unwrap();
        std::fs::write(out.join("x"), "x").unwrap();
        let e = export(&dir, &out, ExportOptions::default(), &mut Masker::new()).unwrap_err();
        assert_eq!(e.code(), "EXPORT_OUT_NOT_EMPTY");
        assert!(e.is_usage());
        // Screenshots only when asked.
        let out2 = root.path().join("out2");
        let s = export(
            &dir,
            &out2,
            ExportOptions {
                keep_screenshots: true,
            },
            &mut Masker::new(),
        )
        .unwrap();
        assert_eq!(s.screenshots, 1);
        assert!(out2.join("s01.png").is_file());
    }
}
