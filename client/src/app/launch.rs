//! The one launch of running clients, shared by `run` ([`super::run`]) and `rehearse`
//! ([`crate::rehearse`]): the console on the workers' stores, one stop signal for every
//! worker, the progress lines, each worker's client started through [`Client::start`]
//! (in its phone's span) and waited for; how each ended comes back ([`End`]). What
//! differs between the two commands is data — the workers, the console's registrar, the
//! stop signal — never a second copy of this.
//!
//! Also here: the stop signal of a process ([`Signals`]: Ctrl-C, SIGTERM) and the safe
//! point of several stores at once ([`all_at_safe_point`]).

use std::future::Future;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::Arc;

use tokio::sync::watch;

use super::{Client, ClientConfig, Phone};
use crate::console::{
    self, state::Registrar, ConfigLive, ConsoleAddr, ConsoleState, ConsoleWorker, PhoneScreen,
    WebhookName,
};
use crate::gateway::HttpAdminGateway;
use crate::lock::ProcessLock;
use crate::progress::ProgressHandle;
use crate::runner::RunExit;
use crate::secret::Secret;
use crate::store::{Store, StoreError};

/// One phone's worker, ready to start.
pub struct Worker {
    /// The phone's serial with several phones (log lines and progress name it); `None`
    /// for the one phone of a single-phone run.
    pub serial: Option<String>,
    /// How the console names the phone (its serial, or `-` without a phone).
    pub label: String,
    /// The phone's progress board (the console and the progress lines read it).
    pub progress: ProgressHandle,
    pub config: ClientConfig,
    pub store: Store,
    pub phone: Phone,
    pub gateway: Arc<HttpAdminGateway>,
    /// The phone's process lock, held until its worker stopped.
    pub lock: Option<ProcessLock>,
}

/// Where the console's URL is announced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Announce {
    /// On stdout, for the operator and for scripts (`run`).
    Stdout,
    /// On stderr: stdout is the output (`rehearse`'s progress and summary).
    Stderr,
}

/// The web console over the workers' stores.
pub struct ConsoleSpec {
    pub addr: ConsoleAddr,
    pub password: Option<Secret>,
    /// What its 设置 page calls after a save.
    pub registrar: Registrar,
    /// The adb server its phone list asks (`None`: no list).
    pub adb_server: Option<SocketAddrV4>,
    pub announce: Announce,
    /// The configured webhooks as the settings page names them (never their URLs).
    pub webhooks: Vec<WebhookName>,
}

/// A console serving until [`Served::stop`] (or until dropped).
pub struct Served {
    pub addr: SocketAddr,
    stop: watch::Sender<bool>,
}

impl Served {
    /// Stops serving (the listener closes; open pages stop updating).
    pub fn stop(self) {
        let _ = self.stop.send(true);
    }
}

/// How one worker ended.
#[derive(Clone, Debug, PartialEq)]
pub enum End {
    Exit(RunExit),
    /// The store failed (the worker could not start, or its claim loop stopped on it).
    Error(String),
    Panic(String),
}

impl End {
    pub fn describe(&self) -> String {
        match self {
            End::Exit(RunExit::Shutdown) => "stopped".into(),
            End::Exit(RunExit::Idle) => "idle".into(),
            End::Exit(RunExit::Blocked(r)) => format!("blocked: {r}"),
            End::Error(e) => format!("failed: {e}"),
            End::Panic(e) => format!("panicked: {e}"),
        }
    }

    /// Most severe first: a panic, a store failure, blocked, then idle or stopped.
    pub fn severity(&self) -> u8 {
        match self {
            End::Panic(_) => 3,
            End::Error(_) => 2,
            End::Exit(RunExit::Blocked(_)) => 1,
            End::Exit(_) => 0,
        }
    }
}

/// What a launch came to.
pub struct Launched {
    /// Each worker's end, by its serial (`None`: the one phone).
    pub ends: Vec<(Option<String>, End)>,
    /// The console, still serving (stopped when dropped).
    pub console: Option<Served>,
}

