//! `GET /metrics` (Prometheus text format) and `GET /healthz`.
//!
//! Metrics: `cmautobuy_task_runs_total{type,outcome,code}` (runs by outcome and failure
//! code, counted in the store, so they survive restarts), `cmautobuy_outbox_items{state}`,
//! `cmautobuy_paused{reason}` (0/1: `device`, `account`, `alert`),
//! `cmautobuy_device_paused_seconds`, `cmautobuy_open_alerts{kind}`,
//! `cmautobuy_device_call_seconds{op}` (histogram of ADB round trips, this process),
//! `cmautobuy_device_call_errors_total{op}`, `cmautobuy_webhook_deliveries{state}`,
//! `cmautobuy_build_info{version}`, `cmautobuy_start_time_seconds`.
//!
//! With several workers the store of the first one is rendered (one store per process
//! today).

use crate::alert::AlertKind;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use chrono::{DateTime, Utc};

use super::state::ConsoleState;
use crate::metrics::{self, Exposition};
use crate::store::{Store, StoreError};

/// `/metrics` and `/healthz`.
pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/metrics", get(metrics_route))
        .route("/healthz", get(|| async { "ok\n" }))
}

async fn metrics_route(State(state): State<ConsoleState>) -> Response {
    let Some(store) = state.workers.first().map(|w| w.store.clone()) else {
        return (StatusCode::SERVICE_UNAVAILABLE, "no worker\n").into_response();
    };
    let started = state.started;
    let rendered = tokio::task::spawn_blocking(move || render(&store, started, Utc::now())).await;
    match rendered {
        Ok(Ok(text)) => ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], text).into_response(),
        Ok(Err(e)) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("store unavailable: {e}\n"),
        )
            .into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "metrics failed\n").into_response(),
    }
}

/// The `/metrics` text.
pub fn render(
    store: &Store,
    started: DateTime<Utc>,
    now: DateTime<Utc>,
) -> Result<String, StoreError> {
    let c = store.metrics_counts()?;
    let pause = store.device_pause()?;
    let mut e = Exposition::new();

    e.family("cmautobuy_build_info", "gauge", "The client's version.");
    e.sample(
        "cmautobuy_build_info",
        &[("version", env!("CARGO_PKG_VERSION"))],
        1.0,
    );
    e.family(
        "cmautobuy_start_time_seconds",
        "gauge",
        "When this process started serving metrics (Unix time).",
    );
    e.sample(
        "cmautobuy_start_time_seconds",
        &[],
        started.timestamp() as f64,
    );

    e.family(
        "cmautobuy_task_runs_total",
        "counter",
        "Task runs by task type, outcome and failure code (the store's whole history).",
    );
    for (ty, label, n) in &c.runs {
        let (outcome, code) = label.split_once(':').unwrap_or((label.as_str(), ""));
        e.sample(
            "cmautobuy_task_runs_total",
            &[("type", ty), ("outcome", outcome), ("code", code)],
            *n as f64,
        );
    }

    e.family(
        "cmautobuy_outbox_items",
        "gauge",
        "Outbox items by state (pending and sent: not yet accepted; parked: waits for the operator).",
    );
    for state in ["pending", "sent", "accepted", "parked"] {
        let n = c.outbox.iter().find(|(s, _)| s == state).map_or(0, |x| x.1);
        e.sample("cmautobuy_outbox_items", &[("state", state)], n as f64);
    }

    let open: i64 = c.open_alerts.iter().map(|x| x.1).sum();
    let account = c
        .open_alerts
        .iter()
        .any(|(k, _)| k == AlertKind::AccountPaused.as_str());
    let other = c
        .open_alerts
        .iter()
        .any(|(k, _)| k != AlertKind::AccountPaused.as_str());
    e.family(
        "cmautobuy_paused",
        "gauge",
        "1 when claiming is paused: device (the phone does not answer; resumes by itself), account (account trouble, until ack), alert (another operator alert, until ack).",
    );
    e.sample(
        "cmautobuy_paused",
        &[("reason", "device")],
        flag(pause.is_some()),
    );
    e.sample("cmautobuy_paused", &[("reason", "account")], flag(account));
    e.sample("cmautobuy_paused", &[("reason", "alert")], flag(other));
    e.family(
        "cmautobuy_device_paused_seconds",
        "gauge",
        "How long the worker has been paused for its phone (0 when not paused).",
    );
    let paused_for = pause
        .as_ref()
        .and_then(|p| DateTime::parse_from_rfc3339(&p.since).ok())
        .map_or(0, |t| (now - t.with_timezone(&Utc)).num_seconds().max(0));
    e.sample("cmautobuy_device_paused_seconds", &[], paused_for as f64);
    e.family(
        "cmautobuy_open_alerts",
        "gauge",
        "Open operator alerts by kind (each stops claiming until acknowledged).",
    );
    for (kind, n) in &c.open_alerts {
        e.sample("cmautobuy_open_alerts", &[("kind", kind)], *n as f64);
    }
    if open == 0 {
        e.sample("cmautobuy_open_alerts", &[("kind", "")], 0.0);
    }

    let calls = metrics::device_calls();
    e.family(
        "cmautobuy_device_call_seconds",
        "histogram",
        "ADB round trips to the phone by operation, this process.",
    );
    for (op, h) in &calls {
        e.histogram("cmautobuy_device_call_seconds", &[("op", op)], h);
    }
    e.family(
        "cmautobuy_device_call_errors_total",
        "counter",
        "ADB round trips that failed (deadline, offline, …) by operation, this process.",
    );
    for (op, h) in &calls {
        e.sample(
            "cmautobuy_device_call_errors_total",
            &[("op", op)],
            h.errors as f64,
        );
    }

    e.family(
        "cmautobuy_webhook_deliveries",
        "gauge",
        "Webhook deliveries by state (pending: queued or retrying; given_up: after N tries).",
    );
    for state in ["pending", "delivered", "given_up"] {
        let n = c
            .webhooks
            .iter()
            .find(|(s, _)| s == state)
            .map_or(0, |x| x.1);
        e.sample(
            "cmautobuy_webhook_deliveries",
            &[("state", state)],
            n as f64,
        );
    }
    Ok(e.finish())
}

fn flag(b: bool) -> f64 {
    if b {
        1.0
    } else {
        0.0
    }
}
