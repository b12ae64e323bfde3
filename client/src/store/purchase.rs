//! The irreversible mark of a purchase run: the plain mark, and the guarded one with its
//! confirmation snapshot that purchase flows use.
//!
//! **Invariant (never submit twice):** [`Store::mark_irreversible_once`] is the only way
//! a purchase flow gets permission to tap 提交订单. It commits, in one `BEGIN IMMEDIATE`
//! transaction with `synchronous=FULL`, the mark and the snapshot of what was confirmed
//! — and refuses when this run already has an outcome, or when any run of any claim of
//! the same remote task, this run included, already carries a mark (an earlier attempt
//! may have ordered). A mark is asked for once per run: a second ask is a bug or a replay
//! and is answered `Refused`, never a second permission to submit. Crash recovery only
//! reconciles a marked run; it never asks for the mark.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::db::{ts, Store};
use super::error::{Result, StoreError};

/// The answer of [`Store::mark_irreversible_once`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MarkOutcome {
    /// Committed durably; the submit tap may happen now. `at` is the stored time.
    Marked { at: String },
    /// Not marked by this call: the tap must not happen. Also the answer when this very
    /// run is already marked (the first mark and its snapshot stay as they were).
    Refused { reason: String },
}

impl Store {
    /// Sets the irreversible mark of a run, committed with `synchronous=FULL` so it
    /// survives a power loss: after this returns, a crash must never lead to a second
    /// order tap (contract §1.1). Setting it twice keeps the first time.
    pub fn mark_irreversible(&self, run_id: i64, at: DateTime<Utc>) -> Result<()> {
        self.durable(|tx| {
            let n = tx.execute(
                "UPDATE task_runs SET irreversible_action_at = COALESCE(irreversible_action_at, ?2)
                 WHERE id = ?1",
                params![run_id, ts(at)],
            )?;
            if n == 0 {
                return Err(StoreError::NotFound(format!("run {run_id}")));
            }
            Ok(())
        })
    }

