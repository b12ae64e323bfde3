//! The vocabulary between a flow and its driver: [`Action`] (what a flow asks for),
//! [`Observation`] (what it is told), [`Effect`] / [`EffectOutcome`] (what only the
//! executor can do, typed with the contract's own types), [`FlowOutcome`] and the
//! [`Flow`] trait itself.

use std::time::Duration;

use chrono::{DateTime, Utc};
use cmautobuy_contract::{
    FlowStep, PddData, PurchaseResult, SpecResolutionRequest, SpecResolutionResponse,
};

use super::confirmation::Confirmation;
use super::failure::FlowFailure;
use crate::screen::windows::CoverKind;
use crate::screen::{AccountReading, Point, Screen, TopGoods};

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
    /// Tap a point; `label` is what the user would read there (trace and logs only);
    /// `kind` says what the tap may do to the screen ([`TapKind`]).
    Tap {
        at: Point,
        label: String,
        step: FlowStep,
        kind: TapKind,
    },
    Swipe {
        from: Point,
        to: Point,
        duration_ms: u32,
        step: FlowStep,
    },
    /// The BACK key.
    Back { step: FlowStep },
    /// Put the notification shade away (`cmd statusbar collapse`): a shell command, never
    /// a tap into the shade. Answered by [`Observation::Done`].
    CollapseShade { step: FlowStep },
    /// Read the goods id the phone shows from `dumpsys activity top` (real goods pages
    /// print none in the dump); answered by [`Observation::GoodsId`] (the parsed id,
    /// `crate::screen::activity`) or [`Observation::DeviceError`]. The raw output is
    /// saved as an artifact (evidence); the flow sees the parsed id only.
    ReadGoodsId { step: FlowStep },
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
            Action::CollapseShade { .. } => "collapse_shade",
            Action::ReadGoodsId { .. } => "read_goods_id",
            Action::Wait { .. } => "wait",
            Action::Effect(_) => "effect",
            Action::Finish(_) => "finish",
        }
    }
}

/// What a tap may do to the screen — how a flow declares it. The driver
/// hands it to the device guard (`job::guard`), and the observation dispatch ends a queue
/// of taps at the first one that can change the screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TapKind {
    /// Changes state inside the page on screen and opens or closes nothing: an option
    /// chip, a stepper. More taps planned on the same dump may follow it without a new
    /// dump (each is still checked against that dump).
    InPage,
    /// Can open or close a sheet, page or dialog: a buy button, a popup's close, 确定, a
    /// tab, a list row, 先去逛逛. It ends any queue: the next tap needs a fresh dump.
    ChangesScreen,
    /// The one submit (提交订单 / 确认下单), asked for only after the store answered
    /// [`EffectOutcome::Marked`]. The guard lets exactly one through, on a submit control
    /// of the freshest dump, and only after it saw the mark.
    Submit,
}

impl TapKind {
    /// Whether the next tap needs a fresh dump after this one.
    pub fn changes_screen(self) -> bool {
        !matches!(self, TapKind::InPage)
    }
}

/// Side effects outside the phone, performed by the executor (the shell's `Effects`).
/// Collect needs none; purchase uses both. Typed: the flow and the executor exchange the
/// contract's own types, never JSON values or message strings.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    /// Commit `irreversible_action_at` durably (synchronous=FULL) before the submit tap,
    /// with the confirmation crash recovery reconciles against.
    MarkIrreversible { confirmation: Box<Confirmation> },
    /// Send a §7.1 spec resolution once through the durable request.
    ResolveSpec(Box<SpecResolutionRequest>),
    /// Record durably, before the spec sheet's 确定 / 立即购买 is tapped, that a tap which
    /// should only open 确认订单 is about to go out, with what is known then: a crash
    /// after it is recovered as "an order may exist" (`ORDER_PLACED_UNCONFIRMED`), never
    /// as "nothing was submitted". It is not the irreversible mark (that comes before
    /// 提交订单, or late when the 确定 led elsewhere) and arms nothing.
    NoteProceed { confirmation: Box<Confirmation> },
}

