//! The durable local store: one SQLite file per client, behind a small typed API.
//!
//! What lives here (and only here — no SQL outside this module):
//! - **settings**: the client id (`CLIENT-` + random, generated once, reused forever),
//!   the display name, the Admin URL, the token, the device, the last registration status;
//! - **tasks** as claimed (the remote id verbatim, type, mode, version, raw payload) with
//!   their local state (`decisions.md` §4), and **task runs** (`attempt_id`,
//!   `irreversible_action_at`, outcome);
//! - the **outbox**: every result/failure request exactly as it goes on the wire (minus
//!   the token), written in the same transaction as the local outcome;
//! - **artifact manifests**, **spec resolutions** and **operator alerts**.
//!
//! Connection discipline (`field-notes.md` §5): every connection gets `busy_timeout`, WAL
//! and `foreign_keys`; read-then-write runs in `BEGIN IMMEDIATE`; commits that must
//! survive a power loss (claimed task, outcome + outbox, irreversible mark) run with
//! `synchronous=FULL`. Migrations are append-only (`store/schema.rs`); a database missing a
//! table or column the code needs refuses to open.

mod purchase;
mod schema;

pub use purchase::MarkOutcome;

use chrono::{DateTime, Utc};
use cmautobuy_contract::time::format_utc_millis;
use cmautobuy_contract::Task;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::secret::Secret;

/// How long a connection waits for another writer (another process such as `status`).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot create the data directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the database schema is incomplete ({0}); refusing to start")]
    Schema(String),
    #[error(
        "the database was written by a newer client (schema {found}, this client knows {known})"
    )]
    NewerSchema { found: i64, known: i64 },
    #[error("{0} not found")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// Whether trying again later may help (another writer held the lock).
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            _ => false,
        }
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// The 8 client-local task states (`decisions.md` §4). The last five are terminal and
/// mean "reported and accepted by the Admin".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskState {
    Claimed,
    Running,
    Reporting,
    Succeeded,
    Failed,
    ManualReview,
    RetryWait,
    Cancelled,
}

impl TaskState {
    pub const ALL: [TaskState; 8] = [
        TaskState::Claimed,
        TaskState::Running,
        TaskState::Reporting,
        TaskState::Succeeded,
        TaskState::Failed,
        TaskState::ManualReview,
        TaskState::RetryWait,
        TaskState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Claimed => "claimed",
            TaskState::Running => "running",
            TaskState::Reporting => "reporting",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
            TaskState::ManualReview => "manual_review",
            TaskState::RetryWait => "retry_wait",
            TaskState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|t| t.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            TaskState::Claimed | TaskState::Running | TaskState::Reporting
        )
    }
}

/// `result` or `failure` — which endpoint an outbox item goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutboxKind {
    Result,
    Failure,
}

impl OutboxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxKind::Result => "result",
            OutboxKind::Failure => "failure",
        }
    }
    fn parse(s: &str) -> Result<Self> {
        match s {
            "result" => Ok(OutboxKind::Result),
            "failure" => Ok(OutboxKind::Failure),
            other => Err(StoreError::Corrupt(format!("outbox kind {other:?}"))),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutboxState {
    /// Written, not yet (or not successfully) sent; due at `next_attempt_at`.
    Pending,
    /// A send started and has no answer yet. After a crash this is resent like pending.
    Sent,
    /// The Admin answered `accepted: true`.
    Accepted,
    /// A permanent error: not retried until the operator says so (`outbox retry`).
    Parked,
}

impl OutboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxState::Pending => "pending",
            OutboxState::Sent => "sent",
            OutboxState::Accepted => "accepted",
            OutboxState::Parked => "parked",
        }
    }
    fn parse(s: &str) -> Result<Self> {
        match s {
            "pending" => Ok(OutboxState::Pending),
            "sent" => Ok(OutboxState::Sent),
            "accepted" => Ok(OutboxState::Accepted),
            "parked" => Ok(OutboxState::Parked),
            other => Err(StoreError::Corrupt(format!("outbox state {other:?}"))),
        }
    }
}

