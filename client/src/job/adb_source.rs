//! [`AdbSource`]: the configured phone over ADB (with deadlines), opened once and handed
//! to every job as the same connection — through uiautomator2's server for dumps and
//! input when the `u2` backend is chosen ([`crate::device::u2`]).

use std::path::Path;
use std::sync::Arc;

use super::source::DeviceSource;
use crate::device::backend::DeviceBackend;
use crate::device::state::Thresholds;
use crate::device::u2::U2Device;
use crate::device::{AdbDevice, AdbOptions, Device, DeviceAddress, DeviceError};

/// The configured phone over ADB (through the adb server or direct TCP).
pub struct AdbSource {
    device: Arc<AdbDevice>,
    /// The `u2` backend over `device`, when chosen and available.
    u2: Option<Arc<U2Device>>,
    /// Reads the simulated phone's device-time counter (rehearse); `None` for phones.
    device_time: Option<Arc<dyn Fn() -> u64 + Send + Sync>>,
    thresholds: Thresholds,
}

impl AdbSource {
    /// Prepares the device (no round trip yet: the first call connects).
    pub fn open(addr: DeviceAddress, opts: AdbOptions) -> Result<AdbSource, DeviceError> {
        Ok(AdbSource {
            device: Arc::new(AdbDevice::open(addr, opts)?),
            u2: None,
            device_time: None,
            thresholds: Thresholds::default(),
        })
    }

    /// Choose the backend (config `device_backend`, `u2_jar`): `uiautomator` as
    /// before; `auto` the uiautomator2 server when its jar is found and the phone is
    /// reached through an adb server (else uiautomator, logged); `u2` the server,
    /// required (a jar or start failure is a device error). No round trip here: the
    /// server starts at the first dump or input.
    pub fn with_backend(mut self, backend: DeviceBackend, u2_jar: Option<&Path>) -> Self {
        // One decision for every command: `device::backend::choose` (doctor and
        // bench-device make theirs there too).
        let chosen = crate::device::backend::choose(&self.device, backend, u2_jar);
        if backend == DeviceBackend::Auto {
            if let Some(why) = &chosen.why_not_u2 {
                tracing::info!(reason = %why, "device backend auto: uiautomator");
            }
        }
        self.u2 = chosen.u2;
        self
    }

    /// Attach a device-time probe (the simulated phone's counters).
    pub fn with_device_time(mut self, probe: Arc<dyn Fn() -> u64 + Send + Sync>) -> Self {
        self.device_time = Some(probe);
        self
    }

    /// The device check's battery thresholds.
    pub fn with_thresholds(mut self, t: Thresholds) -> Self {
        self.thresholds = t;
        self
    }

    pub fn device(&self) -> Arc<AdbDevice> {
        self.device.clone()
    }

    /// The `u2` device, when that backend was chosen and is available.
    pub fn u2_device(&self) -> Option<Arc<U2Device>> {
        self.u2.clone()
    }

    /// The backend jobs use now: `"u2"` or `"uiautomator"` (also after a fallback).
    pub fn backend(&self) -> &'static str {
        self.u2.as_ref().map_or("uiautomator", |d| d.backend_name())
    }
}

impl DeviceSource for AdbSource {
    fn device(&self) -> Result<Arc<dyn Device>, DeviceError> {
        Ok(match &self.u2 {
            Some(u2) => u2.clone(),
            None => self.device.clone(),
        })
    }

    fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    fn begin_job(&self) {
        if let Some(u2) = &self.u2 {
            u2.begin_job();
        }
    }

    fn device_time_ms(&self) -> Option<u64> {
        self.device_time.as_ref().map(|p| p())
    }
}
