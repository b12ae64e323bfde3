//! `cmautobuy-client spec-resolution-key`: computes the §7.1 candidate snapshot hash and
//! the idempotency key of a spec resolution from a JSON file.

use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use cmautobuy_contract::{hash, SpecCandidate};

use super::exit::Failure;

#[derive(Args)]
pub struct SpecResolutionKeyArgs {
    /// JSON: {task_id, attempt_id, pdd_goods_id, selected_color, candidates}
    #[arg(long, value_name = "FILE")]
    input: PathBuf,
}

#[derive(serde::Deserialize)]
struct SpecKeyInput {
    task_id: String,
    attempt_id: String,
    pdd_goods_id: String,
    selected_color: String,
    candidates: Vec<SpecCandidate>,
}

pub fn run(a: SpecResolutionKeyArgs) -> Result<(), Failure> {
    let input = &a.input;
    let text = std::fs::read(input)
        .with_context(|| format!("cannot read {}", input.display()))
        .map_err(Failure::usage)?;
    let i: SpecKeyInput = serde_json::from_slice(&text)
        .with_context(|| format!("{} is not a valid spec-resolution input", input.display()))
        .map_err(Failure::usage)?;
    let h = hash::snapshot_hash_of(&i.pdd_goods_id, &i.selected_color, &i.candidates);
    let key = hash::spec_resolution_idempotency_key(&i.task_id, &i.attempt_id, &h);
    println!(
        "{}",
        serde_json::json!({"candidate_snapshot_hash": h, "idempotency_key": key})
    );
    Ok(())
}
