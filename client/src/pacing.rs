//! Pacing: how fast one phone works. Sans-IO — pure functions of `now`,
//! the end of the last task and the times of the live orders placed; the runner reads
//! those from the store and waits on its clock.
//!
//! Rules:
//! - **A gap between tasks.** The next claim waits until `min_task_gap` after the last
//!   task ended ([`next_claim_at`]). Default 3 s: a person working the phone takes at
//!   least that between two goods pages; it keeps PDD from seeing page loads back to
//!   back for hours (the pattern its risk control flags), and costs < 10 % of a
//!   phone's throughput (a collect takes 30–60 s on a real phone). `rehearse` sets 0.
//! - **Caps on live orders** per phone per rolling hour and per rolling day
//!   (`live_orders_per_hour`, default 10; `live_orders_per_day`, default 50; 0 = no cap).
//!   Every order stays unpaid in 待付款 until the shop pays it; an account that piles up
//!   unpaid orders faster than a shop can pay them is what PDD restricts, and a runaway
//!   Admin (or a bug) must not place hundreds of orders overnight. The defaults are far
//!   above what one shop pays by hand in an hour and low enough that a mistake costs
//!   tens of orders, not hundreds.
//! - **An order placed** is a purchase run with its irreversible mark
//!   (`task_runs.irreversible_action_at`, committed before the submit tap, so counted
//!   even when the process died right after the tap): read from the store, so the count
//!   survives a restart. A mark whose submit did not produce an order still counts —
//!   the cap errs on the safe side.
//! - **At a cap** the worker declares `dry_run` (contract §5 allows narrowing): collects
//!   and dry-run purchases continue, live tasks stay at the Admin, until the window has
//!   moved past enough orders ([`live_cap`] says until when; `status` shows it).

use std::time::Duration;

use chrono::{DateTime, Utc};

/// The rolling windows of the caps.
pub const HOUR: Duration = Duration::from_secs(3600);
pub const DAY: Duration = Duration::from_secs(86_400);

/// Config keys `min_task_gap_secs`, `live_orders_per_hour`, `live_orders_per_day`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PacingConfig {
    pub min_task_gap: Duration,
    /// Live orders per rolling hour (0 = no cap).
    pub live_orders_per_hour: u32,
    /// Live orders per rolling day (0 = no cap).
    pub live_orders_per_day: u32,
}

impl Default for PacingConfig {
    fn default() -> Self {
        PacingConfig {
            min_task_gap: Duration::from_secs(3),
            live_orders_per_hour: 10,
            live_orders_per_day: 50,
        }
    }
}

impl PacingConfig {
    /// No gap and no caps (tests, and `rehearse`'s gap).
    pub fn unpaced() -> Self {
        PacingConfig {
            min_task_gap: Duration::ZERO,
            live_orders_per_hour: 0,
            live_orders_per_day: 0,
        }
    }

    /// How far back the orders that matter go (`None`: no cap, nothing to read).
    pub fn lookback(&self) -> Option<Duration> {
        if self.live_orders_per_day > 0 {
            Some(DAY)
        } else if self.live_orders_per_hour > 0 {
            Some(HOUR)
        } else {
            None
        }
    }
}

/// The worker is at a live cap.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveCap {
    /// When live is allowed again (the window has moved past enough orders).
    pub until: DateTime<Utc>,
    /// `hour` or `day`: the window whose cap binds longest.
    pub window: &'static str,
    /// The cap of that window.
    pub cap: u32,
    /// Orders in that window now.
    pub orders: usize,
}

fn after(t: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    t + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::zero())
}

/// When the next claim may happen: `min_task_gap` after the last task ended (`None`: now).
pub fn next_claim_at(
    cfg: &PacingConfig,
    last_task_end: Option<DateTime<Utc>>,
) -> Option<DateTime<Utc>> {
    let end = last_task_end?;
    (!cfg.min_task_gap.is_zero()).then(|| after(end, cfg.min_task_gap))
}