/// Settings as stored. `client_id` always exists once the store is open.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub client_id: String,
    pub name: Option<String>,
    pub admin_url: Option<String>,
    pub token: Option<Secret>,
    pub device: Option<String>,
    pub registration: Option<RegistrationStatus>,
}

/// A change to the settings; `None` fields are left alone.
#[derive(Clone, Debug, Default)]
pub struct SettingsPatch {
    pub name: Option<String>,
    pub admin_url: Option<String>,
    pub token: Option<Secret>,
    pub device: Option<String>,
}

/// The outcome of the last background registration (§4.1), shown by `status`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RegistrationStatus {
    /// `ok`, `pending` or `failed`.
    pub state: String,
    pub at: String,
    #[serde(default)]
    pub error: Option<String>,
    /// Whether the failure was a permanent rejection (401/403/4xx): identity not valid.
    #[serde(default)]
    pub rejected: bool,
}

/// A task row.
#[derive(Clone, Debug)]
pub struct StoredTask {
    pub id: i64,
    pub remote_task_id: String,
    pub task_type: String,
    pub execution_mode: String,
    pub version: i64,
    pub priority: i64,
    /// The payload exactly as claimed (JSON text).
    pub payload: String,
    pub state: TaskState,
    pub claimed_at: String,
}

/// A task run (one attempt).
#[derive(Clone, Debug)]
pub struct Run {
    pub id: i64,
    pub task_id: i64,
    pub attempt_id: String,
    pub started_at: String,
    pub irreversible_action_at: Option<String>,
}

/// A request to put in the outbox together with the local outcome.
#[derive(Clone, Debug)]
pub struct OutboxDraft {
    pub kind: OutboxKind,
    pub remote_task_id: String,
    pub method: String,
    pub path: String,
    /// Headers without `Authorization` (decisions §3).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub idempotency_key: String,
    /// The task's state once the Admin accepts this item.
    pub on_accept: TaskState,
    /// The run's outcome label (e.g. `succeeded`, `failed:GOODS_MISMATCH`).
    pub outcome: String,
}

/// An outbox row.
#[derive(Clone, Debug)]
pub struct OutboxItem {
    pub id: i64,
    pub task_id: i64,
    pub run_id: i64,
    pub kind: OutboxKind,
    pub remote_task_id: String,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub idempotency_key: String,
    pub on_accept: TaskState,
    pub state: OutboxState,
    pub attempts: u32,
    pub next_attempt_at: DateTime<Utc>,
    pub last_error: Option<String>,
    pub result_id: Option<String>,
    pub created_at: String,
    pub accepted_at: Option<String>,
}

/// What the Admin said when it accepted an outbox item.
#[derive(Clone, Debug)]
pub struct Acceptance {
    pub result_id: Option<String>,
    pub accepted_at: String,
    /// The raw answer body, kept for the record.
    pub response: Vec<u8>,
}

/// An operator alert: something only a human can resolve; open alerts stop claiming.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    pub id: i64,
    /// `protocol_error`, `claim_not_saved` or `claim_rejected`.
    pub kind: String,
    pub remote_task_id: Option<String>,
    pub message: String,
    pub raised_at: String,
}

/// One artifact manifest entry (`decisions.md` §7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactEntry {
    pub artifact_id: String,
    pub file: String,
    pub sha256: String,
    pub step: String,
    pub taken_at: String,
}

/// A spec resolution request (§7.1) as stored before its first send.
#[derive(Clone, Debug)]
pub struct SpecResolutionRecord {
    pub id: i64,
    pub run_id: i64,
    pub remote_task_id: String,
    pub idempotency_key: String,
    pub candidate_snapshot_hash: String,
    pub request_body: Vec<u8>,
    /// `pending`, `resolved` or `abandoned`.
    pub state: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub response: Option<Vec<u8>>,
}

/// Counts for `status`.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub tasks: Vec<(TaskState, i64)>,
    pub outbox: Vec<(OutboxState, i64)>,
}

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

fn ts(t: DateTime<Utc>) -> String {
    format_utc_millis(t)
}

