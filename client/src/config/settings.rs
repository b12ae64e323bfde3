//! Every setting, written once: a field of one section below, with its documentation and
//! its default. The name of the field is the key of the config file (the file stays
//! flat: `poll_interval_secs = 3`, never `[connection] poll_interval_secs = 3`), and
//! `CMAUTOBUY_` + the key in upper case is its environment variable — both public names
//! other tools depend on. The sections group the keys for the code that reads them; the
//! file's reader routes each key to the section that has it ([`super::layers`]).
//!
//! Defaults come from the modules that use the values (`GateConfig::default()`,
//! `Retention::default()`, …), so a default is stated in one place too. What the values
//! mean — validation, units, `0 = off` — is [`super::resolve`].

use std::path::PathBuf;

use serde::Deserialize;

use super::choices::{DeviceBackend, LogFormat, PurchaseMode};
use crate::notify::WebhookConfig;
use crate::secret::Secret;

/// Seconds of a duration, as written in the file.
fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}

/// Days of an optional duration, `None` written as 0 (= off).
fn days(d: Option<std::time::Duration>) -> f64 {
    d.map_or(0.0, |d| d.as_secs_f64() / 86_400.0)
}

/// Minutes of an optional duration, `None` written as 0 (= never).
fn mins(d: Option<std::time::Duration>) -> f64 {
    d.map_or(0.0, |d| d.as_secs_f64() / 60.0)
}

/// Megabytes of an optional size, `None` written as 0 (= no bound).
fn mb(b: Option<u64>) -> f64 {
    b.map_or(0.0, |b| b as f64 / (1024.0 * 1024.0))
}

/// The Admin and how to talk to it.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Connection {
    /// The Admin's base URL (`http://HOST:PORT`; the client adds `/api/v1/client`).
    pub admin_url: Option<String>,
    /// The token the Admin issued (never printed).
    pub token: Option<Secret>,
    /// The name shown at the Admin (at most 50 characters).
    pub name: Option<String>,
    /// Between claims when there is no work (±20 % jitter).
    pub poll_interval_secs: f64,
    pub connect_timeout_secs: f64,
    /// The whole attempt of one request.
    pub request_timeout_secs: f64,
    /// Larger answers are refused unread.
    pub max_body_bytes: usize,
}

impl Default for Connection {
    fn default() -> Self {
        Connection {
            admin_url: None,
            token: None,
            name: None,
            poll_interval_secs: 10.0,
            connect_timeout_secs: 5.0,
            request_timeout_secs: 30.0,
            max_body_bytes: crate::gateway::DEFAULT_MAX_BODY_BYTES,
        }
    }
}

/// The phone (or phones) and how it is driven.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Phones {
    /// An adb serial, `HOST:PORT` (connected through the adb server) or `tcp:HOST:PORT`.
    pub device: Option<String>,
    /// Several phones in one `run` (one worker each, each with its own store and
    /// identity, [`crate::phones`]); comma-separated in the environment.
    pub devices: Vec<String>,
    /// `auto` | `u2` | `uiautomator`.
    pub device_backend: DeviceBackend,
    /// uiautomator2's `u2.jar` on this computer (else beside the binary, else the
    /// `uiautomator2` Python package's).
    pub u2_jar: Option<PathBuf>,
    /// The per-phone lock files shared by every client on the machine ([`crate::lock`];
    /// unset: `/tmp/cmautobuy-locks`).
    pub lock_dir: Option<PathBuf>,
    /// The device check pauses the worker below this battery level, not charging.
    pub battery_min_percent: u8,
    /// … and above this battery temperature (°C), charging or not.
    pub battery_max_temp_c: i32,
    /// The delivery-address fingerprint: every part must show in the confirming screen's
    /// address block (else `manual_review ADDRESS_MISMATCH`); `|`-separated in the
    /// environment. Empty: not checked, and never live.
    pub expected_address: Vec<String>,
}

impl Default for Phones {
    fn default() -> Self {
        let t = crate::device::state::Thresholds::default();
        Phones {
            device: None,
            devices: Vec::new(),
            device_backend: DeviceBackend::Auto,
            u2_jar: None,
            lock_dir: None,
            battery_min_percent: t.battery_min_percent,
            battery_max_temp_c: t.battery_max_temp_c,
            expected_address: Vec::new(),
        }
    }
}

