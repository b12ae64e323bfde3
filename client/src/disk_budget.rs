//! Bounded resources while the client runs for days: the artifact
//! sweep, outbox compaction and the free-disk floor. The runner calls [`DiskBudget`] at start,
//! after each task and before each claim; this module decides and does the file work,
//! the store does the SQL.
//!
//! - **Artifacts** ([`crate::artifacts::ArtifactIndex`]): one walk of the artifact root
//!   at start (evidence — live orders and `manual_review` outcomes — marked from the
//!   store), then one attempt measured per finished task; each sweep applies the
//!   [`Retention`] (per task, age, total size; evidence kept longest and removed last).
//! - **Outbox compaction** ([`Store::compact_outbox`]): accepted rows older than
//!   `outbox_compact_after` lose their request body, headers and response; the row, its
//!   idempotency key, `result_id`, acceptance time and any order number stay. Pending,
//!   sent and parked rows are never touched. At start, then at most hourly.
//! - **Free-disk floor**: no claim while the data directory's filesystem has less than
//!   `min_free_disk_bytes` free ([`DiskProbe`], injectable); a `low_disk` operator alert
//!   says why (raised once, in the store's alerts so every alert channel sees it) and is
//!   resolved by the client itself when space returns — claiming then resumes without an
//!   `ack`.

use crate::alert::AlertKind;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};

use crate::artifacts::{safe_component, ArtifactIndex, Retention, SweepReport};
use crate::store::Store;

/// How often the outbox is compacted after the start.
pub const COMPACT_EVERY: Duration = Duration::from_secs(3600);

/// Outbox rows compacted per pass (the rest wait for the next pass).
pub const COMPACT_BATCH: usize = 500;

/// Free space on the filesystem holding a path.
pub trait DiskProbe: Send + Sync {
    /// Bytes available to this (unprivileged) user; `None` when unknown (the floor is
    /// then not applied).
    fn free_bytes(&self, path: &Path) -> Option<u64>;
}

/// The real filesystem: `statvfs(3)` on Unix (`f_bavail · f_frsize`). Elsewhere the free
/// space is unknown and the floor is not applied (no Windows toolchain here to prove a
/// `GetDiskFreeSpaceExW` call).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemDisk;

impl DiskProbe for SystemDisk {
    fn free_bytes(&self, path: &Path) -> Option<u64> {
        #[cfg(unix)]
        {
            let v = rustix::fs::statvfs(path).ok()?;
            Some(v.f_bavail.saturating_mul(v.f_frsize))
        }
        #[cfg(not(unix))]
        {
            let _ = path;
            None
        }
    }
}

/// What the disk budget needs to know.
#[derive(Clone, Debug)]
pub struct DiskBudgetConfig {
    /// The data directory (free space is measured on its filesystem).
    pub data_dir: PathBuf,
    pub artifacts_root: PathBuf,
    pub retention: Retention,
    /// `None`: accepted outbox rows are never compacted.
    pub outbox_compact_after: Option<Duration>,
    /// 0: no floor.
    pub min_free_disk_bytes: u64,
}

impl DiskBudgetConfig {
    /// The defaults of [`crate::config::Resources`] for a data directory.
    pub fn new(data_dir: PathBuf, artifacts_root: PathBuf, retention: Retention) -> Self {
        DiskBudgetConfig {
            data_dir,
            artifacts_root,
            retention,
            outbox_compact_after: Some(Duration::from_secs(30 * 86_400)),
            min_free_disk_bytes: 500 * 1024 * 1024,
        }
    }
}

/// What a pass did (logged; returned for tests and benchmarks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UpkeepReport {
    pub sweep: SweepReport,
    /// Outbox rows compacted.
    pub compacted: usize,
}

/// The low-disk state the floor last saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LowDisk {
    pub free: u64,
    pub floor: u64,
}

/// The disk budget of one running client.
pub struct DiskBudget {
    store: Store,
    cfg: DiskBudgetConfig,
    probe: Arc<dyn DiskProbe>,
    index: Mutex<Option<ArtifactIndex>>,
    last_compaction: Mutex<Option<DateTime<Utc>>>,
}

impl std::fmt::Debug for DiskBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiskBudget")
            .field("cfg", &self.cfg)
            .finish()
    }
}

fn mb(b: u64) -> u64 {
    b / (1024 * 1024)
}

impl DiskBudget {
    pub fn new(store: Store, cfg: DiskBudgetConfig) -> Self {
        DiskBudget {
            store,
            cfg,
            probe: Arc::new(SystemDisk),
            index: Mutex::new(None),
            last_compaction: Mutex::new(None),
        }
    }

    /// Measures free space with `probe` instead of the filesystem (tests).
    pub fn with_probe(mut self, probe: Arc<dyn DiskProbe>) -> Self {
        self.probe = probe;
        self
    }

    pub fn config(&self) -> &DiskBudgetConfig {
        &self.cfg
    }

    /// The attempts (safe directory names `task`, `attempt`) that are evidence.
    fn evidence(&self) -> HashSet<(String, String)> {
        match self.store.evidence_attempts() {
            Ok(v) => v
                .into_iter()
                .map(|(t, a)| (safe_component(&t), safe_component(&a)))
                .collect(),
            Err(e) => {
                // Without the list nothing may be taken for ordinary: keep everything
                // this pass.
                tracing::warn!(error = %e, "cannot read which artifacts are evidence; sweep skipped");
                HashSet::from([(String::new(), String::new())])
            }
        }
    }

