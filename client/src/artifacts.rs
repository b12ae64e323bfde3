//! Evidence artifacts of a flow attempt (`decisions.md` §7).
//!
//! Layout: `{root}/{task}/{attempt}/NN-{step}.xml|.png` plus `manifest.json`
//! (`[{"seq", "action", "id", "file", "sha256", "step", "taken_at"}]`, rewritten
//! atomically after every file; also the device actions between the files —
//! [`ActionEntry`], no `file` — so the manifest is the ordered record a replay is
//! exported from). `{task}` and `{attempt}` are the remote task id and the attempt id made safe for
//! a file name ([`safe_component`]): ids come from the network and must never walk out
//! of the artifact root. Failures report the ids and the local reference
//! `{client_id}:artifacts/{task}/{attempt}/`; files never leave the machine.
//!
//! Dumps and screenshots hold personal data (addresses, phone numbers, order numbers):
//! log lines name artifacts by id and hash only, never by content. The token is never
//! written here: nothing in this module sees it.
//!
//! Retention ([`Retention`]): the newest N attempts of every task, an
//! age limit, and a cap on the root's total size; evidence of live orders and
//! `manual_review` outcomes is kept longest (180 days by default) and removed for size
//! only after everything else, oldest first. The running client keeps an
//! [`ArtifactIndex`] (one walk at start, then one attempt per finished task) and sweeps
//! it at start and after each task; [`prune`] is the one-shot form.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One artifact entry of the manifest (a saved file). `seq` and `action` (the
/// manifest is the ordered record of the attempt) are absent in manifests written
/// before them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u32>,
    /// `dump`, `screenshot` or `activity_top`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    pub id: String,
    pub file: String,
    pub sha256: String,
    pub step: String,
    pub taken_at: String,
}

/// The node of the last dump a tap aimed at (`screen::aim`), as recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapTarget {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub desc: String,
    #[serde(default)]
    pub resource_id: String,
    #[serde(default)]
    pub class: String,
    pub bounds: [i32; 4],
}

/// One action entry of the manifest: a device action (or a mark) in the order it
/// happened, without a file (the replay format: `sim-phone/README.md`). Only the fields of its
/// kind are present.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionEntry {
    pub seq: u32,
    /// `open_url`, `tap`, `swipe`, `key`, `collapse_shade`, `unlock`, `wait`,
    /// `mark_irreversible`, `dump_failed`.
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<[i32; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// `in_page`, `changes_screen`, `submit`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tap_kind: Option<String>,
    /// Taps only: `Some(None)` is written as `null` (no node contained the point).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "double_option"
    )]
    pub target: Option<Option<TapTarget>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<[i32; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<[i32; 2]>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keycode: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goods_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cent: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<u32>,
    /// The options ordered, as the page names them (a mark).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// A failed dump's code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `sent`, `refused` (the guard: nothing reached the phone), `covered` (another
    /// package's window: nothing sent), `error` (the device call failed; it may have
    /// reached the phone); a mark: `marked`, `refused`, `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
}

impl ActionEntry {
    /// An entry of kind `action` at `step` (its `seq` is given when recorded).
    pub fn new(action: &str, step: Option<&str>) -> ActionEntry {
        ActionEntry {
            action: action.to_string(),
            step: step.map(str::to_string),
            ..ActionEntry::default()
        }
    }

    /// Whether the action reached the phone (or may have): refused and covered taps did
    /// not.
    pub fn reached_phone(&self) -> bool {
        !matches!(self.result.as_deref(), Some("refused" | "covered"))
    }
}

/// `Option<Option<T>>` with a present `null` kept apart from an absent field.
mod double_option {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer, T: Serialize>(
        v: &Option<Option<T>>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(inner) => inner.serialize(s),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
        d: D,
    ) -> Result<Option<Option<T>>, D::Error> {
        Option::<T>::deserialize(d).map(Some)
    }
}

/// One element of `manifest.json`: a saved file or an action. Artifact entries are told
/// apart by their `file`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ManifestElement {
    Artifact(ManifestEntry),
    Action(Box<ActionEntry>),
}

impl ManifestElement {
    pub fn seq(&self) -> Option<u32> {
        match self {
            ManifestElement::Artifact(a) => a.seq,
            ManifestElement::Action(a) => Some(a.seq),
        }
    }

    pub fn artifact(&self) -> Option<&ManifestEntry> {
        match self {
            ManifestElement::Artifact(a) => Some(a),
            ManifestElement::Action(_) => None,
        }
    }
}

/// The manifest file's name.
pub const MANIFEST: &str = "manifest.json";

/// Parses a manifest (old — artifacts only, no `seq` — or new); `None` when it is not
/// a JSON array. An element that is neither an artifact nor an action is skipped.
pub fn parse_manifest(bytes: &[u8]) -> Option<Vec<ManifestElement>> {
    let raw: Vec<serde_json::Value> = serde_json::from_slice(bytes).ok()?;
    Some(
        raw.into_iter()
            .filter_map(|v| serde_json::from_value(v).ok())
            .collect(),
    )
}

