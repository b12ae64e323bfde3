//! Concurrency, hostile input, a locked database, fault plans (over real HTTP and
//! in-process) and the binary.

use crate::common::*;
use cmautobuy_mock_admin::{
    Fault, FaultPlan, FaultTarget, MockAdmin, MockAdminConfig, Outcome, RetryAfter,
};
use serde_json::{json, Value};
use std::collections::HashSet;
use tower::ServiceExt;

// ---------------------------------------------------------------------------------------
// concurrency
// ---------------------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s8_claim_never_dispatches_twice_32_concurrent_claimers_200_pooled_tasks() {
    let dir = tempfile::tempdir().unwrap();
    let h = Harness::start_with(MockAdminConfig::file(
        dir.path().join("admin.db").to_string_lossy().to_string(),
    ))
    .await;
    for i in 0..200 {
        let mut t = if i % 2 == 0 {
            collect_task()
        } else {
            purchase_task("dry_run", None)
        };
        t["priority"] = json!(i % 7);
        h.create(t).await;
    }
    let http = reqwest::Client::new();
    let mut joins = Vec::new();
    for c in 0..32 {
        let http = http.clone();
        let url = h.url("/api/v1/client/tasks/claim");
        joins.push(tokio::spawn(async move {
            let mut got = Vec::new();
            loop {
                let r = http
                    .post(&url)
                    .header("X-Client-Id", format!("CLAIMER-{c}"))
                    .json(&all_dry())
                    .send()
                    .await
                    .expect("send");
                match r.status().as_u16() {
                    204 => break,
                    200 => {
                        let v: Value = r.json().await.expect("json");
                        got.push(v["task"]["id"].as_str().expect("id").to_string());
                    }
                    other => panic!("unexpected status {other}"),
                }
            }
            got
        }));
    }
    let mut all = Vec::new();
    for j in joins {
        all.extend(j.await.unwrap());
    }
    let unique: HashSet<&String> = all.iter().collect();
    assert_eq!(all.len(), 200, "every task dispatched");
    assert_eq!(unique.len(), 200, "no task dispatched twice");
    let tasks = h.op.list_tasks().await.unwrap();
    for t in tasks["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "claimed");
        let detail = h.task(t["id"].as_str().unwrap()).await;
        assert_eq!(detail["claims"].as_array().unwrap().len(), 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_duplicate_results_store_one_result() {
    let h = Harness::start().await;
    let id = h.create(collect_task()).await;
    h.claim_id("CLIENT-1", &all_dry()).await;
    let key = format!("{id}:a1:result-v1");
    let body = collect_result("a1", COLLECT_GOODS, None);
    let mut joins = Vec::new();
    for _ in 0..16 {
        let http = h.http.clone();
        let url = h.url(&format!("/api/v1/client/tasks/{id}/result"));
        let (key, body) = (key.clone(), body.clone());
        joins.push(tokio::spawn(async move {
            let r = http
                .post(url)
                .header("X-Client-Id", "CLIENT-1")
                .header("Idempotency-Key", key)
                .json(&body)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 200);
            r.bytes().await.unwrap()
        }));
    }
    let mut bodies = HashSet::new();
    for j in joins {
        bodies.insert(j.await.unwrap());
    }
    assert_eq!(bodies.len(), 1, "all answers identical");
    assert_eq!(h.task(&id).await["results"].as_array().unwrap().len(), 1);
}

// ---------------------------------------------------------------------------------------
// bad input never yields a 500 or a panic
// ---------------------------------------------------------------------------------------

async fn raw(
    h: &Harness,
    method: reqwest::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> (u16, String, Value) {
    let mut rb = h.http.request(method, h.url(path));
    for (k, v) in headers {
        rb = rb.header(*k, *v);
    }
    let r = rb.body(body).send().await.unwrap();
    let status = r.status().as_u16();
    let ct = r
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert!(status < 500, "{path}: got {status}");
    assert_eq!(ct, "application/json", "{path}: envelope content type");
    let v: Value = r.json().await.unwrap();
    let code = v["error"]["code"].as_str().unwrap_or("").to_string();
    (status, code, v)
}

/// method, path, headers, body, expected status, expected code
type BadCase = (
    reqwest::Method,
    String,
    Vec<(&'static str, &'static str)>,
    Vec<u8>,
    u16,
    &'static str,
);

#[tokio::test]
async fn bad_input_gets_its_section_3_code_never_a_500() {
    let h = Harness::start().await;
    let id = h.create(collect_task()).await;
    h.claim_id("CLIENT-1", &all_dry()).await;
    let json_ct = ("content-type", "application/json");
    let cid = ("X-Client-Id", "CLIENT-1");
    let key = ("Idempotency-Key", "k1");
    let post = reqwest::Method::POST;
    let result = format!("/api/v1/client/tasks/{id}/result");
    let claim = "/api/v1/client/tasks/claim";
    let cases: Vec<BadCase> = vec![
        // malformed JSON
        (
            post.clone(),
            claim.into(),
            vec![json_ct, cid],
            b"{\"supported_types\":".to_vec(),
            400,
            "INVALID_BODY",
        ),
        (
            post.clone(),
            result.clone(),
            vec![json_ct, cid, key],
            b"[1,2".to_vec(),
            400,
            "INVALID_BODY",
        ),
        // not an object
        (
            post.clone(),
            claim.into(),
            vec![json_ct, cid],
            b"[]".to_vec(),
            400,
            "INVALID_BODY",
        ),
        // wrong types
        (
            post.clone(),
            claim.into(),
            vec![json_ct, cid],
            br#"{"supported_types":"collect","capabilities":{}}"#.to_vec(),
            400,
            "INVALID_CLIENT_PROFILE",
        ),
        (
            post.clone(),
            result.clone(),
            vec![json_ct, cid, key],
            br#"{"task_version":"1","attempt_id":1}"#.to_vec(),
            400,
            "INVALID_BODY",
        ),
        // invalid UTF-8
        (
            post.clone(),
            claim.into(),
            vec![json_ct, cid],
            b"{\"client\":{\"name\":\"\xff\xfe\"}}".to_vec(),
            400,
            "INVALID_BODY",
        ),
        (
            post.clone(),
            result.clone(),
            vec![json_ct, cid, key],
            b"{\"attempt_id\":\"\xc3\x28\"}".to_vec(),
            400,
            "INVALID_BODY",
        ),
        // unknown task
        (
            post.clone(),
            "/api/v1/client/tasks/nope/failure".into(),
            vec![json_ct, cid, key],
            serde_json::to_vec(&failure("failed", "a1")).unwrap(),
            404,
            "TASK_NOT_FOUND",
        ),
        // missing headers
        (
            post.clone(),
            claim.into(),
            vec![json_ct],
            serde_json::to_vec(&all_dry()).unwrap(),
            400,
            "MISSING_CLIENT_ID",
        ),
        (
            post.clone(),
            claim.into(),
            vec![json_ct, ("X-Client-Id", "")],
            serde_json::to_vec(&all_dry()).unwrap(),
            400,
            "MISSING_CLIENT_ID",
        ),
        (
            post.clone(),
            result.clone(),
            vec![json_ct, cid],
            serde_json::to_vec(&collect_result("a1", COLLECT_GOODS, None)).unwrap(),
            400,
            "MISSING_IDEMPOTENCY_KEY",
        ),
        // wrong content type / none
        (
            post.clone(),
            claim.into(),
            vec![("content-type", "text/plain"), cid],
            serde_json::to_vec(&all_dry()).unwrap(),
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        (
            post.clone(),
            claim.into(),
            vec![cid],
            serde_json::to_vec(&all_dry()).unwrap(),
            415,
            "UNSUPPORTED_MEDIA_TYPE",
        ),
        // unknown route, wrong method
        (
            reqwest::Method::GET,
            "/api/v1/client/tasks".into(),
            vec![],
            vec![],
            404,
            "NOT_FOUND",
        ),
        (
            reqwest::Method::GET,
            "/nothing/here".into(),
            vec![],
            vec![],
            404,
            "NOT_FOUND",
        ),
        (
            reqwest::Method::GET,
            claim.into(),
            vec![cid],
            vec![],
            405,
            "METHOD_NOT_ALLOWED",
        ),
        (
            reqwest::Method::DELETE,
            result.clone(),
            vec![cid],
            vec![],
            405,
            "METHOD_NOT_ALLOWED",
        ),
        // operator API too
        (
            post.clone(),
            "/api/v1/admin/tasks".into(),
            vec![json_ct],
            b"{".to_vec(),
            400,
            "INVALID_BODY",
        ),
        (
            post.clone(),
            "/api/v1/admin/tasks".into(),
            vec![json_ct],
            br#"{"type":"purchase","payload":{"goods_id":"1"}}"#.to_vec(),
            422,
            "INVALID_TASK_PAYLOAD",
        ),
        (
            post.clone(),
            "/api/v1/admin/faults".into(),
            vec![json_ct],
            br#"{"endpoint":"claim","fault":{"kind":"meteor"}}"#.to_vec(),
            400,
            "INVALID_BODY",
        ),
    ];
    for (method, path, headers, body, want_status, want_code) in cases {
        let (status, code, env) = raw(&h, method.clone(), &path, &headers, body).await;
        assert_eq!(
            (status, code.as_str()),
            (want_status, want_code),
            "{method} {path}: {env}"
        );
        assert!(env["error"]["request_id"].is_string());
    }
    // the 405 names the allowed methods
    let r = h.http.get(h.url(claim)).send().await.unwrap();
    assert_eq!(r.headers().get("allow").unwrap(), "POST");
    // nothing was stored by any of it
    assert!(h.task(&id).await["results"].as_array().unwrap().is_empty());
}

/// The contract allows any header value as an `Idempotency-Key` (up to 255 bytes, the
/// contract crate's limit): the client's percent-encoded key and a raw UTF-8 one (as an
/// Admin on Go's net/http takes it) are both accepted; longer keys and bytes that are not
/// UTF-8 are `INVALID_IDEMPOTENCY_KEY`.
#[tokio::test]
async fn idempotency_keys_are_any_header_value_up_to_255_bytes() {
    let h = Harness::start().await;
    let mut t = collect_task();
    t["id"] = json!("采购 0001");
    let id = h.create(t).await;
    assert_eq!(h.claim_id("CLIENT-1", &all_dry()).await, id);
    let body = collect_result("a1", COLLECT_GOODS, None);
    let encoded = cmautobuy_contract::hash::result_idempotency_key(&id, "a1");
    assert_eq!(encoded, "%E9%87%87%E8%B4%AD%200001:a1:result-v1");
    let raw_utf8 = "采购 0001:a1:result-v1".to_string();
    for key in [&encoded, &raw_utf8, &"k".repeat(255), &"采".repeat(85)] {
        let r = h.submit(&id, "result", "CLIENT-1", key, &body).await;
        assert_eq!(r.status(), 200, "{key}");
    }
    let stored: Vec<String> = h.task(&id).await["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["idempotency_key"].as_str().unwrap().to_string())
        .collect();
    assert!(stored.contains(&encoded), "{stored:?}");
    assert!(stored.contains(&raw_utf8), "{stored:?}");
    let journaled = h.op.journal();
    assert!(journaled
        .iter()
        .any(|e| e.idempotency_key.as_deref() == Some(raw_utf8.as_str())));
    for key in ["k".repeat(256), "采".repeat(86)] {
        let (status, code, _) =
            error_code(h.submit(&id, "result", "CLIENT-1", &key, &body).await).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "INVALID_IDEMPOTENCY_KEY"),
            "{key}"
        );
    }
    let not_utf8 = reqwest::header::HeaderValue::from_bytes(b"k\xff:a1:result-v1").unwrap();
    let r = h
        .http
        .post(h.url(&format!("/api/v1/client/tasks/{id}/result")))
        .header("X-Client-Id", "CLIENT-1")
        .header("Idempotency-Key", not_utf8)
        .json(&body)
        .send()
        .await
        .unwrap();
    let (status, code, _) = error_code(r).await;
    assert_eq!((status, code.as_str()), (400, "INVALID_IDEMPOTENCY_KEY"));
    assert_eq!(h.task(&id).await["results"].as_array().unwrap().len(), 4);
}

// ---------------------------------------------------------------------------------------
// a locked database
// ---------------------------------------------------------------------------------------

fn locker(path: &str) -> rusqlite::Connection {
    let c = rusqlite::Connection::open(path).unwrap();
    c.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    c.execute_batch("BEGIN IMMEDIATE").unwrap();
    c
}

#[tokio::test]
async fn a_locked_database_answers_503_after_busy_timeout_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admin.db").to_string_lossy().to_string();
    let mut cfg = MockAdminConfig::file(path.clone());
    cfg.busy_timeout_ms = 100;
    let h = Harness::start_with(cfg).await;
    let id = h.create(purchase_task("dry_run", None)).await;
    let other = h.create(purchase_task("dry_run", Some("CLIENT-2"))).await;
    assert_eq!(h.claim_id("CLIENT-2", &all_dry()).await, other);

    let lock = locker(&path);
    let (s, c, env) = error_code(h.claim("CLIENT-1", &all_dry()).await).await;
    assert_eq!((s, c.as_str()), (503, "SERVICE_UNAVAILABLE"));
    assert_eq!(env["error"]["retryable"], true);
    let (s, c, _) = error_code(h.register("CLIENT-1", &all_dry()).await).await;
    assert_eq!((s, c.as_str()), (503, "CLIENT_REGISTER_FAILED"));
    let key = format!("{other}:a1:failure-v1");
    let (s, c, _) = error_code(
        h.submit(
            &other,
            "failure",
            "CLIENT-2",
            &key,
            &failure("failed", "a1"),
        )
        .await,
    )
    .await;
    assert_eq!((s, c.as_str()), (503, "SERVICE_UNAVAILABLE"));
    let (body, skey) = spec_request(&other, "a1", "60公斤", &["120斤", "130斤"]);
    let (s, c, _) = error_code(
        h.submit(&other, "spec-resolution", "CLIENT-2", &skey, &body)
            .await,
    )
    .await;
    assert_eq!((s, c.as_str()), (503, "SPEC_RESOLUTION_UNAVAILABLE"));
    lock.execute_batch("COMMIT").unwrap();
    drop(lock);

    // nothing was half-written; the same requests now succeed, once each
    assert_eq!(h.task(&id).await["task"]["status"], "pending");
    assert_eq!(h.claim_id("CLIENT-1", &all_dry()).await, id);
    let r = h
        .submit(
            &other,
            "failure",
            "CLIENT-2",
            &key,
            &failure("failed", "a1"),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(h.task(&other).await["results"].as_array().unwrap().len(), 1);
    let r = h
        .submit(&other, "spec-resolution", "CLIENT-2", &skey, &body)
        .await;
    assert_eq!(r.status(), 200);
}

#[tokio::test]
async fn a_lock_released_within_busy_timeout_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admin.db").to_string_lossy().to_string();
    let mut cfg = MockAdminConfig::file(path.clone());
    cfg.busy_timeout_ms = 10_000;
    let h = Harness::start_with(cfg).await;
    let id = h.create(collect_task()).await;
    let lock = locker(&path);
    let http = h.http.clone();
    let url = h.url("/api/v1/client/tasks/claim");
    let pending = tokio::spawn(async move {
        http.post(url)
            .header("X-Client-Id", "CLIENT-1")
            .json(&all_dry())
            .send()
            .await
            .unwrap()
    });
    // Whenever the request reaches the database — before or after this commit — it
    // must end in 200: either it waits for the lock or finds it free.
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    lock.execute_batch("COMMIT").unwrap();
    let r = pending.await.unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["task"]["id"], id);
}

