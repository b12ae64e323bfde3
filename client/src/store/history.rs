//! What the console's 历史 History pages read: tasks newest first,
//! paged by local id, with their attempts' count, the last outcome, the order numbers
//! reported, the failure codes and the newest failure as reported (its
//! `diagnostics.operator` is the reason the pages show); a task's attempts with each
//! one's report as sent (result or failure); an attempt by its id; and the outcomes
//! counted since a time (the phone cards' "today").

use rusqlite::{params, OptionalExtension};

use super::db::Store;
use super::error::Result;

/// A task as the history list shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryTask {
    pub id: i64,
    pub remote_task_id: String,
    pub task_type: String,
    pub execution_mode: String,
    /// The local state (`succeeded`, `failed`, `manual_review`, …).
    pub state: String,
    pub claimed_at: String,
    pub updated_at: String,
    pub attempts: i64,
    /// The last run's outcome label (`succeeded`, `failed:CODE`, …).
    pub last_outcome: Option<String>,
    /// `purchase.order_sn` of every result reported for this task.
    pub order_numbers: Vec<String>,
    /// `error.code` of every failure reported for this task, oldest first.
    pub codes: Vec<String>,
    /// The newest failure reported for this task, as sent (JSON text); `None` when none
    /// was, or its body was compacted away.
    pub last_failure: Option<String>,
}

/// A run's report as it went to the Admin: `result` or `failure`, and the body (JSON
/// text; compacted rows keep none).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryReport {
    pub kind: String,
    pub body: String,
}

/// Runs that ended since a time, by outcome (the console's "today" per phone).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DayCounts {
    pub succeeded: u32,
    pub failed: u32,
    pub manual_review: u32,
    pub retry_wait: u32,
}

/// An attempt (a task run) as the history shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HistoryRun {
    pub id: i64,
    pub task_id: i64,
    pub remote_task_id: String,
    pub attempt_id: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub irreversible_action_at: Option<String>,
    pub outcome: Option<String>,
    /// What the run reported (its newest outbox row).
    pub report: Option<HistoryReport>,
}

/// A task's latest outcome as `status` lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct RecentOutcome {
    pub remote_task_id: String,
    pub task_type: String,
    /// The local state (`reporting` until the Admin accepted the outcome).
    pub state: String,
    pub updated_at: String,
    /// The last run's outcome label (`succeeded`, `failed:CODE`, …).
    pub outcome: Option<String>,
    /// A failure's `error.code` …
    pub code: Option<String>,
    /// … its `error.message` …
    pub message: Option<String>,
    /// … and its `diagnostics.operator`: the reason and next step it was reported with.
    pub operator: Option<serde_json::Value>,
    /// A result's `purchase.order_sn`.
    pub order_sn: Option<String>,
}

const RUN_COLUMNS: &str = "r.id, r.task_id, t.remote_task_id, r.attempt_id, r.started_at,
     r.finished_at, r.irreversible_action_at, r.outcome,
     (SELECT o.kind FROM outbox o WHERE o.run_id = r.id ORDER BY o.id DESC LIMIT 1),
     (SELECT o.body FROM outbox o WHERE o.run_id = r.id ORDER BY o.id DESC LIMIT 1)";

fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<HistoryRun> {
    Ok(HistoryRun {
        id: r.get(0)?,
        task_id: r.get(1)?,
        remote_task_id: r.get(2)?,
        attempt_id: r.get(3)?,
        started_at: r.get(4)?,
        finished_at: r.get(5)?,
        irreversible_action_at: r.get(6)?,
        outcome: r.get(7)?,
        report: match (
            r.get::<_, Option<String>>(8)?,
            r.get::<_, Option<Vec<u8>>>(9)?,
        ) {
            (Some(kind), Some(body)) if !body.is_empty() => Some(HistoryReport {
                kind,
                body: String::from_utf8_lossy(&body).into_owned(),
            }),
            _ => None,
        },
    })
}

