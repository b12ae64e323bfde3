//! Configuration, layered: defaults → TOML file → `CMAUTOBUY_*` environment → flags.
//!
//! Every setting is written once, as a field of a section in [`settings`] (its key, its
//! documentation, its default). The layers ([`layers`]) know no setting by name: the
//! file is read into a flat map, the environment is read for every key the sections
//! have (`CMAUTOBUY_` + the key in upper case), the flags set keys through
//! [`Overrides`]; later layers win key by key, and each section is deserialized from the
//! merged map. [`load`] then gives the values their meaning ([`Config`]: durations,
//! bounds, `0 = off`), with every refusal naming the key and where its value came from —
//! `FILE:LINE:COLUMN`, the environment variable or the flag.
//!
//! The file stays flat (`poll_interval_secs = 3`): its keys, the environment variables
//! and the flags are public names other tools and operators use; the sections are how
//! the code groups them, not a second spelling of them.
//!
//! The config file is `--config FILE`, else `$CMAUTOBUY_CONFIG`, else
//! `<data dir>/config.toml` when it exists (with the platform's data directory, also the
//! platform's config directory's). Values that are also settings (admin URL, token,
//! device, name) are saved to the store by the commands that use them, so a later run
//! without flags keeps them.

pub mod admin_url;
mod choices;
mod error;
pub mod layers;
mod load;
mod overrides;
pub mod platform;
mod resolved;
pub mod settings;

pub use admin_url::{check as check_admin_url, AdminUrlError};
pub use choices::{DeviceBackend, LogFormat, PurchaseMode};
pub use error::{ConfigError, Origin};
pub use load::{load, load_with, Sources};
pub use overrides::Overrides;
pub use platform::{default_data_dir, platform_dirs, Os, PlatformDirs};
pub use resolved::{Config, Resources};

#[cfg(test)]
mod tests;
