//! A private adb server: Debian's (or any) real `adb` on its own free loopback port and
//! its own home directory, a child of this process — the one harness that brings the
//! simulated phone behind a real adb server, for `rehearse` on the `u2` backend, the
//! crash matrix and the tests of every crate (the tests use it through
//! [`crate::testing::AdbServer`], which only turns its errors into test failures).
//!
//! uiautomator2's server is reached over `tcp:PORT` streams, which only an adb server
//! opens (a direct TCP device cannot). The server runs as `adb -P PORT nodaemon server`
//! with its own home (its own `adbkey`, no `ADB_VENDOR_KEYS`), USB, emulator-port and
//! mDNS discovery off — so a user's server on 5037 and the phones plugged into this
//! computer are never touched. [`PrivateAdbServer`]'s drop (also on every error path)
//! runs `adb -P PORT kill-server`, waits for the child to end and kills it when it does
//! not, then removes the home directory; a watchdog does the same when this process is
//! killed without a destructor running.
//!
//! Every adb call has a deadline (adb has none of its own): the server's start, `adb
//! connect`, the device listing, `kill-server` and the child's exit are each bounded.
//! A missing `adb` is [`AdbServerError::NotFound`], naming what to install — never a
//! silent fallback to direct TCP.

use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddrV4, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use thiserror::Error;

/// How long the server may take to answer `host:version` after it is spawned.
pub const START_DEADLINE: Duration = Duration::from_secs(15);
/// One adb command (`connect`, `kill-server`).
pub const COMMAND_DEADLINE: Duration = Duration::from_secs(10);
/// How long the phone may take to be listed as `device` after `adb connect`.
pub const CONNECT_DEADLINE: Duration = Duration::from_secs(30);
/// How long the server process may take to end after `kill-server` before it is killed.
pub const EXIT_DEADLINE: Duration = Duration::from_secs(5);
/// One `host:version` / `host:devices-l` request while polling.
const PROBE_DEADLINE: Duration = Duration::from_millis(500);
/// The pause between two polls (of the server's readiness, the listing, a child's exit).
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// How many free ports are tried when the one picked is taken before adb binds it.
const START_ATTEMPTS: usize = 3;

/// Why the private adb server could not serve the rehearsal. Stable codes
/// ([`AdbServerError::code`]).
#[derive(Debug, Clone, Error)]
pub enum AdbServerError {
    /// No `adb` program (or `$ADB` is not a file).
    #[error("{0}")]
    NotFound(String),
    /// A program or file could not be started / created.
    #[error("{what}: {detail}")]
    Io { what: String, detail: String },
    /// An adb command (or the server's start) did not finish within its deadline.
    #[error("{command} did not finish within {} s", deadline.as_secs_f32())]
    Deadline { command: String, deadline: Duration },
    /// The server ended before answering, or never answered.
    #[error("the private adb server did not start: {0}")]
    StartFailed(String),
    /// `adb connect` did not bring the phone to the `device` state.
    #[error("adb connect {serial}: {detail}")]
    ConnectFailed { serial: String, detail: String },
}

impl AdbServerError {
    /// A stable SCREAMING_SNAKE code.
    pub fn code(&self) -> &'static str {
        match self {
            AdbServerError::NotFound(_) => "ADB_NOT_FOUND",
            AdbServerError::Io { .. } => "ADB_IO",
            AdbServerError::Deadline { .. } => "ADB_DEADLINE",
            AdbServerError::StartFailed(_) => "ADB_SERVER_START_FAILED",
            AdbServerError::ConnectFailed { .. } => "ADB_CONNECT_FAILED",
        }
    }
}

/// The `adb` program: `adb_env` (`$ADB`) when set and not empty (it must be a file),
/// else the first `adb` file on `path` (`$PATH`).
pub fn find_adb(
    adb_env: Option<OsString>,
    path: Option<OsString>,
) -> Result<PathBuf, AdbServerError> {
    if let Some(p) = adb_env.filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(AdbServerError::NotFound(format!(
                "ADB={}: not a file. {HOW_TO_INSTALL}",
                p.display()
            )))
        };
    }
    std::env::split_paths(&path.unwrap_or_default())
        .map(|dir| dir.join("adb"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            AdbServerError::NotFound(format!(
                "the u2 backend rehearses the simulated phone through a private adb server, \
                 and there is no `adb` on PATH (nor $ADB). {HOW_TO_INSTALL}"
            ))
        })
}