/// Reads `dir/manifest.json`'s elements; `None` when absent or unreadable.
pub fn read_manifest_elements(dir: &Path) -> Option<Vec<ManifestElement>> {
    parse_manifest(&std::fs::read(dir.join(MANIFEST)).ok()?)
}

/// The artifact entries of a manifest, in order (the readers that want files only).
pub fn artifact_entries(elements: &[ManifestElement]) -> Vec<ManifestEntry> {
    elements
        .iter()
        .filter_map(|e| e.artifact().cloned())
        .collect()
}

/// The manifest action of a saved file, by its extension.
fn artifact_action(ext: &str) -> &'static str {
    match ext {
        "xml" => "dump",
        "png" => "screenshot",
        "txt" => "activity_top",
        _ => "file",
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ArtifactError {
    #[error("cannot write artifact {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ArtifactError {
    /// Writing evidence may work again later (disk space freed); it never blocks a flow.
    pub fn is_retryable(&self) -> bool {
        true
    }
}

/// Makes an id from the network safe as one path component: ASCII letters, digits,
/// `-`, `_` and `.` are kept, everything else becomes `_`; a component made only of
/// dots (`.`, `..`) or an empty one is replaced; long ids are cut and suffixed with a
/// hash of the original so two different ids never share a directory by truncation.
pub fn safe_component(id: &str) -> String {
    const MAX: usize = 80;
    let mut s: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut changed = s != id;
    if s.chars().all(|c| c == '.') {
        s = format!("_{}", s.replace('.', "_"));
    }
    // Portable: Windows drops a trailing dot and reserves device
    // names (`CON`, `NUL`, `COM1`, … with any extension) in every directory.
    if s.ends_with('.') {
        s.pop();
        s.push('_');
        changed = true;
    }
    if is_reserved_on_windows(&s) {
        s.insert(0, '_');
        changed = true;
    }
    if s.len() > MAX || (changed && !id.is_empty()) {
        // Sanitising is lossy ("a/b" and "a_b" would collide): keep them apart by a
        // short hash of the original id.
        let h = hex::encode(&Sha256::digest(id.as_bytes())[..4]);
        s.truncate(MAX.min(s.len()));
        s = format!("{s}-{h}");
    }
    s
}

/// Whether `name` is a device name Windows reserves in every directory (`CON`, `PRN`,
/// `AUX`, `NUL`, `COM0`–`COM9`, `LPT0`–`LPT9`, case-insensitive, with or without an
/// extension).
pub fn is_reserved_on_windows(name: &str) -> bool {
    let stem = name
        .split('.')
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase();
    matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL")
        || (stem.len() == 4
            && (stem.starts_with("COM") || stem.starts_with("LPT"))
            && stem.as_bytes()[3].is_ascii_digit())
}

/// The artifacts of one attempt.
#[derive(Debug)]
pub struct AttemptArtifacts {
    dir: PathBuf,
    /// `artifacts/{task}/{attempt}/` as reported in `artifact_ref`.
    rel: String,
    attempt_id: String,
    /// The highest `NN-` file number used.
    seq: u32,
    /// The artifact entries (files), in order.
    entries: Vec<ManifestEntry>,
    /// Every manifest element (artifacts and actions), in order.
    elements: Vec<ManifestElement>,
    /// The last `seq` given (continued from the manifest of a recovered attempt).
    last_seq: u32,
    /// Action entries recorded since the manifest was last written.
    unwritten: bool,
    /// The first write error, kept for the diagnostics; evidence is best effort and a
    /// full disk must not turn a collected price list into a failure.
    pub last_error: Option<String>,
}

impl AttemptArtifacts {
    /// Creates `{root}/{task}/{attempt}/`, or continues it: an attempt reconciled after
    /// a crash or after its phone went away writes into the folder of the attempt that
    /// placed the order, so its earlier files and manifest entries are kept and the
    /// numbering goes on after the highest `NN-` already there (evidence is never
    /// overwritten).
    pub fn create(
        root: &Path,
        task_id: &str,
        attempt_id: &str,
    ) -> Result<AttemptArtifacts, ArtifactError> {
        let task = safe_component(task_id);
        let attempt = safe_component(attempt_id);
        let dir = root.join(&task).join(&attempt);
        // Private like the rest of the data directory (dumps and screenshots show the
        // account, addresses and orders): folders `0700`, files `0600` on Unix; a root
        // or attempt folder left too open by an older client is tightened.
        for d in [root, dir.as_path()] {
            match crate::file_modes::create_dir(d) {
                Ok(Some(t)) => {
                    tracing::warn!(path = %t.path.display(), was = format!("{:o}", t.was), "too-open permissions tightened (artifacts)")
                }
                Ok(None) => {}
                Err(source) => {
                    return Err(ArtifactError::Io {
                        path: d.to_path_buf(),
                        source,
                    })
                }
            }
        }
        let elements = read_manifest_elements(&dir).unwrap_or_default();
        let entries = artifact_entries(&elements);
        // `seq` goes on after the recorded ones (an old manifest: after its entries).
        let last_seq = elements
            .iter()
            .map(|e| e.seq().unwrap_or(0))
            .max()
            .unwrap_or(0)
            .max(u32::try_from(elements.len()).unwrap_or(u32::MAX));
        // Files written before a crash may be missing from the manifest: count them too.
        let seq = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let (n, _) = name.split_once('-')?;
                n.parse::<u32>().ok()
            })
            .max()
            .unwrap_or(0);
        Ok(AttemptArtifacts {
            dir,
            rel: format!("artifacts/{task}/{attempt}/"),
            attempt_id: attempt_id.to_string(),
            seq,
            entries,
            elements,
            last_seq,
            unwritten: false,
            last_error: None,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// `{client_id}:artifacts/{task}/{attempt}/`.
    pub fn reference(&self, client_id: &str) -> String {
        format!("{client_id}:{}", self.rel)
    }

    pub fn entries(&self) -> &[ManifestEntry] {
        &self.entries
    }

    pub fn ids(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.id.clone()).collect()
    }

    /// Saves one file as `NN-{step}.{ext}` and returns its id. Errors are remembered
    /// in [`AttemptArtifacts::last_error`] and logged, never returned: evidence must not
    /// fail a flow.
    pub fn save(
        &mut self,
        step: &str,
        ext: &str,
        bytes: &[u8],
        at: DateTime<Utc>,
    ) -> Option<String> {
        self.seq += 1;
        let step_name = safe_component(step);
        let file = format!("{:02}-{step_name}.{ext}", self.seq);
        let path = self.dir.join(&file);
        let sha = hex::encode(Sha256::digest(bytes));
        let id = format!("{}-{:02}", self.attempt_id, self.seq);
        if let Err(e) = write_atomic(&path, bytes) {
            tracing::warn!(artifact = %file, error = %e, "artifact not written");
            self.last_error.get_or_insert_with(|| e.to_string());
            return None;
        }
        self.last_seq += 1;
        let entry = ManifestEntry {
            seq: Some(self.last_seq),
            action: Some(artifact_action(ext).to_string()),
            id: id.clone(),
            file: file.clone(),
            sha256: sha.clone(),
            step: step.to_string(),
            taken_at: cmautobuy_contract::time::format_utc(at),
        };
        self.entries.push(entry.clone());
        self.elements.push(ManifestElement::Artifact(entry));
        // Ids and hashes only: the content holds personal data.
        tracing::debug!(artifact_id = %id, file = %file, sha256 = %sha, bytes = bytes.len(), "artifact saved");
        if let Err(e) = self.write_manifest() {
            tracing::warn!(error = %e, "artifact manifest not written");
            self.last_error.get_or_insert_with(|| e.to_string());
        }
        Some(id)
    }

    /// Every manifest element so far (artifacts and actions), in order.
    pub fn elements(&self) -> &[ManifestElement] {
        &self.elements
    }

    /// Records a device action as the next manifest element (its `seq` is set here).
    /// Written with the next saved file or by [`AttemptArtifacts::flush`] (the driver
    /// flushes at the end of every drive), so an action costs no disk write of its own.
    pub fn record(&mut self, mut entry: ActionEntry) {
        self.last_seq += 1;
        entry.seq = self.last_seq;
        self.elements.push(ManifestElement::Action(Box::new(entry)));
        self.unwritten = true;
    }

    /// Writes the manifest when actions were recorded since it was last written.
    pub fn flush(&mut self) {
        if !self.unwritten {
            return;
        }
        if let Err(e) = self.write_manifest() {
            tracing::warn!(error = %e, "artifact manifest not written");
            self.last_error.get_or_insert_with(|| e.to_string());
        }
    }

    fn write_manifest(&mut self) -> Result<(), ArtifactError> {
        let bytes = serde_json::to_vec_pretty(&self.elements).unwrap_or_default();
        write_atomic(&self.dir.join(MANIFEST), &bytes)?;
        self.unwritten = false;
        Ok(())
    }
}

/// The attempt's device sidecar, `device.json` beside `manifest.json`
/// (`{"pdd_version": "7.36.0"}`, `null` when unread): the manifest stays the array its
/// readers know. Best effort, like every artifact.
pub const DEVICE_SIDECAR: &str = "device.json";

impl AttemptArtifacts {
    /// Writes [`DEVICE_SIDECAR`]; an error is remembered like [`AttemptArtifacts::save`]'s.
    pub fn write_device(&mut self, pdd_version: Option<&str>) {
        let body = serde_json::json!({ "pdd_version": pdd_version });
        let bytes = serde_json::to_vec_pretty(&body).unwrap_or_default();
        if let Err(e) = write_atomic(&self.dir.join(DEVICE_SIDECAR), &bytes) {
            tracing::warn!(error = %e, "artifact device sidecar not written");
            self.last_error.get_or_insert_with(|| e.to_string());
        }
    }
}

/// The attempt's action trace, `trace.json` beside `manifest.json` (the
/// console's viewer draws each tap over the dump it was chosen on): one record per
/// action the driver performed, in order, appended by every drive of the attempt (a
/// reconcile after a purchase continues the same folder). Best effort, like every
/// artifact. The details are what the failure request already carries (labels, screen
/// kinds, deep links): no dump text.
pub const TRACE_SIDECAR: &str = "trace.json";

/// One action of [`TRACE_SIDECAR`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TraceRecord {
    /// `observe`, `tap`, `swipe`, `back`, `open_url`, `screenshot`, `effect`, …
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    #[serde(default)]
    pub detail: String,
    /// Where a tap (or a swipe's start) went, in screen pixels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<[i32; 2]>,
    /// Where a swipe ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<[i32; 2]>,
    /// The file this action saved (a dump, a screenshot), when it saved one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// Reads an attempt folder's [`TRACE_SIDECAR`]; empty when absent or unreadable (an
/// attempt written before traces existed has none).
pub fn read_trace(dir: &Path) -> Vec<TraceRecord> {
    std::fs::read(dir.join(TRACE_SIDECAR))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

impl AttemptArtifacts {
    /// Appends `records` to [`TRACE_SIDECAR`]; an error is remembered like
    /// [`AttemptArtifacts::save`]'s.
    pub fn append_trace(&mut self, records: &[TraceRecord]) {
        if records.is_empty() {
            return;
        }
        let mut all = read_trace(&self.dir);
        all.extend_from_slice(records);
        let bytes = serde_json::to_vec_pretty(&all).unwrap_or_default();
        if let Err(e) = write_atomic(&self.dir.join(TRACE_SIDECAR), &bytes) {
            tracing::warn!(error = %e, "artifact trace not written");
            self.last_error.get_or_insert_with(|| e.to_string());
        }
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ArtifactError> {
    let io = |source| ArtifactError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    // A leftover keeps its old mode: made afresh.
    let _ = std::fs::remove_file(&tmp);
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(crate::file_modes::FILE_MODE);
    }
    let mut f = o.open(&tmp).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_data().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// The retention setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Newest attempts kept per task (at least 1).
    pub keep_attempts: usize,
    /// Attempts older than this are removed whatever their rank (evidence aside).
    pub max_age: Option<Duration>,
    /// The artifact root's total size cap; over it, the oldest
    /// attempts go first, evidence last. `None`: no cap.
    pub max_total_bytes: Option<u64>,
    /// Evidence — attempts of live orders (a run with its irreversible mark) and of
    /// `manual_review` outcomes — is kept this long whatever its rank, and removed for
    /// size only after every other attempt. `None`: kept until the size cap needs it.
    pub evidence_max_age: Option<Duration>,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep_attempts: 5,
            max_age: Some(Duration::from_secs(30 * 24 * 3600)),
            max_total_bytes: Some(2 * 1024 * 1024 * 1024),
            evidence_max_age: Some(Duration::from_secs(180 * 24 * 3600)),
        }
    }
}

/// Removes old attempt directories under `root` per `keep` (every attempt counted as
/// ordinary, not evidence); returns how many were removed. `protect` (the attempt being
/// written) is never removed. A full scan: the running client uses an
/// [`ArtifactIndex`] instead.
pub fn prune(root: &Path, keep: Retention, now: SystemTime, protect: Option<&Path>) -> usize {
    let mut index = ArtifactIndex::scan(root, &|_, _| false);
    index.sweep(keep, now, protect).removed
}

/// One attempt directory as the sweep sees it.
#[derive(Clone, Debug)]
struct IndexedAttempt {
    /// `{task}/{attempt}` (the safe directory names).
    task: String,
    path: PathBuf,
    mtime: SystemTime,
    bytes: u64,
    evidence: bool,
}

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Attempt directories removed.
    pub removed: usize,
    /// Of which evidence (live orders, `manual_review`).
    pub removed_evidence: usize,
    pub freed_bytes: u64,
    /// The artifact root's size after the sweep.
    pub total_bytes: u64,
    /// Attempt directories after the sweep.
    pub attempts: usize,
}

