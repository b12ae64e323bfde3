//! The options several commands share: the globals every command takes and the
//! connection flags of `run` and `register`, and what each sets in the configuration
//! (its key; the flag is named in any error about its value).

use std::path::PathBuf;

use clap::Args;

use cmautobuy_client::config::Overrides;

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
    /// The configuration the globals give.
    pub fn overrides(&self) -> Overrides {
        Overrides::default()
            .with_config(self.config.clone())
            .path("data_dir", "--data-dir", self.data_dir.as_deref())
            .text("log_format", "--log-format", self.log_format.clone())
    }
}

/// Connection settings; given values are saved to the store.
#[derive(Args, Clone, Debug, Default)]
pub struct Conn {
    /// Admin base URL, e.g. http://127.0.0.1:8080 (the client adds /api/v1/client)
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

impl Conn {
    /// `o` with the connection flags over it: `--device` once is `device`, repeated
    /// `devices`.
    pub fn over(&self, o: Overrides) -> Overrides {
        let o = o
            .text("admin_url", "--admin", self.admin.clone())
            .text("token", "--token", self.token.clone())
            .text("name", "--name", self.name.clone());
        match self.device.as_slice() {
            [] => o,
            [one] => o.text("device", "--device", Some(one.clone())),
            many => o.list("devices", "--device", many),
        }
    }
}
