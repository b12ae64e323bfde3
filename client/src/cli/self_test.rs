//! `cmautobuy-client self-test [--device S]`: asks the running client for a new
//! self-test ([`cmautobuy_client::self_test`]). It sets a flag in the
//! store (`Store::request_self_test`, the same call the web console's button makes); the
//! `run` that drives the phone takes it before its next claim, or at its next start. It
//! never drives the phone itself: one process per phone.

use clap::Args;

use super::args::Globals;
use super::exit::Failure;
use cmautobuy_client::app::setup::{self, LogTo};

#[derive(Args)]
pub struct SelfTestArgs {
    /// The phone to test (its serial as `run` saved it); default: whichever phone this
    /// data directory's client drives.
    #[arg(long, value_name = "SERIAL")]
    device: Option<String>,
}

pub fn run(g: &Globals, a: SelfTestArgs) -> Result<(), Failure> {
    let cfg = setup::load(g.overrides(), LogTo::Stderr)?;
    // Several phones (`cmautobuy_client::phones`): `--device` picks the phone's store
    // (the root store when no phone has that serial); without it every phone's store
    // gets the request.
    let stores = match a.device.as_deref() {
        Some(d) => match setup::phone_stores(&cfg, Some(d)) {
            Ok(s) => s,
            Err(_) => vec![setup::open_store(&cfg)?],
        },
        None => setup::phone_stores(&cfg, None)?,
    };
    for store in stores {
        store.request_self_test(a.device.as_deref())?;
        let phone = a
            .device
            .clone()
            .or(store.settings()?.device)
            .unwrap_or_else(|| "the phone".into());
        println!("self-test requested for {phone}: the running client does it before its next claim (or at its next start); see `cmautobuy-client status`");
    }
    if cfg.self_test_goods_id.is_none() {
        println!("WARNING: {} (config `self_test_goods_id` / CMAUTOBUY_SELF_TEST_GOODS_ID); no self-test runs without it", cmautobuy_client::self_test::NEEDS_GOODS);
    }
    Ok(())
}
