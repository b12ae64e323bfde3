//! Where a client keeps its files when no `--data-dir` is given: the platform's
//! conventions ([`platform_dirs`]), never the current directory.

use std::path::PathBuf;

use super::error::ConfigError;

/// The operating systems whose directory conventions [`platform_dirs`] knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Os {
    /// Linux and the other Unixes: the XDG base directories.
    Unix,
    MacOs,
    Windows,
}

impl Os {
    /// The OS this binary was built for.
    pub fn current() -> Os {
        if cfg!(windows) {
            Os::Windows
        } else if cfg!(target_os = "macos") {
            Os::MacOs
        } else {
            Os::Unix
        }
    }
}

/// Where a client keeps its files when no `--data-dir` is given, by
/// platform convention (the layout of the `directories` crate's `ProjectDirs`, computed
/// from the environment so that it is testable on any host):
///
/// | | data | config file | logs |
/// |---|---|---|---|
/// | Linux | `$XDG_DATA_HOME/cmautobuy` (`~/.local/share/cmautobuy`) | `$XDG_CONFIG_HOME/cmautobuy/config.toml` (`~/.config/…`) | `$XDG_STATE_HOME/cmautobuy/logs` (`~/.local/state/…`) |
/// | macOS | `~/Library/Application Support/cmautobuy` | `~/Library/Application Support/cmautobuy/config.toml` | `~/Library/Logs/cmautobuy` |
/// | Windows | `%APPDATA%\cmautobuy\data` | `%APPDATA%\cmautobuy\config\config.toml` | `%LOCALAPPDATA%\cmautobuy\logs` |
///
/// `None` when the environment names no home: the client then refuses to guess (never
/// the current directory) and asks for `--data-dir`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformDirs {
    pub data: PathBuf,
    pub config: PathBuf,
    pub logs: PathBuf,
}

const APP: &str = "cmautobuy";

pub fn platform_dirs(os: Os, env: &dyn Fn(&str) -> Option<String>) -> Option<PlatformDirs> {
    let var = |k: &str| {
        env(k)
            .filter(|s| !s.is_empty())
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    match os {
        Os::Unix => {
            let home = var("HOME");
            let xdg = |k: &str, rel: &str| var(k).or_else(|| home.as_ref().map(|h| h.join(rel)));
            Some(PlatformDirs {
                data: xdg("XDG_DATA_HOME", ".local/share")?.join(APP),
                config: xdg("XDG_CONFIG_HOME", ".config")?.join(APP),
                logs: xdg("XDG_STATE_HOME", ".local/state")?
                    .join(APP)
                    .join("logs"),
            })
        }
        Os::MacOs => {
            let home = var("HOME")?;
            let support = home.join("Library/Application Support").join(APP);
            Some(PlatformDirs {
                data: support.clone(),
                config: support,
                logs: home.join("Library/Logs").join(APP),
            })
        }
        Os::Windows => {
            // Not `is_absolute` on a Linux host for `C:\…`: accept any non-empty value.
            let get = |k: &str| env(k).filter(|s| !s.is_empty()).map(PathBuf::from);
            let roaming = get("APPDATA")?.join(APP);
            let local = get("LOCALAPPDATA")
                .map(|p| p.join(APP))
                .unwrap_or_else(|| roaming.clone());
            Some(PlatformDirs {
                data: roaming.join("data"),
                config: roaming.join("config"),
                logs: local.join("logs"),
            })
        }
    }
}

/// The default data directory of this platform ([`platform_dirs`]); an error naming
/// `--data-dir` when the environment has no home (never the current directory).
pub fn default_data_dir(env: &dyn Fn(&str) -> Option<String>) -> Result<PathBuf, ConfigError> {
    platform_dirs(Os::current(), env)
        .map(|d| d.data)
        .ok_or_else(no_home)
}

pub(super) fn no_home() -> ConfigError {
    ConfigError::Value {
        name: "data_dir".into(),
        origin: None,
        message: "no home directory in the environment (HOME, XDG_DATA_HOME or APPDATA) to put \
                  the data directory in, and the current directory is never used: give \
                  --data-dir DIR or CMAUTOBUY_DATA_DIR"
            .into(),
    }
}
