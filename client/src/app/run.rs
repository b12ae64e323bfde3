//! `run`'s launch: claim and execute tasks and deliver their outcomes until Ctrl-C /
//! SIGTERM (or, with `exit_when_idle`, until nothing is left to do), for one phone, none,
//! or several ([`crate::phones`]). This resolves what the clients run with — the locks,
//! the stores, the Admin, the phones — and hands the workers to the one launch
//! ([`super::launch`]).
//!
//! One process per data directory and per phone ([`crate::lock`]): the data-directory
//! lock is taken before the store is opened, the phone's before the phone is touched, and
//! both are held until the workers end. A second `run` is refused at once
//! ([`LaunchError::Lock`]) naming what is locked and the holder's pid.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::device;
use super::error::LaunchError;
use super::launch::{self, Announce, ConsoleSpec, End, Signals, Worker};
use super::setup;
use super::{ClientConfig, Phone};
use crate::clock::TokioClock;
use crate::config::{Config, PurchaseMode};
use crate::console;
use crate::device::adb::default_adb_server;
use crate::disk_budget::DiskBudgetConfig;
use crate::job::adb_source::AdbSource;
use crate::lock::{self, ProcessLock};
use crate::progress::ProgressHandle;
use crate::registration;
use crate::runner::LivePolicy;
use crate::store::Store;

/// How `run` runs, besides its configuration.
pub struct RunOptions {
    /// Return after a 204 once nothing is left to deliver in the outbox.
    pub exit_when_idle: bool,
    /// Run tasks with the phone-less stub executor (tests and rehearsals).
    pub stub_executor: bool,
    /// Show `run`'s progress lines on stderr ([`super::lines::wanted`]).
    pub progress_lines: bool,
    /// Called at a safe point for money after a second stop signal, holding every
    /// store's lock; it ends the process (the binary exits with its code there).
    pub on_second_signal: fn(),
}

/// How `run` ended.
pub struct RunReport {
    /// Each worker's end, by its serial (`None`: the one phone).
    pub ends: Vec<(Option<String>, End)>,
    /// A second stop signal arrived (the drain ended before its safe point was taken).
    pub interrupted: bool,
}

/// What this process writes into its lock files.
const HOLDER: &str = "cmautobuy-client run";

