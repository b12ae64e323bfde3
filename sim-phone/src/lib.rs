//! # sim-phone: a simulated Android phone running a simulated PDD app
//!
//! No machine of ours has a phone, yet the client's whole job is to drive one. This crate
//! is the stand-in: the real `adb` server and the `adb_client` crate talk to it as to a
//! phone (device side of the ADB transport over TCP, loopback only), and its
//! accessibility dumps have the shapes of the real PDD app's.
//!
//! ## Code map
//! - [`adb`] — the ADB device transport: packets, streams, flow control, the `shell`
//!   (v1 and v2), `exec` and `sync` services. The only module that does network I/O.
//! - [`shell`] — command-line parsing for the simulated `/system/bin/sh`. **Nothing is
//!   ever executed**: words name builtins; `$?` is the only expansion.
//! - [`device`] — the phone: builtins (`uiautomator`, `input`, `am`, `screencap`, ...),
//!   files, counters, scripted faults, the latency model.
//! - [`app`] — the simulated app: page stack, popups, orders. No I/O, no clock of its own.
//! - [`screens`] — the accessibility tree of every page (shapes of the real app).
//! - [`ui`] — nodes, clipping, hit testing, uiautomator XML.
//! - [`render`] — `screencap` pictures drawn from the tree.
//! - [`catalog`] — the goods the shop sells (`fixtures/catalog/*.json`), the truth other
//!   crates' tests compare against.
//! - [`ledger`] — every order created, persisted atomically to the state file.
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

pub mod adb;
pub mod app;
pub mod catalog;
pub mod cmd;
pub mod device;
pub mod error;
pub mod identity;
pub mod ledger;
pub mod page;
pub mod render;
pub mod screens;
pub mod shell;
/// Test support for other crates' tests (and this crate's): a private adb server on a
/// free port with its own home, killed on drop. Not used by the phone itself.
pub mod testing;
pub mod ui;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

pub use catalog::{Catalog, Dimension, Goods, OptionForm, OptionSpec, Sku, StockRule};
pub use device::{
    Counters, Device, DeviceConfig, DumpFault, DumpFormat, Exec, FaultPlan, LatencyProfile,
};
pub use error::SimError;
pub use ledger::{Ledger, Order};
pub use page::{Page, PopupKind, PopupSchedule};

/// Everything a phone is started with.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub catalog: Catalog,
    /// Where the order ledger lives; `None` keeps it in memory.
    pub state_file: Option<PathBuf>,
    pub profile: LatencyProfile,
    pub seed: u64,
    /// Screen size in pixels (layouts are designed for 1080 wide).
    pub width: u32,
    pub height: u32,
    pub popups: PopupSchedule,
    /// Show "商品编号：ID" on goods pages. The real app shows no goods id, which makes a
    /// redirected link hard to notice; this opt-in makes it visible. Default off.
    pub show_goods_id: bool,
    pub faults: FaultPlan,
    /// The phone's UTC offset (China: +08:00).
    pub utc_offset_secs: i32,
    /// Fixed clock start; `None` = the host's clock.
    pub start_time: Option<DateTime<Utc>>,
    pub dump_format: DumpFormat,
    /// Start with the app on its home page (else the launcher shows).
    pub launch_app: bool,
}

impl SimConfig {
    /// Defaults: in-memory ledger, zero latency, seed 0, 1080×2400, no popups, no faults,
    /// +08:00, host clock, pretty dumps, app launched.
    pub fn new(catalog: Catalog) -> SimConfig {
        SimConfig {
            catalog,
            state_file: None,
            profile: LatencyProfile::Zero,
            seed: 0,
            width: 1080,
            height: 2400,
            popups: PopupSchedule::Off,
            show_goods_id: false,
            faults: FaultPlan::default(),
            utc_offset_secs: 8 * 3600,
            start_time: None,
            dump_format: DumpFormat::Pretty,
            launch_app: true,
        }
    }

