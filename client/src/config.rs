//! Configuration, layered: defaults → TOML file → `CMAUTOBUY_*` environment → flags.
//!
//! The config file is `--config FILE`, else `$CMAUTOBUY_CONFIG`, else
//! `<data dir>/config.toml` when it exists. Every key of the file has an environment
//! variable (`CMAUTOBUY_` + the key in upper case) and most have a flag.
//!
//! Values given here that are also settings (admin URL, token, device, name) are saved to
//! the store by the commands that use them, so a later run without flags keeps them.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::artifacts::Retention;
use crate::console::ConsoleAddr;
use crate::gate::GateConfig;
use crate::notify::{NotifyConfig, SummaryAt, Webhook, WebhookConfig};
use crate::pacing::PacingConfig;
use crate::secret::Secret;

/// `device_backend`: defined by the device layer, read from the config here.
pub use crate::device::backend::DeviceBackend;

/// `purchase_mode` (issue 13, contract §5): what this client may declare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PurchaseMode {
    /// Live once proven (self-test on the current PDD version) or vouched
    /// (`allow_live`); the other live gates may still narrow it.
    #[default]
    Auto,
    /// Never live: every purchase is a dry run (`run --dry-run-only` too).
    DryRun,
}

impl PurchaseMode {
    pub fn parse(v: &str) -> Option<PurchaseMode> {
        match v {
            "auto" => Some(PurchaseMode::Auto),
            "dry_run" => Some(PurchaseMode::DryRun),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PurchaseMode::Auto => "auto",
            PurchaseMode::DryRun => "dry_run",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("invalid config file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("invalid value for {name}: {message}")]
    Value { name: String, message: String },
}

impl ConfigError {
    pub fn is_retryable(&self) -> bool {
        false
    }
}

/// The TOML file (and the environment) as written.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    pub data_dir: Option<PathBuf>,
    pub admin_url: Option<String>,
    pub token: Option<Secret>,
    pub device: Option<String>,
    /// Several phones in one `run` (issue 13 item 4): one worker per phone, each with its
    /// own store and identity ([`crate::phones`]). Env `CMAUTOBUY_DEVICES`,
    /// comma-separated. Given, it wins over `device`.
    pub devices: Option<Vec<String>>,
    pub name: Option<String>,
    pub poll_interval_secs: Option<f64>,
    pub connect_timeout_secs: Option<f64>,
    pub request_timeout_secs: Option<f64>,
    pub max_body_bytes: Option<usize>,
    pub log: Option<String>,
    /// `text` (default) or `json` (one JSON object per line, for log shippers).
    pub log_format: Option<String>,
    /// Artifact retention: the newest attempts kept per task (≥ 1; default 5).
    pub artifacts_keep_attempts: Option<u64>,
    /// Artifact retention: attempts older than this many days are removed whatever
    /// their rank (default 30; 0 = no age limit).
    pub artifacts_max_age_days: Option<f64>,
    /// `run` declares `live` and runs live purchase tasks live (real, unpaid orders), as
    /// `run --allow-live` does — for a machine that runs unattended. Default false.
    pub allow_live: Option<bool>,
    /// `auto` (default): live is declared once the self-test passed on the phone's
    /// current PDD version (or the operator vouches with `allow_live`); `dry_run`: never
    /// live, whatever else says so (issue 13, contract §5).
    pub purchase_mode: Option<String>,
    /// The goods the self-test opens (a cheap one; digits, as a goods id): without it the
    /// phone stays `dry_run` unless the operator vouches with `allow_live`.
    pub self_test_goods_id: Option<String>,
    /// The directory of the per-phone lock files shared by every client on the machine
    /// (default `/tmp/cmautobuy-locks`; see [`crate::lock`]).
    pub lock_dir: Option<PathBuf>,
    /// A claim needs a passing device check younger than this (default 30 s).
    pub device_check_max_age_secs: Option<f64>,
    /// While paused for the phone, probes back off from 1 s, doubling, to this cap
    /// (default 60 s).
    pub device_probe_max_secs: Option<f64>,
    /// After k `retry_wait` outcomes in a row the next claim waits this · 2^(k-1)
    /// (default 5 s) …
    pub retry_wait_gap_secs: Option<f64>,
    /// … capped at this (default 300 s).
    pub retry_wait_gap_max_secs: Option<f64>,
    /// A purchase whose phone went away after the 提交订单 tap waits this long (from the
    /// tap) for the phone to reconcile it before it is reported `manual_review` without
    /// the phone (default 1800 s). See [`crate::gate::reconcile_overdue`].
    pub reconcile_wait_max_secs: Option<f64>,
    /// `PAGE_NOT_RECOGNIZED` outcomes in a row that pause the worker until an operator
    /// acknowledges (default 3; 0 = never). See [`crate::gate`].
    pub unrecognized_pages_pause_after: Option<u32>,
    /// The unrecognised-page rate alert (non-blocking, issue 12 item 6): this many
    /// `PAGE_NOT_RECOGNIZED` outcomes (default 3; 0 = never) among the last
    /// `unrecognized_rate_window` tasks (default 20).
    pub unrecognized_rate_count: Option<u32>,
    pub unrecognized_rate_window: Option<u32>,
    /// The device check pauses the worker below this battery level when the phone is not
    /// charging (default 15 %; issue 12 item 4).
    pub battery_min_percent: Option<u8>,
    /// … and above this battery temperature, charging or not (default 45 °C).
    pub battery_max_temp_c: Option<i32>,
    /// The phone's delivery-address fingerprint: every part must appear in the address
    /// block of the confirming screen before an order (e.g. `["集货路88号", "李四"]`),
    /// else `manual_review ADDRESS_MISMATCH`. Unset: not checked (a warning in `status`;
    /// the address read is still reported). Env `CMAUTOBUY_EXPECTED_ADDRESS`, parts
    /// separated by `|`.
    pub expected_address: Option<Vec<String>>,
    // Bounded resources (issue 12 item 8); see [`Resources`].
    /// Where `run` writes its rotated log files (default: `<data dir>/logs` for an
    /// explicit data directory, else the platform's log directory).
    pub log_dir: Option<PathBuf>,
    /// Size of one log file before it rotates, in MB (default 10).
    pub log_file_max_mb: Option<f64>,
    /// Log files kept, the current one included (default 5; 0 = no log files).
    pub log_files: Option<u32>,
    /// Artifacts: total size cap in MB (default 2048; 0 = no cap).
    pub artifacts_max_total_mb: Option<f64>,
    /// Artifacts of live orders and `manual_review` tasks: kept this many days (default
    /// 180), and deleted last.
    pub artifacts_evidence_max_age_days: Option<f64>,
    /// Accepted outbox rows older than this many days are compacted (default 30; 0 =
    /// never).
    pub outbox_compact_after_days: Option<f64>,
    /// No claims while the data directory's filesystem has less free space than this, in
    /// MB (default 500; 0 = no floor).
    pub min_free_disk_mb: Option<f64>,
    /// Webhooks for operator alerts and events (`[[webhook]]` tables: `url`, `format`
    /// = json | wecom | dingtalk | feishu, optional `secret`, `kinds`, `name`). File only.
    pub webhook: Option<Vec<WebhookConfig>>,
    /// The console's listener (the web console, `/metrics`, `/healthz`): `IP:PORT`, or
    /// `off` (default: 127.0.0.1, the first free port from 9464 to 9479). An address
    /// other than loopback needs `console_password`.
    pub console_addr: Option<String>,
    /// The web console's password (needed for any address but loopback; kept hashed
    /// in memory, never shown). Env `CMAUTOBUY_CONSOLE_PASSWORD`.
    pub console_password: Option<Secret>,
    /// The same notification (kind and subject) is not sent again within this many
    /// minutes (default 30).
    pub alert_dedup_window_mins: Option<f64>,
    /// Notify when the phone has been paused this many minutes (default 10; 0 = never).
    pub alert_device_paused_after_mins: Option<f64>,
    /// Notify when no task succeeded for this many minutes while tasks were claimed
    /// (default 60; 0 = never).
    pub alert_no_success_after_mins: Option<f64>,
    /// When the daily summary goes out: `HH:MM` (UTC) or `HH:MM+08:00`; `off` for none
    /// (default `09:00+08:00`).
    pub daily_summary_at: Option<String>,
    /// Attempts per webhook delivery before it is given up (default 8).
    pub webhook_max_attempts: Option<u32>,
    /// The deadline of one webhook request in seconds (default 10).
    pub webhook_timeout_secs: Option<f64>,
    /// Seconds between the end of a task and the next claim (default 3; 0 = none). See
    /// [`crate::pacing`].
    pub min_task_gap_secs: Option<f64>,
    /// Live orders per phone per rolling hour; at the cap the worker declares `dry_run`
    /// until the window passes (default 10; 0 = no cap).
    pub live_orders_per_hour: Option<u32>,
    /// Live orders per phone per rolling day (default 50; 0 = no cap).
    pub live_orders_per_day: Option<u32>,
    /// Daily store backups kept in `<data dir>/backups/` (default 7; 0 = no daily backup;
    /// a backup before a migration is always taken).
    pub backups_keep: Option<u32>,
    /// Live purchases are refused while the host's clock is more than this many seconds
    /// off the Admin's `Date` or the phone's (default 30; see [`crate::clock_check`]).
    pub max_clock_skew_secs: Option<f64>,
    /// Live purchases only on a PDD version proven on this phone by a successful dry-run
    /// purchase (or `ack N` of its alert); default true (issue 12 item 6, [`crate::gate`]).
    pub pdd_version_gate: Option<bool>,
    /// The account check on 个人中心 before live purchases (issue 12 item 5); default
    /// true. Off: no check, live is not held back for it (an `account_changed` alert
    /// already open still holds it).
    pub account_check: Option<bool>,
    /// `device_backend`: `auto` (default) | `u2` | `uiautomator` (issue 15).
    pub device_backend: Option<String>,
    /// `u2_jar`: uiautomator2's `u2.jar` on this computer (else beside the binary, else
    /// the `uiautomator2` Python package's).
    pub u2_jar: Option<PathBuf>,
}

/// What the user typed on the command line (all optional).
#[derive(Clone, Debug, Default)]
pub struct Overrides {
    pub config: Option<PathBuf>,
    pub data_dir: Option<PathBuf>,
    pub admin_url: Option<String>,
    pub token: Option<Secret>,
    pub device: Option<String>,
    /// `--device` given more than once: the phones of a run with several phones.
    pub devices: Vec<String>,
    pub name: Option<String>,
    pub poll_interval_secs: Option<f64>,
    /// `--log-format`.
    pub log_format: Option<String>,
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (coloured only on a terminal).
    #[default]
    Text,
    /// One JSON object per line (timestamp, level, target, fields, spans).
    Json,
}

impl LogFormat {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Some(Self::Text),
            "json" => Some(Self::Json),
            _ => None,
        }
    }
}

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
    /// Log files, artifact and outbox bounds, the free-disk floor (issue 12 item 8).
    pub resources: Resources,
    /// `device_backend` (issue 15; env `CMAUTOBUY_DEVICE_BACKEND`).
    pub device_backend: DeviceBackend,
    /// `u2_jar` (env `CMAUTOBUY_U2_JAR`).
    pub u2_jar: Option<PathBuf>,
}

