//! Time as an injected dependency: the one [`Clock`] trait of the client.
//!
//! The retry policy, the relay's decisions and the flows are pure functions of `now`
//! (sans-IO); only the drivers wait. Async drivers (claim loop, outbox relay) await
//! [`Clock::sleep`]; the device driver runs on a blocking thread and uses
//! [`Clock::wait_blocking`] for the bounded pauses a flow asks for.
//!
//! - [`TokioClock`] derives wall time from `tokio::time::Instant`, so a test that pauses
//!   tokio's clock (`tokio::time::pause`) moves both the waits and the timestamps the
//!   policy sees — a virtual clock with no real sleeps.
//! - [`SystemClock`] is wall time (`Utc::now`), for jobs on real phones.
//! - [`VirtualClock`] is a manual clock for tests: waiting advances it, nothing sleeps.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};

/// Where the client gets "now" from and how it waits.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
    fn sleep(&self, d: Duration) -> impl std::future::Future<Output = ()> + Send;
    /// Waits on a blocking thread (the device driver's bounded polls).
    fn wait_blocking(&self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// Wall time anchored at creation and advanced by tokio's (possibly paused) clock.
#[derive(Clone, Debug)]
pub struct TokioClock {
    anchor_wall: DateTime<Utc>,
    anchor: tokio::time::Instant,
}

impl TokioClock {
    pub fn new() -> Self {
        TokioClock {
            anchor_wall: Utc::now(),
            anchor: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> DateTime<Utc> {
        let elapsed = tokio::time::Instant::now().saturating_duration_since(self.anchor);
        self.anchor_wall + chrono::Duration::from_std(elapsed).unwrap_or(chrono::Duration::zero())
    }

    fn sleep(&self, d: Duration) -> impl std::future::Future<Output = ()> + Send {
        tokio::time::sleep(d)
    }
}

/// Wall time; waits really wait (callers bound them).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> DateTime<Utc> {
        Utc::now()
    }

    fn sleep(&self, d: Duration) -> impl std::future::Future<Output = ()> + Send {
        tokio::time::sleep(d)
    }
}

/// A manual clock for tests: every wait advances it, nothing sleeps.
#[derive(Debug)]
pub struct VirtualClock(Mutex<DateTime<Utc>>);

impl VirtualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        VirtualClock(Mutex::new(start))
    }

    fn advance(&self, d: Duration) {
        let mut t = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *t += chrono::Duration::from_std(d).unwrap_or(chrono::Duration::zero());
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> DateTime<Utc> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn sleep(&self, d: Duration) -> impl std::future::Future<Output = ()> + Send {
        self.advance(d);
        std::future::ready(())
    }

    fn wait_blocking(&self, d: Duration) {
        self.advance(d);
    }
}
