//! The one device resolution (`run`, `doctor`, `bench-device`): which phone — the
//! `--device` flag, else the configured device, else the one `register`/`run` saved —
//! and how to reach it: through the adb server (`--adb-server`, else loopback and
//! `$ANDROID_ADB_SERVER_PORT` or 5037), or directly over TCP with the RSA key
//! (`--adb-key`, else `<data dir>/adbkey`).

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::device::{adb::default_adb_server, AdbOptions, DeviceAddress};
use crate::store::Store;

use super::error::LaunchError;

/// A resolved phone.
pub struct Target {
    /// As given (`SERIAL`, `HOST:PORT` or `tcp:HOST:PORT`).
    pub serial: String,
    pub addr: DeviceAddress,
    /// Options for opening it (the key for direct TCP).
    pub options: AdbOptions,
}

/// The adb server: `given` (`HOST:PORT`), else loopback and `$ANDROID_ADB_SERVER_PORT`
/// or 5037.
pub fn adb_server(given: Option<&str>) -> Result<std::net::SocketAddrV4, LaunchError> {
    match given {
        Some(s) => s.parse::<std::net::SocketAddrV4>().map_err(|e| {
            LaunchError::usage(format!("--adb-server {s:?}: expected IPv4 HOST:PORT ({e})"))
        }),
        None => Ok(default_adb_server(
            std::env::var("ANDROID_ADB_SERVER_PORT").ok().as_deref(),
        )),
    }
}

/// Resolves the phone: `flag`, else `cfg.device`, else `saved` (what the store holds);
/// `Ok(None)` when none is set. An address that cannot be parsed is a usage error,
/// `device SERIAL: why`.
pub fn resolve(
    cfg: &Config,
    flag: Option<&str>,
    saved: impl FnOnce() -> Option<String>,
    adb_server_flag: Option<&str>,
    adb_key: Option<&Path>,
) -> Result<Option<Target>, LaunchError> {
    let Some(serial) = flag
        .map(str::to_string)
        .or_else(|| cfg.device.clone())
        .or_else(saved)
    else {
        return Ok(None);
    };
    let server = adb_server(adb_server_flag)?;
    let addr = DeviceAddress::parse(&serial, server)
        .map_err(|e| LaunchError::usage(format!("device {serial}: {e}")))?;
    let key: PathBuf = adb_key
        .map(Path::to_path_buf)
        .unwrap_or_else(|| cfg.data_dir.join("adbkey"));
    Ok(Some(Target {
        serial,
        addr,
        options: AdbOptions::new(key),
    }))
}

/// The device `register`/`run` saved, if the store exists and can be read (never
/// creates a store).
pub fn saved_if_any(cfg: &Config) -> Option<String> {
    let path = Store::path_in(&cfg.data_dir);
    if !path.exists() {
        return None;
    }
    Store::open(&path).ok()?.settings().ok()?.device
}
