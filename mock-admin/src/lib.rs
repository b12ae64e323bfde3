//! The bundled mock Admin: the whole Client–Admin v1 contract over axum + SQLite, an
//! operator API, fault plans and a request journal.
//!
//! Use it as a binary (`mock-admin --listen ADDR --db PATH`) or in-process:
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig};
//! let admin = MockAdmin::open(MockAdminConfig::in_memory())?;
//! let op = admin.operator();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let server = tokio::spawn(admin.clone().serve(listener, std::future::pending()));
//! op.create_task(serde_json::json!({"type": "collect", "payload": {
//!     "goods_id": "1", "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=1"}})).await?;
//! # drop(server); Ok(()) }
//! ```
//!
//! Map of the crate:
//!
//! - [`db`] — SQLite: connection settings (busy_timeout, WAL, foreign keys), append-only
//!   migrations by `user_version`, the schema self-check, and the single database thread
//!   every statement runs on.
//! - [`store`] — all SQL: tasks, claims, clients, idempotency keys, results, products,
//!   spec-resolution records. Each request is one `BEGIN IMMEDIATE` transaction (the spec
//!   resolution is two short ones around the resolver).
//! - [`resolver`] — the §7.1 rule engine and the operator's forced outcomes.
//! - [`faults`] — fault plans (per endpoint, Nth call or next N calls) and the journal.
//! - [`http`] — the router: client endpoints, operator API, `/openapi.json`, the §3
//!   envelope guard and the client layer (token, faults, journal).
//! - [`openapi`] — documentation-only schema types for `/openapi.json`.
//! - [`server`] — our accept loop: one hyper connection per socket with a kill switch, so
//!   a fault can drop a connection without answering.
//! - [`error`] — `ApiError` (the §3 envelope), `StoreError`, `OperatorError`.
//!
//! **Architecture invariants.** No SQLite call runs on the async runtime. A request's
//! writes commit together or not at all. A stored answer is replayed byte for byte. Every
//! rejection, including the framework's own, is the §3 envelope. The bearer token never
//! appears in logs, errors or the journal.

// `ApiError` carries the whole §3 envelope (code, message, details) by value. It is the
// cold path of every handler and boxing it would only add noise at each `?`.
#![allow(clippy::result_large_err)]

pub mod db;
pub mod error;
pub mod faults;
pub mod http;
pub mod openapi;
pub mod resolver;
pub mod server;
pub mod store;

pub use error::{ApiError, OperatorError, StoreError};
pub use faults::{
    Endpoint, Fault, FaultPlan, FaultTarget, InstalledFault, JournalEntry, Outcome, RetryAfter,
};
pub use http::FAULT_HEADER;
pub use resolver::{ForcedOutcome, SpecOverride};

use cmautobuy_contract::AdminErrorCode;
use serde_json::Value;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How to open the mock.
#[derive(Clone)]
pub struct MockAdminConfig {
    /// SQLite file path, or `:memory:`.
    pub db_path: String,
    /// When set, every `/api/...` request needs `Authorization: Bearer <token>`.
    pub require_token: Option<String>,
    /// How long a request waits for a lock held by another process before answering 503.
    pub busy_timeout_ms: u64,
}

impl std::fmt::Debug for MockAdminConfig {
    // The token is a secret: never print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockAdminConfig")
            .field("db_path", &self.db_path)
            .field(
                "require_token",
                &self.require_token.as_ref().map(|_| "<redacted>"),
            )
            .field("busy_timeout_ms", &self.busy_timeout_ms)
            .finish()
    }
}

impl Default for MockAdminConfig {
    fn default() -> Self {
        MockAdminConfig {
            db_path: ":memory:".into(),
            require_token: None,
            busy_timeout_ms: 5_000,
        }
    }
}

impl MockAdminConfig {
    pub fn in_memory() -> Self {
        Self::default()
    }

    pub fn file(path: impl Into<String>) -> Self {
        MockAdminConfig {
            db_path: path.into(),
            ..Self::default()
        }
    }
}

/// Shared state behind every handle.
pub struct Inner {
    pub(crate) db: db::Db,
    pub(crate) cfg: MockAdminConfig,
    pub(crate) faults: faults::Faults,
    pub(crate) journal: faults::Journal,
    overrides: Mutex<Vec<SpecOverride>>,
}

impl Inner {
    /// The override for a task, else for its goods.
    pub(crate) fn spec_override(&self, task_id: &str, goods_id: &str) -> Option<SpecOverride> {
        let list = self.overrides.lock().unwrap_or_else(|p| p.into_inner());
        list.iter()
            .rev()
            .find(|o| o.task_id.as_deref() == Some(task_id))
            .or_else(|| {
                list.iter()
                    .rev()
                    .find(|o| o.task_id.is_none() && o.goods_id.as_deref() == Some(goods_id))
            })
            .cloned()
    }

