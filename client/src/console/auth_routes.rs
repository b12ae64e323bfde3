//! `/login` and `/logout` (only meaningful with a console password).

use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use super::auth::{cookie, COOKIE};
use super::layout::{escape, page, Tab};
use super::state::ConsoleState;

/// `/login` (GET form, POST check) and `/logout`.
pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
}

fn login_page(state: &ConsoleState, error: Option<&str>) -> Response {
    let err = error
        .map(|e| format!("<p class=\"error\">{}</p>", escape(e)))
        .unwrap_or_default();
    let body = format!(
        "<h1>登录 <span class=\"en\">Log in</span></h1>{err}\
<form method=\"post\" action=\"/login\">{csrf}\
<label for=\"password\">密码 <span class=\"en\">Password</span></label>\
<input type=\"password\" id=\"password\" name=\"password\" autocomplete=\"current-password\" required>\
<p><button type=\"submit\">登录 Log in</button></p></form>",
        csrf = state.csrf_field()
    );
    page(Tab::None, "登录 Log in", &body, false).into_response()
}

async fn login_form(State(state): State<ConsoleState>) -> Response {
    if !state.has_password() {
        return Redirect::to("/").into_response();
    }
    login_page(&state, None)
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    password: String,
}

async fn login(State(state): State<ConsoleState>, Form(f): Form<LoginForm>) -> Response {
    let Some(hash) = state.password() else {
        return Redirect::to("/").into_response();
    };
    let pw = f.password;
    let ok = tokio::task::spawn_blocking(move || hash.verify(&pw))
        .await
        .unwrap_or(false);
    if !ok {
        tracing::warn!("console: a login with a wrong password");
        let mut r = login_page(&state, Some("密码错误 wrong password"));
        *r.status_mut() = StatusCode::UNAUTHORIZED;
        return r;
    }
    let id = state.sessions().open();
    let mut r = Redirect::to("/").into_response();
    if let Ok(v) =
        HeaderValue::from_str(&format!("{COOKIE}={id}; Path=/; HttpOnly; SameSite=Strict"))
    {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

async fn logout(State(state): State<ConsoleState>, headers: HeaderMap) -> Response {
    if let Some(id) = cookie(&headers) {
        state.sessions().close(&id);
    }
    let mut r = Redirect::to("/login").into_response();
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "cmautobuy_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0",
        ),
    );
    r
}
