//! The outbox table: every result/failure request exactly as it goes on the wire (minus
//! the token), written in the same durable transaction as the run's outcome
//! ([`Store::record_outcome`]), then sent, retried, parked or accepted. Acceptance gives
//! the task its final state in the same transaction.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::db::{ms_to_time, ts, Store};
use super::error::{Result, StoreError};
use super::tasks::TaskState;

/// `result` or `failure` — which endpoint an outbox item goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutboxKind {
    Result,
    Failure,
}

impl OutboxKind {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxKind::Result => "result",
            OutboxKind::Failure => "failure",
        }
    }
    fn parse(s: &str) -> Result<Self> {
        match s {
            "result" => Ok(OutboxKind::Result),
            "failure" => Ok(OutboxKind::Failure),
            other => Err(StoreError::Corrupt(format!("outbox kind {other:?}"))),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutboxState {
    /// Written, not yet (or not successfully) sent; due at `next_attempt_at`.
    Pending,
    /// A send started and has no answer yet. After a crash this is resent like pending.
    Sent,
    /// The Admin answered `accepted: true`.
    Accepted,
    /// A permanent error: not retried until the operator says so (`outbox retry`).
    Parked,
}

impl OutboxState {
    pub fn as_str(self) -> &'static str {
        match self {
            OutboxState::Pending => "pending",
            OutboxState::Sent => "sent",
            OutboxState::Accepted => "accepted",
            OutboxState::Parked => "parked",
        }
    }
    pub(super) fn parse(s: &str) -> Result<Self> {
        match s {
            "pending" => Ok(OutboxState::Pending),
            "sent" => Ok(OutboxState::Sent),
            "accepted" => Ok(OutboxState::Accepted),
            "parked" => Ok(OutboxState::Parked),
            other => Err(StoreError::Corrupt(format!("outbox state {other:?}"))),
        }
    }
}

/// A request to put in the outbox together with the local outcome.
#[derive(Clone, Debug)]
pub struct OutboxDraft {
    pub kind: OutboxKind,
    pub remote_task_id: String,
    pub method: String,
    pub path: String,
    /// Headers without `Authorization` (decisions §3).
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub idempotency_key: String,
    /// The task's state once the Admin accepts this item.
    pub on_accept: TaskState,
    /// The run's outcome label (e.g. `succeeded`, `failed:GOODS_MISMATCH`).
    pub outcome: String,
}

/// An outbox row.
#[derive(Clone, Debug)]
pub struct OutboxItem {
    pub id: i64,
    pub task_id: i64,
    pub run_id: i64,
    pub kind: OutboxKind,
    pub remote_task_id: String,
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub idempotency_key: String,
    pub on_accept: TaskState,
    pub state: OutboxState,
    pub attempts: u32,
    pub next_attempt_at: DateTime<Utc>,
    pub last_error: Option<String>,
    pub result_id: Option<String>,
    pub created_at: String,
    pub accepted_at: Option<String>,
}

/// What the Admin said when it accepted an outbox item.
#[derive(Clone, Debug)]
pub struct Acceptance {
    pub result_id: Option<String>,
    pub accepted_at: String,
    /// The raw answer body, kept for the record.
    pub response: Vec<u8>,
}

impl Store {
    /// Records a run's outcome and its outbox item in one durable transaction, before the
    /// first send (decisions §3). The task becomes `reporting`. Writing the same
    /// idempotency key twice is a conflict unless the body is identical (then the
    /// existing item is returned).
    pub fn record_outcome(
        &self,
        run_id: i64,
        draft: &OutboxDraft,
        now: DateTime<Utc>,
    ) -> Result<i64> {
        let headers = serde_json::to_string(&draft.headers)
            .map_err(|e| StoreError::Corrupt(format!("headers: {e}")))?;
        self.durable(|tx| {
            let existing: Option<(i64, Vec<u8>)> = tx
                .query_row(
                    "SELECT id, body FROM outbox WHERE idempotency_key = ?1",
                    [&draft.idempotency_key],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            if let Some((id, body)) = existing {
                if body == draft.body {
                    return Ok(id);
                }
                return Err(StoreError::Conflict(format!(
                    "outbox key {} already holds a different body",
                    draft.idempotency_key
                )));
            }
            let task_id: i64 = tx
                .query_row(
                    "SELECT task_id FROM task_runs WHERE id = ?1",
                    [run_id],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))?;
            tx.execute(
                "UPDATE task_runs SET outcome = ?2, finished_at = ?3 WHERE id = ?1",
                params![run_id, draft.outcome, ts(now)],
            )?;
            tx.execute(
                "UPDATE tasks SET state = 'reporting', updated_at = ?2 WHERE id = ?1",
                params![task_id, ts(now)],
            )?;
            tx.execute(
                "INSERT INTO outbox (task_id, run_id, kind, remote_task_id, method, path, headers,
                                     body, idempotency_key, on_accept_state, state, attempts,
                                     next_attempt_at, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, 'pending', 0, ?11, ?12, ?12)",
                params![
                    task_id,
                    run_id,
                    draft.kind.as_str(),
                    draft.remote_task_id,
                    draft.method,
                    draft.path,
                    headers,
                    draft.body,
                    draft.idempotency_key,
                    draft.on_accept.as_str(),
                    now.timestamp_millis(),
                    ts(now)
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    /// The oldest pending or in-flight item due at `now`, if any.
    pub fn next_due_outbox(&self, now: DateTime<Utc>) -> Result<Option<OutboxItem>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(&format!(
            "{OUTBOX_SELECT} WHERE state IN ('pending','sent') AND next_attempt_at <= ?1
             ORDER BY next_attempt_at, id LIMIT 1"
        ))?;
        let mut rows = stmt.query_map([now.timestamp_millis()], outbox_row)?;
        match rows.next() {
            Some(r) => Ok(Some(r??)),
            None => Ok(None),
        }
    }

    /// When the next pending item becomes due (`None`: nothing pending).
    pub fn next_outbox_wakeup(&self) -> Result<Option<DateTime<Utc>>> {
        let conn = self.lock();
        let ms: Option<i64> = conn.query_row(
            "SELECT MIN(next_attempt_at) FROM outbox WHERE state IN ('pending','sent')",
            [],
            |r| r.get(0),
        )?;
        Ok(ms.map(ms_to_time))
    }

    /// Items still to deliver (pending or in flight).
    pub fn outbox_undelivered_count(&self) -> Result<i64> {
        let conn = self.lock();
        Ok(conn.query_row(
            "SELECT COUNT(*) FROM outbox WHERE state IN ('pending','sent')",
            [],
            |r| r.get(0),
        )?)
    }

    pub fn outbox_item(&self, id: i64) -> Result<OutboxItem> {
        let conn = self.lock();
        let mut stmt = conn.prepare(&format!("{OUTBOX_SELECT} WHERE id = ?1"))?;
        let mut rows = stmt.query_map([id], outbox_row)?;
        match rows.next() {
            Some(r) => r?,
            None => Err(StoreError::NotFound(format!("outbox item {id}"))),
        }
    }

    /// Outbox items, newest last; `all = false` hides accepted ones.
    pub fn outbox_list(&self, all: bool) -> Result<Vec<OutboxItem>> {
        let conn = self.lock();
        let filter = if all { "" } else { "WHERE state != 'accepted'" };
        let mut stmt = conn.prepare(&format!("{OUTBOX_SELECT} {filter} ORDER BY id"))?;
        let rows = stmt.query_map([], outbox_row)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r??);
        }
        Ok(out)
    }

    /// Notes that a send is starting (state `sent`, one more attempt). Returns the
    /// attempt number (1 for the first send).
    pub fn outbox_mark_sending(&self, id: i64, now: DateTime<Utc>) -> Result<u32> {
        self.immediate(|tx| {
            let n = tx.execute(
                "UPDATE outbox SET state = 'sent', attempts = attempts + 1, updated_at = ?2
                 WHERE id = ?1 AND state IN ('pending','sent')",
                params![id, ts(now)],
            )?;
            if n == 0 {
                return Err(StoreError::Conflict(format!(
                    "outbox item {id} is not sendable"
                )));
            }
            let attempts: i64 =
                tx.query_row("SELECT attempts FROM outbox WHERE id = ?1", [id], |r| {
                    r.get(0)
                })?;
            Ok(attempts.clamp(0, u32::MAX as i64) as u32)
        })
    }

    /// The Admin accepted the item: the item is `accepted` and its task takes its final
    /// state, in one transaction.
    pub fn outbox_accepted(&self, id: i64, ack: &Acceptance, now: DateTime<Utc>) -> Result<()> {
        self.durable(|tx| {
            let (task_id, on_accept): (i64, String) = tx
                .query_row(
                    "SELECT task_id, on_accept_state FROM outbox WHERE id = ?1",
                    [id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?
                .ok_or_else(|| StoreError::NotFound(format!("outbox item {id}")))?;
            tx.execute(
                "UPDATE outbox SET state = 'accepted', result_id = ?2, response = ?3,
                        accepted_at = ?4, updated_at = ?5, last_error = NULL
                 WHERE id = ?1",
                params![id, ack.result_id, ack.response, ack.accepted_at, ts(now)],
            )?;
            tx.execute(
                "UPDATE tasks SET state = ?2, updated_at = ?3 WHERE id = ?1",
                params![task_id, on_accept, ts(now)],
            )?;
            Ok(())
        })
    }

    /// A transient failure: back to `pending`, due again at `at`.
    pub fn outbox_retry_at(
        &self,
        id: i64,
        at: DateTime<Utc>,
        error: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE outbox SET state = 'pending', next_attempt_at = ?2, last_error = ?3,
                    updated_at = ?4
             WHERE id = ?1 AND state IN ('pending','sent')",
            params![id, at.timestamp_millis(), error, ts(now)],
        )?;
        Ok(())
    }

    /// A permanent failure: parked for the operator; never retried automatically.
    pub fn outbox_park(&self, id: i64, error: &str, now: DateTime<Utc>) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE outbox SET state = 'parked', last_error = ?2, updated_at = ?3
             WHERE id = ?1 AND state IN ('pending','sent')",
            params![id, error, ts(now)],
        )?;
        Ok(())
    }

    /// The operator's `outbox retry`: parked items (one, or all with `None`) become due
    /// now, with their attempt counter reset. Returns how many were requeued.
    pub fn outbox_requeue(&self, id: Option<i64>, now: DateTime<Utc>) -> Result<usize> {
        let conn = self.lock();
        let n = match id {
            Some(id) => conn.execute(
                "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?2,
                        updated_at = ?3
                 WHERE id = ?1 AND state IN ('parked','pending','sent')",
                params![id, now.timestamp_millis(), ts(now)],
            )?,
            None => conn.execute(
                "UPDATE outbox SET state = 'pending', attempts = 0, next_attempt_at = ?1,
                        updated_at = ?2
                 WHERE state = 'parked'",
                params![now.timestamp_millis(), ts(now)],
            )?,
        };
        Ok(n)
    }
}

/// The `headers` of a compacted row (an uncompacted row always has at least
/// `X-Client-Id` and `Idempotency-Key`).
pub const COMPACTED_HEADERS: &str = "[]";

impl Store {
    /// Outbox compaction: accepted rows last updated (accepted) before
    /// `older_than` lose their request body, headers and response — at most `limit` rows
    /// per call, oldest first. What stays: the row itself (task, run, kind, remote task
    /// id, path, state `accepted`), its idempotency key, `result_id` and acceptance time
    /// — the record that the Admin acknowledged that key — and, for results, the order
    /// number the body carried (the body becomes `{"compacted":true,"purchase":
    /// {"order_sn":…}}`), which [`Store::order_sns_of_other_tasks`] still reads (no
    /// borrowed order). Rows not yet accepted (pending, sent, parked) are never touched:
    /// nothing the Admin has not acknowledged is lost. Returns how many were compacted.
    pub fn compact_outbox(&self, older_than: DateTime<Utc>, limit: usize) -> Result<usize> {
        self.immediate(|tx| {
            let rows: Vec<(i64, String, Vec<u8>)> = {
                let mut st = tx.prepare(
                    "SELECT id, kind, body FROM outbox
                     WHERE state = 'accepted' AND updated_at < ?1 AND headers <> ?2
                     ORDER BY id LIMIT ?3",
                )?;
                let it = st.query_map(
                    params![ts(older_than), COMPACTED_HEADERS, limit as i64],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )?;
                it.collect::<std::result::Result<_, _>>()?
            };
            for (id, kind, body) in &rows {
                let order_sn = (kind == "result")
                    .then(|| serde_json::from_slice::<serde_json::Value>(body).ok())
                    .flatten()
                    .and_then(|v| v["purchase"]["order_sn"].as_str().map(str::to_string))
                    .filter(|s| !s.is_empty());
                let kept = match order_sn {
                    Some(sn) => {
                        serde_json::json!({"compacted": true, "purchase": {"order_sn": sn}})
                    }
                    None => serde_json::json!({"compacted": true}),
                };
                tx.execute(
                    "UPDATE outbox SET body = ?2, headers = ?3, response = NULL WHERE id = ?1",
                    params![id, kept.to_string().into_bytes(), COMPACTED_HEADERS],
                )?;
            }
            Ok(rows.len())
        })
    }
}

const OUTBOX_SELECT: &str = "SELECT id, task_id, run_id, kind, remote_task_id, method, path,
        headers, body, idempotency_key, on_accept_state, state, attempts, next_attempt_at,
        last_error, result_id, created_at, accepted_at FROM outbox";

fn outbox_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<OutboxItem>> {
    let kind: String = r.get(3)?;
    let headers: String = r.get(7)?;
    let on_accept: String = r.get(10)?;
    let state: String = r.get(11)?;
    let attempts: i64 = r.get(12)?;
    let build = || -> Result<OutboxItem> {
        Ok(OutboxItem {
            id: r.get(0)?,
            task_id: r.get(1)?,
            run_id: r.get(2)?,
            kind: OutboxKind::parse(&kind)?,
            remote_task_id: r.get(4)?,
            method: r.get(5)?,
            path: r.get(6)?,
            headers: serde_json::from_str(&headers)
                .map_err(|e| StoreError::Corrupt(format!("outbox headers: {e}")))?,
            body: r.get(8)?,
            idempotency_key: r.get(9)?,
            on_accept: TaskState::parse(&on_accept)
                .ok_or_else(|| StoreError::Corrupt(format!("on_accept_state {on_accept:?}")))?,
            state: OutboxState::parse(&state)?,
            attempts: attempts.clamp(0, u32::MAX as i64) as u32,
            next_attempt_at: ms_to_time(r.get(13)?),
            last_error: r.get(14)?,
            result_id: r.get(15)?,
            created_at: r.get(16)?,
            accepted_at: r.get(17)?,
        })
    };
    Ok(build())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::{t0, task};

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
    fn compaction_keeps_the_key_and_order_number_and_never_touches_undelivered_rows() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let day = chrono::Duration::days(1);
        let ack = Acceptance {
            result_id: Some("r".into()),
            accepted_at: "2026-01-01T00:00:05Z".into(),
            response: b"{\"accepted\":true}".to_vec(),
        };
        let item = |remote: &str, body: &[u8], accept_at: Option<DateTime<Utc>>| {
            let id = s.save_claimed_task(&task(remote), "{}", t0()).unwrap();
            let run = s.start_run(id, t0()).unwrap();
            let key = format!("{remote}:k");
            let ob = s
                .record_outcome(run.id, &draft(remote, &key, body), t0())
                .unwrap();
            if let Some(at) = accept_at {
                s.outbox_mark_sending(ob, at).unwrap();
                s.outbox_accepted(ob, &ack, at).unwrap();
            }
            ob
        };
        let order = br#"{"purchase":{"order_sn":"261130-77","total_cent":100},"pdd_data":{"x":1}}"#;
        let old_order = item("old-order", order, Some(t0()));
        let old_collect = item("old-collect", b"{\"pdd_data\":{\"big\":1}}", Some(t0()));
        let recent = item("recent", b"{\"a\":1}", Some(t0() + day * 40));
        let pending = item("pending", b"{\"a\":2}", None);
        let now = t0() + day * 45;
        let n = s.compact_outbox(now - day * 30, 100).unwrap();
        assert_eq!(n, 2);
        let o = s.outbox_item(old_order).unwrap();
        assert_eq!(o.state, OutboxState::Accepted);
        assert_eq!(o.idempotency_key, "old-order:k");
        assert_eq!(o.result_id.as_deref(), Some("r"));
        assert!(o.headers.is_empty());
        assert_eq!(
            o.body,
            br#"{"compacted":true,"purchase":{"order_sn":"261130-77"}}"#
        );
        // No borrowed order: the number is still known after compaction.
        assert!(s
            .order_sns_of_other_tasks("another")
            .unwrap()
            .contains("261130-77"));
        assert_eq!(
            s.outbox_item(old_collect).unwrap().body,
            br#"{"compacted":true}"#
        );
        // Recent and undelivered rows are untouched.
        assert_eq!(s.outbox_item(recent).unwrap().body, b"{\"a\":1}");
        let p = s.outbox_item(pending).unwrap();
        assert_eq!(
            (p.state, p.body.as_slice()),
            (OutboxState::Pending, &b"{\"a\":2}"[..])
        );
        // Idempotent: nothing left to compact.
        assert_eq!(
            s.compact_outbox(now, 100).unwrap(),
            1,
            "only `recent` is old enough now"
        );
        assert_eq!(s.compact_outbox(now, 100).unwrap(), 0);
        // Parked rows are never compacted, however old.
        s.outbox_mark_sending(pending, t0()).unwrap();
        s.outbox_park(pending, "HTTP 422", t0()).unwrap();
        assert_eq!(s.compact_outbox(now + day * 400, 100).unwrap(), 0);
        assert_eq!(s.outbox_item(pending).unwrap().body, b"{\"a\":2}");
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
}