    /// Build the phone (without any network) — for in-process tests of the app model.
    pub fn build_device(&self) -> Result<Device, SimError> {
        let ledger = match &self.state_file {
            Some(p) => Ledger::open(p)?,
            None => Ledger::in_memory(),
        };
        Ok(Device::new(
            Arc::new(self.catalog.clone()),
            ledger,
            DeviceConfig {
                width: i32::try_from(self.width).unwrap_or(1080),
                height: i32::try_from(self.height).unwrap_or(2400),
                seed: self.seed,
                profile: self.profile,
                utc_offset_secs: self.utc_offset_secs,
                start_time: self.start_time,
                faults: self.faults.clone(),
                dump_format: self.dump_format,
                popups: self.popups.clone(),
                show_goods_id: self.show_goods_id,
                launch_app: self.launch_app,
            },
        ))
    }
}

/// Starts phones.
pub struct SimPhone;

impl SimPhone {
    /// Serve a phone on `listener` (must be bound to a loopback address) until the handle
    /// is shut down or dropped.
    pub fn start(
        listener: std::net::TcpListener,
        config: SimConfig,
    ) -> Result<SimPhoneHandle, SimError> {
        let addr = listener.local_addr().map_err(SimError::Listener)?;
        if !addr.ip().is_loopback() {
            return Err(SimError::NotLoopback(addr));
        }
        listener.set_nonblocking(true).map_err(SimError::Listener)?;
        let device = config.build_device()?;
        let (offline_tx, _) = watch::channel(false);
        let shared = Arc::new(adb::Shared {
            device: std::sync::Mutex::new(device),
            profile: config.profile,
            offline: offline_tx,
            banner: adb::banner(),
            hangs: std::sync::Mutex::new(Vec::new()),
        });
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        // The runtime is built, run and dropped on the phone's own thread only: dropping a
        // runtime inside a caller's async context would panic.
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), SimError>>();
        let sh = shared.clone();
        let thread = std::thread::Builder::new()
            .name("sim-phone-main".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("sim-phone")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(SimError::Runtime(e)));
                        return;
                    }
                };
                let listener = {
                    let _g = rt.enter();
                    tokio::net::TcpListener::from_std(listener)
                };
                match listener {
                    Ok(l) => {
                        let _ = ready_tx.send(Ok(()));
                        rt.block_on(adb::serve(l, sh, shutdown_rx));
                    }
                    Err(e) => {
                        let _ = ready_tx.send(Err(SimError::Listener(e)));
                    }
                }
                // Connections still running are cut when the runtime goes.
                rt.shutdown_timeout(std::time::Duration::from_millis(200));
            })
            .map_err(SimError::Runtime)?;
        match ready_rx.recv() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(SimError::Runtime(std::io::Error::other(
                    "phone thread died",
                )));
            }
        }
        Ok(SimPhoneHandle {
            addr,
            shared,
            shutdown: shutdown_tx,
            thread: Some(thread),
        })
    }

    /// Bind `addr` (loopback only; port 0 picks a free port) and serve a phone on it.
    pub fn bind(addr: SocketAddr, config: SimConfig) -> Result<SimPhoneHandle, SimError> {
        if !addr.ip().is_loopback() {
            return Err(SimError::NotLoopback(addr));
        }
        let l = std::net::TcpListener::bind(addr).map_err(SimError::Listener)?;
        SimPhone::start(l, config)
    }
}

