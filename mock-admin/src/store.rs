//! Everything that reads or writes the database. SQL stays in this module; every function
//! runs on the database thread ([`crate::db::Db::call`]) and every read-then-write goes
//! through one `BEGIN IMMEDIATE` transaction, so a refusal in the middle (an
//! [`ApiError`] returned as [`StoreError::Api`]) rolls the whole request back.
//!
//! Admin-side task states (data model §7): `pending` (unassigned pool), `assigned`
//! (reserved for one client), `claimed`, `succeeded`, `manual_review`, `failed`,
//! `cancelled`. How submissions move a task — only when the submitter is the task's
//! current holder and the task is `claimed`; otherwise the submission is stored and the
//! task is left alone (§6.1 accepts it all the same):
//!
//! | submission | task becomes |
//! |---|---|
//! | result | `succeeded` |
//! | failure `retry_wait` | claimable again: `assigned` to the operator's designated client, or `pending` in the pool |
//! | failure `manual_review` / `failed` / `cancelled` | that status |

use crate::db::immediate;
use crate::error::{ApiError, StoreError};
use crate::faults::Outcome;
use cmautobuy_contract::time::format_utc_millis;
use cmautobuy_contract::validate::{self, Violation};
use cmautobuy_contract::{
    AdminErrorCode, ClientProfile, ExecutionMode, FailureRequest, FailureStatus, ResultRequest,
    ResultType, SpecResolutionRequest, TaskType,
};
use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Minutes since `last_seen_at` within which a client counts as online (data model §9).
pub const ONLINE_MINUTES: i64 = 10;

pub fn now() -> String {
    format_utc_millis(chrono::Utc::now())
}

