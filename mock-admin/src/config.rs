//! [`MockAdminConfig`]: how to open the mock (database, token, busy timeout).

/// How to open the mock.
#[derive(Clone)]
pub struct MockAdminConfig {
    /// SQLite file path, or `:memory:`.
    pub db_path: String,
    /// When set, every `/api/...` request needs `Authorization: Bearer <token>`.
    pub require_token: Option<String>,
    /// How long a request waits for a lock held by another process before answering 503.
    pub busy_timeout_ms: u64,
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
            .finish()
    }
}

impl Default for MockAdminConfig {
    fn default() -> Self {
        MockAdminConfig {
            db_path: ":memory:".into(),
            require_token: None,
            busy_timeout_ms: 5_000,
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