/// Bounded resources (issue 12 item 8): log files, the artifact cap, outbox compaction,
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

const MB: u64 = 1024 * 1024;

/// The operating systems whose directory conventions [`platform_dirs`] knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Os {
    /// Linux and the other Unixes: the XDG base directories.
    Unix,
    MacOs,
    Windows,
}

impl Os {
    /// The OS this binary was built for.
    pub fn current() -> Os {
        if cfg!(windows) {
            Os::Windows
        } else if cfg!(target_os = "macos") {
            Os::MacOs
        } else {
            Os::Unix
        }
    }
}

/// Where a client keeps its files when no `--data-dir` is given (issue 12 item 11), by
/// platform convention (the layout of the `directories` crate's `ProjectDirs`, computed
/// from the environment so that it is testable on any host):
///
/// | | data | config file | logs |
/// |---|---|---|---|
/// | Linux | `$XDG_DATA_HOME/cmautobuy` (`~/.local/share/cmautobuy`) | `$XDG_CONFIG_HOME/cmautobuy/config.toml` (`~/.config/…`) | `$XDG_STATE_HOME/cmautobuy/logs` (`~/.local/state/…`) |
/// | macOS | `~/Library/Application Support/cmautobuy` | `~/Library/Application Support/cmautobuy/config.toml` | `~/Library/Logs/cmautobuy` |
/// | Windows | `%APPDATA%\cmautobuy\data` | `%APPDATA%\cmautobuy\config\config.toml` | `%LOCALAPPDATA%\cmautobuy\logs` |
///
/// `None` when the environment names no home: the client then refuses to guess (never
/// the current directory) and asks for `--data-dir`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformDirs {
    pub data: PathBuf,
    pub config: PathBuf,
    pub logs: PathBuf,
}

const APP: &str = "cmautobuy";

