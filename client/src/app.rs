//! The one wiring of a running client: [`Client::start`] puts registration, the outbox
//! relay, the claim loop ([`Runner`]) and the executor together and stops them in order.
//!
//! `cmautobuy-client run` and `cmautobuy-client rehearse` both start the client through
//! here — through the one launch of [`launch`] (console, stop signal, workers) —; what
//! differs between them is data ([`ClientConfig`], the [`Phone`], the gateway, the stop
//! signal), never a second copy of this code — a rehearsal must run exactly what
//! production runs.
//!
//! The binary only turns what the user typed into a configuration and errors into exit
//! codes; what a command does with the configuration lives here:
//!
//! - [`setup`] — the configuration with logging, the stores of a data directory, the
//!   local save, the gateway, the profile a claim would declare, the runtime;
//! - [`device`] — the one device resolution (`--device`, the configured, the saved);
//! - [`launch`] — the one launch of running clients, shared by `run` and `rehearse`;
//! - [`run`] — `run`'s locks, phones and workers, handed to [`launch`];
//! - [`lines`] — `run`'s progress lines;
//! - [`error`] — [`error::LaunchError`], by what the operator does about it.

pub mod device;
pub mod error;
pub mod launch;
pub mod lines;
pub mod run;
pub mod setup;

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::artifacts::Retention;
use crate::clock::TokioClock;
use crate::disk_budget::{DiskBudget, DiskBudgetConfig};
use crate::executor::{Executor, NoDeviceExecutor, StubExecutor};
use crate::gate::GateConfig;
use crate::gateway::AdminGateway;
use crate::job::adb_source::AdbSource;
use crate::job::attempt::{FlowExecutorConfig, ReportHook};
use crate::job::exec::FlowExecutor;
use crate::job::purchase::Backend;
use crate::job::turn::TurnSource;
use crate::notify::{Notifier, NotifyConfig};
use crate::outbox::Relay;
use crate::pacing::PacingConfig;
use crate::registration;
use crate::runner::{RunConfig, RunError, RunExit, Runner};
use crate::store::{Store, StoreError};

/// What the client executes tasks on.
pub enum Phone {
    /// No phone: the client claims, and every task waits (`retry_wait DEVICE_OFFLINE`).
    None,
    /// The phone-less stub executor (`run --stub-executor`, tests).
    Stub,
    /// A phone (or the simulated one) over ADB: the flow executor, collect and purchase.
    Adb(AdbSource),
}

/// How the client runs, apart from its store, phone, Admin and stop signal.
#[derive(Clone)]
pub struct ClientConfig {
    /// Between claims when there is no work (±20 % jitter).
    pub poll_interval: Duration,
    /// Return [`RunExit::Idle`] after a 204 once the outbox is empty (and
    /// [`RunExit::Blocked`] when claiming is stopped by an operator alert).
    pub exit_when_idle: bool,
    /// The operator vouches (`--allow-live` / `allow_live = true`): live purchase tasks
    /// run live (real, unpaid orders) without waiting for a self-test.
    pub allow_live: bool,
    /// `purchase_mode = dry_run` / `run --dry-run-only`: never live (wins over
    /// `allow_live`).
    pub dry_run_only: bool,
    /// `self_test_goods_id`: with `purchase_mode = auto`, live is declared once the
    /// self-test on these goods passed on the phone's current PDD version
    /// ([`crate::self_test`]).
    pub self_test_goods_id: Option<String>,
    /// Where the flow executor writes each attempt's evidence.
    pub artifacts_root: PathBuf,
    pub retention: Retention,
    /// Called with every task the flow executor finished (progress lines, summaries).
    pub on_report: Option<ReportHook>,
    /// When the worker may claim: device checks, pauses, spacing after `retry_wait`s.
    pub gate: GateConfig,
    /// The phone's delivery-address fingerprint (`expected_address`; empty: none).
    pub expected_address: Vec<String>,
    /// Bounded resources: the artifact sweep and outbox compaction at
    /// start and after each task, the free-disk floor before each claim. `None`: none.
    pub disk_budget: Option<DiskBudgetConfig>,
    /// Webhooks and when to notify; the notifier runs beside the claim
    /// loop and flushes what is due when the client stops.
    pub notify: NotifyConfig,
    /// The gap between tasks and the live order caps ([`crate::pacing`]).
    pub pacing: PacingConfig,
    /// Daily store backups kept (0 = none; [`crate::store::backup`]).
    pub backups_keep: usize,
    /// Live refused above this host ↔ Admin / phone clock skew ([`crate::clock_check`]).
    pub max_clock_skew: Duration,
    /// The worker's progress board (the task in hand and its step; read by the console).
    pub progress: Option<crate::progress::ProgressHandle>,
}

