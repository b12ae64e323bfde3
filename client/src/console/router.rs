//! The console's one router: every page's `routes()` merged (a new page adds one
//! `.merge(...)` here), behind the guard and the security headers.

use axum::Router;

use super::state::ConsoleState;
use super::{actions, auth_routes, guard, history, layout, metrics, screens, settings, status};

/// The console: every page's routes, behind the guard (Host/Origin, CSRF, session), the
/// security headers and the secret scrubber ([`layout::scrub_secrets`]).
pub fn router(state: ConsoleState) -> Router {
    Router::new()
        .merge(metrics::routes())
        .merge(layout::routes())
        .merge(status::routes())
        .merge(screens::routes())
        .merge(actions::routes())
        .merge(settings::routes())
        .merge(history::routes())
        .merge(auth_routes::routes())
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::guard,
        ))
        .layer(axum::middleware::from_fn(layout::security_headers))
        .layer(axum::middleware::from_fn(layout::scrub_secrets))
        .with_state(state)
}

/// Serves the console on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: ConsoleState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    // With each connection's peer address: the login throttle counts per client.
    let app = router(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        tracing::warn!(error = %e, "console stopped");
    }
}
