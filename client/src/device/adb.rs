//! [`AdbDevice`]: the [`Device`] trait on `adb_client` 3.2.
//!
//! # Transports
//! - **Through an adb server** ([`DeviceAddress::Server`]): a USB serial, or a
//!   `host:port` serial which is `adb connect`ed first (host `connect` request). Shell
//!   commands go over shell v2 (`ADBServerDevice::shell_command`): stdout and stderr
//!   arrive separately, but the crate drops the exit packet (returns `Ok(None)`).
//! - **Directly over TCP** ([`DeviceAddress::Tcp`], `tcp:HOST:PORT`): `ADBTcpDevice`
//!   speaks the device protocol itself, shell v1 only: stderr merged into stdout, no
//!   exit status. It authenticates with an RSA key kept at [`AdbOptions::key_path`]
//!   (created on first use, mode 0600) so a phone that asked once ("always allow from
//!   this computer") is not asked again.
//!
//! On both, the exit status is recovered by the `; echo <nonce marker>$?` suffix of
//! [`quote`](super::quote).
//!
//! # Deadlines
//! `adb_client` has no timeouts (its reads block forever). Each `AdbDevice` owns one
//! worker thread holding the connection; a call sends a job to it and waits on a
//! channel with `recv_timeout(deadline)`. When the deadline passes the call returns
//! [`DeviceError::DeadlineExceeded`] and the worker is *abandoned*: its device streams,
//! which all pass through a loopback relay (`super::relay`), are cut in a way that
//! makes the read `adb_client` is blocked in fail, so the thread ends (and never spins
//! on an end of stream, which the crate's direct reader does); the next call starts a fresh
//! worker with a fresh connection. Connection-level errors (I/O, protocol, offline)
//! discard the worker the same way. A thread blocked where the relay cannot reach it
//! (a hung `devices`/`connect` request to the server) may linger until the server
//! answers: at most [`MAX_ABANDONED`] may, beyond that the device is reported offline
//! instead of piling up threads.
//!
//! # The implicit `adb start-server`
//! `ADBServer` runs `adb start-server` whenever it connects to a loopback address —
//! with the default port unless the environment says otherwise, i.e. it could start a
//! second server on 5037 next to the one we were told to use. We never let it: its
//! "adb path" is `true`, so that spawn is a no-op, and an unreachable server is
//! reported as [`DeviceError::AdbServerUnavailable`].

use std::io::ErrorKind;
use std::net::{SocketAddr, SocketAddrV4, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use adb_client::server::{ADBServer, DeviceState};
use adb_client::server_device::ADBServerDevice;
use adb_client::tcp::ADBTcpDevice;
use adb_client::{ADBDeviceExt, RustADBError};

use super::forward::{Forward, ForwardKill, Mode};
use super::port::{Device, DeviceError, KeyCode, Op, Png, ShellOutput, UiDump};
use super::quote::{self, command_line};
use crate::screen::{DumpError, Point, Tree, PDD_PACKAGE};

/// Abandoned (hung) worker threads allowed to linger per device.
pub const MAX_ABANDONED: usize = 4;

/// The program `ADBServer` runs instead of `adb start-server` (see the module doc).
const NO_START_SERVER: &str = "true";

/// The default adb server: loopback, port from `ANDROID_ADB_SERVER_PORT` or 5037.
pub fn default_adb_server(env_port: Option<&str>) -> SocketAddrV4 {
    let port = env_port
        .and_then(|p| p.trim().parse::<u16>().ok())
        .unwrap_or(5037);
    SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, port)
}

/// Which phone, and how to reach it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceAddress {
    /// A serial the adb server at `server` knows. `connect` is the address to
    /// `adb connect` first (serials of the form `host:port`).
    Server {
        serial: String,
        server: SocketAddrV4,
        connect: Option<SocketAddrV4>,
    },
    /// Direct TCP to the phone's adbd (`tcp:HOST:PORT`).
    Tcp(SocketAddr),
}

impl DeviceAddress {
    /// `tcp:HOST:PORT` → direct; anything else is an adb serial, and a serial that
    /// reads as `host:port` is connected through the server first.
    pub fn parse(device: &str, server: SocketAddrV4) -> Result<DeviceAddress, DeviceError> {
        let device = device.trim();
        if device.is_empty() {
            return Err(DeviceError::InvalidArgument("empty device serial".into()));
        }
        if let Some(hp) = device.strip_prefix("tcp:") {
            let addr = resolve(hp)?;
            return Ok(DeviceAddress::Tcp(addr));
        }
        let connect = match device.rsplit_once(':') {
            Some((host, port)) if !host.is_empty() && port.parse::<u16>().is_ok() => {
                match resolve(device)? {
                    SocketAddr::V4(v4) => Some(v4),
                    SocketAddr::V6(_) => {
                        return Err(DeviceError::InvalidArgument(format!(
                            "{device}: the adb server's connect takes IPv4 addresses only"
                        )))
                    }
                }
            }
            _ => None,
        };
        Ok(DeviceAddress::Server {
            serial: device.to_string(),
            server,
            connect,
        })
    }

    /// How the device is named in errors and reports.
    pub fn label(&self) -> String {
        match self {
            DeviceAddress::Server { serial, .. } => serial.clone(),
            DeviceAddress::Tcp(a) => format!("tcp:{a}"),
        }
    }

    pub fn transport(&self) -> &'static str {
        match self {
            DeviceAddress::Server { .. } => "adb-server",
            DeviceAddress::Tcp(_) => "tcp",
        }
    }
}

