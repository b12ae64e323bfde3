//! [`load`]: the layers read, merged and deserialized into the sections, then given their
//! meaning ([`Config`]), every refusal naming the key and where its value came from.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::admin_url::check as check_admin_url;
use super::error::{ConfigError, Origin};
use super::layers::Layer;
use super::overrides::Overrides;
use super::platform::{self, platform_dirs, Os, PlatformDirs};
use super::resolved::{Config, Resources, MB};
use super::settings::{self, Settings};
use crate::artifacts::Retention;
use crate::console::ConsoleAddr;
use crate::gate::GateConfig;
use crate::notify::{NotifyConfig, SummaryAt, Webhook};
use crate::pacing::PacingConfig;

/// Which layers [`load_with`] reads besides the flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sources {
    /// Everything: the file (given, or found in the data directory or the platform's
    /// directories) and the environment.
    All,
    /// The environment, and a file only when one is named (`--config`,
    /// `$CMAUTOBUY_CONFIG`) or in a data directory given: never the platform's default
    /// one (`rehearse`, which must not pick up the machine's production settings).
    NamedFileOnly,
    /// No file (`doctor` reporting a file that does not load).
    NoFile,
    /// Neither file nor environment (`doctor` reporting an environment that does not
    /// load): the flags and the defaults — and `CMAUTOBUY_DATA_DIR`, which names the
    /// directory checked.
    FlagsOnly,
}

/// Builds the effective configuration. `env` looks up environment variables (injected
/// so tests need not touch the process environment).
pub fn load(flags: Overrides, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
    load_with(flags, env, Sources::All)
}

/// [`load`], reading only `sources` besides the flags.
pub fn load_with(
    flags: Overrides,
    env: &dyn Fn(&str) -> Option<String>,
    sources: Sources,
) -> Result<Config, ConfigError> {
    if let Some((key, flag)) = &flags.refused {
        return Err(ConfigError::Value {
            name: key.clone(),
            origin: Some(Origin::Flag(flag.clone())),
            message: "the path is not valid UTF-8".into(),
        });
    }
    let schema = Settings::schema();
    flags.layer.check_keys(&schema)?;
    // Without the environment's settings the data directory still comes from it: the
    // checks are about that directory (a text, it cannot be what failed).
    let env = |k: &str| match sources {
        Sources::FlagsOnly if k.starts_with("CMAUTOBUY_") && k != "CMAUTOBUY_DATA_DIR" => None,
        _ => env(k),
    };
    let platform = platform_dirs(Os::current(), &env);
    let given_dir = flags
        .layer
        .text("data_dir")
        .map(str::to_string)
        .or_else(|| env("CMAUTOBUY_DATA_DIR"))
        .filter(|d| !d.is_empty())
        .map(PathBuf::from);
    // The file's location cannot come from the file itself.
    let explicit = flags.config.clone().or_else(|| {
        env("CMAUTOBUY_CONFIG")
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
    });
    let (file, file_path) = match (sources, explicit) {
        (Sources::NoFile | Sources::FlagsOnly, _) => (Layer::default(), None),
        (_, Some(p)) => (read_file(&p)?, Some(p)),
        (_, None) => {
            // `<data dir>/config.toml`; with the platform's data directory also the
            // platform's config directory.
            let mut candidates = Vec::new();
            match (&given_dir, sources) {
                (Some(d), _) => candidates.push(d.join("config.toml")),
                (None, Sources::NamedFileOnly) => {}
                (None, _) => {
                    let p = platform.as_ref().ok_or_else(platform::no_home)?;
                    candidates.push(p.data.join("config.toml"));
                    candidates.push(p.config.join("config.toml"));
                }
            }
            match candidates.into_iter().find(|p| p.is_file()) {
                Some(p) => (read_file(&p)?, Some(p)),
                None => (Layer::default(), None),
            }
        }
    };
    // The file's errors first: it is the layer below the environment.
    file.check_keys(&schema)?;
    let from_env = Layer::from_env(&schema, &env)?;
    let merged = file.under(from_env).under(flags.layer);
    let s = Settings::from_layers(&merged, &schema)?;
    // A rehearsal keeps its files in a directory of its own: no home is no reason to
    // refuse it.
    let platform = match (platform, sources) {
        (None, Sources::NamedFileOnly) => {
            let tmp = std::env::temp_dir().join("cmautobuy");
            Some(PlatformDirs {
                data: tmp.clone(),
                config: tmp.clone(),
                logs: tmp.join("logs"),
            })
        }
        (p, _) => p,
    };
    resolve(s, &merged, platform, file_path)
}