impl ClientConfig {
    /// How live is decided ([`crate::runner::LivePolicy`]).
    pub fn live_policy(&self) -> crate::runner::LivePolicy {
        crate::runner::LivePolicy {
            dry_run_only: self.dry_run_only,
            vouched: self.allow_live,
            self_test_goods_id: self.self_test_goods_id.clone(),
            address_fingerprint: !self.expected_address.is_empty(),
        }
    }
}

/// How long a stopping client keeps delivering its outbox after the claim loop ended (the
/// drain on Ctrl-C / SIGTERM): enough for a handful of results over a slow link, short
/// enough for a service manager's stop timeout (systemd's default is 90 s).
pub const DRAIN_OUTBOX: Duration = Duration::from_secs(10);

/// A running client: [`Client::wait`] for it to end, [`Client::stop`] to end it.
pub struct Client {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<RunExit, RunError>>,
}

impl Client {
    /// Starts the client on the current tokio runtime: registration in the background
    /// (its failure never stops the client, §4.1), the outbox relay, and the claim loop
    /// handing tasks to the executor `phone` calls for. When `stop` completes (e.g. on
    /// Ctrl-C), claiming stops: the task in hand finishes (the claim loop returns only
    /// between tasks), then the relay delivers what is undelivered for up to
    /// [`DRAIN_OUTBOX`].
    pub fn start<G: AdminGateway>(
        config: ClientConfig,
        store: Store,
        phone: Phone,
        gateway: Arc<G>,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Client, StoreError> {
        // The gap between tasks paces a phone's PDD pages; without a phone there is
        // nothing to pace.
        let unpaced = ClientConfig {
            pacing: PacingConfig {
                min_task_gap: Duration::ZERO,
                ..config.pacing
            },
            ..config.clone()
        };
        match phone {
            Phone::None => Self::start_with(NoDeviceExecutor, unpaced, store, gateway, stop),
            Phone::Stub => Self::start_with(StubExecutor, unpaced, store, gateway, stop),
            Phone::Adb(source) => {
                // Purchases: the flow's effects need the store and the Admin.
                // Whether live is possible is asked at every claim: the configuration
                // with what the operator set on the console since (no restart).
                let policy = config.live_policy();
                let switch_store = store.clone();
                let backend = Backend::new(
                    store.clone(),
                    gateway.clone(),
                    TokioClock::new(),
                    tokio::runtime::Handle::current(),
                    policy.may_go_live(),
                )
                .with_live_switch(Arc::new(move || {
                    policy.in_force(&switch_store).may_go_live()
                }));
                let mut exec_cfg = FlowExecutorConfig::new(config.artifacts_root.clone());
                exec_cfg.retention = config.retention;
                exec_cfg.expected_address = config.expected_address.clone();
                exec_cfg.pdd_version_gate = config.gate.pdd_version_gate;
                exec_cfg.progress = config.progress.clone();
                // The evidence of each money step (the console's viewer shows it; the
                // console itself never screenshots the phone during those steps).
                exec_cfg.drive.money_screenshots = true;
                // Every device call of this worker under the phone's turn, which the
                // console's live screenshot takes too (`job::turn`).
                let turn = config
                    .progress
                    .as_ref()
                    .map(|p| p.turn())
                    .unwrap_or_default();
                let mut exec = FlowExecutor::new(TurnSource::new(source, turn), exec_cfg)
                    .with_purchase(Arc::new(backend));
                if let Some(hook) = &config.on_report {
                    exec = exec.with_hook(hook.clone());
                }
                Self::start_with(exec, config, store, gateway, stop)
            }
        }
    }

    fn start_with<G: AdminGateway, E: Executor>(
        executor: E,
        config: ClientConfig,
        store: Store,
        gateway: Arc<G>,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Client, StoreError> {
        use tracing::Instrument;
        // The caller's span (with several phones: the phone's) on every task of this
        // client, so that each log line names its phone.
        let span = tracing::Span::current();
        let executor = Arc::new(executor);
        let clock = TokioClock::new();
        let settings = store.settings()?;
        tracing::info!(client_id = %settings.client_id, admin = ?settings.admin_url, device = ?settings.device, "starting");
        let reg_parts = (store.clone(), gateway.clone(), clock.clone());
        let relay = Arc::new(Relay::new(
            store.clone(),
            gateway.clone(),
            clock.clone(),
            Default::default(),
        ));
        let notifier = match Notifier::new(store.clone(), clock.clone(), config.notify.clone()) {
            Ok(n) => Some(n),
            Err(e) => {
                tracing::error!(error = %e, "notifications disabled");
                None
            }
        };
        let disk_budget = config
            .disk_budget
            .clone()
            .map(|u| Arc::new(DiskBudget::new(store.clone(), u)));
        let mut runner = Runner::new(
            store,
            gateway,
            executor,
            clock,
            RunConfig {
                poll_interval: config.poll_interval,
                exit_when_idle: config.exit_when_idle,
                policy: Default::default(),
                gate: config.gate,
                pacing: config.pacing,
                backups_keep: config.backups_keep,
                max_clock_skew: config.max_clock_skew,
                live: config.live_policy(),
            },
            relay.waker(),
        );
        if let Some(u) = disk_budget {
            runner = runner.with_disk_budget(u);
        }
        // §4.1 registration declares what a claim would declare now (§5: narrowed to
        // dry_run by the live gates — clock skew, live caps, an unproven PDD version, a
        // changed account), so it never widens what the Admin last stored.
        let profile = runner.profile()?;
        let (reg_store, reg_gateway, reg_clock) = reg_parts;
        let reg = registration::spawn(reg_store, reg_gateway, reg_clock, profile);
        let (stop_tx, stop_rx) = watch::channel(false);
        // The relay stops after the claim loop, then drains (see `DRAIN_OUTBOX`).
        let (relay_stop, relay_rx) = watch::channel(false);
        let relay_task = {
            let relay = relay.clone();
            tokio::spawn(async move { relay.run(relay_rx).await }.instrument(span.clone()))
        };
        let notify_task = notifier.map(|n| {
            let rx = stop_rx.clone();
            tokio::spawn(async move { n.run(rx).await }.instrument(span.clone()))
        });
        let on_stop = tokio::spawn({
            let stop_tx = stop_tx.clone();
            async move {
                stop.await;
                tracing::info!("stopping");
                let _ = stop_tx.send(true);
            }
            .instrument(span.clone())
        });
        let task = tokio::spawn({
            let stop_tx = stop_tx.clone();
            async move {
                // The claim loop returns between tasks: the task in hand has finished and
                // its outcome is in the outbox.
                let exit = runner.run(stop_rx).await;
                let _ = stop_tx.send(true);
                on_stop.abort();
                let _ = relay_stop.send(true);
                match relay_task.await {
                    Ok(Err(e)) => tracing::error!(error = %e, "outbox relay stopped"),
                    Err(e) => tracing::error!(error = %e, "outbox relay panicked"),
                    Ok(Ok(())) => {}
                }
                // Deliver what is still undelivered, for a bounded time; what is left
                // stays in the outbox for the next start.
                match tokio::time::timeout(DRAIN_OUTBOX, relay.drain()).await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => tracing::warn!(error = %e, "outbox drain stopped"),
                    Err(_) => tracing::warn!(
                        secs = DRAIN_OUTBOX.as_secs(),
                        "outbox not drained in time; the rest is delivered at the next start"
                    ),
                }
                // The notifier flushes what is due (bounded by its flush deadline): an
                // alert raised just before an idle exit still reaches its webhooks.
                if let Some(t) = notify_task {
                    if let Err(e) = t.await {
                        tracing::error!(error = %e, "notifier panicked");
                    }
                }
                // Give a still-running registration a moment to record its outcome.
                let _ = tokio::time::timeout(Duration::from_secs(2), reg).await;
                exit
            }
            .instrument(span)
        });
        Ok(Client {
            stop: stop_tx,
            task,
        })
    }

    /// Asks the client to stop claiming (as the `stop` signal does).
    pub fn stop(&self) {
        let _ = self.stop.send(true);
    }

    /// Waits until the client has stopped: why the claim loop returned, after the relay
    /// stopped and registration had its moment. A panic inside is resumed here.
    pub async fn wait(self) -> Result<RunExit, RunError> {
        match self.task.await {
            Ok(exit) => exit,
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            // Cancelled: the runtime is shutting down.
            Err(_) => Ok(RunExit::Shutdown),
        }
    }
}

#[cfg(test)]
mod tests {
    //! The wiring end to end against the bundled mock Admin, in-process: a claimed task's
    //! outcome reaches the Admin before the client reports itself idle; the stop signal
    //! ends a client that would otherwise claim forever.

