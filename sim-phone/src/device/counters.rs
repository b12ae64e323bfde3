//! What the phone counted so far (connections, commands, dumps, taps, device time ...).

use serde::Serialize;

/// What the phone counted so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub connections: u64,
    pub streams: u64,
    pub shell_commands: u64,
    pub dumps: u64,
    pub dump_failures: u64,
    pub taps: u64,
    pub swipes: u64,
    pub keyevents: u64,
    /// `input …` commands refused (`input_injection_denied`).
    pub inputs_refused: u64,
    pub screencaps: u64,
    pub am_starts: u64,
    pub sync_sessions: u64,
    pub malformed_packets: u64,
    /// uiautomator2 server processes started (`app_process … com.wetest.uia2.Main`).
    pub u2_starts: u64,
    /// JSON-RPC calls the server answered or was asked (`POST /jsonrpc/0`).
    pub u2_requests: u64,
    /// `dumpWindowHierarchy` calls (not in `dumps`, which counts `uiautomator dump`).
    pub u2_dumps: u64,
    /// Simulated device time spent on commands, ms (accounted in both profiles).
    pub device_time_ms: u64,
}
