//! One backup file of the store: `VACUUM INTO` a timestamped copy in
//! `<data dir>/backups/` before each migration and daily, verified, rotated.
//!
//! - **Name:** `client-<UTC yyyymmddThhmmssZ>-v<schema version>-<why>.sqlite3` — only
//!   ASCII letters, digits, `-`, `.` (the same name is valid on every platform); names
//!   sort by time.
//! - **Safe at rest:** on unix the directory is created `0700` and each file `0600`
//!   before SQLite writes into it (an empty file is a valid `VACUUM INTO` target), so
//!   the token in the settings table is never world-readable, not even for a moment.
//! - **Verified:** the copy is opened read-only, `PRAGMA integrity_check` must answer
//!   `ok` and its `user_version` must be the source's; a copy that fails is deleted and
//!   the error returned.
//! - **Not blocking:** the daily copy reads through a connection of its own — in WAL mode
//!   a reader does not block the writer, so the shared connection stays free — and the
//!   claim loop takes it between tasks, never during one. A store with 10 000 tasks
//!   (30 MB) takes ≈ 1.3 s, copy and integrity check together (debug build, 2 loaded
//!   cores; `BENCHMARKS.md`), once a day.
//! - **Rotation** keeps the newest `keep` files of this naming (other files in the
//!   directory are left alone). Backups before a migration are not rotated away by the
//!   migration itself.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use chrono::{DateTime, NaiveDateTime, Utc};
use rusqlite::{Connection, OpenFlags};

use super::error::{Result, StoreError};

/// The backup directory's name inside the data directory.
pub const BACKUP_DIR: &str = "backups";
/// Backups kept by default (`backups_keep`).
pub const DEFAULT_KEEP: usize = 7;
/// How often the running client takes one.
pub const DAILY: Duration = Duration::from_secs(86_400);

const PREFIX: &str = "client-";
const SUFFIX: &str = ".sqlite3";
const STAMP: &str = "%Y%m%dT%H%M%SZ";

/// One verified backup.
#[derive(Clone, Debug)]
pub struct Backup {
    pub path: PathBuf,
    pub bytes: u64,
    /// The schema version it holds.
    pub version: i64,
    /// Copy and verification together.
    pub took: Duration,
}

fn io(path: &Path, source: std::io::Error) -> StoreError {
    StoreError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The file name of a backup taken at `at` of schema `version` for `why` (letters,
/// digits and `-` kept, anything else dropped).
pub fn file_name(at: DateTime<Utc>, version: i64, why: &str) -> String {
    let why: String = why
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(32)
        .collect();
    format!("{PREFIX}{}-v{version}-{why}{SUFFIX}", at.format(STAMP))
}

/// When a backup of this naming was taken (`None`: not one of ours).
pub fn taken_at(name: &str) -> Option<DateTime<Utc>> {
    let rest = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let stamp = rest.get(..16)?;
    NaiveDateTime::parse_from_str(stamp, STAMP)
        .ok()
        .map(|t| t.and_utc())
}

/// Our backups in `dir`, oldest first.
pub fn list(dir: &Path) -> Vec<(DateTime<Utc>, PathBuf)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = rd
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            Some((taken_at(&name)?, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// Keeps the newest `keep` backups in `dir`; answers how many were removed.
pub fn rotate(dir: &Path, keep: usize) -> Result<usize> {
    let all = list(dir);
    let excess = all.len().saturating_sub(keep);
    for (_, p) in &all[..excess] {
        std::fs::remove_file(p).map_err(|e| io(p, e))?;
    }
    Ok(excess)
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io(dir, e))?;
    }
    Ok(())
}

/// An empty file only this user can read (0600 on unix), for SQLite to fill.
fn create_private(path: &Path) -> Result<()> {
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    o.open(path).map(drop).map_err(|e| io(path, e))
}

fn user_version(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row("PRAGMA user_version", [], |r| r.get(0))?)
}

/// Opens `path` read-only: `integrity_check` must be `ok`; answers its schema version.
pub fn verify(path: &Path) -> Result<i64> {
    let c = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let check: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0))?;
    if check != "ok" {
        return Err(StoreError::Corrupt(format!(
            "backup {} failed its integrity check: {check}",
            path.display()
        )));
    }
    user_version(&c)
}

/// `VACUUM INTO` a new backup of `conn`'s main database in `dir`, verified. A copy that
/// fails is removed.
pub(super) fn backup_with(
    conn: &Connection,
    dir: &Path,
    why: &str,
    now: DateTime<Utc>,
) -> Result<Backup> {
    let started = Instant::now();
    create_dir(dir)?;
    let version = user_version(conn)?;
    let mut path = dir.join(file_name(now, version, why));
    // Two in the same second (a migration, then the first daily): a suffix, never an
    // overwrite.
    let mut n = 1;
    while path.exists() {
        n += 1;
        path = dir.join(file_name(now, version, &format!("{why}-{n}")));
    }
    create_private(&path)?;
    let done = (|| {
        let target = path
            .to_str()
            .ok_or_else(|| StoreError::Corrupt(format!("backup path {path:?} is not UTF-8")))?;
        conn.execute("VACUUM INTO ?1", [target])?;
        let v = verify(&path)?;
        if v != version {
            return Err(StoreError::Corrupt(format!(
                "backup {} holds schema {v}, the store {version}",
                path.display()
            )));
        }
        Ok(())
    })();
    if let Err(e) = done {
        let _ = std::fs::remove_file(&path);
        return Err(e);
    }
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(Backup {
        path,
        bytes,
        version,
        took: started.elapsed(),
    })
}

/// How to restore a store from its backups (the guide's §7.3), for the messages of a
/// missing or damaged store.
pub(super) fn restore_hint(dir: &Path, store: &Path) -> String {
    let backups = dir.join(BACKUP_DIR);
    let newest = list(&backups)
        .pop()
        .map(|(_, p)| format!(" (newest: {})", p.display()))
        .unwrap_or_default();
    format!(
        "To restore: stop every cmautobuy-client process, copy the newest backup from {}{newest} to {}, delete {name}-wal and {name}-shm beside it, and start again (guide §7.3).",
        backups.display(),
        store.display(),
        name = store
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    )
}

/// `backups/` beside a store file.
pub(super) fn backup_dir_of(store_path: &Path) -> PathBuf {
    store_path
        .parent()
        .unwrap_or_else(|| Path::new("."))
        .join(BACKUP_DIR)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap()
    }

    #[test]
    fn names_sort_by_time_and_parse_back() {
        let n = file_name(t0(), 2, "pre-migration/../x");
        assert_eq!(n, "client-20261201T080000Z-v2-pre-migrationx.sqlite3");
        assert!(n
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.'));
        assert_eq!(taken_at(&n), Some(t0()));
        assert_eq!(taken_at("client.sqlite3"), None);
        assert_eq!(taken_at("notes.txt"), None);
    }
}
