//! Fault plans.
//!
//! A [`FaultPlan`] targets one client endpoint (or `any`) and fires either on the Nth call
//! after it was installed (`nth`) or on each of the next N calls (`next`). What fires is a
//! [`Fault`]: added latency, an HTTP error with optional `Retry-After`, closing the
//! connection before responding, committing the effect and then dropping the connection,
//! a garbage body, or a body cut off mid-stream. See `mock-admin/README.md`.

use serde::{Deserialize, Serialize};
use std::sync::Mutex;

// The endpoint and journal types lived here before they got their own files; their old
// paths (`faults::Endpoint`, `faults::JournalEntry`, …) keep working.
pub use crate::endpoint::Endpoint;
pub use crate::journal::{Journal, JournalEntry, Outcome, OutcomeMark, JOURNAL_CAPACITY};

/// Which endpoint a plan targets.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum FaultTarget {
    Any,
    Registration,
    Claim,
    Result,
    Failure,
    SpecResolution,
}

impl FaultTarget {
    fn covers(self, e: Endpoint) -> bool {
        matches!(
            (self, e),
            (FaultTarget::Any, _)
                | (FaultTarget::Registration, Endpoint::Registration)
                | (FaultTarget::Claim, Endpoint::Claim)
                | (FaultTarget::Result, Endpoint::Result)
                | (FaultTarget::Failure, Endpoint::Failure)
                | (FaultTarget::SpecResolution, Endpoint::SpecResolution)
        )
    }
}

/// `Retry-After`: seconds or an HTTP date, sent verbatim.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(untagged)]
pub enum RetryAfter {
    Seconds(u64),
    Date(String),
}

impl RetryAfter {
    pub fn header_value(&self) -> String {
        match self {
            RetryAfter::Seconds(s) => s.to_string(),
            RetryAfter::Date(d) => d.clone(),
        }
    }
}

/// What happens to a request a plan fires on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Fault {
    /// Waits `ms` milliseconds, then handles the request normally.
    Latency { ms: u64 },
    /// Answers `status` in the §3 envelope without touching anything. `code` defaults by
    /// status (429 RATE_LIMITED, 500 INTERNAL_ERROR, 503 SERVICE_UNAVAILABLE or, on
    /// spec_resolution, SPEC_RESOLUTION_UNAVAILABLE; other statuses INTERNAL_ERROR).
    Status {
        status: u16,
        #[serde(default)]
        retry_after: Option<RetryAfter>,
        #[serde(default)]
        code: Option<String>,
    },
    /// Closes the connection without handling the request (nothing stored).
    CloseBeforeResponse,
    /// Handles the request (the effect is committed), then closes the connection without
    /// sending the response: the case idempotency keys exist for.
    CommitThenDrop,
    /// Handles the request (effect committed), answers 200 with a body that is not the
    /// answer: `{"accepted":tru` (truncated JSON, complete HTTP message).
    GarbageBody,
    /// Handles the request (effect committed), sends the status and headers and half of
    /// the real body, then aborts the connection mid-body.
    TruncatedBody,
}

impl Fault {
    pub fn name(&self) -> &'static str {
        match self {
            Fault::Latency { .. } => "latency",
            Fault::Status { .. } => "status",
            Fault::CloseBeforeResponse => "close_before_response",
            Fault::CommitThenDrop => "commit_then_drop",
            Fault::GarbageBody => "garbage_body",
            Fault::TruncatedBody => "truncated_body",
        }
    }
}

/// A scheduled fault. Give `nth` (fires once, on the Nth matching call after installation)
/// or `next` (fires on each of the next N matching calls); neither means `next: 1`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct FaultPlan {
    pub endpoint: FaultTarget,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<u32>,
    pub fault: Fault,
}

/// An installed plan and how many matching calls it has seen.
#[derive(Clone, Debug, Serialize, utoipa::ToSchema)]
pub struct InstalledFault {
    pub id: u64,
    pub plan: FaultPlan,
    pub seen: u32,
    pub fired: u32,
}

#[derive(Default)]
struct Book {
    next_id: u64,
    plans: Vec<InstalledFault>,
}

/// The installed fault plans.
#[derive(Default)]
pub struct Faults {
    book: Mutex<Book>,
}

impl Faults {
    /// Installs a plan; returns its id. `nth: 0` or `next: 0` is refused.
    pub fn add(&self, plan: FaultPlan) -> Result<u64, String> {
        if plan.nth == Some(0) || plan.next == Some(0) {
            return Err("nth and next count calls from 1".into());
        }
        if plan.nth.is_some() && plan.next.is_some() {
            return Err("give nth or next, not both".into());
        }
        if let Fault::Status {
            status,
            retry_after,
            ..
        } = &plan.fault
        {
            if !(400..=599).contains(status) {
                return Err("status must be 400–599".into());
            }
            if let Some(RetryAfter::Date(d)) = retry_after {
                if d.is_empty() || !d.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                    return Err("retry_after must be seconds or an HTTP date".into());
                }
            }
        }
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        book.next_id += 1;
        let id = book.next_id;
        book.plans.push(InstalledFault {
            id,
            plan,
            seen: 0,
            fired: 0,
        });
        Ok(id)
    }

    pub fn clear(&self) {
        self.book
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .plans
            .clear();
    }

    pub fn list(&self) -> Vec<InstalledFault> {
        self.book
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .plans
            .clone()
    }

    /// Counts a call to `e` for every plan that targets it and returns the fault that
    /// fires on it (the earliest installed plan wins). Spent plans are removed.
    pub fn on_call(&self, e: Endpoint) -> Option<Fault> {
        let mut book = self.book.lock().unwrap_or_else(|p| p.into_inner());
        let mut fired: Option<Fault> = None;
        for p in book.plans.iter_mut().filter(|p| p.plan.endpoint.covers(e)) {
            p.seen += 1;
            let fires = match (p.plan.nth, p.plan.next) {
                (Some(n), _) => p.seen == n,
                (None, Some(n)) => p.seen <= n,
                (None, None) => p.seen == 1,
            };
            if fires && fired.is_none() {
                p.fired += 1;
                fired = Some(p.plan.fault.clone());
            }
        }
        book.plans.retain(|p| match (p.plan.nth, p.plan.next) {
            (Some(n), _) => p.seen < n,
            (None, Some(n)) => p.seen < n,
            (None, None) => p.seen < 1,
        });
        fired
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nth_and_next_count_from_installation() {
        let f = Faults::default();
        f.add(FaultPlan {
            endpoint: FaultTarget::Result,
            nth: Some(2),
            next: None,
            fault: Fault::CommitThenDrop,
        })
        .unwrap();
        f.add(FaultPlan {
            endpoint: FaultTarget::Claim,
            nth: None,
            next: Some(2),
            fault: Fault::GarbageBody,
        })
        .unwrap();
        assert_eq!(f.on_call(Endpoint::Result), None);
        assert_eq!(f.on_call(Endpoint::Result), Some(Fault::CommitThenDrop));
        assert_eq!(f.on_call(Endpoint::Result), None);
        assert_eq!(f.on_call(Endpoint::Claim), Some(Fault::GarbageBody));
        assert_eq!(f.on_call(Endpoint::Claim), Some(Fault::GarbageBody));
        assert_eq!(f.on_call(Endpoint::Claim), None);
        assert!(f.list().is_empty());
    }
}
