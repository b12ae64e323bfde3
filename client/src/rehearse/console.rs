//! The rehearsal's web console (issue 13 item 1: "served by `run` (and `rehearse`)"):
//! the same console as `run`, with the rehearsal's store, progress board and artifacts
//! as its one worker, so an operator watching a rehearsal sees the task in hand on 状态
//! and every attempt in 历史. Its URL goes to stderr (stdout stays the summary).
//!
//! Settings saved on its 设置 page are stored, and registered (§4.1) with the
//! rehearsal's own Admin — the embedded mock, or `--admin` — never with an Admin URL
//! typed into the page: a rehearsal keeps the Admin it started with.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::sync::watch;

use crate::clock::TokioClock;
use crate::console::{self, state::Registrar, ConsoleAddr, ConsoleState, ConsoleWorker};
use crate::executor::Readiness;
use crate::gateway::HttpAdminGateway;
use crate::progress::ProgressHandle;
use crate::registration;
use crate::secret::Secret;
use crate::store::{RegistrationStatus, Store};

/// A console serving until [`Served::stop`].
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

/// What the console shows and does.
pub struct Parts {
    pub label: String,
    pub store: Store,
    pub progress: ProgressHandle,
    pub artifacts_root: std::path::PathBuf,
    pub gateway: Arc<HttpAdminGateway>,
    /// Whether the rehearsal may declare live (`--live` on the simulated phone).
    pub live: bool,
    pub adb_server: Option<std::net::SocketAddrV4>,
    pub password: Option<Secret>,
    /// The simulated phone, for the card's live screenshot.
    pub screen: Option<console::PhoneScreen>,
}

/// Binds `addr` and serves the console on the current runtime; `None` when off or the
/// address is taken (logged: a taken port never fails the rehearsal).
pub fn start(addr: ConsoleAddr, parts: Parts) -> Option<Served> {
    let listener = console::bind(addr)?;
    let listener = match tokio::net::TcpListener::from_std(listener) {
        Ok(l) => l,
        Err(e) => {
            tracing::warn!(error = %e, "console not started");
            return None;
        }
    };
    let bound = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!(error = %e, "console not started");
            return None;
        }
    };
    let mut worker = ConsoleWorker::new(
        parts.label,
        parts.store,
        parts.progress,
        parts.artifacts_root,
    );
    if let Some(screen) = parts.screen {
        worker = worker.with_screen(screen);
    }
    let mut state =
        ConsoleState::new(vec![worker], bound).with_registrar(registrar(parts.gateway, parts.live));
    if let Some(s) = parts.adb_server {
        state = state.with_adb_server(s);
    }
    if let Some(p) = &parts.password {
        state = state.with_password(p);
    }
    let (stop, mut rx) = watch::channel(false);
    tokio::spawn(console::serve(listener, state, async move {
        let _ = rx.wait_for(|s| *s).await;
    }));
    Some(Served { addr: bound, stop })
}

/// After a save on 设置: §4.1 registration with the rehearsal's Admin (its gateway), of
/// the name and phone now saved, declaring what the rehearsal's client declares.
fn registrar(gateway: Arc<HttpAdminGateway>, live: bool) -> Registrar {
    Arc::new(move |store: Store| {
        let gateway = gateway.clone();
        Box::pin(async move {
            let settings = match store.settings() {
                Ok(s) => s,
                Err(e) => {
                    let st = RegistrationStatus {
                        state: "failed".into(),
                        at: cmautobuy_contract::time::format_utc(chrono::Utc::now()),
                        error: Some(e.to_string()),
                        rejected: true,
                    };
                    let _ = store.set_registration_status(&st);
                    return st;
                }
            };
            let profile = crate::runner::client_profile(
                &settings,
                Readiness {
                    device_ready: true,
                    purchase_adapter_ready: true,
                    live_adapter_ready: live,
                },
            );
            registration::register(&store, &*gateway, &TokioClock::new(), &profile).await
        })
    })
}

/// Completes at Ctrl-C (or SIGTERM on Unix). Installed when called: call it inside the
/// runtime before telling the operator to press Ctrl-C.
pub fn stop_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let term = signal(SignalKind::terminate()).ok();
        let int = signal(SignalKind::interrupt()).ok();
        async move {
            match (term, int) {
                (Some(mut term), Some(mut int)) => {
                    tokio::select! {
                        _ = term.recv() => {}
                        _ = int.recv() => {}
                    }
                }
                _ => {
                    let _ = tokio::signal::ctrl_c().await;
                }
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
