//! `cmautobuy-client rehearse`: the whole system on this machine (the library's
//! [`cmautobuy_client::rehearse`], built with the `rehearse` feature, on by default).
//! It honours a config file only when one is named (`--config`, `$CMAUTOBUY_CONFIG`, a
//! `--data-dir`'s `config.toml`): `device_backend`, `u2_jar`, `lock_dir` and the console's
//! keys; the environment's `CMAUTOBUY_*` too.
//! Exit 0 when every task ended as expected, 1 when not (or on error), 2 on bad
//! arguments — and 2 in a build without the `rehearse` feature, which keeps the command
//! so that the command line is the same in every build.

use std::path::PathBuf;

use clap::Args;

use super::args::Globals;
use super::exit::Failure;

#[derive(Args)]
#[cfg_attr(not(feature = "rehearse"), allow(dead_code))]
pub struct RehearseArgs {
    /// A real phone (adb serial or `tcp:HOST:PORT`) instead of the simulated one;
    /// purchases then run as dry runs only. A phone that does not answer is refused at
    /// once (exit 2).
    #[arg(long, value_name = "SERIAL")]
    device: Option<String>,
    /// An Admin to use instead of the bundled mock (tasks are seeded and read
    /// through its operator API).
    #[arg(long, value_name = "URL")]
    admin: Option<String>,
    /// Token for `--admin`.
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    /// A batch of your own: a JSON array of {"id"?, "type", "execution_mode"?,
    /// "payload", "expect": "succeeded" | "<status>:<CODE>"}.
    #[arg(long, value_name = "FILE")]
    tasks: Option<PathBuf>,
    /// Latency of the simulated phone: `zero` or `realistic` (sleeps like a phone).
    #[arg(long, value_name = "PROFILE", default_value = "zero")]
    profile: String,
    /// Reach the simulated phone through this adb server (`adb connect` first)
    /// instead of directly over TCP. Without it, `device_backend = "u2"` (config file or
    /// CMAUTOBUY_DEVICE_BACKEND) starts a private adb server (`adb` from PATH or $ADB, a free loopback port, its own home)
    /// for the simulated phone and stops it at the end; no `adb` is exit 2.
    #[arg(long, value_name = "HOST:PORT")]
    adb_server: Option<String>,
    /// Stop after this many seconds (default: 600, or 60 per task of the batch under
    /// --profile realistic, whichever is longer): the task in hand finishes, the summary
    /// says what finished and what did not, the artifacts are kept (exit 1).
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// Print the summary as one JSON object.
    #[arg(long)]
    json: bool,
    /// Print the device work and the benchmark figures too: dumps, taps and time per
    /// task, wall ÷ device time, the collect goal, the simulated device time.
    #[arg(long)]
    bench: bool,
    /// Leave the purchase demo tasks (dry runs) out of the demo batch.
    #[arg(long)]
    no_purchases: bool,
    /// Benchmarks only (scripts/bench-backends): every goods page and sheet of the
    /// simulated phone keeps animating (its `animated` flag), so `uiautomator dump`
    /// fails idle there at the simulated rate.
    #[arg(long, hide = true, conflicts_with_all = ["device", "replay"])]
    animated_pages: bool,
    /// Run the purchase demo live: real unpaid orders on the simulated phone (refused
    /// with --device).
    #[arg(long)]
    live: bool,
    /// Add the failure paths to the demo batch: goods that redirect, need a login,
    /// show a risk page or are delisted, and purchases refused for the price limit,
    /// a missing address or a sold-out option — each must end with its code; with
    /// purchases also the real app's variants (先用后付/免密 accounts, a lagging total,
    /// 确认订单, canvas 待付款, a folded order detail, an icon option).
    #[arg(long)]
    failure_paths: bool,
    /// Serve the web console (状态 / 设置 / 历史) on the rehearsal's store at this
    /// address (default 127.0.0.1, the first free port from 9464 to 9479, like `run`; a
    /// taken port is logged and the rehearsal runs without a console). The URL goes to
    /// stderr. An address other than loopback needs a console password.
    #[arg(long, value_name = "IP:PORT", conflicts_with = "no_console")]
    console: Option<String>,
    /// The console's password (prefer the environment variable
    /// `CMAUTOBUY_CONSOLE_PASSWORD` or `console_password` in a config file, which other
    /// users cannot read in `ps`).
    #[arg(long, value_name = "PASSWORD")]
    console_password: Option<String>,
    /// No console listener.
    #[arg(long)]
    no_console: bool,
    /// After the batch and its summary, keep serving the console until Ctrl-C / SIGTERM
    /// (to browse 历史); the exit status is still the batch's verdict.
    #[arg(long, conflicts_with = "no_console")]
    keep_console: bool,
    /// Replay a recorded scenario (a directory with `scenario.json`, format v1: see
    /// sim-phone/README.md; `replay-export` makes one from an attempt's artifacts) on
    /// the simulated phone instead of its catalog, with the batch of --tasks (required;
    /// its live tasks run live on the recording). A bad scenario is refused at start
    /// (exit 2). The between-task work that would open pages a recording never had is
    /// off: the account check on 个人中心, the self-test and the PDD version gate. Per
    /// task the summary (and --json) shows the actions that went off-script (count and
    /// the first); any off-script action makes the exit status 1, like an outcome that
    /// was not expected. The rehearsal ends once every task has ended once (a task that
    /// ends `retry_wait` is not replayed again).
    #[arg(long, value_name = "DIR", requires = "tasks", conflicts_with_all = ["device", "failure_paths", "live"])]
    replay: Option<PathBuf>,
    /// With --replay: write the replay log here (one JSON object per action: the screen
    /// before and after, or `"off_script": true`).
    #[arg(long, value_name = "FILE", requires = "replay")]
    replay_log: Option<PathBuf>,
}

