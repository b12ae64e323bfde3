//! HTTP edge cases of the Admin gateway, against wiremock and raw TCP servers: headers,
//! 204 with and without a body, Retry-After forms, status mapping, timeouts, truncated,
//! garbage and huge bodies, unknown fields, the §7 compatibility rule — and the claim
//! loop's reaction to incomplete tasks, live tasks and 4xx.

use cmautobuy_client::alert::AlertKind;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, Request, ResponseTemplate};

use crate::support::*;
use cmautobuy_client::gateway::{
    AdminGateway, GatewayError, GatewaySettings, HttpAdminGateway, RetryAfter,
};
use cmautobuy_client::outbox::{Relay, Step};
use cmautobuy_client::retry::RetryPolicy;
use cmautobuy_client::runner::{ClaimStep, RunConfig, Runner};
use cmautobuy_client::secret::Secret;
use cmautobuy_client::store::{OutboxState, TaskState};
use cmautobuy_contract::{
    AdminErrorCode, Capabilities, ClientInfo, ClientProfile, ExecutionMode, TaskType,
};

const CLIENT: &str = "CLIENT-00000000000000AB";

fn settings() -> GatewaySettings {
    let mut s = GatewaySettings::new(CLIENT, Some(Secret::new(TOKEN)));
    s.request_timeout = Duration::from_secs(2);
    s.connect_timeout = Duration::from_secs(2);
    s
}

fn gw(url: &str) -> HttpAdminGateway {
    HttpAdminGateway::new(url, settings()).unwrap()
}

fn profile() -> ClientProfile {
    ClientProfile {
        client: ClientInfo {
            name: Some("测试".into()),
            extra: Default::default(),
        },
        supported_types: vec![TaskType::Collect],
        device: None,
        capabilities: Capabilities {
            purchase_mode: ExecutionMode::DryRun,
            schema_versions: vec![1],
            extra: Default::default(),
        },
        extra: Default::default(),
    }
}

fn collect_task(id: &str) -> Value {
    json!({"task": {"id": id, "type": "collect", "execution_mode": "dry_run", "version": 1,
        "priority": 10, "payload": {"goods_id": "737116531267",
        "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=737116531267"}}})
}

fn accepted() -> Value {
    json!({"accepted": true, "result_id": "r-1", "accepted_at": "2026-08-06T08:03:01Z"})
}

async fn server() -> MockServer {
    MockServer::start().await
}

#[tokio::test]
async fn every_request_carries_the_section_2_headers() {
    let s = server().await;
    Mock::given(method("POST"))
        .and(path("/api/v1/client/tasks/cg%2F1/result"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(1)
        .mount(&s)
        .await;
    Mock::given(method("POST"))
        .and(path("/api/v1/client/tasks/cg%2F1/result"))
        .respond_with(ResponseTemplate::new(200).set_body_json(accepted()))
        .mount(&s)
        .await;
    let g = gw(&s.uri());
    let body = br#"{"x":1}"#;
    assert!(g.submit_result("cg/1", "k-1", body).await.is_err());
    g.submit_result("cg/1", "k-1", body).await.unwrap();
    let reqs: Vec<Request> = s.received_requests().await.unwrap();
    assert_eq!(reqs.len(), 2);
    let mut ids = Vec::new();
    for r in &reqs {
        let h = |n: &str| r.headers.get(n).unwrap().to_str().unwrap().to_string();
        assert_eq!(h("authorization"), format!("Bearer {TOKEN}"));
        assert_eq!(h("x-client-id"), CLIENT);
        assert_eq!(h("content-type"), "application/json");
        assert_eq!(h("idempotency-key"), "k-1");
        let rid = h("x-request-id");
        assert!(uuid::Uuid::parse_str(&rid).is_ok(), "{rid}");
        ids.push(rid);
        assert_eq!(r.body, body);
    }
    assert_ne!(ids[0], ids[1], "a fresh X-Request-Id per attempt");
}

#[tokio::test]
async fn no_content_is_no_work_with_or_without_a_body() {
    let s = server().await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(204))
        .up_to_n_times(1)
        .mount(&s)
        .await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(204).set_body_string("{\"ignored\":true}"))
        .mount(&s)
        .await;
    let g = gw(&s.uri());
    assert_eq!(g.claim_next(&profile()).await.unwrap(), None);
    assert_eq!(g.claim_next(&profile()).await.unwrap(), None);
}

