//! Order reconciliation: after the 提交订单 tap — or, after a crash, for a run
//! that carries an irreversible mark — leave the payment screen without paying and find
//! the order the tap created. It never taps 提交订单 and never a pay button; it only
//! reads. The same machine, in its census mode, counts the unpaid orders of the goods
//! **before** a live submit ([`ReconcileFlow::census`]): only an order absent
//! from that census can be the one the tap created.
//!
//! # Steps
//! 1. `leave_payment` — payment page → BACK; 确定放弃吗? → 先去逛逛 (never 继续支付). Right
//!    after the submit tap a sheet still on screen is waited out (bounded) first. Screens
//!    PDD may show after a submit are recognised and never tapped through: the
//!    repeat-order dialog 相同商品订单待支付 (never 继续下单, never 去支付: its close or
//!    BACK), a 免密支付 / 先用后付 offer (never 立即开通: 暂不开通 or BACK), another app's
//!    payment screen (WeChat, Alipay: BACK only). Each is remembered and ends the
//!    reconciliation with its own code, naming the order found ([`AfterSubmit`]).
//! 2. `reconcile_order` — reach the 待付款 list: first by its deep link
//!    [`UNPAID_ORDERS_LINK`] (field notes §3a; on some phones the profile's order entries
//!    are drawn on canvas and no label reaches the list). When the link does not land on
//!    the order list (one bounded re-dump), the label path: the home deep link
//!    [`HOME_LINK`] from a goods page, a sheet or outside PDD (BACK would walk an unknown
//!    history), then the bottom tab 个人中心 and the profile's 待付款 — each label tapped
//!    at most `label_taps` times; a page offering none left ends the flow. Then walk
//!    the 待付款 list top to bottom: every card whose title, options, quantity and total
//!    fit the confirmation is opened, and its 订单编号, 下单时间, status and paid amount
//!    read from the detail page — expanding 查看更多订单信息 (or 查看更多订单和优惠信息) and
//!    scrolling the detail (bounded) until all of them are read; amounts written
//!    `实付:,12.50元,` are read too (cards seen twice across scroll positions are the same
//!    order number, counted once). A card or detail that is not unpaid by its own reading
//!    (an unpaid wording as its status, no binding word) fits on its title, options and
//!    quantity alone: a paid order may show another amount (a 多多支付 discount) and a
//!    先用后付 one none yet. When the list holds no new unpaid order, the 全部 list
//!    ([`ALL_ORDERS_LINK`]) is walked once for fitting orders in any other state (paid,
//!    先用后付, …). When a view of 待付款 shows the census's top cards (or the list's end)
//!    and a new order is among its fitting cards, the walk ends on the detail of the last
//!    one (nothing new lies below, and the list would only be dumped again).
//! 3. The decision: the cards that fit, whose order number is **not in the census**
//!    taken before the submit (`Confirmation::census`), not reported by this client for
//!    another task ([`ReconcileContext::known_orders`]), and that were ordered inside the
//!    window are the candidates. The window is `[mark − (before_mark + clock skew), mark
//!    + window]`: 60 s plus the measured skew between the host's and the phone's clocks
//!    before the mark (never more than the contract's 5 min), 5 min after it. An order
//!    whose detail says paid or bound (先用后付, 免密 …: not one of the unpaid wordings
//!    待付款 / 待支付 / 等待付款), fitting, new (not in the census, not another task's) and
//!    in the window — or later than it, or with no readable time, or up to `window` (5
//!    min) before the mark: anything but history — → `ORDER_NOT_UNPAID` (the runner raises
//!    a critical alert and stops live on the phone); only one stamped earlier is history
//!    (a human's earlier order). An order whose card reads like an unpaid card the census
//!    saw without opening ([`Confirmation::census_unopened`]: outside its match on the
//!    task's expected title and the Admin's option spelling) cannot be proven new by its
//!    number → `ORDER_NOVELTY_UNPROVEN`, never adopted. Exactly one, unpaid → the live
//!    success result
//!    (contract §6) — unless a post-submit screen or an unconfirmed order
//!    (`Confirmation::unconfirmed`: `ORDER_PLACED_UNCONFIRMED` — unless the screen that
//!    made the mark late was the repeat-order dialog or a payment offer, whose own code
//!    is the true one) says otherwise; none → `ORDER_NOT_FOUND` (or
//!    `INTERRUPTED_AFTER_SUBMIT` during crash recovery, nothing can be proven; or
//!    `ORDER_LIST_INCOMPLETE` when the 全部 list could not be read); only
//!    orders outside the window → `ORDER_TIME_OUT_OF_WINDOW`; several →
//!    `AMBIGUOUS_ORDER_MATCH`; a confirmation without a census (a mark stored by an older
//!    client) → `ORDER_NOVELTY_UNPROVEN`, never adopted. Every failure here is
//!    `manual_review` (an order may exist), with the candidates in `diagnostics`.
//!
//! # Census
//! Before a live purchase touches the goods, [`ReconcileFlow::census`] opens the 待付款
//! list by the same deep link, opens every card that could fit the task (title when the
//! task gives one, quantity, every option but the size — a spec resolution may change
//! it) and records the order numbers, the list's top cards and every card it saw without
//! opening it: [`ReconcileFlow::census_result`]. It never taps
//! anything but cards, tabs and ways back; its failures are the purchase's to report
//! (`ORDER_CENSUS_FAILED`, before anything irreversible).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use chrono::{DateTime, FixedOffset, Utc};
use cmautobuy_contract::{ExecutionMode, FailureCode, FlowStep, OptionMap};
use serde_json::{json, Value};

use super::action::{AbortReason, Action, Flow, FlowOutcome, Observation, Observed, TapKind};
use super::confirmation::{Confirmation, ListCard};
use super::failure::FlowFailure;
use super::observe::{Dispatch, Policy, Routed};
use super::sheet::{reveal_swipe, Reveal};
use crate::money::Fen;
use crate::reasons::{self, OperatorText};
use crate::screen::goods;
use crate::screen::label_index::{BINDING_ORDER_WORDS, UNPAID_STATUSES};
use crate::screen::names::names_all;
use crate::screen::{Bounds, ListView, OrderDetail, OrderEntry, OrderList, Point, Screen};

/// Opened when PDD is not in the foreground: the app's home (the simulated phone shows
/// its "not found" page with 返回首页 for it, which leads home too).
pub const HOME_LINK: &str = "pinduoduo://com.xunmeng.pinduoduo/index.html";

/// The 待付款 list (field notes §3a: `type=1` unpaid, `type=3` 待收货): the first way to
/// the orders; the label path is the fallback.
pub const UNPAID_ORDERS_LINK: &str = "pinduoduo://com.xunmeng.pinduoduo/orders.html?type=1";

/// The 全部 list (`type=0`): walked once when the 待付款 list holds no new order, for
/// orders of the goods in any other state (paid, 先用后付).
pub const ALL_ORDERS_LINK: &str = "pinduoduo://com.xunmeng.pinduoduo/orders.html?type=0";

