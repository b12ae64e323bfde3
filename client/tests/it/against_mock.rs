//! The client against the bundled mock Admin (`cmautobuy-mock-admin`), over HTTP and
//! in-process:
//! - one generic gateway story run against both gateways;
//! - the network fault matrix: {claim, result, failure, spec resolution} × {timeout, 503,
//!   429 + Retry-After, connection dropped after the Admin committed, garbage body};
//! - §5.2 (claimed but not saved) and registration failures;
//! - the real binary: SIGKILL with results in the outbox, and a full run whose complete
//!   trace output must not contain the token.

use cmautobuy_client::alert::AlertKind;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::*;
use cmautobuy_client::clock::Clock;
use cmautobuy_client::gateway::{
    AdminGateway, GatewaySettings, HttpAdminGateway, MockAdminGateway,
};
use cmautobuy_client::outbox::{Relay, Step};
use cmautobuy_client::registration;
use cmautobuy_client::retry::RetryPolicy;
use cmautobuy_client::runner::{client_profile, ClaimStep, RunConfig, Runner};
use cmautobuy_client::secret::Secret;
use cmautobuy_client::spec::{self, Resolver};
use cmautobuy_client::store::{Store, TaskState};
use cmautobuy_contract::hash::{snapshot_hash_of, spec_resolution_idempotency_key};
use cmautobuy_contract::{AdminErrorCode, SpecCandidate, SpecResolutionRequest};
use cmautobuy_mock_admin::{
    Fault, FaultPlan, FaultTarget, MockAdmin, MockAdminConfig, Operator, RetryAfter,
};

/// A mock Admin served on 127.0.0.1:0, plus its operator handle.
struct Admin {
    mock: MockAdmin,
    op: Operator,
    url: String,
    _server: tokio::task::JoinHandle<anyhow::Result<()>>,
}

async fn admin_with(cfg: MockAdminConfig) -> Admin {
    let mock = MockAdmin::open(cfg).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let server = tokio::spawn(mock.clone().serve(listener, std::future::pending()));
    Admin {
        op: mock.operator(),
        mock,
        url,
        _server: server,
    }
}

async fn admin() -> Admin {
    admin_with(MockAdminConfig::in_memory()).await
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    Http,
    InProcess,
}

const VIAS: [Via; 2] = [Via::Http, Via::InProcess];

fn gw_settings(store: &Store, timeout: Duration) -> GatewaySettings {
    let mut s = GatewaySettings::new(store.client_id().unwrap(), Some(Secret::new(TOKEN)));
    s.request_timeout = timeout;
    s.connect_timeout = timeout;
    s
}

fn http_gw(a: &Admin, store: &Store, timeout: Duration) -> Arc<HttpAdminGateway> {
    Arc::new(HttpAdminGateway::new(&a.url, gw_settings(store, timeout)).unwrap())
}

fn inproc_gw(a: &Admin, store: &Store, timeout: Duration) -> Arc<MockAdminGateway> {
    Arc::new(MockAdminGateway::new(
        a.mock.router(),
        gw_settings(store, timeout),
    ))
}

fn collect_body(goods: &str) -> Value {
    json!({"type": "collect", "payload": {"goods_id": goods,
        "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}")}})
}

fn purchase_body(goods: &str) -> Value {
    json!({"type": "purchase", "execution_mode": "dry_run", "payload": {"goods_id": goods,
        "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}"),
        "options": {"color": "黑色", "size": "60公斤"}, "quantity": 2, "max_price_cent": 4200}})
}

async fn create(op: &Operator, body: Value) -> String {
    let t = op.create_task(body).await.unwrap();
    t["task"]["id"].as_str().unwrap().to_string()
}

/// How many claims the Admin has journaled.
fn claim_count(op: &Operator) -> usize {
    op.journal()
        .iter()
        .filter(|e| e.endpoint == cmautobuy_mock_admin::Endpoint::Claim)
        .count()
}

/// The stored results of a task at the Admin with this idempotency key.
async fn stored_with_key(op: &Operator, task: &str, key: &str) -> Vec<Value> {
    let t = op.get_task(task).await.unwrap();
    t["results"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["idempotency_key"] == key)
        .cloned()
        .collect()
}

fn spec_request(task_version: i64, attempt_id: &str, goods: &str) -> SpecResolutionRequest {
    let candidates: Vec<SpecCandidate> = ["120斤", "130斤"]
        .iter()
        .enumerate()
        .map(|(i, size)| {
            serde_json::from_value(
                json!({"candidate_id": format!("c{}", i + 1), "raw_text": size,
                "options": {"color": "黑色", "size": size}}),
            )
            .unwrap()
        })
        .collect();
    let hash = snapshot_hash_of(goods, "黑色", &candidates);
    serde_json::from_value(json!({
        "schema_version": 1, "task_version": task_version, "attempt_id": attempt_id,
        "pdd_goods_id": goods, "original_options": {"color": "黑色", "size": "60公斤"},
        "selected_color": "黑色", "target_size": "60公斤", "candidates": candidates,
        "candidate_snapshot_hash": hash, "observed_at": "2026-08-17T08:00:00Z"
    }))
    .unwrap()
}

// ----------------------------------------------------------------------------------------
// One story, both gateways
// ----------------------------------------------------------------------------------------

/// The contract as the client sees it, for any gateway.
async fn gateway_story<G: AdminGateway>(g: &G, a: &Admin, store: &Store) {
    let settings = store.settings().unwrap();
    let ready = ScriptedExecutor::new(Script::Result).ready_for_purchase(false);
    let profile = client_profile(
        &settings,
        cmautobuy_client::executor::Executor::readiness(&ready),
    );

    // §4.1 registration: idempotent upsert, name kept.
    let r = g.register_client(&profile).await.unwrap();
    assert!(r.registered);
    assert_eq!(r.client_id, settings.client_id);
    g.register_client(&profile).await.unwrap();
    let clients = a.op.clients().await.unwrap();
    let mine: Vec<_> = clients["clients"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["client_id"] == settings.client_id.as_str())
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["name"], "测试-01");

    // §5: 204 is no work.
    assert_eq!(g.claim_next(&profile).await.unwrap(), None);

    // §5/§6: claim, submit, replay, conflict.
    let id = create(&a.op, collect_body("737116531267")).await;
    let task = g.claim_next(&profile).await.unwrap().unwrap();
    assert_eq!(task.id, id, "the id comes back verbatim");
    let key = format!("{id}:a1:result-v1");
    let body = serde_json::to_vec(&json!({"task_version": task.version, "attempt_id": "a1",
        "result_type": "collect", "completed_at": "2026-08-06T08:03:00Z",
        "pdd_data": {"goods_id": "737116531267", "price_granularity": "color",
                     "dimensions": [], "skus": []}}))
    .unwrap();
    let first = g.submit_result(&id, &key, &body).await.unwrap();
    assert!(first.result_id.is_some());
    let again = g.submit_result(&id, &key, &body).await.unwrap();
    assert_eq!(again.result_id, first.result_id, "same key, same answer");
    let changed = serde_json::to_vec(&json!({"task_version": task.version, "attempt_id": "a1",
        "result_type": "collect", "completed_at": "2026-08-06T08:04:00Z",
        "pdd_data": {"goods_id": "737116531267", "price_granularity": "color",
                     "dimensions": [], "skus": []}}))
    .unwrap();
    let e = g.submit_result(&id, &key, &changed).await.unwrap_err();
    assert_eq!(e.code(), Some(&AdminErrorCode::IdempotencyConflict));
    assert!(!e.is_retryable());
    assert_eq!(stored_with_key(&a.op, &id, &key).await.len(), 1);

    // §6.1: a cancelled task still accepts our failure.
    let id2 = create(&a.op, collect_body("2")).await;
    let t2 = g.claim_next(&profile).await.unwrap().unwrap();
    assert_eq!(t2.id, id2);
    a.op.cancel_task(&id2).await.unwrap();
    let fbody = serde_json::to_vec(&json!({"task_version": t2.version, "attempt_id": "a2",
        "status": "failed", "error": {"code": "GOODS_UNAVAILABLE", "message": "下架",
        "retryable": false, "step": "check_goods"}, "diagnostics": {},
        "reported_at": "2026-08-06T08:03:00Z"}))
    .unwrap();
    let acc = g
        .submit_failure(&id2, &format!("{id2}:a2:failure-v1"), &fbody)
        .await
        .unwrap();
    assert!(acc.result_id.is_some());

    // 403 / 404.
    let e = g
        .submit_result("no-such-task", "k", &body)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(404));
    let id3 = create(&a.op, collect_body("3")).await;
    let e = g.submit_result(&id3, "k3", &body).await.unwrap_err();
    assert_eq!(e.status(), Some(403));
    assert!(!e.is_retryable());

    // §7.1: a purchase task, a valid request, then a lying hash.
    let pid = create(&a.op, purchase_body("937122477375")).await;
    // The collect task id3 is still pending: drain claims until the purchase comes.
    let mut purchase = None;
    for _ in 0..3 {
        if let Some(t) = g.claim_next(&profile).await.unwrap() {
            if t.id == pid {
                purchase = Some(t);
                break;
            }
        }
    }
    let purchase = purchase.expect("purchase task claimed");
    let req = spec_request(purchase.version, "a3", "937122477375");
    let key = spec_resolution_idempotency_key(&pid, "a3", &req.candidate_snapshot_hash);
    let body = serde_json::to_vec(&req).unwrap();
    let resp = g.resolve_purchase_spec(&pid, &key, &body).await.unwrap();
    assert_eq!(resp.candidate_snapshot_hash, req.candidate_snapshot_hash);
    cmautobuy_contract::validate::spec_resolution_response(&req, &resp).unwrap();
    let e = g
        .resolve_purchase_spec(&pid, "spec-resolution-v1:00", &body)
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some(&AdminErrorCode::SpecResolutionHashMismatch));
}

