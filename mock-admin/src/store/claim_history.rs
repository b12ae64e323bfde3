//! `task_claims`: the claim history (data model §8) — which clients a task was dispatched
//! to, when, and the version each one holds (what §7.1 checks).

use crate::error::{ApiError, StoreError};
use cmautobuy_contract::AdminErrorCode;
use rusqlite::{params, Connection, OptionalExtension, Transaction};

/// One `task_claims` row.
#[derive(Debug, Clone)]
pub struct ClaimRow {
    pub client_id: String,
    pub claimed_at: String,
    pub task_version: i64,
}

/// Records a claim; a re-claim only refreshes the time (and the version the client now
/// holds, which §7.1 checks).
pub(super) fn record_claim(
    tx: &Transaction<'_>,
    task_id: &str,
    client_id: &str,
    ts: &str,
    version: i64,
) -> Result<(), StoreError> {
    tx.prepare_cached(
        "INSERT INTO task_claims (task_id, client_id, claimed_at, task_version)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(task_id, client_id) DO UPDATE SET claimed_at = excluded.claimed_at,
            task_version = excluded.task_version",
    )?
    .execute(params![task_id, client_id, ts, version])?;
    Ok(())
}

fn claimed_version(
    tx: &Transaction<'_>,
    task_id: &str,
    client_id: &str,
) -> Result<Option<i64>, StoreError> {
    Ok(tx
        .query_row(
            "SELECT task_version FROM task_claims WHERE task_id = ?1 AND client_id = ?2",
            params![task_id, client_id],
            |r| r.get(0),
        )
        .optional()?)
}

/// The version this client claimed; 403 `TASK_NOT_CLAIMED_BY_CLIENT` when the task was
/// never dispatched to it.
pub(super) fn require_claimed(
    tx: &Transaction<'_>,
    task_id: &str,
    client_id: &str,
) -> Result<i64, StoreError> {
    claimed_version(tx, task_id, client_id)?.ok_or_else(|| {
        ApiError::new(
            AdminErrorCode::TaskNotClaimedByClient,
            "this task was never dispatched to this client",
        )
        .with_detail("task_id", task_id)
        .into()
    })
}

/// A task's claims, oldest first.
pub(super) fn claims_of(conn: &Connection, task_id: &str) -> Result<Vec<ClaimRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT client_id, claimed_at, task_version FROM task_claims WHERE task_id = ?1
         ORDER BY claimed_at, client_id",
    )?;
    let rows = stmt
        .query_map([task_id], |r| {
            Ok(ClaimRow {
                client_id: r.get(0)?,
                claimed_at: r.get(1)?,
                task_version: r.get(2)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}
