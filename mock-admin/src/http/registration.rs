//! §4.1 `PUT /api/v1/client/registration`.

use super::extract::{client_id, json_body};
use super::respond::answer;
use crate::error::ApiError;
use crate::openapi as doc;
use crate::state::AppState;
use crate::store::{self, Answer};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use cmautobuy_contract::validate;
use cmautobuy_contract::{AdminErrorCode, RegistrationResponse};

/// §4.1: idempotent upsert of the client by `X-Client-Id`. Never reads or touches tasks.
#[utoipa::path(
    put,
    path = "/api/v1/client/registration",
    tag = "client",
    params(
        ("X-Client-Id" = String, Header, description = "Stable client id (1–128 visible ASCII)",
            min_length = 1, max_length = 128, pattern = "^[!-~]{1,128}$"),
        ("X-Request-Id" = Option<String>, Header, description = "Per-attempt request id"),
    ),
    request_body(content = doc::ClientProfileDoc, content_type = "application/json"),
    responses(
        (status = 200, description = "Registered (created or updated)", body = doc::RegistrationResponseDoc),
        (status = 400, description = "MISSING_CLIENT_ID, INVALID_BODY or INVALID_CLIENT_PROFILE", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 500, description = "CLIENT_REGISTER_FAILED", body = doc::ErrorEnvelopeDoc),
        (status = 503, description = "CLIENT_REGISTER_FAILED (database busy)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    )
)]
pub(crate) async fn registration(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let client = client_id(&headers)?;
    let v = json_body(&headers, body)?;
    let profile = validate::client_profile(&v)?;
    let failed = || Some(AdminErrorCode::ClientRegisterFailed);
    let id = client.clone();
    let registered_at =
        s.db.call(move |c| store::register(c, &id, &profile))
            .await
            .map_err(|e| ApiError::from_store(e, failed()))?;
    let body = serde_json::to_vec(&RegistrationResponse {
        registered: true,
        client_id: client,
        registered_at,
    })
    .map_err(|e| ApiError::from_store(e.into(), failed()))?;
    Ok(answer(Answer::fresh(body)))
}
