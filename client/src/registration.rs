//! Registration (contract §4.1): save locally first, then `PUT` in the background.
//!
//! The client id and name (and device) are committed to SQLite before any network call;
//! the `PUT` runs on a background task; its outcome is recorded as a
//! [`RegistrationStatus`] that `status` shows. A remote failure never touches the saved
//! settings.
//!
//! §4.1 answers `200 OK`. Any other 2xx is logged as unexpected and then taken by one
//! rule (`gateway::api::decode_registration`): accepted with a warning when its body is
//! the §4.1 answer, a malformed answer (registration `failed`, retryable) otherwise.

use std::sync::Arc;

use tracing::Instrument;

use crate::clock::Clock;
use crate::gateway::{AdminGateway, GatewayError};
use crate::store::{RegistrationStatus, Settings, SettingsPatch, Store, StoreError};
use cmautobuy_contract::time::format_utc;
use cmautobuy_contract::ClientProfile;

/// Step 1: the local save. Returns the settings as now stored.
pub fn save_locally(store: &Store, patch: &SettingsPatch) -> Result<Settings, StoreError> {
    store.save_settings(patch)
}

/// Step 2: the `PUT`, recording its outcome. Never changes the saved settings.
pub async fn register<G: AdminGateway, C: Clock>(
    store: &Store,
    gateway: &G,
    clock: &C,
    profile: &ClientProfile,
) -> RegistrationStatus {
    let pending = RegistrationStatus {
        state: "pending".into(),
        at: format_utc(clock.now()),
        error: None,
        rejected: false,
    };
    if let Err(e) = store.set_registration_status(&pending) {
        tracing::warn!(error = %e, "cannot record the pending registration");
    }
    let status = match gateway.register_client(profile).await {
        Ok(r) if r.registered => RegistrationStatus {
            state: "ok".into(),
            at: format_utc(clock.now()),
            error: None,
            rejected: false,
        },
        Ok(_) => RegistrationStatus {
            state: "failed".into(),
            at: format_utc(clock.now()),
            error: Some("the Admin answered registered=false".into()),
            rejected: true,
        },
        Err(e) => failed(clock, &e),
    };
    match status.state.as_str() {
        "ok" => tracing::info!("registered with the Admin"),
        _ => tracing::warn!(error = ?status.error, "registration failed (local settings kept)"),
    }
    if let Err(e) = store.set_registration_status(&status) {
        tracing::warn!(error = %e, "cannot record the registration status");
    }
    status
}

fn failed<C: Clock>(clock: &C, e: &GatewayError) -> RegistrationStatus {
    RegistrationStatus {
        state: "failed".into(),
        at: format_utc(clock.now()),
        error: Some(e.to_string()),
        rejected: !e.is_retryable(),
    }
}

/// Runs [`register`] on a background task.
pub fn spawn<G: AdminGateway, C: Clock + Clone>(
    store: Store,
    gateway: Arc<G>,
    clock: C,
    profile: ClientProfile,
) -> tokio::task::JoinHandle<RegistrationStatus> {
    tokio::spawn(
        async move { register(&store, gateway.as_ref(), &clock, &profile).await }
            .instrument(tracing::Span::current()),
    )
}