    pub(crate) fn add_override(&self, o: SpecOverride) -> Result<(), ApiError> {
        if o.task_id.is_some() == o.goods_id.is_some() {
            return Err(ApiError::new(
                AdminErrorCode::InvalidBody,
                "give exactly one of task_id and goods_id",
            ));
        }
        let mut list = self.overrides.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|x| !(x.task_id == o.task_id && x.goods_id == o.goods_id));
        list.push(o);
        Ok(())
    }

    pub(crate) fn overrides(&self) -> Vec<SpecOverride> {
        self.overrides
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn clear_overrides(&self) {
        self.overrides
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

/// The mock Admin. Cheap to clone: every clone shares the same database and state.
#[derive(Clone)]
pub struct MockAdmin {
    inner: Arc<Inner>,
}

impl MockAdmin {
    /// Opens the database, runs the migrations and the schema self-check (refusing to
    /// start on a missing table), and starts the database thread.
    pub fn open(cfg: MockAdminConfig) -> anyhow::Result<MockAdmin> {
        let db = db::Db::start(&cfg.db_path, Duration::from_millis(cfg.busy_timeout_ms))
            .map_err(|e| anyhow::anyhow!("cannot open the mock Admin database: {e}"))?;
        Ok(MockAdmin {
            inner: Arc::new(Inner {
                db,
                cfg,
                faults: faults::Faults::default(),
                journal: faults::Journal::default(),
                overrides: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The full HTTP surface: client API, operator API and `/openapi.json`. Usable
    /// in-process with `tower::ServiceExt::oneshot`.
    pub fn router(&self) -> axum::Router {
        http::build(self.inner.clone())
    }

    /// Serves on a bound listener until `shutdown` completes (see [`server`]).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        server::serve(self.router(), listener, shutdown).await
    }

    /// Typed in-process operator access.
    pub fn operator(&self) -> Operator {
        Operator {
            inner: self.inner.clone(),
        }
    }
}

/// In-process operator access: the same operations as `/api/v1/admin`, typed.
#[derive(Clone)]
pub struct Operator {
    inner: Arc<Inner>,
}

impl Operator {
    /// `POST /api/v1/admin/tasks`; returns `{"task": {...}}`.
    pub async fn create_task(&self, body: Value) -> Result<Value, OperatorError> {
        Ok(self
            .inner
            .db
            .call(move |c| store::create_task(c, &body))
            .await?)
    }

    /// `GET /api/v1/admin/tasks/{id}`: `{"task", "claims", "results"}`.
    pub async fn get_task(&self, id: &str) -> Result<Value, OperatorError> {
        let id = id.to_string();
        Ok(self.inner.db.call(move |c| store::get_task(c, &id)).await?)
    }

    /// `GET /api/v1/admin/tasks`: `{"tasks": [...]}`.
    pub async fn list_tasks(&self) -> Result<Value, OperatorError> {
        Ok(self.inner.db.call(store::list_tasks).await?)
    }

    pub async fn cancel_task(&self, id: &str) -> Result<Value, OperatorError> {
        let id = id.to_string();
        Ok(self
            .inner
            .db
            .call(move |c| store::cancel_task(c, &id))
            .await?)
    }

    /// Reassigns to a client, or back to the pool with `None`.
    pub async fn reassign_task(
        &self,
        id: &str,
        client_id: Option<&str>,
    ) -> Result<Value, OperatorError> {
        let id = id.to_string();
        let client = client_id.map(str::to_string);
        Ok(self
            .inner
            .db
            .call(move |c| store::reassign_task(c, &id, client.as_deref()))
            .await?)
    }

    /// `GET /api/v1/admin/clients`: `{"clients": [...]}` with derived `online`.
    pub async fn clients(&self) -> Result<Value, OperatorError> {
        Ok(self.inner.db.call(store::list_clients).await?)
    }

    /// `GET /api/v1/admin/products`: the `pdd_products` rows.
    pub async fn products(&self) -> Result<Value, OperatorError> {
        Ok(self.inner.db.call(store::list_products).await?)
    }

    /// `GET /api/v1/admin/spec-resolutions`: the stored §7.1 records.
    pub async fn spec_resolutions(&self) -> Result<Value, OperatorError> {
        Ok(self.inner.db.call(store::list_spec_resolutions).await?)
    }

    /// Installs a fault plan; returns its id.
    pub fn set_fault(&self, plan: FaultPlan) -> Result<u64, OperatorError> {
        self.inner.faults.add(plan).map_err(|m| OperatorError {
            code: AdminErrorCode::InvalidBody,
            status: 400,
            message: m,
        })
    }

    pub fn faults(&self) -> Vec<InstalledFault> {
        self.inner.faults.list()
    }

    pub fn clear_faults(&self) {
        self.inner.faults.clear()
    }

    /// Forces the §7.1 outcome for a task or a goods (replaces an earlier override of
    /// the same scope).
    pub fn set_spec_override(&self, o: SpecOverride) -> Result<(), OperatorError> {
        Ok(self.inner.add_override(o)?)
    }

    pub fn clear_spec_overrides(&self) {
        self.inner.clear_overrides()
    }

    /// Every client request so far, in arrival order of completion.
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.inner.journal.entries()
    }

    pub fn clear_journal(&self) {
        self.inner.journal.clear()
    }
}