#[tokio::test]
async fn claim_accepts_unknown_fields() {
    let s = server().await;
    let mut t = collect_task("COLLECT-20260810-0001");
    t["task"]["lease_hint"] = json!("ignored");
    t["server_time"] = json!("x");
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(200).set_body_json(t))
        .mount(&s)
        .await;
    let task = gw(&s.uri()).claim_next(&profile()).await.unwrap().unwrap();
    assert_eq!(task.id, "COLLECT-20260810-0001");
    assert_eq!(task.extra["lease_hint"], "ignored");
}

#[tokio::test]
async fn retry_after_as_seconds_and_as_a_date() {
    let s = server().await;
    Mock::given(path("/api/v1/client/tasks/a/result"))
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("Retry-After", "7")
                .set_body_json(json!({"error": {"code": "RATE_LIMITED", "message": "slow down", "retryable": true}})),
        )
        .mount(&s)
        .await;
    Mock::given(path("/api/v1/client/tasks/b/result"))
        .respond_with(
            ResponseTemplate::new(503)
                .insert_header("Retry-After", "Wed, 21 Oct 2037 07:28:00 GMT"),
        )
        .mount(&s)
        .await;
    let g = gw(&s.uri());
    let e = g.submit_result("a", "k", b"{}").await.unwrap_err();
    assert!(e.is_retryable());
    assert_eq!(e.status(), Some(429));
    assert_eq!(e.code(), Some(&AdminErrorCode::RateLimited));
    assert_eq!(
        e.retry_after(),
        Some(RetryAfter::Delay(Duration::from_secs(7)))
    );
    let e = g.submit_result("b", "k", b"{}").await.unwrap_err();
    assert!(e.is_retryable());
    assert!(matches!(e.retry_after(), Some(RetryAfter::At(_))));
}

#[tokio::test]
async fn permanent_statuses_are_typed_and_not_retryable() {
    let s = server().await;
    for (status, code) in [
        (400, "INVALID_BODY"),
        (401, "UNAUTHORIZED"),
        (403, "TASK_NOT_CLAIMED_BY_CLIENT"),
        (404, "TASK_NOT_FOUND"),
        (409, "IDEMPOTENCY_CONFLICT"),
        (422, "INVALID_RESULT"),
    ] {
        Mock::given(path(format!("/api/v1/client/tasks/t{status}/failure")))
            .respond_with(ResponseTemplate::new(status).set_body_json(
                json!({"error": {"code": code, "message": "no", "retryable": false, "request_id": "rq"}}),
            ))
            .mount(&s)
            .await;
    }
    let g = gw(&s.uri());
    for status in [400, 401, 403, 404, 409, 422] {
        let e = g
            .submit_failure(&format!("t{status}"), "k", b"{}")
            .await
            .unwrap_err();
        assert!(!e.is_retryable(), "{status}");
        assert_eq!(e.status(), Some(status));
        assert!(e.code().is_some());
        assert!(!e.to_string().contains(TOKEN));
    }
    // 5xx without an envelope: still typed, retryable.
    Mock::given(path("/api/v1/client/tasks/x/result"))
        .respond_with(ResponseTemplate::new(502).set_body_string("<html>bad gateway</html>"))
        .mount(&s)
        .await;
    let e = g.submit_result("x", "k", b"{}").await.unwrap_err();
    assert!(e.is_retryable());
    assert_eq!(e.code(), None);
}

#[tokio::test]
async fn a_slow_admin_hits_the_deadline() {
    let s = server().await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(204).set_delay(Duration::from_secs(6)))
        .mount(&s)
        .await;
    let e = gw(&s.uri()).claim_next(&profile()).await.unwrap_err();
    assert!(matches!(e, GatewayError::Timeout { .. }), "{e}");
    assert!(e.is_retryable());
}

#[tokio::test]
async fn nobody_listening_is_a_transport_error() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let e = gw(&url).claim_next(&profile()).await.unwrap_err();
    assert!(
        matches!(
            e,
            GatewayError::Transport { .. } | GatewayError::Timeout { .. }
        ),
        "{e}"
    );
    assert!(e.is_retryable());
}

