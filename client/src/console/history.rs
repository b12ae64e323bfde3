//! 历史 History (issue 13 item 1): the tasks a worker ran, newest first and paged
//! (`/history?w=N&before=ID`), one task's attempts (`/history/task/{id}?w=N`), one
//! attempt in the artifact viewer (`/history/attempt/{attempt_id}`, [`crate::viewer`]),
//! and the attempt's files read-only (`/artifacts/{attempt_id}/{file}`).
//!
//! Files are served only for an attempt some worker's store knows, from that attempt's
//! folder (`{artifacts root}/{task}/{attempt}/`, the names made safe as
//! [`crate::artifacts`] makes them), and only under a name its manifest lists
//! ([`viewer::listed_file`]): no request can name a path. Artifacts hold no token
//! (nothing that writes them sees it); a test scans every byte served anyway.

use std::path::PathBuf;

use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde::Deserialize;

use super::layout::{escape, page, Tab};
use super::state::{ConsoleState, ConsoleWorker};
use crate::artifacts::safe_component;
use crate::store::{HistoryRun, HistoryTask};
use crate::viewer;

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
    (
        StatusCode::NOT_FOUND,
        page(
            Tab::History,
            "not found",
            &format!("<p>{}</p>", escape(what)),
            false,
        ),
    )
        .into_response()
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

fn outcome_cell(outcome: Option<&str>) -> String {
    match outcome {
        None => "<span class=\"muted\">—</span>".into(),
        Some(o) => {
            let class = if o == "succeeded" {
                "ok"
            } else if o.starts_with("manual_review") {
                "warn"
            } else {
                "bad"
            };
            format!("<span class=\"{class}\">{}</span>", escape(o))
        }
    }
}

/// The worker picker (only with several phones).
fn worker_picker(state: &ConsoleState, current: usize) -> String {
    if state.workers.len() < 2 {
        return String::new();
    }
    let mut h = String::from("<p class=\"workers\">手机 / phone: ");
    for (i, w) in state.workers.iter().enumerate() {
        if i == current {
            h.push_str(&format!("<b>{}</b> ", escape(&w.label)));
        } else {
            h.push_str(&format!(
                "<a href=\"/history?w={i}\">{}</a> ",
                escape(&w.label)
            ));
        }
    }
    h.push_str("</p>");
    h
}

/// The body of `/history`.
pub fn tasks_body(state: &ConsoleState, w: usize, tasks: &[HistoryTask], page_size: u32) -> String {
    let mut h = String::from("<h1>历史 <span class=\"en\">History</span></h1>");
    h.push_str(&worker_picker(state, w));
    if tasks.is_empty() {
        h.push_str("<p>还没有任务 / no tasks yet.</p>");
        return h;
    }
    h.push_str(
        "<table class=\"history\"><tr><th>#</th><th>任务 task</th><th>类型 type</th>\
<th>状态 state</th><th>尝试 attempts</th><th>结果 outcome</th><th>订单号 order</th>\
<th>代码 codes</th><th>时间 claimed</th></tr>",
    );
    for t in tasks {
        h.push_str(&format!(
            "<tr data-task=\"{id}\"><td><a href=\"/history/task/{id}?w={w}\">{id}</a></td>\
<td><a href=\"/history/task/{id}?w={w}\">{remote}</a></td><td>{ty} <small>{mode}</small></td>\
<td>{state}</td><td>{n}</td><td>{outcome}</td><td>{orders}</td><td>{codes}</td>\
<td><small>{at}</small></td></tr>",
            id = t.id,
            remote = escape(&t.remote_task_id),
            ty = escape(&t.task_type),
            mode = escape(&t.execution_mode),
            state = escape(&t.state),
            n = t.attempts,
            outcome = outcome_cell(t.last_outcome.as_deref()),
            orders = escape(&t.order_numbers.join(", ")),
            codes = escape(&t.codes.join(", ")),
            at = escape(&t.claimed_at),
        ));
    }
    h.push_str("</table>");
    if tasks.len() as u32 >= page_size {
        if let Some(last) = tasks.last() {
            h.push_str(&format!(
                "<p><a class=\"older\" href=\"/history?w={w}&amp;before={}\">更早 / older →</a></p>",
                last.id
            ));
        }
    }
    h
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
    page(
        Tab::History,
        "历史 History",
        &tasks_body(&state, w, &tasks, PAGE_SIZE),
        false,
    )
    .into_response()
}

