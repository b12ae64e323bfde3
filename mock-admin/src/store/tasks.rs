//! `tasks`: the operator's side of tasks (decisions.md §10) — create from a [`NewTask`],
//! list, detail ([`TaskDetail`]: with claim history and results), cancel, reassign — and
//! the [`TaskRow`] every other family reads.

use super::claim_history::{claims_of, ClaimRow};
use super::clock::now;
use super::products::insert_pending;
use super::results::{results_of, ResultRow};
use crate::db::immediate;
use crate::error::{ApiError, StoreError};
use cmautobuy_contract::{AdminErrorCode, ExecutionMode, OptionMap, Task, TaskType};
use rusqlite::types::Type;
use rusqlite::{params, Connection, OptionalExtension};
use serde_json::Map;

/// One `tasks` row (the columns the mock reads back).
#[derive(Debug, Clone)]
pub struct TaskRow {
    pub task_id: String,
    pub task_type: TaskType,
    pub execution_mode: ExecutionMode,
    pub status: String,
    pub version: i64,
    pub priority: i64,
    pub designated_client: Option<String>,
    pub assigned_client: Option<String>,
    pub claimed_at: Option<String>,
    pub pdd_goods_id: Option<String>,
    pub pdd_goods_url: String,
    /// The payload as the operator gave it (JSON text), handed to claimers.
    pub payload: String,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub finished_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// The latest accepted §6 result body exactly as the client sent it (data model §4.3
    /// "完整的采集提交原文"); `None` until a result arrives.
    pub result_data: Option<String>,
}

pub(super) const TASK_COLUMNS: &str = "task_id, task_type, execution_mode, status, version, \
     priority, designated_client, assigned_client, claimed_at, pdd_goods_id, pdd_goods_url, \
     payload, error_code, error_message, finished_at, created_at, updated_at, result_data";

/// Reads a text column that must be one of an enum's snake_case names.
fn enum_column<T: serde::de::DeserializeOwned>(
    r: &rusqlite::Row<'_>,
    idx: usize,
) -> rusqlite::Result<T> {
    let s: String = r.get(idx)?;
    serde_json::from_value(serde_json::Value::String(s))
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

pub(super) fn task_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TaskRow> {
    Ok(TaskRow {
        task_id: r.get(0)?,
        task_type: enum_column(r, 1)?,
        execution_mode: enum_column(r, 2)?,
        status: r.get(3)?,
        version: r.get(4)?,
        priority: r.get(5)?,
        designated_client: r.get(6)?,
        assigned_client: r.get(7)?,
        claimed_at: r.get(8)?,
        pdd_goods_id: r.get(9)?,
        pdd_goods_url: r.get(10)?,
        payload: r.get(11)?,
        error_code: r.get(12)?,
        error_message: r.get(13)?,
        finished_at: r.get(14)?,
        created_at: r.get(15)?,
        updated_at: r.get(16)?,
        result_data: r.get(17)?,
    })
}

fn load_task(conn: &Connection, task_id: &str) -> Result<Option<TaskRow>, StoreError> {
    Ok(conn
        .query_row(
            &format!("SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = ?1"),
            [task_id],
            task_from_row,
        )
        .optional()?)
}

/// The task, or 404 `TASK_NOT_FOUND`.
pub(super) fn require_task(conn: &Connection, task_id: &str) -> Result<TaskRow, StoreError> {
    load_task(conn, task_id)?.ok_or_else(|| {
        ApiError::new(AdminErrorCode::TaskNotFound, "no task with this id")
            .with_detail("task_id", task_id)
            .into()
    })
}

impl TaskRow {
    /// The task as a client sees it (§4/§5): no Admin-side state.
    pub fn client_task(&self) -> Result<Task, StoreError> {
        Ok(Task {
            id: self.task_id.clone(),
            task_type: self.task_type,
            execution_mode: self.execution_mode,
            version: self.version,
            priority: self.priority,
            payload: serde_json::from_str(&self.payload)?,
            created_at: Some(self.created_at.clone()),
            updated_at: Some(self.updated_at.clone()),
            extra: Map::new(),
        })
    }
}

/// A task to create (decisions.md §10), checked by the HTTP layer.
#[derive(Debug, Clone)]
pub struct NewTask {
    /// The operator's id, or `None` for a generated `cjN` / `cgN`.
    pub id: Option<String>,
    /// `collect` or `purchase`.
    pub task_type: TaskType,
    pub execution_mode: ExecutionMode,
    pub priority: i64,
    /// The operator's chosen client; `None` puts the task in the pool.
    pub designated_client: Option<String>,
    pub goods_id: String,
    pub goods_url: String,
    /// Purchase tasks only.
    pub purchase: Option<PurchaseTerms>,
    /// The payload as the operator gave it (JSON text): what claimers receive.
    pub payload: String,
}

/// The columns a purchase payload fills.
#[derive(Debug, Clone)]
pub struct PurchaseTerms {
    pub options: OptionMap,
    pub quantity: i64,
    pub max_price_cent: i64,
}

/// A task with its claim history and every accepted result and failure.
#[derive(Debug, Clone)]
pub struct TaskDetail {
    pub task: TaskRow,
    pub claims: Vec<ClaimRow>,
    pub results: Vec<ResultRow>,
}

/// `POST /api/v1/admin/tasks` (decisions.md §10): 409 `TASK_ALREADY_EXISTS` for a taken
/// id. A collect task creates its product row (pending).
pub fn create_task(conn: &mut Connection, t: &NewTask) -> Result<TaskRow, StoreError> {
    let options = match &t.purchase {
        Some(p) => Some(serde_json::to_string(&p.options)?),
        None => None,
    };
    let tx = immediate(conn)?;
    let id = match &t.id {
        Some(id) => {
            if load_task(&tx, id)?.is_some() {
                return Err(ApiError::new(
                    AdminErrorCode::TaskAlreadyExists,
                    "a task with this id exists",
                )
                .with_detail("task_id", id.as_str())
                .into());
            }
            id.clone()
        }
        None => {
            let prefix = if t.task_type == TaskType::Collect {
                "cj"
            } else {
                "cg"
            };
            let mut n: i64 = tx.query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))?;
            loop {
                n += 1;
                let candidate = format!("{prefix}{n}");
                if load_task(&tx, &candidate)?.is_none() {
                    break candidate;
                }
            }
        }
    };
    let ts = now();
    let status = if t.designated_client.is_some() {
        "assigned"
    } else {
        "pending"
    };
    tx.execute(
        "INSERT INTO tasks (task_id, task_type, execution_mode, status, version, priority,
            designated_client, assigned_client, pdd_goods_url, pdd_goods_id, pdd_options,
            quantity, max_price_cent, payload, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, 1, ?5, ?6, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?13)",
        params![
            id,
            t.task_type.as_str(),
            t.execution_mode.as_str(),
            status,
            t.priority,
            t.designated_client,
            t.goods_url,
            t.goods_id,
            options,
            t.purchase.as_ref().map(|p| p.quantity),
            t.purchase.as_ref().map(|p| p.max_price_cent),
            t.payload,
            ts,
        ],
    )?;
    if t.task_type == TaskType::Collect {
        insert_pending(&tx, &t.goods_id, &t.goods_url, &ts)?;
    }
    let row = require_task(&tx, &id)?;
    tx.commit()?;
    Ok(row)
}

