//! The observation dispatch every machine shares: what to do after a gesture or a wait
//! (send the next queued tap, or dump again), how failed dumps and device errors are
//! counted and when they end the flow, and the bounded pause between polls.
//!
//! Collect, purchase and reconcile each own a [`Dispatch`] and hand it every
//! [`Observation`] first ([`Dispatch::route`]); it answers with the action to take
//! ([`Routed::Act`]), the failure to finish with ([`Routed::Fail`]), or passes on what only
//! the machine can judge: the start, a screen, an effect's answer, a goods-id read, or a
//! [`Pending::Resume`] that the machine itself queued. A retry rule changed here changes
//! for all three machines at once.
//!
//! **Queue discipline**: taps planned on one dump ([`QueuedTap`]) go out
//! one per round trip only while they stay inside the page ([`TapKind::InPage`]: options,
//! steppers). The first tap that can change the screen ([`TapKind::ChangesScreen`]: a
//! buy button, a popup's close, 确定, back-like taps) ends the queue: whatever was queued
//! after it is dropped and a fresh dump follows, from which the machine plans again. The
//! device guard refuses a tap with no fresh dump to judge it on, so the rule holds even
//! if a machine broke it. A refused tap ([`Observation::TapRefused`]) ends the flow
//! (`manual_review`, nothing reached the phone); a stale dump
//! ([`Observation::StaleDump`]) is answered with the poll pause and a new dump.
//!
//! **Foreign windows**: a tap the guard refused because another
//! package's window would receive it ([`Observation::Covered`]) is answered by putting the
//! window away without touching it — the shade with `cmd statusbar collapse`
//! ([`Action::CollapseShade`]), a heads-up by waiting [`HEADS_UP_WAIT`] for it to decay,
//! a keyboard, a system dialog, a chooser or another app with BACK — then a fresh dump,
//! from which the machine plans again. At most [`COVER_LIMIT`] times per flow; then, or at
//! once for a status / navigation bar, the flow ends `SCREEN_OBSTRUCTED` (`retry_wait`
//! before the mark).

use std::time::Duration;

use cmautobuy_contract::{FailureCode, FailureStatus, FlowStep};

use super::action::{
    Action, EffectOutcome, FlowOutcome, GoodsIdRead, Observation, Observed, TapKind,
};
use super::failure::FlowFailure;
use super::sheet::{reveal_swipe, Reveal};
use crate::screen::goods;
use crate::screen::windows::CoverKind;

/// Foreign windows put away per flow before it gives up (`SCREEN_OBSTRUCTED`).
pub const COVER_LIMIT: u32 = 5;

/// How long a heads-up notification is waited for (AOSP decays it after 5 s).
pub const HEADS_UP_WAIT: Duration = Duration::from_secs(2);
use crate::screen::{Bounds, Point, Screen};

/// A tap planned on a dump and queued: where, what the user reads there, what it may do
/// to the screen.
#[derive(Clone, Debug, PartialEq)]
pub struct QueuedTap {
    pub at: Point,
    pub label: String,
    pub kind: TapKind,
}

impl QueuedTap {
    /// An option or stepper tap: the page stays, more taps may follow on the same dump.
    pub fn in_page(at: Point, label: impl Into<String>) -> QueuedTap {
        QueuedTap {
            at,
            label: label.into(),
            kind: TapKind::InPage,
        }
    }

    /// A tap that can open or close a sheet or page: nothing queued after it is sent.
    pub fn changes_screen(at: Point, label: impl Into<String>) -> QueuedTap {
        QueuedTap {
            at,
            label: label.into(),
            kind: TapKind::ChangesScreen,
        }
    }
}

/// What a machine has queued for the next `Done` / `Waited`.
#[derive(Clone, Debug, PartialEq)]
pub enum Pending {
    /// Dump the screen for this step.
    Observe(FlowStep),
    /// Send these taps one per round trip (planned on one dump, every one but possibly
    /// the last [`TapKind::InPage`]), then dump for `step`.
    Taps(Vec<QueuedTap>, FlowStep),
    /// Dump for whatever step is current then (the default after every round trip).
    Current,
    /// Ask the machine ([`Routed::Resume`]).
    Resume,
}

