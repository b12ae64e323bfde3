//! `cmautobuy-client run`: claim and execute tasks and deliver their outcomes until
//! Ctrl-C / SIGTERM (or, with `--exit-when-idle`, until nothing is left to do). The
//! client is started through the library's one wiring, [`Client::start`]; this file only
//! resolves what it runs with: configuration, store, Admin and phone.
//!
//! One process per data directory and per phone ([`cmautobuy_client::lock`]): the
//! data-directory lock is taken before the store is opened, the phone's before the phone
//! is touched, and both are held until the process ends. A second `run` exits at once
//! with code 2 and one line naming what is locked and the holder's pid.

use std::path::PathBuf;
use std::sync::Arc;

use clap::Args;

use cmautobuy_client::app::{Client, ClientConfig, Phone};
use cmautobuy_client::clock::TokioClock;
use cmautobuy_client::config::{Config, PurchaseMode};
use cmautobuy_client::console::{self, ConsoleAddr, ConsoleState, ConsoleWorker};
use cmautobuy_client::device::adb::default_adb_server;
use cmautobuy_client::gateway::HttpAdminGateway;
use cmautobuy_client::job::adb::AdbSource;
use cmautobuy_client::lock::{self, LockError, ProcessLock};
use cmautobuy_client::progress::ProgressHandle;
use cmautobuy_client::registration;
use cmautobuy_client::runner::RunExit;
use cmautobuy_client::store::{Store, StoreError};
use cmautobuy_client::upkeep::UpkeepConfig;

use super::args::{Conn, Globals};
use super::exit::{Code, Failure};
use super::{device, progress, setup};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    conn: Conn,
    /// Exit 0 after a 204 once nothing is left to deliver in the outbox.
    #[arg(long)]
    exit_when_idle: bool,
    /// Seconds between claims when there is no work (±20 % jitter).
    #[arg(long, value_name = "SECS")]
    poll_interval: Option<f64>,
    /// Run tasks with the phone-less stub executor (tests and rehearsals).
    #[arg(long, hide = true)]
    stub_executor: bool,
    /// The operator vouches for this phone: declare `live` and run live purchase tasks
    /// live — real, unpaid orders — without waiting for a self-test. Without it,
    /// `purchase_mode = auto` declares live once the self-test on `self_test_goods_id`
    /// passed on the phone's current PDD version. Config key: `allow_live = true`.
    #[arg(long)]
    allow_live: bool,
    /// Never declare `live`: every purchase is a dry run (config `purchase_mode =
    /// "dry_run"`); wins over `--allow-live`.
    #[arg(long)]
    dry_run_only: bool,
    /// The directory of the per-phone lock files, shared by every client on this machine
    /// (config `lock_dir`, `CMAUTOBUY_LOCK_DIR`; default /tmp/cmautobuy-locks).
    #[arg(long, value_name = "DIR")]
    lock_dir: Option<PathBuf>,
    /// Where the rotated log files go (config `log_dir`, `CMAUTOBUY_LOG_DIR`; default
    /// `<data dir>/logs`, or the platform's log directory with the default data directory).
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// Serve the web console (状态 / 设置 / 历史), `/metrics` (Prometheus) and `/healthz`
    /// on this address (config `console_addr`; default 127.0.0.1, the first free port
    /// from 9464 to 9479; a taken port is logged and the client runs without a console).
    /// An address other than loopback needs a console password.
    #[arg(long, value_name = "IP:PORT", conflicts_with = "no_console")]
    console: Option<String>,
    /// The console's password (config `console_password`; prefer the environment
    /// variable `CMAUTOBUY_CONSOLE_PASSWORD`, which other users cannot read in `ps`).
    #[arg(long, value_name = "PASSWORD")]
    console_password: Option<String>,
    /// No console listener.
    #[arg(long)]
    no_console: bool,
}