/// SHA-256 of the canonical form of a JSON document: object keys sorted at every level,
/// no whitespace. `serde_json` here keeps insertion order (`preserve_order`), so two
/// bodies that differ only in key order would otherwise hash differently.
pub fn canonical_hash(v: &Value) -> String {
    let mut s = String::new();
    write_canonical(v, &mut s);
    hex::encode(Sha256::digest(s.as_bytes()))
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                if let Some(child) = m.get(*k) {
                    write_canonical(child, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, child) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(child, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// A stored answer: status, exact body bytes and how the journal should call it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub outcome: Outcome,
}

fn api(code: AdminErrorCode, msg: impl Into<String>) -> StoreError {
    ApiError::new(code, msg).into()
}

// ---------------------------------------------------------------------------------------
// tasks
// ---------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
pub struct TaskRow {
    pub task_id: String,
    pub task_type: String,
    pub execution_mode: String,
    pub status: String,
    pub version: i64,
    pub priority: i64,
    pub designated_client: Option<String>,
    pub assigned_client: Option<String>,
    pub claimed_at: Option<String>,
    pub pdd_goods_id: Option<String>,
    pub pdd_goods_url: String,
    pub payload: String,
    pub error_code: Option<String>,
    pub error_message: Option<String>,
    pub finished_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

const TASK_COLUMNS: &str = "task_id, task_type, execution_mode, status, version, priority, \
     designated_client, assigned_client, claimed_at, pdd_goods_id, pdd_goods_url, payload, \
     error_code, error_message, finished_at, created_at, updated_at";

fn task_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<TaskRow> {
    Ok(TaskRow {
        task_id: r.get(0)?,
        task_type: r.get(1)?,
        execution_mode: r.get(2)?,
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

fn require_task(conn: &Connection, task_id: &str) -> Result<TaskRow, StoreError> {
    load_task(conn, task_id)?.ok_or_else(|| {
        ApiError::new(AdminErrorCode::TaskNotFound, "no task with this id")
            .with_detail("task_id", task_id)
            .into()
    })
}

impl TaskRow {
    fn payload_value(&self) -> Result<Value, StoreError> {
        Ok(serde_json::from_str(&self.payload)?)
    }

    /// The task as a client sees it (§4/§5): no Admin-side state.
    pub fn client_json(&self) -> Result<Value, StoreError> {
        Ok(json!({
            "id": self.task_id,
            "type": self.task_type,
            "execution_mode": self.execution_mode,
            "version": self.version,
            "priority": self.priority,
            "payload": self.payload_value()?,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }))
    }

    /// The task as the operator sees it (decisions.md §10).
    pub fn operator_json(&self) -> Result<Value, StoreError> {
        Ok(json!({
            "id": self.task_id,
            "type": self.task_type,
            "execution_mode": self.execution_mode,
            "version": self.version,
            "priority": self.priority,
            "payload": self.payload_value()?,
            "status": self.status,
            "assigned_client": self.assigned_client,
            "designated_client": self.designated_client,
            "claimed_at": self.claimed_at,
            "error_code": self.error_code,
            "error_message": self.error_message,
            "finished_at": self.finished_at,
            "created_at": self.created_at,
            "updated_at": self.updated_at,
        }))
    }
}

fn invalid_task(field: &str, msg: &str) -> StoreError {
    ApiError::from(Violation::new(
        AdminErrorCode::InvalidTaskPayload,
        field,
        msg,
    ))
    .into()
}

/// `POST /api/v1/admin/tasks` (decisions.md §10).
pub fn create_task(conn: &mut Connection, body: &Value) -> Result<Value, StoreError> {
    let obj = body
        .as_object()
        .ok_or_else(|| api(AdminErrorCode::InvalidBody, "body must be a JSON object"))?;
    let task_type = match obj.get("type").and_then(Value::as_str) {
        Some("collect") => TaskType::Collect,
        Some("purchase") => TaskType::Purchase,
        _ => return Err(invalid_task("type", "must be collect or purchase")),
    };
    let mode = match obj.get("execution_mode") {
        None | Some(Value::Null) => ExecutionMode::DryRun,
        Some(Value::String(s)) if s == "dry_run" => ExecutionMode::DryRun,
        Some(Value::String(s)) if s == "live" => ExecutionMode::Live,
        _ => return Err(invalid_task("execution_mode", "must be dry_run or live")),
    };
    let priority = match obj.get("priority") {
        None | Some(Value::Null) => 0,
        Some(v) => v
            .as_i64()
            .ok_or_else(|| invalid_task("priority", "must be an integer"))?,
    };
    let designated = match obj.get("assigned_client") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        _ => {
            return Err(invalid_task(
                "assigned_client",
                "must be a non-empty client id or null",
            ))
        }
    };
    let explicit_id = match obj.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= 191 => Some(s.clone()),
        _ => return Err(invalid_task("id", "must be a 1–191 character string")),
    };
    let payload = obj
        .get("payload")
        .cloned()
        .ok_or_else(|| invalid_task("payload", "is required"))?;
    let (goods_id, goods_url, options, quantity, max_price) = match task_type {
        TaskType::Collect => {
            let p = validate::collect_payload(&payload).map_err(ApiError::from)?;
            (p.goods_id, p.goods_url, None, None, None)
        }
        _ => {
            let p = validate::purchase_payload(&payload).map_err(ApiError::from)?;
            (
                p.goods_id,
                p.goods_url,
                Some(serde_json::to_string(&p.options)?),
                Some(p.quantity),
                Some(p.max_price_cent.get()),
            )
        }
    };
    let tx = immediate(conn)?;
    let id = match explicit_id {
        Some(id) => {
            if load_task(&tx, &id)?.is_some() {
                return Err(ApiError::new(
                    AdminErrorCode::TaskAlreadyExists,
                    "a task with this id exists",
                )
                .with_detail("task_id", id)
                .into());
            }
            id
        }
        None => {
            let prefix = if task_type == TaskType::Collect {
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
    let status = if designated.is_some() {
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
            task_type.as_str(),
            mode.as_str(),
            status,
            priority,
            designated,
            goods_url,
            goods_id,
            options,
            quantity,
            max_price,
            serde_json::to_string(&payload)?,
            ts,
        ],
    )?;
    if task_type == TaskType::Collect {
        // The operator asked to collect this goods: it now has a product row (data model
        // §4: a row exists once a link is known), pending until a result arrives.
        tx.execute(
            "INSERT INTO pdd_products (goods_id, url, collect_status, created_at, updated_at)
             VALUES (?1, ?2, 'pending', ?3, ?3)
             ON CONFLICT(goods_id) DO NOTHING",
            params![goods_id, goods_url, ts],
        )?;
    }
    let row = require_task(&tx, &id)?;
    tx.commit()?;
    Ok(json!({ "task": row.operator_json()? }))
}

pub fn get_task(conn: &mut Connection, task_id: &str) -> Result<Value, StoreError> {
    let row = require_task(conn, task_id)?;
    let mut stmt = conn.prepare(
        "SELECT client_id, claimed_at, task_version FROM task_claims WHERE task_id = ?1
         ORDER BY claimed_at, client_id",
    )?;
    let claims: Vec<Value> = stmt
        .query_map([task_id], |r| {
            Ok(json!({
                "client_id": r.get::<_, String>(0)?,
                "claimed_at": r.get::<_, String>(1)?,
                "task_version": r.get::<_, i64>(2)?,
            }))
        })?
        .collect::<Result<_, _>>()?;
    let mut stmt = conn.prepare(
        "SELECT result_id, kind, client_id, idempotency_key, body, accepted_at FROM task_results
         WHERE task_id = ?1 ORDER BY accepted_at, rowid",
    )?;
    let raw: Vec<(String, String, String, String, String, String)> = stmt
        .query_map([task_id], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })?
        .collect::<Result<_, _>>()?;
    let mut results = Vec::with_capacity(raw.len());
    for (result_id, kind, client_id, key, body, accepted_at) in raw {
        results.push(json!({
            "result_id": result_id,
            "kind": kind,
            "client_id": client_id,
            "idempotency_key": key,
            "body": serde_json::from_str::<Value>(&body)?,
            "accepted_at": accepted_at,
        }));
    }
    Ok(json!({ "task": row.operator_json()?, "claims": claims, "results": results }))
}

pub fn list_tasks(conn: &mut Connection) -> Result<Value, StoreError> {
    let mut stmt = conn.prepare(&format!(
        "SELECT {TASK_COLUMNS} FROM tasks ORDER BY created_at, rowid"
    ))?;
    let rows: Vec<TaskRow> = stmt
        .query_map([], task_from_row)?
        .collect::<Result<_, _>>()?;
    let tasks: Vec<Value> = rows
        .iter()
        .map(TaskRow::operator_json)
        .collect::<Result<_, _>>()?;
    Ok(json!({ "tasks": tasks }))
}

/// Cancels a task. Idempotent. A client holding it is not told (§1); its later
/// submissions are still accepted (§6.1).
pub fn cancel_task(conn: &mut Connection, task_id: &str) -> Result<Value, StoreError> {
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
    Ok(json!({ "task": row.operator_json()? }))
}

/// Reassigns a task to `client_id` (or back to the pool with `None`): it becomes
/// claimable again, whatever its state was. Earlier claimers keep their claim records, so
/// their submissions are still accepted (§6.1).
pub fn reassign_task(
    conn: &mut Connection,
    task_id: &str,
    client_id: Option<&str>,
) -> Result<Value, StoreError> {
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
    Ok(json!({ "task": row.operator_json()? }))
}

// ---------------------------------------------------------------------------------------
// clients
// ---------------------------------------------------------------------------------------

/// Upsert by client id (§4.1, §5). `explicit` is a §4.1 registration: a non-empty name
/// then updates the stored one. A claim's implicit registration only names new clients.
/// Returns the client's creation time.
fn upsert_client(
    tx: &Transaction<'_>,
    client_id: &str,
    p: &ClientProfile,
    explicit: bool,
    ts: &str,
) -> Result<String, StoreError> {
    let name = p
        .client
        .name
        .as_deref()
        .map(str::trim)
        .filter(|n| !n.is_empty());
    let device = p.device.clone().unwrap_or_default();
    let caps = serde_json::to_string(&p.capabilities)?;
    let types = serde_json::to_string(&p.supported_types)?;
    let existing: Option<String> = tx
        .prepare_cached("SELECT created_at FROM clients WHERE client_id = ?1")?
        .query_row([client_id], |r| r.get(0))
        .optional()?;
    match existing {
        None => {
            tx.execute(
                "INSERT INTO clients (client_id, name, device_address, platform, pdd_package,
                    supported_types, capabilities, last_seen_at, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?8)",
                params![
                    client_id,
                    name.unwrap_or(client_id),
                    device.address,
                    device.platform,
                    device.pdd_package,
                    types,
                    caps,
                    ts
                ],
            )?;
            Ok(ts.to_string())
        }
        Some(created) => {
            let new_name = if explicit { name } else { None };
            tx.prepare_cached(
                "UPDATE clients SET name = COALESCE(?2, name),
                    device_address = COALESCE(?3, device_address),
                    platform = COALESCE(?4, platform),
                    pdd_package = COALESCE(?5, pdd_package),
                    supported_types = ?6, capabilities = ?7, last_seen_at = ?8, updated_at = ?8
                 WHERE client_id = ?1",
            )?
            .execute(params![
                client_id,
                new_name,
                device.address,
                device.platform,
                device.pdd_package,
                types,
                caps,
                ts
            ])?;
            Ok(created)
        }
    }
}

/// Refreshes `last_seen_at` of a known client (data model §9: every call refreshes it).
fn touch_client(tx: &Transaction<'_>, client_id: &str, ts: &str) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE clients SET last_seen_at = ?2 WHERE client_id = ?1",
        params![client_id, ts],
    )?;
    Ok(())
}

/// Refreshes `last_seen_at` after a call that was refused (its own transaction rolled
/// back): every call counts as a sign of life (data model §9).
pub fn touch(conn: &mut Connection, client_id: &str) -> Result<(), StoreError> {
    let tx = immediate(conn)?;
    touch_client(&tx, client_id, &now())?;
    tx.commit()?;
    Ok(())
}

/// `PUT /registration` (§4.1). Never reads or touches tasks.
pub fn register(
    conn: &mut Connection,
    client_id: &str,
    p: &ClientProfile,
) -> Result<Answer, StoreError> {
    let tx = immediate(conn)?;
    let ts = now();
    let created = upsert_client(&tx, client_id, p, true, &ts)?;
    tx.commit()?;
    let body = serde_json::to_vec(&json!({
        "registered": true,
        "client_id": client_id,
        "registered_at": created,
    }))?;
    Ok(Answer {
        status: 200,
        body,
        outcome: Outcome::Fresh,
    })
}

pub fn list_clients(conn: &mut Connection) -> Result<Value, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT client_id, name, device_address, platform, pdd_package, supported_types,
            capabilities, last_seen_at, created_at, updated_at FROM clients ORDER BY client_id",
    )?;
    type Row = (
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        String,
        String,
    );
    let rows: Vec<Row> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
            ))
        })?
        .collect::<Result<_, _>>()?;
    let now = chrono::Utc::now();
    let mut out = Vec::with_capacity(rows.len());
    for (id, name, addr, platform, pkg, types, caps, last_seen, created, updated) in rows {
        let online = cmautobuy_contract::time::parse_rfc3339(&last_seen)
            .map(|t| now.signed_duration_since(t) <= chrono::Duration::minutes(ONLINE_MINUTES))
            .unwrap_or(false);
        let parse = |s: Option<String>| -> Result<Value, StoreError> {
            Ok(match s {
                Some(s) => serde_json::from_str(&s)?,
                None => Value::Null,
            })
        };
        out.push(json!({
            "client_id": id,
            "name": name,
            "online": online,
            "last_seen_at": last_seen,
            "capabilities": parse(caps)?,
            "supported_types": parse(types)?,
            "device": {"address": addr, "platform": platform, "pdd_package": pkg},
            "created_at": created,
            "updated_at": updated,
        }));
    }
    Ok(json!({ "clients": out }))
}

