//! The skew between the host's clock and the phone's, for the reconcile window (
//! A.6).
//!
//! The irreversible mark is stamped with the host's clock; the 下单时间 an order detail
//! shows follows the phone's side (on the simulated phone its own clock; on a real
//! phone the PDD server's, which an NTP-synced phone tracks — the phone is the closest
//! clock we can read). Reconciliation accepts an order stamped up to
//! `60 s + skew` before the mark ([`crate::flow::reconcile::ReconcileFlow::lead`]), so the
//! skew is measured once per purchase, right before the flow runs:
//!
//! - one `date +%s` through [`Device::shell`], between two host readings `t0 ≤ t1`. The
//!   phone printed whole seconds `p`, so its clock read some time in `[p, p + 1 s)` at
//!   some moment in `[t0, t1]`: the offset lies in `[p − t1, p + 1 s − t0]`, and the
//!   skew is the larger magnitude of the two ends;
//! - bounded by [`MAX_SKEW`]: the window never reaches further before the mark than the
//!   contract's ±5 min (a larger skew is reported in the log and clamped: an order then
//!   found outside the window ends in `manual_review`, never in a wrong adoption);
//! - when it cannot be measured (the command fails, prints no number, the phone does
//!   not answer), [`UNMEASURED_SKEW`]: 60 s, which keeps the window at mark − 2 min — a
//!   phone whose clock is synced is within seconds, and what keeps another task's order
//!   out is the rule on known order numbers, not the width of the window.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::device::Device;

/// The most skew the window accounts for: with the 60 s lead this is the contract's
/// 5 minutes before the mark.
pub const MAX_SKEW: Duration = Duration::from_secs(240);

/// The skew assumed when it cannot be measured.
pub const UNMEASURED_SKEW: Duration = Duration::from_secs(60);

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Skew {
    /// What the window uses: measured (bounded by [`MAX_SKEW`]) or [`UNMEASURED_SKEW`].
    pub skew: Duration,
    /// The phone minus the host, ms, at the middle of the call, when measured.
    pub offset_ms: Option<i64>,
    /// Why it was not measured, or that it was clamped.
    pub note: Option<String>,
}

/// The skew from one reading: the phone printed `phone_secs` (`date +%s`) between the
/// host's `t0` and `t1`.
pub fn from_reading(phone_secs: i64, t0: DateTime<Utc>, t1: DateTime<Utc>) -> Skew {
    let (t0, t1) = (t0.min(t1), t0.max(t1));
    let p = phone_secs.saturating_mul(1000);
    let lo = p.saturating_sub(t1.timestamp_millis());
    let hi = p.saturating_add(1000).saturating_sub(t0.timestamp_millis());
    let worst = lo.unsigned_abs().max(hi.unsigned_abs());
    let mid = t0.timestamp_millis() / 2 + t1.timestamp_millis() / 2;
    let offset_ms = Some(p.saturating_add(500).saturating_sub(mid));
    let measured = Duration::from_millis(worst);
    if measured > MAX_SKEW {
        return Skew {
            skew: MAX_SKEW,
            offset_ms,
            note: Some(format!(
                "the phone's clock is {} s off the host's: clamped to {} s",
                worst / 1000,
                MAX_SKEW.as_secs()
            )),
        };
    }
    Skew {
        skew: measured,
        offset_ms,
        note: None,
    }
}

fn unmeasured(why: String) -> Skew {
    Skew {
        skew: UNMEASURED_SKEW,
        offset_ms: None,
        note: Some(why),
    }
}