#[tokio::test]
async fn malformed_answers_are_typed_errors_not_panics() {
    let s = server().await;
    let cases: Vec<(&str, ResponseTemplate)> = vec![
        (
            "garbage",
            ResponseTemplate::new(200).set_body_string("{\"accepted\":tru"),
        ),
        (
            "html",
            ResponseTemplate::new(200).set_body_string("<html></html>"),
        ),
        ("empty", ResponseTemplate::new(200)),
        (
            "wrongtypes",
            ResponseTemplate::new(200).set_body_json(json!({"accepted": "yes", "accepted_at": 5})),
        ),
        (
            "missing",
            ResponseTemplate::new(200).set_body_json(json!({"result_id": "r"})),
        ),
        (
            "array",
            ResponseTemplate::new(200).set_body_json(json!([1, 2])),
        ),
        (
            "noresultid",
            ResponseTemplate::new(200)
                .set_body_json(json!({"accepted": true, "accepted_at": "2026-08-06T08:03:01Z"})),
        ),
        (
            "odd2xx",
            ResponseTemplate::new(202).set_body_json(accepted()),
        ),
    ];
    for (name, t) in cases {
        Mock::given(path(format!("/api/v1/client/tasks/{name}/result")))
            .respond_with(t)
            .mount(&s)
            .await;
    }
    let g = gw(&s.uri());
    for name in [
        "garbage",
        "html",
        "empty",
        "wrongtypes",
        "missing",
        "array",
        "noresultid",
        "odd2xx",
    ] {
        let e = g.submit_result(name, "k", b"{}").await.unwrap_err();
        assert!(matches!(e, GatewayError::Malformed { .. }), "{name}: {e}");
    }
    // accepted=false is not acceptance.
    Mock::given(path("/api/v1/client/tasks/no/result"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"accepted": false, "result_id": "r", "accepted_at": "2026-08-06T08:03:01Z"}),
        ))
        .mount(&s)
        .await;
    let e = g.submit_result("no", "k", b"{}").await.unwrap_err();
    assert!(matches!(e, GatewayError::NotAccepted { .. }));
    assert!(!e.is_retryable());
    // Claims: wrong types and missing fields.
    for (i, body) in [
        json!({"task": {"id": 5, "type": "collect", "version": 1, "payload": {}}}),
        json!({"task": {"id": "x", "type": "collect", "payload": {}}}),
        json!({"nothing": true}),
    ]
    .into_iter()
    .enumerate()
    {
        let s = server().await;
        Mock::given(path("/api/v1/client/tasks/claim"))
            .respond_with(ResponseTemplate::new(200).set_body_json(body))
            .mount(&s)
            .await;
        let e = gw(&s.uri()).claim_next(&profile()).await.unwrap_err();
        assert!(
            matches!(e, GatewayError::Malformed { status: 200, .. }),
            "{i}: {e}"
        );
    }
}

#[tokio::test]
async fn failure_answer_without_result_id_is_taken_under_the_compat_rule() {
    let s = server().await;
    Mock::given(path("/api/v1/client/tasks/cg1/failure"))
        .respond_with(ResponseTemplate::new(200).set_body_json(
            json!({"accepted": true, "task_status": "assigned", "accepted_at": "2026-08-06T08:03:01Z", "new_field": 1}),
        ))
        .mount(&s)
        .await;
    let a = gw(&s.uri())
        .submit_failure("cg1", "k", b"{}")
        .await
        .unwrap();
    assert!(a.compat_without_result_id);
    assert_eq!(a.result_id, None);
    assert_eq!(a.task_status.as_deref(), Some("assigned"));
}

#[tokio::test]
async fn huge_answers_are_refused_with_and_without_content_length() {
    let s = server().await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(200).set_body_string("x".repeat(3 * 1024 * 1024)))
        .mount(&s)
        .await;
    let e = gw(&s.uri()).claim_next(&profile()).await.unwrap_err();
    assert!(matches!(e, GatewayError::TooLarge { .. }), "{e}");
    assert!(!e.is_retryable());

    // Chunked, no Content-Length: the cap applies while reading.
    let url = raw_server(|| {
        let mut out = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n".to_vec();
        for _ in 0..40 {
            out.extend_from_slice(format!("{:x}\r\n", 64 * 1024).as_bytes());
            out.extend_from_slice(&vec![b' '; 64 * 1024]);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    })
    .await;
    let e = gw(&url).claim_next(&profile()).await.unwrap_err();
    assert!(matches!(e, GatewayError::TooLarge { .. }), "{e}");
}

