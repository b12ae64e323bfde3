//! SQLite: connection setup, migrations, the schema self-check and the database worker.
//!
//! **One connection, one thread.** Every statement of this process runs on a single
//! dedicated thread that owns the only connection ([`Db::call`] ships a closure there and
//! awaits its answer). Why:
//! - nothing blocks the async runtime (no SQLite call ever runs on a tokio worker);
//! - this process's own write transactions never contend for SQLite's lock, so they never
//!   sit in SQLite's busy handler, which sleeps in coarse steps (up to 100 ms) and would
//!   wreck claim latency under load — they simply queue, FIFO, in the channel;
//! - `:memory:` works unchanged (one connection is one database);
//! - `busy_timeout` still protects us against *other* processes (an operator's `sqlite3`
//!   shell, a test holding `BEGIN IMMEDIATE`): we wait up to `busy_timeout`, then the
//!   request fails with a retryable 503 and nothing is written.
//!
//! Every transaction that reads and then writes starts with `BEGIN IMMEDIATE` (see
//! [`immediate`]): in WAL a deferred transaction that upgrades from read to write can fail
//! with SQLITE_BUSY regardless of `busy_timeout` (data model §2.1).

use crate::error::StoreError;
use rusqlite::{Connection, OpenFlags};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// Migrations, in order. **Append only**: a released database has run the earlier
/// entries, so editing one would make old and new databases differ silently (data model
/// §2.2–§2.3). Each entry is exactly one SQL statement, executed on its own.
pub const MIGRATIONS: &[&str] = &[
    // v1 — tasks (data model §7, plus execution_mode, the raw payload sent to clients and
    // `designated_client`: the operator's choice, kept apart from `assigned_client`, the
    // current holder, so a retry can go back to the pool or to the chosen client).
    "CREATE TABLE tasks (
        task_id           TEXT PRIMARY KEY,
        task_type         TEXT NOT NULL CHECK (task_type IN ('collect', 'purchase')),
        execution_mode    TEXT NOT NULL DEFAULT 'dry_run' CHECK (execution_mode IN ('dry_run', 'live')),
        status            TEXT NOT NULL DEFAULT 'pending'
                          CHECK (status IN ('pending', 'assigned', 'claimed', 'succeeded',
                                            'manual_review', 'failed', 'cancelled')),
        version           INTEGER NOT NULL DEFAULT 1 CHECK (version > 0),
        priority          INTEGER NOT NULL DEFAULT 0,
        designated_client TEXT,
        assigned_client   TEXT,
        claimed_at        TEXT,
        pdd_goods_url     TEXT NOT NULL,
        pdd_goods_id      TEXT,
        pdd_options       TEXT,
        quantity          INTEGER CHECK (quantity IS NULL OR quantity > 0),
        max_price_cent    INTEGER CHECK (max_price_cent IS NULL OR max_price_cent > 0),
        payload           TEXT NOT NULL,
        result_data       TEXT,
        error_code        TEXT,
        error_message     TEXT,
        finished_at       TEXT,
        created_at        TEXT NOT NULL,
        updated_at        TEXT NOT NULL
    )",
    "CREATE INDEX idx_tasks_claim ON tasks(assigned_client, status, priority DESC, created_at)",
    "CREATE INDEX idx_tasks_list ON tasks(updated_at DESC, task_id DESC)",
    // v1 — clients (data model §9; no status column: online is derived from last_seen_at).
    "CREATE TABLE clients (
        client_id      TEXT PRIMARY KEY,
        name           TEXT,
        device_address TEXT,
        platform       TEXT,
        pdd_package    TEXT,
        supported_types TEXT,
        capabilities   TEXT,
        last_seen_at   TEXT NOT NULL,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL
    )",
    // v1 — claim history (data model §8) plus the version claimed, which §7.1's
    // TASK_VERSION_CONFLICT compares against.
    "CREATE TABLE task_claims (
        task_id      TEXT NOT NULL REFERENCES tasks(task_id),
        client_id    TEXT NOT NULL,
        claimed_at   TEXT NOT NULL,
        task_version INTEGER NOT NULL,
        PRIMARY KEY (task_id, client_id)
    )",
    "CREATE INDEX idx_task_claims_client ON task_claims(client_id)",
    // v1 — first stored answer per idempotency key, replayed byte for byte.
    "CREATE TABLE idempotency_keys (
        endpoint        TEXT NOT NULL,
        task_id         TEXT NOT NULL,
        client_id       TEXT NOT NULL,
        idem_key        TEXT NOT NULL,
        request_hash    TEXT NOT NULL,
        response_status INTEGER NOT NULL,
        response_body   BLOB NOT NULL,
        created_at      TEXT NOT NULL,
        PRIMARY KEY (endpoint, task_id, client_id, idem_key)
    )",
    // v1 — every accepted result and failure (§6.1: several per task, from several clients).
    "CREATE TABLE task_results (
        result_id       TEXT PRIMARY KEY,
        task_id         TEXT NOT NULL REFERENCES tasks(task_id),
        kind            TEXT NOT NULL CHECK (kind IN ('result', 'failure')),
        client_id       TEXT NOT NULL,
        idempotency_key TEXT NOT NULL,
        body            TEXT NOT NULL,
        accepted_at     TEXT NOT NULL
    )",
    "CREATE INDEX idx_task_results_task ON task_results(task_id, accepted_at)",
    // v1 — PDD goods (data model §4) plus shop_name (§6: an empty one never overwrites).
    "CREATE TABLE pdd_products (
        id             INTEGER PRIMARY KEY AUTOINCREMENT,
        goods_id       TEXT NOT NULL UNIQUE,
        url            TEXT NOT NULL,
        title          TEXT,
        shop_name      TEXT,
        skus_json      TEXT,
        collect_status TEXT NOT NULL DEFAULT 'pending'
                       CHECK (collect_status IN ('pending', 'collecting', 'collected', 'failed')),
        collect_msg    TEXT,
        artifact_ref   TEXT,
        collected_at   TEXT,
        deleted_at     TEXT,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL
    )",
    "CREATE INDEX idx_pdd_products_status ON pdd_products(collect_status)",
    // v1 — §7.1 records: one row per business identity; the observation is inserted first
    // (outcome NULL), the decision and its response later. Only the request's known fields
    // are kept: never XML, screenshots, order numbers, addresses, cookies or tokens.
    "CREATE TABLE spec_resolutions (
        resolution_id           TEXT PRIMARY KEY,
        task_id                 TEXT NOT NULL REFERENCES tasks(task_id),
        attempt_id              TEXT NOT NULL,
        candidate_snapshot_hash TEXT NOT NULL,
        client_id               TEXT NOT NULL,
        idempotency_key         TEXT NOT NULL,
        request_hash            TEXT NOT NULL,
        task_version            INTEGER NOT NULL,
        pdd_goods_id            TEXT NOT NULL,
        selected_color          TEXT NOT NULL,
        target_size             TEXT NOT NULL,
        original_options        TEXT NOT NULL,
        candidates              TEXT NOT NULL,
        observed_at             TEXT NOT NULL,
        received_at             TEXT NOT NULL,
        outcome                 TEXT CHECK (outcome IS NULL OR
                                            outcome IN ('matched', 'uncertain', 'rejected', 'failed')),
        source                  TEXT,
        match_candidate_id      TEXT,
        confidence_bps          INTEGER,
        reason                  TEXT,
        resolved_at             TEXT,
        response_body           BLOB,
        UNIQUE (task_id, attempt_id, candidate_snapshot_hash)
    )",
    // v13 — finding an earlier decision on the same snapshot (source `reused`).
    "CREATE INDEX idx_spec_resolutions_snapshot ON spec_resolutions(candidate_snapshot_hash)",
    // v14 — `tasks.result_data` is the complete §6 body as received (data model §4.3
    // "完整的采集提交原文"), for every task with an accepted result. Earlier versions kept
    // the re-serialised `pdd_data` of collect results there; the bodies as received are
    // in `task_results`, so the latest accepted one is copied over (a no-op on a fresh
    // database).
    "UPDATE tasks SET result_data = (
        SELECT r.body FROM task_results r WHERE r.task_id = tasks.task_id AND r.kind = 'result'
        ORDER BY r.accepted_at DESC, r.rowid DESC LIMIT 1)
     WHERE EXISTS (SELECT 1 FROM task_results r
                   WHERE r.task_id = tasks.task_id AND r.kind = 'result')",
];

