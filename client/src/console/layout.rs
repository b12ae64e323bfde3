//! What every console page shares: rendering a page from its template ([`render`]: the
//! templates live in `client/templates/console/`, askama compiles them and escapes every
//! value once — HTML-escaping happens there and nowhere else), the plain message page
//! ([`message`]), the one stylesheet and the one script (served from here: no inline
//! script or style, so the Content-Security-Policy allows `'self'` only), the security
//! headers on every answer, and the secret scrubber over every text answer.
//!
//! **Why askama.** The pages are fixed shapes filled with data: compile-time templates
//! check every field and filter when the client builds (a typo is a build error, not a
//! blank page at 3 a.m.), render without parsing anything at run time (the status page
//! re-renders every phone's card on each change), and escape HTML by default in `.html`
//! templates — the one escape. Nothing from outside is marked `|safe`: not task
//! payloads, page text from dumps, Admin messages, alert texts.
//!
//! Plain server-rendered HTML that works with JavaScript off (a reload shows the same);
//! the script only follows `/events`, swaps in the fragments the server re-rendered, and
//! reloads each phone's screenshot now and then.

use askama::Template;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::state::ConsoleState;
use super::view::{Shell, Tab};

/// A page rendered from its template; a template that fails (a formatting error: none of
/// ours returns one) is a 500 that names nothing.
pub fn render<T: Template>(page: &T) -> Response {
    match page.render() {
        Ok(html) => Html(html).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "a console page failed to render");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page failed to render\n",
            )
                .into_response()
        }
    }
}

/// A page saying one thing (not found, store unavailable).
#[derive(Template)]
#[template(path = "console/message.html")]
pub struct MessagePage {
    pub shell: Shell,
    pub message: String,
}

/// [`MessagePage`] with `status`.
pub fn message(status: StatusCode, tab: Tab, title: &str, text: impl Into<String>) -> Response {
    let mut r = render(&MessagePage {
        shell: Shell::new(tab, title, false),
        message: text.into(),
    });
    if r.status() == StatusCode::OK {
        *r.status_mut() = status;
    }
    r
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

/// The one script: follow `/events` and swap in each fragment by its element id; reload
/// each phone's screenshot (`img[data-refresh]`) every few seconds while the page is
/// visible (the server takes at most one per phone per interval, whoever asks).
const SCRIPT: &str = r#"(function () {
  var live = document.body && document.body.getAttribute('data-live');
  if (live && window.EventSource) {
    var es = new EventSource(live);
    es.addEventListener('fragment', function (e) {
      try {
        var m = JSON.parse(e.data);
        var el = document.getElementById(m.id);
        if (el) el.outerHTML = m.html;
      } catch (_) {}
    });
  }
  var shots = document.querySelectorAll('img[data-refresh]');
  if (!shots.length) return;
  var every = 1000 * (parseInt(shots[0].getAttribute('data-refresh'), 10) || 5);
  setInterval(function () {
    if (document.hidden) return;
    for (var i = 0; i < shots.length; i++) {
      var img = shots[i];
      var base = img.getAttribute('data-src');
      if (base) img.src = base + '?t=' + Date.now();
    }
  }, every);
})();
"#;

const CSS: &str = r#"body { font-family: system-ui, "PingFang SC", "Microsoft YaHei", sans-serif; margin: 0; color: #222; background: #f6f7f9; }
header { background: #333; color: #fff; padding: .5em 1em; }
header nav { display: inline; margin-left: 1em; }
header nav a { color: #ddd; margin-right: 1em; text-decoration: none; }
header nav a[aria-current=page] { color: #fff; border-bottom: 2px solid #fff; }
.en { color: #888; font-size: .85em; }
main { padding: 1em; max-width: 1248px; box-sizing: border-box; }
h2 { font-size: 1.1em; margin: .3em 0; }
h3 { font-size: 1em; margin: .8em 0 .3em; }
.grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(360px, 1fr)); gap: 1em; align-items: start; }
article.phone { background: #fff; border: 1px solid #ccc; border-radius: 6px; overflow: hidden; }
figure.screen { margin: 0; background: #1f2329; text-align: center; min-height: 120px; }
figure.screen img { display: block; margin: 0 auto; max-width: 100%; max-height: 460px; }
section.worker { padding: .5em 1em 1em; }
section.settings, section.panel { background: #fff; border: 1px solid #ccc; border-radius: 6px; padding: .5em 1em; margin-bottom: 1em; }
.badge { display: inline-block; padding: .1em .6em; border-radius: 3px; font-size: .9em; margin-right: .4em; }
.badge.working { background: #e6f4ea; color: #060; } .badge.idle { background: #eee; color: #444; }
.badge.paused { background: #fff4e0; color: #a60; } .badge.human { background: #fde8e8; color: #b00; font-weight: bold; }
.today { margin: .3em 0; } .today span { margin-right: .8em; }
.shot-note { font-size: .85em; color: #555; margin: .2em 0; } .shot-note.held { color: #a60; }
ol.trail { margin: .2em 0; padding-left: 1.6em; font-size: .9em; } ol.trail li.money { color: #b00; } ol.trail li.now { font-weight: bold; }
table { border-collapse: collapse; }
td, th { text-align: left; padding: .2em .6em; border-bottom: 1px solid #eee; vertical-align: top; }
table.history { width: 100%; table-layout: fixed; background: #fff; }
table.history td, table.history th { overflow-wrap: anywhere; }
table.history col.time { width: 9.5em; } table.history col.id { width: 3em; } table.history col.task { width: 9em; }
table.history col.type { width: 6.5em; } table.history col.state { width: 7em; } table.history col.n { width: 2.5em; }
table.history col.order { width: 9.5em; } table.history col.codes { width: 8em; }
table.skus { background: #fff; }
.ok { color: #060; } .warn { color: #a60; } .bad { color: #b00; font-weight: bold; }
.reason { font-size: .9em; } .reason .next { color: #333; }
.human { background: #fff4f4; border-left: 4px solid #b00; padding: .3em .6em; margin: .3em 0; }
form.inline { display: inline; }
label { display: block; margin: .5em 0 .2em; }
input[type=text], input[type=url], input[type=password], textarea, select { width: 30em; max-width: 100%; box-sizing: border-box; }
textarea { height: 4.5em; }
.error { color: #b00; }
.source { font-size: .85em; color: #555; }
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shell_has_the_three_tabs_escapes_the_title_once_and_has_no_inline_script() {
        let p = MessagePage {
            shell: Shell::new(Tab::Settings, "设置 <x> & 'y'", false),
            message: "<b>hi</b> &amp;".into(),
        }
        .render()
        .unwrap();
        assert!(p.contains("状态 <span class=\"en\">Status</span>"), "{p}");
        assert!(
            p.contains("<a href=\"/settings\" aria-current=\"page\">"),
            "{p}"
        );
        assert!(p.contains("<a href=\"/history\">"));
        assert!(
            p.contains("设置 &#60;x&#62; &#38; &#39;y&#39; · cmautobuy"),
            "{p}"
        );
        // One escape: an entity in the text shows as typed, not decoded and not twice.
        assert!(p.contains("&#60;b&#62;hi&#60;/b&#62; &#38;amp;"), "{p}");
        assert!(!p.contains("<script>"));
        assert!(!p.contains("data-live"));
    }
}
