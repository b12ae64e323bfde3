//! Conformance of the mock Admin to the Client–Admin v1 contract, over real HTTP on
//! 127.0.0.1:0. Each `[必须]` of §4.1–§8 that concerns the Admin has a test named after it
//! (section prefix in the name).

mod common;
#[path = "suite/robustness.rs"]
mod robustness;

use common::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------
// §4.1 registration
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn s4_1_client_id_is_the_unique_key_and_repeated_put_is_an_idempotent_upsert() {
    let h = Harness::start().await;
    let body = named("办公室-01", &["collect", "purchase"], "dry_run");
    let r1 = h.register("CLIENT-1", &body).await;
    assert_eq!(r1.status(), 200);
    let a: Value = r1.json().await.unwrap();
    assert_eq!(a["registered"], true);
    assert_eq!(a["client_id"], "CLIENT-1");
    let r2 = h.register("CLIENT-1", &body).await;
    let b: Value = r2.json().await.unwrap();
    assert_eq!(a["registered_at"], b["registered_at"], "same record");
    let clients = h.op.clients().await.unwrap();
    assert_eq!(clients["clients"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn s4_1_registration_never_reads_claims_or_changes_tasks() {
    let h = Harness::start().await;
    let id = h.create(collect_task()).await;
    let before = h.task(&id).await;
    let r = h.register("CLIENT-1", &all_dry()).await;
    let v: Value = r.json().await.unwrap();
    assert!(v.get("task").is_none());
    let after = h.task(&id).await;
    assert_eq!(before, after);
    assert_eq!(after["task"]["status"], "pending");
    assert!(after["claims"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn s4_1_name_is_optional_at_most_50_chars_empty_keeps_existing_new_falls_back_to_id() {
    let h = Harness::start().await;
    // new client without a name → the id
    h.register("CLIENT-A", &all_dry()).await;
    // explicit non-empty name updates
    h.register("CLIENT-B", &named("第一", &["collect"], "dry_run"))
        .await;
    h.register("CLIENT-B", &named("第二", &["collect"], "dry_run"))
        .await;
    // empty name keeps it
    h.register("CLIENT-B", &named("", &["collect"], "dry_run"))
        .await;
    let long: String = "名".repeat(50);
    assert_eq!(
        h.register("CLIENT-C", &named(&long, &["collect"], "dry_run"))
            .await
            .status(),
        200
    );
    let too_long: String = "名".repeat(51);
    let (status, code, _) = error_code(
        h.register("CLIENT-D", &named(&too_long, &["collect"], "dry_run"))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (400, "INVALID_CLIENT_PROFILE"));
    let clients = h.op.clients().await.unwrap();
    let name = |id: &str| {
        clients["clients"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["client_id"] == id)
            .map(|c| c["name"].clone())
    };
    assert_eq!(name("CLIENT-A"), Some(json!("CLIENT-A")));
    assert_eq!(name("CLIENT-B"), Some(json!("第二")));
    assert_eq!(name("CLIENT-C"), Some(json!(long)));
    assert_eq!(name("CLIENT-D"), None);
}

#[tokio::test]
async fn s4_1_updates_device_capabilities_last_seen_and_updated_at() {
    let h = Harness::start().await;
    h.register("CLIENT-1", &all_dry()).await;
    let c1 = h.op.clients().await.unwrap()["clients"][0].clone();
    let mut p = all_live();
    p["device"]["address"] = json!("10.0.0.2:5555");
    h.register("CLIENT-1", &p).await;
    let c2 = h.op.clients().await.unwrap()["clients"][0].clone();
    assert_eq!(c2["device"]["address"], "10.0.0.2:5555");
    assert_eq!(c2["capabilities"]["purchase_mode"], "live");
    assert!(c2["last_seen_at"].as_str() >= c1["last_seen_at"].as_str());
    assert!(c2["updated_at"].as_str() >= c1["updated_at"].as_str());
}

#[tokio::test]
async fn s4_1_supported_types_purchase_mode_and_schema_versions_are_validated() {
    let h = Harness::start().await;
    let bad = [
        json!({"supported_types": [], "capabilities": {"purchase_mode": "dry_run", "schema_versions": [1]}}),
        json!({"supported_types": ["refund"], "capabilities": {"purchase_mode": "dry_run", "schema_versions": [1]}}),
        json!({"supported_types": ["collect"], "capabilities": {"purchase_mode": "turbo", "schema_versions": [1]}}),
        json!({"supported_types": ["collect"], "capabilities": {"purchase_mode": "live", "schema_versions": [0]}}),
        json!({"supported_types": ["collect"], "capabilities": {"purchase_mode": "live", "schema_versions": ["1"]}}),
        json!({"supported_types": ["collect"]}),
    ];
    for b in bad {
        let (status, code, env) = error_code(h.register("CLIENT-1", &b).await).await;
        assert_eq!(
            (status, code.as_str()),
            (400, "INVALID_CLIENT_PROFILE"),
            "{b}"
        );
        assert_eq!(env["error"]["retryable"], false);
    }
}

#[tokio::test]
async fn s4_1_errors_include_missing_client_id_invalid_body_and_use_the_envelope() {
    let h = Harness::start().await;
    let r = h
        .http
        .put(h.url("/api/v1/client/registration"))
        .json(&all_dry())
        .send()
        .await
        .unwrap();
    let (status, code, env) = error_code(r).await;
    assert_eq!((status, code.as_str()), (400, "MISSING_CLIENT_ID"));
    assert!(env["error"]["request_id"].is_string());
    assert!(env["error"]["message"].is_string());
    assert!(env["error"]["details"].is_object());
    let r = h
        .http
        .put(h.url("/api/v1/client/registration"))
        .header("X-Client-Id", "C")
        .header("content-type", "application/json")
        .header("X-Request-Id", "req-123")
        .body("{not json")
        .send()
        .await
        .unwrap();
    let (status, code, env) = error_code(r).await;
    assert_eq!((status, code.as_str()), (400, "INVALID_BODY"));
    assert_eq!(env["error"]["request_id"], "req-123");
}

#[tokio::test]
async fn s4_1_no_heartbeat_online_is_derived_from_last_seen_at() {
    let h = Harness::start().await;
    h.register("CLIENT-1", &all_dry()).await;
    let c = h.op.clients().await.unwrap();
    assert_eq!(c["clients"][0]["online"], true);
    // no heartbeat route exists
    let r = h
        .http
        .post(h.url("/api/v1/client/heartbeat"))
        .header("X-Client-Id", "CLIENT-1")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
}

// ---------------------------------------------------------------------------------------
// §5 claim
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn s5_204_is_not_an_error_and_has_an_empty_body() {
    let h = Harness::start().await;
    let r = h.claim("CLIENT-1", &all_dry()).await;
    assert_eq!(r.status(), 204);
    assert!(r.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn s5_claim_is_atomic_and_returns_at_most_one_task() {
    let h = Harness::start().await;
    for _ in 0..3 {
        h.create(collect_task()).await;
    }
    let r = h.claim("CLIENT-1", &all_dry()).await;
    let v: Value = r.json().await.unwrap();
    assert!(v["task"].is_object(), "one task object, not a list");
    let tasks = h.op.list_tasks().await.unwrap();
    let claimed = tasks["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "claimed")
        .count();
    assert_eq!(claimed, 1);
}

#[tokio::test]
async fn s5_live_tasks_are_never_returned_to_dry_run_clients_even_when_preassigned() {
    let h = Harness::start().await;
    let live = h.create(purchase_task("live", Some("CLIENT-1"))).await;
    assert_eq!(h.claim("CLIENT-1", &all_dry()).await.status(), 204);
    let pool_live = h.create(purchase_task("live", None)).await;
    assert_eq!(h.claim("CLIENT-2", &all_dry()).await.status(), 204);
    // once the client declares live, it gets its assigned task first
    assert_eq!(h.claim_id("CLIENT-1", &all_live()).await, live);
    assert_eq!(h.claim_id("CLIENT-2", &all_live()).await, pool_live);
}

#[tokio::test]
async fn s5_execution_mode_is_dry_run_or_live_and_live_clients_claim_both() {
    let h = Harness::start().await;
    let dry = h.create(purchase_task("dry_run", None)).await;
    let live = h.create(purchase_task("live", None)).await;
    let mut bad = purchase_task("turbo", None);
    bad["execution_mode"] = json!("turbo");
    assert!(h.op.create_task(bad).await.is_err());
    let a = h.claim_id("CLIENT-L", &all_live()).await;
    let b = h.claim_id("CLIENT-L", &all_live()).await;
    let mut got = vec![a, b];
    got.sort();
    let mut want = vec![dry.clone(), live];
    want.sort();
    assert_eq!(got, want);
    let t = h.task(&dry).await;
    assert_eq!(t["task"]["execution_mode"], "dry_run", "mode never changed");
}

#[tokio::test]
async fn s5_capabilities_only_narrow_what_is_claimable() {
    let h = Harness::start().await;
    let purchase = h.create(purchase_task("dry_run", None)).await;
    let collect = h.create(collect_task()).await;
    // a collect-only client skips the purchase task
    assert_eq!(
        h.claim_id("CLIENT-1", &profile(&["collect"], "live")).await,
        collect
    );
    assert_eq!(
        h.claim("CLIENT-1", &profile(&["collect"], "live"))
            .await
            .status(),
        204
    );
    // a client without schema v1 gets nothing
    let mut p = all_live();
    p["capabilities"]["schema_versions"] = json!([2]);
    assert_eq!(h.claim("CLIENT-2", &p).await.status(), 204);
    assert_eq!(h.claim_id("CLIENT-2", &all_dry()).await, purchase);
}

/// The §5 request example's capabilities may come without `schema_versions` (an older
/// client): absent is empty, no narrowing — the task is claimed, and registration takes
/// the same profile.
#[tokio::test]
async fn s5_a_claim_without_schema_versions_is_served() {
    let h = Harness::start().await;
    let id = h.create(collect_task()).await;
    let p = json!({
        "client": {"name": "办公室-01"},
        "supported_types": ["collect", "purchase"],
        "capabilities": {"purchase_mode": "dry_run"}
    });
    assert_eq!(h.claim_id("CLIENT-1", &p).await, id);
    assert_eq!(h.register("CLIENT-1", &p).await.status(), 200);
    // Still refused when present and wrong.
    let mut bad = p.clone();
    bad["capabilities"]["schema_versions"] = json!([0]);
    assert_eq!(h.claim("CLIENT-1", &bad).await.status(), 400);
}

#[tokio::test]
async fn s5_response_contains_no_lease() {
    let h = Harness::start().await;
    h.create(purchase_task("dry_run", None)).await;
    let v: Value = h.claim("CLIENT-1", &all_dry()).await.json().await.unwrap();
    let text = v.to_string();
    assert!(!text.contains("lease"));
    let task = v["task"].as_object().unwrap();
    for k in task.keys() {
        assert!(
            [
                "id",
                "type",
                "execution_mode",
                "version",
                "priority",
                "payload",
                "created_at",
                "updated_at"
            ]
            .contains(&k.as_str()),
            "unexpected field {k}"
        );
    }
    // the answer passes the client's own validation of a claimed task
    let t: cmautobuy_contract::Task = serde_json::from_value(v["task"].clone()).unwrap();
    cmautobuy_contract::validate::claimed_task(&t).unwrap();
}

#[tokio::test]
async fn s5_1_tasks_assigned_to_me_come_before_unassigned_then_priority_then_age() {
    let h = Harness::start().await;
    let mut low = collect_task();
    low["priority"] = json!(1);
    let pool_low = h.create(low).await;
    let mut high = collect_task();
    high["priority"] = json!(50);
    let pool_high = h.create(high).await;
    let pool_high_later = {
        let mut t = collect_task();
        t["priority"] = json!(50);
        h.create(t).await
    };
    let mine = h.create(purchase_task("dry_run", Some("CLIENT-1"))).await;
    let others = h.create(purchase_task("dry_run", Some("CLIENT-9"))).await;
    let order: Vec<String> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(h.claim_id("CLIENT-1", &all_dry()).await);
        }
        v
    };
    assert_eq!(order, vec![mine, pool_high, pool_high_later, pool_low]);
    assert_eq!(h.claim("CLIENT-1", &all_dry()).await.status(), 204);
    assert_eq!(h.claim_id("CLIENT-9", &all_dry()).await, others);
}

#[tokio::test]
async fn s5_implicit_registration_creates_new_clients_but_never_overwrites_a_name() {
    let h = Harness::start().await;
    h.claim("NEW-1", &named("首次", &["collect"], "dry_run"))
        .await;
    h.register("OLD-1", &named("人工名", &["collect"], "dry_run"))
        .await;
    let mut p = named("后台领取", &["collect"], "live");
    p["device"]["address"] = json!("10.9.9.9:5555");
    h.claim("OLD-1", &p).await;
    let clients = h.op.clients().await.unwrap();
    let list = clients["clients"].as_array().unwrap();
    let new = list.iter().find(|c| c["client_id"] == "NEW-1").unwrap();
    let old = list.iter().find(|c| c["client_id"] == "OLD-1").unwrap();
    assert_eq!(new["name"], "首次");
    assert_eq!(old["name"], "人工名");
    assert_eq!(old["device"]["address"], "10.9.9.9:5555");
    assert_eq!(old["capabilities"]["purchase_mode"], "live");
}

#[tokio::test]
async fn s5_every_call_refreshes_last_seen_at() {
    // data model §9: registration, claim, result and failure all refresh it — including
    // a 204 claim, a replay and a refused call.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admin.db").to_string_lossy().to_string();
    let h = Harness::start_with(cmautobuy_mock_admin::MockAdminConfig::file(path.clone())).await;
    h.register("CLIENT-1", &all_dry()).await;
    let age = || {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
        c.execute(
            "UPDATE clients SET last_seen_at = '2000-01-01T00:00:00.000Z'",
            [],
        )
        .unwrap();
    };
    let seen = || async {
        h.op.clients().await.unwrap()["clients"][0]["last_seen_at"]
            .as_str()
            .unwrap()
            .to_string()
    };
    age();
    assert_eq!(h.claim("CLIENT-1", &all_dry()).await.status(), 204);
    assert!(seen().await.as_str() > "2001");
    age();
    let (s, _, _) = error_code(
        h.submit("nope", "failure", "CLIENT-1", "k", &failure("failed", "a1"))
            .await,
    )
    .await;
    assert_eq!(s, 404);
    assert!(seen().await.as_str() > "2001", "a refused call counts too");
    let id = h.create(collect_task()).await;
    assert_eq!(h.claim_id("CLIENT-1", &all_dry()).await, id);
    let body = collect_result("a1", COLLECT_GOODS, None);
    h.submit(&id, "result", "CLIENT-1", "k", &body).await;
    age();
    assert_eq!(
        h.submit(&id, "result", "CLIENT-1", "k", &body)
            .await
            .status(),
        200
    );
    assert!(seen().await.as_str() > "2001", "a replay counts too");
}

#[tokio::test]
async fn s5_claims_are_recorded_and_a_reclaim_only_updates_the_time() {
    let h = Harness::start().await;
    let id = h.create(purchase_task("dry_run", Some("CLIENT-1"))).await;
    assert_eq!(h.claim_id("CLIENT-1", &all_dry()).await, id);
    let first = h.task(&id).await["claims"].clone();
    assert_eq!(first.as_array().unwrap().len(), 1);
    h.op.reassign_task(&id, Some("CLIENT-1")).await.unwrap();
    assert_eq!(h.claim_id("CLIENT-1", &all_dry()).await, id);
    let second = h.task(&id).await["claims"].clone();
    assert_eq!(second.as_array().unwrap().len(), 1, "one row per client");
    assert!(second[0]["claimed_at"].as_str() >= first[0]["claimed_at"].as_str());
}

#[tokio::test]
async fn s5_cancelled_and_finished_tasks_are_not_claimable() {
    let h = Harness::start().await;
    let c = h.create(collect_task()).await;
    h.op.cancel_task(&c).await.unwrap();
    assert_eq!(h.claim("CLIENT-1", &all_dry()).await.status(), 204);
    let d = h.create(collect_task()).await;
    assert_eq!(h.claim_id("CLIENT-1", &all_dry()).await, d);
    let r = h
        .submit(
            &d,
            "result",
            "CLIENT-1",
            "k1",
            &collect_result("a1", COLLECT_GOODS, None),
        )
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(h.task(&d).await["task"]["status"], "succeeded");
    assert_eq!(h.claim("CLIENT-2", &all_dry()).await.status(), 204);
}

// ---------------------------------------------------------------------------------------
// §6 results
// ---------------------------------------------------------------------------------------

async fn claimed_collect(h: &Harness, client: &str) -> String {
    let id = h.create(collect_task()).await;
    assert_eq!(h.claim_id(client, &all_dry()).await, id);
    id
}

async fn claimed_purchase(h: &Harness, client: &str) -> String {
    let id = h.create(purchase_task("dry_run", Some(client))).await;
    assert_eq!(h.claim_id(client, &all_dry()).await, id);
    id
}

#[tokio::test]
async fn s6_same_key_and_same_content_return_the_same_business_result() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let key = format!("{id}:a1:result-v1");
    let body = collect_result("a1", COLLECT_GOODS, Some("XX旗舰店"));
    let first = h.submit(&id, "result", "CLIENT-1", &key, &body).await;
    assert_eq!(first.status(), 200);
    let first = first.bytes().await.unwrap();
    // the same content with keys in another order is the same content
    let reordered: Value = {
        let mut m = serde_json::Map::new();
        let obj = body.as_object().unwrap();
        let mut keys: Vec<&String> = obj.keys().collect();
        keys.reverse();
        for k in keys {
            m.insert(k.clone(), obj[k].clone());
        }
        Value::Object(m)
    };
    for b in [&body, &reordered] {
        let again = h.submit(&id, "result", "CLIENT-1", &key, b).await;
        assert_eq!(again.status(), 200);
        assert_eq!(again.bytes().await.unwrap(), first, "byte-for-byte replay");
    }
    assert_eq!(h.task(&id).await["results"].as_array().unwrap().len(), 1);
    let outcomes: Vec<_> = h.op.journal().iter().map(|e| e.outcome).collect();
    assert!(outcomes.contains(&cmautobuy_mock_admin::Outcome::Replayed));
}

#[tokio::test]
async fn s6_same_key_different_content_is_409_idempotency_conflict() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let key = format!("{id}:a1:result-v1");
    let body = collect_result("a1", COLLECT_GOODS, None);
    assert_eq!(
        h.submit(&id, "result", "CLIENT-1", &key, &body)
            .await
            .status(),
        200
    );
    let mut other = body.clone();
    other["completed_at"] = json!("2026-08-06T08:04:00Z");
    let (status, code, env) =
        error_code(h.submit(&id, "result", "CLIENT-1", &key, &other).await).await;
    assert_eq!((status, code.as_str()), (409, "IDEMPOTENCY_CONFLICT"));
    assert_eq!(env["error"]["retryable"], false);
    assert!(h
        .op
        .journal()
        .iter()
        .any(|e| e.outcome == cmautobuy_mock_admin::Outcome::Conflict));
}

#[tokio::test]
async fn s6_accepted_true_means_stored_with_a_non_empty_result_id() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let r = h
        .submit(&id, "result", "CLIENT-1", "k", &dry_purchase_result("a1"))
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["accepted"], true);
    let rid = v["result_id"].as_str().unwrap();
    assert!(!rid.is_empty());
    let t = h.task(&id).await;
    assert_eq!(t["results"][0]["result_id"], rid);
    assert_eq!(t["results"][0]["kind"], "result");
    assert_eq!(t["results"][0]["body"]["purchase"]["mode"], "dry_run");
}

#[tokio::test]
async fn s6_null_prices_are_accepted_and_zero_is_not_unknown() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let mut body = collect_result("a1", COLLECT_GOODS, None);
    for sku in body["pdd_data"]["skus"].as_array_mut().unwrap() {
        sku["price_cent"] = Value::Null;
        sku["raw_price"] = Value::Null;
        sku["price_observed_at"] = json!({});
    }
    assert_eq!(
        h.submit(&id, "result", "CLIENT-1", "k", &body)
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn s6_price_cent_is_integer_fen_never_a_decimal() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let mut body = collect_result("a1", COLLECT_GOODS, None);
    body["pdd_data"]["skus"][0]["price_cent"] = json!(4.7);
    let (status, code, env) =
        error_code(h.submit(&id, "result", "CLIENT-1", "k", &body).await).await;
    assert_eq!((status, code.as_str()), (422, "INVALID_RESULT"));
    assert_eq!(
        env["error"]["details"]["field"],
        "pdd_data.skus[0].price_cent"
    );
    // 0 without the text it was read from is "unknown written as 0".
    body["pdd_data"]["skus"][0]["price_cent"] = json!(0);
    body["pdd_data"]["skus"][0]["raw_price"] = Value::Null;
    let (status, code, _) = error_code(h.submit(&id, "result", "CLIENT-1", "k", &body).await).await;
    assert_eq!(
        (status, code.as_str()),
        (422, "INVALID_RESULT"),
        "0 is never 'unknown'"
    );
    assert!(h.task(&id).await["results"].as_array().unwrap().is_empty());
}

/// Posts a body exactly as written (no re-serialisation on the way).
async fn submit_text(h: &Harness, id: &str, key: &str, text: &str) -> reqwest::Response {
    h.http
        .post(h.url(&format!("/api/v1/client/tasks/{id}/result")))
        .header("X-Client-Id", "CLIENT-1")
        .header("Idempotency-Key", key)
        .header("Content-Type", "application/json")
        .body(text.to_string())
        .send()
        .await
        .unwrap()
}

async fn get_json(h: &Harness, path: &str) -> Value {
    let r = h.http.get(h.url(path)).send().await.unwrap();
    assert_eq!(r.status(), 200, "{path}");
    r.json().await.unwrap()
}

#[tokio::test]
async fn data_model_1_no_float_for_money_4_0_in_price_cent_is_422_invalid_result() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let body = collect_result("a1", COLLECT_GOODS, None);
    let text = serde_json::to_string(&body)
        .unwrap()
        .replace("\"price_cent\":470", "\"price_cent\":4.0");
    assert!(text.contains("\"price_cent\":4.0"));
    let (status, code, env) = error_code(submit_text(&h, &id, "k", &text).await).await;
    assert_eq!((status, code.as_str()), (422, "INVALID_RESULT"));
    assert_eq!(
        env["error"]["details"]["field"],
        "pdd_data.skus[0].price_cent"
    );
    assert!(
        env["error"]["message"]
            .as_str()
            .unwrap()
            .contains("integers only"),
        "{env}"
    );
    // every *_cent field, in purchase results too
    let p = claimed_purchase(&h, "CLIENT-1").await;
    let float = serde_json::to_string(&dry_purchase_result("a1"))
        .unwrap()
        .replace("\"max_price_cent\":4200", "\"max_price_cent\":4200.0");
    assert!(float.contains("4200.0"));
    let r = h
        .http
        .post(h.url(&format!("/api/v1/client/tasks/{p}/result")))
        .header("X-Client-Id", "CLIENT-1")
        .header("Idempotency-Key", "kp")
        .header("Content-Type", "application/json")
        .body(float)
        .send()
        .await
        .unwrap();
    let (status, code, env) = error_code(r).await;
    assert_eq!((status, code.as_str()), (422, "INVALID_RESULT"));
    assert_eq!(env["error"]["details"]["field"], "purchase.max_price_cent");
    // and task payloads: the operator API refuses 4200.0 as INVALID_TASK_PAYLOAD
    let mut bad = purchase_task("dry_run", None);
    bad["payload"]["max_price_cent"] = json!(4200.0);
    let err = h.op.create_task(bad).await.unwrap_err();
    assert_eq!(err.code.as_str(), "INVALID_TASK_PAYLOAD");
    assert_eq!(err.status, 422);
    assert!(err.message.contains("integers only"), "{err}");
    // other integers are not money: task_version 1.0 is the integer 1
    let ok = serde_json::to_string(&collect_result("a2", COLLECT_GOODS, None))
        .unwrap()
        .replace("\"task_version\":1", "\"task_version\":1.0");
    assert_eq!(submit_text(&h, &id, "k2", &ok).await.status(), 200);
}

#[tokio::test]
async fn data_model_4_2_price_cent_0_with_its_raw_price_is_a_free_option() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let mut body = collect_result("a1", COLLECT_GOODS, None);
    body["pdd_data"]["skus"][0]["price_cent"] = json!(0);
    body["pdd_data"]["skus"][0]["raw_price"] = json!("¥0");
    body["pdd_data"]["skus"][0]["list_price_cent"] = Value::Null;
    assert_eq!(
        h.submit(&id, "result", "CLIENT-1", "k", &body)
            .await
            .status(),
        200
    );
    let p = h.op.products().await.unwrap();
    assert_eq!(p["products"][0]["skus_json"]["skus"][0]["price_cent"], 0);
}

/// A result written the way another client might: keys in its own order, fields this
/// version does not know per SKU, per dimension and at the top, a SKU without
/// `price_observed_at`, a SKU without `list_price_cent`.
const AS_WRITTEN: &str = r#"{
  "result_type": "collect", "attempt_id": "a1", "task_version": 1,
  "completed_at": "2026-08-06T08:03:00Z",
  "pdd_data": {
    "skus": [
      {"raw_price": "折后¥4.7", "available": true, "price_cent": 470,
       "options": {"size": "M", "color": "黑色"}, "list_price_cent": 1990,
       "price_observed_at": {"color": "黑色"}, "sku_hint": {"thumb": "a.jpg", "n": 1.5},
       "stock_text": "最后3件"},
      {"options": {"color": "白色", "size": "M"}, "available": false, "price_cent": null,
       "raw_price": null, "badge": null}
    ],
    "dimensions": [{"name": "颜色分类", "key": "color", "values_seen": 2},
                   {"key": "size", "name": "尺码"}],
    "price_granularity": "color",
    "goods_id": "737116531267",
    "title": "测试商品",
    "page_variant": "sku-sheet-v2",
    "schema_version": 1
  },
  "client_build": "0.9.1"
}"#;