// ---------------------------------------------------------------------------------------
// claim (§5)
// ---------------------------------------------------------------------------------------

/// Atomically hands out at most one task: assigned-to-me before the pool, then priority
/// (high first), then age. Capabilities only narrow what is eligible: a `dry_run` client
/// never sees `live` tasks; unsupported types and schema versions are skipped. `None`
/// means 204.
pub fn claim(
    conn: &mut Connection,
    client_id: &str,
    p: &ClientProfile,
) -> Result<Option<Vec<u8>>, StoreError> {
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
    let task_id = row.task_id.clone();
    // Claim history (data model §8): a re-claim only refreshes the time (and the version
    // the client now holds, which §7.1 checks).
    tx.prepare_cached(
        "INSERT INTO task_claims (task_id, client_id, claimed_at, task_version)
         VALUES (?1, ?2, ?3, ?4)
         ON CONFLICT(task_id, client_id) DO UPDATE SET claimed_at = excluded.claimed_at,
            task_version = excluded.task_version",
    )?
    .execute(params![task_id, client_id, ts, row.version])?;
    let body = serde_json::to_vec(&json!({ "task": row.client_json()? }))?;
    tx.commit()?;
    Ok(Some(body))
}

// ---------------------------------------------------------------------------------------
// results and failures (§6, §7)
// ---------------------------------------------------------------------------------------

