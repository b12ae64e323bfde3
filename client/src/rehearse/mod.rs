//! `cmautobuy-client rehearse`: the whole system on one machine, in one command.
//!
//! With no options: start the bundled mock Admin in-process (loopback HTTP, a temporary
//! SQLite file) and the simulated phone in-process (real ADB wire protocol, reached
//! directly over TCP so no `adb` binary is needed; the fixture catalog is compiled into
//! the binary), seed a demo batch (one collect task per catalog goods, each with the
//! outcome it must end with), run the real client — claim loop, flow executor over
//! ADB, outbox relay, HTTP gateway — until the batch is done, then read every task's
//! outcome back from the Admin and compare it with the batch's expectation.
//!
//! Options swap parts for real ones: `--admin URL` (tasks seeded and read through its
//! operator API), `--device SERIAL` (a real phone; collect reads only, and purchases
//! will be dry runs only), `--tasks FILE` (a batch of your own), `--profile realistic`
//! (the simulated phone sleeps like a phone, for the wall-time benchmark).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use cmautobuy_sim_phone::catalog::CatalogFile;
use cmautobuy_sim_phone::{
    Catalog, DumpFault, LatencyProfile, PopupSchedule, SimConfig, SimPhone, SimPhoneHandle,
};

use crate::artifacts::Retention;
use crate::clock::TokioClock;
use crate::device::{adb::default_adb_server, AdbOptions, DeviceAddress};
use crate::flow::adb::AdbSource;
use crate::flow::exec::{FlowExecutor, FlowExecutorConfig, ReportHook, TaskReport};
use crate::gateway::{GatewaySettings, HttpAdminGateway};
use crate::outbox::Relay;
use crate::registration;
use crate::runner::{client_profile, RunConfig, RunExit, Runner};
use crate::secret::Secret;
use crate::store::{SettingsPatch, Store};

/// The catalog compiled into the binary, so `rehearse` works from any directory.
const EMBEDDED_CATALOG: &[(&str, &str)] = &[
    (
        "apparel.json",
        include_str!("../../fixtures/catalog/apparel.json"),
    ),
    (
        "general.json",
        include_str!("../../fixtures/catalog/general.json"),
    ),
    (
        "special.json",
        include_str!("../../fixtures/catalog/special.json"),
    ),
];

/// The embedded fixture catalog.
pub fn embedded_catalog() -> anyhow::Result<Catalog> {
    let mut goods = Vec::new();
    for (name, text) in EMBEDDED_CATALOG {
        let f: CatalogFile =
            serde_json::from_str(text).with_context(|| format!("embedded catalog {name}"))?;
        goods.extend(f.goods);
    }
    Catalog::new(goods).map_err(|e| anyhow!("embedded catalog: {e}"))
}

/// How the simulated phone is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimRoute {
    /// Directly over TCP (`tcp:127.0.0.1:PORT`): no adb binary needed.
    Direct,
    /// Through an adb server at this address (the serial is `127.0.0.1:PORT`).
    AdbServer(std::net::SocketAddrV4),
}

/// What `rehearse` was asked to do.
#[derive(Clone, Debug)]
pub struct RehearseOptions {
    /// A real phone (adb serial or `tcp:HOST:PORT`) instead of the simulated one.
    pub device: Option<String>,
    pub sim_route: SimRoute,
    /// An Admin to use instead of the embedded mock.
    pub admin: Option<String>,
    pub token: Option<String>,
    /// A batch file instead of the demo batch.
    pub tasks: Option<PathBuf>,
    pub profile: LatencyProfile,
    pub seed: u64,
    /// Where the client's store and artifacts go (default: a temporary directory,
    /// kept when something did not end as expected).
    pub data_dir: Option<PathBuf>,
    /// Give up when the batch is not done by then.
    pub timeout: Duration,
    /// Print a line per finished task (to stderr when `json`).
    pub json: bool,
    /// Simulated phone only: popups on this percentage of page views.
    pub popups_percent: u8,
    /// Simulated phone only: the n-th dumps fail so.
    pub dump_faults: Vec<(u64, DumpFault)>,
    /// Add the purchase demo tasks to the demo batch (issue 7): dry runs, or with
    /// `live` real unpaid orders on the simulated phone.
    pub purchases: bool,
    /// Run the purchase demo live (simulated phone only; refused with a real device).
    pub live: bool,
    /// Add the failure paths to the demo batch: the catalog goods that must end with a
    /// code (redirect, login, risk page, delisted) and the purchases that must be refused
    /// (price limit, no address, sold out). Off by default, so the default rehearsal is a
    /// batch where every task succeeds.
    pub failure_paths: bool,
}

