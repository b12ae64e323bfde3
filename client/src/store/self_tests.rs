//! The `self_tests` table: one row per (device serial, PDD version) —
//! the last self-test started on it, when it finished, its outcome, the failure code and
//! message, failed runs in a row, and its attempt id — and the operator's request for a
//! new self-test (a settings key the claim loop polls between tasks).

use chrono::{DateTime, Utc};
use rusqlite::{params, OptionalExtension};

use super::db::{get_setting, put_setting, ts, Store};
use super::error::Result;

/// The settings key of a requested self-test (value: the serial, or `*` for any phone).
const SETTING_SELF_TEST_REQUEST: &str = "self_test_requested";
/// Why live waits for the self-test, as last recorded by a running client (`status`).
const SETTING_SELF_TEST_NOTE: &str = "self_test_note";

/// One phone's self-test on one PDD version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelfTestRow {
    pub device: String,
    pub pdd_version: String,
    pub started_at: String,
    pub finished_at: Option<String>,
    /// `passed`, `failed`, or `None` while running (or cut short).
    pub outcome: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
    pub failures: u32,
    pub attempt_id: String,
}

impl SelfTestRow {
    /// The row as the sans-IO rule reads it ([`crate::self_test::Record`]).
    pub fn record(&self) -> crate::self_test::Record {
        let parse = |s: &str| {
            DateTime::parse_from_rfc3339(s)
                .map(|t| t.with_timezone(&Utc))
                .ok()
        };
        crate::self_test::Record {
            started_at: parse(&self.started_at).unwrap_or(DateTime::<Utc>::MIN_UTC),
            // An unreadable time counts as long ago: the retry is due.
            finished_at: self
                .finished_at
                .as_deref()
                .map(|f| parse(f).unwrap_or(DateTime::<Utc>::MIN_UTC)),
            passed: self.outcome.as_deref() == Some("passed"),
            code: self.code.clone(),
            failures: self.failures,
            attempt_id: self.attempt_id.clone(),
        }
    }
}

const COLUMNS: &str =
    "device, pdd_version, started_at, finished_at, outcome, code, message, failures, attempt_id";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<SelfTestRow> {
    Ok(SelfTestRow {
        device: r.get(0)?,
        pdd_version: r.get(1)?,
        started_at: r.get(2)?,
        finished_at: r.get(3)?,
        outcome: r.get(4)?,
        code: r.get(5)?,
        message: r.get(6)?,
        failures: r.get::<_, i64>(7)?.clamp(0, u32::MAX as i64) as u32,
        attempt_id: r.get(8)?,
    })
}

impl Store {
    /// Records that a self-test of `device` on `version` starts now (the outcome of an
    /// earlier one on the same version is replaced; its failure count is kept).
    pub fn start_self_test(
        &self,
        device: &str,
        version: &str,
        attempt_id: &str,
        now: DateTime<Utc>,
    ) -> Result<()> {
        self.lock().execute(
            "INSERT INTO self_tests (device, pdd_version, started_at, attempt_id)
             VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (device, pdd_version) DO UPDATE SET
               started_at = excluded.started_at, attempt_id = excluded.attempt_id,
               finished_at = NULL, outcome = NULL, code = NULL, message = NULL",
            params![device, version, ts(now), attempt_id],
        )?;
        Ok(())
    }

    /// Records how the self-test `attempt_id` ended: `Ok(())` passed (failures reset),
    /// `Err((code, message))` failed (failures + 1).
    pub fn finish_self_test(
        &self,
        device: &str,
        version: &str,
        attempt_id: &str,
        outcome: std::result::Result<(), (&str, &str)>,
        now: DateTime<Utc>,
    ) -> Result<()> {
        let (o, code, message) = match outcome {
            Ok(()) => ("passed", None, None),
            Err((c, m)) => ("failed", Some(c), Some(m)),
        };
        self.lock().execute(
            "UPDATE self_tests SET finished_at = ?4, outcome = ?5, code = ?6, message = ?7,
               failures = CASE WHEN ?5 = 'passed' THEN 0 ELSE failures + 1 END
             WHERE device = ?1 AND pdd_version = ?2 AND attempt_id = ?3",
            params![device, version, attempt_id, ts(now), o, code, message],
        )?;
        Ok(())
    }

    /// The self-test of `device` on `version`, if one ever started.
    pub fn self_test(&self, device: &str, version: &str) -> Result<Option<SelfTestRow>> {
        Ok(self
            .lock()
            .query_row(
                &format!("SELECT {COLUMNS} FROM self_tests WHERE device = ?1 AND pdd_version = ?2"),
                params![device, version],
                row,
            )
            .optional()?)
    }

