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

use std::sync::{Arc, Mutex};
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

/// A manual clock for tests: every wait advances it and is recorded, nothing sleeps.
/// Clones share one time line (the test keeps one, the code under test another).
/// An async wait yields once, so the other tasks of the runtime get their turn.
#[derive(Clone, Debug)]
pub struct VirtualClock(Arc<Mutex<VirtualTime>>);

#[derive(Debug)]
struct VirtualTime {
    now: DateTime<Utc>,
    waits: Vec<Duration>,
}

impl VirtualClock {
    pub fn new(start: DateTime<Utc>) -> Self {
        VirtualClock(Arc::new(Mutex::new(VirtualTime {
            now: start,
            waits: Vec::new(),
        })))
    }

    fn time(&self) -> std::sync::MutexGuard<'_, VirtualTime> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Moves the time forward without a wait being recorded (time passing elsewhere).
    pub fn advance(&self, d: Duration) {
        let mut t = self.time();
        t.now += chrono::Duration::from_std(d).unwrap_or(chrono::Duration::zero());
    }

    /// Every wait asked of this clock so far, in order.
    pub fn waits(&self) -> Vec<Duration> {
        self.time().waits.clone()
    }

    fn wait(&self, d: Duration) {
        let mut t = self.time();
        t.now += chrono::Duration::from_std(d).unwrap_or(chrono::Duration::zero());
        t.waits.push(d);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> DateTime<Utc> {
        self.time().now
    }

    fn sleep(&self, d: Duration) -> impl std::future::Future<Output = ()> + Send {
        self.wait(d);
        tokio::task::yield_now()
    }

    fn wait_blocking(&self, d: Duration) {
        self.wait(d);
    }
}
