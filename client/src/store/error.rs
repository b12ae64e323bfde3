//! The store's error type and `Result` alias, shared by every table group.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
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
}

impl StoreError {
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
