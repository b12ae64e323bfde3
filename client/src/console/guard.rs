//! The console's guard, in front of every route:
//!
//! - **Host / Origin** (no DNS rebinding, no cross-site requests): the `Host` header
//!   must name the bound address, or `localhost:PORT` / `127.0.0.1:PORT` / `[::1]:PORT`
//!   with the bound port; an `Origin` header, when present, must be `http://` + such a
//!   host. Else 403.
//! - **Methods**: GET and HEAD read, POST changes state; anything else is 405.
//! - **CSRF**: every POST carries the process's CSRF token in the form field `csrf`
//!   (compared in constant time), else 403. The token is a per-process random secret,
//!   put into each form by the page that renders it ([`ConsoleState::csrf`]).
//! - **Session** (only when the console has a password): every page but `/login`,
//!   `/healthz` and the static files needs the session cookie, else a redirect to
//!   `/login` (403 for POSTs).
//!
//! The refusals are plain text and name nothing secret.

use std::net::SocketAddr;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Redirect, Response};

use super::state::ConsoleState;

/// Largest POST body read (forms are small).
pub const MAX_FORM_BYTES: usize = 64 * 1024;

/// Paths reachable without a session when the console has a password.
const OPEN_PATHS: &[&str] = &["/login", "/healthz", "/console.css", "/console.js"];

/// The guard middleware (see the module documentation).
pub async fn guard(State(state): State<ConsoleState>, req: Request, next: Next) -> Response {
    if !host_allowed(&state, req.headers()) {
        return forbidden("the Host or Origin header does not name this console");
    }
    let method = req.method().clone();
    if method != Method::GET && method != Method::HEAD && method != Method::POST {
        return (StatusCode::METHOD_NOT_ALLOWED, "GET, HEAD or POST only\n").into_response();
    }
    let path = req.uri().path().to_string();
    let open = OPEN_PATHS.contains(&path.as_str());
    if state.has_password() && !open && !state.session_valid(req.headers()) {
        if method == Method::POST {
            return forbidden("log in first");
        }
        return Redirect::to("/login").into_response();
    }
    if method == Method::POST {
        let (parts, body) = req.into_parts();
        let bytes = match axum::body::to_bytes(body, MAX_FORM_BYTES).await {
            Ok(b) => b,
            Err(_) => return (StatusCode::PAYLOAD_TOO_LARGE, "form too large\n").into_response(),
        };
        let token = form_field(&bytes, "csrf").unwrap_or_default();
        if !state.csrf_matches(&token) {
            return forbidden("missing or wrong CSRF token (reload the page)");
        }
        let req = Request::from_parts(parts, Body::from(bytes));
        return next.run(req).await;
    }
    next.run(req).await
}

fn forbidden(why: &str) -> Response {
    (StatusCode::FORBIDDEN, format!("403 forbidden: {why}\n")).into_response()
}

/// Whether `host` (a `Host` header value, lower case) names this console: the bound
/// address; `localhost:PORT` or any loopback IP with the bound port when bound on
/// loopback or on every address; any IP literal with the bound port when bound on every
/// address. A name other than `localhost` never passes — that is what DNS rebinding
/// would send.
pub fn host_names_console(bound: SocketAddr, host: &str) -> bool {
    let port = bound.port();
    let any = bound.ip().is_unspecified();
    if host == format!("localhost:{port}") {
        return bound.ip().is_loopback() || any;
    }
    let Ok(addr) = host.parse::<SocketAddr>() else {
        return false;
    };
    if addr.port() != port {
        return false;
    }
    addr.ip() == bound.ip() || any || (bound.ip().is_loopback() && addr.ip().is_loopback())
}

fn host_allowed(state: &ConsoleState, headers: &HeaderMap) -> bool {
    let Some(host) = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(|h| h.trim().to_ascii_lowercase())
    else {
        return false;
    };
    if !host_names_console(state.bound, &host) {
        return false;
    }
    // A browser's Origin: the page that sent the request must be this console.
    match headers.get(header::ORIGIN) {
        None => true,
        Some(o) => o
            .to_str()
            .ok()
            .map(|o| o.trim().to_ascii_lowercase())
            .and_then(|o| o.strip_prefix("http://").map(str::to_string))
            .is_some_and(|h| h == host),
    }
}

/// The first value of `name` in an `application/x-www-form-urlencoded` body, decoded by
/// `form_urlencoded` — the parser behind axum's `Form` (through `serde_urlencoded`), so
/// the guard reads the `csrf` field exactly as the page's handler reads its form. Like a
/// browser's, it is lenient: a malformed escape (`%zz`) stays as written and bytes that
/// are not UTF-8 become U+FFFD — neither can equal the hex CSRF token.
pub fn form_field(body: &[u8], name: &str) -> Option<String> {
    form_urlencoded::parse(body)
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn form_fields_are_decoded() {
        let body = b"worker=0&csrf=ab%2Fc+d&id=3";
        assert_eq!(form_field(body, "csrf").as_deref(), Some("ab/c d"));
        assert_eq!(form_field(body, "id").as_deref(), Some("3"));
        assert_eq!(form_field(body, "x"), None);
        // Malformed escapes and non-UTF-8 bytes are read as a browser reads them (and
        // as axum's `Form` does): never as the token.
        assert_eq!(form_field(b"csrf=%zz", "csrf").as_deref(), Some("%zz"));
        assert_eq!(
            form_field(b"csrf=%ff%fe", "csrf").as_deref(),
            Some("\u{fffd}\u{fffd}")
        );
        assert_eq!(
            form_field("n=%E5%BA%97&csrf=a".as_bytes(), "n").as_deref(),
            Some("店")
        );
    }

    #[test]
    fn hosts_that_name_the_console() {
        let lo: SocketAddr = "127.0.0.1:9464".parse().unwrap();
        for ok in [
            "127.0.0.1:9464",
            "localhost:9464",
            "[::1]:9464",
            "127.0.0.2:9464",
        ] {
            assert!(host_names_console(lo, ok), "{ok}");
        }
        for bad in [
            "evil.example:9464",
            "localhost:9465",
            "127.0.0.1:80",
            "192.168.1.5:9464",
            "localhost",
            "",
        ] {
            assert!(!host_names_console(lo, bad), "{bad}");
        }
        let any: SocketAddr = "0.0.0.0:9464".parse().unwrap();
        assert!(host_names_console(any, "192.168.1.5:9464"));
        assert!(host_names_console(any, "localhost:9464"));
        assert!(!host_names_console(any, "shop.example:9464"));
        let lan: SocketAddr = "192.168.1.5:9464".parse().unwrap();
        assert!(host_names_console(lan, "192.168.1.5:9464"));
        assert!(!host_names_console(lan, "localhost:9464"));
        assert!(!host_names_console(lan, "10.0.0.1:9464"));
    }
}
