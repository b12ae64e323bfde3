//! `diagnose-bundle`: one `.tar.gz` an operator can send — the
//! redacted export of an attempt (module `export`), `version.txt` (the binary's version,
//! the PDD version the attempt recorded), `config.toml` without the token, the console
//! password and the webhook URLs, and the last lines of the log file, masked like the
//! dumps. Every text file is also scrubbed of the secrets given (the token, the
//! password) whatever it holds.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::export::{export, ExportError, ExportOptions};
use super::redact::Masker;
use crate::artifacts::{DEVICE_SIDECAR, MANIFEST};
use crate::logfile::LOG_FILE;

/// Log lines kept.
pub const LOG_LINES: usize = 500;

/// What goes into a bundle.
#[derive(Clone, Debug, Default)]
pub struct BundleInput {
    /// The attempt folder exported (`None`: no attempt, the rest only).
    pub attempt_dir: Option<PathBuf>,
    /// The config file's text, if there is one.
    pub config_text: Option<String>,
    /// Where the log files are.
    pub log_dir: Option<PathBuf>,
    /// Strings that must not appear anywhere (token, console password).
    pub secrets: Vec<String>,
    /// `cmautobuy-client 0.1.0`.
    pub binary_version: String,
}

/// What a bundle holds.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BundleSummary {
    /// Names inside the archive, in order.
    pub files: Vec<String>,
    /// Why the attempt is not in it (no attempt, not recorded for replays, …).
    pub attempt_note: Option<String>,
    pub log_lines: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("cannot write the bundle {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Export(#[from] ExportError),
}

/// The newest attempt folder (by its manifest's modification time) under the artifact
/// roots, `task` limiting it to one task's attempts.
pub fn newest_attempt(roots: &[PathBuf], task: Option<&str>) -> Option<PathBuf> {
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for root in roots {
        let tasks: Vec<PathBuf> = match task {
            Some(t) => vec![root.join(crate::artifacts::safe_component(t))],
            None => std::fs::read_dir(root)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .collect(),
        };
        for t in tasks {
            for a in std::fs::read_dir(&t).into_iter().flatten().flatten() {
                let m = a.path().join(MANIFEST);
                let Ok(time) = std::fs::metadata(&m).and_then(|m| m.modified()) else {
                    continue;
                };
                if best.as_ref().is_none_or(|(b, _)| time > *b) {
                    best = Some((time, a.path()));
                }
            }
        }
    }
    best.map(|(_, p)| p)
}

/// The config file without its secrets: `token`, `console_password` and every key
/// naming a token, password or secret removed, webhook URLs removed; the rest masked
/// like the dumps (`expected_address`).
pub fn scrub_config(text: &str, masker: &mut Masker) -> String {
    let header = "# config.toml as diagnose-bundle saw it: the token, the console password, \
                  webhook URLs and any other secret were removed; addresses and phone numbers masked.\n";
    let Ok(mut value) = text.parse::<toml::Table>() else {
        return format!("{header}# (the config file is not valid TOML; its content is left out)\n");
    };
    fn scrub(t: &mut toml::Table, masker: &mut Masker) {
        let keys: Vec<String> = t.keys().cloned().collect();
        for k in keys {
            let lower = k.to_ascii_lowercase();
            if lower.contains("token")
                || lower.contains("password")
                || lower.contains("secret")
                || lower == "url" && t.get(&k).is_some_and(|v| v.is_str())
            {
                t.remove(&k);
                continue;
            }
            match t.get_mut(&k) {
                Some(toml::Value::Table(inner)) => scrub(inner, masker),
                Some(toml::Value::Array(items)) => {
                    for i in items.iter_mut() {
                        match i {
                            toml::Value::Table(inner) => scrub(inner, masker),
                            toml::Value::String(s) if lower == "expected_address" => {
                                *s = masker.mask_address_part(s)
                            }
                            toml::Value::String(s) => *s = masker.mask_text(s),
                            _ => {}
                        }
                    }
                }
                Some(toml::Value::String(s)) => *s = masker.mask_text(s),
                _ => {}
            }
        }
    }
    scrub(&mut value, masker);
    let body = toml::to_string(&value).unwrap_or_default();
    format!("{header}{body}")
}