/// The status line and headers came, then the connection closed mid-body: the Admin
/// handled the request, so this is a cut answer (`Cut`, with what arrived), not a
/// transport error. A keyed submission retries it; for a claim it is a `200` the client
/// cannot take (`unreadable_success`: the claim loop's §5.2 alert).
#[tokio::test]
async fn a_body_cut_short_is_a_cut_answer() {
    let url = raw_server(|| {
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 200\r\n\r\n{\"task\":{\"id\":\"cg42\",".to_vec()
    })
    .await;
    let e = gw(&url).submit_result("t", "k", b"{}").await.unwrap_err();
    assert!(
        matches!(&e, GatewayError::Cut { status: 200, partial, .. } if partial.contains("cg42")),
        "{e:?}"
    );
    assert!(e.is_retryable());
    let e = gw(&url).claim_next(&profile()).await.unwrap_err();
    assert!(matches!(e, GatewayError::Cut { status: 200, .. }), "{e:?}");
    assert!(e.unreadable_success());
}

/// A server that answers every connection with `answer()` and closes it.
async fn raw_server(answer: fn() -> Vec<u8>) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((mut sock, _)) = l.accept().await else {
                return;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 65536];
                let mut got = Vec::new();
                // Read the request head and body (small) before answering.
                while let Ok(n) = sock.read(&mut buf).await {
                    if n == 0 {
                        break;
                    }
                    got.extend_from_slice(&buf[..n]);
                    if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&got[..i]).to_lowercase();
                        let len = head
                            .lines()
                            .find_map(|l| l.strip_prefix("content-length:"))
                            .and_then(|v| v.trim().parse::<usize>().ok())
                            .unwrap_or(0);
                        if got.len() >= i + 4 + len {
                            break;
                        }
                    }
                }
                let _ = sock.write_all(&answer()).await;
                let _ = sock.shutdown().await;
            });
        }
    });
    url
}

#[tokio::test]
async fn the_token_never_shows_in_debug_or_errors() {
    let g = gw("http://127.0.0.1:9");
    assert!(!format!("{g:?}").contains(TOKEN));
    assert!(!format!("{:?}", settings()).contains(TOKEN));
    let bad = GatewaySettings::new(CLIENT, Some(Secret::new(format!("{TOKEN}\n"))));
    let e = HttpAdminGateway::new("http://127.0.0.1:9", bad)
        .unwrap()
        .claim_next(&profile())
        .await
        .unwrap_err();
    assert!(matches!(e, GatewayError::Config(_)));
    assert!(!e.to_string().contains(TOKEN) && !format!("{e:?}").contains(TOKEN));
}

// ----------------------------------------------------------------------------------------
// The claim loop against scripted answers
// ----------------------------------------------------------------------------------------

fn runner(
    s: &MockServer,
    dir: &std::path::Path,
    exec: ScriptedExecutor,
    device: Option<&str>,
) -> (
    Runner<HttpAdminGateway, ScriptedExecutor, VirtualClock>,
    cmautobuy_client::store::Store,
) {
    let store = store(dir, &s.uri(), device);
    let mut gs = settings();
    gs.client_id = store.client_id().unwrap();
    let g = Arc::new(HttpAdminGateway::new(&s.uri(), gs).unwrap());
    let r = Runner::new(
        store.clone(),
        g,
        Arc::new(exec),
        test_clock(),
        RunConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    );
    (r, store)
}

#[tokio::test]
async fn an_incomplete_purchase_task_is_never_saved_and_stops_claiming() {
    let s = server().await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"task": {
            "id": "cg7", "type": "purchase", "execution_mode": "dry_run", "version": 3,
            "payload": {"goods_id": "1", "goods_url": "u", "options": {"color": "黑色"}, "quantity": 2}
        }})))
        .mount(&s)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let exec = ScriptedExecutor::new(Script::Result).ready_for_purchase(false);
    let (r, store) = runner(&s, dir.path(), exec.clone(), Some("192.168.0.173:5555"));
    let step = r.claim_once().await.unwrap();
    assert!(
        matches!(&step, ClaimStep::Blocked(m) if m.contains("max_price_cent")),
        "{step:?}"
    );
    assert_eq!(exec.job_count(), 0);
    assert!(store.unfinished_tasks().unwrap().is_empty());
    assert!(store.summary().unwrap().tasks.is_empty(), "nothing saved");
    let alerts = store.open_alerts().unwrap();
    assert_eq!(alerts[0].remote_task_id.as_deref(), Some("cg7"));
    // Stopped: the next cycle does not even ask the Admin.
    let before = s.received_requests().await.unwrap().len();
    assert!(matches!(
        r.claim_once().await.unwrap(),
        ClaimStep::Blocked(_)
    ));
    assert_eq!(s.received_requests().await.unwrap().len(), before);
    // The operator acknowledges: claiming resumes.
    store.ack_alerts(None, chrono::Utc::now()).unwrap();
    assert!(matches!(
        r.claim_once().await.unwrap(),
        ClaimStep::Blocked(_)
    ));
    assert_eq!(s.received_requests().await.unwrap().len(), before + 1);
}

