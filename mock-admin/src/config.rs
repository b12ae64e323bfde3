//! [`MockAdminConfig`]: how to open the mock (database, token, busy timeout).

/// [`MockAdminConfig::request_read_timeout_ms`] by default: 30 s.
pub const DEFAULT_REQUEST_READ_TIMEOUT_MS: u64 = 30_000;

/// How to open the mock.
#[derive(Clone)]
pub struct MockAdminConfig {
    /// SQLite file path, or `:memory:`.
    pub db_path: String,
    /// When set, every `/api/...` request needs `Authorization: Bearer <token>`.
    pub require_token: Option<String>,
    /// How long a request waits for a lock held by another process before answering 503.
    pub busy_timeout_ms: u64,
    /// How long a client may take to send a whole request — its headers, then its body —
    /// before the connection is cut (a half-sent request holds a connection task and,
    /// without a bound, holds it forever). Over a socket only: in-process calls have no
    /// connection.
    pub request_read_timeout_ms: u64,
}

impl std::fmt::Debug for MockAdminConfig {
    // The token is a secret: never print it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MockAdminConfig")
            .field("db_path", &self.db_path)
            .field(
                "require_token",
                &self.require_token.as_ref().map(|_| "<redacted>"),
            )
            .field("busy_timeout_ms", &self.busy_timeout_ms)
            .field("request_read_timeout_ms", &self.request_read_timeout_ms)
            .finish()
    }
}

impl Default for MockAdminConfig {
    fn default() -> Self {
        MockAdminConfig {
            db_path: ":memory:".into(),
            require_token: None,
            busy_timeout_ms: 5_000,
            request_read_timeout_ms: DEFAULT_REQUEST_READ_TIMEOUT_MS,
        }
    }
}

impl MockAdminConfig {
    pub fn in_memory() -> Self {
        Self::default()
    }

    pub fn file(path: impl Into<String>) -> Self {
        MockAdminConfig {
            db_path: path.into(),
            ..Self::default()
        }
    }
}
