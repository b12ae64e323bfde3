//! 状态 Status (`/`): per worker (phone) the task in hand (id, type, mode, step,
//! elapsed), the phone's health (the last device pause), whether claiming runs or is
//! stopped and why, and every condition that needs a human — open operator alerts (with
//! an **ack** button: `cmautobuy-client ack N`), parked outbox items (with a **retry**
//! button: `cmautobuy-client outbox retry N`), `manual_review` tasks (with a
//! **reviewed** button), orders waiting to be reconciled, live held back — kept on
//! screen until they are dealt with.
//!
//! Live: `/events` is a server-sent event stream of `fragment` events
//! (`{"id": "w0", "html": "<section …>"}`), one per worker section that changed — at
//! every change of a progress board, and at a bounded re-read of the store every
//! [`REREAD`]; the page's script swaps the section in. With JavaScript off the page is
//! the same after a reload.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use chrono::{DateTime, Utc};
use futures::Stream;

use super::layout::{escape, page, Tab};
use super::state::{ConsoleState, ConsoleWorker};
use crate::progress::Current;
use crate::store::{Alert, DevicePause, LiveCapNote, Settings, StoreError};

/// How often the live stream re-reads the stores when no board changed.
pub const REREAD: Duration = Duration::from_secs(2);

/// Recent tasks shown with their outcome (newest first).
const RECENT_SHOWN: usize = 5;

/// Recent `manual_review` tasks shown (newest first).
const MANUAL_REVIEW_SHOWN: usize = 20;

/// `/` and `/events`.
pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/", get(status_page))
        .route("/events", get(events))
}

/// What one worker's section shows, read from its store (blocking).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub settings: Option<Settings>,
    pub pause: Option<DevicePause>,
    pub alerts: Vec<Alert>,
    /// Parked outbox items: (id, remote task id, kind, last error).
    pub parked: Vec<(i64, String, String, Option<String>)>,
    /// Undelivered (pending or sent) outbox items.
    pub undelivered: usize,
    /// (remote task id, attempt id, marked at).
    pub awaiting: Vec<(String, String, String)>,
    /// `manual_review` tasks not yet marked reviewed: (local id, remote task id, type,
    /// updated at).
    pub manual_review: Vec<(i64, String, String, String)>,
    pub clock_skew: Option<String>,
    pub version_hold: Option<String>,
    pub account_refusal: Option<String>,
    /// Why live waits (the self-test, or no address fingerprint: issue 25), as the
    /// claim loop recorded it.
    pub live_note: Option<String>,
    pub live_cap: Option<LiveCapNote>,
    /// The claim loop's backoff after a transient claim error (the Admin's
    /// `Retry-After` above all).
    pub claim_wait: Option<crate::store::ClaimWait>,
    /// The newest tasks: (remote task id, type, local state, updated at).
    pub recent: Vec<(String, String, String, String)>,
}

/// Reads a worker's snapshot.
pub fn snapshot(w: &ConsoleWorker) -> Result<Snapshot, StoreError> {
    let s = &w.store;
    let undelivered = s.outbox_list(false)?;
    let parked = undelivered
        .iter()
        .filter(|o| o.state.as_str() == "parked")
        .map(|o| {
            (
                o.id,
                o.remote_task_id.clone(),
                o.kind.as_str().to_string(),
                o.last_error.clone(),
            )
        })
        .collect::<Vec<_>>();
    Ok(Snapshot {
        settings: Some(s.settings()?),
        pause: s.device_pause()?,
        alerts: s.open_alerts()?,
        undelivered: undelivered.len() - parked.len(),
        parked,
        awaiting: s
            .awaiting_reconcile()?
            .into_iter()
            .map(|r| (r.remote_task_id, r.attempt_id, r.marked_at))
            .collect(),
        manual_review: s.unreviewed_manual_review(MANUAL_REVIEW_SHOWN)?,
        recent: s.recent_tasks(None, RECENT_SHOWN)?,
        clock_skew: s.clock_skew()?,
        version_hold: s.pdd_version_hold()?,
        account_refusal: s.account_refusal()?,
        live_note: s.self_test_note()?,
        live_cap: s.live_cap()?,
        claim_wait: s.claim_wait()?,
    })
}