/// The artifact root in memory: every attempt directory with its size,
/// time and class, so that the sweep after each task costs one attempt's `stat`s plus
/// an in-memory sort, not a walk of the whole tree. Built by one walk at start
/// ([`ArtifactIndex::scan`]); the client notes each attempt it finishes
/// ([`ArtifactIndex::note_attempt`]). Only this process writes under the root (the
/// data-directory lock); a directory removed by hand is dropped from the index when the
/// sweep finds it gone.
#[derive(Clone, Debug, Default)]
pub struct ArtifactIndex {
    root: PathBuf,
    attempts: Vec<IndexedAttempt>,
}

/// The size of the files directly inside `dir` (attempt directories are flat) and the
/// directory's modification time. Symlinks are not followed.
fn measure(dir: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::symlink_metadata(dir).ok()?;
    if !meta.is_dir() {
        return None;
    }
    let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let mut bytes = 0u64;
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if let Ok(m) = e.metadata() {
                bytes = bytes.saturating_add(m.len());
            }
        }
    }
    Some((mtime, bytes))
}

impl ArtifactIndex {
    /// Walks `root` (two directory levels, symlinks not followed); `evidence(task_dir,
    /// attempt_dir)` says which attempts are evidence.
    pub fn scan(root: &Path, evidence: &dyn Fn(&str, &str) -> bool) -> ArtifactIndex {
        let mut attempts = Vec::new();
        if let Ok(tasks) = std::fs::read_dir(root) {
            for task in tasks.flatten() {
                if !task.file_type().is_ok_and(|t| t.is_dir()) {
                    continue;
                }
                let task_name = task.file_name().to_string_lossy().into_owned();
                let Ok(rd) = std::fs::read_dir(task.path()) else {
                    continue;
                };
                for a in rd.flatten() {
                    if !a.file_type().is_ok_and(|t| t.is_dir()) {
                        continue;
                    }
                    let name = a.file_name().to_string_lossy().into_owned();
                    if let Some((mtime, bytes)) = measure(&a.path()) {
                        attempts.push(IndexedAttempt {
                            evidence: evidence(&task_name, &name),
                            task: task_name.clone(),
                            path: a.path(),
                            mtime,
                            bytes,
                        });
                    }
                }
            }
        }
        ArtifactIndex {
            root: root.to_path_buf(),
            attempts,
        }
    }