#[tokio::test]
async fn data_model_4_2_skus_json_is_stored_as_submitted() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    assert_eq!(submit_text(&h, &id, "k", AS_WRITTEN).await.status(), 200);
    let submitted: Value = serde_json::from_str(AS_WRITTEN).unwrap();
    let products = get_json(&h, "/api/v1/admin/products").await;
    let stored = &products["products"][0]["skus_json"];
    // Same value and same key order: the compact texts are identical.
    assert_eq!(
        serde_json::to_string(stored).unwrap(),
        serde_json::to_string(&submitted["pdd_data"]).unwrap()
    );
    // Absent stays absent (no `price_observed_at: {}` or `list_price_cent: null` added).
    let white = stored["skus"][1].as_object().unwrap();
    assert!(!white.contains_key("price_observed_at"));
    assert!(!white.contains_key("list_price_cent"));
    assert_eq!(stored["skus"][0]["sku_hint"]["thumb"], "a.jpg");
    assert_eq!(stored["dimensions"][0]["values_seen"], 2);
    let keys: Vec<&String> = stored["skus"][0].as_object().unwrap().keys().collect();
    assert_eq!(keys[0], "raw_price");
    assert_eq!(products["products"][0]["collect_status"], "collected");
}

#[tokio::test]
async fn data_model_4_3_result_data_is_the_complete_submission_as_submitted() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let detail = get_json(&h, &format!("/api/v1/admin/tasks/{id}")).await;
    assert_eq!(detail["task"]["result_data"], Value::Null, "no result yet");
    assert_eq!(submit_text(&h, &id, "k", AS_WRITTEN).await.status(), 200);
    let submitted: Value = serde_json::from_str(AS_WRITTEN).unwrap();
    let detail = get_json(&h, &format!("/api/v1/admin/tasks/{id}")).await;
    let result_data = &detail["task"]["result_data"];
    assert_eq!(
        serde_json::to_string(result_data).unwrap(),
        serde_json::to_string(&submitted).unwrap()
    );
    // Its pdd_data is the product's skus_json, and the audit row says the same.
    let products = get_json(&h, "/api/v1/admin/products").await;
    assert_eq!(
        serde_json::to_string(&result_data["pdd_data"]).unwrap(),
        serde_json::to_string(&products["products"][0]["skus_json"]).unwrap()
    );
    assert_eq!(
        serde_json::to_string(&detail["results"][0]["body"]).unwrap(),
        serde_json::to_string(&submitted).unwrap()
    );
    // Purchase results are kept the same way.
    let p = claimed_purchase(&h, "CLIENT-1").await;
    let body = dry_purchase_result("a1");
    h.submit(&p, "result", "CLIENT-1", "kp", &body).await;
    let t = h.task(&p).await;
    assert_eq!(t["task"]["result_data"], body);
}

