//! The one exit-code mapping: every command returns `Result<(), Failure>`, and
//! [`exit_code`] prints the failure and turns it into the process's exit code. The
//! library's errors come in by what the operator does about them
//! ([`LaunchError`]: what was given → 2, the store → 3, anything else → 1).
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (`inspect`: the dump was classified, `unknown` included; `doctor`: ready; `rehearse`: every task ended as expected) |
//! | 1 | unexpected error (`inspect`: the file cannot be read; `rehearse`: a task did not end as expected, or the rehearsal failed) |
//! | 2 | usage or configuration error (`inspect`: the dump is unusable; `replay-export`: no manifest, recorded before replay support, no dump, or the output folder is not empty; `diagnose-bundle`: no such task or attempt; `rehearse` in a build without the `rehearse` feature; `rehearse` on the `u2` backend with no `adb` for its private adb server; `rehearse --device` naming a phone that does not answer; a config error — the file's line and column, the key, the known key a typo meant —, or an Admin URL that is not the Admin's base URL); `run` (and `rehearse --data-dir`/`--device`) refused at start because another process holds the data directory's or the phone's lock: one line names it and the holder's pid (see `cmautobuy_client::lock`) |
//! | 3 | the local store cannot be opened (e.g. the schema self-check failed) or fails; it is missing or empty in a data directory an earlier client used (`STORE_MISSING`), or damaged (`STORE_DAMAGED`: `run` checks it before its first claim) — the message points at `backups/` |
//! | 4 | the Admin could not be reached or refused (`register`) |
//! | 5 | `run --exit-when-idle` stopped because claiming is blocked by an operator alert (a `protocol_error` included: a claim answered `200` that could not be read or was cut off — the Admin may have assigned a task) |
//! | 6 | `doctor`: a check failed (no phone configured included) |
//! | 130 | `run`: a second Ctrl-C / SIGTERM during the drain, taken at a safe point for money (a first signal drains and exits 0) |

use std::process::ExitCode;

use cmautobuy_client::app::error::LaunchError;
use cmautobuy_client::config::ConfigError;
use cmautobuy_client::store::StoreError;

/// Why a command failed: decides the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// 1
    Unexpected = 1,
    /// 2
    Usage = 2,
    /// 3
    Store = 3,
    /// 4
    Admin = 4,
    /// 5
    Blocked = 5,
    /// 6
    NotReady = 6,
    /// 130: `run` stopped by a second Ctrl-C / SIGTERM (at a safe point for money).
    Interrupted = 130,
}

/// A command's failure: its [`Code`] and what to print (nothing when the command's own
/// output already said it).
pub struct Failure {
    code: Code,
    /// Printed as `cmautobuy-client <command>: …` instead of `cmautobuy-client: …`.
    command: Option<&'static str>,
    error: Option<anyhow::Error>,
}

impl Failure {
    pub fn new(code: Code, error: impl Into<anyhow::Error>) -> Self {
        Failure {
            code,
            command: None,
            error: Some(error.into()),
        }
    }

    /// A usage or configuration error (2).
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Failure::new(Code::Usage, error)
    }

    /// A failure the command's output has already explained.
    pub fn silent(code: Code) -> Self {
        Failure {
            code,
            command: None,
            error: None,
        }
    }

    /// The same failure, its message (if any) printed now prefixed with `prefix`, and
    /// silent from here on (several phones: each phone's failure is printed as it
    /// happens, the command exits with the first one's code).
    pub fn print_with(self, prefix: &str) -> Self {
        if let Some(e) = &self.error {
            eprintln!(
                "{prefix}{}",
                cmautobuy_client::secret::scrub(&format!("{e:#}"))
            );
        }
        Failure::silent(self.code)
    }

    /// Names the command in the printed message.
    pub fn in_command(mut self, command: &'static str) -> Self {
        self.command = Some(command);
        self
    }
}

impl From<ConfigError> for Failure {
    fn from(e: ConfigError) -> Self {
        Failure::usage(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::new(Code::Store, e)
    }
}

impl From<LaunchError> for Failure {
    fn from(e: LaunchError) -> Self {
        let code = if e.is_usage() {
            Code::Usage
        } else if matches!(e, LaunchError::Store(_)) {
            Code::Store
        } else {
            Code::Unexpected
        };
        Failure::new(code, e)
    }
}

impl From<anyhow::Error> for Failure {
    fn from(e: anyhow::Error) -> Self {
        Failure::new(Code::Unexpected, e)
    }
}

/// The exit code of a command's outcome; a failure's message goes to stderr first.
pub fn exit_code(outcome: Result<(), Failure>) -> ExitCode {
    let f = match outcome {
        Ok(()) => return ExitCode::SUCCESS,
        Err(f) => f,
    };
    if let Some(e) = &f.error {
        // Scrubbed like every log line: the message may quote what an Admin sent.
        let text = format!("{e:#}");
        let text = cmautobuy_client::secret::scrub(&text);
        match f.command {
            Some(c) => eprintln!("cmautobuy-client {c}: {text}"),
            None => eprintln!("cmautobuy-client: {text}"),
        }
    }
    ExitCode::from(f.code as u8)
}
