//! The spec_resolutions table: spec resolution requests (§7.1), stored before their
//! first send so a retry reuses the same idempotency key and body, then resolved or
//! abandoned.

use chrono::{DateTime, Utc};
use rusqlite::{params, Connection, OptionalExtension};

use super::db::{ts, Store};
use super::error::{Result, StoreError};

/// A spec resolution request (§7.1) as stored before its first send.
#[derive(Clone, Debug)]
pub struct SpecResolutionRecord {
    pub id: i64,
    pub run_id: i64,
    pub remote_task_id: String,
    pub idempotency_key: String,
    pub candidate_snapshot_hash: String,
    pub request_body: Vec<u8>,
    /// `pending`, `resolved` or `abandoned`.
    pub state: String,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub response: Option<Vec<u8>>,
}

impl Store {
    /// Stores a spec resolution request before its first send, or returns the stored
    /// one for the same key. The same key with a different body is a conflict: the
    /// contract forbids changing the content under an old key (§7.1).
    pub fn spec_resolution_begin(
        &self,
        run_id: i64,
        remote_task_id: &str,
        idempotency_key: &str,
        candidate_snapshot_hash: &str,
        body: &[u8],
        now: DateTime<Utc>,
    ) -> Result<SpecResolutionRecord> {
        self.durable(|tx| {
            if let Some(rec) = spec_by_key(tx, idempotency_key)? {
                if rec.request_body != body {
                    return Err(StoreError::Conflict(format!(
                        "spec resolution key {idempotency_key} already holds a different body"
                    )));
                }
                return Ok(rec);
            }
            tx.execute(
                "INSERT INTO spec_resolutions (run_id, remote_task_id, idempotency_key,
                        candidate_snapshot_hash, request_body, state, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, 'pending', ?6, ?6)",
                params![
                    run_id,
                    remote_task_id,
                    idempotency_key,
                    candidate_snapshot_hash,
                    body,
                    ts(now)
                ],
            )?;
            spec_by_key(tx, idempotency_key)?
                .ok_or_else(|| StoreError::NotFound("spec resolution just written".into()))
        })
    }

    pub fn spec_resolution_attempt(
        &self,
        id: i64,
        error: Option<&str>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE spec_resolutions SET attempts = attempts + 1, last_error = ?2, updated_at = ?3
             WHERE id = ?1",
            params![id, error, ts(now)],
        )?;
        Ok(())
    }

    pub fn spec_resolution_resolved(
        &self,
        id: i64,
        resolution_id: &str,
        outcome: &str,
        response: &[u8],
        now: DateTime<Utc>,
    ) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE spec_resolutions SET state = 'resolved', resolution_id = ?2, outcome = ?3,
                    response = ?4, last_error = NULL, updated_at = ?5
             WHERE id = ?1",
            params![id, resolution_id, outcome, response, ts(now)],
        )?;
        Ok(())
    }

    pub fn spec_resolution_abandon(&self, id: i64, error: &str, now: DateTime<Utc>) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE spec_resolutions SET state = 'abandoned', last_error = ?2, updated_at = ?3
             WHERE id = ?1",
            params![id, error, ts(now)],
        )?;
        Ok(())
    }

    pub fn spec_resolution(&self, idempotency_key: &str) -> Result<Option<SpecResolutionRecord>> {
        let conn = self.lock();
        spec_by_key(&conn, idempotency_key)
    }
}

fn spec_by_key(conn: &Connection, key: &str) -> Result<Option<SpecResolutionRecord>> {
    Ok(conn
        .query_row(
            "SELECT id, run_id, remote_task_id, idempotency_key, candidate_snapshot_hash,
                    request_body, state, attempts, last_error, response
             FROM spec_resolutions WHERE idempotency_key = ?1",
            [key],
            |r| {
                let attempts: i64 = r.get(7)?;
                Ok(SpecResolutionRecord {
                    id: r.get(0)?,
                    run_id: r.get(1)?,
                    remote_task_id: r.get(2)?,
                    idempotency_key: r.get(3)?,
                    candidate_snapshot_hash: r.get(4)?,
                    request_body: r.get(5)?,
                    state: r.get(6)?,
                    attempts: attempts.clamp(0, u32::MAX as i64) as u32,
                    last_error: r.get(8)?,
                    response: r.get(9)?,
                })
            },
        )
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::{t0, task};

    #[test]
    fn spec_resolution_keeps_the_first_body() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let id = s.save_claimed_task(&task("cg3"), "{}", t0()).unwrap();
        let run = s.start_run(id, t0()).unwrap();
        let r = s
            .spec_resolution_begin(run.id, "cg3", "k", "h", b"body", t0())
            .unwrap();
        let again = s
            .spec_resolution_begin(run.id, "cg3", "k", "h", b"body", t0())
            .unwrap();
        assert_eq!(r.id, again.id);
        assert!(matches!(
            s.spec_resolution_begin(run.id, "cg3", "k", "h", b"other", t0()),
            Err(StoreError::Conflict(_))
        ));
    }
}
