//! `cmautobuy-client status` as the operator reads it: each recent outcome
//! with its reason and next step, Chinese first and English beside — the text a failure
//! was reported with (`diagnostics.operator`), else its code's — and every time in the
//! host's time zone; `--json` keeps the stored RFC 3339 UTC times and its field names.

use std::process::Command;

use chrono::{TimeZone, Utc};
use cmautobuy_client::store::{OutboxDraft, OutboxKind, Store, TaskState};
use serde_json::{json, Value};

use crate::support;

/// A task with a run and its outcome in the outbox at `at`.
fn outcome(store: &Store, id: &str, task_type: &str, body: Value, at: chrono::DateTime<Utc>) {
    let task: cmautobuy_contract::Task = serde_json::from_value(json!({
        "id": id, "type": task_type, "version": 1,
        "payload": {"goods_id": "602938475610",
                    "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=602938475610"}
    }))
    .unwrap_or_else(|e| panic!("{task_type} task: {e}"));
    let local = store.save_claimed_task(&task, "{}", at).expect("saved");
    let run = store.start_run(local, at).expect("run");
    let (kind, label) = match body["status"].as_str() {
        Some(status) => (
            OutboxKind::Failure,
            format!("{status}:{}", body["error"]["code"].as_str().unwrap_or("?")),
        ),
        None => (OutboxKind::Result, "succeeded".to_string()),
    };
    store
        .record_outcome(
            run.id,
            &OutboxDraft {
                kind,
                remote_task_id: id.into(),
                method: "POST".into(),
                path: format!("/api/v1/client/tasks/{id}/x"),
                headers: vec![],
                body: serde_json::to_vec(&body).expect("json"),
                idempotency_key: format!("{id}:{}", run.attempt_id),
                on_accept: TaskState::Succeeded,
                outcome: label,
            },
            at,
        )
        .expect("recorded");
}

fn status(data: &std::path::Path, json: bool) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    c.arg("--data-dir").arg(data).arg("status");
    if json {
        c.arg("--json");
    }
    let out = c
        .env_remove("CMAUTOBUY_CONFIG")
        .env("TZ", "Asia/Shanghai")
        .output()
        .expect("status runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn status_gives_each_outcome_its_reason_and_next_step_in_chinese_first_at_local_time() {
    let data = tempfile::tempdir().expect("tmp");
    let store = support::store(data.path(), "http://127.0.0.1:9", Some("tcp:127.0.0.1:9"));
    let t = |m: u32| Utc.with_ymd_and_hms(2026, 8, 6, 8, m, 0).unwrap();
    // A refusal that knows more than its code: reported with its own operator text.
    outcome(
        &store,
        "p-limit",
        "purchase",
        json!({"status": "failed",
               "error": {"code": "PRICE_LIMIT_EXCEEDED", "message": "total 11800 > 9999"},
               "diagnostics": {"operator": {
                   "zh": "订单总价 ¥118.00 超过上限 ¥99.99",
                   "en": "the order total ¥118.00 is above the limit ¥99.99",
                   "next_zh": "在管理端提高上限或更换商品",
                   "next_en": "raise the limit or change the goods in the Admin"}}}),
        t(1),
    );
    // An older failure without one: its code's default text.
    outcome(
        &store,
        "c-gone",
        "collect",
        json!({"status": "failed", "error": {"code": "GOODS_UNAVAILABLE", "message": "x"}}),
        t(0),
    );
    outcome(
        &store,
        "p-ok",
        "purchase",
        json!({"purchase": {"order_sn": "260806-000111222333"}}),
        t(2),
    );
    drop(store);

    let text = status(data.path(), false);
    println!("{text}");
    let lines: Vec<&str> = text.lines().collect();
    let at = |needle: &str| {
        lines
            .iter()
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no {needle:?} in\n{text}"))
    };
    // Newest first, at the host's time (UTC 08:02 is 16:02 in Asia/Shanghai).
    let ok = at("task p-ok (purchase) succeeded, order 260806-000111222333");
    assert!(
        lines[ok].contains("2026-08-06 16:02:00+08:00"),
        "{}",
        lines[ok]
    );
    let limit = at("task p-limit (purchase) failed PRICE_LIMIT_EXCEEDED");
    assert!(
        lines[limit].contains("2026-08-06 16:01:00+08:00"),
        "{}",
        lines[limit]
    );
    assert!(ok < limit, "{text}");
    // The reason and the next step, Chinese first, English beside.
    assert_eq!(
        lines[limit + 1].trim(),
        "订单总价 ¥118.00 超过上限 ¥99.99：在管理端提高上限或更换商品 / the order total ¥118.00 is above the limit ¥99.99: raise the limit or change the goods in the Admin"
    );
    let gone = at("task c-gone (collect) failed GOODS_UNAVAILABLE");
    let default =
        cmautobuy_client::reasons::for_code(&cmautobuy_contract::FailureCode::GoodsUnavailable);
    assert!(
        lines[gone + 1]
            .trim()
            .starts_with(&format!("{}：{}", default.zh, default.next_zh)),
        "{}",
        lines[gone + 1]
    );
    assert!(!text.contains("2026-08-06T08:0"), "UTC in the text: {text}");

    // --json: the stored UTC times and the same field names as before.
    let v: Value = serde_json::from_str(&status(data.path(), true)).expect("json");
    for key in ["client_id", "registration", "alerts", "tasks", "outbox"] {
        assert!(v.get(key).is_some(), "{key}: {v:#}");
    }
    assert!(v.get("recent_outcomes").is_none(), "{v:#}");
}
