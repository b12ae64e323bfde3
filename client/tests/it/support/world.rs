//! One end-to-end world: the bundled mock Admin on loopback HTTP and the simulated phone
//! over the real ADB protocol (direct TCP), with the helpers the end-to-end tests share
//! to create tasks, read their reports back and run the real `cmautobuy-client` binary
//! against them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig, Operator};
use cmautobuy_sim_phone::testing::AdbServer;
use cmautobuy_sim_phone::{Catalog, SimConfig, SimPhone, SimPhoneHandle, SystemConfig};
use serde_json::{json, Value};

/// The simulated phone's default delivery address (`sim_phone::Account::default`) as an
/// `expected_address` fingerprint (`CMAUTOBUY_EXPECTED_ADDRESS`, parts split by `|`).
pub const SIM_ADDRESS_FINGERPRINT: &str = "张三|广东省深圳市南山区科技园路1号";

/// The bundled mock Admin on loopback HTTP and the simulated phone on loopback TCP.
pub struct World {
    pub rt: tokio::runtime::Runtime,
    pub op: Operator,
    pub url: String,
    pub phone: SimPhoneHandle,
    /// The token every client run of this world presents.
    token: String,
    /// The client processes' lock directory when not the machine-wide default.
    locks: Option<PathBuf>,
    /// The phone's address fingerprint every client run gets (`CMAUTOBUY_EXPECTED_ADDRESS`):
    /// the simulated phone's address, or a replay's recorded one.
    fingerprint: Option<String>,
    /// A private real adb server the client reaches the phone through (the `u2`
    /// backend needs one: direct TCP has no `tcp:PORT` streams); `None`: direct TCP.
    pub adb: Option<AdbServer>,
    /// See [`WorldBuilder::both_backends`].
    both_backends: bool,
    _tmp: Option<tempfile::TempDir>,
}

