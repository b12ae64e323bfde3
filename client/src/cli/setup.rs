//! What the commands share: the layered configuration (and logging), the store, the
//! §4.1 local save, the HTTP gateway to the Admin and the async runtime.

use anyhow::Context;
use cmautobuy_client::alert::AlertKind;

use cmautobuy_client::config::{self, Config, LogFormat, Overrides, PurchaseMode};
use cmautobuy_client::executor::Readiness;
use cmautobuy_client::gateway::{GatewaySettings, HttpAdminGateway};
use cmautobuy_client::logfile::{LogFiles, RotatingFile};
use cmautobuy_client::registration;
use cmautobuy_client::runner::{client_profile, LivePolicy};
use cmautobuy_client::secret::TokenForOtherAdmin;
use cmautobuy_client::store::{SettingsPatch, Store, TokenBinding};
use cmautobuy_contract::{ClientProfile, ExecutionMode};

use super::exit::Failure;

/// The effective configuration (defaults → file → environment → `o`), logging set up
/// with its filter.
pub fn load(o: Overrides) -> Result<Config, Failure> {
    let cfg = config::load(o, &|k| std::env::var(k).ok())?;
    init_tracing_with(&cfg.log, cfg.log_format, None);
    Ok(cfg)
}

/// As [`load`], for `run`: the log lines also go to rotated files in `log_dir`
/// (`log_file_max_mb` × `log_files`; [`cmautobuy_client::logfile`]).
pub fn load_for_run(o: Overrides, log_dir: Option<std::path::PathBuf>) -> Result<Config, Failure> {
    let mut cfg = config::load(o, &|k| std::env::var(k).ok())?;
    if let Some(d) = log_dir {
        cfg.resources.log_dir = d;
    }
    let r = &cfg.resources;
    let files = if r.log_files == 0 {
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
    Ok(cfg)
}

/// Logs to stderr with `RUST_LOG`, else `default` (`rehearse`, which loads no config).
#[cfg(feature = "rehearse")]
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
    use cmautobuy_client::secret::Scrubbed;
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

pub fn open_store(cfg: &Config) -> Result<Store, Failure> {
    Ok(Store::open(&Store::path_in(&cfg.data_dir))?)
}

/// With several phones (`cfg.devices`), each phone's configuration
/// ([`cmautobuy_client::phones`]): its folder as the data directory, its serial as the
/// device, `NAME · SERIAL` as the name when a name is configured (refused over 50
/// characters). The logs, the lock directory and the ADB key stay the data directory's.
pub fn phone_configs(cfg: &Config) -> Result<Vec<(String, Config)>, Failure> {
    use cmautobuy_client::phones;
    let root_device = super::device::saved_if_any(cfg);
    let homes = phones::homes_on_disk(&cfg.data_dir, &cfg.devices, root_device.as_deref());
    let mut out = Vec::with_capacity(homes.len());
    for h in homes {
        let mut pc = cfg.clone();
        pc.data_dir = h.dir;
        pc.device = Some(h.serial.clone());
        pc.devices = Vec::new();
        pc.name = match &cfg.name {
            Some(n) => Some(
                phones::phone_name(n, &h.serial).map_err(|e| Failure::usage(anyhow::anyhow!(e)))?,
            ),
            None => None,
        };
        out.push((h.serial, pc));
    }
    Ok(out)
}

/// The stores `status`, `ack` and `outbox` read ([`cmautobuy_client::phones`]): with
/// `device`, that phone's (its folder's, else the root store when it is that phone's);
/// without, the root store and every phone folder's (the root store alone — created as
/// before — when there are no phone folders).
pub fn phone_stores(cfg: &Config, device: Option<&str>) -> Result<Vec<Store>, Failure> {
    use cmautobuy_client::phones;
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
        return Err(Failure::usage(anyhow::anyhow!(
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
pub fn one_phone_store(cfg: &Config, device: Option<&str>) -> Result<Store, Failure> {
    let mut stores = phone_stores(cfg, device)?;
    if stores.len() == 1 {
        if let Some(s) = stores.pop() {
            return Ok(s);
        }
    }
    Err(Failure::usage(anyhow::anyhow!(
        "{} holds several phones ({}): pick one with --device SERIAL (`cmautobuy-client status` shows each phone's alerts and outbox)",
        cfg.data_dir.display(),
        known_phones(cfg, &cmautobuy_client::phones::folders(&cfg.data_dir))
    )))
}

/// The phones of a data directory as their stores name them (`A, B`).
fn known_phones(cfg: &Config, folders: &[std::path::PathBuf]) -> String {
    let root = Store::path_in(&cfg.data_dir);
    let mut paths: Vec<std::path::PathBuf> = Vec::new();
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

/// Saves what the user gave (the §4.1 local save) and returns the store.
pub fn open_and_save(cfg: &Config) -> Result<Store, Failure> {
    // §4.1: at most 50 characters; refuse here rather than be rejected by the Admin.
    if let Some(n) = &cfg.name {
        let max = cmautobuy_contract::validate::CLIENT_NAME_MAX_CHARS;
        if n.chars().count() > max {
            return Err(Failure::usage(anyhow::anyhow!(
                "the client name is longer than {max} characters"
            )));
        }
    }
    let store = open_store(cfg)?;
    registration::save_locally(
        &store,
        &SettingsPatch {
            name: cfg.name.clone(),
            admin_url: cfg.admin_url.clone(),
            token: cfg.token.clone(),
            device: cfg.device.clone(),
        },
    )?;
    Ok(store)
}

/// The Admin at the saved URL, with the configured timeouts and body limit. A token
/// saved for another Admin URL is refused ([`TokenForOtherAdmin`], exit 2): it is never
/// sent to this one.
pub fn gateway(cfg: &Config, store: &Store) -> Result<HttpAdminGateway, Failure> {
    if let TokenBinding::OtherAdmin {
        saved_for,
        admin_url,
    } = store.token_binding()?
    {
        return Err(Failure::usage(TokenForOtherAdmin {
            saved_for,
            admin_url,
        }));
    }
    let settings = store.settings()?;
    let url = settings.admin_url.clone().ok_or_else(|| {
        Failure::usage(anyhow::anyhow!(
            "no Admin URL: use --admin URL, CMAUTOBUY_ADMIN_URL or admin_url in the config file"
        ))
    })?;
    let mut gs = GatewaySettings::new(settings.client_id.clone(), settings.token.clone());
    gs.connect_timeout = cfg.connect_timeout;
    gs.request_timeout = cfg.request_timeout;
    gs.max_body_bytes = cfg.max_body_bytes;
    HttpAdminGateway::new(&url, gs).map_err(Failure::usage)
}

pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(Failure::from)
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
/// only the config key `allow_live` vouches.)
pub fn declared_profile(cfg: &Config, store: &Store) -> Result<ClientProfile, Failure> {
    let settings = store.settings()?;
    let device = settings.device.clone().filter(|d| !d.is_empty());
    let dry_run_only = cfg.purchase_mode == PurchaseMode::DryRun;
    let policy = LivePolicy {
        dry_run_only,
        vouched: cfg.allow_live && !dry_run_only,
        self_test_goods_id: cfg.self_test_goods_id.clone(),
        address_fingerprint: !cfg.expected_address.is_empty(),
    };
    let ready = device.is_some();
    let mut p = client_profile(
        &settings,
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
pub fn live_refusal(cfg: &Config, store: &Store, device: &str) -> Result<Option<String>, Failure> {
    let dry_run_only = cfg.purchase_mode == PurchaseMode::DryRun;
    let policy = LivePolicy {
        dry_run_only,
        vouched: cfg.allow_live && !dry_run_only,
        self_test_goods_id: cfg.self_test_goods_id.clone(),
        address_fingerprint: !cfg.expected_address.is_empty(),
    };
    live_refused_by_store(cfg, store, &policy, Some(device))
}

/// Why the store says a claim would not declare live now (`None`: it would).
fn live_refused_by_store(
    cfg: &Config,
    store: &Store,
    policy: &LivePolicy,
    device: Option<&str>,
) -> Result<Option<String>, Failure> {
    if !policy.dry_run_only && !policy.address_fingerprint {
        return Ok(Some(
            cmautobuy_client::runner::NO_ADDRESS_FINGERPRINT.into(),
        ));
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
        let why = cmautobuy_client::selftest::refusal(&cmautobuy_client::selftest::LiveInputs {
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
