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
//!
//! The client itself starts through the one launch of [`crate::app::launch`] (the
//! console, the stop signal, [`crate::app::Client::start`]), the same as
//! `cmautobuy-client run`; what a rehearsal changes is data: a 200 ms poll interval,
//! exit when idle, a progress hook, live purchases only on the simulated phone, and a
//! stop at `--timeout` — after which the summary still says what finished and what did
//! not, and the artifacts are kept.
//!
//! A real phone (`--device`) must answer before anything starts ([`check_phone`]); one
//! that does not is refused at once ([`Refused`]), not waited for until `--timeout`.
//!
//! `--replay DIR`: the simulated phone serves a recorded scenario instead of
//! the catalog ([`replay`]); the batch comes from `--tasks`, live tasks run live on it,
//! the between-task work that would open pages a recording never had (the account check
//! on 个人中心, the self-test, the PDD version gate) is off, and the summary counts the
//! actions that went off-script — any of them makes the rehearsal fail.
//!
//! The `u2` backend (`device_backend` / `CMAUTOBUY_DEVICE_BACKEND=u2`) needs
//! an adb server (uiautomator2's server is reached over `tcp:PORT` streams, which direct
//! TCP has not): with `u2` required, no `--device` and no `--adb-server`, the rehearsal
//! brings its own ([`cmautobuy_sim_phone::adb_server`]: the real `adb` on a free loopback port with its own
//! home, the simulated phone `adb connect`ed, the server killed when the rehearsal ends)
//! — no `adb` is an error naming what to install, never a silent fallback to direct TCP.
//! Under `auto` nothing changes: direct TCP and `uiautomator dump`.
//!
//! Parts: [`batch`] (what is seeded and expected), [`admin`] (the mock Admin and the
//! operator API), [`console`] (the web console on the rehearsal's store, `--console`,
//! `--keep-console`), [`replay`] (`--replay`), [`summary`] (the result). This module exists only with the
//! `rehearse` feature (on by default): it is what links the bundled mock Admin and the
//! simulated phone into the client.

pub mod admin;
pub mod batch;
pub mod console;
pub mod replay;
pub mod summary;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Context};

use cmautobuy_sim_phone::{
    DumpFault, LatencyProfile, PopupSchedule, SimConfig, SimPhone, SimPhoneHandle,
};

use crate::app::launch::{self, Announce, ConsoleSpec, End, Worker};
use crate::app::{ClientConfig, Phone};
use crate::artifacts::Retention;
use crate::console::ConsoleAddr;
use crate::device::{adb::default_adb_server, AdbDevice, AdbOptions, DeviceAddress};
use crate::gateway::{GatewaySettings, HttpAdminGateway};
use crate::job::adb_source::AdbSource;
use crate::job::attempt::{ReportHook, TaskReport};
use crate::progress::ProgressHandle;
use crate::registration;
use crate::runner::RunExit;
use crate::secret::Secret;
use crate::store::{SettingsPatch, Store};

pub use admin::Admin;
pub use batch::{
    demo_batch, embedded_catalog, purchase_demo, sim_catalog, variant_catalog, variant_demo,
    BatchTask,
};
pub use summary::{print_summary, Summary, TaskLine};

/// How the simulated phone is reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimRoute {
    /// Directly over TCP (`tcp:127.0.0.1:PORT`): no adb binary needed.
    Direct,
    /// Through an adb server at this address (the serial is `127.0.0.1:PORT`).
    AdbServer(std::net::SocketAddrV4),
}

/// A rehearsal refused before anything started, for what it was given (the command
/// exits 2): a `--device` that does not answer.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// How long a phone given with `--device` has to answer before the rehearsal starts.
const PHONE_ANSWER: Duration = Duration::from_secs(5);

/// After `--timeout` the client stops claiming and finishes the task in hand; this is how
/// much longer it gets before the rehearsal is summed up without it.
const TIMEOUT_GRACE: Duration = Duration::from_secs(120);

