//! `task_results`: every accepted result and failure (§6.1: several per task, from
//! several clients), with the body exactly as the client sent it.

use super::idempotency::SubmitCtx;
use crate::error::StoreError;
use rusqlite::{params, Connection, Transaction};

/// One `task_results` row. `body` is the submission as received.
#[derive(Debug, Clone)]
pub struct ResultRow {
    pub result_id: String,
    pub kind: String,
    pub client_id: String,
    pub idempotency_key: String,
    pub body: String,
    pub accepted_at: String,
}

/// Stores an accepted submission (`kind`: `result` or `failure`); returns its id
/// (`res-…` / `fail-…`).
pub(super) fn record_result(
    tx: &Transaction<'_>,
    kind: &str,
    ctx: &SubmitCtx,
    ts: &str,
) -> Result<String, StoreError> {
    let prefix = if kind == "result" { "res" } else { "fail" };
    let result_id = format!("{prefix}-{}", uuid::Uuid::new_v4());
    tx.execute(
        "INSERT INTO task_results (result_id, task_id, kind, client_id, idempotency_key, body,
            accepted_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            result_id,
            ctx.task_id,
            kind,
            ctx.client_id,
            ctx.key,
            ctx.raw_body,
            ts
        ],
    )?;
    Ok(result_id)
}

/// A task's results and failures, in acceptance order.
pub(super) fn results_of(conn: &Connection, task_id: &str) -> Result<Vec<ResultRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT result_id, kind, client_id, idempotency_key, body, accepted_at FROM task_results
         WHERE task_id = ?1 ORDER BY accepted_at, rowid",
    )?;
    let rows = stmt
        .query_map([task_id], |r| {
            Ok(ResultRow {
                result_id: r.get(0)?,
                kind: r.get(1)?,
                client_id: r.get(2)?,
                idempotency_key: r.get(3)?,
                body: r.get(4)?,
                accepted_at: r.get(5)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}
