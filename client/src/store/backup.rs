//! The store's backups: [`Store::backup`] (through a connection of its own, then
//! rotation) and [`Store::latest_backup`]. The file-level rules (names, verification,
//! rotation, mode 0600) are in `backup_file.rs`, which `db.rs` also uses for the copy
//! before a migration; they are re-exported here (`store::backup::list`, …).

use chrono::{DateTime, Utc};
use rusqlite::{Connection, OpenFlags};
use std::path::PathBuf;

pub use super::backup_file::*;
use super::db::{Store, BUSY_TIMEOUT};
use super::error::Result;

impl Store {
    /// The backup directory: `backups/` beside the store file (in the data directory).
    pub fn backup_dir(&self) -> PathBuf {
        backup_dir_of(self.path())
    }

    /// A verified backup now, through a connection of its own (the shared one stays
    /// free), then rotation to the newest `keep`.
    pub fn backup(&self, why: &str, keep: usize, now: DateTime<Utc>) -> Result<Backup> {
        let conn = Connection::open_with_flags(
            self.path(),
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let dir = self.backup_dir();
        let b = backup_with(&conn, &dir, why, now)?;
        rotate(&dir, keep.max(1))?;
        Ok(b)
    }

    /// When the newest backup was taken, if any.
    pub fn latest_backup(&self) -> Option<DateTime<Utc>> {
        list(&self.backup_dir()).last().map(|(t, _)| *t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::backup::verify;
    use chrono::TimeZone;
    use std::path::Path;
    use std::time::Duration;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap()
    }

    #[test]
    fn rotation_keeps_the_newest_n_and_leaves_other_files_alone() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        std::fs::create_dir_all(s.backup_dir()).unwrap();
        std::fs::write(s.backup_dir().join("README.txt"), "mine").unwrap();
        for day in 0..10 {
            let b = s
                .backup("daily", 7, t0() + chrono::Duration::days(day))
                .unwrap();
            assert!(b.bytes > 0);
        }
        let kept = list(&s.backup_dir());
        assert_eq!(kept.len(), 7);
        assert_eq!(kept[0].0, t0() + chrono::Duration::days(3));
        assert_eq!(s.latest_backup(), Some(t0() + chrono::Duration::days(9)));
        assert!(s.backup_dir().join("README.txt").exists());
        // Each one opens and passes its integrity check.
        for (_, p) in &kept {
            assert_eq!(
                verify(p).unwrap(),
                super::super::schema::MIGRATIONS.len() as i64
            );
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&kept[0].1), 0o600);
            assert_eq!(mode(&s.backup_dir()), 0o700);
        }
    }

    /// Measures the daily backup of a store with 10 000 tasks (each with a run and an
    /// outbox row of realistic size); the store stays usable.
    #[test]
    fn a_backup_of_ten_thousand_tasks_is_quick_and_leaves_the_store_usable() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        {
            let mut c = s.lock();
            let tx = c.transaction().unwrap();
            let payload = format!(
                "{{\"goods_id\":\"602938475610\",\"pad\":\"{}\"}}",
                "x".repeat(300)
            );
            let body = vec![b'{'; 1500];
            for i in 0..10_000i64 {
                tx.execute(
                    "INSERT INTO tasks (id, remote_task_id, task_type, execution_mode, version,
                        priority, payload, raw_task, state, claimed_at, updated_at)
                     VALUES (?1, ?2, 'collect', 'dry_run', 1, 0, ?3, ?3, 'succeeded',
                        '2026-12-01T08:00:00.000Z', '2026-12-01T08:00:00.000Z')",
                    rusqlite::params![i + 1, format!("cj{i}"), payload],
                )
                .unwrap();
                tx.execute(
                    "INSERT INTO task_runs (id, task_id, attempt_id, started_at, finished_at, outcome)
                     VALUES (?1, ?1, ?2, '2026-12-01T08:00:00.000Z', '2026-12-01T08:00:30.000Z', 'succeeded')",
                    rusqlite::params![i + 1, format!("attempt-{i}")],
                )
                .unwrap();
                tx.execute(
                    "INSERT INTO outbox (task_id, run_id, kind, remote_task_id, method, path, headers,
                        body, idempotency_key, on_accept_state, state, next_attempt_at,
                        created_at, updated_at)
                     VALUES (?1, ?1, 'result', ?2, 'POST', '/x', '[]', ?3, ?4, 'succeeded',
                        'accepted', 0, '2026-12-01T08:00:30.000Z', '2026-12-01T08:00:30.000Z')",
                    rusqlite::params![i + 1, format!("cj{i}"), body, format!("cj{i}:a:result-v1")],
                )
                .unwrap();
            }
            tx.commit().unwrap();
        }
        let b = s.backup("daily", 7, t0()).unwrap();
        eprintln!(
            "backup of 10 000 tasks: {:.0} ms, {} KiB",
            b.took.as_secs_f64() * 1000.0,
            b.bytes / 1024
        );
        assert!(b.took < Duration::from_secs(10), "{:?}", b.took);
        assert!(b.bytes > 10_000 * 1500);
        assert_eq!(
            s.summary()
                .unwrap()
                .tasks
                .iter()
                .map(|(_, n)| n)
                .sum::<i64>(),
            10_000
        );
    }
}
