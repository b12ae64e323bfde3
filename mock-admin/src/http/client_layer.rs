//! The layer on the client endpoints (§4.1–§7.1): bearer token, fault plans and the
//! request journal. A refused call still refreshes the client's `last_seen_at`.

use super::auth::check_token;
use super::extract::{visible_ascii, MAX_BODY_BYTES};
use crate::endpoint::Endpoint;
use crate::error::{ApiError, ErrorMark};
use crate::faults::Fault;
use crate::journal::{JournalEntry, Outcome, OutcomeMark};
use crate::server::KillSwitch;
use crate::state::{AppState, Inner};
use crate::store;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use cmautobuy_contract::time::format_utc_millis;
use cmautobuy_contract::AdminErrorCode;

/// Response header that marks an in-process connection fault (see README).
pub const FAULT_HEADER: &str = "x-mock-fault";

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

/// A header as text: UTF-8 values included (an `Idempotency-Key` may hold them).
fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| std::str::from_utf8(v.as_bytes()).ok())
        .map(str::to_string)
}

/// Client endpoints: token, fault plans, journal.
pub(crate) async fn client_layer(State(s): State<AppState>, req: Request, next: Next) -> Response {
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

#[cfg(test)]
mod tests {
    use super::*;

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
