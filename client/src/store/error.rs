//! The store's error type and `Result` alias, shared by every table group.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {e}{hint}", e = .0, hint = damaged_hint(.0))]
    Sqlite(#[from] rusqlite::Error),
    #[error("cannot create the data directory {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the database schema is incomplete ({0}); refusing to start")]
    Schema(String),
    #[error(
        "the database was written by a newer client (schema {found}, this client knows {known})"
    )]
    NewerSchema { found: i64, known: i64 },
    #[error("{0} not found")]
    NotFound(String),
    #[error("conflict: {0}")]
    Conflict(String),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The store file is missing or empty in a data directory an earlier client used
    /// (backups, logs, a lock file, artifacts…): a new identity there would silently
    /// replace the old one — its client id, outbox, marks and live caps.
    #[error("[{code}] 数据库缺失或为空，但数据目录中有旧客户端留下的文件，拒绝新建身份 / the store {path} is {state}, but {dir} holds what an earlier client left ({evidence}): refusing to start a new client identity over it (its client id, outbox and order marks would be lost). {restore} If this is a new installation, give an empty directory (--data-dir) instead.", code = Self::MISSING, path = .path.display(), state = if *.empty { "empty (0 bytes)" } else { "missing" }, dir = .dir.display(), evidence = .evidence.join(", "), restore = .restore)]
    Missing {
        path: PathBuf,
        dir: PathBuf,
        /// The store file exists with 0 bytes (else it is absent).
        empty: bool,
        /// What is there: `backups/`, `logs/`, `client.lock`, …
        evidence: Vec<String>,
        /// How to restore it from `backups/` (`backup::restore_hint`).
        restore: String,
    },
    /// SQLite's own check (`PRAGMA quick_check`) found the file damaged.
    #[error("[{code}] 数据库已损坏 / the store {path} is damaged ({detail}). {restore}", code = Self::DAMAGED, path = .path.display())]
    Damaged {
        path: PathBuf,
        detail: String,
        /// How to restore it from `backups/` (`backup::restore_hint`).
        restore: String,
    },
}

/// The pointer to `backups/` added to SQLite's own "malformed" / "not a database"
/// errors (no path here: the store's folder is where `status` and `doctor` point).
fn damaged_hint(e: &rusqlite::Error) -> String {
    if is_damage(e) {
        format!(
            " [{}] — the store is damaged: stop the client and restore the newest copy from the backups/ folder of its data directory (guide §7.3)",
            StoreError::DAMAGED
        )
    } else {
        String::new()
    }
}

/// Whether SQLite says the file is damaged (not merely busy or full).
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e,
        rusqlite::Error::SqliteFailure(f, _)
            if matches!(f.code, rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

impl StoreError {
    /// The code of [`StoreError::Missing`].
    pub const MISSING: &'static str = "STORE_MISSING";
    /// The code of [`StoreError::Damaged`] (and of SQLite's own damage errors).
    pub const DAMAGED: &'static str = "STORE_DAMAGED";

    /// The stable code of this error.
    pub fn code(&self) -> &'static str {
        match self {
            StoreError::Sqlite(e) if is_damage(e) => Self::DAMAGED,
            StoreError::Sqlite(_) if self.is_retryable() => "STORE_BUSY",
            StoreError::Sqlite(_) => "STORE_SQLITE",
            StoreError::Io { .. } => "STORE_IO",
            StoreError::Schema(_) => "STORE_SCHEMA",
            StoreError::NewerSchema { .. } => "STORE_NEWER_SCHEMA",
            StoreError::NotFound(_) => "STORE_NOT_FOUND",
            StoreError::Conflict(_) => "STORE_CONFLICT",
            StoreError::Corrupt(_) => "STORE_CORRUPT_VALUE",
            StoreError::Missing { .. } => Self::MISSING,
            StoreError::Damaged { .. } => Self::DAMAGED,
        }
    }

    /// Whether trying again later may help (another writer held the lock).
    pub fn is_retryable(&self) -> bool {
        match self {
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => matches!(
                e.code,
                rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
            ),
            _ => false,
        }
    }
}

pub type Result<T> = std::result::Result<T, StoreError>;
