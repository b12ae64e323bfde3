//! §5 claim: implicit registration, then at most one task handed out atomically.

use super::claim_history::record_claim;
use super::clients::upsert_client;
use super::clock::now;
use super::tasks::{task_from_row, TaskRow, TASK_COLUMNS};
use crate::db::immediate;
use crate::error::StoreError;
use cmautobuy_contract::{ClientProfile, ExecutionMode, Task, TaskType};
use rusqlite::{params, Connection, OptionalExtension};

/// Atomically hands out at most one task: assigned-to-me before the pool, then priority
/// (high first), then age. Capabilities only narrow what is eligible: a `dry_run` client
/// never sees `live` tasks; unsupported types and schema versions are skipped. `None`
/// means 204.
pub fn claim(
    conn: &mut Connection,
    client_id: &str,
    p: &ClientProfile,
) -> Result<Option<Task>, StoreError> {
    let tx = immediate(conn)?;
    let ts = now();
    upsert_client(&tx, client_id, p, false, &ts)?;
    let collect = p.supported_types.contains(&TaskType::Collect);
    let purchase = p.supported_types.contains(&TaskType::Purchase);
    let live = p.capabilities.purchase_mode == ExecutionMode::Live;
    // Tasks are schema v1; a client that lists versions without 1 cannot run them.
    let schema_ok =
        p.capabilities.schema_versions.is_empty() || p.capabilities.schema_versions.contains(&1);
    if !schema_ok || !(collect || purchase) {
        tx.commit()?;
        return Ok(None);
    }
    // Two index searches (idx_tasks_claim: assigned_client, status, priority DESC,
    // created_at; rowid implicit) instead of one OR: each walks its index range in the
    // wanted order and stops at the first eligible task, however many tasks exist.
    let eligible = "AND ((task_type = 'collect' AND ?2) OR (task_type = 'purchase' AND ?3))
               AND (execution_mode = 'dry_run' OR ?4)
             ORDER BY priority DESC, created_at, rowid LIMIT 1";
    let mine: Option<TaskRow> = tx
        .prepare_cached(&format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE assigned_client = ?1 AND status = 'assigned' {eligible}"
        ))?
        .query_row(params![client_id, collect, purchase, live], task_from_row)
        .optional()?;
    let found = match mine {
        Some(id) => Some(id),
        None => tx
            .prepare_cached(&format!(
                "SELECT {TASK_COLUMNS} FROM tasks WHERE assigned_client IS NULL AND status = 'pending'
                        {eligible}"
            ))?
            .query_row(params![client_id, collect, purchase, live], task_from_row)
            .optional()?,
    };
    let Some(mut row) = found else {
        tx.commit()?;
        return Ok(None);
    };
    tx.prepare_cached(
        "UPDATE tasks SET status = 'claimed', assigned_client = ?2, claimed_at = ?3,
            updated_at = ?3 WHERE task_id = ?1",
    )?
    .execute(params![row.task_id, client_id, ts])?;
    row.updated_at = ts.clone();
    record_claim(&tx, &row.task_id, client_id, &ts, row.version)?;
    // Built before the commit: a payload that cannot be read rolls the claim back.
    let task = row.client_task()?;
    tx.commit()?;
    Ok(Some(task))
}
