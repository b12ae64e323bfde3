//! §5 `POST /api/v1/client/tasks/claim`: at most one task, or 204.

use super::extract::{client_id, json_body};
use super::respond::answer;
use crate::error::{ApiError, StoreError};
use crate::journal::{Outcome, OutcomeMark};
use crate::openapi as doc;
use crate::state::AppState;
use crate::store::{self, Answer};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use cmautobuy_contract::validate;
use cmautobuy_contract::{ClaimResponse, ClientProfile};

/// §5: claim at most one task, atomically; 204 when there is none.
#[utoipa::path(
    post,
    path = "/api/v1/client/tasks/claim",
    tag = "client",
    params(
        ("X-Client-Id" = String, Header, description = "Stable client id (1–128 visible ASCII)",
            min_length = 1, max_length = 128, pattern = "^[!-~]{1,128}$"),
        ("X-Request-Id" = Option<String>, Header, description = "Per-attempt request id"),
    ),
    request_body(content = doc::ClientProfileDoc, content_type = "application/json"),
    responses(
        (status = 200, description = "One task, now claimed by this client", body = doc::ClaimResponseDoc),
        (status = 204, description = "No claimable task (not an error)"),
        (status = 400, description = "MISSING_CLIENT_ID, INVALID_BODY or INVALID_CLIENT_PROFILE", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 503, description = "SERVICE_UNAVAILABLE (database busy; retry)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    )
)]
pub(crate) async fn claim(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let client = client_id(&headers)?;
    let v = json_body(&headers, body)?;
    let profile: ClientProfile = validate::client_profile(&v)?;
    let claimed =
        s.db.call(move |c| store::claim(c, &client, &profile))
            .await?;
    match claimed {
        Some(task) => {
            let body = serde_json::to_vec(&ClaimResponse { task })
                .map_err(|e| ApiError::from(StoreError::from(e)))?;
            Ok(answer(Answer::fresh(body)))
        }
        None => {
            let mut resp = StatusCode::NO_CONTENT.into_response();
            resp.extensions_mut().insert(OutcomeMark(Outcome::Fresh));
            Ok(resp)
        }
    }
}
