//! `cmautobuy-client diagnose-bundle [--task ID | --attempt DIR] [--out FILE]`: one
//! `.tar.gz` to send (`cmautobuy_client::replay::bundle`): the redacted replay export of
//! an attempt (default: the newest in the artifacts), `version.txt`, `config.toml`
//! without its secrets, the last 500 log lines masked. Exit 0 written, 2 no such
//! task or attempt, 1 an I/O error.

use std::path::PathBuf;

use clap::Args;

use cmautobuy_client::replay::bundle::{newest_attempt, write_bundle, BundleInput};
use cmautobuy_client::store::Store;

use super::args::Globals;
use super::exit::{Code, Failure};
use cmautobuy_client::app::setup::{self, LogTo};

#[derive(Args)]
pub struct DiagnoseBundleArgs {
    /// The newest attempt of this task.
    #[arg(long, conflicts_with = "attempt")]
    task: Option<String>,
    /// This attempt folder.
    #[arg(long, value_name = "DIR")]
    attempt: Option<PathBuf>,
    /// The archive to write (default: `cmautobuy-diagnose-<UTC time>.tar.gz` here).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

pub fn run(g: &Globals, a: DiagnoseBundleArgs) -> Result<(), Failure> {
    let cfg = setup::load(g.overrides(), LogTo::Stderr)?;
    // The artifact roots: the data directory's and every phone's (several phones).
    let mut roots = vec![cfg.data_dir.join("artifacts")];
    if let Ok(phones) = std::fs::read_dir(cfg.data_dir.join("phones")) {
        roots.extend(phones.flatten().map(|p| p.path().join("artifacts")));
    }
    let attempt_dir = match (&a.attempt, &a.task) {
        (Some(d), _) => {
            if !d.is_dir() {
                return Err(Failure::usage(anyhow::anyhow!(
                    "{}: no such attempt folder",
                    d.display()
                ))
                .in_command("diagnose-bundle"));
            }
            Some(d.clone())
        }
        (None, Some(t)) => Some(newest_attempt(&roots, Some(t)).ok_or_else(|| {
            Failure::usage(anyhow::anyhow!("no artifacts for task {t:?}"))
                .in_command("diagnose-bundle")
        })?),
        (None, None) => newest_attempt(&roots, None),
    };
    let config_text = cfg
        .file
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok());
    let mut secrets = Vec::new();
    if let Some(t) = &cfg.token {
        secrets.push(t.expose().to_string());
    }
    if let Some(p) = &cfg.console_password {
        secrets.push(p.expose().to_string());
    }
    // The tokens saved in the stores (by `register`, `run --token`, the console's
    // settings) — whatever Admin they were saved for — are secrets of the log too. Read
    // without opening the stores for writing; one that cannot be read is said below.
    let mut unread = Vec::new();
    let mut store_paths = vec![Store::path_in(&cfg.data_dir)];
    store_paths.extend(
        cmautobuy_client::phones::folders(&cfg.data_dir)
            .iter()
            .map(|f| Store::path_in(f)),
    );
    for path in store_paths {
        match Store::saved_token_at(&path) {
            Ok(Some(t)) => secrets.push(t.expose().to_string()),
            Ok(None) => {}
            Err(e) => unread.push(format!("{}: {e}", path.display())),
        }
        // The webhook URLs and signing secrets saved on the console's 设置 page.
        match Store::saved_operator_secrets_at(&path) {
            Ok(s) => secrets.extend(s),
            Err(e) => unread.push(format!("{}: {e}", path.display())),
        }
    }
    // Webhook URLs (their keys) and signing secrets were registered as secrets when the
    // configuration was read: the bundle's scrubber takes them out with these.
    let out = a.out.unwrap_or_else(|| {
        PathBuf::from(format!(
            "cmautobuy-diagnose-{}.tar.gz",
            chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
        ))
    });
    let input = BundleInput {
        attempt_dir,
        config_text,
        log_dir: Some(cfg.resources.log_dir.clone()),
        secrets,
        binary_version: format!("cmautobuy-client {}", env!("CARGO_PKG_VERSION")),
    };
    let s = write_bundle(&input, &out).map_err(|e| {
        Failure::new(Code::Unexpected, anyhow::anyhow!("{e}")).in_command("diagnose-bundle")
    })?;
    println!("{}: {}", out.display(), s.files.join(", "));
    if let Some(note) = s.attempt_note {
        println!("(no replay export: {note})");
    }
    println!("Token (configured and saved in the store), console password and webhook URLs removed; names, phone numbers, addresses and order numbers masked; other apps' windows dropped.");
    for u in &unread {
        println!("WARNING: the store could not be read for its saved token ({u}): check log.txt for a token before sending the bundle");
    }
    Ok(())
}