// ---------------------------------------------------------------------------------------
// fault plans over real HTTP
// ---------------------------------------------------------------------------------------

fn plan(endpoint: FaultTarget, nth: Option<u32>, next: Option<u32>, fault: Fault) -> FaultPlan {
    FaultPlan {
        endpoint,
        nth,
        next,
        fault,
    }
}

#[tokio::test]
async fn fault_latency_delays_then_handles() {
    let h = Harness::start().await;
    h.op.set_fault(plan(
        FaultTarget::Claim,
        None,
        Some(1),
        Fault::Latency { ms: 300 },
    ))
    .unwrap();
    let t0 = std::time::Instant::now();
    assert_eq!(h.claim("CLIENT-1", &all_dry()).await.status(), 204);
    assert!(t0.elapsed() >= std::time::Duration::from_millis(300));
    let j = h.op.journal();
    assert_eq!(j[0].fault.as_deref(), Some("latency"));
    assert_eq!(j[0].outcome, Outcome::Fresh);
}

#[tokio::test]
async fn fault_status_with_retry_after_seconds_or_date_touches_nothing() {
    let h = Harness::start().await;
    let id = h.create(collect_task()).await;
    h.op.set_fault(plan(
        FaultTarget::Claim,
        None,
        Some(1),
        Fault::Status {
            status: 503,
            retry_after: Some(RetryAfter::Seconds(7)),
            code: None,
        },
    ))
    .unwrap();
    h.op.set_fault(plan(
        FaultTarget::Claim,
        Some(2),
        None,
        Fault::Status {
            status: 429,
            retry_after: Some(RetryAfter::Date("Wed, 21 Oct 2026 07:28:00 GMT".into())),
            code: None,
        },
    ))
    .unwrap();
    let r = h.claim("CLIENT-1", &all_dry()).await;
    assert_eq!(r.headers().get("retry-after").unwrap(), "7");
    let (s, c, env) = error_code(r).await;
    assert_eq!((s, c.as_str()), (503, "SERVICE_UNAVAILABLE"));
    assert_eq!(env["error"]["retryable"], true);
    let r = h.claim("CLIENT-1", &all_dry()).await;
    assert_eq!(
        r.headers().get("retry-after").unwrap(),
        "Wed, 21 Oct 2026 07:28:00 GMT"
    );
    let (s, c, _) = error_code(r).await;
    assert_eq!((s, c.as_str()), (429, "RATE_LIMITED"));
    assert_eq!(h.task(&id).await["task"]["status"], "pending");
    assert_eq!(h.claim_id("CLIENT-1", &all_dry()).await, id);
    let outcomes: Vec<Outcome> = h.op.journal().iter().map(|e| e.outcome).collect();
    assert_eq!(
        outcomes,
        vec![Outcome::Fault, Outcome::Fault, Outcome::Fresh]
    );
}

