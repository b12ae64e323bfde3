//! The account_fingerprints table: per phone serial, the account
//! 个人中心 showed at the first successful check (the baseline), when, the last check,
//! and a different reading waiting for the operator (`ack` of the `account_changed`
//! alert makes it the baseline: [`Store::ack_alerts`]).

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::db::{ts, Store};
use super::error::Result;
use crate::account::{compare, Verdict};
use crate::screen::AccountReading;

/// One phone's recorded account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountFingerprint {
    pub serial: String,
    pub baseline: AccountReading,
    pub first_seen: String,
    pub last_checked: String,
    /// A different reading not yet acknowledged, and when it was first seen.
    pub pending: Option<(AccountReading, String)>,
}

type Row = (
    Option<String>,
    Option<String>,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn read_row(conn: &rusqlite::Connection, serial: &str) -> Result<Option<AccountFingerprint>> {
    let row: Option<Row> = conn
        .query_row(
            "SELECT nickname, masked_phone, first_seen, last_checked, pending_nickname,
                    pending_masked_phone, pending_seen
             FROM account_fingerprints WHERE serial = ?1",
            [serial],
            |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                    r.get(6)?,
                ))
            },
        )
        .optional()?;
    Ok(
        row.map(|(n, p, first, last, pn, pp, ps)| AccountFingerprint {
            serial: serial.to_string(),
            baseline: AccountReading {
                nickname: n,
                masked_phone: p,
            },
            first_seen: first,
            last_checked: last,
            pending: ps.map(|seen| {
                (
                    AccountReading {
                        nickname: pn,
                        masked_phone: pp,
                    },
                    seen,
                )
            }),
        }),
    )
}

impl Store {
    /// The account recorded for `serial`.
    pub fn account_fingerprint(&self, serial: &str) -> Result<Option<AccountFingerprint>> {
        let conn = self.lock();
        read_row(&conn, serial)
    }

    /// Records a successful check of `serial`'s account and says how it compares with
    /// the baseline (returned as it was before): the first reading becomes the baseline;
    /// the same account refreshes it (a new nickname beside the same phone is kept) and
    /// drops a pending reading; another account is kept as pending (the baseline stays
    /// until `ack`).
    pub fn record_account_check(
        &self,
        serial: &str,
        reading: &AccountReading,
        now: DateTime<Utc>,
    ) -> Result<(Verdict, Option<AccountFingerprint>)> {
        self.immediate(|tx| {
            let before = read_row(tx, serial)?;
            let verdict = compare(before.as_ref().map(|f| &f.baseline), reading);
            let at = ts(now);
            match verdict {
                Verdict::Baseline => {
                    tx.execute(
                        "INSERT INTO account_fingerprints
                            (serial, nickname, masked_phone, first_seen, last_checked)
                         VALUES (?1, ?2, ?3, ?4, ?4)",
                        params![serial, reading.nickname, reading.masked_phone, at],
                    )?;
                }
                Verdict::Same => {
                    tx.execute(
                        "UPDATE account_fingerprints SET
                            nickname = COALESCE(?2, nickname),
                            masked_phone = COALESCE(?3, masked_phone),
                            last_checked = ?4,
                            pending_nickname = NULL, pending_masked_phone = NULL,
                            pending_seen = NULL
                         WHERE serial = ?1",
                        params![serial, reading.nickname, reading.masked_phone, at],
                    )?;
                }
                Verdict::Changed => {
                    tx.execute(
                        "UPDATE account_fingerprints SET
                            last_checked = ?4,
                            pending_seen = CASE
                                WHEN pending_seen IS NOT NULL
                                 AND pending_nickname IS ?2 AND pending_masked_phone IS ?3
                                THEN pending_seen ELSE ?4 END,
                            pending_nickname = ?2, pending_masked_phone = ?3
                         WHERE serial = ?1",
                        params![serial, reading.nickname, reading.masked_phone, at],
                    )?;
                }
            }
            Ok((verdict, before))
        })
    }
}

/// Makes every pending reading the baseline (the operator acknowledged the change).
pub(super) fn accept_pending(tx: &rusqlite::Transaction<'_>) -> Result<usize> {
    Ok(tx.execute(
        "UPDATE account_fingerprints SET
            nickname = pending_nickname, masked_phone = pending_masked_phone,
            first_seen = pending_seen,
            pending_nickname = NULL, pending_masked_phone = NULL, pending_seen = NULL
         WHERE pending_seen IS NOT NULL",
        [],
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::t0;

    fn r(nick: &str, phone: &str) -> AccountReading {
        AccountReading {
            nickname: Some(nick.into()),
            masked_phone: Some(phone.into()),
        }
    }

    #[test]
    fn baseline_then_same_then_changed_until_the_ack_accepts_it() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let a = r("拼多多用户", "138****0000");
        let (v, before) = s.record_account_check("127.0.0.1:5555", &a, t0()).unwrap();
        assert_eq!((v, before), (Verdict::Baseline, None));
        // A new nickname on the same phone: same account, nickname recorded.
        let later = t0() + chrono::Duration::hours(1);
        let a2 = r("新昵称", "138****0000");
        let (v, _) = s
            .record_account_check("127.0.0.1:5555", &a2, later)
            .unwrap();
        assert_eq!(v, Verdict::Same);
        let f = s.account_fingerprint("127.0.0.1:5555").unwrap().unwrap();
        assert_eq!(f.baseline, a2);
        assert_eq!(f.first_seen, ts(t0()));
        assert_eq!(f.last_checked, ts(later));
        // Another account: pending, the baseline stays.
        let b = r("别人", "139****1111");
        let (v, before) = s.record_account_check("127.0.0.1:5555", &b, later).unwrap();
        assert_eq!(v, Verdict::Changed);
        assert_eq!(before.unwrap().baseline, a2);
        let f = s.account_fingerprint("127.0.0.1:5555").unwrap().unwrap();
        assert_eq!(f.baseline, a2);
        assert_eq!(f.pending, Some((b.clone(), ts(later))));
        // The operator acknowledges the account_changed alert: b is the baseline.
        s.raise_alert(crate::alert::AlertKind::AccountChanged, None, "x", later)
            .unwrap();
        assert_eq!(s.ack_alerts(None, later).unwrap(), 1);
        let f = s.account_fingerprint("127.0.0.1:5555").unwrap().unwrap();
        assert_eq!((f.baseline, f.pending), (b.clone(), None));
        let (v, _) = s.record_account_check("127.0.0.1:5555", &b, later).unwrap();
        assert_eq!(v, Verdict::Same);
        // Another phone has its own baseline.
        let (v, _) = s.record_account_check("emulator-5554", &a, later).unwrap();
        assert_eq!(v, Verdict::Baseline);
    }

    #[test]
    fn acking_another_alert_keeps_the_pending_reading_pending() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        s.record_account_check("p", &r("a", "138****0000"), t0())
            .unwrap();
        s.record_account_check("p", &r("b", "139****0000"), t0())
            .unwrap();
        let id = s
            .raise_alert(crate::alert::AlertKind::AccountPaused, None, "x", t0())
            .unwrap();
        s.ack_alerts(Some(id), t0()).unwrap();
        let f = s.account_fingerprint("p").unwrap().unwrap();
        assert_eq!(f.baseline.masked_phone.as_deref(), Some("138****0000"));
        assert!(f.pending.is_some());
    }
}