pub fn platform_dirs(os: Os, env: &dyn Fn(&str) -> Option<String>) -> Option<PlatformDirs> {
    let var = |k: &str| {
        env(k)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    match os {
        Os::Unix => {
            let home = var("HOME");
            let xdg = |k: &str, rel: &str| var(k).or_else(|| home.as_ref().map(|h| h.join(rel)));
            Some(PlatformDirs {
                data: xdg("XDG_DATA_HOME", ".local/share")?.join(APP),
                config: xdg("XDG_CONFIG_HOME", ".config")?.join(APP),
                logs: xdg("XDG_STATE_HOME", ".local/state")?
                    .join(APP)
                    .join("logs"),
            })
        }
        Os::MacOs => {
            let home = var("HOME")?;
            let support = home.join("Library/Application Support").join(APP);
            Some(PlatformDirs {
                data: support.clone(),
                config: support,
                logs: home.join("Library/Logs").join(APP),
            })
        }
        Os::Windows => {
            // Not `is_absolute` on a Linux host for `C:\…`: accept any non-empty value.
            let get = |k: &str| env(k).filter(|s| !s.is_empty()).map(PathBuf::from);
            let roaming = get("APPDATA")?.join(APP);
            let local = get("LOCALAPPDATA")
                .map(|p| p.join(APP))
                .unwrap_or_else(|| roaming.clone());
            Some(PlatformDirs {
                data: roaming.join("data"),
                config: roaming.join("config"),
                logs: local.join("logs"),
            })
        }
    }
}

/// The default data directory of this platform ([`platform_dirs`]); an error naming
/// `--data-dir` when the environment has no home (never the current directory).
pub fn default_data_dir(env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, ConfigError> {
    platform_dirs(Os::current(), env)
        .map(|d| d.data)
        .ok_or_else(no_home)
}

fn no_home() -> ConfigError {
    ConfigError::Value {
        name: "data_dir".into(),
        message: "no home directory in the environment (HOME, XDG_DATA_HOME or APPDATA) to put \
                  the data directory in, and the current directory is never used: give \
                  --data-dir DIR or CMAUTOBUY_DATA_DIR"
            .into(),
    }
}

fn secs(name: &str, v: f64) -> Result<Duration, ConfigError> {
    Duration::try_from_secs_f64(v)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| ConfigError::Value {
            name: name.into(),
            message: format!("{v} is not a positive number of seconds"),
        })
}

fn env_config(env: &dyn Fn(&str) -> Option<String>) -> Result<FileConfig, ConfigError> {
    let get = |k: &str| env(&format!("CMAUTOBUY_{k}")).filter(|v| !v.is_empty());
    let num = |k: &str| -> Result<Option<f64>, ConfigError> {
        get(k)
            .map(|v| {
                v.trim().parse::<f64>().map_err(|_| ConfigError::Value {
                    name: format!("CMAUTOBUY_{k}"),
                    message: format!("{v:?} is not a number"),
                })
            })
            .transpose()
    };
    Ok(FileConfig {
        data_dir: get("DATA_DIR").map(PathBuf::from),
        admin_url: get("ADMIN_URL"),
        token: get("TOKEN").map(Secret::new),
        device: get("DEVICE"),
        devices: get("DEVICES").map(|v| v.split(',').map(str::to_string).collect()),
        name: get("NAME"),
        poll_interval_secs: num("POLL_INTERVAL_SECS")?,
        connect_timeout_secs: num("CONNECT_TIMEOUT_SECS")?,
        request_timeout_secs: num("REQUEST_TIMEOUT_SECS")?,
        max_body_bytes: num("MAX_BODY_BYTES")?.map(|v| v as usize),
        log: get("LOG"),
        log_format: get("LOG_FORMAT"),
        artifacts_keep_attempts: get("ARTIFACTS_KEEP_ATTEMPTS")
            .map(|v| {
                v.trim().parse::<u64>().map_err(|_| ConfigError::Value {
                    name: "CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS".into(),
                    message: format!("{v:?} is not a whole number"),
                })
            })
            .transpose()?,
        artifacts_max_age_days: num("ARTIFACTS_MAX_AGE_DAYS")?,
        allow_live: get("ALLOW_LIVE")
            .map(|v| match v.trim() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                other => Err(ConfigError::Value {
                    name: "CMAUTOBUY_ALLOW_LIVE".into(),
                    message: format!("{other:?} is not true/false/1/0"),
                }),
            })
            .transpose()?,
        lock_dir: get("LOCK_DIR").map(PathBuf::from),
        device_check_max_age_secs: num("DEVICE_CHECK_MAX_AGE_SECS")?,
        device_probe_max_secs: num("DEVICE_PROBE_MAX_SECS")?,
        retry_wait_gap_secs: num("RETRY_WAIT_GAP_SECS")?,
        retry_wait_gap_max_secs: num("RETRY_WAIT_GAP_MAX_SECS")?,
        reconcile_wait_max_secs: num("RECONCILE_WAIT_MAX_SECS")?,
        unrecognized_pages_pause_after: get("UNRECOGNIZED_PAGES_PAUSE_AFTER")
            .map(|v| {
                v.trim().parse::<u32>().map_err(|_| ConfigError::Value {
                    name: "CMAUTOBUY_UNRECOGNIZED_PAGES_PAUSE_AFTER".into(),
                    message: format!("{v:?} is not a whole number"),
                })
            })
            .transpose()?,
        unrecognized_rate_count: whole(&get, "UNRECOGNIZED_RATE_COUNT")?,
        unrecognized_rate_window: whole(&get, "UNRECOGNIZED_RATE_WINDOW")?,
        battery_min_percent: get("BATTERY_MIN_PERCENT")
            .map(|v| {
                v.trim().parse::<u8>().map_err(|_| ConfigError::Value {
                    name: "CMAUTOBUY_BATTERY_MIN_PERCENT".into(),
                    message: format!("{v:?} is not a percentage"),
                })
            })
            .transpose()?,
        battery_max_temp_c: get("BATTERY_MAX_TEMP_C")
            .map(|v| {
                v.trim().parse::<i32>().map_err(|_| ConfigError::Value {
                    name: "CMAUTOBUY_BATTERY_MAX_TEMP_C".into(),
                    message: format!("{v:?} is not a whole number of degrees"),
                })
            })
            .transpose()?,
        expected_address: get("EXPECTED_ADDRESS")
            .map(|v| v.split('|').map(str::to_string).collect()),
        log_dir: get("LOG_DIR").map(PathBuf::from),
        log_file_max_mb: num("LOG_FILE_MAX_MB")?,
        log_files: get("LOG_FILES")
            .map(|v| {
                v.trim().parse::<u32>().map_err(|_| ConfigError::Value {
                    name: "CMAUTOBUY_LOG_FILES".into(),
                    message: format!("{v:?} is not a whole number"),
                })
            })
            .transpose()?,
        artifacts_max_total_mb: num("ARTIFACTS_MAX_TOTAL_MB")?,
        artifacts_evidence_max_age_days: num("ARTIFACTS_EVIDENCE_MAX_AGE_DAYS")?,
        outbox_compact_after_days: num("OUTBOX_COMPACT_AFTER_DAYS")?,
        min_free_disk_mb: num("MIN_FREE_DISK_MB")?,
        webhook: None,
        console_addr: get("CONSOLE_ADDR"),
        console_password: get("CONSOLE_PASSWORD").map(Secret::new),
        alert_dedup_window_mins: num("ALERT_DEDUP_WINDOW_MINS")?,
        alert_device_paused_after_mins: num("ALERT_DEVICE_PAUSED_AFTER_MINS")?,
        alert_no_success_after_mins: num("ALERT_NO_SUCCESS_AFTER_MINS")?,
        daily_summary_at: get("DAILY_SUMMARY_AT"),
        webhook_max_attempts: get("WEBHOOK_MAX_ATTEMPTS")
            .map(|v| {
                v.trim().parse::<u32>().map_err(|_| ConfigError::Value {
                    name: "CMAUTOBUY_WEBHOOK_MAX_ATTEMPTS".into(),
                    message: format!("{v:?} is not a whole number"),
                })
            })
            .transpose()?,
        webhook_timeout_secs: num("WEBHOOK_TIMEOUT_SECS")?,
        min_task_gap_secs: num("MIN_TASK_GAP_SECS")?,
        live_orders_per_hour: whole(&get, "LIVE_ORDERS_PER_HOUR")?,
        live_orders_per_day: whole(&get, "LIVE_ORDERS_PER_DAY")?,
        backups_keep: whole(&get, "BACKUPS_KEEP")?,
        max_clock_skew_secs: num("MAX_CLOCK_SKEW_SECS")?,
        pdd_version_gate: get("PDD_VERSION_GATE")
            .map(|v| match v.trim() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                other => Err(ConfigError::Value {
                    name: "CMAUTOBUY_PDD_VERSION_GATE".into(),
                    message: format!("{other:?} is not true/false/1/0"),
                }),
            })
            .transpose()?,
        purchase_mode: get("PURCHASE_MODE"),
        self_test_goods_id: get("SELF_TEST_GOODS_ID"),
        device_backend: get("DEVICE_BACKEND"),
        u2_jar: get("U2_JAR").map(PathBuf::from),
        account_check: get("ACCOUNT_CHECK")
            .map(|v| match v.trim() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                other => Err(ConfigError::Value {
                    name: "CMAUTOBUY_ACCOUNT_CHECK".into(),
                    message: format!("{other:?} is not true/false/1/0"),
                }),
            })
            .transpose()?,
    })
}

/// A whole number from `CMAUTOBUY_<k>`.
fn whole(get: &dyn Fn(&str) -> Option<String>, k: &str) -> Result<Option<u32>, ConfigError> {
    get(k)
        .map(|v| {
            v.trim().parse::<u32>().map_err(|_| ConfigError::Value {
                name: format!("CMAUTOBUY_{k}"),
                message: format!("{v:?} is not a whole number"),
            })
        })
        .transpose()
}

fn read_file(path: &Path) -> Result<FileConfig, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    toml::from_str(&text).map_err(|e| ConfigError::Parse {
        path: path.to_path_buf(),
        // toml's message quotes the offending line, which could be the token line.
        message: e.message().to_string(),
    })
}

