//! The notifier in process on the virtual clock ([`VirtualClock`]) against
//! a real webhook receiver on loopback HTTP: deduplication within the window, a 500
//! retried with backoff then delivered, giving up after N tries, a parked outbox item,
//! a device pause longer than N minutes, the daily summary once a day, a `kinds` filter.
//! Every wait is on a signal with a deadline (the receiver's hits) or on the virtual
//! clock; nothing sleeps for luck.

use cmautobuy_client::alert::AlertKind;
use std::time::Duration;

use serde_json::json;

use crate::support::receiver::Receiver;
use crate::support::{store, test_clock, VirtualClock, TOKEN};
use cmautobuy_client::clock::Clock;
use cmautobuy_client::notify::{Format, Notifier, NotifyConfig, SummaryAt, Webhook, WebhookConfig};
use cmautobuy_client::secret::Secret;
use cmautobuy_client::store::{DevicePause, OutboxDraft, OutboxKind, Store, TaskState};

const WAIT: Duration = Duration::from_secs(20);

fn hook(url: String, format: Format, kinds: Option<&[&str]>) -> Webhook {
    Webhook::from_config(&WebhookConfig {
        url: Secret::new(url),
        format,
        secret: None,
        kinds: kinds.map(|k| k.iter().map(|s| s.to_string()).collect()),
        name: None,
    })
    .unwrap()
}

/// Only the events a test provokes: no time-based checks unless it turns them on.
fn quiet(webhooks: Vec<Webhook>) -> NotifyConfig {
    NotifyConfig {
        webhooks,
        device_paused_after: None,
        no_success_after: None,
        daily_summary: None,
        ..NotifyConfig::default()
    }
}

struct Setup {
    _dir: tempfile::TempDir,
    store: Store,
    clock: VirtualClock,
    rx: Receiver,
}

async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let store = store(dir.path(), "http://in-process", Some("tcp:127.0.0.1:5555"));
    Setup {
        _dir: dir,
        store,
        clock: test_clock(),
        rx: Receiver::start().await,
    }
}