/// Serves `spec` over `workers`' stores on the current runtime; `None` when off or the
/// address is taken (logged: a taken port never stops a client).
pub fn serve_console(spec: ConsoleSpec, workers: Vec<ConsoleWorker>) -> Option<Served> {
    let listener = console::bind(spec.addr)?;
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "console not started");
            return None;
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "console not started");
            return None;
        }
    };
    let line = format!(
        "console: http://{addr}/ (状态 Status, 设置 Settings, 历史 History; GET /metrics, /healthz)"
    );
    match spec.announce {
        Announce::Stdout => println!("{line}"),
        Announce::Stderr => eprintln!("{line}"),
    }
    // A password set on the settings page replaces the configured one (the first
    // phone's store holds it; every store gets it).
    let stored = workers
        .first()
        .and_then(|w| w.store.operator_settings().ok())
        .and_then(|o| o.console_password_hash);
    let mut state = ConsoleState::new(workers, addr).with_registrar(spec.registrar);
    if let Some(s) = spec.adb_server {
        state = state.with_adb_server(s);
    }
    if let Some(p) = &spec.password {
        state = state.with_password(p);
    }
    state = state
        .with_stored_password(stored.as_deref())
        .with_config_webhooks(spec.webhooks);
    let (stop, mut rx) = watch::channel(false);
    tokio::spawn(console::serve(listener, state, async move {
        let _ = rx.wait_for(|s| *s).await;
    }));
    Some(Served { addr, stop })
}

/// Starts every worker (and the console, and the progress lines when `progress_lines`)
/// and waits until each has ended. The first completion of `stop` stops them all: each
/// finishes the task in hand and drains its outbox ([`Client::start`]). A worker that
/// cannot start, fails or panics never stops another.
pub async fn launch(
    workers: Vec<Worker>,
    console: Option<ConsoleSpec>,
    stop: impl Future<Output = ()> + Send + 'static,
    progress_lines: bool,
) -> Launched {
    let served = console.and_then(|spec| {
        let shown = workers
            .iter()
            .map(|w| {
                let c = &w.config;
                let shown = ConsoleWorker::new(
                    w.label.clone(),
                    w.store.clone(),
                    w.progress.clone(),
                    c.artifacts_root.clone(),
                )
                .with_config(ConfigLive {
                    expected_address: c.expected_address.clone(),
                    self_test_goods_id: c.self_test_goods_id.clone(),
                    dry_run: c.dry_run_only,
                    allow_live: c.allow_live,
                });
                // The card's live screenshot: `screencap` over ADB on the worker's
                // phone, under the worker's turn (`console::screens`).
                match &w.phone {
                    Phone::Adb(source) => shown.with_screen(PhoneScreen::new(source.device())),
                    _ => shown,
                }
            })
            .collect();
        serve_console(spec, shown)
    });
    // One stop signal for every worker.
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(async move {
        stop.await;
        let _ = stop_tx.send(true);
        // Kept open: a dropped sender would read as "stop" too, which it is.
        std::future::pending::<()>().await;
    });
    if progress_lines {
        let phones = workers
            .iter()
            .map(|w| (w.serial.clone(), w.store.clone(), w.progress.clone()))
            .collect();
        tokio::spawn(super::lines::lines(phones));
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
            Ok(client) => waits.push((w.serial, w.lock, tokio::spawn(client.wait()))),
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
    Launched {
        ends,
        console: served,
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".into())
}

/// Runs `f` while every store is at a safe point for money
/// ([`Store::at_safe_point`]), holding each store's connection lock (taken in the order
/// given, the only place that holds more than one) so that no purchase can mark in
/// between; `Ok(None)` when one of them is not.
pub fn all_at_safe_point<R>(
    stores: &[Store],
    f: impl FnOnce() -> R,
) -> Result<Option<R>, StoreError> {
    match stores.split_first() {
        None => Ok(Some(f())),
        Some((first, rest)) => first
            .at_safe_point(|| all_at_safe_point(rest, f))
            .and_then(|r| r.transpose())
            .map(Option::flatten),
    }
}

/// Ctrl-C, or SIGTERM on Unix; the handlers stay installed from the first wait on, so a
/// second signal is never lost between two waits. Make it inside the runtime.
pub struct Signals {
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    pub fn new() -> Self {
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

    /// The next Ctrl-C / SIGTERM.
    pub async fn next(&mut self) {
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

impl Default for Signals {
    fn default() -> Self {
        Self::new()
    }
}
