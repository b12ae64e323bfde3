//! What a configuration error says: the key, and where its value came from ([`Origin`]:
//! the file's line and column, the environment variable, the flag).

use std::fmt;
use std::path::PathBuf;

/// Where a value came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The config file, at this line and column (1-based).
    File {
        path: PathBuf,
        line: usize,
        column: usize,
    },
    /// This environment variable.
    Env(String),
    /// This command-line flag.
    Flag(String),
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { path, line, column } => {
                write!(f, "{}:{line}:{column}", path.display())
            }
            Origin::Env(v) => f.write_str(v),
            Origin::Flag(flag) => f.write_str(flag),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read the config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not TOML, or a value in it has the wrong type: where, and what.
    #[error("invalid config file {path}:{line}:{column}: {message}", path = .path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A key no section has (a typo, a key of another version): where, and the known key
    /// it most likely means.
    #[error("unknown config key `{key}` ({origin}){}", .suggestion.as_ref().map(|s| format!(" — did you mean `{s}`?")).unwrap_or_default())]
    UnknownKey {
        key: String,
        origin: Origin,
        suggestion: Option<String>,
    },
    /// A value that is not what its key means.
    #[error("invalid value for {name}{}: {message}", .origin.as_ref().map(|o| format!(" ({o})")).unwrap_or_default())]
    Value {
        name: String,
        /// Where the value came from (`None`: from no layer, e.g. a missing home).
        origin: Option<Origin>,
        message: String,
    },
}

impl ConfigError {
    pub fn is_retryable(&self) -> bool {
        false
    }
}
