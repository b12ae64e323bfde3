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
    // `journal_mode` answers with the resulting mode; an in-memory database stays `memory`.
    let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    conn.execute_batch("PRAGMA foreign_keys=ON")?;
    conn.execute_batch("PRAGMA synchronous=NORMAL")?;
    Ok(())
}

fn migrate(conn: &mut Connection) -> Result<()> {
    let known = schema::MIGRATIONS.len() as i64;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if current > known {
        return Err(StoreError::NewerSchema {
            found: current,
            known,
        });
    }
    for (i, migration) in schema::MIGRATIONS.iter().enumerate().skip(current as usize) {
        for stmt in migration.iter() {
            tx.execute(stmt, [])?;
        }
        // PRAGMA cannot take a bound parameter; the value is our own integer.
        tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))?;
    }
    tx.commit()?;
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
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() {
                std::fs::create_dir_all(dir).map_err(|source| StoreError::Io {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
        }
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
        data_dir.join("client.sqlite3")
    }

    fn init(mut conn: Connection, path: PathBuf) -> Result<Store> {
        configure(&conn)?;
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
