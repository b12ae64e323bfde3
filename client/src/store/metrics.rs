//! What `/metrics` reads from the store at each scrape: run outcomes by task type
//! (counted by triggers as they are written, over the store's life, so they survive
//! restarts and never go down), the outbox by state, open operator alerts by kind,
//! webhook deliveries by state.

use super::db::Store;
use super::error::Result;

/// One scrape's worth of store counts.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MetricsCounts {
    /// (task type, outcome label such as `succeeded` or `failed:GOODS_MISMATCH`, runs).
    pub runs: Vec<(String, String, i64)>,
    /// (outbox state, items).
    pub outbox: Vec<(String, i64)>,
    /// (alert kind, open alerts).
    pub open_alerts: Vec<(String, i64)>,
    /// (delivery state, deliveries).
    pub webhooks: Vec<(String, i64)>,
}

impl Store {
    pub fn metrics_counts(&self) -> Result<MetricsCounts> {
        let conn = self.lock();
        // Kept by triggers as outcomes are written (migration 5).
        let mut stmt = conn.prepare(
            "SELECT task_type, outcome, n FROM run_outcome_counts ORDER BY task_type, outcome",
        )?;
        let runs = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
            .collect::<std::result::Result<_, _>>()?;
        let pairs = |sql: &str| -> Result<Vec<(String, i64)>> {
            let mut stmt = conn.prepare(sql)?;
            let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        };
        Ok(MetricsCounts {
            runs,
            outbox: pairs("SELECT state, COUNT(*) FROM outbox GROUP BY state ORDER BY state")?,
            open_alerts: pairs(
                "SELECT kind, COUNT(*) FROM operator_alerts WHERE acked_at IS NULL
                 GROUP BY kind ORDER BY kind",
            )?,
            webhooks: pairs(
                "SELECT state, COUNT(*) FROM webhook_deliveries GROUP BY state ORDER BY state",
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::{t0, task};
    use crate::store::{OutboxDraft, OutboxKind, TaskState};

    #[test]
    fn run_outcomes_are_counted_as_they_are_written() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        for (i, label) in ["succeeded", "failed:X", "succeeded"].iter().enumerate() {
            let id = format!("c{i}");
            let local = s.save_claimed_task(&task(&id), "{}", t0()).unwrap();
            let run = s.start_run(local, t0()).unwrap();
            assert!(
                s.metrics_counts()
                    .unwrap()
                    .runs
                    .iter()
                    .map(|r| r.2)
                    .sum::<i64>()
                    == i as i64
            );
            let draft = OutboxDraft {
                kind: OutboxKind::Result,
                remote_task_id: id.clone(),
                method: "POST".into(),
                path: "/x".into(),
                headers: vec![],
                body: b"{}".to_vec(),
                idempotency_key: format!("k{i}"),
                on_accept: TaskState::Succeeded,
                outcome: label.to_string(),
            };
            s.record_outcome(run.id, &draft, t0()).unwrap();
        }
        assert_eq!(
            s.metrics_counts().unwrap().runs,
            vec![
                ("collect".to_string(), "failed:X".to_string(), 1),
                ("collect".to_string(), "succeeded".to_string(), 2)
            ]
        );
    }
}
