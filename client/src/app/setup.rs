//! What every command's work starts from: the layered configuration with logging set
//! up, the stores of a data directory (one phone, or a folder per phone), the §4.1 local
//! save, the HTTP gateway to the Admin, the profile a claim would declare, and the async
//! runtime.

use std::path::PathBuf;

use crate::alert::AlertKind;

use crate::config::{self, Config, LogFormat, Overrides, PurchaseMode, Sources};
use crate::executor::Readiness;
use crate::gateway::{GatewaySettings, HttpAdminGateway};
use crate::logfile::{LogFiles, RotatingFile};
use crate::registration;
use crate::runner::{client_profile, LivePolicy};
use crate::secret::TokenForOtherAdmin;
use crate::store::{Settings, SettingsPatch, Store, TokenBinding};
use cmautobuy_contract::{ClientProfile, ExecutionMode};

use super::error::LaunchError;

/// The process environment, as [`config::load`] reads it.
pub fn process_env(k: &str) -> Option<String> {
    std::env::var(k).ok()
}

/// Where log lines go besides stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogTo {
    /// Stderr only.
    Stderr,
    /// Also `run`'s rotated log files in `log_dir` (`log_file_max_mb` × `log_files`;
    /// [`crate::logfile`]).
    Files,
}

/// The effective configuration (defaults → file → environment → `o`), logging set up
/// with its filter and format.
pub fn load(o: Overrides, to: LogTo) -> Result<Config, LaunchError> {
    let cfg = config::load(o, &process_env)?;
    init_logging(&cfg, to);
    Ok(cfg)
}

/// Sets up logging for `cfg` (once per process; later calls change nothing).
pub fn init_logging(cfg: &Config, to: LogTo) {
    let r = &cfg.resources;
    let files = if to == LogTo::Stderr || r.log_files == 0 {
        None
    } else {
        match RotatingFile::open(&r.log_dir, r.log_file_max_bytes, r.log_files) {
            Ok(f) => Some(LogFiles::new(f)),
            Err(e) => {
                eprintln!(
                    "cmautobuy-client: cannot open the log file in {} ({e}); logging to stderr only",
                    r.log_dir.display()
                );
                None
            }
        }
    };
    init_tracing_with(&cfg.log, cfg.log_format, files);
}

/// Logs to stderr with `RUST_LOG`, else `default` (`rehearse`: its own verbosity).
pub fn init_tracing(default: &str) {
    init_tracing_with(default, LogFormat::Text, None);
}

/// Whether stderr gets ANSI colours: only on a terminal, and never with `NO_COLOR` set
/// (<https://no-color.org>) — a redirected stderr (a service's journal, a file, a pipe)
/// gets plain text.
fn stderr_colours() -> bool {
    use std::io::IsTerminal;
    std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// Logs to stderr and, given `files`, to the rotated log files (never coloured), as
/// `format`.
fn init_tracing_with(default: &str, format: LogFormat, files: Option<LogFiles>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Layer};
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(default))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    type Base = tracing_subscriber::layer::Layered<EnvFilter, tracing_subscriber::Registry>;
    type Boxed = Box<dyn Layer<Base> + Send + Sync>;
    let layer = |ansi: bool| tracing_subscriber::fmt::layer().with_ansi(ansi);
    let mut layers: Vec<Boxed> = Vec::with_capacity(2);
    // Every line passes the secret scrubber on its way out, stderr and files alike: the
    // last line of defence for text from outside (an Admin's echo) that reaches a log
    // field by a path the gateway did not clean.
    use crate::secret::Scrubbed;
    match format {
        LogFormat::Text => {
            layers.push(
                layer(stderr_colours())
                    .with_writer(Scrubbed(std::io::stderr))
                    .boxed(),
            );
            if let Some(w) = files {
                layers.push(layer(false).with_writer(Scrubbed(w)).boxed());
            }
        }
        LogFormat::Json => {
            layers.push(
                layer(false)
                    .json()
                    .with_writer(Scrubbed(std::io::stderr))
                    .boxed(),
            );
            if let Some(w) = files {
                layers.push(layer(false).json().with_writer(Scrubbed(w)).boxed());
            }
        }
    }
    let _ = tracing_subscriber::registry()
        .with(filter)
        .with(layers)
        .try_init();
}