pub fn run(g: &Globals, a: RunArgs) -> Result<(), Failure> {
    let mut cfg = setup::load_for_run(g.overrides(Some(&a.conn), a.poll_interval), a.log_dir)?;
    if let Some(d) = a.lock_dir {
        cfg.lock_dir = d;
    }
    if let Some(c) = &a.console {
        cfg.console = ConsoleAddr::parse(c)
            .map_err(|e| Failure::usage(anyhow::anyhow!("--console {e}")).in_command("run"))?;
    }
    if a.no_console {
        cfg.console = ConsoleAddr::Off;
    }
    if let Some(p) = a.console_password.filter(|p| !p.is_empty()) {
        cmautobuy_client::console::listen::check_password_length(&p).map_err(|e| {
            Failure::usage(anyhow::anyhow!("--console-password {e}")).in_command("run")
        })?;
        cfg.console_password = Some(cmautobuy_client::secret::Secret::new(p));
    }
    cfg.console
        .check_password(cfg.console_password.is_some())
        .map_err(|e| Failure::usage(anyhow::anyhow!("--console {e}")).in_command("run"))?;
    // Held until this function returns, i.e. for the life of the client.
    let _data_dir_lock = lock::lock_data_dir(&cfg.data_dir, HOLDER).map_err(refused)?;
    let dry_run_only = a.dry_run_only || cfg.purchase_mode == PurchaseMode::DryRun;
    let allow_live = (a.allow_live || cfg.allow_live) && !dry_run_only;
    // The flags as configuration too: what the console's registrar declares
    // (`setup::declared_profile`) must follow this process, never widen it.
    if dry_run_only {
        cfg.purchase_mode = PurchaseMode::DryRun;
    }
    cfg.allow_live = allow_live;
    let policy = cmautobuy_client::runner::LivePolicy {
        dry_run_only,
        vouched: allow_live,
        self_test_goods_id: cfg.self_test_goods_id.clone(),
        address_fingerprint: !cfg.expected_address.is_empty(),
    };
    if policy.may_go_live() && cfg.expected_address.is_empty() {
        tracing::warn!("{}", cmautobuy_client::runner::NO_ADDRESS_FINGERPRINT);
    }
    let workers = if cfg.devices.is_empty() || a.stub_executor {
        // The store first (right after the data directory's lock): a first run that
        // stops at its phone leaves a store, never a lock file without one.
        check_store(&cfg)?;
        let (phone, device_lock) = if a.stub_executor {
            (Phone::Stub, None)
        } else {
            phone(&cfg, &policy, None)?
        };
        let store = setup::open_and_save(&cfg)?;
        let gateway = Arc::new(setup::gateway(&cfg, &store)?);
        let progress = ProgressHandle::new();
        vec![Worker {
            serial: None,
            label: store
                .settings()
                .ok()
                .and_then(|s| s.device)
                .unwrap_or_else(|| "-".into()),
            config: client_config(&cfg, a.exit_when_idle, &policy, &progress),
            progress,
            store,
            phone,
            gateway,
            _lock: device_lock,
        }]
    } else {
        several(&cfg, a.exit_when_idle, &policy)?
    };
    if !cfg.notify.webhooks.is_empty() {
        let hooks: Vec<String> = cfg
            .notify
            .webhooks
            .iter()
            .map(|w| format!("{} ({})", w.label, w.id))
            .collect();
        tracing::info!(webhooks = %hooks.join(", "), "notifications go to these webhooks");
    }
    let rt = setup::runtime()?;
    let console = console::bind(cfg.console);
    let progress = progress::wanted(cfg.log_format);
    let ends = rt.block_on(async {
        let stores: Vec<Store> = workers.iter().map(|w| w.store.clone()).collect();
        if let Some(l) = console {
            match tokio::net::TcpListener::from_std(l) {
                Ok(l) => match l.local_addr() {
                    Ok(addr) => {
                        // On stdout, for the operator and for scripts.
                        println!("console: http://{addr}/ (状态 Status, 设置 Settings, 历史 History; GET /metrics, /healthz)");
                        // Every phone, one section each.
                        let shown = workers
                            .iter()
                            .map(|w| ConsoleWorker {
                                label: w.label.clone(),
                                store: w.store.clone(),
                                progress: w.progress.clone(),
                                artifacts_root: w.config.artifacts_root.clone(),
                            })
                            .collect();
                        // The settings page registers each phone from its own store
                        // (its identity, Admin and token); the rest of `cfg` is the
                        // same for every phone.
                        let mut state = ConsoleState::new(shown, addr)
                            .with_adb_server(default_adb_server(
                                std::env::var("ANDROID_ADB_SERVER_PORT").ok().as_deref(),
                            ))
                            .with_registrar(registrar(&cfg));
                        if let Some(p) = &cfg.console_password {
                            state = state.with_password(p);
                        }
                        tokio::spawn(console::serve(l, state, std::future::pending()));
                    }
                    Err(e) => tracing::warn!(error = %e, "console not started"),
                },
                Err(e) => tracing::warn!(error = %e, "console not started"),
            }
        }
        // One stop signal for every worker: the first Ctrl-C / SIGTERM drains them all.
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        tokio::spawn({
            let stores = stores.clone();
            async move {
                drain_on_signal(stores).await;
                let _ = stop_tx.send(true);
                // Kept open: a dropped sender would read as "stop" too, which it is.
                std::future::pending::<()>().await;
            }
        });
        if progress {
            let phones = workers
                .iter()
                .map(|w| (w.serial.clone(), w.store.clone(), w.progress.clone()))
                .collect();
            tokio::spawn(progress::lines(phones));
        }
        let mut waits = Vec::new();
        let mut ends = Vec::new();
        for w in workers {
            let mut rx = stop_rx.clone();
            let stop = async move {
                let _ = rx.wait_for(|stop| *stop).await;
            };
            let span = match &w.serial {
                Some(s) => tracing::info_span!("phone", serial = %s),
                None => tracing::Span::none(),
            };
            let started = {
                let _in = span.enter();
                Client::start(w.config, w.store, w.phone, w.gateway, stop)
            };
            match started {
                Ok(client) => waits.push((w.serial, w._lock, tokio::spawn(client.wait()))),
                Err(e) => {
                    tracing::error!(phone = ?w.serial, error = %e, "this phone's worker did not start");
                    ends.push((w.serial, End::Error(e.to_string())));
                }
            }
        }
        for (serial, lock, wait) in waits {
            let end = match wait.await {
                Ok(Ok(exit)) => End::Exit(exit),
                Ok(Err(e)) => End::Error(e.to_string()),
                Err(e) if e.is_panic() => End::Panic(panic_message(e.into_panic())),
                Err(_) => End::Exit(RunExit::Shutdown),
            };
            if let Some(s) = &serial {
                tracing::info!(phone = %s, outcome = %end.describe(), "phone worker stopped");
            }
            // The phone is free once its worker has stopped.
            drop(lock);
            ends.push((serial, end));
        }
        ends
    });
    if SECOND_SIGNAL.load(std::sync::atomic::Ordering::SeqCst) {
        // The drain ended before the safe-point loop took its exit: same code.
        return Err(Failure::silent(Code::Interrupted));
    }
    exit_of(ends)
}