impl Effect {
    /// The flow step the effect belongs to (traces).
    pub fn step(&self) -> FlowStep {
        match self {
            Effect::MarkIrreversible { .. } => FlowStep::SubmitOrder,
            Effect::ResolveSpec(_) => FlowStep::ResolveSpec,
            Effect::NoteProceed { .. } => FlowStep::ConfirmTotal,
        }
    }
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
    /// The device did not perform the last action (offline, timed out).
    DeviceError { message: String, retryable: bool },
    /// The phone refused the injected gesture or key (`INJECT_EVENTS`: MIUI / HyperOS
    /// without "USB调试（安全设置）"): nothing reached the app, and nothing will until a
    /// human turns the switch on. The task ends `INPUT_INJECTION_DENIED`.
    InputRefused { message: String },
    /// The device guard refused the last tap (a submit control, a pay action, or no
    /// fresh dump to judge it on): nothing reached the phone. Flows fail closed.
    TapRefused { reason: String },
    /// The device guard refused the last tap because a window of another package
    /// (notification shade, heads-up, keyboard, system dialog, chooser) would receive it;
    /// nothing reached the phone. The flow puts the window away and dumps again, bounded.
    Covered { kind: CoverKind, window: String },
    /// The dump right after a gesture was byte-identical to the one before it: the
    /// screen may not have caught up yet. The flow pauses and dumps again; the driver
    /// bounds how often (then the identical dump is handed over as a screen).
    StaleDump,
    /// A [`Action::Wait`] is over.
    Waited,
    /// The answer to an [`Action::Effect`].
    Effect(EffectOutcome),
    /// The answer to an [`Action::ReadGoodsId`].
    GoodsId(GoodsIdRead),
}

/// What `dumpsys activity top` said the phone shows (parsed by the driver), and the
/// artifact that holds the raw output.
#[derive(Clone, Debug, PartialEq)]
pub struct GoodsIdRead {
    pub shown: TopGoods,
    pub artifact_id: Option<String>,
}

/// The answer to an [`Effect`].
#[derive(Clone, Debug, PartialEq)]
pub enum EffectOutcome {
    /// The irreversible mark is committed, at this time.
    Marked { at: DateTime<Utc> },
    /// The store refused the mark: another run of this task is already marked, or this
    /// run already has an outcome. Nothing may be submitted.
    Refused { reason: String },
    /// The Admin answered a spec resolution.
    Resolved(Box<SpecResolutionResponse>),
    /// The note before the spec sheet's 确定 is committed ([`Effect::NoteProceed`]).
    Noted,
    /// The effect could not be performed; `retryable` says whether trying later may help.
    Failed { message: String, retryable: bool },
}

/// One dump as a flow sees it: the classified screen (every fact a flow decides on is
/// read by `crate::screen`; flows never see the raw tree) and the artifact that holds the
/// raw dump.
#[derive(Clone, Debug)]
pub struct Observed {
    pub screen: Screen,
    /// The account 个人中心 shows, when the dump is the profile page
    /// (`crate::screen::profile::read`; orthogonal to the page kind).
    pub account: Option<AccountReading>,
    pub artifact_id: Option<String>,
}

/// How a flow ended.
#[derive(Clone, Debug, PartialEq)]
pub enum FlowOutcome {
    /// A collect result (`pdd_data`).
    Collected(Box<PddData>),
    /// A purchase result (dry run or live).
    Purchased(Box<PurchaseResult>),
    /// The account check read 个人中心 ([`super::account::AccountFlow`]).
    Account(AccountReading),
    Failed(FlowFailure),
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

    /// The named crash-matrix point the last `observe` reached, if any (taken once).
    /// Flows only name it; the driver acts on it (`crate::failpoint`), so flows stay
    /// free of process-level effects.
    fn checkpoint(&mut self) -> Option<&'static str> {
        None
    }
}
