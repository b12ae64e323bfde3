//! The retry policy and the outbox relay's decisions, sans-IO.
//!
//! Nothing here sleeps, reads the clock or draws random numbers: `now` and a uniform
//! random `unit` in `[0, 1)` come in as arguments, a [`Decision`] comes out. The async
//! drivers ([`crate::outbox`], [`crate::runner`]) do the waiting, so tests check the
//! policy with plain values and the drivers with a paused tokio clock.
//!
//! Policy (`decisions.md` §8): transient failures back off exponentially with full
//! jitter — attempt `n` waits a uniform time in `[0, min(cap, base · 2^(n-1))]`, base 1 s,
//! cap 5 min — and never earlier than a `Retry-After` the Admin sent (bounded by
//! [`RetryPolicy::max_retry_after`]).
//!
//! What is transient is decided in one place, [`GatewayError::is_retryable`], whose HTTP
//! part is the contract crate's table `cmautobuy_contract::codes::STATUS_RULES` (shared
//! with the mock Admin's `retryable` flag):
//!
//! | status | rule | why |
//! |---|---|---|
//! | 400, 401, 403, 404, 409, 422 | park | the same bytes get the same answer (§3; §8: auth, conflicts and business errors are never retried) |
//! | 408 Request Timeout, 425 Too Early | retry | transport-level "try again": the request was not processed, and every request is safe to repeat (keyed, or an idempotent `PUT`/claim) |
//! | 429, 500, 503 | retry | §8: bounded backoff, `Retry-After` honoured |
//! | 502, 504 | retry | a proxy in front of the Admin failed or timed out, like 500/503 |
//! | any other 4xx or 5xx, 3xx | park | not a known transient answer |
//!
//! Also retried: no answer (timeout, connection failure) and an unreadable answer. Also
//! parked: an answer too large to read, `accepted: false`. Parked items wait for the
//! operator; nothing is dropped.

use chrono::{DateTime, Utc};
use std::time::Duration;

use crate::gateway::{Accepted, GatewayError};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    pub base: Duration,
    pub cap: Duration,
    /// A `Retry-After` beyond this is taken as this (a broken Admin must not park us
    /// for days without anyone noticing).
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            base: Duration::from_secs(1),
            cap: Duration::from_secs(300),
            max_retry_after: Duration::from_secs(3600),
        }
    }
}

impl RetryPolicy {
    /// The upper bound of the wait after failed attempt `attempt` (1-based).
    pub fn ceiling(&self, attempt: u32) -> Duration {
        let exp = attempt.saturating_sub(1).min(30);
        self.base
            .checked_mul(1u32 << exp)
            .unwrap_or(self.cap)
            .min(self.cap)
    }

    /// Full jitter: `unit` (uniform in `[0, 1)`) scales the ceiling.
    pub fn backoff(&self, attempt: u32, unit: f64) -> Duration {
        self.ceiling(attempt).mul_f64(unit.clamp(0.0, 1.0))
    }

    /// The wait after failed attempt `attempt`, honouring `Retry-After` when given: never
    /// earlier than the Admin asked, and never earlier than our own backoff either (an
    /// Admin answering `429` with `Retry-After: 0` forever must not get a tight loop).
    pub fn delay(
        &self,
        attempt: u32,
        retry_after: Option<crate::gateway::RetryAfter>,
        now: DateTime<Utc>,
        unit: f64,
    ) -> Duration {
        let backoff = self.backoff(attempt, unit);
        match retry_after {
            Some(ra) => ra.delay_from(now).min(self.max_retry_after).max(backoff),
            None => backoff,
        }
    }
}

/// What to do with an outbox item after one send.
#[derive(Debug)]
pub enum Decision {
    /// `accepted: true`: mark delivered, move the task to its final state.
    Accepted(Accepted),
    /// Transient: try again at `at`.
    RetryAt {
        at: DateTime<Utc>,
        delay: Duration,
        error: String,
    },
    /// Permanent: park for the operator.
    Park { error: String },
}

/// Decides after attempt `attempt` (1-based) of an outbox item.
pub fn decide(
    policy: &RetryPolicy,
    outcome: Result<Accepted, GatewayError>,
    attempt: u32,
    now: DateTime<Utc>,
    unit: f64,
) -> Decision {
    match outcome {
        Ok(a) => Decision::Accepted(a),
        Err(e) if e.is_retryable() => {
            let delay = policy.delay(attempt, e.retry_after(), now, unit);
            Decision::RetryAt {
                at: now + chrono::Duration::from_std(delay).unwrap_or(chrono::Duration::zero()),
                delay,
                error: e.to_string(),
            }
        }
        Err(e) => Decision::Park {
            error: e.to_string(),
        },
    }
}

/// The claim poll wait after a 204: `interval` ± 20 % (`unit` uniform in `[0, 1)`).
pub fn poll_delay(interval: Duration, unit: f64) -> Duration {
    interval.mul_f64(0.8 + 0.4 * unit.clamp(0.0, 1.0))
}