/// `rehearse`'s configuration: the flags, the environment and a file only when one is
/// named (never the machine's default config, [`Sources::NamedFileOnly`]).
pub fn load_for_rehearsal(o: Overrides) -> Result<Config, LaunchError> {
    Ok(config::load_with(o, &process_env, Sources::NamedFileOnly)?)
}

pub fn open_store(cfg: &Config) -> Result<Store, LaunchError> {
    Ok(Store::open(&Store::path_in(&cfg.data_dir))?)
}

/// With several phones (`cfg.devices`), each phone's configuration
/// ([`crate::phones`]): its folder as the data directory, its serial as the device,
/// `NAME · SERIAL` as the name when a name is configured (refused over 50 characters).
/// The logs, the lock directory and the ADB key stay the data directory's.
pub fn phone_configs(cfg: &Config) -> Result<Vec<(String, Config)>, LaunchError> {
    use crate::phones;
    let root_device = super::device::saved_if_any(cfg);
    let homes = phones::homes_on_disk(&cfg.data_dir, &cfg.devices, root_device.as_deref());
    let mut out = Vec::with_capacity(homes.len());
    for h in homes {
        let mut pc = cfg.clone();
        pc.data_dir = h.dir;
        pc.device = Some(h.serial.clone());
        pc.devices = Vec::new();
        pc.name = match &cfg.name {
            Some(n) => Some(phones::phone_name(n, &h.serial).map_err(LaunchError::usage)?),
            None => None,
        };
        out.push((h.serial, pc));
    }
    Ok(out)
}

/// The stores `status`, `ack` and `outbox` read ([`crate::phones`]): with `device`,
/// that phone's (its folder's, else the root store when it is that phone's); without,
/// the root store and every phone folder's (the root store alone — created as before —
/// when there are no phone folders).
pub fn phone_stores(cfg: &Config, device: Option<&str>) -> Result<Vec<Store>, LaunchError> {
    use crate::phones;
    let folders = phones::folders(&cfg.data_dir);
    let root = Store::path_in(&cfg.data_dir);
    if let Some(d) = device {
        let dir = phones::phone_dir(&cfg.data_dir, d);
        if folders.contains(&dir) {
            return Ok(vec![Store::open(&Store::path_in(&dir))?]);
        }
        if root.exists() {
            let store = open_store(cfg)?;
            if store.settings()?.device.as_deref() == Some(d) {
                return Ok(vec![store]);
            }
        }
        return Err(LaunchError::usage(format!(
            "no store of the phone {d} in {} (its phones: {})",
            cfg.data_dir.display(),
            known_phones(cfg, &folders)
        )));
    }
    let mut stores = Vec::new();
    if root.exists() || folders.is_empty() {
        stores.push(open_store(cfg)?);
    }
    for f in &folders {
        stores.push(Store::open(&Store::path_in(f))?);
    }
    Ok(stores)
}

/// The one store `ack` and `outbox` act on: `device`'s, or the only one; several phones
/// without `--device` are refused (which phone's alert or item is meant is not a guess).
pub fn one_phone_store(cfg: &Config, device: Option<&str>) -> Result<Store, LaunchError> {
    let mut stores = phone_stores(cfg, device)?;
    if stores.len() == 1 {
        if let Some(s) = stores.pop() {
            return Ok(s);
        }
    }
    Err(LaunchError::usage(format!(
        "{} holds several phones ({}): pick one with --device SERIAL (`cmautobuy-client status` shows each phone's alerts and outbox)",
        cfg.data_dir.display(),
        known_phones(cfg, &crate::phones::folders(&cfg.data_dir))
    )))
}

