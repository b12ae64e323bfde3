//! 状态 Status (`/`): the phone farm — one card per worker (phone), in a grid. Each card
//! has the phone's live screenshot (`screens`: at most one per phone every few seconds,
//! never during a money step), its state at a glance (工作中 working with the step in
//! hand / 空闲 idle / 暂停 paused and why / 需要人工 needs a human), today's counts
//! (succeeded, failed, `manual_review`, in the console host's local day), the task in
//! hand with the steps it went through, the phone's health (the last device pause, the
//! backend), whether claiming runs or is stopped and why, and every condition that needs
//! a human — open operator alerts (with an **ack** button: `cmautobuy-client ack N`),
//! parked outbox items (with a **retry** button: `cmautobuy-client outbox retry N`),
//! `manual_review` tasks (with a **reviewed** button), orders waiting to be reconciled,
//! live held back — kept on screen until they are dealt with; the last outcomes with
//! their reason, Chinese first.
//!
//! Live: `/events` is a server-sent event stream of `fragment` events
//! (`{"id": "w0", "html": "<section …>"}`), one per card whose live part changed — at
//! every change of a progress board (each step of the task in hand), and at a bounded
//! re-read of the store every [`REREAD`]; the page's script swaps the section in. Beside
//! them, `step` events (`{"worker", "task", "step", "action", "actions", "money"}`) carry
//! each step of a task in hand as it comes. With JavaScript off the page is the same
//! after a reload.

use std::convert::Infallible;
use std::time::Duration;

use askama::Template;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::Response;
use axum::routing::get;
use axum::Router;
use chrono::{DateTime, Utc};
use futures::Stream;

use super::layout::{message, render};
use super::screens::{Held, ShotNote};
use super::state::{ConsoleState, ConsoleWorker};
use super::view::{outcome_reason, step_zh, Reason, Shell, Tab, When, Zone};
use crate::progress::{is_money_step, Current};
use crate::store::{Alert, DayCounts, DevicePause, HistoryTask, LiveCapNote, Settings, StoreError};

/// How often the live stream re-reads the stores when no board changed.
pub const REREAD: Duration = Duration::from_secs(2);

/// Recent tasks shown with their outcome (newest first).
const RECENT_SHOWN: u32 = 5;

/// Recent `manual_review` tasks shown (newest first).
const MANUAL_REVIEW_SHOWN: usize = 20;

/// `/` and `/events`.
pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/", get(status_page))
        .route("/events", get(events))
}

/// What one worker's card shows, read from its store (blocking).
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
    /// Why live waits (the self-test, or no address fingerprint), as the
    /// claim loop recorded it.
    pub live_note: Option<String>,
    pub live_cap: Option<LiveCapNote>,
    /// The claim loop's backoff after a transient claim error (the Admin's
    /// `Retry-After` above all).
    pub claim_wait: Option<crate::store::ClaimWait>,
    /// The newest tasks, with their last outcome and failure as reported.
    pub recent: Vec<HistoryTask>,
    /// Runs that ended today (the page's local day).
    pub today: DayCounts,
}

/// Reads a worker's snapshot; `today` is the start of the local day.
pub fn snapshot(w: &ConsoleWorker, today: DateTime<Utc>) -> Result<Snapshot, StoreError> {
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
        recent: s.history_tasks(None, RECENT_SHOWN)?,
        today: s.outcomes_since(today)?,
        clock_skew: s.clock_skew()?,
        version_hold: s.pdd_version_hold()?,
        account_refusal: s.account_refusal()?,
        live_note: s.self_test_note()?,
        live_cap: s.live_cap()?,
        claim_wait: s.claim_wait()?,
    })
}

/// The card's state at a glance.
#[derive(Clone, Debug)]
pub struct Badge {
    /// `working`, `idle`, `paused` or `human`.
    pub class: &'static str,
    pub zh: String,
    pub en: String,
}

/// One line of text, Chinese first.
#[derive(Clone, Debug)]
pub struct Line {
    pub class: &'static str,
    pub zh: String,
    pub en: String,
}

