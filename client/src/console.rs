//! The console's listener (issue 12 item 7; issue 13 builds the web console on it):
//! `GET /metrics` (Prometheus text format) and `GET /healthz`, nothing else yet.
//!
//! **Loopback only** until the console has a password (issue 13): a non-loopback
//! address is refused. Several clients may run on one host (one per phone), so the
//! default is the first free port of [`DEFAULT_PORTS`] (9464 is the port commonly used
//! by Prometheus exporters), and a port that is taken never stops the run: the client
//! logs it and runs without a console.
//!
//! Metrics: `cmautobuy_task_runs_total{type,outcome,code}` (runs by outcome and failure
//! code, counted in the store, so they survive restarts), `cmautobuy_outbox_items{state}`,
//! `cmautobuy_paused{reason}` (0/1: `device`, `account`, `alert`),
//! `cmautobuy_device_paused_seconds`, `cmautobuy_open_alerts{kind}`,
//! `cmautobuy_device_call_seconds{op}` (histogram of ADB round trips, this process),
//! `cmautobuy_device_call_errors_total{op}`, `cmautobuy_webhook_deliveries{state}`,
//! `cmautobuy_build_info{version}`, `cmautobuy_start_time_seconds`.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::RangeInclusive;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use chrono::{DateTime, Utc};

use crate::metrics::{self, Exposition};
use crate::store::{Store, StoreError};

/// The ports tried, in order, when no address is configured.
pub const DEFAULT_PORTS: RangeInclusive<u16> = 9464..=9479;

/// Where the console listens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConsoleAddr {
    /// `--no-console` / `console_addr = "off"`.
    Off,
    /// 127.0.0.1, the first free port of [`DEFAULT_PORTS`].
    Default,
    /// Exactly this address (port 0: any free port).
    At(SocketAddr),
}

impl ConsoleAddr {
    /// `off`, `HOST:PORT` with a loopback IP (or `localhost`), or a bare port.
    pub fn parse(s: &str) -> Result<ConsoleAddr, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("off") || s.eq_ignore_ascii_case("none") {
            return Ok(ConsoleAddr::Off);
        }
        let addr = if let Ok(port) = s.parse::<u16>() {
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        } else if let Some(port) = s.strip_prefix("localhost:") {
            let port = port
                .parse::<u16>()
                .map_err(|_| format!("{s:?}: the port is not a number"))?;
            SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port)
        } else {
            s.parse::<SocketAddr>()
                .map_err(|_| format!("{s:?} is not HOST:PORT (e.g. 127.0.0.1:9464) or off"))?
        };
        if !addr.ip().is_loopback() {
            return Err(format!(
                "{addr}: the console has no password yet (issue 13), so it listens on a loopback address only (127.0.0.1:PORT or [::1]:PORT)"
            ));
        }
        Ok(ConsoleAddr::At(addr))
    }
}

/// Binds the console's listener; `None` (with a warning) when it cannot: a taken port
/// never stops the client.
pub fn bind(addr: ConsoleAddr) -> Option<std::net::TcpListener> {
    let candidates: Vec<SocketAddr> = match addr {
        ConsoleAddr::Off => return None,
        ConsoleAddr::At(a) => vec![a],
        ConsoleAddr::Default => DEFAULT_PORTS
            .map(|p| SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), p))
            .collect(),
    };
    let mut last = None;
    for a in &candidates {
        match std::net::TcpListener::bind(a) {
            Ok(l) => match l.set_nonblocking(true) {
                Ok(()) => return Some(l),
                Err(e) => last = Some((*a, e)),
            },
            Err(e) => last = Some((*a, e)),
        }
    }
    if let Some((a, e)) = last {
        tracing::warn!(addr = %a, tried = candidates.len(), error = %e, "console not started (address taken?); running without /metrics");
    }
    None
}

/// The console's routes over the store.
pub fn router(store: Store) -> Router {
    let started = Utc::now();
    Router::new()
        .route("/metrics", get(metrics_route))
        .route("/healthz", get(|| async { "ok\n" }))
        .with_state((store, started))
}

/// Serves the console on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    store: Store,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    if let Err(e) = axum::serve(listener, router(store))
        .with_graceful_shutdown(shutdown)
        .await
    {
        tracing::warn!(error = %e, "console stopped");
    }
}

async fn metrics_route(State((store, started)): State<(Store, DateTime<Utc>)>) -> Response {
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
        .any(|(k, _)| k == crate::runner::ALERT_ACCOUNT);
    let other = c
        .open_alerts
        .iter()
        .any(|(k, _)| k != crate::runner::ALERT_ACCOUNT);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_addresses_are_accepted() {
        assert_eq!(ConsoleAddr::parse("off").unwrap(), ConsoleAddr::Off);
        assert_eq!(
            ConsoleAddr::parse("127.0.0.1:9464").unwrap(),
            ConsoleAddr::At("127.0.0.1:9464".parse().unwrap())
        );
        assert_eq!(
            ConsoleAddr::parse("localhost:0").unwrap(),
            ConsoleAddr::At("127.0.0.1:0".parse().unwrap())
        );
        assert_eq!(
            ConsoleAddr::parse("9470").unwrap(),
            ConsoleAddr::At("127.0.0.1:9470".parse().unwrap())
        );
        assert!(ConsoleAddr::parse("[::1]:9464").is_ok());
        for bad in [
            "0.0.0.0:9464",
            "192.168.1.5:9464",
            "[::]:1",
            "example.com:1",
            "x",
        ] {
            assert!(ConsoleAddr::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_taken_port_is_not_fatal() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = held.local_addr().unwrap();
        assert!(bind(ConsoleAddr::At(addr)).is_none());
        assert!(bind(ConsoleAddr::Off).is_none());
        assert!(bind(ConsoleAddr::At("127.0.0.1:0".parse().unwrap())).is_some());
    }
}
