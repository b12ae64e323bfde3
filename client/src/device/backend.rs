//! Which device backend a phone gets and how fast it answers: the probe
//! `doctor` runs (one timed dump through the backend `run` would use) and the backend
//! choice `bench-device` makes per backend. The choice mirrors
//! [`crate::job::adb_source::AdbSource::with_backend`]: `uiautomator` as chosen; `auto` the
//! uiautomator2 server when its jar is found and the phone is reached through an adb
//! server, else uiautomator (with the reason); `u2` the server, required.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use super::adb::{AdbDevice, DeviceAddress};
use super::port::Device;
use super::u2::{self, U2Device, U2Options, U2Timing};

/// How the client reads the screen and sends input (the `device_backend` setting).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceBackend {
    /// uiautomator2's server when its jar is found and the server starts, else
    /// uiautomator.
    #[default]
    Auto,
    /// uiautomator2's server, required: a server that does not start is a device error.
    U2,
    /// `uiautomator dump` and `input` per call.
    Uiautomator,
}

impl DeviceBackend {
    pub fn parse(v: &str) -> Option<DeviceBackend> {
        match v {
            "auto" => Some(DeviceBackend::Auto),
            "u2" => Some(DeviceBackend::U2),
            "uiautomator" => Some(DeviceBackend::Uiautomator),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DeviceBackend::Auto => "auto",
            DeviceBackend::U2 => "u2",
            DeviceBackend::Uiautomator => "uiautomator",
        }
    }
}

/// The device a backend choice came to.
pub struct Chosen {
    /// Dumps and input go here.
    pub device: Arc<dyn Device>,
    /// The u2 device, when the server is to be used (stop it when done).
    pub u2: Option<Arc<U2Device>>,
    /// The jar the server is started from.
    pub jar: Option<PathBuf>,
    /// Why the server is not used (auto without a jar, direct TCP, `uiautomator`).
    pub why_not_u2: Option<String>,
}

/// The device for `backend` over `adb` (no round trip: the server starts at the first
/// dump or input).
pub fn choose(adb: &Arc<AdbDevice>, backend: DeviceBackend, u2_jar: Option<&Path>) -> Chosen {
    let plain = |why: String| Chosen {
        device: adb.clone(),
        u2: None,
        jar: None,
        why_not_u2: Some(why),
    };
    if backend == DeviceBackend::Uiautomator {
        return plain("device_backend = \"uiautomator\"".into());
    }
    let direct = matches!(adb.address(), DeviceAddress::Tcp(_));
    if backend == DeviceBackend::Auto && direct {
        return plain(
            "a direct TCP device (tcp:HOST:PORT) has no tcp:PORT streams; reach the phone \
             through the adb server for u2"
                .into(),
        );
    }
    let exe = std::env::current_exe().ok();
    let jar = u2::jar::find(u2_jar, exe.as_deref());
    if backend == DeviceBackend::Auto {
        if let Err(e) = &jar {
            return plain(e.to_string());
        }
    }
    let u2 = Arc::new(U2Device::new(
        adb.clone(),
        U2Options {
            required: backend == DeviceBackend::U2,
            jar: jar.clone(),
            port: u2::DEFAULT_PORT,
            timing: U2Timing::default(),
        },
    ));
    Chosen {
        device: u2.clone(),
        u2: Some(u2),
        jar: jar.ok(),
        why_not_u2: None,
    }
}

/// `device_backend = "u2"` (required) on `addr` is refused before anything starts,
/// with the reason an operator can act on: a direct TCP device (`tcp:HOST:PORT`) has
/// no `tcp:PORT` streams for the server, and without a `u2.jar` there is no server to
/// start (`U2_UNAVAILABLE`, `U2_JAR_NOT_FOUND`). `auto` and `uiautomator` are never
/// refused (auto falls back and says why).
pub fn check_required(
    addr: &DeviceAddress,
    backend: DeviceBackend,
    u2_jar: Option<&Path>,
) -> Result<(), u2::error::U2Error> {
    if backend != DeviceBackend::U2 {
        return Ok(());
    }
    if matches!(addr, DeviceAddress::Tcp(_)) {
        return Err(u2::error::U2Error::Unavailable(format!(
            "device_backend = \"u2\" needs the phone reached through the adb server; {} is \
             direct TCP (no tcp:PORT streams): name it by its serial (adb connect HOST:PORT) \
             or set device_backend = \"auto\"",
            addr.label()
        )));
    }
    let exe = std::env::current_exe().ok();
    u2::jar::find(u2_jar, exe.as_deref()).map(drop)
}

