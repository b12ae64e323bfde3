//! §6 `POST /api/v1/client/tasks/{task_id}/result` and §7 `…/failure`: the same
//! plumbing (path id, headers, body, validation, content hash), then one store
//! transaction each.

use super::extract::{body_bytes, client_id, idempotency_key, parse_object, path_id};
use super::respond::answer;
use crate::error::{ApiError, StoreError};
use crate::openapi as doc;
use crate::state::AppState;
use crate::store::{self, Answer, SubmitCtx};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use cmautobuy_contract::validate;
use serde_json::Value;

/// §6: submit a result; idempotent by key; accepted for cancelled and reassigned tasks.
#[utoipa::path(
    post,
    path = "/api/v1/client/tasks/{task_id}/result",
    tag = "client",
    params(
        ("task_id" = String, Path, description = "Opaque task id, sent back verbatim"),
        ("X-Client-Id" = String, Header, description = "Stable client id (1–128 visible ASCII)",
            min_length = 1, max_length = 128, pattern = "^[!-~]{1,128}$"),
        ("Idempotency-Key" = String, Header, description = "`{task_id}:{attempt_id}:result-v1` (non-ASCII, `%` and `:` bytes of the ids percent-encoded); any header value of 1–255 bytes is accepted",
            min_length = 1, max_length = 255, pattern = "^[!-~]{1,255}$"),
        ("X-Request-Id" = Option<String>, Header, description = "Per-attempt request id"),
    ),
    request_body(content = doc::ResultRequestDoc, content_type = "application/json"),
    responses(
        (status = 200, description = "Stored (or the stored answer of the same key and content)", body = doc::AcceptedResponseDoc),
        (status = 400, description = "MISSING_CLIENT_ID, MISSING_IDEMPOTENCY_KEY, INVALID_IDEMPOTENCY_KEY or INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED", body = doc::ErrorEnvelopeDoc),
        (status = 403, description = "TASK_NOT_CLAIMED_BY_CLIENT (never dispatched to this client)", body = doc::ErrorEnvelopeDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 409, description = "IDEMPOTENCY_CONFLICT", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 422, description = "INVALID_RESULT, TASK_TYPE_MISMATCH or COLLECT_GOODS_MISMATCH", body = doc::ErrorEnvelopeDoc),
        (status = 503, description = "SERVICE_UNAVAILABLE (database busy; retry)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    )
)]
pub(crate) async fn submit_result(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    submit_report(
        &s,
        path,
        headers,
        body,
        validate::result_request,
        store::submit_result,
    )
    .await
}

/// §7: submit a failure or manual-review report; the answer carries `task_status`.
#[utoipa::path(
    post,
    path = "/api/v1/client/tasks/{task_id}/failure",
    tag = "client",
    params(
        ("task_id" = String, Path, description = "Opaque task id, sent back verbatim"),
        ("X-Client-Id" = String, Header, description = "Stable client id (1–128 visible ASCII)",
            min_length = 1, max_length = 128, pattern = "^[!-~]{1,128}$"),
        ("Idempotency-Key" = String, Header, description = "`{task_id}:{attempt_id}:failure-v1` (non-ASCII, `%` and `:` bytes of the ids percent-encoded); any header value of 1–255 bytes is accepted",
            min_length = 1, max_length = 255, pattern = "^[!-~]{1,255}$"),
        ("X-Request-Id" = Option<String>, Header, description = "Per-attempt request id"),
    ),
    request_body(content = doc::FailureRequestDoc, content_type = "application/json"),
    responses(
        (status = 200, description = "Stored (or the stored answer of the same key and content)", body = doc::FailureAcceptedDoc),
        (status = 400, description = "MISSING_CLIENT_ID, MISSING_IDEMPOTENCY_KEY, INVALID_IDEMPOTENCY_KEY or INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED", body = doc::ErrorEnvelopeDoc),
        (status = 403, description = "TASK_NOT_CLAIMED_BY_CLIENT", body = doc::ErrorEnvelopeDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 409, description = "IDEMPOTENCY_CONFLICT", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 422, description = "INVALID_FAILURE", body = doc::ErrorEnvelopeDoc),
        (status = 503, description = "SERVICE_UNAVAILABLE (database busy; retry)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    )
)]
pub(crate) async fn submit_failure(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    submit_report(
        &s,
        path,
        headers,
        body,
        validate::failure_request,
        store::submit_failure,
    )
    .await
}

/// §6/§7: the shared plumbing of the result and failure handlers — path id, headers,
/// body, validation, content hash, then the store call inside one transaction.
async fn submit_report<R, E>(
    s: &AppState,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
    check: fn(&Value) -> Result<R, E>,
    submit: fn(&mut rusqlite::Connection, &SubmitCtx, &R) -> Result<Answer, StoreError>,
) -> Result<Response, ApiError>
where
    R: Send + 'static,
    ApiError: From<E>,
{
    let task_id = path_id(path)?;
    let client_id = client_id(&headers)?;
    let key = idempotency_key(&headers)?;
    let bytes = body_bytes(&headers, body)?;
    let v = parse_object(&bytes)?;
    let req = check(&v)?;
    let ctx = SubmitCtx {
        task_id,
        client_id,
        key,
        request_hash: store::canonical_hash(&v),
        raw_body: String::from_utf8_lossy(&bytes).into_owned(),
    };
    let a = s.db.call(move |c| submit(c, &ctx, &req)).await?;
    Ok(answer(a))
}
