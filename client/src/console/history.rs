//! 历史 History: the tasks a worker ran, newest first and paged
//! (`/history?w=N&before=ID`) with the claim time in the host's zone and each outcome's
//! reason and next step (Chinese first); one task (`/history/task/{id}?w=N`) with its
//! reason, its collected options and prices (the collect result's `pdd_data.skus`, ¥ from
//! integer fen) or its purchase, and its attempts; one attempt in the artifact viewer
//! (`/history/attempt/{attempt_id}`, [`crate::viewer`]: the dumps drawn with the
//! recognisers' findings over the screenshot of the same screen — a money step's is the
//! task's own — or over the dump's wireframe with its text); and the attempt's files
//! read-only (`/artifacts/{attempt_id}/{file}`).
//!
//! Files are served only for an attempt some worker's store knows, from that attempt's
//! folder (`{artifacts root}/{task}/{attempt}/`, the names made safe as
//! [`crate::artifacts`] makes them), and only under a name its manifest lists
//! ([`viewer::listed_file`]): no request can name a path. Artifacts hold no token
//! (nothing that writes them sees it); a test scans every byte served anyway.

use std::path::PathBuf;

use askama::Template;
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

use super::layout::{message, render};
use super::state::{ConsoleState, ConsoleWorker};
use super::view::{outcome_class, outcome_reason, Reason, Shell, Tab, When, Zone};
use crate::artifacts::safe_component;
use crate::store::{HistoryRun, HistoryTask, StoredTask};
use crate::viewer::{self, Reading, ViewerBody};

/// Tasks per history page.
pub const PAGE_SIZE: u32 = 50;

/// The history routes.
pub fn routes() -> Router<ConsoleState> {
    Router::new()
        .route("/history", get(tasks_page))
        .route("/history/task/{id}", get(task_page))
        .route("/history/attempt/{attempt}", get(attempt_page))
        .route("/artifacts/{attempt}/{file}", get(artifact_file))
        .route("/viewer.css", get(viewer_css))
}

#[derive(Deserialize, Default)]
struct ListQuery {
    w: Option<usize>,
    before: Option<i64>,
}

#[derive(Deserialize, Default)]
struct WorkerQuery {
    w: Option<usize>,
}

fn not_found(what: &str) -> Response {
    message(StatusCode::NOT_FOUND, Tab::History, "not found", what)
}

fn unavailable(e: impl std::fmt::Display) -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        format!("store unavailable: {e}\n"),
    )
        .into_response()
}

/// Runs a store read off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, crate::store::StoreError> + Send + 'static,
) -> Result<T, Response> {
    match tokio::task::spawn_blocking(f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(unavailable(e)),
        Err(_) => Err((StatusCode::INTERNAL_SERVER_ERROR, "failed\n").into_response()),
    }
}

/// A phone of the picker.
pub struct PhonePick {
    pub i: usize,
    pub label: String,
    pub current: bool,
}

/// A task of the list.
pub struct TaskRow {
    pub id: i64,
    pub remote: String,
    pub ty: String,
    pub mode: String,
    pub state: String,
    pub attempts: i64,
    pub outcome: Option<String>,
    pub class: &'static str,
    pub reason: Option<Reason>,
    pub orders: String,
    pub codes: String,
    pub claimed: When,
}

/// `/history`.
#[derive(Template)]
#[template(path = "console/history.html")]
pub struct HistoryPage {
    pub shell: Shell,
    pub w: usize,
    pub phones: Vec<PhonePick>,
    pub tasks: Vec<TaskRow>,
    /// The local id the "older" link starts below (a full page).
    pub older: Option<i64>,
}

impl HistoryPage {
    pub fn new(
        state: &ConsoleState,
        w: usize,
        tasks: &[HistoryTask],
        page_size: u32,
    ) -> HistoryPage {
        let zone = state.zone;
        HistoryPage {
            shell: Shell::new(Tab::History, "历史 History", false),
            w,
            phones: state
                .workers
                .iter()
                .enumerate()
                .map(|(i, wk)| PhonePick {
                    i,
                    label: wk.label.clone(),
                    current: i == w,
                })
                .collect(),
            tasks: tasks
                .iter()
                .map(|t| TaskRow {
                    id: t.id,
                    remote: t.remote_task_id.clone(),
                    ty: t.task_type.clone(),
                    mode: t.execution_mode.clone(),
                    state: t.state.clone(),
                    attempts: t.attempts,
                    class: t.last_outcome.as_deref().map_or("", outcome_class),
                    reason: outcome_reason(t.last_outcome.as_deref(), t.last_failure.as_deref())
                        .filter(|_| t.last_outcome.as_deref() != Some("succeeded")),
                    outcome: t.last_outcome.clone(),
                    orders: t.order_numbers.join(", "),
                    codes: t.codes.join(", "),
                    claimed: zone.when_text(&t.claimed_at),
                })
                .collect(),
            older: (tasks.len() as u32 >= page_size)
                .then(|| tasks.last().map(|t| t.id))
                .flatten(),
        }
    }
}

