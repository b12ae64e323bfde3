//! Running a phone: [`SimPhone`] starts one on a loopback listener, in its own thread with
//! its own tokio runtime; [`SimPhoneHandle`] is the caller's side of it (address, counters,
//! orders, fault knobs, shutdown); [`HangGate`] releases scripted hangs.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

use crate::account::{Account, Address, PddVersion};
use crate::adb;
use crate::config::SimConfig;
use crate::device::{Counters, Device, DumpFault, Exec};
use crate::error::SimError;
use crate::ledger::Order;
use crate::page::{Page, PopupKind};
use crate::replay::ReplayLogEntry;
use crate::system::{Battery, HeadsUp, KeyRecord, LockKind, SwipeRecord, SystemState, TapRecord};
use crate::u2::{CallFault, ScheduledFault};
use crate::ui::PDD;

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
        let mut device = config.build_device()?;
        if device.app().ledger().in_memory_only() {
            // Two phones started with the same seed must not hand out the same order
            // numbers: an in-memory ledger takes its salt from the phone's serial (a state
            // file keeps its own).
            device
                .app_mut()
                .ledger_mut()
                .set_salt(crate::ledger::salt_of_serial(&addr.to_string()));
        }
        let (offline_tx, _) = watch::channel(false);
        let shared = Arc::new(adb::Shared {
            device: std::sync::Mutex::new(device),
            profile: config.profile,
            offline: offline_tx,
            banner: adb::banner(),
            hangs: std::sync::Mutex::new(Vec::new()),
            u2_holds: std::sync::Mutex::new(Vec::new()),
            u2_changed: watch::channel(0).0,
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

    /// Replay mode: every action so far and where it led (empty in catalog mode).
    pub fn replay_log(&self) -> Vec<ReplayLogEntry> {
        self.shared
            .lock()
            .replay()
            .map(|p| p.log().to_vec())
            .unwrap_or_default()
    }

    /// Replay mode: the id of the screen on now (`None` in catalog mode).
    pub fn replay_screen(&self) -> Option<String> {
        self.shared
            .lock()
            .replay()
            .map(|p| p.screen_id().to_string())
    }

    /// Replay mode: how many actions matched no transition (0 in catalog mode).
    pub fn off_script_count(&self) -> usize {
        self.shared
            .lock()
            .replay()
            .map_or(0, |p| p.off_script_count())
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

    /// Go offline right after the command that brings the ledger to `orders` orders
    /// (the 提交订单 tap), once; `None` disarms it. See `FaultPlan::offline_after_orders`.
    pub fn set_offline_after_orders(&self, orders: Option<usize>) {
        self.shared.lock().cfg.faults.offline_after_orders = orders;
    }

    /// The screen goes off right after the command that placed the `orders`-th order,
    /// once (the lock engages when one is set); `None` disarms it. See
    /// `FaultPlan::screen_off_after_orders`.
    pub fn set_screen_off_after_orders(&self, orders: Option<usize>) {
        self.shared.lock().cfg.faults.screen_off_after_orders = orders;
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

    /// The logged-in account (nickname, masked phone, delivery address).
    pub fn account(&self) -> Account {
        self.shared.lock().app().account().clone()
    }

    /// Another account logs in, or the account's nickname, phone or preselected
    /// address change: every later screen shows it.
    pub fn set_account(&self, account: Account) {
        self.shared.lock().app_mut().set_account(account);
    }

    /// The account's preselected delivery address changes (`None`: no address,
    /// 手动添加地址).
    pub fn set_address(&self, address: Option<Address>) {
        let mut d = self.shared.lock();
        let mut a = d.app().account().clone();
        a.address = address;
        d.app_mut().set_account(a);
    }

    /// The installed PDD's version (`dumpsys package`).
    pub fn pdd_version(&self) -> PddVersion {
        self.shared.lock().app().pdd_version().clone()
    }

    /// PDD is updated in place (an app store overnight): `dumpsys package` prints the
    /// new version from now on.
    pub fn set_pdd_version(&self, name: &str, code: u64) {
        self.shared.lock().app_mut().set_pdd_version(PddVersion {
            name: name.to_string(),
            code,
        });
    }

    /// Lay a popup over the current page now.
    pub fn show_popup(&self, kind: PopupKind) {
        self.shared.lock().app_mut().show_popup(kind);
    }

    // ---- the phone's own state (see sim-phone/README.md) ----

    /// A snapshot of the phone's own state (screen, keyguard, overlays, battery, records).
    pub fn system(&self) -> SystemState {
        self.shared.lock().system().clone()
    }

    /// Turn the screen on (user activity starts now) or off (a configured lock engages).
    pub fn set_screen_on(&self, on: bool) {
        let mut d = self.shared.lock();
        let now = d.counters().device_time_ms;
        if on {
            d.system_mut().screen_on(now);
        } else {
            d.system_mut().screen_off();
        }
    }

    /// Set the screen lock. With the screen off it engages at once; `None` removes a
    /// showing keyguard.
    pub fn set_lock(&self, lock: LockKind) {
        self.shared.lock().system_mut().set_lock(lock);
    }

    /// Lock now (the keyguard shows over the app, as after the screen went off and on).
    pub fn lock_now(&self) {
        let mut d = self.shared.lock();
        let s = d.system_mut();
        if s.cfg.lock != LockKind::None {
            s.locked = true;
        }
    }

    /// The screen-off timeout in simulated device time (ms), counted from the last input.
    pub fn set_screen_off_timeout(&self, ms: Option<u64>) {
        self.shared.lock().system_mut().cfg.screen_off_timeout_ms = ms;
    }

    /// Pin a heads-up notification over the top of the screen; it collapses after
    /// `lasts_ms` of simulated device time (`None`: until swiped up or tapped).
    pub fn show_heads_up(&self, mut n: HeadsUp, lasts_ms: Option<u64>) {
        let mut d = self.shared.lock();
        let now = d.counters().device_time_ms;
        n.expires_at_ms = lasts_ms.map(|l| now + l);
        d.system_mut().heads_up = Some(n);
    }

    /// Pull the notification shade down (or put it away).
    pub fn set_shade(&self, open: bool) {
        self.shared.lock().system_mut().shade = open;
    }

    /// Set the battery; falling below 20 % unplugged raises the 电量不足 dialog.
    pub fn set_battery(&self, b: Battery) {
        self.shared.lock().system_mut().set_battery(b);
    }

    /// Raise the 电量不足 dialog now.
    pub fn show_low_battery_dialog(&self) {
        self.shared.lock().system_mut().low_battery_dialog = true;
    }

    /// A second app (the browser) claims `https://mobile.yangkeduo.com/…` links: deep links
    /// without `-p`/`-n` open the chooser.
    pub fn set_second_browser(&self, on: bool) {
        self.shared.lock().system_mut().cfg.second_browser = on;
    }

    /// Focusing a text field raises the keyboard window.
    pub fn set_keyboard(&self, on: bool) {
        self.shared.lock().system_mut().cfg.keyboard = on;
    }

    /// Refuse injected input (`input …` fails with the `INJECT_EVENTS` exception), as a
    /// MIUI phone does without "USB调试（安全设置）"; `false` is that switch turned on.
    pub fn set_input_injection_denied(&self, denied: bool) {
        self.shared.lock().system_mut().cfg.input_injection_denied = denied;
    }

    /// Every tap so far with the window and package it landed in (`None`: dropped, the
    /// screen was off).
    pub fn taps(&self) -> Vec<TapRecord> {
        self.shared.lock().system().taps.clone()
    }

    /// The taps that landed in a window of another package than PDD's.
    pub fn foreign_taps(&self) -> Vec<TapRecord> {
        self.taps()
            .into_iter()
            .filter(|t| t.package.as_deref().is_some_and(|p| p != PDD))
            .collect()
    }

    pub fn swipes(&self) -> Vec<SwipeRecord> {
        self.shared.lock().system().swipes.clone()
    }

    pub fn keys(&self) -> Vec<KeyRecord> {
        self.shared.lock().system().keys.clone()
    }

    /// Make every command line arriving over ADB that contains `pattern` hang, before
    /// it runs, until the returned gate is released (or dropped). For deadline tests:
    /// the caller's timeout fires while the command is provably still pending.
    pub fn hang_commands(&self, pattern: &str) -> HangGate {
        gate(&self.shared.hangs, pattern)
    }

    /// Make every JSON-RPC call of `method` (`click`, `dumpWindowHierarchy`, …) that
    /// uiautomator2's server receives wait, before it runs (not counted, no fault
    /// consumed), until the returned gate is released (or dropped) — or the server dies:
    /// the server-call counterpart of [`hang_commands`](Self::hang_commands), for tests
    /// that need a task provably in the middle of a step on either device backend.
    pub fn hold_u2_calls(&self, method: &str) -> HangGate {
        gate(&self.shared.u2_holds, method)
    }

    // ---- uiautomator2's server (see `docs/u2-server.md`) ----

    /// A uiautomator2 server process runs (listening or still starting).
    pub fn u2_running(&self) -> bool {
        self.shared.lock().u2.running.is_some()
    }

    /// The port the running server listens on, once it does.
    pub fn u2_listening_port(&self) -> Option<u16> {
        self.shared
            .lock()
            .u2
            .running
            .filter(|r| r.listening)
            .map(|r| r.port)
    }

    /// Kill the server process (the low-memory killer, a crash): its `app_process` stream
    /// ends (shell v2: exit status 137), open `tcp:` streams are cut, new ones refused.
    /// False when none ran.
    pub fn u2_kill(&self) -> bool {
        let killed = self.shared.lock().u2.kill();
        if killed {
            self.shared.u2_notify();
        }
        killed
    }

    /// The server's next JSON-RPC call is read and never answered (its stream stays
    /// open until the caller closes it or the server dies). Nothing of the call runs.
    pub fn u2_hang_next_call(&self) {
        self.shared.lock().u2.faults.hang_next = true;
    }

    /// The server's next JSON-RPC call does not run and answers the JSON-RPC error of a
    /// server whose UiAutomation connection is gone (`-32001`,
    /// `java.lang.IllegalStateException`, "UiAutomation not connected!").
    pub fn u2_rpc_error_next_call(&self) {
        self.shared.lock().u2.faults.rpc_error_next = true;
    }

    /// The server's next JSON-RPC call runs (a click lands), and its HTTP answer is cut
    /// after half its bytes; the stream then closes.
    pub fn u2_truncate_next_answer(&self) {
        self.shared.lock().u2.faults.truncate_next = true;
    }

    /// Script a fault for the `nth` (1-based) JSON-RPC call of `method` (`None`: the nth
    /// call of any method), counted over the phone's life (every server process). Fires
    /// once; deterministic where "next call" knobs race a running client.
    pub fn u2_fault_on_call(&self, method: Option<&str>, nth: u64, fault: CallFault) {
        self.shared.lock().u2.scheduled.push(ScheduledFault {
            method: method.map(str::to_string),
            nth,
            fault,
        });
    }

    /// JSON-RPC calls the server received so far, of `method` (`None`: of all methods).
    pub fn u2_calls(&self, method: Option<&str>) -> u64 {
        let d = self.shared.lock();
        match method {
            Some(m) => d.u2.calls_by_method.get(m).copied().unwrap_or(0),
            None => d.u2.calls,
        }
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

/// A new rule of `rules` holding what matches `pattern`, and its gate.
fn gate(rules: &std::sync::Mutex<Vec<adb::HangRule>>, pattern: &str) -> HangGate {
    let (tx, rx) = watch::channel(false);
    let hits = Arc::new(std::sync::atomic::AtomicU64::new(0));
    rules
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .push(adb::HangRule {
            pattern: pattern.to_string(),
            released: rx,
            hits: hits.clone(),
        });
    HangGate { tx, hits }
}

/// A scripted hang (see [`SimPhoneHandle::hang_commands`],
/// [`SimPhoneHandle::hold_u2_calls`]). Dropping it releases the held commands too.
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
