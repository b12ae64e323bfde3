//! The command line: the clap definitions of `cmautobuy-client` (global options,
//! subcommands, the connection flags `run` and `register` share) and the dispatch to
//! the one file per command. Every command returns `Result<(), Failure>`; `main` maps
//! it to the exit code through [`exit::exit_code`], the one mapping.

pub mod exit;

mod ack;
mod device;
mod doctor;
mod inspect;
mod outbox;
mod register;
mod rehearse;
mod run;
mod setup;
mod spec_resolution_key;
mod status;

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use cmautobuy_client::config::Overrides;
use cmautobuy_client::secret::Secret;

use exit::Failure;

#[derive(Parser)]
#[command(name = "cmautobuy-client", version, about = "The cmautobuy executor")]
pub struct Cli {
    #[command(flatten)]
    globals: Globals,
    #[command(subcommand)]
    command: Command,
}

// Options every command takes.
#[derive(Args)]
struct Globals {
    /// Config file (TOML); default `<data dir>/config.toml`.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where the store (and default config) live.
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

impl Globals {
    /// The configuration overrides of the command line: the globals, the connection
    /// flags and `run`'s poll interval.
    fn overrides(&self, conn: Option<&Conn>, poll_interval_secs: Option<f64>) -> Overrides {
        Overrides {
            config: self.config.clone(),
            data_dir: self.data_dir.clone(),
            admin_url: conn.and_then(|c| c.admin.clone()),
            token: conn.and_then(|c| c.token.clone()).map(Secret::new),
            device: conn.and_then(|c| c.device.clone()),
            name: conn.and_then(|c| c.name.clone()),
            poll_interval_secs,
        }
    }
}

/// Connection settings; given values are saved to the store.
#[derive(Args, Clone, Debug, Default)]
struct Conn {
    /// Admin base URL, e.g. http://127.0.0.1:8080
    #[arg(long = "admin", value_name = "URL")]
    admin: Option<String>,
    /// Admin token (prefer CMAUTOBUY_TOKEN or the config file: flags show up in `ps`).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// Android device: an adb serial (`host:port` is connected through the adb server)
    /// or `tcp:HOST:PORT` (direct).
    #[arg(long, value_name = "SERIAL")]
    device: Option<String>,
    /// Display name sent to the Admin (at most 50 characters).
    #[arg(long)]
    name: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// Claim and execute tasks, deliver results (until Ctrl-C).
    Run(run::RunArgs),
    /// The whole system on this machine: the bundled mock Admin and the simulated phone
    /// in-process, a demo batch of tasks, the real client until the batch is done.
    /// Exit 0 only if every task ended as the batch expects.
    Rehearse(rehearse::RehearseArgs),
    /// Save the name/device locally, then register with the Admin (§4.1).
    Register(register::RegisterArgs),
    /// Show identity, registration, alerts, tasks and the outbox.
    Status(status::StatusArgs),
    /// Inspect or requeue the outbox.
    Outbox(outbox::OutboxArgs),
    /// Acknowledge operator alerts (resumes claiming). Without an id: all of them.
    Ack(ack::AckArgs),
    /// Compute the §7.1 snapshot hash and idempotency key of a spec resolution.
    SpecResolutionKey(spec_resolution_key::SpecResolutionKeyArgs),
    /// Classify a UI dump (uiautomator XML) and print what was read from it.
    Inspect(inspect::InspectArgs),
    /// Check the phone: state, authorization, model, screen size, PDD installed,
    /// foreground activity. Exit 0 when ready, 6 when not.
    Doctor(doctor::DoctorArgs),
}

impl Cli {
    /// Runs the command.
    pub fn run(self) -> Result<(), Failure> {
        let g = &self.globals;
        match self.command {
            Command::Run(a) => run::run(g, a),
            Command::Rehearse(a) => rehearse::run(g, a),
            Command::Register(a) => register::run(g, a),
            Command::Status(a) => status::run(g, a),
            Command::Outbox(a) => outbox::run(g, a),
            Command::Ack(a) => ack::run(g, a),
            Command::SpecResolutionKey(a) => spec_resolution_key::run(a),
            Command::Inspect(a) => inspect::run(a),
            Command::Doctor(a) => doctor::run(g, a),
        }
    }
}