async fn tasks_page(State(state): State<ConsoleState>, Query(q): Query<ListQuery>) -> Response {
    let w = q.w.unwrap_or(0);
    let Some(worker) = state.worker(w).cloned() else {
        return not_found("no such phone");
    };
    let before = q.before;
    let tasks = match blocking(move || worker.store.history_tasks(before, PAGE_SIZE)).await {
        Ok(t) => t,
        Err(r) => return r,
    };
    render(&HistoryPage::new(&state, w, &tasks, PAGE_SIZE))
}

/// One collected SKU.
pub struct SkuRow {
    /// The option of each dimension, in the page's order.
    pub options: Vec<String>,
    /// `¥12.50` (from integer fen), or what the page showed when no price was read.
    pub price: String,
    pub available: bool,
}

/// A collect result's `pdd_data`, as the task page shows it.
pub struct Collected {
    pub goods_id: String,
    pub title: String,
    pub shop: Option<String>,
    pub granularity: String,
    /// The dimensions' names, in the page's order.
    pub dims: Vec<String>,
    pub skus: Vec<SkuRow>,
}

impl Collected {
    /// From a result body (`pdd_data`); `None` when it has none that reads.
    pub fn from_result(body: &serde_json::Value) -> Option<Collected> {
        let d: cmautobuy_contract::PddData =
            serde_json::from_value(body.get("pdd_data")?.clone()).ok()?;
        let keys: Vec<&str> = d.dimensions.iter().map(|x| x.key.as_str()).collect();
        Some(Collected {
            goods_id: d.goods_id.clone(),
            title: d.title.clone().unwrap_or_default(),
            shop: d.shop_name.clone().filter(|s| !s.is_empty()),
            granularity: serde_json::to_value(d.price_granularity)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_default(),
            dims: d.dimensions.iter().map(|x| x.name.clone()).collect(),
            skus: d
                .skus
                .iter()
                .map(|s| SkuRow {
                    options: keys
                        .iter()
                        .map(|k| s.options.get(*k).cloned().unwrap_or_default())
                        .collect(),
                    price: match (s.price_cent, &s.raw_price) {
                        (Some(p), _) => p.to_string(),
                        (None, Some(raw)) => format!("— ({raw})"),
                        (None, None) => "—".into(),
                    },
                    available: s.available,
                })
                .collect(),
        })
    }
}

/// A purchase result, as the task page shows it.
pub struct PurchaseView {
    pub mode: String,
    pub order: String,
    pub options: String,
    pub quantity: i64,
    pub total: String,
}

impl PurchaseView {
    fn from_result(body: &serde_json::Value) -> Option<PurchaseView> {
        let p: cmautobuy_contract::PurchaseResult =
            serde_json::from_value(body.get("purchase")?.clone()).ok()?;
        Some(PurchaseView {
            mode: p.mode.as_str().to_string(),
            order: p.order_sn.clone().unwrap_or_else(|| "—".into()),
            options: p
                .options
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect::<Vec<_>>()
                .join(" · "),
            quantity: p.quantity,
            total: p
                .confirmed_total_cent
                .map(|f| f.to_string())
                .unwrap_or_else(|| "—".into()),
        })
    }
}

/// An attempt of the task page.
pub struct RunRow {
    pub attempt: String,
    pub started: When,
    pub finished: Option<When>,
    pub marked: Option<When>,
    pub outcome: Option<String>,
    pub class: &'static str,
    pub reason: Option<Reason>,
}

/// The reason of a run's outcome, from what it reported.
fn run_reason(r: &HistoryRun) -> Option<Reason> {
    if r.outcome.as_deref() == Some("succeeded") {
        return None;
    }
    let failure = r
        .report
        .as_ref()
        .filter(|rep| rep.kind == "failure")
        .map(|rep| rep.body.as_str());
    outcome_reason(r.outcome.as_deref(), failure)
}

