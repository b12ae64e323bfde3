//! Writing an answer: stored answers (exact bytes, journal outcome), JSON documents, and
//! reading back JSON text the store kept as given.

use crate::error::{ApiError, StoreError};
use crate::journal::OutcomeMark;
use crate::store::Answer;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Value;

/// A stored (or freshly stored) answer, byte for byte, marked for the journal.
pub(crate) fn answer(a: Answer) -> Response {
    let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK);
    let mut resp = (status, [(header::CONTENT_TYPE, "application/json")], a.body).into_response();
    resp.extensions_mut().insert(OutcomeMark(a.outcome));
    resp
}

pub(crate) fn json_response(status: StatusCode, v: Value) -> Response {
    (status, axum::Json(v)).into_response()
}

/// JSON text from the database as a document; unreadable text is corrupt data (500).
pub(crate) fn stored_json(text: &str) -> Result<Value, ApiError> {
    serde_json::from_str(text).map_err(|e| StoreError::from(e).into())
}

/// [`stored_json`] of a nullable column: `NULL` stays `null`.
pub(crate) fn stored_json_opt(text: Option<&str>) -> Result<Value, ApiError> {
    text.map_or(Ok(Value::Null), stored_json)
}
