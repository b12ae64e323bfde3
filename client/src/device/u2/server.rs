//! One uiautomator2 server process on the phone: the jar pushed when the phone's copy
//! differs (`sha256sum`), started by `app_process` on a shell stream that a dedicated
//! thread keeps open (the server lives exactly as long as that stream), ready when
//! `GET /ping` answers `pong`, called over `tcp:PORT`, stopped by closing the stream.

use std::io::Read;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::error::{Reach, U2Error};
use super::jar::{parse_sha256sum, PHONE_JAR};
use super::transport::{self, Endpoint, Failure};
use super::{http, rpc};
use crate::device::port::{Device, DeviceError, Op};
use crate::device::quote::{command_line, quote};

/// How long the server's lifecycle steps may take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct U2Timing {
    /// From `app_process` to `pong` (uiautomator2: 30 s).
    pub start: Duration,
    /// Until `/ping` fails after the stream closed (uiautomator2: 10 s).
    pub stop: Duration,
    /// Pushing the jar (3.7 MB).
    pub push: Duration,
    /// One `/ping`.
    pub ping: Duration,
}

impl Default for U2Timing {
    fn default() -> Self {
        U2Timing {
            start: Duration::from_secs(30),
            stop: Duration::from_secs(10),
            push: Duration::from_secs(120),
            ping: Duration::from_secs(2),
        }
    }
}

/// The stream `app_process` runs on, held open by its own thread.
struct Keeper {
    stream: TcpStream,
    alive: Arc<AtomicBool>,
    /// The last few KiB the process printed (start-up diagnosis).
    output: Arc<Mutex<Vec<u8>>>,
}

/// A running server.
pub struct Server {
    ep: Endpoint,
    port: u16,
    /// `None`: a server that already answered before we started one (reused, as
    /// uiautomator2 does); it is stopped with `/stop`.
    keeper: Option<Keeper>,
    ids: AtomicU64,
}

const OUTPUT_TAIL: usize = 4 * 1024;

