//! Clock skew: live purchases are refused while the host's clock is more
//! than `max_clock_skew` off the Admin's (its answers' `Date` header) or the phone's
//! (`date +%s`, [`crate::job::skew`]). Sans-IO — pure functions of the measured offsets;
//! the runner measures (the Admin's at every answer, the phone's at start and hourly) and
//! narrows the declared mode to `dry_run` (contract §5), with the reason in `status` and
//! an operator alert of kind `clock_skew` that does not stop claiming: collects and dry
//! runs continue.
//!
//! Why it matters: the reconcile window is anchored on the host's clock (mark − lead …
//! mark + 5 min) and compared with the 下单时间 the phone shows; the Admin reads
//! `irreversible_action_at` and `reported_at` against its own clock. 30 s is far above NTP
//! drift and far below what would push an order out of the window.

use std::time::Duration;

use chrono::{DateTime, Utc};

/// Default `max_clock_skew_secs`.
pub const DEFAULT_MAX_SKEW: Duration = Duration::from_secs(30);
/// How often the phone's clock is read.
pub const PHONE_CHECK_EVERY: Duration = Duration::from_secs(3600);

/// The measured offsets (other clock minus the host's, ms); `None`: not measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Offsets {
    pub admin_ms: Option<i64>,
    pub phone_ms: Option<i64>,
}

/// Why live is refused, or `None`: every measured offset is within `max`.
pub fn too_far(max: Duration, o: &Offsets) -> Option<String> {
    let max_ms = i64::try_from(max.as_millis()).unwrap_or(i64::MAX);
    let mut why = Vec::new();
    for (who, off) in [("the Admin's", o.admin_ms), ("the phone's", o.phone_ms)] {
        if let Some(ms) = off.filter(|ms| ms.unsigned_abs() > max_ms.unsigned_abs()) {
            why.push(format!(
                "{who} clock is {:.0} s {} the host's",
                ms.unsigned_abs() as f64 / 1000.0,
                if ms > 0 { "ahead of" } else { "behind" }
            ));
        }
    }
    (!why.is_empty()).then(|| {
        format!(
            "{} (more than {} s): live purchases refused until the clocks agree",
            why.join("; "),
            max.as_secs()
        )
    })
}

/// Whether the phone's clock is due to be read: never read, or `every` since.
pub fn phone_due(last: Option<DateTime<Utc>>, now: DateTime<Utc>, every: Duration) -> bool {
    match last {
        None => true,
        Some(t) => (now - t).to_std().is_ok_and(|d| d >= every),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, VirtualClock};
    use chrono::TimeZone;

    #[test]
    fn within_the_limit_either_way_is_fine_beyond_it_is_refused() {
        let max = DEFAULT_MAX_SKEW;
        assert_eq!(too_far(max, &Offsets::default()), None, "unmeasured");
        let ok = Offsets {
            admin_ms: Some(-30_000),
            phone_ms: Some(29_999),
        };
        assert_eq!(too_far(max, &ok), None);
        let admin = Offsets {
            admin_ms: Some(120_500),
            phone_ms: Some(0),
        };
        let why = too_far(max, &admin).unwrap();
        assert!(
            why.contains("the Admin's clock is 120 s ahead of the host's"),
            "{why}"
        );
        let phone = Offsets {
            admin_ms: None,
            phone_ms: Some(-45_000),
        };
        let why = too_far(max, &phone).unwrap();
        assert!(why.contains("the phone's clock is 45 s behind"), "{why}");
        assert!(why.contains("more than 30 s"), "{why}");
    }

    #[test]
    fn the_phone_is_read_at_start_and_hourly() {
        let clock = VirtualClock::new(Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap());
        let every = PHONE_CHECK_EVERY;
        assert!(phone_due(None, clock.now(), every));
        let last = clock.now();
        clock.wait_blocking(Duration::from_secs(3599));
        assert!(!phone_due(Some(last), clock.now(), every));
        clock.wait_blocking(Duration::from_secs(1));
        assert!(phone_due(Some(last), clock.now(), every));
    }
}
