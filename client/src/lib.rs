//! The cmautobuy client: the executor side of the Client–Admin contract.
//!
//! Code map:
//! - [`app`] — the one wiring of a running client ([`app::Client::start`]): registration,
//!   outbox relay, claim loop and executor; `run` and `rehearse` both start it.
//! - [`store`] — the durable SQLite store (settings, tasks, runs, outbox, artifacts, spec
//!   resolutions, operator alerts). All SQL lives there.
//! - [`gateway`] — the [`gateway::AdminGateway`] trait (contract §9) with the HTTP and the
//!   in-process (mock Admin) implementations; the only code that knows the wire format.
//! - [`retry`] — the retry/backoff policy and the outbox decisions, sans-IO.
//! - [`outbox`] — the relay that delivers stored results/failures until accepted.
//! - [`runner`] — the claim loop: capabilities, validation, §5.2 handling, hand-off to the
//!   [`executor::Executor`].
//! - [`registration`] — §4.1: save locally, register in the background.
//! - [`spec`] — §7.1 runtime spec resolution, stored before it is sent.
//! - [`config`] — layered configuration (defaults → TOML → `CMAUTOBUY_*` → flags).
//! - [`lock`] — one process per data directory and per phone (OS advisory locks).
//! - [`phones`] — several phones per data directory: each phone's store and identity.
//! - [`logfile`] — `run`'s size-rotated log files.
//! - [`file_modes`] — secrets at rest: the data directory `0700`, the store and token files
//!   `0600` (Unix).
//! - [`disk_budget`] — bounded resources: the artifact sweep, outbox compaction, the
//!   free-disk floor (`low_disk`).
//! - [`account`] — the account fingerprint read from 个人中心, sans-IO:
//!   baseline, same or changed; when the check is due; why live is refused.
//! - [`clock`], [`secret`] — injected time; the token wrapper that never prints.
//! - [`notify`] — alerts out: webhooks (JSON, 企业微信, 钉钉, 飞书), deduplicated, with a
//!   daily summary, from a durable queue; [`metrics`] and [`console`] — the web console
//!   (状态 live status, 设置 settings, 历史 history), the Prometheus `/metrics` endpoint
//!   and `/healthz`; [`progress`] — each worker's board of the task in hand.
//!
//! Screens and money parsing live in [`screen`] and [`money`]; the phone itself (the
//! one [`device::Device`] trait, ADB with deadlines, `doctor`) in [`device`]; the pure
//! collect, purchase and reconcile machines in [`flow`] (no I/O: they read screens and
//! answer with actions); the shell that runs them against the phone, the store and the
//! Admin in [`job`] (driver, device guard, collect and purchase jobs, the executor).
//! `ARCHITECTURE.md` at the repository root draws the zones and their invariants.
//!
//! `rehearse` (the whole system in one process: the bundled mock Admin and the simulated
//! phone) exists only with the `rehearse` feature, on by default; without it the library
//! depends on neither `cmautobuy-mock-admin` nor `cmautobuy-sim-phone`.
//!
//! **Architecture invariants:** only `store` runs SQL; only `gateway` builds or parses
//! wire JSON bodies of the Admin's answers; the token exists only inside a
//! [`secret::Secret`] and never reaches a log line, error or `Debug` output; nothing
//! marks a task `succeeded` before the Admin answered `accepted: true`.

pub mod device;
pub mod doctor;

pub mod alert;
pub mod app;
// The pure core (cmautobuy-pdd) under its old paths: `crate::screen`, `crate::flow`, …
pub use cmautobuy_pdd::{account, flow, money, reasons, screen, self_test};
pub mod artifacts;
pub mod clock;
pub mod clock_check;
pub mod config;
pub mod console;
pub mod disk_budget;
pub mod executor;
pub mod failpoint;
pub mod file_modes;
pub mod gate;
pub mod gateway;
pub mod job;
pub mod lock;
pub mod logfile;
pub mod metrics;
pub mod notify;
pub mod outbox;
pub mod pacing;
pub mod phones;
pub mod progress;
pub mod registration;
#[cfg(feature = "rehearse")]
pub mod rehearse;
pub mod replay;
pub mod retry;
pub mod runner;
pub mod secret;
pub mod spec;
pub mod store;
pub mod viewer;