/// The device backend the last task used, and why it fell back from u2.
#[derive(Clone, Debug)]
pub struct BackendView {
    pub name: String,
    pub fallback: Option<String>,
}

/// The task in hand.
#[derive(Clone, Debug)]
pub struct CurrentView {
    pub task_id: String,
    pub task_type: String,
    pub mode: String,
    pub step: String,
    pub step_zh: String,
    pub action: String,
    pub actions: u32,
    pub elapsed: i64,
    pub started: When,
    pub trail: Vec<TrailView>,
}

/// A step the task entered.
#[derive(Clone, Debug)]
pub struct TrailView {
    pub step: String,
    pub zh: String,
    pub at: When,
    pub money: bool,
    /// The step in hand.
    pub now: bool,
}

#[derive(Clone, Debug)]
pub struct AlertView {
    pub id: i64,
    pub kind: String,
    /// The kind's title, effect and next step (Chinese first).
    pub title: crate::reasons::OperatorText,
    pub task: Option<String>,
    pub at: When,
    pub message: String,
}

#[derive(Clone, Debug)]
pub struct ParkedView {
    pub id: i64,
    pub kind: String,
    pub task: String,
    pub error: String,
}

#[derive(Clone, Debug)]
pub struct AwaitingView {
    pub task: String,
    pub attempt: String,
    pub at: When,
}

#[derive(Clone, Debug)]
pub struct ManualView {
    pub id: i64,
    pub task: String,
    pub ty: String,
    pub at: When,
}

#[derive(Clone, Debug)]
pub struct RecentView {
    pub task: String,
    pub ty: String,
    pub state: String,
    pub class: &'static str,
    pub at: When,
    pub reason: Option<Reason>,
}

/// One phone's card (its `<section class="worker">` is what `/events` swaps in).
#[derive(Clone, Debug)]
pub struct Card {
    pub i: usize,
    pub label: String,
    pub has_screen: bool,
    pub badge: Badge,
    /// The note under the screenshot (when it is old, held back or missing).
    pub shot: Option<Line>,
    pub today: DayCounts,
    /// The local day `today` counts (`2026-12-02`).
    pub day: String,
    pub current: Option<CurrentView>,
    pub store_error: Option<String>,
    pub backend: Option<BackendView>,
    pub lines: Vec<Line>,
    pub needs_human: bool,
    pub alerts: Vec<AlertView>,
    pub parked: Vec<ParkedView>,
    pub awaiting: Vec<AwaitingView>,
    pub manual: Vec<ManualView>,
    pub recent: Vec<RecentView>,
}

/// `/`: every phone's card.
#[derive(Template)]
#[template(path = "console/status.html")]
pub struct StatusPage<'a> {
    pub shell: Shell,
    pub cards: &'a [Card],
    pub csrf: &'a str,
    /// How often the page's script reloads each screenshot.
    pub refresh_secs: u64,
}

/// One card's live part (a `fragment` event of `/events`).
#[derive(Template)]
#[template(path = "console/worker.html")]
pub struct WorkerFragment<'a> {
    pub card: &'a Card,
    pub csrf: &'a str,
}

/// The class of a local task state in the recent list.
fn state_class(state: &str) -> &'static str {
    match state {
        "succeeded" => "ok",
        "manual_review" | "failed" => "bad",
        _ => "warn",
    }
}

/// The note under the screenshot, from what holds screenshots back now — the task's
/// money step on the board, a marked run waiting for its outcome — else the last
/// attempt's failure, else when the picture shown was taken.
fn shot_line(
    note: &ShotNote,
    money_now: Option<&str>,
    marked_now: bool,
    zone: &Zone,
) -> Option<Line> {
    let taken = note.taken_at.map(|t| zone.when(t).short);
    let (shown, shown_en) = match taken.as_deref() {
        Some(t) => (
            format!("显示 {t} 的截图"),
            format!("showing the screenshot of {t}"),
        ),
        None => ("还没有截图".into(), "no screenshot yet".into()),
    };
    if let Some(step) = money_now {
        return Some(Line {
            class: "held",
            zh: format!("资金步骤（{}）中不截图，{shown}", step_zh(step)),
            en: format!("no screenshot during a money step ({step}): {shown_en}"),
        });
    }
    if marked_now {
        return Some(Line {
            class: "held",
            zh: format!("订单核对完成前不截图，{shown}"),
            en: format!("no screenshot until the marked order is reconciled: {shown_en}"),
        });
    }
    match &note.held {
        Some(Held::Failed { code, message }) => Some(Line {
            class: "held",
            zh: format!("截图失败（{code}），{shown}"),
            en: format!("the screenshot failed: {message}; {shown_en}"),
        }),
        _ => taken.map(|t| Line {
            class: "",
            zh: format!("截图 {t}"),
            en: format!("screenshot of {t}"),
        }),
    }
}

