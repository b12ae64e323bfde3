//! The console's one router: every page's `routes()` merged (a new page adds one
//! `.merge(...)` here), behind the guard and the security headers.

use axum::Router;

use super::state::ConsoleState;
use super::{actions, auth_routes, guard, history, layout, metrics, settings, status};

/// The console: every page's routes, behind the guard (Host/Origin, CSRF, session) and
/// the security headers.
pub fn router(state: ConsoleState) -> Router {
    Router::new()
        .merge(metrics::routes())
        .merge(layout::routes())
        .merge(status::routes())
        .merge(actions::routes())
        .merge(settings::routes())
        .merge(history::routes())
        .merge(auth_routes::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::guard,
        ))
        .layer(axum::middleware::from_fn(layout::security_headers))
        .with_state(state)
}

/// Serves the console on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: ConsoleState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    if let Err(e) = axum::serve(listener, router(state))
        .with_graceful_shutdown(shutdown)
        .await
    {
        tracing::warn!(error = %e, "console stopped");
    }
}