    /// Notes (or re-measures) the attempt of `task_id`/`attempt_id` — the ids as claimed,
    /// made safe here like [`AttemptArtifacts::create`] does.
    pub fn note_attempt(&mut self, task_id: &str, attempt_id: &str, evidence: bool) {
        let task = safe_component(task_id);
        let path = self.root.join(&task).join(safe_component(attempt_id));
        self.attempts.retain(|a| a.path != path);
        if let Some((mtime, bytes)) = measure(&path) {
            self.attempts.push(IndexedAttempt {
                task,
                path,
                mtime,
                bytes,
                evidence,
            });
        }
    }

    /// Attempt directories known.
    pub fn len(&self) -> usize {
        self.attempts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.attempts.is_empty()
    }

    /// The known total size.
    pub fn total_bytes(&self) -> u64 {
        self.attempts.iter().map(|a| a.bytes).sum()
    }

    /// Applies `keep` at `now`:
    /// 1. an ordinary attempt goes when it is older than `max_age` or not among its
    ///    task's `keep_attempts` newest; evidence only when older than
    ///    `evidence_max_age`;
    /// 2. then, while the total exceeds `max_total_bytes`, the oldest ordinary attempt
    ///    goes, and only when none is left the oldest evidence.
    ///
    /// `protect` is never removed. Emptied task directories are removed too.
    pub fn sweep(
        &mut self,
        keep: Retention,
        now: SystemTime,
        protect: Option<&Path>,
    ) -> SweepReport {
        let age = |a: &IndexedAttempt| now.duration_since(a.mtime).unwrap_or(Duration::ZERO);
        // Newest first within each task, for the ranks.
        self.attempts.sort_by(|a, b| {
            a.task
                .cmp(&b.task)
                .then_with(|| b.mtime.cmp(&a.mtime))
                .then_with(|| b.path.cmp(&a.path))
        });
        let mut rank = 0usize;
        let mut doomed: Vec<bool> = self
            .attempts
            .iter()
            .enumerate()
            .map(|(i, a)| {
                if i > 0 && self.attempts[i - 1].task != a.task {
                    rank = 0;
                }
                let r = rank;
                rank += 1;
                if a.evidence {
                    keep.evidence_max_age.is_some_and(|m| age(a) > m)
                } else {
                    r >= keep.keep_attempts.max(1) || keep.max_age.is_some_and(|m| age(a) > m)
                }
            })
            .collect();
        if let Some(cap) = keep.max_total_bytes {
            let mut total: u64 = self
                .attempts
                .iter()
                .zip(&doomed)
                .filter(|(_, d)| !**d)
                .map(|(a, _)| a.bytes)
                .sum();
            if total > cap {
                // Ordinary attempts oldest first, then evidence oldest first.
                let mut order: Vec<usize> =
                    (0..self.attempts.len()).filter(|&i| !doomed[i]).collect();
                order.sort_by(|&x, &y| {
                    let (a, b) = (&self.attempts[x], &self.attempts[y]);
                    a.evidence
                        .cmp(&b.evidence)
                        .then_with(|| a.mtime.cmp(&b.mtime))
                        .then_with(|| a.path.cmp(&b.path))
                });
                for i in order {
                    if total <= cap {
                        break;
                    }
                    if protect.is_some_and(|p| p == self.attempts[i].path) {
                        continue;
                    }
                    doomed[i] = true;
                    total = total.saturating_sub(self.attempts[i].bytes);
                }
            }
        }
        let mut report = SweepReport::default();
        let mut kept = Vec::with_capacity(self.attempts.len());
        let mut touched_tasks = Vec::new();
        for (a, d) in std::mem::take(&mut self.attempts).into_iter().zip(doomed) {
            if !d || protect.is_some_and(|p| p == a.path) {
                kept.push(a);
                continue;
            }
            match std::fs::remove_dir_all(&a.path) {
                Ok(()) => {
                    report.removed += 1;
                    report.removed_evidence += usize::from(a.evidence);
                    report.freed_bytes = report.freed_bytes.saturating_add(a.bytes);
                    touched_tasks.push(self.root.join(&a.task));
                }
                // Removed by hand: forget it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    tracing::warn!(path = %a.path.display(), error = %e, "cannot remove an old artifact attempt");
                    kept.push(a);
                }
            }
        }
        touched_tasks.sort();
        touched_tasks.dedup();
        for t in touched_tasks {
            // Fails harmlessly while the task directory still holds attempts.
            let _ = std::fs::remove_dir(t);
        }
        self.attempts = kept;
        report.total_bytes = self.total_bytes();
        report.attempts = self.attempts.len();
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_from_the_network_cannot_escape_the_root() {
        for bad in [
            "..",
            ".",
            "",
            "../../etc",
            "a/b",
            "a\\b",
            "/abs",
            "x\0y",
            "任务-1",
        ] {
            let s = safe_component(bad);
            assert!(!s.is_empty(), "{bad:?}");
            assert!(
                !s.contains('/') && !s.contains('\\') && !s.contains('\0'),
                "{s}"
            );
            assert!(s.chars().any(|c| c != '.'), "{bad:?} -> {s}");
            assert!(s.is_ascii(), "{s}");
        }
        assert_eq!(safe_component("PDD-0001"), "PDD-0001");
        // Portable: a serial's `:`, Windows device names and trailing dots.
        for id in [
            "127.0.0.1:5555",
            "CON",
            "nul.txt",
            "com1",
            "LPT9.x",
            "abc.",
            "a<b>|?*\"",
        ] {
            let s = safe_component(id);
            assert!(
                s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')),
                "{id:?} -> {s}"
            );
            assert!(
                !is_reserved_on_windows(&s) && !s.ends_with('.'),
                "{id:?} -> {s}"
            );
            assert_ne!(s, id, "{id:?}");
        }
        assert_eq!(safe_component("CONSOLE"), "CONSOLE");
        assert_eq!(safe_component("COM"), "COM");
        assert_ne!(safe_component("a/b"), safe_component("a_b"));
        assert!(safe_component(&"x".repeat(500)).len() < 100);
    }

