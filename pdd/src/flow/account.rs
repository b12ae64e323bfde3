//! The account check: reach 个人中心 and read the account fingerprint
//! (nickname, masked phone) it shows. Between tasks, never inside one; it only opens a
//! link, taps the bottom tab 个人中心 and reads.
//!
//! # Steps
//! 1. Open [`PROFILE_LINK`] (`personal.html`), dump.
//! 2. A dump that reads as the profile (`Observed::account`, `crate::screen::profile`)
//!    ends the flow with [`FlowOutcome::Account`].
//! 3. Otherwise, after `link_waits` re-dumps: the label path — the bottom tab 个人中心 of
//!    the page on screen (tapped at most `tab_taps` times), or the home link
//!    [`HOME_LINK`] once when the page offers no tab (a goods page, a sheet, another
//!    app), then the tab.
//! 4. A login page or a security check ends it `manual_review` (the runner treats that as
//!    a failed check: live stays off); popups are dismissed as collect does, bounded.
//!    Anything else left unreached is `retry_wait PAGE_NOT_RECOGNIZED`.
//!
//! The flow decides nothing about the fingerprint: the runner compares what it read with
//! the baseline the store holds (`crate::account`).

use std::time::Duration;

use chrono::{DateTime, Utc};
use cmautobuy_contract::{FailureCode, FlowStep};

use super::action::{AbortReason, Action, Flow, FlowOutcome, Observation, Observed, TapKind};
use super::failure::FlowFailure;
use super::observe::{Dispatch, Policy, Routed};
use super::reconcile::HOME_LINK;
use crate::screen::Screen;

/// 个人中心 (public deep-link tables list it for the app; the mobile web's profile page).
pub const PROFILE_LINK: &str = "pinduoduo://com.xunmeng.pinduoduo/personal.html";

/// The label of the bottom tab that opens 个人中心.
pub const PROFILE_TAB: &str = "个人中心";

/// The step the check's dumps and failures are named by (client-local: the check is not
/// a task and is never reported to the Admin).
pub fn step() -> FlowStep {
    FlowStep::Other("check_account".into())
}

/// Bounds of the check.
#[derive(Clone, Copy, Debug)]
pub struct AccountLimits {
    pub poll_pause: Duration,
    /// Re-dumps after the link before the label path takes over.
    pub link_waits: u32,
    /// Taps of the bottom tab 个人中心.
    pub tab_taps: u32,
    /// Home links opened to find the tab.
    pub home_links: u32,
    pub popups: u32,
    pub dump_failures: u32,
}

impl Default for AccountLimits {
    fn default() -> Self {
        AccountLimits {
            poll_pause: Duration::from_millis(300),
            link_waits: 1,
            tab_taps: 2,
            home_links: 1,
            popups: 3,
            dump_failures: 3,
        }
    }
}

/// The account check machine.
pub struct AccountFlow {
    limits: AccountLimits,
    d: Dispatch,
    link_waits: u32,
    tab_taps: u32,
    home_links: u32,
    popups: u32,
}

impl AccountFlow {
    pub fn new(limits: AccountLimits) -> Self {
        AccountFlow {
            limits,
            d: Dispatch::new(
                Policy::before_mark(limits.poll_pause, limits.dump_failures),
                step(),
            ),
            link_waits: 0,
            tab_taps: 0,
            home_links: 0,
            popups: 0,
        }
    }

    fn fail(&self, message: &str) -> Action {
        Action::Finish(FlowOutcome::Failed(
            FlowFailure::retry(FailureCode::PageNotRecognized, step(), message)
                .with("tab_taps", self.tab_taps)
                .with("home_links", self.home_links),
        ))
    }

    fn on_screen(&mut self, o: Observed) -> Action {
        let Observed {
            screen, account, ..
        } = o;
        if let Some(r) = account {
            return Action::Finish(FlowOutcome::Account(r));
        }
        if let Some(a) = self
            .d
            .common_page(&screen, &mut self.popups, self.limits.popups)
        {
            return a;
        }
        if self.link_waits < self.limits.link_waits {
            self.link_waits += 1;
            return self.d.pause_then_observe();
        }
        let tab = match &screen {
            Screen::Unknown(u) => u.nav.iter().find(|t| t.label == PROFILE_TAB).cloned(),
            _ => None,
        };
        if let Some(t) = tab.filter(|_| self.tab_taps < self.limits.tab_taps) {
            self.tab_taps += 1;
            return Action::Tap {
                at: t.tap,
                label: t.label,
                step: step(),
                kind: TapKind::ChangesScreen,
            };
        }
        if self.home_links < self.limits.home_links {
            self.home_links += 1;
            return Action::OpenUrl {
                url: HOME_LINK.into(),
                step: step(),
            };
        }
        self.fail(
            "个人中心 could not be reached (its link and the bottom tab did not show the account)",
        )
    }
}