impl Default for RehearseOptions {
    fn default() -> Self {
        RehearseOptions {
            device: None,
            sim_route: SimRoute::Direct,
            admin: None,
            token: None,
            tasks: None,
            profile: LatencyProfile::Zero,
            seed: 7,
            data_dir: None,
            timeout: Duration::from_secs(600),
            json: false,
            popups_percent: 0,
            dump_faults: Vec::new(),
            purchases: false,
            live: false,
            failure_paths: false,
        }
    }
}

/// One task of a batch and the outcome it must end with at the Admin.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchTask {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(rename = "type")]
    pub task_type: String,
    #[serde(default)]
    pub execution_mode: Option<String>,
    pub payload: Value,
    /// `succeeded`, or `{status}:{code}` (`failed:GOODS_MISMATCH`).
    pub expect: String,
}

/// One line of the summary.
#[derive(Clone, Debug, Serialize)]
pub struct TaskLine {
    pub id: String,
    #[serde(rename = "type")]
    pub task_type: String,
    /// As stored at the Admin: `succeeded` or `{status}:{code}`; `missing` when the
    /// Admin has nothing.
    pub outcome: String,
    pub expected: String,
    pub as_expected: bool,
    pub dumps: u32,
    pub taps: u32,
    pub swipes: u32,
    pub screenshots: u32,
    pub round_trips: u32,
    /// Collect: the option combinations read (colours, × styles …): the C of the
    /// "≤ C + 4 dumps" goal.
    pub combinations: Option<usize>,
    pub wall_ms: u64,
    pub device_ms: Option<u64>,
    /// wall_ms ÷ device_ms (meaningful under `--profile realistic`).
    pub wall_over_device: Option<f64>,
    pub artifact_ref: Option<String>,
}

/// The whole summary (`--json` prints it as one object).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub ok: bool,
    pub profile: String,
    pub admin: String,
    pub device: String,
    pub tasks: Vec<TaskLine>,
    pub counts: BTreeMap<String, usize>,
    pub simulated_device_ms: Option<u64>,
    pub benchmarks: Value,
    pub artifacts_dir: String,
}

/// The demo batch: one collect task per catalog goods that can be collected, all
/// `succeeded`; with `failure_paths` also the goods that must end with a code (redirect →
/// `failed:GOODS_MISMATCH`, login → `manual_review:LOGIN_REQUIRED`, risk page →
/// `manual_review:RISK_VERIFICATION`, delisted → `failed:GOODS_UNAVAILABLE`).
pub fn demo_batch(catalog: &Catalog, run_tag: &str, failure_paths: bool) -> Vec<BatchTask> {
    catalog
        .goods
        .iter()
        .filter(|g| {
            failure_paths
                || !(g.redirect_to.is_some() || g.login_required || g.risk_verification || g.delisted)
        })
        .map(|g| {
            let expect = if g.redirect_to.is_some() {
                "failed:GOODS_MISMATCH"
            } else if g.login_required {
                "manual_review:LOGIN_REQUIRED"
            } else if g.risk_verification {
                "manual_review:RISK_VERIFICATION"
            } else if g.delisted {
                "failed:GOODS_UNAVAILABLE"
            } else {
                "succeeded"
            };
            BatchTask {
                id: Some(format!("{run_tag}-collect-{}", g.goods_id)),
                task_type: "collect".into(),
                execution_mode: None,
                payload: json!({
                    "goods_id": g.goods_id,
                    "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={}", g.goods_id),
                    "expected_title": g.title,
                }),
                expect: expect.into(),
            }
        })
        .collect()
}