    #[test]
    fn a_second_create_continues_the_attempt_and_keeps_its_evidence() {
        let root = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let mut a = AttemptArtifacts::create(root.path(), "t-1", "att-1").unwrap();
        a.save("submit_order", "xml", b"<confirm/>", now).unwrap();
        a.save("leave_payment", "png", b"\x89PNG", now).unwrap();
        // A file written before a crash, missing from the manifest.
        std::fs::write(a.dir().join("03-reconcile_order.xml"), b"<cut/>").unwrap();
        let mut b = AttemptArtifacts::create(root.path(), "t-1", "att-1").unwrap();
        assert_eq!(b.entries().len(), 2);
        let id = b.save("reconcile_order", "xml", b"<list/>", now).unwrap();
        assert_eq!(id, "att-1-04");
        let m: Vec<ManifestEntry> =
            serde_json::from_slice(&std::fs::read(b.dir().join("manifest.json")).unwrap()).unwrap();
        let files: Vec<_> = m.iter().map(|e| e.file.as_str()).collect();
        assert_eq!(
            files,
            [
                "01-submit_order.xml",
                "02-leave_payment.png",
                "04-reconcile_order.xml"
            ]
        );
        assert_eq!(
            std::fs::read(b.dir().join("01-submit_order.xml")).unwrap(),
            b"<confirm/>"
        );
        assert_eq!(
            std::fs::read(b.dir().join("03-reconcile_order.xml")).unwrap(),
            b"<cut/>"
        );
    }

