//! The artifacts table: the manifest of what each run captured (`decisions.md` §7).

use rusqlite::params;

use super::db::Store;
use super::error::Result;

/// One artifact manifest entry (`decisions.md` §7).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArtifactEntry {
    pub artifact_id: String,
    pub file: String,
    pub sha256: String,
    pub step: String,
    pub taken_at: String,
}

impl Store {
    pub fn add_artifact(&self, run_id: i64, entry: &ArtifactEntry) -> Result<()> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO artifacts (run_id, artifact_id, file, sha256, step, taken_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                run_id,
                entry.artifact_id,
                entry.file,
                entry.sha256,
                entry.step,
                entry.taken_at
            ],
        )?;
        Ok(())
    }

    pub fn artifacts(&self, run_id: i64) -> Result<Vec<ArtifactEntry>> {
        let conn = self.lock();
        let mut stmt = conn.prepare(
            "SELECT artifact_id, file, sha256, step, taken_at FROM artifacts
             WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map([run_id], |r| {
            Ok(ArtifactEntry {
                artifact_id: r.get(0)?,
                file: r.get(1)?,
                sha256: r.get(2)?,
                step: r.get(3)?,
                taken_at: r.get(4)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::{t0, task};

    #[test]
    fn a_runs_artifacts_are_listed() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let id = s.save_claimed_task(&task("cg3"), "{}", t0()).unwrap();
        let run = s.start_run(id, t0()).unwrap();
        s.add_artifact(
            run.id,
            &ArtifactEntry {
                artifact_id: "a1".into(),
                file: "01-open_goods.xml".into(),
                sha256: "00".into(),
                step: "open_goods".into(),
                taken_at: "2026-01-01T00:00:00Z".into(),
            },
        )
        .unwrap();
        assert_eq!(s.artifacts(run.id).unwrap().len(), 1);
    }
}