/// How one machine counts trouble.
#[derive(Clone, Copy, Debug)]
pub struct Policy {
    /// The bounded pause before dumping again after trouble.
    pub poll_pause: Duration,
    /// Failed dumps in a row that end the flow.
    pub dump_failures: u32,
    /// Device errors in a row that end the flow; `None`: counted with failed dumps.
    pub device_errors: Option<u32>,
    /// A failure that is not retryable ends the flow at once.
    pub give_up_on_permanent: bool,
    /// The status of the failures this dispatch produces (`retry_wait` before anything
    /// irreversible, `manual_review` after it).
    pub status: FailureStatus,
}

impl Policy {
    /// Collect and purchase before the mark: transient trouble is `retry_wait`; two
    /// device errors in a row end the flow.
    pub fn before_mark(poll_pause: Duration, dump_failures: u32) -> Policy {
        Policy {
            poll_pause,
            dump_failures,
            device_errors: Some(2),
            give_up_on_permanent: true,
            status: FailureStatus::RetryWait,
        }
    }

    /// Reconciliation after the mark: every failure is `manual_review` (an order may
    /// exist); device errors count with failed dumps.
    pub fn after_mark(poll_pause: Duration, dump_failures: u32) -> Policy {
        Policy {
            poll_pause,
            dump_failures,
            device_errors: None,
            give_up_on_permanent: false,
            status: FailureStatus::ManualReview,
        }
    }
}

/// What [`Dispatch::route`] made of an observation.
#[derive(Debug)]
pub enum Routed {
    /// The first observation.
    Start,
    /// A parsed dump: the machine decides.
    Screen(Box<Observed>),
    /// The answer to an effect.
    Effect(EffectOutcome),
    /// The answer to a goods-id read (`dumpsys activity top`).
    GoodsId(GoodsIdRead),
    /// The machine's own queued continuation ([`Pending::Resume`]).
    Resume,
    /// Do this next.
    Act(Action),
    /// Finish with this failure (the machine may add diagnostics).
    Fail(FlowFailure),
}

/// The shared bookkeeping of one machine.
#[derive(Clone, Debug)]
pub struct Dispatch {
    policy: Policy,
    /// The step being worked on (names dumps and failures).
    pub step: FlowStep,
    /// What the next `Done` / `Waited` continues with.
    pub pending: Pending,
    dump_failures: u32,
    device_errors: u32,
    covers: u32,
}

impl Dispatch {
    pub fn new(policy: Policy, step: FlowStep) -> Dispatch {
        Dispatch {
            policy,
            pending: Pending::Current,
            step,
            dump_failures: 0,
            device_errors: 0,
            covers: 0,
        }
    }

    /// Dump now for `step` (and make it the current step).
    pub fn observe_now(&mut self, step: FlowStep) -> Action {
        self.step = step.clone();
        Action::Observe { step }
    }

    /// Dump again for the current step after the bounded pause.
    pub fn pause_then_observe(&mut self) -> Action {
        self.pending = Pending::Current;
        Action::Wait {
            duration: self.policy.poll_pause,
        }
    }

    /// Send the first of `taps` now and queue the rest, then a dump for `step`. A tap
    /// that can change the screen ends the queue: what follows it is dropped (the
    /// machine plans again on the fresh dump). `None` when `taps` is empty.
    pub fn tap_all(&mut self, taps: Vec<QueuedTap>, step: FlowStep) -> Option<Action> {
        let mut taps = taps.into_iter();
        let QueuedTap { at, label, kind } = taps.next()?;
        let rest: Vec<QueuedTap> = if kind.changes_screen() {
            Vec::new()
        } else {
            taps.collect()
        };
        self.pending = if rest.is_empty() {
            Pending::Observe(step.clone())
        } else {
            Pending::Taps(rest, step.clone())
        };
        self.step = step.clone();
        Some(Action::Tap {
            at,
            label,
            step,
            kind,
        })
    }

