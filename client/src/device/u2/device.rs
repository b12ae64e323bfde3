//! [`U2Device`]: the [`Device`] trait with dumps and input through uiautomator2's
//! resident server, shell / deep links / screenshots on the [`AdbDevice`] beside it.
//!
//! # Failures
//! - The server died (its stream ended, `tcp:PORT` refused, "UiAutomation not
//!   connected" and the other broken-server answers): stopped and **restarted once**
//!   per job; the second time the job **falls back** to `uiautomator dump` and `input`
//!   over ADB for the rest of the job (the server stopped first: the two cannot run at
//!   once), logged with the reason. The next job tries the server again.
//! - A call whose request may have reached the server and whose answer was lost
//!   (truncated, the stream cut, no answer by the deadline) is **never repeated when it
//!   is input** (`click`, `swipe`, `pressKeyCode`: the tap may have landed): the flows get
//!   the device error they already handle for a tap of unknown result (after the submit
//!   tap that starts reconciliation). A dump is read-only and is repeated once.
//! - The phone out of reach (the adb server refuses `host:transport`: offline, not
//!   listed, unauthorized; or the adb server is gone) is the phone going away, not a
//!   server death: the call answers the uiautomator backend's device error
//!   (`DEVICE_OFFLINE`, …), no restart is spent and no fallback taken; once the phone is
//!   back the next call starts the server again (its shell stream died with the link).
//! - A call with no answer by its deadline is [`DeviceError::DeadlineExceeded`]; the
//!   server is pinged before the next call and restarted (once) if it does not answer.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};

use super::error::{Reach, U2Error};
use super::jar;
use super::server::{Server, U2Timing};
use super::transport::{Endpoint, Failure};
use crate::device::adb::{AdbDevice, DeviceAddress};
use crate::device::port::{Device, DeviceError, KeyCode, Op, Png, ShellOutput, UiDump};
use crate::screen::{Point, Tree};

/// uiautomator2's default port.
pub const DEFAULT_PORT: u16 = 9008;

/// How a [`U2Device`] behaves.
#[derive(Clone, Debug)]
pub struct U2Options {
    /// `device_backend = "u2"`: a server that does not start is a device error (no
    /// fallback at start; a server that dies during a job still falls back).
    pub required: bool,
    /// The jar on this computer (from [`jar::find`]), or why there is none.
    pub jar: Result<PathBuf, U2Error>,
    pub port: u16,
    pub timing: U2Timing,
}

struct State {
    server: Option<Server>,
    /// The jar's bytes and sha256, read once.
    jar: Option<(Vec<u8>, String)>,
    /// Restarts spent in this job (at most one).
    restarts: u32,
    /// Why this job uses `uiautomator dump` (fallback), if it does.
    fallback: Option<String>,
    /// A call had no answer by its deadline: ping before the next one.
    suspect: bool,
    /// The server has started at least once in this process (before that, a start
    /// failure is a device error in `required` mode and a fallback for good in `auto`).
    ever_started: bool,
}

/// The phone with dumps and input through uiautomator2's server. See the module doc.
pub struct U2Device {
    adb: Arc<AdbDevice>,
    /// `None`: direct TCP, where no raw `tcp:PORT` stream can be opened (adb_client
    /// keeps its sessions crate-private): the server is unavailable there.
    ep: Option<Endpoint>,
    opts: U2Options,
    state: Mutex<State>,
}

impl std::fmt::Debug for U2Device {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("U2Device")
            .field("adb", &self.adb)
            .field("port", &self.opts.port)
            .field("required", &self.opts.required)
            .finish()
    }
}

/// What a call came to.
enum Via<T> {
    U2(T),
    /// This job uses uiautomator over ADB.
    Adb,
}

impl U2Device {
    /// No network yet: the server starts at the first dump or input call.
    pub fn new(adb: Arc<AdbDevice>, opts: U2Options) -> U2Device {
        let ep = match adb.address() {
            DeviceAddress::Server { serial, server, .. } => Some(Endpoint {
                server: *server,
                serial: serial.clone(),
            }),
            DeviceAddress::Tcp(_) => None,
        };
        U2Device {
            adb,
            ep,
            opts,
            state: Mutex::new(State {
                server: None,
                jar: None,
                restarts: 0,
                fallback: None,
                suspect: false,
                ever_started: false,
            }),
        }
    }

