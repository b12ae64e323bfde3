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
    /// Simulated device time so far, ms, when the device can tell (the simulated phone).
    fn device_time_ms(&self) -> Option<u64> {
        None
    }
}