/// What a submission needs besides its body.
pub struct SubmitCtx<'a> {
    pub task_id: &'a str,
    pub client_id: &'a str,
    pub key: &'a str,
    pub request_hash: &'a str,
    /// The body as received (stored for the audit trail).
    pub raw_body: &'a str,
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

fn require_claimed(
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

/// Looks up a stored answer for the key: same content → the stored bytes (`Replayed`);
/// different content → 409.
fn replay(
    tx: &Transaction<'_>,
    endpoint: &str,
    ctx: &SubmitCtx<'_>,
) -> Result<Option<Answer>, StoreError> {
    let stored: Option<(String, u16, Vec<u8>)> = tx
        .query_row(
            "SELECT request_hash, response_status, response_body FROM idempotency_keys
             WHERE endpoint = ?1 AND task_id = ?2 AND client_id = ?3 AND idem_key = ?4",
            params![endpoint, ctx.task_id, ctx.client_id, ctx.key],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    match stored {
        None => Ok(None),
        Some((hash, status, body)) if hash == ctx.request_hash => Ok(Some(Answer {
            status,
            body,
            outcome: Outcome::Replayed,
        })),
        Some(_) => Err(ApiError::new(
            AdminErrorCode::IdempotencyConflict,
            "this Idempotency-Key was used with different content",
        )
        .with_detail("idempotency_key", ctx.key)
        .into()),
    }
}

fn remember(
    tx: &Transaction<'_>,
    endpoint: &str,
    ctx: &SubmitCtx<'_>,
    status: u16,
    body: &[u8],
    ts: &str,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO idempotency_keys (endpoint, task_id, client_id, idem_key, request_hash,
            response_status, response_body, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            endpoint,
            ctx.task_id,
            ctx.client_id,
            ctx.key,
            ctx.request_hash,
            status,
            body,
            ts
        ],
    )?;
    Ok(())
}

enum Settle<'a> {
    Result,
    Failure(&'a FailureRequest),
}

/// Moves the task when the submitter is its current holder (see the module doc) and
/// returns the task's status afterwards.
fn settle(
    tx: &Transaction<'_>,
    task: &TaskRow,
    client_id: &str,
    how: Settle<'_>,
    ts: &str,
) -> Result<String, StoreError> {
    let holder = task.status == "claimed" && task.assigned_client.as_deref() == Some(client_id);
    if !holder {
        return Ok(task.status.clone());
    }
    let status = match how {
        Settle::Result => {
            tx.execute(
                "UPDATE tasks SET status = 'succeeded', finished_at = ?2, updated_at = ?2,
                    error_code = NULL, error_message = NULL WHERE task_id = ?1",
                params![task.task_id, ts],
            )?;
            "succeeded".to_string()
        }
        Settle::Failure(f) if f.status == FailureStatus::RetryWait => {
            let status = if task.designated_client.is_some() {
                "assigned"
            } else {
                "pending"
            };
            tx.execute(
                "UPDATE tasks SET status = ?2, assigned_client = designated_client,
                    claimed_at = NULL, error_code = ?3, error_message = ?4, updated_at = ?5
                 WHERE task_id = ?1",
                params![task.task_id, status, f.error.code, f.error.message, ts],
            )?;
            status.to_string()
        }
        Settle::Failure(f) => {
            let status = f.status.as_str();
            tx.execute(
                "UPDATE tasks SET status = ?2, finished_at = ?5, error_code = ?3,
                    error_message = ?4, updated_at = ?5 WHERE task_id = ?1",
                params![task.task_id, status, f.error.code, f.error.message, ts],
            )?;
            status.to_string()
        }
    };
    Ok(status)
}

fn record_result(
    tx: &Transaction<'_>,
    kind: &str,
    ctx: &SubmitCtx<'_>,
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

/// `POST /tasks/{id}/result` (§6, §6.1, data model §4.3).
pub fn submit_result(
    conn: &mut Connection,
    ctx: &SubmitCtx<'_>,
    req: &ResultRequest,
) -> Result<Answer, StoreError> {
    let tx = immediate(conn)?;
    let task = require_task(&tx, ctx.task_id)?;
    require_claimed(&tx, ctx.task_id, ctx.client_id)?;
    if let Some(a) = replay(&tx, "result", ctx)? {
        touch_client(&tx, ctx.client_id, &now())?;
        tx.commit()?;
        return Ok(a);
    }
    let type_ok = matches!(
        (req.result_type, task.task_type.as_str()),
        (ResultType::Collect, "collect") | (ResultType::Purchase, "purchase")
    );
    if !type_ok {
        return Err(ApiError::new(
            AdminErrorCode::TaskTypeMismatch,
            format!(
                "result_type does not match the task type {}",
                task.task_type
            ),
        )
        .with_detail("field", "result_type")
        .into());
    }
    let ts = now();
    if let Some(data) = req
        .pdd_data
        .as_ref()
        .filter(|_| task.task_type == "collect")
    {
        // Data model §4.3 (1): a different goods means a redirect or the wrong page;
        // refuse the whole submission (the transaction is dropped, i.e. rolled back).
        if task.pdd_goods_id.as_deref() != Some(data.goods_id.as_str()) {
            return Err(ApiError::new(
                AdminErrorCode::CollectGoodsMismatch,
                "pdd_data.goods_id is not the goods this task collects",
            )
            .with_detail("field", "pdd_data.goods_id")
            .with_detail("expected", task.pdd_goods_id.clone().unwrap_or_default())
            .into());
        }
        let skus_json = serde_json::to_string(data)?;
        // (2): zero SKUs is useless to the business: `failed`, not `collected`.
        let (status, msg) = if data.skus.is_empty() {
            ("failed", Some("collect result has no skus"))
        } else {
            ("collected", None)
        };
        let shop = data
            .shop_name
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        tx.execute(
            "INSERT INTO pdd_products (goods_id, url, title, shop_name, skus_json, collect_status,
                collect_msg, collected_at, created_at, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?8)
             ON CONFLICT(goods_id) DO UPDATE SET
                title = COALESCE(excluded.title, title),
                shop_name = COALESCE(excluded.shop_name, shop_name),
                skus_json = excluded.skus_json,
                collect_status = excluded.collect_status,
                collect_msg = excluded.collect_msg,
                collected_at = excluded.collected_at,
                deleted_at = NULL,
                updated_at = excluded.updated_at",
            params![
                data.goods_id,
                task.pdd_goods_url,
                data.title,
                shop,
                skus_json,
                status,
                msg,
                ts
            ],
        )?;
        tx.execute(
            "UPDATE tasks SET result_data = ?2 WHERE task_id = ?1",
            params![ctx.task_id, skus_json],
        )?;
    }
    let result_id = record_result(&tx, "result", ctx, &ts)?;
    settle(&tx, &task, ctx.client_id, Settle::Result, &ts)?;
    touch_client(&tx, ctx.client_id, &ts)?;
    let body = serde_json::to_vec(&json!({
        "accepted": true,
        "result_id": result_id,
        "accepted_at": ts,
    }))?;
    remember(&tx, "result", ctx, 200, &body, &ts)?;
    tx.commit()?;
    Ok(Answer {
        status: 200,
        body,
        outcome: Outcome::Fresh,
    })
}

/// `POST /tasks/{id}/failure` (§7).
pub fn submit_failure(
    conn: &mut Connection,
    ctx: &SubmitCtx<'_>,
    req: &FailureRequest,
) -> Result<Answer, StoreError> {
    let tx = immediate(conn)?;
    let task = require_task(&tx, ctx.task_id)?;
    require_claimed(&tx, ctx.task_id, ctx.client_id)?;
    if let Some(a) = replay(&tx, "failure", ctx)? {
        touch_client(&tx, ctx.client_id, &now())?;
        tx.commit()?;
        return Ok(a);
    }
    let ts = now();
    let result_id = record_result(&tx, "failure", ctx, &ts)?;
    let status = settle(&tx, &task, ctx.client_id, Settle::Failure(req), &ts)?;
    if task.task_type == "collect" && status == "failed" {
        if let Some(goods) = &task.pdd_goods_id {
            tx.execute(
                "UPDATE pdd_products SET collect_status = 'failed', collect_msg = ?2,
                    updated_at = ?3 WHERE goods_id = ?1 AND collect_status <> 'collected'",
                params![goods, req.error.message, ts],
            )?;
        }
    }
    touch_client(&tx, ctx.client_id, &ts)?;
    let body = serde_json::to_vec(&json!({
        "accepted": true,
        "result_id": result_id,
        "task_status": status,
        "accepted_at": ts,
    }))?;
    remember(&tx, "failure", ctx, 200, &body, &ts)?;
    tx.commit()?;
    Ok(Answer {
        status: 200,
        body,
        outcome: Outcome::Fresh,
    })
}

pub fn list_products(conn: &mut Connection) -> Result<Value, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT goods_id, url, title, shop_name, skus_json, collect_status, collect_msg,
            collected_at, created_at, updated_at FROM pdd_products ORDER BY id",
    )?;
    type Row = (
        String,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
        Option<String>,
        Option<String>,
        String,
        String,
    );
    let rows: Vec<Row> = stmt
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
                r.get(9)?,
            ))
        })?
        .collect::<Result<_, _>>()?;
    let mut out = Vec::with_capacity(rows.len());
    for (goods_id, url, title, shop, skus, status, msg, collected, created, updated) in rows {
        let skus: Value = match skus {
            Some(s) => serde_json::from_str(&s)?,
            None => Value::Null,
        };
        out.push(json!({
            "goods_id": goods_id, "url": url, "title": title, "shop_name": shop,
            "skus_json": skus, "collect_status": status, "collect_msg": msg,
            "collected_at": collected, "created_at": created, "updated_at": updated,
        }));
    }
    Ok(json!({ "products": out }))
}

