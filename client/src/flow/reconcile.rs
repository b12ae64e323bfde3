//! Order reconciliation: after the 提交订单 tap — or, after a crash, for a run
//! that carries an irreversible mark — leave the payment screen without paying and find
//! the order the tap created. It never taps 提交订单 and never a pay button; it only
//! reads.
//!
//! # Steps
//! 1. `leave_payment` — payment page → BACK; 确定放弃吗? → 先去逛逛 (never 继续支付).
//! 2. `reconcile_order` — navigate to 个人中心 → 待付款 (from a goods page, a sheet or
//!    outside PDD: the home deep link [`HOME_LINK`] — BACK would walk an unknown history;
//!    then the bottom tab 个人中心 and the profile's 待付款), then walk the 待付款 list top to bottom: every card whose
//!    title, options, quantity and total fit the confirmation is opened, and its 订单编号,
//!    下单时间 and status read from the detail page (cards seen twice across scroll
//!    positions are the same order number, counted once).
//! 3. The decision: the cards that fit and were ordered within ±5 min of the local
//!    submit time (the irreversible mark) are the candidates. Exactly one, unpaid → the
//!    live success result (contract §6); none → `ORDER_NOT_FOUND` (or
//!    `INTERRUPTED_AFTER_SUBMIT` during crash recovery, nothing can be proven); only
//!    orders outside the window → `ORDER_TIME_OUT_OF_WINDOW`; several →
//!    `AMBIGUOUS_ORDER_MATCH`; not unpaid → `ORDER_NOT_UNPAID`. Every failure here is
//!    `manual_review` (an order may exist), with the candidates in `diagnostics`.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, FixedOffset, Utc};
use cmautobuy_contract::{ExecutionMode, FailureCode, FlowStep};
use serde_json::{json, Value};

use super::action::{AbortReason, Action, Flow, FlowOutcome, Observation, Observed};
use super::confirmation::Confirmation;
use super::failure::FlowFailure;
use super::observe::{Dispatch, Policy, Routed};
use super::sheet::{reveal_swipe, Reveal};
use crate::screen::goods;
use crate::screen::names::names_all;
use crate::screen::{Bounds, ListView, OrderDetail, OrderEntry, OrderList, Point, Screen};

/// Opened when PDD is not in the foreground: the app's home (the simulated phone shows
/// its "not found" page with 返回首页 for it, which leads home too).
pub const HOME_LINK: &str = "pinduoduo://com.xunmeng.pinduoduo/index.html";

/// Bounds of the reconciliation.
#[derive(Clone, Copy, Debug)]
pub struct ReconcileLimits {
    pub polls: u32,
    pub poll_pause: Duration,
    /// Navigation actions (backs, tab taps, links) before giving up.
    pub nav_steps: u32,
    /// BACKs on the payment page / taps on the dialog before giving up.
    pub leave_steps: u32,
    /// Scrolls of the order list.
    pub list_swipes: u32,
    /// Order detail pages opened.
    pub details: u32,
    pub dump_failures: u32,
    pub popups: u32,
    /// Half-width of the order-time window around the local submit time.
    pub window: Duration,
}

impl Default for ReconcileLimits {
    fn default() -> Self {
        ReconcileLimits {
            polls: 4,
            poll_pause: Duration::from_millis(300),
            nav_steps: 14,
            leave_steps: 6,
            list_swipes: 30,
            details: 40,
            dump_failures: 4,
            popups: 6,
            window: Duration::from_secs(5 * 60),
        }
    }
}

/// One order read from its detail page.
#[derive(Clone, Debug, PartialEq)]
pub struct OrderSeen {
    pub order_sn: String,
    pub ordered_at: Option<DateTime<FixedOffset>>,
    pub status: Option<String>,
    pub total_cent: Option<i64>,
    pub quantity: Option<u32>,
    /// Title, options, quantity and total fit the confirmation.
    pub fits: bool,
    pub in_window: bool,
}

impl OrderSeen {
    fn unpaid(&self) -> bool {
        self.status.as_deref().is_some_and(|s| s.contains("待付款"))
    }

