//! The rehearsal's web console ("served by `run` (and `rehearse`)"):
//! the same console as `run`, served by the same launch ([`crate::app::launch`]), with
//! the rehearsal's store, progress board and artifacts as its one worker, so an operator
//! watching a rehearsal sees the task in hand on 状态 and every attempt in 历史. Its URL
//! goes to stderr (stdout stays the summary). Here: what its 设置 page registers with,
//! and the signal that ends `--keep-console`.
//!
//! Settings saved on its 设置 page are stored, and registered (§4.1) with the
//! rehearsal's own Admin — the embedded mock, or `--admin` — never with an Admin URL
//! typed into the page: a rehearsal keeps the Admin it started with.

use std::sync::Arc;

use crate::clock::TokioClock;
use crate::console::state::Registrar;
use crate::executor::Readiness;
use crate::gateway::HttpAdminGateway;
use crate::registration;
use crate::store::{RegistrationStatus, Store};

/// After a save on 设置: §4.1 registration with the rehearsal's Admin (its gateway), of
/// the name and phone now saved, declaring what the rehearsal's client declares.
pub fn registrar(gateway: Arc<HttpAdminGateway>, live: bool) -> Registrar {
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
    let mut signals = crate::app::launch::Signals::new();
    async move { signals.next().await }
}