/// The body of `/history/task/{id}`.
pub fn task_body(w: usize, task: &crate::store::StoredTask, runs: &[HistoryRun]) -> String {
    let mut h = format!(
        "<p><a href=\"/history?w={w}\">← 历史 / History</a></p>\
<h1>任务 <span class=\"en\">Task</span> {}</h1>\
<p>{} · {} · 状态 state <b>{}</b> · claimed {}</p>",
        escape(&task.remote_task_id),
        escape(&task.task_type),
        escape(&task.execution_mode),
        escape(task.state.as_str()),
        escape(&task.claimed_at),
    );
    if runs.is_empty() {
        h.push_str("<p>没有尝试 / no attempt yet.</p>");
        return h;
    }
    h.push_str(
        "<table class=\"history\"><tr><th>尝试 attempt</th><th>开始 started</th>\
<th>结束 finished</th><th>下单 irreversible mark</th><th>结果 outcome</th></tr>",
    );
    for r in runs {
        h.push_str(&format!(
            "<tr><td><a class=\"attempt\" href=\"/history/attempt/{href}\">{id}</a></td>\
<td><small>{s}</small></td><td><small>{f}</small></td><td><small>{m}</small></td><td>{o}</td></tr>",
            href = escape(&urlencode(&r.attempt_id)),
            id = escape(&r.attempt_id),
            s = escape(&r.started_at),
            f = escape(r.finished_at.as_deref().unwrap_or("—")),
            m = escape(r.irreversible_action_at.as_deref().unwrap_or("—")),
            o = outcome_cell(r.outcome.as_deref()),
        ));
    }
    h.push_str("</table>");
    h
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
        Ok(Some((task, runs))) => page(
            Tab::History,
            &format!("任务 {}", task.remote_task_id),
            &task_body(w, &task, &runs),
            false,
        )
        .into_response(),
        Ok(None) => not_found("no such task"),
        Err(r) => r,
    }
}

/// Percent-encodes an id for a URL path segment (attempt ids are UUIDs; this keeps any
/// other id from breaking the link).
fn urlencode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
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
    let mut h = format!(
        "<link rel=\"stylesheet\" href=\"/viewer.css\">\
<p><a href=\"/history/task/{t}?w={w}\">← 任务 / task {remote}</a></p>\
<h1>尝试 <span class=\"en\">Attempt</span> {id}</h1>\
<p>结果 outcome {o} · started {s} · finished {f} · 下单 mark {m}</p>",
        t = run.task_id,
        remote = escape(&run.remote_task_id),
        id = escape(&run.attempt_id),
        o = outcome_cell(run.outcome.as_deref()),
        s = escape(&run.started_at),
        f = escape(run.finished_at.as_deref().unwrap_or("—")),
        m = escape(run.irreversible_action_at.as_deref().unwrap_or("—")),
    );
    match view {
        Ok(view) => {
            let base = format!("/artifacts/{}/", urlencode(&run.attempt_id));
            h.push_str(&viewer::render(&view, &|f| {
                format!("{base}{}", urlencode(f))
            }));
        }
        Err(e) => h.push_str(&format!("<p>{}</p>", escape(&e.to_string()))),
    }
    page(Tab::History, &format!("尝试 {}", run.attempt_id), &h, false).into_response()
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
        assert!(list_text.contains("T-&lt;b&gt;1"), "escaped: {list_text}");
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
