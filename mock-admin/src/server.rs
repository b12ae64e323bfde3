//! Our own accept loop: one hyper-util connection per socket, each with a kill switch.
//!
//! axum's `serve` cannot drop one connection on purpose, and the connection faults
//! ("close before responding", "commit, then drop") need exactly that. Each accepted
//! socket gets a [`KillSwitch`] that travels to the handlers as a request extension; a
//! handler that must drop the connection fires it and never answers, and the connection
//! task, which races the connection against the switch, drops the connection future: the
//! socket closes with no response bytes written.
//!
//! A request must arrive whole within the read timeout (`request_read_timeout_ms`, 30 s
//! by default): headers that stall are cut by hyper's header timeout (the connection is
//! closed), a body that stalls after its headers is answered `408 REQUEST_TIMEOUT` (§3
//! envelope) and the connection closed. A half-sent request never holds a connection
//! task for ever.

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::{watch, Notify};
use tower::ServiceExt;

/// Drops the connection its request arrived on (see the module doc).
#[derive(Clone)]
pub struct KillSwitch(Arc<Notify>);

impl KillSwitch {
    pub fn fire(&self) {
        // notify_one stores a permit when nobody waits yet, so the signal is never lost.
        self.0.notify_one();
    }
}

/// Serves `router` on `listener` until `shutdown` completes, then finishes the requests
/// in flight (graceful shutdown of every connection) and returns.
pub async fn serve(
    router: Router,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
    read_timeout: std::time::Duration,
) -> anyhow::Result<()> {
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut shutdown = Box::pin(shutdown);
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let (stream, _peer) = tokio::select! {
            _ = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Per-connection errors (e.g. too many open files) must not stop the
                    // server; back off briefly so a persistent error does not spin.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                    continue;
                }
            },
        };
        // Small request/response exchanges: do not let Nagle hold them back.
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let mut stop = stop_rx.clone();
        tasks.spawn(async move {
            let kill = KillSwitch(Arc::new(Notify::new()));
            let k = kill.clone();
            let svc = hyper::service::service_fn(
                move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(k.clone());
                    let router = router.clone();
                    async move {
                        // The body must end by the deadline (the headers already came).
                        let late = Arc::new(AtomicBool::new(false));
                        let (parts, incoming) = req.into_parts();
                        let body = deadline_body(
                            incoming,
                            tokio::time::Instant::now() + read_timeout,
                            late.clone(),
                        );
                        let resp = router
                            .oneshot(hyper::Request::from_parts(parts, body))
                            .await;
                        if late.load(Ordering::SeqCst) {
                            return Ok(request_timeout(read_timeout));
                        }
                        resp
                    }
                },
            );
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(TokioTimer::new())
                .header_read_timeout(read_timeout);
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            let mut stopping = false;
            loop {
                tokio::select! {
                    _ = conn.as_mut() => break,
                    _ = kill.0.notified() => break, // drop the connection: socket closes
                    changed = stop.changed(), if !stopping => {
                        stopping = true;
                        if changed.is_ok() {
                            conn.as_mut().graceful_shutdown();
                        }
                    }
                }
            }
        });
        // Reap finished connection tasks so the set does not grow without bound.
        while tasks.try_join_next().is_some() {}
    }
    let _ = stop_tx.send(true);
    while tasks.join_next().await.is_some() {}
    Ok(())
}

/// The request's body, cut with an error at `deadline` (`late` set): a client that sent
/// its headers and then stalls does not hold the handler for ever.
fn deadline_body(
    incoming: hyper::body::Incoming,
    deadline: tokio::time::Instant,
    late: Arc<AtomicBool>,
) -> axum::body::Body {
    use futures::StreamExt;
    let stream = axum::body::Body::new(incoming).into_data_stream();
    let cut = futures::stream::unfold(Some(stream), move |stream| {
        let late = late.clone();
        async move {
            let mut stream = stream?;
            match tokio::time::timeout_at(deadline, stream.next()).await {
                Ok(Some(item)) => Some((item, Some(stream))),
                Ok(None) => None,
                Err(_) => {
                    late.store(true, Ordering::SeqCst);
                    let e = std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the request body did not arrive in time",
                    );
                    Some((Err(axum::Error::new(e)), None))
                }
            }
        }
    });
    axum::body::Body::from_stream(cut)
}

/// `408` in the §3 envelope, and the connection closed after it (what is left of the
/// request on the socket cannot be read as the next one).
fn request_timeout(after: std::time::Duration) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mut e = crate::error::ApiError::new(
        cmautobuy_contract::AdminErrorCode::parse("REQUEST_TIMEOUT"),
        format!("the request was not received whole within {after:?}"),
    );
    e.status = Some(408);
    let mut r = e.into_response();
    r.headers_mut().insert(
        axum::http::header::CONNECTION,
        axum::http::HeaderValue::from_static("close"),
    );
    r
}
