//! The purchase crash matrix, driven by `scripts/crash-matrix`.
//!
//! Every scenario starts a fresh standalone `mock-admin` and `sim-phone` (zero latency)
//! and a fresh client data directory, seeds live purchase tasks through the operator
//! API, and runs the real `cmautobuy-client run --allow-live
//! --exit-when-idle` binary (built with `--features failpoints`) until it exits idle:
//! the first runs are killed — by a named failpoint (`CMAUTOBUY_FAILPOINTS`, the process
//! aborts right there) or by SIGKILL after a random delay — and the client is restarted
//! until a run ends on its own. Then, for every scenario:
//!
//! - at most one order per task in the phone's ledger (`sim-phone orders --state`);
//! - zero payment attempts on any order;
//! - zero orders whose ledger status is `committed_unpaid` (placed under 先用后付) or
//!   `paid` (免密支付): nothing binding or paid, whatever the account's payment method;
//! - every attempt the client started (its `task_runs`) reported exactly once at the
//!   Admin, and no attempt reported twice;
//! - no task silently dropped: every task ends `succeeded`, `manual_review` or
//!   `failed` at the Admin (a task a kill left `claimed` at the Admin and never saved by
//!   the client — the contract's §5.2 gap, on a first claim or on the re-claim of a task
//!   a retry_wait requeued — is re-dispatched as the Admin's claim timeout would, and the
//!   scenario goes on; a claimed task the client still holds fails it);
//! - the outcome the scenario must end with (e.g. a crash right after the mark and
//!   before the tap → `manual_review`, no order; after the tap → the order is found);
//! - no restarted run is refused (exit 2): the lock files a killed run leaves behind
//!   never block.
//!
//! The random-SIGKILL scenarios run on ordinary goods, on goods that go through the
//! full-page 确认订单 (`confirm_page`, 811223344506: the kill can land between the sheet's
//! 确定 and 提交订单 — a purchase killed after the note that precedes that 确定 ends
//! `manual_review`, never `retry_wait`; "confirm-page+purchase.after_proceed_note" kills it
//! there on purpose), on goods whose total settles late (`total_lag_dumps`,
//! 811223344505: the kill can land while the total settles) and on goods whose sheet
//! orders with 确定 (`checkout_button: confirm`, 811223344511: the kill can
//! land during the census, between the mark and the 确定 tap, or right after it). The
//! named-failpoint scenarios "checkout-confirm+…" kill that purchase right after its mark
//! (no order: `manual_review`) and right after the 确定 tap that created the order (the
//! recovery finds it, absent from the census stored with the mark: `succeeded`).
//!
//! The scenarios "identical-order-of-another-task.*" seed two live tasks
//! with the same goods, options and quantity; the second one is killed right after its
//! mark (`purchase.after_mark@2`: no order of its own) or right after its submit tap
//! (`purchase.after_submit_tap@2`: its order exists), so its recovery reconciles while
//! the first task's order fits and lies inside its window. Orders cannot be told apart by
//! goods here, so instead of "one order per task" they check: every order number
//! reported at most once and present in the ledger, the ledger's order count, and the
//! multiset of final statuses — after the mark, `manual_review` for the second task
//! (never the first task's order); after the tap, both `succeeded`, each with its own.
//!
//! The scenario "two-processes" runs a second client on the same data directory, and a
//! third on another data directory but the same phone, while the first one works: both
//! must exit 2 at once naming the first one's pid, and the invariants above still hold.
//! Every client here uses the scenario's own lock directory (`CMAUTOBUY_LOCK_DIR`).
//!
//! The device backend, `--backend`: `uiautomator` (the default) names the
//! phone `tcp:HOST:PORT` (direct TCP: dumps by `uiautomator dump`, input by `input`);
//! `u2` gives each scenario a private real adb server (its own port and home, Debian's
//! `adb`), `adb connect`s the phone, and runs every client with `--device HOST:PORT` (the
//! serial, through that server), `CMAUTOBUY_DEVICE_BACKEND=u2` and `CMAUTOBUY_U2_JAR`
//! (`--u2-jar PATH`): dumps and input go through uiautomator2's server (`u2.jar`) on the
//! simulated phone. The server lives as long as the stream its client started it on
//! (`docs/u2-server.md`; adbd sends SIGHUP when that stream closes): a killed client's
//! server ends with it, and the next client starts one of its own — unless it still
//! answers, then the next client adopts it. The u2-only scenario
//! "sigkill-u2-server-left-running" makes that deterministic: the harness starts a server
//! on a stream of its own before the first client (a server that outlives its client), and
//! every client, killed or not, must adopt it. Under u2 each scenario also checks from the
//! clients' logs that the server was used (started or adopted) and that no run fell back
//! to uiautomator (no fault is injected here). In "two-processes" the phone is then named
//! through the adb server by the first two clients and `tcp:HOST:PORT` (direct, backend
//! `auto`: a client requiring u2 there is refused before any lock) by the third: the
//! device lock keys both on the phone's network address (`lock::device_key`), so the
//! third is refused all the same. The adb server is killed at the scenario's end.
//!
//! Usage: `crash_matrix --client BIN --mock-admin BIN --sim-phone BIN [--backend
//! uiautomator|u2] [--u2-jar PATH] [--only NAME]`; `crash_matrix --list [--only NAME]`
//! prints the scenarios (one JSON object per line) and runs nothing.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cmautobuy_sim_phone::testing::AdbServer;
use rand::Rng;
use serde_json::{json, Value};

struct Bins {
    client: PathBuf,
    admin: PathBuf,
    phone: PathBuf,
    catalog: PathBuf,
    backend: Backend,
}

/// The device backend every client of the run uses.
#[derive(Clone, Debug)]
enum Backend {
    /// Direct TCP (`tcp:HOST:PORT`), `uiautomator dump` and `input`.
    Uiautomator,
    /// Through a private adb server, uiautomator2's server started from this jar.
    U2 { jar: PathBuf },
}

impl Backend {
    fn name(&self) -> &'static str {
        match self {
            Backend::Uiautomator => "uiautomator",
            Backend::U2 { .. } => "u2",
        }
    }
}