/// What the job knows besides the confirmation, read before the flow starts (the flow
/// itself stays pure).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReconcileContext {
    /// Order numbers this client already reported — or stored in its outbox to report —
    /// for **other** tasks: never adopted, whatever else fits.
    pub known_orders: BTreeSet<String>,
    /// The measured (bounded) skew between the host's clock, which stamped the mark, and
    /// the phone's, which the order time follows; widens the window before the mark.
    pub clock_skew: Duration,
}

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
    /// How long after the local submit time (the mark) an order may be stamped; also
    /// the most the window ever reaches before the mark (the contract's ±5 min).
    pub window: Duration,
    /// How long before the mark an order may be stamped, before the clock skew is added
    /// (an order is created after the tap: only clock differences put it earlier).
    pub before_mark: Duration,
    /// Re-dumps after the 待付款 deep link before it counts as not landed.
    pub link_waits: u32,
    /// Taps of one navigation label (个人中心, 待付款, 返回首页) on the label path.
    pub label_taps: u32,
    /// Taps of an order detail's 查看更多订单信息 fold.
    pub detail_expands: u32,
    /// Scrolls of one order detail.
    pub detail_swipes: u32,
    /// Taps of a card again when the list came back with no detail page seen after the
    /// tap (the tap went to a lock screen or a notification, or the app was slow).
    pub card_retaps: u32,
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
            before_mark: Duration::from_secs(60),
            link_waits: 1,
            label_taps: 2,
            detail_expands: 2,
            detail_swipes: 6,
            card_retaps: 2,
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
    /// This client reported (or stored to report) this order number for another task.
    pub other_task: bool,
    /// The order was among the unpaid orders counted before the submit (the census).
    pub in_census: bool,
    /// A wording on its detail that says it is paid or bound (先用后付, 免密支付, …).
    pub binding: Option<String>,
    /// Stamped no earlier than `window` before the mark (the contract's 5 min, wider than
    /// the adoption window's lead), or its time unreadable: a paid or bound order of the
    /// goods this recent raises the alarm even outside the adoption window.
    pub recent: bool,
    /// Its card reads like an unpaid card the census saw without opening
    /// ([`Confirmation::census_unopened`]): its number cannot prove it new.
    pub like_unopened: bool,
}

impl OrderSeen {
    /// Unpaid by positive proof: a status that is one of the unpaid wordings, and
    /// nothing on the detail saying it is paid or bound.
    pub fn unpaid(&self) -> bool {
        self.binding.is_none()
            && self
                .status
                .as_deref()
                .is_some_and(|s| UNPAID_STATUSES.iter().any(|w| s.contains(w)))
    }

    fn json(&self) -> Value {
        let mut v = json!({
            "order_sn": self.order_sn,
            "ordered_at": self.ordered_at.map(|t| t.to_rfc3339()),
            "status": self.status,
            "total_cent": self.total_cent,
            "quantity": self.quantity,
            "fits": self.fits,
            "in_window": self.in_window,
            "reported_for_other_task": self.other_task,
            "in_census": self.in_census,
            "binding": self.binding,
        });
        if self.like_unopened {
            v["like_unopened_census_card"] = Value::Bool(true);
        }
        v
    }
}

/// What the flow is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Right after this run's submit tap.
    AfterSubmit,
    /// Crash recovery of a marked run (nothing can be proven → `INTERRUPTED_AFTER_SUBMIT`).
    Recovery,
    /// Counting the unpaid orders of the goods before a live submit.
    Census,
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Leaving,
    ToOrders,
    List,
    /// A detail page was opened from the list.
    Detail,
}

/// Which list is being walked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Walk {
    /// 待付款.
    Unpaid,
    /// 全部, once, for orders in any other state.
    All,
}

/// What a list card shows (title, quantity, total, bounds): two equal views mean the
/// list did not move.
type CardKey = (Option<String>, Option<u32>, Option<i64>, Bounds);

/// The order-list deep link's progress.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Link {
    Untried,
    /// Opened; `waits` re-dumps so far that did not show the order list.
    Opened {
        waits: u32,
    },
    /// It opened the order list.
    Landed,
    /// It did not: the label path.
    Failed,
}

impl Link {
    fn as_str(self) -> &'static str {
        match self {
            Link::Untried => "untried",
            Link::Opened { .. } => "opened",
            Link::Landed => "landed",
            Link::Failed => "failed",
        }
    }
}

/// What a census counted ([`ReconcileFlow::census_result`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Census {
    /// The order numbers of the unpaid orders that could fit ([`Confirmation::census`]).
    pub orders: BTreeSet<String>,
    /// The cards of the list's first view at its top ([`Confirmation::census_top`]).
    pub top: Vec<ListCard>,
    /// The unpaid cards seen but not opened ([`Confirmation::census_unopened`]).
    pub unopened: Vec<ListCard>,
}

/// The screens PDD showed after the submit that end the flow with their own code
/// (never tapped through).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AfterSubmit {
    /// 相同商品订单待支付 / 继续下单 was shown (its marker).
    pub repeat_prompt: Option<String>,
    /// A 免密支付 / 先用后付 offer was shown (`password_free` / `pay_later`).
    pub offer: Option<&'static str>,
    /// Another app's payment screen came to the front (its package).
    pub payment_app: Option<String>,
}

/// One order detail read over several dumps (a folded detail: expanded and scrolled).
#[derive(Clone, Debug, Default)]
struct DetailRead {
    order_sn: Option<String>,
    ordered_at: Option<DateTime<FixedOffset>>,
    status: Option<String>,
    total: Option<Fen>,
    quantity: Option<u32>,
    goods_title: Option<String>,
    /// Every label seen on the detail, in every scroll position.
    labels: Vec<String>,
    expands: u32,
    swipes: u32,
    /// The previous dump's labels: the same again after a gesture means it did nothing.
    last_view: Option<Vec<String>>,
    /// Two different order numbers showed up while reading one detail: unreadable.
    conflict: bool,
}

impl DetailRead {
    fn merge(&mut self, d: &OrderDetail) {
        if let (Some(a), Some(b)) = (&self.order_sn, &d.order_sn) {
            self.conflict |= a != b;
        }
        self.order_sn = self.order_sn.take().or_else(|| d.order_sn.clone());
        self.ordered_at = self.ordered_at.or(d.ordered_at);
        self.status = self.status.take().or_else(|| d.status.clone());
        self.total = self.total.or(d.total);
        self.quantity = self.quantity.or(d.quantity);
        self.goods_title = self.goods_title.take().or_else(|| d.goods_title.clone());
        for l in &d.labels {
            if !self.labels.contains(l) {
                self.labels.push(l.clone());
            }
        }
    }

    fn complete(&self) -> bool {
        self.order_sn.is_some() && self.ordered_at.is_some() && self.total.is_some()
    }
}