/// The purchase demo (issue 7): ordinary purchases and a §7.1 spec resolution (60公斤
/// among 110斤…150斤, the mock's rule resolver matches 120斤), all `succeeded`; with
/// `failure_paths` also a total above the limit, no delivery address and a sold-out
/// option. Dry runs unless `live`.
pub fn purchase_demo(run_tag: &str, live: bool, failure_paths: bool) -> Vec<BatchTask> {
    let mode = if live { "live" } else { "dry_run" };
    let t = |name: &str, goods: &str, options: Value, qty: i64, max: i64, expect: &str| BatchTask {
        id: Some(format!("{run_tag}-purchase-{name}-{goods}")),
        task_type: "purchase".into(),
        execution_mode: Some(mode.into()),
        payload: json!({
            "goods_id": goods,
            "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}"),
            "options": options, "quantity": qty, "max_price_cent": max,
        }),
        expect: expect.into(),
    };
    let mut tasks = vec![
        t(
            "ok",
            "737116531267",
            json!({"color": "黑色", "size": "L"}),
            2,
            11800,
            "succeeded",
        ),
        t(
            "spec",
            "602938475610",
            json!({"color": "黑色", "size": "60公斤"}),
            1,
            4580,
            "succeeded",
        ),
        t(
            "ok2",
            "737116531267",
            json!({"color": "雾霾蓝", "size": "M"}),
            1,
            10000,
            "succeeded",
        ),
    ];
    if failure_paths {
        tasks.extend([
            t(
                "limit",
                "737116531267",
                json!({"color": "奶白色", "size": "M"}),
                2,
                9999,
                "failed:PRICE_LIMIT_EXCEEDED",
            ),
            t(
                "noaddr",
                "726677889900",
                json!({"capacity": "500ml"}),
                1,
                10000,
                "manual_review:ADDRESS_MISSING",
            ),
            t(
                "soldout",
                "737116531267",
                json!({"color": "黑色", "size": "XL"}),
                1,
                10000,
                "failed:SPEC_SOLD_OUT",
            ),
        ]);
    }
    tasks
}