fn run_row(r: &HistoryRun, zone: &Zone) -> RunRow {
    RunRow {
        attempt: r.attempt_id.clone(),
        started: zone.when_text(&r.started_at),
        finished: r.finished_at.as_deref().map(|t| zone.when_text(t)),
        marked: r
            .irreversible_action_at
            .as_deref()
            .map(|t| zone.when_text(t)),
        class: r.outcome.as_deref().map_or("", outcome_class),
        reason: run_reason(r),
        outcome: r.outcome.clone(),
    }
}

/// `/history/task/{id}`.
#[derive(Template)]
#[template(path = "console/task.html")]
pub struct TaskPage<'a> {
    pub shell: Shell,
    pub w: usize,
    pub task: &'a StoredTask,
    pub claimed: When,
    /// The newest attempt's reason (none after a success).
    pub reason: Option<Reason>,
    pub collected: Option<Collected>,
    pub purchase: Option<PurchaseView>,
    pub runs: Vec<RunRow>,
}

impl<'a> TaskPage<'a> {
    pub fn new(zone: &Zone, w: usize, task: &'a StoredTask, runs: &[HistoryRun]) -> Self {
        // The newest result that says something (a collect's data, a purchase).
        let results: Vec<serde_json::Value> = runs
            .iter()
            .rev()
            .filter_map(|r| r.report.as_ref())
            .filter(|rep| rep.kind == "result")
            .filter_map(|rep| serde_json::from_str(&rep.body).ok())
            .collect();
        TaskPage {
            shell: Shell::new(Tab::History, format!("任务 {}", task.remote_task_id), false),
            w,
            task,
            claimed: zone.when_text(&task.claimed_at),
            reason: runs.last().and_then(run_reason),
            collected: results.iter().find_map(Collected::from_result),
            purchase: results.iter().find_map(PurchaseView::from_result),
            runs: runs.iter().map(|r| run_row(r, zone)).collect(),
        }
    }
}

