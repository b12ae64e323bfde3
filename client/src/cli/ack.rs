//! `cmautobuy-client ack`: acknowledges operator alerts (one by id, or all of them), so
//! that claiming resumes.

use clap::Args;

use super::args::Globals;
use super::exit::Failure;
use super::setup;

#[derive(Args)]
pub struct AckArgs {
    id: Option<i64>,
}

pub fn run(g: &Globals, a: AckArgs) -> Result<(), Failure> {
    let cfg = setup::load(g.overrides(None, None))?;
    let store = setup::open_store(&cfg)?;
    let n = store.ack_alerts(a.id, chrono::Utc::now())?;
    println!("{n} alert(s) acknowledged");
    Ok(())
}
