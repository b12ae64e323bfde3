//! The settings that are one of a few words: `device_backend`, `purchase_mode`,
//! `log_format`. Written as text, trimmed; empty is the default.

use serde::{Deserialize, Deserializer};

/// A choice written as text (`auto`, `dry_run`, …): trimmed, empty = the default, else
/// one of `parse`'s words.
fn choice<'de, D: Deserializer<'de>, T: Default>(
    d: D,
    parse: fn(&str) -> Option<T>,
    expected: &str,
) -> Result<T, D::Error> {
    let s = String::deserialize(d)?;
    match s.trim() {
        "" => Ok(T::default()),
        t => parse(t).ok_or_else(|| serde::de::Error::custom(format!("{t:?} is not {expected}"))),
    }
}

/// `device_backend`: defined by the device layer, read from the config here.
pub use crate::device::backend::DeviceBackend;

impl<'de> Deserialize<'de> for DeviceBackend {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        choice(d, DeviceBackend::parse, "`auto`, `u2` or `uiautomator`")
    }
}

/// `purchase_mode` (contract §5): what this client may declare.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PurchaseMode {
    /// Live once proven (self-test on the current PDD version) or vouched
    /// (`allow_live`); the other live gates may still narrow it.
    #[default]
    Auto,
    /// Never live: every purchase is a dry run (`run --dry-run-only` too).
    DryRun,
}

impl PurchaseMode {
    pub fn parse(v: &str) -> Option<PurchaseMode> {
        match v {
            "auto" => Some(PurchaseMode::Auto),
            "dry_run" => Some(PurchaseMode::DryRun),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PurchaseMode::Auto => "auto",
            PurchaseMode::DryRun => "dry_run",
        }
    }
}

impl<'de> Deserialize<'de> for PurchaseMode {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        choice(d, PurchaseMode::parse, "`auto` or `dry_run`")
    }
}

/// How log lines are written.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (coloured only on a terminal).
    #[default]
    Text,
    /// One JSON object per line (timestamp, level, target, fields, spans).
    Json,
}

impl LogFormat {
    pub fn parse(s: &str) -> Option<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "text" => Some(Self::Text),
            "json" => Some(Self::Json),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for LogFormat {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        choice(d, LogFormat::parse, "`text` or `json`")
    }
}