fn resolve(host_port: &str) -> Result<SocketAddr, DeviceError> {
    let mut addrs = host_port.to_socket_addrs().map_err(|e| {
        DeviceError::InvalidArgument(format!("{host_port}: not a HOST:PORT address ({e})"))
    })?;
    // Prefer IPv4: adb servers and most phones listen there.
    let all: Vec<SocketAddr> = addrs.by_ref().collect();
    all.iter()
        .find(|a| a.is_ipv4())
        .or_else(|| all.first())
        .copied()
        .ok_or_else(|| DeviceError::InvalidArgument(format!("{host_port}: no address")))
}

/// Per-operation deadlines. A dump is slow on a real phone (0.8–3 s, more on busy
/// screens); a tap is a few tens of milliseconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deadlines {
    /// Connecting a fresh worker (TCP + handshake, or `adb connect` and waiting for
    /// the `device` state), before the first operation on it.
    pub connect: Duration,
    pub dump: Duration,
    pub tap: Duration,
    pub key: Duration,
    /// Plus the swipe's own duration.
    pub swipe: Duration,
    pub open_url: Duration,
    pub screenshot: Duration,
    pub shell: Duration,
    /// Device-state queries (`doctor`).
    pub state: Duration,
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            connect: Duration::from_secs(10),
            dump: Duration::from_secs(20),
            tap: Duration::from_secs(5),
            key: Duration::from_secs(5),
            swipe: Duration::from_secs(5),
            open_url: Duration::from_secs(10),
            screenshot: Duration::from_secs(15),
            shell: Duration::from_secs(15),
            state: Duration::from_secs(5),
        }
    }
}

impl Deadlines {
    pub fn for_op(&self, op: Op) -> Duration {
        match op {
            Op::Connect => self.connect,
            Op::Dump => self.dump,
            Op::Tap => self.tap,
            Op::Swipe => self.swipe,
            Op::Key => self.key,
            Op::OpenUrl => self.open_url,
            Op::Screenshot => self.screenshot,
            Op::Shell => self.shell,
            Op::State => self.state,
        }
    }

    /// Every deadline set to `d` (tests).
    pub fn all(d: Duration) -> Deadlines {
        Deadlines {
            connect: d,
            dump: d,
            tap: d,
            key: d,
            swipe: d,
            open_url: d,
            screenshot: d,
            shell: d,
            state: d,
        }
    }
}

/// Where `uiautomator dump` writes.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum DumpMode {
    /// `uiautomator dump /dev/tty`: the XML comes back on stdout; no file, nothing
    /// stale to read.
    #[default]
    Tty,
    /// Dump to this file and `cat` it, for phones whose uiautomator cannot write to
    /// the tty. The file is deleted first, and a dump that does not recreate it is
    /// [`DeviceError::DumpFileMissing`], never an old file's content.
    File(String),
}

/// How an [`AdbDevice`] behaves.
#[derive(Clone, Debug)]
pub struct AdbOptions {
    pub deadlines: Deadlines,
    pub dump_mode: DumpMode,
    /// The RSA key for direct TCP (PKCS#8 PEM, the format of `~/.android/adbkey`);
    /// created when missing. Conventionally `<data dir>/adbkey`.
    pub key_path: PathBuf,
    /// `am start -p <package>` for [`Device::open_url`]: lets PDD take the URL without
    /// a chooser. `None` leaves the choice to Android.
    pub url_package: Option<String>,
}

impl AdbOptions {
    pub fn new(key_path: PathBuf) -> AdbOptions {
        AdbOptions {
            deadlines: Deadlines::default(),
            dump_mode: DumpMode::Tty,
            key_path,
            url_package: Some(PDD_PACKAGE.to_string()),
        }
    }
}

/// A job for the worker: runs on its thread with the connection.
type Job = Box<dyn FnOnce(&mut Link) + Send>;

/// The caller's side of a worker thread.
struct Worker {
    jobs: mpsc::Sender<Job>,
    /// Cuts the worker's connections (see [`super::relay`]) so a thread blocked in
    /// `adb_client` gets an error and ends instead of lingering.
    kill: Arc<ForwardKill>,
    /// The worker's connection is up (its connect step succeeded).
    connected: bool,
}

/// A phone reached through `adb_client`. See the module doc.
pub struct AdbDevice {
    addr: DeviceAddress,
    opts: AdbOptions,
    worker: Mutex<Option<Worker>>,
    /// Worker threads alive (the current one and abandoned ones still blocked).
    lingering: Arc<AtomicUsize>,
}

impl std::fmt::Debug for AdbDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdbDevice")
            .field("addr", &self.addr)
            .field("dump_mode", &self.opts.dump_mode)
            .finish()
    }
}

impl AdbDevice {
    /// Prepare a device (no network yet: the first call connects). For direct TCP the
    /// key is loaded or created here, so a broken key shows up at once.
    pub fn open(addr: DeviceAddress, opts: AdbOptions) -> Result<AdbDevice, DeviceError> {
        if matches!(addr, DeviceAddress::Tcp(_)) {
            ensure_key(&opts.key_path)?;
        }
        Ok(AdbDevice {
            addr,
            opts,
            worker: Mutex::new(None),
            lingering: Arc::new(AtomicUsize::new(0)),
        })
    }

    pub fn address(&self) -> &DeviceAddress {
        &self.addr
    }

    pub fn options(&self) -> &AdbOptions {
        &self.opts
    }

    /// Worker threads alive: the current one (if any) plus abandoned ones whose hung
    /// call has not returned yet.
    pub fn live_workers(&self) -> usize {
        self.lingering.load(Ordering::Acquire)
    }