/// How a scenario's clients reach its phone.
struct Route {
    /// What `--device` says.
    device: String,
    /// The same phone named another way (the "same phone" check of "two-processes").
    other_name: String,
    /// The device backend of the client that names it `other_name`: `auto` for
    /// `tcp:HOST:PORT` on u2 (a direct TCP phone cannot have the u2 server, and a client
    /// that requires it is refused before any lock, exit 2 `U2_UNAVAILABLE`: `auto` is
    /// what an operator's second client there would run), else the run's backend.
    other_backend: &'static str,
    /// The private adb server (`u2`): `ANDROID_ADB_SERVER_PORT` of every client.
    adb_port: Option<u16>,
}

/// How a client run ends early.
#[derive(Clone, Debug)]
enum Kill {
    Failpoint(&'static str),
    /// SIGKILL after a random delay in this range (ms).
    Random(u64, u64),
    /// The run (without `--exit-when-idle`) is contended: once it holds its locks, a
    /// second client on its data directory and a third on its phone must be refused;
    /// it is SIGKILLed once every task is terminal at the Admin.
    Contend,
}

struct Scenario {
    name: String,
    tasks: Vec<Value>,
    kills: Vec<Kill>,
    /// Expected final Admin status per task (None = any terminal status).
    expect: Option<&'static str>,
    /// Expected number of orders per task (None = 0 or 1).
    orders: Option<usize>,
    /// Identical tasks: their orders are matched by the numbers they report.
    identical: Option<Identical>,
    /// `u2` only: before the first client, a uiautomator2 server is started on the phone
    /// on a stream the harness holds (one that outlives its client: a Python
    /// uiautomator2 session's, or a killed client's before the phone has noticed); every
    /// client must adopt it, killed or not.
    stray_u2_server: bool,
}

/// What identical tasks must end with, whatever order they were claimed in.
struct Identical {
    /// The final Admin statuses, sorted.
    statuses: Vec<&'static str>,
    /// Orders in the ledger.
    orders: usize,
}

fn task(id: &str, goods: &str, options: Value, qty: i64, max: i64) -> Value {
    json!({
        "id": id, "type": "purchase", "execution_mode": "live", "priority": 0,
        "payload": {
            "goods_id": goods,
            "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}"),
            "options": options, "quantity": qty, "max_price_cent": max
        }
    })
}

impl Scenario {
    /// A scenario that may end in any terminal status, with 0 or 1 order per task.
    fn new(name: impl Into<String>, tasks: Vec<Value>, kills: Vec<Kill>) -> Self {
        Scenario {
            name: name.into(),
            tasks,
            kills,
            expect: None,
            orders: None,
            identical: None,
            stray_u2_server: false,
        }
    }

    /// Every task must end `status` with `orders` order(s).
    fn ends(mut self, status: &'static str, orders: usize) -> Self {
        self.expect = Some(status);
        self.orders = Some(orders);
        self
    }
}

/// The simulated phone's default delivery address as an `expected_address` fingerprint.
const SIM_ADDRESS_FINGERPRINT: &str = "张三|广东省深圳市南山区科技园路1号";