#[tokio::test]
async fn the_gateway_story_holds_over_http_and_in_process() {
    for via in VIAS {
        let a = admin().await;
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), &a.url, Some("192.168.0.173:5555"));
        match via {
            Via::Http => {
                gateway_story(
                    http_gw(&a, &store, Duration::from_secs(5)).as_ref(),
                    &a,
                    &store,
                )
                .await
            }
            Via::InProcess => {
                gateway_story(
                    inproc_gw(&a, &store, Duration::from_secs(5)).as_ref(),
                    &a,
                    &store,
                )
                .await
            }
        }
    }
}

/// Data model §4.2 and the price-0 decision (`cmautobuy_contract::money`): the client
/// reads `¥0` (a free gift option) as `Fen(0)` with its label as `raw_price`; its own
/// check and the mock agree that this is a price, so the collect is not lost.
#[tokio::test]
async fn data_model_4_2_a_free_option_read_as_yuan_0_is_accepted_by_client_and_mock() {
    use cmautobuy_client::money::{parse_price, Fen};
    use cmautobuy_contract::{
        validate, Dimension, PddData, PriceGranularity, ResultRequest, ResultType, Sku,
    };
    assert_eq!(parse_price("¥0"), Some(Fen(0)));
    let a = admin().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &a.url, Some("192.168.0.173:5555"));
    let g = http_gw(&a, &store, Duration::from_secs(5));
    let settings = store.settings().unwrap();
    let ready = ScriptedExecutor::new(Script::Result).ready_for_purchase(false);
    let profile = client_profile(
        &settings,
        cmautobuy_client::executor::Executor::readiness(&ready),
    );
    let id = create(&a.op, collect_body("737116531267")).await;
    let task = g.claim_next(&profile).await.unwrap().unwrap();
    let sku = |color: &str, price: Option<Fen>, raw: Option<&str>| Sku {
        options: [("color".to_string(), color.to_string())]
            .into_iter()
            .collect(),
        price_cent: price,
        list_price_cent: None,
        price_observed_at: [("color".to_string(), color.to_string())]
            .into_iter()
            .collect(),
        available: true,
        raw_price: raw.map(str::to_string),
    };
    let result = ResultRequest {
        task_version: task.version,
        attempt_id: "a1".into(),
        result_type: ResultType::Collect,
        completed_at: "2026-08-06T08:03:00Z".into(),
        pdd_data: Some(PddData {
            schema_version: Some(1),
            goods_id: "737116531267".into(),
            title: None,
            shop_name: None,
            captured_at: None,
            price_granularity: PriceGranularity::Color,
            dimensions: vec![Dimension {
                key: "color".into(),
                name: "颜色分类".into(),
            }],
            skus: vec![
                sku("赠品", parse_price("¥0"), Some("¥0")),
                sku("黑色", parse_price("¥4.7"), Some("¥4.7")),
            ],
            extra: Default::default(),
        }),
        purchase: None,
        extra: Default::default(),
    };
    validate::check_result(&result).expect("the client's own check takes a read ¥0");
    let body = serde_json::to_vec(&result).unwrap();
    let ack = g
        .submit_result(&id, &format!("{id}:a1:result-v1"), &body)
        .await
        .unwrap();
    assert!(ack.result_id.is_some());
    let p = a.op.products().await.unwrap();
    assert_eq!(p["products"][0]["skus_json"]["skus"][0]["price_cent"], 0);
    assert_eq!(p["products"][0]["collect_status"], "collected");
}

#[tokio::test]
async fn a_required_token_is_checked_and_a_wrong_one_is_a_permanent_error() {
    let a = admin_with(MockAdminConfig {
        require_token: Some(TOKEN.into()),
        ..MockAdminConfig::in_memory()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &a.url, None);
    let profile = client_profile(&store.settings().unwrap(), Default::default());
    http_gw(&a, &store, Duration::from_secs(5))
        .claim_next(&profile)
        .await
        .unwrap();
    let mut wrong = gw_settings(&store, Duration::from_secs(5));
    wrong.token = Some(Secret::new("tok-wrong-777"));
    for e in [
        HttpAdminGateway::new(&a.url, wrong.clone())
            .unwrap()
            .claim_next(&profile)
            .await
            .unwrap_err(),
        MockAdminGateway::new(a.mock.router(), wrong)
            .claim_next(&profile)
            .await
            .unwrap_err(),
    ] {
        assert_eq!(e.status(), Some(401), "{e}");
        assert!(!e.is_retryable());
        assert!(!e.to_string().contains("tok-wrong-777"));
    }
}

// ----------------------------------------------------------------------------------------
// The fault matrix
// ----------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Timeout,
    Unavailable,
    RateLimited,
    DroppedAfterCommit,
    Garbage,
    /// Beyond the five above: closed before handling, and a body cut off mid-stream.
    ClosedBeforeResponse,
    Truncated,
}

const KINDS: [Kind; 7] = [
    Kind::Timeout,
    Kind::Unavailable,
    Kind::RateLimited,
    Kind::DroppedAfterCommit,
    Kind::Garbage,
    Kind::ClosedBeforeResponse,
    Kind::Truncated,
];

/// The request deadline used by the matrix; the timeout fault waits longer.
const DEADLINE: Duration = Duration::from_millis(1_000);
const RETRY_AFTER_SECS: u64 = 3;