    /// The device's state as the transport sees it: `device`, `offline`,
    /// `unauthorized`, … (through a server: its `devices` listing; direct: whether the
    /// connection handshake succeeds). Errors are returned, not folded into the state.
    pub fn state(&self) -> Result<String, DeviceError> {
        match &self.addr {
            DeviceAddress::Server {
                serial,
                server,
                connect,
            } => {
                let (serial, server, connect) = (serial.clone(), *server, *connect);
                let wait = self.opts.deadlines.connect;
                // A listing is its own short connection to the server: no worker needed,
                // but the same deadline discipline.
                run_bounded(Op::State, self.opts.deadlines.state + wait, move || {
                    let mut srv = server_client(server);
                    if let Some(c) = connect {
                        adb_connect(&mut srv, server, c)?;
                    }
                    let st = listed_state(&mut srv, server, &serial)?;
                    Ok(st.map_or_else(|| "not found".to_string(), |s| s.to_string()))
                })
            }
            DeviceAddress::Tcp(_) => self
                .call(Op::State, |link, _| link.ensure().map(drop))
                .map(|()| "device".into()),
        }
    }

    /// Run `f` on the worker under the deadline of `op`.
    fn call<T: Send + 'static>(
        &self,
        op: Op,
        f: impl FnOnce(&mut Link, &AdbOptions) -> Result<T, DeviceError> + Send + 'static,
    ) -> Result<T, DeviceError> {
        self.call_for(op, self.opts.deadlines.for_op(op), f)
    }

    fn call_for<T: Send + 'static>(
        &self,
        op: Op,
        budget: Duration,
        f: impl FnOnce(&mut Link, &AdbOptions) -> Result<T, DeviceError> + Send + 'static,
    ) -> Result<T, DeviceError> {
        // One call at a time per phone; the lock is held for at most two deadlines.
        let mut slot = self.worker.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(self.spawn_worker()?);
        }
        // A fresh worker connects first, under the connect deadline, so the operation's
        // own deadline is never spent on (or inflated by) connecting.
        if slot.as_ref().is_some_and(|w| !w.connected) {
            self.dispatch(
                &mut slot,
                Op::Connect,
                self.opts.deadlines.connect,
                |link, _| link.ensure().map(drop),
            )?;
            if let Some(w) = slot.as_mut() {
                w.connected = true;
            }
        }
        self.dispatch(&mut slot, op, budget, f)
    }

    /// Send one job to the worker in `slot` and wait for it at most `deadline`. Discards
    /// the worker (cutting its connections) on a deadline or a connection-level error.
    fn dispatch<T: Send + 'static>(
        &self,
        slot: &mut Option<Worker>,
        op: Op,
        deadline: Duration,
        f: impl FnOnce(&mut Link, &AdbOptions) -> Result<T, DeviceError> + Send + 'static,
    ) -> Result<T, DeviceError> {
        let Some(worker) = slot.as_mut() else {
            return Err(DeviceError::Protocol("no device worker".into()));
        };
        let (tx, rx) = mpsc::sync_channel(1);
        let opts = self.opts.clone();
        let job: Job = Box::new(move |link: &mut Link| {
            let r = f(link, &opts);
            // The caller may have given up (deadline): nobody to tell then.
            let _ = tx.send(r);
        });
        let started = Instant::now();
        if worker.jobs.send(job).is_err() {
            *slot = None;
            return Err(DeviceError::Protocol(
                "the device worker has stopped".into(),
            ));
        }
        let answer = rx.recv_timeout(deadline);
        // The timing hook of `/metrics` (device round-trip latency by operation).
        crate::metrics::observe_device_call(
            op.as_str(),
            started.elapsed(),
            matches!(answer, Ok(Ok(_))),
        );
        match answer {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                if e.poisons_connection() {
                    *slot = None;
                }
                Err(e)
            }
            Err(RecvTimeoutError::Timeout) => {
                tracing::warn!(device = %self.addr.label(), op = %op, ?deadline, "device call exceeded its deadline; dropping the connection");
                worker.kill.reset_all();
                *slot = None;
                Err(DeviceError::DeadlineExceeded { op, deadline })
            }
            Err(RecvTimeoutError::Disconnected) => {
                *slot = None;
                Err(DeviceError::Protocol(
                    "the device worker ended without an answer".into(),
                ))
            }
        }
    }

    fn spawn_worker(&self) -> Result<Worker, DeviceError> {
        if self.lingering.load(Ordering::Acquire) >= MAX_ABANDONED {
            return Err(DeviceError::Offline {
                serial: self.addr.label(),
                state: format!("not answering ({MAX_ABANDONED} earlier calls are still hung)"),
            });
        }
        let (tx, rx) = mpsc::channel::<Job>();
        let (target, mode) = match &self.addr {
            DeviceAddress::Server { server, .. } => (SocketAddr::V4(*server), Mode::Server),
            DeviceAddress::Tcp(a) => (*a, Mode::Device),
        };
        let relay = Forward::start(target, mode, self.opts.deadlines.connect)
            .map_err(|e| DeviceError::Io(format!("cannot start the local relay: {e}")))?;
        let kill = relay.kill_switch();
        let addr = self.addr.clone();
        let key = self.opts.key_path.clone();
        let wait = self.opts.deadlines.connect;
        let lingering = self.lingering.clone();
        // Counted from the start; a worker that ends normally (its channel dropped and
        // no job hung) is gone within microseconds, so the count is of hung ones.
        lingering.fetch_add(1, Ordering::AcqRel);
        let spawned = std::thread::Builder::new()
            .name("adb-device".into())
            .spawn(move || {
                struct Leave(Arc<AtomicUsize>);
                impl Drop for Leave {
                    fn drop(&mut self) {
                        self.0.fetch_sub(1, Ordering::AcqRel);
                    }
                }
                let _leave = Leave(lingering);
                let mut link = Link::new(addr, key, wait, relay);
                while let Ok(job) = rx.recv() {
                    job(&mut link);
                }
            });
        match spawned {
            Ok(_) => Ok(Worker {
                jobs: tx,
                kill,
                connected: false,
            }),
            Err(e) => {
                self.lingering.fetch_sub(1, Ordering::AcqRel);
                Err(DeviceError::Io(format!(
                    "cannot start a device thread: {e}"
                )))
            }
        }
    }

    /// Run one argv; non-zero exit is returned in the output.
    fn run(&self, op: Op, argv: Vec<String>) -> Result<ShellOutput, DeviceError> {
        let budget = self.opts.deadlines.for_op(op);
        self.run_for(op, budget, argv)
    }

    fn run_for(
        &self,
        op: Op,
        budget: Duration,
        argv: Vec<String>,
    ) -> Result<ShellOutput, DeviceError> {
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        let line = command_line(&words)?;
        self.call_for(op, budget, move |link, _| link.shell(&line))
    }

    /// Run an `input …` style command that must succeed and print no exception.
    fn run_checked(
        &self,
        op: Op,
        budget: Duration,
        argv: Vec<String>,
    ) -> Result<ShellOutput, DeviceError> {
        let program = argv.iter().take(2).cloned().collect::<Vec<_>>().join(" ");
        let out = self.run_for(op, budget, argv)?;
        check_success(&program, out)
    }
}

