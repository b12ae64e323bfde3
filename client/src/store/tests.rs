use super::*;
use chrono::TimeZone;
use serde_json::json;

fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

fn task(id: &str) -> Task {
    serde_json::from_value(json!({
        "id": id, "type": "collect", "version": 2,
        "payload": {"goods_id": "1", "goods_url": "u"}
    }))
    .unwrap()
}

fn draft(remote: &str, key: &str, body: &[u8]) -> OutboxDraft {
    OutboxDraft {
        kind: OutboxKind::Result,
        remote_task_id: remote.into(),
        method: "POST".into(),
        path: format!("/api/v1/client/tasks/{remote}/result"),
        headers: vec![("Idempotency-Key".into(), key.into())],
        body: body.to_vec(),
        idempotency_key: key.into(),
        on_accept: TaskState::Succeeded,
        outcome: "succeeded".into(),
    }
}

#[test]
fn client_id_is_generated_once_and_reused() {
    let dir = tempfile::tempdir().unwrap();
    let path = Store::path_in(dir.path());
    let a = Store::open(&path).unwrap().client_id().unwrap();
    let b = Store::open(&path).unwrap().client_id().unwrap();
    assert_eq!(a, b);
    assert!(
        a.starts_with("CLIENT-") && a.len() == "CLIENT-".len() + 16,
        "{a}"
    );
}

#[test]
fn connections_are_configured() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&Store::path_in(dir.path())).unwrap();
    let c = s.lock();
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    let fk: i64 = c
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .unwrap();
    let bt: i64 = c
        .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
        .unwrap();
    let uv: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(
        (mode.as_str(), fk, bt, uv),
        ("wal", 1, 5000, schema::MIGRATIONS.len() as i64)
    );
}

#[test]
fn a_missing_table_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = Store::path_in(dir.path());
    drop(Store::open(&path).unwrap());
    let c = Connection::open(&path).unwrap();
    c.execute("DROP TABLE artifacts", []).unwrap();
    drop(c);
    let err = Store::open(&path).unwrap_err();
    assert!(
        matches!(err, StoreError::Schema(ref m) if m.contains("artifacts")),
        "{err}"
    );
}

#[test]
fn a_newer_schema_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = Store::path_in(dir.path());
    drop(Store::open(&path).unwrap());
    Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA user_version = 999")
        .unwrap();
    assert!(matches!(
        Store::open(&path),
        Err(StoreError::NewerSchema { found: 999, .. })
    ));
}

#[test]
fn outcome_and_outbox_commit_together_and_acceptance_finishes_the_task() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&Store::path_in(dir.path())).unwrap();
    let id = s.save_claimed_task(&task("cj/1"), "{}", t0()).unwrap();
    assert_eq!(s.task(id).unwrap().remote_task_id, "cj/1");
    let run = s.start_run(id, t0()).unwrap();
    assert_eq!(s.task(id).unwrap().state, TaskState::Running);
    let ob = s
        .record_outcome(run.id, &draft("cj/1", "k1", b"{\"a\":1}"), t0())
        .unwrap();
    assert_eq!(s.task(id).unwrap().state, TaskState::Reporting);
    // Same key, same bytes: the same item. Same key, other bytes: refused.
    assert_eq!(
        s.record_outcome(run.id, &draft("cj/1", "k1", b"{\"a\":1}"), t0())
            .unwrap(),
        ob
    );
    assert!(matches!(
        s.record_outcome(run.id, &draft("cj/1", "k1", b"{\"a\":2}"), t0()),
        Err(StoreError::Conflict(_))
    ));
    let due = s.next_due_outbox(t0()).unwrap().unwrap();
    assert_eq!(due.body, b"{\"a\":1}");
    assert_eq!(s.outbox_mark_sending(ob, t0()).unwrap(), 1);
    s.outbox_retry_at(ob, t0() + chrono::Duration::seconds(5), "503", t0())
        .unwrap();
    assert!(s.next_due_outbox(t0()).unwrap().is_none());
    assert_eq!(
        s.next_outbox_wakeup().unwrap(),
        Some(t0() + chrono::Duration::seconds(5))
    );
    assert_eq!(s.task(id).unwrap().state, TaskState::Reporting);
    let later = t0() + chrono::Duration::seconds(5);
    assert_eq!(s.outbox_mark_sending(ob, later).unwrap(), 2);
    s.outbox_accepted(
        ob,
        &Acceptance {
            result_id: Some("r1".into()),
            accepted_at: "2026-01-01T00:00:05Z".into(),
            response: b"{}".to_vec(),
        },
        later,
    )
    .unwrap();
    assert_eq!(s.task(id).unwrap().state, TaskState::Succeeded);
    assert_eq!(s.outbox_undelivered_count().unwrap(), 0);
    assert_eq!(s.outbox_list(true).unwrap()[0].state, OutboxState::Accepted);
}