const HOW_TO_INSTALL: &str = "Install Android's platform tools (Debian/Ubuntu: `apt-get \
     install adb`; elsewhere https://developer.android.com/tools/releases/platform-tools) \
     or set ADB=/path/to/adb; or rehearse on uiautomator (CMAUTOBUY_DEVICE_BACKEND=auto)";

/// A private adb server, a child of this process; ended on drop.
pub struct PrivateAdbServer {
    adb: PathBuf,
    port: u16,
    home: tempfile::TempDir,
    /// The server process (behind a lock: [`PrivateAdbServer::connect`] takes `&self`,
    /// and a world shared by several test threads connects its phones through it).
    child: Mutex<Option<Child>>,
    /// A server was spawned on `port` and not yet stopped.
    spawned: bool,
    /// The watchdog that stops the server when this process ends without [`stop`]
    /// (SIGTERM, SIGKILL): [`PrivateAdbServer::watch_this_process`].
    ///
    /// [`stop`]: PrivateAdbServer::stop
    watchdog: Option<Child>,
}

impl PrivateAdbServer {
    /// Start `adb -P PORT nodaemon server` on a free loopback port and wait until it
    /// answers `host:version` (within [`START_DEADLINE`]).
    pub fn start(adb: &Path) -> Result<PrivateAdbServer, AdbServerError> {
        let home = tempfile::Builder::new()
            .prefix("cmautobuy-adb-")
            .tempdir()
            .map_err(|e| io("cannot create the adb server's home directory", e))?;
        let mut last = None;
        let mut server = PrivateAdbServer {
            adb: adb.to_path_buf(),
            port: 0,
            home,
            child: Mutex::new(None),
            spawned: false,
            watchdog: None,
        };
        for _ in 0..START_ATTEMPTS {
            server.port = free_port()?;
            match server.spawn_and_wait() {
                Ok(()) => {
                    server.watchdog = server.watch_this_process();
                    return Ok(server);
                }
                // The port was taken between our probe and adb's bind: another one.
                Err(e @ AdbServerError::StartFailed(_)) => {
                    server.stop();
                    last = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| AdbServerError::StartFailed("no attempt made".into())))
    }

    /// The server's address (`127.0.0.1:PORT`).
    pub fn addr(&self) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, self.port)
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's private home directory (its `adbkey` is under `.android/`).
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// `adb connect SERIAL` (a `HOST:PORT` serial), repeated until the server lists the
    /// phone as `device` (a fresh connection shows `offline` for a moment), within
    /// [`CONNECT_DEADLINE`].
    pub fn connect(&self, serial: &str) -> Result<(), AdbServerError> {
        let end = Instant::now() + CONNECT_DEADLINE;
        loop {
            self.check_alive()?;
            let out = self.run(&["connect", serial], COMMAND_DEADLINE)?;
            let seen = match self.run(&["devices"], COMMAND_DEADLINE) {
                Ok(listing) => match device_state(&listing, serial) {
                    Some("device") => return Ok(()),
                    Some(state) => format!("listed as {state}"),
                    None => format!("not listed ({})", out.trim()),
                },
                Err(e) => e.to_string(),
            };
            if Instant::now() >= end {
                return Err(AdbServerError::ConnectFailed {
                    serial: serial.to_string(),
                    detail: format!(
                        "not `device` within {} s: {seen}",
                        CONNECT_DEADLINE.as_secs()
                    ),
                });
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// `adb -P PORT kill-server` (within [`COMMAND_DEADLINE`]), then the child's exit
    /// (within [`EXIT_DEADLINE`]), else the child killed. Idempotent; also run on drop.
    pub fn stop(&mut self) {
        // The watchdog first: it must never act on a port a later server took.
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        if !std::mem::take(&mut self.spawned) {
            return;
        }
        // Even when our child is gone: an adb command run after it ended may have
        // started a daemon on the port. Nothing there: kill-server fails, which is fine.
        if let Err(e) = self.run(&["kill-server"], COMMAND_DEADLINE) {
            tracing::warn!(port = self.port, error = %e, "adb kill-server");
        }
        let Some(mut child) = self.child_slot().take() else {
            return;
        };
        if !wait_exit(&mut child, EXIT_DEADLINE) {
            tracing::warn!(
                port = self.port,
                "the private adb server outlived kill-server; killing it"
            );
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// A small `sh` watchdog: once this process is gone without [`PrivateAdbServer::stop`]
    /// (rehearse killed by SIGTERM or SIGKILL: no destructor runs), it runs `kill-server`
    /// on the port within a second, so no private adb server outlives its rehearsal.
    /// Killed by `stop`. Best effort: without `sh` there is none (logged).
    fn watch_this_process(&self) -> Option<Child> {
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; exec {adb} -P {port} kill-server",
            pid = std::process::id(),
            adb = sh_quote(&self.adb.display().to_string()),
            port = self.port,
        );
        // `command()` is `adb -P PORT` with the private environment: keep the
        // environment, run `sh` instead.
        let c = self.command();
        let mut sh = Command::new("sh");
        sh.arg("-c").arg(script);
        for (k, v) in c.get_envs() {
            match v {
                Some(v) => sh.env(k, v),
                None => sh.env_remove(k),
            };
        }
        match sh
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => Some(child),
            Err(e) => {
                tracing::warn!(port = self.port, error = %e, "no watchdog for the private adb server (sh)");
                None
            }
        }
    }

    /// Spawn the server on `self.port` and wait until it answers.
    fn spawn_and_wait(&mut self) -> Result<(), AdbServerError> {
        let log_path = self.home.path().join("adb-server.log");
        let log = File::create(&log_path)
            .map_err(|e| io(&format!("cannot create {}", log_path.display()), e))?;
        let log2 = log
            .try_clone()
            .map_err(|e| io(&format!("cannot open {}", log_path.display()), e))?;
        let child = self
            .command()
            .args(["nodaemon", "server"])
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| io(&format!("cannot run {}", self.adb.display()), e))?;
        *self.child_slot() = Some(child);
        self.spawned = true;
        let end = Instant::now() + START_DEADLINE;
        loop {
            if let Err(e) = self.check_alive() {
                return Err(AdbServerError::StartFailed(format!(
                    "{e}; its log: {}",
                    log_tail(&log_path)
                )));
            }
            if answers_version(self.addr(), PROBE_DEADLINE) {
                return Ok(());
            }
            if Instant::now() >= end {
                self.stop();
                return Err(AdbServerError::Deadline {
                    command: format!("adb -P {} nodaemon server (its start)", self.port),
                    deadline: START_DEADLINE,
                });
            }
            std::thread::sleep(POLL_INTERVAL);
        }
    }

    /// The server process is still running.
    fn check_alive(&self) -> Result<(), AdbServerError> {
        let mut slot = self.child_slot();
        let Some(child) = slot.as_mut() else {
            return Err(AdbServerError::StartFailed("not running".into()));
        };
        match child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => {
                *slot = None;
                Err(AdbServerError::StartFailed(format!(
                    "the adb server on port {} ended ({status})",
                    self.port
                )))
            }
            Err(e) => Err(io("cannot read the adb server's state", e)),
        }
    }

    /// `adb -P PORT` with the server's private environment.
    fn command(&self) -> Command {
        let home = self.home.path();
        let mut c = Command::new(&self.adb);
        c.arg("-P")
            .arg(self.port.to_string())
            .env("HOME", home)
            .env("ANDROID_USER_HOME", home.join(".android"))
            .env("ANDROID_SDK_HOME", home)
            .env("ANDROID_ADB_SERVER_PORT", self.port.to_string())
            // Only the phone we connect: no USB phones, no emulator ports, no mDNS.
            .env("ADB_USB", "0")
            .env("ADB_EMU", "0")
            .env("ADB_MDNS", "0")
            .env_remove("ADB_VENDOR_KEYS")
            .env_remove("ADB_SERVER_SOCKET")
            .env_remove("ANDROID_SERIAL");
        c
    }

    fn child_slot(&self) -> MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `adb -P PORT ARGS…` with the server's private environment, to completion within
    /// `deadline` (killed past it): its status, stdout and stderr.
    pub fn output(&self, args: &[&str], deadline: Duration) -> Result<Output, AdbServerError> {
        let what = format!("adb -P {} {}", self.port, args.join(" "));
        let mut child = self
            .command()
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| io(&format!("cannot run {what}"), e))?;
        let stdout = child.stdout.take().map(read_all);
        let stderr = child.stderr.take().map(read_all);
        if !wait_exit(&mut child, deadline) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(AdbServerError::Deadline {
                command: what,
                deadline,
            });
        }
        let status = child
            .wait()
            .map_err(|e| io(&format!("cannot wait for {what}"), e))?;
        let join = |r: Option<std::thread::JoinHandle<Vec<u8>>>| {
            r.and_then(|r| r.join().ok()).unwrap_or_default()
        };
        Ok(Output {
            status,
            stdout: join(stdout),
            stderr: join(stderr),
        })
    }

    /// [`PrivateAdbServer::output`]'s stdout and stderr together, as text.
    fn run(&self, args: &[&str], deadline: Duration) -> Result<String, AdbServerError> {
        let out = self.output(args, deadline)?;
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        Ok(text)
    }
}