/// Exit status 0 and no error text (`am`/`input` print errors and may still exit 0,
/// e.g. MIUI's INJECT_EVENTS SecurityException, "Error: Activity not started").
fn check_success(program: &str, out: ShellOutput) -> Result<ShellOutput, DeviceError> {
    let text = format!("{}\n{}", out.stdout_text(), out.stderr_text());
    // `am start` echoes the intent ("Starting: Intent { … dat=URL }"): a URL is not
    // an error message, whatever it contains (newlines included).
    let mut in_echo = false;
    let error_text = text.lines().any(|l| {
        let l = l.trim_start();
        if l.starts_with("Starting:") || in_echo {
            in_echo = !l.trim_end().ends_with('}');
            return false;
        }
        l.starts_with("Error")
            || l.starts_with("Usage:")
            || l.starts_with("Exception")
            || ((l.starts_with("java.") || l.starts_with("android.")) && l.contains("Exception"))
    });
    if (out.exit_code != 0 || error_text) && text.contains("INJECT_EVENTS") {
        // MIUI / HyperOS without "USB调试（安全设置）" (Android 10: "Injecting to another
        // application requires INJECT_EVENTS permission"; 12+: "Injecting input events
        // requires the caller … to have the INJECT_EVENTS permission.").
        return Err(DeviceError::InputDenied {
            program: program.to_string(),
        });
    }
    if out.exit_code != 0 || error_text {
        let shown = if out.stderr.is_empty() {
            out.stdout_text()
        } else {
            out.stderr_text()
        };
        return Err(DeviceError::CommandFailed {
            program: program.to_string(),
            exit_code: out.exit_code,
            stderr: snippet(&shown),
        });
    }
    Ok(out)
}

fn snippet(s: &str) -> String {
    let t = s.trim();
    let mut out: String = t.chars().take(200).collect();
    if t.chars().count() > 200 {
        out.push('…');
    }
    out
}

impl Device for AdbDevice {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        let mode = self.opts.dump_mode.clone();
        self.call(Op::Dump, move |link, _| match mode {
            DumpMode::Tty => {
                let out = link.shell(&command_line(&["uiautomator", "dump", "/dev/tty"])?)?;
                parse_dump(out)
            }
            DumpMode::File(path) => dump_via_file(link, &path),
        })
    }

    fn tap(&self, at: Point) -> Result<(), DeviceError> {
        let argv = vec![
            "input".into(),
            "tap".into(),
            at.x.to_string(),
            at.y.to_string(),
        ];
        self.run_checked(Op::Tap, self.opts.deadlines.tap, argv)
            .map(drop)
    }

    fn swipe(&self, from: Point, to: Point, duration: Duration) -> Result<(), DeviceError> {
        let ms = duration.as_millis().min(60_000);
        let argv = vec![
            "input".into(),
            "swipe".into(),
            from.x.to_string(),
            from.y.to_string(),
            to.x.to_string(),
            to.y.to_string(),
            ms.to_string(),
        ];
        let budget = self.opts.deadlines.swipe + Duration::from_millis(ms as u64);
        self.run_checked(Op::Swipe, budget, argv).map(drop)
    }

    fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
        let argv = vec!["input".into(), "keyevent".into(), code.0.to_string()];
        self.run_checked(Op::Key, self.opts.deadlines.key, argv)
            .map(drop)
    }

    fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        if url.trim().is_empty() {
            return Err(DeviceError::InvalidArgument("empty URL".into()));
        }
        let mut argv: Vec<String> = vec![
            "am".into(),
            "start".into(),
            "-a".into(),
            "android.intent.action.VIEW".into(),
            "-d".into(),
            url.to_string(),
        ];
        if let Some(p) = &self.opts.url_package {
            argv.push("-p".into());
            argv.push(p.clone());
        }
        self.run_checked(Op::OpenUrl, self.opts.deadlines.open_url, argv)
            .map(drop)
    }

    fn screenshot(&self) -> Result<Png, DeviceError> {
        let out = self.run(Op::Screenshot, vec!["screencap".into(), "-p".into()])?;
        let out = check_success("screencap -p", out)?;
        let (width, height) = check_png(&out.stdout)?;
        Ok(Png {
            bytes: out.stdout,
            width,
            height,
        })
    }

    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        self.run(Op::Shell, argv.iter().map(|s| s.to_string()).collect())
    }

    fn shell_batch(&self, cmds: &[&[&str]]) -> Result<Vec<ShellOutput>, DeviceError> {
        let marker = quote::new_marker();
        let line = quote::batch_line(cmds, &marker)?;
        let n = cmds.len();
        let out = self.call(Op::Shell, move |link, _| link.shell(&line))?;
        let parts = quote::split_batch(&out.stdout, &marker, n).ok_or_else(|| {
            DeviceError::Protocol("a section of the command batch never arrived".into())
        })?;
        Ok(parts
            .into_iter()
            .map(|(stdout, exit_code)| ShellOutput {
                stdout,
                stderr: Vec::new(),
                exit_code,
            })
            .collect())
    }
}

