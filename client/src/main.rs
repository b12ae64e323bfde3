//! `cmautobuy-client`: the executor's command line. Thin glue over the library; each
//! subcommand maps its failures to an exit code here.
//!
//! Exit codes: 0 success; 1 unexpected error; 2 usage or configuration error (and
//! `inspect`: the dump is unusable); 3 the local store cannot be opened (e.g. schema
//! self-check failed); 4 the Admin could not be reached or refused (`register`);
//! 5 `run --exit-when-idle` stopped because claiming is blocked by an operator alert;
//! 6 `doctor`: the device is not ready.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};

use cmautobuy_client::clock::TokioClock;
use cmautobuy_client::config::{self, Config, ConfigError, Overrides};
use cmautobuy_client::executor::{Executor, NoDeviceExecutor, StubExecutor};
use cmautobuy_client::gateway::{GatewaySettings, HttpAdminGateway};
use cmautobuy_client::outbox::Relay;
use cmautobuy_client::registration;
use cmautobuy_client::runner::{client_profile, RunConfig, RunExit, Runner};
use cmautobuy_client::screen;
use cmautobuy_client::secret::Secret;
use cmautobuy_client::store::{SettingsPatch, Store, StoreError};
use cmautobuy_contract::hash;
use cmautobuy_contract::SpecCandidate;

#[derive(Parser)]
#[command(name = "cmautobuy-client", version, about = "The cmautobuy executor")]
struct Cli {
    /// Config file (TOML); default `<data dir>/config.toml`.
    #[arg(long, global = true, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where the store (and default config) live.
    #[arg(long, global = true, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
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
    Run {
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
        /// Declare `live` and run live purchase tasks live on the configured device —
        /// real, unpaid orders (issue 7). Off by default: purchases run as dry runs.
        /// The config key `allow_live = true` does the same for unattended machines.
        #[arg(long)]
        allow_live: bool,
    },
    /// The whole system on this machine: the bundled mock Admin and the simulated phone
    /// in-process, a demo batch of tasks, the real client until the batch is done.
    /// Exit 0 only if every task ended as the batch expects.
    Rehearse {
        /// A real phone (adb serial or `tcp:HOST:PORT`) instead of the simulated one;
        /// purchases then run as dry runs only.
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
        /// instead of directly over TCP.
        #[arg(long, value_name = "HOST:PORT")]
        adb_server: Option<String>,
        /// Give up after this many seconds.
        #[arg(long, value_name = "SECS", default_value_t = 600)]
        timeout: u64,
        /// Print the summary as one JSON object.
        #[arg(long)]
        json: bool,
        /// Leave the purchase demo tasks (dry runs) out of the demo batch.
        #[arg(long)]
        no_purchases: bool,
        /// Run the purchase demo live: real unpaid orders on the simulated phone (refused
        /// with --device), issue 7.
        #[arg(long)]
        live: bool,
        /// Add the failure paths to the demo batch: goods that redirect, need a login,
        /// show a risk page or are delisted, and purchases refused for the price limit,
        /// a missing address or a sold-out option — each must end with its code.
        #[arg(long)]
        failure_paths: bool,
    },
    /// Save the name/device locally, then register with the Admin (§4.1).
    Register {
        #[command(flatten)]
        conn: Conn,
    },
    /// Show identity, registration, alerts, tasks and the outbox.
    Status {
        #[arg(long)]
        json: bool,
    },
    /// Inspect or requeue the outbox.
    Outbox {
        #[command(subcommand)]
        command: OutboxCommand,
    },
    /// Acknowledge operator alerts (resumes claiming). Without an id: all of them.
    Ack { id: Option<i64> },
    /// Compute the §7.1 snapshot hash and idempotency key of a spec resolution.
    SpecResolutionKey {
        /// JSON: {task_id, attempt_id, pdd_goods_id, selected_color, candidates}
        #[arg(long, value_name = "FILE")]
        input: PathBuf,
    },
    /// Classify a UI dump (uiautomator XML) and print what was read from it.
    Inspect {
        /// The dump file (the raw output of `uiautomator dump /dev/tty` is fine).
        dump: PathBuf,
        /// Print JSON: {"screen": "<kind>", …}.
        #[arg(long)]
        json: bool,
    },
    /// Check the phone: state, authorization, model, screen size, PDD installed,
    /// foreground activity. Exit 0 when ready, 6 when not.
    Doctor {
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
    },
}