fn scenarios() -> Vec<Scenario> {
    let hoodie = |id: &str| {
        task(
            id,
            "737116531267",
            json!({"color": "黑色", "size": "M"}),
            1,
            5900,
        )
    };
    let bottle = |id: &str, color: &str, capacity: &str, qty: i64, max: i64| {
        task(
            id,
            "811223344506",
            json!({"color": color, "capacity": capacity}),
            qty,
            max,
        )
    };
    let trousers = |id: &str| {
        task(
            id,
            "602938475610",
            json!({"color": "深灰色", "size": "120斤"}),
            1,
            4580,
        )
    };
    let mut out = Vec::new();
    // (failpoint, expected status, expected orders)
    let points: &[(&'static str, &'static str, usize)] = &[
        ("claim.before_save", "succeeded", 1),
        ("purchase.before_mark", "succeeded", 1),
        ("purchase.after_mark", "manual_review", 0),
        ("purchase.after_submit_tap", "succeeded", 1),
        ("purchase.payment_screen", "succeeded", 1),
        ("purchase.abandon_dialog", "succeeded", 1),
        ("purchase.left_payment", "succeeded", 1),
        ("reconcile.order_list", "succeeded", 1),
        ("reconcile.order_detail", "succeeded", 1),
        ("purchase.before_report", "succeeded", 1),
        ("outbox.before_send", "succeeded", 1),
        ("outbox.after_send", "succeeded", 1),
    ];
    for (p, status, orders) in points {
        out.push(
            Scenario::new(*p, vec![hoodie("cg-1")], vec![Kill::Failpoint(p)]).ends(status, *orders),
        );
    }
    // On 确认订单: a crash between the mark and 提交订单 leaves the phone on 确认订单 —
    // the recovery must leave it without submitting; a crash right after the tap finds
    // the order. A crash right after the note that precedes the spec sheet's 确定 (the
    // tap may or may not have gone out): never "nothing was submitted", never a second
    // run — manual_review, and here no order (the kill came before the tap).
    for (p, status, orders) in [
        ("purchase.after_proceed_note", "manual_review", 0),
        ("purchase.after_mark", "manual_review", 0),
        ("purchase.after_submit_tap", "succeeded", 1),
    ] {
        out.push(
            Scenario::new(
                format!("confirm-page+{p}"),
                vec![bottle("cg-1", "樱花粉", "500ml", 2, 8000)],
                vec![Kill::Failpoint(p)],
            )
            .ends(status, orders),
        );
    }
    // A sheet whose 确定 places the order: killed between the mark and that
    // tap, nothing is ordered and the recovery says so; killed right after the 确定 tap
    // that created the order, the recovery reconciles it — one order, found.
    let checkout = |id: &str| {
        task(
            id,
            "811223344511",
            json!({"color": "粉色", "size": "M"}),
            1,
            10000,
        )
    };
    for (p, status, orders) in [
        ("purchase.after_mark", "manual_review", 0),
        ("purchase.after_submit_tap", "succeeded", 1),
    ] {
        out.push(
            Scenario::new(
                format!("checkout-confirm+{p}"),
                vec![checkout("cg-1")],
                vec![Kill::Failpoint(p)],
            )
            .ends(status, orders),
        );
    }
    out.push(
        Scenario::new(
            "spec.before_send",
            vec![task(
                "cg-1",
                "602938475610",
                json!({"color": "黑色", "size": "60公斤"}),
                1,
                4580,
            )],
            vec![Kill::Failpoint("spec.before_send")],
        )
        .ends("succeeded", 1),
    );
    // Two crashes in a row, each at a failpoint. A kill on the payment screen, then
    // another while the recovery reads the order's detail. And the §5.2 window on a
    // re-claim: the first claim is saved and ends in a retry_wait (killed before the
    // mark); the task, claimable again, is claimed by the next run, which dies before
    // saving it. The client's store holds the task, finished: the Admin's claim is still
    // one the client never saved (seen once in CI, from two random kills).
    for (name, first, second) in [
        (
            "payment_screen+recovery.order_detail",
            "purchase.payment_screen",
            "reconcile.order_detail",
        ),
        (
            "before_mark+reclaim.claim.before_save",
            "purchase.before_mark",
            "claim.before_save",
        ),
    ] {
        out.push(
            Scenario::new(
                name,
                vec![hoodie("cg-1")],
                vec![Kill::Failpoint(first), Kill::Failpoint(second)],
            )
            .ends("succeeded", 1),
        );
    }
    out.push(
        Scenario::new("two-processes", vec![hoodie("cg-1")], vec![Kill::Contend])
            .ends("succeeded", 1),
    );
    for i in 0..2 {
        out.push(Scenario::new(
            format!("sigkill-confirm-page-{i}"),
            vec![
                bottle("cg-a", "樱花粉", "500ml", 2, 8000),
                bottle("cg-b", "天空蓝", "350ml", 1, 5000),
            ],
            vec![Kill::Random(50, 1200); 4],
        ));
        out.push(Scenario::new(
            format!("sigkill-total-lag-{i}"),
            vec![
                task(
                    "cg-a",
                    "811223344505",
                    json!({"color": "藏青", "size": "XL"}),
                    1,
                    4000,
                ),
                task(
                    "cg-b",
                    "811223344505",
                    json!({"color": "浅灰", "size": "L"}),
                    2,
                    8000,
                ),
            ],
            vec![Kill::Random(50, 1200); 4],
        ));
    }
    // A sheet whose 确定 places the order: a kill anywhere, the census, the
    // mark and the 确定 tap included.
    out.push(Scenario::new(
        "sigkill-checkout-confirm",
        vec![
            checkout("cg-a"),
            task(
                "cg-b",
                "811223344511",
                json!({"color": "灰色", "size": "L"}),
                2,
                20000,
            ),
        ],
        vec![Kill::Random(50, 1200); 4],
    ));
    for (point, statuses, orders) in [
        (
            "purchase.after_mark@2",
            vec!["manual_review", "succeeded"],
            1,
        ),
        (
            "purchase.after_submit_tap@2",
            vec!["succeeded", "succeeded"],
            2,
        ),
    ] {
        let at = point.split('@').next().unwrap_or(point);
        out.push(Scenario {
            identical: Some(Identical { statuses, orders }),
            ..Scenario::new(
                format!("identical-order-of-another-task.{at}"),
                vec![hoodie("cg-same-1"), hoodie("cg-same-2")],
                vec![Kill::Failpoint(point)],
            )
        });
    }
    out.push(Scenario {
        stray_u2_server: true,
        ..Scenario::new(
            "sigkill-u2-server-left-running",
            vec![hoodie("cg-a"), trousers("cg-b")],
            vec![Kill::Random(50, 1200); 4],
        )
    });
    for i in 0..3 {
        out.push(Scenario::new(
            format!("sigkill-random-{i}"),
            vec![
                task(
                    "cg-a",
                    "737116531267",
                    json!({"color": "黑色", "size": "S"}),
                    1,
                    5900,
                ),
                task(
                    "cg-b",
                    "737116531267",
                    json!({"color": "奶白色", "size": "L"}),
                    2,
                    20000,
                ),
                trousers("cg-c"),
            ],
            vec![Kill::Random(50, 900); 4],
        ));
    }
    out
}

/// Starts a server binary and waits for its "listening on …" line.
fn start(cmd: &mut Command, what: &str) -> Result<(Child, String), String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {what}: {e}"))?;
    let out = child.stdout.take().ok_or("no stdout")?;
    let mut line = String::new();
    BufReader::new(out)
        .read_line(&mut line)
        .map_err(|e| format!("{what}: {e}"))?;
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("{what} said {line:?}"))?
        .to_string();
    Ok((child, addr))
}

fn http() -> web::Client {
    web::Client::new()
}

/// The matrix needs a handful of JSON calls: a tiny blocking wrapper over reqwest's
/// async client on a current-thread runtime.
mod web {
    pub struct Client {
        rt: tokio::runtime::Runtime,
        c: ::reqwest::Client,
    }
    impl Client {
        pub fn new() -> Self {
            Client {
                rt: tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime"),
                c: ::reqwest::Client::new(),
            }
        }
        pub fn post(
            &self,
            url: &str,
            body: &serde_json::Value,
        ) -> Result<serde_json::Value, String> {
            self.rt.block_on(async {
                let r = self
                    .c
                    .post(url)
                    .bearer_auth("matrix")
                    .json(body)
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                let st = r.status();
                let v: serde_json::Value = r.json().await.unwrap_or(serde_json::Value::Null);
                if !st.is_success() {
                    return Err(format!("{url}: {st} {v}"));
                }
                Ok(v)
            })
        }
        pub fn get(&self, url: &str) -> Result<serde_json::Value, String> {
            self.rt.block_on(async {
                let r = self
                    .c
                    .get(url)
                    .bearer_auth("matrix")
                    .send()
                    .await
                    .map_err(|e| e.to_string())?;
                r.json().await.map_err(|e| e.to_string())
            })
        }
    }
}

fn kill(mut c: Child) {
    let _ = c.kill();
    let _ = c.wait();
}

struct Outcome {
    runs: usize,
    lines: Vec<String>,
    ok: bool,
}