/// Turn the output of `uiautomator dump /dev/tty` into a tree, or the typed failure.
/// stderr is looked at too: the failure texts arrive there with exit status 0.
fn parse_dump(out: ShellOutput) -> Result<UiDump, DeviceError> {
    let stdout = out.stdout_text();
    let stderr = out.stderr_text();
    let combined = if stderr.trim().is_empty() {
        stdout.clone()
    } else {
        format!("{stdout}\n{stderr}")
    };
    let tree = Tree::parse(&combined)?;
    Ok(UiDump { xml: stdout, tree })
}

/// File mode: delete, dump, check the "dumped to" line, read. Three commands under the
/// one dump deadline.
fn dump_via_file(link: &mut Link, path: &str) -> Result<UiDump, DeviceError> {
    let rm = link.shell(&command_line(&["rm", "-f", path])?)?;
    // If the old file cannot be deleted, reading later could return it: stop here.
    let _ = check_success("rm -f", rm)?;
    let out = link.shell(&command_line(&["uiautomator", "dump", path])?)?;
    let text = format!("{}\n{}", out.stdout_text(), out.stderr_text());
    if !text.contains("dumped to") {
        // No success line: the failure text (idle state, null root, …) or nothing.
        return Err(match Tree::parse(&text) {
            Err(e) => DeviceError::Dump(e),
            // A hierarchy on stdout in file mode is not ours to trust.
            Ok(_) => DeviceError::Dump(DumpError::NoHierarchy {
                snippet: "unexpected hierarchy on stdout in file mode".into(),
            }),
        });
    }
    if let Err(e @ (DumpError::IdleState | DumpError::NullRoot | DumpError::AutomationBusy)) =
        Tree::parse(&text)
    {
        return Err(DeviceError::Dump(e));
    }
    let cat = link.shell(&command_line(&["cat", path])?)?;
    if cat.exit_code != 0 {
        return Err(DeviceError::DumpFileMissing {
            path: path.to_string(),
        });
    }
    parse_dump(cat)
}

/// Check the PNG signature, the IHDR chunk (which gives the size) and the IEND trailer
/// (a cut-off transfer has none).
pub fn check_png(bytes: &[u8]) -> Result<(u32, u32), DeviceError> {
    const SIG: &[u8] = b"\x89PNG\r\n\x1a\n";
    if bytes.len() < 8 + 25 + 12 {
        return Err(DeviceError::BadPng(format!("only {} bytes", bytes.len())));
    }
    if !bytes.starts_with(SIG) {
        return Err(DeviceError::BadPng("no PNG signature".into()));
    }
    if bytes[8..12] != [0, 0, 0, 13] || &bytes[12..16] != b"IHDR" {
        return Err(DeviceError::BadPng("the first chunk is not IHDR".into()));
    }
    let be = |i: usize| u32::from_be_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
    let (w, h) = (be(16), be(20));
    if w == 0 || h == 0 {
        return Err(DeviceError::BadPng(format!("empty image {w}x{h}")));
    }
    let tail = &bytes[bytes.len() - 12..];
    if tail[..4] != [0, 0, 0, 0] || &tail[4..8] != b"IEND" {
        return Err(DeviceError::BadPng("no IEND chunk (truncated?)".into()));
    }
    Ok((w, h))
}

/// Load the key for direct TCP, or create one (2048-bit RSA, PKCS#8 PEM like
/// `adb keygen`, mode 0600). Without a persistent key `adb_client` would make a new
/// random one per connection and the phone would ask to authorize every time.
pub fn ensure_key(path: &Path) -> Result<(), DeviceError> {
    use rsa::pkcs8::{DecodePrivateKey, EncodePrivateKey, LineEnding};
    let key_err = |detail: String| DeviceError::Key {
        path: path.display().to_string(),
        detail,
    };
    match std::fs::read_to_string(path) {
        Ok(pem) => {
            rsa::RsaPrivateKey::from_pkcs8_pem(&pem)
                .map_err(|e| key_err(format!("not a PKCS#8 RSA key: {e}")))?;
            return Ok(());
        }
        Err(e) if e.kind() == ErrorKind::NotFound => {}
        Err(e) => return Err(key_err(e.to_string())),
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| key_err(e.to_string()))?;
    }
    let key = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048)
        .map_err(|e| key_err(format!("cannot generate: {e}")))?;
    let pem = key
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| key_err(format!("cannot encode: {e}")))?;
    let tmp = path.with_extension("tmp");
    write_private(&tmp, pem.as_bytes()).map_err(|e| key_err(e.to_string()))?;
    // Rename: a crash mid-write never leaves a half key that would fail every connect.
    std::fs::rename(&tmp, path).map_err(|e| key_err(e.to_string()))?;
    // Made by this process: no sign of an earlier client beside a new store.
    crate::file_modes::note_created(path);
    tracing::info!(path = %path.display(), "created an ADB key for direct connections");
    Ok(())
}

fn write_private(path: &Path, data: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut o = std::fs::OpenOptions::new();
    o.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.mode(0o600);
    }
    let mut f = o.open(path)?;
    f.write_all(data)?;
    f.sync_all()
}

