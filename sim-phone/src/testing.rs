//! Test support shared by the sim-phone, client and end-to-end tests: the real `adb`
//! binary, free ports, commands under a deadline, the u2 jar, and the private adb server
//! of [`crate::adb_server`] with its errors turned into test failures.
//!
//! A missing `adb` binary is a test failure, never a silent skip. Every adb run has a
//! deadline (adb has no timeouts of its own).

use std::io::Read;
use std::net::SocketAddrV4;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::adb_server::PrivateAdbServer;

/// The real `adb` binary on `PATH`. Panics (with how to install it) when it is missing.
pub fn adb_bin() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let p = dir.join("adb");
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "the real `adb` binary is required for these tests but is not on PATH: install \
         Debian's `adb` package (`apt-get install -y adb`; scripts/test does this)"
    );
}

/// A loopback port for a private adb server: never 5037 (a user's server) and never
/// 5555–5585 (the emulator ports every adb server probes).
pub fn free_port() -> u16 {
    loop {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let p = l.local_addr().expect("addr").port();
        if p != 5037 && !(5555..=5585).contains(&p) {
            return p;
        }
    }
}

/// Run a child to completion under a deadline; panics when it does not finish in time
/// (the child is killed first).
pub fn run_with_deadline(mut cmd: Command, deadline: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let t_err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let end = Instant::now() + deadline;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait") {
            break s;
        }
        if Instant::now() > end {
            let _ = child.kill();
            panic!("command {cmd:?} did not finish within {deadline:?}");
        }
        // Polling a child process's exit: adb has no timeouts of its own.
        std::thread::sleep(Duration::from_millis(5));
    };
    Output {
        status,
        stdout: t_out.join().expect("join"),
        stderr: t_err.join().expect("join"),
    }
}

/// Where the real `u2.jar` is for tests: `$CMAUTOBUY_U2_JAR` (exported by
/// `scripts/test`), else `.tools/uiautomator2/u2.jar` of this workspace (installed by
/// `scripts/install-u2-jar`).
pub fn u2_jar_path() -> PathBuf {
    std::env::var_os("CMAUTOBUY_U2_JAR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../.tools/uiautomator2/u2.jar")
        })
}

/// The real `u2.jar` for the test named `test`. Missing: a panic under `CI=true` (the
/// check must run there), else `None` after printing `NOT CHECKED: …` (the caller
/// returns early).
pub fn u2_jar(test: &str) -> Option<Vec<u8>> {
    let path = u2_jar_path();
    match std::fs::read(&path) {
        Ok(b) => Some(b),
        Err(e) => {
            let msg = format!(
                "the real u2.jar is not at {} ({e}): run scripts/install-u2-jar",
                path.display()
            );
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{test}: {msg}");
            }
            eprintln!("NOT CHECKED: {test}: {msg}");
            None
        }
    }
}

/// The private adb server of [`crate::adb_server`] for tests: every error is a test
/// failure (a missing `adb` names what to install), nothing is skipped.
pub struct AdbServer(PrivateAdbServer);

impl AdbServer {
    /// Start the server (its own free port and home); panics when it cannot.
    pub fn start() -> AdbServer {
        match PrivateAdbServer::start(&adb_bin()) {
            Ok(s) => AdbServer(s),
            Err(e) => panic!("the private adb server did not start [{}]: {e}", e.code()),
        }
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.0.port()
    }

    /// The server's private home directory.
    pub fn home(&self) -> &Path {
        self.0.home()
    }

    /// The server's address (`127.0.0.1:PORT`).
    pub fn addr(&self) -> SocketAddrV4 {
        self.0.addr()
    }

    /// Run `adb ARGS` against this server (30 s deadline).
    pub fn adb(&self, args: &[&str]) -> Output {
        match self.0.output(args, Duration::from_secs(30)) {
            Ok(o) => o,
            Err(e) => panic!("adb {args:?} [{}]: {e}", e.code()),
        }
    }

    /// `adb -s SERIAL shell ARGS`.
    pub fn shell(&self, serial: &str, args: &[&str]) -> Output {
        let mut a = vec!["-s", serial, "shell"];
        a.extend_from_slice(args);
        self.adb(&a)
    }

    /// `adb connect` until the phone is listed as `device`; panics after the harness's
    /// connect deadline.
    pub fn connect(&self, serial: &str) {
        if let Err(e) = self.0.connect(serial) {
            panic!("adb connect {serial} [{}]: {e}", e.code());
        }
    }
}

/// Polls `f` every 20 ms until it holds; fails the test with `what` after `limit`. The
/// one bounded wait of the tests (never a blind sleep).
pub fn wait_until(what: &str, limit: Duration, f: impl FnMut() -> bool) {
    wait_until_or(what, limit, String::new, f)
}

/// [`wait_until`], failing with `why()` too (e.g. the client's log, so a failure in CI
/// says what the client did).
pub fn wait_until_or(
    what: &str,
    limit: Duration,
    why: impl Fn() -> String,
    mut f: impl FnMut() -> bool,
) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < limit,
            "no {what} within {limit:?}: {}",
            why()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
