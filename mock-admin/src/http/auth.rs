//! The bearer token (`--require-token`): checked on every `/api/...` request, compared in
//! constant time, never logged or echoed.

use crate::error::ApiError;
use crate::state::{AppState, Inner};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cmautobuy_contract::AdminErrorCode;

/// Checks `Authorization: Bearer <token>` when the mock was started with a token. The
/// token is compared, never logged or echoed.
pub(crate) fn check_token(inner: &Inner, headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(expected) = inner.cfg.require_token.as_deref() else {
        return Ok(());
    };
    let given = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let ok = given
        .map(|g| constant_time_eq(g.as_bytes(), expected.as_bytes()))
        .unwrap_or(false);
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            AdminErrorCode::Unauthorized,
            "missing or wrong bearer token",
        ))
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Operator routes: the token only (no faults, no journal).
pub(crate) async fn operator_auth(State(s): State<AppState>, req: Request, next: Next) -> Response {
    match check_token(&s, req.headers()) {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}
