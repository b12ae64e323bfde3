//! [`MockAdmin`]: open the database, build the router, serve, hand out the operator.

use crate::config::MockAdminConfig;
use crate::operator::Operator;
use crate::state::Inner;
use crate::{db, http, server};
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// The mock Admin. Cheap to clone: every clone shares the same database and state.
#[derive(Clone)]
pub struct MockAdmin {
    inner: Arc<Inner>,
}

impl MockAdmin {
    /// Opens the database, runs the migrations and the schema self-check (refusing to
    /// start on a missing table), and starts the database thread.
    pub fn open(cfg: MockAdminConfig) -> anyhow::Result<MockAdmin> {
        let db = db::Db::start(&cfg.db_path, Duration::from_millis(cfg.busy_timeout_ms))
            .map_err(|e| anyhow::anyhow!("cannot open the mock Admin database: {e}"))?;
        Ok(MockAdmin {
            inner: Arc::new(Inner::new(db, cfg)),
        })
    }

    /// The full HTTP surface: client API, operator API and `/openapi.json`. Usable
    /// in-process with `tower::ServiceExt::oneshot`.
    pub fn router(&self) -> axum::Router {
        http::build(self.inner.clone())
    }

    /// Serves on a bound listener until `shutdown` completes (see [`server`]).
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let read_timeout = self.read_timeout();
        server::serve(self.router(), listener, shutdown, read_timeout).await
    }

    fn read_timeout(&self) -> Duration {
        Duration::from_millis(self.inner.cfg.request_read_timeout_ms.max(1))
    }

    /// Serves like [`MockAdmin::serve`], every answer's `Date` header `offset_secs` off
    /// the real clock: an Admin whose clock is wrong, for the client's clock skew check.
    pub async fn serve_with_date_offset(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
        offset_secs: i64,
    ) -> anyhow::Result<()> {
        let router = self.router().layer(axum::middleware::map_response(
            move |mut r: axum::response::Response| async move {
                let at = chrono::Utc::now() + chrono::Duration::seconds(offset_secs);
                let date = at.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
                if let Ok(v) = axum::http::HeaderValue::from_str(&date) {
                    r.headers_mut().insert(axum::http::header::DATE, v);
                }
                r
            },
        ));
        server::serve(router, listener, shutdown, self.read_timeout()).await
    }

    /// Typed in-process operator access.
    pub fn operator(&self) -> Operator {
        Operator::new(self.inner.clone())
    }
}