/// A uniform random number in `[0, 1)` for the drivers.
pub fn random_unit() -> f64 {
    use rand::Rng;
    rand::thread_rng().gen::<f64>()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::{Op, RetryAfter};

    fn now() -> DateTime<Utc> {
        DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
            .unwrap()
            .with_timezone(&Utc)
    }

    #[test]
    fn ceilings_double_from_one_second_to_five_minutes() {
        let p = RetryPolicy::default();
        let secs: Vec<u64> = (1..=12).map(|a| p.ceiling(a).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(p.ceiling(u32::MAX), Duration::from_secs(300));
        assert_eq!(p.backoff(3, 0.5), Duration::from_secs(2));
        assert_eq!(p.backoff(3, 0.0), Duration::ZERO);
    }

    #[test]
    fn retry_after_wins_and_is_bounded() {
        let p = RetryPolicy::default();
        let ra = Some(RetryAfter::Delay(Duration::from_secs(42)));
        assert_eq!(p.delay(1, ra, now(), 0.9), Duration::from_secs(42));
        let far = Some(RetryAfter::Delay(Duration::from_secs(10 * 86400)));
        assert_eq!(p.delay(1, far, now(), 0.9), Duration::from_secs(3600));
        // Retry-After: 0 on the 10th attempt: our own backoff still applies.
        let zero = Some(RetryAfter::Delay(Duration::ZERO));
        assert_eq!(p.delay(10, zero, now(), 0.5), Duration::from_secs(150));
    }

    fn rejected(status: u16) -> GatewayError {
        GatewayError::Rejected {
            op: Op::Result,
            status,
            code: None,
            message: None,
            request_id: None,
            retry_after: None,
        }
    }

    #[test]
    fn four_hundreds_park_and_transients_retry() {
        let p = RetryPolicy::default();
        for s in [400, 401, 403, 404, 409, 422, 418] {
            assert!(
                matches!(
                    decide(&p, Err(rejected(s)), 1, now(), 0.5),
                    Decision::Park { .. }
                ),
                "{s}"
            );
        }
        for s in [429, 500, 502, 503, 504] {
            match decide(&p, Err(rejected(s)), 4, now(), 0.5) {
                Decision::RetryAt { delay, at, .. } => {
                    assert_eq!(delay, Duration::from_secs(4));
                    assert_eq!(at, now() + chrono::Duration::seconds(4));
                }
                other => panic!("{s}: {other:?}"),
            }
        }
        let t = GatewayError::Timeout {
            op: Op::Result,
            timeout: Duration::from_secs(1),
        };
        assert!(matches!(
            decide(&p, Err(t), 1, now(), 0.1),
            Decision::RetryAt { .. }
        ));
    }

    /// One test per status of the table: the rule, and what `decide` does with it.
    macro_rules! status_tests {
        ($($name:ident: $status:expr => $retry:expr;)+) => {$(
            #[test]
            fn $name() {
                let p = RetryPolicy::default();
                assert_eq!(rejected($status).is_retryable(), $retry);
                assert_eq!(
                    cmautobuy_contract::codes::status_is_retryable($status),
                    $retry
                );
                match decide(&p, Err(rejected($status)), 1, now(), 0.5) {
                    Decision::RetryAt { .. } => assert!($retry, "{} must park", $status),
                    Decision::Park { .. } => assert!(!$retry, "{} must retry", $status),
                    Decision::Accepted(_) => panic!("an error is never accepted"),
                }
            }
        )+};
    }

    status_tests! {
        status_400_invalid_body_parks: 400 => false;
        status_401_unauthenticated_parks: 401 => false;
        status_403_never_dispatched_parks: 403 => false;
        status_404_task_not_found_parks: 404 => false;
        status_408_request_timeout_is_retried: 408 => true;
        status_409_idempotency_conflict_parks: 409 => false;
        status_422_business_rule_parks: 422 => false;
        status_425_too_early_is_retried: 425 => true;
        status_429_rate_limited_is_retried: 429 => true;
        status_500_admin_failure_is_retried: 500 => true;
        status_502_bad_gateway_is_retried: 502 => true;
        status_503_unavailable_is_retried: 503 => true;
        status_504_gateway_timeout_is_retried: 504 => true;
        status_405_other_4xx_parks: 405 => false;
        status_418_other_4xx_parks: 418 => false;
        status_501_other_5xx_parks: 501 => false;
        status_302_redirect_parks: 302 => false;
    }

    #[test]
    fn every_status_the_contract_lists_has_a_row_in_the_one_table() {
        use cmautobuy_contract::codes::STATUS_RULES;
        for s in [400, 401, 403, 404, 409, 422, 429, 500, 503, 408, 425] {
            assert!(STATUS_RULES.iter().any(|r| r.status == s), "{s}");
        }
    }

    #[test]
    fn poll_jitter_stays_within_twenty_percent() {
        let i = Duration::from_secs(10);
        assert_eq!(poll_delay(i, 0.0), Duration::from_secs(8));
        assert_eq!(poll_delay(i, 1.0), Duration::from_secs(12));
        assert_eq!(poll_delay(i, 0.5), Duration::from_secs(10));
    }
}