fn read_file(path: &Path) -> Result<Layer, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    Layer::from_file(path, &text)
}

/// The values' meaning: every refusal names the key and where its value came from.
fn resolve(
    s: Settings,
    merged: &Layer,
    platform: Option<PlatformDirs>,
    file: Option<PathBuf>,
) -> Result<Config, ConfigError> {
    let bad = |key: &str, message: String| ConfigError::Value {
        name: key.into(),
        origin: merged.origin(key).cloned(),
        message,
    };
    let secs = |key: &str, v: f64| -> Result<Duration, ConfigError> {
        Duration::try_from_secs_f64(v)
            .ok()
            .filter(|d| !d.is_zero())
            .ok_or_else(|| bad(key, format!("{v} is not a positive number of seconds")))
    };
    // A number of days or minutes, 0 = off.
    let span =
        |key: &str, v: f64, unit: f64, what: &str| -> Result<Option<Duration>, ConfigError> {
            if v == 0.0 {
                return Ok(None);
            }
            Duration::try_from_secs_f64(v * unit)
                .ok()
                .filter(|d| !d.is_zero())
                .map(Some)
                .ok_or_else(|| {
                    bad(
                        key,
                        format!("{v} is not a positive number of {what} (0 = off)"),
                    )
                })
        };
    let megabytes = |key: &str, v: f64| -> Result<u64, ConfigError> {
        if v.is_finite() && v >= 0.0 && v * (MB as f64) < u64::MAX as f64 {
            Ok((v * MB as f64) as u64)
        } else {
            Err(bad(key, format!("{v} is not a size in MB (0 or more)")))
        }
    };

    let data_dir = match s
        .storage
        .data_dir
        .clone()
        .filter(|d| !d.as_os_str().is_empty())
    {
        Some(d) => d,
        None => platform
            .as_ref()
            .map(|p| p.data.clone())
            .ok_or_else(platform::no_home)?,
    };
    // One log directory per data directory unless configured: every client instance
    // (one per phone) keeps its logs with its data.
    let log_dir = match (&s.logging.log_dir, &s.storage.data_dir, &platform) {
        (Some(d), _, _) if !d.as_os_str().is_empty() => d.clone(),
        (_, None, Some(p)) => p.logs.clone(),
        _ => data_dir.join("logs"),
    };

    let c = &s.connection;
    let admin_url = c.admin_url.clone().filter(|u| !u.trim().is_empty());
    if let Some(u) = &admin_url {
        check_admin_url(u).map_err(|e| bad("admin_url", e.to_string()))?;
    }

    let g = &s.gate;
    let gate = {
        let d = GateConfig::default();
        let g = GateConfig {
            check_max_age: secs("device_check_max_age_secs", g.device_check_max_age_secs)?,
            probe_max: secs("device_probe_max_secs", g.device_probe_max_secs)?,
            retry_gap: secs("retry_wait_gap_secs", g.retry_wait_gap_secs)?,
            retry_gap_max: secs("retry_wait_gap_max_secs", g.retry_wait_gap_max_secs)?,
            reconcile_wait_max: secs("reconcile_wait_max_secs", g.reconcile_wait_max_secs)?,
            unrecognized_pause_after: g.unrecognized_pages_pause_after,
            unrecognized_rate_count: g.unrecognized_rate_count,
            unrecognized_rate_window: g.unrecognized_rate_window,
            pdd_version_gate: g.pdd_version_gate,
            account_check: g.account_check,
            ..d
        };
        GateConfig {
            probe_max: g.probe_max.max(g.probe_min),
            retry_gap_max: g.retry_gap_max.max(g.retry_gap),
            ..g
        }
    };

    let p = &s.phones;
    if p.battery_min_percent > 100 {
        return Err(bad(
            "battery_min_percent",
            format!("{} is more than 100", p.battery_min_percent),
        ));
    }

    let st = &s.storage;
    let retention = Retention {
        keep_attempts: usize::try_from(st.artifacts_keep_attempts)
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| {
                bad(
                    "artifacts_keep_attempts",
                    format!(
                        "{} must be at least 1 (the attempt being written is always kept)",
                        st.artifacts_keep_attempts
                    ),
                )
            })?,
        max_age: span(
            "artifacts_max_age_days",
            st.artifacts_max_age_days,
            86_400.0,
            "days",
        )?,
        max_total_bytes: Some(megabytes(
            "artifacts_max_total_mb",
            st.artifacts_max_total_mb,
        )?)
        .filter(|&b| b > 0),
        evidence_max_age: span(
            "artifacts_evidence_max_age_days",
            st.artifacts_evidence_max_age_days,
            86_400.0,
            "days",
        )?,
    };

    let l = &s.logging;
    let log_file_max_bytes = megabytes("log_file_max_mb", l.log_file_max_mb)?;
    if log_file_max_bytes < 4096 {
        return Err(bad(
            "log_file_max_mb",
            "a log file must be allowed at least 4 KB".into(),
        ));
    }
    let resources = Resources {
        log_dir,
        log_file_max_bytes,
        log_files: l.log_files,
        outbox_compact_after: span(
            "outbox_compact_after_days",
            st.outbox_compact_after_days,
            86_400.0,
            "days",
        )?,
        min_free_disk_bytes: megabytes("min_free_disk_mb", st.min_free_disk_mb)?,
    };

    let n = &s.notify;
    let mut notify = NotifyConfig::default();
    for (i, w) in s.webhooks.webhook.iter().enumerate() {
        let name = format!("webhook #{}", i + 1);
        let hook = Webhook::from_config(w).map_err(|message| bad(&name, message))?;
        if notify.webhooks.iter().any(|h| h.id == hook.id) {
            return Err(bad(&name, "the same url is configured twice".into()));
        }
        notify.webhooks.push(hook);
    }
    notify.dedup_window = span(
        "alert_dedup_window_mins",
        n.alert_dedup_window_mins,
        60.0,
        "minutes",
    )?
    .ok_or_else(|| {
        bad(
            "alert_dedup_window_mins",
            "0 is not a positive number of minutes".into(),
        )
    })?;
    notify.device_paused_after = span(
        "alert_device_paused_after_mins",
        n.alert_device_paused_after_mins,
        60.0,
        "minutes",
    )?;
    notify.no_success_after = span(
        "alert_no_success_after_mins",
        n.alert_no_success_after_mins,
        60.0,
        "minutes",
    )?;
    notify.daily_summary = if n.daily_summary_at.trim().eq_ignore_ascii_case("off") {
        None
    } else {
        Some(SummaryAt::parse(&n.daily_summary_at).map_err(|m| bad("daily_summary_at", m))?)
    };
    if n.webhook_max_attempts == 0 {
        return Err(bad("webhook_max_attempts", "must be at least 1".into()));
    }
    notify.max_attempts = n.webhook_max_attempts;
    notify.request_timeout = secs("webhook_timeout_secs", n.webhook_timeout_secs)?;

    let console = match s
        .console
        .console_addr
        .as_deref()
        .filter(|a| !a.trim().is_empty())
    {
        None => ConsoleAddr::Default,
        Some(a) => ConsoleAddr::parse(a).map_err(|m| bad("console_addr", m))?,
    };
    let console_password = s.console.console_password.clone().filter(|p| !p.is_empty());
    if let Some(pw) = &console_password {
        crate::console::listen::check_password_length(pw.expose())
            .map_err(|e| bad("console_password", e.to_string()))?;
    }
    console
        .check_password(console_password.is_some())
        .map_err(|m| bad("console_addr", m))?;

    let lv = &s.live;
    let pacing = PacingConfig {
        min_task_gap: Duration::try_from_secs_f64(lv.min_task_gap_secs).map_err(|_| {
            bad(
                "min_task_gap_secs",
                format!("{} is not a number of seconds ≥ 0", lv.min_task_gap_secs),
            )
        })?,
        live_orders_per_hour: lv.live_orders_per_hour,
        live_orders_per_day: lv.live_orders_per_day,
    };
    let self_test_goods_id = match lv.self_test_goods_id.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(v) if crate::self_test::valid_goods_id(v) => Some(v.to_string()),
        Some(v) => {
            return Err(bad(
                "self_test_goods_id",
                format!(
                    "{:?} is not a goods id (1–24 digits)",
                    v.chars().take(40).collect::<String>()
                ),
            ))
        }
    };
    let (device, devices) = phones(p, merged);
    Ok(Config {
        data_dir,
        admin_url,
        token: c.token.clone().filter(|t| !t.is_empty()),
        device,
        devices,
        name: c.name.clone(),
        poll_interval: secs("poll_interval_secs", c.poll_interval_secs)?,
        connect_timeout: secs("connect_timeout_secs", c.connect_timeout_secs)?,
        request_timeout: secs("request_timeout_secs", c.request_timeout_secs)?,
        max_body_bytes: c.max_body_bytes,
        retention,
        allow_live: lv.allow_live,
        purchase_mode: lv.purchase_mode,
        self_test_goods_id,
        lock_dir: p
            .lock_dir
            .clone()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or_else(crate::lock::default_lock_dir),
        log: l.log.clone(),
        log_format: l.log_format,
        gate,
        device_thresholds: crate::device::state::Thresholds {
            battery_min_percent: p.battery_min_percent,
            battery_max_temp_c: p.battery_max_temp_c,
        },
        expected_address: p
            .expected_address
            .iter()
            .map(|a| a.trim().to_string())
            .filter(|a| !a.is_empty())
            .collect(),
        notify,
        console,
        console_password,
        pacing,
        backups_keep: s.storage.backups_keep as usize,
        max_clock_skew: secs("max_clock_skew_secs", lv.max_clock_skew_secs)?,
        file,
        resources,
        device_backend: p.device_backend,
        u2_jar: p.u2_jar.clone().filter(|j| !j.as_os_str().is_empty()),
    })
}

/// The phone, or the phones: whichever of `devices` and `device` a later layer set wins
/// (`--device` once sets `device`, repeated `devices`); in one layer the list wins.
/// Blanks and duplicates are dropped. One phone is `(Some, [])`, several `(None, [..])`.
fn phones(p: &settings::Phones, merged: &Layer) -> (Option<String>, Vec<String>) {
    let listed: &[String] = if merged.rank("devices") >= merged.rank("device") {
        &p.devices
    } else {
        &[]
    };
    let mut unique: Vec<String> = Vec::new();
    for d in listed.iter().map(|d| d.trim()).filter(|d| !d.is_empty()) {
        if !unique.iter().any(|u| u == d) {
            unique.push(d.to_string());
        }
    }
    match unique.len() {
        0 => (p.device.clone().filter(|s| !s.is_empty()), Vec::new()),
        1 => (unique.pop(), Vec::new()),
        _ => (None, unique),
    }
}