#[derive(Subcommand)]
enum OutboxCommand {
    /// List undelivered items (`--all`: accepted ones too).
    List {
        #[arg(long)]
        all: bool,
        #[arg(long)]
        json: bool,
    },
    /// Make parked items due again (one by id, or all parked).
    Retry { id: Option<i64> },
}

/// A failure with its exit code.
struct Failure {
    code: u8,
    error: anyhow::Error,
}

impl Failure {
    fn new(code: u8, error: impl Into<anyhow::Error>) -> Self {
        Failure {
            code,
            error: error.into(),
        }
    }
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Self {
        Failure::new(2, e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::new(3, e)
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::new(1, e)
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let overrides = |conn: Option<&Conn>, poll: Option<f64>| Overrides {
        config: cli.config.clone(),
        data_dir: cli.data_dir.clone(),
        admin_url: conn.and_then(|c| c.admin.clone()),
        token: conn.and_then(|c| c.token.clone()).map(Secret::new),
        device: conn.and_then(|c| c.device.clone()),
        name: conn.and_then(|c| c.name.clone()),
        poll_interval_secs: poll,
    };
    let result = match &cli.command {
        Command::Inspect { dump, json } => return inspect(dump, *json),
        Command::Doctor {
            device,
            adb_server,
            adb_key,
            json,
        } => {
            return match load(overrides(None, None)) {
                Ok(cfg) => doctor(
                    &cfg,
                    device.as_deref(),
                    adb_server.as_deref(),
                    adb_key,
                    *json,
                ),
                Err(f) => {
                    eprintln!("cmautobuy-client: {:#}", f.error);
                    ExitCode::from(f.code)
                }
            }
        }
        Command::Rehearse {
            device,
            admin,
            token,
            tasks,
            profile,
            adb_server,
            timeout,
            json,
            no_purchases,
            live,
            failure_paths,
        } => {
            return rehearse_cmd(
                cli.data_dir.clone(),
                device.clone(),
                admin.clone(),
                token.clone(),
                tasks.clone(),
                profile,
                adb_server.as_deref(),
                *timeout,
                *json,
                (!*no_purchases, *live, *failure_paths),
            )
        }
        Command::SpecResolutionKey { input } => spec_resolution_key(input),
        Command::Run {
            conn,
            exit_when_idle,
            poll_interval,
            stub_executor,
            allow_live,
        } => load(overrides(Some(conn), *poll_interval)).and_then(|cfg| {
            if *stub_executor {
                run(cfg, *exit_when_idle, StubExecutor)
            } else {
                let live = *allow_live || cfg.allow_live;
                run_on_device(cfg, *exit_when_idle, live)
            }
        }),
        Command::Register { conn } => load(overrides(Some(conn), None)).and_then(register),
        Command::Status { json } => load(overrides(None, None)).and_then(|c| status(&c, *json)),
        Command::Outbox { command } => {
            load(overrides(None, None)).and_then(|c| outbox(&c, command))
        }
        Command::Ack { id } => load(overrides(None, None)).and_then(|c| ack(&c, *id)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("cmautobuy-client: {:#}", f.error);
            ExitCode::from(f.code)
        }
    }
}

fn load(o: Overrides) -> Result<Config, Failure> {
    let cfg = config::load(o, &|k| std::env::var(k).ok())?;
    init_tracing(&cfg.log);
    Ok(cfg)
}

fn init_tracing(default: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(default))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

fn open_store(cfg: &Config) -> Result<Store, Failure> {
    Ok(Store::open(&Store::path_in(&cfg.data_dir))?)
}

/// Saves what the user gave (the §4.1 local save) and returns the store.
fn open_and_save(cfg: &Config) -> Result<Store, Failure> {
    // §4.1: at most 50 characters; refuse here rather than be rejected by the Admin.
    if let Some(n) = &cfg.name {
        let max = cmautobuy_contract::validate::CLIENT_NAME_MAX_CHARS;
        if n.chars().count() > max {
            return Err(Failure::new(
                2,
                anyhow::anyhow!("the client name is longer than {max} characters"),
            ));
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

fn gateway(cfg: &Config, store: &Store) -> Result<HttpAdminGateway, Failure> {
    let settings = store.settings()?;
    let url = settings.admin_url.clone().ok_or_else(|| {
        Failure::new(
            2,
            anyhow::anyhow!("no Admin URL: use --admin URL, CMAUTOBUY_ADMIN_URL or admin_url in the config file"),
        )
    })?;
    let mut gs = GatewaySettings::new(settings.client_id.clone(), settings.token.clone());
    gs.connect_timeout = cfg.connect_timeout;
    gs.request_timeout = cfg.request_timeout;
    gs.max_body_bytes = cfg.max_body_bytes;
    HttpAdminGateway::new(&url, gs).map_err(|e| Failure::new(2, e))
}

fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")
        .map_err(Failure::from)
}

fn run<E: Executor>(cfg: Config, exit_when_idle: bool, executor: E) -> Result<(), Failure> {
    let store = open_and_save(&cfg)?;
    let gw = Arc::new(gateway(&cfg, &store)?);
    let rt = runtime()?;
    run_on(cfg, exit_when_idle, executor, store, gw, rt)
}

fn run_on<E: Executor>(
    cfg: Config,
    exit_when_idle: bool,
    executor: E,
    store: Store,
    gw: Arc<HttpAdminGateway>,
    rt: tokio::runtime::Runtime,
) -> Result<(), Failure> {
    let executor = Arc::new(executor);
    let exit = rt.block_on(async move {
        let clock = TokioClock::new();
        let settings = store.settings()?;
        tracing::info!(client_id = %settings.client_id, admin = ?settings.admin_url, device = ?settings.device, "starting");
        // §4.1: registration runs in the background; its failure never stops the run.
        let profile = client_profile(&settings, executor.readiness());
        let reg = registration::spawn(store.clone(), gw.clone(), clock.clone(), profile);
        let relay = Relay::new(store.clone(), gw.clone(), clock.clone(), Default::default());
        let runner = Runner::new(
            store.clone(),
            gw.clone(),
            executor,
            clock.clone(),
            RunConfig {
                poll_interval: cfg.poll_interval,
                exit_when_idle,
                policy: Default::default(),
            },
            relay.waker(),
        );
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let relay_task = {
            let rx = stop_rx.clone();
            tokio::spawn(async move { relay.run(rx).await })
        };
        let signals = tokio::spawn({
            let stop_tx = stop_tx.clone();
            async move {
                wait_for_signal().await;
                tracing::info!("stopping");
                let _ = stop_tx.send(true);
            }
        });
        let exit = runner.run(stop_rx).await;
        let _ = stop_tx.send(true);
        signals.abort();
        match relay_task.await {
            Ok(Err(e)) => tracing::error!(error = %e, "outbox relay stopped"),
            Err(e) => tracing::error!(error = %e, "outbox relay panicked"),
            Ok(Ok(())) => {}
        }
        // Give a still-running registration a moment to record its outcome.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), reg).await;
        exit.map_err(|e| Failure::new(3, e))
    })?;
    match exit {
        RunExit::Shutdown | RunExit::Idle => Ok(()),
        RunExit::Blocked(reason) => Err(Failure::new(
            5,
            anyhow::anyhow!("claiming is stopped until the operator acts: {reason} (see `cmautobuy-client status`, then `cmautobuy-client ack`)"),
        )),
    }
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

fn register(cfg: Config) -> Result<(), Failure> {
    let store = open_and_save(&cfg)?;
    let settings = store.settings()?;
    println!(
        "saved locally: client id {}, name {}",
        settings.client_id,
        settings.name.as_deref().unwrap_or("(none)")
    );
    let gw = Arc::new(gateway(&cfg, &store)?);
    let rt = runtime()?;
    let status = rt.block_on(async {
        let profile = client_profile(&settings, NoDeviceExecutor.readiness());
        registration::spawn(store.clone(), gw, TokioClock::new(), profile).await
    });
    match status {
        Ok(s) if s.state == "ok" => {
            println!("registered with the Admin at {}", s.at);
            Ok(())
        }
        Ok(s) => Err(Failure::new(
            4,
            anyhow::anyhow!(
                "registration failed (local settings kept): {}",
                s.error.unwrap_or_default()
            ),
        )),
        Err(e) => Err(Failure::new(
            1,
            anyhow::anyhow!("registration task failed: {e}"),
        )),
    }
}

fn status(cfg: &Config, json: bool) -> Result<(), Failure> {
    let store = open_store(cfg)?;
    let s = store.settings()?;
    let alerts = store.open_alerts()?;
    let summary = store.summary()?;
    let undelivered: Vec<_> = store.outbox_list(false)?;
    if json {
        let v = serde_json::json!({
            "client_id": s.client_id,
            "name": s.name,
            "admin_url": s.admin_url,
            "token_set": s.token.is_some(),
            "device": s.device,
            "registration": s.registration,
            "alerts": alerts.iter().map(|a| serde_json::json!({
                "id": a.id, "kind": a.kind, "task_id": a.remote_task_id,
                "message": a.message, "raised_at": a.raised_at,
            })).collect::<Vec<_>>(),
            "tasks": summary.tasks.iter().map(|(k, n)| (k.as_str().to_string(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
            "outbox": summary.outbox.iter().map(|(k, n)| (k.as_str().to_string(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
        });
        println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        return Ok(());
    }
    println!("client id:    {}", s.client_id);
    println!("name:         {}", s.name.as_deref().unwrap_or("-"));
    println!("admin:        {}", s.admin_url.as_deref().unwrap_or("-"));
    println!(
        "token:        {}",
        if s.token.is_some() { "set" } else { "not set" }
    );
    println!("device:       {}", s.device.as_deref().unwrap_or("-"));
    match &s.registration {
        Some(r) if r.state == "ok" => println!("registration: ok ({})", r.at),
        Some(r) => println!(
            "registration: {} ({}){}",
            r.state,
            r.at,
            r.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
        None => println!("registration: never attempted"),
    }
    if alerts.is_empty() {
        println!("alerts:       none (claiming allowed)");
    } else {
        println!("ALERTS — claiming is stopped until acknowledged (`cmautobuy-client ack`):");
        for a in &alerts {
            println!(
                "  #{} [{}] task {}: {}",
                a.id,
                a.kind,
                a.remote_task_id.as_deref().unwrap_or("-"),
                a.message
            );
        }
    }
    let fmt = |v: Vec<(String, i64)>| {
        if v.is_empty() {
            "none".to_string()
        } else {
            v.iter()
                .map(|(k, n)| format!("{k}={n}"))
                .collect::<Vec<_>>()
                .join(" ")
        }
    };
    println!(
        "tasks:        {}",
        fmt(summary
            .tasks
            .iter()
            .map(|(k, n)| (k.as_str().into(), *n))
            .collect())
    );
    // Tasks in flight (claimed, running, or waiting for the Admin's acceptance).
    for t in store.unfinished_tasks()? {
        println!(
            "  task {} ({}, {}) {} since {}",
            t.remote_task_id,
            t.task_type,
            t.execution_mode,
            t.state.as_str(),
            t.claimed_at
        );
    }
    println!(
        "outbox:       {}",
        fmt(summary
            .outbox
            .iter()
            .map(|(k, n)| (k.as_str().into(), *n))
            .collect())
    );
    for o in undelivered {
        println!(
            "  #{} {} {} task {} attempts {}{}",
            o.id,
            o.state.as_str(),
            o.kind.as_str(),
            o.remote_task_id,
            o.attempts,
            o.last_error
                .map(|e| format!(" last error: {e}"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

fn outbox(cfg: &Config, cmd: &OutboxCommand) -> Result<(), Failure> {
    let store = open_store(cfg)?;
    match cmd {
        OutboxCommand::List { all, json } => {
            let items = store.outbox_list(*all)?;
            if *json {
                let v: Vec<_> = items
                    .iter()
                    .map(|o| {
                        serde_json::json!({
                            "id": o.id, "state": o.state.as_str(), "kind": o.kind.as_str(),
                            "task_id": o.remote_task_id, "idempotency_key": o.idempotency_key,
                            "attempts": o.attempts,
                            "next_attempt_at": cmautobuy_contract::time::format_utc(o.next_attempt_at),
                            "last_error": o.last_error, "result_id": o.result_id,
                            "path": o.path,
                            "body_sha256": sha256_hex(&o.body),
                        })
                    })
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else if items.is_empty() {
                println!("outbox is empty");
            } else {
                for o in items {
                    println!(
                        "#{} {:8} {:7} task {} key {} attempts {} next {}{}",
                        o.id,
                        o.state.as_str(),
                        o.kind.as_str(),
                        o.remote_task_id,
                        o.idempotency_key,
                        o.attempts,
                        cmautobuy_contract::time::format_utc(o.next_attempt_at),
                        o.last_error.map(|e| format!(" — {e}")).unwrap_or_default()
                    );
                }
            }
        }
        OutboxCommand::Retry { id } => {
            let n = store.outbox_requeue(*id, chrono::Utc::now())?;
            println!("{n} item(s) requeued; a running client sends them within a minute");
        }
    }
    Ok(())
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}

fn ack(cfg: &Config, id: Option<i64>) -> Result<(), Failure> {
    let store = open_store(cfg)?;
    let n = store.ack_alerts(id, chrono::Utc::now())?;
    println!("{n} alert(s) acknowledged");
    Ok(())
}

#[derive(serde::Deserialize)]
struct SpecKeyInput {
    task_id: String,
    attempt_id: String,
    pdd_goods_id: String,
    selected_color: String,
    candidates: Vec<SpecCandidate>,
}

fn spec_resolution_key(input: &Path) -> Result<(), Failure> {
    let text = std::fs::read(input)
        .with_context(|| format!("cannot read {}", input.display()))
        .map_err(|e| Failure::new(2, e))?;
    let i: SpecKeyInput = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a valid spec-resolution input", input.display()))
        .map_err(|e| Failure::new(2, e))?;
    let h = hash::snapshot_hash_of(&i.pdd_goods_id, &i.selected_color, &i.candidates);
    let key = hash::spec_resolution_idempotency_key(&i.task_id, &i.attempt_id, &h);
    println!(
        "{}",
        serde_json::json!({"candidate_snapshot_hash": h, "idempotency_key": key})
    );
    Ok(())
}

/// Exit codes: 0 classified (any kind, `unknown` included), 2 the dump is unusable,
/// 1 the file cannot be read.
fn inspect(path: &std::path::Path, json: bool) -> ExitCode {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "cmautobuy-client inspect: cannot read {}: {e}",
                path.display()
            );
            return ExitCode::from(1);
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    if json {
        let value = screen::inspect_json(&text);
        let failed = value.get("error").is_some();
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return if failed {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    match screen::inspect(&text) {
        Ok(s) => {
            print!("{}", screen::render_text(&s));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "cmautobuy-client inspect: {} ({}; {})",
                e,
                e.code(),
                if e.is_retryable() {
                    "retryable"
                } else {
                    "not retryable"
                }
            );
            ExitCode::from(2)
        }
    }
}

/// `doctor`: print the device report; exit 0 when ready, 6 when not, 2 on bad arguments.
fn doctor(
    cfg: &Config,
    device: Option<&str>,
    adb_server: Option<&str>,
    adb_key: &Option<PathBuf>,
    json: bool,
) -> ExitCode {
    use cmautobuy_client::device::{adb, doctor, AdbDevice, AdbOptions, DeviceAddress};
    let usage = |msg: String| {
        eprintln!("cmautobuy-client doctor: {msg}");
        ExitCode::from(2)
    };
    // The device: the flag, else configuration, else what `register`/`run` saved.
    let saved = || {
        let path = Store::path_in(&cfg.data_dir);
        if !path.exists() {
            return None;
        }
        Store::open(&path).ok()?.settings().ok()?.device
    };
    let Some(serial) = device
        .map(str::to_string)
        .or_else(|| cfg.device.clone())
        .or_else(saved)
    else {
        return usage("no device: use --device SERIAL or --device tcp:HOST:PORT".into());
    };
    let server = match adb_server {
        Some(s) => match s.parse::<std::net::SocketAddrV4>() {
            Ok(a) => a,
            Err(e) => return usage(format!("--adb-server {s:?}: expected IPv4 HOST:PORT ({e})")),
        },
        None => adb::default_adb_server(std::env::var("ANDROID_ADB_SERVER_PORT").ok().as_deref()),
    };
    let addr = match DeviceAddress::parse(&serial, server) {
        Ok(a) => a,
        Err(e) => return usage(e.to_string()),
    };
    let key = adb_key
        .clone()
        .unwrap_or_else(|| cfg.data_dir.join("adbkey"));
    let dev = match AdbDevice::open(addr, AdbOptions::new(key)) {
        Ok(d) => d,
        Err(e) => return usage(e.to_string()),
    };
    let report = doctor::check(&dev);
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report.to_json()).unwrap_or_default()
        );
    } else {
        print!("{}", report.render_text());
    }
    if report.ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(6)
    }
}

/// `run` with the configured (or saved) device: collect tasks run on it through the
/// flow executor; without a device every task waits (`retry_wait DEVICE_OFFLINE`).
fn run_on_device(cfg: Config, exit_when_idle: bool, allow_live: bool) -> Result<(), Failure> {
    use cmautobuy_client::device::{adb::default_adb_server, AdbOptions, DeviceAddress};
    use cmautobuy_client::job::adb::AdbSource;
    use cmautobuy_client::job::attempt::FlowExecutorConfig;
    use cmautobuy_client::job::exec::FlowExecutor;
    let saved = open_store(&cfg)?.settings()?.device;
    let Some(serial) = cfg.device.clone().or(saved) else {
        tracing::warn!("no device configured (--device SERIAL or tcp:HOST:PORT): tasks will wait");
        return run(cfg, exit_when_idle, NoDeviceExecutor);
    };
    let server = default_adb_server(std::env::var("ANDROID_ADB_SERVER_PORT").ok().as_deref());
    let addr = DeviceAddress::parse(&serial, server)
        .map_err(|e| Failure::new(2, anyhow::anyhow!("device {serial}: {e}")))?;
    let source = AdbSource::open(addr, AdbOptions::new(cfg.data_dir.join("adbkey")))
        .map_err(|e| Failure::new(2, anyhow::anyhow!("device {serial}: {e}")))?;
    // Purchases (issue 7): the flow's effects need the store and the Admin; live only
    // with --allow-live or `allow_live = true` in the config.
    if allow_live {
        tracing::warn!(
            device = %serial,
            "live purchases enabled: live tasks place real orders on this phone (never paid)"
        );
    } else {
        tracing::info!("purchases run as dry runs (live needs --allow-live or allow_live = true)");
    }
    let store = open_and_save(&cfg)?;
    let gw = Arc::new(gateway(&cfg, &store)?);
    let rt = runtime()?;
    let backend = cmautobuy_client::job::purchase::Backend::new(
        store.clone(),
        gw.clone(),
        TokioClock::new(),
        rt.handle().clone(),
        allow_live,
    );
    let mut exec_cfg = FlowExecutorConfig::new(cfg.data_dir.join("artifacts"));
    exec_cfg.retention = cfg.retention;
    let exec = FlowExecutor::new(source, exec_cfg).with_purchase(Arc::new(backend));
    run_on(cfg, exit_when_idle, exec, store, gw, rt)
}

/// `rehearse`: exit 0 when every task ended as expected, 1 when not (or on error), 2
/// on bad arguments.
#[allow(clippy::too_many_arguments)]
fn rehearse_cmd(
    data_dir: Option<PathBuf>,
    device: Option<String>,
    admin: Option<String>,
    token: Option<String>,
    tasks: Option<PathBuf>,
    profile: &str,
    adb_server: Option<&str>,
    timeout: u64,
    json: bool,
    (purchases, live, failure_paths): (bool, bool, bool),
) -> ExitCode {
    use cmautobuy_client::rehearse::{self, RehearseOptions, SimRoute};
    init_tracing("warn");
    let profile = match profile.parse() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("cmautobuy-client rehearse: --profile: {e}");
            return ExitCode::from(2);
        }
    };
    let sim_route = match adb_server {
        None => SimRoute::Direct,
        Some(s) => match s.parse::<std::net::SocketAddrV4>() {
            Ok(a) => SimRoute::AdbServer(a),
            Err(e) => {
                eprintln!("cmautobuy-client rehearse: --adb-server {s:?}: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let opts = RehearseOptions {
        device,
        sim_route,
        admin,
        token,
        tasks,
        profile,
        data_dir,
        timeout: std::time::Duration::from_secs(timeout.max(1)),
        json,
        purchases,
        live,
        failure_paths,
        ..RehearseOptions::default()
    };
    match rehearse::rehearse(opts) {
        Ok(summary) => {
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&summary).unwrap_or_default()
                );
            } else {
                rehearse::print_summary(&summary);
            }
            if summary.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Err(e) => {
            eprintln!("cmautobuy-client rehearse: {e:#}");
            ExitCode::from(1)
        }
    }
}
