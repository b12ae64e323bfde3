//! The router: every route, the layers every request passes (outermost first: the §3
//! envelope guard, panic catching, the body limit; the client layer or operator auth per
//! group) and `/openapi.json`, generated from the same handlers.

use super::auth::operator_auth;
use super::client_layer::client_layer;
use super::envelope::{envelope_guard, method_not_allowed, not_found};
use super::extract::MAX_BODY_BYTES;
use super::operator::{clients, controls, products, spec_resolutions, tasks};
use super::{claim, registration, spec_resolution, submissions};
use crate::openapi as doc;
use crate::state::AppState;
use axum::body::Bytes;
use axum::extract::DefaultBodyLimit;
use axum::http::header;
use axum::middleware;
use axum::routing::{get, post};
use axum::Router;
use utoipa::OpenApi;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

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
        .routes(routes!(registration::registration))
        .routes(routes!(claim::claim))
        .routes(routes!(submissions::submit_result))
        .routes(routes!(submissions::submit_failure))
        .routes(routes!(spec_resolution::spec_resolution))
        .route_layer(middleware::from_fn_with_state(state.clone(), client_layer));

    let operator = OpenApiRouter::new()
        .routes(routes!(tasks::op_create_task, tasks::op_list_tasks))
        .routes(routes!(tasks::op_get_task))
        .routes(routes!(tasks::op_cancel_task))
        .routes(routes!(tasks::op_reassign_task))
        .routes(routes!(clients::op_clients))
        .routes(routes!(products::op_products))
        .routes(routes!(spec_resolutions::op_spec_resolutions))
        // Test controls: documented in the README, deliberately not in the spec (a
        // fuzzer must not install faults or forced outcomes).
        .route(
            "/api/v1/admin/faults",
            post(controls::op_add_fault)
                .get(controls::op_list_faults)
                .delete(controls::op_clear_faults),
        )
        .route(
            "/api/v1/admin/spec-overrides",
            post(controls::op_add_override)
                .get(controls::op_list_overrides)
                .delete(controls::op_clear_overrides),
        )
        .route(
            "/api/v1/admin/journal",
            get(controls::op_journal).delete(controls::op_clear_journal),
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