/// One phone's worker, ready to start.
struct Worker {
    /// The phone's serial with several phones (log lines and progress name it); `None`
    /// for the one phone of a single-phone run.
    serial: Option<String>,
    /// How the console names the phone (its serial, or `-` without a phone).
    label: String,
    /// The phone's progress board (the console and the progress lines read it).
    progress: ProgressHandle,
    config: ClientConfig,
    store: Store,
    phone: Phone,
    gateway: Arc<HttpAdminGateway>,
    /// The phone's process lock, held until its worker stopped.
    _lock: Option<ProcessLock>,
}

/// How one worker ended.
#[derive(Clone, Debug, PartialEq)]
enum End {
    Exit(RunExit),
    /// The store failed (the worker could not start, or its claim loop stopped on it).
    Error(String),
    Panic(String),
}

impl End {
    fn describe(&self) -> String {
        match self {
            End::Exit(RunExit::Shutdown) => "stopped".into(),
            End::Exit(RunExit::Idle) => "idle".into(),
            End::Exit(RunExit::Blocked(r)) => format!("blocked: {r}"),
            End::Error(e) => format!("failed: {e}"),
            End::Panic(e) => format!("panicked: {e}"),
        }
    }

    /// Most severe first: a panic (1), a store failure (3), blocked (5), then idle or
    /// stopped (0).
    fn severity(&self) -> u8 {
        match self {
            End::Panic(_) => 3,
            End::Error(_) => 2,
            End::Exit(RunExit::Blocked(_)) => 1,
            End::Exit(_) => 0,
        }
    }
}