    fn index(&self) -> std::sync::MutexGuard<'_, Option<ArtifactIndex>> {
        self.index.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// At start (blocking): one walk of the artifact root, a sweep, outbox compaction.
    pub fn start(&self, now: DateTime<Utc>) -> UpkeepReport {
        let evidence = self.evidence();
        if evidence.contains(&(String::new(), String::new())) {
            return UpkeepReport::default();
        }
        let started = std::time::Instant::now();
        let index = ArtifactIndex::scan(&self.cfg.artifacts_root, &|t, a| {
            evidence.contains(&(t.to_string(), a.to_string()))
        });
        let scanned = index.len();
        let mut guard = self.index();
        let sweep = guard
            .insert(index)
            .sweep(self.cfg.retention, SystemTime::now(), None);
        drop(guard);
        let compacted = self.compact(now, true);
        tracing::info!(
            attempts = scanned,
            removed = sweep.removed,
            freed_mb = mb(sweep.freed_bytes),
            artifacts_mb = mb(sweep.total_bytes),
            compacted,
            ms = started.elapsed().as_millis() as u64,
            "disk budget at start"
        );
        UpkeepReport { sweep, compacted }
    }

    /// After a task (blocking): the attempt just finished joins the index, a sweep, and
    /// outbox compaction when an hour has passed.
    pub fn after_task(
        &self,
        remote_task_id: &str,
        attempt_id: &str,
        run_id: i64,
        now: DateTime<Utc>,
    ) -> UpkeepReport {
        if self.index().is_none() {
            return self.start(now);
        }
        let evidence = match self.store.run_is_evidence(run_id) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read whether the attempt is evidence; kept as evidence");
                true
            }
        };
        let mut guard = self.index();
        let sweep = match guard.as_mut() {
            Some(index) => {
                index.note_attempt(remote_task_id, attempt_id, evidence);
                index.sweep(self.cfg.retention, SystemTime::now(), None)
            }
            None => SweepReport::default(),
        };
        drop(guard);
        if sweep.removed > 0 {
            tracing::info!(
                removed = sweep.removed,
                evidence = sweep.removed_evidence,
                freed_mb = mb(sweep.freed_bytes),
                artifacts_mb = mb(sweep.total_bytes),
                "old artifact attempts removed (retention)"
            );
        }
        let compacted = self.compact(now, false);
        UpkeepReport { sweep, compacted }
    }

    /// Compacts accepted outbox rows older than the setting (at start, then hourly).
    fn compact(&self, now: DateTime<Utc>, force: bool) -> usize {
        let Some(after) = self.cfg.outbox_compact_after else {
            return 0;
        };
        {
            let mut last = self
                .last_compaction
                .lock()
                .unwrap_or_else(|p| p.into_inner());
            let due = force
                || last.is_none_or(|t| {
                    now - t >= chrono::Duration::from_std(COMPACT_EVERY).unwrap_or_default()
                });
            if !due {
                return 0;
            }
            *last = Some(now);
        }
        let cutoff = now - chrono::Duration::from_std(after).unwrap_or_default();
        match self.store.compact_outbox(cutoff, COMPACT_BATCH) {
            Ok(n) => {
                if n > 0 {
                    tracing::info!(rows = n, "accepted outbox rows compacted");
                }
                n
            }
            Err(e) => {
                tracing::warn!(error = %e, "outbox compaction failed; tried again later");
                0
            }
        }
    }

    /// Before a claim: `Some(reason)` while the data directory's filesystem is below the
    /// floor. Raises the `low_disk` alert once (while none is open); when space has
    /// returned, resolves the open `low_disk` alerts. Store errors are logged: the floor
    /// holds either way.
    pub fn disk_floor(&self, now: DateTime<Utc>) -> Option<String> {
        let floor = self.cfg.min_free_disk_bytes;
        if floor == 0 {
            return None;
        }
        let free = self.probe.free_bytes(&self.cfg.data_dir);
        let low = free
            .filter(|&f| f < floor)
            .map(|free| LowDisk { free, floor });
        let open = match self.store.open_alerts() {
            Ok(a) => a.iter().any(|a| a.kind == AlertKind::LowDisk),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read operator alerts");
                low.is_some()
            }
        };
        match low {
            Some(l) => {
                let reason = format!(
                    "磁盘空间不足，暂停领取 / low disk: {} MB free on the filesystem of {}, below the floor of {} MB (min_free_disk_mb); no claims until space returns",
                    mb(l.free),
                    self.cfg.data_dir.display(),
                    mb(l.floor)
                );
                if !open {
                    tracing::error!(alert = AlertKind::LowDisk.as_str(), %reason, "claiming paused");
                    if let Err(e) = self
                        .store
                        .raise_alert(AlertKind::LowDisk, None, &reason, now)
                    {
                        tracing::warn!(error = %e, "cannot save the low_disk alert");
                    }
                }
                Some(reason)
            }
            None => {
                if open {
                    match self.store.resolve_alerts(AlertKind::LowDisk, now) {
                        Ok(n) => tracing::info!(
                            resolved = n,
                            free_mb = free.map(mb),
                            "disk space back above the floor: claiming resumes"
                        ),
                        Err(e) => tracing::warn!(error = %e, "cannot resolve the low_disk alert"),
                    }
                }
                None
            }
        }
    }
}
