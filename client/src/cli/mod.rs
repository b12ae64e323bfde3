//! The command line: the clap definitions of `cmautobuy-client` (global options,
//! subcommands, the connection flags `run` and `register` share) and the dispatch to
//! the one file per command. A command turns what the user typed into configuration
//! ([`args`]: each flag sets a config key) and calls the library
//! ([`cmautobuy_client::app`], [`cmautobuy_client::doctor`],
//! [`cmautobuy_client::rehearse`], …); it returns `Result<(), Failure>`, which `main`
//! maps to the exit code through [`exit::exit_code`], the one mapping.

pub mod exit;

mod ack;
mod args;
mod bench_device;
mod diagnose_bundle;
mod doctor;
mod inspect;
mod outbox;
mod register;
mod rehearse;
mod replay_export;
mod run;
mod self_test;
mod spec_resolution_key;
mod status;

use clap::{Parser, Subcommand};

use args::Globals;
use exit::Failure;

#[derive(Parser)]
#[command(name = "cmautobuy-client", version, about = "The cmautobuy executor")]
pub struct Cli {
    #[command(flatten)]
    globals: Globals,
    #[command(subcommand)]
    command: Command,
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
    /// Check everything a run needs: the adb server and the phone, the configuration,
    /// the data directory and store, the Admin and token, the clock. Saves nothing.
    /// Exit 0 when every check passes, 6 when one fails.
    Doctor(doctor::DoctorArgs),
    /// Ask the running client for a new self-test of the phone (a dry-run purchase on
    /// `self_test_goods_id`, no Admin involved) before its next claim.
    SelfTest(self_test::SelfTestArgs),
    /// Turn an attempt's artifacts into a replay scenario for the simulated phone
    /// (`sim-phone --replay DIR`), redacted: other apps' windows dropped; names, phone
    /// numbers, addresses and order numbers masked; screenshots left out.
    ReplayExport(replay_export::ReplayExportArgs),
    /// Pack one .tar.gz to send for a diagnosis: the redacted export of an attempt
    /// (default: the newest), version, config without secrets, recent log lines masked.
    DiagnoseBundle(diagnose_bundle::DiagnoseBundleArgs),
    /// Time dumps, taps (on the status bar: harmless) and screenshots on a phone with
    /// each device backend (u2, uiautomator): medians, p90 and their ratio. Refused
    /// while a client holds the phone.
    BenchDevice(bench_device::BenchDeviceArgs),
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
            Command::SelfTest(a) => self_test::run(g, a),
            Command::ReplayExport(a) => replay_export::run(a),
            Command::DiagnoseBundle(a) => diagnose_bundle::run(g, a),
            Command::BenchDevice(a) => bench_device::run(g, a),
        }
    }
}