#[tokio::test]
async fn s6_price_granularity_is_color_or_sku() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let mut body = collect_result("a1", COLLECT_GOODS, None);
    body["pdd_data"]["price_granularity"] = json!("size");
    let (status, code, _) = error_code(h.submit(&id, "result", "CLIENT-1", "k", &body).await).await;
    assert_eq!((status, code.as_str()), (422, "INVALID_RESULT"));
}

#[tokio::test]
async fn s6_missing_or_empty_shop_name_is_accepted_and_never_overwrites_a_saved_one() {
    let h = Harness::start().await;
    let a = claimed_collect(&h, "CLIENT-1").await;
    h.submit(
        &a,
        "result",
        "CLIENT-1",
        "k1",
        &collect_result("a1", COLLECT_GOODS, Some("XX旗舰店")),
    )
    .await;
    let b = claimed_collect(&h, "CLIENT-1").await;
    assert_eq!(
        h.submit(
            &b,
            "result",
            "CLIENT-1",
            "k2",
            &collect_result("a2", COLLECT_GOODS, Some("  "))
        )
        .await
        .status(),
        200
    );
    let c = claimed_collect(&h, "CLIENT-1").await;
    assert_eq!(
        h.submit(
            &c,
            "result",
            "CLIENT-1",
            "k3",
            &collect_result("a3", COLLECT_GOODS, None)
        )
        .await
        .status(),
        200
    );
    let p = h.op.products().await.unwrap();
    assert_eq!(p["products"][0]["shop_name"], "XX旗舰店");
    assert_eq!(p["products"][0]["collect_status"], "collected");
}