/// The task in hand.
fn current_view(c: &Current, now: DateTime<Utc>, zone: &Zone) -> CurrentView {
    let step = c.step.clone().unwrap_or_else(|| "-".into());
    let last = c.trail.len().saturating_sub(1);
    CurrentView {
        task_id: c.task_id.clone(),
        task_type: c.task_type.clone(),
        mode: c.mode.clone(),
        step_zh: step_zh(&step).to_string(),
        step,
        action: c.action.clone().unwrap_or_else(|| "-".into()),
        actions: c.actions,
        elapsed: (now - c.started_at).num_seconds().max(0),
        started: zone.when(c.started_at),
        trail: c
            .trail
            .iter()
            .enumerate()
            .map(|(i, m)| TrailView {
                zh: step_zh(&m.step).to_string(),
                money: is_money_step(&m.step),
                now: i == last,
                at: zone.when(m.at),
                step: m.step.clone(),
            })
            .collect(),
    }
}

fn line(class: &'static str, zh: String, en: String) -> Line {
    Line { class, zh, en }
}

/// The health lines: the device pause, claiming, live held back, caps, the claim
/// backoff, the registration, undelivered outcomes.
fn health(s: &Snapshot, zone: &Zone) -> Vec<Line> {
    let mut lines = Vec::new();
    match &s.pause {
        Some(p) => {
            let why = crate::reasons::for_code(&cmautobuy_contract::FailureCode::parse(&p.code));
            lines.push(line(
                "warn",
                format!(
                    "设备暂停（自 {}）：{} — {}",
                    zone.when_text(&p.since).full,
                    why.zh,
                    why.next_zh
                ),
                format!(
                    "paused for the phone since {}: [{}] {} — resumes by itself when the phone passes a check",
                    p.since, p.code, p.message
                ),
            ))
        }
        None => lines.push(line("ok", "设备正常".into(), "phone: no pause".into())),
    }
    let blocking: Vec<&str> = s
        .alerts
        .iter()
        .filter(|a| a.kind.blocks_claims())
        .map(|a| a.kind.as_str())
        .collect();
    if s.pause.is_none() && blocking.is_empty() {
        lines.push(line("ok", "领取中".into(), "claiming runs".into()));
    } else if !blocking.is_empty() {
        lines.push(line(
            "bad",
            "领取已停止：处理下方告警后点确认".into(),
            format!(
                "claiming stopped until the alerts below are acknowledged: {}",
                blocking.join(", ")
            ),
        ));
    } else {
        lines.push(line(
            "warn",
            "领取暂停".into(),
            "claiming paused for the phone".into(),
        ));
    }
    for (why, zh, en) in [
        (&s.clock_skew, "时钟偏差", "clock skew"),
        (&s.version_hold, "拼多多版本未验证", "PDD version"),
        (&s.account_refusal, "账号检查", "account"),
        (&s.live_note, "实单条件未满足", "live requirements"),
    ] {
        if let Some(w) = why {
            lines.push(line(
                "warn",
                format!("仅 dry_run：{zh}"),
                format!("live held back ({en}): {w} — collects and dry runs continue"),
            ));
        }
    }
    if let Some(c) = &s.live_cap {
        lines.push(line(
            "warn",
            format!("实单达到上限，至 {}", zone.when_text(&c.until).full),
            format!("live capped until {}: {}", c.until, c.reason),
        ));
    }
    if let Some(w) = &s.claim_wait {
        let why = match w.retry_after_secs {
            Some(n) => format!("the Admin asked for Retry-After {n} s"),
            None => format!("after: {}", w.reason),
        };
        lines.push(line(
            "warn",
            format!("领取等待至 {}", zone.when_text(&w.until).full),
            format!("claiming waits until {}: {why}", w.until),
        ));
    }
    if let Some(st) = s.settings.as_ref() {
        match &st.registration {
            Some(r) if r.state == "ok" => lines.push(line(
                "ok",
                format!("已注册 {}", zone.when_text(&r.at).full),
                format!("registered at {}", r.at),
            )),
            Some(r) => lines.push(line(
                "warn",
                format!("注册 {}", r.state),
                format!(
                    "registration {} ({}){}",
                    r.state,
                    r.at,
                    r.error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default()
                ),
            )),
            None => lines.push(line("warn", "未注册".into(), "never registered".into())),
        }
    }
    if s.undelivered > 0 {
        lines.push(line(
            "",
            format!("待发送 {} 条", s.undelivered),
            format!("{} outcome(s) waiting to reach the Admin", s.undelivered),
        ));
    }
    lines
}