#[test]
fn parked_items_wait_for_the_operator() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&Store::path_in(dir.path())).unwrap();
    let id = s.save_claimed_task(&task("cj2"), "{}", t0()).unwrap();
    let run = s.start_run(id, t0()).unwrap();
    let ob = s
        .record_outcome(run.id, &draft("cj2", "k2", b"x"), t0())
        .unwrap();
    s.outbox_mark_sending(ob, t0()).unwrap();
    s.outbox_park(ob, "HTTP 422", t0()).unwrap();
    assert!(s
        .next_due_outbox(t0() + chrono::Duration::days(1))
        .unwrap()
        .is_none());
    assert_eq!(s.outbox_requeue(None, t0()).unwrap(), 1);
    let item = s.next_due_outbox(t0()).unwrap().unwrap();
    assert_eq!((item.state, item.attempts), (OutboxState::Pending, 0));
}

#[test]
fn irreversible_mark_keeps_the_first_time() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&Store::path_in(dir.path())).unwrap();
    let id = s.save_claimed_task(&task("cg1"), "{}", t0()).unwrap();
    let run = s.start_run(id, t0()).unwrap();
    s.mark_irreversible(run.id, t0()).unwrap();
    s.mark_irreversible(run.id, t0() + chrono::Duration::seconds(9))
        .unwrap();
    assert_eq!(
        s.run(run.id).unwrap().irreversible_action_at.as_deref(),
        Some("2026-01-01T00:00:00.000Z")
    );
    let sync: i64 = s
        .lock()
        .query_row("PRAGMA synchronous", [], |r| r.get(0))
        .unwrap();
    assert_eq!(sync, 1, "back to NORMAL after the FULL commit");
    assert!(matches!(
        s.mark_irreversible(999, t0()),
        Err(StoreError::NotFound(_))
    ));
}

#[test]
fn settings_and_alerts() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&Store::path_in(dir.path())).unwrap();
    let st = s
        .save_settings(&SettingsPatch {
            name: Some("办公室-01".into()),
            token: Some(Secret::new("tok")),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(st.name.as_deref(), Some("办公室-01"));
    assert_eq!(st.token.as_ref().map(Secret::expose), Some("tok"));
    assert!(!format!("{st:?}").contains("tok\""));
    let a = s
        .raise_alert("claim_not_saved", Some("cg9"), "disk", t0())
        .unwrap();
    assert_eq!(s.open_alerts().unwrap().len(), 1);
    assert_eq!(s.ack_alerts(Some(a), t0()).unwrap(), 1);
    assert!(s.open_alerts().unwrap().is_empty());
}

#[test]
fn spec_resolution_keeps_the_first_body() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(&Store::path_in(dir.path())).unwrap();
    let id = s.save_claimed_task(&task("cg3"), "{}", t0()).unwrap();
    let run = s.start_run(id, t0()).unwrap();
    let r = s
        .spec_resolution_begin(run.id, "cg3", "k", "h", b"body", t0())
        .unwrap();
    let again = s
        .spec_resolution_begin(run.id, "cg3", "k", "h", b"body", t0())
        .unwrap();
    assert_eq!(r.id, again.id);
    assert!(matches!(
        s.spec_resolution_begin(run.id, "cg3", "k", "h", b"other", t0()),
        Err(StoreError::Conflict(_))
    ));
    s.add_artifact(
        run.id,
        &ArtifactEntry {
            artifact_id: "a1".into(),
            file: "01-open_goods.xml".into(),
            sha256: "00".into(),
            step: "open_goods".into(),
            taken_at: "2026-01-01T00:00:00Z".into(),
        },
    )
    .unwrap();
    assert_eq!(s.artifacts(run.id).unwrap().len(), 1);
}
