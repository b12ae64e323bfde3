//! Our own accept loop: one hyper-util connection per socket, each with a kill switch.
//!
//! axum's `serve` cannot drop one connection on purpose, and the connection faults
//! ("close before responding", "commit, then drop") need exactly that. Each accepted
//! socket gets a [`KillSwitch`] that travels to the handlers as a request extension; a
//! handler that must drop the connection fires it and never answers, and the connection
//! task, which races the connection against the switch, drops the connection future: the
//! socket closes with no response bytes written.

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::future::Future;
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
                    router.clone().oneshot(req.map(axum::body::Body::new))
                },
            );
            let builder = auto::Builder::new(TokioExecutor::new());
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