fn run_scenario(b: &Bins, s: &Scenario, root: &Path, key: &Path) -> Result<Outcome, String> {
    let dir = root.join(s.name.replace(['+', '.'], "_"));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (admin, admin_url) = start(
        Command::new(&b.admin)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--db")
            .arg(dir.join("admin.db")),
        "mock-admin",
    )?;
    let phone_state = dir.join("phone.json");
    let (phone, phone_addr) = match start(
        Command::new(&b.phone)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--catalog")
            .arg(&b.catalog)
            .arg("--state")
            .arg(&phone_state)
            .arg("--profile")
            .arg("zero"),
        "sim-phone",
    ) {
        Ok(p) => p,
        Err(e) => {
            kill(admin);
            return Err(e);
        }
    };
    let (route, adb) = match &b.backend {
        Backend::Uiautomator => (
            Route {
                device: format!("tcp:{phone_addr}"),
                other_name: phone_addr.clone(),
                other_backend: "uiautomator",
                adb_port: None,
            },
            None,
        ),
        Backend::U2 { .. } => match private_adb_server(&phone_addr) {
            Ok(adb) => (
                Route {
                    device: phone_addr.clone(),
                    other_name: format!("tcp:{phone_addr}"),
                    other_backend: "auto",
                    adb_port: Some(adb.port()),
                },
                Some(adb),
            ),
            Err(e) => {
                kill(phone);
                kill(admin);
                return Err(e);
            }
        },
    };
    let stray = match (&adb, &b.backend) {
        (Some(adb), Backend::U2 { jar }) if s.stray_u2_server => {
            match start_stray_server(adb, &phone_addr, jar, &dir) {
                Ok(c) => Some(c),
                Err(e) => {
                    kill(phone);
                    kill(admin);
                    return Err(e);
                }
            }
        }
        _ => None,
    };
    let result = drive_scenario(b, s, &dir, key, &admin_url, &route, &phone_state);
    if let Some(c) = stray {
        kill(c);
    }
    // `adb kill-server`, its home removed.
    drop(adb);
    kill(phone);
    kill(admin);
    result
}

