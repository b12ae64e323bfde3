//! The crate's one error type.

use std::path::PathBuf;

/// Everything that can go wrong at the edges of the simulated phone: loading the catalog,
/// persisting the ledger, binding the listener. Protocol and shell trouble never becomes a
/// `SimError`: a malformed packet closes its connection, a bad command exits non-zero.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not valid JSON for this file: {source}")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("catalog is invalid: {0}")]
    InvalidCatalog(String),
    #[error("refusing to listen on {0}: the simulated phone only binds loopback addresses")]
    NotLoopback(std::net::SocketAddr),
    #[error("listener: {0}")]
    Listener(#[source] std::io::Error),
    #[error("cannot start the phone's runtime: {0}")]
    Runtime(#[source] std::io::Error),
}

impl SimError {
    /// Whether trying again (without changing anything) could help. Only I/O on the state
    /// file or the listener is worth a retry; a bad catalog or a non-loopback address is not.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            SimError::Write { .. } | SimError::Listener(_) | SimError::Runtime(_)
        )
    }
}
