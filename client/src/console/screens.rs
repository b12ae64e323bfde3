//! `GET /phone/{i}/screen.png`: a phone card's live screenshot, from the worker's
//! [`PhoneScreen`] cache (refreshed at most once per interval, under the phone's turn,
//! never during a money step: see [`super::shot`]).

use axum::extract::{Path, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

pub use super::shot::{Held, PhoneScreen, ShotNote, SHOT_EVERY, SHOT_WAIT};
use super::state::ConsoleState;

/// `GET /phone/{i}/screen.png`.
pub fn routes() -> Router<ConsoleState> {
    Router::new().route("/phone/{i}/screen.png", get(screen))
}

async fn screen(State(state): State<ConsoleState>, Path(i): Path<usize>) -> Response {
    let Some(w) = state.worker(i) else {
        return (StatusCode::NOT_FOUND, "no such phone\n").into_response();
    };
    let Some(screen) = &w.screen else {
        return (StatusCode::NOT_FOUND, "no phone to show\n").into_response();
    };
    screen.refresh_if_due(&w.progress, &w.store).await;
    match screen.cached() {
        Some((png, at)) => {
            let mut r = ([(header::CONTENT_TYPE, "image/png")], png).into_response();
            if let Ok(v) = HeaderValue::from_str(&cmautobuy_contract::time::format_utc(at)) {
                r.headers_mut().insert("x-screen-taken-at", v);
            }
            r
        }
        None => (StatusCode::SERVICE_UNAVAILABLE, "no screenshot yet\n").into_response(),
    }
}
