//! Counts of tasks and outbox items by state, for `status`.

use super::db::Store;
use super::error::{Result, StoreError};
use super::outbox::OutboxState;
use super::tasks::TaskState;

/// Counts for `status`.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    pub tasks: Vec<(TaskState, i64)>,
    pub outbox: Vec<(OutboxState, i64)>,
}

impl Store {
    pub fn summary(&self) -> Result<Summary> {
        let conn = self.lock();
        let mut tasks = Vec::new();
        let mut stmt = conn.prepare("SELECT state, COUNT(*) FROM tasks GROUP BY state")?;
        for r in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (s, n) = r?;
            let state = TaskState::parse(&s)
                .ok_or_else(|| StoreError::Corrupt(format!("task state {s:?}")))?;
            tasks.push((state, n));
        }
        let mut outbox = Vec::new();
        let mut stmt = conn.prepare("SELECT state, COUNT(*) FROM outbox GROUP BY state")?;
        for r in stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))? {
            let (s, n) = r?;
            outbox.push((OutboxState::parse(&s)?, n));
        }
        Ok(Summary { tasks, outbox })
    }
}