/// Later layers win field by field.
fn merge(base: FileConfig, over: FileConfig) -> FileConfig {
    FileConfig {
        data_dir: over.data_dir.or(base.data_dir),
        admin_url: over.admin_url.or(base.admin_url),
        token: over.token.or(base.token),
        device: over.device.or(base.device),
        devices: over.devices.or(base.devices),
        name: over.name.or(base.name),
        poll_interval_secs: over.poll_interval_secs.or(base.poll_interval_secs),
        connect_timeout_secs: over.connect_timeout_secs.or(base.connect_timeout_secs),
        request_timeout_secs: over.request_timeout_secs.or(base.request_timeout_secs),
        max_body_bytes: over.max_body_bytes.or(base.max_body_bytes),
        log: over.log.or(base.log),
        log_format: over.log_format.or(base.log_format),
        artifacts_keep_attempts: over
            .artifacts_keep_attempts
            .or(base.artifacts_keep_attempts),
        artifacts_max_age_days: over.artifacts_max_age_days.or(base.artifacts_max_age_days),
        allow_live: over.allow_live.or(base.allow_live),
        lock_dir: over.lock_dir.or(base.lock_dir),
        device_check_max_age_secs: over
            .device_check_max_age_secs
            .or(base.device_check_max_age_secs),
        device_probe_max_secs: over.device_probe_max_secs.or(base.device_probe_max_secs),
        retry_wait_gap_secs: over.retry_wait_gap_secs.or(base.retry_wait_gap_secs),
        retry_wait_gap_max_secs: over
            .retry_wait_gap_max_secs
            .or(base.retry_wait_gap_max_secs),
        reconcile_wait_max_secs: over
            .reconcile_wait_max_secs
            .or(base.reconcile_wait_max_secs),
        unrecognized_pages_pause_after: over
            .unrecognized_pages_pause_after
            .or(base.unrecognized_pages_pause_after),
        unrecognized_rate_count: over
            .unrecognized_rate_count
            .or(base.unrecognized_rate_count),
        unrecognized_rate_window: over
            .unrecognized_rate_window
            .or(base.unrecognized_rate_window),
        battery_min_percent: over.battery_min_percent.or(base.battery_min_percent),
        battery_max_temp_c: over.battery_max_temp_c.or(base.battery_max_temp_c),
        expected_address: over.expected_address.or(base.expected_address),
        log_dir: over.log_dir.or(base.log_dir),
        log_file_max_mb: over.log_file_max_mb.or(base.log_file_max_mb),
        log_files: over.log_files.or(base.log_files),
        artifacts_max_total_mb: over.artifacts_max_total_mb.or(base.artifacts_max_total_mb),
        artifacts_evidence_max_age_days: over
            .artifacts_evidence_max_age_days
            .or(base.artifacts_evidence_max_age_days),
        outbox_compact_after_days: over
            .outbox_compact_after_days
            .or(base.outbox_compact_after_days),
        min_free_disk_mb: over.min_free_disk_mb.or(base.min_free_disk_mb),
        webhook: over.webhook.or(base.webhook),
        console_addr: over.console_addr.or(base.console_addr),
        console_password: over.console_password.or(base.console_password),
        alert_dedup_window_mins: over
            .alert_dedup_window_mins
            .or(base.alert_dedup_window_mins),
        alert_device_paused_after_mins: over
            .alert_device_paused_after_mins
            .or(base.alert_device_paused_after_mins),
        alert_no_success_after_mins: over
            .alert_no_success_after_mins
            .or(base.alert_no_success_after_mins),
        daily_summary_at: over.daily_summary_at.or(base.daily_summary_at),
        webhook_max_attempts: over.webhook_max_attempts.or(base.webhook_max_attempts),
        webhook_timeout_secs: over.webhook_timeout_secs.or(base.webhook_timeout_secs),
        min_task_gap_secs: over.min_task_gap_secs.or(base.min_task_gap_secs),
        live_orders_per_hour: over.live_orders_per_hour.or(base.live_orders_per_hour),
        live_orders_per_day: over.live_orders_per_day.or(base.live_orders_per_day),
        backups_keep: over.backups_keep.or(base.backups_keep),
        max_clock_skew_secs: over.max_clock_skew_secs.or(base.max_clock_skew_secs),
        pdd_version_gate: over.pdd_version_gate.or(base.pdd_version_gate),
        account_check: over.account_check.or(base.account_check),
        purchase_mode: over.purchase_mode.or(base.purchase_mode),
        self_test_goods_id: over.self_test_goods_id.or(base.self_test_goods_id),
        device_backend: over.device_backend.or(base.device_backend),
        u2_jar: over.u2_jar.or(base.u2_jar),
    }
}

/// Builds the effective configuration. `env` looks up environment variables (injected
/// so tests need not touch the process environment).
pub fn load(flags: Overrides, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
    let from_env = env_config(env)?;
    let from_flags = FileConfig {
        data_dir: flags.data_dir.clone(),
        admin_url: flags.admin_url.clone(),
        token: flags.token.clone(),
        device: flags.device.clone(),
        name: flags.name.clone(),
        poll_interval_secs: flags.poll_interval_secs,
        log_format: flags.log_format.clone(),
        ..Default::default()
    };
    // The file's location cannot come from the file itself.
    let explicit = flags.config.clone().or_else(|| {
        env("CMAUTOBUY_CONFIG")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    });
    let platform = platform_dirs(Os::current(), env);
    let (file, file_path) = match explicit {
        Some(p) => (read_file(&p)?, Some(p)),
        None => {
            let given = flags.data_dir.clone().or_else(|| from_env.data_dir.clone());
            // `<data dir>/config.toml`; with the platform's data directory also the
            // platform's config directory.
            let mut candidates = Vec::new();
            match &given {
                Some(d) => candidates.push(d.join("config.toml")),
                None => {
                    let p = platform.as_ref().ok_or_else(no_home)?;
                    candidates.push(p.data.join("config.toml"));
                    candidates.push(p.config.join("config.toml"));
                }
            }
            match candidates.into_iter().find(|p| p.is_file()) {
                Some(p) => (read_file(&p)?, Some(p)),
                None => (FileConfig::default(), None),
            }
        }
    };
    let c = merge(merge(file, from_env), from_flags);
    let gate = gate(&c)?;
    let device_thresholds = device_thresholds(&c)?;
    let data_dir = match c.data_dir.clone() {
        Some(d) => d,
        None => platform
            .as_ref()
            .map(|p| p.data.clone())
            .ok_or_else(no_home)?,
    };
    // One log directory per data directory unless configured: every client instance
    // (one per phone) keeps its logs with its data.
    let default_logs = match (&c.data_dir, &platform) {
        (None, Some(p)) => p.logs.clone(),
        _ => data_dir.join("logs"),
    };
    let resources = resources(&c, default_logs)?;
    let retention = retention(&c)?;
    let notify = notify(&c)?;
    let console = match c.console_addr.as_deref().filter(|s| !s.trim().is_empty()) {
        None => ConsoleAddr::Default,
        Some(s) => ConsoleAddr::parse(s).map_err(|message| ConfigError::Value {
            name: "console_addr".into(),
            message,
        })?,
    };
    let console_password = c.console_password.clone().filter(|p| !p.is_empty());
    if let Some(p) = &console_password {
        crate::console::listen::check_password_length(p.expose()).map_err(|e| {
            ConfigError::Value {
                name: "console_password".into(),
                message: e.to_string(),
            }
        })?;
    }
    if let Err(message) = console.check_password(console_password.is_some()) {
        return Err(ConfigError::Value {
            name: "console_addr".into(),
            message,
        });
    }
    let pacing = pacing(&c)?;
    let (device, devices) = phones(&flags, &c);
    Ok(Config {
        resources,
        data_dir,
        admin_url: c.admin_url.filter(|s| !s.is_empty()),
        token: c.token.filter(|t| !t.is_empty()),
        device,
        devices,
        name: c.name,
        poll_interval: secs("poll_interval_secs", c.poll_interval_secs.unwrap_or(10.0))?,
        connect_timeout: secs(
            "connect_timeout_secs",
            c.connect_timeout_secs.unwrap_or(5.0),
        )?,
        request_timeout: secs(
            "request_timeout_secs",
            c.request_timeout_secs.unwrap_or(30.0),
        )?,
        max_body_bytes: c
            .max_body_bytes
            .unwrap_or(crate::gateway::DEFAULT_MAX_BODY_BYTES),
        log: c.log.unwrap_or_else(|| "info".to_string()),
        log_format: match c.log_format.as_deref().map(str::trim) {
            None | Some("") => LogFormat::Text,
            Some(v) => LogFormat::parse(v).ok_or_else(|| ConfigError::Value {
                name: "log_format".into(),
                message: format!("{v:?} is not `text` or `json`"),
            })?,
        },
        retention,
        allow_live: c.allow_live.unwrap_or(false),
        device_backend: match c.device_backend.as_deref().map(str::trim) {
            None | Some("") => DeviceBackend::Auto,
            Some(v) => DeviceBackend::parse(v).ok_or_else(|| ConfigError::Value {
                name: "device_backend".into(),
                message: format!("{v:?} is not `auto`, `u2` or `uiautomator`"),
            })?,
        },
        u2_jar: c.u2_jar.clone().filter(|p| !p.as_os_str().is_empty()),
        purchase_mode: match c.purchase_mode.as_deref().map(str::trim) {
            None | Some("") => PurchaseMode::Auto,
            Some(v) => PurchaseMode::parse(v).ok_or_else(|| ConfigError::Value {
                name: "purchase_mode".into(),
                message: format!("{v:?} is not `auto` or `dry_run`"),
            })?,
        },
        self_test_goods_id: match c.self_test_goods_id.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(v) if crate::selftest::valid_goods_id(v) => Some(v.to_string()),
            Some(v) => {
                return Err(ConfigError::Value {
                    name: "self_test_goods_id".into(),
                    message: format!(
                        "{:?} is not a goods id (1–24 digits)",
                        v.chars().take(40).collect::<String>()
                    ),
                })
            }
        },
        lock_dir: c
            .lock_dir
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or_else(crate::lock::default_lock_dir),
        gate,
        device_thresholds,
        expected_address: c
            .expected_address
            .unwrap_or_default()
            .into_iter()
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect(),
        notify,
        console,
        console_password,
        pacing,
        backups_keep: c
            .backups_keep
            .map_or(crate::store::backup::DEFAULT_KEEP, |n| n as usize),
        max_clock_skew: match c.max_clock_skew_secs {
            None => crate::clock_check::DEFAULT_MAX_SKEW,
            Some(v) => secs("max_clock_skew_secs", v)?,
        },
        file: file_path,
    })
}

