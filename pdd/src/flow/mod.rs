//! The device flows as pure, sans-IO state machines: collect, purchase, reconcile.
//!
//! # How a flow is driven
//! A flow is a value implementing [`Flow`]. The shell's driver (`crate::job::driver`)
//! calls [`Flow::observe`]`(now, observation)` and gets back the next [`Action`]; it
//! performs the action on the phone (or, for [`Action::Effect`], on the executor's store
//! and Admin), turns what happened into the next [`Observation`], and calls `observe`
//! again — until the flow answers [`Action::Finish`]. The first call carries
//! [`Observation::Start`].
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
//! # Code map (every file sits above what it imports; none performs I/O)
//! - [`action`] — the vocabulary: [`Action`], [`Observation`], [`Observed`],
//!   [`Effect`] / [`EffectOutcome`] (typed with the contract's own types),
//!   [`FlowOutcome`], [`AbortReason`], the [`Flow`] trait.
//! - [`failure`] — [`FlowFailure`]: status, stable code, step, message, diagnostics.
//! - [`observe`] — the observation dispatch all three machines share: queued taps,
//!   failed-dump and device-error counting, the bounded poll pause.
//! - [`confirmation`] — [`Confirmation`]: what the final confirmation showed, carried by
//!   the irreversible mark and stored with it.
//! - [`identity`] — whether the goods page shown is the task's goods (the goods id on
//!   the page, else `dumpsys activity top`, else the expected title), shared by collect
//!   and purchase, and the proof reported as `goods_identity`.
//! - [`collect`] — the collect flow (contract §6 `pdd_data`).
//! - [`sheet`] — merging the SKU sheet across scroll positions, reveal gestures.
//! - [`purchase`] — the purchase flow: option plan, §7.1 spec resolution, quantity,
//!   confirmation and the irreversible mark, then [`reconcile`] — leaving payment and
//!   finding the order (also crash recovery).
//! - [`account`] — the account check between tasks: reach 个人中心
//!   (`personal.html`, else the bottom tab) and read the nickname and masked phone.
//!
//! # Architecture invariants
//! - **Flow code does no I/O**: no adb, no SQLite, no clock, no sleeping, no process
//!   abort. Time comes in as `now`; everything else comes in as an [`Observation`].
//!   `scripts/check-layers` checks the imports of every file here.
//! - **Unknown screens are values.** A flow answers every observation, including
//!   [`crate::screen::Screen::Unknown`] and failed dumps, with an action.
//! - **Every failure carries a status, a stable code and a step** (`decisions.md` §5);
//!   before anything irreversible, transient device trouble is `retry_wait`.
//! - **Irreversible actions are effects.** A flow that is about to do something that
//!   cannot be undone (submitting an order) first asks for [`Effect::MarkIrreversible`]
//!   and acts only after [`EffectOutcome::Marked`]; [`EffectOutcome::Refused`] ends it
//!   without a tap. After the mark, [`Flow::abort`] must answer `manual_review`.

pub mod account;
pub mod action;
pub mod collect;
pub mod confirmation;
pub mod failure;
pub mod identity;
pub mod observe;
pub mod purchase;
pub mod reconcile;
pub mod sheet;

pub use action::{
    AbortReason, Action, Effect, EffectOutcome, Flow, FlowOutcome, GoodsIdRead, Observation,
    Observed, TapKind,
};
pub use confirmation::Confirmation;
pub use failure::FlowFailure;