// ---------------------------------------------------------------------------------------
// spec resolution (§7.1)
// ---------------------------------------------------------------------------------------

/// What the first short transaction decided.
pub enum Observed {
    /// A stored answer exists for this request: replay it.
    Replay(Answer),
    /// The observation is stored (now or by an earlier, undecided attempt): resolve it.
    /// `reusable` is an earlier `matched` decision on the same snapshot and target size
    /// (another attempt or task): its candidate id and confidence.
    Resolve {
        resolution_id: String,
        reusable: Option<(String, Option<i64>)>,
    },
}

/// Transaction 1 of §7.1: every check that needs the database, then the observation is
/// persisted. Returns quickly; the resolver runs after it, outside any transaction.
pub fn spec_observe(
    conn: &mut Connection,
    ctx: &SubmitCtx<'_>,
    req: &SpecResolutionRequest,
) -> Result<Observed, StoreError> {
    let tx = immediate(conn)?;
    if let Some(a) = replay(&tx, "spec_resolution", ctx)? {
        touch_client(&tx, ctx.client_id, &now())?;
        tx.commit()?;
        return Ok(Observed::Replay(a));
    }
    let task = require_task(&tx, ctx.task_id)?;
    let claimed = require_claimed(&tx, ctx.task_id, ctx.client_id)?;
    if task.task_type != "purchase" {
        return Err(api(
            AdminErrorCode::TaskNotPurchase,
            "spec resolution is only for purchase tasks",
        ));
    }
    if req.task_version != claimed {
        return Err(ApiError::new(
            AdminErrorCode::TaskVersionConflict,
            "task_version is not the version this client claimed",
        )
        .with_detail("claimed_version", claimed)
        .into());
    }
    if task.pdd_goods_id.as_deref() != Some(req.pdd_goods_id.as_str()) {
        return Err(ApiError::new(
            AdminErrorCode::PddGoodsMismatch,
            "pdd_goods_id is not the task's goods",
        )
        .with_detail("field", "pdd_goods_id")
        .into());
    }
    // One record per business identity (task, attempt, snapshot).
    let existing: Option<(String, String, Option<Vec<u8>>)> = tx
        .query_row(
            "SELECT resolution_id, request_hash, response_body FROM spec_resolutions
             WHERE task_id = ?1 AND attempt_id = ?2 AND candidate_snapshot_hash = ?3",
            params![ctx.task_id, req.attempt_id, req.candidate_snapshot_hash],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let ts = now();
    let observed = match existing {
        Some((_, hash, _)) if hash != ctx.request_hash => {
            return Err(ApiError::new(
                AdminErrorCode::IdempotencyConflict,
                "this spec-resolution identity was submitted with different content",
            )
            .with_detail("idempotency_key", ctx.key)
            .into())
        }
        Some((_, _, Some(body))) => Observed::Replay(Answer {
            status: 200,
            body,
            outcome: Outcome::Replayed,
        }),
        Some((resolution_id, _, None)) => Observed::Resolve {
            reusable: reusable(&tx, ctx.task_id, req)?,
            resolution_id,
        },
        None => {
            let resolution_id = format!("psr-{}", uuid::Uuid::new_v4());
            tx.execute(
                "INSERT INTO spec_resolutions (resolution_id, task_id, attempt_id,
                    candidate_snapshot_hash, client_id, idempotency_key, request_hash,
                    task_version, pdd_goods_id, selected_color, target_size, original_options,
                    candidates, observed_at, received_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    resolution_id,
                    ctx.task_id,
                    req.attempt_id,
                    req.candidate_snapshot_hash,
                    ctx.client_id,
                    ctx.key,
                    ctx.request_hash,
                    req.task_version,
                    req.pdd_goods_id,
                    req.selected_color,
                    req.target_size,
                    serde_json::to_string(&req.original_options)?,
                    serde_json::to_string(&req.candidates)?,
                    req.observed_at,
                    ts
                ],
            )?;
            Observed::Resolve {
                reusable: reusable(&tx, ctx.task_id, req)?,
                resolution_id,
            }
        }
    };
    touch_client(&tx, ctx.client_id, &ts)?;
    tx.commit()?;
    Ok(observed)
}