/// Tables the code depends on; start-up refuses to continue when one is missing
/// (data model §2.4).
pub const REQUIRED_TABLES: &[&str] = &[
    "tasks",
    "clients",
    "task_claims",
    "idempotency_keys",
    "task_results",
    "pdd_products",
    "spec_resolutions",
];

/// Opens (or creates) the database and configures the connection. Every connection this
/// crate opens goes through here, so none lacks `busy_timeout`, WAL or foreign keys.
pub fn open_connection(path: &str, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let conn = if path == ":memory:" {
        Connection::open_in_memory()?
    } else {
        Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX
                | OpenFlags::SQLITE_OPEN_URI,
        )?
    };
    configure(&conn, busy_timeout)?;
    Ok(conn)
}

/// busy_timeout, WAL, foreign keys, and `synchronous=NORMAL` (in WAL: durable against an
/// application crash, which is what a mock needs; the client's own store uses FULL where
/// an order may exist).
pub fn configure(conn: &Connection, busy_timeout: Duration) -> Result<(), StoreError> {
    conn.busy_timeout(busy_timeout)?;
    // journal_mode answers a row; `:memory:` answers "memory", which is fine.
    let _mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    conn.execute_batch("PRAGMA foreign_keys=ON")?;
    conn.execute_batch("PRAGMA synchronous=NORMAL")?;
    let fk: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
    if fk != 1 {
        return Err(StoreError::Corrupt(
            "foreign_keys could not be enabled".into(),
        ));
    }
    Ok(())
}

