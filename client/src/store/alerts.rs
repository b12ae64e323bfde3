//! The operator_alerts table: what only a human can resolve (protocol errors from the
//! Admin, a claim that was not saved here, a rejected claim). Open alerts stop claiming
//! until acknowledged.

use crate::alert::AlertKind;
use chrono::{DateTime, Utc};
use rusqlite::params;

use super::db::{ts, Store};
use super::error::Result;

/// An operator alert: something a human must see; an open one of a blocking kind stops
/// claiming ([`AlertKind::blocks_claims`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Alert {
    pub id: i64,
    pub kind: AlertKind,
    pub remote_task_id: Option<String>,
    pub message: String,
    pub raised_at: String,
}

/// Stored as its stable name ([`AlertKind::as_str`]).
impl rusqlite::ToSql for AlertKind {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.as_str().into())
    }
}

/// A name no kind has is a damaged (or newer) store, never a silent default.
impl rusqlite::types::FromSql for AlertKind {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let name = v.as_str()?;
        AlertKind::parse(name).ok_or_else(|| {
            rusqlite::types::FromSqlError::Other(format!("unknown alert kind {name:?}").into())
        })
    }
}

impl Store {
    pub fn raise_alert(
        &self,
        kind: AlertKind,
        remote_task_id: Option<&str>,
        message: &str,
        now: DateTime<Utc>,
    ) -> Result<i64> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO operator_alerts (kind, remote_task_id, message, raised_at)
             VALUES (?1, ?2, ?3, ?4)",
            params![kind, remote_task_id, message, ts(now)],
        )?;
        Ok(conn.last_insert_rowid())
    }

    pub fn open_alerts(&self) -> Result<Vec<Alert>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id, kind, remote_task_id, message, raised_at FROM operator_alerts
             WHERE acked_at IS NULL ORDER BY id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok(Alert {
                id: r.get(0)?,
                kind: r.get(1)?,
                remote_task_id: r.get(2)?,
                message: r.get(3)?,
                raised_at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Resolves every open alert of `kind` (the client's own resolution of a condition
    /// that has passed, such as `low_disk`); returns how many were open.
    pub fn resolve_alerts(&self, kind: AlertKind, now: DateTime<Utc>) -> Result<usize> {
        let conn = self.lock();
        Ok(conn.execute(
            "UPDATE operator_alerts SET acked_at = ?2 WHERE kind = ?1 AND acked_at IS NULL",
            params![kind, ts(now)],
        )?)
    }

    /// Resolves every open alert of `kind` whose message starts with `prefix` (a
    /// condition the client saw pass, e.g. a refused token that now works); returns how
    /// many were open.
    pub fn resolve_alerts_starting(
        &self,
        kind: AlertKind,
        prefix: &str,
        now: DateTime<Utc>,
    ) -> Result<usize> {
        let conn = self.lock();
        Ok(conn.execute(
            "UPDATE operator_alerts SET acked_at = ?3
             WHERE kind = ?1 AND acked_at IS NULL AND substr(message, 1, length(?2)) = ?2",
            params![kind, prefix, ts(now)],
        )?)
    }

    /// What `cmautobuy-client ack [N]` and the console's ack button do: with an id, a
    /// `pdd_version_unproven` alert also proves its version by hand (`ack N by WHO`);
    /// then the alert (or every open one) is acknowledged. Returns how many were open and
    /// the `(device, version)` proven, if any.
    pub fn operator_ack(
        &self,
        id: Option<i64>,
        who: &str,
        now: DateTime<Utc>,
    ) -> Result<(usize, Option<(String, String)>)> {
        let proven = match id {
            Some(id) => self.prove_pdd_version_by_ack(id, who, now)?,
            None => None,
        };
        let n = self.ack_alerts(id, now)?;
        Ok((n, proven))
    }

    /// Acknowledges one alert or all (`None`); returns how many were open. Acknowledging
    /// an `account_changed` alert accepts the account read since as the phone's new
    /// baseline, in the same transaction.
    pub fn ack_alerts(&self, id: Option<i64>, now: DateTime<Utc>) -> Result<usize> {
        self.immediate(|tx| {
            let account: i64 = match id {
                Some(id) => tx.query_row(
                    "SELECT COUNT(*) FROM operator_alerts
                     WHERE id = ?1 AND acked_at IS NULL AND kind = ?2",
                    params![id, AlertKind::AccountChanged],
                    |r| r.get(0),
                )?,
                None => tx.query_row(
                    "SELECT COUNT(*) FROM operator_alerts WHERE acked_at IS NULL AND kind = ?1",
                    [AlertKind::AccountChanged],
                    |r| r.get(0),
                )?,
            };
            let n = match id {
                Some(id) => tx.execute(
                    "UPDATE operator_alerts SET acked_at = ?2 WHERE id = ?1 AND acked_at IS NULL",
                    params![id, ts(now)],
                )?,
                None => tx.execute(
                    "UPDATE operator_alerts SET acked_at = ?1 WHERE acked_at IS NULL",
                    params![ts(now)],
                )?,
            };
            if account > 0 {
                super::account::accept_pending(tx)?;
            }
            Ok(n)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::t0;

    #[test]
    fn an_acknowledged_alert_is_no_longer_open() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let a = s
            .raise_alert(
                crate::alert::AlertKind::ClaimNotSaved,
                Some("cg9"),
                "disk",
                t0(),
            )
            .unwrap();
        assert_eq!(s.open_alerts().unwrap().len(), 1);
        assert_eq!(s.ack_alerts(Some(a), t0()).unwrap(), 1);
        assert!(s.open_alerts().unwrap().is_empty());
    }
}