/// An earlier `matched` decision for the same snapshot (goods, colour and candidates are
/// all inside the snapshot hash) and the same target size, from another attempt: the
/// same question already has an audited answer.
fn reusable(
    tx: &Transaction<'_>,
    task_id: &str,
    req: &SpecResolutionRequest,
) -> Result<Option<(String, Option<i64>)>, StoreError> {
    Ok(tx
        .prepare_cached(
            "SELECT match_candidate_id, confidence_bps FROM spec_resolutions
             WHERE candidate_snapshot_hash = ?1 AND target_size = ?2 AND outcome = 'matched'
               AND match_candidate_id IS NOT NULL
               AND NOT (task_id = ?3 AND attempt_id = ?4)
             ORDER BY resolved_at DESC LIMIT 1",
        )?
        .query_row(
            params![
                req.candidate_snapshot_hash,
                req.target_size,
                task_id,
                req.attempt_id
            ],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?)
}

/// The decision as stored.
pub struct StoredDecision<'a> {
    pub resolution_id: &'a str,
    pub outcome: &'a str,
    pub source: Option<&'a str>,
    pub match_candidate_id: Option<&'a str>,
    pub confidence_bps: Option<i64>,
    pub reason: &'a str,
    pub resolved_at: &'a str,
    pub body: &'a [u8],
}

