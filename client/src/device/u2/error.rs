//! [`U2Error`]: why the `u2` backend failed, with stable codes.

use thiserror::Error;

/// Why the adb server could not reach the phone for a u2 call (the phone's trouble, not
/// the uiautomator2 server's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// `offline`, `connecting`, `authorizing`, or no connection within the deadline.
    Offline,
    /// The adb server does not know the serial (unplugged, not `adb connect`ed).
    NotFound,
    /// The phone has not accepted this computer's key.
    Unauthorized,
    /// The adb server itself is not there.
    AdbServer,
}

/// Why the `u2` backend failed. Stable codes ([`U2Error::code`]); never a dump, a stack
/// trace or a token in the text.
#[derive(Debug, Clone, Error)]
pub enum U2Error {
    /// No `u2.jar` on this computer (or the configured one is not a file).
    #[error("u2.jar not found: {0}")]
    JarNotFound(String),
    /// The backend cannot be used on this device (direct TCP, no adb server).
    #[error("uiautomator2 server unavailable: {0}")]
    Unavailable(String),
    /// The phone cannot be reached through the adb server (`host:transport` refused:
    /// offline, not found, unauthorized; or the adb server is not there). Not a server
    /// death: no restart is spent and no fallback taken; [`crate::device::u2::U2Device`]
    /// answers the matching device error (`DEVICE_OFFLINE`, …) so the flows treat it as
    /// the phone going away, as on the uiautomator backend.
    #[error("the phone is not reachable through the adb server: {detail}")]
    Unreachable { reach: Reach, detail: String },
    /// The server did not start (push failed, it quit, "already registered", no
    /// `pong` in time).
    #[error("uiautomator2 server did not start: {0}")]
    StartFailed(String),
    /// The server is gone: its stream ended, `tcp:PORT` refused, the connection cut
    /// before any answer.
    #[error("uiautomator2 server gone: {0}")]
    ServerGone(String),
    /// The answer was cut short (the call may have run).
    #[error("uiautomator2 answer truncated: {0}")]
    Truncated(String),
    /// Not HTTP/1.x, a status other than 200, not JSON, not a JSON-RPC answer.
    #[error("uiautomator2 answer malformed: {0}")]
    BadAnswer(String),
    /// A JSON-RPC error object (`code`, the exception class as `message`).
    #[error("uiautomator2 JSON-RPC error {code}: {message}")]
    Rpc {
        code: i64,
        message: String,
        /// "UiAutomation not connected", DeadObjectException, …: restart the server.
        broken: bool,
        /// A SecurityException about INJECT_EVENTS: the phone refuses injected input.
        input_denied: bool,
    },
}

impl U2Error {
    /// A stable SCREAMING_SNAKE code.
    pub fn code(&self) -> &'static str {
        match self {
            U2Error::JarNotFound(_) => "U2_JAR_NOT_FOUND",
            U2Error::Unavailable(_) => "U2_UNAVAILABLE",
            U2Error::Unreachable { .. } => "U2_PHONE_UNREACHABLE",
            U2Error::StartFailed(_) => "U2_START_FAILED",
            U2Error::ServerGone(_) => "U2_SERVER_GONE",
            U2Error::Truncated(_) => "U2_ANSWER_TRUNCATED",
            U2Error::BadAnswer(_) => "U2_BAD_ANSWER",
            U2Error::Rpc { .. } => "U2_RPC_ERROR",
        }
    }

    /// Whether trying again (a restarted server, a fresh connection) can help.
    pub fn is_retryable(&self) -> bool {
        !matches!(self, U2Error::JarNotFound(_) | U2Error::Unavailable(_))
    }

    /// The phone (not the server) is out of reach: [`Reach`], else `None`.
    pub fn unreachable(&self) -> Option<Reach> {
        match self {
            U2Error::Unreachable { reach, .. } => Some(*reach),
            _ => None,
        }
    }

    /// The server is broken by its own answer: uiautomator2 restarts it.
    pub fn server_broken(&self) -> bool {
        matches!(self, U2Error::Rpc { broken: true, .. })
    }
}