    /// Sets the irreversible mark of a purchase run together with its confirmation
    /// snapshot (JSON), durably, unless a run of the same remote task (this one
    /// included) already has a mark or this run already has an outcome. Asking again for
    /// a run that is already marked answers `Refused` and keeps the first time and
    /// snapshot: `Marked` is answered once per run, so it can never permit a second
    /// submit tap.
    pub fn mark_irreversible_once(
        &self,
        run_id: i64,
        at: DateTime<Utc>,
        snapshot: &str,
    ) -> Result<MarkOutcome> {
        self.durable(|tx| {
            let row: Option<(String, Option<String>, Option<String>)> = tx
                .query_row(
                    "SELECT t.remote_task_id, r.irreversible_action_at, r.outcome
                     FROM task_runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = ?1",
                    [run_id],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .optional()?;
            let Some((remote, mark, outcome)) = row else {
                return Err(StoreError::NotFound(format!("run {run_id}")));
            };
            if let Some(first) = mark {
                return Ok(MarkOutcome::Refused {
                    reason: format!("run {run_id} already carries its irreversible mark ({first})"),
                });
            }
            if let Some(o) = outcome {
                return Ok(MarkOutcome::Refused {
                    reason: format!("run {run_id} already has an outcome ({o})"),
                });
            }
            let earlier: Option<(String, String)> = tx
                .query_row(
                    "SELECT r.attempt_id, r.irreversible_action_at
                     FROM task_runs r JOIN tasks t ON t.id = r.task_id
                     WHERE t.remote_task_id = ?1 AND r.id <> ?2
                       AND r.irreversible_action_at IS NOT NULL
                     ORDER BY r.id LIMIT 1",
                    params![remote, run_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            if let Some((attempt, when)) = earlier {
                return Ok(MarkOutcome::Refused {
                    reason: format!(
                        "attempt {attempt} of task {remote} already passed its irreversible mark at {when}"
                    ),
                });
            }
            let stamp = ts(at);
            tx.execute(
                "UPDATE task_runs SET irreversible_action_at = ?2, purchase_snapshot = ?3
                 WHERE id = ?1",
                params![run_id, stamp, snapshot],
            )?;
            Ok(MarkOutcome::Marked { at: stamp })
        })
    }

    /// Records durably (`synchronous=FULL`), before the spec sheet's 确定 / 立即购买 is
    /// tapped, that a tap which should only open 确认订单 is about to go out: the run's
    /// purchase snapshot is set without a mark. Crash recovery of an unmarked run that
    /// carries one reports `manual_review ORDER_PLACED_UNCONFIRMED` (the 确定 may have
    /// led to a cashier), never "nothing was submitted"; the mark, when it comes, replaces
    /// the snapshot. `false` (nothing written) when the run is already marked or has an
    /// outcome.
    pub fn note_proceed(&self, run_id: i64, snapshot: &str) -> Result<bool> {
        self.durable(|tx| {
            let n = tx.execute(
                "UPDATE task_runs SET purchase_snapshot = ?2
                 WHERE id = ?1 AND irreversible_action_at IS NULL AND outcome IS NULL",
                params![run_id, snapshot],
            )?;
            Ok(n == 1)
        })
    }

    /// The order numbers this client reported — or stored in its outbox to report — for
    /// tasks other than `remote_task_id`: reconciliation never adopts one of them for this
    /// task. Read from the bodies as they go on the wire: a result's
    /// `purchase.order_sn`, and every order a failure names — its `diagnostics.order_sn`
    /// (a `manual_review` such as `PAYMENT_OFFER_SHOWN` or `ORDER_PLACED_UNCONFIRMED`
    /// naming the order it found) and each of its `diagnostics.candidates` (the fitting
    /// orders it read). A failure of another task was recorded before this task started
    /// (one task at a time per phone and store), so every order it names existed before
    /// this task's submit: none can be this task's. A body that does not parse is skipped.
    pub fn order_sns_of_other_tasks(&self, remote_task_id: &str) -> Result<BTreeSet<String>> {
        let conn = self.lock();
        let mut st = conn.prepare("SELECT kind, body FROM outbox WHERE remote_task_id <> ?1")?;
        let rows = st.query_map([remote_task_id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
        })?;
        let mut out = BTreeSet::new();
        for row in rows {
            let (kind, body) = row?;
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else {
                continue;
            };
            let mut named: Vec<&serde_json::Value> = Vec::new();
            if kind == "result" {
                named.push(&v["purchase"]["order_sn"]);
            } else {
                let d = &v["diagnostics"];
                named.push(&d["order_sn"]);
                if let Some(c) = d["candidates"].as_array() {
                    named.extend(c.iter().map(|o| &o["order_sn"]));
                }
            }
            out.extend(
                named
                    .into_iter()
                    .filter_map(|s| s.as_str())
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            );
        }
        Ok(out)
    }

    /// The times of the irreversible marks (the live orders placed, for pacing)
    /// after `since`, oldest first. Marks are stored in one UTC format, so the text
    /// comparison is the time comparison; a value that does not parse is skipped.
    pub fn order_marks_since(&self, since: DateTime<Utc>) -> Result<Vec<DateTime<Utc>>> {
        let conn = self.lock();
        let mut st = conn.prepare(
            "SELECT irreversible_action_at FROM task_runs
             WHERE irreversible_action_at IS NOT NULL AND irreversible_action_at > ?1
             ORDER BY irreversible_action_at",
        )?;
        let rows = st.query_map([ts(since)], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for t in rows {
            if let Ok(t) = DateTime::parse_from_rfc3339(&t?) {
                out.push(t.with_timezone(&Utc));
            }
        }
        Ok(out)
    }

    /// Runs `f` at a safe point for money: no run carries an irreversible mark without
    /// its recorded outcome (no purchase is between its mark and its result). `f` runs
    /// under the store's connection lock, so no mark can be committed while it runs —
    /// the second Ctrl-C / SIGTERM exits the process here. `None`: not now.
    pub fn at_safe_point<R>(&self, f: impl FnOnce() -> R) -> Result<Option<R>> {
        let conn = self.lock();
        let open: i64 = conn.query_row(
            "SELECT COUNT(*) FROM task_runs
             WHERE irreversible_action_at IS NOT NULL AND outcome IS NULL",
            [],
            |r| r.get(0),
        )?;
        Ok((open == 0).then(f))
    }

    /// The confirmation snapshot stored with a run's mark — or, on a run without a mark,
    /// the note before a spec sheet's 确定 ([`Store::note_proceed`]) — if any.
    pub fn purchase_snapshot(&self, run_id: i64) -> Result<Option<String>> {
        let conn = self.lock();
        Ok(conn
            .query_row(
                "SELECT purchase_snapshot FROM task_runs WHERE id = ?1",
                [run_id],
                |r| r.get::<_, Option<String>>(0),
            )
            .optional()?
            .flatten())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;
    use cmautobuy_contract::Task;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 30, 8, 0, 0).unwrap()
    }

    fn task(id: &str) -> Task {
        serde_json::from_value(serde_json::json!({
            "id": id, "type": "purchase", "execution_mode": "live", "version": 1, "priority": 0,
            "payload": {"goods_id": "1", "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=1",
                        "options": {"color": "黑色"}, "quantity": 1, "max_price_cent": 100}
        }))
        .unwrap()
    }

    #[test]
    fn a_second_mark_for_the_same_remote_task_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("c.db")).unwrap();
        let a = s.save_claimed_task(&task("cg1"), "{}", t0()).unwrap();
        let r1 = s.start_run(a, t0()).unwrap();
        assert!(matches!(
            s.mark_irreversible_once(r1.id, t0(), "{\"q\":1}").unwrap(),
            MarkOutcome::Marked { .. }
        ));
        // The same run again: refused (never a second permission to submit); the first
        // time and snapshot are kept.
        let again = s
            .mark_irreversible_once(r1.id, t0() + chrono::Duration::seconds(5), "{}")
            .unwrap();
        let MarkOutcome::Refused { reason } = again else {
            panic!("a second ask for the same run must be refused, got {again:?}");
        };
        assert!(
            reason.contains("already carries its irreversible mark"),
            "{reason}"
        );
        assert_eq!(
            s.run(r1.id).unwrap().irreversible_action_at.as_deref(),
            Some(ts(t0()).as_str())
        );
        assert_eq!(
            s.purchase_snapshot(r1.id).unwrap().as_deref(),
            Some("{\"q\":1}")
        );
        // And again, later still: the answer does not change.
        assert!(matches!(
            s.mark_irreversible_once(r1.id, t0() + chrono::Duration::seconds(60), "{}")
                .unwrap(),
            MarkOutcome::Refused { .. }
        ));
        // The same remote task claimed again (a new local row): refused.
        let b = s.save_claimed_task(&task("cg1"), "{}", t0()).unwrap();
        let r2 = s.start_run(b, t0()).unwrap();
        assert!(matches!(
            s.mark_irreversible_once(r2.id, t0(), "{}").unwrap(),
            MarkOutcome::Refused { .. }
        ));
        assert!(s.run(r2.id).unwrap().irreversible_action_at.is_none());
        // Another task is not affected.
        let c = s.save_claimed_task(&task("cg2"), "{}", t0()).unwrap();
        let r3 = s.start_run(c, t0()).unwrap();
        assert!(matches!(
            s.mark_irreversible_once(r3.id, t0(), "{}").unwrap(),
            MarkOutcome::Marked { .. }
        ));
        assert_eq!(s.open_runs(a).unwrap().len(), 1);
    }

    #[test]
    fn a_proceed_note_is_a_snapshot_without_a_mark_and_the_mark_replaces_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("c.db")).unwrap();
        let a = s.save_claimed_task(&task("cg1"), "{}", t0()).unwrap();
        let r = s.start_run(a, t0()).unwrap();
        assert!(s.note_proceed(r.id, "{\"unconfirmed\":1}").unwrap());
        assert_eq!(
            s.purchase_snapshot(r.id).unwrap().as_deref(),
            Some("{\"unconfirmed\":1}")
        );
        let run = s.run(r.id).unwrap();
        assert!(run.irreversible_action_at.is_none());
        // Not a mark: no safe-point hold, no pacing count.
        assert_eq!(s.at_safe_point(|| ()).unwrap(), Some(()));
        assert!(s
            .order_marks_since(t0() - chrono::Duration::hours(1))
            .unwrap()
            .is_empty());
        // The mark still goes through once, and replaces the note.
        assert!(matches!(
            s.mark_irreversible_once(r.id, t0(), "{\"q\":1}").unwrap(),
            MarkOutcome::Marked { .. }
        ));
        assert_eq!(
            s.purchase_snapshot(r.id).unwrap().as_deref(),
            Some("{\"q\":1}")
        );
        // A marked run takes no note.
        assert!(!s.note_proceed(r.id, "{}").unwrap());
        assert_eq!(
            s.purchase_snapshot(r.id).unwrap().as_deref(),
            Some("{\"q\":1}")
        );
    }

    #[test]
    fn order_numbers_of_other_tasks_come_from_their_stored_results() {
        use crate::store::outbox::{OutboxDraft, OutboxKind};
        use crate::store::tasks::TaskState;
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("c.db")).unwrap();
        let put = |remote: &str, kind: OutboxKind, body: serde_json::Value| {
            let id = s.save_claimed_task(&task(remote), "{}", t0()).unwrap();
            let run = s.start_run(id, t0()).unwrap();
            s.record_outcome(
                run.id,
                &OutboxDraft {
                    kind,
                    remote_task_id: remote.into(),
                    method: "POST".into(),
                    path: format!("/api/v1/client/tasks/{remote}/result"),
                    headers: vec![],
                    body: serde_json::to_vec(&body).unwrap(),
                    idempotency_key: format!("{remote}:k"),
                    on_accept: TaskState::Succeeded,
                    outcome: "x".into(),
                },
                t0(),
            )
            .unwrap();
        };
        put(
            "a",
            OutboxKind::Result,
            serde_json::json!({"purchase": {"order_sn": "261130-1"}}),
        );
        put(
            "b",
            OutboxKind::Result,
            serde_json::json!({"purchase": {"order_sn": "261130-2"}}),
        );
        // A collect result and a dry run (no number): none.
        put(
            "c",
            OutboxKind::Result,
            serde_json::json!({"pdd_data": {"goods_id": "1"}}),
        );
        put(
            "d",
            OutboxKind::Result,
            serde_json::json!({"purchase": {"order_sn": null}}),
        );
        // A failure naming the order it found (PAYMENT_OFFER_SHOWN) and the fitting
        // orders it read: every one of them.
        put(
            "e",
            OutboxKind::Failure,
            serde_json::json!({"diagnostics": {"order_sn": "261130-4", "candidates": [{"order_sn": "261130-3"}, {"order_sn": "261130-4"}]}}),
        );
        // A failure that names nothing.
        put(
            "f",
            OutboxKind::Failure,
            serde_json::json!({"diagnostics": {"candidates": []}}),
        );
        let of = |t: &str| {
            s.order_sns_of_other_tasks(t)
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>()
        };
        assert_eq!(of("a"), vec!["261130-2", "261130-3", "261130-4"]);
        assert_eq!(
            of("z"),
            vec!["261130-1", "261130-2", "261130-3", "261130-4"]
        );
        // A task's own failure does not hide its orders from itself.
        assert_eq!(of("e"), vec!["261130-1", "261130-2"]);
    }

    #[test]
    fn irreversible_mark_keeps_the_first_time() {
        use crate::store::test_support;
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let id = s
            .save_claimed_task(&test_support::task("cg1"), "{}", test_support::t0())
            .unwrap();
        let run = s.start_run(id, test_support::t0()).unwrap();
        s.mark_irreversible(run.id, test_support::t0()).unwrap();
        s.mark_irreversible(run.id, test_support::t0() + chrono::Duration::seconds(9))
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
            s.mark_irreversible(999, test_support::t0()),
            Err(StoreError::NotFound(_))
        ));
    }
}