/// The phones of a data directory as their stores name them (`A, B`).
fn known_phones(cfg: &Config, folders: &[PathBuf]) -> String {
    let root = Store::path_in(&cfg.data_dir);
    let mut paths: Vec<PathBuf> = Vec::new();
    if root.exists() {
        paths.push(root);
    }
    paths.extend(folders.iter().map(|f| Store::path_in(f)));
    let names: Vec<String> = paths
        .iter()
        .map(|p| {
            Store::open(p)
                .ok()
                .and_then(|s| s.settings().ok())
                .and_then(|s| s.device)
                .unwrap_or_else(|| "(no device)".into())
        })
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// What the configuration gives that is also a setting (name, Admin URL, token, device).
pub fn settings_patch(cfg: &Config) -> SettingsPatch {
    SettingsPatch {
        name: cfg.name.clone(),
        admin_url: cfg.admin_url.clone(),
        token: cfg.token.clone(),
        device: cfg.device.clone(),
    }
}

/// §4.1: at most 50 characters; refused here rather than by the Admin.
fn check_name(cfg: &Config) -> Result<(), LaunchError> {
    if let Some(n) = &cfg.name {
        let max = cmautobuy_contract::validate::CLIENT_NAME_MAX_CHARS;
        if n.chars().count() > max {
            return Err(LaunchError::usage(format!(
                "the client name is longer than {max} characters"
            )));
        }
    }
    Ok(())
}

/// Saves what the user gave (the §4.1 local save) and returns the store.
pub fn open_and_save(cfg: &Config) -> Result<Store, LaunchError> {
    check_name(cfg)?;
    let store = open_store(cfg)?;
    registration::save_locally(&store, &settings_patch(cfg))?;
    Ok(store)
}

/// The settings a command would work with — the saved ones with what the configuration
/// gives over them, by the save's own rules — without saving anything (`doctor`).
pub fn effective_settings(
    cfg: &Config,
    store: &Store,
) -> Result<(Settings, TokenBinding), LaunchError> {
    check_name(cfg)?;
    Ok(store.preview_settings(&settings_patch(cfg))?)
}

/// The Admin at the saved URL, with the configured timeouts and body limit. A token
/// saved for another Admin URL is refused ([`TokenForOtherAdmin`], exit 2): it is never
/// sent to this one.
pub fn gateway(cfg: &Config, store: &Store) -> Result<HttpAdminGateway, LaunchError> {
    gateway_for(cfg, &store.settings()?, &store.token_binding()?)
}

/// [`gateway`] for `settings` as given (saved, or [`effective_settings`]).
pub fn gateway_for(
    cfg: &Config,
    settings: &Settings,
    binding: &TokenBinding,
) -> Result<HttpAdminGateway, LaunchError> {
    if let TokenBinding::OtherAdmin {
        saved_for,
        admin_url,
    } = binding
    {
        return Err(TokenForOtherAdmin {
            saved_for: saved_for.clone(),
            admin_url: admin_url.clone(),
        }
        .into());
    }
    let url = settings.admin_url.clone().ok_or_else(|| {
        LaunchError::usage(
            "no Admin URL: use --admin URL, CMAUTOBUY_ADMIN_URL or admin_url in the config file",
        )
    })?;
    crate::config::check_admin_url(&url)?;
    let mut gs = GatewaySettings::new(settings.client_id.clone(), settings.token.clone());
    gs.connect_timeout = cfg.connect_timeout;
    gs.request_timeout = cfg.request_timeout;
    gs.max_body_bytes = cfg.max_body_bytes;
    HttpAdminGateway::new(&url, gs).map_err(LaunchError::usage)
}

pub fn runtime() -> Result<tokio::runtime::Runtime, LaunchError> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| LaunchError::Other(format!("cannot start the async runtime: {e}")))
}

/// The live policy a configuration gives (`purchase_mode`, `allow_live`, the self-test
/// goods, the address fingerprint).
pub fn live_policy(cfg: &Config) -> LivePolicy {
    let dry_run_only = cfg.purchase_mode == PurchaseMode::DryRun;
    LivePolicy {
        dry_run_only,
        vouched: cfg.allow_live && !dry_run_only,
        self_test_goods_id: cfg.self_test_goods_id.clone(),
        address_fingerprint: !cfg.expected_address.is_empty(),
    }
}

/// The live policy of this configuration with what the operator set on the console
/// (`LivePolicy::with_operator`: the console's address fingerprint and self-test goods,
/// its `dry_run`), as a running client applies it at its next claim.
fn policy_now(cfg: &Config, store: &Store) -> LivePolicy {
    live_policy(cfg).in_force(store)
}