impl Flow for AccountFlow {
    fn observe(&mut self, _now: DateTime<Utc>, obs: Observation) -> Action {
        match self.d.route(obs) {
            Routed::Start => Action::OpenUrl {
                url: PROFILE_LINK.into(),
                step: step(),
            },
            Routed::Act(a) => a,
            Routed::Fail(f) => Action::Finish(FlowOutcome::Failed(f)),
            Routed::Resume | Routed::GoodsId(_) => self.d.observe_now(step()),
            Routed::Screen(o) => self.on_screen(*o),
            Routed::Effect(_) => self.fail("the account check asked for no effect"),
        }
    }

    fn abort(&mut self, _now: DateTime<Utc>, reason: AbortReason) -> FlowFailure {
        FlowFailure::retry(
            FailureCode::PageNotRecognized,
            step(),
            format!("the account check was stopped by the driver: {reason:?}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::{AccountReading, Point, Target, Unknown};

    fn unknown(nav: Vec<Target>) -> Observation {
        Observation::Screen(Box::new(Observed {
            screen: Screen::Unknown(Unknown {
                packages: vec!["com.xunmeng.pinduoduo".into()],
                other_packages: vec![],
                labels: vec![],
                nav,
            }),
            account: None,
            artifact_id: None,
        }))
    }

    fn profile(phone: &str) -> Observation {
        let Observation::Screen(mut o) = unknown(vec![]) else {
            unreachable!()
        };
        o.account = Some(AccountReading {
            nickname: Some("拼多多用户".into()),
            masked_phone: Some(phone.into()),
        });
        Observation::Screen(o)
    }

    fn tab() -> Target {
        Target {
            label: PROFILE_TAB.into(),
            tap: Point { x: 972, y: 2283 },
            bounds: crate::screen::Bounds::new(864, 2213, 1080, 2354),
        }
    }

    #[test]
    fn the_link_lands_on_the_profile_in_two_round_trips() {
        let mut f = AccountFlow::new(AccountLimits::default());
        let now = Utc::now();
        assert!(
            matches!(f.observe(now, Observation::Start), Action::OpenUrl { ref url, .. } if url == PROFILE_LINK)
        );
        assert!(matches!(
            f.observe(now, Observation::Done),
            Action::Observe { .. }
        ));
        match f.observe(now, profile("138****0000")) {
            Action::Finish(FlowOutcome::Account(r)) => {
                assert_eq!(r.masked_phone.as_deref(), Some("138****0000"))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_link_that_does_not_land_falls_back_to_the_tab_then_gives_up_bounded() {
        let mut f = AccountFlow::new(AccountLimits::default());
        let now = Utc::now();
        f.observe(now, Observation::Start);
        f.observe(now, Observation::Done);
        // One re-dump after the link.
        assert!(matches!(
            f.observe(now, unknown(vec![tab()])),
            Action::Wait { .. }
        ));
        assert!(matches!(
            f.observe(now, Observation::Waited),
            Action::Observe { .. }
        ));
        // Then the tab, at most twice.
        for _ in 0..2 {
            assert!(
                matches!(f.observe(now, unknown(vec![tab()])), Action::Tap { ref label, .. } if label == PROFILE_TAB)
            );
            assert!(matches!(
                f.observe(now, Observation::Done),
                Action::Observe { .. }
            ));
        }
        // Then home once, then the end.
        assert!(
            matches!(f.observe(now, unknown(vec![tab()])), Action::OpenUrl { ref url, .. } if url == HOME_LINK)
        );
        f.observe(now, Observation::Done);
        match f.observe(now, unknown(vec![tab()])) {
            Action::Finish(FlowOutcome::Failed(fl)) => {
                assert_eq!(fl.code, FailureCode::PageNotRecognized);
                assert_eq!(fl.step.as_str(), "check_account");
            }
            other => panic!("{other:?}"),
        }
    }
}