/// A running phone. Dropping it shuts the phone down.
pub struct SimPhoneHandle {
    addr: SocketAddr,
    shared: Arc<adb::Shared>,
    shutdown: watch::Sender<bool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SimPhoneHandle {
    /// The address the phone listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The serial the adb server will list after `adb connect` ("127.0.0.1:PORT").
    pub fn serial(&self) -> String {
        self.addr.to_string()
    }

    /// Counters so far.
    pub fn counters(&self) -> Counters {
        self.shared.lock().counters().clone()
    }

    /// Every order in the ledger.
    pub fn orders(&self) -> Vec<Order> {
        self.shared.lock().app().ledger().orders().to_vec()
    }

    /// Name of the page on screen ("home", "goods", "sku_sheet", "payment",
    /// "abandon_dialog", "pay_result", "profile", "order_list", "order_detail", "login",
    /// "risk", "not_found", "launcher").
    pub fn current_page(&self) -> String {
        self.shared.lock().app().page_name().to_string()
    }

    /// The page itself (selection, quantity, scroll offsets ...).
    pub fn page(&self) -> Option<Page> {
        self.shared.lock().app().page().cloned()
    }

    pub fn popup(&self) -> Option<PopupKind> {
        self.shared.lock().app().popup()
    }

    /// The last toast (toasts never appear in dumps).
    pub fn last_toast(&self) -> Option<String> {
        self.shared.lock().app().last_toast().map(str::to_string)
    }

    /// The dump the phone would produce now (without counting a dump).
    pub fn dump_xml(&self) -> String {
        self.shared.lock().dump_xml()
    }

    /// Make the `nth` dump (1-based, counting every dump since start) fail so.
    pub fn fail_dump(&self, nth: u64, fault: DumpFault) {
        self.shared.lock().extra_dump_faults.push((nth, fault));
    }

    /// Make the next dump fail so.
    pub fn fail_next_dump(&self, fault: DumpFault) {
        let mut d = self.shared.lock();
        let n = d.counters.dumps + 1;
        d.extra_dump_faults.push((n, fault));
    }

    /// Take the phone offline (every connection is cut, new ones are closed at once) or
    /// bring it back.
    pub fn set_offline(&self, offline: bool) {
        self.shared.lock().offline = offline;
        self.shared.offline.send_if_modified(|v| {
            let changed = *v != offline;
            *v = offline;
            changed
        });
    }

    /// Lay a popup over the current page now.
    pub fn show_popup(&self, kind: PopupKind) {
        self.shared.lock().app_mut().show_popup(kind);
    }

    /// Make every command line arriving over ADB that contains `pattern` hang, before
    /// it runs, until the returned gate is released (or dropped). For deadline tests:
    /// the caller's timeout fires while the command is provably still pending.
    pub fn hang_commands(&self, pattern: &str) -> HangGate {
        let (tx, rx) = watch::channel(false);
        let hits = Arc::new(std::sync::atomic::AtomicU64::new(0));
        self.shared
            .hangs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(adb::HangRule {
                pattern: pattern.to_string(),
                released: rx,
                hits: hits.clone(),
            });
        HangGate { tx, hits }
    }

    /// Run a command line on the phone directly (no ADB), as the shell would.
    pub fn run_shell(&self, line: &str) -> Exec {
        let out = self.shared.lock().run_line(line);
        // A scripted offline fault may have fired: cut connections as ADB commands would.
        self.shared.sync_offline();
        out
    }

    /// Anything else: direct access to the phone under its lock. Keep `f` short: every
    /// connection waits for it.
    pub fn with_device<R>(&self, f: impl FnOnce(&mut Device) -> R) -> R {
        f(&mut self.shared.lock())
    }

    /// Stop serving and wait for the phone's thread to end.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let _ = self.shutdown.send(true);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A scripted hang (see [`SimPhoneHandle::hang_commands`]). Dropping it releases the
/// held commands too.
pub struct HangGate {
    tx: watch::Sender<bool>,
    hits: Arc<std::sync::atomic::AtomicU64>,
}

impl HangGate {
    /// How many command lines have been held by this gate so far.
    pub fn hits(&self) -> u64 {
        self.hits.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Let the held commands (and later matching ones) run.
    pub fn release(self) {
        // Drop does it.
    }
}

impl Drop for HangGate {
    fn drop(&mut self) {
        self.tx.send_replace(true);
    }
}

impl Drop for SimPhoneHandle {
    fn drop(&mut self) {
        self.stop();
    }
}