    /// The ADB device beside it (shell, deep links, screenshots).
    pub fn adb(&self) -> &Arc<AdbDevice> {
        &self.adb
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new job: the restart is available again, and a job that fell back tries the
    /// server again — unless the server never started in this process (`auto`: then
    /// uiautomator stays, rather than every job waiting for a server that does not come).
    pub fn begin_job(&self) {
        let mut st = self.lock();
        st.restarts = 0;
        if !st.ever_started {
            return;
        }
        if let Some(why) = st.fallback.take() {
            tracing::info!(after = %why, "u2: a new job tries the uiautomator2 server again");
        }
    }

    /// `"u2"` while dumps and input go through the server (or will, at the first
    /// call), `"uiautomator"` after a fallback.
    pub fn backend_name(&self) -> &'static str {
        if self.lock().fallback.is_some() {
            "uiautomator"
        } else {
            "u2"
        }
    }

    /// Why the current job uses `uiautomator dump`, when it fell back.
    pub fn fallback_reason(&self) -> Option<String> {
        self.lock().fallback.clone()
    }

    /// Stop the server (if ours runs); the next call starts it again.
    pub fn stop_server(&self) {
        let mut st = self.lock();
        if let Some(mut s) = st.server.take() {
            s.stop(self.opts.timing.stop);
        }
    }

    fn start(&self, st: &mut State) -> Result<(), U2Error> {
        let Some(ep) = &self.ep else {
            return Err(U2Error::Unavailable(
                "the uiautomator2 server needs the adb server: a direct TCP device \
                 (tcp:HOST:PORT) cannot open tcp:PORT streams"
                    .into(),
            ));
        };
        let path = self.opts.jar.clone()?;
        if st.jar.is_none() {
            st.jar = Some(jar::read(&path)?);
        }
        let Some(j) = st.jar.as_ref() else {
            return Err(U2Error::JarNotFound(path.display().to_string()));
        };
        let server = Server::start(ep, self.opts.port, j, &*self.adb, &self.opts.timing)?;
        tracing::info!(
            port = self.opts.port,
            "u2: the uiautomator2 server is ready"
        );
        st.server = Some(server);
        st.ever_started = true;
        Ok(())
    }

    fn fall_back(&self, st: &mut State, reason: String) {
        if let Some(mut s) = st.server.take() {
            s.stop(self.opts.timing.stop);
        }
        tracing::warn!(
            reason = %reason,
            "u2: falling back to uiautomator dump and input over ADB for the rest of the job"
        );
        st.fallback = Some(reason);
    }

    /// The server died (or is broken): restart it once per job, else fall back. `Err`:
    /// the phone itself is out of reach (the restart found it offline, not listed, …):
    /// that is the phone going away, not a second death — no restart is spent, no
    /// fallback taken, and the next call after the phone is back starts the server.
    fn on_death(&self, st: &mut State, reason: String) -> Result<(), DeviceError> {
        if let Some(mut s) = st.server.take() {
            s.stop(self.opts.timing.stop);
        }
        if st.restarts == 0 {
            // Logged once the start says which it was: a restart, or the phone away.
            match self.start(st) {
                Ok(()) => {
                    st.restarts += 1;
                    tracing::warn!(reason = %reason, "u2: the server died; restarting it once: restarted");
                    return Ok(());
                }
                Err(e) if e.unreachable().is_some() => {
                    tracing::warn!(reason = %reason, phone = %e, "u2: the server is gone with the phone out of reach; it starts again when the phone answers (no restart spent, no fallback)");
                    return Err(self.phone_error(e));
                }
                Err(e) => {
                    st.restarts += 1;
                    tracing::warn!(reason = %reason, "u2: the server died; restarting it once");
                    self.fall_back(st, format!("{reason}; the restart failed: {e}"));
                    return Ok(());
                }
            }
        }
        self.fall_back(st, format!("{reason} (again after a restart)"));
        Ok(())
    }

