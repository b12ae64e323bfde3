//! `cmautobuy-client inspect`: classifies a UI dump (uiautomator XML) and prints what was
//! read from it. Exit 0 when classified (any kind, `unknown` included), 2 when the dump
//! is unusable, 1 when the file cannot be read.

use std::path::PathBuf;

use clap::Args;

use cmautobuy_client::screen;

use super::exit::{Code, Failure};

#[derive(Args)]
pub struct InspectArgs {
    /// The dump file (the raw output of `uiautomator dump /dev/tty` is fine).
    dump: PathBuf,
    /// Print JSON: {"screen": "<kind>", …}.
    #[arg(long)]
    json: bool,
}

pub fn run(a: InspectArgs) -> Result<(), Failure> {
    let bytes = std::fs::read(&a.dump).map_err(|e| {
        Failure::new(
            Code::Unexpected,
            anyhow::anyhow!("cannot read {}: {e}", a.dump.display()),
        )
        .in_command("inspect")
    })?;
    let text = String::from_utf8_lossy(&bytes);
    if a.json {
        let value = screen::inspect_json(&text);
        let failed = value.get("error").is_some();
        println!(
            "{}",
            serde_json::to_string_pretty(&value).unwrap_or_default()
        );
        return if failed {
            Err(Failure::silent(Code::Usage))
        } else {
            Ok(())
        };
    }
    match screen::inspect(&text) {
        Ok(s) => {
            print!("{}", screen::render_text(&s));
            Ok(())
        }
        Err(e) => Err(Failure::usage(anyhow::anyhow!(
            "{} ({}; {})",
            e,
            e.code(),
            if e.is_retryable() {
                "retryable"
            } else {
                "not retryable"
            }
        ))
        .in_command("inspect")),
    }
}
