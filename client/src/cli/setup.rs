//! What the commands share: the layered configuration (and logging), the store, the
//! §4.1 local save, the HTTP gateway to the Admin and the async runtime.

use anyhow::Context;

use cmautobuy_client::config::{self, Config, Overrides};
use cmautobuy_client::gateway::{GatewaySettings, HttpAdminGateway};
use cmautobuy_client::registration;
use cmautobuy_client::store::{SettingsPatch, Store};

use super::exit::Failure;

/// The effective configuration (defaults → file → environment → `o`), logging set up
/// with its filter.
pub fn load(o: Overrides) -> Result<Config, Failure> {
    let cfg = config::load(o, &|k| std::env::var(k).ok())?;
    init_tracing(&cfg.log);
    Ok(cfg)
}

/// Logs to stderr with `RUST_LOG`, else `default`.
pub fn init_tracing(default: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(default))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

pub fn open_store(cfg: &Config) -> Result<Store, Failure> {
    Ok(Store::open(&Store::path_in(&cfg.data_dir))?)
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

/// The Admin at the saved URL, with the configured timeouts and body limit.
pub fn gateway(cfg: &Config, store: &Store) -> Result<HttpAdminGateway, Failure> {
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
