//! What a human should hear about (`notify_events`) and the webhook queue
//! (`webhook_deliveries`).
//!
//! Events come from triggers (migration 3: an operator alert of any kind, a
//! `manual_review` outcome, an outbox item parked, a device pause starting) with only
//! their source filled, or from the notifier itself (time-based events, the daily
//! summary). The notifier resolves a `new` event (kind, subject, payload), decides
//! `sent` or `suppressed` (deduplication), and queues one delivery per webhook in the
//! same transaction. Deliveries are retried with backoff until delivered or given up.
//! Webhooks are named by an id derived from their URL, never by the URL (it holds keys).

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::alerts::Alert;
use super::db::{get_setting, put_setting, ts, Store};
use super::error::Result;

/// An event the notifier has not looked at yet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewEvent {
    pub id: i64,
    /// `alert`, `manual_review`, `outbox_parked` (from triggers) or what the notifier
    /// inserted (`check`, `summary`).
    pub source: String,
    pub source_id: Option<i64>,
    pub kind: Option<String>,
    pub subject: Option<String>,
    pub payload: Option<String>,
    pub created_at: String,
}

/// A delivery due now, with its event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueDelivery {
    pub id: i64,
    pub webhook: String,
    /// Attempts made so far.
    pub attempts: u32,
    pub event_id: i64,
    pub kind: String,
    pub subject: String,
    pub payload: String,
    pub event_at: String,
    pub created_at: String,
}

/// How an event was resolved ([`Store::notify_resolve`]).
#[derive(Clone, Copy, Debug)]
pub struct Resolution<'a> {
    pub kind: &'a str,
    pub subject: &'a str,
    /// The message as JSON.
    pub payload: &'a str,
    /// A duplicate of one sent within the window: recorded, not delivered.
    pub suppressed: bool,
    /// The ids of the webhooks that want it.
    pub webhooks: &'a [String],
}

/// Counts over one period, for the daily summary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeriodReport {
    /// Run outcome labels (`succeeded`, `failed:GOODS_MISMATCH`, …) and how many.
    pub outcomes: Vec<(String, i64)>,
    /// Live purchases that succeeded (an order placed, never paid).
    pub orders_placed: i64,
    /// Runs that reached the irreversible mark (a submit was attempted).
    pub submits: i64,
    /// Device pauses that started.
    pub device_pauses: i64,
    /// Operator alerts raised, by kind.
    pub alerts: Vec<(String, i64)>,
    /// Outbox items parked.
    pub parked: i64,
    /// Outbox items parked now (whenever they were parked).
    pub parked_now: i64,
    /// Webhook deliveries given up.
    pub webhooks_given_up: i64,
}

impl Store {
    /// One operator alert by id (the notifier reads the alert an event names).
    pub fn alert(&self, id: i64) -> Result<Option<Alert>> {
        let conn = self.lock();
        Ok(conn
            .query_row(
                "SELECT id, kind, remote_task_id, message, raised_at FROM operator_alerts
                 WHERE id = ?1",
                [id],
                |r| {
                    Ok(Alert {
                        id: r.get(0)?,
                        kind: r.get(1)?,
                        remote_task_id: r.get(2)?,
                        message: r.get(3)?,
                        raised_at: r.get(4)?,
                    })
                },
            )
            .optional()?)
    }