/// The last `n` lines of the log (the current file, then its rotations for the rest).
pub fn last_log_lines(dir: &Path, n: usize) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for i in 0..10 {
        let name = if i == 0 {
            LOG_FILE.to_string()
        } else {
            format!("{LOG_FILE}.{i}")
        };
        let Ok(bytes) = std::fs::read(dir.join(&name)) else {
            if i == 0 {
                continue;
            }
            break;
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut older: Vec<String> = text.lines().map(str::to_string).collect();
        older.append(&mut lines);
        lines = older;
        if lines.len() >= n {
            break;
        }
    }
    let skip = lines.len().saturating_sub(n);
    lines.split_off(skip)
}

/// `text` without `secrets` and without anything else this process knows as a secret
/// ([`crate::secret::scrub`]: the token, console password and webhook keys loaded from
/// the configuration, the tokens saved in the stores), in every form an echo gives them
/// (percent-encoded, JSON-escaped, …).
fn scrub_secrets(text: &str, secrets: &[String]) -> String {
    for s in secrets {
        crate::secret::register(s);
    }
    crate::secret::scrub(text).into_owned()
}

/// Writes the bundle to `out` (a `.tar.gz`, mode `0600` on Unix). The staging folder
/// beside it is removed whatever happens.
pub fn write_bundle(input: &BundleInput, out: &Path) -> Result<BundleSummary, BundleError> {
    let staging = tempdir_beside(out).map_err(|source| BundleError::Write {
        path: out.to_path_buf(),
        source,
    })?;
    let r = write_staged(input, out, &staging);
    let _ = std::fs::remove_dir_all(&staging);
    r
}