    /// Every self-test row, the most recently started first (`status`).
    pub fn self_tests(&self) -> Result<Vec<SelfTestRow>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(&format!(
            "SELECT {COLUMNS} FROM self_tests ORDER BY started_at DESC, rowid DESC"
        ))?;
        let rows = stmt.query_map([], row)?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// Asks the claim loop for a self-test of `serial` (`None`: whichever phone it
    /// drives) before its next claim: the web console's button and `cmautobuy-client
    /// self-test` call this.
    pub fn request_self_test(&self, serial: Option<&str>) -> Result<()> {
        put_setting(
            &self.lock(),
            SETTING_SELF_TEST_REQUEST,
            serial.unwrap_or("*"),
            Utc::now(),
        )
    }

    /// Whether a self-test is requested for `serial` (a request for any phone counts).
    pub fn self_test_requested(&self, serial: &str) -> Result<bool> {
        let v = get_setting(&self.lock(), SETTING_SELF_TEST_REQUEST)?;
        Ok(v.is_some_and(|v| v == "*" || v == serial))
    }

    /// Clears the request (the claim loop, once the self-test it asked for started).
    pub fn clear_self_test_request(&self) -> Result<()> {
        self.lock().execute(
            "DELETE FROM settings WHERE key = ?1",
            [SETTING_SELF_TEST_REQUEST],
        )?;
        Ok(())
    }

    /// Records (`Some(why)`) or clears why live waits for the self-test (`status`).
    pub fn set_self_test_note(&self, why: Option<&str>) -> Result<()> {
        let conn = self.lock();
        match why {
            Some(w) => put_setting(&conn, SETTING_SELF_TEST_NOTE, w, Utc::now()),
            None => {
                conn.execute(
                    "DELETE FROM settings WHERE key = ?1",
                    [SETTING_SELF_TEST_NOTE],
                )?;
                Ok(())
            }
        }
    }

    /// Why live waits for the self-test, as last recorded by a running client.
    pub fn self_test_note(&self) -> Result<Option<String>> {
        get_setting(&self.lock(), SETTING_SELF_TEST_NOTE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_self_test_is_recorded_per_phone_and_version_and_counts_failures() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let now = Utc::now();
        assert_eq!(s.self_test("p1", "7.36.0").unwrap(), None);
        s.start_self_test("p1", "7.36.0", "self-test-a", now)
            .unwrap();
        let r = s.self_test("p1", "7.36.0").unwrap().unwrap();
        assert_eq!((r.outcome, r.finished_at), (None, None));
        s.finish_self_test(
            "p1",
            "7.36.0",
            "self-test-a",
            Err(("GOODS_UNAVAILABLE", "gone")),
            now,
        )
        .unwrap();
        s.start_self_test("p1", "7.36.0", "self-test-b", now)
            .unwrap();
        s.finish_self_test(
            "p1",
            "7.36.0",
            "self-test-b",
            Err(("GOODS_UNAVAILABLE", "gone")),
            now,
        )
        .unwrap();
        let r = s.self_test("p1", "7.36.0").unwrap().unwrap();
        assert_eq!(r.failures, 2);
        assert_eq!(r.code.as_deref(), Some("GOODS_UNAVAILABLE"));
        assert!(!r.record().passed);
        // A finish for another attempt changes nothing.
        s.finish_self_test("p1", "7.36.0", "self-test-a", Ok(()), now)
            .unwrap();
        assert_eq!(s.self_test("p1", "7.36.0").unwrap().unwrap().failures, 2);
        s.start_self_test("p1", "7.36.0", "self-test-c", now)
            .unwrap();
        s.finish_self_test("p1", "7.36.0", "self-test-c", Ok(()), now)
            .unwrap();
        let r = s.self_test("p1", "7.36.0").unwrap().unwrap();
        assert!(r.record().passed);
        assert_eq!((r.failures, r.code), (0, None));
        assert_eq!(s.self_test("p2", "7.36.0").unwrap(), None);
        assert_eq!(s.self_tests().unwrap().len(), 1);
        // The request flag.
        assert!(!s.self_test_requested("p1").unwrap());
        s.request_self_test(Some("p2")).unwrap();
        assert!(!s.self_test_requested("p1").unwrap());
        assert!(s.self_test_requested("p2").unwrap());
        s.request_self_test(None).unwrap();
        assert!(s.self_test_requested("p1").unwrap());
        s.clear_self_test_request().unwrap();
        assert!(!s.self_test_requested("p1").unwrap());
    }
}