/// Measures the skew on `device` with one `date +%s` (bounded by the device's own
/// deadline for a shell call).
pub fn measure(device: &dyn Device) -> Skew {
    let t0 = Utc::now();
    let out = device.shell(&["date", "+%s"]);
    let t1 = Utc::now();
    let out = match out {
        Ok(o) if o.success() => o,
        Ok(o) => return unmeasured(format!("`date +%s` exited {}", o.exit_code)),
        Err(e) => return unmeasured(format!("`date +%s` failed: {e}")),
    };
    let text = out.stdout_text();
    match text.trim().parse::<i64>() {
        Ok(secs) if secs > 0 => from_reading(secs, t0, t1),
        _ => unmeasured(format!(
            "`date +%s` printed no time: {:?}",
            text.chars().take(40).collect::<String>()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(ms: i64) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(ms).unwrap()
    }

    #[test]
    fn a_synced_phone_is_within_the_rounding() {
        // Host 1000.200 s … 1000.300 s; the phone says 1000 s.
        let s = from_reading(1000, at(1_000_200), at(1_000_300));
        assert_eq!(s.skew, Duration::from_millis(800));
        assert!(s.note.is_none());
    }

    #[test]
    fn a_phone_behind_or_ahead_counts_either_way() {
        // The phone 90 s behind.
        let s = from_reading(910, at(1_000_000), at(1_000_100));
        assert_eq!(s.skew, Duration::from_millis(90_100));
        assert_eq!(s.offset_ms, Some(-89_550));
        // 30 s ahead.
        let s = from_reading(1030, at(1_000_000), at(1_000_100));
        assert_eq!(s.skew, Duration::from_millis(31_000));
    }

    #[test]
    fn measured_on_the_simulated_phone() {
        use crate::job::sim_device::SimFlowDevice;
        use cmautobuy_sim_phone::{Catalog, SimConfig};
        let phone = |start: Option<DateTime<Utc>>| {
            let mut c = SimConfig::new(Catalog::load(&Catalog::bundled_dir()).unwrap());
            c.start_time = start;
            SimFlowDevice::new(c.build_device().unwrap())
        };
        // The phone on the host's clock: within the rounding and the call.
        let s = measure(&phone(None));
        assert!(s.skew <= Duration::from_secs(2), "{s:?}");
        assert!(s.offset_ms.is_some() && s.note.is_none(), "{s:?}");
        // A phone whose clock stands days behind: clamped, and said so.
        let s = measure(&phone(Some(
            Utc.with_ymd_and_hms(2020, 1, 1, 0, 0, 0).unwrap(),
        )));
        assert_eq!(s.skew, MAX_SKEW);
        assert!(s.note.is_some());
    }

    #[test]
    fn unreadable_answers_fall_back_to_the_default() {
        use crate::device::{DeviceError, KeyCode, Png, ShellOutput, UiDump};
        use crate::screen::Point;
        struct Says(Result<ShellOutput, ()>);
        impl Device for Says {
            fn dump_ui(&self) -> Result<UiDump, DeviceError> {
                Err(DeviceError::NotOnScreen)
            }
            fn tap(&self, _: Point) -> Result<(), DeviceError> {
                Ok(())
            }
            fn swipe(&self, _: Point, _: Point, _: Duration) -> Result<(), DeviceError> {
                Ok(())
            }
            fn key(&self, _: KeyCode) -> Result<(), DeviceError> {
                Ok(())
            }
            fn open_url(&self, _: &str) -> Result<(), DeviceError> {
                Ok(())
            }
            fn screenshot(&self) -> Result<Png, DeviceError> {
                Err(DeviceError::NotOnScreen)
            }
            fn shell(&self, _: &[&str]) -> Result<ShellOutput, DeviceError> {
                self.0.clone().map_err(|_| DeviceError::Io("gone".into()))
            }
        }
        let out = |stdout: &str, code| ShellOutput {
            stdout: stdout.as_bytes().to_vec(),
            stderr: vec![],
            exit_code: code,
        };
        for d in [
            Says(Err(())),
            Says(Ok(out("date: bad format\n", 1))),
            Says(Ok(out("Tue Dec  1 18:00:00 CST 2026\n", 0))),
            Says(Ok(out("", 0))),
        ] {
            let s = measure(&d);
            assert_eq!(s.skew, UNMEASURED_SKEW, "{s:?}");
            assert!(s.offset_ms.is_none() && s.note.is_some());
        }
    }

    #[test]
    fn a_slow_call_widens_the_bound_and_a_wild_clock_is_clamped() {
        let s = from_reading(1000, at(1_000_000), at(1_004_000));
        assert_eq!(s.skew, Duration::from_millis(4_000));
        let s = from_reading(10_000, at(1_000_000), at(1_000_100));
        assert_eq!(s.skew, MAX_SKEW);
        assert!(s.note.is_some());
    }
}