/// What this client may declare, and the live gates (contract §5).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Live {
    /// The operator vouches: live without waiting for a self-test (`run --allow-live`).
    pub allow_live: bool,
    /// `auto`: live once the self-test passed on the phone's PDD version (or vouched);
    /// `dry_run`: never live (`run --dry-run-only`), whatever else says so.
    pub purchase_mode: PurchaseMode,
    /// The goods the self-test opens (1–24 digits).
    pub self_test_goods_id: Option<String>,
    /// Live refused while the host's clock is further than this off the Admin's or the
    /// phone's ([`crate::clock_check`]).
    pub max_clock_skew_secs: f64,
    /// Seconds between the end of a task and the next claim (0 = none; [`crate::pacing`]).
    pub min_task_gap_secs: f64,
    /// Live orders per phone per rolling hour (0 = no cap) …
    pub live_orders_per_hour: u32,
    /// … and per rolling day.
    pub live_orders_per_day: u32,
}

impl Default for Live {
    fn default() -> Self {
        let p = crate::pacing::PacingConfig::default();
        Live {
            allow_live: false,
            purchase_mode: PurchaseMode::Auto,
            self_test_goods_id: None,
            max_clock_skew_secs: secs(crate::clock_check::DEFAULT_MAX_SKEW),
            min_task_gap_secs: secs(p.min_task_gap),
            live_orders_per_hour: p.live_orders_per_hour,
            live_orders_per_day: p.live_orders_per_day,
        }
    }
}

/// When the worker may claim ([`crate::gate::GateConfig`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Gate {
    /// A claim needs a passing device check younger than this.
    pub device_check_max_age_secs: f64,
    /// While paused for the phone, probes back off from 1 s up to this.
    pub device_probe_max_secs: f64,
    /// After k `retry_wait` outcomes in a row the next claim waits this · 2^(k-1) …
    pub retry_wait_gap_secs: f64,
    /// … at most this.
    pub retry_wait_gap_max_secs: f64,
    /// A purchase whose phone went away after the 提交订单 tap waits this long for the
    /// phone before it is reported `manual_review` without it.
    pub reconcile_wait_max_secs: f64,
    /// `PAGE_NOT_RECOGNIZED` outcomes in a row that pause the worker until `ack` (0 =
    /// never).
    pub unrecognized_pages_pause_after: u32,
    /// This many `PAGE_NOT_RECOGNIZED` outcomes (0 = never) among the last
    /// `unrecognized_rate_window` tasks raise the `unrecognized_rate` alert.
    pub unrecognized_rate_count: u32,
    pub unrecognized_rate_window: u32,
    /// Live only on a PDD version proven on this phone.
    pub pdd_version_gate: bool,
    /// The account check on 个人中心 before live purchases.
    pub account_check: bool,
}

impl Default for Gate {
    fn default() -> Self {
        let d = crate::gate::GateConfig::default();
        Gate {
            device_check_max_age_secs: secs(d.check_max_age),
            device_probe_max_secs: secs(d.probe_max),
            retry_wait_gap_secs: secs(d.retry_gap),
            retry_wait_gap_max_secs: secs(d.retry_gap_max),
            reconcile_wait_max_secs: secs(d.reconcile_wait_max),
            unrecognized_pages_pause_after: d.unrecognized_pause_after,
            unrecognized_rate_count: d.unrecognized_rate_count,
            unrecognized_rate_window: d.unrecognized_rate_window,
            pdd_version_gate: d.pdd_version_gate,
            account_check: d.account_check,
        }
    }
}

/// The data directory and what is kept in it, bounded.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Storage {
    /// The store, artifacts, backups (unset: the platform's data directory).
    pub data_dir: Option<PathBuf>,
    /// Newest attempts kept per task (≥ 1).
    pub artifacts_keep_attempts: u64,
    /// Older attempts are removed whatever their rank (0 = no age limit).
    pub artifacts_max_age_days: f64,
    /// The artifact directory's total size cap (0 = none).
    pub artifacts_max_total_mb: f64,
    /// Live-order and `manual_review` evidence kept this long (0 = until the size cap
    /// needs it).
    pub artifacts_evidence_max_age_days: f64,
    /// Accepted outbox rows older than this are compacted (0 = never).
    pub outbox_compact_after_days: f64,
    /// No claims below this much free space (0 = no floor).
    pub min_free_disk_mb: f64,
    /// Daily store backups kept (0 = none; a backup before a migration is always taken).
    pub backups_keep: u32,
}