/// Worker `i`'s card.
pub fn card(
    i: usize,
    w: &ConsoleWorker,
    current: Option<&Current>,
    snap: Result<&Snapshot, &str>,
    now: DateTime<Utc>,
    zone: &Zone,
) -> Card {
    let mut card = Card {
        i,
        label: w.label.clone(),
        has_screen: w.screen.is_some(),
        badge: Badge {
            class: "idle",
            zh: "空闲".into(),
            en: "idle".into(),
        },
        shot: None,
        today: DayCounts::default(),
        day: zone
            .when(now)
            .full
            .get(..10)
            .unwrap_or_default()
            .to_string(),
        current: current.map(|c| current_view(c, now, zone)),
        store_error: None,
        backend: w
            .progress
            .backend()
            .map(|(name, fallback)| BackendView { name, fallback }),
        lines: Vec::new(),
        needs_human: false,
        alerts: Vec::new(),
        parked: Vec::new(),
        awaiting: Vec::new(),
        manual: Vec::new(),
        recent: Vec::new(),
    };
    let money_now = current.and_then(|c| c.money_step());
    let marked_now = snap.is_ok_and(|s| !s.awaiting.is_empty());
    card.shot = w
        .screen
        .as_ref()
        .and_then(|sc| shot_line(&sc.note(), money_now, marked_now, zone));
    let s = match snap {
        Ok(s) => s,
        Err(e) => {
            card.store_error = Some(e.to_string());
            card.badge = Badge {
                class: "human",
                zh: "存储不可读".into(),
                en: "store unavailable".into(),
            };
            return card;
        }
    };
    card.today = s.today;
    card.lines = health(s, zone);
    card.alerts = s
        .alerts
        .iter()
        .map(|a| AlertView {
            id: a.id,
            kind: a.kind.as_str().to_string(),
            title: a.kind.text(),
            task: a.remote_task_id.clone(),
            at: zone.when_text(&a.raised_at),
            message: a.message.clone(),
        })
        .collect();
    card.parked = s
        .parked
        .iter()
        .map(|(id, task, kind, err)| ParkedView {
            id: *id,
            kind: kind.clone(),
            task: task.clone(),
            error: err.clone().unwrap_or_default(),
        })
        .collect();
    card.awaiting = s
        .awaiting
        .iter()
        .map(|(task, attempt, at)| AwaitingView {
            task: task.clone(),
            attempt: attempt.clone(),
            at: zone.when_text(at),
        })
        .collect();
    card.manual = s
        .manual_review
        .iter()
        .map(|(id, task, ty, at)| ManualView {
            id: *id,
            task: task.clone(),
            ty: ty.clone(),
            at: zone.when_text(at),
        })
        .collect();
    card.recent = s
        .recent
        .iter()
        .map(|t| RecentView {
            task: t.remote_task_id.clone(),
            ty: t.task_type.clone(),
            class: state_class(&t.state),
            state: t.state.clone(),
            at: zone.when_text(&t.updated_at),
            reason: if t.state == "succeeded" {
                None
            } else {
                outcome_reason(t.last_outcome.as_deref(), t.last_failure.as_deref())
            },
        })
        .collect();
    card.needs_human = !card.alerts.is_empty()
        || !card.parked.is_empty()
        || !card.awaiting.is_empty()
        || !card.manual.is_empty();
    card.badge = if card.needs_human {
        Badge {
            class: "human",
            zh: "需要人工".into(),
            en: "needs a human: see below".into(),
        }
    } else if let Some(p) = &s.pause {
        let why = crate::reasons::for_code(&cmautobuy_contract::FailureCode::parse(&p.code));
        Badge {
            class: "paused",
            zh: format!("暂停：{}", why.zh),
            en: format!("paused: [{}] {}", p.code, why.en),
        }
    } else if let Some(w) = &s.claim_wait {
        Badge {
            class: "paused",
            zh: "等待领取".into(),
            en: format!("claiming waits until {}", w.until),
        }
    } else if let Some(c) = &card.current {
        Badge {
            class: "working",
            zh: format!("工作中 · {}", c.step_zh),
            en: format!("working: {} {} · {}", c.task_type, c.task_id, c.step),
        }
    } else {
        card.badge.clone()
    };
    card
}