impl Store {
    /// Up to `limit` tasks with a local id below `before` (all when `None`), newest
    /// first.
    pub fn history_tasks(&self, before: Option<i64>, limit: u32) -> Result<Vec<HistoryTask>> {
        let conn = self.lock();
        let mut st = conn.prepare(
            "SELECT t.id, t.remote_task_id, t.task_type, t.execution_mode, t.state,
                    t.claimed_at, t.updated_at,
                    (SELECT COUNT(*) FROM task_runs r WHERE r.task_id = t.id),
                    (SELECT r.outcome FROM task_runs r WHERE r.task_id = t.id
                     ORDER BY r.id DESC LIMIT 1)
             FROM tasks t WHERE ?1 IS NULL OR t.id < ?1 ORDER BY t.id DESC LIMIT ?2",
        )?;
        let rows = st.query_map(params![before, limit], |r| {
            Ok(HistoryTask {
                id: r.get(0)?,
                remote_task_id: r.get(1)?,
                task_type: r.get(2)?,
                execution_mode: r.get(3)?,
                state: r.get(4)?,
                claimed_at: r.get(5)?,
                updated_at: r.get(6)?,
                attempts: r.get(7)?,
                last_outcome: r.get(8)?,
                order_numbers: Vec::new(),
                codes: Vec::new(),
                last_failure: None,
            })
        })?;
        let mut out = Vec::new();
        for t in rows {
            out.push(t?);
        }
        let mut st =
            conn.prepare("SELECT kind, body FROM outbox WHERE task_id = ?1 ORDER BY id")?;
        for t in &mut out {
            let rows = st.query_map([t.id], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
            })?;
            for row in rows {
                let (kind, body) = row?;
                // A body that does not parse (compacted, or not JSON) names nothing.
                let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else {
                    continue;
                };
                if kind == "result" {
                    if let Some(sn) = v["purchase"]["order_sn"].as_str().filter(|s| !s.is_empty()) {
                        t.order_numbers.push(sn.to_string());
                    }
                } else if let Some(code) = v["error"]["code"].as_str() {
                    t.codes.push(code.to_string());
                    t.last_failure = Some(String::from_utf8_lossy(&body).into_owned());
                }
            }
        }
        Ok(out)
    }

    /// The newest `limit` tasks with an outcome recorded (claimed and running ones
    /// aside), newest first, each with what its last outbox item says (a compacted or
    /// unreadable body says nothing).
    pub fn recent_outcomes(&self, limit: u32) -> Result<Vec<RecentOutcome>> {
        let conn = self.lock();
        let mut st = conn.prepare(
            "SELECT t.id, t.remote_task_id, t.task_type, t.state, t.updated_at,
                    (SELECT r.outcome FROM task_runs r WHERE r.task_id = t.id
                     ORDER BY r.id DESC LIMIT 1)
             FROM tasks t WHERE t.state NOT IN ('claimed', 'running')
             ORDER BY t.updated_at DESC, t.id DESC LIMIT ?1",
        )?;
        let rows = st.query_map([limit], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                RecentOutcome {
                    remote_task_id: r.get(1)?,
                    task_type: r.get(2)?,
                    state: r.get(3)?,
                    updated_at: r.get(4)?,
                    outcome: r.get(5)?,
                    code: None,
                    message: None,
                    operator: None,
                    order_sn: None,
                },
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            out.push(row?);
        }
        let mut st = conn
            .prepare("SELECT kind, body FROM outbox WHERE task_id = ?1 ORDER BY id DESC LIMIT 1")?;
        for (id, o) in &mut out {
            let last = st
                .query_row([*id], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, Vec<u8>>(1)?))
                })
                .optional()?;
            let Some((kind, body)) = last else { continue };
            let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else {
                continue;
            };
            let text = |p: &str| v.pointer(p).and_then(|x| x.as_str()).map(str::to_string);
            if kind == "result" {
                o.order_sn = text("/purchase/order_sn").filter(|s| !s.is_empty());
            } else {
                o.code = text("/error/code");
                o.message = text("/error/message");
                o.operator = v.pointer("/diagnostics/operator").cloned();
            }
        }
        Ok(out.into_iter().map(|(_, o)| o).collect())
    }

    /// The task's attempts, oldest first.
    pub fn history_runs(&self, task_id: i64) -> Result<Vec<HistoryRun>> {
        let conn = self.lock();
        let mut st = conn.prepare(&format!(
            "SELECT {RUN_COLUMNS} FROM task_runs r JOIN tasks t ON t.id = r.task_id
             WHERE r.task_id = ?1 ORDER BY r.id"
        ))?;
        let rows = st.query_map([task_id], run_row)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r?);
        }
        Ok(out)
    }

    /// The attempt with this id, if this store has it.
    pub fn history_run(&self, attempt_id: &str) -> Result<Option<HistoryRun>> {
        let conn = self.lock();
        Ok(conn
            .query_row(
                &format!(
                    "SELECT {RUN_COLUMNS} FROM task_runs r JOIN tasks t ON t.id = r.task_id
                     WHERE r.attempt_id = ?1"
                ),
                [attempt_id],
                run_row,
            )
            .optional()?)
    }
}

