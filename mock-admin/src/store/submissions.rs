//! §6 results and §7 failures: one transaction each — task, claim and key checks, the
//! submission stored as received, the task moved, the answer stored for replay.
//!
//! How submissions move a task — only when the submitter is the task's current holder
//! and the task is `claimed`; otherwise the submission is stored and the task is left
//! alone (§6.1 accepts it all the same):
//!
//! | submission | task becomes |
//! |---|---|
//! | result | `succeeded` |
//! | failure `retry_wait` | claimable again: `assigned` to the operator's designated client, or `pending` in the pool |
//! | failure `manual_review` / `failed` / `cancelled` | that status |

use super::claim_history::require_claimed;
use super::clients::touch_client;
use super::clock::now;
use super::idempotency::{remember, replay, Answer, OnConflict, SubmitCtx};
use super::products::{mark_collect_failed, save_collected};
use super::results::record_result;
use super::tasks::{require_task, TaskRow};
use crate::db::immediate;
use crate::error::{ApiError, StoreError};
use cmautobuy_contract::{
    AcceptedResponse, AdminErrorCode, FailureRequest, FailureStatus, ResultRequest, ResultType,
    TaskType,
};
use rusqlite::{params, Connection, Transaction};
use serde_json::{Map, Value};

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

/// The transaction both submissions share: 404 `TASK_NOT_FOUND`, 403
/// `TASK_NOT_CLAIMED_BY_CLIENT`, then the key — a replay refreshes `last_seen_at` and
/// answers the stored bytes, other content is a 409 — then `handle` (the
/// endpoint's own checks and writes, returning the answer), `last_seen_at`, and the
/// answer stored for the key, all committed together.
fn submit(
    conn: &mut Connection,
    endpoint: &str,
    ctx: &SubmitCtx,
    handle: impl FnOnce(&Transaction<'_>, &TaskRow) -> Result<AcceptedResponse, StoreError>,
) -> Result<Answer, StoreError> {
    let tx = immediate(conn)?;
    let task = require_task(&tx, &ctx.task_id)?;
    require_claimed(&tx, &ctx.task_id, &ctx.client_id)?;
    if let Some(a) = replay(&tx, endpoint, ctx)? {
        touch_client(&tx, &ctx.client_id, &now())?;
        tx.commit()?;
        return Ok(a);
    }
    let answer = handle(&tx, &task)?;
    let ts = &answer.accepted_at;
    touch_client(&tx, &ctx.client_id, ts)?;
    let body = serde_json::to_vec(&answer)?;
    remember(&tx, endpoint, ctx, 200, &body, ts, OnConflict::Error)?;
    tx.commit()?;
    Ok(Answer::fresh(body))
}

/// What both submissions answer (the failure adds `task_status`).
fn accepted(result_id: String, task_status: Option<String>, ts: String) -> AcceptedResponse {
    AcceptedResponse {
        accepted: true,
        result_id: Some(result_id),
        task_status,
        accepted_at: ts,
        extra: Map::new(),
    }
}

/// `POST /tasks/{id}/result` (§6, §6.1, data model §4.3).
pub fn submit_result(
    conn: &mut Connection,
    ctx: &SubmitCtx,
    req: &ResultRequest,
) -> Result<Answer, StoreError> {
    submit(conn, "result", ctx, |tx, task| {
        let type_ok = matches!(
            (req.result_type, task.task_type),
            (ResultType::Collect, TaskType::Collect) | (ResultType::Purchase, TaskType::Purchase)
        );
        if !type_ok {
            return Err(ApiError::new(
                AdminErrorCode::TaskTypeMismatch,
                format!(
                    "result_type does not match the task type {}",
                    task.task_type.as_str()
                ),
            )
            .with_detail("field", "result_type")
            .into());
        }
        let ts = now();
        // The submission as the client wrote it (key order kept: serde_json preserves
        // order here); the typed `req` is what the rules were checked on.
        let submitted: Value = serde_json::from_str(&ctx.raw_body)?;
        if let Some(data) = req
            .pdd_data
            .as_ref()
            .filter(|_| task.task_type == TaskType::Collect)
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
            let pdd_data = submitted.get("pdd_data").unwrap_or(&Value::Null);
            save_collected(tx, &task.pdd_goods_url, data, pdd_data, &ts)?;
        }
        // `tasks.result_data` is the complete §6 submission as received (data model §4.3
        // "完整的采集提交原文", the audit chain): the body text byte for byte, whose
        // `pdd_data` is the `skus_json` just stored. The latest accepted result wins, as
        // for `skus_json`; every submission stays in `task_results` besides.
        tx.execute(
            "UPDATE tasks SET result_data = ?2 WHERE task_id = ?1",
            params![ctx.task_id, ctx.raw_body],
        )?;
        let result_id = record_result(tx, "result", ctx, &ts)?;
        settle(tx, task, &ctx.client_id, Settle::Result, &ts)?;
        Ok(accepted(result_id, None, ts))
    })
}

/// `POST /tasks/{id}/failure` (§7); the answer carries the task's status afterwards.
pub fn submit_failure(
    conn: &mut Connection,
    ctx: &SubmitCtx,
    req: &FailureRequest,
) -> Result<Answer, StoreError> {
    submit(conn, "failure", ctx, |tx, task| {
        let ts = now();
        let result_id = record_result(tx, "failure", ctx, &ts)?;
        let status = settle(tx, task, &ctx.client_id, Settle::Failure(req), &ts)?;
        if task.task_type == TaskType::Collect && status == "failed" {
            if let Some(goods) = &task.pdd_goods_id {
                mark_collect_failed(tx, goods, &req.error.message, &ts)?;
            }
        }
        Ok(accepted(result_id, Some(status), ts))
    })
}