    /// Routes `obs`: queued continuations and trouble counting here, everything else to
    /// the machine.
    pub fn route(&mut self, obs: Observation) -> Routed {
        match obs {
            Observation::Start => Routed::Start,
            Observation::Done | Observation::Waited => {
                if matches!(obs, Observation::Done) && self.policy.device_errors.is_some() {
                    self.device_errors = 0;
                }
                match std::mem::replace(&mut self.pending, Pending::Current) {
                    Pending::Observe(step) => Routed::Act(self.observe_now(step)),
                    Pending::Current => Routed::Act(self.observe_now(self.step.clone())),
                    Pending::Taps(rest, step) => match self.tap_all(rest, step.clone()) {
                        Some(a) => Routed::Act(a),
                        None => Routed::Act(self.observe_now(step)),
                    },
                    Pending::Resume => Routed::Resume,
                }
            }
            Observation::Screen(o) => {
                self.dump_failures = 0;
                if self.policy.device_errors.is_some() {
                    self.device_errors = 0;
                }
                Routed::Screen(o)
            }
            Observation::DumpFailed {
                code,
                message,
                retryable,
            } => {
                self.dump_failures += 1;
                let permanent = self.policy.give_up_on_permanent && !retryable;
                if permanent || self.dump_failures >= self.policy.dump_failures {
                    return Routed::Fail(
                        self.failure(FailureCode::UiDumpFailed, message)
                            .with("dump_error", code),
                    );
                }
                Routed::Act(self.pause_then_observe())
            }
            Observation::DeviceError { message, retryable } => {
                let (count, limit) = match self.policy.device_errors {
                    Some(limit) => {
                        self.device_errors += 1;
                        (self.device_errors, limit)
                    }
                    None => {
                        self.dump_failures += 1;
                        (self.dump_failures, self.policy.dump_failures)
                    }
                };
                let permanent = self.policy.give_up_on_permanent && !retryable;
                if permanent || count >= limit {
                    return Routed::Fail(self.failure(FailureCode::DeviceOffline, message));
                }
                Routed::Act(self.pause_then_observe())
            }
            Observation::Effect(out) => Routed::Effect(out),
            Observation::GoodsId(read) => {
                // The phone answered: the device is there.
                if self.policy.device_errors.is_some() {
                    self.device_errors = 0;
                }
                Routed::GoodsId(read)
            }
            // Retrying cannot help: every gesture will be refused until a human acts.
            Observation::InputRefused { message } => {
                Routed::Fail(self.failure(FailureCode::InputInjectionDenied, message))
            }
            // Nothing reached the phone, but the flow's picture of the screen was wrong
            // enough to aim at a money control (or at nothing fresh): a human looks.
            Observation::TapRefused { reason } => Routed::Fail(
                FlowFailure::manual(
                    FailureCode::PageNotRecognized,
                    self.step.clone(),
                    format!("the device guard refused a tap ({reason}); nothing was tapped"),
                )
                .with("device_error", "TAP_REFUSED"),
            ),
            // The screen may not have caught up with the gesture: pause, dump again.
            Observation::StaleDump => Routed::Act(self.pause_then_observe()),
            Observation::Covered { kind, window } => self.uncover(kind, window),
        }
    }