/// Whether the phone `serial` answers: listed as `device` by the adb server at
/// `server` (a `HOST:PORT` serial is `adb connect`ed first), or, for `tcp:HOST:PORT`,
/// accepting a connection — within a few seconds, before anything heavy starts.
pub fn check_phone(serial: &str, server: std::net::SocketAddrV4) -> Result<(), Refused> {
    let refused = |why: String| {
        Refused(format!(
            "--device {serial}: {why} — check `adb devices` (cable, wireless debugging, `adb connect HOST:PORT`), or leave --device out to rehearse on the simulated phone"
        ))
    };
    let addr = DeviceAddress::parse(serial, server).map_err(|e| refused(e.to_string()))?;
    match &addr {
        DeviceAddress::Tcp(a) => std::net::TcpStream::connect_timeout(a, PHONE_ANSWER)
            .map(drop)
            .map_err(|e| refused(format!("nothing answers at {a} ({e})"))),
        DeviceAddress::Server { .. } => {
            // No key is read for a phone behind an adb server.
            let dev = AdbDevice::open(
                addr.clone(),
                AdbOptions::new(std::env::temp_dir().join("cmautobuy-rehearse-adbkey")),
            )
            .map_err(|e| refused(e.to_string()))?;
            match dev.state() {
                Ok(s) if s == "device" => Ok(()),
                Ok(s) => Err(refused(format!("the adb server at {server} says {s}"))),
                Err(e) => Err(refused(e.to_string())),
            }
        }
    }
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
    /// Give up when the batch is not done by then. `None`: 10 minutes, or 60 s per task
    /// of the batch under the realistic profile (a live purchase there takes 20–35 s of
    /// device time), whichever is longer.
    pub timeout: Option<Duration>,
    /// Print a line per finished task (to stderr when `json`).
    pub json: bool,
    /// The progress lines carry the device work (dumps, taps, time) too.
    pub bench: bool,
    /// Simulated phone only: popups on this percentage of page views.
    pub popups_percent: u8,
    /// Simulated phone only: the n-th dumps fail so.
    pub dump_faults: Vec<(u64, DumpFault)>,
    /// Add the purchase demo tasks to the demo batch: dry runs, or with
    /// `live` real unpaid orders on the simulated phone.
    pub purchases: bool,
    /// Run the purchase demo live (simulated phone only; refused with a real device).
    pub live: bool,
    /// Add the failure paths to the demo batch: the catalog goods that must end with a
    /// code (redirect, login, risk page, delisted) and the purchases that must be refused
    /// (price limit, no address, sold out). Off by default, so the default rehearsal is a
    /// batch where every task succeeds.
    pub failure_paths: bool,
    /// The web console on the rehearsal's store ([`console`]); off by default here (the
    /// command's default is [`ConsoleAddr::Default`], like `run`).
    pub console: ConsoleAddr,
    /// The console's password (needed for an address other than loopback).
    pub console_password: Option<Secret>,
    /// After the batch and its summary, keep serving the console until Ctrl-C / SIGTERM.
    pub keep_console: bool,
    /// A recorded scenario (format v1) the simulated phone replays instead of the
    /// catalog ([`replay`]); needs `tasks`.
    pub replay: Option<PathBuf>,
    /// With `replay`: write the replay log here (one JSON object per line).
    pub replay_log: Option<PathBuf>,
    /// The device backend (env `CMAUTOBUY_DEVICE_BACKEND`): `auto` uses
    /// uiautomator2's server when its jar is found and the phone is reached through an
    /// adb server (`--adb-server`), else `uiautomator dump`. `u2` on the simulated phone
    /// with [`SimRoute::Direct`] brings a private adb server ([`cmautobuy_sim_phone::adb_server`]) and routes
    /// the phone through it.
    pub device_backend: crate::config::DeviceBackend,
    /// `u2_jar` (env `CMAUTOBUY_U2_JAR`).
    pub u2_jar: Option<PathBuf>,
    /// Benchmarks: every goods of the simulated phone's catalog is `animated`.
    pub animated_pages: bool,
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
            timeout: None,
            json: false,
            bench: false,
            popups_percent: 0,
            dump_faults: Vec::new(),
            purchases: false,
            live: false,
            failure_paths: false,
            console: ConsoleAddr::Off,
            console_password: None,
            keep_console: false,
            replay: None,
            replay_log: None,
            device_backend: crate::config::DeviceBackend::Auto,
            u2_jar: None,
            animated_pages: false,
        }
    }
}

/// The batch's deadline when none is given: 10 minutes, or 60 s per task under the
/// realistic profile, whichever is longer.
fn default_timeout(profile: LatencyProfile, tasks: usize) -> Duration {
    let floor = Duration::from_secs(600);
    match profile {
        LatencyProfile::Zero => floor,
        LatencyProfile::Realistic => floor
            .max(Duration::from_secs(60).saturating_mul(u32::try_from(tasks).unwrap_or(u32::MAX))),
    }
}

