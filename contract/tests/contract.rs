//! Contract-level tests: golden hash vectors (computed by Python, see
//! `fixtures/hash-vectors/gen_vectors.py`) and the §7.1 / §4 / §4.1 validation tables.

use cmautobuy_contract::codes::AdminErrorCode;
use cmautobuy_contract::hash;
use cmautobuy_contract::validate::{self, Violation};
use cmautobuy_contract::*;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Deserialize)]
struct Vector {
    name: String,
    task_id: String,
    attempt_id: String,
    pdd_goods_id: String,
    selected_color: String,
    candidates: Vec<SpecCandidate>,
    candidate_snapshot_hash: String,
    idempotency_key: String,
    result_idempotency_key: String,
    failure_idempotency_key: String,
}

fn vectors() -> Vec<Vector> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fixtures/hash-vectors/vectors.json"
    );
    let text = std::fs::read_to_string(path)
        .expect("fixtures/hash-vectors/vectors.json is part of the repo");
    serde_json::from_str(&text).expect("vectors.json parses")
}

#[test]
fn hashes_match_the_independent_python_vectors() {
    let vs = vectors();
    assert!(vs.len() >= 8, "expected the full vector set");
    for v in vs {
        let h = hash::snapshot_hash_of(&v.pdd_goods_id, &v.selected_color, &v.candidates);
        assert_eq!(
            h, v.candidate_snapshot_hash,
            "snapshot hash of {:?}",
            v.name
        );
        let k = hash::spec_resolution_idempotency_key(&v.task_id, &v.attempt_id, &h);
        assert_eq!(k, v.idempotency_key, "idempotency key of {:?}", v.name);
        assert_eq!(
            hash::result_idempotency_key(&v.task_id, &v.attempt_id),
            v.result_idempotency_key,
            "result key of {:?}",
            v.name
        );
        assert_eq!(
            hash::failure_idempotency_key(&v.task_id, &v.attempt_id),
            v.failure_idempotency_key,
            "failure key of {:?}",
            v.name
        );
    }
}

fn spec_request() -> Value {
    let candidates = json!([
        {"candidate_id": "c1", "raw_text": "120斤", "options": {"color": "黑色", "size": "120斤"}},
        {"candidate_id": "c2", "raw_text": "130斤", "options": {"color": "黑色", "size": "130斤"}}
    ]);
    let parsed: Vec<SpecCandidate> = serde_json::from_value(candidates.clone()).unwrap();
    json!({
        "schema_version": 1,
        "task_version": 3,
        "attempt_id": "attempt-uuid",
        "pdd_goods_id": "937122477375",
        "original_options": {"color": "黑色", "size": "60公斤"},
        "selected_color": "黑色",
        "target_size": "60公斤",
        "candidates": candidates,
        "candidate_snapshot_hash": hash::snapshot_hash_of("937122477375", "黑色", &parsed),
        "observed_at": "2026-08-17T08:00:00Z"
    })
}

fn spec_err(v: &Value) -> Violation {
    validate::spec_resolution_body(&serde_json::to_vec(v).unwrap()).expect_err("should be rejected")
}

#[test]
fn spec_resolution_valid_request_passes_and_hashes_check() {
    let v = spec_request();
    let r = validate::spec_resolution_body(&serde_json::to_vec(&v).unwrap()).unwrap();
    let key =
        hash::spec_resolution_idempotency_key("cg1", &r.attempt_id, &r.candidate_snapshot_hash);
    validate::spec_resolution_hashes("cg1", &key, &r).unwrap();
    let e = validate::spec_resolution_hashes("cg2", &key, &r).unwrap_err();
    assert_eq!(e.code, AdminErrorCode::SpecResolutionHashMismatch);
}

