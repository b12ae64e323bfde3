//! `cmautobuy-client register`: saves the name, Admin, token and device locally first,
//! then registers with the Admin (`PUT /registration`, §4.1); a remote failure keeps the
//! local save and exits 4. It declares what a claim would ([`setup::declared_profile`]:
//! from the store's state, never wider).

use std::sync::Arc;

use clap::Args;

use cmautobuy_client::app::setup::{self, LogTo};
use cmautobuy_client::clock::TokioClock;
use cmautobuy_client::registration;

use super::args::{Conn, Globals};
use super::exit::{Code, Failure};

#[derive(Args)]
pub struct RegisterArgs {
    #[command(flatten)]
    conn: Conn,
}

pub fn run(g: &Globals, a: RegisterArgs) -> Result<(), Failure> {
    let cfg = setup::load(a.conn.over(g.overrides()), LogTo::Stderr)?;
    if cfg.devices.is_empty() {
        return register(&cfg);
    }
    // Several phones: each registers as its own client (its store, its identity); the
    // first failure is the exit code, after every phone had its turn.
    let mut first_failure = None;
    for (serial, pc) in setup::phone_configs(&cfg)? {
        println!("phone {serial}:");
        if let Err(f) = register(&pc) {
            let f = f.print_with(&format!("cmautobuy-client register: phone {serial}: "));
            first_failure.get_or_insert(f);
        }
    }
    first_failure.map_or(Ok(()), Err)
}

/// Saves and registers the one phone (or none) of `cfg`.
fn register(cfg: &cmautobuy_client::config::Config) -> Result<(), Failure> {
    let cfg = cfg.clone();
    let store = setup::open_and_save(&cfg)?;
    let settings = store.settings()?;
    println!(
        "saved locally: client id {}, name {}",
        settings.client_id,
        settings.name.as_deref().unwrap_or("(none)")
    );
    let gw = Arc::new(setup::gateway(&cfg, &store)?);
    // What a claim would declare now, from the store's state (never wider).
    let profile = setup::declared_profile(&cfg, &store)?;
    println!(
        "declaring: {} (purchase_mode {})",
        profile
            .supported_types
            .iter()
            .map(|t| t.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        profile.capabilities.purchase_mode.as_str()
    );
    let rt = setup::runtime()?;
    let status = rt.block_on(async {
        registration::spawn(store.clone(), gw, TokioClock::new(), profile).await
    });
    match status {
        Ok(s) if s.state == "ok" => {
            println!("registered with the Admin at {}", s.at);
            Ok(())
        }
        Ok(s) => Err(Failure::new(
            Code::Admin,
            anyhow::anyhow!(
                "registration failed (local settings kept): {}",
                s.error.unwrap_or_default()
            ),
        )),
        Err(e) => Err(Failure::new(
            Code::Unexpected,
            anyhow::anyhow!("registration task failed: {e}"),
        )),
    }
}