    fn json(&self) -> Value {
        json!({
            "order_sn": self.order_sn,
            "ordered_at": self.ordered_at.map(|t| t.to_rfc3339()),
            "status": self.status,
            "total_cent": self.total_cent,
            "quantity": self.quantity,
            "fits": self.fits,
            "in_window": self.in_window,
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Leaving,
    ToOrders,
    List,
    /// A detail page was opened from the list.
    Detail,
}

/// What a list card shows (title, quantity, total, bounds): two equal views mean the
/// list did not move.
type CardKey = (Option<String>, Option<u32>, Option<i64>, Bounds);

/// The reconcile state machine.
pub struct ReconcileFlow {
    conf: Confirmation,
    submitted_at: DateTime<Utc>,
    /// Crash recovery (nothing can be proven → `INTERRUPTED_AFTER_SUBMIT`).
    recovery: bool,
    limits: ReconcileLimits,
    started: bool,
    /// The crash-matrix failpoint this observation reached (the driver hits it).
    checkpoint: Option<&'static str>,
    phase: Phase,
    /// The current step, failed-dump and device-error counts (after the mark: every
    /// failure is `manual_review`).
    d: Dispatch,
    polls: u32,
    popups: u32,
    leave_steps: u32,
    nav_steps: u32,
    blocked_once: bool,
    /// The payment page or its abandon dialog was seen (the submit went through).
    payment_seen: bool,
    /// Dumps that still showed the sheet right after the submit tap.
    sheet_waits: u32,
    list_swipes: u32,
    details: u32,
    opened_in_view: usize,
    top_seen: bool,
    last_view: Option<Vec<CardKey>>,
    orders: BTreeMap<String, OrderSeen>,
    /// Cards opened whose detail had no readable order number.
    unreadable: u32,
}

fn manual(code: FailureCode, step: FlowStep, m: impl Into<String>) -> FlowFailure {
    FlowFailure::manual(code, step, m)
}

fn within(a: DateTime<Utc>, b: DateTime<FixedOffset>, w: Duration) -> bool {
    let d = (b.with_timezone(&Utc) - a)
        .num_milliseconds()
        .unsigned_abs();
    u128::from(d) <= w.as_millis()
}

impl ReconcileFlow {
    /// `submitted_at` is the irreversible mark (the local submit time).
    pub fn new(
        conf: Confirmation,
        submitted_at: DateTime<Utc>,
        recovery: bool,
        limits: ReconcileLimits,
    ) -> Self {
        ReconcileFlow {
            conf,
            submitted_at,
            recovery,
            limits,
            started: false,
            checkpoint: None,
            phase: Phase::Leaving,
            d: Dispatch::new(
                Policy::after_mark(limits.poll_pause, limits.dump_failures),
                FlowStep::LeavePayment,
            ),
            polls: 0,
            popups: 0,
            leave_steps: 0,
            nav_steps: 0,
            blocked_once: false,
            payment_seen: false,
            sheet_waits: 0,
            list_swipes: 0,
            details: 0,
            opened_in_view: 0,
            top_seen: false,
            last_view: None,
            orders: BTreeMap::new(),
            unreadable: 0,
        }
    }

    /// Whether the flow has seen its start.
    pub fn started(&self) -> bool {
        self.started
    }

    fn fail(&self, f: FlowFailure) -> Action {
        Action::Finish(FlowOutcome::Failed(self.diag(f)))
    }

    fn diag(&self, f: FlowFailure) -> FlowFailure {
        f.with(
            "candidates",
            Value::Array(self.orders.values().map(OrderSeen::json).collect()),
        )
        .with(
            "irreversible_action_at",
            cmautobuy_contract::time::format_utc(self.submitted_at),
        )
        .with("window_seconds", self.limits.window.as_secs())
        .with(
            "confirmation",
            serde_json::to_value(&self.conf).unwrap_or(Value::Null),
        )
    }

    fn observe_now(&mut self, step: FlowStep) -> Action {
        self.d.observe_now(step)
    }

    fn nav(&mut self, a: Action) -> Action {
        self.nav_steps += 1;
        if self.nav_steps > self.limits.nav_steps {
            return self.fail(manual(
                self.not_found_code(),
                FlowStep::ReconcileOrder,
                "the order list (个人中心 → 待付款) could not be reached",
            ));
        }
        self.phase = Phase::ToOrders;
        a
    }

    fn not_found_code(&self) -> FailureCode {
        if self.recovery {
            FailureCode::InterruptedAfterSubmit
        } else {
            FailureCode::OrderNotFound
        }
    }

    /// Does a list card (its labels) fit the confirmation?
    fn card_fits(&self, e: &OrderEntry, labels: &[&str]) -> bool {
        let title_ok = match (&self.conf.title, &e.title) {
            (Some(want), Some(seen)) => goods::titles_match(want, seen),
            _ => true,
        };
        let qty_ok = e.quantity.is_none_or(|q| q == self.conf.quantity);
        let total_ok = e.total.is_none_or(|t| t == self.conf.total);
        title_ok && qty_ok && total_ok && names_all(labels.iter().copied(), &self.conf.options)
    }

    fn on_list(&mut self, l: OrderList) -> Action {
        self.d.step = FlowStep::ReconcileOrder;
        if l.tab.as_deref() != Some("待付款") {
            let Some(t) = l.pending_tab.clone() else {
                return self.poll("the 待付款 tab is not on screen");
            };
            self.phase = Phase::ToOrders;
            return self.nav(Action::Tap {
                at: t.tap,
                label: t.label,
                step: FlowStep::ReconcileOrder,
            });
        }
        self.phase = Phase::List;
        if !self.top_seen {
            // Start from the top: a list left scrolled (an earlier run) hides orders.
            if let Some(ListView {
                bounds: b,
                more_above: true,
                ..
            }) = l.list
            {
                self.list_swipes += 1;
                if self.list_swipes <= self.limits.list_swipes {
                    let (from, to) = reveal_swipe(b, Reveal::Up);
                    return Action::Swipe {
                        from,
                        to,
                        duration_ms: 300,
                        step: FlowStep::ReconcileOrder,
                    };
                }
            }
            self.top_seen = true;
        }
        let fitting: Vec<Point> = l
            .entries
            .iter()
            .filter(|e| e.fully_visible)
            .filter_map(|e| {
                let labels: Vec<&str> = e.labels.iter().map(String::as_str).collect();
                if !self.card_fits(e, &labels) {
                    return None;
                }
                // Tap the card's title label: inside the card, away from the card's
                // own buttons (取消订单, 去支付), whatever the card's extent.
                e.title_tap.or(e.tap)
            })
            .collect();
        if let Some(at) = fitting.get(self.opened_in_view).copied() {
            self.opened_in_view += 1;
            self.details += 1;
            if self.details > self.limits.details {
                return self.fail(manual(
                    FailureCode::AmbiguousOrderMatch,
                    FlowStep::ReconcileOrder,
                    "too many fitting orders to read",
                ));
            }
            self.phase = Phase::Detail;
            return Action::Tap {
                at,
                label: "order card".into(),
                step: FlowStep::ReconcileOrder,
            };
        }
        // This view is done: scroll while the list shows something new.
        let view: Vec<_> = l
            .entries
            .iter()
            .map(|e| {
                (
                    e.title.clone(),
                    e.quantity,
                    e.total.map(|t| t.get()),
                    e.bounds,
                )
            })
            .collect();
        let scroller = l.list.map(|v| v.bounds);
        let more = l.list.is_some_and(|v| v.more_below);
        let changed = self.last_view.as_ref() != Some(&view);
        if more && changed && !view.is_empty() {
            if let Some(b) = scroller {
                self.list_swipes += 1;
                if self.list_swipes > self.limits.list_swipes {
                    return self.fail(manual(
                        FailureCode::AmbiguousOrderMatch,
                        FlowStep::ReconcileOrder,
                        "the 待付款 list is longer than this flow reads",
                    ));
                }
                self.last_view = Some(view);
                self.opened_in_view = 0;
                let (from, to) = reveal_swipe(b, Reveal::Down);
                return Action::Swipe {
                    from,
                    to,
                    duration_ms: 300,
                    step: FlowStep::ReconcileOrder,
                };
            }
        }
        self.decide()
    }

    fn on_detail(&mut self, d: OrderDetail) -> Action {
        self.d.step = FlowStep::ReconcileOrder;
        if self.phase == Phase::Detail {
            match d.order_sn.clone() {
                Some(sn) => {
                    let labels: Vec<&str> = d.labels.iter().map(String::as_str).collect();
                    let title_ok = match (&self.conf.title, &d.goods_title) {
                        (Some(want), Some(seen)) => goods::titles_match(want, seen),
                        _ => true,
                    };
                    let fits = title_ok
                        && d.quantity.is_none_or(|q| q == self.conf.quantity)
                        && d.total == Some(self.conf.total)
                        && names_all(labels.iter().copied(), &self.conf.options);
                    let in_window = d
                        .ordered_at
                        .is_some_and(|t| within(self.submitted_at, t, self.limits.window));
                    self.orders.insert(
                        sn.clone(),
                        OrderSeen {
                            order_sn: sn,
                            ordered_at: d.ordered_at,
                            status: d.status.clone(),
                            total_cent: d.total.map(|t| t.get()),
                            quantity: d.quantity,
                            fits,
                            in_window,
                        },
                    );
                }
                None => self.unreadable += 1,
            }
            self.phase = Phase::List;
        }
        Action::Back {
            step: FlowStep::ReconcileOrder,
        }
    }

    fn decide(&self) -> Action {
        let step = FlowStep::ReconcileOrder;
        let fitting: Vec<&OrderSeen> = self.orders.values().filter(|o| o.fits).collect();
        let candidates: Vec<&OrderSeen> = fitting.iter().copied().filter(|o| o.in_window).collect();
        if self.unreadable > 0 {
            return self.fail(manual(
                FailureCode::AmbiguousOrderMatch,
                step,
                format!(
                    "{} fitting order(s) showed no readable order number",
                    self.unreadable
                ),
            ));
        }
        match candidates.as_slice() {
            [one] => {
                if !one.unpaid() {
                    return self.fail(manual(
                        FailureCode::OrderNotUnpaid,
                        step,
                        "the matching order is not unpaid",
                    ));
                }
                let Some(at) = one.ordered_at else {
                    return self.fail(manual(
                        FailureCode::OrderTimeOutOfWindow,
                        step,
                        "the matching order has no readable time",
                    ));
                };
                let r = self.conf.result(
                    ExecutionMode::Live,
                    Some((&one.order_sn, &at.to_rfc3339())),
                    Some(cmautobuy_contract::time::format_utc(self.submitted_at)),
                );
                Action::Finish(FlowOutcome::Purchased(Box::new(r)))
            }
            [] if !fitting.is_empty() => self.fail(manual(
                FailureCode::OrderTimeOutOfWindow,
                step,
                "orders fit the purchase but none was placed within ±5 min of the submit",
            )),
            [] => self.fail(manual(
                self.not_found_code(),
                step,
                if self.recovery {
                    "interrupted after the irreversible mark and no order can be found: nothing can be proven"
                } else {
                    "no unpaid order fits the purchase"
                },
            )),
            many => self.fail(manual(
                FailureCode::AmbiguousOrderMatch,
                step,
                format!("{} unpaid orders fit the purchase", many.len()),
            )),
        }
    }

    fn poll(&mut self, what: &str) -> Action {
        self.polls += 1;
        if self.polls > self.limits.polls {
            return self.fail(manual(
                self.not_found_code(),
                self.d.step.clone(),
                format!("{what} (after {} polls)", self.limits.polls),
            ));
        }
        Action::Wait {
            duration: self.limits.poll_pause,
        }
    }

    fn leave(&mut self, a: Action) -> Action {
        self.leave_steps += 1;
        if self.leave_steps > self.limits.leave_steps {
            return self.fail(manual(
                FailureCode::InterruptedAfterSubmit,
                FlowStep::LeavePayment,
                "the payment screen could not be left without paying",
            ));
        }
        self.phase = Phase::Leaving;
        self.d.step = FlowStep::LeavePayment;
        a
    }

    fn on_screen(&mut self, o: Observed) -> Action {
        let Observed { screen, .. } = o;
        match screen {
            Screen::Payment(_) => {
                self.payment_seen = true;
                self.checkpoint = Some("purchase.payment_screen");
                self.leave(Action::Back {
                    step: FlowStep::LeavePayment,
                })
            }
            Screen::PaymentAbandonDialog(d) => {
                self.payment_seen = true;
                self.checkpoint = Some("purchase.abandon_dialog");
                match d.leave {
                    Some(t) => self.leave(Action::Tap {
                        at: t.tap,
                        label: t.label,
                        step: FlowStep::LeavePayment,
                    }),
                    // No leave button: BACK (closes the dialog on most builds); never
                    // the 继续支付 button.
                    None => self.leave(Action::Back {
                        step: FlowStep::LeavePayment,
                    }),
                }
            }
            Screen::Popup(p) => {
                self.popups += 1;
                if self.popups > self.limits.popups {
                    return self.fail(manual(
                        self.not_found_code(),
                        FlowStep::DismissPopup,
                        "popups keep coming back",
                    ));
                }
                match p.dismiss {
                    Some(t) => Action::Tap {
                        at: t.tap,
                        label: t.label,
                        step: FlowStep::DismissPopup,
                    },
                    None => Action::Back {
                        step: FlowStep::DismissPopup,
                    },
                }
            }
            // A login or risk page may be an old page of the back stack: go home once;
            // seen again, a human is needed.
            Screen::LoginRequired(_) | Screen::RiskVerification(_) if !self.blocked_once => {
                self.blocked_once = true;
                self.nav(Action::OpenUrl {
                    url: HOME_LINK.into(),
                    step: FlowStep::ReconcileOrder,
                })
            }
            Screen::LoginRequired(_) => self.fail(manual(
                FailureCode::LoginRequired,
                FlowStep::ReconcileOrder,
                "the PDD app asks to log in before the order could be found",
            )),
            Screen::RiskVerification(_) => self.fail(manual(
                FailureCode::RiskVerification,
                FlowStep::ReconcileOrder,
                "a security verification before the order could be found",
            )),
            Screen::OrderList(l) => {
                self.checkpoint = Some("reconcile.order_list");
                self.polls = 0;
                self.on_list(l)
            }
            Screen::OrderDetail(d) => {
                self.checkpoint = Some("reconcile.order_detail");
                self.polls = 0;
                self.on_detail(d)
            }
            // Back from here walks an unknown history (earlier tasks' pages, risk or
            // login pages among them): go home directly instead.
            // Right after the submit tap the sheet may still be on screen while the app
            // creates the order: navigating away now could cut that short. Wait for it
            // to leave (bounded) before anything else; after the payment page was seen,
            // or in crash recovery, the sheet is just a page to leave.
            Screen::SkuSheet(_)
                if !self.recovery && !self.payment_seen && self.sheet_waits < self.limits.polls =>
            {
                self.sheet_waits += 1;
                self.d.step = FlowStep::LeavePayment;
                self.d.pause_then_observe()
            }
            Screen::SkuSheet(_) | Screen::GoodsDetail(_) => {
                self.checkpoint = Some("purchase.left_payment");
                self.nav(Action::OpenUrl {
                    url: HOME_LINK.into(),
                    step: FlowStep::ReconcileOrder,
                })
            }
            Screen::Unknown(u) => {
                self.d.step = FlowStep::ReconcileOrder;
                if u.packages.is_empty() {
                    return self.nav(Action::OpenUrl {
                        url: HOME_LINK.into(),
                        step: FlowStep::ReconcileOrder,
                    });
                }
                if let Some(t) = u.nav.first() {
                    return self.nav(Action::Tap {
                        at: t.tap,
                        label: t.label.clone(),
                        step: FlowStep::ReconcileOrder,
                    });
                }
                self.nav(Action::Back {
                    step: FlowStep::ReconcileOrder,
                })
            }
        }
    }
}

impl Flow for ReconcileFlow {
    fn observe(&mut self, _now: DateTime<Utc>, obs: Observation) -> Action {
        self.checkpoint = None;
        match self.d.route(obs) {
            Routed::Start => {
                self.started = true;
                if !self.recovery {
                    self.checkpoint = Some("purchase.after_submit_tap");
                }
                self.observe_now(FlowStep::LeavePayment)
            }
            Routed::Act(a) => a,
            Routed::Fail(f) => self.fail(f),
            Routed::Resume => self.observe_now(self.d.step.clone()),
            Routed::Screen(o) => self.on_screen(*o),
            // Reconciliation reads no goods id: look at the screen again.
            Routed::GoodsId(_) => self.observe_now(self.d.step.clone()),
            Routed::Effect(_) => self.fail(manual(
                FailureCode::InterruptedAfterSubmit,
                self.d.step.clone(),
                "reconciliation asked for no effect",
            )),
        }
    }

    fn checkpoint(&mut self) -> Option<&'static str> {
        self.checkpoint.take()
    }

    fn abort(&mut self, _now: DateTime<Utc>, reason: AbortReason) -> FlowFailure {
        self.diag(manual(
            FailureCode::InterruptedAfterSubmit,
            self.d.step.clone(),
            format!("stopped by the driver after the irreversible mark: {reason:?}"),
        ))
    }
}
