//! `cmautobuy-client ack`: acknowledges operator alerts (one by id, or all of them), so
//! that claiming resumes. `ack N` of a `pdd_version_unproven` alert also proves that PDD
//! version on that phone by hand (recorded as `ack N by USER`, with the time); `ack`
//! without an id never proves a version (live stays paused and `status` keeps saying so;
//! a running client raises the alert again when it restarts or the version changes).

use clap::Args;

use super::args::Globals;
use super::exit::Failure;
use cmautobuy_client::app::setup::{self, LogTo};

#[derive(Args)]
pub struct AckArgs {
    id: Option<i64>,
    /// With several phones: the phone whose alerts these are (required then).
    #[arg(long, value_name = "SERIAL")]
    device: Option<String>,
}

pub fn run(g: &Globals, a: AckArgs) -> Result<(), Failure> {
    let cfg = setup::load(g.overrides(), LogTo::Stderr)?;
    let store = setup::one_phone_store(&cfg, a.device.as_deref())?;
    let now = chrono::Utc::now();
    if let Some(id) = a.id {
        let who = std::env::var("USER")
            .or_else(|_| std::env::var("USERNAME"))
            .ok()
            .filter(|u| !u.trim().is_empty())
            .unwrap_or_else(|| "operator".into());
        let (n, proven) = store.operator_ack(Some(id), &who, now)?;
        if let Some((device, version)) = proven {
            println!("PDD {version} on {device} proven by hand (ack {id} by {who}): live purchases may be declared again");
        }
        println!("{n} alert(s) acknowledged");
        return Ok(());
    }
    let (n, _) = store.operator_ack(None, "operator", now)?;
    println!("{n} alert(s) acknowledged");
    Ok(())
}