/// Worker `i`'s section, `<section id="w{i}">`.
pub fn render_worker(
    i: usize,
    w: &ConsoleWorker,
    current: Option<&Current>,
    snap: Result<&Snapshot, &str>,
    csrf: &str,
    now: DateTime<Utc>,
) -> String {
    let mut h = format!(
        "<section class=\"worker\" id=\"w{i}\"><h2>📱 {}</h2>",
        escape(&w.label)
    );
    // The task in hand.
    h.push_str("<h3>当前任务 <span class=\"en\">Current task</span></h3>");
    match current {
        Some(c) => {
            let elapsed = (now - c.started_at).num_seconds().max(0);
            h.push_str(&format!(
                "<table class=\"current\"><tr><th>任务 <span class=\"en\">task</span></th><td><code>{}</code></td></tr>\
<tr><th>类型 <span class=\"en\">type</span></th><td>{} · {}</td></tr>\
<tr><th>步骤 <span class=\"en\">step</span></th><td>{} <span class=\"en\">({}, {} actions)</span></td></tr>\
<tr><th>已用 <span class=\"en\">elapsed</span></th><td>{} s <span class=\"en\">(since {})</span></td></tr></table>",
                escape(&c.task_id),
                escape(&c.task_type),
                escape(&c.mode),
                escape(c.step.as_deref().unwrap_or("-")),
                escape(c.action.as_deref().unwrap_or("-")),
                c.actions,
                elapsed,
                c.started_at.format("%H:%M:%S UTC"),
            ));
        }
        None => {
            h.push_str("<p class=\"idle\">空闲 <span class=\"en\">idle: no task in hand</span></p>")
        }
    }
    let s = match snap {
        Ok(s) => s,
        Err(e) => {
            h.push_str(&format!(
                "<p class=\"bad\">存储不可读 <span class=\"en\">store unavailable: {}</span></p></section>",
                escape(e)
            ));
            return h;
        }
    };
    // Device health and claiming.
    h.push_str("<h3>设备与领取 <span class=\"en\">Phone and claiming</span></h3><ul>");
    // The device backend the last task used (issue 15).
    match w.progress.backend() {
        Some((name, None)) => h.push_str(&format!(
            "<li>设备后端 <span class=\"en\">device backend</span>: <code>{}</code></li>",
            escape(&name)
        )),
        Some((name, Some(why))) => h.push_str(&format!(
            "<li class=\"warn\">设备后端 <span class=\"en\">device backend</span>: <code>{}</code> <span class=\"en\">(u2 fell back: {})</span></li>",
            escape(&name),
            escape(&why)
        )),
        None => h.push_str(
            "<li>设备后端 <span class=\"en\">device backend</span>: - <span class=\"en\">(known after the first task)</span></li>",
        ),
    }
    match &s.pause {
        Some(p) => h.push_str(&format!(
            "<li class=\"warn\">设备暂停 <span class=\"en\">paused for the phone since {}: [{}] {} — resumes by itself when the phone passes a check</span></li>",
            escape(&p.since),
            escape(&p.code),
            escape(&p.message)
        )),
        None => h.push_str("<li class=\"ok\">设备正常 <span class=\"en\">phone: no pause</span></li>"),
    }
    let blocking: Vec<&Alert> = s.alerts.iter().filter(|a| a.kind.blocks_claims()).collect();
    if s.pause.is_none() && blocking.is_empty() {
        h.push_str("<li class=\"ok\">领取中 <span class=\"en\">claiming runs</span></li>");
    } else if !blocking.is_empty() {
        let kinds: Vec<&str> = blocking.iter().map(|a| a.kind.as_str()).collect();
        h.push_str(&format!(
            "<li class=\"bad\">领取已停止 <span class=\"en\">claiming stopped until the alerts below are acknowledged: {}</span></li>",
            escape(&kinds.join(", "))
        ));
    } else {
        h.push_str("<li class=\"warn\">领取暂停 <span class=\"en\">claiming paused for the phone</span></li>");
    }
    for (why, label) in [
        (&s.clock_skew, "时钟偏差 clock skew"),
        (&s.version_hold, "PDD 版本 PDD version"),
        (&s.account_refusal, "账号 account"),
        (&s.live_note, "实单条件 live requirements"),
    ] {
        if let Some(w) = why {
            h.push_str(&format!(
                "<li class=\"warn\">仅 dry_run <span class=\"en\">live held back ({label}): {} — collects and dry runs continue</span></li>",
                escape(w)
            ));
        }
    }
    if let Some(c) = &s.live_cap {
        h.push_str(&format!(
            "<li class=\"warn\">live 上限 <span class=\"en\">live capped until {}: {}</span></li>",
            escape(&c.until),
            escape(&c.reason)
        ));
    }
    if let Some(w) = &s.claim_wait {
        let why = match w.retry_after_secs {
            Some(n) => format!("the Admin asked for Retry-After {n} s"),
            None => format!("after: {}", w.reason),
        };
        h.push_str(&format!(
            "<li class=\"warn\">领取等待至 {until} <span class=\"en\">claiming waits until {until}: {}</span></li>",
            escape(&why),
            until = escape(&w.until),
        ));
    }
    if let Some(st) = s.settings.as_ref() {
        match &st.registration {
            Some(r) if r.state == "ok" => h.push_str(&format!(
                "<li class=\"ok\">已注册 <span class=\"en\">registered at {}</span></li>",
                escape(&r.at)
            )),
            Some(r) => h.push_str(&format!(
                "<li class=\"warn\">注册 {} <span class=\"en\">registration {} ({}){}</span></li>",
                escape(&r.state),
                escape(&r.state),
                escape(&r.at),
                r.error
                    .as_deref()
                    .map(|e| format!(": {}", escape(e)))
                    .unwrap_or_default()
            )),
            None => h.push_str(
                "<li class=\"warn\">未注册 <span class=\"en\">never registered</span></li>",
            ),
        }
    }
    if s.undelivered > 0 {
        h.push_str(&format!(
            "<li>待发送 <span class=\"en\">{} outcome(s) waiting to reach the Admin</span></li>",
            s.undelivered
        ));
    }
    h.push_str("</ul>");
    // What needs a human.
    let needs = !s.alerts.is_empty()
        || !s.parked.is_empty()
        || !s.awaiting.is_empty()
        || !s.manual_review.is_empty();
    h.push_str("<h3>需要人工 <span class=\"en\">Needs a human</span></h3>");
    if !needs {
        h.push_str("<p class=\"ok\">无 <span class=\"en\">nothing</span></p>");
    }
    for a in &s.alerts {
        h.push_str(&format!(
            "<div class=\"human alert\" id=\"w{i}-alert-{id}\"><strong>{kind}</strong> #{id}{task} <span class=\"en\">({at})</span><br>{msg}\
<form class=\"inline\" method=\"post\" action=\"/ack\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<input type=\"hidden\" name=\"worker\" value=\"{i}\"><input type=\"hidden\" name=\"id\" value=\"{id}\">\
<button type=\"submit\">确认 Ack</button></form></div>",
            kind = escape(a.kind.as_str()),
            id = a.id,
            task = a
                .remote_task_id
                .as_deref()
                .map(|t| format!(" task <code>{}</code>", escape(t)))
                .unwrap_or_default(),
            at = escape(&a.raised_at),
            msg = escape(&a.message),
            csrf = escape(csrf),
        ));
    }
    for (id, task, kind, err) in &s.parked {
        h.push_str(&format!(
            "<div class=\"human parked\" id=\"w{i}-parked-{id}\"><strong>outbox parked</strong> #{id} {kind} task <code>{task}</code><br>{err}\
<form class=\"inline\" method=\"post\" action=\"/outbox/retry\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<input type=\"hidden\" name=\"worker\" value=\"{i}\"><input type=\"hidden\" name=\"id\" value=\"{id}\">\
<button type=\"submit\">重试 Retry</button></form></div>",
            kind = escape(kind),
            task = escape(task),
            err = escape(err.as_deref().unwrap_or("")),
            csrf = escape(csrf),
        ));
    }
    for (task, attempt, at) in &s.awaiting {
        h.push_str(&format!(
            "<div class=\"human awaiting\"><strong>订单待核对</strong> <span class=\"en\">order placed (task <code>{}</code>, attempt {}, submitted {}), waiting for the phone to reconcile it — never submitted again</span></div>",
            escape(task),
            escape(attempt),
            escape(at)
        ));
    }
    for (id, task, ty, at) in &s.manual_review {
        h.push_str(&format!(
            "<div class=\"human manual\" id=\"w{i}-review-{id}\"><strong>manual_review</strong> {ty} task <code>{task}</code> <span class=\"en\">({at}) — check the order in PDD and on the Admin, then mark it reviewed</span>\
<form class=\"inline\" method=\"post\" action=\"/review\"><input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">\
<input type=\"hidden\" name=\"worker\" value=\"{i}\"><input type=\"hidden\" name=\"id\" value=\"{id}\">\
<button type=\"submit\">已处理 Reviewed</button></form></div>",
            ty = escape(ty),
            task = escape(task),
            at = escape(at),
            csrf = escape(csrf),
        ));
    }
    // The last few outcomes (the whole list is on 历史 History).
    h.push_str("<h3>最近任务 <span class=\"en\">Recent tasks</span></h3>");
    if s.recent.is_empty() {
        h.push_str("<p>无 <span class=\"en\">none yet</span></p>");
    } else {
        h.push_str("<table class=\"recent\">");
        for (task, ty, st, at) in &s.recent {
            let class = match st.as_str() {
                "succeeded" => "ok",
                "manual_review" | "failed" => "bad",
                _ => "warn",
            };
            h.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td><td class=\"{class}\">{}</td><td><span class=\"en\">{}</span></td></tr>",
                escape(task),
                escape(ty),
                escape(st),
                escape(at)
            ));
        }
        h.push_str("</table>");
    }
    h.push_str("</section>");
    h
}

