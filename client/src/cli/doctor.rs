//! `cmautobuy-client doctor`: checks everything a run needs — the adb server and the
//! devices it lists, the phone, the configuration, the data directory and the store, the
//! Admin (reachable, token accepted, clock) — and prints every check with its fix, then
//! the live readiness verdict ([`cmautobuy_client::doctor`]). Every host and Admin check
//! runs even without a phone; nothing given here is saved. Exit 0 when every check
//! passes, 6 when one fails (the live verdict is reported, it does not change the exit
//! code), 2 on bad arguments (a flag's value that cannot work).

use std::path::PathBuf;

use clap::Args;

use cmautobuy_client::app::setup::{self, process_env, LogTo};
use cmautobuy_client::config::{self, ConfigError, Origin, Sources};
use cmautobuy_client::doctor::run::{self as checks, Options};

use super::args::{Conn, Globals};
use super::exit::{Code, Failure};

#[derive(Args)]
pub struct DoctorArgs {
    /// The Admin's base URL to check (default: the configured or saved one). Not saved:
    /// `register` and `run` save it.
    #[arg(long = "admin", value_name = "URL")]
    admin: Option<String>,
    /// The client token to check (never printed, not saved).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// An adb serial (`host:port` is `adb connect`ed through the server first) or
    /// `tcp:HOST:PORT` (direct); default: the configured or saved device (not saved).
    /// Repeat it to check several phones (default: every phone of `devices`), one
    /// section each.
    #[arg(long, value_name = "SERIAL")]
    device: Vec<String>,
    /// The adb server; default 127.0.0.1 and $ANDROID_ADB_SERVER_PORT or 5037.
    #[arg(long, value_name = "HOST:PORT")]
    adb_server: Option<String>,
    /// RSA key for direct (`tcp:`) connections; default `<data dir>/adbkey`,
    /// created when missing.
    #[arg(long, value_name = "FILE")]
    adb_key: Option<PathBuf>,
    /// Print the report as one JSON object (`checks`: `{name, ok, detail, fix}`, `ready`,
    /// `live`: `{ready, reasons}`, `device`; with several phones the host's `checks`
    /// and `phones`: `[{device, checks, live, details}]`).
    #[arg(long)]
    json: bool,
}

pub fn run(g: &Globals, a: DoctorArgs) -> Result<(), Failure> {
    let in_doctor = |f: Failure| f.in_command("doctor");
    let conn = Conn {
        admin: a.admin.clone(),
        token: a.token.clone(),
        device: a.device.clone(),
        name: None,
    };
    let flags = || conn.over(g.overrides());
    // A configuration that does not load is a failed check, and the other checks run on
    // the layers that do (without the file, then without the environment); a flag's own
    // value is refused as any command refuses it.
    let mut refused = None;
    let mut loaded = None;
    for sources in [Sources::All, Sources::NoFile, Sources::FlagsOnly] {
        match config::load_with(flags(), &process_env, sources) {
            Ok(c) => {
                loaded = Some(c);
                break;
            }
            Err(e) if from_a_flag(&e) => return Err(in_doctor(e.into())),
            Err(e) => {
                refused.get_or_insert(e);
            }
        }
    }
    let Some(cfg) = loaded else {
        return Err(in_doctor(refused.map_or_else(
            || Failure::usage(anyhow::anyhow!("no configuration")),
            Failure::from,
        )));
    };
    setup::init_logging(&cfg, LogTo::Stderr);
    let config_check = checks::config_check(&cfg, refused.as_ref());
    let opts = Options {
        devices: a.device.clone(),
        adb_server: a.adb_server.clone(),
        adb_key: a.adb_key.clone(),
    };
    let report = checks::run(&cfg, config_check, &opts).map_err(|e| in_doctor(e.into()))?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report.to_json()).unwrap_or_default()
        );
    } else {
        print!("{}", report.render_text());
    }
    if report.ready() {
        Ok(())
    } else {
        Err(Failure::silent(Code::NotReady))
    }
}

/// Whether the refused value came from one of this command's flags.
fn from_a_flag(e: &ConfigError) -> bool {
    matches!(
        e,
        ConfigError::Value {
            origin: Some(Origin::Flag(_)),
            ..
        } | ConfigError::UnknownKey {
            origin: Origin::Flag(_),
            ..
        }
    )
}