/// Runs a rehearsal and returns its summary (`ok` says whether every task ended as
/// expected).
pub fn rehearse(opts: RehearseOptions) -> anyhow::Result<Summary> {
    let temp = tempfile::Builder::new()
        .prefix("cmautobuy-rehearse-")
        .tempdir()
        .context("cannot create a temporary directory")?;
    let data_dir = opts
        .data_dir
        .clone()
        .unwrap_or_else(|| temp.path().to_path_buf());
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("cannot create {}", data_dir.display()))?;
    let artifacts_dir = data_dir.join("artifacts");
    let catalog = embedded_catalog()?;
    let run_tag = format!("rh{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let batch = match &opts.tasks {
        Some(p) => {
            let text = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
            serde_json::from_slice::<Vec<BatchTask>>(&text).with_context(|| {
                format!("{} is not a batch (a JSON array of tasks)", p.display())
            })?
        }
        None => {
            let mut b = demo_batch(&catalog, &run_tag, opts.failure_paths);
            if opts.purchases || opts.live {
                b.extend(purchase_demo(&run_tag, opts.live, opts.failure_paths));
            }
            b
        }
    };
    if opts.live && opts.device.is_some() {
        bail!("rehearse --live runs live purchases against the simulated phone only");
    }
    if batch.is_empty() {
        bail!("the batch is empty");
    }
    if opts.device.is_some()
        && batch
            .iter()
            .any(|t| t.execution_mode.as_deref() == Some("live"))
    {
        bail!("a real phone rehearses dry runs only: the batch holds live tasks");
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;

    // The Admin: the embedded mock unless --admin.
    let (admin_url, admin_server) = match &opts.admin {
        Some(u) => (u.trim_end_matches('/').to_string(), None),
        None => {
            let db = data_dir.join("mock-admin.sqlite");
            let admin = cmautobuy_mock_admin::MockAdmin::open(
                cmautobuy_mock_admin::MockAdminConfig::file(db.to_string_lossy().to_string()),
            )?;
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            let listener = rt.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
            let addr = listener.local_addr()?;
            let handle = rt.spawn(admin.serve(listener, async move {
                let _ = rx.await;
            }));
            (format!("http://{addr}"), Some((tx, handle)))
        }
    };

    // The phone: the simulated one unless --device.
    let mut sim: Option<Arc<SimPhoneHandle>> = None;
    let device_label = match &opts.device {
        Some(d) => d.clone(),
        None => {
            let mut cfg = SimConfig::new(catalog.clone());
            cfg.profile = opts.profile;
            cfg.seed = opts.seed;
            if opts.popups_percent > 0 {
                cfg.popups = PopupSchedule::Seeded {
                    percent: opts.popups_percent,
                };
            }
            cfg.faults.dump_faults = opts.dump_faults.clone();
            let phone = SimPhone::bind(SocketAddr::from(([127, 0, 0, 1], 0)), cfg)
                .map_err(|e| anyhow!("cannot start the simulated phone: {e}"))?;
            let label = match &opts.sim_route {
                SimRoute::Direct => format!("tcp:{}", phone.addr()),
                SimRoute::AdbServer(_) => phone.serial(),
            };
            sim = Some(Arc::new(phone));
            label
        }
    };
    let server = match &opts.sim_route {
        SimRoute::AdbServer(s) => *s,
        SimRoute::Direct => {
            default_adb_server(std::env::var("ANDROID_ADB_SERVER_PORT").ok().as_deref())
        }
    };
    let addr = DeviceAddress::parse(&device_label, server)
        .map_err(|e| anyhow!("device {device_label}: {e}"))?;
    let mut source = AdbSource::open(addr, AdbOptions::new(data_dir.join("adbkey")))
        .map_err(|e| anyhow!("device {device_label}: {e}"))?;
    if let Some(phone) = &sim {
        let shared = phone_probe(phone);
        source = source.with_device_time(shared);
    }

    // Seed the batch.
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let token = opts.token.clone().unwrap_or_else(|| "rehearse".into());
    let mut ids: Vec<(String, BatchTask)> = Vec::new();
    for (i, t) in batch.into_iter().enumerate() {
        let mut body = json!({"type": t.task_type, "payload": t.payload, "priority": 0});
        let id = t.id.clone().unwrap_or_else(|| format!("{run_tag}-{i}"));
        body["id"] = Value::String(id.clone());
        if let Some(m) = &t.execution_mode {
            body["execution_mode"] = Value::String(m.clone());
        }
        let created: Value = rt.block_on(async {
            let r = http
                .post(format!("{admin_url}/api/v1/admin/tasks"))
                .bearer_auth(&token)
                .json(&body)
                .send()
                .await?;
            let status = r.status();
            let v: Value = r.json().await.unwrap_or(Value::Null);
            if !status.is_success() {
                bail!("the Admin refused task {id}: {status} {v}");
            }
            Ok(v)
        })?;
        let stored = created
            .pointer("/task/id")
            .and_then(Value::as_str)
            .unwrap_or(&id)
            .to_string();
        ids.push((stored, t));
    }

    // The client.
    let store = Store::open(&Store::path_in(&data_dir))?;
    registration::save_locally(
        &store,
        &SettingsPatch {
            name: Some("rehearse".into()),
            admin_url: Some(admin_url.clone()),
            token: Some(Secret::new(token.clone())),
            device: Some(device_label.clone()),
        },
    )?;
    let settings = store.settings()?;
    let gw = Arc::new(HttpAdminGateway::new(
        &admin_url,
        GatewaySettings::new(settings.client_id.clone(), settings.token.clone()),
    )?);
    let total = ids.len();
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let json_mode = opts.json;
    let hook: ReportHook = {
        let done = done.clone();
        Arc::new(move |r: &TaskReport| {
            let n = done.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            let line = format!(
                "[{n}/{total}] {} {} → {} (dumps {}, taps {}, {} ms)",
                r.task_type, r.task_id, r.outcome, r.stats.dumps, r.stats.taps, r.stats.wall_ms
            );
            if json_mode {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
        })
    };
    let mut cfg = FlowExecutorConfig::new(artifacts_dir.clone());
    cfg.retention = Retention {
        keep_attempts: 5,
        max_age: None,
    };
    // Purchases (issue 7): live only with --live, and only ever on the simulated phone.
    let backend = crate::flow::purchase_job::Backend::new(
        store.clone(),
        gw.clone(),
        TokioClock::new(),
        rt.handle().clone(),
        opts.live && sim.is_some(),
    );
    let executor = Arc::new(
        FlowExecutor::new(source, cfg)
            .with_hook(hook)
            .with_purchase(Arc::new(backend)),
    );
    let reports = executor.reports();
    let exit = rt.block_on(async {
        let clock = TokioClock::new();
        let profile = client_profile(&settings, crate::executor::Executor::readiness(&*executor));
        let reg = registration::spawn(store.clone(), gw.clone(), clock.clone(), profile);
        let relay = Relay::new(store.clone(), gw.clone(), clock.clone(), Default::default());
        let runner = Runner::new(
            store.clone(),
            gw.clone(),
            executor.clone(),
            clock.clone(),
            RunConfig {
                poll_interval: Duration::from_millis(200),
                exit_when_idle: true,
                policy: Default::default(),
            },
            relay.waker(),
        );
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let relay_task = {
            let rx = stop_rx.clone();
            tokio::spawn(async move { relay.run(rx).await })
        };
        let exit = tokio::time::timeout(opts.timeout, runner.run(stop_rx)).await;
        let _ = stop_tx.send(true);
        let _ = relay_task.await;
        let _ = tokio::time::timeout(Duration::from_secs(2), reg).await;
        exit
    });
    let exit = match exit {
        Ok(Ok(e)) => e,
        Ok(Err(e)) => bail!("the client stopped: {e}"),
        Err(_) => bail!("the batch was not done within {:?}", opts.timeout),
    };
    if let RunExit::Blocked(reason) = &exit {
        eprintln!("claiming stopped: {reason}");
    }

    // Read every task's outcome back from the Admin.
    let reports: Vec<TaskReport> = reports.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut lines = Vec::new();
    for (id, t) in &ids {
        let v: Value = rt.block_on(async {
            let r = http
                .get(format!("{admin_url}/api/v1/admin/tasks/{}", urlencode(id)))
                .bearer_auth(&token)
                .send()
                .await?;
            anyhow::Ok(r.json::<Value>().await.unwrap_or(Value::Null))
        })?;
        let last = v
            .get("results")
            .and_then(Value::as_array)
            .and_then(|a| a.last())
            .cloned();
        let (outcome, combinations) = match &last {
            Some(r) if r.get("kind").and_then(Value::as_str) == Some("result") => {
                ("succeeded".to_string(), combinations_of(r.get("body")))
            }
            Some(r) => {
                let b = r.get("body").cloned().unwrap_or(Value::Null);
                let status = b.get("status").and_then(Value::as_str).unwrap_or("?");
                let code = b
                    .pointer("/error/code")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                (format!("{status}:{code}"), None)
            }
            None => ("missing".to_string(), None),
        };
        let rep = reports.iter().rev().find(|r| &r.task_id == id);
        let stats = rep.map(|r| r.stats.clone()).unwrap_or_default();
        let device_ms = rep.and_then(|r| r.device_ms);
        let ratio = device_ms
            .filter(|d| *d > 0)
            .map(|d| stats.wall_ms as f64 / d as f64);
        lines.push(TaskLine {
            id: id.clone(),
            task_type: t.task_type.clone(),
            as_expected: outcome == t.expect,
            outcome,
            expected: t.expect.clone(),
            dumps: stats.dumps,
            taps: stats.taps,
            swipes: stats.swipes,
            screenshots: stats.screenshots,
            round_trips: stats.round_trips(),
            combinations,
            wall_ms: stats.wall_ms,
            device_ms,
            wall_over_device: ratio,
            artifact_ref: rep.and_then(|r| r.artifact_ref.clone()),
        });
    }
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for l in &lines {
        *counts.entry(l.outcome.clone()).or_default() += 1;
    }
    let ok = lines.iter().all(|l| l.as_expected);
    let collect_ok: Vec<&TaskLine> = lines
        .iter()
        .filter(|l| l.task_type == "collect" && l.outcome == "succeeded")
        .collect();
    let over: Vec<i64> = collect_ok
        .iter()
        .filter_map(|l| l.combinations.map(|c| i64::from(l.dumps) - c as i64))
        .collect();
    let ratios: Vec<f64> = collect_ok
        .iter()
        .filter_map(|l| l.wall_over_device)
        .collect();
    let benchmarks = json!({
        "collect_dumps_minus_combinations_max": over.iter().max(),
        "collect_dumps_goal": "dumps <= C + 4 (C = colour combinations read)",
        "collect_dumps_goal_met": over.iter().all(|d| *d <= 4),
        "wall_over_device_max": ratios.iter().cloned().fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x)))),
        "wall_over_device_mean": if ratios.is_empty() { None } else { Some(ratios.iter().sum::<f64>() / ratios.len() as f64) },
        "wall_over_device_goal": 1.25,
        "wall_over_device_meaningful": opts.profile == LatencyProfile::Realistic,
    });
    let simulated_device_ms = sim.as_ref().map(|p| p.counters().device_time_ms);
    if let Some((tx, handle)) = admin_server {
        let _ = tx.send(());
        let _ = rt.block_on(async { tokio::time::timeout(Duration::from_secs(5), handle).await });
    }
    drop(sim);
    let artifacts_shown = if opts.data_dir.is_some() {
        artifacts_dir.display().to_string()
    } else if ok {
        format!(
            "{} (removed with the temporary directory; --data-dir DIR keeps them)",
            artifacts_dir.display()
        )
    } else {
        // Keep the evidence of a rehearsal that went wrong.
        let kept = temp.keep();
        kept.join("artifacts").display().to_string()
    };
    Ok(Summary {
        ok,
        profile: match opts.profile {
            LatencyProfile::Realistic => "realistic".into(),
            LatencyProfile::Zero => "zero".into(),
        },
        admin: admin_url,
        device: device_label,
        tasks: lines,
        counts,
        simulated_device_ms,
        benchmarks,
        artifacts_dir: artifacts_shown,
    })
}