#[tokio::test]
async fn data_model_4_3_goods_mismatch_is_422_and_the_whole_submission_is_rolled_back() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let key = format!("{id}:a1:result-v1");
    let (status, code, _) = error_code(
        h.submit(
            &id,
            "result",
            "CLIENT-1",
            &key,
            &collect_result("a1", "999", Some("别家")),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "COLLECT_GOODS_MISMATCH"));
    let t = h.task(&id).await;
    assert!(t["results"].as_array().unwrap().is_empty());
    assert_eq!(t["task"]["status"], "claimed");
    let p = h.op.products().await.unwrap();
    assert_eq!(p["products"].as_array().unwrap().len(), 1);
    assert_eq!(p["products"][0]["collect_status"], "pending");
    assert_eq!(p["products"][0]["shop_name"], Value::Null);
    // nothing remembered under the key either: the corrected submission is fresh
    assert_eq!(
        h.submit(
            &id,
            "result",
            "CLIENT-1",
            &key,
            &collect_result("a1", COLLECT_GOODS, None)
        )
        .await
        .status(),
        200
    );
}

#[tokio::test]
async fn data_model_4_3_empty_skus_mark_the_product_failed_not_collected() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let mut body = collect_result("a1", COLLECT_GOODS, None);
    body["pdd_data"]["skus"] = json!([]);
    assert_eq!(
        h.submit(&id, "result", "CLIENT-1", "k", &body)
            .await
            .status(),
        200
    );
    let p = h.op.products().await.unwrap();
    assert_eq!(p["products"][0]["collect_status"], "failed");
}

#[tokio::test]
async fn s6_result_type_must_match_the_task_type() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let (status, code, _) = error_code(
        h.submit(
            &id,
            "result",
            "CLIENT-1",
            "k",
            &collect_result("a1", PURCHASE_GOODS, None),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "TASK_TYPE_MISMATCH"));
}

#[tokio::test]
async fn s6_a_live_success_needs_every_condition() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let mut body = dry_purchase_result("a1");
    body["purchase"]["mode"] = json!("live");
    body["purchase"]["order_submitted"] = json!(true);
    body["purchase"]["payment_status"] = json!("unpaid");
    body["purchase"]["match_status"] = json!("matched");
    // no order number
    let (status, code, _) = error_code(h.submit(&id, "result", "CLIENT-1", "k", &body).await).await;
    assert_eq!((status, code.as_str()), (422, "INVALID_RESULT"));
    body["purchase"]["order_sn"] = json!("241130-012345678901234");
    body["purchase"]["ordered_at"] = json!("2026-11-30T08:02:10+08:00");
    assert_eq!(
        h.submit(&id, "result", "CLIENT-1", "k", &body)
            .await
            .status(),
        200
    );
}

// §6.1 -----------------------------------------------------------------------------------

#[tokio::test]
async fn s6_1_results_for_cancelled_tasks_are_accepted() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    h.op.cancel_task(&id).await.unwrap();
    let r = h
        .submit(
            &id,
            "result",
            "CLIENT-1",
            "k",
            &collect_result("a1", COLLECT_GOODS, None),
        )
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["accepted"], true);
    assert_eq!(h.task(&id).await["task"]["status"], "cancelled");
}

#[tokio::test]
async fn s6_1_results_for_reassigned_tasks_are_accepted() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    h.op.reassign_task(&id, Some("CLIENT-2")).await.unwrap();
    assert_eq!(
        h.submit(
            &id,
            "result",
            "CLIENT-1",
            "k",
            &collect_result("a1", COLLECT_GOODS, None)
        )
        .await
        .status(),
        200
    );
    // the reassignment stands: the new holder still gets it
    assert_eq!(h.task(&id).await["task"]["status"], "assigned");
    assert_eq!(h.claim_id("CLIENT-2", &all_dry()).await, id);
}

#[tokio::test]
async fn s6_1_several_clients_may_submit_results_for_the_same_task() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    h.op.reassign_task(&id, None).await.unwrap();
    assert_eq!(h.claim_id("CLIENT-2", &all_dry()).await, id);
    for (client, attempt) in [("CLIENT-1", "a1"), ("CLIENT-2", "a2")] {
        let key = format!("{id}:{attempt}:result-v1");
        assert_eq!(
            h.submit(
                &id,
                "result",
                client,
                &key,
                &collect_result(attempt, COLLECT_GOODS, None)
            )
            .await
            .status(),
            200
        );
    }
    assert_eq!(h.task(&id).await["results"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn s6_1_only_a_never_dispatched_client_gets_403() {
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let (status, code, _) = error_code(
        h.submit(
            &id,
            "result",
            "CLIENT-X",
            "k",
            &collect_result("a1", COLLECT_GOODS, None),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "TASK_NOT_CLAIMED_BY_CLIENT"));
    let (status, code, _) = error_code(
        h.submit(&id, "failure", "CLIENT-X", "k", &failure("failed", "a1"))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (403, "TASK_NOT_CLAIMED_BY_CLIENT"));
    let (status, code, _) = error_code(
        h.submit(
            "no-such-task",
            "result",
            "CLIENT-1",
            "k",
            &collect_result("a1", COLLECT_GOODS, None),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (404, "TASK_NOT_FOUND"));
}

// ---------------------------------------------------------------------------------------
// §7 failures
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn s7_result_id_is_non_empty_and_the_answer_carries_task_status() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let r = h
        .submit(
            &id,
            "failure",
            "CLIENT-1",
            &format!("{id}:a1:failure-v1"),
            &failure("manual_review", "a1"),
        )
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["accepted"], true);
    assert!(!v["result_id"].as_str().unwrap().is_empty());
    assert_eq!(v["task_status"], "manual_review");
    assert!(v["accepted_at"].is_string());
}

#[tokio::test]
async fn s7_status_is_one_of_retry_wait_manual_review_failed_cancelled() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let (status, code, _) = error_code(
        h.submit(&id, "failure", "CLIENT-1", "k", &failure("paused", "a1"))
            .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (422, "INVALID_FAILURE"));
}

#[tokio::test]
async fn s7_unconditional_acceptance_applies_to_failures() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    h.op.cancel_task(&id).await.unwrap();
    let r = h
        .submit(
            &id,
            "failure",
            "CLIENT-1",
            "k",
            &failure("retry_wait", "a1"),
        )
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["accepted"], true);
    assert_eq!(
        v["task_status"], "cancelled",
        "a cancelled task stays cancelled"
    );
    assert_eq!(h.claim("CLIENT-1", &all_dry()).await.status(), 204);
}

#[tokio::test]
async fn s7_retry_wait_creates_a_new_chance_and_manual_review_never_triggers_another_purchase() {
    let h = Harness::start().await;
    // retry_wait: claimable again (by the designated client)
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let v: Value = h
        .submit(
            &id,
            "failure",
            "CLIENT-1",
            "k1",
            &failure("retry_wait", "a1"),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["task_status"], "assigned");
    assert_eq!(h.claim_id("CLIENT-1", &all_dry()).await, id);
    // manual_review: an order may exist, the task is never handed out again
    let v: Value = h
        .submit(
            &id,
            "failure",
            "CLIENT-1",
            "k2",
            &failure("manual_review", "a2"),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["task_status"], "manual_review");
    assert_eq!(h.claim("CLIENT-1", &all_dry()).await.status(), 204);
    // an unassigned pool task goes back to the pool
    let pool = claimed_collect(&h, "CLIENT-1").await;
    let v: Value = h
        .submit(
            &pool,
            "failure",
            "CLIENT-1",
            "k3",
            &failure("retry_wait", "a3"),
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["task_status"], "pending");
    assert_eq!(h.claim_id("CLIENT-2", &all_dry()).await, pool);
}

