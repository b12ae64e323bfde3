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
use cmautobuy_client::job::adb::AdbSource;
use cmautobuy_client::lock::{self, LockError, ProcessLock};
use cmautobuy_client::progress::ProgressHandle;
use cmautobuy_client::registration;
use cmautobuy_client::runner::RunExit;
use cmautobuy_client::upkeep::UpkeepConfig;

use super::args::{Conn, Globals};
use super::exit::{Code, Failure};
use super::{device, setup};

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
    };
    let (phone, _device_lock) = if a.stub_executor {
        (Phone::Stub, None)
    } else {
        phone(&cfg, &policy)?
    };
    if policy.may_go_live() && cfg.expected_address.is_empty() {
        tracing::warn!("live purchases without an address fingerprint (`expected_address`): orders go to whatever address PDD preselects; set it to the warehouse's street and receiver");
    }
    let store = setup::open_and_save(&cfg)?;
    let gw = Arc::new(setup::gateway(&cfg, &store)?);
    let rt = setup::runtime()?;
    let progress = ProgressHandle::new();
    let device_label = store
        .settings()
        .ok()
        .and_then(|s| s.device)
        .unwrap_or_else(|| "-".into());
    let config = ClientConfig {
        poll_interval: cfg.poll_interval,
        exit_when_idle: a.exit_when_idle,
        allow_live,
        dry_run_only,
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
    let console = console::bind(cfg.console);
    let exit = rt
        .block_on(async {
            if let Some(l) = console {
                match tokio::net::TcpListener::from_std(l) {
                    Ok(l) => {
                        match l.local_addr() {
                            Ok(addr) => {
                                // On stdout, for the operator and for scripts.
                                println!("console: http://{addr}/ (状态 Status, 设置 Settings, 历史 History; GET /metrics, /healthz)");
                                let mut state = ConsoleState::new(
                                    vec![ConsoleWorker {
                                        label: device_label.clone(),
                                        store: store.clone(),
                                        progress: progress.clone(),
                                        artifacts_root: cfg.data_dir.join("artifacts"),
                                    }],
                                    addr,
                                )
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
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "console not started"),
                }
            }
            let stop = drain_on_signal(store.clone());
            let client = Client::start(config, store, phone, gw, stop)?;
            client.wait().await
        })
        .map_err(|e| Failure::new(Code::Store, e))?;
    if SECOND_SIGNAL.load(std::sync::atomic::Ordering::SeqCst) {
        // The drain ended before the safe-point loop took its exit: same code.
        return Err(Failure::silent(Code::Interrupted));
    }
    match exit {
        RunExit::Shutdown | RunExit::Idle => Ok(()),
        RunExit::Blocked(reason) => Err(Failure::new(
            Code::Blocked,
            anyhow::anyhow!("claiming is stopped until the operator acts: {reason} (see `cmautobuy-client status`, then `cmautobuy-client ack`)"),
        )),
    }
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
) -> Result<(Phone, Option<ProcessLock>), Failure> {
    let saved = setup::open_store(cfg)?.settings()?.device;
    let Some(target) = device::resolve(cfg, None, || saved, None, None)? else {
        tracing::warn!("no device configured (--device SERIAL or tcp:HOST:PORT): tasks will wait");
        return Ok((Phone::None, None));
    };
    let serial = target.serial;
    let holder = format!("{HOLDER}, data directory {}", cfg.data_dir.display());
    let device_lock =
        lock::lock_device(&cfg.lock_dir, &serial, &target.addr, &holder).map_err(refused)?;
    let source = AdbSource::open(target.addr, target.options)
        .map_err(|e| Failure::usage(anyhow::anyhow!("device {serial}: {e}")))?
        .with_thresholds(cfg.device_thresholds);
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
/// purchase attempt `retry_wait INTERRUPTED_BEFORE_SUBMIT`.
async fn drain_on_signal(store: cmautobuy_client::store::Store) {
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
            match store.at_safe_point(|| std::process::exit(EXIT_INTERRUPTED)) {
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "cannot read the store for a safe point; waiting for the drain")
                }
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
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