/// Transaction 2 of §7.1: the decision, its replayable answer and the idempotency row,
/// together. When a concurrent duplicate decided first, its answer wins and is returned.
pub fn spec_decide(
    conn: &mut Connection,
    ctx: &SubmitCtx<'_>,
    d: &StoredDecision<'_>,
) -> Result<Answer, StoreError> {
    let tx = immediate(conn)?;
    let existing: Option<Vec<u8>> = tx
        .query_row(
            "SELECT response_body FROM spec_resolutions WHERE resolution_id = ?1",
            [d.resolution_id],
            |r| r.get(0),
        )
        .optional()?
        .flatten();
    let (body, outcome) = match existing {
        Some(body) => (body, Outcome::Replayed),
        None => {
            tx.execute(
                "UPDATE spec_resolutions SET outcome = ?2, source = ?3, match_candidate_id = ?4,
                    confidence_bps = ?5, reason = ?6, resolved_at = ?7, response_body = ?8
                 WHERE resolution_id = ?1",
                params![
                    d.resolution_id,
                    d.outcome,
                    d.source,
                    d.match_candidate_id,
                    d.confidence_bps,
                    d.reason,
                    d.resolved_at,
                    d.body
                ],
            )?;
            (d.body.to_vec(), Outcome::Fresh)
        }
    };
    tx.execute(
        "INSERT INTO idempotency_keys (endpoint, task_id, client_id, idem_key, request_hash,
            response_status, response_body, created_at)
         VALUES ('spec_resolution', ?1, ?2, ?3, ?4, 200, ?5, ?6)
         ON CONFLICT DO NOTHING",
        params![
            ctx.task_id,
            ctx.client_id,
            ctx.key,
            ctx.request_hash,
            body,
            d.resolved_at
        ],
    )?;
    tx.commit()?;
    Ok(Answer {
        status: 200,
        body,
        outcome,
    })
}

