//! `/login` and `/logout` (only meaningful with a console password). Logins are
//! throttled per client address and overall ([`super::auth::LoginThrottle`]): a locked
//! out login is answered `429` with `Retry-After`, its password not even checked.

use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Router};
use serde::Deserialize;

use askama::Template;

use super::auth::{cookie, COOKIE};
use super::layout::render;
use super::state::ConsoleState;
use super::view::{Shell, Tab};

/// `/login` (GET form, POST check) and `/logout`.
pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
}

/// The login form.
#[derive(Template)]
#[template(path = "console/login.html")]
struct LoginPage<'a> {
    shell: Shell,
    csrf: &'a str,
    error: Option<String>,
}

fn login_page(state: &ConsoleState, error: Option<&str>) -> Response {
    render(&LoginPage {
        shell: Shell::new(Tab::None, "登录 Log in", false),
        csrf: state.csrf(),
        error: error.map(str::to_string),
    })
}

async fn login_form(State(state): State<ConsoleState>) -> Response {
    if !state.has_password() {
        return Redirect::to("/").into_response();
    }
    login_page(&state, None)
}

/// The client's address, when the server was started with connection info
/// ([`super::router::serve`]); `None` in-process (router tests), one bucket for all.
pub struct Peer(pub Option<IpAddr>);

impl<S: Send + Sync> FromRequestParts<S> for Peer {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(Peer(
            parts
                .extensions
                .get::<ConnectInfo<SocketAddr>>()
                .map(|c| c.0.ip()),
        ))
    }
}

/// `429` with `Retry-After` (whole seconds, rounded up) and the login form saying how long.
fn locked_out(state: &ConsoleState, wait: std::time::Duration) -> Response {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    let mut r = login_page(
        state,
        Some(&format!(
            "密码错误次数过多，请 {secs} 秒后再试 too many wrong passwords: try again in {secs} s"
        )),
    );
    *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
    if let Ok(v) = HeaderValue::from_str(&secs.to_string()) {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    password: String,
}

async fn login(
    State(state): State<ConsoleState>,
    Peer(ip): Peer,
    Form(f): Form<LoginForm>,
) -> Response {
    let Some(hash) = state.password() else {
        return Redirect::to("/").into_response();
    };
    let shown_ip = ip.map_or_else(|| "-".to_string(), |i| i.to_string());
    if let Err(wait) = state.throttle().check(ip, state.login_now()) {
        tracing::info!(client = %shown_ip, wait_s = wait.as_secs_f64(), "console: a login during a lockout refused (not checked)");
        return locked_out(&state, wait);
    }
    let pw = f.password;
    let ok = tokio::task::spawn_blocking(move || hash.verify(&pw))
        .await
        .unwrap_or(false);
    if !ok {
        match state.throttle().failed(ip, state.login_now()) {
            Some(lock) => {
                tracing::warn!(client = %shown_ip, lockout_s = lock.as_secs(), "console: repeated wrong passwords; logins locked out");
                return locked_out(&state, lock);
            }
            None => tracing::warn!(client = %shown_ip, "console: a login with a wrong password"),
        }
        let mut r = login_page(&state, Some("密码错误 wrong password"));
        *r.status_mut() = StatusCode::UNAUTHORIZED;
        return r;
    }
    state.throttle().succeeded(ip);
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
