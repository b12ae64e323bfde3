//! The mock's own test controls under `/api/v1/admin`: fault plans (`/faults`), forced
//! §7.1 outcomes (`/spec-overrides`) and the request journal (`/journal`). Documented in
//! the README only, deliberately not in `/openapi.json`: a fuzzer must not install faults
//! or forced outcomes.

use crate::error::ApiError;
use crate::http::extract::json_body;
use crate::http::respond::json_response;
use crate::resolver::SpecOverride;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use cmautobuy_contract::AdminErrorCode;
use serde_json::json;

pub(crate) async fn op_add_fault(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let v = json_body(&headers, body)?;
    let plan = serde_json::from_value(v)
        .map_err(|e| ApiError::new(AdminErrorCode::InvalidBody, format!("bad fault plan: {e}")))?;
    let id = s
        .faults
        .add(plan)
        .map_err(|e| ApiError::new(AdminErrorCode::InvalidBody, e))?;
    Ok(json_response(
        StatusCode::CREATED,
        json!({ "fault_id": id }),
    ))
}

pub(crate) async fn op_list_faults(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, json!({ "faults": s.faults.list() }))
}

pub(crate) async fn op_clear_faults(State(s): State<AppState>) -> Response {
    s.faults.clear();
    StatusCode::NO_CONTENT.into_response()
}

pub(crate) async fn op_add_override(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let v = json_body(&headers, body)?;
    let o: SpecOverride = serde_json::from_value(v)
        .map_err(|e| ApiError::new(AdminErrorCode::InvalidBody, format!("bad override: {e}")))?;
    s.add_override(o)?;
    Ok(StatusCode::CREATED.into_response())
}

pub(crate) async fn op_list_overrides(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, json!({ "overrides": s.overrides() }))
}

pub(crate) async fn op_clear_overrides(State(s): State<AppState>) -> Response {
    s.clear_overrides();
    StatusCode::NO_CONTENT.into_response()
}

pub(crate) async fn op_journal(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, json!({ "entries": s.journal.entries() }))
}

pub(crate) async fn op_clear_journal(State(s): State<AppState>) -> Response {
    s.journal.clear();
    StatusCode::NO_CONTENT.into_response()
}
