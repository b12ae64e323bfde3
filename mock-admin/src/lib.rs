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
//! Map of the crate (each file sits above what it uses; this file only declares and
//! re-exports):
//!
//! - `config` — [`MockAdminConfig`]: database path, token, busy timeout.
//! - `admin` — [`MockAdmin`]: open, router, serve, operator.
//! - `operator` — [`Operator`]: the operator API in-process, typed.
//! - `state` — [`Inner`]: database, config, fault plans, journal, spec overrides.
//! - [`http`] — the router: one file per client endpoint family and per operator
//!   resource, `/openapi.json`, the §3 envelope guard, the client layer (token, faults,
//!   journal) and request decoding. JSON is parsed and rendered here.
//! - [`store`] — all SQL, one file per table group or endpoint family, typed rows in and
//!   out. Each request is one `BEGIN IMMEDIATE` transaction (the spec resolution is two
//!   short ones around the resolver).
//! - [`db`] — SQLite: connection settings (busy_timeout, WAL, foreign keys), append-only
//!   migrations by `user_version`, the schema self-check, and the single database thread
//!   every statement runs on.
//! - [`resolver`] — the §7.1 rule engine and the operator's forced outcomes.
//! - [`faults`] — fault plans (per endpoint, Nth call or next N calls).
//! - [`journal`] — the request journal (and the outcome marks handlers leave for it).
//! - [`endpoint`] — the client endpoints, as fault plans and the journal name them.
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

mod admin;
mod config;
pub mod db;
pub mod endpoint;
pub mod error;
pub mod faults;
pub mod http;
pub mod journal;
pub mod openapi;
mod operator;
pub mod resolver;
pub mod server;
mod state;
pub mod store;

pub use admin::MockAdmin;
pub use config::MockAdminConfig;

pub use endpoint::Endpoint;
pub use error::{ApiError, OperatorError, StoreError};
pub use faults::{Fault, FaultPlan, FaultTarget, InstalledFault, RetryAfter};
pub use http::FAULT_HEADER;
pub use journal::{JournalEntry, Outcome};
pub use operator::Operator;
pub use resolver::{ForcedOutcome, SpecOverride};
pub use state::Inner;
