//! A private adb server for tests: Debian's real `adb` on its own free loopback port and
//! its own home directory, so a user's server on 5037 is never touched. Shared by the
//! sim-phone, client and end-to-end tests; std only.
//!
//! A missing `adb` binary is a test failure, never a silent skip. Every adb run has a
//! deadline (adb has no timeouts of its own).

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

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

/// A fresh, empty directory under the system temp dir (removed by [`AdbServer`]'s drop).
fn unique_home() -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    loop {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!(
            "cmautobuy-adb-home-{}-{}-{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match std::fs::create_dir(&dir) {
            Ok(()) => return dir,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("create adb home {}: {e}", dir.display()),
        }
    }
}

/// A private adb server on its own port and home: `start-server` on [`AdbServer::start`],
/// `kill-server` (and the home removed) on drop.
pub struct AdbServer {
    port: u16,
    home: PathBuf,
    /// The watchdog ([`AdbServer::watch_this_process`]); killed on drop, so that it never
    /// acts on a port a later server may have taken.
    watchdog: Option<std::process::Child>,
}

impl AdbServer {
    /// Start the server; panics when `adb start-server` fails on 5 ports in a row.
    /// Another port after a failure. Seen once in CI: "protocol fault (status 30 30 30
    /// 63?!)" — `start-server` first connects to the port to see whether a server runs,
    /// and a connect to an unused port of the ephemeral range (where [`free_port`]'s
    /// ports come from) can, rarely, connect to itself (TCP simultaneous open): adb then
    /// reads back its own `000chost:version`. Another listener taking the port before
    /// adb binds it would fail the same way.
    pub fn start() -> AdbServer {
        let mut s = AdbServer {
            port: free_port(),
            home: unique_home(),
            watchdog: None,
        };
        let mut failures = Vec::new();
        loop {
            let o = s.adb(&["start-server"]);
            if o.status.success() {
                break;
            }
            failures.push(format!("port {}: {o:?}", s.port));
            assert!(failures.len() < 5, "adb start-server: {failures:#?}");
            s.port = free_port();
        }
        s.watchdog = s.watch_this_process();
        s
    }

    /// A watchdog that stops the server (and removes its home) once this process is
    /// gone, for servers whose owner is never dropped: a world kept in a `static` (Rust
    /// does not drop statics at exit), a test process killed. Without it each such run
    /// left an adb server behind. Best effort: no `sh`, no watchdog. A dropped server
    /// kills its watchdog first (it must never act on a port a later server took).
    fn watch_this_process(&self) -> Option<std::process::Child> {
        let script = format!(
            "while kill -0 {pid} 2>/dev/null; do sleep 1; done; \
             {adb} -P {port} kill-server >/dev/null 2>&1; rm -rf {home}",
            pid = std::process::id(),
            adb = sh_quote(&adb_bin().display().to_string()),
            port = self.port,
            home = sh_quote(&self.home.display().to_string()),
        );
        Command::new("sh")
            .arg("-c")
            .arg(script)
            .env("HOME", &self.home)
            .env("ANDROID_ADB_SERVER_PORT", self.port.to_string())
            .env("ANDROID_USER_HOME", self.home.join(".android"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The server's private home directory.
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The server's address (`127.0.0.1:PORT`).
    pub fn addr(&self) -> SocketAddrV4 {
        SocketAddrV4::new(Ipv4Addr::LOCALHOST, self.port)
    }

    /// Run `adb ARGS` against this server (30 s deadline).
    pub fn adb(&self, args: &[&str]) -> Output {
        let mut c = Command::new(adb_bin());
        c.arg("-P")
            .arg(self.port.to_string())
            .args(args)
            .env("HOME", &self.home)
            .env("ANDROID_ADB_SERVER_PORT", self.port.to_string())
            .env("ANDROID_USER_HOME", self.home.join(".android"));
        run_with_deadline(c, Duration::from_secs(30))
    }

    /// `adb -s SERIAL shell ARGS`.
    pub fn shell(&self, serial: &str, args: &[&str]) -> Output {
        let mut a = vec!["-s", serial, "shell"];
        a.extend_from_slice(args);
        self.adb(&a)
    }

    /// `adb connect` and poll `adb devices` until the phone is listed as `device`
    /// (a freshly connected device can show `offline` for a moment); panics after 30 s.
    pub fn connect(&self, serial: &str) {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            let _ = self.adb(&["connect", serial]);
            let d = self.adb(&["devices"]);
            let listing = String::from_utf8_lossy(&d.stdout).to_string();
            if listing
                .lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == [serial, "device"])
            {
                return;
            }
            assert!(
                Instant::now() < end,
                "phone never became `device`: {listing}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// `text` as one single-quoted `sh` word.
fn sh_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl Drop for AdbServer {
    fn drop(&mut self) {
        if let Some(mut w) = self.watchdog.take() {
            let _ = w.kill();
            let _ = w.wait();
        }
        let _ = self.adb(&["kill-server"]);
        let _ = std::fs::remove_dir_all(&self.home);
    }
}