/// The §4.1 profile a claim would declare now, computed from the store alone (no phone is
/// touched): `register` sends it, and `doctor`'s registration probe shows it. With a
/// saved device it offers purchases; it declares `live` only when a `run` with this
/// configuration would: not `purchase_mode = dry_run`, vouched for (`allow_live = true`)
/// or proven by a passing self-test on the phone's newest PDD version in the store, and
/// none of the live gates a running client recorded holds it (an unproven PDD version,
/// clock skew, the account check, a live cap in force). When the store knows nothing
/// about the device yet (no PDD version read on it) it declares `dry_run`: never wider
/// than a claim would declare. (`run --allow-live` is a flag of that process only; here
/// only the config key `allow_live` vouches.) What the operator set on the console's
/// 设置 page counts as a running client counts it ([`policy_now`]).
pub fn declared_profile(cfg: &Config, store: &Store) -> Result<ClientProfile, LaunchError> {
    declared_profile_for(cfg, store, &store.settings()?)
}

/// [`declared_profile`] for `settings` as given (saved, or [`effective_settings`]).
pub fn declared_profile_for(
    cfg: &Config,
    store: &Store,
    settings: &Settings,
) -> Result<ClientProfile, LaunchError> {
    let device = settings.device.clone().filter(|d| !d.is_empty());
    let policy = policy_now(cfg, store);
    let ready = device.is_some();
    let mut p = client_profile(
        settings,
        Readiness {
            device_ready: ready,
            purchase_adapter_ready: ready,
            live_adapter_ready: ready && policy.may_go_live(),
        },
    );
    if p.capabilities.purchase_mode == ExecutionMode::Live
        && live_refused_by_store(cfg, store, &policy, device.as_deref())?.is_some()
    {
        p.capabilities.purchase_mode = ExecutionMode::DryRun;
    }
    Ok(p)
}

/// Why the store says a claim on `device` would not declare live now (`None`: it would):
/// `doctor`'s live verdict, with the same policy [`declared_profile`] applies.
pub fn live_refusal(
    cfg: &Config,
    store: &Store,
    device: &str,
) -> Result<Option<String>, LaunchError> {
    live_refused_by_store(cfg, store, &policy_now(cfg, store), Some(device))
}

/// Why the store says a claim would not declare live now (`None`: it would).
fn live_refused_by_store(
    cfg: &Config,
    store: &Store,
    policy: &LivePolicy,
    device: Option<&str>,
) -> Result<Option<String>, LaunchError> {
    if !policy.dry_run_only && !policy.address_fingerprint {
        return Ok(Some(crate::runner::NO_ADDRESS_FINGERPRINT.into()));
    }
    let Some(device) = device else {
        return Ok(Some("no device saved".into()));
    };
    let newest = store
        .pdd_versions()?
        .into_iter()
        .find(|v| v.device == device);
    let Some(version) = newest else {
        return Ok(Some("no PDD version read on this phone yet".into()));
    };
    if !policy.vouched {
        let record = store
            .self_test(device, &version.version)?
            .map(|r| r.record());
        let why = crate::self_test::refusal(&crate::self_test::LiveInputs {
            dry_run_only: policy.dry_run_only,
            vouched: false,
            goods_configured: policy.self_test_goods_id.is_some(),
            version: Some(&version.version),
            record: record.as_ref(),
        });
        if why.is_some() {
            return Ok(why);
        }
    }
    if cfg.gate.pdd_version_gate && version.proven_at.is_none() {
        return Ok(Some(format!("PDD {} not proven", version.version)));
    }
    if let Some(why) = store.pdd_version_hold()? {
        return Ok(Some(why));
    }
    if let Some(why) = store.clock_skew()? {
        return Ok(Some(why));
    }
    let alerts = store.open_alerts()?;
    if alerts.iter().any(|a| a.kind == AlertKind::AccountChanged) {
        return Ok(Some("account changed on this phone".into()));
    }
    if let Some(a) = alerts.iter().find(|a| a.kind == AlertKind::OrderNotUnpaid) {
        return Ok(Some(format!(
            "an order was found paid or bound on this phone (alert {}: `cmautobuy-client ack {}` once checked): {}",
            a.id, a.id, a.message
        )));
    }
    if cfg.gate.account_check {
        if let Some(why) = store.account_refusal()? {
            return Ok(Some(why));
        }
    }
    if let Some(cap) = store.live_cap()? {
        let until = chrono::DateTime::parse_from_rfc3339(&cap.until)
            .map(|t| t.with_timezone(&chrono::Utc))
            .ok();
        if until.is_none_or(|u| u > chrono::Utc::now()) {
            return Ok(Some(cap.reason));
        }
    }
    Ok(None)
}