    /// Events not yet resolved, oldest first, at most `limit`.
    pub fn notify_new_events(&self, limit: usize) -> Result<Vec<NewEvent>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT id, source, source_id, kind, subject, payload, created_at FROM notify_events
             WHERE state = 'new' ORDER BY id LIMIT ?1",
        )?;
        let rows = stmt.query_map([limit as i64], |r| {
            Ok(NewEvent {
                id: r.get(0)?,
                source: r.get(1)?,
                source_id: r.get(2)?,
                kind: r.get(3)?,
                subject: r.get(4)?,
                payload: r.get(5)?,
                created_at: r.get(6)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Whether an event of `kind` about `subject` was sent at or after `since`.
    pub fn notify_sent_since(
        &self,
        kind: &str,
        subject: &str,
        since: DateTime<Utc>,
    ) -> Result<bool> {
        let conn = self.lock();
        let n: i64 = conn.query_row(
            "SELECT COUNT(*) FROM notify_events
             WHERE kind = ?1 AND subject = ?2 AND state = 'sent' AND created_at >= ?3",
            params![kind, subject, ts(since)],
            |r| r.get(0),
        )?;
        Ok(n > 0)
    }

    /// Adds an event the notifier found itself (not from a trigger); it is resolved like
    /// the others.
    pub fn notify_insert(
        &self,
        source: &str,
        kind: &str,
        subject: &str,
        payload: &str,
        now: DateTime<Utc>,
    ) -> Result<i64> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO notify_events (source, kind, subject, payload, state, created_at)
             VALUES (?1, ?2, ?3, ?4, 'new', ?5)",
            params![source, kind, subject, payload, ts(now)],
        )?;
        Ok(conn.last_insert_rowid())
    }

    /// Resolves event `id`: its kind, subject and payload, `sent` with one pending
    /// delivery per webhook in `webhooks`, or `suppressed` (a duplicate) — one
    /// transaction. An event no webhook wants is recorded as `internal`.
    pub fn notify_resolve(&self, id: i64, r: &Resolution<'_>, now: DateTime<Utc>) -> Result<()> {
        let Resolution {
            kind,
            subject,
            payload,
            suppressed,
            webhooks,
        } = *r;
        self.immediate(|tx| {
            tx.execute(
                "UPDATE notify_events SET kind = ?2, subject = ?3, payload = ?4, state = ?5
                 WHERE id = ?1",
                params![
                    id,
                    kind,
                    subject,
                    payload,
                    if suppressed {
                        "suppressed"
                    } else if webhooks.is_empty() {
                        // Sent to nobody: not a reason to suppress a later one.
                        "internal"
                    } else {
                        "sent"
                    }
                ],
            )?;
            if !suppressed {
                for w in webhooks {
                    tx.execute(
                        "INSERT INTO webhook_deliveries (event_id, webhook, state, attempts,
                                next_attempt_at, created_at, updated_at)
                         VALUES (?1, ?2, 'pending', 0, ?3, ?4, ?4)",
                        params![id, w, now.timestamp_millis(), ts(now)],
                    )?;
                }
            }
            Ok(())
        })
    }

    /// Marks an event that names a row that is gone (or is not for anyone) as internal.
    pub fn notify_skip(&self, id: i64) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE notify_events SET state = 'internal' WHERE id = ?1",
            [id],
        )?;
        Ok(())
    }

    /// Pending deliveries due at `now`, oldest first, at most `limit`.
    pub fn webhook_due(&self, now: DateTime<Utc>, limit: usize) -> Result<Vec<DueDelivery>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT d.id, d.webhook, d.attempts, e.id, e.kind, e.subject, e.payload,
                    e.created_at, d.created_at
             FROM webhook_deliveries d JOIN notify_events e ON e.id = d.event_id
             WHERE d.state = 'pending' AND d.next_attempt_at <= ?1
             ORDER BY d.next_attempt_at, d.id LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![now.timestamp_millis(), limit as i64], |r| {
            Ok(DueDelivery {
                id: r.get(0)?,
                webhook: r.get(1)?,
                attempts: r.get(2)?,
                event_id: r.get(3)?,
                kind: r.get::<_, Option<String>>(4)?.unwrap_or_default(),
                subject: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                payload: r.get::<_, Option<String>>(6)?.unwrap_or_default(),
                event_at: r.get(7)?,
                created_at: r.get(8)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// When the next pending delivery is due, if any.
    pub fn webhook_next_due(&self) -> Result<Option<DateTime<Utc>>> {
        let conn = self.lock();
        let ms: Option<i64> = conn.query_row(
            "SELECT MIN(next_attempt_at) FROM webhook_deliveries WHERE state = 'pending'",
            [],
            |r| r.get(0),
        )?;
        Ok(ms.and_then(DateTime::from_timestamp_millis))
    }

    pub fn webhook_delivered(&self, id: i64, now: DateTime<Utc>) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "UPDATE webhook_deliveries SET state = 'delivered', attempts = attempts + 1,
                    last_error = NULL, updated_at = ?2
             WHERE id = ?1 AND state = 'pending'",
            params![id, ts(now)],
        )?;
        Ok(())
    }

    /// A failed attempt: due again at `at`, or given up (`at` = `None`).
    pub fn webhook_failed(
        &self,
        id: i64,
        error: &str,
        at: Option<DateTime<Utc>>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let conn = self.lock();
        match at {
            Some(at) => conn.execute(
                "UPDATE webhook_deliveries SET attempts = attempts + 1, last_error = ?2,
                        next_attempt_at = ?3, updated_at = ?4
                 WHERE id = ?1 AND state = 'pending'",
                params![id, error, at.timestamp_millis(), ts(now)],
            )?,
            None => conn.execute(
                "UPDATE webhook_deliveries SET state = 'given_up', attempts = attempts + 1,
                        last_error = ?2, updated_at = ?3
                 WHERE id = ?1 AND state = 'pending'",
                params![id, error, ts(now)],
            )?,
        };
        Ok(())
    }

    /// Gives up pending deliveries for webhooks no longer configured, or queued before
    /// `stale_before`; returns how many.
    pub fn webhook_give_up_orphans(
        &self,
        configured: &[String],
        stale_before: DateTime<Utc>,
        now: DateTime<Utc>,
    ) -> Result<usize> {
        self.immediate(|tx| {
            let mut stmt = tx.prepare(
                "SELECT id, webhook, created_at FROM webhook_deliveries WHERE state = 'pending'",
            )?;
            let rows: Vec<(i64, String, String)> = stmt
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<std::result::Result<_, _>>()?;
            let stale = ts(stale_before);
            let mut n = 0;
            for (id, webhook, created) in rows {
                let why = if !configured.contains(&webhook) {
                    "webhook no longer configured"
                } else if created < stale {
                    "queued too long ago"
                } else {
                    continue;
                };
                n += tx.execute(
                    "UPDATE webhook_deliveries SET state = 'given_up', last_error = ?2,
                            updated_at = ?3 WHERE id = ?1",
                    params![id, why, ts(now)],
                )?;
            }
            Ok(n)
        })
    }

    /// Webhook deliveries by state.
    pub fn webhook_counts(&self) -> Result<Vec<(String, i64)>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT state, COUNT(*) FROM webhook_deliveries GROUP BY state ORDER BY state",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Deletes finished deliveries and resolved events created before `before`; returns
    /// how many events went. An event with a pending delivery stays.
    pub fn notify_prune(&self, before: DateTime<Utc>) -> Result<usize> {
        self.immediate(|tx| {
            let cut = ts(before);
            tx.execute(
                "DELETE FROM webhook_deliveries WHERE state <> 'pending' AND created_at < ?1",
                [&cut],
            )?;
            Ok(tx.execute(
                "DELETE FROM notify_events WHERE state <> 'new' AND created_at < ?1
                 AND id NOT IN (SELECT event_id FROM webhook_deliveries)",
                [&cut],
            )?)
        })
    }

    /// A notifier bookmark (`notify.*` settings key).
    pub fn notify_mark(&self, key: &str) -> Result<Option<String>> {
        let conn = self.lock();
        get_setting(&conn, &format!("notify.{key}"))
    }

    pub fn set_notify_mark(&self, key: &str, value: &str, now: DateTime<Utc>) -> Result<()> {
        let conn = self.lock();
        put_setting(&conn, &format!("notify.{key}"), value, now)
    }

    /// Tasks claimed at or after `since`, and when the last run succeeded (ever).
    pub fn activity_since(&self, since: DateTime<Utc>) -> Result<(i64, Option<String>)> {
        let conn = self.lock();
        let claimed: i64 = conn.query_row(
            "SELECT COUNT(*) FROM task_runs WHERE started_at >= ?1",
            [ts(since)],
            |r| r.get(0),
        )?;
        let last: Option<String> = conn.query_row(
            "SELECT MAX(finished_at) FROM task_runs WHERE outcome = 'succeeded'",
            [],
            |r| r.get(0),
        )?;
        Ok((claimed, last))
    }

    /// The daily summary's counts over `[from, to)`.
    pub fn period_report(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Result<PeriodReport> {
        let conn = self.lock();
        let (f, t) = (ts(from), ts(to));
        let pairs = |sql: &str| -> Result<Vec<(String, i64)>> {
            let mut stmt = conn.prepare(sql)?;
            let rows = stmt.query_map(params![f, t], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<std::result::Result<_, _>>()?)
        };
        let count =
            |sql: &str| -> Result<i64> { Ok(conn.query_row(sql, params![f, t], |r| r.get(0))?) };
        Ok(PeriodReport {
            outcomes: pairs(
                "SELECT outcome, COUNT(*) FROM task_runs
                 WHERE outcome IS NOT NULL AND finished_at >= ?1 AND finished_at < ?2
                 GROUP BY outcome ORDER BY COUNT(*) DESC, outcome",
            )?,
            orders_placed: count(
                "SELECT COUNT(*) FROM task_runs r JOIN tasks t ON t.id = r.task_id
                 WHERE t.task_type = 'purchase' AND t.execution_mode = 'live'
                 AND r.outcome = 'succeeded' AND r.finished_at >= ?1 AND r.finished_at < ?2",
            )?,
            submits: count(
                "SELECT COUNT(*) FROM task_runs
                 WHERE irreversible_action_at >= ?1 AND irreversible_action_at < ?2",
            )?,
            device_pauses: count(
                "SELECT COUNT(*) FROM notify_events WHERE source = 'device_pause'
                 AND created_at >= ?1 AND created_at < ?2",
            )?,
            alerts: pairs(
                "SELECT kind, COUNT(*) FROM operator_alerts
                 WHERE raised_at >= ?1 AND raised_at < ?2 GROUP BY kind ORDER BY kind",
            )?,
            parked: count(
                "SELECT COUNT(*) FROM notify_events WHERE source = 'outbox_parked'
                 AND created_at >= ?1 AND created_at < ?2",
            )?,
            parked_now: conn.query_row(
                "SELECT COUNT(*) FROM outbox WHERE state = 'parked'",
                [],
                |r| r.get(0),
            )?,
            webhooks_given_up: count(
                "SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'given_up'
                 AND updated_at >= ?1 AND updated_at < ?2",
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::t0;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        (dir, s)
    }

    #[test]
    fn an_alert_of_any_kind_becomes_an_event_in_its_own_transaction() {
        let (_d, s) = store();
        let a = s
            .raise_alert(crate::alert::AlertKind::LowDisk, None, "12 MB free", t0())
            .unwrap();
        let ev = s.notify_new_events(10).unwrap();
        assert_eq!(ev.len(), 1);
        assert_eq!((ev[0].source.as_str(), ev[0].source_id), ("alert", Some(a)));
        assert_eq!(
            s.alert(a).unwrap().unwrap().kind,
            crate::alert::AlertKind::LowDisk
        );
    }

    #[test]
    fn a_device_pause_is_counted_not_announced() {
        let (_d, s) = store();
        let p = crate::store::DevicePause {
            since: "2026-01-01T00:00:00Z".into(),
            code: "DEVICE_OFFLINE".into(),
            message: "gone".into(),
        };
        s.set_device_pause(Some(&p)).unwrap();
        s.set_device_pause(None).unwrap();
        s.set_device_pause(Some(&p)).unwrap();
        assert!(s.notify_new_events(10).unwrap().is_empty());
        let from = t0() - chrono::Duration::days(1);
        let to = chrono::Utc::now() + chrono::Duration::days(1);
        assert_eq!(s.period_report(from, to).unwrap().device_pauses, 2);
    }

    #[test]
    fn deliveries_are_queued_with_their_event_retried_and_given_up() {
        let (_d, s) = store();
        let id = s
            .notify_insert("check", "no_success", "never", "{}", t0())
            .unwrap();
        let hooks = ["w1".to_string(), "w2".to_string()];
        let r = Resolution {
            kind: "no_success",
            subject: "never",
            payload: "{}",
            suppressed: false,
            webhooks: &hooks,
        };
        s.notify_resolve(id, &r, t0()).unwrap();
        assert!(s.notify_sent_since("no_success", "never", t0()).unwrap());
        assert!(!s.notify_sent_since("no_success", "other", t0()).unwrap());
        let due = s.webhook_due(t0(), 10).unwrap();
        assert_eq!(due.len(), 2);
        s.webhook_delivered(due[0].id, t0()).unwrap();
        let later = t0() + chrono::Duration::seconds(30);
        s.webhook_failed(due[1].id, "500", Some(later), t0())
            .unwrap();
        assert!(s.webhook_due(t0(), 10).unwrap().is_empty());
        assert_eq!(s.webhook_next_due().unwrap(), Some(later));
        let again = s.webhook_due(later, 10).unwrap();
        assert_eq!(again[0].attempts, 1);
        s.webhook_failed(again[0].id, "500", None, later).unwrap();
        assert_eq!(
            s.webhook_counts().unwrap(),
            vec![("delivered".to_string(), 1), ("given_up".to_string(), 1)]
        );
        // Pruning keeps nothing older than the cut, but never a pending delivery.
        assert_eq!(
            s.notify_prune(later + chrono::Duration::days(8)).unwrap(),
            1
        );
        assert!(s.webhook_counts().unwrap().is_empty());
    }
}
