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
//!
//! A registration the Admin accepts also closes the claim loop's alert for a refused
//! token ([`crate::runner::TOKEN_REFUSED`]): the token works now, so the alert is stale.

use std::sync::Arc;

use tracing::Instrument;

use crate::clock::Clock;
use crate::config::admin_url::{check as check_admin_url, AdminUrlError};
use crate::gateway::{AdminGateway, GatewayError};
use crate::store::{RegistrationStatus, Settings, SettingsPatch, Store, StoreError};
use cmautobuy_contract::time::format_utc;
use cmautobuy_contract::ClientProfile;

/// Why the local save refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// Not the Admin's base URL (no scheme, the API's path appended, …): refused before
    /// anything is saved, with the URL to write.
    #[error(transparent)]
    AdminUrl(#[from] AdminUrlError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Step 1: the local save. Returns the settings as now stored. An Admin URL that is not
/// the Admin's base URL is refused here, whoever gives it (`register`, `run`, the
/// console's 设置 page).
pub fn save_locally(store: &Store, patch: &SettingsPatch) -> Result<Settings, SaveError> {
    if let Some(url) = &patch.admin_url {
        check_admin_url(url)?;
    }
    Ok(store.save_settings(patch)?)
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
        "ok" => {
            tracing::info!("registered with the Admin");
            // The token got through: a claim refused for the token before is stale.
            match store.resolve_alerts_starting(
                crate::alert::AlertKind::ClaimRejected,
                crate::runner::TOKEN_REFUSED,
                clock.now(),
            ) {
                Ok(0) => {}
                Ok(n) => tracing::info!(
                    alerts = n,
                    "the token is accepted now: the alert of the refused token is closed"
                ),
                Err(e) => tracing::warn!(error = %e, "cannot close the refused token's alert"),
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alert::AlertKind;
    use crate::clock::TokioClock;
    use crate::executor::Readiness;
    use crate::gateway::{GatewaySettings, MockAdminGateway};
    use crate::runner::TOKEN_REFUSED;
    use crate::secret::Secret;
    use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig};

    fn admin(token: &str) -> MockAdmin {
        let mut c = MockAdminConfig::in_memory();
        c.require_token = Some(token.into());
        MockAdmin::open(c).unwrap()
    }

    fn saved(dir: &std::path::Path, token: &str) -> Store {
        let store = Store::open(&Store::path_in(dir)).unwrap();
        save_locally(
            &store,
            &SettingsPatch {
                name: Some("reg-test".into()),
                admin_url: Some("http://in-process".into()),
                token: Some(Secret::new(token.to_string())),
                device: None,
            },
        )
        .unwrap();
        store
    }

    async fn register_with(store: &Store, mock: &MockAdmin) -> RegistrationStatus {
        let s = store.settings().unwrap();
        let gw = MockAdminGateway::new(
            mock.router(),
            GatewaySettings::new(s.client_id.clone(), s.token.clone()),
        );
        let profile = crate::runner::client_profile(&s, Readiness::default());
        register(store, &gw, &TokioClock::new(), &profile).await
    }

    /// The claim loop's alert for a token the Admin refused (401) closes once a request
    /// with a new token gets through; a claim refused for another reason keeps its alert
    /// until `ack`, and a registration refused again closes nothing.
    #[tokio::test]
    async fn a_new_working_token_closes_the_refused_tokens_alert() {
        let dir = tempfile::tempdir().unwrap();
        let mock = admin("right-token-5d1");
        let store = saved(dir.path(), "old-token-77a");
        let now = chrono::Utc::now();
        let refused = format!("{TOKEN_REFUSED} — Admin 拒绝领取 / the Admin rejected the claim: claim: the Admin answered HTTP 401 UNAUTHORIZED");
        store
            .raise_alert(AlertKind::ClaimRejected, None, &refused, now)
            .unwrap();
        let other =
            "Admin 拒绝领取 / the Admin rejected the claim: claim: the Admin answered HTTP 409";
        store
            .raise_alert(AlertKind::ClaimRejected, None, other, now)
            .unwrap();

        // Still the old token: refused again, both alerts stay.
        let st = register_with(&store, &mock).await;
        assert_eq!(st.state, "failed", "{st:?}");
        assert_eq!(store.open_alerts().unwrap().len(), 2);

        // The new token: accepted, the token's alert closes, the other stays.
        save_locally(
            &store,
            &SettingsPatch {
                token: Some(Secret::new("right-token-5d1".to_string())),
                ..Default::default()
            },
        )
        .unwrap();
        let st = register_with(&store, &mock).await;
        assert_eq!(st.state, "ok", "{st:?}");
        let open = store.open_alerts().unwrap();
        assert_eq!(open.len(), 1, "{open:?}");
        assert_eq!(open[0].message, other);
    }

    /// The local save refuses an Admin URL that is not the Admin's base URL, with the
    /// URL to write, and saves nothing.
    #[test]
    fn the_local_save_refuses_a_url_that_is_not_the_admins_base_url() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Store::path_in(dir.path())).unwrap();
        for bad in ["127.0.0.1:18080", "http://127.0.0.1:18080/api/v1"] {
            let e = save_locally(
                &store,
                &SettingsPatch {
                    admin_url: Some(bad.into()),
                    name: Some("n".into()),
                    ..Default::default()
                },
            )
            .unwrap_err();
            assert!(matches!(e, SaveError::AdminUrl(_)), "{e}");
            assert!(
                e.to_string().contains(
                    "write http://127.0.0.1:18080 — the client adds /api/v1/client itself"
                ),
                "{e}"
            );
        }
        let s = store.settings().unwrap();
        assert_eq!((s.admin_url, s.name), (None, None));
    }
}