/// Runs the migrations past `user_version`, one statement per execute, each version
/// step in its own transaction. A database of a newer version than this code knows is
/// refused ([`StoreError::NewerSchema`]), never "downgraded".
pub fn migrate(conn: &mut Connection) -> Result<(), StoreError> {
    migrate_to(conn, MIGRATIONS.len() as i64)
}

/// [`migrate`], stopping at version `target` (clamped to the known versions): version
/// `k` is exactly what a release with the first `k` migrations created, which is how the
/// upgrade tests build a database of every earlier version.
pub fn migrate_to(conn: &mut Connection, target: i64) -> Result<(), StoreError> {
    let current: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    let known = MIGRATIONS.len() as i64;
    if current > known {
        return Err(StoreError::NewerSchema {
            found: current,
            known,
        });
    }
    let target = target.clamp(0, known) as usize;
    for (i, stmt) in MIGRATIONS
        .iter()
        .enumerate()
        .take(target)
        .skip(current as usize)
    {
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
        tx.execute(stmt, [])
            .map_err(|e| StoreError::Corrupt(format!("migration {} failed: {e}", i + 1)))?;
        // PRAGMA does not take parameters; the value is our own integer.
        tx.execute_batch(&format!("PRAGMA user_version = {}", i + 1))?;
        tx.commit()?;
    }
    Ok(())
}

/// Refuses to start when a table the code needs is missing (data model §2.4).
pub fn check_schema(conn: &Connection) -> Result<(), StoreError> {
    let mut stmt = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    let names: Vec<String> = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<_, _>>()?;
    let missing: Vec<&str> = REQUIRED_TABLES
        .iter()
        .copied()
        .filter(|t| !names.iter().any(|n| n == t))
        .collect();
    if !missing.is_empty() {
        return Err(StoreError::Corrupt(format!(
            "schema self-check failed, missing tables: {}",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// Starts a `BEGIN IMMEDIATE` transaction (see the module doc).
pub fn immediate(conn: &mut Connection) -> Result<rusqlite::Transaction<'_>, StoreError> {
    Ok(conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?)
}

type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// Handle to the database worker thread (see the module doc). Cheap to clone.
#[derive(Clone)]
pub struct Db {
    tx: mpsc::Sender<Job>,
    /// Keeps the checkpointer alive; it stops once every handle is gone.
    _alive: Arc<()>,
}

/// How often the checkpointer copies the WAL back into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(200);

impl Db {
    /// Opens, migrates and checks the database, then starts the worker thread.
    pub fn start(path: &str, busy_timeout: Duration) -> Result<Db, StoreError> {
        let mut conn = open_connection(path, busy_timeout)?;
        migrate(&mut conn)?;
        check_schema(&conn)?;
        let alive = Arc::new(());
        if path != ":memory:" {
            // Checkpoints are the only fsyncs in WAL + synchronous=NORMAL. SQLite's
            // automatic checkpoint runs inside whichever commit crosses the threshold,
            // i.e. on our single database thread, stalling every queued request behind an
            // fsync. A second connection checkpoints passively instead (never blocking
            // writers), and the worker's own automatic checkpoint is off.
            let _pages: i64 = conn.query_row("PRAGMA wal_autocheckpoint=0", [], |r| r.get(0))?;
            let checkpointer = open_connection(path, busy_timeout)?;
            let weak = Arc::downgrade(&alive);
            std::thread::Builder::new()
                .name("mock-admin-checkpoint".into())
                .spawn(move || loop {
                    std::thread::sleep(CHECKPOINT_EVERY);
                    if weak.upgrade().is_none() {
                        break;
                    }
                    if let Err(e) =
                        checkpointer.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                    {
                        tracing::warn!(error = %e, "passive checkpoint failed");
                    }
                })
                .map_err(|e| StoreError::Corrupt(format!("cannot start the checkpointer: {e}")))?;
        }
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("mock-admin-db".into())
            .spawn(move || {
                // Ends when every `Db` handle is dropped; the connection closes with it.
                while let Ok(job) = rx.recv() {
                    job(&mut conn);
                }
            })
            .map_err(|e| StoreError::Corrupt(format!("cannot start the database thread: {e}")))?;
        Ok(Db { tx, _alive: alive })
    }

    /// Runs `f` on the database thread and awaits its result without blocking the runtime.
    pub async fn call<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let (otx, orx) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            // A caller that went away (client disconnected) no longer needs the answer;
            // the work itself has been done or rolled back either way.
            let _ = otx.send(f(conn));
        });
        self.tx.send(job).map_err(|_| StoreError::Closed)?;
        orx.await.map_err(|_| StoreError::Closed)?
    }
}