#[tokio::test]
async fn fault_close_before_response_drops_the_connection_and_stores_nothing() {
    let h = Harness::start().await;
    let id = h.create(collect_task()).await;
    h.op.set_fault(plan(
        FaultTarget::Claim,
        None,
        Some(1),
        Fault::CloseBeforeResponse,
    ))
    .unwrap();
    let err = h
        .http
        .post(h.url("/api/v1/client/tasks/claim"))
        .header("X-Client-Id", "CLIENT-1")
        .json(&all_dry())
        .send()
        .await
        .expect_err("the connection is closed without an answer");
    assert!(!err.is_timeout());
    assert_eq!(h.task(&id).await["task"]["status"], "pending");
    assert_eq!(h.claim_id("CLIENT-1", &all_dry()).await, id);
    let j = h.op.journal();
    assert_eq!(j[0].outcome, Outcome::Fault);
    assert_eq!(j[0].committed, Some(false));
}

#[tokio::test]
async fn fault_commit_then_drop_stores_the_effect_and_a_retry_replays_it() {
    let h = Harness::start().await;
    let id = h.create(collect_task()).await;
    h.claim_id("CLIENT-1", &all_dry()).await;
    h.op.set_fault(plan(
        FaultTarget::Result,
        Some(1),
        None,
        Fault::CommitThenDrop,
    ))
    .unwrap();
    let key = format!("{id}:a1:result-v1");
    let body = collect_result("a1", COLLECT_GOODS, None);
    let err = h
        .http
        .post(h.url(&format!("/api/v1/client/tasks/{id}/result")))
        .header("X-Client-Id", "CLIENT-1")
        .header("Idempotency-Key", &key)
        .json(&body)
        .send()
        .await;
    assert!(err.is_err(), "no answer arrives");
    let t = h.task(&id).await;
    assert_eq!(
        t["results"].as_array().unwrap().len(),
        1,
        "but it was stored"
    );
    assert_eq!(t["task"]["status"], "succeeded");
    let r = h.submit(&id, "result", "CLIENT-1", &key, &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["result_id"], t["results"][0]["result_id"]);
    let j = h.op.journal();
    let last_two: Vec<(Outcome, Option<bool>)> = j
        .iter()
        .rev()
        .take(2)
        .map(|e| (e.outcome, e.committed))
        .collect();
    assert_eq!(
        last_two,
        vec![(Outcome::Replayed, None), (Outcome::Fault, Some(true))]
    );
}