    /// The device error of a phone out of reach ([`U2Error::Unreachable`]), as the
    /// uiautomator backend reports it: `DEVICE_OFFLINE`, `DEVICE_NOT_FOUND`, … — the
    /// flows' and the gate's "the phone went away" (after the submit tap: the run stays
    /// open and is reconciled). Any other error is wrapped as it is.
    fn phone_error(&self, e: U2Error) -> DeviceError {
        let serial = self
            .ep
            .as_ref()
            .map(|ep| ep.serial.clone())
            .unwrap_or_else(|| self.adb.address().label());
        match e {
            U2Error::Unreachable { reach, detail } => match reach {
                Reach::Offline => DeviceError::Offline {
                    serial,
                    state: format!("unreachable ({detail})"),
                },
                Reach::NotFound => DeviceError::NotFound { serial, detail },
                Reach::Unauthorized => DeviceError::Unauthorized { serial },
                Reach::AdbServer => DeviceError::AdbServerUnavailable {
                    addr: self
                        .ep
                        .as_ref()
                        .map(|ep| ep.server.to_string())
                        .unwrap_or_default(),
                    detail,
                },
            },
            other => DeviceError::U2(other),
        }
    }

    /// One call on the server under `op`'s deadline; `Via::Adb` when this job uses
    /// uiautomator. `repeatable`: read-only, repeated once when its answer was lost.
    fn call(
        &self,
        op: Op,
        deadline: Duration,
        method: &str,
        params: Value,
        repeatable: bool,
    ) -> Result<Via<Value>, DeviceError> {
        let mut st = self.lock();
        let mut repeated = false;
        // Bounded: each turn either returns, spends the one repeat, or changes the
        // state towards a fallback (restart once, then fall back).
        for _ in 0..6 {
            if st.fallback.is_some() {
                return Ok(Via::Adb);
            }
            if st.server.as_ref().is_some_and(|s| !s.alive()) {
                self.on_death(&mut st, "the server's stream ended".into())?;
                continue;
            }
            if st.suspect {
                st.suspect = false;
                if st
                    .server
                    .as_ref()
                    .is_some_and(|s| !s.ping(self.opts.timing.ping))
                {
                    self.on_death(&mut st, "no pong after a call that got no answer".into())?;
                    continue;
                }
            }
            if st.server.is_none() {
                if let Err(e) = self.start(&mut st) {
                    if e.unreachable().is_some() {
                        // The phone is away: a device error, as on uiautomator; the
                        // server starts at the first call once it is back.
                        return Err(self.phone_error(e));
                    }
                    if self.opts.required && !st.ever_started {
                        return Err(DeviceError::U2(e));
                    }
                    if st.ever_started && st.restarts == 0 {
                        // A server that ran before and is gone: this is its restart.
                        st.restarts += 1;
                    }
                    self.fall_back(&mut st, format!("the server did not start: {e}"));
                    return Ok(Via::Adb);
                }
            }
            let Some(server) = st.server.as_ref() else {
                continue;
            };
            let started = std::time::Instant::now();
            let answer = server.call(method, &params, deadline);
            // The timing hook of `/metrics`, as the uiautomator path's (`adb.rs`).
            crate::metrics::observe_device_call(op.as_str(), started.elapsed(), answer.is_ok());
            match answer {
                Ok(v) => return Ok(Via::U2(v)),
                Err(Failure {
                    timed_out: true, ..
                }) => {
                    st.suspect = true;
                    return Err(DeviceError::DeadlineExceeded { op, deadline });
                }
                Err(Failure { error, .. }) if error.unreachable().is_some() => {
                    // `host:transport` refused (the phone offline, not listed, …) or the
                    // adb server gone: the call never reached the phone. Not the
                    // server's death: no restart, no fallback (a dropped Wi-Fi link
                    // must not cost the job its server for good).
                    return Err(self.phone_error(error));
                }
                Err(Failure { error, sent, .. }) => {
                    if error.server_broken() || !sent {
                        // The call did not run (refused, or the server answered that
                        // it is broken): safe to do again on a restarted server.
                        self.on_death(&mut st, error.to_string())?;
                        continue;
                    }
                    if let U2Error::Rpc {
                        input_denied: true, ..
                    } = error
                    {
                        return Err(DeviceError::InputDenied {
                            program: format!("uiautomator2 {method}"),
                        });
                    }
                    if matches!(error, U2Error::Rpc { .. }) || !repeatable || repeated {
                        // Input whose answer was lost may have landed: never again.
                        return Err(DeviceError::U2(error));
                    }
                    repeated = true;
                    tracing::debug!(error = %error, "u2: {method} answer lost; reading again");
                }
            }
        }
        Err(DeviceError::U2(U2Error::ServerGone(
            "the server kept failing".into(),
        )))
    }

