//! `sim-phone`: serve a simulated phone on a loopback port, or print its order ledger.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};

use cmautobuy_sim_phone::{
    Catalog, DumpFormat, LatencyProfile, PopupSchedule, Scenario, SimConfig, SimPhone,
};

#[derive(Parser)]
#[command(
    name = "sim-phone",
    about = "A simulated Android phone running a simulated PDD app, reachable over ADB",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    serve: Serve,
}

#[derive(Subcommand)]
enum Cmd {
    /// Print the ledger's orders as JSON lines.
    Orders {
        #[arg(long)]
        state: PathBuf,
    },
}

#[derive(Args)]
struct Serve {
    /// Loopback address to listen on (port 0 = any free port). Avoid 5555-5585: every adb
    /// server probes those as emulators.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Catalog file or directory of *.json files (default: the repository's
    /// fixtures/catalog).
    #[arg(long, conflicts_with = "replay")]
    catalog: Option<PathBuf>,
    /// Replay mode: play the recorded scenario in this directory (format v1, see
    /// sim-phone/README.md) instead of the catalog's app. A bad scenario is refused at
    /// start (exit code 2).
    #[arg(long)]
    replay: Option<PathBuf>,
    /// Replay mode: append the replay log here (JSON lines, truncated at start).
    #[arg(long, requires = "replay")]
    replay_log: Option<PathBuf>,
    /// State file holding the order ledger (created if missing; survives restarts).
    #[arg(long)]
    state: Option<PathBuf>,
    /// zero (no delays) or realistic (sleeps like a phone).
    #[arg(long, default_value = "zero")]
    profile: LatencyProfile,
    /// Seed for every random choice (latencies, popups, order numbers).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Chance in percent that a popup covers a home or goods page on arrival.
    #[arg(long, default_value_t = 0)]
    popup_rate: u8,
    /// Start the phone's clock here (RFC 3339) and advance it by simulated time only.
    #[arg(long)]
    fixed_clock: Option<String>,
    /// Seconds the phone's clock runs ahead of the host's (negative: behind).
    #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
    clock_offset: i64,
    /// Chance in percent that a dump fails with "ERROR: could not get idle state."
    #[arg(long, default_value_t = 0)]
    dump_failure_rate: u8,
    /// Show "商品编号：ID" on goods pages (the real app does not).
    #[arg(long)]
    show_goods_id: bool,
    /// Write dumps in the old one-line format.
    #[arg(long)]
    compact_dumps: bool,
    /// The phone's own state as JSON (`SystemConfig`: screen_off_timeout_ms, lock,
    /// start_screen_off, battery, second_browser, keyboard), e.g.
    /// `{"lock":"swipe","screen_off_timeout_ms":30000}`.
    #[arg(long)]
    phone_state: Option<String>,
    /// Refuse injected input (`input …` fails with INJECT_EVENTS), as MIUI / HyperOS do
    /// until "USB调试（安全设置）" is on; same as `"input_injection_denied": true` in
    /// --phone-state.
    #[arg(long)]
    input_injection_denied: bool,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Some(Cmd::Orders { state }) => {
            let orders = cmautobuy_sim_phone::ledger::read_orders(&state)?;
            let mut out = std::io::stdout().lock();
            for o in orders {
                writeln!(out, "{}", serde_json::to_string(&o)?)?;
            }
            Ok(())
        }
        None => serve(cli.serve),
    }
}

fn serve(a: Serve) -> anyhow::Result<()> {
    let mut cfg = match &a.replay {
        Some(dir) => match Scenario::load(dir) {
            Ok(s) => SimConfig::replay(s),
            Err(e) => {
                // One line naming the problem; exit code 2 like any refused argument.
                eprintln!("sim-phone: refusing scenario {}: {e}", dir.display());
                std::process::exit(2);
            }
        },
        None => {
            let catalog_path = a.catalog.unwrap_or_else(Catalog::bundled_dir);
            let catalog = Catalog::load(&catalog_path)
                .with_context(|| format!("loading catalog {}", catalog_path.display()))?;
            SimConfig::new(catalog)
        }
    };
    cfg.replay_log = a.replay_log;
    cfg.state_file = a.state;
    cfg.profile = a.profile;
    cfg.seed = a.seed;
    if a.popup_rate > 0 {
        cfg.popups = PopupSchedule::Seeded {
            percent: a.popup_rate.min(100),
        };
    }
    if let Some(t) = a.fixed_clock {
        let t = chrono::DateTime::parse_from_rfc3339(&t).context("--fixed-clock")?;
        cfg.start_time = Some(t.with_timezone(&chrono::Utc));
    }
    cfg.clock_offset_secs = a.clock_offset;
    cfg.faults.random_idle_failure_percent = a.dump_failure_rate.min(100);
    cfg.show_goods_id = a.show_goods_id;
    if let Some(j) = &a.phone_state {
        cfg.system = serde_json::from_str(j).context("--phone-state")?;
    }
    if a.input_injection_denied {
        cfg.system.input_injection_denied = true;
    }
    if a.compact_dumps {
        cfg.dump_format = DumpFormat::Compact;
    }
    let handle = SimPhone::bind(a.listen, cfg)?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {}", handle.addr())?;
        out.flush()?;
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        #[cfg(unix)]
        {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
            tokio::select! {
                r = tokio::signal::ctrl_c() => r?,
                _ = term.recv() => {}
            }
        }
        #[cfg(not(unix))]
        tokio::signal::ctrl_c().await?;
        anyhow::Ok(())
    })?;
    handle.shutdown();
    Ok(())
}