/// Run `f` on a helper thread under a deadline (for calls outside the worker).
fn run_bounded<T: Send + 'static>(
    op: Op,
    deadline: Duration,
    f: impl FnOnce() -> Result<T, DeviceError> + Send + 'static,
) -> Result<T, DeviceError> {
    let (tx, rx) = mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("adb-call".into())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(|e| DeviceError::Io(format!("cannot start a thread: {e}")))?;
    match rx.recv_timeout(deadline) {
        Ok(r) => r,
        Err(RecvTimeoutError::Timeout) => Err(DeviceError::DeadlineExceeded { op, deadline }),
        Err(RecvTimeoutError::Disconnected) => Err(DeviceError::Protocol(
            "the call ended without an answer".into(),
        )),
    }
}

// ---- the worker's side ----------------------------------------------------------------

/// The connection, owned by the worker thread; established on first use.
struct Link {
    addr: DeviceAddress,
    key: PathBuf,
    /// How long to wait for a freshly connected serial to become `device`.
    wait: Duration,
    /// Device streams go through it (see [`super::relay`]); dropped with the link.
    relay: Forward,
    conn: Option<Conn>,
}

enum Conn {
    Server(ADBServerDevice),
    Tcp(Box<ADBTcpDevice>),
}

impl Link {
    fn new(addr: DeviceAddress, key: PathBuf, wait: Duration, relay: Forward) -> Link {
        Link {
            addr,
            key,
            wait,
            relay,
            conn: None,
        }
    }

    fn ensure(&mut self) -> Result<&mut dyn ADBDeviceExt, DeviceError> {
        if self.conn.is_none() {
            self.conn = Some(self.connect()?);
        }
        match self.conn.as_mut() {
            Some(Conn::Server(d)) => Ok(d),
            Some(Conn::Tcp(d)) => Ok(d.as_mut()),
            None => Err(DeviceError::Protocol("not connected".into())),
        }
    }

    fn connect(&self) -> Result<Conn, DeviceError> {
        match &self.addr {
            DeviceAddress::Server {
                serial,
                server,
                connect,
            } => {
                let mut srv = server_client(*server);
                if let Some(c) = connect {
                    adb_connect(&mut srv, *server, *c)?;
                }
                // A device that was just connected shows `offline` for a moment: poll
                // the listing (bounded) rather than fail or sleep blindly.
                let until = Instant::now() + self.wait;
                loop {
                    match listed_state(&mut srv, *server, serial)? {
                        Some(DeviceState::Device) => break,
                        Some(DeviceState::Unauthorized) => {
                            return Err(DeviceError::Unauthorized {
                                serial: serial.clone(),
                            })
                        }
                        // A serial nobody `adb connect`ed and the server does not
                        // list will not appear by waiting.
                        None if connect.is_none() => {
                            return Err(DeviceError::NotFound {
                                serial: serial.clone(),
                                detail: format!("not listed by the adb server at {server}"),
                            })
                        }
                        st if Instant::now() >= until => {
                            return Err(match st {
                                None => DeviceError::NotFound {
                                    serial: serial.clone(),
                                    detail: format!("not listed by the adb server at {server}"),
                                },
                                Some(s) => DeviceError::Offline {
                                    serial: serial.clone(),
                                    state: s.to_string(),
                                },
                            });
                        }
                        _ => std::thread::sleep(Duration::from_millis(50)),
                    }
                }
                // Listing and `connect` above talk to the server directly (their errors
                // say whether the server is there); device streams go via the relay.
                Ok(Conn::Server(ADBServerDevice::new(
                    serial.clone(),
                    Some(self.relay.local()),
                )))
            }
            DeviceAddress::Tcp(_) => ADBTcpDevice::new_with_custom_private_key(
                SocketAddr::V4(self.relay.local()),
                &self.key,
            )
            .map(|d| Conn::Tcp(Box::new(d)))
            .map_err(|e| tcp_connect_error(&self.addr.label(), &self.key, e)),
        }
    }

    /// Run one prepared command line, recovering its exit status.
    fn shell(&mut self, line: &str) -> Result<ShellOutput, DeviceError> {
        let label = self.addr.label();
        let server = match &self.addr {
            DeviceAddress::Server { server, .. } => Some(*server),
            DeviceAddress::Tcp(_) => None,
        };
        let dev = self.ensure()?;
        let marker = quote::new_marker();
        let full = quote::with_status(line, &marker);
        let mut out: Vec<u8> = Vec::new();
        let mut err: Vec<u8> = Vec::new();
        dev.shell_command(&full, Some(&mut out), Some(&mut err))
            .map_err(|e| map_adb_error(&label, server, e))?;
        let split = quote::split_status(&out, &marker).ok_or_else(|| {
            DeviceError::Protocol(
                "the exit status never arrived (connection cut or device gone)".into(),
            )
        })?;
        err.extend_from_slice(&split.trailing);
        Ok(ShellOutput {
            stdout: split.stdout,
            stderr: err,
            exit_code: split.exit_code,
        })
    }
}

/// One phone the adb server lists (`host:devices-l`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ListedDevice {
    pub serial: String,
    /// `device`, `unauthorized`, `offline`, …
    pub state: String,
    pub model: String,
}

/// The phones the adb server at `server` lists now (`host:devices-l`), within
/// `deadline`. The request runs on its own thread: a server that does not answer in time
/// is [`DeviceError::AdbServerUnavailable`] and the thread is left to end when the server
/// answers or closes.
pub fn list_devices(
    server: SocketAddrV4,
    deadline: Duration,
) -> Result<Vec<ListedDevice>, DeviceError> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("adb-devices".into())
        .spawn(move || {
            let mut srv = server_client(server);
            let r = srv.devices_long().map(|ds| {
                ds.into_iter()
                    .map(|d| ListedDevice {
                        serial: d.identifier,
                        state: d.state.to_string(),
                        model: d.model,
                    })
                    .collect::<Vec<_>>()
            });
            let _ = tx.send(r);
        })
        .map_err(|e| DeviceError::AdbServerUnavailable {
            addr: server.to_string(),
            detail: format!("cannot start a thread: {e}"),
        })?;
    match rx.recv_timeout(deadline) {
        Ok(Ok(list)) => Ok(list),
        Ok(Err(e)) => Err(map_adb_error("-", Some(server), e)),
        Err(_) => Err(DeviceError::AdbServerUnavailable {
            addr: server.to_string(),
            detail: format!("no device list within {} ms", deadline.as_millis()),
        }),
    }
}