/// The exit of `run`: the most severe of its workers' ends — a panic 1, a store failure 3,
/// claiming blocked by an operator alert 5, idle or stopped 0 — naming the phone with
/// several phones.
fn exit_of(ends: Vec<(Option<String>, End)>) -> Result<(), Failure> {
    let Some((serial, worst)) = ends.into_iter().max_by_key(|(_, e)| e.severity()) else {
        return Ok(());
    };
    let on = serial.map(|s| format!("phone {s}: ")).unwrap_or_default();
    match worst {
        End::Exit(RunExit::Shutdown | RunExit::Idle) => Ok(()),
        End::Exit(RunExit::Blocked(reason)) => Err(Failure::new(
            Code::Blocked,
            anyhow::anyhow!("{on}claiming is stopped until the operator acts: {reason} (see `cmautobuy-client status`, then `cmautobuy-client ack`)"),
        )),
        End::Error(e) => Err(Failure::new(Code::Store, anyhow::anyhow!("{on}{e}"))),
        End::Panic(e) => Err(Failure::new(
            Code::Unexpected,
            anyhow::anyhow!("{on}the worker panicked: {e}"),
        )),
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Opens (creating on a fresh data directory) the phone's store and checks it whole
/// (`PRAGMA quick_check`, [`Store::quick_check`]) before anything is saved to it or
/// claimed: a damaged page is refused now — exit 3, pointing at `backups/` — as `status`
/// refuses it, not found after a task was claimed and left without its report.
fn check_store(cfg: &Config) -> Result<(), Failure> {
    let started = std::time::Instant::now();
    setup::open_store(cfg)?.quick_check()?;
    tracing::debug!(
        ms = started.elapsed().as_millis() as u64,
        "store integrity checked (quick_check)"
    );
    Ok(())
}

/// How a worker runs on the phone whose folder is `cfg.data_dir`.
fn client_config(
    cfg: &Config,
    exit_when_idle: bool,
    policy: &cmautobuy_client::runner::LivePolicy,
    progress: &ProgressHandle,
) -> ClientConfig {
    ClientConfig {
        poll_interval: cfg.poll_interval,
        exit_when_idle,
        allow_live: policy.vouched,
        dry_run_only: policy.dry_run_only,
        self_test_goods_id: cfg.self_test_goods_id.clone(),
        artifacts_root: cfg.data_dir.join("artifacts"),
        retention: cfg.retention,
        on_report: None,
        gate: cfg.gate,
        expected_address: cfg.expected_address.clone(),
        upkeep: Some(UpkeepConfig {
            data_dir: cfg.data_dir.clone(),
            artifacts_root: cfg.data_dir.join("artifacts"),
            retention: cfg.retention,
            outbox_compact_after: cfg.resources.outbox_compact_after,
            min_free_disk_bytes: cfg.resources.min_free_disk_bytes,
        }),
        notify: cfg.notify.clone(),
        pacing: cfg.pacing,
        backups_keep: cfg.backups_keep,
        max_clock_skew: cfg.max_clock_skew,
        progress: Some(progress.clone()),
    }
}

/// The workers of a run with several phones ([`cmautobuy_client::phones`]): each phone in
/// its folder (or the root store's), with its own store, identity, gateway, artifacts
/// and process lock; the name `NAME · SERIAL` when a name is configured. The ADB key is
/// the data directory's one.
fn several(
    cfg: &Config,
    exit_when_idle: bool,
    policy: &cmautobuy_client::runner::LivePolicy,
) -> Result<Vec<Worker>, Failure> {
    let adb_key = cfg.data_dir.join("adbkey");
    let mut workers = Vec::new();
    for (serial, pc) in setup::phone_configs(cfg).map_err(|f| f.in_command("run"))? {
        check_store(&pc)?;
        let (phone, device_lock) = phone(&pc, policy, Some(&adb_key))?;
        let store = setup::open_and_save(&pc)?;
        let gateway = Arc::new(setup::gateway(&pc, &store)?);
        tracing::info!(
            phone = %serial,
            client_id = %store.settings()?.client_id,
            folder = %pc.data_dir.display(),
            "phone worker"
        );
        let progress = ProgressHandle::new();
        workers.push(Worker {
            label: serial.clone(),
            serial: Some(serial),
            config: client_config(&pc, exit_when_idle, policy, &progress),
            progress,
            store,
            phone,
            gateway,
            _lock: device_lock,
        });
    }
    Ok(workers)
}

/// What the console's settings page calls after a save: §4.1 registration with the
/// Admin and token now saved, declaring what a claim would ([`setup::declared_profile`],
/// as `register` does); the outcome goes into the store.
fn registrar(cfg: &Config) -> console::state::Registrar {
    let cfg = cfg.clone();
    Arc::new(move |store: cmautobuy_client::store::Store| {
        let cfg = cfg.clone();
        Box::pin(async move {
            let failed = |e: String| {
                let st = cmautobuy_client::store::RegistrationStatus {
                    state: "failed".into(),
                    at: cmautobuy_contract::time::format_utc(chrono::Utc::now()),
                    error: Some(e),
                    rejected: true,
                };
                let _ = store.set_registration_status(&st);
                st
            };
            let gw = match setup::gateway(&cfg, &store) {
                Ok(g) => g,
                Err(e) => return failed(e.message()),
            };
            let profile = match setup::declared_profile(&cfg, &store) {
                Ok(p) => p,
                Err(e) => return failed(e.message()),
            };
            registration::register(&store, &gw, &TokioClock::new(), &profile).await
        })
    })
}

/// What this process writes into its lock files.
const HOLDER: &str = "cmautobuy-client run";

/// A lock held by another process: exit code 2, `cmautobuy-client run: the data
/// directory /x is in use by pid 1234 (cmautobuy-client run); lock file …`. A lock file
/// that cannot be created is a configuration error too (a data or lock directory this
/// user cannot write).
fn refused(e: LockError) -> Failure {
    Failure::usage(e).in_command("run")
}

/// The configured (or saved) phone, locked for this process: collect and purchase tasks
/// run on it through the flow executor; without one every task waits
/// (`retry_wait DEVICE_OFFLINE`).
fn phone(
    cfg: &Config,
    policy: &cmautobuy_client::runner::LivePolicy,
    adb_key: Option<&std::path::Path>,
) -> Result<(Phone, Option<ProcessLock>), Failure> {
    let saved = || {
        setup::open_store(cfg)
            .ok()
            .and_then(|s| s.settings().ok())
            .and_then(|s| s.device)
    };
    let Some(target) = device::resolve(cfg, None, saved, None, adb_key)? else {
        tracing::warn!("no device configured (--device SERIAL or tcp:HOST:PORT): tasks will wait");
        return Ok((Phone::None, None));
    };
    let serial = target.serial;
    // A required u2 backend that cannot work on this phone is a configuration error,
    // said now (exit 2) rather than as a device error of every task.
    cmautobuy_client::device::backend::check_required(
        &target.addr,
        cfg.device_backend,
        cfg.u2_jar.as_deref(),
    )
    .map_err(|e| {
        Failure::usage(anyhow::anyhow!("device {serial}: [{}] {e}", e.code())).in_command("run")
    })?;
    let holder = format!("{HOLDER}, data directory {}", cfg.data_dir.display());
    let device_lock =
        lock::lock_device(&cfg.lock_dir, &serial, &target.addr, &holder).map_err(refused)?;
    let source = AdbSource::open(target.addr, target.options)
        .map_err(|e| Failure::usage(anyhow::anyhow!("device {serial}: {e}")))?
        .with_thresholds(cfg.device_thresholds)
        .with_backend(cfg.device_backend, cfg.u2_jar.as_deref());
    if policy.dry_run_only {
        tracing::info!("purchases run as dry runs (purchase_mode = dry_run / --dry-run-only)");
    } else if policy.vouched {
        tracing::warn!(
            device = %serial,
            "live purchases enabled (--allow-live / allow_live): live tasks place real orders on this phone (never paid)"
        );
    } else if let Some(g) = &policy.self_test_goods_id {
        tracing::info!(device = %serial, self_test_goods_id = %g, "purchase_mode = auto: live is declared once the self-test passes on this phone's PDD version");
    } else {
        tracing::info!(
            "purchases run as dry runs: {}",
            cmautobuy_client::selftest::NEEDS_GOODS
        );
    }
    Ok((Phone::Adb(source), Some(device_lock)))
}

/// The exit code after a second Ctrl-C / SIGTERM (128 + SIGINT, the shell's convention
/// for "interrupted"): [`Code::Interrupted`].
const EXIT_INTERRUPTED: i32 = Code::Interrupted as i32;

/// A second stop signal arrived.
static SECOND_SIGNAL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The stop signal of `run`: completes at the first Ctrl-C / SIGTERM — the client then
/// drains (the task in hand finishes, the outbox is delivered for up to
/// [`cmautobuy_client::app::DRAIN_OUTBOX`]) and `run` exits 0. A second signal exits at
/// once with [`EXIT_INTERRUPTED`] — but only at a safe point for money: never while a
/// purchase is between its irreversible mark and its recorded outcome
/// ([`cmautobuy_client::store::Store::at_safe_point`]). A collect or a purchase before its
/// mark is abandoned as in a crash: the next start runs the collect again and reports the
/// purchase attempt `retry_wait INTERRUPTED_BEFORE_SUBMIT` — or `manual_review
/// ORDER_PLACED_UNCONFIRMED` when a spec sheet's 确定 was noted for its tap (it may have
/// led to a cashier).
///
/// With several phones the safe point is every store's at once
/// ([`all_at_safe_point`]).
async fn drain_on_signal(stores: Vec<Store>) {
    let mut signals = Signals::new();
    signals.next().await;
    tracing::warn!(
        "stop signal: draining — the current task finishes, the outbox is delivered for up to {} s, then exit 0; a second signal exits at the next safe point for money (exit {EXIT_INTERRUPTED})",
        cmautobuy_client::app::DRAIN_OUTBOX.as_secs()
    );
    tokio::spawn(async move {
        signals.next().await;
        SECOND_SIGNAL.store(true, std::sync::atomic::Ordering::SeqCst);
        tracing::warn!("second stop signal: exiting at the next safe point for money");
        loop {
            match all_at_safe_point(&stores, || std::process::exit(EXIT_INTERRUPTED)) {
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the store for a safe point; waiting for the drain")
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
}

/// Runs `f` while every store is at a safe point for money
/// ([`Store::at_safe_point`]), holding each store's connection lock (taken in the order
/// given, the only place that holds more than one) so that no purchase can mark in
/// between; `Ok(None)` when one of them is not.
fn all_at_safe_point<R>(stores: &[Store], f: impl FnOnce() -> R) -> Result<Option<R>, StoreError> {
    match stores.split_first() {
        None => Ok(Some(f())),
        Some((first, rest)) => first
            .at_safe_point(|| all_at_safe_point(rest, f))
            .and_then(|r| r.transpose())
            .map(Option::flatten),
    }
}

/// Ctrl-C, or SIGTERM on Unix; the handlers stay installed from the first wait on, so a
/// second signal is never lost between two waits.
struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Signals {
                term: signal(SignalKind::terminate()).ok(),
                int: signal(SignalKind::interrupt()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        if let (Some(term), Some(int)) = (&mut self.term, &mut self.int) {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
