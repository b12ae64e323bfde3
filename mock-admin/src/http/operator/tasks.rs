//! Operator tasks (decisions.md §10): `POST/GET /api/v1/admin/tasks`,
//! `GET /tasks/{task_id}`, `POST /tasks/{task_id}/cancel`, `POST /tasks/{task_id}/reassign`.
//! The create-task body is parsed here into a [`NewTask`]; rows are rendered here. The
//! typed in-process `Operator` (`operator.rs`) calls the same functions.

use crate::error::ApiError;
use crate::http::extract::{json_body, path_id, visible_ascii};
use crate::http::respond::{json_response, stored_json, stored_json_opt};
use crate::openapi as doc;
use crate::state::{AppState, Inner};
use crate::store::{self, NewTask, PurchaseTerms, TaskDetail, TaskRow};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use cmautobuy_contract::validate::{self, Violation};
use cmautobuy_contract::{AdminErrorCode, ExecutionMode, TaskType};
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------
// operations (shared with `Operator`)
// ---------------------------------------------------------------------------------------

/// Creates a task from an operator body; `{"task": {...}}`.
pub(crate) async fn create(s: &Inner, body: &Value) -> Result<Value, ApiError> {
    let t = new_task(body)?;
    let row = s.db.call(move |c| store::create_task(c, &t)).await?;
    task_envelope(&row)
}

/// `{"tasks": [...]}`, oldest first.
pub(crate) async fn list(s: &Inner) -> Result<Value, ApiError> {
    let rows = s.db.call(store::list_tasks).await?;
    let tasks: Vec<Value> = rows.iter().map(operator_task).collect::<Result<_, _>>()?;
    Ok(json!({ "tasks": tasks }))
}

/// `{"task", "claims", "results"}`.
pub(crate) async fn get(s: &Inner, id: String) -> Result<Value, ApiError> {
    let d = s.db.call(move |c| store::get_task(c, &id)).await?;
    task_detail(&d)
}

/// Cancels (idempotent); `{"task": {...}}`.
pub(crate) async fn cancel(s: &Inner, id: String) -> Result<Value, ApiError> {
    let row = s.db.call(move |c| store::cancel_task(c, &id)).await?;
    task_envelope(&row)
}

/// Reassigns to a client, or to the pool with `None`; `{"task": {...}}`.
pub(crate) async fn reassign(
    s: &Inner,
    id: String,
    client: Option<String>,
) -> Result<Value, ApiError> {
    let row =
        s.db.call(move |c| store::reassign_task(c, &id, client.as_deref()))
            .await?;
    task_envelope(&row)
}

// ---------------------------------------------------------------------------------------
// bodies in, documents out
// ---------------------------------------------------------------------------------------

fn invalid_task(field: &str, msg: &str) -> ApiError {
    ApiError::from(Violation::new(
        AdminErrorCode::InvalidTaskPayload,
        field,
        msg,
    ))
}

/// The create-task body: `{"id"?, "type", "execution_mode"?, "priority"?,
/// "assigned_client"?, "payload"}`; payloads checked by the contract's validators.
pub(crate) fn new_task(body: &Value) -> Result<NewTask, ApiError> {
    let obj = body
        .as_object()
        .ok_or_else(|| ApiError::new(AdminErrorCode::InvalidBody, "body must be a JSON object"))?;
    let task_type = match obj.get("type").and_then(Value::as_str) {
        Some("collect") => TaskType::Collect,
        Some("purchase") => TaskType::Purchase,
        _ => return Err(invalid_task("type", "must be collect or purchase")),
    };
    let execution_mode = match obj.get("execution_mode") {
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
    let designated_client = match obj.get("assigned_client") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.trim().is_empty() => Some(s.clone()),
        _ => {
            return Err(invalid_task(
                "assigned_client",
                "must be a non-empty client id or null",
            ))
        }
    };
    let id = match obj.get("id") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if !s.is_empty() && s.chars().count() <= 191 => Some(s.clone()),
        _ => return Err(invalid_task("id", "must be a 1–191 character string")),
    };
    let payload = obj
        .get("payload")
        .ok_or_else(|| invalid_task("payload", "is required"))?;
    let (goods_id, goods_url, purchase) = match task_type {
        TaskType::Collect => {
            let p = validate::collect_payload(payload)?;
            (p.goods_id, p.goods_url, None)
        }
        _ => {
            let p = validate::purchase_payload(payload)?;
            let terms = PurchaseTerms {
                options: p.options,
                quantity: p.quantity,
                max_price_cent: p.max_price_cent.get(),
            };
            (p.goods_id, p.goods_url, Some(terms))
        }
    };
    Ok(NewTask {
        id,
        task_type,
        execution_mode,
        priority,
        designated_client,
        goods_id,
        goods_url,
        purchase,
        payload: payload.to_string(),
    })
}