/// A uiautomator2 server on the phone `serial` as uiautomator2's `core.py` starts one
/// (the jar pushed, `app_process` on a `shell:` stream kept open), on a stream this
/// harness holds: `adb shell` as a child process (its output in `stray-u2.log`). Returns
/// once the server answers (the phone says it listens on 9008), within 30 s.
fn start_stray_server(
    adb: &AdbServer,
    serial: &str,
    jar: &Path,
    dir: &Path,
) -> Result<Child, String> {
    let jar_s = jar.to_string_lossy();
    let o = adb.adb(&["-s", serial, "push", &jar_s, "/data/local/tmp/u2.jar"]);
    if !o.status.success() {
        return Err(format!(
            "pushing u2.jar for the stray server: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    let log = std::fs::File::create(dir.join("stray-u2.log")).map_err(|e| e.to_string())?;
    let log2 = log.try_clone().map_err(|e| e.to_string())?;
    let mut child = Command::new(cmautobuy_sim_phone::testing::adb_bin())
        .args(["-P", &adb.port().to_string(), "-s", serial, "shell"])
        .arg("CLASSPATH=/data/local/tmp/u2.jar app_process / com.wetest.uia2.Main -p 9008")
        .env("HOME", adb.home())
        .env("ANDROID_ADB_SERVER_PORT", adb.port().to_string())
        .env("ANDROID_USER_HOME", adb.home().join(".android"))
        .stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2))
        .spawn()
        .map_err(|e| format!("adb shell app_process: {e}"))?;
    let t = Instant::now();
    loop {
        let text = std::fs::read_to_string(dir.join("stray-u2.log")).unwrap_or_default();
        if text.contains("listening on *:9008") {
            return Ok(child);
        }
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("the stray u2 server ended ({st}): {}", text.trim()));
        }
        if t.elapsed() > Duration::from_secs(30) {
            kill(child);
            return Err(format!(
                "the stray u2 server never listened: {}",
                text.trim()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A private real adb server (own port and home) with the phone `serial` connected;
/// killed when dropped. Its helper panics on failure (a test helper): caught here, so a
/// scenario fails with the reason instead of the whole matrix aborting.
fn private_adb_server(serial: &str) -> Result<AdbServer, String> {
    std::panic::catch_unwind(|| {
        let adb = AdbServer::start();
        adb.connect(serial);
        adb
    })
    .map_err(|p| {
        let why = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        format!("private adb server: {why}")
    })
}

fn drive_scenario(
    b: &Bins,
    s: &Scenario,
    dir: &Path,
    key: &Path,
    admin_url: &str,
    route: &Route,
    phone_state: &Path,
) -> Result<Outcome, String> {
    let h = http();
    for t in &s.tasks {
        h.post(&format!("{admin_url}/api/v1/admin/tasks"), t)?;
    }
    let data = dir.join("client");
    std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
    // A key made once: RSA generation in a debug build is slow, and the simulated
    // phone does not authenticate anyway.
    if key.exists() {
        let _ = std::fs::copy(key, data.join("adbkey"));
    }
    let mut rng = rand::thread_rng();
    let mut runs = 0;
    let mut lines = Vec::new();
    let mut ok = true;
    let mut plan = s.kills.clone().into_iter();
    let mut clean = false;
    while !clean {
        runs += 1;
        if runs > s.kills.len() + 4 {
            return Err("the client never reached idle".into());
        }
        let kill_plan = plan.next();
        let contend = matches!(kill_plan, Some(Kill::Contend));
        let mut cmd = client_cmd(b, &data, dir, admin_url, route, &route.device);
        if !contend {
            cmd.arg("--exit-when-idle");
        }
        cmd.stdout(Stdio::null()).stderr(Stdio::from(
            std::fs::File::create(dir.join(format!("client-{runs}.log")))
                .map_err(|e| e.to_string())?,
        ));
        if let Some(Kill::Failpoint(p)) = &kill_plan {
            cmd.env("CMAUTOBUY_FAILPOINTS", p);
        }
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(|e| format!("client: {e}"))?;
        let deadline = match &kill_plan {
            Some(Kill::Random(lo, hi)) => Some(Duration::from_millis(rng.gen_range(*lo..*hi))),
            _ => None,
        };
        if contend {
            match contend_with(b, &mut child, &data, dir, admin_url, route, s, &h) {
                Ok(mut l) => lines.append(&mut l),
                Err(e) => {
                    ok = false;
                    lines.push(format!("run {runs}: two processes: {e}"));
                }
            }
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
            lines.push(format!("run {runs}: SIGKILL once the tasks were terminal"));
            continue;
        }
        // SIGKILL at the random deadline; a run that outlives 120 s hung.
        let status = match wait_or_kill(&mut child, deadline.unwrap_or(Duration::from_secs(120)))? {
            None if deadline.is_none() => return Err(format!("client run {runs} hung")),
            status => status,
        };
        if !key.exists() && data.join("adbkey").exists() {
            // Scenarios run side by side: a copy renamed into place, never half a key.
            let tmp = dir.join("adbkey.shared");
            if std::fs::copy(data.join("adbkey"), &tmp).is_ok() {
                let _ = std::fs::rename(&tmp, key);
            }
        }
        match status {
            Some(st) if st.success() => {
                // Ended on its own. A planned failpoint that never fired is a scenario
                // bug (the point is not on this path).
                if let Some(Kill::Failpoint(p)) = &kill_plan {
                    lines.push(format!("failpoint {p} was not reached"));
                    ok = false;
                }
                // Idle means nothing to claim *now*: a task requeued by a retry_wait
                // report delivered after that last claim is claimable again, which a
                // long-running client would find at its next poll. Run again.
                let open = s.tasks.iter().any(|t| {
                    let id = t["id"].as_str().unwrap_or_default();
                    h.get(&format!("{admin_url}/api/v1/admin/tasks/{id}"))
                        .ok()
                        .and_then(|v| v["task"]["status"].as_str().map(str::to_string))
                        .is_some_and(|st| matches!(st.as_str(), "pending" | "assigned"))
                });
                let redispatched = redispatch_unsaved_claims(&h, admin_url, s, &data, &mut lines)?;
                clean = plan.len() == 0 && !open && redispatched == 0;
            }
            Some(st) if st.code() == Some(2) => {
                // Only one client runs at a time here: a refusal means a lock left by a
                // killed run blocked this one.
                ok = false;
                lines.push(format!(
                    "run {runs}: refused (exit 2)  <-- a stale lock blocked"
                ));
            }
            Some(st) => lines.push(format!("run {runs}: {st}")),
            None => lines.push(format!(
                "run {runs}: SIGKILL after {} ms",
                started.elapsed().as_millis()
            )),
        }
    }
    if matches!(b.backend, Backend::U2 { .. }) {
        let u2 = u2_lifecycle(dir, runs);
        if u2.started + u2.reused == 0 {
            ok = false;
            lines.push(
                "u2: no client run ever used uiautomator2's server  <-- not a u2 scenario".into(),
            );
        }
        if s.stray_u2_server && u2.reused == 0 {
            ok = false;
            lines.push(
                "u2: the server left running on the phone was never adopted  <-- a second server started beside it?".into(),
            );
        }
        if u2.fallbacks > 0 {
            // No fault is injected here: a run that falls back to uiautomator did not
            // adopt or restart what a killed run left on the phone.
            ok = false;
            lines.push(format!(
                "u2: {} fallback(s) to uiautomator  <-- a run could not use the server: {}",
                u2.fallbacks, u2.first_fallback
            ));
        }
        lines.push(format!(
            "u2 server: started {}, adopted {} (found answering), fallbacks {}",
            u2.started, u2.reused, u2.fallbacks
        ));
    }
    // The ledger.
    let out = Command::new(&b.phone)
        .arg("orders")
        .arg("--state")
        .arg(phone_state)
        .output()
        .map_err(|e| e.to_string())?;
    let orders: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let paid = orders
        .iter()
        .filter(|o| {
            o["payment_attempted"].as_bool() != Some(false)
                || o["payment_attempts"].as_u64().unwrap_or(0) > 0
        })
        .count();
    if paid > 0 {
        ok = false;
        lines.push(format!("{paid} order(s) with a payment attempt"));
    }
    // Nothing binding or paid: the ledger's status of an order placed under 先用后付 is
    // `committed_unpaid`, of one paid by 免密支付 `paid`.
    let committed = orders
        .iter()
        .filter(|o| matches!(o["status"].as_str(), Some("committed_unpaid" | "paid")))
        .count();
    if committed > 0 {
        ok = false;
        lines.push(format!(
            "{committed} order(s) committed_unpaid or paid  <-- binding or paid"
        ));
    }
    lines.push(format!(
        "ledger: {} order(s), {paid} with a payment attempt, {committed} committed_unpaid/paid",
        orders.len()
    ));
    // The client's attempts.
    let db = client_db(&data).map_err(|e| e.to_string())?;
    let mut attempts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    {
        let mut st = db
            .prepare("SELECT t.remote_task_id, r.attempt_id FROM task_runs r JOIN tasks t ON t.id = r.task_id")
            .map_err(|e| e.to_string())?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| e.to_string())?;
        for r in rows.flatten() {
            attempts.entry(r.0).or_default().push(r.1);
        }
    }
    // Identical tasks: the numbers they reported, and their final statuses.
    let mut reported_sns: Vec<String> = Vec::new();
    let mut statuses: Vec<String> = Vec::new();
    for t in &s.tasks {
        let id = t["id"].as_str().unwrap_or_default();
        let payload = &t["payload"];
        let v = h.get(&format!("{admin_url}/api/v1/admin/tasks/{id}"))?;
        let status = v["task"]["status"].as_str().unwrap_or("?").to_string();
        let results = v["results"].as_array().cloned().unwrap_or_default();
        let mut per_attempt: BTreeMap<String, usize> = BTreeMap::new();
        for r in &results {
            let a = r["body"]["attempt_id"].as_str().unwrap_or("?").to_string();
            *per_attempt.entry(a).or_default() += 1;
        }
        let twice: Vec<&String> = per_attempt
            .iter()
            .filter(|(_, n)| **n > 1)
            .map(|(a, _)| a)
            .collect();
        let local = attempts.get(id).cloned().unwrap_or_default();
        let unreported: Vec<&String> = local
            .iter()
            .filter(|a| !per_attempt.contains_key(*a))
            .collect();
        let sns: Vec<String> = results
            .iter()
            .filter(|r| r["kind"] == "result")
            .filter_map(|r| {
                r["body"]["purchase"]["order_sn"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect();
        let mine = if s.identical.is_some() {
            // Identical goods: this task's orders are the ones it reported.
            orders
                .iter()
                .filter(|o| {
                    o["order_sn"]
                        .as_str()
                        .is_some_and(|sn| sns.iter().any(|x| x == sn))
                })
                .count()
        } else {
            orders
                .iter()
                .filter(|o| {
                    o["goods_id"] == payload["goods_id"]
                        && o["quantity"] == payload["quantity"]
                        && payload["options"].as_object().is_some_and(|m| {
                            m.iter().all(|(k, v)| o["options"][k] == *v || k == "size")
                        })
                })
                .count()
        };
        reported_sns.extend(sns);
        statuses.push(status.clone());
        let last = results
            .last()
            .map(|r| {
                let b = &r["body"];
                if r["kind"] == "result" {
                    "succeeded".to_string()
                } else {
                    format!(
                        "{}:{}",
                        b["status"].as_str().unwrap_or("?"),
                        b["error"]["code"].as_str().unwrap_or("?")
                    )
                }
            })
            .unwrap_or_else(|| "missing".into());
        let terminal = matches!(status.as_str(), "succeeded" | "manual_review" | "failed");
        let mut bad = Vec::new();
        if mine > 1 {
            bad.push(format!("{mine} orders"));
        }
        if let Some(n) = s.orders {
            if mine != n {
                bad.push(format!("{mine} orders, expected {n}"));
            }
        }
        if !twice.is_empty() {
            bad.push(format!("attempts reported twice: {twice:?}"));
        }
        if !unreported.is_empty() {
            bad.push(format!("attempts never reported: {unreported:?}"));
        }
        if !terminal {
            bad.push(format!("task left {status}"));
        }
        if let Some(e) = s.expect {
            if status != e {
                bad.push(format!("ended {status}, expected {e}"));
            }
        }
        if !bad.is_empty() {
            ok = false;
        }
        lines.push(format!(
            "{id}: {status} (last report {last}), attempts {}, orders {mine}{}",
            per_attempt.len(),
            if bad.is_empty() {
                String::new()
            } else {
                format!("  <-- {}", bad.join("; "))
            }
        ));
    }
    if let Some(want) = &s.identical {
        let mut bad = Vec::new();
        statuses.sort();
        if statuses != want.statuses {
            bad.push(format!(
                "statuses {statuses:?}, expected {:?}",
                want.statuses
            ));
        }
        if orders.len() != want.orders {
            bad.push(format!("{} orders, expected {}", orders.len(), want.orders));
        }
        let mut unique = reported_sns.clone();
        unique.sort();
        unique.dedup();
        if unique.len() != reported_sns.len() {
            bad.push(format!("an order number reported twice: {reported_sns:?}"));
        }
        if !reported_sns
            .iter()
            .all(|sn| orders.iter().any(|o| o["order_sn"].as_str() == Some(sn)))
        {
            bad.push(format!("reported {reported_sns:?}, not all in the ledger"));
        }
        if !bad.is_empty() {
            ok = false;
        }
        lines.push(format!(
            "identical tasks: statuses {statuses:?}, orders {}, reported {reported_sns:?}{}",
            orders.len(),
            if bad.is_empty() {
                String::new()
            } else {
                format!("  <-- {}", bad.join("; "))
            }
        ));
    }
    Ok(Outcome { runs, lines, ok })
}

/// The contract's §5.2 gap, played as the Admin plays it: a kill that lands after the
/// Admin committed a claim and before the client saved the task leaves it `claimed` at
/// the Admin with nothing live in the client's store (nothing was executed: a task runs
/// only once saved; an earlier claim of the same task, requeued by a retry_wait, is
/// saved and finished). The Admin re-dispatches such a task after its own timeout (§5.1, "领取后
/// 超时重派", Admin-side); the matrix does it at once, once every client has stopped, and
/// says so. A claimed task the client DID save is not touched: that would be a bug.
fn redispatch_unsaved_claims(
    h: &web::Client,
    admin_url: &str,
    s: &Scenario,
    data: &Path,
    lines: &mut Vec<String>,
) -> Result<usize, String> {
    // The tasks the client still holds: a saved claim not yet terminal, or a report not
    // yet accepted. The client has just gone idle, so a task claimed at the Admin that
    // is not among them is a claim it never saved — its first claim, or a re-claim of a
    // task requeued by a retry_wait (an earlier claim of it saved and finished here).
    let held: std::collections::BTreeSet<String> = {
        match client_db(data) {
            Ok(db) => {
                let mut st = db
                    .prepare(
                        "SELECT remote_task_id FROM tasks
                          WHERE state IN ('claimed', 'running', 'reporting')
                         UNION
                         SELECT remote_task_id FROM outbox WHERE state <> 'accepted'",
                    )
                    .map_err(|e| e.to_string())?;
                let ids = st
                    .query_map([], |r| r.get::<_, String>(0))
                    .map_err(|e| e.to_string())?;
                ids.filter_map(Result::ok).collect()
            }
            // No store yet: the kill landed before the first save of all.
            Err(_) => Default::default(),
        }
    };
    let mut n = 0;
    for t in &s.tasks {
        let id = t["id"].as_str().unwrap_or_default();
        let status = h
            .get(&format!("{admin_url}/api/v1/admin/tasks/{id}"))
            .ok()
            .and_then(|v| v["task"]["status"].as_str().map(str::to_string));
        if status.as_deref() == Some("claimed") && !held.contains(id) {
            h.post(
                &format!("{admin_url}/api/v1/admin/tasks/{id}/reassign"),
                &json!({"client_id": null}),
            )?;
            lines.push(format!(
                "{id}: claimed at the Admin but never saved by the client (a kill inside the §5.2 window) → re-dispatched, as the Admin's claim timeout would"
            ));
            n += 1;
        }
    }
    Ok(n)
}

/// The child's exit status, or `None` once `limit` has passed since now: it is then
/// SIGKILLed (and reaped).
fn wait_or_kill(child: &mut Child, limit: Duration) -> Result<Option<ExitStatus>, String> {
    let t = Instant::now();
    loop {
        if let Some(st) = child.try_wait().map_err(|e| e.to_string())? {
            return Ok(Some(st));
        }
        if t.elapsed() >= limit {
            let _ = child.kill(); // SIGKILL
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `cmautobuy-client run` on `data` and `device` (one of `route`'s names), live, with
/// the scenario's own lock directory and the run's device backend (no
/// `--exit-when-idle`: the caller adds it).
fn client_cmd(
    b: &Bins,
    data: &Path,
    dir: &Path,
    admin_url: &str,
    route: &Route,
    device: &str,
) -> Command {
    let mut cmd = Command::new(&b.client);
    cmd.arg("--data-dir")
        .arg(data)
        .args(["run", "--admin", admin_url, "--token", "matrix"])
        .args(["--device", device])
        .arg("--allow-live")
        .args(["--poll-interval", "0.2"])
        // Warnings, and the u2 server's lifecycle (started, reused, fallen back): under
        // `--backend u2` the scenario checks that the clients really drove the server.
        .env("RUST_LOG", "warn,cmautobuy_client::device::u2=info")
        .env("CMAUTOBUY_LOCK_DIR", dir.join("locks"))
        // Crash recovery, not PDD versions: live tasks on a fresh store (the gate has its
        // own e2e test).
        .env("CMAUTOBUY_PDD_VERSION_GATE", "false")
        // Pacing's gap between tasks (3 s by default) only slows the matrix down: the
        // scenarios are about what survives a kill, not about how fast tasks follow.
        .env("CMAUTOBUY_MIN_TASK_GAP_SECS", "0")
        // The simulated phone's delivery address: no live order without a fingerprint.
        .env("CMAUTOBUY_EXPECTED_ADDRESS", SIM_ADDRESS_FINGERPRINT)
        .env("CMAUTOBUY_DEVICE_BACKEND", b.backend.name())
        .env_remove("CMAUTOBUY_U2_JAR")
        .env_remove("ANDROID_ADB_SERVER_PORT")
        .env_remove("CMAUTOBUY_CONFIG");
    if let Backend::U2 { jar } = &b.backend {
        cmd.env("CMAUTOBUY_U2_JAR", jar);
    }
    if let Some(port) = route.adb_port {
        // `run` finds the adb server by the environment, as an operator's would.
        cmd.env("ANDROID_ADB_SERVER_PORT", port.to_string());
    }
    cmd
}

/// The "two processes" check against the running `first`: once its data-directory lock
/// file names it, a second client on the same data directory and a third on another
/// data directory but the same phone, named the other way (`route.other_name`: bare
/// `HOST:PORT` when the first has `tcp:HOST:PORT`, and the reverse on u2) must exit 2
/// within a bound, naming its pid; then waits (bounded) until every task is terminal at
/// the Admin. The lines say what happened.
#[allow(clippy::too_many_arguments)]
fn contend_with(
    b: &Bins,
    first: &mut Child,
    data: &Path,
    dir: &Path,
    admin_url: &str,
    route: &Route,
    s: &Scenario,
    h: &web::Client,
) -> Result<Vec<String>, String> {
    let pid = first.id();
    let lock_file = data.join("client.lock");
    let t = Instant::now();
    while std::fs::read_to_string(&lock_file)
        .ok()
        .and_then(|t| t.lines().next().map(str::to_string))
        != Some(pid.to_string())
    {
        if let Some(st) = first.try_wait().map_err(|e| e.to_string())? {
            return Err(format!(
                "the first client exited ({st}) before holding its lock"
            ));
        }
        if t.elapsed() > Duration::from_secs(60) {
            return Err(format!("{} never named pid {pid}", lock_file.display()));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let mut lines = Vec::new();
    let other = dir.join("client-other");
    for (what, data_dir, device, backend, expect) in [
        (
            "the same data directory",
            data,
            route.device.as_str(),
            b.backend.name(),
            "the data directory",
        ),
        (
            "the same phone",
            other.as_path(),
            route.other_name.as_str(),
            route.other_backend,
            "the device",
        ),
    ] {
        let mut cmd = client_cmd(b, data_dir, dir, admin_url, route, device);
        cmd.env("CMAUTOBUY_DEVICE_BACKEND", backend)
            .arg("--exit-when-idle")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut c = cmd.spawn().map_err(|e| format!("client: {e}"))?;
        let Some(st) = wait_or_kill(&mut c, Duration::from_secs(30))? else {
            return Err(format!("a second client on {what} was not refused"));
        };
        let mut err = String::new();
        if let Some(mut e) = c.stderr.take() {
            use std::io::Read;
            let _ = e.read_to_string(&mut err);
        }
        let names = format!("{expect} ");
        if st.code() != Some(2)
            || !err.contains(&names)
            || !err.contains(&format!("in use by pid {pid} "))
        {
            return Err(format!(
                "a second client on {what} ended {st}, not refused naming pid {pid}: {}",
                err.trim()
            ));
        }
        lines.push(format!(
            "second client on {what} (--device {device}, backend {backend}): refused, exit 2, names pid {pid}"
        ));
    }
    // The first one goes on: every task ends at the Admin.
    let t = Instant::now();
    loop {
        let open = s.tasks.iter().any(|t| {
            let id = t["id"].as_str().unwrap_or_default();
            h.get(&format!("{admin_url}/api/v1/admin/tasks/{id}"))
                .ok()
                .and_then(|v| v["task"]["status"].as_str().map(str::to_string))
                .is_none_or(|st| !matches!(st.as_str(), "succeeded" | "manual_review" | "failed"))
        });
        if !open {
            break;
        }
        if let Some(st) = first.try_wait().map_err(|e| e.to_string())? {
            return Err(format!("the first client exited ({st}) with tasks open"));
        }
        if t.elapsed() > Duration::from_secs(120) {
            return Err("the tasks never ended under the first client".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(lines)
}

/// What the client runs' logs (`client-N.log`) say of uiautomator2's server.
#[derive(Default)]
struct U2Lifecycle {
    /// Started by a run (`u2: the uiautomator2 server is ready` after a start of its own).
    started: usize,
    /// Found answering and adopted (left by an earlier run or another tool).
    reused: usize,
    /// Falls back to uiautomator.
    fallbacks: usize,
    first_fallback: String,
}

fn u2_lifecycle(dir: &Path, runs: usize) -> U2Lifecycle {
    let mut u = U2Lifecycle::default();
    for run in 1..=runs {
        let log =
            std::fs::read_to_string(dir.join(format!("client-{run}.log"))).unwrap_or_default();
        for line in log.lines() {
            if line.contains("a server already answers on the phone; reusing it") {
                u.reused += 1;
            } else if line.contains("u2: the uiautomator2 server is ready") {
                u.started += 1;
            } else if line.contains("u2: falling back to uiautomator") {
                if u.fallbacks == 0 {
                    u.first_fallback = format!("client-{run}.log: {}", line.trim());
                }
                u.fallbacks += 1;
            }
        }
    }
    // A reused server is also "ready": count it once, as reused.
    u.started = u.started.saturating_sub(u.reused);
    u
}

/// The client's database file (whatever its name) in its data directory.
/// The client's store in the data directory `data` (opened, never created: no store yet
/// is an error). Read-write, as a killed client's WAL may need recovering.
fn client_db(data: &Path) -> rusqlite::Result<rusqlite::Connection> {
    rusqlite::Connection::open_with_flags(
        cmautobuy_client::store::Store::path_in(data),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE,
    )
}

/// `--list`: every scenario (or those whose name contains `only`) with its kills, its
/// tasks and what it must end with, one JSON object per line; nothing is run.
fn list_scenarios(only: Option<&str>) {
    for s in scenarios()
        .into_iter()
        .filter(|s| only.is_none_or(|o| s.name.contains(o)))
    {
        let line = json!({
            "name": s.name,
            "kills": s.kills.iter().map(|k| format!("{k:?}")).collect::<Vec<_>>(),
            "tasks": s.tasks,
            "expect": s.expect,
            "orders": s.orders,
            "identical": s.identical.as_ref().map(|i| json!({"statuses": i.statuses, "orders": i.orders})),
            "u2_only": s.stray_u2_server,
        });
        println!("{line}");
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut client = None;
    let mut admin = None;
    let mut phone = None;
    let mut catalog = PathBuf::from("fixtures/catalog");
    let mut only: Option<String> = None;
    let mut backend = String::from("uiautomator");
    let mut u2_jar: Option<PathBuf> = None;
    let mut list = false;
    // Scenarios side by side: each has its own mock Admin, phone, data directory and
    // (on u2) adb server, and mostly waits on them.
    let mut jobs = 3;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--backend" => backend = args.next().unwrap_or_default(),
            "--u2-jar" => u2_jar = args.next().map(PathBuf::from),
            "--client" => client = args.next().map(PathBuf::from),
            "--mock-admin" => admin = args.next().map(PathBuf::from),
            "--sim-phone" => phone = args.next().map(PathBuf::from),
            "--catalog" => catalog = args.next().map(PathBuf::from).unwrap_or(catalog),
            "--only" => only = args.next(),
            "--list" => list = true,
            "--jobs" => {
                jobs = match args.next().and_then(|j| j.parse::<usize>().ok()) {
                    Some(j) if j > 0 => j,
                    _ => {
                        eprintln!("crash_matrix: --jobs takes a positive number");
                        std::process::exit(2);
                    }
                }
            }
            other => {
                eprintln!("crash_matrix: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    if list {
        list_scenarios(only.as_deref());
        return;
    }
    let usage = "usage: crash_matrix --client BIN --mock-admin BIN --sim-phone BIN \
                 [--backend uiautomator|u2] [--u2-jar PATH] [--only NAME] [--jobs N] | --list [--only NAME]";
    let (Some(client), Some(admin), Some(phone)) = (client, admin, phone) else {
        eprintln!("{usage}");
        std::process::exit(2);
    };
    let backend = match (backend.as_str(), u2_jar) {
        ("uiautomator", _) => Backend::Uiautomator,
        ("u2", Some(jar)) if jar.is_file() => Backend::U2 { jar },
        ("u2", Some(jar)) => {
            eprintln!(
                "crash_matrix: --u2-jar {}: no such file (scripts/install-u2-jar puts it in .tools/uiautomator2/)",
                jar.display()
            );
            std::process::exit(2);
        }
        ("u2", None) => {
            eprintln!("crash_matrix: --backend u2 needs --u2-jar PATH\n{usage}");
            std::process::exit(2);
        }
        (other, _) => {
            eprintln!("crash_matrix: unknown backend {other:?}\n{usage}");
            std::process::exit(2);
        }
    };
    let bins = Bins {
        client,
        admin,
        phone,
        catalog,
        backend,
    };
    let tag = format!("[{}]", bins.backend.name());
    let root = tempfile::Builder::new()
        .prefix("crash-matrix-")
        .tempdir()
        .expect("temp dir");
    let key = root.path().join("adbkey");
    let t0 = Instant::now();
    let u2 = matches!(bins.backend, Backend::U2 { .. });
    let all: Vec<Scenario> = scenarios()
        .into_iter()
        .filter(|s| u2 || !s.stray_u2_server)
        .filter(|s| only.as_deref().is_none_or(|o| s.name.contains(o)))
        .collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures = std::sync::atomic::AtomicUsize::new(0);
    let print = std::sync::Mutex::new(());
    std::thread::scope(|scope| {
        for _ in 0..jobs.min(all.len()) {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let Some(s) = all.get(i) else { break };
                let t = Instant::now();
                let result = run_scenario(&bins, s, root.path(), &key);
                // One scenario's lines together.
                let _printing = print.lock().unwrap_or_else(|p| p.into_inner());
                match result {
                    Ok(o) => {
                        println!(
                            "{} {tag:<13} {:<40} runs {} ({} ms)",
                            if o.ok { "ok  " } else { "FAIL" },
                            s.name,
                            o.runs,
                            t.elapsed().as_millis()
                        );
                        for l in &o.lines {
                            println!("       {l}");
                        }
                        if !o.ok {
                            failures.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                    }
                    Err(e) => {
                        println!("FAIL {tag:<13} {:<40} {e}", s.name);
                        failures.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    }
                }
            });
        }
    });
    let failed = failures.into_inner();
    println!(
        "crash matrix {tag}: {} scenario(s), {failed} failed, {} s",
        all.len(),
        t0.elapsed().as_secs()
    );
    if failed > 0 {
        // Keep the evidence (logs, databases, ledgers).
        let kept = root.keep();
        println!("evidence kept in {}", kept.display());
        std::process::exit(1);
    }
}