fn fault(kind: Kind) -> Fault {
    match kind {
        Kind::Timeout => Fault::Latency { ms: 2_500 },
        Kind::Unavailable => Fault::Status {
            status: 503,
            retry_after: None,
            code: None,
        },
        Kind::RateLimited => Fault::Status {
            status: 429,
            retry_after: Some(RetryAfter::Seconds(RETRY_AFTER_SECS)),
            code: None,
        },
        Kind::DroppedAfterCommit => Fault::CommitThenDrop,
        Kind::Garbage => Fault::GarbageBody,
        Kind::ClosedBeforeResponse => Fault::CloseBeforeResponse,
        Kind::Truncated => Fault::TruncatedBody,
    }
}

fn plan(endpoint: FaultTarget, kind: Kind) -> FaultPlan {
    FaultPlan {
        endpoint,
        nth: None,
        next: Some(1),
        fault: fault(kind),
    }
}

/// Checks a retry delay against the policy: `Retry-After` when one was sent, otherwise
/// within the full-jitter ceiling of that attempt.
fn check_delay(kind: Kind, attempt: u32, delay: Duration) {
    let ceiling = RetryPolicy::default().ceiling(attempt);
    if kind == Kind::RateLimited && delay == Duration::from_secs(RETRY_AFTER_SECS) {
        return;
    }
    assert!(delay <= ceiling, "{kind:?} attempt {attempt}: {delay:?}");
}

/// For the 429 kind, one of the waits must be exactly the `Retry-After` sent.
fn check_retry_after_seen(kind: Kind, delays: &[Duration]) {
    if kind == Kind::RateLimited {
        assert!(
            delays.contains(&Duration::from_secs(RETRY_AFTER_SECS)),
            "Retry-After not honoured: {delays:?}"
        );
    }
}

/// Delivers the outbox to the end with a virtual clock; returns the delays waited.
async fn deliver<G: AdminGateway>(
    relay: &Relay<G, VirtualClock>,
    clock: &VirtualClock,
    kind: Kind,
) -> Vec<Duration> {
    let mut delays = Vec::new();
    for _ in 0..20 {
        match relay.step().await.unwrap() {
            Step::Accepted { .. } => {
                check_retry_after_seen(kind, &delays);
                return delays;
            }
            Step::Retry { attempt, delay, .. } => {
                check_delay(kind, attempt, delay);
                delays.push(delay);
                clock.advance(delay);
            }
            Step::Parked { error, .. } => panic!("{kind:?}: parked: {error}"),
            Step::Idle(Some(at)) => clock.advance((at - clock.now()).to_std().unwrap_or_default()),
            Step::Idle(None) => panic!("{kind:?}: nothing to deliver"),
        }
    }
    panic!("{kind:?}: not delivered after 20 steps");
}

/// result / failure × every fault kind.
async fn submission_case<G: AdminGateway>(
    g: Arc<G>,
    a: &Admin,
    store: &Store,
    script: Script,
    kind: Kind,
) {
    let clock = test_clock();
    let exec = ScriptedExecutor::new(script);
    let runner = Runner::new(
        store.clone(),
        g.clone(),
        Arc::new(exec),
        clock.clone(),
        RunConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    );
    let relay = Relay::new(store.clone(), g, clock.clone(), RetryPolicy::default());
    let id = create(&a.op, collect_body("737116531267")).await;
    assert!(matches!(
        runner.claim_once().await.unwrap(),
        ClaimStep::Processed { .. }
    ));
    let target = match script {
        Script::Result => FaultTarget::Result,
        Script::Failure => FaultTarget::Failure,
    };
    a.op.set_fault(plan(target, kind)).unwrap();
    let delays = deliver(&relay, &clock, kind).await;
    // One failed attempt, then accepted (a loaded machine may add a timeout or two; the
    // delays are checked against the policy either way).
    assert!(!delays.is_empty(), "{kind:?}: the fault was seen");
    let item = store.outbox_list(true).unwrap().pop().unwrap();
    let stored = stored_with_key(&a.op, &id, &item.idempotency_key).await;
    assert_eq!(
        stored.len(),
        1,
        "{kind:?}: exactly one stored result per key"
    );
    let sent: Value = serde_json::from_slice(&item.body).unwrap();
    assert_eq!(stored[0]["body"], sent, "{kind:?}: the stored body is ours");
    let expected = match script {
        Script::Result => TaskState::Succeeded,
        Script::Failure => TaskState::Failed,
    };
    assert_eq!(
        store.task(item.task_id).unwrap().state,
        expected,
        "{kind:?}"
    );
    a.op.clear_faults();
}

/// claim × every fault kind: the client ends with the task done and one stored result.
async fn claim_case<G: AdminGateway>(g: Arc<G>, a: &Admin, store: &Store, kind: Kind) {
    let clock = test_clock();
    let runner = Runner::new(
        store.clone(),
        g.clone(),
        Arc::new(ScriptedExecutor::new(Script::Result)),
        clock.clone(),
        RunConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    );
    let relay = Relay::new(store.clone(), g, clock.clone(), RetryPolicy::default());
    let client_id = store.client_id().unwrap();
    let id = create(&a.op, collect_body("737116531267")).await;
    a.op.set_fault(plan(FaultTarget::Claim, kind)).unwrap();
    let first = runner.claim_once().await.unwrap();
    match (kind, &first) {
        // The Admin committed a claim we cannot read — unreadable, or cut off after its
        // 200 and headers: stop, tell the operator (§5.2), never claim past it.
        (Kind::Garbage | Kind::Truncated, ClaimStep::Blocked(m)) => {
            assert!(m.contains("could not be read"), "{m}");
            assert!(m.contains("protocol_error"), "{m}");
            assert!(m.contains(&client_id), "names the client id: {m}");
            if kind == Kind::Truncated {
                // What arrived of the answer names the task.
                assert!(m.contains(&id), "{m}");
            }
            assert!(matches!(
                runner.claim_once().await.unwrap(),
                ClaimStep::Blocked(_)
            ));
            a.op.reassign_task(&id, Some(&client_id)).await.unwrap();
            store.ack_alerts(None, clock.now()).unwrap();
        }
        (Kind::Garbage | Kind::Truncated, other) => {
            panic!("{kind:?}: a claim the Admin committed must stop claiming, not {other:?}")
        }
        (_, ClaimStep::Backoff(d)) => {
            check_delay(kind, 1, *d);
            check_retry_after_seen(kind, &[*d]);
        }
        other => panic!("{kind:?}: {other:?}"),
    }
    // Committed-then-lost claims come back when the Admin reassigns (its timeout; here
    // the operator).
    let mut done = false;
    for _ in 0..6 {
        match runner.claim_once().await.unwrap() {
            ClaimStep::Backoff(d) => check_delay(Kind::Timeout, 1, d),
            ClaimStep::Processed { remote_task_id } => {
                assert_eq!(remote_task_id, id);
                done = true;
                break;
            }
            ClaimStep::NoWork(_) => {
                a.op.reassign_task(&id, Some(&client_id)).await.unwrap();
            }
            other => panic!("{kind:?}: {other:?}"),
        }
    }
    assert!(done, "{kind:?}: task never processed");
    deliver(&relay, &clock, Kind::Unavailable).await;
    let item = store.outbox_list(true).unwrap().pop().unwrap();
    assert_eq!(
        stored_with_key(&a.op, &id, &item.idempotency_key)
            .await
            .len(),
        1
    );
    assert_eq!(
        store.task(item.task_id).unwrap().state,
        TaskState::Succeeded
    );
    a.op.clear_faults();
}

