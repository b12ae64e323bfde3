//! # sim-phone: a simulated Android phone running a simulated PDD app
//!
//! No machine of ours has a phone, yet the client's whole job is to drive one. This crate
//! is the stand-in: the real `adb` server and the `adb_client` crate talk to it as to a
//! phone (device side of the ADB transport over TCP, loopback only), and its
//! accessibility dumps have the shapes of the real PDD app's.
//!
//! ## Code map
//! Every file sits above what it imports (no cycles); a `mod.rs` only declares its children
//! and re-exports, except [`cmd`]'s, which is the builtin table. From the top down:
//! - [`phone`] — [`SimPhone`] / [`SimPhoneHandle`]: a phone on a loopback listener in its
//!   own thread and runtime, and the caller's knobs. [`config`] — [`SimConfig`].
//! - [`adb`] — the ADB device transport, the only module that does network I/O:
//!   `packet` (framing), `conn` (accepting, reading and routing packets), `stream` (flow
//!   control), `service` (what a stream opens), the `shell` and `sync` services, `shared`
//!   (the phone and switches every connection shares).
//! - [`shell`] — the simulated `/system/bin/sh`: `parse` splits a line (**nothing is ever
//!   executed**: words name builtins; `$?` is the only expansion), `run` walks it
//!   ([`Device::run_line`]): sequences, `&&`/`||`, pipes, redirections.
//! - [`cmd`] — the builtins, one file each (`uiautomator`, `input`, `am`, `monkey`,
//!   `screencap`, `dumpsys`, `pm`, `wm`, `getprop`, `cat`, `ls`, `rm`, `grep`, ...) and the
//!   name table routing to them.
//! - [`device`] — the phone: [`Device`] (`state`: app, clock, latency, dump faults),
//!   `config`, `counters`, `exec` (a command's result), `files` (in-memory file system).
//! - [`app`] — the simulated app: page stack, taps, deep links, orders. No I/O, no clock
//!   of its own.
//! - [`screens`] — the accessibility tree of every page, one file per page (shapes of the
//!   real app), drawn from a [`screens::View`] of the app; shared helpers in `nodes`.
//! - [`account`] — the logged-in account (nickname, masked phone, delivery address) and
//!   the installed PDD version: plain data the handle changes mid-test.
//! - [`page`] — the pages, the sheet's state, popups: plain data the app and screens share.
//! - [`replay`] — replay mode: a recorded scenario (format v1: real dumps and the
//!   transitions between them) loaded and validated (`scenario`), its dumps indexed and
//!   tap selectors matched (`select`), the state machine (`player`) and its log (`log`).
//!   The device consults the player in `device/replay.rs` instead of the app.
//! - [`render`] — `screencap` pictures drawn from the tree.
//! - [`ui`] — the tree (`node`: nodes, clipping, hit testing) and its uiautomator XML
//!   (`xml`).
//! - [`variants`] — the real app's variants a goods can choose (payment method, 待付款
//!   entry, order detail layout) and every wording they put on screen.
//! - [`catalog`] — the goods the shop sells (`fixtures/catalog/*.json`), the truth other
//!   crates' tests compare against.
//! - [`ledger`] — every order created, persisted atomically to the state file.
//! - [`identity`] — the product names the banner and `getprop` report; [`error`].
//! - [`adb_server`] — a private real adb server with the phone behind it (rehearse on
//!   `u2`, the crash matrix, the tests).
//! - [`testing`] — test support: `adb`, free ports, deadlines, the u2 jar, the private
//!   adb server with its errors as test failures (not used by the phone).
//!
//! ## Entry points
//! [`SimPhone::start`] runs a phone on a bound loopback listener, in its own thread with
//! its own tokio runtime (so it works from sync tests and from inside other runtimes
//! alike) and returns a [`SimPhoneHandle`]: address, counters, orders, fault knobs,
//! shutdown. The `sim-phone` binary is thin glue over the same call.
//!
//! **Architecture invariant:** determinism. Every random choice (latencies, popups, order
//! numbers) comes from RNGs seeded by [`SimConfig::seed`]; with
//! [`SimConfig::start_time`] set, even the phone's clock advances only by simulated time.

pub mod account;
pub mod adb;
pub mod adb_server;
pub mod app;
pub mod catalog;
pub mod cmd;
pub mod config;
pub mod device;
pub mod error;
pub mod identity;
pub mod ledger;
pub mod page;
pub mod phone;
pub mod render;
pub mod replay;
pub mod screens;
pub mod shell;
pub mod system;
/// Test support for other crates' tests (and this crate's): a private adb server on a
/// free port with its own home, killed on drop. Not used by the phone itself.
pub mod testing;
pub mod u2;
pub mod ui;
pub mod variants;

pub use account::{Account, Address, PddVersion};
pub use catalog::{Catalog, Dimension, Goods, OptionForm, OptionSpec, Sku, StockRule};
pub use config::SimConfig;
pub use device::{
    Counters, Device, DeviceConfig, DumpFault, DumpFormat, Exec, FaultPlan, LatencyProfile,
};
pub use error::SimError;
pub use ledger::{Ledger, Order};
pub use page::{OrderTab, Page, PopupKind, PopupSchedule};
pub use phone::{HangGate, SimPhone, SimPhoneHandle};
pub use replay::{ReplayLogEntry, Scenario, ScenarioError};
pub use system::{
    Battery, HeadsUp, KeyRecord, LockKind, Plug, SwipeRecord, SystemConfig, TapRecord,
};
pub use variants::{
    CheckoutButton, ConfirmPageQuantity, OrderDetailForm, OrderListEntry, PaymentHandoff,
    PaymentMethod, PaymentOffer, UnpaidWording,
};
