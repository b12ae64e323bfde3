//! The `pdd_versions` table: every PDD version each phone has shown,
//! when it was first seen, and whether it is proven — by a dry-run purchase that
//! succeeded on it (`proven_by` = the attempt id) or by an operator's `ack N` of its
//! `pdd_version_unproven` alert (`proven_by` = `ack N by USER`). Live purchases are
//! declared only on a proven version ([`crate::gate::version_hold`]).

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::db::{ts, Store};
use super::error::Result;

/// One version on one phone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PddVersionRow {
    pub device: String,
    pub version: String,
    pub first_seen: String,
    pub proven_at: Option<String>,
    pub proven_by: Option<String>,
    /// The open (or last) `pdd_version_unproven` alert raised for it.
    pub alert_id: Option<i64>,
}

impl Store {
    /// Records that `device` shows `version` (first seen now unless known); returns the
    /// row.
    pub fn note_pdd_version(
        &self,
        device: &str,
        version: &str,
        now: DateTime<Utc>,
    ) -> Result<PddVersionRow> {
        self.lock().execute(
            "INSERT INTO pdd_versions (device, version, first_seen) VALUES (?1, ?2, ?3)
             ON CONFLICT (device, version) DO NOTHING",
            params![device, version, ts(now)],
        )?;
        Ok(self
            .pdd_version(device, version)?
            .unwrap_or_else(|| PddVersionRow {
                device: device.into(),
                version: version.into(),
                first_seen: ts(now),
                proven_at: None,
                proven_by: None,
                alert_id: None,
            }))
    }

    /// The row of `version` on `device`, if it was ever seen.
    pub fn pdd_version(&self, device: &str, version: &str) -> Result<Option<PddVersionRow>> {
        let conn = self.lock();
        Ok(conn
            .query_row(
                "SELECT device, version, first_seen, proven_at, proven_by, alert_id
                 FROM pdd_versions WHERE device = ?1 AND version = ?2",
                params![device, version],
                version_row,
            )
            .optional()?)
    }

    /// Marks `version` proven on `device` by `by` (an attempt id, or `ack N by USER`),
    /// once: a proof already recorded is kept. Returns whether this call proved it.
    pub fn prove_pdd_version(
        &self,
        device: &str,
        version: &str,
        by: &str,
        now: DateTime<Utc>,
    ) -> Result<bool> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO pdd_versions (device, version, first_seen) VALUES (?1, ?2, ?3)
             ON CONFLICT (device, version) DO NOTHING",
            params![device, version, ts(now)],
        )?;
        let n = conn.execute(
            "UPDATE pdd_versions SET proven_at = ?3, proven_by = ?4
             WHERE device = ?1 AND version = ?2 AND proven_at IS NULL",
            params![device, version, ts(now), by],
        )?;
        Ok(n > 0)
    }

    /// Remembers the alert raised for an unproven version (so `ack N` can prove it).
    pub fn set_pdd_version_alert(&self, device: &str, version: &str, alert_id: i64) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE pdd_versions SET alert_id = ?3 WHERE device = ?1 AND version = ?2",
            params![device, version, alert_id],
        )?;
        Ok(())
    }

    /// `ack N` of a `pdd_version_unproven` alert: proves the version it was raised for,
    /// recording who and when (`ack N by USER`). Returns the `(device, version)` proven.
    pub fn prove_pdd_version_by_ack(
        &self,
        alert_id: i64,
        who: &str,
        now: DateTime<Utc>,
    ) -> Result<Option<(String, String)>> {
        self.immediate(|tx| {
            let row: Option<(String, String)> = tx
                .query_row(
                    "SELECT device, version FROM pdd_versions
                     WHERE alert_id = ?1 AND proven_at IS NULL",
                    params![alert_id],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?;
            let Some((device, version)) = row else {
                return Ok(None);
            };
            tx.execute(
                "UPDATE pdd_versions SET proven_at = ?3, proven_by = ?4
                 WHERE device = ?1 AND version = ?2 AND proven_at IS NULL",
                params![device, version, ts(now), format!("ack {alert_id} by {who}")],
            )?;
            Ok(Some((device, version)))
        })
    }

    /// Every version of every phone, newest first (for `status`).
    pub fn pdd_versions(&self) -> Result<Vec<PddVersionRow>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT device, version, first_seen, proven_at, proven_by, alert_id
             FROM pdd_versions ORDER BY first_seen DESC, rowid DESC",
        )?;
        let rows = stmt.query_map([], version_row)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}

/// One `pdd_versions` row, selected as `device, version, first_seen, proven_at,
/// proven_by, alert_id`.
fn version_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PddVersionRow> {
    Ok(PddVersionRow {
        device: r.get(0)?,
        version: r.get(1)?,
        first_seen: r.get(2)?,
        proven_at: r.get(3)?,
        proven_by: r.get(4)?,
        alert_id: r.get(5)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::t0;

    #[test]
    fn a_version_is_seen_once_proven_once_and_survives_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        let path = Store::path_in(dir.path());
        let s = Store::open(&path).unwrap();
        let r = s.note_pdd_version("tcp:p1", "7.36.0", t0()).unwrap();
        assert_eq!(r.proven_at, None);
        let later = t0() + chrono::Duration::minutes(5);
        // Seen again later: first_seen stays.
        let again = s.note_pdd_version("tcp:p1", "7.36.0", later).unwrap();
        assert_eq!(again.first_seen, r.first_seen);
        assert!(s
            .prove_pdd_version("tcp:p1", "7.36.0", "attempt-1", later)
            .unwrap());
        assert!(!s
            .prove_pdd_version("tcp:p1", "7.36.0", "attempt-2", later)
            .unwrap());
        // Another phone, another version: unproven.
        s.note_pdd_version("tcp:p2", "7.36.0", t0()).unwrap();
        drop(s);
        let s = Store::open(&path).unwrap();
        let r = s.pdd_version("tcp:p1", "7.36.0").unwrap().unwrap();
        assert_eq!(r.proven_by.as_deref(), Some("attempt-1"));
        assert!(r.proven_at.is_some());
        assert_eq!(
            s.pdd_version("tcp:p2", "7.36.0")
                .unwrap()
                .unwrap()
                .proven_at,
            None
        );
        assert_eq!(s.pdd_version("tcp:p1", "7.99.0").unwrap(), None);
        assert_eq!(s.pdd_versions().unwrap().len(), 2);
    }

    #[test]
    fn ack_of_its_alert_proves_a_version_with_who_and_when() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        s.note_pdd_version("tcp:p1", "7.99.0", t0()).unwrap();
        let a = s
            .raise_alert(
                crate::alert::AlertKind::PddVersionUnproven,
                None,
                "PDD 7.99.0",
                t0(),
            )
            .unwrap();
        s.set_pdd_version_alert("tcp:p1", "7.99.0", a).unwrap();
        assert_eq!(
            s.prove_pdd_version_by_ack(a + 1, "ops", t0()).unwrap(),
            None
        );
        assert_eq!(
            s.prove_pdd_version_by_ack(a, "ops", t0()).unwrap(),
            Some(("tcp:p1".into(), "7.99.0".into()))
        );
        let r = s.pdd_version("tcp:p1", "7.99.0").unwrap().unwrap();
        assert_eq!(r.proven_by, Some(format!("ack {a} by ops")));
        // Once proven, a second ack proves nothing new.
        assert_eq!(s.prove_pdd_version_by_ack(a, "ops", t0()).unwrap(), None);
    }
}
