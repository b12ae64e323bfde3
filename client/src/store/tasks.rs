//! The tasks table: tasks as claimed (the remote id verbatim, type, mode, version, raw
//! payload) and their client-local state (`decisions.md` §4).

use chrono::{DateTime, Utc};
use cmautobuy_contract::Task;
use rusqlite::{params, OptionalExtension};

use super::db::{ts, Store};
use super::error::{Result, StoreError};

/// The 8 client-local task states (`decisions.md` §4). The last five are terminal and
/// mean "reported and accepted by the Admin".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskState {
    Claimed,
    Running,
    Reporting,
    Succeeded,
    Failed,
    ManualReview,
    RetryWait,
    Cancelled,
}

impl TaskState {
    pub const ALL: [TaskState; 8] = [
        TaskState::Claimed,
        TaskState::Running,
        TaskState::Reporting,
        TaskState::Succeeded,
        TaskState::Failed,
        TaskState::ManualReview,
        TaskState::RetryWait,
        TaskState::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Claimed => "claimed",
            TaskState::Running => "running",
            TaskState::Reporting => "reporting",
            TaskState::Succeeded => "succeeded",
            TaskState::Failed => "failed",
            TaskState::ManualReview => "manual_review",
            TaskState::RetryWait => "retry_wait",
            TaskState::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<TaskState> {
        TaskState::ALL.into_iter().find(|t| t.as_str() == s)
    }

    pub fn is_terminal(self) -> bool {
        !matches!(
            self,
            TaskState::Claimed | TaskState::Running | TaskState::Reporting
        )
    }
}

/// A task row.
#[derive(Clone, Debug)]
pub struct StoredTask {
    pub id: i64,
    pub remote_task_id: String,
    pub task_type: String,
    pub execution_mode: String,
    pub version: i64,
    pub priority: i64,
    /// The payload exactly as claimed (JSON text).
    pub payload: String,
    pub state: TaskState,
    pub claimed_at: String,
}

fn task_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Result<StoredTask>> {
    let state: String = r.get(7)?;
    let Some(state) = TaskState::parse(&state) else {
        return Ok(Err(StoreError::Corrupt(format!("task state {state:?}"))));
    };
    Ok(Ok(StoredTask {
        id: r.get(0)?,
        remote_task_id: r.get(1)?,
        task_type: r.get(2)?,
        execution_mode: r.get(3)?,
        version: r.get(4)?,
        priority: r.get(5)?,
        payload: r.get(6)?,
        state,
        claimed_at: r.get(8)?,
    }))
}

impl Store {
    /// Saves a claimed (already validated) task in state `claimed`. `raw_task` is the
    /// task object as received, kept for the record.
    pub fn save_claimed_task(
        &self,
        task: &Task,
        raw_task: &str,
        now: DateTime<Utc>,
    ) -> Result<i64> {
        let payload = serde_json::to_string(&task.payload)
            .map_err(|e| StoreError::Corrupt(format!("payload: {e}")))?;
        self.durable(|tx| {
            tx.execute(
                "INSERT INTO tasks (remote_task_id, task_type, execution_mode, version, priority,
                                    payload, raw_task, state, claimed_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'claimed', ?8, ?8)",
                params![
                    task.id,
                    task.task_type.as_str(),
                    task.execution_mode.as_str(),
                    task.version,
                    task.priority,
                    payload,
                    raw_task,
                    ts(now)
                ],
            )?;
            Ok(tx.last_insert_rowid())
        })
    }

    pub fn task(&self, id: i64) -> Result<StoredTask> {
        let conn = self.lock();
        conn.query_row(
            "SELECT id, remote_task_id, task_type, execution_mode, version, priority, payload,
                    state, claimed_at FROM tasks WHERE id = ?1",
            [id],
            task_row,
        )
        .optional()?
        .ok_or_else(|| StoreError::NotFound(format!("task {id}")))?
    }

    /// Tasks not yet in a terminal state, oldest first.
    pub fn unfinished_tasks(&self) -> Result<Vec<StoredTask>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id, remote_task_id, task_type, execution_mode, version, priority, payload,
                    state, claimed_at FROM tasks
             WHERE state IN ('claimed','running','reporting') ORDER BY id",
        )?;
        let rows = stmt.query_map([], task_row)?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r??);
        }
        Ok(out)
    }

    /// `manual_review` tasks no human has marked reviewed yet, newest first: (local id,
    /// remote task id, type, updated at).
    pub fn unreviewed_manual_review(
        &self,
        limit: usize,
    ) -> Result<Vec<(i64, String, String, String)>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT t.id, t.remote_task_id, t.task_type, t.updated_at FROM tasks t
             LEFT JOIN task_reviews r ON r.task_id = t.id
             WHERE t.state = 'manual_review' AND r.task_id IS NULL
             ORDER BY t.updated_at DESC, t.id DESC LIMIT ?1",
        )?;
        let rows = stmt.query_map(params![limit as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Marks a `manual_review` task reviewed by `who`; `false` when it is not one or was
    /// already reviewed.
    pub fn review_task(&self, task_id: i64, who: &str, now: DateTime<Utc>) -> Result<bool> {
        let conn = self.lock();
        let n = conn.execute(
            "INSERT OR IGNORE INTO task_reviews (task_id, reviewed_at, reviewed_by)
             SELECT id, ?2, ?3 FROM tasks WHERE id = ?1 AND state = 'manual_review'",
            params![task_id, ts(now), who],
        )?;
        Ok(n > 0)
    }

    /// The newest `limit` tasks (in `state`, or in any), as (remote task id, type,
    /// state, updated at): the console's recent outcomes and `manual_review` list.
    pub fn recent_tasks(
        &self,
        state: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, String, String, String)>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT remote_task_id, task_type, state, updated_at FROM tasks
             WHERE ?1 IS NULL OR state = ?1 ORDER BY updated_at DESC, id DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![state, limit as i64], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}
