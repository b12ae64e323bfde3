//! Device flows (collect now; purchase, dry run, reconcile and crash recovery next) as
//! sans-IO state machines, and the driver that runs them on a phone.
//!
//! # How a flow is driven
//! A flow is a value implementing [`Flow`]. The driver ([`driver::drive`]) calls
//! [`Flow::observe`]`(now, observation)` and gets back the next [`Action`]; it performs
//! the action on a [`driver::FlowDevice`] (or, for [`Action::Effect`], on the
//! executor's [`driver::Effects`]: store and Admin), turns what happened into the next
//! [`Observation`], and calls `observe` again — until the flow answers
//! [`Action::Finish`]. The first call carries [`Observation::Start`].
//!
//! ```text
//!   Start ─► flow.observe ─► OpenUrl ─► device ─► Done ─► flow.observe ─► Observe
//!        ─► device dump ─► parse + classify (+ artifact) ─► Screen ─► flow.observe ─► …
//! ```
//!
//! Observing is an explicit action ([`Action::Observe`]) so a flow decides when a dump
//! is worth its round trip (act, then dump once); every dump the driver takes is parsed,
//! classified and saved as an artifact before the flow sees it. Waiting is explicit
//! too ([`Action::Wait`]), always bounded by the flow's own poll budget, never a blind
//! sleep.
//!
//! # Code map
//! - this file — the vocabulary: [`Action`], [`Observation`], [`Observed`],
//!   [`FlowOutcome`], [`FlowFailure`], [`Flow`], [`AbortReason`], [`Effect`].
//! - [`driver`] — [`driver::drive`]: the loop above, the [`driver::FlowDevice`] port,
//!   artifacts at every dump/screenshot, a screenshot at every failure, counters and the
//!   action trace, the step budget.
//! - [`collect`] — the collect flow (contract §6 `pdd_data`).
//! - [`sheet`] — reading and navigating the SKU sheet shared by collect and purchase:
//!   dimension keys, option merging across scroll positions, reveal gestures.
//! - [`purchase`] — the purchase flow (dry run and live, §7.1 spec resolution, the
//!   total-price guard, the irreversible mark, never pay); [`reconcile`] — finding the
//!   order a live purchase created (also crash recovery); [`guard`] — the device wrapper
//!   that refuses pay buttons and a second submit; [`purchase_job`] — purchase jobs and
//!   crash recovery for the executor (issue 7).
//! - [`goods`] — goods-page facts the screen module does not extract (shop name, list
//!   price, identity check against the task).
//! - [`sim`] — a [`driver::FlowDevice`] over the simulated phone in-process (no
//!   network): the scripted device of the flow tests.
//! - [`adb`] — the port over the real [`crate::device::Device`] (ADB with deadlines).
//! - [`exec`] — [`exec::FlowExecutor`]: the claim loop's [`crate::executor::Executor`]
//!   that runs flows for claimed tasks and turns their outcomes into §6/§7 reports.
//!
//! # Architecture invariants
//! - **Flow code does no I/O**: no adb, no SQLite, no clock, no sleeping. Time comes in
//!   as `now`; everything else comes in as an [`Observation`].
//! - **Unknown screens are values.** A flow answers every observation, including
//!   [`crate::screen::Screen::Unknown`] and failed dumps, with an action.
//! - **Every failure carries a status, a stable code and a step** (`decisions.md` §5);
//!   before anything irreversible, transient device trouble is `retry_wait`.
//! - **Irreversible actions are effects.** A flow that is about to do something that
//!   cannot be undone (submitting an order) first asks for [`Effect::MarkIrreversible`]
//!   and only acts after [`Observation::Effect`] confirms the mark is durable; after it,
//!   [`Flow::abort`] must answer `manual_review`.

pub mod adb;
pub mod collect;
pub mod driver;
pub mod exec;
pub mod goods;
pub mod guard;
pub mod purchase;
pub mod purchase_job;
pub mod reconcile;
pub mod sheet;
#[cfg(all(test, feature = "rehearse"))]
mod tests;

use std::time::Duration;

use chrono::{DateTime, Utc};
use cmautobuy_contract::{FailureCode, FailureStatus, FlowStep, PddData, PurchaseResult};
use serde_json::{Map, Value};

use crate::screen::{Point, Screen, Tree};

/// What a flow asks the driver to do next.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Dump the UI; the answer is [`Observation::Screen`] or [`Observation::DumpFailed`].
    /// `step` names the artifact (`NN-{step}.xml`).
    Observe { step: FlowStep },
    /// Take a screenshot for the evidence (`NN-{step}.png`); answered by
    /// [`Observation::Done`] (or [`Observation::DeviceError`]).
    Screenshot { step: FlowStep },
    /// Open a deep link (the device quotes it for the shell).
    OpenUrl { url: String, step: FlowStep },
    /// Tap a point; `label` is what the user would read there (trace and logs only).
    Tap {
        at: Point,
        label: String,
        step: FlowStep,
    },
    Swipe {
        from: Point,
        to: Point,
        duration_ms: u32,
        step: FlowStep,
    },
    /// The BACK key.
    Back { step: FlowStep },
    /// Pause before polling again; answered by [`Observation::Waited`]. Flows bound how
    /// often they wait.
    Wait { duration: Duration },
    /// Something only the executor can do (durable store writes, Admin calls).
    Effect(Effect),
    /// The flow is over.
    Finish(FlowOutcome),
}

