//! §7.1 `spec_resolutions`: transaction 1 ([`spec_observe`]: every check that needs the
//! database, then the observation), the resolver outside any transaction (in the HTTP
//! layer), transaction 2 ([`spec_decide`]: the decision, its replayable answer and the
//! idempotency row), and the records the operator lists.

use super::claim_history::require_claimed;
use super::clients::touch_client;
use super::clock::now;
use super::idempotency::{remember, replay, Answer, OnConflict, SubmitCtx};
use super::tasks::require_task;
use crate::db::immediate;
use crate::error::{ApiError, StoreError};
use crate::journal::Outcome;
use cmautobuy_contract::{AdminErrorCode, SpecResolutionRequest, TaskType};
use rusqlite::{params, Connection, OptionalExtension, Transaction};

/// What the first short transaction decided.
pub enum Observed {
    /// A stored answer exists for this request: replay it.
    Replay(Answer),
    /// The observation is stored (now or by an earlier, undecided attempt): resolve it.
    Resolve {
        resolution_id: String,
        reusable: Option<Reusable>,
    },
}

/// An earlier `matched` decision on the same snapshot and target size (another attempt
/// or task).
#[derive(Debug, Clone)]
pub struct Reusable {
    pub candidate_id: String,
    pub confidence_bps: Option<i64>,
}

/// Transaction 1 of §7.1: every check that needs the database, then the observation is
/// persisted. Returns quickly; the resolver runs after it, outside any transaction.
pub fn spec_observe(
    conn: &mut Connection,
    ctx: &SubmitCtx,
    req: &SpecResolutionRequest,
) -> Result<Observed, StoreError> {
    let tx = immediate(conn)?;
    if let Some(a) = replay(&tx, "spec_resolution", ctx)? {
        touch_client(&tx, &ctx.client_id, &now())?;
        tx.commit()?;
        return Ok(Observed::Replay(a));
    }
    let task = require_task(&tx, &ctx.task_id)?;
    let claimed = require_claimed(&tx, &ctx.task_id, &ctx.client_id)?;
    if task.task_type != TaskType::Purchase {
        return Err(ApiError::new(
            AdminErrorCode::TaskNotPurchase,
            "spec resolution is only for purchase tasks",
        )
        .into());
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
            .with_detail("idempotency_key", ctx.key.as_str())
            .into())
        }
        Some((_, _, Some(body))) => Observed::Replay(Answer {
            status: 200,
            body,
            outcome: Outcome::Replayed,
        }),
        Some((resolution_id, _, None)) => Observed::Resolve {
            reusable: reusable(&tx, &ctx.task_id, req)?,
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
                reusable: reusable(&tx, &ctx.task_id, req)?,
                resolution_id,
            }
        }
    };
    touch_client(&tx, &ctx.client_id, &ts)?;
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
) -> Result<Option<Reusable>, StoreError> {
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
            |r| {
                Ok(Reusable {
                    candidate_id: r.get(0)?,
                    confidence_bps: r.get(1)?,
                })
            },
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
    /// The §7.1 answer, replayed byte for byte from now on.
    pub body: &'a [u8],
}

/// Transaction 2 of §7.1: the decision, its replayable answer and the idempotency row,
/// together. When a concurrent duplicate decided first, its answer wins and is returned.
pub fn spec_decide(
    conn: &mut Connection,
    ctx: &SubmitCtx,
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
    remember(
        &tx,
        "spec_resolution",
        ctx,
        200,
        &body,
        d.resolved_at,
        OnConflict::KeepFirst,
    )?;
    tx.commit()?;
    Ok(Answer {
        status: 200,
        body,
        outcome,
    })
}

/// One `spec_resolutions` record: the observation and, once decided, the decision.
/// `candidates` is the JSON text stored from the request.
#[derive(Debug, Clone)]
pub struct SpecResolutionRow {
    pub resolution_id: String,
    pub task_id: String,
    pub attempt_id: String,
    pub candidate_snapshot_hash: String,
    pub client_id: String,
    pub task_version: i64,
    pub pdd_goods_id: String,
    pub selected_color: String,
    pub target_size: String,
    pub candidates: String,
    pub observed_at: String,
    pub received_at: String,
    pub outcome: Option<String>,
    pub source: Option<String>,
    pub match_candidate_id: Option<String>,
    pub confidence_bps: Option<i64>,
    pub reason: Option<String>,
    pub resolved_at: Option<String>,
}

/// Every record, in arrival order.
pub fn list_spec_resolutions(conn: &mut Connection) -> Result<Vec<SpecResolutionRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT resolution_id, task_id, attempt_id, candidate_snapshot_hash, client_id,
            task_version, pdd_goods_id, selected_color, target_size, candidates, observed_at,
            received_at, outcome, source, match_candidate_id, confidence_bps, reason, resolved_at
         FROM spec_resolutions ORDER BY received_at, rowid",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(SpecResolutionRow {
                resolution_id: r.get(0)?,
                task_id: r.get(1)?,
                attempt_id: r.get(2)?,
                candidate_snapshot_hash: r.get(3)?,
                client_id: r.get(4)?,
                task_version: r.get(5)?,
                pdd_goods_id: r.get(6)?,
                selected_color: r.get(7)?,
                target_size: r.get(8)?,
                candidates: r.get(9)?,
                observed_at: r.get(10)?,
                received_at: r.get(11)?,
                outcome: r.get(12)?,
                source: r.get(13)?,
                match_candidate_id: r.get(14)?,
                confidence_bps: r.get(15)?,
                reason: r.get(16)?,
                resolved_at: r.get(17)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}