/// The adb server's version as `adb version` prints it (`1.0.41`; `host:version`),
/// within `deadline` (`doctor`; the server is never started).
pub fn server_version(server: SocketAddrV4, deadline: Duration) -> Result<String, DeviceError> {
    run_bounded(Op::State, deadline, move || {
        server_client(server)
            .version()
            .map(|v| v.to_string())
            .map_err(|e| map_adb_error("-", Some(server), e))
    })
}

fn server_client(server: SocketAddrV4) -> ADBServer {
    ADBServer::new_from_path(server, Some(NO_START_SERVER.to_string()))
}

/// `adb connect host:port` through the server.
fn adb_connect(
    srv: &mut ADBServer,
    server: SocketAddrV4,
    target: SocketAddrV4,
) -> Result<(), DeviceError> {
    srv.connect_device(target).map_err(|e| match e {
        RustADBError::ADBRequestFailed(msg) => DeviceError::Offline {
            serial: target.to_string(),
            state: format!("unreachable ({})", snippet(&msg)),
        },
        other => map_adb_error(&target.to_string(), Some(server), other),
    })
}

/// The serial's state in the server's `devices` listing (`None` = not listed).
fn listed_state(
    srv: &mut ADBServer,
    server: SocketAddrV4,
    serial: &str,
) -> Result<Option<DeviceState>, DeviceError> {
    let devices = srv
        .devices()
        .map_err(|e| map_adb_error(serial, Some(server), e))?;
    Ok(devices
        .into_iter()
        .find(|d| d.identifier == serial)
        .map(|d| d.state))
}

/// Map an `adb_client` error to ours. `server` is set when the call went through an
/// adb server (a refused connection then means the server, not the phone).
fn map_adb_error(serial: &str, server: Option<SocketAddrV4>, e: RustADBError) -> DeviceError {
    match e {
        RustADBError::IOError(io) => match (io.kind(), server) {
            (ErrorKind::ConnectionRefused, Some(s)) => DeviceError::AdbServerUnavailable {
                addr: s.to_string(),
                detail: io.to_string(),
            },
            (ErrorKind::ConnectionRefused | ErrorKind::ConnectionReset, None) => {
                DeviceError::Offline {
                    serial: serial.to_string(),
                    state: format!("unreachable ({io})"),
                }
            }
            _ => DeviceError::Io(io.to_string()),
        },
        RustADBError::ADBRequestFailed(msg) | RustADBError::DeviceNotFound(msg) => {
            let m = msg.to_ascii_lowercase();
            if m.contains("unauthorized") {
                DeviceError::Unauthorized {
                    serial: serial.to_string(),
                }
            } else if m.contains("offline") || m.contains("connecting") || m.contains("authorizing")
            {
                DeviceError::Offline {
                    serial: serial.to_string(),
                    state: snippet(&msg),
                }
            } else if m.contains("not found") || m.contains("no devices") {
                DeviceError::NotFound {
                    serial: serial.to_string(),
                    detail: snippet(&msg),
                }
            } else {
                DeviceError::Protocol(snippet(&msg))
            }
        }
        other => DeviceError::Protocol(snippet(&other.to_string())),
    }
}