impl Store {
    /// Runs that ended at or after `since`, by outcome (`succeeded`, `failed:…`,
    /// `manual_review:…`, `retry_wait:…`). Walks the runs newest first and stops at the
    /// first one started a day before `since` (no run lasts that long), so the cost
    /// follows the day's runs, not the store's history.
    pub fn outcomes_since(&self, since: chrono::DateTime<chrono::Utc>) -> Result<DayCounts> {
        let conn = self.lock();
        let since_s = super::db::ts(since);
        let stop = super::db::ts(since - chrono::Duration::days(1));
        let mut st = conn.prepare_cached(
            "SELECT started_at, finished_at, outcome FROM task_runs ORDER BY id DESC",
        )?;
        let mut rows = st.query([])?;
        let mut c = DayCounts::default();
        while let Some(r) = rows.next()? {
            let started: String = r.get(0)?;
            if started < stop {
                break;
            }
            let (Some(finished), Some(outcome)) = (
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
            ) else {
                continue;
            };
            if finished < since_s {
                continue;
            }
            let status = outcome.split(':').next().unwrap_or_default();
            match status {
                "succeeded" => c.succeeded += 1,
                "failed" => c.failed += 1,
                "manual_review" => c.manual_review += 1,
                "retry_wait" => c.retry_wait += 1,
                _ => {}
            }
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{t0, task};
    use super::*;
    use crate::store::{OutboxDraft, OutboxKind, TaskState};

    #[test]
    fn tasks_come_newest_first_in_pages_with_attempts_orders_and_codes() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&dir.path().join("c.db")).unwrap();
        let put = |remote: &str, kind: OutboxKind, body: serde_json::Value, outcome: &str| {
            let id = s.save_claimed_task(&task(remote), "{}", t0()).unwrap();
            let run = s.start_run(id, t0()).unwrap();
            s.record_outcome(
                run.id,
                &OutboxDraft {
                    kind,
                    remote_task_id: remote.into(),
                    method: "POST".into(),
                    path: format!("/api/v1/client/tasks/{remote}/x"),
                    headers: vec![],
                    body: serde_json::to_vec(&body).unwrap(),
                    idempotency_key: format!("{remote}:k"),
                    on_accept: TaskState::Succeeded,
                    outcome: outcome.into(),
                },
                t0(),
            )
            .unwrap();
            (id, run.attempt_id)
        };
        let (a, attempt_a) = put(
            "a",
            OutboxKind::Result,
            serde_json::json!({"purchase": {"order_sn": "261130-1"}}),
            "succeeded",
        );
        let (b, _) = put(
            "b",
            OutboxKind::Failure,
            serde_json::json!({"status": "failed", "error": {"code": "GOODS_MISMATCH"}}),
            "failed:GOODS_MISMATCH",
        );
        let c = s.save_claimed_task(&task("c"), "{}", t0()).unwrap();

        // `status`'s list: outcomes only (not the claimed task), what each says.
        let recent = s.recent_outcomes(10).unwrap();
        let ids: Vec<&str> = recent.iter().map(|o| o.remote_task_id.as_str()).collect();
        assert_eq!(ids, ["b", "a"]);
        assert_eq!(recent[0].code.as_deref(), Some("GOODS_MISMATCH"));
        assert_eq!(recent[0].outcome.as_deref(), Some("failed:GOODS_MISMATCH"));
        assert_eq!(recent[1].order_sn.as_deref(), Some("261130-1"));
        assert_eq!(recent[1].code, None);

        let all = s.history_tasks(None, 50).unwrap();
        assert_eq!(all.iter().map(|t| t.id).collect::<Vec<_>>(), vec![c, b, a]);
        assert_eq!(all[2].order_numbers, vec!["261130-1".to_string()]);
        assert_eq!(all[2].attempts, 1);
        assert_eq!(all[2].last_outcome.as_deref(), Some("succeeded"));
        assert_eq!(all[1].codes, vec!["GOODS_MISMATCH".to_string()]);
        assert_eq!(all[0].attempts, 0);
        assert_eq!(all[0].last_outcome, None);
        // Pages: two, then the rest below the last id seen.
        let first = s.history_tasks(None, 2).unwrap();
        assert_eq!(first.len(), 2);
        let rest = s.history_tasks(Some(first[1].id), 2).unwrap();
        assert_eq!(rest.iter().map(|t| t.id).collect::<Vec<_>>(), vec![a]);

        let runs = s.history_runs(a).unwrap();
        assert_eq!(runs.len(), 1);
        assert_eq!(runs[0].attempt_id, attempt_a);
        assert_eq!(runs[0].remote_task_id, "a");
        let run = s.history_run(&attempt_a).unwrap().unwrap();
        assert_eq!(run.outcome.as_deref(), Some("succeeded"));
        let report = run.report.unwrap();
        assert_eq!(report.kind, "result");
        assert!(report.body.contains("261130-1"), "{}", report.body);
        assert!(all[1]
            .last_failure
            .as_deref()
            .unwrap()
            .contains("GOODS_MISMATCH"));
        assert_eq!(all[2].last_failure, None);
        // Today's counts: both runs ended at t0.
        let c = s.outcomes_since(t0()).unwrap();
        assert_eq!((c.succeeded, c.failed, c.manual_review), (1, 1, 0));
        let later = s
            .outcomes_since(t0() + chrono::Duration::seconds(1))
            .unwrap();
        assert_eq!(later, DayCounts::default());
        assert!(s.history_run("no-such-attempt").unwrap().is_none());
    }
}
