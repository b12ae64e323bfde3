//! The request journal: every client request, in completion order — endpoint, client,
//! key, task and outcome (`fresh`, `replayed`, `conflict`, `fault`, `rejected` with the
//! code). Handlers leave an [`OutcomeMark`] on their answer; the client layer
//! (`http/client_layer.rs`) writes the entry.

use crate::endpoint::Endpoint;
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// How a request ended, as the journal records it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Handled for the first time (including a 204 claim).
    Fresh,
    /// The stored answer of an earlier request with the same key was replayed.
    Replayed,
    /// 409 IDEMPOTENCY_CONFLICT.
    Conflict,
    /// A fault plan fired (see `fault`; `committed` says whether the effect was stored).
    Fault,
    /// Refused with a §3 code (see `error_code`).
    Rejected,
}

/// One journal line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct JournalEntry {
    pub seq: u64,
    pub at: String,
    pub endpoint: Endpoint,
    pub method: String,
    pub path: String,
    pub client_id: Option<String>,
    pub idempotency_key: Option<String>,
    pub task_id: Option<String>,
    pub status: u16,
    pub outcome: Outcome,
    pub error_code: Option<String>,
    pub fault: Option<String>,
    /// For faults: whether the request's effect was committed before the fault.
    pub committed: Option<bool>,
}

/// How many entries the journal keeps; older ones are dropped first (a long rehearsal
/// must not grow the mock without bound).
pub const JOURNAL_CAPACITY: usize = 100_000;

#[derive(Default)]
struct JournalInner {
    next_seq: u64,
    entries: std::collections::VecDeque<JournalEntry>,
}

/// The request journal (in memory; the last [`JOURNAL_CAPACITY`] entries).
#[derive(Default)]
pub struct Journal {
    inner: Mutex<JournalInner>,
}

impl Journal {
    pub fn push(&self, mut e: JournalEntry) {
        let mut j = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        j.next_seq += 1;
        e.seq = j.next_seq;
        if j.entries.len() >= JOURNAL_CAPACITY {
            j.entries.pop_front();
        }
        j.entries.push_back(e);
    }

    pub fn entries(&self) -> Vec<JournalEntry> {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entries
            .iter()
            .cloned()
            .collect()
    }

    /// Forgets the entries; sequence numbers keep counting.
    pub fn clear(&self) {
        self.inner
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entries
            .clear();
    }
}

/// Answer-side marker a handler leaves on its response for the journal.
#[derive(Clone, Copy, Debug)]
pub struct OutcomeMark(pub Outcome);
