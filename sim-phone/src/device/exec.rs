//! What running a command produces.

use std::time::Duration;

/// Simulated time (ms) of a builtin that neither touches the app nor waits.
pub(crate) const QUICK_MS: u64 = 2;

/// Result of one command line.
#[derive(Debug, Default)]
pub struct Exec {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub code: i32,
    /// How long a real phone would have taken (slept only in the realistic profile).
    pub delay: Duration,
    /// The line started a process that keeps running after its output (uiautomator2's
    /// server, by its start id): the stream it runs on stays open until the process ends.
    pub resident: Option<u64>,
}
