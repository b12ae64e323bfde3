//! [`AdbSource`]: the configured phone over ADB (with deadlines), opened once and handed
//! to every job as the same connection.

use std::sync::Arc;

use super::source::DeviceSource;
use crate::device::state::Thresholds;
use crate::device::{AdbDevice, AdbOptions, Device, DeviceAddress, DeviceError};

/// The configured phone over ADB (through the adb server or direct TCP).
pub struct AdbSource {
    device: Arc<AdbDevice>,
    /// Reads the simulated phone's device-time counter (rehearse); `None` for phones.
    device_time: Option<Arc<dyn Fn() -> u64 + Send + Sync>>,
    thresholds: Thresholds,
}

impl AdbSource {
    /// Prepares the device (no round trip yet: the first call connects).
    pub fn open(addr: DeviceAddress, opts: AdbOptions) -> Result<AdbSource, DeviceError> {
        Ok(AdbSource {
            device: Arc::new(AdbDevice::open(addr, opts)?),
            device_time: None,
            thresholds: Thresholds::default(),
        })
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
}

impl DeviceSource for AdbSource {
    fn device(&self) -> Result<Arc<dyn Device>, DeviceError> {
        Ok(self.device.clone())
    }

    fn thresholds(&self) -> Thresholds {
        self.thresholds
    }

    fn device_time_ms(&self) -> Option<u64> {
        self.device_time.as_ref().map(|p| p())
    }
}
