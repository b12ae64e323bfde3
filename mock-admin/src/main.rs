//! `mock-admin --listen ADDR --db PATH [--seed FILE] [--require-token T]`
//!
//! Prints exactly `listening on http://ADDR` (the real bound address, also for port 0)
//! once the socket accepts connections, then serves until Ctrl-C / SIGTERM.

use anyhow::Context;
use clap::Parser;
use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig};
use std::io::Write;

#[derive(Parser)]
#[command(
    name = "mock-admin",
    about = "The bundled mock Admin (Client–Admin API v1)"
)]
struct Args {
    /// Address to listen on, e.g. 127.0.0.1:8080 (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// SQLite database file, or :memory:.
    #[arg(long, default_value = ":memory:")]
    db: String,
    /// JSON file: an array of operator create-task bodies to load at start.
    #[arg(long)]
    seed: Option<std::path::PathBuf>,
    /// Require `Authorization: Bearer <T>` on every /api request.
    #[arg(long, env = "MOCK_ADMIN_TOKEN", hide_env_values = true)]
    require_token: Option<String>,
    /// How long to wait for a database lock held by another process (ms).
    #[arg(long, default_value_t = 5000)]
    busy_timeout_ms: u64,
    /// How long a client may take to send a whole request (headers and body) before its
    /// connection is cut (s): a half-sent request is answered 408 and closed.
    #[arg(long, default_value_t = 30.0)]
    request_timeout_secs: f64,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match run(Args::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mock-admin: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `--request-timeout-secs` as milliseconds: a positive, finite number of seconds.
fn secs_to_ms(secs: f64) -> anyhow::Result<u64> {
    if !secs.is_finite() || secs <= 0.0 || secs > 86_400.0 {
        anyhow::bail!("--request-timeout-secs must be a number of seconds above 0 (at most 86400), not {secs}");
    }
    Ok((secs * 1000.0).ceil() as u64)
}

async fn run(args: Args) -> anyhow::Result<()> {
    let admin = MockAdmin::open(MockAdminConfig {
        db_path: args.db.clone(),
        require_token: args.require_token.clone(),
        busy_timeout_ms: args.busy_timeout_ms,
        request_read_timeout_ms: secs_to_ms(args.request_timeout_secs)?,
    })?;
    if let Some(seed) = &args.seed {
        let text = std::fs::read_to_string(seed)
            .with_context(|| format!("cannot read seed file {}", seed.display()))?;
        let tasks: Vec<serde_json::Value> = serde_json::from_str(&text)
            .with_context(|| format!("seed file {} is not a JSON array", seed.display()))?;
        let op = admin.operator();
        for (i, t) in tasks.into_iter().enumerate() {
            op.create_task(t)
                .await
                .with_context(|| format!("seed task #{}", i + 1))?;
        }
    }
    let listener = tokio::net::TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    let addr = listener.local_addr()?;
    {
        // The socket is bound and listening: connections queue from now on.
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on http://{addr}")?;
        out.flush()?;
    }
    admin.serve(listener, shutdown_signal()).await
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
