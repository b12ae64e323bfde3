//! The durable local store: one SQLite file per client, behind a small typed API.
//!
//! **Invariant:** no SQL outside this module. Every table group adds its methods to the
//! one [`Store`] handle in its own `impl Store` block.
//!
//! # Code map
//! - `error.rs` — [`StoreError`] and [`Result`].
//! - `db.rs` — the [`Store`] handle: opening (connection configuration, migrations, the
//!   schema self-check, the client id), the connection lock, the `immediate` and
//!   `durable` transaction helpers, the stored time formats.
//! - `schema.rs` — append-only migrations and the tables/columns the self-check requires.
//! - `settings.rs` — client id, name, Admin URL, token, device, registration status.
//! - `tasks.rs` — tasks as claimed (remote id verbatim, type, mode, version, raw payload)
//!   and their local state ([`TaskState`], `decisions.md` §4).
//! - `runs.rs` — task runs (one per attempt, `attempt_id`, outcome-less runs after a crash).
//! - `purchase.rs` — the irreversible mark of a run and the guarded
//!   [`Store::mark_irreversible_once`] with its confirmation snapshot.
//! - `outbox.rs` — every result/failure request exactly as it goes on the wire (minus the
//!   token), written in the same transaction as the run's outcome
//!   ([`Store::record_outcome`]); sending, retrying, parking, acceptance.
//! - `alerts.rs` — operator alerts; open alerts stop claiming.
//! - `account.rs` — the account fingerprint per phone serial: baseline,
//!   first seen, last checked, a changed reading pending until `ack` accepts it.
//! - `artifacts.rs` — artifact manifests; `spec.rs` — spec resolution requests.
//! - `summary.rs` — counts by state for `status`; `history.rs` — the console's 历史 pages
//!   (tasks newest first with attempts, outcomes, order numbers and codes; attempts; each
//!   run's report as sent; today's outcome counts).
//! - `backup_file.rs` — `VACUUM INTO` backups in `<data dir>/backups/` (before a
//!   migration, daily from the claim loop), verified, `0600`, rotated: the file rules;
//!   `backup.rs` — the `Store` methods over them (and the rules, re-exported).
//! - `notify.rs` — events a human should hear about (filled by triggers: any operator
//!   alert, a `manual_review` outcome, a parked outbox item, a device pause) and the
//!   webhook delivery queue; the daily summary's counts. `metrics.rs` — the counts
//!   `/metrics` reads.
//! - `versions.rs` — PDD versions per phone: first seen, proven (by which attempt, or
//!   which operator's `ack`), the open alert.
//! - `operator.rs` — what the operator set on the console's 设置 page for going live
//!   (address fingerprint, self-test goods, purchase mode, webhooks, the console
//!   password's hash): settings rows under `operator.*`, read at every use.
//! - `self_tests.rs` — the self-test per phone and PDD version and the
//!   operator's request for one (`request_self_test`, a settings key the runner polls).
//!
//! Files depend downwards only: `error` ← `db` ← the table groups; `outbox` and
//! `summary` use `tasks`' [`TaskState`]. This file only declares and re-exports.
//!
//! Connection discipline (`field-notes.md` §5): every connection gets `busy_timeout`, WAL
//! and `foreign_keys`; read-then-write runs in `BEGIN IMMEDIATE`; commits that must
//! survive a power loss (claimed task, outcome + outbox, irreversible mark) run with
//! `synchronous=FULL`. Migrations are append-only (`store/schema.rs`); a database missing a
//! table or column the code needs refuses to open.

mod account;
mod alerts;
mod artifacts;
pub mod backup;
mod backup_file;
mod db;
mod error;
mod history;
mod metrics;
mod notify;
mod operator;
mod outbox;
mod purchase;
mod runs;
mod schema;
mod self_tests;
mod settings;
mod spec;
mod summary;
mod tasks;
#[cfg(test)]
mod test_support;
mod versions;

pub use account::AccountFingerprint;
pub use alerts::Alert;
pub use artifacts::ArtifactEntry;
pub use db::{Store, BUSY_TIMEOUT};
pub use error::{Result, StoreError};
pub use history::{DayCounts, HistoryReport, HistoryRun, HistoryTask, RecentOutcome};
pub use metrics::MetricsCounts;
pub use notify::{DueDelivery, NewEvent, PeriodReport, Resolution};
pub use operator::OperatorSettings;
pub use outbox::{Acceptance, OutboxDraft, OutboxItem, OutboxKind, OutboxState};
pub use purchase::MarkOutcome;
pub use runs::{AwaitingReconcile, Run};
pub use self_tests::SelfTestRow;
pub use settings::{
    ClaimWait, DevicePause, LiveCapNote, RegistrationStatus, Settings, SettingsPatch, TokenBinding,
};
pub use spec::SpecResolutionRecord;
pub use summary::Summary;
pub use tasks::{StoredTask, TaskState};
pub use versions::PddVersionRow;
