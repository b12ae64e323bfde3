//! The phone cards' live screenshots ([`PhoneScreen`]; served by `screens` as
//! `GET /phone/{i}/screen.png`): one PNG per phone, taken at most once every
//! [`SHOT_EVERY`] whatever the number of viewers, served from a cache in between.
//!
//! **Never racing the task, never during a money step.** A screenshot is one device call
//! like the task's own: it is made holding the phone's turn
//! ([`crate::progress::PhoneTurn`]), the lock every device call of the worker holds
//! (`job::turn::TurnSource` wraps the worker's device), so it waits for the call in
//! flight and falls between two of the task's calls — never two ADB commands on one phone
//! at once. Holding the turn, it reads the worker's progress board (which only moves
//! under the same turn) and takes nothing while the task is in a money step
//! ([`crate::progress::MONEY_STEPS`]: from the quantity to the reconciliation), nor while
//! the store holds a marked run without its outcome (the irreversible mark: an order may
//! exist and is being reconciled): the card shows the last screenshot with a note. The
//! attempt's own screenshots of those steps are the task's (the job driver takes them
//! between its calls); the viewer shows them.
//!
//! A request waits at most [`SHOT_WAIT`] for a fresh screenshot (a device call in flight
//! finishes within its own deadline); after that it gets the cache and the screenshot
//! lands in the cache for the next one.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::device::Device;
use crate::progress::ProgressHandle;
use crate::store::Store;

/// At most one screenshot per phone this often.
pub const SHOT_EVERY: Duration = Duration::from_secs(5);

/// How long a request waits for a fresh screenshot before it is answered from the cache.
pub const SHOT_WAIT: Duration = Duration::from_secs(15);

/// Why the last attempt took no screenshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Held {
    /// The task is in this money step.
    MoneyStep(String),
    /// A marked run is waiting for its outcome (the order is being reconciled).
    Marked,
    /// The screenshot failed (code, message).
    Failed { code: String, message: String },
}

/// What the card says about its screenshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ShotNote {
    /// When the picture served was taken.
    pub taken_at: Option<DateTime<Utc>>,
    /// Why the last attempt took none (the picture served is older).
    pub held: Option<Held>,
}

#[derive(Default)]
struct Cache {
    png: Option<(bytes::Bytes, DateTime<Utc>)>,
    tried: Option<Instant>,
    held: Option<Held>,
}

/// One phone's screenshot source and cache (cheap to clone).
#[derive(Clone)]
pub struct PhoneScreen {
    device: Arc<dyn Device>,
    every: Duration,
    cache: Arc<Mutex<Cache>>,
    /// One refresh at a time per phone.
    refreshing: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for PhoneScreen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PhoneScreen")
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

impl PhoneScreen {
    /// Screenshots of `device` — the worker's phone *without* the turn wrapper: the
    /// screenshot holds the turn itself, around its checks.
    pub fn new(device: Arc<dyn Device>) -> Self {
        PhoneScreen {
            device,
            every: SHOT_EVERY,
            cache: Arc::default(),
            refreshing: Arc::default(),
        }
    }

    /// At most one screenshot per `every` (tests).
    pub fn every(mut self, every: Duration) -> Self {
        self.every = every;
        self
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// What the card says about the screenshot.
    pub fn note(&self) -> ShotNote {
        let c = self.cache();
        ShotNote {
            taken_at: c.png.as_ref().map(|(_, at)| *at),
            held: c.held.clone(),
        }
    }

    /// The picture in the cache and when it was taken.
    pub fn cached(&self) -> Option<(bytes::Bytes, DateTime<Utc>)> {
        self.cache().png.clone()
    }

    fn due(&self) -> bool {
        self.cache().tried.is_none_or(|t| t.elapsed() >= self.every)
    }

    /// Takes a screenshot now, if allowed (blocking: the phone's turn, the device call).
    fn take(
        &self,
        progress: &ProgressHandle,
        store: &Store,
    ) -> Result<(bytes::Bytes, DateTime<Utc>), Held> {
        // A marked run without its outcome: only the task (or its recovery) touches the
        // phone until the order is reconciled. The mark itself is set inside a money
        // step, which the board check below catches.
        match store.awaiting_reconcile() {
            Ok(runs) if !runs.is_empty() => return Err(Held::Marked),
            Ok(_) => {}
            Err(e) => {
                return Err(Held::Failed {
                    code: e.code().to_string(),
                    message: e.to_string(),
                })
            }
        }
        let turn = progress.turn();
        let _turn = turn.hold();
        if let Some(step) = progress
            .current()
            .and_then(|c| c.money_step().map(str::to_string))
        {
            return Err(Held::MoneyStep(step));
        }
        match self.device.screenshot() {
            Ok(png) => Ok((bytes::Bytes::from(png.bytes), Utc::now())),
            Err(e) => Err(Held::Failed {
                code: e.code().to_string(),
                message: e.to_string(),
            }),
        }
    }

    /// Refreshes the cache when the last attempt is older than the interval; waits for
    /// it at most [`SHOT_WAIT`]. `progress` and `store` are the worker's (its board and
    /// turn; its marked runs).
    pub async fn refresh_if_due(&self, progress: &ProgressHandle, store: &Store) {
        if !self.due() {
            return;
        }
        let Ok(guard) = tokio::time::timeout(SHOT_WAIT, self.refreshing.clone().lock_owned()).await
        else {
            return;
        };
        // Another request refreshed it while this one waited.
        if !self.due() {
            return;
        }
        self.cache().tried = Some(Instant::now());
        let me = self.clone();
        let progress = progress.clone();
        let store = store.clone();
        let job = tokio::task::spawn_blocking(move || {
            // Held until the screenshot is in the cache, even when the request that
            // started it stopped waiting.
            let _one = guard;
            let taken = me.take(&progress, &store);
            let mut c = me.cache();
            match taken {
                Ok(png) => {
                    c.png = Some(png);
                    c.held = None;
                }
                Err(h) => {
                    if !matches!(h, Held::Failed { .. }) {
                        tracing::debug!(held = ?h, "console screenshot held back");
                    }
                    c.held = Some(h);
                }
            }
        });
        let _ = tokio::time::timeout(SHOT_WAIT, job).await;
    }
}