impl Server {
    /// Push the jar when needed, start the server, wait for `pong`.
    pub fn start(
        ep: &Endpoint,
        port: u16,
        jar: &(Vec<u8>, String),
        adb: &dyn Device,
        t: &U2Timing,
    ) -> Result<Server, U2Error> {
        let phone_hash = adb
            .shell(&["sha256sum", PHONE_JAR])
            .map_err(|e| shell_start_error(&format!("sha256sum {PHONE_JAR}"), &e))?;
        if parse_sha256sum(&phone_hash.stdout_text()).as_deref() != Some(jar.1.as_str()) {
            tracing::info!(bytes = jar.0.len(), "u2: pushing u2.jar to the phone");
            transport::push(ep, PHONE_JAR, &jar.0, Instant::now() + t.push)
                .map_err(|f| start_error("pushing u2.jar", f.error))?;
        }
        let mut server = Server {
            ep: ep.clone(),
            port,
            keeper: None,
            ids: AtomicU64::new(1),
        };
        if server.ping(t.ping) {
            tracing::info!(
                port,
                "u2: a server already answers on the phone; reusing it"
            );
            return Ok(server);
        }
        let line = format!(
            "CLASSPATH={} {}",
            quote(PHONE_JAR),
            command_line(&[
                "app_process",
                "/",
                "com.wetest.uia2.Main",
                "-p",
                &port.to_string()
            ])
            .map_err(|e| U2Error::StartFailed(e.to_string()))?
        );
        let end = Instant::now() + t.start;
        let stream = transport::open(ep, &format!("shell:{line}"), end)
            .map_err(|f| start_error("app_process", f.error))?;
        let _ = stream.set_read_timeout(None);
        let reader = stream
            .try_clone()
            .map_err(|e| U2Error::StartFailed(format!("app_process stream: {e}")))?;
        let alive = Arc::new(AtomicBool::new(true));
        let output = Arc::new(Mutex::new(Vec::new()));
        spawn_keeper(reader, alive.clone(), output.clone())?;
        server.keeper = Some(Keeper {
            stream,
            alive,
            output,
        });
        // Readiness: `/ping` → `pong`, polled, while the process lives.
        loop {
            if !server.alive() {
                let out = server.output_tail();
                let why = if out.contains("already registered") {
                    "UiAutomation is already registered (another uiautomator2 or Appium server runs)"
                        .to_string()
                } else {
                    format!(
                        "the server quit while starting: {}",
                        http::snippet(out.trim())
                    )
                };
                return Err(U2Error::StartFailed(why));
            }
            if server.ping(t.ping.min(end.saturating_duration_since(Instant::now()))) {
                return Ok(server);
            }
            if Instant::now() >= end {
                server.stop(Duration::ZERO);
                return Err(U2Error::StartFailed(format!(
                    "no pong within {:?}",
                    t.start
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The process still runs, as far as its stream tells (a reused server: yes).
    pub fn alive(&self) -> bool {
        self.keeper
            .as_ref()
            .is_none_or(|k| k.alive.load(Ordering::Acquire))
    }

    fn output_tail(&self) -> String {
        self.keeper
            .as_ref()
            .map(|k| {
                let o = k.output.lock().unwrap_or_else(|p| p.into_inner());
                String::from_utf8_lossy(&o).into_owned()
            })
            .unwrap_or_default()
    }

    /// `GET /ping` answers `pong` within `deadline`.
    pub fn ping(&self, deadline: Duration) -> bool {
        if deadline.is_zero() {
            return false;
        }
        let req = http::request("GET", "/ping", None);
        matches!(
            transport::exchange(&self.ep, self.port, &req, Instant::now() + deadline),
            Ok(a) if a.status == 200 && a.body.trim_ascii() == b"pong"
        )
    }

    /// One JSON-RPC call, answered within `deadline`.
    pub fn call(&self, method: &str, params: &Value, deadline: Duration) -> Result<Value, Failure> {
        let id = self.ids.fetch_add(1, Ordering::Relaxed);
        let req = http::request("POST", "/jsonrpc/0", Some(&rpc::body(id, method, params)));
        let answer = transport::exchange(&self.ep, self.port, &req, Instant::now() + deadline)?;
        rpc::result(id, &answer).map_err(|error| Failure {
            error,
            // The server answered: an error object means the call failed there.
            sent: true,
            timed_out: false,
        })
    }

    /// Stop the server: close its stream (or `/stop` a reused one), then wait at most
    /// `wait` for `/ping` to fail.
    pub fn stop(&mut self, wait: Duration) {
        match self.keeper.take() {
            Some(k) => {
                let _ = k.stream.shutdown(Shutdown::Both);
            }
            None => {
                let req = http::request("GET", "/stop", None);
                let _ = transport::exchange(&self.ep, self.port, &req, Instant::now() + wait);
            }
        }
        let end = Instant::now() + wait;
        while Instant::now() < end && self.ping(Duration::from_millis(500)) {
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(k) = self.keeper.take() {
            let _ = k.stream.shutdown(Shutdown::Both);
        }
    }
}

/// A start step's failure: the phone out of reach stays [`U2Error::Unreachable`] (not
/// the server's fault: no restart spent, no fallback), anything else `StartFailed`.
fn start_error(what: &str, e: U2Error) -> U2Error {
    match e {
        U2Error::Unreachable { .. } => e,
        other => U2Error::StartFailed(format!("{what}: {other}")),
    }
}

/// A start step's failed ADB shell call, as [`start_error`] judges it: the phone going
/// away (offline, not listed, unauthorized, the adb server gone, no connection in time)
/// is [`U2Error::Unreachable`].
fn shell_start_error(what: &str, e: &DeviceError) -> U2Error {
    let reach = match e {
        DeviceError::Offline { .. }
        | DeviceError::DeadlineExceeded {
            op: Op::Connect, ..
        } => Some(Reach::Offline),
        DeviceError::NotFound { .. } => Some(Reach::NotFound),
        DeviceError::Unauthorized { .. } => Some(Reach::Unauthorized),
        DeviceError::AdbServerUnavailable { .. } => Some(Reach::AdbServer),
        _ => None,
    };
    match reach {
        Some(reach) => U2Error::Unreachable {
            reach,
            detail: format!("{what}: {e}"),
        },
        None => U2Error::StartFailed(format!("{what}: {}", e.code())),
    }
}

fn spawn_keeper(
    mut reader: TcpStream,
    alive: Arc<AtomicBool>,
    output: Arc<Mutex<Vec<u8>>>,
) -> Result<(), U2Error> {
    std::thread::Builder::new()
        .name("u2-server".into())
        .spawn(move || {
            let mut buf = [0u8; 1024];
            loop {
                match reader.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let mut o = output.lock().unwrap_or_else(|p| p.into_inner());
                        o.extend_from_slice(&buf[..n]);
                        if o.len() > OUTPUT_TAIL {
                            let cut = o.len() - OUTPUT_TAIL;
                            o.drain(..cut);
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            alive.store(false, Ordering::Release);
            tracing::debug!("u2: the server's stream ended");
        })
        .map(drop)
        .map_err(|e| U2Error::StartFailed(format!("keeper thread: {e}")))
}