fn phone_probe(phone: &Arc<SimPhoneHandle>) -> Arc<dyn Fn() -> u64 + Send + Sync> {
    let p = phone.clone();
    Arc::new(move || p.counters().device_time_ms)
}

/// The number of option combinations a collect result read: distinct non-size option
/// tuples of its skus.
fn combinations_of(body: Option<&Value>) -> Option<usize> {
    let skus = body?.pointer("/pdd_data/skus")?.as_array()?;
    let mut seen = std::collections::BTreeSet::new();
    for s in skus {
        let opts = s.get("options")?.as_object()?;
        let key: Vec<(String, String)> = opts
            .iter()
            .filter(|(k, _)| k.as_str() != "size" || opts.len() == 1)
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect();
        seen.insert(key);
    }
    Some(seen.len())
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The human summary.
pub fn print_summary(s: &Summary) {
    println!();
    println!(
        "rehearse: admin {} · device {} · profile {}",
        s.admin, s.device, s.profile
    );
    for l in &s.tasks {
        println!(
            "  {} {:<36} {:<34} expected {:<34} dumps {:>2} taps {:>2}{}",
            if l.as_expected { "ok " } else { "BAD" },
            l.id,
            l.outcome,
            l.expected,
            l.dumps,
            l.taps,
            l.wall_over_device
                .map(|r| format!(" wall/device {r:.2}"))
                .unwrap_or_default()
        );
    }
    let counts: Vec<String> = s.counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
    println!("outcomes: {}", counts.join(" "));
    if let Some(ms) = s.simulated_device_ms {
        println!("simulated device time: {ms} ms");
    }
    println!("benchmarks: {}", s.benchmarks);
    println!("artifacts: {}", s.artifacts_dir);
    let succeeded = s.tasks.iter().filter(|l| l.outcome == "succeeded").count();
    let total = s.tasks.len();
    if !s.ok {
        println!("SOME TASKS DID NOT END AS EXPECTED");
    } else if succeeded == total {
        println!("every task succeeded ({succeeded} of {total})");
    } else {
        println!(
            "every task ended as expected ({succeeded} of {total} succeeded, the rest with \
             their expected codes)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default rehearsal is a batch where every task succeeds (issue 6: "its summary
    /// shows every task succeeded"); `--failure-paths` adds every failure page of the
    /// catalog and the refused purchases.
    #[test]
    fn default_demo_batch_expects_only_successes_and_failure_paths_add_the_rest() {
        let catalog = embedded_catalog().expect("embedded catalog");
        let mut plain = demo_batch(&catalog, "t", false);
        plain.extend(purchase_demo("t", false, false));
        assert!(plain.iter().all(|t| t.expect == "succeeded"));
        assert!(plain.iter().any(|t| t.task_type == "purchase"));

        let mut full = demo_batch(&catalog, "t", true);
        assert_eq!(full.len(), catalog.goods.len());
        full.extend(purchase_demo("t", false, true));
        let failures: Vec<&str> = full
            .iter()
            .filter(|t| t.expect != "succeeded")
            .map(|t| t.expect.as_str())
            .collect();
        for code in [
            "failed:GOODS_MISMATCH",
            "manual_review:LOGIN_REQUIRED",
            "manual_review:RISK_VERIFICATION",
            "failed:GOODS_UNAVAILABLE",
            "failed:PRICE_LIMIT_EXCEEDED",
            "manual_review:ADDRESS_MISSING",
            "failed:SPEC_SOLD_OUT",
        ] {
            assert!(failures.contains(&code), "{code} missing from {failures:?}");
        }
        assert_eq!(full.len(), plain.len() + failures.len());
    }
}
