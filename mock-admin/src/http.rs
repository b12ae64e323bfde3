//! The HTTP surface: client endpoints (§4.1–§7.1), the operator API (decisions.md §10
//! plus faults, spec-resolution overrides and the journal), `/openapi.json`, and the two
//! layers every request passes:
//!
//! - [`envelope_guard`] (outermost): every 4xx/5xx leaves in the §3 envelope with the
//!   request's `X-Request-Id` — including axum's own rejections, unknown routes (404),
//!   wrong methods (405, with `Allow`), oversized bodies (→ 400 `INVALID_BODY`) and panics.
//! - [`client_layer`] (client endpoints only): bearer token, fault plans and the journal.

use crate::error::{ApiError, ErrorMark, StoreError};
use crate::faults::{Endpoint, Fault, JournalEntry, Outcome, OutcomeMark};
use crate::resolver::{self, SpecOverride};
use crate::server::KillSwitch;
use crate::store::{self, Answer, Observed, StoredDecision, SubmitCtx};
use crate::{openapi as doc, Inner};
use axum::body::{Body, Bytes};
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use cmautobuy_contract::time::format_utc_millis;
use cmautobuy_contract::validate;
use cmautobuy_contract::{AdminErrorCode, ClientProfile, SpecOutcome, SpecSource};
use serde_json::{json, Value};
use std::sync::Arc;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

type AppState = Arc<Inner>;

/// Largest request body read at all (a collect result with many SKUs fits easily).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Response header that marks an in-process connection fault (see README).
pub const FAULT_HEADER: &str = "x-mock-fault";

#[derive(OpenApi)]
#[openapi(
    info(
        title = "cmautobuy mock Admin — Client–Admin API v1",
        version = "1.0.0",
        description = "The client contract (§4.1–§7.1) as served by the bundled mock Admin. \
            Every rejection is the §3 error envelope."
    ),
    components(schemas(doc::ErrorEnvelopeDoc))
)]
struct ApiDoc;

/// Builds the full router and the OpenAPI document of the client endpoints.
pub fn build(state: AppState) -> Router {
    let client = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(registration))
        .routes(routes!(claim))
        .routes(routes!(submit_result))
        .routes(routes!(submit_failure))
        .routes(routes!(spec_resolution))
        .route_layer(middleware::from_fn_with_state(state.clone(), client_layer));

    let operator = OpenApiRouter::new()
        .routes(routes!(op_create_task, op_list_tasks))
        .routes(routes!(op_get_task))
        .routes(routes!(op_cancel_task))
        .routes(routes!(op_reassign_task))
        .routes(routes!(op_clients))
        .routes(routes!(op_products))
        .routes(routes!(op_spec_resolutions))
        // Test controls: documented in the README, deliberately not in the spec (a
        // fuzzer must not install faults or forced outcomes).
        .route(
            "/api/v1/admin/faults",
            post(op_add_fault)
                .get(op_list_faults)
                .delete(op_clear_faults),
        )
        .route(
            "/api/v1/admin/spec-overrides",
            post(op_add_override)
                .get(op_list_overrides)
                .delete(op_clear_overrides),
        )
        .route(
            "/api/v1/admin/journal",
            get(op_journal).delete(op_clear_journal),
        )
        .route_layer(middleware::from_fn_with_state(state.clone(), operator_auth));
    let (router, api) = client.merge(operator).split_for_parts();
    let spec = Bytes::from(api.to_pretty_json().unwrap_or_else(|_| "{}".into()));

    router
        .route(
            "/openapi.json",
            get(move || {
                let spec = spec.clone();
                async move { ([(header::CONTENT_TYPE, "application/json")], spec) }
            }),
        )
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(tower_http::catch_panic::CatchPanicLayer::new())
        .layer(middleware::from_fn(envelope_guard))
}

async fn not_found() -> ApiError {
    ApiError::new(AdminErrorCode::NotFound, "no such route")
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        AdminErrorCode::MethodNotAllowed,
        "method not allowed on this route",
    )
}