    use super::*;
    use crate::gateway::{GatewaySettings, MockAdminGateway};
    use crate::secret::Secret;
    use crate::store::SettingsPatch;
    use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig};
    use serde_json::{json, Value};

    fn setup(dir: &std::path::Path) -> (MockAdmin, Store, Arc<MockAdminGateway>, ClientConfig) {
        let mock = MockAdmin::open(MockAdminConfig::in_memory()).unwrap();
        let store = Store::open(&Store::path_in(dir)).unwrap();
        registration::save_locally(
            &store,
            &SettingsPatch {
                name: Some("app-test".into()),
                admin_url: Some("http://in-process".into()),
                token: Some(Secret::new("t".to_string())),
                device: None,
            },
        )
        .unwrap();
        let s = store.settings().unwrap();
        let gw = Arc::new(MockAdminGateway::new(
            mock.router(),
            GatewaySettings::new(s.client_id.clone(), s.token.clone()),
        ));
        let config = ClientConfig {
            poll_interval: Duration::from_millis(50),
            exit_when_idle: true,
            allow_live: false,
            dry_run_only: false,
            self_test_goods_id: None,
            artifacts_root: dir.join("artifacts"),
            retention: Retention::default(),
            on_report: None,
            gate: GateConfig::default(),
            expected_address: Vec::new(),
            disk_budget: None,
            notify: NotifyConfig::default(),
            pacing: PacingConfig::unpaced(),
            backups_keep: 0,
            max_clock_skew: crate::clock_check::DEFAULT_MAX_SKEW,
            progress: None,
        };
        (mock, store, gw, config)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_claimed_task_is_delivered_before_the_client_is_idle() {
        let dir = tempfile::tempdir().unwrap();
        let (mock, store, gw, config) = setup(dir.path());
        let op = mock.operator();
        let created = op
            .create_task(
                json!({"type": "collect", "payload": {"goods_id": "602938475610",
                "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=602938475610"}}),
            )
            .await
            .unwrap();
        let id = created.pointer("/task/id").and_then(Value::as_str).unwrap();
        let client = Client::start(config, store, Phone::Stub, gw, std::future::pending()).unwrap();
        let exit = tokio::time::timeout(Duration::from_secs(30), client.wait())
            .await
            .expect("idle within 30 s")
            .unwrap();
        assert_eq!(exit, RunExit::Idle);
        let task = op.get_task(id).await.unwrap();
        let results = task.get("results").and_then(Value::as_array).unwrap();
        assert_eq!(results.len(), 1, "{task}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_stop_signal_ends_the_client() {
        let dir = tempfile::tempdir().unwrap();
        let (_mock, store, gw, mut config) = setup(dir.path());
        config.exit_when_idle = false;
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let stop = async move {
            let _ = rx.await;
        };
        let client = Client::start(config, store, Phone::None, gw, stop).unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        tx.send(()).unwrap();
        let exit = tokio::time::timeout(Duration::from_secs(10), client.wait())
            .await
            .expect("stopped within 10 s")
            .unwrap();
        assert_eq!(exit, RunExit::Shutdown);
    }
}