/// The device backend the suite runs the device-facing tests on
/// (`CMAUTOBUY_DEVICE_BACKEND`; `scripts/test` runs them once more with `u2`).
pub fn backend_from_env() -> Option<String> {
    std::env::var("CMAUTOBUY_DEVICE_BACKEND")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// What differs between worlds; [`WorldBuilder::start`] brings one up.
pub struct WorldBuilder {
    token: String,
    catalog: Option<Catalog>,
    clock_offset_secs: i64,
    admin_date_offset_secs: i64,
    private_locks: bool,
    system: Option<SystemConfig>,
    require_token: bool,
    via_adb_server: bool,
    replay: Option<cmautobuy_sim_phone::Scenario>,
    both_backends: bool,
}

impl WorldBuilder {
    /// The test runs the client on both backends itself (or expects a fallback):
    /// [`World::stop`] does not require that no `uiautomator dump` was served on the u2
    /// pass.
    pub fn both_backends(mut self) -> Self {
        self.both_backends = true;
        self
    }

    /// The client reaches the phone through a private real adb server (serial
    /// `HOST:PORT`, `adb connect`ed by the client) instead of direct TCP. The default
    /// when `CMAUTOBUY_DEVICE_BACKEND=u2`.
    pub fn via_adb_server(mut self) -> Self {
        self.via_adb_server = true;
        self
    }

    /// The phone's catalog (default: the repository's bundled catalogs).
    pub fn catalog(mut self, catalog: Catalog) -> Self {
        self.catalog = Some(catalog);
        self
    }

    /// A phone whose clock is `offset_secs` ahead of the host's (behind when negative).
    pub fn clock_offset(mut self, offset_secs: i64) -> Self {
        self.clock_offset_secs = offset_secs;
        self
    }

    /// An Admin whose answers' `Date` header is `offset_secs` ahead of the host's clock
    /// (behind when negative).
    pub fn admin_date_offset(mut self, offset_secs: i64) -> Self {
        self.admin_date_offset_secs = offset_secs;
        self
    }

    /// The client runs take their process locks in a directory of this world's own
    /// (`CMAUTOBUY_LOCK_DIR`), not the machine-wide default.
    pub fn private_locks(mut self) -> Self {
        self.private_locks = true;
        self
    }

    /// The mock Admin refuses every request without this world's token (`401`).
    pub fn require_token(mut self) -> Self {
        self.require_token = true;
        self
    }

    /// The phone's own state at start (screen, lock, battery, chooser, keyboard).
    pub fn system(mut self, system: SystemConfig) -> Self {
        self.system = Some(system);
        self
    }

    /// The phone replays this recorded scenario instead of the catalog's app.
    pub fn replay(mut self, scenario: cmautobuy_sim_phone::Scenario) -> Self {
        self.replay = Some(scenario);
        self
    }

    pub fn start(self) -> World {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut admin_cfg = MockAdminConfig::in_memory();
        if self.require_token {
            admin_cfg.require_token = Some(self.token.clone());
        }
        let admin = MockAdmin::open(admin_cfg).unwrap();
        let op = admin.operator();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        if self.admin_date_offset_secs == 0 {
            rt.spawn(admin.serve(listener, std::future::pending()));
        } else {
            rt.spawn(admin.serve_with_date_offset(
                listener,
                std::future::pending(),
                self.admin_date_offset_secs,
            ));
        }
        let catalog = match self.catalog {
            Some(c) => c,
            None => Catalog::load(&Catalog::bundled_dir()).unwrap(),
        };
        let mut cfg = SimConfig::new(catalog);
        cfg.clock_offset_secs = self.clock_offset_secs;
        if let Some(sys) = self.system {
            cfg.system = sys;
        }
        // A replay shows the address it was recorded with (masked by the export): that
        // is its fingerprint, as `rehearse --replay` takes it.
        let fingerprint = match &self.replay {
            Some(s) => cmautobuy_client::rehearse::replay::recorded_address(s),
            None => Some(SIM_ADDRESS_FINGERPRINT.to_string()),
        };
        cfg.replay = self.replay;
        let phone = SimPhone::bind("127.0.0.1:0".parse().unwrap(), cfg).unwrap();
        let (locks, tmp) = if self.private_locks {
            let tmp = tempfile::tempdir().unwrap();
            (Some(tmp.path().join("locks")), Some(tmp))
        } else {
            (None, None)
        };
        let adb = self.via_adb_server.then(|| {
            let adb = AdbServer::start();
            adb.connect(&phone.serial());
            adb
        });
        World {
            rt,
            op,
            url,
            phone,
            token: self.token,
            locks,
            adb,
            both_backends: self.both_backends,
            fingerprint,
            _tmp: tmp,
        }
    }
}

impl World {
    /// A world whose client runs present `token`; see [`WorldBuilder`] for the options.
    pub fn builder(token: &str) -> WorldBuilder {
        WorldBuilder {
            token: token.to_string(),
            catalog: None,
            clock_offset_secs: 0,
            admin_date_offset_secs: 0,
            private_locks: false,
            system: None,
            require_token: false,
            via_adb_server: backend_from_env().as_deref() == Some("u2"),
            replay: None,
            both_backends: false,
        }
    }

    /// The default world: bundled catalog, the phone's clock the host's.
    pub fn start(token: &str) -> World {
        World::builder(token).start()
    }

    pub fn create(&self, task: Value) {
        self.rt.block_on(self.op.create_task(task)).unwrap();
    }

    /// Task `id` as the Admin's operator sees it (`task`, `results`, …).
    pub fn task(&self, id: &str) -> Value {
        self.rt.block_on(self.op.get_task(id)).unwrap()
    }

    /// The last report of task `id`: (kind, body).
    pub fn report(&self, id: &str) -> (String, Value) {
        let t = self.task(id);
        let r = t["results"]
            .as_array()
            .and_then(|a| a.last())
            .cloned()
            .unwrap_or_else(|| panic!("{id}: no report: {t}"));
        (
            r["kind"].as_str().unwrap_or("").to_string(),
            r["body"].clone(),
        )
    }

    /// `cmautobuy-client run --exit-when-idle` against this Admin on this phone, with its
    /// own data directory `data`, no config file and no `CMAUTOBUY_ALLOW_LIVE` from the
    /// environment. Add arguments or environment for what a test needs.
    pub fn command(&self, data: &Path) -> Command {
        self.command_on(data, &self.device())
    }

    /// How the client names this world's phone: `HOST:PORT` through the world's adb
    /// server, else `tcp:HOST:PORT`.
    pub fn device(&self) -> String {
        match &self.adb {
            Some(_) => self.phone.serial(),
            None => format!("tcp:{}", self.phone.addr()),
        }
    }

    /// How the client names another simulated phone of this test: `adb connect`ed to
    /// this world's adb server (serial `HOST:PORT`) when it has one, else `tcp:HOST:PORT`.
    pub fn device_of(&self, phone: &SimPhoneHandle) -> String {
        match &self.adb {
            Some(adb) => {
                adb.connect(&phone.serial());
                phone.serial()
            }
            None => format!("tcp:{}", phone.addr()),
        }
    }

    /// How the client names a phone address that is not (yet) a running phone: its
    /// serial through this world's adb server when it has one, else `tcp:HOST:PORT`.
    pub fn device_at(&self, addr: std::net::SocketAddr) -> String {
        match &self.adb {
            Some(_) => addr.to_string(),
            None => format!("tcp:{addr}"),
        }
    }

    /// Points a client command of a test's own at this world's adb server (when it has
    /// one), as [`command`](World::command) does.
    pub fn adb_env<'c>(&self, c: &'c mut Command) -> &'c mut Command {
        if let Some(adb) = &self.adb {
            c.env("ANDROID_ADB_SERVER_PORT", adb.port().to_string());
        }
        c
    }

    /// [`command`](World::command) against another device address (a phone that is not
    /// this world's, or not there yet).
    pub fn command_on(&self, data: &Path, device: &str) -> Command {
        let mut c = self.serving_on(data, device);
        c.arg("--exit-when-idle");
        c
    }

    /// [`command`](World::command) without `--exit-when-idle`: a client that runs until
    /// it is killed.
    pub fn serving(&self, data: &Path) -> Command {
        self.serving_on(data, &self.device())
    }

    fn serving_on(&self, data: &Path, device: &str) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
        c.arg("--data-dir")
            .arg(data)
            .args(["run", "--admin", &self.url, "--token", &self.token])
            .args(["--poll-interval", "0.2"])
            .arg("--device")
            .arg(device)
            .env_remove("CMAUTOBUY_CONFIG")
            .env_remove("CMAUTOBUY_ALLOW_LIVE")
            .env_remove("CMAUTOBUY_PURCHASE_MODE")
            .env_remove("CMAUTOBUY_SELF_TEST_GOODS_ID")
            // Batches run back to back (the pacing gap has its own tests); set it again
            // on the command to test it.
            .env("CMAUTOBUY_MIN_TASK_GAP_SECS", "0")
            // Live on a fresh store without a dry run first (the new-version gate has
            // its own test, `pdd_version_gate.rs`, which sets it again on the command).
            .env("CMAUTOBUY_PDD_VERSION_GATE", "false")
            // The simulated phone's delivery address as its fingerprint, as a configured
            // phone has (no live order without one); a test of the fingerprint
            // sets it again, or removes it, on the command.
            ;
        match &self.fingerprint {
            Some(f) => c.env("CMAUTOBUY_EXPECTED_ADDRESS", f),
            None => c.env_remove("CMAUTOBUY_EXPECTED_ADDRESS"),
        };
        if let Some(locks) = &self.locks {
            c.env("CMAUTOBUY_LOCK_DIR", locks);
        }
        if let Some(adb) = &self.adb {
            // `run` finds the adb server by the environment, as an operator's would.
            c.env("ANDROID_ADB_SERVER_PORT", adb.port().to_string());
        }
        c
    }

    /// One [`command`](World::command) run; it must exit 0.
    pub fn run(&self, data: &Path) {
        run_ok(&mut self.command(data));
    }

    /// One [`command`](World::command) run with `--allow-live`; it must exit 0.
    pub fn run_live(&self, data: &Path) {
        run_ok(self.command(data).arg("--allow-live"));
    }

    /// On the u2 pass (`CMAUTOBUY_DEVICE_BACKEND=u2`) the phone served no `uiautomator
    /// dump`: a silent fallback from the u2 server would let every test pass on the
    /// wrong backend. Checked by [`World::stop`]; a shared world calls it itself.
    /// Nothing is checked on the uiautomator pass, or with
    /// [`WorldBuilder::both_backends`].
    pub fn assert_no_fallback(&self) {
        if self.adb.is_some() && !self.both_backends && backend_from_env().as_deref() == Some("u2")
        {
            let c = self.phone.counters();
            assert_eq!(
                c.dumps, 0,
                "CMAUTOBUY_DEVICE_BACKEND=u2, yet the phone served {} `uiautomator dump`(s) \
                 (a fallback from the u2 server): {c:?}",
                c.dumps
            );
        }
    }

    pub fn stop(self) {
        self.assert_no_fallback();
        drop(self.phone);
        self.rt.shutdown_timeout(Duration::from_secs(1));
    }
}

