//! Runtime spec resolution (contract §7.1): one POST command, stored before it is sent.
//!
//! The request is written to `spec_resolutions` (exact bytes, deterministic key) before
//! the first send; transient failures resend the same bytes with the same key a bounded
//! number of times (the contract allows "有限重试"); the Admin's answer is checked
//! against the request and stored. Never a loop waiting for a result, never changed
//! content under an old key.

use std::time::Duration;

use cmautobuy_contract::hash::spec_resolution_idempotency_key;
use cmautobuy_contract::validate;
use cmautobuy_contract::{SpecResolutionRequest, SpecResolutionResponse};

use crate::clock::Clock;
use crate::gateway::{AdminGateway, GatewayError};
use crate::retry::{random_unit, RetryPolicy};
use crate::store::{Run, Store, StoreError};

/// Attempts per resolution before the flow gives up (and reports a failure).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the spec resolution request is invalid: {0}")]
    Invalid(validate::Violation),
    #[error("the Admin rejected the spec resolution: {0}")]
    Rejected(GatewayError),
    #[error("no answer to the spec resolution after {attempts} attempts: {last}")]
    Exhausted { attempts: u32, last: GatewayError },
    #[error("the Admin's spec resolution answer does not fit the request: {0}")]
    BadAnswer(validate::Violation),
}

impl SpecError {
    pub fn is_retryable(&self) -> bool {
        match self {
            SpecError::Store(e) => e.is_retryable(),
            _ => false,
        }
    }
}

/// What a resolution needs besides the request.
pub struct Resolver<'a, G, C> {
    pub store: &'a Store,
    pub gateway: &'a G,
    pub clock: &'a C,
    pub policy: RetryPolicy,
    /// Sends per resolution, counted across restarts.
    pub max_attempts: u32,
}

/// Resolves `req` for `run`, sending at most `max_attempts` times in total across
/// restarts. Returns the stored answer if this key was already resolved.
pub async fn resolve<G: AdminGateway, C: Clock>(
    r: &Resolver<'_, G, C>,
    run: &Run,
    remote_task_id: &str,
    req: &SpecResolutionRequest,
) -> Result<SpecResolutionResponse, SpecError> {
    let Resolver {
        store,
        gateway,
        clock,
        policy,
        max_attempts,
    } = r;
    let max_attempts = *max_attempts;
    validate::check_spec_resolution_fields(req).map_err(SpecError::Invalid)?;
    let key = spec_resolution_idempotency_key(
        remote_task_id,
        &req.attempt_id,
        &req.candidate_snapshot_hash,
    );
    validate::spec_resolution_hashes(remote_task_id, &key, req).map_err(SpecError::Invalid)?;
    let body = serde_json::to_vec(req)
        .map_err(|e| StoreError::Corrupt(format!("cannot serialise the request: {e}")))?;
    let rec = store.spec_resolution_begin(
        run.id,
        remote_task_id,
        &key,
        &req.candidate_snapshot_hash,
        &body,
        clock.now(),
    )?;
    if let Some(stored) = rec.response.as_deref().filter(|_| rec.state == "resolved") {
        if let Ok(resp) = serde_json::from_slice::<SpecResolutionResponse>(stored) {
            return Ok(resp);
        }
    }
    // Stored, not yet sent: the crash matrix kills the client here.
    crate::failpoint::hit("spec.before_send");
    let mut attempt = rec.attempts;
    loop {
        attempt += 1;
        // Always the stored bytes: a resend must be byte-identical.
        let outcome = gateway
            .resolve_purchase_spec(remote_task_id, &key, &rec.request_body)
            .await;
        let now = clock.now();
        match outcome {
            Ok(resp) => {
                store.spec_resolution_attempt(rec.id, None, now)?;
                validate::spec_resolution_response(req, &resp).map_err(SpecError::BadAnswer)?;
                let raw = serde_json::to_vec(&resp).unwrap_or_default();
                store.spec_resolution_resolved(
                    rec.id,
                    &resp.resolution_id,
                    resp.outcome.as_str(),
                    &raw,
                    now,
                )?;
                return Ok(resp);
            }
            Err(e) => {
                store.spec_resolution_attempt(rec.id, Some(&e.to_string()), now)?;
                if !e.is_retryable() {
                    store.spec_resolution_abandon(rec.id, &e.to_string(), now)?;
                    return Err(SpecError::Rejected(e));
                }
                if attempt >= max_attempts {
                    store.spec_resolution_abandon(rec.id, &e.to_string(), now)?;
                    return Err(SpecError::Exhausted {
                        attempts: attempt,
                        last: e,
                    });
                }
                let delay: Duration = policy.delay(attempt, e.retry_after(), now, random_unit());
                tracing::warn!(error = %e, ?delay, attempt, "spec resolution failed; retrying");
                clock.sleep(delay).await;
            }
        }
    }
}
