//! [`DeviceSource`]: where the executor gets a phone from for each job.

use std::sync::Arc;

use crate::device::{Device, DeviceError};

/// Where the executor gets a phone from.
pub trait DeviceSource: Send + Sync + 'static {
    /// A device for one job (a fresh or a reused connection).
    fn device(&self) -> Result<Arc<dyn Device>, DeviceError>;
    /// Whether a device is configured (cheap; no round trip).
    fn configured(&self) -> bool {
        true
    }
    /// The claim loop's device check ([`crate::device::doctor::probe`] on
    /// [`DeviceSource::device`]); blocking, bounded by the device's deadlines.
    fn check(&self) -> Result<(), crate::device::doctor::Problem> {
        match self.device() {
            Ok(d) => crate::device::doctor::probe(&*d),
            Err(e) => Err(crate::device::doctor::Problem {
                code: e.code().into(),
                message: e.to_string(),
            }),
        }
    }
    /// Simulated device time so far, ms, when the device can tell (the simulated phone).
    fn device_time_ms(&self) -> Option<u64> {
        None
    }
}