/// What an order must show to fit: the title (when known), the options by name, the
/// quantity, and the total (when known: a census and an unconfirmed order know none).
#[derive(Clone, Debug, PartialEq)]
struct Fit {
    title: Option<String>,
    options: OptionMap,
    quantity: u32,
    total: Option<Fen>,
}

impl Fit {
    fn title_ok(&self, seen: Option<&str>) -> bool {
        match (&self.title, seen) {
            (Some(want), Some(seen)) => goods::titles_match(want, seen),
            _ => true,
        }
    }
}

/// The reconcile state machine.
pub struct ReconcileFlow {
    conf: Confirmation,
    submitted_at: DateTime<Utc>,
    ctx: ReconcileContext,
    mode: Mode,
    fit: Fit,
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
    /// Card taps repeated because no detail page followed them.
    card_retaps: u32,
    top_seen: bool,
    last_view: Option<Vec<CardKey>>,
    orders: BTreeMap<String, OrderSeen>,
    /// Cards opened whose detail had no readable order number.
    unreadable: u32,
    link: Link,
    walk: Walk,
    /// Taps of the 全部 tab.
    all_tab_taps: u32,
    /// The 全部 list was walked to its end (else, when it was tried, an order in another
    /// state cannot be ruled out: `ORDER_LIST_INCOMPLETE`).
    all_walked: bool,
    /// Taps per navigation label on the label path.
    label_taps: BTreeMap<String, u32>,
    /// The detail being read (opened from the list).
    detail: Option<DetailRead>,
    after: AfterSubmit,
    /// The census, once taken (census mode).
    census_done: Option<BTreeSet<String>>,
    /// The cards of the list's first view at its top (census mode).
    census_top: Option<Vec<ListCard>>,
    /// The unpaid cards seen without being opened (census mode).
    census_unopened: Vec<ListCard>,
    /// A late mark was triggered by the repeat-order dialog or a payment offer
    /// ([`Self::with_after`]).
    late_by_after: bool,
    /// The card whose detail is being opened or read.
    opening: Option<ListCard>,
    /// The list view the cards are opened from shows the census's top cards, or the
    /// list's end (nothing below it), and how many of its cards fit: once each of them
    /// is read and a new order is among them, the walk ends on the detail (the list would
    /// only be dumped again to see that).
    view_ends_walk: bool,
    view_fitting: usize,
}

fn manual(code: FailureCode, step: FlowStep, m: impl Into<String>) -> FlowFailure {
    FlowFailure::manual(code, step, m)
}

/// Whether `at` lies in `[mark − before, mark + after]`.
fn within(
    mark: DateTime<Utc>,
    at: DateTime<FixedOffset>,
    before: Duration,
    after: Duration,
) -> bool {
    let d = (at.with_timezone(&Utc) - mark).num_milliseconds();
    let bound = if d >= 0 { after } else { before };
    u128::from(d.unsigned_abs()) <= bound.as_millis()
}

/// `text` with the order numbers found appended (the operator must see which order).
fn naming(mut text: OperatorText, orders: &[&OrderSeen]) -> OperatorText {
    if orders.is_empty() {
        text.zh.push_str("；没有找到新订单");
        text.en.push_str("; no new order was found");
    } else {
        let sns: Vec<&str> = orders.iter().map(|o| o.order_sn.as_str()).collect();
        text.zh
            .push_str(&format!("；找到的订单号：{}", sns.join("、")));
        text.en
            .push_str(&format!("; order(s) found: {}", sns.join(", ")));
    }
    text
}

impl ReconcileFlow {
    /// `submitted_at` is the irreversible mark (the local submit time).
    pub fn new(
        conf: Confirmation,
        submitted_at: DateTime<Utc>,
        recovery: bool,
        limits: ReconcileLimits,
    ) -> Self {
        let mode = if recovery {
            Mode::Recovery
        } else {
            Mode::AfterSubmit
        };
        let fit = Fit {
            title: conf.title.clone(),
            options: conf.options.clone(),
            quantity: conf.quantity,
            // An order placed by a tap that confirmed no total: any amount fits.
            total: conf.unconfirmed.is_none().then_some(conf.total),
        };
        Self::with_mode(conf, submitted_at, mode, fit, limits)
    }

    /// The census of the unpaid orders that could fit a purchase of `title` (when the
    /// task names one) with `options` and `quantity`, before a live submit: cards are
    /// matched on the title, the quantity and every option but the size (a spec
    /// resolution may still change it); their order numbers are
    /// [`Self::census_result`]. `conf` is the task as far as it is known.
    pub fn census(conf: Confirmation, now: DateTime<Utc>, limits: ReconcileLimits) -> Self {
        let mut options = conf.options.clone();
        options.shift_remove("size");
        let fit = Fit {
            title: conf.title.clone(),
            options,
            quantity: conf.quantity,
            total: None,
        };
        let mut f = Self::with_mode(conf, now, Mode::Census, fit, limits);
        f.d = Dispatch::new(
            Policy::before_mark(limits.poll_pause, limits.dump_failures),
            FlowStep::OrderCensus,
        );
        f
    }

    fn with_mode(
        conf: Confirmation,
        submitted_at: DateTime<Utc>,
        mode: Mode,
        fit: Fit,
        limits: ReconcileLimits,
    ) -> Self {
        ReconcileFlow {
            conf,
            submitted_at,
            ctx: ReconcileContext::default(),
            mode,
            fit,
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
            card_retaps: 0,
            top_seen: false,
            last_view: None,
            orders: BTreeMap::new(),
            unreadable: 0,
            link: Link::Untried,
            walk: Walk::Unpaid,
            all_tab_taps: 0,
            all_walked: false,
            label_taps: BTreeMap::new(),
            detail: None,
            after: AfterSubmit::default(),
            census_done: None,
            census_top: None,
            census_unopened: Vec::new(),
            late_by_after: false,
            opening: None,
            view_ends_walk: false,
            view_fitting: 0,
        }
    }

    /// The same flow with what the job read before it: the order numbers of other tasks
    /// and the measured clock skew.
    pub fn with_context(mut self, ctx: ReconcileContext) -> Self {
        self.ctx = ctx;
        self
    }

    /// The same flow knowing the post-submit screen that came instead of 确认订单 after a
    /// spec sheet's 确定 (the repeat-order dialog, a payment offer) and made the purchase
    /// mark late: that screen's own code ends the reconciliation, not
    /// `ORDER_PLACED_UNCONFIRMED` — its text is the true one.
    pub fn with_after(mut self, after: AfterSubmit) -> Self {
        self.late_by_after = after.repeat_prompt.is_some() || after.offer.is_some();
        self.after = after;
        self
    }

    /// How far before the mark an order may be stamped: `before_mark` + the clock skew,
    /// never more than `window` (the contract's ±5 min).
    pub fn lead(&self) -> Duration {
        (self.limits.before_mark + self.ctx.clock_skew).min(self.limits.window)
    }

    /// Whether the flow has seen its start.
    pub fn started(&self) -> bool {
        self.started
    }