impl Default for Storage {
    fn default() -> Self {
        let r = crate::artifacts::Retention::default();
        let d = super::resolved::Resources::defaults(PathBuf::new());
        Storage {
            data_dir: None,
            artifacts_keep_attempts: r.keep_attempts as u64,
            artifacts_max_age_days: days(r.max_age),
            artifacts_max_total_mb: mb(r.max_total_bytes),
            artifacts_evidence_max_age_days: days(r.evidence_max_age),
            outbox_compact_after_days: days(d.outbox_compact_after),
            min_free_disk_mb: mb(Some(d.min_free_disk_bytes)),
            backups_keep: crate::store::backup::DEFAULT_KEEP as u32,
        }
    }
}

/// Log lines and `run`'s log files.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Logging {
    /// A tracing filter (`info`, `cmautobuy_client=debug`, …); `RUST_LOG` wins.
    pub log: String,
    /// `text` or `json` (one object per line).
    pub log_format: LogFormat,
    /// Where `run` writes its rotated log files (unset: `<data dir>/logs` for an explicit
    /// data directory, else the platform's log directory).
    pub log_dir: Option<PathBuf>,
    /// Size of one log file before it rotates.
    pub log_file_max_mb: f64,
    /// Files kept, the current one included (0 = stderr only).
    pub log_files: u32,
}

impl Default for Logging {
    fn default() -> Self {
        let d = super::resolved::Resources::defaults(PathBuf::new());
        Logging {
            log: "info".into(),
            log_format: LogFormat::Text,
            log_dir: None,
            log_file_max_mb: mb(Some(d.log_file_max_bytes)),
            log_files: d.log_files,
        }
    }
}

/// The web console's listener ([`crate::console`]).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Console {
    /// `IP:PORT`, a port, or `off` (unset: 127.0.0.1, the first free port of 9464–9479).
    pub console_addr: Option<String>,
    /// Needed for any address but loopback; kept hashed in memory.
    pub console_password: Option<Secret>,
}

/// When and how operators are told ([`crate::notify`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Notify {
    /// The same notification is not sent again within this.
    pub alert_dedup_window_mins: f64,
    /// A phone paused this long is announced (0 = never).
    pub alert_device_paused_after_mins: f64,
    /// No success this long while tasks were claimed is announced (0 = never).
    pub alert_no_success_after_mins: f64,
    /// `HH:MM` (UTC) or `HH:MM+08:00`; `off` for none.
    pub daily_summary_at: String,
    /// Attempts per webhook delivery before it is given up.
    pub webhook_max_attempts: u32,
    /// The deadline of one webhook request.
    pub webhook_timeout_secs: f64,
}

impl Default for Notify {
    fn default() -> Self {
        let n = crate::notify::NotifyConfig::default();
        Notify {
            alert_dedup_window_mins: mins(Some(n.dedup_window)),
            alert_device_paused_after_mins: mins(n.device_paused_after),
            alert_no_success_after_mins: mins(n.no_success_after),
            daily_summary_at: crate::notify::DEFAULT_SUMMARY_AT.into(),
            webhook_max_attempts: n.max_attempts,
            webhook_timeout_secs: secs(n.request_timeout),
        }
    }
}

/// The `[[webhook]]` tables: in the file only (a list of tables has no environment
/// form).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Webhooks {
    pub webhook: Vec<WebhookConfig>,
}

/// Every section, as the layers left it.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub connection: Connection,
    pub phones: Phones,
    pub live: Live,
    pub gate: Gate,
    pub storage: Storage,
    pub logging: Logging,
    pub console: Console,
    pub notify: Notify,
    pub webhooks: Webhooks,
}

impl Settings {
    /// The sections' keys (and whether the environment may set them), read from their
    /// `Deserialize` ([`super::layers::Schema`]).
    pub fn schema() -> super::layers::Schema {
        use super::layers::Schema;
        let mut s = Schema::default();
        s.section::<Connection>(true);
        s.section::<Phones>(true);
        s.section::<Live>(true);
        s.section::<Gate>(true);
        s.section::<Storage>(true);
        s.section::<Logging>(true);
        s.section::<Console>(true);
        s.section::<Notify>(true);
        s.section::<Webhooks>(false);
        s
    }

    /// Every section from the merged layers.
    pub fn from_layers(
        merged: &super::layers::Layer,
        schema: &super::layers::Schema,
    ) -> Result<Settings, super::error::ConfigError> {
        Ok(Settings {
            connection: merged.section(schema)?,
            phones: merged.section(schema)?,
            live: merged.section(schema)?,
            gate: merged.section(schema)?,
            storage: merged.section(schema)?,
            logging: merged.section(schema)?,
            console: merged.section(schema)?,
            notify: merged.section(schema)?,
            webhooks: merged.section(schema)?,
        })
    }
}
