//! The status page's buttons: `POST /ack` (an operator alert, as `cmautobuy-client ack
//! N`) and `POST /outbox/retry` (a parked outbox item, as `cmautobuy-client outbox
//! retry N`) and `POST /review` (a `manual_review` task a human has dealt with: it
//! leaves the "needs a human" list). All answer with a redirect back to `/` (303), so a reload never posts
//! twice; the guard has already checked Host, Origin, the session and the CSRF token.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::post;
use axum::{Form, Router};
use serde::Deserialize;

use super::state::ConsoleState;

/// `POST /ack`, `POST /outbox/retry`, `POST /review`.
pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/ack", post(ack))
        .route("/outbox/retry", post(retry))
        .route("/review", post(review))
}

/// Who acknowledged, as recorded with a version proven by hand.
pub const ACK_WHO: &str = "console";

#[derive(Deserialize)]
struct ItemForm {
    #[serde(default)]
    worker: usize,
    id: i64,
}

async fn ack(State(state): State<ConsoleState>, Form(f): Form<ItemForm>) -> Response {
    let Some(w) = state.worker(f.worker) else {
        return (StatusCode::NOT_FOUND, "no such worker\n").into_response();
    };
    let store = w.store.clone();
    let id = f.id;
    let done = tokio::task::spawn_blocking(move || {
        store.operator_ack(Some(id), ACK_WHO, chrono::Utc::now())
    })
    .await;
    match done {
        Ok(Ok((n, proven))) => {
            tracing::info!(alert = id, acknowledged = n, proven = ?proven, "console: alert acknowledged");
            Redirect::to("/").into_response()
        }
        Ok(Err(e)) => super::status::store_error(e),
        Err(e) => super::status::store_error(e),
    }
}

async fn retry(State(state): State<ConsoleState>, Form(f): Form<ItemForm>) -> Response {
    let Some(w) = state.worker(f.worker) else {
        return (StatusCode::NOT_FOUND, "no such worker\n").into_response();
    };
    let store = w.store.clone();
    let id = f.id;
    let done =
        tokio::task::spawn_blocking(move || store.outbox_requeue(Some(id), chrono::Utc::now()))
            .await;
    match done {
        Ok(Ok(n)) => {
            tracing::info!(
                item = id,
                requeued = n,
                "console: parked outbox item requeued"
            );
            Redirect::to("/").into_response()
        }
        Ok(Err(e)) => super::status::store_error(e),
        Err(e) => super::status::store_error(e),
    }
}

async fn review(State(state): State<ConsoleState>, Form(f): Form<ItemForm>) -> Response {
    let Some(w) = state.worker(f.worker) else {
        return (StatusCode::NOT_FOUND, "no such worker\n").into_response();
    };
    let store = w.store.clone();
    let id = f.id;
    let done =
        tokio::task::spawn_blocking(move || store.review_task(id, ACK_WHO, chrono::Utc::now()))
            .await;
    match done {
        Ok(Ok(marked)) => {
            tracing::info!(
                task = id,
                marked,
                "console: manual_review task marked reviewed"
            );
            Redirect::to("/").into_response()
        }
        Ok(Err(e)) => super::status::store_error(e),
        Err(e) => super::status::store_error(e),
    }
}
