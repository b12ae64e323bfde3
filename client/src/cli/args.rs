//! The options several commands share: the globals every command takes and the
//! connection flags of `run` and `register`.

use std::path::PathBuf;

use clap::Args;

use cmautobuy_client::config::Overrides;
use cmautobuy_client::secret::Secret;

// Options every command takes.
#[derive(Args)]
pub struct Globals {
    /// Config file (TOML); default `<data dir>/config.toml`.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Where the store (and default config) live.
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Log lines as `text` (coloured only on a terminal) or `json` (one object per line).
    #[arg(long, global = true, value_name = "FORMAT", value_parser = ["text", "json"])]
    pub log_format: Option<String>,
}

impl Globals {
    /// The configuration overrides of the command line: the globals, the connection
    /// flags and `run`'s poll interval.
    pub fn overrides(&self, conn: Option<&Conn>, poll_interval_secs: Option<f64>) -> Overrides {
        Overrides {
            config: self.config.clone(),
            data_dir: self.data_dir.clone(),
            admin_url: conn.and_then(|c| c.admin.clone()),
            token: conn.and_then(|c| c.token.clone()).map(Secret::new),
            device: conn.and_then(|c| match c.device.as_slice() {
                [one] => Some(one.clone()),
                _ => None,
            }),
            devices: conn
                .map(|c| c.device.clone())
                .filter(|d| d.len() > 1)
                .unwrap_or_default(),
            name: conn.and_then(|c| c.name.clone()),
            poll_interval_secs,
            log_format: self.log_format.clone(),
        }
    }
}

/// Connection settings; given values are saved to the store.
#[derive(Args, Clone, Debug, Default)]
pub struct Conn {
    /// Admin base URL, e.g. http://127.0.0.1:8080
    #[arg(long = "admin", value_name = "URL")]
    pub admin: Option<String>,
    /// Admin token (prefer CMAUTOBUY_TOKEN or the config file: flags show up in `ps`).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    /// Android device: an adb serial (`host:port` is connected through the adb server)
    /// or `tcp:HOST:PORT` (direct). Repeat it for several phones (one worker each, each
    /// with its own store and identity; config `devices`).
    #[arg(long, value_name = "SERIAL")]
    pub device: Vec<String>,
    /// Display name sent to the Admin (at most 50 characters).
    #[arg(long)]
    pub name: Option<String>,
}
