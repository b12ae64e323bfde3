//! The one wiring of a running client: [`Client::start`] puts registration, the outbox
//! relay, the claim loop ([`Runner`]) and the executor together and stops them in order.
//!
//! `cmautobuy-client run` and `cmautobuy-client rehearse` both start the client through
//! here; what differs between them is data ([`ClientConfig`], the [`Phone`], the gateway,
//! the stop signal), never a second copy of this code — a rehearsal must run exactly what
//! production runs.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::artifacts::Retention;
use crate::clock::TokioClock;
use crate::executor::{Executor, NoDeviceExecutor, StubExecutor};
use crate::flow::adb::AdbSource;
use crate::flow::exec::{FlowExecutor, FlowExecutorConfig, ReportHook};
use crate::flow::purchase_job::Backend;
use crate::gateway::AdminGateway;
use crate::outbox::Relay;
use crate::registration;
use crate::runner::{client_profile, RunConfig, RunError, RunExit, Runner};
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
    /// Live purchase tasks run live (real, unpaid orders); otherwise purchases are dry runs.
    pub allow_live: bool,
    /// Where the flow executor writes each attempt's evidence.
    pub artifacts_root: PathBuf,
    pub retention: Retention,
    /// Called with every task the flow executor finished (progress lines, summaries).
    pub on_report: Option<ReportHook>,
}

/// A running client: [`Client::wait`] for it to end, [`Client::stop`] to end it.
pub struct Client {
    stop: watch::Sender<bool>,
    task: JoinHandle<Result<RunExit, RunError>>,
}

impl Client {
    /// Starts the client on the current tokio runtime: registration in the background
    /// (its failure never stops the client, §4.1), the outbox relay, and the claim loop
    /// handing tasks to the executor `phone` calls for. When `stop` completes (e.g. on
    /// Ctrl-C), claiming stops; the relay stops after the claim loop.
    pub fn start<G: AdminGateway>(
        config: ClientConfig,
        store: Store,
        phone: Phone,
        gateway: Arc<G>,
        stop: impl Future<Output = ()> + Send + 'static,
    ) -> Result<Client, StoreError> {
        match phone {
            Phone::None => Self::start_with(NoDeviceExecutor, config, store, gateway, stop),
            Phone::Stub => Self::start_with(StubExecutor, config, store, gateway, stop),
            Phone::Adb(source) => {
                // Purchases (issue 7): the flow's effects need the store and the Admin.
                let backend = Backend::new(
                    store.clone(),
                    gateway.clone(),
                    TokioClock::new(),
                    tokio::runtime::Handle::current(),
                    config.allow_live,
                );
                let mut exec_cfg = FlowExecutorConfig::new(config.artifacts_root.clone());
                exec_cfg.retention = config.retention;
                let mut exec = FlowExecutor::new(source, exec_cfg).with_purchase(Arc::new(backend));
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
        let executor = Arc::new(executor);
        let clock = TokioClock::new();
        let settings = store.settings()?;
        tracing::info!(client_id = %settings.client_id, admin = ?settings.admin_url, device = ?settings.device, "starting");
        let profile = client_profile(&settings, executor.readiness());
        let reg = registration::spawn(store.clone(), gateway.clone(), clock.clone(), profile);
        let relay = Relay::new(
            store.clone(),
            gateway.clone(),
            clock.clone(),
            Default::default(),
        );
        let runner = Runner::new(
            store,
            gateway,
            executor,
            clock,
            RunConfig {
                poll_interval: config.poll_interval,
                exit_when_idle: config.exit_when_idle,
                policy: Default::default(),
            },
            relay.waker(),
        );
        let (stop_tx, stop_rx) = watch::channel(false);
        let relay_task = {
            let rx = stop_rx.clone();
            tokio::spawn(async move { relay.run(rx).await })
        };
        let on_stop = tokio::spawn({
            let stop_tx = stop_tx.clone();
            async move {
                stop.await;
                tracing::info!("stopping");
                let _ = stop_tx.send(true);
            }
        });
        let task = tokio::spawn({
            let stop_tx = stop_tx.clone();
            async move {
                let exit = runner.run(stop_rx).await;
                let _ = stop_tx.send(true);
                on_stop.abort();
                match relay_task.await {
                    Ok(Err(e)) => tracing::error!(error = %e, "outbox relay stopped"),
                    Err(e) => tracing::error!(error = %e, "outbox relay panicked"),
                    Ok(Ok(())) => {}
                }
                // Give a still-running registration a moment to record its outcome.
                let _ = tokio::time::timeout(Duration::from_secs(2), reg).await;
                exit
            }
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