    /// The pages collect and purchase answer alike before anything irreversible: a login
    /// page or a security check ends the flow for a human (`manual_review`), a popup is
    /// dismissed (its close target, else BACK) at most `popup_limit` times, a "goods does
    /// not exist" page is `failed GOODS_UNAVAILABLE`. `None` for every other page.
    pub fn common_page(
        &mut self,
        screen: &Screen,
        popups: &mut u32,
        popup_limit: u32,
    ) -> Option<Action> {
        let finish = |f: FlowFailure| Some(Action::Finish(FlowOutcome::Failed(f)));
        match screen {
            Screen::LoginRequired(l) => finish(
                FlowFailure::manual(
                    FailureCode::LoginRequired,
                    self.step.clone(),
                    "the PDD app asks to log in",
                )
                .with("marker", l.marker.clone()),
            ),
            Screen::RiskVerification(r) => finish(
                FlowFailure::manual(
                    FailureCode::RiskVerification,
                    self.step.clone(),
                    "the PDD app shows a security verification",
                )
                .with("marker", r.marker.clone()),
            ),
            Screen::Popup(p) => {
                *popups += 1;
                if *popups > popup_limit {
                    return finish(FlowFailure::retry(
                        FailureCode::PageNotRecognized,
                        FlowStep::DismissPopup,
                        "popups keep coming back",
                    ));
                }
                self.pending = Pending::Observe(self.step.clone());
                Some(match &p.dismiss {
                    Some(t) => Action::Tap {
                        at: t.tap,
                        label: t.label.clone(),
                        step: FlowStep::DismissPopup,
                        kind: TapKind::ChangesScreen,
                    },
                    None => Action::Back {
                        step: FlowStep::DismissPopup,
                    },
                })
            }
            Screen::Unknown(u) if goods::says_goods_gone(&u.labels) => finish(FlowFailure::failed(
                FailureCode::GoodsUnavailable,
                self.step.clone(),
                "the goods page says the goods does not exist or is off the shelf",
            )),
            _ => None,
        }
    }