/// Runs a rehearsal and returns its summary (`ok` says whether every task ended as
/// expected).
pub fn rehearse(opts: RehearseOptions) -> anyhow::Result<Summary> {
    rehearse_with(opts, |_| {})
}

/// [`rehearse`], handing the summary to `on_summary` as soon as it is known — before,
/// with [`RehearseOptions::keep_console`], the console keeps serving until Ctrl-C /
/// SIGTERM (the summary is then returned).
pub fn rehearse_with(
    opts: RehearseOptions,
    on_summary: impl FnOnce(&Summary),
) -> anyhow::Result<Summary> {
    if let Err(e) = opts.console.check_password(opts.console_password.is_some()) {
        bail!("--console {e}");
    }
    // A bad scenario is refused before anything starts.
    let scenario = match &opts.replay {
        None => None,
        Some(dir) => {
            if opts.device.is_some() {
                bail!("--replay serves a recording on the simulated phone: not with --device");
            }
            if opts.tasks.is_none() {
                bail!("--replay needs --tasks FILE: the batch to run against the recording");
            }
            Some(replay::load(dir).map_err(|e| anyhow!(e))?)
        }
    };
    let replaying = scenario.is_some();
    if let Some(d) = &opts.device {
        let server = match &opts.sim_route {
            SimRoute::AdbServer(s) => *s,
            SimRoute::Direct => {
                default_adb_server(std::env::var("ANDROID_ADB_SERVER_PORT").ok().as_deref())
            }
        };
        check_phone(d, server)?;
    }
    // u2 required on our own simulated phone, no adb server given: bring a private one
    // (found before anything starts; started once the phone listens).
    let own_adb_bin = match (&opts.device, &opts.sim_route, opts.device_backend) {
        (None, SimRoute::Direct, crate::config::DeviceBackend::U2) => {
            Some(cmautobuy_sim_phone::adb_server::find_adb(
                std::env::var_os("ADB"),
                std::env::var_os("PATH"),
            )?)
        }
        _ => None,
    };
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
    // The client's store first: it is created only in a data directory holding nothing
    // of an earlier client (`Store::open`), and the embedded Admin's database and the
    // ADB key land beside it; a rehearsal refused later (a bad batch) leaves a store.
    let store = Store::open(&Store::path_in(&data_dir))?;
    let artifacts_dir = data_dir.join("artifacts");
    let catalog = embedded_catalog()?;
    let sim_goods = batch::sim_catalog_animated(opts.animated_pages)?;
    let run_tag = format!("rh{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let batch = batch::load(
        opts.tasks.as_deref(),
        &catalog,
        &run_tag,
        opts.purchases,
        opts.live,
        opts.failure_paths,
    )?;
    if opts.live && opts.device.is_some() {
        bail!("rehearse --live runs live purchases against the simulated phone only");
    }
    let timeout = opts
        .timeout
        .unwrap_or_else(|| default_timeout(opts.profile, batch.len()));
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
    let token = opts.token.clone().unwrap_or_else(|| "rehearse".into());
    let admin = Admin::start(&rt, opts.admin.as_deref(), token, &data_dir)?;

    // The phone: the simulated one unless --device.
    let mut sim: Option<Arc<SimPhoneHandle>> = None;
    // The private adb server (u2 on the simulated phone): killed on drop — declared
    // after `sim`, so also before it on every error path.
    let mut own_adb: Option<cmautobuy_sim_phone::adb_server::PrivateAdbServer> = None;
    let mut sim_route = opts.sim_route.clone();
    // The address fingerprint: the simulated phone's own address (its street and
    // receiver), so every purchase checks it as a configured phone would.
    let mut expected_address = Vec::new();
    let device_label = match &opts.device {
        Some(d) => d.clone(),
        None => {
            let recorded_address = scenario.as_ref().and_then(replay::recorded_address);
            let mut cfg = match scenario {
                Some(s) => replay::sim_config(s, opts.replay_log.clone()),
                None => SimConfig::new(sim_goods),
            };
            cfg.profile = opts.profile;
            cfg.seed = opts.seed;
            if opts.popups_percent > 0 {
                cfg.popups = PopupSchedule::Seeded {
                    percent: opts.popups_percent,
                };
            }
            cfg.faults.dump_faults = opts.dump_faults.clone();
            // A recording shows the address it was made with (masked by the export):
            // that address is its fingerprint.
            if let Some(a) = cfg.account.address.as_ref().filter(|_| !replaying) {
                expected_address = vec![a.text.clone(), a.receiver.clone()];
            }
            if let Some(a) = recorded_address {
                expected_address = vec![a];
            }
            let phone = SimPhone::bind(SocketAddr::from(([127, 0, 0, 1], 0)), cfg)
                .map_err(|e| anyhow!("cannot start the simulated phone: {e}"))?;
            if let Some(adb) = &own_adb_bin {
                let server = cmautobuy_sim_phone::adb_server::PrivateAdbServer::start(adb)?;
                server.connect(&phone.serial())?;
                eprintln!(
                    "adb: a private adb server on {} for the simulated phone (the u2 backend \
                     needs one); stopped when the rehearsal ends",
                    server.addr()
                );
                sim_route = SimRoute::AdbServer(server.addr());
                own_adb = Some(server);
            }
            let label = match &sim_route {
                SimRoute::Direct => format!("tcp:{}", phone.addr()),
                SimRoute::AdbServer(_) => phone.serial(),
            };
            sim = Some(Arc::new(phone));
            label
        }
    };
    let server = match &sim_route {
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
        let p = phone.clone();
        source = source.with_device_time(Arc::new(move || p.counters().device_time_ms));
    }
    source = source.with_backend(opts.device_backend, opts.u2_jar.as_deref());
    // Which backend the jobs used, read after the batch.
    let u2_device = source.u2_device();

    // Seed the batch.
    let ids = admin.seed(&rt, batch, &run_tag)?;

    // The client: the same wiring as `run`.
    registration::save_locally(
        &store,
        &SettingsPatch {
            name: Some("rehearse".into()),
            admin_url: Some(admin.url.clone()),
            token: Some(Secret::new(admin.token().to_string())),
            device: Some(device_label.clone()),
        },
    )?;
    let settings = store.settings()?;
    let gw = Arc::new(HttpAdminGateway::new(
        &admin.url,
        GatewaySettings::new(settings.client_id.clone(), settings.token.clone()),
    )?);
    let reports: Arc<Mutex<Vec<TaskReport>>> = Arc::default();
    // With --replay: (task id, replay log length) at each report.
    let marks: ReplayMarks = Arc::default();
    // A replay is a script: a task that ends `retry_wait` would be handed straight back
    // and replayed from wherever the recording stands, until --timeout. The rehearsal
    // stops once every task has ended once (the outcome is delivered before it returns).
    let all_reported: AllReported = Arc::default();
    let replay_phone = sim.clone().filter(|_| replaying);
    let progress_board = ProgressHandle::new();
    let config = ClientConfig {
        poll_interval: Duration::from_millis(200),
        exit_when_idle: true,
        // Purchases: live only with --live, and only ever on the simulated phone.
        // A replayed recording runs its live tasks live (its orders go to the replay's
        // ledger).
        allow_live: (opts.live || replaying) && sim.is_some(),
        // The rehearsal vouches for its simulated phone (no self-test goods); without
        // --live it runs dry, as the operator chose (no "live paused" warning).
        dry_run_only: !((opts.live || replaying) && sim.is_some()),
        self_test_goods_id: None,
        artifacts_root: artifacts_dir.clone(),
        retention: Retention {
            keep_attempts: 5,
            max_age: None,
            ..Retention::default()
        },
        on_report: Some(progress(
            ids.len(),
            opts.json,
            opts.bench,
            reports.clone(),
            replay_phone
                .clone()
                .map(|p| (p, marks.clone(), all_reported.clone())),
        )),
        // The batch includes risk and login pages on purpose (`--failure-paths`): a rehearsal
        // runs to the end, so account trouble does not pause it.
        gate: crate::gate::GateConfig {
            account_pause: false,
            // … nor raise the unrecognised-page rate alert.
            unrecognized_rate_count: 0,
            // … nor hold live back until a dry run proved the simulated phone's PDD
            // version: the demo batches (`--live`, `purchase_demo`)
            // may hold live tasks only, which a dry_run declaration would never be handed.
            pdd_version_gate: false,
            // A replay serves the pages of its recording only: no 个人中心 between tasks.
            account_check: !replaying,
            ..Default::default()
        },
        expected_address,
        // The sweep and compaction as in production; no free-disk floor (a rehearsal
        // runs to the end on whatever disk it has).
        disk_budget: Some(crate::disk_budget::DiskBudgetConfig {
            min_free_disk_bytes: 0,
            ..crate::disk_budget::DiskBudgetConfig::new(
                data_dir.clone(),
                artifacts_dir.clone(),
                Retention {
                    keep_attempts: 5,
                    max_age: None,
                    ..Retention::default()
                },
            )
        }),
        // No webhooks: a rehearsal tells nobody.
        notify: crate::notify::NotifyConfig::default(),
        // A rehearsal is a test of the wiring, not of a PDD account: no gap, no caps.
        pacing: crate::pacing::PacingConfig::unpaced(),
        // A rehearsal's store is thrown away (or kept whole with --data-dir).
        backups_keep: 0,
        max_clock_skew: crate::clock_check::DEFAULT_MAX_SKEW,
        progress: Some(progress_board.clone()),
    };
    // The stop: every task reported once (a replay), or the deadline.
    let timed_out = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop = {
        let all_reported = all_reported.clone();
        let timed_out = timed_out.clone();
        async move {
            let done = async {
                if replaying {
                    all_reported.notified().await
                } else {
                    std::future::pending().await
                }
            };
            tokio::select! {
                _ = done => {}
                _ = tokio::time::sleep(timeout) => {
                    timed_out.store(true, std::sync::atomic::Ordering::SeqCst);
                    eprintln!(
                        "rehearse: the batch was not done within {} s (--timeout SECS gives it longer): stopping — the task in hand finishes, then the summary",
                        timeout.as_secs()
                    );
                }
            }
        }
    };
    let worker = Worker {
        serial: None,
        label: device_label.clone(),
        progress: progress_board,
        config,
        store,
        phone: Phone::Adb(source),
        gateway: gw.clone(),
        lock: None,
    };
    let console = ConsoleSpec {
        addr: opts.console,
        password: opts.console_password.clone(),
        registrar: console::registrar(gw.clone(), opts.live && sim.is_some()),
        adb_server: (opts.device.is_some() || matches!(sim_route, SimRoute::AdbServer(_)))
            .then_some(server),
        // On stderr: stdout is the progress and the summary (with --json, only the summary).
        announce: Announce::Stderr,
        // No webhooks: a rehearsal tells nobody.
        webhooks: Vec::new(),
    };
    let launched = rt.block_on(async {
        tokio::time::timeout(
            timeout + TIMEOUT_GRACE,
            launch::launch(vec![worker], Some(console), stop, false),
        )
        .await
    });
    let (exit, served) = match launched {
        Ok(mut l) => match l.ends.pop().map(|(_, e)| e) {
            Some(End::Exit(e)) => (Some(e), l.console.take()),
            Some(End::Error(e)) => bail!("the client stopped: {e}"),
            Some(End::Panic(e)) => bail!("the client panicked: {e}"),
            None => (None, l.console.take()),
        },
        // The task in hand did not finish in the grace either: summed up without it.
        Err(_) => (None, None),
    };
    let timed_out = timed_out.load(std::sync::atomic::Ordering::SeqCst);
    if let Some(RunExit::Blocked(reason)) = &exit {
        eprintln!("claiming stopped: {reason}");
    }

    // Read every task's outcome back from the Admin.
    let reports: Vec<TaskReport> = reports.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let mut lines = Vec::new();
    for (id, t) in &ids {
        let v = admin.task(&rt, id)?;
        let report = reports.iter().rev().find(|r| &r.task_id == id);
        lines.push(TaskLine::new(id, t, &v, report));
    }
    let replay_summary = match &replay_phone {
        Some(p) => {
            let log: Vec<serde_json::Value> =
                p.replay_log().iter().map(replay::entry_json).collect();
            let marks = marks.lock().unwrap_or_else(|p| p.into_inner()).clone();
            let (per_task, outside) = replay::attribute(&log, &marks);
            for l in &mut lines {
                let off = per_task.get(&l.id).cloned().unwrap_or_default();
                l.set_off_script(off);
            }
            let total = lines.iter().filter_map(|l| l.off_script).sum::<usize>() + outside.count;
            Some(summary::ReplaySummary {
                scenario: opts
                    .replay
                    .as_ref()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default(),
                actions: log.len(),
                off_script: total,
                off_script_outside_tasks: outside,
                log: opts.replay_log.as_ref().map(|p| p.display().to_string()),
            })
        }
        None => None,
    };
    let ok = !timed_out
        && lines
            .iter()
            .all(|l| l.as_expected && l.off_script.unwrap_or(0) == 0)
        && replay_summary.as_ref().is_none_or(|r| r.off_script == 0);
    let simulated_device_ms = sim.as_ref().map(|p| p.counters().device_time_ms);
    let simulated_dump_failures = sim.as_ref().map(|p| p.counters().dump_failures);
    let admin_url = admin.url.clone();
    let artifacts_shown = if opts.data_dir.is_some() {
        artifacts_dir.display().to_string()
    } else if ok {
        format!(
            "{} (removed with the temporary directory; --data-dir DIR keeps them)",
            artifacts_dir.display()
        )
    } else {
        // Keep the evidence of a rehearsal that went wrong (a timeout included).
        let kept = temp.keep();
        kept.join("artifacts").display().to_string()
    };
    let timed_out = timed_out.then(|| summary::TimedOut {
        after_secs: timeout.as_secs(),
        unfinished: lines
            .iter()
            .filter(|l| l.outcome == summary::NOT_FINISHED)
            .map(|l| l.id.clone())
            .collect(),
    });
    let summary = Summary {
        ok,
        profile: match opts.profile {
            LatencyProfile::Realistic => "realistic".into(),
            LatencyProfile::Zero => "zero".into(),
        },
        admin: admin_url,
        device: device_label,
        counts: summary::counts(&lines),
        benchmarks: summary::benchmarks(&lines, opts.profile == LatencyProfile::Realistic),
        tasks: lines,
        simulated_device_ms,
        simulated_dump_failures,
        artifacts_dir: artifacts_shown,
        replay: replay_summary,
        device_backend: u2_device
            .as_ref()
            .map_or("uiautomator", |d| d.backend_name())
            .to_string(),
        device_backend_fallback: u2_device.as_ref().and_then(|d| d.fallback_reason()),
        timed_out,
    };
    if let Some(d) = &u2_device {
        // The simulated phone outlives nothing: stop our server with the rehearsal.
        d.stop_server();
    }
    on_summary(&summary);
    match served {
        Some(c) if opts.keep_console => {
            rt.block_on(async {
                // Installed before the operator is told to press Ctrl-C.
                let signal = console::stop_signal();
                eprintln!(
                    "console: still serving http://{}/ (历史 History) until Ctrl-C",
                    c.addr
                );
                signal.await;
            });
            c.stop();
        }
        Some(c) => c.stop(),
        None if opts.keep_console => {
            eprintln!("--keep-console: no console is serving (off, or its address was taken)")
        }
        None => {}
    }
    admin.shut_down(&rt);
    drop(own_adb);
    drop(sim);
    Ok(summary)
}