async fn task_page(
    State(state): State<ConsoleState>,
    Path(id): Path<i64>,
    Query(q): Query<WorkerQuery>,
) -> Response {
    let w = q.w.unwrap_or(0);
    let Some(worker) = state.worker(w).cloned() else {
        return not_found("no such phone");
    };
    let read = blocking(move || {
        let task = match worker.store.task(id) {
            Ok(t) => t,
            Err(crate::store::StoreError::NotFound(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        Ok(Some((task, worker.store.history_runs(id)?)))
    })
    .await;
    match read {
        Ok(Some((task, runs))) => render(&TaskPage::new(&state.zone, w, &task, &runs)),
        Ok(None) => not_found("no such task"),
        Err(r) => r,
    }
}

/// The attempt with this id in some worker's store, with that worker's artifact folder.
fn find_attempt(
    workers: &[ConsoleWorker],
    attempt: &str,
) -> Result<Option<(usize, HistoryRun, PathBuf)>, crate::store::StoreError> {
    for (i, w) in workers.iter().enumerate() {
        if let Some(run) = w.store.history_run(attempt)? {
            let dir = w
                .artifacts_root
                .join(safe_component(&run.remote_task_id))
                .join(safe_component(&run.attempt_id));
            return Ok(Some((i, run, dir)));
        }
    }
    Ok(None)
}

/// `/history/attempt/{id}`.
#[derive(Template)]
#[template(path = "console/attempt.html")]
pub struct AttemptPage<'a> {
    pub shell: Shell,
    pub w: usize,
    pub task_id: i64,
    pub remote: String,
    pub attempt: String,
    pub outcome: Option<String>,
    pub class: &'static str,
    pub reason: Option<Reason>,
    pub started: When,
    pub finished: Option<When>,
    pub marked: Option<When>,
    pub viewer: Option<ViewerBody<'a>>,
    pub viewer_error: String,
}

/// Percent-encodes an id for a URL path segment (`percent-encoding`: RFC 3986's
/// unreserved characters stay), as the templates' `urlencode_strict` does.
fn path_segment(s: &str) -> String {
    const SEGMENT: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(s, SEGMENT).to_string()
}

async fn attempt_page(State(state): State<ConsoleState>, Path(attempt): Path<String>) -> Response {
    let workers = state.workers.clone();
    let read = blocking(move || {
        let Some((w, run, dir)) = find_attempt(&workers, &attempt)? else {
            return Ok(None);
        };
        Ok(Some((w, run, viewer::load(&dir))))
    })
    .await;
    let (w, run, view) = match read {
        Ok(Some(x)) => x,
        Ok(None) => return not_found("no such attempt"),
        Err(r) => return r,
    };
    let zone = state.zone;
    let base = format!("/artifacts/{}/", path_segment(&run.attempt_id));
    let file_url = |f: &str| format!("{base}{}", path_segment(f));
    let (viewer, viewer_error) = match &view {
        Ok(v) => (Some(ViewerBody::new(v, &file_url)), String::new()),
        Err(e) => (None, e.to_string()),
    };
    let row = run_row(&run, &zone);
    render(&AttemptPage {
        shell: Shell::new(Tab::History, format!("尝试 {}", run.attempt_id), false),
        w,
        task_id: run.task_id,
        remote: run.remote_task_id.clone(),
        attempt: run.attempt_id.clone(),
        outcome: row.outcome,
        class: row.class,
        reason: row.reason,
        started: row.started,
        finished: row.finished,
        marked: row.marked,
        viewer,
        viewer_error,
    })
}

async fn artifact_file(
    State(state): State<ConsoleState>,
    Path((attempt, file)): Path<(String, String)>,
) -> Response {
    let workers = state.workers.clone();
    let read = blocking(move || {
        let Some((_, _, dir)) = find_attempt(&workers, &attempt)? else {
            return Ok(None);
        };
        let Some(manifest) = viewer::read_manifest(&dir) else {
            return Ok(None);
        };
        if !viewer::listed_file(&manifest, &file) {
            return Ok(None);
        }
        Ok(std::fs::read(dir.join(&file)).ok().map(|b| (file, b)))
    })
    .await;
    match read {
        Ok(Some((file, bytes))) => (
            [
                (header::CONTENT_TYPE, viewer::content_type(&file)),
                // Shown, never run: a dump is data even when a browser could render it.
                (header::CONTENT_DISPOSITION, "inline"),
            ],
            bytes,
        )
            .into_response(),
        Ok(None) => (StatusCode::NOT_FOUND, "no such artifact\n").into_response(),
        Err(r) => r,
    }
}

async fn viewer_css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        viewer::CSS,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use axum::http::{header, StatusCode};
    use tower::ServiceExt;

    use super::super::router::router;
    use super::super::router_tests::{fixture, get, state, TOKEN};
    use crate::artifacts::{AttemptArtifacts, TraceRecord};
    use crate::store::{OutboxDraft, OutboxKind, TaskState};

    const SHEET: &str = include_str!("../../../fixtures/screens/sku_sheet_text_two_dims.xml");
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n-not-really-a-picture";

    async fn fetch(app: &axum::Router, path: &str) -> (StatusCode, String, Vec<u8>) {
        let res = app.clone().oneshot(get(path)).await.unwrap();
        let status = res.status();
        let ct = res
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let bytes = axum::body::to_bytes(res.into_body(), 1 << 24)
            .await
            .unwrap()
            .to_vec();
        (status, ct, bytes)
    }

    #[tokio::test]
    async fn history_lists_the_task_its_attempt_and_the_viewer_serves_only_listed_files() {
        let f = fixture();
        let st = state(&f);
        let root = st.workers[0].artifacts_root.clone();
        let now = chrono::Utc::now();
        let task: cmautobuy_contract::Task = serde_json::from_value(serde_json::json!({
            "id": "T-<b>1", "type": "purchase", "version": 1, "execution_mode": "dry_run",
            "payload": {"goods_id": "1", "goods_url": "u", "options": {"颜色": "雾霾蓝"},
                        "quantity": 1, "max_price_cent": 9000}
        }))
        .unwrap();
        let id = f.store.save_claimed_task(&task, "{}", now).unwrap();
        let run = f.store.start_run(id, now).unwrap();
        f.store
            .record_outcome(
                run.id,
                &OutboxDraft {
                    kind: OutboxKind::Failure,
                    remote_task_id: "T-<b>1".into(),
                    method: "POST".into(),
                    path: "/x".into(),
                    headers: vec![],
                    body: br#"{"status":"manual_review","error":{"code":"PRICE_ABOVE_LIMIT"}}"#
                        .to_vec(),
                    idempotency_key: "k1".into(),
                    on_accept: TaskState::ManualReview,
                    outcome: "manual_review:PRICE_ABOVE_LIMIT".into(),
                },
                now,
            )
            .unwrap();
        // The attempt's folder as the driver writes it.
        let mut arts = AttemptArtifacts::create(&root, "T-<b>1", &run.attempt_id).unwrap();
        arts.save("select_options", "xml", SHEET.as_bytes(), now);
        arts.save("select_options", "png", PNG, now);
        arts.append_trace(&[
            TraceRecord {
                kind: "observe".into(),
                step: Some("select_options".into()),
                detail: "sku_sheet".into(),
                at: None,
                to: None,
                file: Some("01-select_options.xml".into()),
            },
            TraceRecord {
                kind: "screenshot".into(),
                step: Some("select_options".into()),
                detail: String::new(),
                at: None,
                to: None,
                file: Some("02-select_options.png".into()),
            },
            TraceRecord {
                kind: "tap".into(),
                step: Some("select_options".into()),
                detail: "L @328,1472".into(),
                at: Some([328, 1472]),
                to: None,
                file: None,
            },
        ]);
        // A file beside the attempt folder that no request may reach.
        std::fs::write(root.join("secret.txt"), TOKEN).unwrap();

        let app = router(st);
        let mut served: Vec<(String, Vec<u8>)> = Vec::new();
        let (status, _, list) = fetch(&app, "/history").await;
        assert_eq!(status, StatusCode::OK);
        let list_text = String::from_utf8_lossy(&list).into_owned();
        // Escaped once, by the template (askama writes numeric entities).
        assert!(list_text.contains("T-&#60;b&#62;1"), "escaped: {list_text}");
        assert!(!list_text.contains("T-<b>1"));
        assert!(list_text.contains("manual_review:PRICE_ABOVE_LIMIT"));
        assert!(list_text.contains("PRICE_ABOVE_LIMIT</td>"));
        assert!(list_text.contains(&format!("href=\"/history/task/{id}?w=0\"")));
        served.push(("/history".into(), list));

        let path = format!("/history/task/{id}?w=0");
        let (status, _, task_page) = fetch(&app, &path).await;
        assert_eq!(status, StatusCode::OK);
        assert!(String::from_utf8_lossy(&task_page)
            .contains(&format!("href=\"/history/attempt/{}\"", run.attempt_id)));
        served.push((path, task_page));

        let path = format!("/history/attempt/{}", run.attempt_id);
        let (status, _, viewer_page) = fetch(&app, &path).await;
        assert_eq!(status, StatusCode::OK);
        let v = String::from_utf8_lossy(&viewer_page).into_owned();
        assert!(v.contains(r#"<svg class="overlay over""#), "{v}");
        assert!(v.contains(
            r#"data-kind="option" data-selected="true" data-available="true" x="195" y="1222""#
        ));
        assert!(v.contains(r#"<circle data-kind="tap" data-n="1" cx="328" cy="1472""#));
        let png_url = format!("/artifacts/{}/02-select_options.png", run.attempt_id);
        assert!(v.contains(&format!(r#"<img class="shot-img" src="{png_url}""#)));
        assert!(v.contains(r#"<link rel="stylesheet" href="/viewer.css">"#));
        served.push((path, viewer_page));

        let (status, ct, png) = fetch(&app, &png_url).await;
        assert_eq!((status, ct.as_str()), (StatusCode::OK, "image/png"));
        assert_eq!(png, PNG);
        served.push((png_url, png));
        for file in ["01-select_options.xml", "manifest.json", "trace.json"] {
            let path = format!("/artifacts/{}/{file}", run.attempt_id);
            let (status, _, body) = fetch(&app, &path).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            served.push((path, body));
        }
        let (_, ct, _) = fetch(&app, "/viewer.css").await;
        assert!(ct.starts_with("text/css"));

        // Nothing but listed names of known attempts.
        for bad in [
            format!("/artifacts/{}/..%2Fsecret.txt", run.attempt_id),
            format!("/artifacts/{}/..%2F..%2Fsecret.txt", run.attempt_id),
            format!("/artifacts/{}/secret.txt", run.attempt_id),
            format!("/artifacts/{}/03-nothing.png", run.attempt_id),
            "/artifacts/..%2F..%2F/secret.txt".to_string(),
            "/artifacts/no-such-attempt/manifest.json".to_string(),
            "/history/attempt/no-such-attempt".to_string(),
            "/history/task/999?w=0".to_string(),
            format!("/history/task/{id}?w=7"),
        ] {
            let (status, _, body) = fetch(&app, &bad).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{bad}");
            served.push((bad, body));
        }
        // Paged: one task per page → an "older" link that leads to an empty page.
        let (_, _, empty) = fetch(&app, &format!("/history?before={id}")).await;
        assert!(String::from_utf8_lossy(&empty).contains("no tasks yet"));

        // The token is in the store (settings) and beside the artifacts: never served.
        for (path, body) in &served {
            assert!(
                !body.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
                "the token in {path}"
            );
        }
    }
}