#[tokio::test]
async fn fault_commit_then_drop_on_a_claim_leaves_the_task_claimed() {
    let h = Harness::start().await;
    let id = h.create(collect_task()).await;
    h.op.set_fault(plan(FaultTarget::Any, None, Some(1), Fault::CommitThenDrop))
        .unwrap();
    assert!(h
        .http
        .post(h.url("/api/v1/client/tasks/claim"))
        .header("X-Client-Id", "CLIENT-1")
        .json(&all_dry())
        .send()
        .await
        .is_err());
    assert_eq!(h.task(&id).await["task"]["status"], "claimed");
    // the §5.2 gap: a re-claim finds nothing (no lease, no re-dispatch)
    assert_eq!(h.claim("CLIENT-1", &all_dry()).await.status(), 204);
}

#[tokio::test]
async fn fault_garbage_and_truncated_bodies_after_commit() {
    let h = Harness::start().await;
    let id = h.create(purchase_task("dry_run", Some("CLIENT-1"))).await;
    h.claim_id("CLIENT-1", &all_dry()).await;
    h.op.set_fault(plan(
        FaultTarget::Failure,
        Some(1),
        None,
        Fault::GarbageBody,
    ))
    .unwrap();
    h.op.set_fault(plan(
        FaultTarget::Failure,
        Some(2),
        None,
        Fault::TruncatedBody,
    ))
    .unwrap();
    let key = format!("{id}:a1:failure-v1");
    let body = failure("retry_wait", "a1");
    let r = h.submit(&id, "failure", "CLIENT-1", &key, &body).await;
    assert_eq!(r.status(), 200);
    let text = r.bytes().await.unwrap();
    assert!(serde_json::from_slice::<Value>(&text).is_err(), "garbage");
    // second call: headers arrive, the body is cut off mid-stream
    let r = h.submit(&id, "failure", "CLIENT-1", &key, &body).await;
    assert!(
        r.bytes().await.is_err(),
        "truncated body is a transport error"
    );
    // third: the stored answer
    let r = h.submit(&id, "failure", "CLIENT-1", &key, &body).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["accepted"], true);
    assert_eq!(h.task(&id).await["results"].as_array().unwrap().len(), 1);
    let faults: Vec<Option<String>> = h.op.journal().iter().map(|e| e.fault.clone()).collect();
    assert_eq!(
        faults,
        vec![
            None,
            Some("garbage_body".into()),
            Some("truncated_body".into()),
            None
        ]
    );
}

