//! Time as an injected dependency.
//!
//! The retry policy and the relay's decisions are pure functions of `now` (sans-IO); only
//! the async drivers wait. [`TokioClock`] derives wall time from `tokio::time::Instant`,
//! so a test that pauses tokio's clock (`tokio::time::pause`) moves both the waits and the
//! timestamps the policy sees — a virtual clock with no real sleeps.

use chrono::{DateTime, Utc};
use std::time::Duration;

/// Where the client gets "now" from and how it waits.
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> DateTime<Utc>;
    fn sleep(&self, d: Duration) -> impl std::future::Future<Output = ()> + Send;
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
