//! The phone, seen through one narrow trait.
//!
//! # What lives where
//! - [`port`] — the [`Device`] trait (dump, tap, swipe, key, open a URL, screenshot,
//!   shell with exit code), its value types ([`UiDump`], [`Png`], [`ShellOutput`],
//!   [`KeyCode`]) and [`DeviceError`] with stable codes and `is_retryable()`.
//! - [`quote`] — the one shell-quoting function and the exit-status marker that
//!   recovers exit codes the transports lose. Pure, no I/O.
//! - [`adb`] — [`AdbDevice`]: the implementation on `adb_client`, through an adb server
//!   (USB serials, `host:port` serials connected first) or directly over TCP
//!   (`tcp:HOST:PORT`), every call on a worker thread under a deadline.
//! - [`doctor`] — the readiness check behind `cmautobuy-client doctor`, the claim
//!   loop's one-round-trip device check (`probe_with`) and the wake / swipe before a
//!   task (`wake_and_unlock`).
//! - [`state`] — pure parsers of `dumpsys power` / `window policy` / `battery` and the
//!   verdict on the phone's own state (screen, lock, battery thresholds).
//! - [`u2`] — the `u2` backend: [`u2::U2Device`], dumps and input through
//!   uiautomator2's resident server over an adb-server `tcp:9008` stream (our own
//!   HTTP/1.1 + JSON-RPC client), shell and screenshots on the ADB device beside it;
//!   restart once, then fall back to uiautomator for the rest of the job.
//! - `forward` — the loopback port forward every device stream goes through, so a call
//!   given up at its deadline can be cut (`adb_client` blocks or spins otherwise).
//!
//! # Sync, on purpose
//! The trait is blocking: `adb_client` is blocking (std sockets), and every call is
//! already bounded by a deadline inside the implementation, so a caller never waits
//! longer than the deadline of the operation it asked for. Async flows call it through
//! `tokio::task::spawn_blocking` with an `Arc<dyn Device>` (the trait is `Send + Sync`,
//! methods take `&self`; calls on one device are serialized inside the implementation,
//! which is what a phone needs anyway).
//!
//! # Architecture invariants
//! - **Every call has a deadline** ([`adb::Deadlines`]); a call that exceeds it returns
//!   [`DeviceError::DeadlineExceeded`] and its connection is discarded, never reused.
//! - **Every argument is quoted by [`quote::quote`]**; no caller builds a command line by
//!   string concatenation. A URL from the network reaches `am start` as one argument.
//! - **A dump is fresh or an error**: no stale `/sdcard/window_dump.xml` is ever read;
//!   uiautomator's failure texts are errors even with exit status 0.
//! - **No dump text in errors or logs** (it holds addresses and order numbers): errors
//!   carry codes, exit statuses and short stderr snippets only.

pub mod adb;
pub mod backend;
pub mod doctor;
mod forward;
pub mod port;
pub mod quote;
pub mod state;
pub mod u2;

pub use adb::{AdbDevice, AdbOptions, Deadlines, DeviceAddress, DumpMode};
pub use doctor::DoctorReport;
pub use port::*;