impl Action {
    /// A short name for traces: `observe`, `tap`, …
    pub fn kind(&self) -> &'static str {
        match self {
            Action::Observe { .. } => "observe",
            Action::Screenshot { .. } => "screenshot",
            Action::OpenUrl { .. } => "open_url",
            Action::Tap { .. } => "tap",
            Action::Swipe { .. } => "swipe",
            Action::Back { .. } => "back",
            Action::Wait { .. } => "wait",
            Action::Effect(_) => "effect",
            Action::Finish(_) => "finish",
        }
    }
}

/// Side effects outside the phone, performed by the executor (see
/// [`driver::Effects`]). Collect needs none; purchase (issue 7) uses both.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Commit `irreversible_action_at` durably (synchronous=FULL) before the submit tap,
    /// with the confirmation `snapshot` crash recovery reconciles against (issue 7).
    MarkIrreversible { step: FlowStep, snapshot: Value },
    /// Send a §7.1 spec resolution once through the durable request (body as JSON).
    ResolveSpec { request: Value },
}

/// What a flow is told.
#[derive(Clone, Debug)]
pub enum Observation {
    /// The first call.
    Start,
    /// A dump, parsed and classified.
    Screen(Box<Observed>),
    /// The dump failed (uiautomator error text, empty or malformed output, …).
    DumpFailed {
        code: String,
        message: String,
        retryable: bool,
    },
    /// The last gesture / deep link / screenshot was performed.
    Done,
    /// The device did not perform the last action (offline, timed out, refused).
    DeviceError { message: String, retryable: bool },
    /// A [`Action::Wait`] is over.
    Waited,
    /// The answer to an [`Action::Effect`].
    Effect(EffectOutcome),
}

/// The answer to an [`Effect`].
#[derive(Clone, Debug, PartialEq)]
pub enum EffectOutcome {
    /// The irreversible mark is committed, at this time.
    Marked { at: DateTime<Utc> },
    /// The Admin answered a spec resolution (the body as JSON).
    Resolved { answer: Value },
    /// The effect could not be performed; `retryable` says whether trying later may help.
    Failed { message: String, retryable: bool },
}

/// One dump as a flow sees it: the classified screen, the tree it came from (for facts
/// the classifier does not extract), and the artifact that holds the raw dump.
#[derive(Clone, Debug)]
pub struct Observed {
    pub screen: Screen,
    pub tree: Tree,
    pub artifact_id: Option<String>,
}

/// How a flow ended.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowOutcome {
    /// A collect result (`pdd_data`).
    Collected(Box<PddData>),
    /// A purchase result (dry run or live), issue 7.
    Purchased(Box<PurchaseResult>),
    Failed(FlowFailure),
}

/// A §7 failure as a flow knows it; the executor adds attempt, version, time and the
/// artifact references.
#[derive(Clone, Debug, PartialEq)]
pub struct FlowFailure {
    pub status: FailureStatus,
    pub code: FailureCode,
    pub step: FlowStep,
    pub message: String,
    /// Extra `diagnostics` fields (the executor adds `artifact_ids` and
    /// `artifact_ref`).
    pub diagnostics: Map<String, Value>,
}

impl FlowFailure {
    pub fn new(
        status: FailureStatus,
        code: FailureCode,
        step: FlowStep,
        message: impl Into<String>,
    ) -> Self {
        FlowFailure {
            status,
            code,
            step,
            message: message.into(),
            diagnostics: Map::new(),
        }
    }

    /// Transient device/app trouble before anything irreversible.
    pub fn retry(code: FailureCode, step: FlowStep, message: impl Into<String>) -> Self {
        Self::new(FailureStatus::RetryWait, code, step, message)
    }

    /// Only a human can fix it (login, risk check, no address).
    pub fn manual(code: FailureCode, step: FlowStep, message: impl Into<String>) -> Self {
        Self::new(FailureStatus::ManualReview, code, step, message)
    }

    /// A business refusal (wrong goods, sold out, delisted).
    pub fn failed(code: FailureCode, step: FlowStep, message: impl Into<String>) -> Self {
        Self::new(FailureStatus::Failed, code, step, message)
    }

    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.diagnostics.insert(key.to_string(), value.into());
        self
    }
}

/// Why the driver stops a flow that has not finished.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AbortReason {
    /// The flow asked for more actions than the driver's budget allows.
    StepBudget { actions: u32 },
}

/// A device flow: a state machine fed by observations.
pub trait Flow {
    /// The next action given what just happened. Must not block, sleep, or do I/O.
    fn observe(&mut self, now: DateTime<Utc>, obs: Observation) -> Action;

    /// The driver stops the flow; the flow picks the status (`manual_review` once an
    /// irreversible mark exists, else usually `retry_wait`).
    fn abort(&mut self, now: DateTime<Utc>, reason: AbortReason) -> FlowFailure;
}

/// A failed UI dump, shared by the collect and purchase flows: counts it and returns the
/// failure to finish with when it is not retryable or `limit` dumps in a row have failed.
pub(crate) fn dump_failed(
    count: &mut u32,
    limit: u32,
    step: &FlowStep,
    code: String,
    message: String,
    retryable: bool,
) -> Option<FlowFailure> {
    *count += 1;
    if !retryable || *count >= limit {
        return Some(
            FlowFailure::retry(FailureCode::UiDumpFailed, step.clone(), message)
                .with("dump_error", code),
        );
    }
    None
}

/// A failed device action, shared by the collect and purchase flows: counts it and returns
/// the failure to finish with when it is not retryable or it is the second in a row.
pub(crate) fn device_error(
    count: &mut u32,
    step: &FlowStep,
    message: String,
    retryable: bool,
) -> Option<FlowFailure> {
    *count += 1;
    if !retryable || *count >= 2 {
        return Some(FlowFailure::retry(
            FailureCode::DeviceOffline,
            step.clone(),
            message,
        ));
    }
    None
}
