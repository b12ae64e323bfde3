//! `cmautobuy-client doctor`: checks the phone (state, authorization, model, screen
//! size, PDD installed, foreground activity) and prints the report; exit 0 when ready,
//! 6 when not, 2 on bad arguments.

use std::path::PathBuf;

use clap::Args;

use cmautobuy_client::device::{doctor, AdbDevice};

use super::args::Globals;
use super::exit::{Code, Failure};
use super::{device, setup};

#[derive(Args)]
pub struct DoctorArgs {
    /// An adb serial (`host:port` is `adb connect`ed through the server first) or
    /// `tcp:HOST:PORT` (direct); default: the configured or saved device.
    #[arg(long, value_name = "SERIAL")]
    device: Option<String>,
    /// The adb server; default 127.0.0.1 and $ANDROID_ADB_SERVER_PORT or 5037.
    #[arg(long, value_name = "HOST:PORT")]
    adb_server: Option<String>,
    /// RSA key for direct (`tcp:`) connections; default `<data dir>/adbkey`,
    /// created when missing.
    #[arg(long, value_name = "FILE")]
    adb_key: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(g: &Globals, a: DoctorArgs) -> Result<(), Failure> {
    let cfg = setup::load(g.overrides(None, None))?;
    let in_doctor = |f: Failure| f.in_command("doctor");
    let target = device::resolve(
        &cfg,
        a.device.as_deref(),
        || device::saved_if_any(&cfg),
        a.adb_server.as_deref(),
        a.adb_key.as_deref(),
    )
    .map_err(in_doctor)?
    .ok_or_else(|| {
        in_doctor(Failure::usage(anyhow::anyhow!(
            "no device: use --device SERIAL or --device tcp:HOST:PORT"
        )))
    })?;
    let dev = AdbDevice::open(target.addr, target.options)
        .map_err(|e| in_doctor(Failure::usage(anyhow::anyhow!(e.to_string()))))?;
    let report = doctor::check(&dev);
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report.to_json()).unwrap_or_default()
        );
    } else {
        print!("{}", report.render_text());
    }
    if report.ready {
        Ok(())
    } else {
        Err(Failure::silent(Code::NotReady))
    }
}