#[tokio::test]
async fn s7_failure_replay_and_conflict_follow_the_result_rules() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let key = format!("{id}:a1:failure-v1");
    let first = h
        .submit(&id, "failure", "CLIENT-1", &key, &failure("failed", "a1"))
        .await
        .bytes()
        .await
        .unwrap();
    let again = h
        .submit(&id, "failure", "CLIENT-1", &key, &failure("failed", "a1"))
        .await
        .bytes()
        .await
        .unwrap();
    assert_eq!(first, again);
    let (status, code, _) = error_code(
        h.submit(
            &id,
            "failure",
            "CLIENT-1",
            &key,
            &failure("manual_review", "a1"),
        )
        .await,
    )
    .await;
    assert_eq!((status, code.as_str()), (409, "IDEMPOTENCY_CONFLICT"));
}

// ---------------------------------------------------------------------------------------
// §7.1 spec resolution
// ---------------------------------------------------------------------------------------

async fn spec(h: &Harness, task: &str, client: &str, key: &str, body: &Value) -> reqwest::Response {
    h.submit(task, "spec-resolution", client, key, body).await
}

#[tokio::test]
async fn s7_1_rule_engine_matches_a_unique_candidate_with_source_rule() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let (body, key) = spec_request(&id, "a1", "60公斤", &["120斤", "130斤"]);
    let r = spec(&h, &id, "CLIENT-1", &key, &body).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["schema_version"], 1);
    assert_eq!(v["outcome"], "matched");
    assert_eq!(v["source"], "rule");
    assert_eq!(v["match"], body["candidates"][0], "a verbatim copy");
    assert_eq!(
        v["candidate_snapshot_hash"],
        body["candidate_snapshot_hash"]
    );
    assert!(v["resolution_id"].as_str().unwrap().starts_with("psr-"));
    let c = v["confidence_bps"].as_i64().unwrap();
    assert!((0..=10_000).contains(&c));
    // the client's own answer check passes
    let req: cmautobuy_contract::SpecResolutionRequest = serde_json::from_value(body).unwrap();
    let resp: cmautobuy_contract::SpecResolutionResponse = serde_json::from_value(v).unwrap();
    cmautobuy_contract::validate::spec_resolution_response(&req, &resp).unwrap();
}

#[tokio::test]
async fn s7_1_ranges_and_letter_sizes_resolve_and_ambiguity_is_uncertain_none_is_rejected() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let sizes = ["M【建議40-50公斤】", "L 建議50-57.5kg"];
    let cases = [
        ("55公斤", "matched", Some("c2")),
        ("M", "matched", Some("c1")),
        ("50kg", "uncertain", None),
        ("90公斤", "rejected", None),
    ];
    for (i, (target, outcome, m)) in cases.iter().enumerate() {
        let (body, key) = spec_request(&id, &format!("a{i}"), target, &sizes);
        let v: Value = spec(&h, &id, "CLIENT-1", &key, &body)
            .await
            .json()
            .await
            .unwrap();
        assert_eq!(v["outcome"], *outcome, "{target}");
        match m {
            Some(c) => assert_eq!(v["match"]["candidate_id"], *c),
            None => assert_eq!(v["match"], Value::Null),
        }
    }
}

#[tokio::test]
async fn s7_1_the_operator_can_force_every_outcome_per_task_or_goods() {
    use cmautobuy_mock_admin::{ForcedOutcome, SpecOverride};
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let force = |outcome, task: bool| SpecOverride {
        task_id: task.then(|| id.clone()),
        goods_id: (!task).then(|| PURCHASE_GOODS.to_string()),
        outcome,
        candidate: Some(2),
        source: None,
        confidence_bps: None,
        reason: None,
    };
    let cases = [
        (ForcedOutcome::Matched, true, "matched"),
        (ForcedOutcome::Uncertain, false, "uncertain"),
        (ForcedOutcome::Rejected, true, "rejected"),
        (ForcedOutcome::Failed, false, "failed"),
    ];
    for (i, (o, per_task, want)) in cases.into_iter().enumerate() {
        h.op.clear_spec_overrides();
        h.op.set_spec_override(force(o, per_task)).unwrap();
        let (body, key) = spec_request(&id, &format!("a{i}"), "60公斤", &["120斤", "130斤"]);
        let r = spec(&h, &id, "CLIENT-1", &key, &body).await;
        assert_eq!(
            r.status(),
            200,
            "failed is a persisted conclusion, not a 5xx"
        );
        let v: Value = r.json().await.unwrap();
        assert_eq!(v["outcome"], want);
        if want == "matched" {
            assert_eq!(v["match"]["candidate_id"], "c2");
        } else {
            assert_eq!(v["match"], Value::Null);
        }
        if want == "failed" {
            assert_eq!(v["source"], Value::Null);
            assert_eq!(v["confidence_bps"], Value::Null);
        }
    }
    // unavailable: 503 before anything is stored, then the same request succeeds
    h.op.clear_spec_overrides();
    h.op.set_spec_override(force(ForcedOutcome::Unavailable, true))
        .unwrap();
    let (body, key) = spec_request(&id, "a-unavail", "60公斤", &["120斤", "130斤"]);
    let before = h.op.spec_resolutions().await.unwrap()["spec_resolutions"]
        .as_array()
        .unwrap()
        .len();
    let (status, code, env) = error_code(spec(&h, &id, "CLIENT-1", &key, &body).await).await;
    assert_eq!(
        (status, code.as_str()),
        (503, "SPEC_RESOLUTION_UNAVAILABLE")
    );
    assert_eq!(env["error"]["retryable"], true);
    let after = h.op.spec_resolutions().await.unwrap()["spec_resolutions"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(before, after, "nothing stored before a 503");
    h.op.clear_spec_overrides();
    assert_eq!(spec(&h, &id, "CLIENT-1", &key, &body).await.status(), 200);
}

#[tokio::test]
async fn s7_1_an_audited_match_of_the_same_snapshot_is_reused() {
    use cmautobuy_mock_admin::{ForcedOutcome, SpecOverride};
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    // the operator (standing in for an AI) decided c2 once …
    h.op.set_spec_override(SpecOverride {
        task_id: Some(id.clone()),
        goods_id: None,
        outcome: ForcedOutcome::Matched,
        candidate: Some(2),
        source: Some("ai".into()),
        confidence_bps: Some(8800),
        reason: None,
    })
    .unwrap();
    let (body, key) = spec_request(&id, "a1", "60公斤", &["120斤", "130斤"]);
    let v: Value = spec(&h, &id, "CLIENT-1", &key, &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (v["source"].as_str(), v["match"]["candidate_id"].as_str()),
        (Some("ai"), Some("c2"))
    );
    h.op.clear_spec_overrides();
    // … so the next attempt on the same snapshot and target gets that answer, not the rules'
    let (body, key) = spec_request(&id, "a2", "60公斤", &["120斤", "130斤"]);
    let v: Value = spec(&h, &id, "CLIENT-1", &key, &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["outcome"], "matched");
    assert_eq!(v["source"], "reused");
    assert_eq!(v["match"]["candidate_id"], "c2");
    assert_eq!(v["confidence_bps"], 8800);
    // another target on the same page is decided afresh
    let (body, key) = spec_request(&id, "a3", "65公斤", &["120斤", "130斤"]);
    let v: Value = spec(&h, &id, "CLIENT-1", &key, &body)
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        (v["source"].as_str(), v["match"]["candidate_id"].as_str()),
        (Some("rule"), Some("c2"))
    );
}

#[tokio::test]
async fn s7_1_admin_recomputes_both_hashes() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let (mut body, key) = spec_request(&id, "a1", "60公斤", &["120斤", "130斤"]);
    // a key that does not belong to the identity
    let (status, code, _) =
        error_code(spec(&h, &id, "CLIENT-1", "spec-resolution-v1:00", &body).await).await;
    assert_eq!(
        (status, code.as_str()),
        (422, "SPEC_RESOLUTION_HASH_MISMATCH")
    );
    // a snapshot hash that does not match the candidates
    body["candidate_snapshot_hash"] = json!("0".repeat(64));
    let (status, code, _) = error_code(spec(&h, &id, "CLIENT-1", &key, &body).await).await;
    assert_eq!(
        (status, code.as_str()),
        (422, "SPEC_RESOLUTION_HASH_MISMATCH")
    );
}