    /// The census, once a census flow has counted: its order numbers, the cards of the
    /// list's top as it saw them ([`Confirmation::census_top`]) and the cards it did not
    /// open ([`Confirmation::census_unopened`]).
    pub fn census_result(&mut self) -> Option<Census> {
        let orders = self.census_done.take()?;
        Some(Census {
            orders,
            top: self.census_top.clone().unwrap_or_default(),
            unopened: std::mem::take(&mut self.census_unopened),
        })
    }

    /// After the submit, with an order already found new: the view shows the cards the
    /// census saw at the list's top (the first two, or the one), in its order. The list
    /// is newest first, so every order placed since the census is above them: the rest
    /// of the list held nothing new when the census read it and is not walked again.
    /// Fitting cards in view were opened all the same (their numbers tell old from
    /// new); a list whose top changed otherwise (an order cancelled, a card that reads
    /// differently) does not match, and the whole list is read.
    fn census_region_in_view(&self, l: &OrderList) -> bool {
        !self.candidates().is_empty() && self.census_top_shown(l)
    }

    /// The view shows the census's top cards (as [`Self::census_region_in_view`], before
    /// any candidate is known): after the submit, on 待付款, nothing unreadable so far.
    fn census_top_shown(&self, l: &OrderList) -> bool {
        if self.mode == Mode::Census || self.walk != Walk::Unpaid || self.unreadable > 0 {
            return false;
        }
        let Some(top) = self.conf.census_top.as_deref() else {
            return false;
        };
        let k = top.len().min(2);
        if k == 0 {
            return false;
        }
        let seen: Vec<ListCard> = l
            .entries
            .iter()
            .filter(|e| e.fully_visible)
            .map(ListCard::of)
            .collect();
        seen.windows(k).any(|w| w == &top[..k])
    }

    /// The post-submit screens seen so far.
    pub fn after_submit(&self) -> &AfterSubmit {
        &self.after
    }

    fn step(&self) -> FlowStep {
        if self.mode == Mode::Census {
            FlowStep::OrderCensus
        } else {
            FlowStep::ReconcileOrder
        }
    }

    fn fail(&self, f: FlowFailure) -> Action {
        Action::Finish(FlowOutcome::Failed(self.diag(f)))
    }

    fn diag(&self, f: FlowFailure) -> FlowFailure {
        let f = f
            .with(
                "candidates",
                Value::Array(self.orders.values().map(OrderSeen::json).collect()),
            )
            .with("orders_link", self.link.as_str());
        if self.mode == Mode::Census {
            return f;
        }
        f.with(
            "irreversible_action_at",
            cmautobuy_contract::time::format_utc(self.submitted_at),
        )
        .with("window_seconds", self.limits.window.as_secs())
        .with(
            "window_before_mark_ms",
            u64::try_from(self.lead().as_millis()).unwrap_or(u64::MAX),
        )
        .with(
            "clock_skew_ms",
            u64::try_from(self.ctx.clock_skew.as_millis()).unwrap_or(u64::MAX),
        )
        .with("confirmation", {
            // Other orders' cards stay on the phone's side (the census's order numbers
            // travel: they name what was not adopted).
            let mut c = self.conf.clone();
            c.census_top = None;
            c.census_unopened = None;
            serde_json::to_value(&c).unwrap_or(Value::Null)
        })
    }

    fn observe_now(&mut self, step: FlowStep) -> Action {
        self.d.observe_now(step)
    }

    fn nav(&mut self, a: Action) -> Action {
        self.nav_steps += 1;
        if self.nav_steps > self.limits.nav_steps {
            return self.fail(manual(
                self.not_found_code(),
                self.step(),
                "the order list (个人中心 → 待付款) could not be reached",
            ));
        }
        self.phase = Phase::ToOrders;
        a
    }

    fn not_found_code(&self) -> FailureCode {
        match self.mode {
            Mode::Census => FailureCode::OrderCensusFailed,
            // The 待付款 walk found nothing new and the 全部 list could not be read to its
            // end: the order may be there in another state (paid, 先用后付).
            _ if self.walk == Walk::All && !self.all_walked => FailureCode::OrderListIncomplete,
            Mode::Recovery => FailureCode::InterruptedAfterSubmit,
            Mode::AfterSubmit => FailureCode::OrderNotFound,
        }
    }

    /// Does a list card (its labels) fit? The total is matched only on a card that is
    /// unpaid by its own reading (an unpaid wording as its status, no binding word): a
    /// paid or bound order may show another amount (a 多多支付 discount, 先用后付 with no
    /// amount yet) and is opened on its title, options and quantity alone.
    fn card_fits(&self, e: &OrderEntry, labels: &[&str]) -> bool {
        let f = &self.fit;
        let unpaid = e
            .status
            .as_deref()
            .is_some_and(|s| UNPAID_STATUSES.iter().any(|w| s.contains(w)))
            && !labels
                .iter()
                .any(|l| BINDING_ORDER_WORDS.iter().any(|w| l.contains(w)));
        f.title_ok(e.title.as_deref())
            && e.quantity.is_none_or(|q| q == f.quantity)
            && (!unpaid || f.total.is_none_or(|want| e.total.is_none_or(|t| t == want)))
            && names_all(labels.iter().copied(), &f.options)
    }

    /// Whether a card of the list being walked is worth opening: on 全部, only cards in
    /// a state other than unpaid (the 待付款 walk read those).
    fn card_wanted(&self, e: &OrderEntry) -> bool {
        match self.walk {
            Walk::Unpaid => true,
            Walk::All => !e
                .status
                .as_deref()
                .is_some_and(|s| UNPAID_STATUSES.contains(&s)),
        }
    }