/// Every worker's section, now.
async fn render_all(state: &ConsoleState) -> Vec<String> {
    let workers = state.workers.clone();
    let csrf = state.csrf().to_string();
    let snaps = tokio::task::spawn_blocking(move || {
        workers
            .iter()
            .map(|w| snapshot(w).map_err(|e| e.to_string()))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    let now = Utc::now();
    state
        .workers
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let snap = match snaps.get(i) {
                Some(Ok(s)) => Ok(s),
                Some(Err(e)) => Err(e.as_str()),
                None => Err("not read"),
            };
            render_worker(i, w, w.progress.current().as_ref(), snap, &csrf, now)
        })
        .collect()
}

async fn status_page(State(state): State<ConsoleState>) -> Response {
    let sections = render_all(&state).await;
    let body = if sections.is_empty() {
        "<p>没有设备 <span class=\"en\">no worker</span></p>".to_string()
    } else {
        sections.concat()
    };
    page(Tab::Status, "状态 Status", &body, true).into_response()
}

/// The live stream: each worker section that changed, as a `fragment` event.
async fn events(
    State(state): State<ConsoleState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    Sse::new(fragments(state)).keep_alive(KeepAlive::default())
}

/// The `fragment` events: every section once at the start, then each one that changed
/// at a board change or a re-read.
pub fn fragments(state: ConsoleState) -> impl Stream<Item = Result<Event, Infallible>> {
    struct Feed {
        state: ConsoleState,
        rxs: Vec<tokio::sync::watch::Receiver<Option<Current>>>,
        last: Vec<String>,
        queue: std::collections::VecDeque<Event>,
        started: bool,
    }
    let rxs = state
        .workers
        .iter()
        .map(|w| w.progress.subscribe())
        .collect();
    let feed = Feed {
        state,
        rxs,
        last: Vec::new(),
        queue: Default::default(),
        started: false,
    };
    futures::stream::unfold(feed, |mut f| async move {
        loop {
            if let Some(e) = f.queue.pop_front() {
                return Some((Ok(e), f));
            }
            if f.started {
                // A board changed, or the re-read is due (bounded wait).
                {
                    let changes = f
                        .rxs
                        .iter_mut()
                        .map(|r| Box::pin(r.changed()))
                        .collect::<Vec<_>>();
                    if changes.is_empty() {
                        tokio::time::sleep(REREAD).await;
                    } else {
                        let _ = tokio::time::timeout(REREAD, futures::future::select_all(changes))
                            .await;
                    }
                }
                for r in &mut f.rxs {
                    r.borrow_and_update();
                }
            }
            f.started = true;
            let sections = render_all(&f.state).await;
            for (i, html) in sections.into_iter().enumerate() {
                if f.last.get(i) == Some(&html) {
                    continue;
                }
                let data = serde_json::json!({"id": format!("w{i}"), "html": html}).to_string();
                f.queue
                    .push_back(Event::default().event("fragment").data(data));
                if i < f.last.len() {
                    f.last[i] = html;
                } else {
                    f.last.push(html);
                }
            }
        }
    })
}

/// A page-level error for the store.
pub fn store_error(e: impl std::fmt::Display) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        Html(format!(
            "<p>store unavailable: {}</p>",
            escape(&e.to_string())
        )),
    )
        .into_response()
}