/// Runs the clients of `cfg` until they end.
pub fn run(mut cfg: Config, opts: RunOptions) -> Result<RunReport, LaunchError> {
    // Held until this function returns, i.e. for the life of the clients.
    let _data_dir_lock = lock::lock_data_dir(&cfg.data_dir, HOLDER)?;
    let policy = setup::live_policy(&cfg);
    // What the console's registrar declares (`setup::declared_profile`) follows this
    // process, never wider.
    if policy.dry_run_only {
        cfg.purchase_mode = PurchaseMode::DryRun;
    }
    cfg.allow_live = policy.vouched;
    if policy.may_go_live() && cfg.expected_address.is_empty() {
        tracing::warn!("{}", crate::runner::NO_ADDRESS_FINGERPRINT);
    }
    let workers = if cfg.devices.is_empty() || opts.stub_executor {
        // The store first (right after the data directory's lock): a first run that
        // stops at its phone leaves a store, never a lock file without one.
        check_store(&cfg)?;
        let (phone, device_lock) = if opts.stub_executor {
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
            config: client_config(&cfg, opts.exit_when_idle, &policy, &progress),
            progress,
            store,
            phone,
            gateway,
            lock: device_lock,
        }]
    } else {
        several(&cfg, opts.exit_when_idle, &policy)?
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
    let stores: Vec<Store> = workers.iter().map(|w| w.store.clone()).collect();
    let console = ConsoleSpec {
        addr: cfg.console,
        password: cfg.console_password.clone(),
        // The settings page registers each phone from its own store (its identity,
        // Admin and token); the rest of `cfg` is the same for every phone.
        registrar: registrar(&cfg),
        adb_server: Some(default_adb_server(
            std::env::var("ANDROID_ADB_SERVER_PORT").ok().as_deref(),
        )),
        announce: Announce::Stdout,
        webhooks: cfg
            .notify
            .webhooks
            .iter()
            .map(|h| console::WebhookName {
                id: h.id.clone(),
                format: h.format.as_str(),
                label: h.label.clone(),
            })
            .collect(),
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    let launched = rt.block_on(async {
        let stop = drain_on_signal(stores, interrupted.clone(), opts.on_second_signal);
        launch::launch(workers, Some(console), stop, opts.progress_lines).await
    });
    Ok(RunReport {
        ends: launched.ends,
        interrupted: interrupted.load(Ordering::SeqCst),
    })
}

/// Opens (creating on a fresh data directory) the phone's store and checks it whole
/// (`PRAGMA quick_check`, [`Store::quick_check`]) before anything is saved to it or
/// claimed: a damaged page is refused now — pointing at `backups/` — as `status`
/// refuses it, not found after a task was claimed and left without its report.
fn check_store(cfg: &Config) -> Result<(), LaunchError> {
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
    policy: &LivePolicy,
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
        disk_budget: Some(DiskBudgetConfig {
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

/// The workers of a run with several phones ([`crate::phones`]): each phone in its
/// folder (or the root store's), with its own store, identity, gateway, artifacts and
/// process lock; the name `NAME · SERIAL` when a name is configured. The ADB key is the
/// data directory's one.
fn several(
    cfg: &Config,
    exit_when_idle: bool,
    policy: &LivePolicy,
) -> Result<Vec<Worker>, LaunchError> {
    let adb_key = cfg.data_dir.join("adbkey");
    let mut workers = Vec::new();
    for (serial, pc) in setup::phone_configs(cfg)? {
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
            lock: device_lock,
        });
    }
    Ok(workers)
}

/// What the console's settings page calls after a save: §4.1 registration with the
/// Admin and token now saved, declaring what a claim would ([`setup::declared_profile`],
/// as `register` does); the outcome goes into the store.
fn registrar(cfg: &Config) -> console::state::Registrar {
    let cfg = cfg.clone();
    Arc::new(move |store: Store| {
        let cfg = cfg.clone();
        Box::pin(async move {
            let failed = |e: String| {
                let st = crate::store::RegistrationStatus {
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
                Err(e) => return failed(e.to_string()),
            };
            let profile = match setup::declared_profile(&cfg, &store) {
                Ok(p) => p,
                Err(e) => return failed(e.to_string()),
            };
            registration::register(&store, &gw, &TokioClock::new(), &profile).await
        })
    })
}

/// The configured (or saved) phone, locked for this process: collect and purchase tasks
/// run on it through the flow executor; without one every task waits
/// (`retry_wait DEVICE_OFFLINE`).
fn phone(
    cfg: &Config,
    policy: &LivePolicy,
    adb_key: Option<&Path>,
) -> Result<(Phone, Option<ProcessLock>), LaunchError> {
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
    // said now rather than as a device error of every task.
    crate::device::backend::check_required(&target.addr, cfg.device_backend, cfg.u2_jar.as_deref())
        .map_err(|e| LaunchError::usage(format!("device {serial}: [{}] {e}", e.code())))?;
    let holder = format!("{HOLDER}, data directory {}", cfg.data_dir.display());
    let device_lock = lock::lock_device(&cfg.lock_dir, &serial, &target.addr, &holder)?;
    let source = AdbSource::open(target.addr, target.options)
        .map_err(|e| LaunchError::usage(format!("device {serial}: {e}")))?
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
            crate::self_test::NEEDS_GOODS
        );
    }
    Ok((Phone::Adb(source), Some(device_lock)))
}

/// The stop signal of `run`: completes at the first Ctrl-C / SIGTERM — the clients then
/// drain (the task in hand finishes, the outbox is delivered for up to
/// [`super::DRAIN_OUTBOX`]). A second signal ends the process through `on_second` — but
/// only at a safe point for money: never while a purchase is between its irreversible
/// mark and its recorded outcome ([`Store::at_safe_point`]; with several phones every
/// store's at once, [`launch::all_at_safe_point`]). A collect or a purchase before its
/// mark is abandoned as in a crash: the next start runs the collect again and reports
/// the purchase attempt `retry_wait INTERRUPTED_BEFORE_SUBMIT` — or `manual_review
/// ORDER_PLACED_UNCONFIRMED` when a spec sheet's 确定 was noted for its tap (it may have
/// led to a cashier).
async fn drain_on_signal(stores: Vec<Store>, interrupted: Arc<AtomicBool>, on_second: fn()) {
    let mut signals = Signals::new();
    signals.next().await;
    tracing::warn!(
        "stop signal: draining — the current task finishes, the outbox is delivered for up to {} s, then exit 0; a second signal exits at the next safe point for money",
        super::DRAIN_OUTBOX.as_secs()
    );
    tokio::spawn(async move {
        signals.next().await;
        interrupted.store(true, Ordering::SeqCst);
        tracing::warn!("second stop signal: exiting at the next safe point for money");
        loop {
            if let Err(e) = launch::all_at_safe_point(&stores, on_second) {
                tracing::warn!(error = %e, "cannot read the store for a safe point; waiting for the drain");
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
    });
}