fn deliveries(store: &Store) -> Vec<(String, i64)> {
    store.webhook_counts().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_alert_is_sent_once_within_the_dedup_window_then_again() {
    let s = setup().await;
    let mut cfg = quiet(vec![hook(format!("{}/json", s.rx.url), Format::Json, None)]);
    cfg.dedup_window = Duration::from_secs(30 * 60);
    let n = Notifier::new(s.store.clone(), s.clock.clone(), cfg).unwrap();
    // The same kind and subject twice, and another kind: two messages.
    for kind in [
        AlertKind::LowDisk,
        AlertKind::LowDisk,
        AlertKind::DeviceAttention,
    ] {
        s.store
            .raise_alert(kind, None, "1.2 GB free", s.clock.now())
            .unwrap();
    }
    n.tick().await.unwrap();
    let hits = s.rx.wait_for(2, WAIT).await;
    let kinds: Vec<String> = hits
        .iter()
        .map(|h| h.json()["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["low_disk", "device_attention"]);
    // An alert is delivered as an alert, with what it does and the next step, Chinese
    // first (`low_disk` closes by itself: no `ack` asked for).
    let body = hits[0].json();
    assert_eq!(body["category"], "alert");
    assert_eq!(body["source"], "cmautobuy-client");
    let text = body["text"].as_str().unwrap();
    assert!(
        text.contains("空间恢复后自动继续") && text.contains("下一步") && text.contains("Next:"),
        "{text}"
    );
    assert!(!text.contains("ack"), "{text}");
    assert!(hits[1].json()["text"]
        .as_str()
        .unwrap()
        .contains("自动恢复"));
    // Within the window: suppressed, nothing sent.
    s.clock.advance(Duration::from_secs(10 * 60));
    s.store
        .raise_alert(AlertKind::LowDisk, None, "1.1 GB free", s.clock.now())
        .unwrap();
    n.tick().await.unwrap();
    assert_eq!(s.rx.hits().len(), 2);
    // After the window: sent again.
    s.clock.advance(Duration::from_secs(31 * 60));
    s.store
        .raise_alert(AlertKind::LowDisk, None, "0.9 GB free", s.clock.now())
        .unwrap();
    n.tick().await.unwrap();
    let hits = s.rx.wait_for(3, WAIT).await;
    assert!(hits[2].json()["text"].as_str().unwrap().contains("0.9 GB"));
    assert_eq!(deliveries(&s.store), vec![("delivered".to_string(), 3)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_is_retried_after_a_backoff_then_delivered_and_n_failures_give_up() {
    let s = setup().await;
    let mut cfg = quiet(vec![hook(
        format!("{}/wecom/send?key=K", s.rx.url),
        Format::Wecom,
        None,
    )]);
    cfg.max_attempts = 3;
    let n = Notifier::new(s.store.clone(), s.clock.clone(), cfg).unwrap();
    s.rx.script(&[500, 500]);
    s.store
        .raise_alert(
            AlertKind::AccountPaused,
            Some("t-1"),
            "risk page",
            s.clock.now(),
        )
        .unwrap();
    let d = n.tick().await.unwrap();
    assert_eq!((d.delivered, d.retried), (0, 1));
    s.rx.wait_for(1, WAIT).await;
    // Not hit again at once: the retry waits at least half its backoff ceiling (2 s).
    let next = s.store.webhook_next_due().unwrap().unwrap();
    assert!(
        next >= s.clock.now() + chrono::Duration::seconds(1),
        "{next}"
    );
    assert_eq!(n.tick().await.unwrap().retried, 0);
    assert_eq!(s.rx.hits().len(), 1);
    // Due again: a second 500, then the receiver recovers.
    s.clock.advance(Duration::from_secs(2));
    assert_eq!(n.tick().await.unwrap().retried, 1);
    s.clock.advance(Duration::from_secs(4));
    assert_eq!(n.tick().await.unwrap().delivered, 1);
    let hits = s.rx.wait_for(3, WAIT).await;
    // The same message each time, in the 企业微信 shape.
    for h in &hits {
        assert_eq!(h.json()["msgtype"], "text");
        assert!(h.json()["text"]["content"]
            .as_str()
            .unwrap()
            .starts_with("[cmautobuy] 账号暂停"));
    }
    assert_eq!(deliveries(&s.store), vec![("delivered".to_string(), 1)]);

    // A receiver that keeps failing: given up after max_attempts (3) tries.
    s.rx.script(&[503, 503, 503]);
    s.store
        .raise_alert(
            AlertKind::AccountPaused,
            Some("t-2"),
            "login page",
            s.clock.now(),
        )
        .unwrap();
    let mut given_up = 0;
    for _ in 0..10 {
        given_up += n.tick().await.unwrap().given_up;
        s.clock.advance(Duration::from_secs(60));
    }
    assert_eq!(given_up, 1);
    assert_eq!(s.rx.hits().len(), 3 + 3);
    assert_eq!(
        deliveries(&s.store),
        vec![("delivered".to_string(), 1), ("given_up".to_string(), 1)]
    );
}

/// A task with a run and its outcome in the outbox, at the clock's time.
fn outcome(store: &Store, clock: &VirtualClock, id: &str, status: &str, code: &str) -> i64 {
    let task: cmautobuy_contract::Task = serde_json::from_value(json!({
        "id": id, "type": "collect", "version": 1,
        "payload": {"goods_id": "602938475610",
                    "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=602938475610"}
    }))
    .unwrap();
    let local = store.save_claimed_task(&task, "{}", clock.now()).unwrap();
    let run = store.start_run(local, clock.now()).unwrap();
    let (kind, on_accept, label, body) = if status == "succeeded" {
        (
            OutboxKind::Result,
            TaskState::Succeeded,
            "succeeded".to_string(),
            json!({}),
        )
    } else {
        (
            OutboxKind::Failure,
            if status == "manual_review" {
                TaskState::ManualReview
            } else {
                TaskState::Failed
            },
            format!("{status}:{code}"),
            json!({"status": status, "attempt_id": run.attempt_id,
                   "error": {"code": code, "message": "scripted"},
                   "diagnostics": {"artifact_ref": format!("C:artifacts/{id}/")}}),
        )
    };
    store
        .record_outcome(
            run.id,
            &OutboxDraft {
                kind,
                remote_task_id: id.into(),
                method: "POST".into(),
                path: format!("/api/client/tasks/{id}/result"),
                headers: vec![],
                body: serde_json::to_vec(&body).unwrap(),
                idempotency_key: format!("{id}:{}", run.attempt_id),
                on_accept,
                outcome: label,
            },
            clock.now(),
        )
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_manual_review_and_a_parked_outbox_item_are_announced() {
    let s = setup().await;
    let cfg = quiet(vec![hook(
        format!("{}/feishu/hook/abc", s.rx.url),
        Format::Feishu,
        None,
    )]);
    let n = Notifier::new(s.store.clone(), s.clock.clone(), cfg).unwrap();
    let item = outcome(
        &s.store,
        &s.clock,
        "mr-1",
        "manual_review",
        "GOODS_IDENTITY_UNVERIFIED",
    );
    s.store
        .outbox_park(item, "HTTP 422 VALIDATION_FAILED", s.clock.now())
        .unwrap();
    n.tick().await.unwrap();
    let hits = s.rx.wait_for(2, WAIT).await;
    let texts: Vec<String> = hits
        .iter()
        .map(|h| {
            assert_eq!(h.json()["msg_type"], "text");
            h.json()["content"]["text"].as_str().unwrap().to_string()
        })
        .collect();
    // The reason first, in Chinese, then English; the code beside it.
    assert!(
        texts[0].contains("人工复核：无法证明页面上的商品就是任务的商品")
            && texts[0].contains("manual review: nothing proves the page shows the task's goods")
            && texts[0].contains("下一步：")
            && texts[0].contains("[GOODS_IDENTITY_UNVERIFIED]"),
        "{}",
        texts[0]
    );
    assert!(texts[0].contains("C:artifacts/mr-1/"), "{}", texts[0]);
    assert!(
        texts[1].contains("parked") && texts[1].contains("HTTP 422"),
        "{}",
        texts[1]
    );
    assert!(
        texts[1].contains(&format!("outbox retry {item}")),
        "{}",
        texts[1]
    );
    // No token anywhere.
    assert!(hits.iter().all(|h| !h.all_text().contains(TOKEN)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_phone_paused_longer_than_n_minutes_is_announced_once_per_window() {
    let s = setup().await;
    let mut cfg = quiet(vec![hook(format!("{}/json", s.rx.url), Format::Json, None)]);
    cfg.device_paused_after = Some(Duration::from_secs(10 * 60));
    let n = Notifier::new(s.store.clone(), s.clock.clone(), cfg).unwrap();
    s.store
        .set_device_pause(Some(&DevicePause {
            since: cmautobuy_contract::time::format_utc(s.clock.now()),
            code: "DEVICE_OFFLINE".into(),
            message: "the phone does not answer".into(),
        }))
        .unwrap();
    n.tick().await.unwrap();
    s.clock.advance(Duration::from_secs(9 * 60));
    n.tick().await.unwrap();
    assert!(s.rx.hits().is_empty(), "not yet 10 minutes");
    s.clock.advance(Duration::from_secs(60));
    n.tick().await.unwrap();
    let hits = s.rx.wait_for(1, WAIT).await;
    let b = hits[0].json();
    assert_eq!(b["kind"], "device_paused");
    assert_eq!(b["details"]["code"], "DEVICE_OFFLINE");
    assert_eq!(b["details"]["minutes"], 10);
    for _ in 0..5 {
        s.clock.advance(Duration::from_secs(60));
        n.tick().await.unwrap();
    }
    assert_eq!(s.rx.hits().len(), 1, "deduplicated within the window");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daily_summary_goes_out_once_a_day_with_the_days_counts() {
    let s = setup().await;
    // Only the summary reaches this webhook (`kinds`); the other one gets everything.
    let mut cfg = quiet(vec![
        hook(
            format!("{}/dingtalk/robot/send?access_token=T", s.rx.url),
            Format::Dingtalk,
            Some(&["daily_summary"]),
        ),
        hook(format!("{}/json", s.rx.url), Format::Json, Some(&["alert"])),
    ]);
    // 09:00 in UTC+8 = 01:00 UTC; the test clock starts at 08:00 UTC.
    cfg.daily_summary = Some(SummaryAt::parse("09:00+08:00").unwrap());
    let n = Notifier::new(s.store.clone(), s.clock.clone(), cfg).unwrap();
    n.tick().await.unwrap(); // remembers today's 01:00 UTC, sends nothing
    outcome(&s.store, &s.clock, "c-1", "succeeded", "");
    outcome(&s.store, &s.clock, "c-2", "succeeded", "");
    outcome(
        &s.store,
        &s.clock,
        "c-3",
        "manual_review",
        "RISK_VERIFICATION",
    );
    s.store
        .raise_alert(
            AlertKind::AccountPaused,
            Some("c-3"),
            "risk page",
            s.clock.now(),
        )
        .unwrap();
    n.tick().await.unwrap();
    // The alert only (the manual_review goes to no webhook: kinds).
    let hits = s.rx.wait_for(1, WAIT).await;
    assert_eq!(hits[0].path, "/json");
    // 16 h 59 min later: not yet.
    s.clock.advance(Duration::from_secs(16 * 3600 + 59 * 60));
    n.tick().await.unwrap();
    assert_eq!(s.rx.hits().len(), 1);
    s.clock.advance(Duration::from_secs(60));
    n.tick().await.unwrap();
    let hits = s.rx.wait_for(2, WAIT).await;
    let h = &hits[1];
    assert!(h.path.starts_with("/dingtalk"));
    let text = h.json()["text"]["content"].as_str().unwrap().to_string();
    assert!(text.contains("daily summary: 3 task run(s)"), "{text}");
    assert!(text.contains("succeeded 2"), "{text}");
    assert!(text.contains("manual_review:RISK_VERIFICATION 1"), "{text}");
    assert!(text.contains("account_paused 1"), "{text}");
    assert!(
        text.contains("2026-08-06T01:00:00Z … 2026-08-07T01:00:00Z"),
        "{text}"
    );
    // Once a day: the rest of the day sends nothing more.
    for _ in 0..12 {
        s.clock.advance(Duration::from_secs(3600));
        n.tick().await.unwrap();
    }
    assert_eq!(s.rx.hits().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_success_for_n_minutes_while_tasks_were_claimed_is_announced() {
    let s = setup().await;
    let mut cfg = quiet(vec![hook(format!("{}/json", s.rx.url), Format::Json, None)]);
    cfg.no_success_after = Some(Duration::from_secs(60 * 60));
    let n = Notifier::new(s.store.clone(), s.clock.clone(), cfg).unwrap();
    n.tick().await.unwrap();
    // Tasks claimed and failing for an hour.
    for i in 0..3 {
        s.clock.advance(Duration::from_secs(15 * 60));
        outcome(
            &s.store,
            &s.clock,
            &format!("f-{i}"),
            "failed",
            "GOODS_UNAVAILABLE",
        );
        n.tick().await.unwrap();
    }
    s.clock.advance(Duration::from_secs(14 * 60));
    n.tick().await.unwrap();
    assert!(s.rx.hits().is_empty(), "not a full hour of watching yet");
    s.clock.advance(Duration::from_secs(60));
    n.tick().await.unwrap();
    let hits = s.rx.wait_for(1, WAIT).await;
    let b = hits[0].json();
    assert_eq!(b["kind"], "no_success");
    assert_eq!(b["details"]["last_success"], "never");
    assert_eq!(
        b["details"]["claimed"], 3,
        "runs started within the last hour"
    );
    // A success ends it: nothing more is announced.
    outcome(&s.store, &s.clock, "ok-1", "succeeded", "");
    for _ in 0..4 {
        s.clock.advance(Duration::from_secs(15 * 60));
        n.tick().await.unwrap();
    }
    assert_eq!(s.rx.hits().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_delivery_survives_a_restart_and_is_sent_by_the_next_process() {
    let s = setup().await;
    let cfg = quiet(vec![hook(format!("{}/json", s.rx.url), Format::Json, None)]);
    let first = Notifier::new(s.store.clone(), s.clock.clone(), cfg.clone()).unwrap();
    s.rx.script(&[502]);
    s.store
        .raise_alert(
            AlertKind::ClaimNotSaved,
            Some("cg9"),
            "disk full",
            s.clock.now(),
        )
        .unwrap();
    assert_eq!(first.tick().await.unwrap().retried, 1);
    drop(first);
    // The next process: same store, a new notifier.
    let store = Store::open(&Store::path_in(s._dir.path())).unwrap();
    let second = Notifier::new(store, s.clock.clone(), cfg).unwrap();
    s.clock.advance(Duration::from_secs(2));
    assert_eq!(second.tick().await.unwrap().delivered, 1);
    let hits = s.rx.wait_for(2, WAIT).await;
    assert_eq!(hits[0].body, hits[1].body, "the same message");
    assert_eq!(hits[1].json()["subject"], "cg9");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_sent_to_nobody_does_not_suppress_the_next_once_a_webhook_is_configured() {
    let s = setup().await;
    let none = Notifier::new(s.store.clone(), s.clock.clone(), quiet(vec![])).unwrap();
    s.store
        .raise_alert(AlertKind::DeviceAttention, None, "8 %", s.clock.now())
        .unwrap();
    none.tick().await.unwrap();
    // The operator adds a webhook and restarts within the dedup window.
    let cfg = quiet(vec![hook(format!("{}/json", s.rx.url), Format::Json, None)]);
    let with = Notifier::new(s.store.clone(), s.clock.clone(), cfg).unwrap();
    s.clock.advance(Duration::from_secs(60));
    s.store
        .raise_alert(AlertKind::DeviceAttention, None, "7 %", s.clock.now())
        .unwrap();
    assert_eq!(with.tick().await.unwrap().delivered, 1);
    let hits = s.rx.wait_for(1, WAIT).await;
    assert!(hits[0].json()["text"].as_str().unwrap().contains("7 %"));
}

/// A webhook the operator saves on the console (`Store::set_operator_webhooks_json`) is
/// used by the running notifier from its next tick — no restart — beside the configured
/// one; removed, its pending delivery is given up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_saved_on_the_console_is_used_without_a_restart() {
    let s = setup().await;
    let n = Notifier::new(s.store.clone(), s.clock.clone(), quiet(Vec::new())).unwrap();
    s.store
        .raise_alert(AlertKind::LowDisk, None, "1.2 GB free", s.clock.now())
        .unwrap();
    n.tick().await.unwrap();
    assert!(s.rx.hits().is_empty(), "no webhook yet: nothing sent");
    let table =
        json!([{"url": format!("{}/wecom/send?key=CONSOLE-KEY-1", s.rx.url), "format": "wecom"}]);
    s.store
        .set_operator_webhooks_json(Some(&table.to_string()))
        .unwrap();
    s.store
        .raise_alert(
            AlertKind::DeviceAttention,
            None,
            "the phone asks for its PIN",
            s.clock.now(),
        )
        .unwrap();
    n.tick().await.unwrap();
    let hits = s.rx.wait_for(1, WAIT).await;
    assert!(hits[0].path.starts_with("/wecom/send"), "{}", hits[0].path);
    assert!(hits[0].json()["text"]["content"]
        .as_str()
        .unwrap()
        .contains("the phone asks for its PIN"));
    // Removed on the console: nothing more goes there.
    s.store.set_operator_webhooks_json(None).unwrap();
    s.clock.advance(Duration::from_secs(60 * 60));
    s.store
        .raise_alert(AlertKind::ClockSkew, None, "gone", s.clock.now())
        .unwrap();
    n.tick().await.unwrap();
    assert_eq!(s.rx.hits().len(), 1);
}