/// spec resolution × every fault kind: one record per key, an answer in the end.
async fn spec_case<G: AdminGateway>(g: Arc<G>, a: &Admin, store: &Store, kind: Kind) {
    let clock = test_clock();
    let settings = store.settings().unwrap();
    let exec = ScriptedExecutor::new(Script::Result).ready_for_purchase(false);
    let profile = client_profile(
        &settings,
        cmautobuy_client::executor::Executor::readiness(&exec),
    );
    let goods = "937122477375";
    let id = create(&a.op, purchase_body(goods)).await;
    let task = g.claim_next(&profile).await.unwrap().unwrap();
    assert_eq!(task.id, id);
    let local = store.save_claimed_task(&task, "{}", clock.now()).unwrap();
    let run = store.start_run(local, clock.now()).unwrap();
    let req = spec_request(task.version, &run.attempt_id, goods);
    a.op.set_fault(plan(FaultTarget::SpecResolution, kind))
        .unwrap();
    let resolver = Resolver {
        store,
        gateway: g.as_ref(),
        clock: &clock,
        policy: RetryPolicy::default(),
        max_attempts: 5,
    };
    let resp = spec::resolve(&resolver, &run, &id, &req).await.unwrap();
    assert_eq!(resp.candidate_snapshot_hash, req.candidate_snapshot_hash);
    let sleeps = clock.waits();
    assert!(!sleeps.is_empty(), "{kind:?}: at least one retry");
    for (i, d) in sleeps.iter().enumerate() {
        check_delay(kind, i as u32 + 1, *d);
    }
    check_retry_after_seen(kind, &sleeps);
    let all = a.op.spec_resolutions().await.unwrap();
    let n = all["spec_resolutions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["attempt_id"] == run.attempt_id.as_str())
        .count();
    assert_eq!(n, 1, "{kind:?}: one record per key");
    let key = spec_resolution_idempotency_key(&id, &run.attempt_id, &req.candidate_snapshot_hash);
    assert_eq!(
        store.spec_resolution(&key).unwrap().unwrap().state,
        "resolved"
    );
    // Asked again (e.g. after a restart), the stored answer comes back without a send.
    let journal_before = a.op.journal().len();
    let again = spec::resolve(&resolver, &run, &id, &req).await.unwrap();
    assert_eq!(again.resolution_id, resp.resolution_id);
    assert_eq!(a.op.journal().len(), journal_before);
    a.op.clear_faults();
}

async fn matrix_for(via: Via) {
    for kind in KINDS {
        for endpoint in ["claim", "result", "failure", "spec_resolution"] {
            let a = admin().await;
            let dir = tempfile::tempdir().unwrap();
            let store = store(dir.path(), &a.url, Some("192.168.0.173:5555"));
            macro_rules! with_gw {
                ($g:expr) => {{
                    let g = $g;
                    match endpoint {
                        "claim" => claim_case(g, &a, &store, kind).await,
                        "result" => submission_case(g, &a, &store, Script::Result, kind).await,
                        "failure" => submission_case(g, &a, &store, Script::Failure, kind).await,
                        _ => spec_case(g, &a, &store, kind).await,
                    }
                }};
            }
            match via {
                Via::Http => with_gw!(http_gw(&a, &store, DEADLINE)),
                Via::InProcess => with_gw!(inproc_gw(&a, &store, DEADLINE)),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_matrix_over_http() {
    matrix_for(Via::Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_matrix_in_process() {
    matrix_for(Via::InProcess).await;
}

#[tokio::test]
async fn permanent_rejections_park_without_retry() {
    for status in [400u16, 401, 403, 404, 409, 422] {
        let a = admin().await;
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), &a.url, None);
        let g = inproc_gw(&a, &store, Duration::from_secs(5));
        let clock = test_clock();
        let runner = Runner::new(
            store.clone(),
            g.clone(),
            Arc::new(ScriptedExecutor::new(Script::Result)),
            clock.clone(),
            RunConfig::default(),
            Arc::new(tokio::sync::Notify::new()),
        );
        let relay = Relay::new(store.clone(), g, clock.clone(), RetryPolicy::default());
        create(&a.op, collect_body("1")).await;
        assert!(matches!(
            runner.claim_once().await.unwrap(),
            ClaimStep::Processed { .. }
        ));
        a.op.set_fault(FaultPlan {
            endpoint: FaultTarget::Result,
            nth: None,
            next: Some(100),
            fault: Fault::Status {
                status,
                retry_after: None,
                code: None,
            },
        })
        .unwrap();
        assert!(
            matches!(relay.step().await.unwrap(), Step::Parked { .. }),
            "{status}"
        );
        clock.advance(Duration::from_secs(7 * 86400));
        assert_eq!(relay.step().await.unwrap(), Step::Idle(None), "{status}");
        let sent =
            a.op.journal()
                .iter()
                .filter(|e| e.endpoint == cmautobuy_mock_admin::Endpoint::Result)
                .count();
        assert_eq!(sent, 1, "{status}: never retried");
        // The operator fixes the cause and requeues: delivered.
        a.op.clear_faults();
        assert_eq!(store.outbox_requeue(None, clock.now()).unwrap(), 1);
        assert!(matches!(relay.step().await.unwrap(), Step::Accepted { .. }));
    }
}

// ----------------------------------------------------------------------------------------
// §5.2 and registration
// ----------------------------------------------------------------------------------------

#[tokio::test]
async fn a_claimed_task_that_cannot_be_saved_stops_claiming_and_keeps_its_id_visible() {
    let a = admin().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &a.url, None);
    // The disk "fails" for task rows only.
    rusqlite::Connection::open(Store::path_in(dir.path()))
        .unwrap()
        .execute_batch(
            "CREATE TRIGGER fail_tasks BEFORE INSERT ON tasks BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END;",
        )
        .unwrap();
    let g = inproc_gw(&a, &store, Duration::from_secs(5));
    let exec = ScriptedExecutor::new(Script::Result);
    let runner = Runner::new(
        store.clone(),
        g,
        Arc::new(exec.clone()),
        test_clock(),
        RunConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    );
    let id = create(&a.op, collect_body("1")).await;
    create(&a.op, collect_body("2")).await;
    match runner.claim_once().await.unwrap() {
        ClaimStep::Blocked(m) => assert!(m.contains(&id), "{m}"),
        other => panic!("{other:?}"),
    }
    let claims = || claim_count(&a.op);
    assert_eq!(claims(), 1);
    for _ in 0..3 {
        match runner.claim_once().await.unwrap() {
            ClaimStep::Blocked(m) => assert!(m.contains(&id), "{m}"),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(claims(), 1, "no silent next claim");
    assert_eq!(exec.job_count(), 0);
    let alerts = store.open_alerts().unwrap();
    assert_eq!(alerts[0].kind, AlertKind::ClaimNotSaved);
    assert_eq!(alerts[0].remote_task_id.as_deref(), Some(id.as_str()));
    // The operator repairs and acknowledges: claiming resumes with the next task.
    rusqlite::Connection::open(Store::path_in(dir.path()))
        .unwrap()
        .execute_batch("DROP TRIGGER fail_tasks;")
        .unwrap();
    store.ack_alerts(None, chrono::Utc::now()).unwrap();
    assert!(matches!(
        runner.claim_once().await.unwrap(),
        ClaimStep::Processed { .. }
    ));
}

/// A task id that cannot be carried in an `Idempotency-Key` (a control character, or a
/// key over 255 bytes once percent-encoded) is never run: its outcome could never be
/// delivered. Like an incomplete payload it raises the §5 protocol alert naming the id,
/// and claiming stops until the operator acknowledges it.
#[tokio::test]
async fn a_task_id_that_cannot_be_carried_in_a_key_is_not_run_and_stops_claiming() {
    for bad in ["cg\n1", "cg\u{7}2", &"采".repeat(24)] {
        let a = admin().await;
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), &a.url, None);
        let exec = ScriptedExecutor::new(Script::Result);
        let runner = Runner::new(
            store.clone(),
            http_gw(&a, &store, Duration::from_secs(5)),
            Arc::new(exec.clone()),
            test_clock(),
            RunConfig::default(),
            Arc::new(tokio::sync::Notify::new()),
        );
        let mut body = collect_body("1");
        body["id"] = json!(bad);
        let id = create(&a.op, body).await;
        assert_eq!(id, bad);
        let next = create(&a.op, collect_body("2")).await;
        let shown = format!("{bad:?}");
        match runner.claim_once().await.unwrap() {
            ClaimStep::Blocked(m) => {
                assert!(m.starts_with("[protocol_error]"), "{m}");
                assert!(m.contains(&shown) && m.contains("Idempotency-Key"), "{m}");
            }
            other => panic!("{bad:?}: {other:?}"),
        }
        for _ in 0..3 {
            assert!(matches!(
                runner.claim_once().await.unwrap(),
                ClaimStep::Blocked(_)
            ));
        }
        assert_eq!(claim_count(&a.op), 1, "{bad:?}: no next claim");
        assert_eq!(exec.job_count(), 0, "{bad:?}: never executed");
        assert_eq!(store.outbox_undelivered_count().unwrap(), 0);
        let alerts = store.open_alerts().unwrap();
        assert_eq!(alerts.len(), 1);
        assert_eq!(alerts[0].kind, AlertKind::ProtocolError);
        assert_eq!(alerts[0].remote_task_id.as_deref(), Some(bad));
        let t = a.op.get_task(&id).await.unwrap();
        assert!(t["results"].as_array().unwrap().is_empty(), "{t}");
        // The operator acknowledges: claiming resumes with the next task.
        store.ack_alerts(None, chrono::Utc::now()).unwrap();
        match runner.claim_once().await.unwrap() {
            ClaimStep::Processed { remote_task_id } => assert_eq!(remote_task_id, next),
            other => panic!("{other:?}"),
        }
        assert_eq!(exec.job_count(), 1);
    }
}

#[tokio::test]
async fn registration_saves_locally_first_and_a_remote_failure_is_visible() {
    let a = admin().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &a.url, Some("192.168.0.173:5555"));
    let g = inproc_gw(&a, &store, Duration::from_secs(5));
    a.op.set_fault(FaultPlan {
        endpoint: FaultTarget::Registration,
        nth: None,
        next: Some(1),
        fault: Fault::Status {
            status: 503,
            retry_after: None,
            code: None,
        },
    })
    .unwrap();
    let saved = registration::save_locally(
        &store,
        &cmautobuy_client::store::SettingsPatch {
            name: Some("办公室-02".into()),
            ..Default::default()
        },
    )
    .unwrap();
    let profile = client_profile(&saved, Default::default());
    let status = registration::spawn(store.clone(), g.clone(), test_clock(), profile.clone())
        .await
        .unwrap();
    assert_eq!(status.state, "failed");
    assert!(!status.rejected, "a 503 does not invalidate the identity");
    let after = store.settings().unwrap();
    assert_eq!(
        after.name.as_deref(),
        Some("办公室-02"),
        "never rolled back"
    );
    assert_eq!(after.client_id, saved.client_id);
    assert_eq!(after.registration.unwrap().state, "failed");
    let ok = registration::register(&store, g.as_ref(), &test_clock(), &profile).await;
    assert_eq!(ok.state, "ok");
    assert_eq!(store.settings().unwrap().registration.unwrap().state, "ok");
}

// ----------------------------------------------------------------------------------------
// The real binary
// ----------------------------------------------------------------------------------------

const BIN: &str = env!("CARGO_BIN_EXE_cmautobuy-client");

fn client(data_dir: &std::path::Path, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--data-dir").arg(data_dir).args(args);
    c.env_remove("RUST_LOG")
        .env_remove("CMAUTOBUY_TOKEN")
        .env_remove("CMAUTOBUY_ADMIN_URL")
        .env("HOME", data_dir);
    c
}

/// The one bounded poll, on a blocking section of this multi-threaded runtime (the
/// mock Admin's tasks go on on the other worker).
async fn wait_until<F: FnMut() -> bool>(what: &str, timeout: Duration, f: F) {
    tokio::task::block_in_place(|| cmautobuy_sim_phone::testing::wait_until(what, timeout, f))
}

fn wait_exit(child: &mut std::process::Child, timeout: Duration) -> std::process::ExitStatus {
    crate::support::world::wait_exit(child, timeout, String::new)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_with_results_in_the_outbox_resends_the_same_bytes_once() {
    let db = tempfile::tempdir().unwrap();
    let a = admin_with(MockAdminConfig::file(
        db.path().join("admin.sqlite3").to_str().unwrap(),
    ))
    .await;
    let id = create(&a.op, collect_body("737116531267")).await;
    a.op.set_fault(FaultPlan {
        endpoint: FaultTarget::Result,
        nth: None,
        next: Some(10_000),
        fault: Fault::Status {
            status: 503,
            retry_after: None,
            code: None,
        },
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "run",
        "--admin",
        &a.url,
        "--token",
        TOKEN,
        "--stub-executor",
        "--poll-interval",
        "0.2",
    ];
    let mut child = client(dir.path(), &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let op = a.op.clone();
    wait_until("a result attempt", Duration::from_secs(30), || {
        op.journal()
            .iter()
            .any(|e| e.endpoint == cmautobuy_mock_admin::Endpoint::Result)
    })
    .await;
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();

    let store = Store::open(&Store::path_in(dir.path())).unwrap();
    let before = store.outbox_list(true).unwrap();
    assert_eq!(before.len(), 1);
    assert_ne!(
        before[0].state,
        cmautobuy_client::store::OutboxState::Accepted
    );
    assert!(stored_with_key(&a.op, &id, &before[0].idempotency_key)
        .await
        .is_empty());
    drop(store);

    a.op.clear_faults();
    let mut args2 = args.to_vec();
    args2.push("--exit-when-idle");
    let mut child = client(dir.path(), &args2)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status =
        tokio::task::spawn_blocking(move || wait_exit(&mut child, Duration::from_secs(60)))
            .await
            .unwrap();
    assert!(status.success(), "{status:?}");

    let store = Store::open(&Store::path_in(dir.path())).unwrap();
    let after = store.outbox_list(true).unwrap();
    assert_eq!(after.len(), 1);
    assert_eq!(after[0].body, before[0].body, "the same bytes");
    assert_eq!(after[0].idempotency_key, before[0].idempotency_key);
    assert_eq!(
        after[0].state,
        cmautobuy_client::store::OutboxState::Accepted
    );
    let stored = stored_with_key(&a.op, &id, &after[0].idempotency_key).await;
    assert_eq!(stored.len(), 1, "stored once");
    assert_eq!(
        stored[0]["body"],
        serde_json::from_slice::<Value>(&after[0].body).unwrap()
    );
    let keys: Vec<_> =
        a.op.journal()
            .iter()
            .filter(|e| e.endpoint == cmautobuy_mock_admin::Endpoint::Result)
            .map(|e| e.idempotency_key.clone())
            .collect();
    assert!(keys.len() >= 2, "{keys:?}");
    assert!(keys
        .iter()
        .all(|k| k.as_deref() == Some(after[0].idempotency_key.as_str())));
    assert_eq!(
        store.task(after[0].task_id).unwrap().state,
        TaskState::Succeeded
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_output_of_a_full_traced_run_contains_the_token() {
    let a = admin_with(MockAdminConfig {
        require_token: Some(TOKEN.into()),
        ..MockAdminConfig::in_memory()
    })
    .await;
    create(&a.op, collect_body("737116531267")).await;
    create(&a.op, collect_body("2")).await;
    // Some trouble on the way, so error paths log too.
    a.op.set_fault(FaultPlan {
        endpoint: FaultTarget::Result,
        nth: None,
        next: Some(1),
        fault: Fault::Status {
            status: 503,
            retry_after: Some(RetryAfter::Seconds(1)),
            code: None,
        },
    })
    .unwrap();
    a.op.set_fault(FaultPlan {
        endpoint: FaultTarget::Registration,
        nth: None,
        next: Some(1),
        fault: Fault::CommitThenDrop,
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |args: Vec<String>, env_token: Option<&str>| {
        let dir = dir.path().to_path_buf();
        let token = env_token.map(str::to_string);
        async move {
            tokio::task::spawn_blocking(move || {
                let mut c = client(&dir, &args.iter().map(String::as_str).collect::<Vec<_>>());
                c.env("RUST_LOG", "trace");
                if let Some(t) = token {
                    c.env("CMAUTOBUY_TOKEN", t);
                }
                c.output().unwrap()
            })
            .await
            .unwrap()
        }
    };
    let out = run(
        vec![
            "run".into(),
            "--admin".into(),
            a.url.clone(),
            "--token".into(),
            TOKEN.into(),
            "--stub-executor".into(),
            "--exit-when-idle".into(),
            "--poll-interval".into(),
            "0.2".into(),
        ],
        None,
    )
    .await;
    let mut all = String::from_utf8_lossy(&out.stdout).to_string();
    all.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{all}");
    assert!(all.contains("accepted"), "tracing output captured: {all}");
    assert!(
        all.contains("TRACE") || all.contains("DEBUG"),
        "trace level was on"
    );
    for args in [
        vec!["status".to_string()],
        vec!["status".into(), "--json".into()],
        vec![
            "outbox".into(),
            "list".into(),
            "--all".into(),
            "--json".into(),
        ],
    ] {
        let o = run(args, None).await;
        all.push_str(&String::from_utf8_lossy(&o.stdout));
        all.push_str(&String::from_utf8_lossy(&o.stderr));
    }
    // A wrong token from the environment: rejected, and never printed either.
    let wrong = "tok-WRONG-31337";
    let o = run(
        vec![
            "run".into(),
            "--exit-when-idle".into(),
            "--poll-interval".into(),
            "0.2".into(),
        ],
        Some(wrong),
    )
    .await;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(o.status.code(), Some(5), "blocked by the 401: {text}");
    assert!(
        text.contains("UNAUTHORIZED") || text.contains("401"),
        "{text}"
    );
    assert!(!text.contains(wrong), "{text}");
    all.push_str(&text);
    assert!(!all.contains(TOKEN), "the token leaked:\n{all}");
    // Nor in artifacts or other files besides the store itself.
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let p = entry.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if p.is_file() && !name.starts_with("client.sqlite3") {
            let content = std::fs::read(&p).unwrap();
            assert!(!String::from_utf8_lossy(&content).contains(TOKEN), "{name}");
        }
    }
}

#[tokio::test]
async fn spec_resolution_key_prints_hash_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.json");
    let req = spec_request(1, "attempt-1", "937122477375");
    std::fs::write(
        &input,
        serde_json::to_vec(&json!({"task_id": "cg1", "attempt_id": "attempt-1",
            "pdd_goods_id": "937122477375", "selected_color": "黑色",
            "candidates": req.candidates}))
        .unwrap(),
    )
    .unwrap();
    let out = client(
        dir.path(),
        &["spec-resolution-key", "--input", input.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["candidate_snapshot_hash"],
        req.candidate_snapshot_hash.as_str()
    );
    assert_eq!(
        v["idempotency_key"],
        spec_resolution_idempotency_key("cg1", "attempt-1", &req.candidate_snapshot_hash).as_str()
    );
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, b"{\"task_id\": 1}").unwrap();
    let out = client(
        dir.path(),
        &["spec-resolution-key", "--input", bad.to_str().unwrap()],
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[tokio::test]
async fn operator_commands_status_ack_outbox_and_register() {
    let dir = tempfile::tempdir().unwrap();
    // A dead Admin from the config file, a name from the environment.
    let dead = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead_url = format!("http://{}", dead.local_addr().unwrap());
    drop(dead);
    std::fs::write(
        dir.path().join("config.toml"),
        format!("admin_url = \"{dead_url}\"\ntoken = \"{TOKEN}\"\nrequest_timeout_secs = 2\n"),
    )
    .unwrap();
    let out = client(dir.path(), &["register"])
        .env("CMAUTOBUY_NAME", "仓库-07")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let text = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(text(&out).contains("local settings kept"), "{}", text(&out));
    let long = "名".repeat(51);
    let out = client(dir.path(), &["register", "--name", &long])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(2),
        "a name over 50 characters is refused"
    );
    let st = client(dir.path(), &["status"]).output().unwrap();
    let s = text(&st);
    assert!(st.status.success(), "{s}");
    assert!(s.contains("仓库-07") && s.contains(&dead_url), "{s}");
    assert!(s.contains("registration: failed"), "{s}");
    assert!(!s.contains(TOKEN));

    // An alert and a parked item, as a run would leave them.
    let store = Store::open(&Store::path_in(dir.path())).unwrap();
    store
        .raise_alert(
            AlertKind::ClaimNotSaved,
            Some("cg42"),
            "disk full",
            chrono::Utc::now(),
        )
        .unwrap();
    let task: cmautobuy_contract::Task = serde_json::from_value(json!({"id": "cj9",
        "type": "collect", "version": 1, "payload": {"goods_id": "1", "goods_url": "u"}}))
    .unwrap();
    let local = store
        .save_claimed_task(&task, "{}", chrono::Utc::now())
        .unwrap();
    let run = store.start_run(local, chrono::Utc::now()).unwrap();
    let ob = store
        .record_outcome(
            run.id,
            &cmautobuy_client::store::OutboxDraft {
                kind: cmautobuy_client::store::OutboxKind::Result,
                remote_task_id: "cj9".into(),
                method: "POST".into(),
                path: "/api/v1/client/tasks/cj9/result".into(),
                headers: vec![],
                body: b"{}".to_vec(),
                idempotency_key: "cj9:x:result-v1".into(),
                on_accept: TaskState::Succeeded,
                outcome: "succeeded".into(),
            },
            chrono::Utc::now(),
        )
        .unwrap();
    store.outbox_mark_sending(ob, chrono::Utc::now()).unwrap();
    store
        .outbox_park(ob, "HTTP 422 INVALID_RESULT", chrono::Utc::now())
        .unwrap();
    drop(store);

    let s = text(&client(dir.path(), &["status"]).output().unwrap());
    assert!(s.contains("ALERTS") && s.contains("cg42"), "{s}");
    assert!(s.contains("task cj9 (collect, dry_run) reporting"), "{s}");
    assert!(s.contains("parked") && s.contains("INVALID_RESULT"), "{s}");
    let s = text(&client(dir.path(), &["outbox", "list"]).output().unwrap());
    assert!(s.contains("cj9:x:result-v1") && s.contains("parked"), "{s}");
    let s = text(&client(dir.path(), &["outbox", "retry"]).output().unwrap());
    assert!(s.contains("1 item(s) requeued"), "{s}");
    let s = text(&client(dir.path(), &["ack"]).output().unwrap());
    assert!(s.contains("1 alert(s) acknowledged"), "{s}");
    let s = text(&client(dir.path(), &["status", "--json"]).output().unwrap());
    let v: Value = serde_json::from_str(&s).unwrap();
    assert_eq!(v["alerts"], json!([]));
    assert_eq!(v["outbox"]["pending"], 1);
    assert_eq!(v["name"], "仓库-07");
}

#[test]
fn a_broken_store_refuses_to_start_with_exit_code_3() {
    let dir = tempfile::tempdir().unwrap();
    drop(Store::open(&Store::path_in(dir.path())).unwrap());
    rusqlite::Connection::open(Store::path_in(dir.path()))
        .unwrap()
        .execute_batch("DROP TABLE outbox;")
        .unwrap();
    let out = client(dir.path(), &["status"]).output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("outbox"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_run_loops_drain_everything_and_exit_when_idle_on_a_virtual_clock() {
    let a = admin().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &a.url, None);
    let g = inproc_gw(&a, &store, Duration::from_secs(5));
    let mut ids = Vec::new();
    for goods in ["1", "2", "3"] {
        ids.push(create(&a.op, collect_body(goods)).await);
    }
    a.op.set_fault(FaultPlan {
        endpoint: FaultTarget::Result,
        nth: None,
        next: Some(2),
        fault: Fault::Status {
            status: 503,
            retry_after: None,
            code: None,
        },
    })
    .unwrap();
    let clock = test_clock();
    let relay = Relay::new(
        store.clone(),
        g.clone(),
        clock.clone(),
        RetryPolicy::default(),
    );
    let runner = Runner::new(
        store.clone(),
        g,
        Arc::new(ScriptedExecutor::new(Script::Result)),
        clock.clone(),
        RunConfig {
            exit_when_idle: true,
            ..RunConfig::default()
        },
        relay.waker(),
    );
    let (tx, rx) = tokio::sync::watch::channel(false);
    let relay_task = tokio::spawn({
        let rx = rx.clone();
        async move { relay.run(rx).await }
    });
    let exit = tokio::time::timeout(Duration::from_secs(30), runner.run(rx))
        .await
        .expect("the run loop finished")
        .unwrap();
    assert_eq!(exit, cmautobuy_client::runner::RunExit::Idle);
    tx.send(true).unwrap();
    relay_task.await.unwrap().unwrap();
    for item in store.outbox_list(true).unwrap() {
        assert_eq!(
            store.task(item.task_id).unwrap().state,
            TaskState::Succeeded
        );
        assert_eq!(
            stored_with_key(&a.op, &item.remote_task_id, &item.idempotency_key)
                .await
                .len(),
            1
        );
    }
    assert_eq!(store.outbox_list(true).unwrap().len(), 3);
    let claims = claim_count(&a.op);
    // 3 tasks, then 204s only while the two retried results were pending: a few polls,
    // no storm.
    assert!((4..=20).contains(&claims), "{claims} claims");
}

#[tokio::test]
async fn an_interrupted_run_is_resumed_with_its_previous_run_visible() {
    let a = admin().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &a.url, None);
    let g = inproc_gw(&a, &store, Duration::from_secs(5));
    let clock = test_clock();
    // A claim that was saved and started, then the process died (no outcome yet).
    let id = create(&a.op, collect_body("737116531267")).await;
    let profile = client_profile(&store.settings().unwrap(), Default::default());
    let task = g.claim_next(&profile).await.unwrap().unwrap();
    let local = store.save_claimed_task(&task, "{}", clock.now()).unwrap();
    let crashed = store.start_run(local, clock.now()).unwrap();
    store.mark_irreversible(crashed.id, clock.now()).unwrap();

    let exec = ScriptedExecutor::new(Script::Result);
    let runner = Runner::new(
        store.clone(),
        g.clone(),
        Arc::new(exec.clone()),
        clock.clone(),
        RunConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    );
    runner.recover().await.unwrap();
    let jobs = exec.jobs.lock().unwrap().clone();
    assert_eq!(jobs.len(), 1);
    let prev = jobs[0]
        .previous_run
        .as_ref()
        .expect("previous run handed over");
    assert_eq!(prev.attempt_id, crashed.attempt_id);
    assert!(
        prev.irreversible_action_at.is_some(),
        "a purchase flow sees the mark and reconciles instead of tapping again"
    );
    assert_ne!(jobs[0].run.attempt_id, crashed.attempt_id, "a new attempt");
    assert_eq!(store.task(local).unwrap().state, TaskState::Reporting);
    // Recovering again does nothing: the outcome is in the outbox.
    runner.recover().await.unwrap();
    assert_eq!(exec.job_count(), 1);
    let relay = Relay::new(store.clone(), g, clock.clone(), RetryPolicy::default());
    assert!(matches!(relay.step().await.unwrap(), Step::Accepted { .. }));
    let item = store.outbox_list(true).unwrap().pop().unwrap();
    assert_eq!(
        stored_with_key(&a.op, &id, &item.idempotency_key)
            .await
            .len(),
        1
    );
}

/// A purchase run cut short after its spec sheet's 确定 was noted (`note_proceed`: a
/// snapshot, no mark) is never reported "nothing was submitted": `manual_review
/// ORDER_PLACED_UNCONFIRMED`, not run again. Another one cut short before any note stays
/// `retry_wait INTERRUPTED_BEFORE_SUBMIT`.
#[tokio::test]
async fn a_run_cut_short_after_the_spec_sheets_confirm_may_have_ordered() {
    let a = admin().await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &a.url, Some("192.168.0.173:5555"));
    let g = inproc_gw(&a, &store, Duration::from_secs(5));
    let clock = test_clock();
    let exec = ScriptedExecutor::new(Script::Result).ready_for_purchase(false);
    let profile = client_profile(
        &store.settings().unwrap(),
        cmautobuy_client::executor::Executor::readiness(&exec),
    );
    let mut runs = Vec::new();
    for goods in ["937122477375", "937122477376"] {
        create(&a.op, purchase_body(goods)).await;
        let task = g.claim_next(&profile).await.unwrap().unwrap();
        let local = store.save_claimed_task(&task, "{}", clock.now()).unwrap();
        runs.push((
            task.id.clone(),
            store.start_run(local, clock.now()).unwrap(),
        ));
    }
    let (noted_task, noted) = &runs[0];
    assert!(store
        .note_proceed(
            noted.id,
            r#"{"goods_id":"937122477375","title":null,"options":{"color":"黑色"},"original_options":{"color":"黑色"},"quantity":2,"total":0,"max_price":4200,"spec_resolution_id":null,"census":[],"census_top":[{"title":"别人的订单"}],"unconfirmed":"the spec sheet's 确定 was about to be tapped","unconfirmed_by":"interrupted"}"#,
        )
        .unwrap());
    let runner = Runner::new(
        store.clone(),
        g.clone(),
        Arc::new(exec.clone()),
        clock.clone(),
        RunConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    );
    runner.recover().await.unwrap();
    assert_eq!(exec.job_count(), 0, "neither is run again");
    let bodies: Vec<(String, Value)> = store
        .outbox_list(true)
        .unwrap()
        .into_iter()
        .map(|i| (i.remote_task_id, serde_json::from_slice(&i.body).unwrap()))
        .collect();
    let body = |id: &str| {
        bodies
            .iter()
            .find(|(t, _)| t == id)
            .map(|(_, b)| b.clone())
            .unwrap_or_else(|| panic!("no outcome for {id}: {bodies:?}"))
    };
    let b = body(noted_task);
    assert_eq!(b["status"], "manual_review", "{b}");
    assert_eq!(b["error"]["code"], "ORDER_PLACED_UNCONFIRMED", "{b}");
    assert!(
        b["diagnostics"]["operator"]["zh"]
            .as_str()
            .unwrap_or_default()
            .contains("中断"),
        "{b}"
    );
    assert_eq!(
        b["diagnostics"]["proceed_note"]["unconfirmed_by"],
        "interrupted"
    );
    assert!(
        b["diagnostics"]["proceed_note"].get("census_top").is_none(),
        "{b}"
    );
    let b = body(&runs[1].0);
    assert_eq!(b["status"], "retry_wait", "{b}");
    assert_eq!(b["error"]["code"], "INTERRUPTED_BEFORE_SUBMIT", "{b}");
}

/// A `MakeWriter` collecting everything into one buffer.
#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;
    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// Set in the child process [`in_process_trace_of_a_faulty_run_never_contains_the_token`]
/// runs its body in.
const TRACE_CHILD: &str = "CMAUTOBUY_TEST_TRACE_CHILD";

/// The body runs alone in a child process of this test binary (this test only, one
/// thread): a thread-local subscriber misses callsites another test thread registered
/// first (tracing's interest cache), which made this test fail by luck ("nothing
/// captured") when it shared the process with the others.
#[test]
fn in_process_trace_of_a_faulty_run_never_contains_the_token() {
    const NAME: &str = "in_process_trace_of_a_faulty_run_never_contains_the_token";
    if std::env::var_os(TRACE_CHILD).is_some() {
        return tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(trace_of_a_faulty_run());
    }
    // The test's path inside this binary (`against_mock::NAME`).
    let path = match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{NAME}"),
        None => NAME.to_string(),
    };
    let out = Command::new(std::env::current_exe().unwrap())
        .args([path.as_str(), "--exact", "--test-threads=1"])
        .env(TRACE_CHILD, "1")
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "the traced run failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "the child did not run it:\n{text}"
    );
}

async fn trace_of_a_faulty_run() {
    let captured = Captured::default();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(captured.clone())
        .finish();
    // current-thread runtime: every task of this test logs into `captured`.
    let _guard = tracing::subscriber::set_default(subscriber);

    let a = admin_with(MockAdminConfig {
        require_token: Some(TOKEN.into()),
        ..MockAdminConfig::in_memory()
    })
    .await;
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), &a.url, None);
    for goods in ["1", "2"] {
        create(&a.op, collect_body(goods)).await;
    }
    a.op.set_fault(plan(FaultTarget::Result, Kind::DroppedAfterCommit))
        .unwrap();
    a.op.set_fault(plan(FaultTarget::Failure, Kind::Garbage))
        .unwrap();
    let g = http_gw(&a, &store, Duration::from_secs(5));
    let clock = test_clock();
    let profile = client_profile(&store.settings().unwrap(), Default::default());
    registration::register(&store, g.as_ref(), &clock, &profile).await;
    for script in [Script::Result, Script::Failure] {
        let runner = Runner::new(
            store.clone(),
            g.clone(),
            Arc::new(ScriptedExecutor::new(script)),
            clock.clone(),
            RunConfig::default(),
            Arc::new(tokio::sync::Notify::new()),
        );
        assert!(matches!(
            runner.claim_once().await.unwrap(),
            ClaimStep::Processed { .. }
        ));
    }
    let relay = Relay::new(store.clone(), g, clock.clone(), RetryPolicy::default());
    for _ in 0..2 {
        deliver(&relay, &clock, Kind::Unavailable).await;
    }
    // And a wrong token: 401s all the way.
    let mut wrong = gw_settings(&store, Duration::from_secs(5));
    wrong.token = Some(Secret::new("tok-WRONG-4242"));
    let bad = Arc::new(HttpAdminGateway::new(&a.url, wrong).unwrap());
    let status = registration::register(&store, bad.as_ref(), &clock, &profile).await;
    assert!(status.rejected);
    let runner = Runner::new(
        store.clone(),
        bad,
        Arc::new(ScriptedExecutor::new(Script::Result)),
        clock.clone(),
        RunConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    );
    assert!(matches!(
        runner.claim_once().await.unwrap(),
        ClaimStep::Blocked(_)
    ));

    let text = String::from_utf8_lossy(&captured.0.lock().unwrap()).to_string();
    // Thread-local capture can miss a callsite another test thread registered first
    // (tracing's interest cache), so only require that something was captured; the
    // binary test above checks the complete output of a whole process.
    assert!(
        text.contains("DEBUG") || text.contains("TRACE"),
        "nothing captured"
    );
    assert!(!text.contains(TOKEN), "token leaked:\n{text}");
    assert!(!text.contains("tok-WRONG-4242"), "token leaked:\n{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_at_random_moments_never_duplicates_or_loses_a_recorded_result() {
    use rand::Rng;
    let db = tempfile::tempdir().unwrap();
    let a = admin_with(MockAdminConfig::file(
        db.path().join("admin.sqlite3").to_str().unwrap(),
    ))
    .await;
    let mut ids = Vec::new();
    for i in 0..6 {
        ids.push(create(&a.op, collect_body(&format!("{}", 100 + i))).await);
    }
    // Every second result attempt fails after the Admin committed it.
    a.op.set_fault(FaultPlan {
        endpoint: FaultTarget::Result,
        nth: None,
        next: Some(3),
        fault: Fault::CommitThenDrop,
    })
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let base = [
        "run",
        "--admin",
        &a.url,
        "--token",
        TOKEN,
        "--stub-executor",
        "--poll-interval",
        "0.1",
    ];
    let mut rng = rand::thread_rng();
    for _ in 0..6 {
        let mut child = client(dir.path(), &base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        tokio::time::sleep(Duration::from_millis(rng.gen_range(50..700))).await;
        child.kill().unwrap();
        child.wait().unwrap();
    }
    let mut args = base.to_vec();
    args.push("--exit-when-idle");
    let mut child = client(dir.path(), &args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status =
        tokio::task::spawn_blocking(move || wait_exit(&mut child, Duration::from_secs(90)))
            .await
            .unwrap();
    assert!(status.success(), "{status:?}");

    let store = Store::open(&Store::path_in(dir.path())).unwrap();
    let items = store.outbox_list(true).unwrap();
    for item in &items {
        assert_eq!(
            item.state,
            cmautobuy_client::store::OutboxState::Accepted,
            "{item:?}"
        );
        assert_eq!(
            store.task(item.task_id).unwrap().state,
            TaskState::Succeeded
        );
    }
    for id in &ids {
        let t = a.op.get_task(id).await.unwrap();
        let results = t["results"].as_array().unwrap();
        let local: Vec<_> = items.iter().filter(|i| &i.remote_task_id == id).collect();
        // A claim the Admin committed while the client died before saving it is the
        // Admin's to reassign (no result); anything recorded locally arrives exactly once.
        assert!(local.len() <= 1, "{id}: one outcome per claim");
        assert_eq!(results.len(), local.len(), "{id}: {results:?}");
        if let Some(item) = local.first() {
            assert_eq!(results[0]["idempotency_key"], item.idempotency_key.as_str());
            assert_eq!(
                results[0]["body"],
                serde_json::from_slice::<Value>(&item.body).unwrap()
            );
        }
    }
    assert!(!items.is_empty(), "at least some work got done");
}