/// With `--replay`: (task id, replay log length) at each report ([`replay::attribute`]).
type ReplayMarks = Arc<Mutex<Vec<(String, usize)>>>;

/// With `--replay`: fired once every task of the batch has been reported.
type AllReported = Arc<tokio::sync::Notify>;

/// The progress hook: a line per finished task (to stderr when the summary is JSON) —
/// its outcome in Chinese first, a failure's reason and next step, the device work with
/// `bench` — and every report kept for the summary.
fn progress(
    total: usize,
    json: bool,
    bench: bool,
    reports: Arc<Mutex<Vec<TaskReport>>>,
    replay: Option<(Arc<SimPhoneHandle>, ReplayMarks, AllReported)>,
) -> ReportHook {
    Arc::new(move |r: &TaskReport| {
        if let Some((phone, marks, all_reported)) = &replay {
            let n = phone.replay_log().len();
            let mut marks = marks.lock().unwrap_or_else(|p| p.into_inner());
            marks.push((r.task_id.clone(), n));
            let tasks: std::collections::BTreeSet<&str> =
                marks.iter().map(|(t, _)| t.as_str()).collect();
            if tasks.len() >= total {
                all_reported.notify_one();
            }
        }
        let mut all = reports.lock().unwrap_or_else(|p| p.into_inner());
        all.push(r.clone());
        let line = summary::progress_line(all.len(), total, r, bench);
        if json {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The realistic failure-path batch (47 tasks, about 18 minutes) is not cut off by the
    /// default deadline; the zero profile keeps 10 minutes.
    #[test]
    fn the_default_deadline_grows_with_a_realistic_batch() {
        assert_eq!(
            default_timeout(LatencyProfile::Zero, 47),
            Duration::from_secs(600)
        );
        assert_eq!(
            default_timeout(LatencyProfile::Realistic, 5),
            Duration::from_secs(600)
        );
        assert_eq!(
            default_timeout(LatencyProfile::Realistic, 47),
            Duration::from_secs(47 * 60)
        );
    }
}
