//! `idempotency_keys`: the first stored answer per key, replayed byte for byte; a key
//! reused with different content is a 409.

use crate::error::{ApiError, StoreError};
use crate::journal::Outcome;
use cmautobuy_contract::AdminErrorCode;
use rusqlite::{params, OptionalExtension, Transaction};

/// A stored answer: status, exact body bytes and how the journal should call it.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    pub body: Vec<u8>,
    pub outcome: Outcome,
}

impl Answer {
    /// A first answer (`200`, journaled `fresh`).
    pub fn fresh(body: Vec<u8>) -> Answer {
        Answer {
            status: 200,
            body,
            outcome: Outcome::Fresh,
        }
    }
}

/// What a keyed submission needs besides its parsed body.
#[derive(Debug, Clone)]
pub struct SubmitCtx {
    pub task_id: String,
    pub client_id: String,
    /// The `Idempotency-Key`.
    pub key: String,
    /// [`super::canonical_hash`] of the body: what a reused key is compared by.
    pub request_hash: String,
    /// The body as received, stored for the audit trail (results and failures; §7.1
    /// stores only the request's known fields and leaves this empty).
    pub raw_body: String,
}

/// Looks up a stored answer for the key: same content → the stored bytes (`Replayed`);
/// different content → 409.
pub(super) fn replay(
    tx: &Transaction<'_>,
    endpoint: &str,
    ctx: &SubmitCtx,
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
        .with_detail("idempotency_key", ctx.key.as_str())
        .into()),
    }
}

/// What [`remember`] does when the key already has a stored answer.
pub(super) enum OnConflict {
    /// Fail (results and failures: their transaction checked the key first).
    Error,
    /// Keep the first (§7.1's second transaction: a concurrent duplicate decided first).
    KeepFirst,
}

/// Stores the answer for the key, in the transaction that made it.
pub(super) fn remember(
    tx: &Transaction<'_>,
    endpoint: &str,
    ctx: &SubmitCtx,
    status: u16,
    body: &[u8],
    ts: &str,
    on_conflict: OnConflict,
) -> Result<(), StoreError> {
    let insert = "INSERT INTO idempotency_keys (endpoint, task_id, client_id, idem_key,
            request_hash, response_status, response_body, created_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
    let sql = match on_conflict {
        OnConflict::Error => insert.to_string(),
        OnConflict::KeepFirst => format!("{insert} ON CONFLICT DO NOTHING"),
    };
    tx.execute(
        &sql,
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
