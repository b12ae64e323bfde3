//! `cmautobuy-client run`: claim and execute tasks and deliver their outcomes until
//! Ctrl-C / SIGTERM (or, with `--exit-when-idle`, until nothing is left to do). What the
//! flags mean is configuration; what runs is the library's `run`
//! ([`cmautobuy_client::app::run`], through the one launch shared with `rehearse`); this
//! file maps how it ended to the exit code.

use std::path::PathBuf;

use clap::Args;

use cmautobuy_client::app::error::LaunchError;
use cmautobuy_client::app::launch::End;
use cmautobuy_client::app::run::{self, RunOptions};
use cmautobuy_client::app::setup::{self, LogTo};
use cmautobuy_client::runner::RunExit;

use super::args::{Conn, Globals};
use super::exit::{Code, Failure};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    conn: Conn,
    /// Exit 0 after a 204 once nothing is left to deliver in the outbox.
    #[arg(long)]
    exit_when_idle: bool,
    /// Seconds between claims when there is no work (±20 % jitter).
    #[arg(long, value_name = "SECS")]
    poll_interval: Option<f64>,
    /// Run tasks with the phone-less stub executor (tests and rehearsals).
    #[arg(long, hide = true)]
    stub_executor: bool,
    /// The operator vouches for this phone: declare `live` and run live purchase tasks
    /// live — real, unpaid orders — without waiting for a self-test. Without it,
    /// `purchase_mode = auto` declares live once the self-test on `self_test_goods_id`
    /// passed on the phone's current PDD version. Config key: `allow_live = true`.
    #[arg(long)]
    allow_live: bool,
    /// Never declare `live`: every purchase is a dry run (config `purchase_mode =
    /// "dry_run"`); wins over `--allow-live`.
    #[arg(long)]
    dry_run_only: bool,
    /// The directory of the per-phone lock files, shared by every client on this machine
    /// (config `lock_dir`, `CMAUTOBUY_LOCK_DIR`; default /tmp/cmautobuy-locks).
    #[arg(long, value_name = "DIR")]
    lock_dir: Option<PathBuf>,
    /// Where the rotated log files go (config `log_dir`, `CMAUTOBUY_LOG_DIR`; default
    /// `<data dir>/logs`, or the platform's log directory with the default data directory).
    #[arg(long, value_name = "DIR")]
    log_dir: Option<PathBuf>,
    /// Serve the web console (状态 / 设置 / 历史), `/metrics` (Prometheus) and `/healthz`
    /// on this address (config `console_addr`; default 127.0.0.1, the first free port
    /// from 9464 to 9479; a taken port is logged and the client runs without a console).
    /// An address other than loopback needs a console password.
    #[arg(long, value_name = "IP:PORT", conflicts_with = "no_console")]
    console: Option<String>,
    /// The console's password (config `console_password`; prefer the environment
    /// variable `CMAUTOBUY_CONSOLE_PASSWORD`, which other users cannot read in `ps`).
    #[arg(long, value_name = "PASSWORD")]
    console_password: Option<String>,
    /// No console listener.
    #[arg(long)]
    no_console: bool,
}

pub fn run(g: &Globals, a: RunArgs) -> Result<(), Failure> {
    let o = a
        .conn
        .over(g.overrides())
        .number("poll_interval_secs", "--poll-interval", a.poll_interval)
        .switch("allow_live", "--allow-live", a.allow_live)
        .text(
            "purchase_mode",
            "--dry-run-only",
            a.dry_run_only.then_some("dry_run"),
        )
        .path("lock_dir", "--lock-dir", a.lock_dir.as_deref())
        .path("log_dir", "--log-dir", a.log_dir.as_deref())
        .text("console_addr", "--console", a.console)
        .text(
            "console_addr",
            "--no-console",
            a.no_console.then_some("off"),
        )
        .text("console_password", "--console-password", a.console_password);
    let cfg = setup::load(o, LogTo::Files)?;
    let opts = RunOptions {
        exit_when_idle: a.exit_when_idle,
        stub_executor: a.stub_executor,
        progress_lines: cmautobuy_client::app::lines::wanted(cfg.log_format),
        on_second_signal: exit_interrupted,
    };
    let report = run::run(cfg, opts).map_err(|e| match e {
        // Refused at start for what was given: `cmautobuy-client run: …`.
        LaunchError::Lock(_) | LaunchError::Usage(_) => Failure::from(e).in_command("run"),
        e => Failure::from(e),
    })?;
    if report.interrupted {
        // The drain ended before the safe-point loop took its exit: same code.
        return Err(Failure::silent(Code::Interrupted));
    }
    exit_of(report.ends)
}

/// A second Ctrl-C / SIGTERM, at a safe point for money: 130 (128 + SIGINT, the shell's
/// convention for "interrupted").
fn exit_interrupted() {
    std::process::exit(Code::Interrupted as i32)
}

/// The exit of `run`: the most severe of its workers' ends — a panic 1, a store failure 3,
/// claiming blocked by an operator alert 5, idle or stopped 0 — naming the phone with
/// several phones.
fn exit_of(ends: Vec<(Option<String>, End)>) -> Result<(), Failure> {
    let Some((serial, worst)) = ends.into_iter().max_by_key(|(_, e)| e.severity()) else {
        return Ok(());
    };
    let on = serial.map(|s| format!("phone {s}: ")).unwrap_or_default();
    match worst {
        End::Exit(RunExit::Shutdown | RunExit::Idle) => Ok(()),
        End::Exit(RunExit::Blocked(reason)) => Err(Failure::new(
            Code::Blocked,
            anyhow::anyhow!("{on}claiming is stopped until the operator acts: {reason} (see `cmautobuy-client status`, then `cmautobuy-client ack`)"),
        )),
        End::Error(e) => Err(Failure::new(Code::Store, anyhow::anyhow!("{on}{e}"))),
        End::Panic(e) => Err(Failure::new(
            Code::Unexpected,
            anyhow::anyhow!("{on}the worker panicked: {e}"),
        )),
    }
}
