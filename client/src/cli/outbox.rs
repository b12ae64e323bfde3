//! `cmautobuy-client outbox`: lists the outbox (`list`: undelivered items, `--all`
//! accepted ones too) or makes parked items due again (`retry`).

use clap::{Args, Subcommand};

use super::args::Globals;
use super::exit::Failure;
use cmautobuy_client::app::setup::{self, LogTo};

#[derive(Args)]
pub struct OutboxArgs {
    /// With several phones: the phone whose outbox this is (required then).
    #[arg(long, value_name = "SERIAL", global = true)]
    device: Option<String>,
    #[command(subcommand)]
    command: OutboxCommand,
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

pub fn run(g: &Globals, a: OutboxArgs) -> Result<(), Failure> {
    let cfg = setup::load(g.overrides(), LogTo::Stderr)?;
    let store = setup::one_phone_store(&cfg, a.device.as_deref())?;
    match a.command {
        OutboxCommand::List { all, json } => {
            let items = store.outbox_list(all)?;
            if json {
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
            let n = store.outbox_requeue(id, chrono::Utc::now())?;
            println!("{n} item(s) requeued; a running client sends them within a minute");
        }
    }
    Ok(())
}

fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(b))
}