impl Drop for PrivateAdbServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Waits up to `deadline` for `child` to end; `false` when it is still running.
fn wait_exit(child: &mut Child, deadline: Duration) -> bool {
    let end = Instant::now() + deadline;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return true,
            Ok(None) if Instant::now() < end => std::thread::sleep(POLL_INTERVAL),
            Ok(None) | Err(_) => return false,
        }
    }
}

/// Reads a child's pipe to its end on a thread (so a full pipe never blocks the child).
fn read_all(mut r: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

/// The state `adb devices` lists `serial` in (`device`, `offline`, `unauthorized`, …).
fn device_state<'a>(listing: &'a str, serial: &str) -> Option<&'a str> {
    listing.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some(serial))
            .then(|| words.next())
            .flatten()
    })
}

/// Whether an adb server answers `host:version` on `addr` within `deadline` (the smart
/// socket protocol: a 4-hex-digit length, the service; `OKAY` and the version back).
fn answers_version(addr: SocketAddrV4, deadline: Duration) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(&addr.into(), deadline) else {
        return false;
    };
    if s.set_read_timeout(Some(deadline)).is_err() || s.set_write_timeout(Some(deadline)).is_err() {
        return false;
    }
    let mut status = [0u8; 4];
    s.write_all(b"000chost:version").is_ok()
        && s.read_exact(&mut status).is_ok()
        && &status == b"OKAY"
}