    #[test]
    fn actions_and_files_share_one_sequence_that_a_recovered_attempt_continues() {
        let root = tempfile::tempdir().unwrap();
        let now = Utc::now();
        let mut a = AttemptArtifacts::create(root.path(), "t-1", "att-1").unwrap();
        let mut open = ActionEntry::new("open_url", Some("open_goods"));
        open.url = Some("pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=1".into());
        a.record(open);
        a.save("open_goods", "xml", b"<hierarchy/>", now).unwrap();
        let mut tap = ActionEntry::new("tap", Some("select_color"));
        tap.at = Some([10, 20]);
        tap.target = Some(None);
        tap.result = Some("sent".into());
        a.record(tap);
        // Not written until the next file or a flush.
        assert_eq!(read_manifest_elements(a.dir()).unwrap().len(), 2);
        a.flush();
        let m = read_manifest_elements(a.dir()).unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(
            m.iter().map(|e| e.seq()).collect::<Vec<_>>(),
            [Some(1), Some(2), Some(3)]
        );
        // A tap without a node writes `"target": null`; other actions no `target`.
        let raw: serde_json::Value =
            serde_json::from_slice(&std::fs::read(a.dir().join(MANIFEST)).unwrap()).unwrap();
        assert!(raw[2]["target"].is_null() && raw[2].get("target").is_some());
        assert!(raw[0].get("target").is_none());
        assert_eq!(raw[1]["action"], "dump");
        assert_eq!(raw[1]["seq"], 2);
        let ManifestElement::Action(t) = &m[2] else {
            panic!("{m:?}")
        };
        assert_eq!(t.target, Some(None));
        // The readers of files skip actions.
        assert_eq!(artifact_entries(&m).len(), 1);
        // A crash-recovered attempt goes on after seq 3 and after file 01.
        let mut b = AttemptArtifacts::create(root.path(), "t-1", "att-1").unwrap();
        assert_eq!(b.entries().len(), 1);
        assert_eq!(b.ids(), ["att-1-01"]);
        b.record(ActionEntry::new("key", Some("leave_payment")));
        let id = b.save("reconcile_order", "xml", b"<list/>", now).unwrap();
        assert_eq!(id, "att-1-02");
        let m = read_manifest_elements(b.dir()).unwrap();
        assert_eq!(
            m.iter().map(|e| e.seq()).collect::<Vec<_>>(),
            [Some(1), Some(2), Some(3), Some(4), Some(5)]
        );
    }

