//! The [`Store`] handle itself: opening a database file (per-connection configuration,
//! migrations, the schema self-check, the client id every store has), the connection
//! lock, the two transaction helpers every table group uses, and the time formats
//! stored in the columns.
//!
//! Connection discipline (`field-notes.md` §5): every connection gets `busy_timeout`, WAL
//! and `foreign_keys`; read-then-write runs in `BEGIN IMMEDIATE` ([`Store::immediate`]);
//! commits that must survive a power loss run with `synchronous=FULL`
//! ([`Store::durable`]).

use chrono::{DateTime, Utc};
use cmautobuy_contract::time::format_utc_millis;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use super::error::{Result, StoreError};
use super::schema;

/// How long a connection waits for another writer (another process such as `status`).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Handle to the client database. Cheap to clone; one connection per process, shared.
#[derive(Clone)]
pub struct Store {
    conn: Arc<Mutex<Connection>>,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// A time as stored in the text columns (UTC, milliseconds).
pub(super) fn ts(t: DateTime<Utc>) -> String {
    format_utc_millis(t)
}

/// A time stored as epoch milliseconds (the outbox's `next_attempt_at`).
pub(super) fn ms_to_time(ms: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_millis(ms).unwrap_or(DateTime::<Utc>::MIN_UTC)
}

/// Applies the per-connection settings every connection needs.
fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    set_wal(conn)?;
    conn.execute_batch("PRAGMA foreign_keys=ON")?;
    conn.execute_batch("PRAGMA synchronous=NORMAL")?;
    Ok(())
}

/// Puts the database in WAL mode. Switching a new file from the rollback journal to WAL
/// upgrades a read lock to a write lock inside SQLite, and that upgrade answers
/// `SQLITE_BUSY` at once — the busy timeout is not consulted — when another connection
/// (a `status` started beside the first `run`, a second phone's process) holds the file
/// at that moment. So the switch is retried, backing off, until [`BUSY_TIMEOUT`]; a file
/// already in WAL (every open after the first) is not switched again. An in-memory
/// database stays `memory`.
fn set_wal(conn: &Connection) -> Result<()> {
    let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
    let mut pause = Duration::from_millis(2);
    loop {
        let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        if mode.eq_ignore_ascii_case("wal") || mode.eq_ignore_ascii_case("memory") {
            return Ok(());
        }
        match conn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))
            .map_err(StoreError::from)
        {
            Ok(_) => return Ok(()),
            Err(e) if e.is_retryable() && std::time::Instant::now() < deadline => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
}

fn migrate(conn: &mut Connection) -> Result<()> {
    migrate_to(conn, schema::MIGRATIONS.len() as i64)
}

/// Applies the migrations past `user_version` up to version `target` (clamped to the
/// known ones), in one transaction. Version `k` is exactly what a client with the first
/// `k` migrations created: the upgrade tests build every earlier version with it. A
/// database newer than this code is refused ([`StoreError::NewerSchema`]).
fn migrate_to(conn: &mut Connection, target: i64) -> Result<()> {
    let known = schema::MIGRATIONS.len() as i64;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current > known {
        return Err(StoreError::NewerSchema {
            found: current,
            known,
        });
    }
    let target = target.clamp(0, known) as usize;
    for (i, migration) in schema::MIGRATIONS
        .iter()
        .enumerate()
        .take(target)
        .skip(current as usize)
    {
        for stmt in migration.iter() {
            tx.execute(stmt, [])?;
        }
        // PRAGMA cannot take a bound parameter; the value is our own integer.
        tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))?;
    }
    tx.commit()?;
    Ok(())
}

/// A verified backup before migrations change an existing store: a store
/// at version 1 ≤ v < the current one is copied to `backups/` first; no backup, no
/// migration. A fresh (version 0) or current store is not copied.
fn backup_before_migration(conn: &Connection, path: &Path) -> Result<()> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let known = schema::MIGRATIONS.len() as i64;
    if current < 1 || current >= known {
        return Ok(());
    }
    let b = super::backup_file::backup_with(
        conn,
        &super::backup_file::backup_dir_of(path),
        "pre-migration",
        Utc::now(),
    )?;
    tracing::info!(path = %b.path.display(), from = current, to = known, ms = b.took.as_millis() as u64, "store backed up before its migration");
    Ok(())
}

