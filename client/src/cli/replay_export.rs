//! `cmautobuy-client replay-export ATTEMPT_DIR OUT_DIR [--keep-screenshots]`: an
//! attempt's artifacts as a redacted replay scenario (`cmautobuy_client::replay::export`).
//! Exit 0 written, 2 the attempt cannot be exported (no manifest, recorded before replay
//! support, no dump) or OUT_DIR is not empty, 1 an I/O error.

use std::path::PathBuf;

use clap::Args;

use cmautobuy_client::replay::export::{export, ExportOptions};
use cmautobuy_client::replay::redact::Masker;

use super::exit::{Code, Failure};

#[derive(Args)]
pub struct ReplayExportArgs {
    /// The attempt folder (`<data dir>/artifacts/<task>/<attempt>/`).
    attempt_dir: PathBuf,
    /// Where the scenario is written (created; must be empty).
    out_dir: PathBuf,
    /// Copy the recorded screenshots too (they are NOT redacted: they show what the
    /// dumps held before masking).
    #[arg(long)]
    keep_screenshots: bool,
}

pub fn run(a: ReplayExportArgs) -> Result<(), Failure> {
    let opts = ExportOptions {
        keep_screenshots: a.keep_screenshots,
    };
    match export(&a.attempt_dir, &a.out_dir, opts, &mut Masker::new()) {
        Ok(s) => {
            println!(
                "{}: {} screens from {} dumps ({} showing only other apps left out), {} transitions{}; {} other windows dropped, {} values masked{}",
                a.out_dir.display(),
                s.screens,
                s.dumps,
                s.foreign_dumps,
                s.transitions,
                if s.order { ", an order placed" } else { "" },
                s.dropped_windows,
                s.masked_values,
                if s.screenshots > 0 {
                    format!("; {} screenshots kept (not redacted)", s.screenshots)
                } else {
                    String::new()
                }
            );
            Ok(())
        }
        Err(e) => {
            let code = if e.is_usage() {
                Code::Usage
            } else {
                Code::Unexpected
            };
            Err(Failure::new(code, anyhow::anyhow!("{} ({})", e, e.code()))
                .in_command("replay-export"))
        }
    }
}