/// Loads the tasks of a seed file, in order.
pub fn seed(conn: &mut Connection, tasks: &[NewTask]) -> Result<usize, StoreError> {
    for t in tasks {
        create_task(conn, t)?;
    }
    Ok(tasks.len())
}

/// One task with its claims and results; 404 `TASK_NOT_FOUND`.
pub fn get_task(conn: &mut Connection, task_id: &str) -> Result<TaskDetail, StoreError> {
    Ok(TaskDetail {
        task: require_task(conn, task_id)?,
        claims: claims_of(conn, task_id)?,
        results: results_of(conn, task_id)?,
    })
}

/// Every task, oldest first.
pub fn list_tasks(conn: &mut Connection) -> Result<Vec<TaskRow>, StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_at, rowid"
    ))?;
    let rows = stmt
        .query_map([], task_from_row)?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}

/// Cancels a task. Idempotent. A client holding it is not told (§1); its later
/// submissions are still accepted (§6.1).
pub fn cancel_task(conn: &mut Connection, task_id: &str) -> Result<TaskRow, StoreError> {
    let tx = immediate(conn)?;
    require_task(&tx, task_id)?;
    let ts = now();
    tx.execute(
        "UPDATE tasks SET status = 'cancelled', finished_at = COALESCE(finished_at, ?2),
            updated_at = ?2 WHERE task_id = ?1 AND status <> 'cancelled'",
        params![task_id, ts],
    )?;
    let row = require_task(&tx, task_id)?;
    tx.commit()?;
    Ok(row)
}

/// Reassigns a task to `client_id` (or back to the pool with `None`): it becomes
/// claimable again, whatever its state was. Earlier claimers keep their claim records, so
/// their submissions are still accepted (§6.1).
pub fn reassign_task(
    conn: &mut Connection,
    task_id: &str,
    client_id: Option<&str>,
) -> Result<TaskRow, StoreError> {
    let tx = immediate(conn)?;
    require_task(&tx, task_id)?;
    let ts = now();
    let status = if client_id.is_some() {
        "assigned"
    } else {
        "pending"
    };
    tx.execute(
        "UPDATE tasks SET status = ?2, designated_client = ?3, assigned_client = ?3,
            claimed_at = NULL, finished_at = NULL, updated_at = ?4 WHERE task_id = ?1",
        params![task_id, status, client_id, ts],
    )?;
    let row = require_task(&tx, task_id)?;
    tx.commit()?;
    Ok(row)
}