fn ms_to_time(ms: i64) -> DateTime<Utc> {
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

const SETTING_CLIENT_ID: &str = "client_id";
const SETTING_NAME: &str = "name";
const SETTING_ADMIN_URL: &str = "admin_url";
const SETTING_TOKEN: &str = "token";
const SETTING_DEVICE: &str = "device";
const SETTING_REGISTRATION: &str = "registration";

fn new_client_id() -> String {
    use rand::Rng;
    let n: u64 = rand::thread_rng().gen();
    format!("CLIENT-{n:016X}")
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

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock leaves SQLite consistent (transactions roll
        // back on drop), so a poisoned mutex is still safe to use.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Runs `f` in a `BEGIN IMMEDIATE` transaction with `synchronous=FULL` for its commit.
    fn durable<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
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
    fn immediate<T>(&self, f: impl FnOnce(&rusqlite::Transaction<'_>) -> Result<T>) -> Result<T> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let v = f(&tx)?;
        tx.commit()?;
        Ok(v)
    }

    // ----------------------------------------------------------------------------------
    // settings
    // ----------------------------------------------------------------------------------

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

    /// The stable client id (`X-Client-Id`).
    pub fn client_id(&self) -> Result<String> {
        let conn = self.lock();
        get_setting(&conn, SETTING_CLIENT_ID)?
            .ok_or_else(|| StoreError::NotFound("client id".into()))
    }

    pub fn settings(&self) -> Result<Settings> {
        let conn = self.lock();
        let client_id = get_setting(&conn, SETTING_CLIENT_ID)?
            .ok_or_else(|| StoreError::NotFound("client id".into()))?;
        let registration = match get_setting(&conn, SETTING_REGISTRATION)? {
            Some(s) => Some(
                serde_json::from_str(&s)
                    .map_err(|e| StoreError::Corrupt(format!("registration status: {e}")))?,
            ),
            None => None,
        };
        Ok(Settings {
            client_id,
            name: get_setting(&conn, SETTING_NAME)?,
            admin_url: get_setting(&conn, SETTING_ADMIN_URL)?,
            token: get_setting(&conn, SETTING_TOKEN)?.map(Secret::new),
            device: get_setting(&conn, SETTING_DEVICE)?,
            registration,
        })
    }

    /// Saves the given settings durably (the §4.1 "save locally first" step).
    pub fn save_settings(&self, patch: &SettingsPatch) -> Result<Settings> {
        let now = Utc::now();
        self.durable(|tx| {
            if let Some(v) = &patch.name {
                put_setting(tx, SETTING_NAME, v, now)?;
            }
            if let Some(v) = &patch.admin_url {
                put_setting(tx, SETTING_ADMIN_URL, v, now)?;
            }
            if let Some(v) = &patch.token {
                put_setting(tx, SETTING_TOKEN, v.expose(), now)?;
            }
            if let Some(v) = &patch.device {
                put_setting(tx, SETTING_DEVICE, v, now)?;
            }
            Ok(())
        })?;
        self.settings()
    }

    pub fn set_registration_status(&self, status: &RegistrationStatus) -> Result<()> {
        let json = serde_json::to_string(status)
            .map_err(|e| StoreError::Corrupt(format!("registration status: {e}")))?;
        let conn = self.lock();
        put_setting(&conn, SETTING_REGISTRATION, &json, Utc::now())
    }

    // ----------------------------------------------------------------------------------
    // tasks and runs
    // ----------------------------------------------------------------------------------

    /// Saves a claimed (already validated) task in state `claimed`. `raw_task` is the
    /// task object as received, kept for the record.
    pub fn save_claimed_task(
        &self,
        task: &Task,
        raw_task: &str,
        now: DateTime<Utc>,
    ) -> Result<i64> {
        let payload = serde_json::to_string(&task.payload)
            .map_err(|e| StoreError::Corrupt(format!("payload: {e}")))?;
        self.durable(|tx| {
            tx.execute(
                "INSERT INTO tasks (remote_task_id, task_type, execution_mode, version, priority,
                                    payload, raw_task, state, claimed_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'claimed', ?8, ?8)",
                params![
                    task.id,
                    task.task_type.as_str(),
                    task.execution_mode.as_str(),
                    task.version,
                    task.priority,
                    payload,
                    raw_task,
                    ts(now)
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    pub fn task(&self, id: i64) -> Result<StoredTask> {
        let conn = self.lock();
        conn.query_row(
            "SELECT id, remote_task_id, task_type, execution_mode, version, priority, payload,
                    state, claimed_at FROM tasks WHERE id = ?1",
            [id],
            task_row,
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("task {id}")))?
    }

    /// Tasks not yet in a terminal state, oldest first.
    pub fn unfinished_tasks(&self) -> Result<Vec<StoredTask>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id, remote_task_id, task_type, execution_mode, version, priority, payload,
                    state, claimed_at FROM tasks
             WHERE state IN ('claimed','running','reporting') ORDER BY id",
        )?;
        let rows = stmt.query_map([], task_row)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r??);
        }
        Ok(out)
    }

    /// Starts an attempt: a new run with a fresh `attempt_id`; the task becomes `running`.
    pub fn start_run(&self, task_id: i64, now: DateTime<Utc>) -> Result<Run> {
        let attempt_id = uuid::Uuid::new_v4().to_string();
        self.durable(|tx| {
            let n = tx.execute(
                "UPDATE tasks SET state = 'running', updated_at = ?2
                 WHERE id = ?1 AND state IN ('claimed','running')",
                params![task_id, ts(now)],
            )?;
            if n == 0 {
                return Err(StoreError::Conflict(format!(
                    "task {task_id} is not claimable for a run"
                )));
            }
            tx.execute(
                "INSERT INTO task_runs (task_id, attempt_id, started_at) VALUES (?1, ?2, ?3)",
                params![task_id, attempt_id, ts(now)],
            )?;
            Ok(Run {
                id: tx.last_insert_rowid(),
                task_id,
                attempt_id: attempt_id.clone(),
                started_at: ts(now),
                irreversible_action_at: None,
            })
        })
    }

    pub fn run(&self, run_id: i64) -> Result<Run> {
        let conn = self.lock();
        conn.query_row(
            "SELECT id, task_id, attempt_id, started_at, irreversible_action_at
             FROM task_runs WHERE id = ?1",
            [run_id],
            |r| {
                Ok(Run {
                    id: r.get(0)?,
                    task_id: r.get(1)?,
                    attempt_id: r.get(2)?,
                    started_at: r.get(3)?,
                    irreversible_action_at: r.get(4)?,
                })
            },
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))
    }

    /// The most recent run of a task, if any.
    pub fn latest_run(&self, task_id: i64) -> Result<Option<Run>> {
        let conn = self.lock();
        Ok(conn
            .query_row(
                "SELECT id, task_id, attempt_id, started_at, irreversible_action_at
                 FROM task_runs WHERE task_id = ?1 ORDER BY id DESC LIMIT 1",
                [task_id],
                |r| {
                    Ok(Run {
                        id: r.get(0)?,
                        task_id: r.get(1)?,
                        attempt_id: r.get(2)?,
                        started_at: r.get(3)?,
                        irreversible_action_at: r.get(4)?,
                    })
                },
            )
            .optional()?)
    }

    /// Sets the irreversible mark of a run, committed with `synchronous=FULL` so it
    /// survives a power loss: after this returns, a crash must never lead to a second
    /// order tap (contract §1.1). Setting it twice keeps the first time.
    pub fn mark_irreversible(&self, run_id: i64, at: DateTime<Utc>) -> Result<()> {
        self.durable(|tx| {
            let n = tx.execute(
                "UPDATE task_runs SET irreversible_action_at = COALESCE(irreversible_action_at, ?2)
                 WHERE id = ?1",
                params![run_id, ts(at)],
            )?;
            if n == 0 {
                return Err(StoreError::NotFound(format!("run {run_id}")));
            }
            Ok(())
        })
    }

    /// Records a run's outcome and its outbox item in one durable transaction, before the
    /// first send (decisions §3). The task becomes `reporting`. Writing the same
    /// idempotency key twice is a conflict unless the body is identical (then the
    /// existing item is returned).
    pub fn record_outcome(
        &self,
        run_id: i64,
        draft: &OutboxDraft,
        now: DateTime<Utc>,
    ) -> Result<i64> {
        let headers = serde_json::to_string(&draft.headers)
            .map_err(|e| StoreError::Corrupt(format!("headers: {e}")))?;
        self.durable(|tx| {
            let existing: Option<(i64, Vec<u8>)> = tx
                .query_row(
                    "SELECT id, body FROM outbox WHERE idempotency_key = ?1",
                    [&draft.idempotency_key],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            if let Some((id, body)) = existing {
                if body == draft.body {
                    return Ok(id);
                }
                return Err(StoreError::Conflict(format!(
                    "outbox key {} already holds a different body",
                    draft.idempotency_key
                )));
            }
            let task_id: i64 = tx
                .query_row(
                    "SELECT task_id FROM task_runs WHERE id = ?1",
                    [run_id],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))?;
            tx.execute(
                "UPDATE task_runs SET outcome = ?2, finished_at = ?3 WHERE id = ?1",
                params![run_id, draft.outcome, ts(now)],
            )?;
            tx.execute(
                "UPDATE tasks SET state = 'reporting', updated_at = ?2 WHERE id = ?1",
                params![task_id, ts(now)],
            )?;
            tx.execute(
                "INSERT INTO outbox (task_id, run_id, kind, remote_task_id, method, path, headers,
                                     body, idempotency_key, on_accept_state, state, attempts,
                                     next_attempt_at, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', 0, ?11, ?12, ?12)",
                params![
                    task_id,
                    run_id,
                    draft.kind.as_str(),
                    draft.remote_task_id,
                    draft.method,
                    draft.path,
                    headers,
                    draft.body,
                    draft.idempotency_key,
                    draft.on_accept.as_str(),
                    now.timestamp_millis(),
                    ts(now)
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    // ----------------------------------------------------------------------------------
    // outbox
    // ----------------------------------------------------------------------------------

    /// The oldest pending or in-flight item due at `now`, if any.
    pub fn next_due_outbox(&self, now: DateTime<Utc>) -> Result<Option<OutboxItem>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(&format!(
            "{OUTBOX_SELECT} WHERE state IN ('pending','sent') AND next_attempt_at <= ?1
             ORDER BY next_attempt_at, id LIMIT 1"
        ))?;
        let mut rows = stmt.query_map([now.timestamp_millis()], outbox_row)?;
        match rows.next() {
            Some(r) => Ok(Some(r??)),
            None => Ok(None),
        }
    }

    /// When the next pending item becomes due (`None`: nothing pending).
    pub fn next_outbox_wakeup(&self) -> Result<Option<DateTime<Utc>>> {
        let conn = self.lock();
        let ms: Option<i64> = conn.query_row(
            "SELECT MIN(next_attempt_at) FROM outbox WHERE state IN ('pending','sent')",
            [],
            |r| r.get(0),
        )?;
        Ok(ms.map(ms_to_time))
    }

    /// Items still to deliver (pending or in flight).
    pub fn outbox_undelivered_count(&self) -> Result<i64> {
        let conn = self.lock();
        Ok(conn.query_row(
            "SELECT COUNT(*) FROM outbox WHERE state IN ('pending','sent')",
            [],
            |r| r.get(0),
        )?)
    }

    pub fn outbox_item(&self, id: i64) -> Result<OutboxItem> {
        let conn = self.lock();
        let mut stmt = conn.prepare(&format!("{OUTBOX_SELECT} WHERE id = ?1"))?;
        let mut rows = stmt.query_map([id], outbox_row)?;
        match rows.next() {
            Some(r) => r?,
            None => Err(StoreError::NotFound(format!("outbox item {id}"))),
        }
    }

    /// Outbox items, newest last; `all = false` hides accepted ones.
    pub fn outbox_list(&self, all: bool) -> Result<Vec<OutboxItem>> {
        let conn = self.lock();
        let filter = if all { "" } else { "WHERE state != 'accepted'" };
        let mut stmt = conn.prepare(&format!("{OUTBOX_SELECT} {filter} ORDER BY id"))?;
        let rows = stmt.query_map([], outbox_row)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r??);
        }
        Ok(out)
    }

    /// Notes that a send is starting (state `sent`, one more attempt). Returns the
    /// attempt number (1 for the first send).
    pub fn outbox_mark_sending(&self, id: i64, now: DateTime<Utc>) -> Result<u32> {
        self.immediate(|tx| {
            let n = tx.execute(
                "UPDATE outbox SET state = 'sent', attempts = attempts + 1, updated_at = ?2
                 WHERE id = ?1 AND state IN ('pending','sent')",
                params![id, ts(now)],
            )?;
            if n == 0 {
                return Err(StoreError::Conflict(format!(
                    "outbox item {id} is not sendable"
                )));
            }
            let attempts: i64 =
                tx.query_row("SELECT attempts FROM outbox WHERE id = ?1", [id], |r| {
                    r.get(0)
                })?;
            Ok(attempts.clamp(0, u32::MAX as i64) as u32)
        })
    }

    /// The Admin accepted the item: the item is `accepted` and its task takes its final
    /// state, in one transaction.
    pub fn outbox_accepted(&self, id: i64, ack: &Acceptance, now: DateTime<Utc>) -> Result<()> {
        self.durable(|tx| {
            let (task_id, on_accept): (i64, String) = tx
                .query_row(
                    "SELECT task_id, on_accept_state FROM outbox WHERE id = ?1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?
                .ok_or_else(|| StoreError::NotFound(format!("outbox item {id}")))?;
            tx.execute(
                "UPDATE outbox SET state = 'accepted', result_id = ?2, response = ?3,
                        accepted_at = ?4, updated_at = ?5, last_error = NULL
                 WHERE id = ?1",
                params![id, ack.result_id, ack.response, ack.accepted_at, ts(now)],
            )?;
            tx.execute(
                "UPDATE tasks SET state = ?2, updated_at = ?3 WHERE id = ?1",
                params![task_id, on_accept, ts(now)],
            )?;
            Ok(())
        })
    }

    /// A transient failure: back to `pending`, due again at `at`.
    pub fn outbox_retry_at(
        &self,
        id: i64,
        at: DateTime<Utc>,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE outbox SET state = 'pending', next_attempt_at = ?2, last_error = ?3,
                    updated_at = ?4
             WHERE id = ?1 AND state IN ('pending','sent')",
            params![id, at.timestamp_millis(), error, ts(now)],
        )?;
        Ok(())
    }

    /// A permanent failure: parked for the operator; never retried automatically.
    pub fn outbox_park(&self, id: i64, error: &str, now: DateTime<Utc>) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE outbox SET state = 'parked', last_error = ?2, updated_at = ?3
             WHERE id = ?1 AND state IN ('pending','sent')",
            params![id, error, ts(now)],
        )?;
        Ok(())
    }

    /// The operator's `outbox retry`: parked items (one, or all with `None`) become due
    /// now, with their attempt counter reset. Returns how many were requeued.
    pub fn outbox_requeue(&self, id: Option<i64>, now: DateTime<Utc>) -> Result<usize> {
        let conn = self.lock();
        let n = match id {
            Some(id) => conn.execute(
                "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?2,
                        updated_at = ?3
                 WHERE id = ?1 AND state IN ('parked','pending','sent')",
                params![id, now.timestamp_millis(), ts(now)],
            )?,
            None => conn.execute(
                "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?1,
                        updated_at = ?2
                 WHERE state = 'parked'",
                params![now.timestamp_millis(), ts(now)],
            )?,
        };
        Ok(n)
    }

    // ----------------------------------------------------------------------------------
    // alerts
    // ----------------------------------------------------------------------------------

    pub fn raise_alert(
        &self,
        kind: &str,
        remote_task_id: Option<&str>,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<i64> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO operator_alerts (kind, remote_task_id, message, raised_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![kind, remote_task_id, message, ts(now)],
        )?;
        Ok(conn.last_insert_rowid())
    }

    pub fn open_alerts(&self) -> Result<Vec<Alert>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id, kind, remote_task_id, message, raised_at FROM operator_alerts
             WHERE acked_at IS NULL ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(Alert {
                id: r.get(0)?,
                kind: r.get(1)?,
                remote_task_id: r.get(2)?,
                message: r.get(3)?,
                raised_at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Acknowledges one alert or all (`None`); returns how many were open.
    pub fn ack_alerts(&self, id: Option<i64>, now: DateTime<Utc>) -> Result<usize> {
        let conn = self.lock();
        let n = match id {
            Some(id) => conn.execute(
                "UPDATE operator_alerts SET acked_at = ?2 WHERE id = ?1 AND acked_at IS NULL",
                params![id, ts(now)],
            )?,
            None => conn.execute(
                "UPDATE operator_alerts SET acked_at = ?1 WHERE acked_at IS NULL",
                params![ts(now)],
            )?,
        };
        Ok(n)
    }

    // ----------------------------------------------------------------------------------
    // artifacts and spec resolutions
    // ----------------------------------------------------------------------------------

    pub fn add_artifact(&self, run_id: i64, entry: &ArtifactEntry) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO artifacts (run_id, artifact_id, file, sha256, step, taken_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                run_id,
                entry.artifact_id,
                entry.file,
                entry.sha256,
                entry.step,
                entry.taken_at
            ],
        )?;
        Ok(())
    }

    pub fn artifacts(&self, run_id: i64) -> Result<Vec<ArtifactEntry>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT artifact_id, file, sha256, step, taken_at FROM artifacts
             WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok(ArtifactEntry {
                artifact_id: r.get(0)?,
                file: r.get(1)?,
                sha256: r.get(2)?,
                step: r.get(3)?,
                taken_at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Stores a spec resolution request before its first send, or returns the stored
    /// one for the same key. The same key with a different body is a conflict: the
    /// contract forbids changing the content under an old key (§7.1).
    pub fn spec_resolution_begin(
        &self,
        run_id: i64,
        remote_task_id: &str,
        idempotency_key: &str,
        candidate_snapshot_hash: &str,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<SpecResolutionRecord> {
        self.durable(|tx| {
            if let Some(rec) = spec_by_key(tx, idempotency_key)? {
                if rec.request_body != body {
                    return Err(StoreError::Conflict(format!(
                        "spec resolution key {idempotency_key} already holds a different body"
                    )));
                }
                return Ok(rec);
            }
            tx.execute(
                "INSERT INTO spec_resolutions (run_id, remote_task_id, idempotency_key,
                        candidate_snapshot_hash, request_body, state, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6)",
                params![
                    run_id,
                    remote_task_id,
                    idempotency_key,
                    candidate_snapshot_hash,
                    body,
                    ts(now)
                ],
            )?;
            spec_by_key(tx, idempotency_key)?
                .ok_or_else(|| StoreError::NotFound("spec resolution just written".into()))
        })
    }

    pub fn spec_resolution_attempt(
        &self,
        id: i64,
        error: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE spec_resolutions SET attempts = attempts + 1, last_error = ?2, updated_at = ?3
             WHERE id = ?1",
            params![id, error, ts(now)],
        )?;
        Ok(())
    }

    pub fn spec_resolution_resolved(
        &self,
        id: i64,
        resolution_id: &str,
        outcome: &str,
        response: &[u8],
        now: DateTime<Utc>,
    ) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE spec_resolutions SET state = 'resolved', resolution_id = ?2, outcome = ?3,
                    response = ?4, last_error = NULL, updated_at = ?5
             WHERE id = ?1",
            params![id, resolution_id, outcome, response, ts(now)],
        )?;
        Ok(())
    }

    pub fn spec_resolution_abandon(&self, id: i64, error: &str, now: DateTime<Utc>) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE spec_resolutions SET state = 'abandoned', last_error = ?2, updated_at = ?3
             WHERE id = ?1",
            params![id, error, ts(now)],
        )?;
        Ok(())
    }

    pub fn spec_resolution(&self, idempotency_key: &str) -> Result<Option<SpecResolutionRecord>> {
        let conn = self.lock();
        spec_by_key(&conn, idempotency_key)
    }

    // ----------------------------------------------------------------------------------
    // status
    // ----------------------------------------------------------------------------------

    pub fn summary(&self) -> Result<Summary> {
        let conn = self.lock();
        let mut tasks = Vec::new();
        let mut stmt = conn.prepare("SELECT state, COUNT(*) FROM tasks GROUP BY state")?;
        for r in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (s, n) = r?;
            let state = TaskState::parse(&s)
                .ok_or_else(|| StoreError::Corrupt(format!("task state {s:?}")))?;
            tasks.push((state, n));
        }
        let mut outbox = Vec::new();
        let mut stmt = conn.prepare("SELECT state, COUNT(*) FROM outbox GROUP BY state")?;
        for r in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (s, n) = r?;
            outbox.push((OutboxState::parse(&s)?, n));
        }
        Ok(Summary { tasks, outbox })
    }
}

