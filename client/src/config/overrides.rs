//! The flags: what the user typed on the command line, as one more layer over the others.

use std::path::{Path, PathBuf};

use super::layers::Layer;

/// What the user typed on the command line: the config file's location and the keys the
/// flags set (applied over every other layer). Built by the command line, one call per
/// flag given.
#[derive(Clone, Default)]
pub struct Overrides {
    /// `--config FILE`.
    pub config: Option<PathBuf>,
    pub(super) layer: Layer,
    /// A flag whose value cannot be a config value (a path that is not UTF-8).
    pub(super) refused: Option<(String, String)>,
}

impl std::fmt::Debug for Overrides {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The layer holds a token given by flag: keys only.
        f.debug_struct("Overrides")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Overrides {
    /// `--config FILE`.
    pub fn with_config(mut self, path: Option<PathBuf>) -> Self {
        self.config = path.or(self.config);
        self
    }

    /// Flag `flag` gave `key` this text.
    pub fn text(mut self, key: &str, flag: &str, v: Option<impl Into<String>>) -> Self {
        if let Some(v) = v {
            self.layer.flag(key, flag, toml::Value::String(v.into()));
        }
        self
    }

    /// Flag `flag` gave `key` this path.
    pub fn path(mut self, key: &str, flag: &str, v: Option<&Path>) -> Self {
        match v.map(|p| p.to_str()) {
            None => {}
            Some(Some(s)) => self.layer.flag(key, flag, toml::Value::String(s.into())),
            Some(None) => self.refused = Some((key.into(), flag.into())),
        }
        self
    }

    /// Flag `flag` gave `key` this number.
    pub fn number(mut self, key: &str, flag: &str, v: Option<f64>) -> Self {
        if let Some(v) = v {
            self.layer.flag(key, flag, toml::Value::Float(v));
        }
        self
    }

    /// Flag `flag` (a switch) was given: `key` is `true`.
    pub fn switch(mut self, key: &str, flag: &str, on: bool) -> Self {
        if on {
            self.layer.flag(key, flag, toml::Value::Boolean(true));
        }
        self
    }

    /// Flag `flag`, repeated, gave `key` these values.
    pub fn list(mut self, key: &str, flag: &str, v: &[String]) -> Self {
        if !v.is_empty() {
            let items = v.iter().map(|s| toml::Value::String(s.clone())).collect();
            self.layer.flag(key, flag, toml::Value::Array(items));
        }
        self
    }
}
