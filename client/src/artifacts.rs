//! Evidence artifacts of a flow attempt (`decisions.md` §7).
//!
//! Layout: `{root}/{task}/{attempt}/NN-{step}.xml|.png` plus `manifest.json`
//! (`[{"id", "file", "sha256", "step", "taken_at"}]`, rewritten atomically after every
//! file). `{task}` and `{attempt}` are the remote task id and the attempt id made safe for
//! a file name ([`safe_component`]): ids come from the network and must never walk out
//! of the artifact root. Failures report the ids and the local reference
//! `{client_id}:artifacts/{task}/{attempt}/`; files never leave the machine.
//!
//! Dumps and screenshots hold personal data (addresses, phone numbers, order numbers):
//! log lines name artifacts by id and hash only, never by content. The token is never
//! written here: nothing in this module sees it.
//!
//! [`prune`] is the retention setting: keep the newest N attempts of every task and
//! drop attempts older than a maximum age.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// One manifest entry.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestEntry {
    pub id: String,
    pub file: String,
    pub sha256: String,
    pub step: String,
    pub taken_at: String,
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
    let changed = s != id;
    if s.chars().all(|c| c == '.') {
        s = format!("_{}", s.replace('.', "_"));
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

/// The artifacts of one attempt.
#[derive(Debug)]
pub struct AttemptArtifacts {
    dir: PathBuf,
    /// `artifacts/{task}/{attempt}/` as reported in `artifact_ref`.
    rel: String,
    attempt_id: String,
    seq: u32,
    entries: Vec<ManifestEntry>,
    /// The first write error, kept for the diagnostics; evidence is best effort and a
    /// full disk must not turn a collected price list into a failure.
    pub last_error: Option<String>,
}

impl AttemptArtifacts {
    /// Creates `{root}/{task}/{attempt}/`.
    pub fn create(
        root: &Path,
        task_id: &str,
        attempt_id: &str,
    ) -> Result<AttemptArtifacts, ArtifactError> {
        let task = safe_component(task_id);
        let attempt = safe_component(attempt_id);
        let dir = root.join(&task).join(&attempt);
        std::fs::create_dir_all(&dir).map_err(|source| ArtifactError::Io {
            path: dir.clone(),
            source,
        })?;
        Ok(AttemptArtifacts {
            dir,
            rel: format!("artifacts/{task}/{attempt}/"),
            attempt_id: attempt_id.to_string(),
            seq: 0,
            entries: Vec::new(),
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
        self.entries.push(ManifestEntry {
            id: id.clone(),
            file: file.clone(),
            sha256: sha.clone(),
            step: step.to_string(),
            taken_at: cmautobuy_contract::time::format_utc(at),
        });
        // Ids and hashes only: the content holds personal data.
        tracing::debug!(artifact_id = %id, file = %file, sha256 = %sha, bytes = bytes.len(), "artifact saved");
        if let Err(e) = self.write_manifest() {
            tracing::warn!(error = %e, "artifact manifest not written");
            self.last_error.get_or_insert_with(|| e.to_string());
        }
        Some(id)
    }

    fn write_manifest(&self) -> Result<(), ArtifactError> {
        let bytes = serde_json::to_vec_pretty(&self.entries).unwrap_or_default();
        write_atomic(&self.dir.join("manifest.json"), &bytes)
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), ArtifactError> {
    let io = |source| ArtifactError::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::File::create(&tmp).map_err(io)?;
    f.write_all(bytes).map_err(io)?;
    f.sync_data().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// The retention setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Newest attempts kept per task (at least 1).
    pub keep_attempts: usize,
    /// Attempts older than this are removed whatever their rank.
    pub max_age: Option<Duration>,
}

impl Default for Retention {
    fn default() -> Self {
        Retention {
            keep_attempts: 5,
            max_age: Some(Duration::from_secs(30 * 24 * 3600)),
        }
    }
}

/// Removes old attempt directories under `root` per `keep`; returns how many were
/// removed. `protect` (the attempt being written) is never removed. Only directories
/// two levels below `root` are touched, and symlinks are never followed.
pub fn prune(root: &Path, keep: Retention, now: SystemTime, protect: Option<&Path>) -> usize {
    let mut removed = 0;
    let Ok(tasks) = std::fs::read_dir(root) else {
        return 0;
    };
    for task in tasks.flatten() {
        let Ok(ft) = task.file_type() else { continue };
        if !ft.is_dir() {
            continue;
        }
        let Ok(attempts) = std::fs::read_dir(task.path()) else {
            continue;
        };
        let mut dirs: Vec<(SystemTime, PathBuf)> = attempts
            .flatten()
            .filter(|a| a.file_type().is_ok_and(|t| t.is_dir()))
            .map(|a| {
                let t = a
                    .metadata()
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                (t, a.path())
            })
            .collect();
        // Newest first.
        dirs.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
        for (rank, (mtime, path)) in dirs.iter().enumerate() {
            if protect.is_some_and(|p| p == path) {
                continue;
            }
            let too_many = rank >= keep.keep_attempts.max(1);
            let too_old = keep
                .max_age
                .is_some_and(|age| now.duration_since(*mtime).is_ok_and(|d| d > age));
            if (too_many || too_old) && std::fs::remove_dir_all(path).is_ok() {
                removed += 1;
            }
        }
        // An emptied task directory goes too (fails harmlessly when not empty).
        let _ = std::fs::remove_dir(task.path());
    }
    removed
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
        assert_ne!(safe_component("a/b"), safe_component("a_b"));
        assert!(safe_component(&"x".repeat(500)).len() < 100);
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
        };
        assert_eq!(prune(root.path(), old, SystemTime::now(), None), 2);
    }
}
