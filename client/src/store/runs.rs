//! The task_runs table: one row per attempt at a task (`attempt_id`, start time, the
//! irreversible mark once set, the outcome once recorded). The irreversible mark itself
//! is written in `purchase.rs`, the outcome together with its outbox item in
//! `outbox.rs`.

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::db::{ts, Store};
use super::error::{Result, StoreError};

/// A task run (one attempt).
#[derive(Clone, Debug)]
pub struct Run {
    pub id: i64,
    pub task_id: i64,
    pub attempt_id: String,
    pub started_at: String,
    pub irreversible_action_at: Option<String>,
}

/// A [`Run`] from `SELECT id, task_id, attempt_id, started_at, irreversible_action_at`.
fn run_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Run> {
    Ok(Run {
        id: r.get(0)?,
        task_id: r.get(1)?,
        attempt_id: r.get(2)?,
        started_at: r.get(3)?,
        irreversible_action_at: r.get(4)?,
    })
}

impl Store {
    /// Starts an attempt: a new run with a fresh `attempt_id`; the task becomes `running`.
    pub fn start_run(&self, task_id: i64, now: DateTime<Utc>) -> Result<Run> {
        let attempt_id = uuid::Uuid::new_v4().to_string();
        self.durable(|tx| {
            let n = tx.execute(
                "UPDATE tasks SET state = 'running', updated_at = ?2
                 WHERE id = ?1 AND state IN ('claimed','running')",
                params![task_id, ts(now)],
            )?;
            if n == 0 {
                return Err(StoreError::Conflict(format!(
                    "task {task_id} is not claimable for a run"
                )));
            }
            tx.execute(
                "INSERT INTO task_runs (task_id, attempt_id, started_at) VALUES (?1, ?2, ?3)",
                params![task_id, attempt_id, ts(now)],
            )?;
            Ok(Run {
                id: tx.last_insert_rowid(),
                task_id,
                attempt_id: attempt_id.clone(),
                started_at: ts(now),
                irreversible_action_at: None,
            })
        })
    }

    pub fn run(&self, run_id: i64) -> Result<Run> {
        let conn = self.lock();
        conn.query_row(
            "SELECT id, task_id, attempt_id, started_at, irreversible_action_at
             FROM task_runs WHERE id = ?1",
            [run_id],
            run_row,
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("run {run_id}")))
    }

    /// The most recent run of a task, if any.
    pub fn latest_run(&self, task_id: i64) -> Result<Option<Run>> {
        let conn = self.lock();
        Ok(conn
            .query_row(
                "SELECT id, task_id, attempt_id, started_at, irreversible_action_at
                 FROM task_runs WHERE task_id = ?1 ORDER BY id DESC LIMIT 1",
                [task_id],
                run_row,
            )
            .optional()?)
    }

    /// Runs of a task that have no outcome yet (a crash cut them short), oldest first.
    pub fn open_runs(&self, task_id: i64) -> Result<Vec<Run>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id, task_id, attempt_id, started_at, irreversible_action_at
             FROM task_runs WHERE task_id = ?1 AND outcome IS NULL ORDER BY id",
        )?;
        let rows = stmt.query_map([task_id], run_row)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r?);
        }
        Ok(out)
    }
}

/// A purchase run with its irreversible mark and no outcome: its order may exist on the
/// phone and is waiting to be reconciled (the phone went away after the 提交订单 tap, or
/// the process stopped there). [`Store::awaiting_reconcile`].
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AwaitingReconcile {
    pub remote_task_id: String,
    pub attempt_id: String,
    /// The irreversible mark (just before the 提交订单 tap), RFC 3339 UTC.
    pub marked_at: String,
}

impl Store {
    /// Every run that carries an irreversible mark and no outcome, oldest mark first.
    pub fn awaiting_reconcile(&self) -> Result<Vec<AwaitingReconcile>> {
        let conn = self.lock();
        let mut st = conn.prepare(
            "SELECT t.remote_task_id, r.attempt_id, r.irreversible_action_at
             FROM task_runs r JOIN tasks t ON t.id = r.task_id
             WHERE r.irreversible_action_at IS NOT NULL AND r.outcome IS NULL
             ORDER BY r.irreversible_action_at, r.id",
        )?;
        let rows = st.query_map([], |r| {
            Ok(AwaitingReconcile {
                remote_task_id: r.get(0)?,
                attempt_id: r.get(1)?,
                marked_at: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}

/// The outcome labels of evidence runs start with this (`manual_review:CODE`).
const MANUAL_REVIEW_PREFIX: &str = "manual_review:";

impl Store {
    /// The attempts whose artifacts are evidence: a run with its
    /// irreversible mark (a live order) or a `manual_review` outcome, or any run of a task
    /// now in `manual_review`. As `(remote_task_id, attempt_id)`.
    pub fn evidence_attempts(&self) -> Result<Vec<(String, String)>> {
        let conn = self.lock();
        let mut st = conn.prepare(
            "SELECT t.remote_task_id, r.attempt_id FROM task_runs r JOIN tasks t ON t.id = r.task_id
             WHERE r.irreversible_action_at IS NOT NULL
                OR substr(COALESCE(r.outcome, ''), 1, 14) = ?1
                OR t.state = 'manual_review'",
        )?;
        let rows = st.query_map([MANUAL_REVIEW_PREFIX], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Whether one run's artifacts are evidence (see [`Store::evidence_attempts`]).
    pub fn run_is_evidence(&self, run_id: i64) -> Result<bool> {
        let conn = self.lock();
        Ok(conn
            .query_row(
                "SELECT r.irreversible_action_at IS NOT NULL
                        OR substr(COALESCE(r.outcome, ''), 1, 14) = ?2
                        OR t.state = 'manual_review'
                 FROM task_runs r JOIN tasks t ON t.id = r.task_id WHERE r.id = ?1",
                params![run_id, MANUAL_REVIEW_PREFIX],
                |r| r.get::<_, bool>(0),
            )
            .optional()?
            .unwrap_or(false))
    }
}