// ---------------------------------------------------------------------------------------
// cross-cutting layers
// ---------------------------------------------------------------------------------------

fn request_id(headers: &HeaderMap) -> String {
    headers
        .get("x-request-id")
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.is_empty() && s.len() <= 200)
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
}

/// Every error response becomes the §3 envelope with the request id.
async fn envelope_guard(req: Request, next: Next) -> Response {
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

/// Checks `Authorization: Bearer <token>` when the mock was started with a token. The
/// token is compared, never logged or echoed.
fn check_token(inner: &Inner, headers: &HeaderMap) -> Result<(), ApiError> {
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

async fn operator_auth(State(s): State<AppState>, req: Request, next: Next) -> Response {
    match check_token(&s, req.headers()) {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

fn endpoint_of(method: &Method, path: &str) -> Option<(Endpoint, Option<String>)> {
    let rest = path.strip_prefix("/api/v1/client/")?;
    if rest == "registration" && method == Method::PUT {
        return Some((Endpoint::Registration, None));
    }
    if rest == "tasks/claim" && method == Method::POST {
        return Some((Endpoint::Claim, None));
    }
    let rest = rest.strip_prefix("tasks/")?;
    let (id, action) = rest.rsplit_once('/')?;
    if method != Method::POST {
        return None;
    }
    let e = match action {
        "result" => Endpoint::Result,
        "failure" => Endpoint::Failure,
        "spec-resolution" => Endpoint::SpecResolution,
        _ => return None,
    };
    Some((e, Some(id.to_string())))
}

fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// Client endpoints: token, fault plans, journal.
async fn client_layer(State(s): State<AppState>, req: Request, next: Next) -> Response {
    let Some((endpoint, task_id)) = endpoint_of(req.method(), req.uri().path()) else {
        return next.run(req).await;
    };
    let mut entry = JournalEntry {
        seq: 0,
        at: format_utc_millis(chrono::Utc::now()),
        endpoint,
        method: req.method().to_string(),
        path: req.uri().path().to_string(),
        client_id: header_str(req.headers(), "x-client-id"),
        idempotency_key: header_str(req.headers(), "idempotency-key"),
        task_id,
        status: 0,
        outcome: Outcome::Fresh,
        error_code: None,
        fault: None,
        committed: None,
    };
    let kill = req.extensions().get::<KillSwitch>().cloned();
    let fault = s.faults.on_call(endpoint);
    if let Some(f) = &fault {
        entry.fault = Some(f.name().to_string());
    }
    let run = |req: Request| async {
        match check_token(&s, req.headers()) {
            Ok(()) => next.run(req).await,
            Err(e) => e.into_response(),
        }
    };
    let resp = match fault {
        None => run(req).await,
        Some(Fault::Latency { ms }) => {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            run(req).await
        }
        Some(Fault::Status {
            status,
            retry_after,
            code,
        }) => {
            let code = match code {
                Some(c) => AdminErrorCode::parse(&c),
                None => match (status, endpoint) {
                    (503, Endpoint::SpecResolution) => AdminErrorCode::SpecResolutionUnavailable,
                    (503, _) => AdminErrorCode::Unavailable,
                    (429, _) => AdminErrorCode::RateLimited,
                    _ => AdminErrorCode::Internal,
                },
            };
            let mut e = ApiError::new(code, format!("mock fault: injected HTTP {status}"));
            e.status = Some(status);
            e.retry_after = retry_after.map(|r| r.header_value());
            entry.committed = Some(false);
            e.into_response()
        }
        Some(Fault::CloseBeforeResponse) => {
            entry.committed = Some(false);
            return drop_connection(&s, entry, kill).await;
        }
        Some(Fault::CommitThenDrop) => {
            let inner = run(req).await;
            entry.committed = Some(inner.status().is_success());
            return drop_connection(&s, entry, kill).await;
        }
        Some(Fault::GarbageBody) => {
            let inner = run(req).await;
            entry.committed = Some(inner.status().is_success());
            (
                StatusCode::OK,
                [(header::CONTENT_TYPE, "application/json")],
                r#"{"accepted":tru"#,
            )
                .into_response()
        }
        Some(Fault::TruncatedBody) => {
            let inner = run(req).await;
            entry.committed = Some(inner.status().is_success());
            let (parts, body) = inner.into_parts();
            let bytes = axum::body::to_bytes(body, MAX_BODY_BYTES)
                .await
                .unwrap_or_default();
            let half = bytes.slice(0..bytes.len() / 2);
            // Half the body, a pause (so hyper flushes the head and that half to the
            // socket instead of discarding its buffer), then an error: hyper aborts the
            // connection mid-body and the client sees a truncated message.
            let stream = futures::stream::unfold(0u8, move |step| {
                let half = half.clone();
                async move {
                    match step {
                        0 => Some((Ok::<Bytes, std::io::Error>(half), 1)),
                        1 => {
                            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                            Some((
                                Err(std::io::Error::new(
                                    std::io::ErrorKind::ConnectionAborted,
                                    "mock fault: truncated body",
                                )),
                                2,
                            ))
                        }
                        _ => None,
                    }
                }
            });
            let mut parts = parts;
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::from_stream(stream))
        }
    };
    entry.status = resp.status().as_u16();
    // A refused call is still a sign of life (data model §9: every call refreshes
    // last_seen_at) — but not an unauthenticated one, and not when the database is what
    // failed.
    let refused_business = resp
        .extensions()
        .get::<ErrorMark>()
        .is_some_and(|ErrorMark(e)| !matches!(e.status(), 401 | 500..=599));
    if refused_business {
        if let Some(id) = entry.client_id.clone().filter(|c| visible_ascii(c, 128)) {
            if let Err(e) = s.db.call(move |c| store::touch(c, &id)).await {
                tracing::warn!(error = %e, "could not refresh last_seen_at");
            }
        }
    }
    if entry.fault.as_deref().is_some_and(|f| f != "latency") {
        entry.outcome = Outcome::Fault;
    } else if let Some(ErrorMark(e)) = resp.extensions().get::<ErrorMark>() {
        entry.outcome = if e.code == AdminErrorCode::IdempotencyConflict {
            Outcome::Conflict
        } else {
            Outcome::Rejected
        };
        entry.error_code = Some(e.code.as_str().to_string());
    } else if let Some(OutcomeMark(o)) = resp.extensions().get::<OutcomeMark>() {
        entry.outcome = *o;
    }
    s.journal.push(entry);
    resp
}

/// Ends the exchange without an answer. Over a real connection the connection task drops
/// the connection (the socket closes, no response bytes); in-process (no connection) the
/// answer is a 503 carrying `x-mock-fault: connection-dropped`, which an in-process
/// gateway must turn into a transport error.
async fn drop_connection(s: &Inner, mut entry: JournalEntry, kill: Option<KillSwitch>) -> Response {
    entry.outcome = Outcome::Fault;
    match kill {
        Some(k) => {
            entry.status = 0;
            s.journal.push(entry);
            k.fire();
            // Never answer: the connection task drops this future with the connection.
            std::future::pending::<()>().await;
            unreachable_response()
        }
        None => {
            let mut e = ApiError::new(
                AdminErrorCode::Unavailable,
                "mock fault: connection dropped (in-process marker)",
            );
            e.status = Some(503);
            let mut resp = e.into_response();
            resp.headers_mut()
                .insert(FAULT_HEADER, HeaderValue::from_static("connection-dropped"));
            entry.status = 503;
            s.journal.push(entry);
            resp
        }
    }
}

fn unreachable_response() -> Response {
    StatusCode::INTERNAL_SERVER_ERROR.into_response()
}

// ---------------------------------------------------------------------------------------
// request parsing helpers
// ---------------------------------------------------------------------------------------

fn visible_ascii(s: &str, max: usize) -> bool {
    !s.is_empty() && s.len() <= max && s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// `X-Client-Id`: 1–128 visible ASCII characters (see `openapi::CLIENT_ID_PATTERN`).
fn client_id(headers: &HeaderMap) -> Result<String, ApiError> {
    match headers.get("x-client-id").map(|v| v.to_str()) {
        None => Err(ApiError::new(
            AdminErrorCode::MissingClientId,
            "X-Client-Id header is required",
        )),
        Some(Ok(v)) if visible_ascii(v, 128) => Ok(v.to_string()),
        Some(_) => Err(ApiError::new(
            AdminErrorCode::MissingClientId,
            "X-Client-Id must be 1–128 visible ASCII characters",
        )),
    }
}

/// `Idempotency-Key`: 1–255 visible ASCII characters.
fn idempotency_key(headers: &HeaderMap) -> Result<String, ApiError> {
    match headers.get("idempotency-key").map(|v| v.to_str()) {
        None => Err(ApiError::new(
            AdminErrorCode::MissingIdempotencyKey,
            "Idempotency-Key header is required",
        )),
        Some(Ok(v)) if visible_ascii(v, 255) => Ok(v.to_string()),
        Some(_) => Err(ApiError::new(
            AdminErrorCode::InvalidIdempotencyKey,
            "Idempotency-Key must be 1–255 visible ASCII characters",
        )),
    }
}

/// The body as bytes, after checking the content type (415) and the read (400).
fn body_bytes(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime != "application/json" {
        return Err(ApiError::new(
            AdminErrorCode::UnsupportedMediaType,
            "Content-Type must be application/json",
        ));
    }
    body.map_err(|e| {
        let too_large = e.status() == StatusCode::PAYLOAD_TOO_LARGE;
        ApiError::new(
            AdminErrorCode::InvalidBody,
            if too_large {
                format!("request body larger than {MAX_BODY_BYTES} bytes")
            } else {
                "request body could not be read".to_string()
            },
        )
    })
}

fn json_body(headers: &HeaderMap, body: Result<Bytes, BytesRejection>) -> Result<Value, ApiError> {
    let bytes = body_bytes(headers, body)?;
    parse_object(&bytes)
}

/// One JSON object, with integral numbers written as floats (`3995.0`, `1e3`) read as the
/// integers they are: JSON has one number type and JSON Schema calls `1.0` an integer, so
/// the representation must not decide validity. Non-integral values stay floats and are
/// refused wherever an integer is required ("禁止 float" is about such values).
fn parse_object(bytes: &[u8]) -> Result<Value, ApiError> {
    let mut v = validate::json_object(bytes)?;
    integral_numbers(&mut v);
    Ok(v)
}

fn integral_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64() {
                // Strictly inside (-2^63, 2^63): an integer literal just below i64::MIN
                // (e.g. -9223372036854775809) is parsed as a float that rounds to exactly
                // -2^63 and must stay out of range, not snap to i64::MIN. (i64::MIN
                // written as an integer is an i64 already and never reaches this.)
                const TWO_63: f64 = 9_223_372_036_854_775_808.0;
                if f.fract() == 0.0 && f > -TWO_63 && f < TWO_63 {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(integral_numbers),
        Value::Object(m) => m.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

fn path_id(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    p.map(|Path(id)| id).map_err(|_| {
        ApiError::new(
            AdminErrorCode::InvalidBody,
            "task id in the path is not valid UTF-8",
        )
    })
}

fn answer(a: Answer) -> Response {
    let status = StatusCode::from_u16(a.status).unwrap_or(StatusCode::OK);
    let mut resp = (status, [(header::CONTENT_TYPE, "application/json")], a.body).into_response();
    resp.extensions_mut().insert(OutcomeMark(a.outcome));
    resp
}

fn json_response(status: StatusCode, v: Value) -> Response {
    (status, axum::Json(v)).into_response()
}

// ---------------------------------------------------------------------------------------
// client endpoints
// ---------------------------------------------------------------------------------------

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
async fn registration(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let client = client_id(&headers)?;
    let v = json_body(&headers, body)?;
    let profile = validate::client_profile(&v)?;
    let a =
        s.db.call(move |c| store::register(c, &client, &profile))
            .await
            .map_err(|e| ApiError::from_store(e, Some(AdminErrorCode::ClientRegisterFailed)))?;
    Ok(answer(a))
}

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
async fn claim(
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
    let mut resp = match claimed {
        Some(body) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    };
    resp.extensions_mut().insert(OutcomeMark(Outcome::Fresh));
    Ok(resp)
}

/// §6: submit a result; idempotent by key; accepted for cancelled and reassigned tasks.
#[utoipa::path(
    post,
    path = "/api/v1/client/tasks/{task_id}/result",
    tag = "client",
    params(
        ("task_id" = String, Path, description = "Opaque task id, sent back verbatim"),
        ("X-Client-Id" = String, Header, description = "Stable client id (1–128 visible ASCII)",
            min_length = 1, max_length = 128, pattern = "^[!-~]{1,128}$"),
        ("Idempotency-Key" = String, Header, description = "`{task_id}:{attempt_id}:result-v1`",
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
async fn submit_result(
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
        ("Idempotency-Key" = String, Header, description = "`{task_id}:{attempt_id}:failure-v1`",
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
async fn submit_failure(
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
    submit: fn(&mut rusqlite::Connection, &SubmitCtx<'_>, &R) -> Result<Answer, StoreError>,
) -> Result<Response, ApiError>
where
    R: Send + 'static,
    ApiError: From<E>,
{
    let task_id = path_id(path)?;
    let client = client_id(&headers)?;
    let key = idempotency_key(&headers)?;
    let bytes = body_bytes(&headers, body)?;
    let v = parse_object(&bytes)?;
    let req = check(&v)?;
    let hash = store::canonical_hash(&v);
    let raw = String::from_utf8_lossy(&bytes).into_owned();
    let a =
        s.db.call(move |c| {
            let ctx = SubmitCtx {
                task_id: &task_id,
                client_id: &client,
                key: &key,
                request_hash: &hash,
                raw_body: &raw,
            };
            submit(c, &ctx, &req)
        })
        .await?;
    Ok(answer(a))
}

/// §7.1: one-shot purchase spec resolution.
#[utoipa::path(
    post,
    path = "/api/v1/client/tasks/{task_id}/spec-resolution",
    tag = "client",
    params(
        ("task_id" = String, Path, description = "Opaque task id, sent back verbatim"),
        ("X-Client-Id" = String, Header, description = "Stable client id (1–128 visible ASCII)",
            min_length = 1, max_length = 128, pattern = "^[!-~]{1,128}$"),
        ("Idempotency-Key" = String, Header, description = "`spec-resolution-v1:` + sha256 of the framed identity (§7.1)",
            min_length = 1, max_length = 255, pattern = "^[!-~]{1,255}$"),
        ("X-Request-Id" = Option<String>, Header, description = "Per-attempt request id"),
    ),
    request_body(content = doc::SpecResolutionRequestDoc, content_type = "application/json"),
    responses(
        (status = 200, description = "The persisted decision (matched, uncertain, rejected or failed)", body = doc::SpecResolutionResponseDoc),
        (status = 400, description = "INVALID_BODY (bad JSON or over 64 KiB), INVALID_SPEC_RESOLUTION_SCHEMA, MISSING_CLIENT_ID, MISSING_IDEMPOTENCY_KEY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED", body = doc::ErrorEnvelopeDoc),
        (status = 403, description = "TASK_NOT_CLAIMED_BY_CLIENT", body = doc::ErrorEnvelopeDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 409, description = "TASK_VERSION_CONFLICT or IDEMPOTENCY_CONFLICT", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 422, description = "INVALID_SPEC_RESOLUTION_REQUEST, SPEC_RESOLUTION_HASH_MISMATCH, TASK_NOT_PURCHASE or PDD_GOODS_MISMATCH", body = doc::ErrorEnvelopeDoc),
        (status = 503, description = "SPEC_RESOLUTION_UNAVAILABLE (before the record is stored; retry the same request)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    )
)]
async fn spec_resolution(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let task_id = path_id(path)?;
    let client = client_id(&headers)?;
    let key = idempotency_key(&headers)?;
    let bytes = body_bytes(&headers, body)?;
    if bytes.len() > validate::SPEC_RESOLUTION_MAX_BODY_BYTES {
        return Err(ApiError::new(
            AdminErrorCode::InvalidBody,
            format!(
                "body is {} bytes; at most {} allowed",
                bytes.len(),
                validate::SPEC_RESOLUTION_MAX_BODY_BYTES
            ),
        ));
    }
    let v = parse_object(&bytes)?;
    let req = validate::spec_resolution_value(&v)?;
    validate::spec_resolution_hashes(&task_id, &key, &req)?;
    let hash = store::canonical_hash(&v);
    let unavailable = Some(AdminErrorCode::SpecResolutionUnavailable);

    let over = s.spec_override(&task_id, &req.pdd_goods_id);
    if over
        .as_ref()
        .is_some_and(|o| o.outcome == resolver::ForcedOutcome::Unavailable)
    {
        let mut e = ApiError::new(
            AdminErrorCode::SpecResolutionUnavailable,
            "spec resolution is unavailable (operator override); nothing was stored",
        );
        e.retry_after = Some("1".into());
        return Err(e);
    }

    // Transaction 1: checks + the observation.
    let (t1, c1, k1, h1, r1) = (
        task_id.clone(),
        client.clone(),
        key.clone(),
        hash.clone(),
        req.clone(),
    );
    let observed =
        s.db.call(move |c| {
            let ctx = SubmitCtx {
                task_id: &t1,
                client_id: &c1,
                key: &k1,
                request_hash: &h1,
                raw_body: "",
            };
            store::spec_observe(c, &ctx, &r1)
        })
        .await
        .map_err(|e| ApiError::from_store(e, unavailable.clone()))?;
    let (resolution_id, reusable) = match observed {
        Observed::Replay(a) => return Ok(answer(a)),
        Observed::Resolve {
            resolution_id,
            reusable,
        } => (resolution_id, reusable),
    };

    // The resolver: outside any transaction (a real Admin may call a model here).
    // Precedence: the operator's override, then an earlier audited match of the same
    // snapshot (`reused`), then the rules.
    let rules = || resolver::resolve(&req.target_size, &req.candidates);
    let decision = match (&over, reusable) {
        (Some(o), _) => resolver::forced(o, &req).unwrap_or_else(rules),
        (None, Some((candidate_id, confidence))) => {
            resolver::reused(&req, &candidate_id, confidence).unwrap_or_else(rules)
        }
        (None, None) => rules(),
    };
    let matched = decision
        .candidate
        .and_then(|i| req.candidates.get(i))
        .cloned();
    let resolved_at = format_utc_millis(chrono::Utc::now());
    let source = decision.source.map(|s| match s {
        SpecSource::Rule => "rule",
        SpecSource::Ai => "ai",
        SpecSource::Reused => "reused",
        SpecSource::Unknown => "rule",
    });
    let outcome = if decision.outcome == SpecOutcome::Matched && matched.is_none() {
        SpecOutcome::Failed
    } else {
        decision.outcome
    };
    let reason: String = decision.reason.chars().take(500).collect();
    let body = serde_json::to_vec(&json!({
        "schema_version": 1,
        "resolution_id": resolution_id,
        "outcome": outcome.as_str(),
        "source": source,
        "candidate_snapshot_hash": req.candidate_snapshot_hash,
        "match": matched,
        "confidence_bps": decision.confidence_bps,
        "reason": reason,
        "resolved_at": resolved_at,
    }))
    .map_err(|e| ApiError::from_store(e.into(), unavailable.clone()))?;

    // Transaction 2: the decision + its replayable answer + the idempotency row.
    let match_id = matched.map(|m| m.candidate_id);
    let confidence = decision.confidence_bps;
    let a =
        s.db.call(move |c| {
            let ctx = SubmitCtx {
                task_id: &task_id,
                client_id: &client,
                key: &key,
                request_hash: &hash,
                raw_body: "",
            };
            let d = StoredDecision {
                resolution_id: &resolution_id,
                outcome: outcome.as_str(),
                source,
                match_candidate_id: match_id.as_deref(),
                confidence_bps: confidence,
                reason: &reason,
                resolved_at: &resolved_at,
                body: &body,
            };
            store::spec_decide(c, &ctx, &d)
        })
        .await
        .map_err(|e| ApiError::from_store(e, unavailable))?;
    Ok(answer(a))
}

// ---------------------------------------------------------------------------------------
// operator API (decisions.md §10 and the mock's own controls)
// ---------------------------------------------------------------------------------------

/// Creates a task (decisions.md §10).
#[utoipa::path(post, path = "/api/v1/admin/tasks", tag = "operator",
    request_body(content = doc::CreateTaskDoc, content_type = "application/json"),
    responses(
        (status = 201, description = "Created", body = doc::OperatorTaskEnvelopeDoc),
        (status = 409, description = "TASK_ALREADY_EXISTS", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 422, description = "INVALID_TASK_PAYLOAD (payload rules of contract §5)", body = doc::ErrorEnvelopeDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
async fn op_create_task(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let v = json_body(&headers, body)?;
    let task = s.db.call(move |c| store::create_task(c, &v)).await?;
    Ok(json_response(StatusCode::CREATED, task))
}

/// Every task, oldest first.
#[utoipa::path(get, path = "/api/v1/admin/tasks", tag = "operator",
    responses((status = 200, description = "All tasks", body = doc::OperatorTaskListDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
async fn op_list_tasks(State(s): State<AppState>) -> Result<Response, ApiError> {
    let v = s.db.call(store::list_tasks).await?;
    Ok(json_response(StatusCode::OK, v))
}

/// One task with its claim history and every accepted result and failure.
#[utoipa::path(get, path = "/api/v1/admin/tasks/{task_id}", tag = "operator",
    params(("task_id" = String, Path, description = "Task id")),
    responses((status = 200, description = "The task", body = doc::OperatorTaskDetailDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
async fn op_get_task(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_id(path)?;
    let v = s.db.call(move |c| store::get_task(c, &id)).await?;
    Ok(json_response(StatusCode::OK, v))
}

/// Cancels a task (idempotent). Clients are not told; their submissions stay accepted.
#[utoipa::path(post, path = "/api/v1/admin/tasks/{task_id}/cancel", tag = "operator",
    params(("task_id" = String, Path, description = "Task id")),
    responses((status = 200, description = "The task", body = doc::OperatorTaskEnvelopeDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
async fn op_cancel_task(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_id(path)?;
    let v = s.db.call(move |c| store::cancel_task(c, &id)).await?;
    Ok(json_response(StatusCode::OK, v))
}

/// Makes a task claimable again by one client (or by anyone with `null`).
#[utoipa::path(post, path = "/api/v1/admin/tasks/{task_id}/reassign", tag = "operator",
    params(("task_id" = String, Path, description = "Task id")),
    request_body(content = doc::ReassignDoc, content_type = "application/json"),
    responses((status = 200, description = "The task", body = doc::OperatorTaskEnvelopeDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
async fn op_reassign_task(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let id = path_id(path)?;
    let v = json_body(&headers, body)?;
    let client = reassign_target(&v)?;
    let v =
        s.db.call(move |c| store::reassign_task(c, &id, client.as_deref()))
            .await?;
    Ok(json_response(StatusCode::OK, v))
}

pub(crate) fn reassign_target(v: &Value) -> Result<Option<String>, ApiError> {
    match v.get("client_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if visible_ascii(s, 128) => Ok(Some(s.clone())),
        _ => Err(ApiError::new(
            AdminErrorCode::InvalidBody,
            "client_id must be a client id or null",
        )
        .with_detail("field", "client_id")),
    }
}

/// Known clients; `online` is derived from `last_seen_at` (10 minutes).
#[utoipa::path(get, path = "/api/v1/admin/clients", tag = "operator",
    responses((status = 200, description = "Clients", body = doc::OperatorClientsDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
async fn op_clients(State(s): State<AppState>) -> Result<Response, ApiError> {
    let v = s.db.call(store::list_clients).await?;
    Ok(json_response(StatusCode::OK, v))
}

/// The `pdd_products` rows (collect results).
#[utoipa::path(get, path = "/api/v1/admin/products", tag = "operator",
    responses((status = 200, description = "Products", body = doc::OperatorProductsDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
async fn op_products(State(s): State<AppState>) -> Result<Response, ApiError> {
    let v = s.db.call(store::list_products).await?;
    Ok(json_response(StatusCode::OK, v))
}

/// The stored §7.1 records (observation and decision).
#[utoipa::path(get, path = "/api/v1/admin/spec-resolutions", tag = "operator",
    responses((status = 200, description = "Spec resolutions", body = doc::OperatorSpecResolutionsDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
async fn op_spec_resolutions(State(s): State<AppState>) -> Result<Response, ApiError> {
    let v = s.db.call(store::list_spec_resolutions).await?;
    Ok(json_response(StatusCode::OK, v))
}

async fn op_add_fault(
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

async fn op_list_faults(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, json!({ "faults": s.faults.list() }))
}

async fn op_clear_faults(State(s): State<AppState>) -> Response {
    s.faults.clear();
    StatusCode::NO_CONTENT.into_response()
}

async fn op_add_override(
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

async fn op_list_overrides(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, json!({ "overrides": s.overrides() }))
}

async fn op_clear_overrides(State(s): State<AppState>) -> Response {
    s.clear_overrides();
    StatusCode::NO_CONTENT.into_response()
}

async fn op_journal(State(s): State<AppState>) -> Response {
    json_response(StatusCode::OK, json!({ "entries": s.journal.entries() }))
}

async fn op_clear_journal(State(s): State<AppState>) -> Response {
    s.journal.clear();
    StatusCode::NO_CONTENT.into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_floats_become_integers_and_nothing_else_changes() {
        let mut v: Value = serde_json::from_str(
            r#"{"a": 3995.0, "b": [1e3, 12.5], "c": -9223372036854775809,
                "d": 3780336783387706.0, "e": "7.0", "f": 18446744073709551615}"#,
        )
        .unwrap();
        integral_numbers(&mut v);
        assert_eq!(v["a"].as_i64(), Some(3995));
        assert_eq!(v["b"][0].as_i64(), Some(1000));
        assert!(v["b"][1].is_f64());
        assert!(v["c"].is_f64(), "out of range stays out of range");
        assert_eq!(v["d"].as_i64(), Some(3_780_336_783_387_706));
        assert_eq!(v["e"], "7.0");
        assert!(v["f"].is_u64());
    }

    #[test]
    fn endpoints_are_recognised_by_method_and_path() {
        let e = |m: Method, p: &str| endpoint_of(&m, p);
        assert_eq!(
            e(Method::POST, "/api/v1/client/tasks/cg1/result"),
            Some((Endpoint::Result, Some("cg1".into())))
        );
        assert_eq!(
            e(Method::POST, "/api/v1/client/tasks/claim"),
            Some((Endpoint::Claim, None))
        );
        assert_eq!(e(Method::GET, "/api/v1/client/tasks/claim"), None);
        assert_eq!(e(Method::POST, "/api/v1/admin/tasks"), None);
    }
}