/// The wait before the next claim at `now` (`None`: claim now).
pub fn gap_wait(
    cfg: &PacingConfig,
    last_task_end: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> Option<Duration> {
    let at = next_claim_at(cfg, last_task_end)?;
    (at - now).to_std().ok().filter(|d| !d.is_zero())
}

/// One window: orders in `(now − window, …]`; at `cap` or more, capped until the oldest
/// order that must leave has left.
fn window_cap(
    now: DateTime<Utc>,
    orders: &[DateTime<Utc>],
    window: Duration,
    name: &'static str,
    cap: u32,
) -> Option<LiveCap> {
    if cap == 0 {
        return None;
    }
    let start = now - chrono::Duration::from_std(window).unwrap_or(chrono::Duration::zero());
    let mut recent: Vec<DateTime<Utc>> = orders.iter().copied().filter(|t| *t > start).collect();
    let cap_n = cap as usize;
    if recent.len() < cap_n {
        return None;
    }
    recent.sort();
    // Below the cap again once the oldest `len − cap + 1` orders are out of the window.
    let until = after(recent[recent.len() - cap_n], window);
    Some(LiveCap {
        until,
        window: name,
        cap,
        orders: recent.len(),
    })
}

/// Whether live is capped at `now`, given the times of the live orders placed (any order,
/// any age: those outside the windows are ignored). The later of the two windows' ends.
pub fn live_cap(
    cfg: &PacingConfig,
    now: DateTime<Utc>,
    orders: &[DateTime<Utc>],
) -> Option<LiveCap> {
    let hour = window_cap(now, orders, HOUR, "hour", cfg.live_orders_per_hour);
    let day = window_cap(now, orders, DAY, "day", cfg.live_orders_per_day);
    match (hour, day) {
        (Some(h), Some(d)) => Some(if d.until > h.until { d } else { h }),
        (h, d) => h.or(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::{Clock, VirtualClock};
    use chrono::TimeZone;

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap()
    }

    fn mins(m: i64) -> chrono::Duration {
        chrono::Duration::minutes(m)
    }

    #[test]
    fn the_gap_follows_the_end_of_the_last_task() {
        let cfg = PacingConfig::default();
        assert_eq!(
            gap_wait(&cfg, None, t0()),
            None,
            "the first task goes at once"
        );
        assert_eq!(
            gap_wait(&cfg, Some(t0()), t0()),
            Some(Duration::from_secs(3))
        );
        let clock = VirtualClock::new(t0());
        clock.wait_blocking(Duration::from_secs(2));
        assert_eq!(
            gap_wait(&cfg, Some(t0()), clock.now()),
            Some(Duration::from_secs(1))
        );
        clock.wait_blocking(Duration::from_secs(1));
        assert_eq!(gap_wait(&cfg, Some(t0()), clock.now()), None);
        let none = PacingConfig {
            min_task_gap: Duration::ZERO,
            ..cfg
        };
        assert_eq!(gap_wait(&none, Some(t0()), t0()), None, "0 = no gap");
    }

    #[test]
    fn the_hourly_cap_binds_until_the_oldest_order_leaves_the_window() {
        let cfg = PacingConfig {
            min_task_gap: Duration::ZERO,
            live_orders_per_hour: 3,
            live_orders_per_day: 0,
        };
        let clock = VirtualClock::new(t0());
        let mut orders = Vec::new();
        for _ in 0..2 {
            orders.push(clock.now());
            clock.wait_blocking(Duration::from_secs(600));
            assert_eq!(live_cap(&cfg, clock.now(), &orders), None);
        }
        orders.push(clock.now()); // 08:20, the third order
        let cap = live_cap(&cfg, clock.now(), &orders).expect("capped at 3");
        assert_eq!(
            (cap.until, cap.window, cap.cap, cap.orders),
            (t0() + mins(60), "hour", 3, 3)
        );
        // Still capped a moment before 09:00; live again at 09:00 exactly.
        clock.wait_blocking(Duration::from_secs(39 * 60 + 59));
        assert!(live_cap(&cfg, clock.now(), &orders).is_some());
        clock.wait_blocking(Duration::from_secs(1));
        assert_eq!(clock.now(), t0() + mins(60));
        assert_eq!(live_cap(&cfg, clock.now(), &orders), None);
    }

    #[test]
    fn above_the_cap_the_window_must_pass_enough_orders() {
        // Five orders (a cap lowered by the operator) against a cap of 3: live again
        // once three of them have left, i.e. an hour after the third oldest.
        let cfg = PacingConfig {
            min_task_gap: Duration::ZERO,
            live_orders_per_hour: 3,
            live_orders_per_day: 0,
        };
        let orders: Vec<_> = (0..5).map(|i| t0() + mins(i * 5)).collect();
        let now = t0() + mins(25);
        let cap = live_cap(&cfg, now, &orders).unwrap();
        assert_eq!((cap.until, cap.orders), (t0() + mins(70), 5));
        assert!(live_cap(&cfg, t0() + mins(69), &orders).is_some());
        assert_eq!(live_cap(&cfg, t0() + mins(70), &orders), None);
    }

    #[test]
    fn the_daily_cap_binds_longer_than_the_hourly_one() {
        let cfg = PacingConfig {
            min_task_gap: Duration::ZERO,
            live_orders_per_hour: 2,
            live_orders_per_day: 4,
        };
        // Two orders an hour apart twice: the fourth order at 09:05 caps the hour until
        // 10:00 and the day until 08:00 tomorrow.
        let orders = vec![t0(), t0() + mins(5), t0() + mins(60), t0() + mins(65)];
        let now = t0() + mins(65);
        let cap = live_cap(&cfg, now, &orders).unwrap();
        assert_eq!(cap.window, "day");
        assert_eq!(cap.until, t0() + chrono::Duration::days(1));
        // Orders older than a day are ignored.
        let old = vec![t0() - chrono::Duration::days(2); 10];
        assert_eq!(live_cap(&cfg, now, &old), None);
        // 0 = no cap in either window.
        assert_eq!(live_cap(&PacingConfig::unpaced(), now, &orders), None);
        assert_eq!(PacingConfig::unpaced().lookback(), None);
        assert_eq!(cfg.lookback(), Some(DAY));
    }
}