fn self_check(conn: &Connection) -> Result<()> {
    let mut missing = Vec::new();
    for (table, columns) in schema::REQUIRED {
        let mut stmt = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
        let have: Vec<String> = stmt
            .query_map([table], |r| r.get::<_, String>(0))?
            .collect::<std::result::Result<_, _>>()?;
        if have.is_empty() {
            missing.push(format!("table {table}"));
            continue;
        }
        for c in columns.iter() {
            if !have.iter().any(|h| h == c) {
                missing.push(format!("{table}.{c}"));
            }
        }
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(StoreError::Schema(format!(
            "missing {}",
            missing.join(", ")
        )))
    }
}

/// The store's file name in a data directory ([`Store::path_in`]).
pub const STORE_FILE: &str = "client.sqlite3";

/// How long opening waits for a new store another process is creating before it calls
/// a missing store beside an earlier client's files [`StoreError::Missing`].
pub const NEW_STORE_WAIT: Duration = Duration::from_secs(2);

/// Whether `path` has no database in it: absent, or 0 bytes.
fn no_database(path: &Path) -> Result<Option<bool>> {
    match std::fs::metadata(path) {
        Ok(m) if m.len() == 0 => Ok(Some(true)),
        Ok(_) => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Some(false)),
        Err(source) => Err(StoreError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Refuses to create a data directory's store over an earlier client's leftovers (see
/// [`Store::open`]). Only a file named [`STORE_FILE`] is a data directory's store; other
/// names (tests, tools) are opened as given.
fn check_not_replaced(path: &Path) -> Result<()> {
    if path.file_name().and_then(|n| n.to_str()) != Some(STORE_FILE) {
        return Ok(());
    }
    let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) else {
        return Ok(());
    };
    if no_database(path)?.is_none() || crate::file_modes::created_here(path) {
        return Ok(());
    }
    if earlier_client(dir).is_empty() {
        return Ok(());
    }
    // Another process may be creating this very store (a `status` beside the first
    // `run`): its file gets its first page in a moment.
    let deadline = std::time::Instant::now() + NEW_STORE_WAIT;
    let empty = loop {
        match no_database(path)? {
            None => return Ok(()),
            Some(empty) if std::time::Instant::now() >= deadline => break empty,
            Some(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    Err(StoreError::Missing {
        path: path.to_path_buf(),
        dir: dir.to_path_buf(),
        empty,
        evidence: earlier_client(dir),
        restore: super::backup_file::restore_hint(dir, path),
    })
}

/// What a client leaves in its data directory besides its store: a folder counts when it
/// holds a file, [`EARLIER_CLIENT_FILES`] count as they are.
const EARLIER_CLIENT_DIRS: &[&str] = &["backups", "logs", "artifacts", "phones"];
/// Files a client leaves: its lock file, the store's WAL and shared memory. Not its ADB
/// key: an operator may bring the key the phones already trust (`adbkey`) into a new
/// data directory before the first start, and the crash matrix seeds one to skip RSA
/// generation — neither is a store that was there.
const EARLIER_CLIENT_FILES: &[&str] = &[
    // `crate::lock::DATA_DIR_LOCK_FILE`
    "client.lock",
    "client.sqlite3-wal",
    "client.sqlite3-shm",
];

/// What in the data directory `dir` shows an earlier client: what a client makes there
/// ([`EARLIER_CLIENT_DIRS`] holding a file, [`EARLIER_CLIENT_FILES`]) and this process
/// did not make itself. Anything else — the operator's `config.toml` or another config
/// file, a file a shell redirect created for this very run's output — is no sign of a
/// store that was there, and does not stop a first start.
fn earlier_client(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for name in EARLIER_CLIENT_DIRS {
        let p = dir.join(name);
        // A file in it counts unless this process made it (a log folder it just
        // created holds only its own log file). An empty log file does not: `run` opens
        // its log before it can refuse a wrong flag, which writes nothing there.
        let nonempty = *name == "logs";
        if p.is_dir() && holds_files(&p, 3, nonempty) {
            out.push(format!("{name}/"));
        }
    }
    for name in EARLIER_CLIENT_FILES {
        let p = dir.join(name);
        if p.exists() && !crate::file_modes::created_here(&p) {
            out.push((*name).to_string());
        }
    }
    out
}

/// Whether `dir` (down to `depth` more levels) holds a file this process did not create
/// (with `nonempty`, one with something in it).
fn holds_files(dir: &Path, depth: u32, nonempty: bool) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    rd.flatten().any(|e| {
        let p = e.path();
        if crate::file_modes::created_here(&p) {
            return false;
        }
        match e.file_type() {
            Ok(t) if t.is_dir() => depth > 0 && holds_files(&p, depth - 1, nonempty),
            Ok(_) => !nonempty || e.metadata().is_ok_and(|m| m.len() > 0),
            Err(_) => false,
        }
    })
}

/// The settings key of the client id, which opening creates (see `settings.rs` for the
/// other keys).
pub(super) const SETTING_CLIENT_ID: &str = "client_id";

fn new_client_id() -> String {
    use rand::Rng;
    let n: u64 = rand::thread_rng().gen();
    format!("CLIENT-{n:016X}")
}

/// One settings value. Lives here, not in `settings.rs`, because opening needs it for
/// the client id.
pub(super) fn get_setting(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()?)
}

/// Writes one settings value (insert or replace).
pub(super) fn put_setting(
    conn: &Connection,
    key: &str,
    value: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    conn.execute(
        "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        params![key, value, ts(now)],
    )?;
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the database at `path`: configures the connection,
    /// applies pending migrations, checks the schema and makes sure a client id exists.
    ///
    /// Secrets at rest: the directory is created `0700` and the file `0600`
    /// before SQLite opens it (its `-wal`/`-shm` files take the database file's mode);
    /// too-open modes on an existing directory, store, config file or key are tightened
    /// with a warning ([`crate::file_modes::secure_data_dir`]).
    ///
    /// No silent new identity: a `client.sqlite3` that is missing or empty is created
    /// only in a data directory holding nothing an earlier client left — its `backups/`,
    /// `artifacts/` or `phones/` with a file in them, a log with lines in it, its lock
    /// file, ADB key or the store's WAL — other than what this process itself just made
    /// ([`crate::file_modes::created_here`]: its lock file, log folder, ADB key). Beside
    /// those it is [`StoreError::Missing`], pointing at `backups/`. The operator's own
    /// files (a config file, a redirect's output) do not count.
    /// Another process creating the same new store at that moment is waited for (its
    /// file gains its first page within milliseconds), at most [`NEW_STORE_WAIT`].
    pub fn open(path: &Path) -> Result<Store> {
        check_not_replaced(path)?;
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                crate::file_modes::create_dir(dir).map_err(|source| StoreError::Io {
                    path: dir.to_path_buf(),
                    source,
                })?;
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                crate::file_modes::secure_data_dir(dir, &name);
            }
        }
        crate::file_modes::create_file(path).map_err(|source| StoreError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let conn = Connection::open(path)?;
        Self::init(conn, path.to_path_buf())
    }

    /// Opens the database without migrating: for read-only tools and the self-check test.
    pub fn open_existing(path: &Path) -> Result<Store> {
        let conn = Connection::open(path)?;
        configure(&conn)?;
        self_check(&conn)?;
        Ok(Store {
            conn: Arc::new(Mutex::new(conn)),
            path: path.to_path_buf(),
        })
    }

    /// The store's file name inside a data directory.
    pub fn path_in(data_dir: &Path) -> PathBuf {
        data_dir.join(STORE_FILE)
    }

    /// SQLite's `PRAGMA quick_check` over the whole file (every page, every index's
    /// shape; ≈ the cost of reading the file once): `run` calls it before its first
    /// claim, so a damaged page is found before a task is taken rather than after.
    /// [`StoreError::Damaged`] names what SQLite found and how to restore.
    pub fn quick_check(&self) -> Result<()> {
        let conn = self.lock();
        let rows: std::result::Result<Vec<String>, rusqlite::Error> =
            conn.prepare("PRAGMA quick_check(20)").and_then(|mut st| {
                st.query_map([], |r| r.get::<_, String>(0))?
                    .collect::<std::result::Result<Vec<_>, _>>()
            });
        let detail = match rows {
            Ok(rows) if rows.len() == 1 && rows[0] == "ok" => return Ok(()),
            Ok(rows) => rows.join("; "),
            Err(e) => e.to_string(),
        };
        Err(StoreError::Damaged {
            path: self.path.clone(),
            detail,
            restore: super::backup_file::restore_hint(
                self.path.parent().unwrap_or_else(|| Path::new(".")),
                &self.path,
            ),
        })
    }

    fn init(mut conn: Connection, path: PathBuf) -> Result<Store> {
        configure(&conn)?;
        backup_before_migration(&conn, &path)?;
        migrate(&mut conn)?;
        self_check(&conn)?;
        let store = Store {
            conn: Arc::new(Mutex::new(conn)),
            path,
        };
        store.ensure_client_id()?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The schema version of the open database (`PRAGMA user_version`) and the current
    /// one (the migrations this code knows): `doctor` shows both.
    pub fn schema_version(&self) -> Result<(i64, i64)> {
        let v: i64 = self
            .lock()
            .query_row("PRAGMA user_version", [], |r| r.get(0))?;
        Ok((v, schema::MIGRATIONS.len() as i64))
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent (transactions roll
        // back on drop), so a poisoned mutex is still safe to use.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction with `synchronous=FULL` for its commit.
    pub(super) fn durable<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut conn = self.lock();
        conn.execute_batch("PRAGMA synchronous=FULL")?;
        let out = (|| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let v = f(&tx)?;
            tx.commit()?;
            Ok(v)
        })();
        // Back to NORMAL for everything else; failing to lower it is harmless.
        let _ = conn.execute_batch("PRAGMA synchronous=NORMAL");
        out
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction (read-then-write).
    pub(super) fn immediate<T>(
        &self,
        f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let v = f(&tx)?;
        tx.commit()?;
        Ok(v)
    }

    fn ensure_client_id(&self) -> Result<String> {
        self.immediate(|tx| {
            if let Some(id) = get_setting(tx, SETTING_CLIENT_ID)? {
                return Ok(id);
            }
            let id = new_client_id();
            put_setting(tx, SETTING_CLIENT_ID, &id, Utc::now())?;
            Ok(id)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_are_configured() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let c = s.lock();
        let mode: String = c
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        let fk: i64 = c
            .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
            .unwrap();
        let bt: i64 = c
            .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
            .unwrap();
        let uv: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(
            (mode.as_str(), fk, bt, uv),
            ("wal", 1, 5000, schema::MIGRATIONS.len() as i64)
        );
    }

    /// CI once failed a `run` with "database is locked" at start: the test polled `status`
    /// (which opens the store too) while the run created it, and the switch of the new
    /// file to WAL answered `SQLITE_BUSY` without waiting. Three connections opening one
    /// new store at once, many times over: every open succeeds, one client id for all.
    /// (Before [`set_wal`] retried, 6 rounds of these 60 failed in one run.)
    #[test]
    fn opens_racing_on_a_new_store_all_succeed() {
        let mut failures = Vec::new();
        for round in 0..60 {
            let dir = tempfile::tempdir().unwrap();
            let path = Store::path_in(dir.path());
            let start = Arc::new(std::sync::Barrier::new(3));
            let openers: Vec<_> = (0..3)
                .map(|_| {
                    let (start, path) = (start.clone(), path.clone());
                    std::thread::spawn(move || {
                        start.wait();
                        (0..3)
                            .map(|_| Store::open(&path).and_then(|s| s.client_id()))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            let mut ids = std::collections::BTreeSet::new();
            for opener in openers {
                for r in opener.join().unwrap() {
                    match r {
                        Ok(id) => {
                            ids.insert(id);
                        }
                        Err(e) => failures.push(format!("round {round}: {e}")),
                    }
                }
            }
            assert!(ids.len() <= 1, "round {round}: several client ids {ids:?}");
        }
        assert!(
            failures.is_empty(),
            "{} opens failed: {failures:?}",
            failures.len()
        );
    }

    /// A data directory an earlier client used, without its store: the store is
    /// refused, never created afresh with a new identity — beside backups, logs, a lock
    /// file, artifacts or a WAL, missing or 0 bytes; the message points at `backups/`.
    #[test]
    fn a_missing_or_empty_store_beside_an_earlier_clients_files_is_refused() {
        type Setup = fn(&Path);
        let cases: [(&str, Setup, bool, &str); 6] = [
            (
                "backups",
                |d| {
                    std::fs::create_dir(d.join("backups")).unwrap();
                    std::fs::write(
                        d.join("backups/client-20260101T000000Z-v9-daily.sqlite3"),
                        b"x",
                    )
                    .unwrap();
                },
                false,
                "backups/",
            ),
            (
                "logs",
                |d| {
                    std::fs::create_dir(d.join("logs")).unwrap();
                    std::fs::write(d.join("logs/cmautobuy-client.log"), b"line\n").unwrap();
                    std::fs::write(Store::path_in(d), b"").unwrap();
                },
                true,
                "logs/",
            ),
            (
                "lock",
                |d| std::fs::write(d.join("client.lock"), b"").unwrap(),
                false,
                "client.lock",
            ),
            (
                "artifacts",
                |d| {
                    std::fs::create_dir_all(d.join("artifacts/cg1/a1")).unwrap();
                    std::fs::write(d.join("artifacts/cg1/a1/manifest.json"), b"[]").unwrap();
                },
                false,
                "artifacts/",
            ),
            (
                "wal",
                |d| std::fs::write(d.join("client.sqlite3-wal"), b"wal").unwrap(),
                false,
                "client.sqlite3-wal",
            ),
            (
                "zero-length store and a lock",
                |d| {
                    std::fs::write(Store::path_in(d), b"").unwrap();
                    std::fs::write(d.join("client.lock"), b"4242\nrun\n").unwrap();
                },
                true,
                "client.lock",
            ),
        ];
        for (what, setup, empty_file, named) in cases {
            let dir = tempfile::tempdir().unwrap();
            setup(dir.path());
            let path = Store::path_in(dir.path());
            let err = Store::open(&path).unwrap_err();
            match &err {
                StoreError::Missing {
                    empty, evidence, ..
                } => {
                    assert_eq!(*empty, empty_file, "{what}");
                    assert!(evidence.iter().any(|e| e == named), "{what}: {evidence:?}");
                }
                other => panic!("{what}: {other}"),
            }
            assert_eq!(err.code(), "STORE_MISSING");
            let text = err.to_string();
            assert!(text.starts_with("[STORE_MISSING]"), "{text}");
            assert!(text.contains("backups"), "{what}: {text}");
            // Nothing was created in its place.
            assert_eq!(
                std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0),
                0,
                "{what}"
            );
        }
    }

    /// What does not stop a new store: an empty directory, the operator's own files
    /// (`config.toml`, another config, a redirect's output), empty folders, an empty log
    /// file, what this process made itself (its lock file, its log folder), and any
    /// store file not named `client.sqlite3`.
    #[test]
    fn a_fresh_data_directory_gets_its_identity() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "name = \"x\"\n").unwrap();
        std::fs::write(dir.path().join("alerts.toml"), "[[webhook]]\n").unwrap();
        std::fs::write(dir.path().join("run.out"), "INFO starting\n").unwrap();
        std::fs::create_dir(dir.path().join("backups")).unwrap();
        let _lock = crate::lock::lock_data_dir(dir.path(), "test").unwrap();
        let logs = dir.path().join("logs");
        let _log = crate::logfile::RotatingFile::open(&logs, 1024, 1).unwrap();
        std::fs::write(logs.join(crate::logfile::LOG_FILE), b"a line\n").unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        assert!(s.client_id().unwrap().starts_with("CLIENT-"));
        // A first run refused for a wrong flag left an empty log: no sign of a store.
        let refused = tempfile::tempdir().unwrap();
        std::fs::create_dir(refused.path().join("logs")).unwrap();
        std::fs::write(refused.path().join("logs/cmautobuy-client.log"), b"").unwrap();
        Store::open(&Store::path_in(refused.path())).unwrap();
        // The ADB key the phones already trust, brought in before the first start (the
        // crash matrix seeds one too): no sign of a store.
        let keyed = tempfile::tempdir().unwrap();
        std::fs::write(
            keyed.path().join("adbkey"),
            b"-----BEGIN PRIVATE KEY-----\n",
        )
        .unwrap();
        Store::open(&Store::path_in(keyed.path())).unwrap();
        // Another file name beside anything: opened as given.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("mock-admin.sqlite"), b"x").unwrap();
        Store::open(&other.path().join("store.db")).unwrap();
    }

    /// `PRAGMA quick_check` finds a damaged page of the outbox (the store still opens:
    /// its schema is intact); the error names what SQLite found and points at backups.
    #[test]
    fn quick_check_finds_a_damaged_outbox_page() {
        let dir = tempfile::tempdir().unwrap();
        let path = Store::path_in(dir.path());
        let s = Store::open(&path).unwrap();
        s.quick_check().unwrap();
        drop(s);
        damage_table_root(&path, "outbox");
        let s = Store::open(&path).unwrap();
        let err = s.quick_check().unwrap_err();
        assert!(matches!(err, StoreError::Damaged { .. }), "{err}");
        assert_eq!(err.code(), "STORE_DAMAGED");
        let text = err.to_string();
        assert!(text.contains("backups"), "{text}");
    }

    /// Overwrites the root page of `table` with garbage (WAL checkpointed first, so
    /// the page is in the main file). For the damaged-store tests.
    pub(crate) fn damage_table_root(path: &Path, table: &str) {
        let c = Connection::open(path).unwrap();
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let page_size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        let root: i64 = c
            .query_row(
                "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        drop(c);
        use std::io::{Seek, SeekFrom, Write};
        let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.seek(SeekFrom::Start(((root - 1) * page_size) as u64))
            .unwrap();
        f.write_all(&vec![0x5a; page_size as usize]).unwrap();
        f.sync_all().unwrap();
    }

    #[test]
    fn a_missing_table_refuses_to_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = Store::path_in(dir.path());
        drop(Store::open(&path).unwrap());
        let c = Connection::open(&path).unwrap();
        c.execute("DROP TABLE artifacts", []).unwrap();
        drop(c);
        let err = Store::open(&path).unwrap_err();
        assert!(
            matches!(err, StoreError::Schema(ref m) if m.contains("artifacts")),
            "{err}"
        );
    }

    /// Representative rows for the tables of schema version 1 (every table the first
    /// release had), written with the columns that version had.
    const V1_ROWS: &[&str] = &[
        "INSERT INTO settings (key, value, updated_at) VALUES
            ('client_id', 'CLIENT-00000000000000AB', '2026-01-01T00:00:00.000Z'),
            ('name', '办公室-01', '2026-01-01T00:00:00.000Z'),
            ('admin_url', 'http://admin.example', '2026-01-01T00:00:00.000Z'),
            ('device', '192.168.0.173:5555', '2026-01-01T00:00:00.000Z'),
            ('registration', '{\"state\":\"ok\",\"at\":\"2026-01-01T00:00:01Z\",\"error\":null,\"rejected\":false}', '2026-01-01T00:00:01.000Z')",
        "INSERT INTO tasks (id, remote_task_id, task_type, execution_mode, version, priority,
            payload, raw_task, state, claimed_at, updated_at) VALUES
            (1, 'cg1', 'purchase', 'live', 3, 10,
             '{\"goods_id\":\"222\",\"goods_url\":\"u\",\"options\":{\"color\":\"黑色\"},\"quantity\":2,\"max_price_cent\":2360}',
             '{\"id\":\"cg1\",\"type\":\"purchase\",\"execution_mode\":\"live\",\"version\":3,\"priority\":10,\"payload\":{}}',
             'reporting', '2026-01-01T00:01:00.000Z', '2026-01-01T00:05:00.000Z')",
        "INSERT INTO task_runs (id, task_id, attempt_id, started_at, irreversible_action_at,
            finished_at, outcome) VALUES
            (1, 1, 'attempt-1', '2026-01-01T00:01:01.000Z', '2026-01-01T00:03:00.000Z',
             '2026-01-01T00:05:00.000Z', 'succeeded')",
        "INSERT INTO outbox (id, task_id, run_id, kind, remote_task_id, method, path, headers,
            body, idempotency_key, on_accept_state, state, attempts, next_attempt_at,
            last_error, result_id, response, created_at, updated_at, accepted_at) VALUES
            (1, 1, 1, 'result', 'cg1', 'POST', '/api/v1/client/tasks/cg1/result',
             '[[\"X-Client-Id\",\"CLIENT-00000000000000AB\"],[\"Idempotency-Key\",\"cg1:attempt-1:result-v1\"]]',
             CAST('{\"task_version\":3}' AS BLOB), 'cg1:attempt-1:result-v1', 'succeeded',
             'pending', 2, 1767225900000, 'result submission: HTTP 503', NULL, NULL,
             '2026-01-01T00:05:00.000Z', '2026-01-01T00:05:00.000Z', NULL)",
        "INSERT INTO artifacts (id, run_id, artifact_id, file, sha256, step, taken_at) VALUES
            (1, 1, 'art-1', 'cg1/attempt-1/01-open.xml', 'ab12', 'open_goods',
             '2026-01-01T00:01:02.000Z')",
        "INSERT INTO spec_resolutions (id, run_id, remote_task_id, idempotency_key,
            candidate_snapshot_hash, request_body, state, attempts, last_error, resolution_id,
            outcome, response, created_at, updated_at) VALUES
            (1, 1, 'cg1', 'spec-resolution-v1:ffff', 'ffff', CAST('{}' AS BLOB), 'resolved', 1,
             NULL, 'psr-1', 'matched', CAST('{}' AS BLOB), '2026-01-01T00:02:00.000Z',
             '2026-01-01T00:02:01.000Z')",
        "INSERT INTO operator_alerts (id, kind, remote_task_id, message, raised_at, acked_at)
            VALUES (1, 'protocol_error', 'cg9', '任务不完整', '2026-01-01T00:00:30.000Z', NULL)",
    ];

    /// Every row of every table (as `(table, rows)`), for before/after comparison.
    fn dump(conn: &Connection) -> Vec<(String, Vec<Vec<rusqlite::types::Value>>)> {
        let tables: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table'
                 AND name NOT LIKE 'sqlite_%' ORDER BY name",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        tables
            .into_iter()
            .map(|t| {
                let mut stmt = conn
                    .prepare(&format!("SELECT * FROM {t} ORDER BY rowid"))
                    .unwrap();
                let n = stmt.column_count();
                let rows = stmt
                    .query_map([], |r| {
                        (0..n)
                            .map(|i| r.get::<_, rusqlite::types::Value>(i))
                            .collect::<std::result::Result<Vec<_>, _>>()
                    })
                    .unwrap()
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .unwrap();
                (t, rows)
            })
            .collect()
    }

    /// A database at `version`, built from the migration list itself, with the rows of
    /// the tables that exist then.
    fn database_at_version(path: &Path, version: i64) {
        let mut c = Connection::open(path).unwrap();
        configure(&c).unwrap();
        migrate_to(&mut c, version).unwrap();
        let uv: i64 = c
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(uv, version);
        if version >= 1 {
            for row in V1_ROWS {
                c.execute(row, []).unwrap();
            }
        }
    }

    #[test]
    fn data_model_2_2_every_earlier_schema_version_upgrades_and_keeps_its_data() {
        let known = schema::MIGRATIONS.len() as i64;
        for version in 0..known {
            let dir = tempfile::tempdir().unwrap();
            let path = Store::path_in(dir.path());
            database_at_version(&path, version);
            let before = dump(&Connection::open(&path).unwrap());
            // Open with the current code: migrations, then the schema self-check.
            let s = Store::open(&path).unwrap_or_else(|e| panic!("version {version}: {e}"));
            let after = {
                let c = s.lock();
                let uv: i64 = c
                    .query_row("PRAGMA user_version", [], |r| r.get(0))
                    .unwrap();
                assert_eq!(uv, known, "version {version}");
                self_check(&c).unwrap();
                dump(&c)
            };
            // Every old row is still there, column for column; columns added since are
            // NULL (appended at the end of their table).
            for (table, rows) in &before {
                let now = &after.iter().find(|(t, _)| t == table).unwrap().1;
                assert_eq!(now.len(), rows.len(), "version {version}, {table}");
                for (old, new) in rows.iter().zip(now) {
                    assert_eq!(&new[..old.len()], &old[..], "version {version}, {table}");
                    assert!(
                        new[old.len()..]
                            .iter()
                            .all(|v| *v == rusqlite::types::Value::Null),
                        "version {version}, {table}"
                    );
                }
            }
            // And the current code reads them.
            if version >= 1 {
                assert_eq!(s.client_id().unwrap(), "CLIENT-00000000000000AB");
                let st = s.settings().unwrap();
                assert_eq!(st.name.as_deref(), Some("办公室-01"));
                assert_eq!(st.registration.unwrap().state, "ok");
                let t = s.task(1).unwrap();
                assert_eq!(t.remote_task_id, "cg1");
                let run = s.run(1).unwrap();
                assert_eq!(run.attempt_id, "attempt-1");
                assert_eq!(s.purchase_snapshot(1).unwrap(), None);
                let item = s.outbox_item(1).unwrap();
                assert_eq!(item.idempotency_key, "cg1:attempt-1:result-v1");
                assert_eq!(s.outbox_undelivered_count().unwrap(), 1);
                assert_eq!(s.artifacts(1).unwrap().len(), 1);
                let spec = s.spec_resolution("spec-resolution-v1:ffff").unwrap();
                assert!(spec.is_some());
                assert_eq!(s.open_alerts().unwrap().len(), 1);
                // Migration 7: no PDD version known yet, so none is proven (the gate
                // holds live until a dry run proves the phone's version).
                assert!(s.pdd_versions().unwrap().is_empty());
                assert_eq!(s.pdd_version("192.168.0.173:5555", "7.36.0").unwrap(), None);
                s.note_pdd_version("192.168.0.173:5555", "7.36.0", chrono::Utc::now())
                    .unwrap();
                // Migration 8: no self-test on record, so `purchase_mode = auto` waits
                // for one before it declares live.
                assert!(s.self_tests().unwrap().is_empty());
                assert_eq!(s.self_test("192.168.0.173:5555", "7.36.0").unwrap(), None);
                s.start_self_test("192.168.0.173:5555", "7.36.0", "self-test-x", Utc::now())
                    .unwrap();
            } else {
                // A version-0 file is a fresh store: it gets its own client id.
                assert!(s.client_id().unwrap().starts_with("CLIENT-"));
            }
            // Migration 6 (the account fingerprint): no phone has a baseline after the
            // upgrade; the first reading becomes it.
            assert_eq!(s.account_fingerprint("127.0.0.1:5555").unwrap(), None);
            let reading = crate::screen::AccountReading {
                nickname: Some("拼多多用户".into()),
                masked_phone: Some("138****0000".into()),
            };
            let (v, _) = s
                .record_account_check("127.0.0.1:5555", &reading, Utc::now())
                .unwrap();
            assert_eq!(v, crate::account::Verdict::Baseline, "version {version}");
        }
    }

    #[test]
    fn a_migration_leaves_a_verified_backup_at_the_old_version() {
        let known = schema::MIGRATIONS.len() as i64;
        for version in 1..known {
            let dir = tempfile::tempdir().unwrap();
            let path = Store::path_in(dir.path());
            database_at_version(&path, version);
            let s = Store::open(&path).unwrap();
            let backups = super::super::backup_file::list(&s.backup_dir());
            assert_eq!(backups.len(), 1, "version {version}");
            let b = &backups[0].1;
            assert!(
                b.file_name()
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .contains(&format!("-v{version}-pre-migration")),
                "{b:?}"
            );
            // It opens, passes its integrity check, holds the old version and its rows.
            assert_eq!(super::super::backup_file::verify(b).unwrap(), version);
            let c = Connection::open(b).unwrap();
            let id: String = c
                .query_row(
                    "SELECT value FROM settings WHERE key = 'client_id'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(id, "CLIENT-00000000000000AB");
            drop(c);
            // The current store is not copied again; a fresh one is not copied at all.
            drop(s);
            Store::open(&path).unwrap();
            assert_eq!(
                super::super::backup_file::list(&dir.path().join("backups")).len(),
                1
            );
        }
        let fresh = tempfile::tempdir().unwrap();
        Store::open(&Store::path_in(fresh.path())).unwrap();
        assert!(!fresh.path().join("backups").exists());
    }

    #[test]
    fn data_model_2_2_a_newer_schema_version_is_refused_with_its_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = Store::path_in(dir.path());
        let known = schema::MIGRATIONS.len() as i64;
        database_at_version(&path, known);
        Connection::open(&path)
            .unwrap()
            .execute_batch(&format!("PRAGMA user_version = {}", known + 1))
            .unwrap();
        match Store::open(&path) {
            Err(StoreError::NewerSchema { found, known: k }) => {
                assert_eq!((found, k), (known + 1, known));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_newer_schema_refuses_to_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = Store::path_in(dir.path());
        drop(Store::open(&path).unwrap());
        Connection::open(&path)
            .unwrap()
            .execute_batch("PRAGMA user_version = 999")
            .unwrap();
        assert!(matches!(
            Store::open(&path),
            Err(StoreError::NewerSchema { found: 999, .. })
        ));
    }
}