#[test]
fn spec_resolution_field_table() {
    type Mutation = fn(&mut Value);
    let cases: Vec<(&str, Mutation, AdminErrorCode)> = vec![
        (
            "schema v2",
            |v| v["schema_version"] = json!(2),
            AdminErrorCode::InvalidSpecResolutionSchema,
        ),
        (
            "schema missing",
            |v| {
                v.as_object_mut().unwrap().remove("schema_version");
            },
            AdminErrorCode::InvalidSpecResolutionSchema,
        ),
        (
            "schema as string",
            |v| v["schema_version"] = json!("1"),
            AdminErrorCode::InvalidSpecResolutionSchema,
        ),
        (
            "task_version 0",
            |v| v["task_version"] = json!(0),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "attempt empty",
            |v| v["attempt_id"] = json!(""),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "attempt 192 chars",
            |v| v["attempt_id"] = json!("字".repeat(192)),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "goods empty",
            |v| v["pdd_goods_id"] = json!(""),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "options empty",
            |v| v["original_options"] = json!({}),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "17 options",
            |v| {
                let m: serde_json::Map<String, Value> =
                    (0..17).map(|i| (format!("k{i}"), json!("v"))).collect();
                v["original_options"] = Value::Object(m);
            },
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "option value empty",
            |v| v["original_options"]["size"] = json!(""),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "control char in colour",
            |v| v["selected_color"] = json!("黑\u{7}色"),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "newline in target",
            |v| v["target_size"] = json!("60\n公斤"),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "no candidates",
            |v| v["candidates"] = json!([]),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "skipped id",
            |v| v["candidates"][1]["candidate_id"] = json!("c3"),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "duplicate id",
            |v| v["candidates"][1]["candidate_id"] = json!("c1"),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "colour differs",
            |v| v["candidates"][0]["options"]["color"] = json!("白色"),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "size differs from raw",
            |v| v["candidates"][0]["options"]["size"] = json!("120"),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "extra option key",
            |v| v["candidates"][0]["options"]["style"] = json!("x"),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "control in raw",
            |v| {
                v["candidates"][0]["raw_text"] = json!("1\u{0}");
                v["candidates"][0]["options"]["size"] = json!("1\u{0}");
            },
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "uppercase hash",
            |v| {
                let h = v["candidate_snapshot_hash"]
                    .as_str()
                    .unwrap()
                    .to_uppercase();
                v["candidate_snapshot_hash"] = json!(h);
            },
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "observed without zone",
            |v| v["observed_at"] = json!("2026-08-17T08:00:00"),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
        (
            "wrong type",
            |v| v["candidates"] = json!("c1"),
            AdminErrorCode::InvalidSpecResolutionRequest,
        ),
    ];
    for (name, mutate, code) in cases {
        let mut v = spec_request();
        mutate(&mut v);
        assert_eq!(spec_err(&v).code, code, "case {name}");
    }
}

#[test]
fn spec_resolution_lengths_are_characters_not_bytes() {
    let mut v = spec_request();
    // 191 CJK characters = 573 bytes: still valid.
    v["attempt_id"] = json!("字".repeat(191));
    validate::spec_resolution_body(&serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn spec_resolution_body_limit_is_64_kib() {
    let big = "x".repeat(70 * 1024);
    let mut v = spec_request();
    v["padding"] = json!(big);
    assert_eq!(spec_err(&v).code, AdminErrorCode::InvalidBody);
    assert_eq!(
        validate::spec_resolution_body(b"{not json")
            .unwrap_err()
            .code,
        AdminErrorCode::InvalidBody
    );
    // Unknown fields below the limit are ignored.
    let mut v = spec_request();
    v["future_field"] = json!({"a": 1});
    validate::spec_resolution_body(&serde_json::to_vec(&v).unwrap()).unwrap();
}

#[test]
fn spec_resolution_hundred_candidates_allowed_not_more() {
    for (n, ok) in [(100usize, true), (101, false)] {
        let cands: Vec<SpecCandidate> = (1..=n)
            .map(|i| SpecCandidate {
                candidate_id: format!("c{i}"),
                raw_text: format!("{i}斤"),
                options: [
                    ("color".to_string(), "黑色".to_string()),
                    ("size".to_string(), format!("{i}斤")),
                ]
                .into_iter()
                .collect(),
            })
            .collect();
        let mut v = spec_request();
        v["candidate_snapshot_hash"] =
            json!(hash::snapshot_hash_of("937122477375", "黑色", &cands));
        v["candidates"] = serde_json::to_value(&cands).unwrap();
        assert_eq!(
            validate::spec_resolution_body(&serde_json::to_vec(&v).unwrap()).is_ok(),
            ok,
            "{n}"
        );
    }
}

fn purchase_payload() -> Value {
    json!({
        "goods_id": "737116531267",
        "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=737116531267",
        "options": {"color": "黑色", "size": "L"},
        "quantity": 2,
        "max_price_cent": 2360
    })
}

#[test]
fn purchase_payload_rules() {
    validate::purchase_payload(&purchase_payload()).unwrap();
    type Mutation = fn(&mut Value);
    let bad: Vec<(&str, Mutation)> = vec![
        ("empty url", |v| v["goods_url"] = json!("  ")),
        ("no url", |v| {
            v.as_object_mut().unwrap().remove("goods_url");
        }),
        ("empty goods", |v| v["goods_id"] = json!("")),
        ("no options", |v| v["options"] = json!({})),
        ("options not map", |v| v["options"] = json!(["黑色"])),
        ("empty option value", |v| v["options"]["size"] = json!("")),
        ("quantity 0", |v| v["quantity"] = json!(0)),
        ("quantity float", |v| v["quantity"] = json!(1.5)),
        ("quantity missing", |v| {
            v.as_object_mut().unwrap().remove("quantity");
        }),
        ("max 0", |v| v["max_price_cent"] = json!(0)),
        ("max negative", |v| v["max_price_cent"] = json!(-1)),
        ("max float yuan", |v| v["max_price_cent"] = json!(23.6)),
        ("max as string", |v| v["max_price_cent"] = json!("2360")),
        ("max missing", |v| {
            v.as_object_mut().unwrap().remove("max_price_cent");
        }),
    ];
    for (name, mutate) in bad {
        let mut v = purchase_payload();
        mutate(&mut v);
        let e = validate::purchase_payload(&v).expect_err(name);
        assert_eq!(e.code, AdminErrorCode::InvalidTaskPayload, "{name}");
    }
}

fn profile() -> Value {
    json!({
        "client": {"name": "办公室-01"},
        "supported_types": ["collect", "purchase"],
        "device": {"address": "192.168.0.173:5555", "platform": "android", "pdd_package": "com.xunmeng.pinduoduo"},
        "capabilities": {"purchase_mode": "dry_run", "schema_versions": [1]}
    })
}

#[test]
fn client_profile_rules() {
    validate::client_profile(&profile()).unwrap();
    let mut ok50 = profile();
    ok50["client"]["name"] = json!("名".repeat(50));
    validate::client_profile(&ok50).unwrap();
    type Mutation = fn(&mut Value);
    let bad: Vec<(&str, Mutation)> = vec![
        ("51 chars", |v| v["client"]["name"] = json!("名".repeat(51))),
        ("no types", |v| v["supported_types"] = json!([])),
        ("unknown type", |v| {
            v["supported_types"] = json!(["collect", "refund"])
        }),
        ("bad mode", |v| {
            v["capabilities"]["purchase_mode"] = json!("turbo")
        }),
        ("zero schema", |v| {
            v["capabilities"]["schema_versions"] = json!([0])
        }),
        ("float schema", |v| {
            v["capabilities"]["schema_versions"] = json!([1.5])
        }),
        ("types missing", |v| {
            v.as_object_mut().unwrap().remove("supported_types");
        }),
    ];
    for (name, mutate) in bad {
        let mut v = profile();
        mutate(&mut v);
        let e = validate::client_profile(&v).expect_err(name);
        assert_eq!(e.code, AdminErrorCode::InvalidClientProfile, "{name}");
    }
}

#[test]
fn failure_status_set_is_closed() {
    let f = |status: &str| {
        json!({
            "task_version": 3, "attempt_id": "a", "status": status,
            "error": {"code": "AMBIGUOUS_ORDER_MATCH", "message": "m", "retryable": false, "step": "reconcile_order"},
            "diagnostics": {"artifact_ids": []}, "reported_at": "2026-08-06T08:03:00Z"
        })
    };
    for s in ["retry_wait", "manual_review", "failed", "cancelled"] {
        validate::failure_request(&f(s)).unwrap();
    }
    assert_eq!(
        validate::failure_request(&f("succeeded")).unwrap_err().code,
        AdminErrorCode::InvalidFailure
    );
}

#[test]
fn live_purchase_result_needs_every_condition() {
    let good = json!({
        "task_version": 1, "attempt_id": "a", "result_type": "purchase",
        "completed_at": "2026-11-30T00:03:00Z",
        "purchase": {
            "schema_version": 1, "mode": "live", "order_submitted": true, "payment_attempted": false,
            "payment_status": "unpaid", "match_status": "matched",
            "order_sn": "241130-012345678901234", "ordered_at": "2026-11-30T08:02:10+08:00",
            "goods_id": "737116531267", "options": {"color": "黑色", "size": "L"}, "quantity": 2,
            "confirmed_total_cent": 2360, "max_price_cent": 2400,
            "spec_resolution_id": null, "irreversible_action_at": "2026-11-30T00:02:05Z"
        }
    });
    validate::result_request(&good).unwrap();
    for (field, value) in [
        ("payment_attempted", json!(true)),
        ("payment_status", json!("paid")),
        ("match_status", json!("ambiguous")),
        ("order_sn", json!("")),
        ("ordered_at", json!("2026-11-30 08:02:10")),
        ("confirmed_total_cent", json!(2500)),
    ] {
        let mut v = good.clone();
        v["purchase"][field] = value;
        assert_eq!(
            validate::result_request(&v).unwrap_err().code,
            AdminErrorCode::InvalidResult,
            "{field}"
        );
    }
}

#[test]
fn collect_result_rules() {
    let base = json!({
        "task_version": 1, "attempt_id": "a", "result_type": "collect",
        "completed_at": "2026-11-30T00:03:00Z",
        "pdd_data": {
            "goods_id": "1", "price_granularity": "color",
            "dimensions": [{"key": "color", "name": "颜色"}],
            "skus": [{"options": {"color": "黑色"}, "price_cent": null, "price_observed_at": {},
                      "available": true, "raw_price": null}]
        }
    });
    validate::result_request(&base).unwrap();
    let mut zero = base.clone();
    zero["pdd_data"]["skus"][0]["price_cent"] = json!(0);
    assert_eq!(
        validate::result_request(&zero).unwrap_err().code,
        AdminErrorCode::InvalidResult,
        "0 without the text it was read from is an unknown written as 0"
    );
    let mut invented = base.clone();
    invented["pdd_data"]["skus"][0]["price_observed_at"] = json!({"size": "M"});
    assert_eq!(
        validate::result_request(&invented).unwrap_err().code,
        AdminErrorCode::InvalidResult
    );
    let mut gran = base.clone();
    gran["pdd_data"]["price_granularity"] = json!("size");
    assert_eq!(
        validate::result_request(&gran).unwrap_err().code,
        AdminErrorCode::InvalidResult
    );
}

#[test]
fn spec_resolution_answers_are_checked_against_the_request() {
    let req: SpecResolutionRequest = serde_json::from_value(spec_request()).unwrap();
    let answer = |outcome: &str, m: Value| -> SpecResolutionResponse {
        serde_json::from_value(json!({
            "schema_version": 1, "resolution_id": "psr-1", "outcome": outcome, "source": "rule",
            "candidate_snapshot_hash": req.candidate_snapshot_hash, "match": m,
            "confidence_bps": 9300, "reason": "r", "resolved_at": "2026-08-17T08:00:01Z"
        }))
        .unwrap()
    };
    let c1 = serde_json::to_value(&req.candidates[0]).unwrap();
    validate::spec_resolution_response(&req, &answer("matched", c1.clone())).unwrap();
    validate::spec_resolution_response(&req, &answer("uncertain", Value::Null)).unwrap();
    let mut rewritten = c1.clone();
    rewritten["raw_text"] = json!("120 斤");
    assert!(validate::spec_resolution_response(&req, &answer("matched", rewritten)).is_err());
    assert!(validate::spec_resolution_response(&req, &answer("rejected", c1)).is_err());
    assert!(validate::spec_resolution_response(&req, &answer("matched", Value::Null)).is_err());
}

mod no_panic {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Arbitrary bytes never panic the validators; they are valid or a typed violation.
        #[test]
        fn arbitrary_bodies_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = validate::spec_resolution_body(&bytes);
            if let Ok(v) = validate::json_object(&bytes) {
                let _ = validate::client_profile(&v);
                let _ = validate::result_request(&v);
                let _ = validate::failure_request(&v);
                let _ = validate::purchase_payload(&v);
            }
        }

        /// Mutating any string of a valid request yields a valid request or a §7.1 code.
        #[test]
        fn mutated_strings_give_stable_codes(s in "\\PC{0,200}", which in 0usize..6) {
            let mut v = spec_request();
            match which {
                0 => v["attempt_id"] = json!(s),
                1 => v["selected_color"] = json!(s),
                2 => v["target_size"] = json!(s),
                3 => v["candidates"][0]["raw_text"] = json!(s),
                4 => v["pdd_goods_id"] = json!(s),
                _ => v["observed_at"] = json!(s),
            }
            match validate::spec_resolution_body(&serde_json::to_vec(&v).unwrap()) {
                Ok(_) => {}
                Err(e) => prop_assert!(matches!(
                    e.code,
                    AdminErrorCode::InvalidSpecResolutionRequest | AdminErrorCode::InvalidBody
                )),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// data model §1 "禁止 float" and §4.2 price 0 (decisions in `cmautobuy_contract::money`)
// ---------------------------------------------------------------------------------------

fn collect_body() -> Value {
    json!({
        "task_version": 1, "attempt_id": "a", "result_type": "collect",
        "completed_at": "2026-11-30T00:03:00Z",
        "pdd_data": {
            "goods_id": "1", "price_granularity": "color",
            "dimensions": [{"key": "color", "name": "颜色"}],
            "skus": [{"options": {"color": "黑色"}, "price_cent": 470, "list_price_cent": 1990,
                      "price_observed_at": {"color": "黑色"}, "available": true,
                      "raw_price": "¥4.7"}]
        }
    })
}

fn purchase_body() -> Value {
    json!({
        "task_version": 1, "attempt_id": "a", "result_type": "purchase",
        "completed_at": "2026-11-30T00:03:00Z",
        "purchase": {
            "schema_version": 1, "mode": "dry_run", "order_submitted": false,
            "payment_attempted": false, "payment_status": "not_created",
            "match_status": "not_applicable", "goods_id": "1",
            "options": {"color": "黑色"}, "quantity": 1,
            "confirmed_total_cent": 470, "max_price_cent": 500
        }
    })
}

fn money_refusal(v: Violation, code: AdminErrorCode, field: &str) {
    assert_eq!(v.code, code, "{v:?}");
    assert_eq!(v.field, field, "{v:?}");
    assert!(v.message.contains("integers only"), "{v:?}");
}

#[test]
fn data_model_1_no_float_for_money_4_0_in_price_cent_is_invalid_result() {
    validate::result_request(&collect_body()).unwrap();
    for (field, bad) in [
        ("price_cent", json!(4.0)),
        ("price_cent", json!(4.7)),
        ("price_cent", json!("470")),
        ("list_price_cent", json!(1990.0)),
    ] {
        let mut v = collect_body();
        v["pdd_data"]["skus"][0][field] = bad.clone();
        money_refusal(
            validate::result_request(&v).unwrap_err(),
            AdminErrorCode::InvalidResult,
            &format!("pdd_data.skus[0].{field}"),
        );
    }
    // 1e3 is a float to JSON parsers too.
    let text = serde_json::to_string(&collect_body())
        .unwrap()
        .replace("\"price_cent\":470", "\"price_cent\":1e3");
    let v = validate::json_object(text.as_bytes()).unwrap();
    money_refusal(
        validate::result_request(&v).unwrap_err(),
        AdminErrorCode::InvalidResult,
        "pdd_data.skus[0].price_cent",
    );
}

#[test]
fn data_model_1_no_float_for_money_in_purchase_results() {
    validate::result_request(&purchase_body()).unwrap();
    for field in ["confirmed_total_cent", "max_price_cent"] {
        let mut v = purchase_body();
        v["purchase"][field] = json!(470.0);
        money_refusal(
            validate::result_request(&v).unwrap_err(),
            AdminErrorCode::InvalidResult,
            &format!("purchase.{field}"),
        );
    }
    // Any `*_cent` field, unknown ones included.
    let mut v = purchase_body();
    v["purchase"]["shipping_fee_cent"] = json!(0.0);
    money_refusal(
        validate::result_request(&v).unwrap_err(),
        AdminErrorCode::InvalidResult,
        "purchase.shipping_fee_cent",
    );
}

#[test]
fn data_model_1_no_float_for_money_in_task_payloads() {
    for field in ["max_price_cent", "expected_price_cent"] {
        let mut v = purchase_payload();
        v[field] = json!(2360.0);
        money_refusal(
            validate::purchase_payload(&v).unwrap_err(),
            AdminErrorCode::InvalidTaskPayload,
            &format!("payload.{field}"),
        );
    }
    // What the client receives: a claimed task goes through the same check.
    let task: Task = serde_json::from_value(json!({
        "id": "cg1", "type": "purchase", "version": 1,
        "payload": {"goods_id": "1", "goods_url": "u", "options": {"color": "黑色"},
                    "quantity": 1, "max_price_cent": 4200.0}
    }))
    .unwrap();
    money_refusal(
        validate::claimed_task(&task).unwrap_err(),
        AdminErrorCode::InvalidTaskPayload,
        "payload.max_price_cent",
    );
    let mut c = json!({"goods_id": "1", "goods_url": "u", "expected_price_cent": 99.0});
    money_refusal(
        validate::collect_payload(&c).unwrap_err(),
        AdminErrorCode::InvalidTaskPayload,
        "payload.expected_price_cent",
    );
    c["expected_price_cent"] = json!(99);
    validate::collect_payload(&c).unwrap();
}

#[test]
fn data_model_1_what_the_client_sends_is_integers_by_construction() {
    // The client builds results from typed `Fen`s; serialised, they pass the raw check.
    let r: ResultRequest = serde_json::from_value(collect_body()).unwrap();
    let sent = serde_json::to_value(&r).unwrap();
    validate::result_request(&sent).unwrap();
    let r: ResultRequest = serde_json::from_value(purchase_body()).unwrap();
    validate::result_request(&serde_json::to_value(&r).unwrap()).unwrap();
}

#[test]
fn data_model_4_2_price_0_is_a_free_option_read_from_the_page_never_unknown() {
    let mut free = collect_body();
    free["pdd_data"]["skus"][0]["price_cent"] = json!(0);
    free["pdd_data"]["skus"][0]["raw_price"] = json!("¥0");
    validate::result_request(&free).unwrap();
    for raw in [Value::Null, json!(""), json!("  ")] {
        let mut unknown = free.clone();
        unknown["pdd_data"]["skus"][0]["raw_price"] = raw.clone();
        let e = validate::result_request(&unknown).unwrap_err();
        assert_eq!(e.code, AdminErrorCode::InvalidResult, "{raw}");
        assert_eq!(e.field, "pdd_data.skus[0].price_cent", "{raw}");
    }
    let mut negative = collect_body();
    negative["pdd_data"]["skus"][0]["price_cent"] = json!(-1);
    assert_eq!(
        validate::result_request(&negative).unwrap_err().field,
        "pdd_data.skus[0].price_cent"
    );
    let mut list0 = collect_body();
    list0["pdd_data"]["skus"][0]["list_price_cent"] = json!(0);
    assert_eq!(
        validate::result_request(&list0).unwrap_err().field,
        "pdd_data.skus[0].list_price_cent"
    );
    // Limits stay strictly positive.
    let mut max0 = purchase_payload();
    max0["max_price_cent"] = json!(0);
    assert_eq!(
        validate::purchase_payload(&max0).unwrap_err().field,
        "payload.max_price_cent"
    );
}
