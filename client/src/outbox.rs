//! The outbox relay: delivers stored results and failures until the Admin accepts them.
//!
//! Items are written by [`crate::store::Store::record_outcome`] in the same transaction
//! as the local outcome, before the first send. The relay picks the oldest due item,
//! marks it `sent`, sends the stored bytes with the stored key, and applies the sans-IO
//! [`crate::retry::decide`]: accepted (the task takes its final state), retry at a time,
//! or park for the operator. After a crash, `sent` items are simply due again: the key
//! makes the resend harmless.

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};

use crate::clock::Clock;
use crate::gateway::AdminGateway;
use crate::retry::{decide, random_unit, Decision, RetryPolicy};
use crate::store::{Acceptance, OutboxKind, Store, StoreError};

/// What one relay step did.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Nothing due; the next item (if any) is due at this time.
    Idle(Option<chrono::DateTime<chrono::Utc>>),
    Accepted {
        id: i64,
    },
    Retry {
        id: i64,
        attempt: u32,
        delay: Duration,
    },
    Parked {
        id: i64,
        error: String,
    },
}

/// Delivers the outbox.
pub struct Relay<G, C> {
    store: Store,
    gateway: Arc<G>,
    clock: C,
    policy: RetryPolicy,
    wake: Arc<Notify>,
}

impl<G: AdminGateway, C: Clock> Relay<G, C> {
    pub fn new(store: Store, gateway: Arc<G>, clock: C, policy: RetryPolicy) -> Self {
        Relay {
            store,
            gateway,
            clock,
            policy,
            wake: Arc::new(Notify::new()),
        }
    }

    /// Notify this to make the relay look at the outbox now (a new item was written).
    pub fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }

    /// Sends the oldest due item, if any, and records the decision.
    pub async fn step(&self) -> Result<Step, StoreError> {
        let now = self.clock.now();
        let Some(item) = self.store.next_due_outbox(now)? else {
            return Ok(Step::Idle(self.store.next_outbox_wakeup()?));
        };
        let attempt = self.store.outbox_mark_sending(item.id, now)?;
        tracing::info!(
            outbox_id = item.id,
            task_id = %item.remote_task_id,
            kind = item.kind.as_str(),
            attempt,
            "delivering outbox item"
        );
        crate::failpoint::hit("outbox.before_send");
        let outcome = match item.kind {
            OutboxKind::Result => {
                self.gateway
                    .submit_result(&item.remote_task_id, &item.idempotency_key, &item.body)
                    .await
            }
            OutboxKind::Failure => {
                self.gateway
                    .submit_failure(&item.remote_task_id, &item.idempotency_key, &item.body)
                    .await
            }
        };
        crate::failpoint::hit("outbox.after_send");
        let now = self.clock.now();
        Ok(
            match decide(&self.policy, outcome, attempt, now, random_unit()) {
                Decision::Accepted(a) => {
                    if a.compat_without_result_id {
                        tracing::warn!(
                            outbox_id = item.id,
                            "failure accepted without result_id (old Admin compatibility rule)"
                        );
                    }
                    self.store.outbox_accepted(
                        item.id,
                        &Acceptance {
                            result_id: a.result_id.clone(),
                            accepted_at: a.accepted_at.clone(),
                            response: a.raw.to_vec(),
                        },
                        now,
                    )?;
                    tracing::info!(outbox_id = item.id, result_id = ?a.result_id, "accepted");
                    Step::Accepted { id: item.id }
                }
                Decision::RetryAt { at, delay, error } => {
                    self.store.outbox_retry_at(item.id, at, &error, now)?;
                    tracing::warn!(outbox_id = item.id, attempt, ?delay, %error, "will retry");
                    Step::Retry {
                        id: item.id,
                        attempt,
                        delay,
                    }
                }
                Decision::Park { error } => {
                    self.store.outbox_park(item.id, &error, now)?;
                    tracing::error!(outbox_id = item.id, %error, "parked for the operator");
                    Step::Parked { id: item.id, error }
                }
            },
        )
    }

    /// Delivers what is due now and what falls due while it runs, until nothing is left
    /// to send (the caller bounds it with a timeout: the drain on shutdown). Store errors
    /// end it.
    pub async fn drain(&self) -> Result<(), StoreError> {
        loop {
            match self.step().await? {
                Step::Idle(None) => return Ok(()),
                Step::Idle(Some(at)) => {
                    let wait = (at - self.clock.now()).to_std().unwrap_or(Duration::ZERO);
                    self.clock.sleep(wait).await;
                }
                _ => {}
            }
        }
    }

    /// Delivers until `shutdown` turns true: sends due items back to back, otherwise
    /// sleeps until the next item is due or a new one is written. Store errors are
    /// logged and retried, never fatal.
    pub async fn run(&self, mut shutdown: watch::Receiver<bool>) -> Result<(), StoreError> {
        // With nothing pending, look again at least this often (another process such as
        // `outbox retry` may have requeued items).
        const IDLE_RECHECK: Duration = Duration::from_secs(60);
        loop {
            if *shutdown.borrow() {
                return Ok(());
            }
            let wait = match self.step().await {
                Ok(Step::Idle(next)) => match next {
                    Some(at) => (at - self.clock.now())
                        .to_std()
                        .unwrap_or(Duration::ZERO)
                        .min(IDLE_RECHECK),
                    None => IDLE_RECHECK,
                },
                Ok(_) => continue,
                Err(e) if e.is_retryable() => {
                    tracing::warn!(error = %e, "outbox store busy; retrying");
                    Duration::from_secs(1)
                }
                // The relay must outlive a bad moment of the store (an item changed under
                // it, a full disk): a dead relay would silently stop all delivery.
                Err(e) => {
                    tracing::error!(error = %e, "outbox relay step failed; retrying in 5 s");
                    Duration::from_secs(5)
                }
            };
            if wait.is_zero() {
                continue;
            }
            tokio::select! {
                _ = self.clock.sleep(wait) => {}
                _ = self.wake.notified() => {}
                changed = shutdown.changed() => {
                    // The sender is gone: nobody can stop us any more, so stop now.
                    if changed.is_err() {
                        return Ok(());
                    }
                }
            }
        }
    }
}