/// Runs a client command and asserts it exited 0.
pub fn run_ok(c: &mut Command) {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `cmautobuy-client status --json` on `data`, parsed (`Null` when it prints nothing
/// readable).
pub fn status_json(data: &Path) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data)
        .args(["status", "--json"])
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// `cmautobuy-client ARGS…` on `data` (no config file); it must exit 0. Its stdout.
pub fn cli_ok(data: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits (polling every 100 ms) for `child` to exit within `limit`; fails the test with
/// `why()` (e.g. the client's log) when it does not.
pub fn wait_exit(child: &mut Child, limit: Duration, why: impl Fn() -> String) -> ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(
            start.elapsed() < limit,
            "the client did not exit within {limit:?}: {}",
            why()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits (the one bounded poll, `cmautobuy_sim_phone::testing::wait_until_or`) until `f`
/// holds; fails the test with `what` after `limit`, or at once when `child` exits first.
pub fn wait_until(what: &str, limit: Duration, child: &mut Child, f: impl FnMut() -> bool) {
    wait_until_or(what, limit, child, String::new, f)
}

/// [`wait_until`], failing with `why()` too (e.g. the client's log, so a failure in CI
/// says what the client did).
pub fn wait_until_or(
    what: &str,
    limit: Duration,
    child: &mut Child,
    why: impl Fn() -> String,
    mut f: impl FnMut() -> bool,
) {
    cmautobuy_sim_phone::testing::wait_until_or(what, limit, &why, || {
        if let Ok(Some(s)) = child.try_wait() {
            panic!(
                "the client exited ({s}) while waiting for {what}: {}",
                why()
            );
        }
        f()
    })
}

/// The goods page link of `goods`.
pub fn goods_url(goods: &str) -> String {
    format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}")
}

/// A live purchase task of `quantity` × `goods` with `options`, limit `max_price_cent`.
pub fn live_purchase(
    id: &str,
    goods: &str,
    options: Value,
    quantity: u32,
    max_price_cent: i64,
) -> Value {
    json!({
        "id": id,
        "type": "purchase",
        "execution_mode": "live",
        "payload": {
            "goods_id": goods,
            "goods_url": goods_url(goods),
            "options": options,
            "quantity": quantity,
            "max_price_cent": max_price_cent,
        },
    })
}