#[tokio::test]
async fn data_model_1_a_claimed_task_with_4_0_in_max_price_cent_is_refused_integers_only() {
    let s = server().await;
    // Written as the Admin sent it: `4200.0`, an integral float.
    let text = r#"{"task": {"id": "cg9", "type": "purchase", "execution_mode": "dry_run",
        "version": 1, "payload": {"goods_id": "1", "goods_url": "u",
        "options": {"color": "黑色"}, "quantity": 1, "max_price_cent": 4200.0}}}"#;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(200).set_body_raw(text, "application/json"))
        .mount(&s)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let exec = ScriptedExecutor::new(Script::Result).ready_for_purchase(false);
    let (r, store) = runner(&s, dir.path(), exec.clone(), Some("192.168.0.173:5555"));
    let step = r.claim_once().await.unwrap();
    assert!(
        matches!(&step, ClaimStep::Blocked(m)
            if m.contains("payload.max_price_cent") && m.contains("integers only")),
        "{step:?}"
    );
    assert_eq!(exec.job_count(), 0);
    assert!(store.summary().unwrap().tasks.is_empty(), "nothing saved");
}

#[tokio::test]
async fn a_live_task_is_never_run_by_a_dry_run_client() {
    let s = server().await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"task": {
            "id": "cg8", "type": "purchase", "execution_mode": "live", "version": 1,
            "payload": {"goods_id": "1", "goods_url": "u", "options": {"color": "黑色"},
                        "quantity": 1, "max_price_cent": 990}
        }})))
        .up_to_n_times(1)
        .mount(&s)
        .await;
    let dir = tempfile::tempdir().unwrap();
    // Purchase-ready but not live-ready: declares dry_run.
    let exec = ScriptedExecutor::new(Script::Result).ready_for_purchase(false);
    let (r, store) = runner(&s, dir.path(), exec.clone(), Some("192.168.0.173:5555"));
    let step = r.claim_once().await.unwrap();
    assert!(matches!(step, ClaimStep::Processed { .. }), "{step:?}");
    assert_eq!(exec.job_count(), 0, "the executor never saw the live task");
    let item = &store.outbox_list(false).unwrap()[0];
    let body: Value = serde_json::from_slice(&item.body).unwrap();
    assert_eq!(body["error"]["code"], "LIVE_NOT_DECLARED");
    let claim = &s.received_requests().await.unwrap()[0];
    let declared: Value = serde_json::from_slice(&claim.body).unwrap();
    assert_eq!(declared["capabilities"]["purchase_mode"], "dry_run");
    assert_eq!(declared["supported_types"], json!(["collect", "purchase"]));
}

#[tokio::test]
async fn no_content_waits_the_poll_interval_and_never_backs_off() {
    let s = server().await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&s)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let (r, _store) = runner(&s, dir.path(), ScriptedExecutor::new(Script::Result), None);
    for _ in 0..20 {
        match r.claim_once().await.unwrap() {
            ClaimStep::NoWork(d) => {
                assert!(
                    d >= Duration::from_secs(8) && d <= Duration::from_secs(12),
                    "{d:?}"
                )
            }
            other => panic!("{other:?}"),
        }
    }
    let claims = s.received_requests().await.unwrap();
    assert_eq!(claims.len(), 20);
    let p: Value = serde_json::from_slice(&claims[0].body).unwrap();
    assert_eq!(
        p["supported_types"],
        json!(["collect"]),
        "no device: collect only"
    );
    assert_eq!(p["capabilities"]["purchase_mode"], "dry_run");
}