/// Every worker's card, now (the stores read on a blocking thread).
pub async fn cards(state: &ConsoleState) -> Vec<Card> {
    let workers = state.workers.clone();
    let now = Utc::now();
    let zone = state.zone;
    let today = zone.day_start(now);
    let snaps = tokio::task::spawn_blocking(move || {
        workers
            .iter()
            .map(|w| snapshot(w, today).map_err(|e| e.to_string()))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
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
            card(i, w, w.progress.current().as_ref(), snap, now, &zone)
        })
        .collect()
}

async fn status_page(State(state): State<ConsoleState>) -> Response {
    let cards = cards(&state).await;
    render(&StatusPage {
        shell: Shell::new(Tab::Status, "状态 Status", true),
        cards: &cards,
        csrf: state.csrf(),
        refresh_secs: super::screens::SHOT_EVERY.as_secs().max(1),
    })
}

/// The live stream: each card that changed, as a `fragment` event, and each step of a
/// task in hand, as a `step` event.
async fn events(
    State(state): State<ConsoleState>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    Sse::new(fragments(state)).keep_alive(KeepAlive::default())
}

/// The `fragment` events: every card once at the start, then each one that changed at a
/// board change or a re-read; and a `step` event for each new step of a task in hand.
pub fn fragments(state: ConsoleState) -> impl Stream<Item = Result<Event, Infallible>> {
    struct Feed {
        state: ConsoleState,
        rxs: Vec<tokio::sync::watch::Receiver<Option<Current>>>,
        last: Vec<String>,
        steps: Vec<Option<serde_json::Value>>,
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
        steps: Vec::new(),
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
            // Each task's step as it comes.
            for (i, w) in f.state.workers.iter().enumerate() {
                let step = w.progress.current().map(|c| {
                    serde_json::json!({
                        "worker": i, "task": c.task_id, "step": c.step,
                        "action": c.action, "actions": c.actions,
                        "money": c.money_step().is_some(),
                    })
                });
                let changed = f.steps.get(i).map(|s| s.as_ref().map(|v| &v["step"]))
                    != Some(step.as_ref().map(|v| &v["step"]));
                if changed {
                    if let Some(v) = &step {
                        f.queue
                            .push_back(Event::default().event("step").data(v.to_string()));
                    }
                }
                if i < f.steps.len() {
                    f.steps[i] = step;
                } else {
                    f.steps.push(step);
                }
            }
            let csrf = f.state.csrf().to_string();
            let cards = cards(&f.state).await;
            for (i, card) in cards.iter().enumerate() {
                let html = WorkerFragment { card, csrf: &csrf }
                    .render()
                    .unwrap_or_default();
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
    message(
        StatusCode::SERVICE_UNAVAILABLE,
        Tab::None,
        "store unavailable",
        format!("存储不可读 store unavailable: {e}"),
    )
}
