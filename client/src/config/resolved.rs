//! The effective configuration: what the values mean, as the rest of the client uses them.

use std::path::PathBuf;
use std::time::Duration;

use super::choices::{DeviceBackend, LogFormat, PurchaseMode};
use crate::artifacts::Retention;
use crate::console::ConsoleAddr;
use crate::gate::GateConfig;
use crate::notify::NotifyConfig;
use crate::pacing::PacingConfig;
use crate::secret::Secret;

/// The effective configuration.
#[derive(Clone, Debug)]
pub struct Config {
    pub data_dir: PathBuf,
    pub admin_url: Option<String>,
    pub token: Option<Secret>,
    /// The one phone (`device`, one `--device`); `None` with several phones.
    pub device: Option<String>,
    /// The phones of a run with several (`devices`, `--device` repeated): two or more,
    /// no duplicates; empty with one phone or none.
    pub devices: Vec<String>,
    pub name: Option<String>,
    pub poll_interval: Duration,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
    pub max_body_bytes: usize,
    /// Which artifact attempts are kept (`artifacts_keep_attempts`,
    /// `artifacts_max_age_days`).
    pub retention: Retention,
    /// `allow_live`: the operator vouches — live without waiting for a self-test
    /// (`run --allow-live` also). `purchase_mode = dry_run` wins over it.
    pub allow_live: bool,
    /// `purchase_mode` (`auto` | `dry_run`; `run --dry-run-only` pins `dry_run`).
    pub purchase_mode: PurchaseMode,
    /// `self_test_goods_id`: the goods the self-test opens (validated like a goods id).
    pub self_test_goods_id: Option<String>,
    /// `lock_dir`: where the per-phone lock files are ([`crate::lock`]).
    pub lock_dir: PathBuf,
    /// A tracing filter (`info`, `cmautobuy_client=debug`, …).
    pub log: String,
    /// `log_format`: how log lines are written (stderr and the log files).
    pub log_format: LogFormat,
    /// When the worker may claim (`device_check_max_age_secs`, `device_probe_max_secs`,
    /// `retry_wait_gap_secs`, `retry_wait_gap_max_secs`; see [`crate::gate`]).
    pub gate: GateConfig,
    /// The device check's battery thresholds (`battery_min_percent`,
    /// `battery_max_temp_c`; see [`crate::device::state`]).
    pub device_thresholds: crate::device::state::Thresholds,
    /// `expected_address`: the phone's delivery-address fingerprint (trimmed, empty
    /// parts dropped; empty: none configured).
    pub expected_address: Vec<String>,
    /// Webhooks and when to notify ([`crate::notify`]).
    pub notify: NotifyConfig,
    /// Where the console listens (`console_addr`; `run --console`, `--no-console`).
    pub console: ConsoleAddr,
    /// The console's password (`console_password`; `run --console-password`).
    pub console_password: Option<Secret>,
    /// The gap between tasks and the live order caps (`min_task_gap_secs`,
    /// `live_orders_per_hour`, `live_orders_per_day`; see [`crate::pacing`]).
    pub pacing: PacingConfig,
    /// `backups_keep`: daily store backups kept ([`crate::store::backup`]).
    pub backups_keep: usize,
    /// `max_clock_skew_secs` ([`crate::clock_check`]).
    pub max_clock_skew: Duration,
    /// The config file actually read, if any.
    pub file: Option<PathBuf>,
    /// Log files, artifact and outbox bounds, the free-disk floor.
    pub resources: Resources,
    /// `device_backend` (env `CMAUTOBUY_DEVICE_BACKEND`).
    pub device_backend: DeviceBackend,
    /// `u2_jar` (env `CMAUTOBUY_U2_JAR`).
    pub u2_jar: Option<PathBuf>,
}

/// Bounded resources: log files, the artifact cap, outbox compaction,
/// the free-disk floor.
#[derive(Clone, Debug, PartialEq)]
pub struct Resources {
    /// `log_dir`: where `run` writes `cmautobuy-client.log` and its rotations.
    pub log_dir: PathBuf,
    /// `log_file_max_mb`: bytes per log file before it rotates.
    pub log_file_max_bytes: u64,
    /// `log_files`: files kept, the current one included (0: no log files).
    pub log_files: u32,
    /// `outbox_compact_after_days`: accepted outbox rows older than this are compacted
    /// (`None`: never).
    pub outbox_compact_after: Option<Duration>,
    /// `min_free_disk_mb`: no claims below this much free space (0: no floor).
    pub min_free_disk_bytes: u64,
}

impl Resources {
    /// The defaults, logs in `log_dir`.
    pub fn defaults(log_dir: PathBuf) -> Self {
        Resources {
            log_dir,
            log_file_max_bytes: 10 * MB,
            log_files: 5,
            outbox_compact_after: Some(Duration::from_secs(30 * 86_400)),
            min_free_disk_bytes: 500 * MB,
        }
    }
}

pub(super) const MB: u64 = 1024 * 1024;
