//! The flows' device port over the real [`crate::device::Device`] (ADB with deadlines):
//! [`DeviceFlowPort`] adapts one device, [`AdbSource`] opens the configured phone once
//! and hands the same connection to every job.

use std::sync::Arc;
use std::time::Duration;

use super::driver::{DeviceFailure, FlowDevice};
use super::source::DeviceSource;
use crate::device::{AdbDevice, AdbOptions, Device, DeviceAddress, DeviceError};
use crate::screen::Point;

/// A [`Device`] seen as a [`FlowDevice`].
pub struct DeviceFlowPort<D: Device + ?Sized> {
    pub device: Arc<D>,
}

fn failure(e: DeviceError) -> DeviceFailure {
    let dump = matches!(
        e,
        DeviceError::Dump(_) | DeviceError::DumpFileMissing { .. }
    );
    DeviceFailure {
        code: e.code().to_string(),
        message: e.to_string(),
        retryable: e.is_retryable(),
        dump,
    }
}

impl<D: Device + ?Sized> FlowDevice for DeviceFlowPort<D> {
    fn dump_ui(&mut self) -> Result<String, DeviceFailure> {
        self.device.dump_ui().map(|d| d.xml).map_err(failure)
    }

    fn tap(&mut self, at: Point) -> Result<(), DeviceFailure> {
        self.device.tap(at).map_err(failure)
    }

    fn swipe(&mut self, from: Point, to: Point, duration_ms: u32) -> Result<(), DeviceFailure> {
        self.device
            .swipe(from, to, Duration::from_millis(u64::from(duration_ms)))
            .map_err(failure)
    }

    fn back(&mut self) -> Result<(), DeviceFailure> {
        self.device.back().map_err(failure)
    }

    fn open_url(&mut self, url: &str) -> Result<(), DeviceFailure> {
        self.device.open_url(url).map_err(failure)
    }

    fn screenshot(&mut self) -> Result<Vec<u8>, DeviceFailure> {
        self.device.screenshot().map(|p| p.bytes).map_err(failure)
    }
}

/// The configured phone over ADB (through the adb server or direct TCP).
pub struct AdbSource {
    device: Arc<AdbDevice>,
    /// Reads the simulated phone's device-time counter (rehearse); `None` for phones.
    device_time: Option<Arc<dyn Fn() -> u64 + Send + Sync>>,
}

impl AdbSource {
    /// Prepares the device (no round trip yet: the first call connects).
    pub fn open(addr: DeviceAddress, opts: AdbOptions) -> Result<AdbSource, DeviceError> {
        Ok(AdbSource {
            device: Arc::new(AdbDevice::open(addr, opts)?),
            device_time: None,
        })
    }

    /// Attach a device-time probe (the simulated phone's counters).
    pub fn with_device_time(mut self, probe: Arc<dyn Fn() -> u64 + Send + Sync>) -> Self {
        self.device_time = Some(probe);
        self
    }

    pub fn device(&self) -> Arc<AdbDevice> {
        self.device.clone()
    }
}

impl DeviceSource for AdbSource {
    fn device(&self) -> Result<Box<dyn FlowDevice>, DeviceFailure> {
        Ok(Box::new(DeviceFlowPort {
            device: self.device.clone(),
        }))
    }

    fn device_time_ms(&self) -> Option<u64> {
        self.device_time.as_ref().map(|p| p())
    }
}