/// The reassign body's `client_id`: a client id, or null / absent for the pool.
pub(crate) fn reassign_target(v: &Value) -> Result<Option<String>, ApiError> {
    match v.get("client_id") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if visible_ascii(s, 128) => Ok(Some(s.clone())),
        _ => Err(ApiError::new(
            AdminErrorCode::InvalidBody,
            "client_id must be a client id or null",
        )
        .with_detail("field", "client_id")),
    }
}

/// The task as the operator sees it (decisions.md §10).
fn operator_task(t: &TaskRow) -> Result<Value, ApiError> {
    Ok(json!({
        "id": t.task_id,
        "type": t.task_type.as_str(),
        "execution_mode": t.execution_mode.as_str(),
        "version": t.version,
        "priority": t.priority,
        "payload": stored_json(&t.payload)?,
        "status": t.status,
        "assigned_client": t.assigned_client,
        "designated_client": t.designated_client,
        "claimed_at": t.claimed_at,
        "error_code": t.error_code,
        "error_message": t.error_message,
        "finished_at": t.finished_at,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
        "result_data": stored_json_opt(t.result_data.as_deref())?,
    }))
}

fn task_envelope(t: &TaskRow) -> Result<Value, ApiError> {
    Ok(json!({ "task": operator_task(t)? }))
}

fn task_detail(d: &TaskDetail) -> Result<Value, ApiError> {
    let claims: Vec<Value> = d
        .claims
        .iter()
        .map(|c| {
            json!({
                "client_id": c.client_id,
                "claimed_at": c.claimed_at,
                "task_version": c.task_version,
            })
        })
        .collect();
    let mut results = Vec::with_capacity(d.results.len());
    for r in &d.results {
        results.push(json!({
            "result_id": r.result_id,
            "kind": r.kind,
            "client_id": r.client_id,
            "idempotency_key": r.idempotency_key,
            "body": stored_json(&r.body)?,
            "accepted_at": r.accepted_at,
        }));
    }
    Ok(json!({ "task": operator_task(&d.task)?, "claims": claims, "results": results }))
}

// ---------------------------------------------------------------------------------------
// handlers
// ---------------------------------------------------------------------------------------

/// Creates a task (decisions.md §10).
#[utoipa::path(post, path = "/api/v1/admin/tasks", tag = "operator",
    request_body(content = doc::CreateTaskDoc, content_type = "application/json"),
    responses(
        (status = 201, description = "Created", body = doc::OperatorTaskEnvelopeDoc),
        (status = 409, description = "TASK_ALREADY_EXISTS", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 422, description = "INVALID_TASK_PAYLOAD (payload rules of contract §5)", body = doc::ErrorEnvelopeDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
pub(crate) async fn op_create_task(
    State(s): State<AppState>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let v = json_body(&headers, body)?;
    Ok(json_response(StatusCode::CREATED, create(&s, &v).await?))
}

/// Every task, oldest first.
#[utoipa::path(get, path = "/api/v1/admin/tasks", tag = "operator",
    responses((status = 200, description = "All tasks", body = doc::OperatorTaskListDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
pub(crate) async fn op_list_tasks(State(s): State<AppState>) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, list(&s).await?))
}

/// One task with its claim history and every accepted result and failure.
#[utoipa::path(get, path = "/api/v1/admin/tasks/{task_id}", tag = "operator",
    params(("task_id" = String, Path, description = "Task id")),
    responses((status = 200, description = "The task", body = doc::OperatorTaskDetailDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
pub(crate) async fn op_get_task(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_id(path)?;
    Ok(json_response(StatusCode::OK, get(&s, id).await?))
}

/// Cancels a task (idempotent). Clients are not told; their submissions stay accepted.
#[utoipa::path(post, path = "/api/v1/admin/tasks/{task_id}/cancel", tag = "operator",
    params(("task_id" = String, Path, description = "Task id")),
    responses((status = 200, description = "The task", body = doc::OperatorTaskEnvelopeDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
pub(crate) async fn op_cancel_task(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
) -> Result<Response, ApiError> {
    let id = path_id(path)?;
    Ok(json_response(StatusCode::OK, cancel(&s, id).await?))
}

/// Makes a task claimable again by one client (or by anyone with `null`).
#[utoipa::path(post, path = "/api/v1/admin/tasks/{task_id}/reassign", tag = "operator",
    params(("task_id" = String, Path, description = "Task id")),
    request_body(content = doc::ReassignDoc, content_type = "application/json"),
    responses((status = 200, description = "The task", body = doc::OperatorTaskEnvelopeDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
pub(crate) async fn op_reassign_task(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let id = path_id(path)?;
    let v = json_body(&headers, body)?;
    let client = reassign_target(&v)?;
    Ok(json_response(
        StatusCode::OK,
        reassign(&s, id, client).await?,
    ))
}
