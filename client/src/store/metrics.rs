//! What `/metrics` reads from the store at each scrape: run outcomes by task type
//! (counted over the store's life, so they survive restarts), the outbox by state, open
//! operator alerts by kind, webhook deliveries by state.

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
        let mut stmt = conn.prepare(
            "SELECT t.task_type, r.outcome, COUNT(*) FROM task_runs r
             JOIN tasks t ON t.id = r.task_id WHERE r.outcome IS NOT NULL
             GROUP BY t.task_type, r.outcome ORDER BY t.task_type, r.outcome",
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
