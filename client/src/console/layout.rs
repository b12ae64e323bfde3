//! The page shell every console page shares: `<nav>` (状态 Status, 设置 Settings,
//! 历史 History — Chinese labels with the English beside), HTML escaping, the one
//! stylesheet and the one script (served from here: no inline script or style, so the
//! Content-Security-Policy allows `'self'` only), the security headers on every
//! answer, and the secret scrubber over every text answer.
//!
//! Plain server-rendered HTML that works with JavaScript off (a reload shows the same);
//! the script only follows `/events` (server-sent events) and swaps in the fragments the
//! server re-rendered.

use axum::extract::Request;
use axum::http::{header, HeaderValue};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::state::ConsoleState;

/// The console's tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Status,
    Settings,
    History,
    /// A page outside the tabs (login).
    None,
}

const TABS: [(Tab, &str, &str, &str); 3] = [
    (Tab::Status, "/", "状态", "Status"),
    (Tab::Settings, "/settings", "设置", "Settings"),
    (Tab::History, "/history", "历史", "History"),
];

/// The whole page: `title` (plain text, escaped here) and `body` (HTML, already escaped
/// by its page). `live`: the page follows `/events` and swaps in re-rendered fragments.
pub fn page(tab: Tab, title: &str, body: &str, live: bool) -> Html<String> {
    let mut nav = String::new();
    for (t, href, zh, en) in TABS {
        let current = if t == tab {
            " aria-current=\"page\""
        } else {
            ""
        };
        nav.push_str(&format!(
            "<a href=\"{href}\"{current}>{zh} <span class=\"en\">{en}</span></a>"
        ));
    }
    let live_attr = if live { " data-live=\"/events\"" } else { "" };
    Html(format!(
        "<!doctype html>\n<html lang=\"zh\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{title} · cmautobuy</title>\
<link rel=\"stylesheet\" href=\"/console.css\"><script src=\"/console.js\" defer></script>\
</head><body{live_attr}><header><strong>cmautobuy</strong> <nav>{nav}</nav></header>\
<main>{body}</main></body></html>\n",
        title = escape(title),
    ))
}

/// HTML-escapes text for element content and double-quoted attributes.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `/console.css` and `/console.js`.
pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route(
            "/console.css",
            get(|| async { ([(header::CONTENT_TYPE, "text/css; charset=utf-8")], CSS) }),
        )
        .route(
            "/console.js",
            get(|| async {
                (
                    [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
                    SCRIPT,
                )
            }),
        )
}

/// The Content-Security-Policy of every answer: nothing from elsewhere, no inline script
/// or style, no framing, forms post only here.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// Adds the security headers to every answer.
pub async fn security_headers(req: Request, next: Next) -> Response {
    let mut res = next.run(req).await.into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // `same-origin`, not `no-referrer`: under `no-referrer` a browser sends
    // `Origin: null` with a form POST (Fetch, "append a request Origin header"), and the
    // guard refuses every button (the browser test found it); nothing leaves the console
    // either way.
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    res
}

/// Every text answer (pages, `/events`, JSON, plain text, dumps) passes
/// [`crate::secret::scrub_bytes`] chunk by chunk: the last line of defence for stored
/// text from outside (an Admin's echo of the token in a registration error or an alert)
/// that a page would otherwise serve. Each page is one chunk and each server-sent event
/// one frame, so a secret is never split across two. Images pass untouched.
pub async fn scrub_secrets(req: Request, next: Next) -> Response {
    use futures::StreamExt;
    let res = next.run(req).await;
    let textual = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            let ct = ct.to_ascii_lowercase();
            ct.starts_with("text/") || ct.contains("json") || ct.contains("xml")
        });
    if !textual {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    // The length may change.
    parts.headers.remove(header::CONTENT_LENGTH);
    let stream = body.into_data_stream().map(|chunk| {
        chunk.map(|b| match crate::secret::scrub_bytes(&b) {
            std::borrow::Cow::Borrowed(_) => b,
            std::borrow::Cow::Owned(v) => bytes::Bytes::from(v),
        })
    });
    Response::from_parts(parts, axum::body::Body::from_stream(stream))
}

/// The one script: follow `/events` and swap in each fragment by its element id.
const SCRIPT: &str = r#"(function () {
  var live = document.body && document.body.getAttribute('data-live');
  if (!live || !window.EventSource) return;
  var es = new EventSource(live);
  es.addEventListener('fragment', function (e) {
    try {
      var m = JSON.parse(e.data);
      var el = document.getElementById(m.id);
      if (el) el.outerHTML = m.html;
    } catch (_) {}
  });
})();
"#;

const CSS: &str = r#"body { font-family: system-ui, sans-serif; margin: 0; color: #222; }
header { background: #333; color: #fff; padding: .5em 1em; }
header nav { display: inline; margin-left: 1em; }
header nav a { color: #ddd; margin-right: 1em; text-decoration: none; }
header nav a[aria-current=page] { color: #fff; border-bottom: 2px solid #fff; }
.en { color: #999; font-size: .85em; }
main { padding: 1em; max-width: 70em; }
section.worker { border: 1px solid #ccc; border-radius: 4px; padding: .5em 1em; margin-bottom: 1em; }
table { border-collapse: collapse; }
td, th { text-align: left; padding: .2em .6em; border-bottom: 1px solid #eee; vertical-align: top; }
.ok { color: #060; } .warn { color: #a60; } .bad { color: #b00; font-weight: bold; }
.human { background: #fff4f4; border-left: 4px solid #b00; padding: .3em .6em; margin: .3em 0; }
form.inline { display: inline; }
label { display: block; margin: .5em 0 .2em; }
input[type=text], input[type=url], input[type=password] { width: 30em; max-width: 100%; }
.error { color: #b00; }
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup_and_quotes() {
        assert_eq!(
            escape("<a href=\"x\">'&'</a>"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }

    #[test]
    fn the_shell_has_the_three_tabs_and_no_inline_script() {
        let Html(p) = page(Tab::Settings, "设置 <x>", "<p>hi</p>", false);
        assert!(p.contains("状态 <span class=\"en\">Status</span>"));
        assert!(p.contains("<a href=\"/settings\" aria-current=\"page\">"));
        assert!(p.contains("<a href=\"/history\">"));
        assert!(p.contains("设置 &lt;x&gt; · cmautobuy"));
        assert!(!p.contains("<script>"));
        assert!(!p.contains("data-live"));
    }
}
