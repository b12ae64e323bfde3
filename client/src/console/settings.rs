//! 设置 Settings (`/settings`): the client's name, Admin URL, token (write-only) and
//! phone.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::layout::{page, Tab};
use super::state::ConsoleState;

/// `/settings`.
pub fn routes() -> Router<ConsoleState> {
    Router::new().route("/settings", get(settings_page))
}

async fn settings_page(State(_state): State<ConsoleState>) -> Response {
    page(
        Tab::Settings,
        "设置 Settings",
        "<h1>设置 <span class=\"en\">Settings</span></h1>",
        false,
    )
    .into_response()
}