#[cfg(feature = "rehearse")]
pub fn run(g: &Globals, a: RehearseArgs) -> Result<(), Failure> {
    use super::exit::Code;
    use cmautobuy_client::app::setup;
    use cmautobuy_client::rehearse::{self, RehearseOptions, SimRoute};

    setup::init_tracing("warn");
    let in_rehearse = |f: Failure| f.in_command("rehearse");
    // The configuration a rehearsal honours — `device_backend`, `u2_jar`, `lock_dir`,
    // the console — from a file only when one is named (`--config`, `$CMAUTOBUY_CONFIG`,
    // `--data-dir`'s `config.toml`), the environment and the flags; never the machine's
    // default config.
    let o = g
        .overrides()
        .text("console_addr", "--console", a.console.clone())
        .text(
            "console_addr",
            "--no-console",
            a.no_console.then_some("off"),
        )
        .text(
            "console_password",
            "--console-password",
            a.console_password.clone(),
        );
    let cfg = setup::load_for_rehearsal(o).map_err(|e| in_rehearse(e.into()))?;
    let profile = a
        .profile
        .parse()
        .map_err(|e| in_rehearse(Failure::usage(anyhow::anyhow!("--profile: {e}"))))?;
    let sim_route = match &a.adb_server {
        None => SimRoute::Direct,
        Some(s) => SimRoute::AdbServer(s.parse::<std::net::SocketAddrV4>().map_err(|e| {
            in_rehearse(Failure::usage(anyhow::anyhow!("--adb-server {s:?}: {e}")))
        })?),
    };
    // A bad scenario is refused before anything starts, with the loader's message.
    if let Some(dir) = &a.replay {
        rehearse::replay::load(dir).map_err(|e| in_rehearse(Failure::usage(anyhow::anyhow!(e))))?;
    }
    // A kept data directory and a real phone are locked as `run` locks them (a plain
    // rehearsal's temporary directory and simulated phone are its own).
    let _locks = lock(g, &cfg, a.device.as_deref()).map_err(in_rehearse)?;
    let opts = RehearseOptions {
        device: a.device,
        sim_route,
        admin: a.admin,
        token: a.token,
        tasks: a.tasks,
        profile,
        data_dir: g.data_dir.clone(),
        timeout: a.timeout.map(|t| std::time::Duration::from_secs(t.max(1))),
        json: a.json,
        bench: a.bench,
        purchases: !a.no_purchases,
        live: a.live,
        failure_paths: a.failure_paths,
        console: cfg.console,
        console_password: cfg.console_password.clone(),
        keep_console: a.keep_console,
        replay: a.replay,
        replay_log: a.replay_log,
        device_backend: cfg.device_backend,
        u2_jar: cfg.u2_jar.clone(),
        animated_pages: a.animated_pages,
        ..RehearseOptions::default()
    };
    let json = a.json;
    let bench = a.bench;
    // The summary is printed as soon as it is known (with --keep-console, before the
    // console's last stretch; after a timeout too).
    let summary = rehearse::rehearse_with(opts, |summary| {
        if json {
            println!(
                "{}",
                serde_json::to_string_pretty(summary).unwrap_or_default()
            );
        } else {
            rehearse::print_summary(summary, bench);
        }
    })
    .map_err(|e| {
        // Refused for what was given: no `adb` for the private adb server u2 needs, a
        // `--device` that does not answer.
        let usage = e.downcast_ref::<rehearse::Refused>().is_some()
            || matches!(
                e.downcast_ref::<cmautobuy_sim_phone::adb_server::AdbServerError>(),
                Some(cmautobuy_sim_phone::adb_server::AdbServerError::NotFound(_))
            );
        let code = if usage { Code::Usage } else { Code::Unexpected };
        in_rehearse(Failure::new(code, e))
    })?;
    if summary.ok {
        Ok(())
    } else {
        Err(Failure::silent(Code::Unexpected))
    }
}

/// The data directory's lock with `--data-dir`, the phone's with `--device`.
#[cfg(feature = "rehearse")]
fn lock(
    g: &Globals,
    cfg: &cmautobuy_client::config::Config,
    device: Option<&str>,
) -> Result<Vec<cmautobuy_client::lock::ProcessLock>, Failure> {
    use cmautobuy_client::device::{adb::default_adb_server, DeviceAddress};
    use cmautobuy_client::lock;

    const HOLDER: &str = "cmautobuy-client rehearse";
    let mut locks = Vec::new();
    if let Some(dir) = &g.data_dir {
        locks.push(lock::lock_data_dir(dir, HOLDER).map_err(Failure::usage)?);
    }
    if let Some(serial) = device {
        let server = default_adb_server(std::env::var("ANDROID_ADB_SERVER_PORT").ok().as_deref());
        let addr = DeviceAddress::parse(serial, server)
            .map_err(|e| Failure::usage(anyhow::anyhow!("device {serial}: {e}")))?;
        locks
            .push(lock::lock_device(&cfg.lock_dir, serial, &addr, HOLDER).map_err(Failure::usage)?);
    }
    Ok(locks)
}

#[cfg(not(feature = "rehearse"))]
pub fn run(_: &Globals, _: RehearseArgs) -> Result<(), Failure> {
    Err(Failure::usage(anyhow::anyhow!(
        "this build has no rehearse feature (build cmautobuy-client with its default features)"
    ))
    .in_command("rehearse"))
}
