//! The account fingerprint, sans-IO: whether what 个人中心 shows now is
//! the account recorded for this phone, and when the account check is due.
//!
//! **What is compared.** Both the nickname and the masked phone are stored. The masked
//! phone is the fingerprint whenever both sides have one (a nickname is changed by its
//! owner far more often than the phone number): same phone → the same account (a new
//! nickname is recorded, no alert). Only when one side has no phone are the nicknames
//! compared. Nothing comparable (one side only a phone, the other only a nickname) is a
//! change: it fails closed.
//!
//! **When.** At the first passing device check of a run (before the first claim that
//! could be live), then when the last successful check is [`CHECK_EVERY`] old (the
//! store's `last_checked` per device); never inside a task (the claim loop asks between
//! tasks). A check that failed is tried again after [`RETRY_AFTER`]; until one succeeds
//! the client declares `dry_run`.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::screen::AccountReading;

/// A successful check holds this long.
pub const CHECK_EVERY: Duration = Duration::from_secs(24 * 3600);

/// A failed check (page not reached) is tried again after this long.
pub const RETRY_AFTER: Duration = Duration::from_secs(5 * 60);

/// How a reading compares with the recorded baseline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// No baseline yet: this reading becomes it (no alert).
    Baseline,
    /// The same account (maybe a new nickname beside the same phone: recorded).
    Same,
    /// Another account: live stops until a human acknowledges.
    Changed,
}

/// Compares `now` with the recorded `baseline` (see the module documentation).
pub fn compare(baseline: Option<&AccountReading>, now: &AccountReading) -> Verdict {
    let Some(b) = baseline else {
        return Verdict::Baseline;
    };
    match (&b.masked_phone, &now.masked_phone) {
        (Some(x), Some(y)) => return verdict(x == y),
        (Some(_), None) | (None, Some(_)) if b.nickname.is_none() || now.nickname.is_none() => {
            return Verdict::Changed
        }
        _ => {}
    }
    match (&b.nickname, &now.nickname) {
        (Some(x), Some(y)) => verdict(x == y),
        _ => Verdict::Changed,
    }
}

fn verdict(same: bool) -> Verdict {
    if same {
        Verdict::Same
    } else {
        Verdict::Changed
    }
}

/// The check's state in one run of the claim loop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckState {
    /// The last successful check (this run).
    pub ok_at: Option<DateTime<Utc>>,
    /// The last failed check since then, and why.
    pub failed: Option<(DateTime<Utc>, String)>,
}

impl CheckState {
    /// Whether a check is due now.
    pub fn due(&self, now: DateTime<Utc>) -> bool {
        let every = chrono::Duration::from_std(CHECK_EVERY).unwrap_or(chrono::Duration::days(1));
        let retry = chrono::Duration::from_std(RETRY_AFTER).unwrap_or(chrono::Duration::minutes(5));
        if let Some((at, _)) = &self.failed {
            return now - *at >= retry;
        }
        match self.ok_at {
            None => true,
            Some(at) => now - at >= every,
        }
    }

    /// Why live is refused for the account check, if it is: no successful check yet this
    /// run (or the last one is older than a day and the next failed).
    pub fn refusal(&self, now: DateTime<Utc>) -> Option<String> {
        let every = chrono::Duration::from_std(CHECK_EVERY).unwrap_or(chrono::Duration::days(1));
        let fresh = self.ok_at.is_some_and(|at| now - at < every);
        if fresh {
            return None;
        }
        Some(match &self.failed {
            Some((_, why)) => format!("account check failed: {why}"),
            None => "account not checked yet on this phone".into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn r(nick: Option<&str>, phone: Option<&str>) -> AccountReading {
        AccountReading {
            nickname: nick.map(Into::into),
            masked_phone: phone.map(Into::into),
        }
    }

    #[test]
    fn the_masked_phone_decides_when_both_have_one() {
        let base = r(Some("拼多多用户"), Some("138****0000"));
        assert_eq!(compare(None, &base), Verdict::Baseline);
        assert_eq!(compare(Some(&base), &base), Verdict::Same);
        // A new nickname on the same phone: the same account.
        assert_eq!(
            compare(Some(&base), &r(Some("新昵称"), Some("138****0000"))),
            Verdict::Same
        );
        // Another phone under the same nickname: another account.
        assert_eq!(
            compare(Some(&base), &r(Some("拼多多用户"), Some("139****1111"))),
            Verdict::Changed
        );
    }

    #[test]
    fn nicknames_only_without_a_phone_and_nothing_comparable_fails_closed() {
        let nick_only = r(Some("拼多多用户"), None);
        assert_eq!(compare(Some(&nick_only), &nick_only), Verdict::Same);
        assert_eq!(
            compare(Some(&nick_only), &r(Some("别人"), None)),
            Verdict::Changed
        );
        // The baseline had a phone, now only the nickname shows: the nicknames decide.
        assert_eq!(
            compare(
                Some(&r(Some("拼多多用户"), Some("138****0000"))),
                &nick_only
            ),
            Verdict::Same
        );
        assert_eq!(
            compare(Some(&r(None, Some("138****0000"))), &nick_only),
            Verdict::Changed
        );
        assert_eq!(
            compare(Some(&nick_only), &r(None, Some("138****0000"))),
            Verdict::Changed
        );
    }

    #[test]
    fn due_at_start_daily_and_five_minutes_after_a_failure() {
        let t0 = Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap();
        let mut s = CheckState::default();
        assert!(s.due(t0));
        assert_eq!(
            s.refusal(t0).as_deref(),
            Some("account not checked yet on this phone")
        );
        s.failed = Some((t0, "个人中心 not reached".into()));
        assert!(!s.due(t0 + chrono::Duration::minutes(4)));
        assert!(s.due(t0 + chrono::Duration::minutes(5)));
        assert!(s.refusal(t0).unwrap().contains("个人中心 not reached"));
        s = CheckState {
            ok_at: Some(t0),
            failed: None,
        };
        assert!(!s.due(t0 + chrono::Duration::hours(23)));
        assert_eq!(s.refusal(t0 + chrono::Duration::hours(23)), None);
        assert!(s.due(t0 + chrono::Duration::hours(24)));
        assert!(s.refusal(t0 + chrono::Duration::hours(24)).is_some());
    }
}