#[tokio::test]
async fn s7_1_every_error_code_of_the_table() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let collect = claimed_collect(&h, "CLIENT-1").await;
    let unclaimed = h.create(purchase_task("dry_run", Some("CLIENT-9"))).await;
    let check = |status: u16, code: &'static str| (status, code.to_string());

    // 400 INVALID_BODY: not JSON, and over 64 KiB
    let r = h
        .http
        .post(h.url(&format!("/api/v1/client/tasks/{id}/spec-resolution")))
        .header("X-Client-Id", "CLIENT-1")
        .header("Idempotency-Key", "k")
        .header("content-type", "application/json")
        .body("{")
        .send()
        .await
        .unwrap();
    let (s, c, _) = error_code(r).await;
    assert_eq!((s, c), check(400, "INVALID_BODY"));
    let (mut big, key) = spec_request(&id, "a1", "60公斤", &["120斤"]);
    big["padding"] = json!("x".repeat(64 * 1024));
    let (s, c, _) = error_code(spec(&h, &id, "CLIENT-1", &key, &big).await).await;
    assert_eq!((s, c), check(400, "INVALID_BODY"));
    // 400 INVALID_SPEC_RESOLUTION_SCHEMA
    let (mut v2, key) = spec_request(&id, "a1", "60公斤", &["120斤"]);
    v2["schema_version"] = json!(2);
    let (s, c, _) = error_code(spec(&h, &id, "CLIENT-1", &key, &v2).await).await;
    assert_eq!((s, c), check(400, "INVALID_SPEC_RESOLUTION_SCHEMA"));
    // 422 INVALID_SPEC_RESOLUTION_REQUEST: renumbered candidates, colour mismatch, empty
    let (mut bad, key) = spec_request(&id, "a1", "60公斤", &["120斤", "130斤"]);
    bad["candidates"][1]["candidate_id"] = json!("c3");
    let (s, c, _) = error_code(spec(&h, &id, "CLIENT-1", &key, &bad).await).await;
    assert_eq!((s, c), check(422, "INVALID_SPEC_RESOLUTION_REQUEST"));
    let (mut bad, key) = spec_request(&id, "a1", "60公斤", &["120斤"]);
    bad["candidates"][0]["options"]["color"] = json!("白色");
    let (s, c, _) = error_code(spec(&h, &id, "CLIENT-1", &key, &bad).await).await;
    assert_eq!((s, c), check(422, "INVALID_SPEC_RESOLUTION_REQUEST"));
    let (mut bad, key) = spec_request(&id, "a1", "60公斤", &["120斤"]);
    bad["candidates"] = json!([]);
    let (s, c, _) = error_code(spec(&h, &id, "CLIENT-1", &key, &bad).await).await;
    assert_eq!((s, c), check(422, "INVALID_SPEC_RESOLUTION_REQUEST"));
    // 404 TASK_NOT_FOUND
    let (body, key) = spec_request("nope", "a1", "60公斤", &["120斤"]);
    let (s, c, _) = error_code(spec(&h, "nope", "CLIENT-1", &key, &body).await).await;
    assert_eq!((s, c), check(404, "TASK_NOT_FOUND"));
    // 422 TASK_NOT_PURCHASE
    let (body, key) = spec_request(&collect, "a1", "60公斤", &["120斤"]);
    let (s, c, _) = error_code(spec(&h, &collect, "CLIENT-1", &key, &body).await).await;
    assert_eq!((s, c), check(422, "TASK_NOT_PURCHASE"));
    // 409 TASK_VERSION_CONFLICT
    let (mut body, key) = spec_request(&id, "a1", "60公斤", &["120斤"]);
    body["task_version"] = json!(2);
    let (s, c, _) = error_code(spec(&h, &id, "CLIENT-1", &key, &body).await).await;
    assert_eq!((s, c), check(409, "TASK_VERSION_CONFLICT"));
    // 422 PDD_GOODS_MISMATCH (hashes recomputed over the other goods id)
    let cands = candidates("黑色", &["120斤"]);
    let snap = cmautobuy_contract::hash::snapshot_hash_of("111", "黑色", &cands);
    let key = cmautobuy_contract::hash::spec_resolution_idempotency_key(&id, "a1", &snap);
    let (mut body, _) = spec_request(&id, "a1", "60公斤", &["120斤"]);
    body["pdd_goods_id"] = json!("111");
    body["candidate_snapshot_hash"] = json!(snap);
    let (s, c, _) = error_code(spec(&h, &id, "CLIENT-1", &key, &body).await).await;
    assert_eq!((s, c), check(422, "PDD_GOODS_MISMATCH"));
    // 403 TASK_NOT_CLAIMED_BY_CLIENT
    let (body, key) = spec_request(&unclaimed, "a1", "60公斤", &["120斤"]);
    let (s, c, _) = error_code(spec(&h, &unclaimed, "CLIENT-1", &key, &body).await).await;
    assert_eq!((s, c), check(403, "TASK_NOT_CLAIMED_BY_CLIENT"));
    // 409 IDEMPOTENCY_CONFLICT: same identity (same key), different content
    let (body, key) = spec_request(&id, "a9", "60公斤", &["120斤", "130斤"]);
    assert_eq!(spec(&h, &id, "CLIENT-1", &key, &body).await.status(), 200);
    let mut changed = body.clone();
    changed["observed_at"] = json!("2026-08-17T08:00:05Z");
    let (s, c, _) = error_code(spec(&h, &id, "CLIENT-1", &key, &changed).await).await;
    assert_eq!((s, c), check(409, "IDEMPOTENCY_CONFLICT"));
    // and from another client holding the same identity
    h.op.reassign_task(&id, Some("CLIENT-2")).await.unwrap();
    assert_eq!(h.claim_id("CLIENT-2", &all_dry()).await, id);
    let (s, c, _) = error_code(spec(&h, &id, "CLIENT-2", &key, &changed).await).await;
    assert_eq!((s, c), check(409, "IDEMPOTENCY_CONFLICT"));
}

#[tokio::test]
async fn s7_1_replay_returns_the_first_complete_response_byte_for_byte() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let (body, key) = spec_request(&id, "a1", "60公斤", &["120斤", "130斤"]);
    let first = spec(&h, &id, "CLIENT-1", &key, &body)
        .await
        .bytes()
        .await
        .unwrap();
    // even when the operator has since forced another outcome
    h.op.set_spec_override(cmautobuy_mock_admin::SpecOverride {
        task_id: Some(id.clone()),
        goods_id: None,
        outcome: cmautobuy_mock_admin::ForcedOutcome::Rejected,
        candidate: None,
        source: None,
        confidence_bps: None,
        reason: None,
    })
    .unwrap();
    let again = spec(&h, &id, "CLIENT-1", &key, &body)
        .await
        .bytes()
        .await
        .unwrap();
    assert_eq!(first, again);
    let records = h.op.spec_resolutions().await.unwrap();
    assert_eq!(
        records["spec_resolutions"].as_array().unwrap().len(),
        1,
        "one record per business identity"
    );
}

#[tokio::test]
async fn s7_1_never_changes_the_task_status_and_accepts_cancelled_tasks() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let before = h.task(&id).await["task"].clone();
    let (body, key) = spec_request(&id, "a1", "60公斤", &["120斤", "130斤"]);
    assert_eq!(spec(&h, &id, "CLIENT-1", &key, &body).await.status(), 200);
    assert_eq!(h.task(&id).await["task"], before);
    h.op.cancel_task(&id).await.unwrap();
    let (body, key) = spec_request(&id, "a2", "60公斤", &["120斤", "130斤"]);
    assert_eq!(spec(&h, &id, "CLIENT-1", &key, &body).await.status(), 200);
    assert_eq!(h.task(&id).await["task"]["status"], "cancelled");
}

#[tokio::test]
async fn s7_1_nothing_forbidden_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admin.db");
    let h = Harness::start_with(cmautobuy_mock_admin::MockAdminConfig::file(
        path.to_string_lossy().to_string(),
    ))
    .await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    let (mut body, key) = spec_request(&id, "a1", "60公斤", &["120斤", "130斤"]);
    // unknown fields (here: what must never be stored) are ignored, not persisted
    body["ui_dump_xml"] = json!("<hierarchy SECRET-XML/>");
    body["cookie"] = json!("SECRET-COOKIE");
    assert_eq!(spec(&h, &id, "CLIENT-1", &key, &body).await.status(), 200);
    h.stop().await;
    let conn = rusqlite::Connection::open(&path).unwrap();
    let row: String = conn
        .query_row(
            "SELECT resolution_id || attempt_id || target_size || candidates || original_options \
             || COALESCE(CAST(response_body AS TEXT), '') FROM spec_resolutions",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(!row.contains("SECRET"));
    let cols: Vec<String> = conn
        .prepare("SELECT name FROM pragma_table_info('spec_resolutions')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for forbidden in [
        "xml",
        "screenshot",
        "order_sn",
        "address",
        "cookie",
        "token",
    ] {
        assert!(!cols.iter().any(|c| c.contains(forbidden)), "{forbidden}");
    }
}

// ---------------------------------------------------------------------------------------
// §8 idempotency and retries
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn s8_result_failure_and_spec_resolution_require_an_idempotency_key() {
    let h = Harness::start().await;
    let id = claimed_purchase(&h, "CLIENT-1").await;
    for (what, body) in [
        ("result", dry_purchase_result("a1")),
        ("failure", failure("failed", "a1")),
        ("spec-resolution", spec_request(&id, "a1", "M", &["M"]).0),
    ] {
        let r = h
            .http
            .post(h.url(&format!("/api/v1/client/tasks/{id}/{what}")))
            .header("X-Client-Id", "CLIENT-1")
            .json(&body)
            .send()
            .await
            .unwrap();
        let (s, c, _) = error_code(r).await;
        assert_eq!((s, c.as_str()), (400, "MISSING_IDEMPOTENCY_KEY"), "{what}");
    }
}

#[tokio::test]
async fn s8_auth_conflict_and_business_errors_are_not_retryable_transient_ones_are() {
    use cmautobuy_mock_admin::{Fault, FaultPlan, FaultTarget};
    let h = Harness::start().await;
    let id = claimed_collect(&h, "CLIENT-1").await;
    let body = collect_result("a1", COLLECT_GOODS, None);
    h.submit(&id, "result", "CLIENT-1", "k", &body).await;
    let mut other = body.clone();
    other["attempt_id"] = json!("a2");
    let (s, _, env) = error_code(h.submit(&id, "result", "CLIENT-1", "k", &other).await).await;
    assert_eq!((s, env["error"]["retryable"].clone()), (409, json!(false)));
    let (s, _, env) = error_code(
        h.submit(
            &id,
            "result",
            "CLIENT-1",
            "k2",
            &collect_result("a3", "1", None),
        )
        .await,
    )
    .await;
    assert_eq!((s, env["error"]["retryable"].clone()), (422, json!(false)));
    for status in [429u16, 500, 503] {
        h.op.set_fault(FaultPlan {
            endpoint: FaultTarget::Claim,
            nth: None,
            next: Some(1),
            fault: Fault::Status {
                status,
                retry_after: None,
                code: None,
            },
        })
        .unwrap();
        let (s, _, env) = error_code(h.claim("CLIENT-1", &all_dry()).await).await;
        assert_eq!(
            (s, env["error"]["retryable"].clone()),
            (status, json!(true))
        );
    }
}