/// The phone, or the phones: `--device` (once or repeated) wins over the `devices` list,
/// which wins over `device`; blanks and duplicates dropped. One phone is `(Some, [])`,
/// several `(None, [..])`.
fn phones(flags: &Overrides, c: &FileConfig) -> (Option<String>, Vec<String>) {
    let listed: Vec<String> = if !flags.devices.is_empty() {
        flags.devices.clone()
    } else if flags.device.is_some() {
        Vec::new()
    } else {
        c.devices.clone().unwrap_or_default()
    };
    let mut unique: Vec<String> = Vec::new();
    for d in listed.iter().map(|d| d.trim()).filter(|d| !d.is_empty()) {
        if !unique.iter().any(|u| u == d) {
            unique.push(d.to_string());
        }
    }
    match unique.len() {
        0 => (c.device.clone().filter(|s| !s.is_empty()), Vec::new()),
        1 => (unique.pop(), Vec::new()),
        _ => (None, unique),
    }
}

/// A size in MB as bytes (`None`: unset); 0 is allowed (it switches the bound off).
fn megabytes(name: &str, v: Option<f64>) -> Result<Option<u64>, ConfigError> {
    match v {
        None => Ok(None),
        Some(mb) if mb.is_finite() && mb >= 0.0 && mb * (MB as f64) < u64::MAX as f64 => {
            Ok(Some((mb * MB as f64) as u64))
        }
        Some(mb) => Err(ConfigError::Value {
            name: name.into(),
            message: format!("{mb} is not a size in MB (0 or more)"),
        }),
    }
}

/// A number of days (`None`: unset; `Some(None)`: 0 = off).
fn days(name: &str, v: Option<f64>) -> Result<Option<Option<Duration>>, ConfigError> {
    match v {
        None => Ok(None),
        Some(0.0) => Ok(Some(None)),
        Some(d) => Duration::try_from_secs_f64(d * 86_400.0)
            .ok()
            .filter(|x| !x.is_zero())
            .map(|x| Some(Some(x)))
            .ok_or_else(|| ConfigError::Value {
                name: name.into(),
                message: format!("{d} is not a positive number of days (0 = off)"),
            }),
    }
}

/// The resource bounds from their keys; unset keys keep [`Resources::defaults`].
fn resources(c: &FileConfig, default_logs: PathBuf) -> Result<Resources, ConfigError> {
    let mut r = Resources::defaults(
        c.log_dir
            .clone()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(default_logs),
    );
    if let Some(b) = megabytes("log_file_max_mb", c.log_file_max_mb)? {
        if b < 4096 {
            return Err(ConfigError::Value {
                name: "log_file_max_mb".into(),
                message: "a log file must be allowed at least 4 KB".into(),
            });
        }
        r.log_file_max_bytes = b;
    }
    if let Some(n) = c.log_files {
        r.log_files = n;
    }
    if let Some(d) = days("outbox_compact_after_days", c.outbox_compact_after_days)? {
        r.outbox_compact_after = d;
    }
    if let Some(b) = megabytes("min_free_disk_mb", c.min_free_disk_mb)? {
        r.min_free_disk_bytes = b;
    }
    Ok(r)
}

/// Minutes as a duration; 0 means "never" where `zero_off`.
fn minutes(name: &str, v: f64, zero_off: bool) -> Result<Option<Duration>, ConfigError> {
    if zero_off && v == 0.0 {
        return Ok(None);
    }
    Duration::try_from_secs_f64(v * 60.0)
        .ok()
        .filter(|d| !d.is_zero())
        .map(Some)
        .ok_or_else(|| ConfigError::Value {
            name: name.into(),
            message: format!("{v} is not a positive number of minutes"),
        })
}

/// Webhooks and notification timings; unset keys keep [`NotifyConfig::default`].
fn notify(c: &FileConfig) -> Result<NotifyConfig, ConfigError> {
    let mut n = NotifyConfig::default();
    let mut ids = Vec::new();
    for (i, w) in c.webhook.iter().flatten().enumerate() {
        let hook = Webhook::from_config(w).map_err(|message| ConfigError::Value {
            name: format!("webhook #{}", i + 1),
            message,
        })?;
        if ids.contains(&hook.id) {
            return Err(ConfigError::Value {
                name: format!("webhook #{}", i + 1),
                message: "the same url is configured twice".into(),
            });
        }
        ids.push(hook.id.clone());
        n.webhooks.push(hook);
    }
    if let Some(v) = c.alert_dedup_window_mins {
        n.dedup_window = minutes("alert_dedup_window_mins", v, false)?.unwrap_or(n.dedup_window);
    }
    if let Some(v) = c.alert_device_paused_after_mins {
        n.device_paused_after = minutes("alert_device_paused_after_mins", v, true)?;
    }
    if let Some(v) = c.alert_no_success_after_mins {
        n.no_success_after = minutes("alert_no_success_after_mins", v, true)?;
    }
    if let Some(s) = &c.daily_summary_at {
        n.daily_summary = if s.trim().eq_ignore_ascii_case("off") {
            None
        } else {
            Some(SummaryAt::parse(s).map_err(|message| ConfigError::Value {
                name: "daily_summary_at".into(),
                message,
            })?)
        };
    }
    if let Some(k) = c.webhook_max_attempts {
        if k == 0 {
            return Err(ConfigError::Value {
                name: "webhook_max_attempts".into(),
                message: "must be at least 1".into(),
            });
        }
        n.max_attempts = k;
    }
    if let Some(v) = c.webhook_timeout_secs {
        n.request_timeout = secs("webhook_timeout_secs", v)?;
    }
    Ok(n)
}

/// The device gate's timings from their keys; unset keys keep [`GateConfig::default`].
fn gate(c: &FileConfig) -> Result<GateConfig, ConfigError> {
    let d = GateConfig::default();
    let key = |name: &str, v: Option<f64>, default: Duration| match v {
        None => Ok(default),
        Some(v) => secs(name, v),
    };
    let g = GateConfig {
        check_max_age: key(
            "device_check_max_age_secs",
            c.device_check_max_age_secs,
            d.check_max_age,
        )?,
        probe_min: d.probe_min,
        probe_max: key(
            "device_probe_max_secs",
            c.device_probe_max_secs,
            d.probe_max,
        )?,
        retry_gap: key("retry_wait_gap_secs", c.retry_wait_gap_secs, d.retry_gap)?,
        retry_gap_max: key(
            "retry_wait_gap_max_secs",
            c.retry_wait_gap_max_secs,
            d.retry_gap_max,
        )?,
        account_pause: d.account_pause,
        unrecognized_pause_after: c
            .unrecognized_pages_pause_after
            .unwrap_or(d.unrecognized_pause_after),
        unrecognized_rate_count: c
            .unrecognized_rate_count
            .unwrap_or(d.unrecognized_rate_count),
        unrecognized_rate_window: c
            .unrecognized_rate_window
            .unwrap_or(d.unrecognized_rate_window),
        pdd_version_gate: c.pdd_version_gate.unwrap_or(d.pdd_version_gate),
        account_check: c.account_check.unwrap_or(d.account_check),
        reconcile_wait_max: key(
            "reconcile_wait_max_secs",
            c.reconcile_wait_max_secs,
            d.reconcile_wait_max,
        )?,
    };
    Ok(GateConfig {
        probe_max: g.probe_max.max(g.probe_min),
        retry_gap_max: g.retry_gap_max.max(g.retry_gap),
        ..g
    })
}

