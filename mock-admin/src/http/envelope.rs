//! The outermost layer: every 4xx/5xx leaves in the §3 envelope with the request's
//! `X-Request-Id` — including axum's own rejections, unknown routes (404), wrong methods
//! (405, with `Allow`), oversized bodies (→ 400 `INVALID_BODY`) and panics.

use crate::error::{ApiError, ErrorMark};
use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use cmautobuy_contract::AdminErrorCode;

fn request_id(headers: &HeaderMap) -> String {
    headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty() && s.len() <= 200)
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

/// Every error response becomes the §3 envelope with the request id.
pub(crate) async fn envelope_guard(req: Request, next: Next) -> Response {
    let rid = request_id(req.headers());
    let resp = next.run(req).await;
    let status = resp.status();
    let mark = resp.extensions().get::<ErrorMark>().cloned();
    if mark.is_none() && status.as_u16() < 400 {
        return resp;
    }
    let err = match mark {
        Some(ErrorMark(e)) => e,
        None => {
            let (code, msg) = match status.as_u16() {
                400 => (AdminErrorCode::InvalidBody, "invalid request"),
                401 => (AdminErrorCode::Unauthorized, "unauthorized"),
                404 => (AdminErrorCode::NotFound, "no such route"),
                405 => (AdminErrorCode::MethodNotAllowed, "method not allowed"),
                // Oversized bodies are invalid bodies (§7.1 names INVALID_BODY for them).
                413 => (AdminErrorCode::InvalidBody, "request body too large"),
                415 => (
                    AdminErrorCode::UnsupportedMediaType,
                    "Content-Type must be application/json",
                ),
                422 => (AdminErrorCode::InvalidBody, "invalid request"),
                429 => (AdminErrorCode::RateLimited, "too many requests"),
                503 => (AdminErrorCode::Unavailable, "temporarily unavailable"),
                _ => (AdminErrorCode::Internal, "internal error"),
            };
            let mut e = ApiError::new(code.clone(), msg);
            if code.http_status() != status.as_u16() && status.as_u16() != 413 {
                e.status = Some(status.as_u16());
            }
            e
        }
    };
    let (mut parts, _) = resp.into_parts();
    let body = serde_json::to_vec(&err.body(Some(rid))).unwrap_or_default();
    parts.status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let mut out = Response::from_parts(parts, Body::from(body));
    out.extensions_mut().insert(ErrorMark(err));
    out
}

/// Fallback for unknown routes.
pub(crate) async fn not_found() -> ApiError {
    ApiError::new(AdminErrorCode::NotFound, "no such route")
}

/// Fallback for a known route with another method.
pub(crate) async fn method_not_allowed() -> ApiError {
    ApiError::new(
        AdminErrorCode::MethodNotAllowed,
        "method not allowed on this route",
    )
}