// ---------------------------------------------------------------------------------------
// operator API, token, binary, schema
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn operator_api_over_http_matches_decisions_10() {
    let h = Harness::start().await;
    let r = h
        .http
        .post(h.url("/api/v1/admin/tasks"))
        .json(&purchase_task("live", Some("CLIENT-1")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201);
    let v: Value = r.json().await.unwrap();
    let id = v["task"]["id"].as_str().unwrap().to_string();
    assert_eq!(v["task"]["status"], "assigned");
    assert_eq!(v["task"]["assigned_client"], "CLIENT-1");
    assert_eq!(v["task"]["version"], 1);
    // a bad purchase payload is a 422, not a stored task
    let mut bad = purchase_task("live", None);
    bad["payload"]["max_price_cent"] = json!(12.5);
    let r = h
        .http
        .post(h.url("/api/v1/admin/tasks"))
        .json(&bad)
        .send()
        .await
        .unwrap();
    let (s, c, _) = error_code(r).await;
    assert_eq!((s, c.as_str()), (422, "INVALID_TASK_PAYLOAD"));
    let list: Value = h
        .http
        .get(h.url("/api/v1/admin/tasks"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(list["tasks"].as_array().unwrap().len(), 1);
    let one: Value = h
        .http
        .get(h.url(&format!("/api/v1/admin/tasks/{id}")))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(one["claims"].is_array() && one["results"].is_array());
    let r = h
        .http
        .post(h.url(&format!("/api/v1/admin/tasks/{id}/reassign")))
        .json(&json!({"client_id": null}))
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["task"]["status"], "pending");
    let r = h
        .http
        .post(h.url(&format!("/api/v1/admin/tasks/{id}/cancel")))
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["task"]["status"], "cancelled");
    let r = h
        .http
        .get(h.url("/api/v1/admin/tasks/nope"))
        .send()
        .await
        .unwrap();
    let (s, c, _) = error_code(r).await;
    assert_eq!((s, c.as_str()), (404, "TASK_NOT_FOUND"));
    h.claim("CLIENT-7", &all_dry()).await;
    let clients: Value = h
        .http
        .get(h.url("/api/v1/admin/clients"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(clients["clients"][0]["client_id"], "CLIENT-7");
    assert_eq!(clients["clients"][0]["online"], true);
}

#[tokio::test]
async fn require_token_answers_401_and_never_echoes_the_token() {
    let mut cfg = cmautobuy_mock_admin::MockAdminConfig::in_memory();
    cfg.require_token = Some("s3cr3t-token".into());
    let h = Harness::start_with(cfg).await;
    for auth in [None, Some("Bearer wrong"), Some("s3cr3t-token")] {
        let mut rb = h
            .http
            .post(h.url("/api/v1/client/tasks/claim"))
            .header("X-Client-Id", "C");
        if let Some(a) = auth {
            rb = rb.header("Authorization", a);
        }
        let r = rb.json(&all_dry()).send().await.unwrap();
        let (s, c, env) = error_code(r).await;
        assert_eq!((s, c.as_str()), (401, "UNAUTHORIZED"));
        assert!(!env.to_string().contains("s3cr3t"));
    }
    let r = h
        .http
        .get(h.url("/api/v1/admin/tasks"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    let r = h
        .http
        .post(h.url("/api/v1/client/tasks/claim"))
        .header("X-Client-Id", "C")
        .header("Authorization", "Bearer s3cr3t-token")
        .json(&all_dry())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 204);
    // the openapi document stays public
    assert_eq!(
        h.http
            .get(h.url("/openapi.json"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let journal = format!("{:?}", h.op.journal());
    assert!(!journal.contains("s3cr3t"));
    let dbg = format!("{:?}", {
        let mut c = cmautobuy_mock_admin::MockAdminConfig::in_memory();
        c.require_token = Some("s3cr3t-token".into());
        c
    });
    assert!(!dbg.contains("s3cr3t"));
}

#[tokio::test]
async fn openapi_json_describes_the_client_contract_with_required_headers() {
    let h = Harness::start().await;
    let v: Value = h
        .http
        .get(h.url("/openapi.json"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let paths = v["paths"].as_object().unwrap();
    for p in [
        "/api/v1/client/registration",
        "/api/v1/client/tasks/claim",
        "/api/v1/client/tasks/{task_id}/result",
        "/api/v1/client/tasks/{task_id}/failure",
        "/api/v1/client/tasks/{task_id}/spec-resolution",
    ] {
        assert!(paths.contains_key(p), "{p}");
    }
    let params = v["paths"]["/api/v1/client/tasks/{task_id}/result"]["post"]["parameters"]
        .as_array()
        .unwrap();
    for name in ["X-Client-Id", "Idempotency-Key"] {
        let p = params.iter().find(|p| p["name"] == name).unwrap();
        assert_eq!(p["in"], "header");
        assert_eq!(p["required"], true);
    }
    assert!(v["paths"]["/api/v1/client/tasks/claim"]["post"]["responses"]["204"].is_object());
    // `capabilities.schema_versions` may be left out (§5's compatibility): not required.
    let caps = &v["components"]["schemas"]["Capabilities"];
    let required: Vec<&str> = caps["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(required.contains(&"purchase_mode"), "{caps}");
    assert!(!required.contains(&"schema_versions"), "{caps}");
}

#[test]
fn schema_self_check_refuses_a_database_with_a_missing_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admin.db");
    let p = path.to_string_lossy().to_string();
    {
        let admin = cmautobuy_mock_admin::MockAdmin::open(
            cmautobuy_mock_admin::MockAdminConfig::file(p.clone()),
        )
        .unwrap();
        drop(admin);
    }
    let conn = rusqlite::Connection::open(&path).unwrap();
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version as usize, cmautobuy_mock_admin::db::MIGRATIONS.len());
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    conn.execute_batch("DROP TABLE spec_resolutions").unwrap();
    drop(conn);
    let err = cmautobuy_mock_admin::MockAdmin::open(cmautobuy_mock_admin::MockAdminConfig::file(p))
        .err()
        .expect("must refuse to start");
    assert!(format!("{err:#}").contains("spec_resolutions"));
}

#[test]
fn reopening_a_database_keeps_its_data_and_runs_no_migration_twice() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("admin.db").to_string_lossy().to_string();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let a = cmautobuy_mock_admin::MockAdmin::open(cmautobuy_mock_admin::MockAdminConfig::file(
            p.clone(),
        ))
        .unwrap();
        a.operator().create_task(collect_task()).await.unwrap();
    });
    rt.block_on(async {
        let a = cmautobuy_mock_admin::MockAdmin::open(cmautobuy_mock_admin::MockAdminConfig::file(
            p.clone(),
        ))
        .unwrap();
        let t = a.operator().list_tasks().await.unwrap();
        assert_eq!(t["tasks"].as_array().unwrap().len(), 1);
    });
}

// ---------------------------------------------------------------------------------------
// data model §2.2–§2.4: upgrades from every earlier schema version
// ---------------------------------------------------------------------------------------

/// Representative rows, one statement per table, in creation order; a database of
/// version `k` gets the rows of the tables its first `k` migrations created.
const OLD_ROWS: &[(&str, &str)] = &[
    (
        "tasks",
        r#"INSERT INTO tasks (task_id, task_type, execution_mode, status, version, priority,
            designated_client, assigned_client, claimed_at, pdd_goods_url, pdd_goods_id,
            pdd_options, quantity, max_price_cent, payload, result_data, error_code,
            error_message, finished_at, created_at, updated_at) VALUES
          ('cj1', 'collect', 'dry_run', 'succeeded', 1, 5, NULL, 'CLIENT-OLD',
           '2026-01-01T00:01:00.000Z', 'https://mobile.yangkeduo.com/goods.html?goods_id=111',
           '111', NULL, NULL, NULL,
           '{"goods_id":"111","goods_url":"https://mobile.yangkeduo.com/goods.html?goods_id=111"}',
           '{"goods_id":"111","price_granularity":"color","dimensions":[],"skus":[{"options":{"color":"黑"},"price_cent":0,"price_observed_at":{},"available":true,"raw_price":"¥0"}]}',
           NULL, NULL, '2026-01-01T00:02:00.000Z', '2026-01-01T00:00:00.000Z',
           '2026-01-01T00:02:00.000Z'),
          ('cg1', 'purchase', 'live', 'assigned', 2, 0, 'CLIENT-OLD', 'CLIENT-OLD', NULL,
           'https://mobile.yangkeduo.com/goods.html?goods_id=222', '222',
           '{"color":"黑色","size":"L"}', 2, 2360,
           '{"goods_id":"222","goods_url":"https://mobile.yangkeduo.com/goods.html?goods_id=222","options":{"color":"黑色","size":"L"},"quantity":2,"max_price_cent":2360}',
           NULL, NULL, NULL, NULL, '2026-01-01T00:00:01.000Z', '2026-01-01T00:00:01.000Z')"#,
    ),
    (
        "clients",
        r#"INSERT INTO clients (client_id, name, device_address, platform, pdd_package,
            supported_types, capabilities, last_seen_at, created_at, updated_at) VALUES
          ('CLIENT-OLD', '办公室-01', '192.168.0.173:5555', 'android', 'com.xunmeng.pinduoduo',
           '["collect","purchase"]', '{"purchase_mode":"live","schema_versions":[1]}',
           '2026-01-01T00:02:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-01T00:02:00.000Z')"#,
    ),
    (
        "task_claims",
        "INSERT INTO task_claims (task_id, client_id, claimed_at, task_version) VALUES
          ('cj1', 'CLIENT-OLD', '2026-01-01T00:01:00.000Z', 1)",
    ),
    (
        "idempotency_keys",
        r#"INSERT INTO idempotency_keys (endpoint, task_id, client_id, idem_key, request_hash,
            response_status, response_body, created_at) VALUES
          ('result', 'cj1', 'CLIENT-OLD', 'cj1:a1:result-v1', 'ab12', 200,
           CAST('{"accepted":true,"result_id":"res-old","accepted_at":"2026-01-01T00:02:00.000Z"}' AS BLOB),
           '2026-01-01T00:02:00.000Z')"#,
    ),
    (
        "task_results",
        r#"INSERT INTO task_results (result_id, task_id, kind, client_id, idempotency_key, body,
            accepted_at) VALUES
          ('res-old', 'cj1', 'result', 'CLIENT-OLD', 'cj1:a1:result-v1',
           '{"task_version":1,"attempt_id":"a1","result_type":"collect","completed_at":"2026-01-01T00:02:00Z","pdd_data":{"goods_id":"111","price_granularity":"color","dimensions":[],"skus":[{"options":{"color":"黑"},"price_cent":0,"raw_price":"¥0","available":true,"gift":true}]}}',
           '2026-01-01T00:02:00.000Z')"#,
    ),
    (
        "pdd_products",
        r#"INSERT INTO pdd_products (goods_id, url, title, shop_name, skus_json, collect_status,
            collect_msg, artifact_ref, collected_at, deleted_at, created_at, updated_at) VALUES
          ('111', 'https://mobile.yangkeduo.com/goods.html?goods_id=111', '旧标题', 'XX旗舰店',
           '{"goods_id":"111","price_granularity":"color","dimensions":[],"skus":[{"options":{"color":"黑"},"price_cent":0,"raw_price":"¥0","available":true,"gift":true}]}',
           'collected', NULL, 'CLIENT-OLD:artifacts/cj1/a1/', '2026-01-01T00:02:00.000Z', NULL,
           '2026-01-01T00:00:00.000Z', '2026-01-01T00:02:00.000Z')"#,
    ),
    (
        "spec_resolutions",
        r#"INSERT INTO spec_resolutions (resolution_id, task_id, attempt_id,
            candidate_snapshot_hash, client_id, idempotency_key, request_hash, task_version,
            pdd_goods_id, selected_color, target_size, original_options, candidates,
            observed_at, received_at, outcome, source, match_candidate_id, confidence_bps,
            reason, resolved_at, response_body) VALUES
          ('psr-old', 'cg1', 'a9', 'ffff', 'CLIENT-OLD', 'spec-resolution-v1:ffff', 'cd34', 2,
           '222', '黑色', '60公斤', '{"color":"黑色","size":"60公斤"}',
           '[{"candidate_id":"c1","raw_text":"120斤","options":{"color":"黑色","size":"120斤"}}]',
           '2026-01-01T00:03:00Z', '2026-01-01T00:03:00.000Z', 'matched', 'rule', 'c1', 8500,
           '目标重量与候选范围唯一对应', '2026-01-01T00:03:01.000Z',
           CAST('{"schema_version":1}' AS BLOB))"#,
    ),
];