/// `text` as one single-quoted `sh` word.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

/// The last lines of the server's log, for an error message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = lines[lines.len().saturating_sub(3)..].join(" | ");
    if tail.is_empty() {
        "(empty)".into()
    } else {
        tail
    }
}

/// A free loopback port for the server: never 5037 (a user's server) nor 5555–5585 (the
/// emulator ports adb servers probe).
fn free_port() -> Result<u16, AdbServerError> {
    for _ in 0..100 {
        let l = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| io("cannot bind a loopback port", e))?;
        let p = l
            .local_addr()
            .map_err(|e| io("cannot read a loopback port", e))?
            .port();
        if p != 5037 && !(5555..=5585).contains(&p) {
            return Ok(p);
        }
    }
    Err(AdbServerError::StartFailed(
        "no free loopback port outside 5037 and 5555–5585".into(),
    ))
}

fn io(what: &str, e: std::io::Error) -> AdbServerError {
    AdbServerError::Io {
        what: what.to_string(),
        detail: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_adb_on_path_names_what_to_install() {
        let dir = tempfile::tempdir().unwrap();
        let e = find_adb(None, Some(dir.path().as_os_str().to_owned())).unwrap_err();
        assert_eq!(e.code(), "ADB_NOT_FOUND");
        let m = e.to_string();
        assert!(m.contains("apt-get install adb"), "{m}");
        assert!(m.contains("CMAUTOBUY_DEVICE_BACKEND=auto"), "{m}");
    }

    #[test]
    fn adb_env_wins_and_must_be_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let adb = dir.path().join("my-adb");
        std::fs::write(&adb, b"").unwrap();
        let on_path = dir.path().join("adb");
        std::fs::write(&on_path, b"").unwrap();
        let path = Some(dir.path().as_os_str().to_owned());
        assert_eq!(
            find_adb(Some(adb.clone().into()), path.clone()).unwrap(),
            adb
        );
        assert_eq!(find_adb(Some("".into()), path.clone()).unwrap(), on_path);
        let missing = find_adb(Some(dir.path().join("nope").into()), path).unwrap_err();
        assert_eq!(missing.code(), "ADB_NOT_FOUND");
        assert!(missing.to_string().starts_with("ADB="), "{missing}");
    }

    #[test]
    fn free_ports_avoid_the_user_and_emulator_ports() {
        for _ in 0..20 {
            let p = free_port().unwrap();
            assert!(p != 5037 && !(5555..=5585).contains(&p));
        }
    }
}
