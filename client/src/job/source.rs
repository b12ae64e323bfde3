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
    /// The device check's battery thresholds (config `battery_min_percent`,
    /// `battery_max_temp_c`).
    fn thresholds(&self) -> crate::device::state::Thresholds {
        crate::device::state::Thresholds::default()
    }
    /// The claim loop's device check ([`crate::device::doctor::probe_with`] on
    /// [`DeviceSource::device`]: one round trip, which also reads the PDD version);
    /// blocking, bounded by the device's deadlines.
    fn check(&self) -> Result<crate::device::state::DeviceState, crate::device::doctor::Problem> {
        match self.device() {
            Ok(d) => crate::device::doctor::probe_with(&*d, self.thresholds()),
            Err(e) => Err(crate::device::doctor::Problem {
                code: e.code().into(),
                message: e.to_string(),
            }),
        }
    }
    /// A job begins on the device (the `u2` backend re-arms its one restart and leaves a
    /// fallback of the last job). Default: nothing.
    fn begin_job(&self) {}
    /// Simulated device time so far, ms, when the device can tell (the simulated phone).
    fn device_time_ms(&self) -> Option<u64> {
        None
    }
}