    fn on_list(&mut self, l: OrderList) -> Action {
        self.d.step = self.step();
        // Back on the list with a detail half read (the app closed it): what was read.
        self.finish_detail();
        // Back on the list with no detail page seen since a card's tap: the tap did not
        // open it (a lock screen that came up mid-task took it — the driver unlocked the
        // phone —, a notification, a slow app). Skipping that card would leave the order
        // to a human as not found (the soak saw it): the same card once more, bounded.
        if self.phase == Phase::Detail
            && self.opened_in_view > 0
            && self.card_retaps < self.limits.card_retaps
        {
            self.card_retaps += 1;
            self.opened_in_view -= 1;
            self.details = self.details.saturating_sub(1);
        }
        let on_tab = match self.walk {
            Walk::Unpaid => l
                .tab
                .as_deref()
                .is_some_and(|t| UNPAID_STATUSES.contains(&t)),
            Walk::All => l.tab.as_deref() == Some("全部"),
        };
        if !on_tab {
            if self.walk == Walk::All {
                // The 全部 tab once; a list that does not switch to it is read no further
                // (what the 待付款 walk found decides).
                self.all_tab_taps += 1;
                if self.all_tab_taps > 1 {
                    return self.decide();
                }
            }
            let tab = match self.walk {
                Walk::Unpaid => l.pending_tab.clone(),
                Walk::All => l.all_tab.clone(),
            };
            let Some(t) = tab else {
                return self.poll("the order list's tab is not on screen");
            };
            self.phase = Phase::ToOrders;
            let step = self.step();
            return self.nav(Action::Tap {
                at: t.tap,
                label: t.label,
                step,
                kind: TapKind::ChangesScreen,
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
                        step: self.step(),
                    };
                }
            }
            self.top_seen = true;
        }
        if self.mode == Mode::Census && self.census_top.is_none() {
            self.census_top = Some(
                l.entries
                    .iter()
                    .filter(|e| e.fully_visible)
                    .map(ListCard::of)
                    .collect(),
            );
        }
        let mut fitting: Vec<(Point, ListCard)> = Vec::new();
        for e in l.entries.iter().filter(|e| e.fully_visible) {
            if !self.card_wanted(e) {
                continue;
            }
            let labels: Vec<&str> = e.labels.iter().map(String::as_str).collect();
            if !self.card_fits(e, &labels) {
                // The census keeps what it did not open: a card outside its match may
                // still be what reconciliation matches later.
                if self.mode == Mode::Census {
                    let card = ListCard::of(e);
                    if !self.census_unopened.contains(&card) {
                        self.census_unopened.push(card);
                    }
                }
                continue;
            }
            // Tap the card's title label: inside the card, away from the card's own
            // buttons (取消订单, 去支付), whatever the card's extent.
            if let Some(at) = e.title_tap.or(e.tap) {
                fitting.push((at, ListCard::of(e)));
            }
        }
        // This view ends the walk once its fitting cards are read: it shows the census's
        // top (nothing new below it), or the list's end (nothing below it at all).
        self.view_ends_walk = self.census_top_shown(&l) || !l.list.is_some_and(|v| v.more_below);
        self.view_fitting = fitting.len();
        if let Some((at, card)) = fitting.get(self.opened_in_view).cloned() {
            self.opening = Some(card);
            self.opened_in_view += 1;
            self.details += 1;
            if self.details > self.limits.details {
                let code = if self.mode == Mode::Census {
                    FailureCode::OrderCensusFailed
                } else {
                    FailureCode::AmbiguousOrderMatch
                };
                return self.fail(manual(code, self.step(), "too many fitting orders to read"));
            }
            self.phase = Phase::Detail;
            return Action::Tap {
                at,
                label: "order card".into(),
                step: self.step(),
                kind: TapKind::ChangesScreen,
            };
        }
        if self.census_region_in_view(&l) {
            return self.walk_done();
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
                    let code = if self.mode == Mode::Census {
                        FailureCode::OrderCensusFailed
                    } else {
                        FailureCode::AmbiguousOrderMatch
                    };
                    return self.fail(manual(
                        code,
                        self.step(),
                        "the order list is longer than this flow reads",
                    ));
                }
                self.last_view = Some(view);
                self.opened_in_view = 0;
                let (from, to) = reveal_swipe(b, Reveal::Down);
                return Action::Swipe {
                    from,
                    to,
                    duration_ms: 300,
                    step: self.step(),
                };
            }
        }
        self.walk_done()
    }

    fn on_detail(&mut self, d: OrderDetail) -> Action {
        self.d.step = self.step();
        let back = Action::Back { step: self.step() };
        if self.phase != Phase::Detail {
            return back;
        }
        let limits = self.limits;
        let r = self.detail.get_or_insert_with(DetailRead::default);
        r.merge(&d);
        let moved = r.last_view.as_ref() != Some(&d.labels);
        r.last_view = Some(d.labels.clone());
        if !r.complete() {
            // A folded detail: 下单时间 behind the fold, the number below the first screen.
            if let Some(t) = d.more_info.filter(|_| r.expands < limits.detail_expands) {
                r.expands += 1;
                return Action::Tap {
                    at: t.tap,
                    label: t.label,
                    step: self.step(),
                    kind: TapKind::ChangesScreen,
                };
            }
            if let Some(v) = d.scroll.filter(|v| v.more_below && moved) {
                if r.swipes < limits.detail_swipes {
                    r.swipes += 1;
                    let (from, to) = reveal_swipe(v.bounds, Reveal::Down);
                    return Action::Swipe {
                        from,
                        to,
                        duration_ms: 300,
                        step: self.step(),
                    };
                }
            }
        }
        self.finish_detail();
        // Every fitting card of a view that shows the census's top — or the list's end —
        // is read and a new order is among them: the list is newest first, so nothing
        // above is left unread and nothing below is new (or there is nothing below) —
        // what the list would show again on the way back is known already. The walk ends
        // here.
        if self.view_ends_walk
            && self.opened_in_view >= self.view_fitting
            && self.census_walk_may_end()
        {
            return self.walk_done();
        }
        back
    }

    /// The conditions [`Self::census_region_in_view`] puts on the walk, known without a
    /// list: after the submit, on 待付款, nothing unreadable, a candidate found.
    fn census_walk_may_end(&self) -> bool {
        self.mode != Mode::Census
            && self.walk == Walk::Unpaid
            && self.unreadable == 0
            && !self.candidates().is_empty()
    }

    /// Records the detail being read (if any) as an order seen, and returns to the list.
    fn finish_detail(&mut self) {
        let Some(r) = self.detail.take() else {
            return;
        };
        self.phase = Phase::List;
        let Some(sn) = r.order_sn.clone().filter(|_| !r.conflict) else {
            self.unreadable += 1;
            return;
        };
        let labels: Vec<&str> = r.labels.iter().map(String::as_str).collect();
        let binding = labels
            .iter()
            .find_map(|l| BINDING_ORDER_WORDS.iter().find(|w| l.contains(*w)))
            .map(|w| (*w).to_string());
        let unpaid = binding.is_none()
            && r.status
                .as_deref()
                .is_some_and(|s| UNPAID_STATUSES.iter().any(|w| s.contains(w)));
        let f = &self.fit;
        // A detail that is not unpaid fits on title, options and quantity alone: an order
        // paid at a discount (用多多支付减7.53元) or bound by 先用后付 (no 实付 amount yet) is
        // still the account paying by itself.
        let fits = f.title_ok(r.goods_title.as_deref())
            && r.quantity.is_none_or(|q| q == f.quantity)
            && (!unpaid || f.total.is_none_or(|want| r.total == Some(want)))
            && names_all(labels.iter().copied(), &f.options);
        let lead = self.lead();
        let in_window = r
            .ordered_at
            .is_some_and(|t| within(self.submitted_at, t, lead, self.limits.window));
        let horizon = self.submitted_at
            - chrono::Duration::from_std(self.limits.window).unwrap_or(chrono::Duration::MAX);
        let recent = r
            .ordered_at
            .is_none_or(|t| t.with_timezone(&Utc) >= horizon);
        let other_task = self.ctx.known_orders.contains(&sn);
        let in_census = self.conf.census.as_ref().is_some_and(|c| c.contains(&sn));
        let like_unopened = match (&self.opening, &self.conf.census_unopened) {
            (Some(card), Some(unopened)) => unopened.contains(card),
            _ => false,
        };
        self.orders.insert(
            sn.clone(),
            OrderSeen {
                order_sn: sn,
                ordered_at: r.ordered_at,
                status: r.status,
                total_cent: r.total.map(|t| t.get()),
                quantity: r.quantity,
                fits,
                in_window,
                other_task,
                in_census,
                binding,
                recent,
                like_unopened,
            },
        );
    }

    /// A list was walked to its end: the census is taken, or the 全部 list is next, or
    /// the decision.
    fn walk_done(&mut self) -> Action {
        if self.mode == Mode::Census {
            if self.unreadable > 0 {
                return self.fail(manual(
                    FailureCode::OrderCensusFailed,
                    FlowStep::OrderCensus,
                    format!(
                        "{} unpaid order(s) of the goods showed no readable order number",
                        self.unreadable
                    ),
                ));
            }
            let census: BTreeSet<String> = self
                .orders
                .values()
                .filter(|o| o.fits)
                .map(|o| o.order_sn.clone())
                .collect();
            self.census_done = Some(census);
            // The purchase flow takes the census and goes on; this answer is not used.
            return Action::Wait {
                duration: Duration::ZERO,
            };
        }
        if self.walk == Walk::All {
            self.all_walked = true;
        }
        if self.walk == Walk::Unpaid && self.candidates().is_empty() && self.unreadable == 0 {
            // Nothing new under 待付款: look for the order in any other state (paid,
            // 先用后付), once.
            self.walk = Walk::All;
            self.top_seen = false;
            self.last_view = None;
            self.opened_in_view = 0;
            self.phase = Phase::ToOrders;
            self.link = Link::Opened { waits: 0 };
            return self.nav(Action::OpenUrl {
                url: ALL_ORDERS_LINK.into(),
                step: FlowStep::ReconcileOrder,
            });
        }
        self.decide()
    }

    /// The candidates: fitting, not another task's, not in the census, in the window, and
    /// proven new by their number (a card the census saw unopened proves nothing).
    fn candidates(&self) -> Vec<&OrderSeen> {
        self.orders
            .values()
            .filter(|o| o.fits && !o.other_task && !o.in_census && o.in_window)
            .filter(|o| !o.like_unopened)
            .collect()
    }

    fn decide(&self) -> Action {
        let step = FlowStep::ReconcileOrder;
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
        // Another task's order is never this one, however well it fits; nor one that
        // was there before the submit.
        let others = self
            .orders
            .values()
            .filter(|o| o.fits && o.other_task)
            .count();
        let old = self
            .orders
            .values()
            .filter(|o| o.fits && !o.other_task && o.in_census)
            .count();
        let candidates = self.candidates();
        // Found, but paid or bound: the account pays by itself — never "not found". Any
        // such order of the goods that is new (not in the census, not another task's) and
        // recent raises it: in the adoption window, later than it, or with no readable
        // time. Only one stamped more than `window` before the mark is history (an order
        // paid by a human before this task).
        let bound: Vec<&OrderSeen> = self
            .orders
            .values()
            .filter(|o| o.fits && !o.other_task && !o.in_census && !o.unpaid())
            .filter(|o| o.in_window || o.recent)
            .collect();
        if !bound.is_empty() {
            let want = self.fit.total;
            let what: Vec<String> = bound
                .iter()
                .map(|o| {
                    let mut w = o
                        .binding
                        .clone()
                        .or_else(|| o.status.clone())
                        .unwrap_or_else(|| "status unreadable".into());
                    match (o.total_cent, want) {
                        (Some(t), Some(c)) if t != c.get() => {
                            w.push_str(&format!(", {t} fen against the {} fen confirmed", c.get()))
                        }
                        (None, Some(_)) => w.push_str(", no amount shown"),
                        _ => {}
                    }
                    if !o.in_window {
                        w.push_str(match o.ordered_at {
                            Some(_) => ", outside the adoption window",
                            None => ", time unreadable",
                        });
                    }
                    format!("{} ({w})", o.order_sn)
                })
                .collect();
            return self.fail(
                manual(
                    FailureCode::OrderNotUnpaid,
                    step,
                    format!(
                        "the order placed is not unpaid: {}; live purchases stop on this phone",
                        what.join(", ")
                    ),
                )
                .explain(&naming(
                    reasons::for_code(&FailureCode::OrderNotUnpaid),
                    &bound,
                ))
                .with("order_sn", bound[0].order_sn.clone()),
            );
        }
        // A census is the proof that an order is new; a mark stored without one (an
        // older client) proves nothing.
        if self.conf.census.is_none() && !candidates.is_empty() {
            return self.fail(
                manual(
                    FailureCode::OrderNoveltyUnproven,
                    step,
                    "orders fit the purchase, but no census of the unpaid orders was taken before the submit: none is adopted",
                )
                .explain(&naming(
                    reasons::for_code(&FailureCode::OrderNoveltyUnproven),
                    &candidates,
                )),
            );
        }
        // An order whose card the census saw without opening it (its match — the task's
        // expected title, the Admin's spelling — left that card out) may be older than
        // the submit: its number proves nothing, and none is adopted.
        let unproven: Vec<&OrderSeen> = self
            .orders
            .values()
            .filter(|o| o.fits && !o.other_task && !o.in_census && o.in_window)
            .filter(|o| o.like_unopened)
            .collect();
        if !unproven.is_empty() {
            return self.fail(
                manual(
                    FailureCode::OrderNoveltyUnproven,
                    step,
                    format!(
                        "{} order(s) fit the purchase, but their cards read like unpaid cards the census saw before the submit without opening them (outside its match: the task's expected title or option spelling differs from the page's): they cannot be proven new and none is adopted",
                        unproven.len()
                    ),
                )
                .explain(&naming(reasons::census_missed_card(), &unproven)),
            );
        }
        // What PDD showed after the tap decides before a found order does.
        // A late mark (an order placed by a tap that should only have opened 确认订单) is
        // ORDER_PLACED_UNCONFIRMED — unless the screen that made it late was the
        // repeat-order dialog or a payment offer: that screen's code says what happened.
        let special: Option<FailureCode> = if self.conf.unconfirmed.is_some() && !self.late_by_after
        {
            Some(FailureCode::OrderPlacedUnconfirmed)
        } else if self.after.repeat_prompt.is_some() {
            Some(FailureCode::RepeatOrderPrompt)
        } else if self.after.offer.is_some() {
            Some(FailureCode::PaymentOfferShown)
        } else if self.after.payment_app.is_some() {
            Some(FailureCode::PaymentAppOpened)
        } else {
            None
        };
        if let Some(code) = special {
            let m = match &code {
                FailureCode::OrderPlacedUnconfirmed => format!(
                    "an order may have been placed by a tap that should only have opened 确认订单 (then: {})",
                    self.conf.unconfirmed.as_deref().unwrap_or("?")
                ),
                FailureCode::RepeatOrderPrompt => format!(
                    "PDD asked `{}`: 继续下单 was never tapped",
                    self.after.repeat_prompt.as_deref().unwrap_or("")
                ),
                FailureCode::PaymentOfferShown => format!(
                    "PDD offered {} after the submit; declined, never accepted",
                    self.after.offer.unwrap_or("")
                ),
                _ => format!(
                    "PDD handed the payment to {}; nothing was tapped there",
                    self.after.payment_app.as_deref().unwrap_or("another app")
                ),
            };
            let text = match &code {
                FailureCode::OrderPlacedUnconfirmed => {
                    reasons::placed_unconfirmed(self.conf.unconfirmed_by.as_deref())
                }
                other => reasons::for_code(other),
            };
            let mut f = manual(
                code.clone(),
                step,
                format!("{m}; {} new order(s) found", candidates.len()),
            )
            .explain(&naming(text, &candidates));
            if let [one] = candidates.as_slice() {
                f = f.with("order_sn", one.order_sn.clone());
            }
            return self.fail(f);
        }
        let fitting_new: Vec<&OrderSeen> = self
            .orders
            .values()
            .filter(|o| o.fits && !o.other_task && !o.in_census)
            .collect();
        match candidates.as_slice() {
            [one] => {
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
            [] if !fitting_new.is_empty() => self.fail(manual(
                FailureCode::OrderTimeOutOfWindow,
                step,
                format!(
                    "orders fit the purchase but none was placed between {} s before and {} s after the submit",
                    self.lead().as_secs(),
                    self.limits.window.as_secs()
                ),
            )),
            [] => {
                let incomplete = self.walk == Walk::All && !self.all_walked;
                let mut m = if incomplete {
                    format!(
                        "{}no new order fits the purchase under 待付款, and the 全部 list could not be read (its tab did not open): an order in another state (paid, 先用后付) cannot be ruled out",
                        if self.mode == Mode::Recovery {
                            "interrupted after the irreversible mark; "
                        } else {
                            ""
                        }
                    )
                } else if self.mode == Mode::Recovery {
                    "interrupted after the irreversible mark and no order can be found: nothing can be proven".to_string()
                } else {
                    "no new order fits the purchase, under 待付款 or 全部".to_string()
                };
                if others > 0 {
                    m.push_str(&format!(
                        " ({others} that fit were reported for other tasks and are never adopted)"
                    ));
                }
                if old > 0 {
                    m.push_str(&format!(
                        " ({old} that fit were unpaid before the submit and are never adopted)"
                    ));
                }
                self.fail(manual(self.not_found_code(), step, m))
            }
            many => self.fail(manual(
                FailureCode::AmbiguousOrderMatch,
                step,
                format!("{} new unpaid orders fit the purchase", many.len()),
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
            let code = if self.mode == Mode::Census {
                FailureCode::OrderCensusFailed
            } else {
                FailureCode::InterruptedAfterSubmit
            };
            return self.fail(manual(
                code,
                FlowStep::LeavePayment,
                "the payment screen could not be left without paying",
            ));
        }
        self.phase = Phase::Leaving;
        self.d.step = FlowStep::LeavePayment;
        a
    }

    /// Towards the order list being walked from a page that is not it: its deep link
    /// while it has not failed, else `fallback` (the label path).
    fn towards_orders(&mut self, fallback: Action) -> Action {
        self.d.step = self.step();
        if matches!(self.link, Link::Untried | Link::Landed) {
            self.link = Link::Opened { waits: 0 };
            let url = match self.walk {
                Walk::Unpaid => UNPAID_ORDERS_LINK,
                Walk::All => ALL_ORDERS_LINK,
            };
            let step = self.step();
            return self.nav(Action::OpenUrl {
                url: url.into(),
                step,
            });
        }
        self.nav(fallback)
    }

    /// After the deep link: the order list (or a detail) means it landed; a page on the
    /// way (popup, login, payment) is handled as usual; anything else gets `link_waits`
    /// re-dumps, then the link counts as failed and the label path takes over.
    fn link_progress(&mut self, screen: &Screen) -> Option<Action> {
        let Link::Opened { waits } = self.link else {
            return None;
        };
        match screen {
            Screen::OrderList(_) | Screen::OrderDetail(_) => self.link = Link::Landed,
            Screen::Popup(_)
            | Screen::LoginRequired(_)
            | Screen::RiskVerification(_)
            | Screen::Payment(_)
            | Screen::PaymentAbandonDialog(_)
            | Screen::RepeatOrderDialog(_)
            | Screen::PaymentOffer(_) => {}
            _ if waits < self.limits.link_waits => {
                self.link = Link::Opened { waits: waits + 1 };
                self.d.step = self.step();
                return Some(self.d.pause_then_observe());
            }
            _ => self.link = Link::Failed,
        }
        None
    }

    /// The label path on a PDD page that is not the list: the first way to the orders
    /// (待付款, 个人中心, 返回首页) not yet tapped `label_taps` times; BACK on a page that
    /// offers none; the end when every way offered was tried (a profile drawing its
    /// order entries on canvas offers only 个人中心, again and again).
    fn by_labels(&mut self, nav: &[crate::screen::Target]) -> Action {
        let step = self.step();
        if nav.is_empty() {
            return self.nav(Action::Back { step });
        }
        let limit = self.limits.label_taps;
        let next = nav
            .iter()
            .find(|t| self.label_taps.get(&t.label).copied().unwrap_or(0) < limit)
            .cloned();
        let Some(t) = next else {
            return self.fail(manual(
                self.not_found_code(),
                step,
                "the 待付款 list could not be reached: its deep link did not open it and the \
                 pages offer no way left (the profile's order entries may be drawn on canvas)",
            ));
        };
        *self.label_taps.entry(t.label.clone()).or_default() += 1;
        self.nav(Action::Tap {
            at: t.tap,
            label: t.label,
            step,
            kind: TapKind::ChangesScreen,
        })
    }

    /// Right after this run's submit (not in recovery or a census).
    fn after_own_submit(&self) -> bool {
        self.mode == Mode::AfterSubmit
    }

    fn on_screen(&mut self, o: Observed) -> Action {
        let Observed { screen, .. } = o;
        if let Some(a) = self.link_progress(&screen) {
            return a;
        }
        let home = |step| Action::OpenUrl {
            url: HOME_LINK.into(),
            step,
        };
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
                        kind: TapKind::ChangesScreen,
                    }),
                    // No leave button: BACK (closes the dialog on most builds); never
                    // the 继续支付 button.
                    None => self.leave(Action::Back {
                        step: FlowStep::LeavePayment,
                    }),
                }
            }
            // 相同商品订单待支付: never 继续下单 (a second order), never 去支付.
            Screen::RepeatOrderDialog(d) => {
                if self.mode != Mode::Census {
                    self.after.repeat_prompt.get_or_insert(d.marker.clone());
                }
                // The submit's answer: the sheet behind the dialog is not waited out.
                self.payment_seen = true;
                match d.close {
                    Some(t) => self.leave(Action::Tap {
                        at: t.tap,
                        label: t.label,
                        step: FlowStep::LeavePayment,
                        kind: TapKind::ChangesScreen,
                    }),
                    None => self.leave(Action::Back {
                        step: FlowStep::LeavePayment,
                    }),
                }
            }
            // 开通免密支付 / 开通先用后付: never 立即开通.
            Screen::PaymentOffer(o) => {
                if self.mode != Mode::Census {
                    self.after.offer.get_or_insert(o.offer);
                }
                self.payment_seen = true;
                match o.decline {
                    Some(t) => self.leave(Action::Tap {
                        at: t.tap,
                        label: t.label,
                        step: FlowStep::LeavePayment,
                        kind: TapKind::ChangesScreen,
                    }),
                    None => self.leave(Action::Back {
                        step: FlowStep::LeavePayment,
                    }),
                }
            }
            // WeChat / Alipay in front right after the submit: PDD handed the payment
            // over. BACK once (a safe key: it cancels there), never a tap; if it stays,
            // the order list's deep link brings PDD back.
            Screen::Unknown(u)
                if u.payment_app().is_some()
                    && self.after_own_submit()
                    && self.after.payment_app.is_none() =>
            {
                self.after.payment_app = u.payment_app().map(str::to_string);
                self.payment_seen = true;
                self.checkpoint = Some("purchase.payment_app");
                self.leave(Action::Back {
                    step: FlowStep::LeavePayment,
                })
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
                        kind: TapKind::ChangesScreen,
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
                let step = self.step();
                self.nav(home(step))
            }
            Screen::LoginRequired(_) => self.fail(manual(
                FailureCode::LoginRequired,
                self.step(),
                "the PDD app asks to log in before the orders could be read",
            )),
            Screen::RiskVerification(_) => self.fail(manual(
                FailureCode::RiskVerification,
                self.step(),
                "a security verification before the orders could be read",
            )),
            Screen::OrderList(l) => {
                if self.mode != Mode::Census {
                    self.checkpoint = Some("reconcile.order_list");
                }
                self.polls = 0;
                self.on_list(l)
            }
            Screen::OrderDetail(d) => {
                if self.mode != Mode::Census {
                    self.checkpoint = Some("reconcile.order_detail");
                }
                self.polls = 0;
                self.on_detail(d)
            }
            // Back from here walks an unknown history (earlier tasks' pages, risk or
            // login pages among them): go home directly instead.
            // Right after the submit tap the sheet may still be on screen while the app
            // creates the order: navigating away now could cut that short. Wait for it
            // to leave (bounded) before anything else; after the payment page was seen,
            // or in crash recovery, the sheet is just a page to leave. 确认订单 (whose
            // 提交订单 was the tap) alike; it is left by the home link, never by BACK or a
            // tap on it: nothing here can submit again.
            Screen::SkuSheet(_) | Screen::ConfirmOrder(_)
                if self.after_own_submit()
                    && !self.payment_seen
                    && self.sheet_waits < self.limits.polls =>
            {
                self.sheet_waits += 1;
                self.d.step = FlowStep::LeavePayment;
                self.d.pause_then_observe()
            }
            Screen::SkuSheet(_) | Screen::ConfirmOrder(_) | Screen::GoodsDetail(_) => {
                if self.mode != Mode::Census {
                    self.checkpoint = Some("purchase.left_payment");
                }
                let step = self.step();
                self.towards_orders(home(step))
            }
            Screen::Unknown(u) => {
                let step = self.step();
                self.d.step = step.clone();
                if u.packages.is_empty() || matches!(self.link, Link::Untried | Link::Landed) {
                    return self.towards_orders(home(step));
                }
                self.by_labels(&u.nav)
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
                if self.mode == Mode::Census {
                    // Straight to the list: nothing was submitted, nothing to leave.
                    return self.towards_orders(Action::OpenUrl {
                        url: HOME_LINK.into(),
                        step: FlowStep::OrderCensus,
                    });
                }
                if self.mode == Mode::AfterSubmit {
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
        if self.mode == Mode::Census {
            return FlowFailure::retry(
                FailureCode::OrderCensusFailed,
                FlowStep::OrderCensus,
                format!("stopped by the driver while counting the unpaid orders: {reason:?}"),
            );
        }
        self.diag(manual(
            FailureCode::InterruptedAfterSubmit,
            self.d.step.clone(),
            format!("stopped by the driver after the irreversible mark: {reason:?}"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_window_is_lead_before_and_window_after_the_mark() {
        let mark = Utc.with_ymd_and_hms(2026, 11, 30, 8, 0, 0).unwrap();
        let at = |secs: i64| (mark + chrono::Duration::seconds(secs)).fixed_offset();
        let (before, after) = (Duration::from_secs(90), Duration::from_secs(300));
        assert!(within(mark, at(-90), before, after));
        assert!(!within(mark, at(-91), before, after));
        assert!(within(mark, at(0), before, after));
        assert!(within(mark, at(300), before, after));
        assert!(!within(mark, at(301), before, after));
    }

    #[test]
    fn the_lead_is_60_s_plus_the_skew_and_never_beyond_the_contract() {
        let conf: Confirmation = serde_json::from_value(json!({
            "goods_id": "1", "title": null, "options": {"color": "白色"},
            "original_options": {"color": "白色"}, "quantity": 1, "total": 1250,
            "max_price": 1500, "spec_resolution_id": null
        }))
        .unwrap();
        let mark = Utc.with_ymd_and_hms(2026, 11, 30, 8, 0, 0).unwrap();
        let flow = |skew: u64| {
            ReconcileFlow::new(conf.clone(), mark, false, ReconcileLimits::default()).with_context(
                ReconcileContext {
                    known_orders: BTreeSet::new(),
                    clock_skew: Duration::from_secs(skew),
                },
            )
        };
        assert_eq!(flow(0).lead(), Duration::from_secs(60));
        assert_eq!(flow(30).lead(), Duration::from_secs(90));
        assert_eq!(flow(3600).lead(), Duration::from_secs(300));
    }

    fn seen(status: &str, binding: Option<&str>) -> OrderSeen {
        OrderSeen {
            order_sn: "261130-000000000000001".into(),
            ordered_at: None,
            status: Some(status.into()),
            total_cent: Some(1250),
            quantity: Some(1),
            fits: true,
            in_window: true,
            other_task: false,
            in_census: false,
            binding: binding.map(str::to_string),
            recent: true,
            like_unopened: false,
        }
    }

    #[test]
    fn unpaid_is_read_in_every_wording_and_never_past_a_binding_word() {
        for s in ["待付款", "待支付", "等待付款", "等待买家付款"] {
            assert!(seen(s, None).unpaid(), "{s}");
        }
        for s in ["待发货", "已完成", "交易已取消", ""] {
            assert!(!seen(s, None).unpaid(), "{s}");
        }
        assert!(!seen("待付款", Some("先用后付")).unpaid());
    }
}