#[tokio::test]
async fn fault_plans_are_managed_over_http_and_the_journal_is_served() {
    let h = Harness::start().await;
    let r = h
        .http
        .post(h.url("/api/v1/admin/faults"))
        .json(&json!({"endpoint": "registration", "nth": 2,
                      "fault": {"kind": "status", "status": 500}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    assert_eq!(h.register("C", &all_dry()).await.status(), 200);
    assert_eq!(h.register("C", &all_dry()).await.status(), 500);
    assert_eq!(h.register("C", &all_dry()).await.status(), 200);
    let j: Value = h
        .http
        .get(h.url("/api/v1/admin/journal"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let outcomes: Vec<&str> = j["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, vec!["fresh", "fault", "fresh"]);
    assert_eq!(j["entries"][0]["client_id"], "C");
    assert_eq!(j["entries"][0]["endpoint"], "registration");
    let r = h
        .http
        .delete(h.url("/api/v1/admin/faults"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    // rejections are journaled with their code
    h.submit("nope", "result", "C", "k", &json!({})).await;
    let last = h.op.journal().pop().unwrap();
    assert_eq!(last.outcome, Outcome::Rejected);
    assert_eq!(last.error_code.as_deref(), Some("INVALID_BODY"));
}

// ---------------------------------------------------------------------------------------
// faults in-process (router().oneshot, no connection)
// ---------------------------------------------------------------------------------------

fn oneshot_request(
    path: &str,
    key: Option<&str>,
    body: &Value,
) -> axum::http::Request<axum::body::Body> {
    let mut b = axum::http::Request::post(path)
        .header("content-type", "application/json")
        .header("X-Client-Id", "CLIENT-1");
    if let Some(k) = key {
        b = b.header("Idempotency-Key", k);
    }
    b.body(axum::body::Body::from(serde_json::to_vec(body).unwrap()))
        .unwrap()
}

#[tokio::test]
async fn in_process_connection_faults_are_marked_and_truncation_fails_the_body() {
    let admin = MockAdmin::open(MockAdminConfig::in_memory()).unwrap();
    let op = admin.operator();
    let router = admin.router();
    let id = op.create_task(collect_task()).await.unwrap()["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    op.set_fault(plan(
        FaultTarget::Claim,
        None,
        Some(1),
        Fault::CommitThenDrop,
    ))
    .unwrap();
    let r = router
        .clone()
        .oneshot(oneshot_request(
            "/api/v1/client/tasks/claim",
            None,
            &all_dry(),
        ))
        .await
        .unwrap();
    assert_eq!(
        r.headers().get("x-mock-fault").unwrap(),
        "connection-dropped"
    );
    assert_eq!(op.get_task(&id).await.unwrap()["task"]["status"], "claimed");

    op.set_fault(plan(
        FaultTarget::Result,
        None,
        Some(1),
        Fault::CloseBeforeResponse,
    ))
    .unwrap();
    let key = format!("{id}:a1:result-v1");
    let body = collect_result("a1", COLLECT_GOODS, None);
    let path = format!("/api/v1/client/tasks/{id}/result");
    let r = router
        .clone()
        .oneshot(oneshot_request(&path, Some(&key), &body))
        .await
        .unwrap();
    assert_eq!(
        r.headers().get("x-mock-fault").unwrap(),
        "connection-dropped"
    );
    assert!(op.get_task(&id).await.unwrap()["results"]
        .as_array()
        .unwrap()
        .is_empty());

    op.set_fault(plan(
        FaultTarget::Result,
        None,
        Some(1),
        Fault::TruncatedBody,
    ))
    .unwrap();
    let r = router
        .clone()
        .oneshot(oneshot_request(&path, Some(&key), &body))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert!(axum::body::to_bytes(r.into_body(), usize::MAX)
        .await
        .is_err());
    let r = router
        .oneshot(oneshot_request(&path, Some(&key), &body))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        op.get_task(&id).await.unwrap()["results"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

/// A client that sends a request's headers and then stalls — mid-headers, or before the
/// body it announced — is cut after the read timeout: the connection closes (a stalled
/// body first gets `408 REQUEST_TIMEOUT` in the §3 envelope), and the server still serves
/// others. Raw sockets: reqwest cannot send half a request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_half_sent_request_is_cut_after_the_read_timeout() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let h = Harness::start_with(MockAdminConfig {
        request_read_timeout_ms: 300,
        ..MockAdminConfig::in_memory()
    })
    .await;
    let addr = h.base.trim_start_matches("http://").to_string();
    // Reads until the server closes (bounded: the test fails rather than hangs).
    async fn until_closed(s: &mut tokio::net::TcpStream) -> String {
        let mut got = Vec::new();
        let read = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            let mut buf = [0u8; 4096];
            loop {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await;
        assert!(
            read.is_ok(),
            "the server kept a half-sent request open: {}",
            String::from_utf8_lossy(&got)
        );
        String::from_utf8_lossy(&got).into_owned()
    }
    // Headers complete, the body announced and never finished.
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(
        b"POST /api/v1/client/tasks/claim HTTP/1.1\r\nHost: x\r\nX-Client-Id: CLIENT-1\r\n\
          Content-Type: application/json\r\nContent-Length: 200\r\n\r\n{\"supported",
    )
    .await
    .unwrap();
    let answer = until_closed(&mut s).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("REQUEST_TIMEOUT"), "{answer}");
    // Headers never finished.
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    s.write_all(b"POST /api/v1/client/tasks/claim HTTP/1.1\r\nHost: x\r\nX-Cli")
        .await
        .unwrap();
    let answer = until_closed(&mut s).await;
    assert!(!answer.contains("200 OK"), "{answer}");
    // Nothing was claimed, and whole requests are still served.
    assert_eq!(h.claim("CLIENT-1", &all_dry()).await.status(), 204);
    h.stop().await;
}

#[tokio::test]
async fn oversized_bodies_are_invalid_body_not_413() {
    // In-process: over a socket the server may close before the client has finished
    // sending 5 MiB, which would make the answer a race of the transport, not the mock.
    let admin = MockAdmin::open(MockAdminConfig::in_memory()).unwrap();
    let req = axum::http::Request::post("/api/v1/client/tasks/x/result")
        .header("content-type", "application/json")
        .header("X-Client-Id", "CLIENT-1")
        .header("Idempotency-Key", "k")
        .body(axum::body::Body::from(vec![b' '; 5 * 1024 * 1024]))
        .unwrap();
    let r = admin.router().oneshot(req).await.unwrap();
    assert_eq!(r.status(), 400);
    let v: Value = serde_json::from_slice(
        &axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(v["error"]["code"], "INVALID_BODY");
}

// ---------------------------------------------------------------------------------------
// the binary
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn binary_prints_the_bound_address_and_loads_a_seed() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let seed = dir.path().join("seed.json");
    std::fs::write(
        &seed,
        serde_json::to_vec(&json!([
            collect_task(),
            purchase_task("live", Some("CLIENT-1"))
        ]))
        .unwrap(),
    )
    .unwrap();
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-admin"))
        .args(["--listen", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("admin.db"))
        .arg("--seed")
        .arg(&seed)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let url = line
        .strip_prefix("listening on ")
        .expect("exact first line")
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:"));
    assert!(!url.ends_with(":0"));
    let tasks: Value = reqwest::get(format!("{url}/api/v1/admin/tasks"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(tasks["tasks"].as_array().unwrap().len(), 2);
    // SIGTERM is a graceful stop: the process exits 0.
    let pid = child.id().expect("running").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(sent.success());
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait())
        .await
        .expect("stops")
        .unwrap();
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn binary_refuses_a_database_it_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_mock-admin"))
        .args(["--listen", "127.0.0.1:0", "--db"])
        .arg(dir.path().join("no-such-dir").join("admin.db"))
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("mock-admin:"));
    assert!(out.stdout.is_empty(), "never claims to listen");
}