fn write_staged(
    input: &BundleInput,
    out: &Path,
    staging: &Path,
) -> Result<BundleSummary, BundleError> {
    let werr = |source: std::io::Error| BundleError::Write {
        path: out.to_path_buf(),
        source,
    };
    let mut masker = Masker::new();
    let mut summary = BundleSummary::default();
    let mut files: Vec<(String, Vec<u8>)> = Vec::new();
    // The attempt.
    let mut pdd_version = None;
    match &input.attempt_dir {
        Some(dir) => {
            pdd_version = std::fs::read(dir.join(DEVICE_SIDECAR))
                .ok()
                .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .and_then(|v| v["pdd_version"].as_str().map(str::to_string));
            let replay = staging.join("replay");
            match export(dir, &replay, ExportOptions::default(), &mut masker) {
                Ok(_) => {
                    let mut names: Vec<String> = std::fs::read_dir(&replay)
                        .map_err(werr)?
                        .flatten()
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect();
                    names.sort();
                    for n in names {
                        let bytes = std::fs::read(replay.join(&n)).map_err(werr)?;
                        files.push((format!("replay/{n}"), bytes));
                    }
                }
                Err(e) if e.is_usage() => summary.attempt_note = Some(e.to_string()),
                Err(e) => return Err(e.into()),
            }
        }
        None => summary.attempt_note = Some("no attempt folder found".into()),
    }
    // version.txt
    let mut version = format!(
        "{}\npdd_version: {}\n",
        input.binary_version,
        pdd_version.as_deref().unwrap_or("unknown")
    );
    if let Some(dir) = &input.attempt_dir {
        let parts: Vec<String> = dir
            .iter()
            .rev()
            .take(2)
            .map(|c| c.to_string_lossy().into_owned())
            .collect();
        if let [attempt, task] = parts.as_slice() {
            version.push_str(&format!("task: {task}\nattempt: {attempt}\n"));
        }
    }
    if let Some(note) = &summary.attempt_note {
        version.push_str(&format!("attempt not exported: {note}\n"));
    }
    files.push(("version.txt".into(), version.into_bytes()));
    // config.toml
    let config = match &input.config_text {
        Some(t) => scrub_config(t, &mut masker),
        None => "# no config file\n".into(),
    };
    files.push(("config.toml".into(), config.into_bytes()));
    // The log.
    if let Some(dir) = &input.log_dir {
        let lines = last_log_lines(dir, LOG_LINES);
        if !lines.is_empty() {
            summary.log_lines = lines.len();
            let mut text = String::new();
            for l in lines {
                text.push_str(&masker.mask_text(&l));
                text.push('\n');
            }
            files.push(("log.txt".into(), text.into_bytes()));
        }
    }
    // Secrets out of every text file, whatever it holds.
    for (name, bytes) in files.iter_mut() {
        if !name.ends_with(".png") {
            let text = String::from_utf8_lossy(bytes);
            *bytes = scrub_secrets(&text, &input.secrets).into_bytes();
        }
    }
    // The archive, written beside and renamed (no half bundle under the name).
    let tmp = out.with_extension("partial");
    {
        let _ = std::fs::remove_file(&tmp);
        crate::file_modes::create_file(&tmp).map_err(werr)?;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&tmp)
            .map_err(werr)?;
        let gz = flate2::write::GzEncoder::new(f, flate2::Compression::default());
        let mut tar = tar::Builder::new(gz);
        let mtime = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        for (name, bytes) in &files {
            let mut h = tar::Header::new_gnu();
            h.set_size(bytes.len() as u64);
            h.set_mode(0o600);
            h.set_mtime(mtime);
            h.set_cksum();
            tar.append_data(&mut h, format!("diagnose/{name}"), bytes.as_slice())
                .map_err(werr)?;
            summary.files.push(name.clone());
        }
        let gz = tar.into_inner().map_err(werr)?;
        let mut f = gz.finish().map_err(werr)?;
        f.flush().map_err(werr)?;
        f.sync_all().map_err(werr)?;
    }
    std::fs::rename(&tmp, out).map_err(werr)?;
    Ok(summary)
}