/// The jar's version as its wheel ships it: `version.json` beside the jar (the Python
/// package's `assets/`, `.tools/uiautomator2/`, the release folder), key `"u2.jar"`.
pub fn jar_version(jar: &Path) -> Option<String> {
    let text = std::fs::read_to_string(jar.parent()?.join("version.json")).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    v.get("u2.jar")?.as_str().map(str::to_string)
}

/// What `doctor` found about the backend.
#[derive(Clone, Debug, Serialize)]
pub struct BackendProbe {
    /// As configured: `auto`, `u2` or `uiautomator`.
    pub configured: String,
    /// What dumps went through: `u2` or `uiautomator`.
    pub backend: String,
    /// The server's jar version (`version.json` beside the jar), with u2.
    pub server_version: Option<String>,
    pub jar: Option<String>,
    /// The first dump through the server, its start-up included.
    pub start_ms: Option<u64>,
    /// One timed dump (after the server is up, with u2).
    pub dump_ms: Option<u64>,
    /// Why uiautomator is used (not chosen, no jar, direct TCP, the server failed).
    pub u2_unavailable: Option<String>,
    /// The timed dump failed: how (its stable code and message).
    pub error: Option<String>,
}

/// One timed dump through the backend `run` would use (two with u2: the first starts
/// the server); our server is stopped afterwards (a later `uiautomator dump` would be
/// killed while it runs).
pub fn probe(adb: &Arc<AdbDevice>, backend: DeviceBackend, u2_jar: Option<&Path>) -> BackendProbe {
    let chosen = choose(adb, backend, u2_jar);
    let mut p = BackendProbe {
        configured: backend.as_str().into(),
        backend: "uiautomator".into(),
        server_version: None,
        jar: chosen.jar.as_ref().map(|j| j.display().to_string()),
        start_ms: None,
        dump_ms: None,
        u2_unavailable: chosen.why_not_u2.clone(),
        error: None,
    };
    let timed = |d: &dyn Device| {
        let t = Instant::now();
        let r = d.dump_ui();
        (r, t.elapsed().as_millis() as u64)
    };
    match &chosen.u2 {
        None => match timed(&*chosen.device) {
            (Ok(_), ms) => p.dump_ms = Some(ms),
            (Err(e), _) => p.error = Some(format!("{}: {e}", e.code())),
        },
        Some(u2) => {
            let (first, start_ms) = timed(&**u2);
            match first {
                Err(e) => p.error = Some(format!("{}: {e}", e.code())),
                Ok(_) if u2.backend_name() == "u2" => {
                    p.backend = "u2".into();
                    p.start_ms = Some(start_ms);
                    p.server_version = chosen.jar.as_deref().and_then(jar_version);
                    match timed(&**u2) {
                        (Ok(_), ms) if u2.backend_name() == "u2" => p.dump_ms = Some(ms),
                        (Ok(_), ms) => {
                            p.backend = "uiautomator".into();
                            p.dump_ms = Some(ms);
                        }
                        (Err(e), _) => p.error = Some(format!("{}: {e}", e.code())),
                    }
                }
                // The server did not start (auto): the dump went through uiautomator.
                Ok(_) => p.dump_ms = Some(start_ms),
            }
            if p.backend == "uiautomator" && p.u2_unavailable.is_none() {
                p.u2_unavailable = Some(
                    u2.fallback_reason()
                        .unwrap_or_else(|| "the server failed".into()),
                );
            }
            u2.stop_server();
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jar_version_is_read_beside_the_jar() {
        let dir = tempfile::tempdir().unwrap();
        let jar = dir.path().join("u2.jar");
        std::fs::write(&jar, b"jar").unwrap();
        assert_eq!(jar_version(&jar), None);
        std::fs::write(
            dir.path().join("version.json"),
            r#"{"com.github.uiautomator": "2.4.0", "u2.jar": "0.4.1"}"#,
        )
        .unwrap();
        assert_eq!(jar_version(&jar).as_deref(), Some("0.4.1"));
        std::fs::write(dir.path().join("version.json"), "not json").unwrap();
        assert_eq!(jar_version(&jar), None);
    }
}