fn tcp_connect_error(label: &str, key: &Path, e: RustADBError) -> DeviceError {
    match e {
        // The only read with a timeout in the handshake is the wait for the user to
        // accept our public key on the phone.
        RustADBError::IOError(io)
            if matches!(io.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
        {
            DeviceError::Unauthorized {
                serial: label.to_string(),
            }
        }
        RustADBError::RsaPkcs8Error(p) => DeviceError::Key {
            path: key.display().to_string(),
            detail: p.to_string(),
        },
        other => map_adb_error(label, None, other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server() -> SocketAddrV4 {
        default_adb_server(None)
    }

    #[test]
    fn the_device_list_has_a_deadline() {
        // A server that accepts and never answers: an error within the deadline.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let SocketAddr::V4(addr) = silent.local_addr().unwrap() else {
            unreachable!()
        };
        let t0 = Instant::now();
        let e = list_devices(addr, Duration::from_millis(300)).unwrap_err();
        assert!(matches!(e, DeviceError::AdbServerUnavailable { .. }), "{e}");
        assert!(t0.elapsed() < Duration::from_secs(5));
        // No server at all: an error too.
        drop(silent);
        assert!(list_devices(addr, Duration::from_secs(5)).is_err());
    }

    #[test]
    fn addresses() {
        assert_eq!(
            DeviceAddress::parse("R58M123ABC", server()).ok(),
            Some(DeviceAddress::Server {
                serial: "R58M123ABC".into(),
                server: server(),
                connect: None
            })
        );
        let a = DeviceAddress::parse("127.0.0.1:40001", server()).expect("ok");
        assert!(matches!(a, DeviceAddress::Server { connect: Some(c), .. } if c.port() == 40001));
        let t = DeviceAddress::parse("tcp:127.0.0.1:40002", server()).expect("ok");
        assert_eq!(
            t,
            DeviceAddress::Tcp("127.0.0.1:40002".parse().expect("addr"))
        );
        assert_eq!(t.label(), "tcp:127.0.0.1:40002");
        assert!(DeviceAddress::parse("tcp:nohost", server()).is_err());
        assert!(DeviceAddress::parse("  ", server()).is_err());
        // An emulator serial is a name, not an address.
        assert!(matches!(
            DeviceAddress::parse("emulator-5554", server()),
            Ok(DeviceAddress::Server { connect: None, .. })
        ));
        assert_eq!(default_adb_server(Some("5099")).port(), 5099);
        assert_eq!(default_adb_server(Some("junk")).port(), 5037);
    }

    fn png(w: u32, h: u32) -> Vec<u8> {
        let mut v = b"\x89PNG\r\n\x1a\n".to_vec();
        v.extend_from_slice(&[0, 0, 0, 13]);
        v.extend_from_slice(b"IHDR");
        v.extend_from_slice(&w.to_be_bytes());
        v.extend_from_slice(&h.to_be_bytes());
        v.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        v.extend_from_slice(&[0, 0, 0, 0]);
        v.extend_from_slice(b"IEND");
        v.extend_from_slice(&[0xae, 0x42, 0x60, 0x82]);
        v
    }

    #[test]
    fn png_checks() {
        assert_eq!(check_png(&png(1080, 2400)).ok(), Some((1080, 2400)));
        let mut cut = png(10, 10);
        cut.truncate(cut.len() - 3);
        assert!(matches!(check_png(&cut), Err(DeviceError::BadPng(_))));
        assert!(check_png(b"").is_err());
        let mut wrong = png(10, 10);
        wrong[0] = b'x';
        assert!(check_png(&wrong).is_err());
        assert!(check_png(&png(0, 10)).is_err());
    }

    fn out(stdout: &str, stderr: &str, code: i32) -> ShellOutput {
        ShellOutput {
            stdout: stdout.as_bytes().to_vec(),
            stderr: stderr.as_bytes().to_vec(),
            exit_code: code,
        }
    }

    #[test]
    fn dump_failures_are_typed_even_with_exit_zero() {
        let idle = parse_dump(out("", "ERROR: could not get idle state.\n", 0));
        assert!(matches!(idle, Err(DeviceError::Dump(DumpError::IdleState))));
        let null = parse_dump(out(
            "",
            "ERROR: null root node returned by UiTestAutomationBridge.\n",
            0,
        ));
        assert!(matches!(null, Err(DeviceError::Dump(DumpError::NullRoot))));
        let empty = parse_dump(out("", "", 0));
        assert!(matches!(empty, Err(DeviceError::Dump(DumpError::Empty))));
        for e in [idle, null, empty] {
            let e = e.expect_err("error");
            assert!(e.is_retryable(), "{e}");
            assert_eq!(e.failure_code(), "UI_DUMP_FAILED");
        }
    }

    #[test]
    fn command_failures_include_error_text_on_exit_zero() {
        let am = check_success(
            "am start",
            out(
                "Starting: Intent { act=android.intent.action.VIEW }\n",
                "Error: Activity not started, unable to resolve Intent\n",
                0,
            ),
        );
        assert!(matches!(
            am,
            Err(DeviceError::CommandFailed { exit_code: 0, .. })
        ));
        let inject = check_success(
            "input tap",
            out(
                "java.lang.SecurityException: Injecting to another application requires INJECT_EVENTS permission\n",
                "",
                0,
            ),
        );
        assert!(matches!(inject, Err(DeviceError::InputDenied { .. })));
        let inject13 = check_success(
            "input tap",
            out(
                "",
                "Exception occurred while executing 'tap':\njava.lang.SecurityException: Injecting input events requires the caller (or the source of the instrumentation, if any) to have the INJECT_EVENTS permission.\n",
                255,
            ),
        )
        .expect_err("refused");
        assert_eq!(inject13.failure_code(), "INPUT_INJECTION_DENIED");
        assert!(inject13.is_retryable());
        assert!(check_success("input tap", out("", "", 0)).is_ok());
        // The echoed intent may hold any URL, newlines included.
        let echo = "Starting: Intent { act=android.intent.action.VIEW dat=https://x/Exception\nError: not really }\n";
        assert!(check_success("am start", out(echo, "", 0)).is_ok());
        let warning = "Starting: Intent { act=android.intent.action.VIEW }\nWarning: Activity not started, its current task has been brought to the front\n";
        assert!(check_success("am start", out(warning, "", 0)).is_ok());
        let e = check_success("false", out("", "", 1)).expect_err("fails");
        assert!(!e.is_retryable());
        assert_eq!(e.code(), "DEVICE_COMMAND_FAILED");
    }

    #[test]
    fn adb_errors_map_to_typed_states() {
        let s = Some(server());
        let m = |msg: &str| map_adb_error("x", s, RustADBError::ADBRequestFailed(msg.into()));
        assert!(matches!(
            m("device unauthorized.\nThis adb server's $ADB_VENDOR_KEYS is not set"),
            DeviceError::Unauthorized { .. }
        ));
        assert!(matches!(m("device offline"), DeviceError::Offline { .. }));
        assert!(matches!(
            m("device 'x' not found"),
            DeviceError::NotFound { .. }
        ));
        let refused = map_adb_error(
            "x",
            s,
            RustADBError::IOError(std::io::Error::from(ErrorKind::ConnectionRefused)),
        );
        assert!(matches!(refused, DeviceError::AdbServerUnavailable { .. }));
        assert_eq!(refused.failure_code(), "DEVICE_OFFLINE");
        assert!(refused.is_retryable());
    }

    #[test]
    fn keys_are_created_once_and_reused() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("sub").join("adbkey");
        ensure_key(&p).expect("created");
        let first = std::fs::read(&p).expect("read");
        assert!(first.starts_with(b"-----BEGIN PRIVATE KEY-----"));
        ensure_key(&p).expect("reused");
        assert_eq!(std::fs::read(&p).expect("read"), first);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&p).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(&p, "garbage").expect("write");
        assert!(matches!(ensure_key(&p), Err(DeviceError::Key { .. })));
    }
}