#[tokio::test]
async fn claim_errors_back_off_and_4xx_stops_claiming() {
    let s = server().await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(3)
        .mount(&s)
        .await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(429).insert_header("Retry-After", "42"))
        .up_to_n_times(1)
        .mount(&s)
        .await;
    Mock::given(path("/api/v1/client/tasks/claim"))
        .respond_with(ResponseTemplate::new(401).set_body_json(
            json!({"error": {"code": "UNAUTHORIZED", "message": "bad token", "retryable": false}}),
        ))
        .mount(&s)
        .await;
    let dir = tempfile::tempdir().unwrap();
    let (r, store) = runner(&s, dir.path(), ScriptedExecutor::new(Script::Result), None);
    let p = RetryPolicy::default();
    for attempt in 1..=3 {
        match r.claim_once().await.unwrap() {
            ClaimStep::Backoff(d) => assert!(d <= p.ceiling(attempt), "{attempt}: {d:?}"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        r.claim_once().await.unwrap(),
        ClaimStep::Backoff(Duration::from_secs(42))
    );
    assert!(
        matches!(r.claim_once().await.unwrap(), ClaimStep::Blocked(m) if m.contains("UNAUTHORIZED"))
    );
    assert!(matches!(
        r.claim_once().await.unwrap(),
        ClaimStep::Blocked(_)
    ));
    assert_eq!(
        s.received_requests().await.unwrap().len(),
        5,
        "no retry after the 401"
    );
    assert_eq!(
        store.open_alerts().unwrap()[0].kind,
        AlertKind::ClaimRejected
    );
    // Named as the token's refusal: a registration that gets through closes it.
    assert!(store.open_alerts().unwrap()[0]
        .message
        .starts_with(cmautobuy_client::runner::TOKEN_REFUSED));
}

#[tokio::test]
async fn the_relay_parks_permanent_errors_and_never_loops_on_4xx() {
    for status in [400u16, 401, 403, 404, 409, 422] {
        let s = server().await;
        Mock::given(path("/api/v1/client/tasks/claim"))
            .respond_with(ResponseTemplate::new(200).set_body_json(collect_task("cj1")))
            .up_to_n_times(1)
            .mount(&s)
            .await;
        Mock::given(path("/api/v1/client/tasks/cj1/result"))
            .respond_with(ResponseTemplate::new(status))
            .mount(&s)
            .await;
        let dir = tempfile::tempdir().unwrap();
        let (r, store) = runner(&s, dir.path(), ScriptedExecutor::new(Script::Result), None);
        assert!(matches!(
            r.claim_once().await.unwrap(),
            ClaimStep::Processed { .. }
        ));
        let clock = test_clock();
        let g = Arc::new(HttpAdminGateway::new(&s.uri(), settings()).unwrap());
        let relay = Relay::new(store.clone(), g, clock.clone(), RetryPolicy::default());
        assert!(
            matches!(relay.step().await.unwrap(), Step::Parked { .. }),
            "{status}"
        );
        clock.advance(Duration::from_secs(86400));
        assert_eq!(relay.step().await.unwrap(), Step::Idle(None));
        let item = &store.outbox_list(false).unwrap()[0];
        assert_eq!(item.state, OutboxState::Parked);
        assert!(item
            .last_error
            .as_deref()
            .unwrap()
            .contains(&status.to_string()));
        assert_eq!(
            store.task(item.task_id).unwrap().state,
            TaskState::Reporting
        );
        let results = s
            .received_requests()
            .await
            .unwrap()
            .iter()
            .filter(|r| r.url.path().ends_with("/result"))
            .count();
        assert_eq!(results, 1, "{status}: sent once, never retried");
    }
}

#[tokio::test]
async fn s4_1_registration_over_http_takes_200_and_a_2xx_only_with_the_contract_body() {
    let s = server().await;
    let answer = json!({"registered": true, "client_id": "CLIENT-1",
                        "registered_at": "2026-08-06T09:00:00Z"});
    Mock::given(path("/api/v1/client/registration"))
        .respond_with(ResponseTemplate::new(201).set_body_json(answer))
        .up_to_n_times(1)
        .mount(&s)
        .await;
    Mock::given(path("/api/v1/client/registration"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&s)
        .await;
    let g = gw(&s.uri());
    // 201 with the §4.1 body: unexpected (logged), accepted.
    assert!(g.register_client(&profile()).await.unwrap().registered);
    // 204: no §4.1 body, a malformed answer.
    let e = g.register_client(&profile()).await.unwrap_err();
    assert!(
        matches!(e, GatewayError::Malformed { status: 204, .. }),
        "{e}"
    );
}

#[tokio::test]
async fn request_timeout_408_and_too_early_425_are_retried_like_5xx() {
    let s = server().await;
    for status in [408u16, 425] {
        Mock::given(path(format!("/api/v1/client/tasks/t{status}/result")))
            .respond_with(ResponseTemplate::new(status))
            .mount(&s)
            .await;
    }
    let g = gw(&s.uri());
    for status in [408u16, 425] {
        let e = g
            .submit_result(&format!("t{status}"), "k", b"{}")
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(status));
        assert!(e.is_retryable(), "{status}");
    }
}