/// The battery thresholds; unset keys keep the defaults.
fn device_thresholds(c: &FileConfig) -> Result<crate::device::state::Thresholds, ConfigError> {
    let d = crate::device::state::Thresholds::default();
    let min = c.battery_min_percent.unwrap_or(d.battery_min_percent);
    if min > 100 {
        return Err(ConfigError::Value {
            name: "battery_min_percent".into(),
            message: format!("{min} is more than 100"),
        });
    }
    Ok(crate::device::state::Thresholds {
        battery_min_percent: min,
        battery_max_temp_c: c.battery_max_temp_c.unwrap_or(d.battery_max_temp_c),
    })
}

/// The pacing keys; unset keys keep [`PacingConfig::default`]. The gap may be 0.
fn pacing(c: &FileConfig) -> Result<PacingConfig, ConfigError> {
    let d = PacingConfig::default();
    let min_task_gap = match c.min_task_gap_secs {
        None => d.min_task_gap,
        Some(v) => Duration::try_from_secs_f64(v).map_err(|_| ConfigError::Value {
            name: "min_task_gap_secs".into(),
            message: format!("{v} is not a number of seconds ≥ 0"),
        })?,
    };
    Ok(PacingConfig {
        min_task_gap,
        live_orders_per_hour: c.live_orders_per_hour.unwrap_or(d.live_orders_per_hour),
        live_orders_per_day: c.live_orders_per_day.unwrap_or(d.live_orders_per_day),
    })
}