    /// A scroll of the option sheet (or a grid) towards `dir`, counted against `limit`;
    /// then a dump for `step`.
    pub fn reveal(
        &mut self,
        swipes: &mut u32,
        limit: u32,
        swipe_ms: u32,
        area: Bounds,
        dir: Reveal,
        step: FlowStep,
    ) -> Action {
        *swipes += 1;
        if *swipes > limit {
            return Action::Finish(FlowOutcome::Failed(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                step,
                "the option sheet needed too many scrolls",
            )));
        }
        let (from, to) = reveal_swipe(area, dir);
        self.pending = Pending::Observe(step.clone());
        Action::Swipe {
            from,
            to,
            duration_ms: swipe_ms,
            step,
        }
    }

    /// Puts a covering window away (never by tapping it), then dumps again; bounded.
    fn uncover(&mut self, kind: CoverKind, window: String) -> Routed {
        self.covers += 1;
        if kind == CoverKind::SystemBar || self.covers > COVER_LIMIT {
            return Routed::Fail(
                self.failure(
                    FailureCode::ScreenObstructed,
                    format!(
                        "{} `{window}` kept covering the point to tap ({} time(s)); nothing was tapped into it",
                        kind.as_str(),
                        self.covers
                    ),
                )
                .with("cover", kind.as_str())
                .with("window", window),
            );
        }
        let step = self.step.clone();
        self.pending = Pending::Observe(step);
        Routed::Act(match kind {
            CoverKind::Shade => Action::CollapseShade {
                step: FlowStep::DismissOverlay,
            },
            CoverKind::HeadsUp => Action::Wait {
                duration: HEADS_UP_WAIT,
            },
            CoverKind::Keyboard
            | CoverKind::SystemDialog
            | CoverKind::Chooser
            | CoverKind::OtherApp
            | CoverKind::SystemBar => Action::Back {
                step: FlowStep::DismissOverlay,
            },
        })
    }

    fn failure(&self, code: FailureCode, message: String) -> FlowFailure {
        FlowFailure::new(self.policy.status, code, self.step.clone(), message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dispatch(policy: Policy) -> Dispatch {
        Dispatch::new(policy, FlowStep::OpenGoods)
    }

    fn dump_failed(retryable: bool) -> Observation {
        Observation::DumpFailed {
            code: "UI_IDLE_STATE".into(),
            message: "could not get idle state".into(),
            retryable,
        }
    }

    #[test]
    fn queued_taps_go_out_one_per_round_trip_then_a_dump() {
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 4));
        let p = |x| Point { x, y: 1 };
        let first = d.tap_all(
            vec![QueuedTap::in_page(p(1), "a"), QueuedTap::in_page(p(2), "b")],
            FlowStep::SelectColor,
        );
        assert!(matches!(first, Some(Action::Tap { at, .. }) if at == p(1)));
        assert!(
            matches!(d.route(Observation::Done), Routed::Act(Action::Tap { at, .. }) if at == p(2))
        );
        assert!(matches!(
            d.route(Observation::Done),
            Routed::Act(Action::Observe {
                step: FlowStep::SelectColor
            })
        ));
    }

    #[test]
    fn a_tap_that_changes_the_screen_ends_the_queue() {
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 4));
        let p = |x| Point { x, y: 1 };
        // A popup's close, then an option planned on the same dump: the close goes out,
        // the option does not — a fresh dump comes first.
        let first = d.tap_all(
            vec![
                QueuedTap::changes_screen(p(1), "关闭"),
                QueuedTap::in_page(p(2), "黑色"),
            ],
            FlowStep::SelectColor,
        );
        assert!(matches!(
            first,
            Some(Action::Tap { at, kind: TapKind::ChangesScreen, .. }) if at == p(1)
        ));
        assert!(matches!(
            d.route(Observation::Done),
            Routed::Act(Action::Observe {
                step: FlowStep::SelectColor
            })
        ));
        // In-page taps stay queued up to a screen-changing one, which is the last.
        let first = d.tap_all(
            vec![
                QueuedTap::in_page(p(1), "黑色"),
                QueuedTap::changes_screen(p(2), "确定"),
                QueuedTap::in_page(p(3), "L"),
            ],
            FlowStep::SelectColor,
        );
        assert!(matches!(first, Some(Action::Tap { at, kind: TapKind::InPage, .. }) if at == p(1)));
        assert!(matches!(
            d.route(Observation::Done),
            Routed::Act(Action::Tap { at, kind: TapKind::ChangesScreen, .. }) if at == p(2)
        ));
        assert!(matches!(
            d.route(Observation::Done),
            Routed::Act(Action::Observe { .. })
        ));
    }

    #[test]
    fn a_refused_tap_fails_closed_and_a_stale_dump_waits_then_dumps() {
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 4));
        let Routed::Fail(f) = d.route(Observation::TapRefused {
            reason: "`去付款` is a pay action".into(),
        }) else {
            panic!("a refused tap ends the flow")
        };
        assert_eq!(f.status, FailureStatus::ManualReview);
        assert_eq!(f.code, FailureCode::PageNotRecognized);
        assert!(f.message.contains("去付款"), "{}", f.message);
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 4));
        d.step = FlowStep::SelectSize;
        assert!(matches!(
            d.route(Observation::StaleDump),
            Routed::Act(Action::Wait { duration }) if duration == Duration::from_millis(300)
        ));
        assert!(matches!(
            d.route(Observation::Waited),
            Routed::Act(Action::Observe {
                step: FlowStep::SelectSize
            })
        ));
    }

    #[test]
    fn a_covered_tap_puts_the_window_away_without_a_tap_then_gives_up() {
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 4));
        d.step = FlowStep::SelectColor;
        let covered = |kind| Observation::Covered {
            kind,
            window: "w".into(),
        };
        assert!(matches!(
            d.route(covered(CoverKind::Shade)),
            Routed::Act(Action::CollapseShade { .. })
        ));
        assert!(matches!(
            d.route(Observation::Done),
            Routed::Act(Action::Observe {
                step: FlowStep::SelectColor
            })
        ));
        assert!(matches!(
            d.route(covered(CoverKind::HeadsUp)),
            Routed::Act(Action::Wait { duration }) if duration == HEADS_UP_WAIT
        ));
        assert!(matches!(
            d.route(Observation::Waited),
            Routed::Act(Action::Observe { .. })
        ));
        for k in [
            CoverKind::Keyboard,
            CoverKind::SystemDialog,
            CoverKind::Chooser,
        ] {
            assert!(
                matches!(d.route(covered(k)), Routed::Act(Action::Back { .. })),
                "{k:?}"
            );
        }
        let Routed::Fail(f) = d.route(covered(CoverKind::Keyboard)) else {
            panic!("bounded")
        };
        assert_eq!(
            (f.status, f.code),
            (FailureStatus::RetryWait, FailureCode::ScreenObstructed)
        );
        // A system bar cannot be put away: at once.
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 4));
        assert!(matches!(
            d.route(covered(CoverKind::SystemBar)),
            Routed::Fail(_)
        ));
        // After the mark: manual_review.
        let mut d = dispatch(Policy::after_mark(Duration::from_millis(300), 4));
        let Routed::Fail(f) = d.route(covered(CoverKind::SystemBar)) else {
            panic!("fails")
        };
        assert_eq!(f.status, FailureStatus::ManualReview);
    }

    #[test]
    fn before_the_mark_dump_failures_are_retry_wait_at_the_limit() {
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 3));
        assert!(matches!(
            d.route(dump_failed(true)),
            Routed::Act(Action::Wait { .. })
        ));
        assert!(matches!(
            d.route(dump_failed(true)),
            Routed::Act(Action::Wait { .. })
        ));
        let Routed::Fail(f) = d.route(dump_failed(true)) else {
            panic!("third failure ends it")
        };
        assert_eq!(f.status, FailureStatus::RetryWait);
        assert_eq!(f.code, FailureCode::UiDumpFailed);
        // A permanent failure ends it at once.
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 3));
        assert!(matches!(d.route(dump_failed(false)), Routed::Fail(_)));
    }

    #[test]
    fn a_screen_resets_the_counts_and_a_done_resets_device_errors() {
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 2));
        let err = || Observation::DeviceError {
            message: "offline".into(),
            retryable: true,
        };
        assert!(matches!(d.route(err()), Routed::Act(Action::Wait { .. })));
        assert!(matches!(d.route(Observation::Done), Routed::Act(_)));
        assert!(matches!(d.route(err()), Routed::Act(Action::Wait { .. })));
        let Routed::Fail(f) = d.route(err()) else {
            panic!("two in a row end it")
        };
        assert_eq!(f.code, FailureCode::DeviceOffline);
    }

    #[test]
    fn after_the_mark_everything_is_manual_review_and_counted_together() {
        let mut d = dispatch(Policy::after_mark(Duration::from_millis(300), 2));
        assert!(matches!(
            d.route(Observation::DeviceError {
                message: "offline".into(),
                retryable: false,
            }),
            Routed::Act(Action::Wait { .. })
        ));
        let Routed::Fail(f) = d.route(dump_failed(false)) else {
            panic!("limit reached")
        };
        assert_eq!(f.status, FailureStatus::ManualReview);
    }

    #[test]
    fn refused_input_ends_the_task_at_once_with_its_own_code() {
        let refused = || Observation::InputRefused {
            message: "INJECT_EVENTS".into(),
        };
        let mut d = dispatch(Policy::before_mark(Duration::from_millis(300), 5));
        let Routed::Fail(f) = d.route(refused()) else {
            panic!("no retry: nothing will go through until a human acts")
        };
        assert_eq!(f.code, FailureCode::InputInjectionDenied);
        assert_eq!(f.status, FailureStatus::RetryWait);
        // After the mark it is manual_review like everything else.
        let mut d = dispatch(Policy::after_mark(Duration::from_millis(300), 5));
        let Routed::Fail(f) = d.route(refused()) else {
            panic!("ends at once")
        };
        assert_eq!(f.status, FailureStatus::ManualReview);
    }
}
