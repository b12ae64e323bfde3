//! The account check on the phone: wake and unlock, then the
//! [`AccountFlow`] behind the device guard (a deep link, at most a few taps on the bottom
//! tab 个人中心, dumps) and what it read. Between tasks: no attempt, no artifacts, no
//! failure screenshot (nothing is reported to the Admin).
//!
//! Cost on a phone where `personal.html` lands: the wake check of
//! [`super::prepare::prepare_device`] plus 2 round trips (the link, one dump); the tab
//! fallback adds a window read, a tap and a dump per tap (bounded by
//! [`crate::flow::account::AccountLimits`]).

use super::driver::{drive, DriveLimits, DriveStats, NoEffects};
use super::guard::GuardedDevice;
use super::source::DeviceSource;
use crate::clock::SystemClock;
use crate::executor::AccountCheck;
use crate::flow::account::{AccountFlow, AccountLimits};
use crate::flow::FlowOutcome;

/// Actions the check may ask for (a safety net: the flow bounds itself far below).
const MAX_ACTIONS: u32 = 40;

/// Runs the account check on `source`'s phone (blocking).
pub fn check<S: DeviceSource + ?Sized>(source: &S) -> (AccountCheck, DriveStats) {
    let failed = |code: &str, message: String| AccountCheck::Failed {
        code: code.to_string(),
        message,
    };
    let device = match source.device() {
        Ok(d) => d,
        Err(e) => return (failed(e.code(), e.to_string()), DriveStats::default()),
    };
    if let Err(f) = super::prepare::prepare_device(&*device, source.thresholds()) {
        return (failed(f.code.as_str(), f.message), DriveStats::default());
    }
    let device = GuardedDevice::new(device, false);
    let mut flow = AccountFlow::new(AccountLimits::default());
    let rep = drive(
        &mut flow,
        &device,
        &mut NoEffects,
        &SystemClock,
        None,
        DriveLimits {
            max_actions: MAX_ACTIONS,
            screenshot_on_failure: false,
            money_screenshots: false,
        },
    );
    let out = match rep.outcome {
        FlowOutcome::Account(r) => AccountCheck::Read(r),
        FlowOutcome::Failed(f) => failed(f.code.as_str(), f.message),
        FlowOutcome::Collected(_) | FlowOutcome::Purchased(_) => failed(
            "PAGE_NOT_RECOGNIZED",
            "the account check produced a task result".into(),
        ),
    };
    (out, rep.stats)
}