/// The retention setting from its two keys; unset keys keep [`Retention::default`].
fn retention(c: &FileConfig) -> Result<Retention, ConfigError> {
    let (keep, max_age_days) = (c.artifacts_keep_attempts, c.artifacts_max_age_days);
    let mut r = Retention::default();
    if let Some(b) = megabytes("artifacts_max_total_mb", c.artifacts_max_total_mb)? {
        r.max_total_bytes = (b > 0).then_some(b);
    }
    if let Some(d) = days(
        "artifacts_evidence_max_age_days",
        c.artifacts_evidence_max_age_days,
    )? {
        r.evidence_max_age = d;
    }
    if let Some(n) = keep {
        r.keep_attempts =
            usize::try_from(n)
                .ok()
                .filter(|&n| n >= 1)
                .ok_or_else(|| ConfigError::Value {
                    name: "artifacts_keep_attempts".into(),
                    message: format!(
                        "{n} must be at least 1 (the attempt being written is always kept)"
                    ),
                })?;
    }
    if let Some(days) = max_age_days {
        r.max_age = if days == 0.0 {
            None
        } else {
            Some(
                Duration::try_from_secs_f64(days * 86_400.0)
                    .ok()
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| ConfigError::Value {
                        name: "artifacts_max_age_days".into(),
                        message: format!("{days} is not a positive number of days (0 = no limit)"),
                    })?,
            )
        };
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    #[test]
    fn retention_keys_from_file_and_env_with_validation() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "artifacts_keep_attempts = 2\nartifacts_max_age_days = 7\n",
        )
        .unwrap();
        let path = file.to_str().unwrap().to_string();
        let c = load(
            Overrides::default(),
            &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
        )
        .unwrap();
        assert_eq!(c.retention.keep_attempts, 2);
        assert_eq!(c.retention.max_age, Some(Duration::from_secs(7 * 86_400)));

        // The environment wins over the file; 0 days means no age limit.
        let c = load(
            Overrides::default(),
            &env_of(&[
                ("CMAUTOBUY_CONFIG", &path),
                ("HOME", "/h"),
                ("CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS", "9"),
                ("CMAUTOBUY_ARTIFACTS_MAX_AGE_DAYS", "0"),
            ]),
        )
        .unwrap();
        assert_eq!(c.retention.keep_attempts, 9);
        assert_eq!(c.retention.max_age, None);

        // Unset: the defaults.
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        assert_eq!(c.retention, Retention::default());

        // Nonsense is a typed error naming the key, never a silent default.
        for (k, v) in [
            ("CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS", "0"),
            ("CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS", "-1"),
            ("CMAUTOBUY_ARTIFACTS_KEEP_ATTEMPTS", "two"),
            ("CMAUTOBUY_ARTIFACTS_MAX_AGE_DAYS", "-3"),
            ("CMAUTOBUY_ARTIFACTS_MAX_AGE_DAYS", "NaN"),
        ] {
            let err = load(Overrides::default(), &env_of(&[("HOME", "/h"), (k, v)]))
                .expect_err(&format!("{k}={v}"));
            assert!(matches!(err, ConfigError::Value { .. }), "{k}={v}: {err}");
            assert!(
                err.to_string().to_lowercase().contains("artifacts"),
                "{err}"
            );
        }
    }

    #[test]
    fn layers_defaults_file_env_flags() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "admin_url = \"http://file\"\ntoken = \"file-token\"\ndevice = \"file-dev\"\nname = \"file-name\"\npoll_interval_secs = 3\n",
        )
        .unwrap();
        let env = env_of(&[
            ("CMAUTOBUY_CONFIG", file.to_str().unwrap()),
            ("CMAUTOBUY_TOKEN", "env-token"),
            ("CMAUTOBUY_DEVICE", "env-dev"),
            ("HOME", "/home/x"),
        ]);
        let c = load(
            Overrides {
                device: Some("flag-dev".into()),
                ..Default::default()
            },
            &env,
        )
        .unwrap();
        assert_eq!(c.admin_url.as_deref(), Some("http://file"));
        assert_eq!(c.token.as_ref().map(Secret::expose), Some("env-token"));
        assert_eq!(c.device.as_deref(), Some("flag-dev"));
        assert_eq!(c.name.as_deref(), Some("file-name"));
        assert_eq!(c.poll_interval, Duration::from_secs(3));
        assert_eq!(c.request_timeout, Duration::from_secs(30));
        assert_eq!(c.data_dir, PathBuf::from("/home/x/.local/share/cmautobuy"));
        assert!(!format!("{c:?}").contains("env-token"));
    }

    #[test]
    fn config_errors_do_not_quote_the_token() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "token = \"secret-tok\" x\n").unwrap();
        let err = load(
            Overrides {
                config: Some(file),
                ..Default::default()
            },
            &env_of(&[]),
        )
        .unwrap_err();
        assert!(!err.to_string().contains("secret-tok"), "{err}");
    }

    #[test]
    fn the_account_check_is_on_unless_switched_off() {
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        assert!(c.gate.account_check);
        let env = [("HOME", "/h"), ("CMAUTOBUY_ACCOUNT_CHECK", "0")];
        let c = load(Overrides::default(), &env_of(&env)).unwrap();
        assert!(!c.gate.account_check);
        let env = [("HOME", "/h"), ("CMAUTOBUY_ACCOUNT_CHECK", "maybe")];
        let e = load(Overrides::default(), &env_of(&env)).unwrap_err();
        assert!(e.to_string().contains("CMAUTOBUY_ACCOUNT_CHECK"), "{e}");
    }

    #[test]
    fn the_pdd_version_gate_is_on_unless_switched_off() {
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        assert!(c.gate.pdd_version_gate);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "pdd_version_gate = false\n").unwrap();
        let path = file.to_str().unwrap().to_string();
        let env = [("CMAUTOBUY_CONFIG", path.as_str()), ("HOME", "/h")];
        let c = load(Overrides::default(), &env_of(&env)).unwrap();
        assert!(!c.gate.pdd_version_gate);
        let c = load(
            Overrides::default(),
            &env_of(&[
                ("CMAUTOBUY_CONFIG", &path),
                ("HOME", "/h"),
                ("CMAUTOBUY_PDD_VERSION_GATE", "true"),
            ]),
        )
        .unwrap();
        assert!(c.gate.pdd_version_gate);
        let bad = load(
            Overrides::default(),
            &env_of(&[("HOME", "/h"), ("CMAUTOBUY_PDD_VERSION_GATE", "maybe")]),
        );
        assert!(bad.is_err());
    }

    #[test]
    fn the_device_backend_is_auto_unless_chosen() {
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        assert_eq!(c.device_backend, DeviceBackend::Auto);
        assert_eq!(c.u2_jar, None);
        for (v, want) in [
            ("u2", DeviceBackend::U2),
            ("uiautomator", DeviceBackend::Uiautomator),
            ("auto", DeviceBackend::Auto),
        ] {
            let c = load(
                Overrides::default(),
                &env_of(&[
                    ("HOME", "/h"),
                    ("CMAUTOBUY_DEVICE_BACKEND", v),
                    ("CMAUTOBUY_U2_JAR", "/opt/u2.jar"),
                ]),
            )
            .unwrap();
            assert_eq!(c.device_backend, want);
            assert_eq!(c.device_backend.as_str(), v);
            assert_eq!(c.u2_jar, Some(PathBuf::from("/opt/u2.jar")));
        }
        let e = load(
            Overrides::default(),
            &env_of(&[("HOME", "/h"), ("CMAUTOBUY_DEVICE_BACKEND", "adb")]),
        )
        .unwrap_err();
        assert!(e.to_string().contains("device_backend"), "{e}");
    }

    #[test]
    fn purchase_mode_and_self_test_goods_are_read_and_checked() {
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        assert_eq!(c.purchase_mode, PurchaseMode::Auto);
        assert_eq!(c.self_test_goods_id, None);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "purchase_mode = \"dry_run\"\nself_test_goods_id = \"602938475610\"\n",
        )
        .unwrap();
        let path = file.to_str().unwrap().to_string();
        let c = load(
            Overrides::default(),
            &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
        )
        .unwrap();
        assert_eq!(c.purchase_mode, PurchaseMode::DryRun);
        assert_eq!(c.self_test_goods_id.as_deref(), Some("602938475610"));
        // The environment overrides the file.
        let c = load(
            Overrides::default(),
            &env_of(&[
                ("CMAUTOBUY_CONFIG", &path),
                ("HOME", "/h"),
                ("CMAUTOBUY_PURCHASE_MODE", "auto"),
                ("CMAUTOBUY_SELF_TEST_GOODS_ID", "123"),
            ]),
        )
        .unwrap();
        assert_eq!(c.purchase_mode, PurchaseMode::Auto);
        assert_eq!(c.self_test_goods_id.as_deref(), Some("123"));
        for (k, v, name) in [
            ("CMAUTOBUY_PURCHASE_MODE", "live", "purchase_mode"),
            (
                "CMAUTOBUY_SELF_TEST_GOODS_ID",
                "https://x/?goods_id=1",
                "self_test_goods_id",
            ),
            (
                "CMAUTOBUY_SELF_TEST_GOODS_ID",
                "1234567890123456789012345",
                "self_test_goods_id",
            ),
        ] {
            match load(Overrides::default(), &env_of(&[("HOME", "/h"), (k, v)])) {
                Err(ConfigError::Value { name: n, .. }) => assert_eq!(n, name, "{k}={v}"),
                other => panic!("{k}={v}: {other:?}"),
            }
        }
    }

    #[test]
    fn allow_live_is_off_unless_configured() {
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        assert!(!c.allow_live, "live purchases are never on by default");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(&file, "allow_live = true\n").unwrap();
        let path = file.to_str().unwrap().to_string();
        let c = load(
            Overrides::default(),
            &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
        )
        .unwrap();
        assert!(c.allow_live);
        // The environment overrides the file, both ways.
        let c = load(
            Overrides::default(),
            &env_of(&[
                ("CMAUTOBUY_CONFIG", &path),
                ("HOME", "/h"),
                ("CMAUTOBUY_ALLOW_LIVE", "0"),
            ]),
        )
        .unwrap();
        assert!(!c.allow_live);
        let err = load(
            Overrides::default(),
            &env_of(&[("HOME", "/h"), ("CMAUTOBUY_ALLOW_LIVE", "yes please")]),
        )
        .expect_err("not a boolean");
        assert!(err.to_string().contains("CMAUTOBUY_ALLOW_LIVE"), "{err}");
        // A string in the file is a parse error, not "true".
        std::fs::write(&file, "allow_live = \"true\"\n").unwrap();
        assert!(matches!(
            load(
                Overrides::default(),
                &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")])
            ),
            Err(ConfigError::Parse { .. })
        ));
    }

    #[test]
    fn lock_dir_defaults_to_the_shared_directory_and_has_an_env_twin() {
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        assert_eq!(c.lock_dir, crate::lock::default_lock_dir());
        let c = load(
            Overrides::default(),
            &env_of(&[("HOME", "/h"), ("CMAUTOBUY_LOCK_DIR", "/run/x")]),
        )
        .unwrap();
        assert_eq!(c.lock_dir, PathBuf::from("/run/x"));
    }

    #[test]
    fn platform_directories_by_convention() {
        let unix = platform_dirs(Os::Unix, &env_of(&[("HOME", "/home/op")])).unwrap();
        assert_eq!(unix.data, PathBuf::from("/home/op/.local/share/cmautobuy"));
        assert_eq!(unix.config, PathBuf::from("/home/op/.config/cmautobuy"));
        assert_eq!(
            unix.logs,
            PathBuf::from("/home/op/.local/state/cmautobuy/logs")
        );
        let xdg = platform_dirs(
            Os::Unix,
            &env_of(&[
                ("HOME", "/home/op"),
                ("XDG_DATA_HOME", "/d"),
                ("XDG_CONFIG_HOME", "/c"),
                ("XDG_STATE_HOME", "/s"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (xdg.data, xdg.config, xdg.logs),
            (
                PathBuf::from("/d/cmautobuy"),
                PathBuf::from("/c/cmautobuy"),
                PathBuf::from("/s/cmautobuy/logs")
            )
        );
        // A relative XDG value is ignored (the spec says so), never the current directory.
        let rel = platform_dirs(
            Os::Unix,
            &env_of(&[("HOME", "/home/op"), ("XDG_DATA_HOME", "rel")]),
        )
        .unwrap();
        assert_eq!(rel.data, PathBuf::from("/home/op/.local/share/cmautobuy"));
        let mac = platform_dirs(Os::MacOs, &env_of(&[("HOME", "/Users/op")])).unwrap();
        assert_eq!(
            mac.data,
            PathBuf::from("/Users/op/Library/Application Support/cmautobuy")
        );
        assert_eq!(mac.logs, PathBuf::from("/Users/op/Library/Logs/cmautobuy"));
        let win = platform_dirs(
            Os::Windows,
            &env_of(&[
                ("APPDATA", "C:/Users/op/AppData/Roaming"),
                ("LOCALAPPDATA", "C:/Users/op/AppData/Local"),
            ]),
        )
        .unwrap();
        assert_eq!(
            win.data,
            PathBuf::from("C:/Users/op/AppData/Roaming/cmautobuy/data")
        );
        assert_eq!(
            win.logs,
            PathBuf::from("C:/Users/op/AppData/Local/cmautobuy/logs")
        );
        for os in [Os::Unix, Os::MacOs, Os::Windows] {
            assert_eq!(platform_dirs(os, &env_of(&[])), None, "{os:?}");
        }
    }

    #[test]
    fn without_a_home_the_data_directory_must_be_given_never_the_current_directory() {
        let err = load(Overrides::default(), &env_of(&[])).unwrap_err();
        assert!(err.to_string().contains("--data-dir"), "{err}");
        let c = load(
            Overrides::default(),
            &env_of(&[("CMAUTOBUY_DATA_DIR", "/srv/phone-1")]),
        )
        .unwrap();
        assert_eq!(c.data_dir, PathBuf::from("/srv/phone-1"));
        // One log directory per data directory when the data directory is given …
        assert_eq!(c.resources.log_dir, PathBuf::from("/srv/phone-1/logs"));
        // … the platform's log directory with the platform's data directory.
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        if Os::current() == Os::Unix {
            assert_eq!(c.data_dir, PathBuf::from("/h/.local/share/cmautobuy"));
            assert_eq!(
                c.resources.log_dir,
                PathBuf::from("/h/.local/state/cmautobuy/logs")
            );
        }
    }

    #[test]
    fn webhooks_come_from_the_file_and_never_print_their_urls() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            r#"
alert_dedup_window_mins = 5
alert_no_success_after_mins = 0
daily_summary_at = "08:30+08:00"
console_addr = "127.0.0.1:0"

[[webhook]]
url = "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key=WECOM-KEY-1"
format = "wecom"

[[webhook]]
url = "https://oapi.dingtalk.com/robot/send?access_token=DING-TOKEN-2"
format = "dingtalk"
secret = "SEC-DING-3"
kinds = ["alert", "daily_summary"]
"#,
        )
        .unwrap();
        let path = file.to_str().unwrap().to_string();
        let c = load(
            Overrides::default(),
            &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
        )
        .unwrap();
        assert_eq!(c.notify.webhooks.len(), 2);
        assert_eq!(c.notify.dedup_window, Duration::from_secs(300));
        assert_eq!(c.notify.no_success_after, None);
        assert_eq!(
            c.notify.device_paused_after,
            Some(Duration::from_secs(600)),
            "default"
        );
        assert!(c.notify.daily_summary.is_some());
        assert_eq!(c.console, ConsoleAddr::At("127.0.0.1:0".parse().unwrap()));
        let shown = format!("{c:?}");
        for secret in ["WECOM-KEY-1", "DING-TOKEN-2", "SEC-DING-3"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        // A non-loopback console and a bad webhook are typed errors naming the key.
        let err = load(
            Overrides::default(),
            &env_of(&[
                ("CMAUTOBUY_CONFIG", &path),
                ("HOME", "/h"),
                ("CMAUTOBUY_CONSOLE_ADDR", "0.0.0.0:9464"),
            ]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("console_addr"), "{err}");
        std::fs::write(&file, "[[webhook]]\nurl = \"ftp://x/?key=K\"\n").unwrap();
        let err = load(
            Overrides::default(),
            &env_of(&[("CMAUTOBUY_CONFIG", &path), ("HOME", "/h")]),
        )
        .unwrap_err();
        assert!(err.to_string().contains("webhook #1"), "{err}");
        assert!(!err.to_string().contains("key=K"), "{err}");
        // Defaults: no webhook, the console on the default ports.
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        assert!(c.notify.webhooks.is_empty());
        assert_eq!(c.console, ConsoleAddr::Default);
    }

    /// A console password shorter than 10 characters is refused with its code, from the
    /// file or the environment alike; 10 is enough.
    #[test]
    fn a_short_console_password_is_refused() {
        for pw in ["short", "123456789", "九个字的控制台密码"] {
            let err = load(
                Overrides::default(),
                &env_of(&[("HOME", "/h"), ("CMAUTOBUY_CONSOLE_PASSWORD", pw)]),
            )
            .unwrap_err();
            let text = err.to_string();
            assert!(text.contains("CONSOLE_PASSWORD_TOO_SHORT"), "{pw}: {text}");
            assert!(text.contains("console_password"), "{text}");
            assert!(!text.contains(pw), "the password is not quoted: {text}");
        }
        let c = load(
            Overrides::default(),
            &env_of(&[("HOME", "/h"), ("CMAUTOBUY_CONSOLE_PASSWORD", "0123456789")]),
        )
        .unwrap();
        assert!(c.console_password.is_some());
    }

    #[test]
    fn pacing_keys_default_and_override() {
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        assert_eq!(c.pacing, PacingConfig::default());
        let c = load(
            Overrides::default(),
            &env_of(&[
                ("HOME", "/h"),
                ("CMAUTOBUY_MIN_TASK_GAP_SECS", "0"),
                ("CMAUTOBUY_LIVE_ORDERS_PER_HOUR", "0"),
                ("CMAUTOBUY_LIVE_ORDERS_PER_DAY", "7"),
            ]),
        )
        .unwrap();
        assert_eq!(
            c.pacing,
            PacingConfig {
                min_task_gap: Duration::ZERO,
                live_orders_per_hour: 0,
                live_orders_per_day: 7,
            }
        );
        for (k, v) in [
            ("CMAUTOBUY_MIN_TASK_GAP_SECS", "-1"),
            ("CMAUTOBUY_LIVE_ORDERS_PER_HOUR", "-1"),
            ("CMAUTOBUY_LIVE_ORDERS_PER_DAY", "many"),
        ] {
            assert!(
                matches!(
                    load(Overrides::default(), &env_of(&[("HOME", "/h"), (k, v)])),
                    Err(ConfigError::Value { .. })
                ),
                "{k}={v}"
            );
        }
    }

    #[test]
    fn resource_keys_with_defaults_and_validation() {
        let c = load(Overrides::default(), &env_of(&[("HOME", "/h")])).unwrap();
        let r = &c.resources;
        assert_eq!((r.log_file_max_bytes, r.log_files), (10 * MB, 5));
        assert_eq!(r.min_free_disk_bytes, 500 * MB);
        assert_eq!(
            r.outbox_compact_after,
            Some(Duration::from_secs(30 * 86_400))
        );
        assert_eq!(c.retention.max_total_bytes, Some(2048 * MB));
        assert_eq!(
            c.retention.evidence_max_age,
            Some(Duration::from_secs(180 * 86_400))
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "log_dir = \"/var/log/cm\"\nlog_file_max_mb = 1\nlog_files = 2\n\
             artifacts_max_total_mb = 0\nartifacts_evidence_max_age_days = 365\n\
             outbox_compact_after_days = 0\nmin_free_disk_mb = 100\n",
        )
        .unwrap();
        let path = file.to_str().unwrap().to_string();
        let c = load(
            Overrides::default(),
            &env_of(&[
                ("CMAUTOBUY_CONFIG", &path),
                ("HOME", "/h"),
                ("CMAUTOBUY_LOG_FILES", "3"),
            ]),
        )
        .unwrap();
        let r = &c.resources;
        assert_eq!(r.log_dir, PathBuf::from("/var/log/cm"));
        assert_eq!((r.log_file_max_bytes, r.log_files), (MB, 3));
        assert_eq!(r.outbox_compact_after, None);
        assert_eq!(r.min_free_disk_bytes, 100 * MB);
        assert_eq!(c.retention.max_total_bytes, None);
        assert_eq!(
            c.retention.evidence_max_age,
            Some(Duration::from_secs(365 * 86_400))
        );
        for (k, v) in [
            ("CMAUTOBUY_MIN_FREE_DISK_MB", "-1"),
            ("CMAUTOBUY_ARTIFACTS_MAX_TOTAL_MB", "lots"),
            ("CMAUTOBUY_LOG_FILE_MAX_MB", "0.0001"),
            ("CMAUTOBUY_OUTBOX_COMPACT_AFTER_DAYS", "-2"),
            ("CMAUTOBUY_LOG_FILES", "-1"),
        ] {
            let err = load(Overrides::default(), &env_of(&[("HOME", "/h"), (k, v)]))
                .expect_err(&format!("{k}={v}"));
            assert!(matches!(err, ConfigError::Value { .. }), "{k}={v}: {err}");
        }
    }

    #[test]
    fn bad_numbers_are_reported() {
        let env = env_of(&[("CMAUTOBUY_POLL_INTERVAL_SECS", "soon")]);
        assert!(matches!(
            load(Overrides::default(), &env),
            Err(ConfigError::Value { .. })
        ));
    }

    #[test]
    fn several_phones_from_flags_the_list_or_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("c.toml");
        std::fs::write(
            &file,
            "device = \"one\"\ndevices = [\"A\", \"B\", \"A\", \" \"]\n",
        )
        .unwrap();
        let env = env_of(&[("CMAUTOBUY_CONFIG", file.to_str().unwrap()), ("HOME", "/h")]);
        // The list wins over `device`; duplicates and blanks dropped.
        let c = load(Overrides::default(), &env).unwrap();
        assert_eq!(
            (c.device.as_deref(), c.devices.as_slice()),
            (None, &["A".to_string(), "B".to_string()][..])
        );
        // One --device: that phone alone.
        let one = Overrides {
            device: Some("X".into()),
            ..Default::default()
        };
        let c = load(one, &env).unwrap();
        assert_eq!((c.device.as_deref(), c.devices.len()), (Some("X"), 0));
        // --device repeated.
        let two = Overrides {
            devices: vec!["X".into(), "Y".into()],
            ..Default::default()
        };
        let c = load(two, &env).unwrap();
        assert_eq!(c.devices, ["X", "Y"]);
        // The environment, comma-separated; a list of one is one phone.
        let env = env_of(&[("HOME", "/h"), ("CMAUTOBUY_DEVICES", "P,Q")]);
        assert_eq!(
            load(Overrides::default(), &env).unwrap().devices,
            ["P", "Q"]
        );
        let env = env_of(&[("HOME", "/h"), ("CMAUTOBUY_DEVICES", "P")]);
        let c = load(Overrides::default(), &env).unwrap();
        assert_eq!((c.device.as_deref(), c.devices.len()), (Some("P"), 0));
    }
}