/// A fresh staging folder beside `out` (same disk; removed after).
fn tempdir_beside(out: &Path) -> std::io::Result<PathBuf> {
    let parent = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    for i in 0..100u32 {
        let p = parent.join(format!(".diagnose-staging-{}-{i}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other("no staging folder"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::{ActionEntry, AttemptArtifacts, TapTarget};
    use std::io::Read;

    const SHEET: &str = r#"<hierarchy rotation="0"><node text="" package="com.xunmeng.pinduoduo" bounds="[0,0][1080,2400]"><node text="" clickable="true" package="com.xunmeng.pinduoduo" bounds="[0,300][1080,470]"><node text="王小明 13912345678" package="com.xunmeng.pinduoduo" bounds="[0,300][1080,360]"/><node text="浙江省杭州市西湖区文三路90号" package="com.xunmeng.pinduoduo" bounds="[0,370][1080,430]"/></node><node text="订单编号：241130-012345678901234" package="com.xunmeng.pinduoduo" bounds="[0,1000][1080,1100]"/><node text="发起拼单" clickable="true" package="com.xunmeng.pinduoduo" bounds="[600,2200][1080,2350]"/></node><node package="com.android.systemui" bounds="[0,0][1080,300]"><node text="验证码 556677" package="com.android.systemui" bounds="[0,0][1080,300]"/></node></hierarchy>"#;

    fn untar(path: &Path) -> Vec<(String, String)> {
        let f = std::fs::File::open(path).unwrap();
        let mut a = tar::Archive::new(flate2::read::GzDecoder::new(f));
        a.entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let name = e.path().unwrap().to_string_lossy().into_owned();
                let mut s = String::new();
                e.read_to_string(&mut s).unwrap();
                (name, s)
            })
            .collect()
    }

    #[test]
    fn a_bundle_holds_no_token_password_phone_address_or_order_number() {
        let root = tempfile::tempdir().unwrap();
        let mut a =
            AttemptArtifacts::create(&root.path().join("artifacts"), "T-1", "att-1").unwrap();
        let now = chrono::Utc::now();
        let mut open = ActionEntry::new("open_url", Some("open_goods"));
        open.url = Some("pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=1".into());
        open.result = Some("sent".into());
        a.record(open);
        a.save("open_goods", "xml", SHEET.as_bytes(), now);
        let mut tap = ActionEntry::new("tap", Some("open_sku_sheet"));
        tap.at = Some([840, 2275]);
        tap.target = Some(Some(TapTarget {
            text: "王小明 13912345678".into(),
            bounds: [0, 300, 1080, 360],
            ..TapTarget::default()
        }));
        tap.result = Some("sent".into());
        a.record(tap);
        a.save("open_sku_sheet", "xml", SHEET.as_bytes(), now);
        a.write_device(Some("7.36.0"));
        let dir = a.dir().to_path_buf();
        let logs = root.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let mut log = String::new();
        for i in 0..700 {
            log.push_str(&format!(
                "line {i} order 241130-012345678901234 phone 13912345678 token tok-SECRET-123\n"
            ));
        }
        std::fs::write(logs.join(LOG_FILE), log).unwrap();
        let config = "admin_url = \"https://admin.example\"\ntoken = \"tok-SECRET-123\"\nconsole_password = \"hunter2hunter2\"\nexpected_address = [\"王小明\", \"13912345678\", \"浙江省杭州市西湖区文三路90号\"]\n[[webhook]]\nkind = \"wecom\"\nurl = \"https://qyapi.example/send?key=abc\"\n";
        let out = root.path().join("bundle.tar.gz");
        let s = write_bundle(
            &BundleInput {
                attempt_dir: Some(dir),
                config_text: Some(config.into()),
                log_dir: Some(logs),
                secrets: vec!["tok-SECRET-123".into(), "hunter2hunter2".into()],
                binary_version: "cmautobuy-client 0.1.0".into(),
            },
            &out,
        )
        .unwrap();
        assert_eq!(s.log_lines, LOG_LINES);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&out).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{mode:o}");
        }
        // Nothing left beside it but the bundle, the attempt and the logs.
        let mut left: Vec<String> = std::fs::read_dir(root.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["artifacts", "bundle.tar.gz", "logs"]);
        assert!(s.attempt_note.is_none(), "{s:?}");
        let files = untar(&out);
        let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
        for n in [
            "diagnose/replay/scenario.json",
            "diagnose/replay/s01.xml",
            "diagnose/version.txt",
            "diagnose/config.toml",
            "diagnose/log.txt",
        ] {
            assert!(names.contains(&n), "{n} in {names:?}");
        }
        for (name, text) in &files {
            for gone in [
                "tok-SECRET-123",
                "hunter2hunter2",
                "13912345678",
                "王小明",
                "文三路",
                "012345678901234",
                "556677",
                "qyapi",
                "key=abc",
            ] {
                assert!(!text.contains(gone), "{gone} in {name}:\n{text}");
            }
        }
        let get = |n: &str| files.iter().find(|(x, _)| x == n).unwrap().1.clone();
        assert!(get("diagnose/version.txt").contains("pdd_version: 7.36.0"));
        assert!(get("diagnose/config.toml").contains("admin_url"));
        assert!(get("diagnose/config.toml").contains("removed"));
        assert!(get("diagnose/log.txt").starts_with("line 200 "));
        // The selector was masked like the node.
        assert!(get("diagnose/replay/scenario.json").contains("某甲 10000000001"));
        assert!(get("diagnose/replay/s01.xml").contains("某甲 10000000001"));
    }
}