pub fn list_spec_resolutions(conn: &mut Connection) -> Result<Value, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT resolution_id, task_id, attempt_id, candidate_snapshot_hash, client_id,
            task_version, pdd_goods_id, selected_color, target_size, candidates, observed_at,
            received_at, outcome, source, match_candidate_id, confidence_bps, reason, resolved_at
         FROM spec_resolutions ORDER BY received_at, rowid",
    )?;
    let rows: Vec<Value> = stmt
        .query_map([], |r| {
            let candidates: String = r.get(9)?;
            Ok(json!({
                "resolution_id": r.get::<_, String>(0)?,
                "task_id": r.get::<_, String>(1)?,
                "attempt_id": r.get::<_, String>(2)?,
                "candidate_snapshot_hash": r.get::<_, String>(3)?,
                "client_id": r.get::<_, String>(4)?,
                "task_version": r.get::<_, i64>(5)?,
                "pdd_goods_id": r.get::<_, String>(6)?,
                "selected_color": r.get::<_, String>(7)?,
                "target_size": r.get::<_, String>(8)?,
                "candidates": serde_json::from_str::<Value>(&candidates).unwrap_or(Value::Null),
                "observed_at": r.get::<_, String>(10)?,
                "received_at": r.get::<_, String>(11)?,
                "outcome": r.get::<_, Option<String>>(12)?,
                "source": r.get::<_, Option<String>>(13)?,
                "match_candidate_id": r.get::<_, Option<String>>(14)?,
                "confidence_bps": r.get::<_, Option<i64>>(15)?,
                "reason": r.get::<_, Option<String>>(16)?,
                "resolved_at": r.get::<_, Option<String>>(17)?,
            }))
        })?
        .collect::<Result<_, _>>()?;
    Ok(json!({ "spec_resolutions": rows }))
}

/// Loads the tasks of a seed file (a JSON array of operator create-task bodies).
pub fn seed(conn: &mut Connection, tasks: &[Value]) -> Result<usize, StoreError> {
    for t in tasks {
        create_task(conn, t)?;
    }
    Ok(tasks.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_hash_ignores_key_order_but_not_content() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, 2], "x": "é"}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a": {"x": "é", "y": [1, 2]}, "b": 1}"#).unwrap();
        let c: Value = serde_json::from_str(r#"{"a": {"x": "é", "y": [2, 1]}, "b": 1}"#).unwrap();
        assert_eq!(canonical_hash(&a), canonical_hash(&b));
        assert_ne!(canonical_hash(&a), canonical_hash(&c));
    }
}