    #[test]
    fn an_old_manifest_still_reads_and_seq_goes_on_after_it() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("t").join("a");
        std::fs::create_dir_all(&dir).unwrap();
        let old = r#"[{"id":"a-01","file":"01-open_goods.xml","sha256":"00","step":"open_goods","taken_at":"2026-01-01T00:00:00Z"},
                      {"id":"a-02","file":"02-check_goods.png","sha256":"00","step":"check_goods","taken_at":"2026-01-01T00:00:00Z"}]"#;
        std::fs::write(dir.join(MANIFEST), old).unwrap();
        std::fs::write(dir.join("01-open_goods.xml"), "<hierarchy/>").unwrap();
        std::fs::write(dir.join("02-check_goods.png"), "x").unwrap();
        let m = read_manifest_elements(&dir).unwrap();
        assert_eq!(artifact_entries(&m).len(), 2);
        assert_eq!(m[0].seq(), None);
        let mut a = AttemptArtifacts::create(root.path(), "t", "a").unwrap();
        a.record(ActionEntry::new("wait", None));
        a.flush();
        let m = read_manifest_elements(&dir).unwrap();
        assert_eq!(m[2].seq(), Some(3));
    }

    /// Artifacts are private like the rest of the data directory: folders `0700`, files
    /// `0600` whatever the umask; a root left too open is tightened.
    #[cfg(unix)]
    #[test]
    fn artifact_folders_and_files_are_private() {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("artifacts");
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let mut a = AttemptArtifacts::create(&root, "cg1", "att-1").unwrap();
        a.save("open_goods", "xml", b"<hierarchy/>", Utc::now())
            .unwrap();
        a.write_device(Some("7.0.0"));
        assert_eq!(mode(&root), 0o700);
        assert_eq!(mode(&root.join("cg1")), 0o700);
        assert_eq!(mode(a.dir()), 0o700);
        for e in std::fs::read_dir(a.dir()).unwrap() {
            let p = e.unwrap().path();
            assert_eq!(mode(&p), 0o600, "{}", p.display());
        }
    }

    #[test]
    fn saves_numbered_files_and_a_manifest() {
        let root = tempfile::tempdir().unwrap();
        let mut a = AttemptArtifacts::create(root.path(), "../t/1", "att-1").unwrap();
        assert!(a.dir().starts_with(root.path()));
        let now = Utc::now();
        let id1 = a.save("open_goods", "xml", b"<hierarchy/>", now).unwrap();
        let id2 = a.save("check_goods", "png", b"\x89PNG", now).unwrap();
        assert_ne!(id1, id2);
        let m: Vec<ManifestEntry> =
            serde_json::from_slice(&std::fs::read(a.dir().join("manifest.json")).unwrap()).unwrap();
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].file, "01-open_goods.xml");
        assert_eq!(m[1].file, "02-check_goods.png");
        assert_eq!(
            m[0].sha256,
            hex::encode(Sha256::digest(b"<hierarchy/>".as_slice()))
        );
        assert!(a.reference("CLIENT-1").starts_with("CLIENT-1:artifacts/"));
        assert!(a.reference("CLIENT-1").ends_with("/att-1/"));
    }

    #[test]
    fn prune_keeps_the_newest_attempts() {
        let root = tempfile::tempdir().unwrap();
        for i in 0..4 {
            let mut a = AttemptArtifacts::create(root.path(), "task", &format!("a{i}")).unwrap();
            a.save("s", "xml", b"x", Utc::now());
            // Distinct mtimes without sleeping: set them explicitly.
            let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + i * 10);
            std::fs::File::open(a.dir())
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        let keep = Retention {
            keep_attempts: 2,
            max_age: None,
            ..Retention::default()
        };
        assert_eq!(prune(root.path(), keep, SystemTime::now(), None), 2);
        let left: Vec<String> = std::fs::read_dir(root.path().join("task"))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left.len(), 2);
        assert!(left.contains(&"a3".to_string()) && left.contains(&"a2".to_string()));
        let old = Retention {
            keep_attempts: 10,
            max_age: Some(Duration::from_secs(60)),
            ..Retention::default()
        };
        assert_eq!(prune(root.path(), old, SystemTime::now(), None), 2);
    }

    /// An attempt directory of `bytes` bytes modified at `t` (seconds after a base).
    fn attempt(root: &Path, task: &str, att: &str, bytes: usize, t: u64) {
        let mut a = AttemptArtifacts::create(root, task, att).unwrap();
        a.save("s", "xml", &vec![b'x'; bytes], Utc::now());
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + t);
        std::fs::File::open(a.dir())
            .unwrap()
            .set_modified(at)
            .unwrap();
    }

    fn names(root: &Path) -> Vec<String> {
        let mut v = Vec::new();
        for t in std::fs::read_dir(root).unwrap().flatten() {
            for a in std::fs::read_dir(t.path()).unwrap().flatten() {
                v.push(a.file_name().to_string_lossy().into_owned());
            }
        }
        v.sort();
        v
    }

    #[test]
    fn the_size_cap_removes_the_oldest_first_and_evidence_last() {
        let root = tempfile::tempdir().unwrap();
        // Four ordinary attempts and two evidence attempts (one live order, one
        // manual_review), 10 000 bytes each (+ a manifest of ~200 bytes).
        attempt(root.path(), "t1", "old-order", 10_000, 0);
        attempt(root.path(), "t2", "a1", 10_000, 10);
        attempt(root.path(), "t3", "review", 10_000, 20);
        attempt(root.path(), "t4", "a2", 10_000, 30);
        attempt(root.path(), "t5", "a3", 10_000, 40);
        attempt(root.path(), "t6", "a4", 10_000, 50);
        let evidence = |_: &str, a: &str| a == "old-order" || a == "review";
        let mut index = ArtifactIndex::scan(root.path(), &evidence);
        assert_eq!(index.len(), 6);
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_100);
        let keep = |cap: u64| Retention {
            keep_attempts: 5,
            max_age: None,
            max_total_bytes: Some(cap),
            evidence_max_age: None,
        };
        // Room for four: the two oldest ordinary attempts go; the older evidence stays.
        let r = index.sweep(keep(41_500), now, None);
        assert_eq!((r.removed, r.removed_evidence), (2, 0), "{r:?}");
        assert_eq!(names(root.path()), ["a3", "a4", "old-order", "review"]);
        assert!(r.total_bytes <= 41_500 && r.freed_bytes >= 20_000, "{r:?}");
        // Room for one: every ordinary attempt goes first, then the oldest evidence.
        let r = index.sweep(keep(10_500), now, None);
        assert_eq!((r.removed, r.removed_evidence), (3, 1), "{r:?}");
        assert_eq!(names(root.path()), ["review"]);
        // Emptied task directories are gone too.
        assert_eq!(std::fs::read_dir(root.path()).unwrap().count(), 1);
    }

    #[test]
    fn evidence_is_kept_past_the_ordinary_age_and_rank_limits() {
        let root = tempfile::tempdir().unwrap();
        attempt(root.path(), "t", "order", 10, 0);
        for i in 1..=3 {
            attempt(root.path(), "t", &format!("b{i}"), 10, i * 100);
        }
        let day = 86_400;
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + 40 * day);
        let mut index = ArtifactIndex::scan(root.path(), &|_, a| a == "order");
        let keep = Retention {
            keep_attempts: 1,
            max_age: Some(Duration::from_secs(30 * day)),
            max_total_bytes: None,
            evidence_max_age: Some(Duration::from_secs(180 * day)),
        };
        // 40 days old: the ordinary ones go (age), the live order's evidence stays.
        let r = index.sweep(keep, now, None);
        assert_eq!((r.removed, r.removed_evidence), (3, 0));
        assert_eq!(names(root.path()), ["order"]);
        // At 181 days it goes too.
        let later = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + 181 * day);
        assert_eq!(index.sweep(keep, later, None).removed_evidence, 1);
        assert!(index.is_empty());
    }

    #[test]
    fn a_noted_attempt_joins_the_index_and_a_vanished_one_is_forgotten() {
        let root = tempfile::tempdir().unwrap();
        let mut index = ArtifactIndex::scan(root.path(), &|_, _| false);
        assert!(index.is_empty());
        attempt(root.path(), "任务/1", "att", 100, 0);
        index.note_attempt("任务/1", "att", true);
        assert_eq!(index.len(), 1);
        assert!(index.total_bytes() >= 100);
        // Removed by hand: the sweep forgets it without an error.
        std::fs::remove_dir_all(root.path().join(safe_component("任务/1"))).unwrap();
        let keep = Retention {
            max_total_bytes: Some(1),
            ..Retention::default()
        };
        let r = index.sweep(keep, SystemTime::now(), None);
        assert_eq!((r.removed, r.attempts), (0, 0));
    }
}
