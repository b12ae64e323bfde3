//! Before a task touches PDD: wake the screen and swipe a swipe lock
//! away ([`crate::device::doctor::wake_and_unlock`]), or end the task before anything is
//! opened — `retry_wait` with the device's code (`DEVICE_LOCKED`, `BATTERY_LOW`,
//! `BATTERY_HOT`, …), which pauses the worker (`gate::DEVICE_FAILURE_CODES`) and, for
//! what only a human can fix, raises a `device_attention` alert.

use cmautobuy_contract::{FailureCode, FlowStep};

use crate::clock::{Clock, SystemClock};
use crate::device::doctor::{wake_and_unlock, WakeReport};
use crate::device::state::Thresholds;
use crate::device::Device;
use crate::flow::FlowFailure;

/// Wakes and unlocks `device`; the failure to report when it cannot be made ready.
pub fn prepare_device(device: &dyn Device, t: Thresholds) -> Result<WakeReport, Box<FlowFailure>> {
    match wake_and_unlock(device, t, &|d| SystemClock.wait_blocking(d)) {
        Ok((_, report)) => {
            if report.woke || report.swiped {
                tracing::info!(
                    woke = report.woke,
                    swiped = report.swiped,
                    round_trips = report.round_trips,
                    "phone woken / unlocked before the task"
                );
            }
            Ok(report)
        }
        Err(p) => {
            // The phone's own codes are task codes as they are; a transport error's
            // code (`DEVICE_DEADLINE_EXCEEDED`, …) is reported as `DEVICE_OFFLINE`.
            let code = match FailureCode::parse(&p.code) {
                FailureCode::Other(c) if c != "DEVICE_UNAUTHORIZED" && c != "PDD_NOT_INSTALLED" => {
                    FailureCode::DeviceOffline
                }
                c => c,
            };
            Err(Box::new(
                FlowFailure::retry(code, FlowStep::PrepareDevice, p.message)
                    .with("device_code", p.code),
            ))
        }
    }
}