    fn input(&self, op: Op, method: &str, params: Value) -> Result<Via<()>, DeviceError> {
        let deadline = self.adb.options().deadlines.for_op(op);
        match self.call(op, deadline, method, params, false)? {
            Via::Adb => Ok(Via::Adb),
            Via::U2(Value::Bool(true)) => Ok(Via::U2(())),
            Via::U2(other) => Err(DeviceError::U2(U2Error::BadAnswer(format!(
                "{method} answered {}",
                super::http::snippet(&other.to_string())
            )))),
        }
    }
}

impl Device for U2Device {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        let deadline = self.adb.options().deadlines.dump;
        match self.call(
            Op::Dump,
            deadline,
            "dumpWindowHierarchy",
            json!([false, 50]),
            true,
        )? {
            Via::Adb => self.adb.dump_ui(),
            Via::U2(Value::String(xml)) => {
                let tree = Tree::parse(&xml)?;
                Ok(UiDump { xml, tree })
            }
            Via::U2(_) => Err(DeviceError::U2(U2Error::BadAnswer(
                "dumpWindowHierarchy did not answer a string".into(),
            ))),
        }
    }

    fn tap(&self, at: Point) -> Result<(), DeviceError> {
        match self.input(Op::Tap, "click", json!([at.x, at.y]))? {
            Via::Adb => self.adb.tap(at),
            Via::U2(()) => Ok(()),
        }
    }

    fn swipe(&self, from: Point, to: Point, duration: Duration) -> Result<(), DeviceError> {
        // One step ≈ 5 ms on the server; at least 2 steps, as the Python wrapper does.
        let steps = (duration.as_millis() / 5).clamp(2, 2000) as u64;
        let deadline = self.adb.options().deadlines.swipe + duration;
        let params = json!([from.x, from.y, to.x, to.y, steps]);
        match self.call(Op::Swipe, deadline, "swipe", params, false)? {
            Via::Adb => self.adb.swipe(from, to, duration),
            Via::U2(Value::Bool(true)) => Ok(()),
            Via::U2(other) => Err(DeviceError::U2(U2Error::BadAnswer(format!(
                "swipe answered {}",
                super::http::snippet(&other.to_string())
            )))),
        }
    }

    fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
        match self.input(Op::Key, "pressKeyCode", json!([code.0]))? {
            Via::Adb => self.adb.key(code),
            Via::U2(()) => Ok(()),
        }
    }

    fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        self.adb.open_url(url)
    }

    /// `screencap -p` over ADB: the server's `takeScreenshot` is a JPEG (lossy, and our
    /// artifacts and viewer are PNG), and screenshots are rare (failures, evidence).
    fn screenshot(&self) -> Result<Png, DeviceError> {
        self.adb.screenshot()
    }

    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        self.adb.shell(argv)
    }

    fn shell_batch(&self, cmds: &[&[&str]]) -> Result<Vec<ShellOutput>, DeviceError> {
        self.adb.shell_batch(cmds)
    }

    fn backend(&self) -> &'static str {
        self.backend_name()
    }

    fn backend_fallback(&self) -> Option<String> {
        self.fallback_reason()
    }
}

impl Drop for U2Device {
    fn drop(&mut self) {
        // Closing the start stream stops the server (no wait at exit).
        let mut st = self.lock();
        st.server.take();
    }
}
