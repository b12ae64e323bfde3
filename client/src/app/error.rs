//! Why a command's work could not start or stopped, grouped by what the operator does
//! about it: fix what was given ([`LaunchError::is_usage`]), look at the store
//! ([`LaunchError::Store`]), or anything else. The binary maps each group to its exit
//! code in one place (`cli/exit.rs`).

use crate::config::{AdminUrlError, ConfigError};
use crate::lock::LockError;
use crate::registration::SaveError;
use crate::secret::TokenForOtherAdmin;
use crate::store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Another process holds the data directory or the phone (or the lock file cannot be
    /// made).
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    AdminUrl(#[from] AdminUrlError),
    #[error(transparent)]
    TokenForOtherAdmin(#[from] TokenForOtherAdmin),
    /// What was given cannot work (no Admin URL, a name too long, a device address that
    /// does not parse, a required backend that cannot work on the phone, …).
    #[error("{0}")]
    Usage(String),
    /// The local store cannot be opened or fails.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Anything else (the async runtime, …).
    #[error("{0}")]
    Other(String),
}

impl LaunchError {
    pub fn usage(message: impl std::fmt::Display) -> Self {
        LaunchError::Usage(message.to_string())
    }

    /// What was given (configuration, flags, a lock another process holds) is the
    /// problem: the operator changes it, retrying does not help.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            LaunchError::Config(_)
                | LaunchError::Lock(_)
                | LaunchError::AdminUrl(_)
                | LaunchError::TokenForOtherAdmin(_)
                | LaunchError::Usage(_)
        )
    }
}

impl From<SaveError> for LaunchError {
    fn from(e: SaveError) -> Self {
        match e {
            SaveError::AdminUrl(e) => LaunchError::AdminUrl(e),
            SaveError::Store(e) => LaunchError::Store(e),
        }
    }
}