/// Every row of every table, for before/after comparison.
fn dump_tables(conn: &rusqlite::Connection) -> Vec<(String, Vec<Vec<rusqlite::types::Value>>)> {
    let mut names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    names.sort();
    names
        .into_iter()
        .map(|t| {
            let mut stmt = conn
                .prepare(&format!("SELECT * FROM {t} ORDER BY rowid"))
                .unwrap();
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |r| {
                    (0..n)
                        .map(|i| r.get::<_, rusqlite::types::Value>(i))
                        .collect::<Result<Vec<_>, _>>()
                })
                .unwrap()
                .collect::<Result<Vec<_>, _>>()
                .unwrap();
            (t, rows)
        })
        .collect()
}

/// Builds a database at `version` from the migration list itself (the first `version`
/// migrations, as the release that had them ran them) and fills what exists then.
fn database_at_version(path: &std::path::Path, version: i64) {
    let mut conn = cmautobuy_mock_admin::db::open_connection(
        &path.to_string_lossy(),
        std::time::Duration::from_secs(5),
    )
    .unwrap();
    cmautobuy_mock_admin::db::migrate_to(&mut conn, version).unwrap();
    let uv: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(uv, version);
    let tables: Vec<String> = dump_tables(&conn).into_iter().map(|(t, _)| t).collect();
    for (table, insert) in OLD_ROWS {
        if tables.iter().any(|t| t == table) {
            conn.execute(insert, []).unwrap();
        }
    }
}

#[test]
fn data_model_2_2_every_earlier_schema_version_upgrades_and_keeps_its_data() {
    let known = cmautobuy_mock_admin::db::MIGRATIONS.len() as i64;
    let rt = tokio::runtime::Runtime::new().unwrap();
    for version in 0..known {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin.db");
        database_at_version(&path, version);
        let mut before = dump_tables(&rusqlite::Connection::open(&path).unwrap());
        // v14 gives `tasks.result_data` its one meaning (the complete §6 body as
        // received): where the accepted body is on record, it replaces the old
        // re-serialised `pdd_data`. Every other column of every row stays as it was.
        let has_results = before.iter().any(|(t, _)| t == "task_results");
        if has_results && version < 14 {
            let body = before.iter().find(|(t, _)| t == "task_results").unwrap().1[0][5].clone();
            let tasks = &mut before.iter_mut().find(|(t, _)| t == "tasks").unwrap().1;
            // tasks: result_data is the 16th column (index 15) of the v1 table.
            tasks[0][15] = body;
        }
        // Open it with the current code: migrations, then the schema self-check (§2.4).
        let admin = cmautobuy_mock_admin::MockAdmin::open(
            cmautobuy_mock_admin::MockAdminConfig::file(path.to_string_lossy().to_string()),
        )
        .unwrap_or_else(|e| panic!("version {version}: {e:#}"));
        let conn = rusqlite::Connection::open(&path).unwrap();
        let uv: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(uv, known, "version {version}");
        cmautobuy_mock_admin::db::check_schema(&conn).unwrap();
        // Every row that existed is still there, column for column.
        let after = dump_tables(&conn);
        for (table, rows) in &before {
            let now = &after.iter().find(|(t, _)| t == table).unwrap().1;
            assert_eq!(now, rows, "version {version}, table {table}");
        }
        // And the current code reads them.
        rt.block_on(async {
            let op = admin.operator();
            let tasks = op.list_tasks().await.unwrap();
            let n = tasks["tasks"].as_array().unwrap().len();
            assert_eq!(n, if version >= 1 { 2 } else { 0 }, "version {version}");
            if version >= 1 {
                let t = op.get_task("cj1").await.unwrap();
                assert_eq!(t["task"]["status"], "succeeded");
                if has_results {
                    assert_eq!(t["task"]["result_data"]["attempt_id"], "a1");
                    assert_eq!(
                        t["task"]["result_data"]["pdd_data"]["skus"][0]["gift"],
                        true
                    );
                    assert_eq!(t["results"][0]["body"], t["task"]["result_data"]);
                } else {
                    // No body on record to give it the new meaning: kept as it was.
                    assert_eq!(t["task"]["result_data"]["goods_id"], "111");
                }
            }
            let products = op.products().await.unwrap();
            if before.iter().any(|(t, _)| t == "pdd_products") {
                assert_eq!(
                    products["products"][0]["skus_json"]["skus"][0]["gift"],
                    true
                );
                assert_eq!(products["products"][0]["shop_name"], "XX旗舰店");
            }
            if before.iter().any(|(t, _)| t == "clients") {
                let c = op.clients().await.unwrap();
                assert_eq!(c["clients"][0]["name"], "办公室-01");
            }
            if before.iter().any(|(t, _)| t == "spec_resolutions") {
                let s = op.spec_resolutions().await.unwrap();
                assert_eq!(s["spec_resolutions"].as_array().unwrap().len(), 1);
            }
        });
        drop(admin);
    }
}

#[test]
fn data_model_2_2_a_newer_schema_version_is_refused_with_its_typed_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("admin.db");
    let known = cmautobuy_mock_admin::db::MIGRATIONS.len() as i64;
    database_at_version(&path, known);
    let mut conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(&format!("PRAGMA user_version = {}", known + 1))
        .unwrap();
    let err = cmautobuy_mock_admin::db::migrate(&mut conn).unwrap_err();
    assert!(
        matches!(err, cmautobuy_mock_admin::StoreError::NewerSchema { found, known: k } if found == known + 1 && k == known),
        "{err}"
    );
    drop(conn);
    let err = cmautobuy_mock_admin::MockAdmin::open(cmautobuy_mock_admin::MockAdminConfig::file(
        path.to_string_lossy().to_string(),
    ))
    .err()
    .expect("a newer database must be refused");
    assert!(format!("{err:#}").contains("newer"), "{err:#}");
}