fn get_setting(conn: &Connection, key: &str) -> Result<Option<String>> {
    Ok(conn
        .query_row("SELECT value FROM settings WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()?)
}

fn put_setting(conn: &Connection, key: &str, value: &str, now: DateTime<Utc>) -> Result<()> {
    conn.execute(
        "INSERT INTO settings (key, value, updated_at) VALUES (?1, ?2, ?3)
         ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
        params![key, value, ts(now)],
    )?;
    Ok(())
}

fn task_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<StoredTask>> {
    let state: String = r.get(7)?;
    let Some(state) = TaskState::parse(&state) else {
        return Ok(Err(StoreError::Corrupt(format!("task state {state:?}"))));
    };
    Ok(Ok(StoredTask {
        id: r.get(0)?,
        remote_task_id: r.get(1)?,
        task_type: r.get(2)?,
        execution_mode: r.get(3)?,
        version: r.get(4)?,
        priority: r.get(5)?,
        payload: r.get(6)?,
        state,
        claimed_at: r.get(8)?,
    }))
}

const OUTBOX_SELECT: &str = "SELECT id, task_id, run_id, kind, remote_task_id, method, path,
        headers, body, idempotency_key, on_accept_state, state, attempts, next_attempt_at,
        last_error, result_id, created_at, accepted_at FROM outbox";

fn outbox_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<OutboxItem>> {
    let kind: String = r.get(3)?;
    let headers: String = r.get(7)?;
    let on_accept: String = r.get(10)?;
    let state: String = r.get(11)?;
    let attempts: i64 = r.get(12)?;
    let build = || -> Result<OutboxItem> {
        Ok(OutboxItem {
            id: r.get(0)?,
            task_id: r.get(1)?,
            run_id: r.get(2)?,
            kind: OutboxKind::parse(&kind)?,
            remote_task_id: r.get(4)?,
            method: r.get(5)?,
            path: r.get(6)?,
            headers: serde_json::from_str(&headers)
                .map_err(|e| StoreError::Corrupt(format!("outbox headers: {e}")))?,
            body: r.get(8)?,
            idempotency_key: r.get(9)?,
            on_accept: TaskState::parse(&on_accept)
                .ok_or_else(|| StoreError::Corrupt(format!("on_accept_state {on_accept:?}")))?,
            state: OutboxState::parse(&state)?,
            attempts: attempts.clamp(0, u32::MAX as i64) as u32,
            next_attempt_at: ms_to_time(r.get(13)?),
            last_error: r.get(14)?,
            result_id: r.get(15)?,
            created_at: r.get(16)?,
            accepted_at: r.get(17)?,
        })
    };
    Ok(build())
}

fn spec_by_key(conn: &Connection, key: &str) -> Result<Option<SpecResolutionRecord>> {
    Ok(conn
        .query_row(
            "SELECT id, run_id, remote_task_id, idempotency_key, candidate_snapshot_hash,
                    request_body, state, attempts, last_error, response
             FROM spec_resolutions WHERE idempotency_key = ?1",
            [key],
            |r| {
                let attempts: i64 = r.get(7)?;
                Ok(SpecResolutionRecord {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    remote_task_id: r.get(2)?,
                    idempotency_key: r.get(3)?,
                    candidate_snapshot_hash: r.get(4)?,
                    request_body: r.get(5)?,
                    state: r.get(6)?,
                    attempts: attempts.clamp(0, u32::MAX as i64) as u32,
                    last_error: r.get(8)?,
                    response: r.get(9)?,
                })
            },
        )
        .optional()?)
}

#[cfg(test)]
mod tests;
