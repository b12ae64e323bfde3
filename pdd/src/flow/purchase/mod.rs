//! The purchase flow: from the goods page to a confirmed order total — and,
//! when the task is live and the client declared live, one 提交订单 tap, leaving the
//! payment screen without paying, and reconciling the order that tap created.
//!
//! # Steps
//! 0. `order_census` (live only) — before anything is tapped: a live task
//!    needs the phone's address fingerprint (`expected_address`; else `manual_review
//!    ADDRESS_FINGERPRINT_MISSING`), then the unpaid orders of the goods are counted by
//!    the reconcile machine's census ([`ReconcileFlow::census`]): the 待付款 list by its
//!    deep link, every card that could fit opened for its order number. The census
//!    travels with the mark; reconciliation adopts only an order absent from it. A
//!    census that cannot be taken is `retry_wait ORDER_CENSUS_FAILED`.
//! 1. `open_goods` / `check_goods` — the deep link built from the goods id; popups
//!    dismissed; login → `manual_review LOGIN_REQUIRED`; risk page → `manual_review
//!    RISK_VERIFICATION`; "goods gone" → `failed GOODS_UNAVAILABLE`. Identity
//!    ([`super::identity`]): the goods id the phone shows (on the page, else one
//!    `dumpsys activity top` read), else the expected title; another goods id →
//!    `failed GOODS_MISMATCH` naming it (confirmed by a second dump and read); nothing
//!    proving it → a **live** task ends `manual_review GOODS_IDENTITY_UNVERIFIED` right
//!    there, before any tap on the sheet (a dry run goes on and reports
//!    `goods_identity: "unverified"`). The result's `goods_id` is the observed id and
//!    `goods_identity` names the proof.
//! 2. `open_sku_sheet` — the preferred buy button (the same one collect uses).
//! 3. `check_address` — 手动添加地址 → `manual_review ADDRESS_MISSING`. On the confirming
//!    screen (the sheet with 提交订单, or 确认订单), before the mark, the address block is
//!    read (reported as `delivery_address`, masked as PDD shows it) and held against the
//!    phone's fingerprint (`PurchaseTask::expected_address`, every part a substring):
//!    lacking a part, or unreadable while one is configured → `manual_review
//!    ADDRESS_MISMATCH` (dry runs too: they rehearse the live run).
//! 4. `select_color` / `select_size` — every dimension of the sheet must be named by the
//!    task (a single preselected option excepted); options are matched exactly (after
//!    [`normalize_name`]). A size with no exact match gets **one** §7.1 spec resolution:
//!    the candidates are the sizes shown available under the selected colour, in page
//!    order, `c1…cN`; the request goes out as an [`Effect::ResolveSpec`] (stored before
//!    it is sent, resent with the same key on transient errors, never polled). On
//!    `matched` the page is read again, the snapshot recomputed and compared, and the
//!    match selected only if it is still exactly there; `uncertain` → `manual_review
//!    SPEC_RESOLUTION_UNCERTAIN`, `rejected` → `failed SPEC_RESOLUTION_REJECTED`,
//!    `failed` → `retry_wait SPEC_RESOLUTION_FAILED`.
//! 5. `set_quantity` — stepper taps, then the field must show the task's quantity
//!    (read, never assumed: unreadable → `QUANTITY_NOT_SETTABLE`).
//! 6. `confirm_total` — on the final sheet: the selection, 已选 text, quantity, address,
//!    the payment method and the footer total (提交订单 ¥TOTAL) are all read from **one**
//!    dump. The payment method must be interactive (微信支付, …; never 先用后付 / 免密 /
//!    auto-pay: `manual_review PAYMENT_METHOD_NOT_ALLOWED`). The total must be > 0, at most
//!    `max_price_cent` (`failed PRICE_LIMIT_EXCEEDED`), and **settled**: the same
//!    selection, quantity and total on two consecutive dumps a bounded wait apart, the
//!    first of them not right after a gesture (the app re-prices after taps).
//!    A sheet whose button reads 确定 / 立即购买 **and** that shows a checkout row
//!    (address, payment row, total: [`crate::screen::checkout`]) places the order with
//!    that button: it is the submit — the same checks, the mark, one tap — and without a
//!    total shown it is refused (`failed ORDER_TOTAL_NOT_SHOWN`). A button that pays in
//!    the same tap (立即支付 ¥59) is refused with its own text.
//!    Goods whose spec sheet (no checkout row) reads 确定 / 立即购买 go on to the
//!    full-page 确认订单 (the contract's 最终订单确认页): the button is tapped once the
//!    options and quantity are confirmed on the sheet (never tapped again blind), and on
//!    确认订单 the address (手动添加收货地址 → `ADDRESS_MISSING`), the payment method, the
//!    goods, and a positively read spec line (`SPEC_MISMATCH`) and quantity (a stepper
//!    there is set like the sheet's; `QUANTITY_NOT_SETTABLE`), and the settled total
//!    are judged by the same rules; its 提交订单 is the one submit. The flow never goes
//!    back from 确认订单. A 确定 that quotes an amount ("确定 ¥59") places the order like
//!    one on a checkout sheet. Before the spec sheet's 确定 is tapped a durable note is
//!    written ([`Effect::NoteProceed`]): a crash after it is recovered `manual_review
//!    ORDER_PLACED_UNCONFIRMED`, never "nothing was submitted". If that 确定 leads
//!    anywhere but 确认订单 — a payment page, 收银台, another app, an unknown page, a
//!    dialog, a login or risk page, a goods-gone page, a popup over anything but the sheet
//!    or 确认订单 (its underlying page is read before it is dismissed), popups past their
//!    limit, the sheet still there after the polls, dumps that fail, a phone that does not
//!    answer, a refused window, the driver's bound — an order may exist: the flow marks
//!    the run then (late, with `unconfirmed` set), reconciles, and ends `manual_review
//!    ORDER_PLACED_UNCONFIRMED` naming what came (the repeat-order dialog and a payment
//!    offer end with their own codes), never `retry_wait`. Once 确认订单 showed, the 确定
//!    is proven to have ordered nothing and the before-mark rules hold again.
//! 7. dry run: finish with the dry-run purchase result (`decisions.md` §6).
//! 8. live: [`Effect::MarkIrreversible`] (durable, with the confirmation snapshot); only
//!    after the store answers `Marked` the flow taps 提交订单 — once: the flow moves to
//!    its reconcile phase before the tap leaves, and no state of that phase can tap the
//!    sheet again. Everything after the mark is [`super::reconcile::ReconcileFlow`]:
//!    leave payment (back, 先去逛逛), find the order, report success or `manual_review`.
//!
//! Device calls: one `dumpsys activity top` read when the goods page prints no id.
//! Dumps on the happy path: goods, sheet, selection, quantity, two settle dumps (6 for a
//! dry run), then payment, abandon dialog, goods, order list (by its deep link), order
//! detail — the walk ends there once the list's view showed the census's top — plus the
//! census's one dump per screen of 待付款 (`BENCHMARKS.md`).
//!
//! # Files
//! - this file — the [`PurchaseFlow`] state, its observation routing and the screens
//!   every step shares (login, risk, popups, goods gone);
//! - [`task`] — [`PurchaseTask`] and [`PurchaseLimits`];
//! - [`plan`] — the goods page and the option plan on the SKU sheet (which option to tap
//!   in which dimension, scrolling to reveal);
//! - [`spec`] — the one §7.1 spec resolution and the re-read after `matched`;
//! - [`quantity`] — the stepper;
//! - [`confirm`] — the 已选 check, the order total against the limit, the irreversible
//!   mark and the single submit tap.

mod confirm;
mod plan;
mod quantity;
mod spec;
pub mod task;

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use cmautobuy_contract::{FailureCode, FlowStep, OptionMap, SpecResolutionRequest};

use super::action::{AbortReason, Action, Effect, Flow, FlowOutcome, Observation, Observed};
use super::confirmation::{Confirmation, ListCard};
use super::failure::FlowFailure;
use super::identity::{IdentityCheck, Verdict};
use super::observe::{Dispatch, Pending, Policy, Routed};
use super::reconcile::{AfterSubmit, ReconcileContext, ReconcileFlow};
use super::sheet::SheetModel;
use crate::screen::{goods, Point, Screen, ScreenKind};
use task::{PurchaseLimits, PurchaseTask};

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Start,
    /// Counting the unpaid orders of the goods (live only).
    Census,
    Goods,
    Sheet,
    /// Waiting for the spec resolution's answer.
    Resolving,
    /// The note that the spec sheet's 确定 / 立即购买 is about to be tapped is being
    /// committed (nothing tapped yet).
    NotingProceed,
    /// The sheet's 确定 / 立即购买 is tapped: the order is confirmed on the full-page
    /// 确认订单.
    Confirming,
    /// Waiting for the store to confirm the mark.
    Marking,
    /// The spec sheet's 确定 led somewhere an order may exist: waiting for the store to
    /// record the mark after the fact.
    LateMarking,
    /// The submit tap is out: everything is the reconcile flow's.
    Submitted,
}

/// The state a total is confirmed in: it must read the same on two consecutive quiet
/// dumps.
#[derive(Clone, Debug, PartialEq)]
struct Settle {
    options: OptionMap,
    selected_text: Option<String>,
    quantity: u32,
    total: crate::money::Fen,
}

/// A §7.1 resolution as this attempt knows it.
#[derive(Clone, Debug)]
struct Resolution {
    hash: String,
    resolution_id: String,
    /// The matched candidate (id, raw text).
    matched: (String, String),
    /// Verified on a fresh dump after the answer.
    verified: bool,
}

/// The purchase state machine.
pub struct PurchaseFlow {
    task: PurchaseTask,
    limits: PurchaseLimits,
    phase: Phase,
    /// Queued taps, the current step, failed-dump and device-error counts.
    d: Dispatch,
    polls: u32,
    /// Polls for something that must be read before anything is tapped (a total, a
    /// spec line, a quantity): never reset by a new dump of the same page.
    unread_polls: u32,
    popups: u32,
    /// Whether the page is the task's goods, and what proves it.
    identity: IdentityCheck,
    reopens: u32,
    swipes: u32,
    quantity_rounds: u32,
    last_quantity: Option<u32>,
    buy_at: Option<(Point, String)>,
    title: Option<String>,
    model: SheetModel,
    sheet_seen: bool,
    bottom_seen: bool,
    option_taps: BTreeMap<String, u32>,
    /// The options confirmed on the sheet before its 确定 / 立即购买 was tapped.
    chosen: Option<OptionMap>,
    /// Taps of the sheet's 确定 / 立即购买 (bounded).
    proceeds: u32,
    /// Taps of the close of something PDD drew over the order button (bounded).
    uncovers: u32,
    /// The delivery address the confirming screen showed, as read (evidence).
    address_read: Option<String>,
    /// The request sent (at most one per attempt).
    spec_request: Option<SpecResolutionRequest>,
    resolution: Option<Resolution>,
    confirmation: Option<Confirmation>,
    /// Dumps since the last gesture (a dump right after one never confirms a total).
    quiet_dumps: u32,
    /// The census sub-flow while it runs (live only).
    census: Option<ReconcileFlow>,
    /// The order numbers the census counted.
    census_taken: Option<BTreeSet<String>>,
    /// The cards at the top of the unpaid list when the census counted.
    census_top: Option<Vec<ListCard>>,
    /// The unpaid cards the census saw without opening them.
    census_unopened: Option<Vec<ListCard>>,
    /// What showed after the spec sheet's 确定 instead of 确认订单 (late mark).
    unconfirmed: Option<String>,
    /// 确认订单 showed after the spec sheet's 确定: the tap opened it and ordered nothing.
    confirm_seen: bool,
    /// The spec sheet's 确定 tap was answered (its first observation came).
    proceed_answered: bool,
    /// The spec sheet's 确定, tapped once its note is committed.
    pending_proceed: Option<crate::screen::Target>,
    /// A post-submit screen (the repeat-order dialog, a payment offer) that came instead of
    /// 确认订单: reconciliation ends with its code rather than `ORDER_PLACED_UNCONFIRMED`.
    late_after: AfterSubmit,
    /// What the previous quiet dump showed ready to confirm: selection, quantity, total.
    settling: Option<Settle>,
    /// The previous dump's `settling`, for this dump to compare with.
    prev_settle: Option<Settle>,
    /// Settle dumps so far (bounded by `limits.polls`).
    settles: u32,
    marked_at: Option<DateTime<Utc>>,
    reconcile: Option<ReconcileFlow>,
    /// What the reconcile phase gets besides the confirmation ([`Self::with_reconcile`]).
    reconcile_ctx: ReconcileContext,
}

fn finish_fail(f: FlowFailure) -> Action {
    Action::Finish(FlowOutcome::Failed(f))
}
impl PurchaseFlow {
    /// A flow for `task`; `Err` when the task cannot be run (goods id not digits,
    /// quantity or limit not positive, no options).
    pub fn new(
        task: PurchaseTask,
        limits: PurchaseLimits,
    ) -> Result<PurchaseFlow, Box<FlowFailure>> {
        let id = &task.goods_id;
        let bad = |m: &str| {
            Err(Box::new(FlowFailure::failed(
                FailureCode::InvalidTaskPayload,
                FlowStep::OpenGoods,
                m,
            )))
        };
        if id.is_empty() || id.len() > 24 || !id.bytes().all(|b| b.is_ascii_digit()) {
            return bad("goods_id must be 1–24 digits");
        }
        if task.quantity == 0 || task.max_price.get() <= 0 {
            return bad("quantity and max_price_cent must be positive");
        }
        if task.options.is_empty() {
            return bad("a purchase names its options");
        }
        let identity = IdentityCheck::new(
            &task.goods_id,
            task.expected_title.as_deref(),
            limits.poll_pause,
        );
        Ok(PurchaseFlow {
            task,
            limits,
            phase: Phase::Start,
            d: Dispatch::new(
                Policy::before_mark(limits.poll_pause, limits.dump_failures),
                FlowStep::OpenGoods,
            ),
            polls: 0,
            unread_polls: 0,
            popups: 0,
            identity,
            reopens: 0,
            swipes: 0,
            quantity_rounds: 0,
            last_quantity: None,
            buy_at: None,
            title: None,
            model: SheetModel::default(),
            sheet_seen: false,
            bottom_seen: false,
            option_taps: BTreeMap::new(),
            chosen: None,
            proceeds: 0,
            uncovers: 0,
            address_read: None,
            spec_request: None,
            resolution: None,
            confirmation: None,
            quiet_dumps: 0,
            census: None,
            census_taken: None,
            census_top: None,
            census_unopened: None,
            unconfirmed: None,
            confirm_seen: false,
            proceed_answered: false,
            pending_proceed: None,
            late_after: AfterSubmit::default(),
            settling: None,
            prev_settle: None,
            settles: 0,
            marked_at: None,
            reconcile: None,
            reconcile_ctx: ReconcileContext::default(),
        })
    }

    /// The same flow whose reconcile phase (after the submit tap) knows the order numbers
    /// of other tasks and the measured clock skew ([`ReconcileContext`]).
    pub fn with_reconcile(mut self, ctx: ReconcileContext) -> Self {
        self.reconcile_ctx = ctx;
        self
    }

    /// The confirmation read before the mark (tests, reports).
    pub fn confirmation(&self) -> Option<&Confirmation> {
        self.confirmation.as_ref()
    }

    /// Whether the irreversible mark was confirmed (the submit tap may have happened).
    pub fn marked(&self) -> bool {
        self.marked_at.is_some()
    }

    fn observe_now(&mut self, step: FlowStep) -> Action {
        self.d.observe_now(step)
    }

    /// A bounded poll that ends in `fail` (a refusal, not a retry) once the polls are
    /// spent: for what must be read positively before anything is tapped.
    fn poll_then(&mut self, step: FlowStep, fail: impl FnOnce() -> FlowFailure) -> Action {
        self.unread_polls += 1;
        if self.unread_polls > self.limits.polls {
            return finish_fail(fail());
        }
        self.d.pending = Pending::Observe(step);
        Action::Wait {
            duration: self.limits.poll_pause,
        }
    }

    fn poll(&mut self, step: FlowStep, what: &str, code: FailureCode) -> Action {
        self.polls += 1;
        if self.polls > self.limits.polls {
            return finish_fail(FlowFailure::retry(
                code,
                step,
                format!("{what} after {} polls", self.limits.polls),
            ));
        }
        self.d.pending = Pending::Observe(step);
        Action::Wait {
            duration: self.limits.poll_pause,
        }
    }

    /// The goods page by its deep link (built from the digits-only goods id).
    fn open_goods(&mut self) -> Action {
        self.phase = Phase::Goods;
        self.d.step = FlowStep::OpenGoods;
        self.d.pending = Pending::Observe(FlowStep::OpenGoods);
        Action::OpenUrl {
            url: self.task.deep_link(),
            step: FlowStep::OpenGoods,
        }
    }

    /// What the census matches cards on: the task as far as it is known before the
    /// goods page (its expected title, options and quantity).
    fn census_basis(&self) -> Confirmation {
        Confirmation {
            goods_id: self.task.goods_id.clone(),
            goods_identity: None,
            title: self.task.expected_title.clone(),
            options: self.task.options.clone(),
            original_options: self.task.options.clone(),
            quantity: self.task.quantity,
            total: crate::money::Fen(0),
            max_price: self.task.max_price,
            spec_resolution_id: None,
            delivery_address: None,
            spec_text: None,
            census: None,
            census_top: None,
            census_unopened: None,
            unconfirmed: None,
            unconfirmed_by: None,
        }
    }

    /// The census runs: its actions go out; once it has counted, the goods page opens.
    /// Its failures are before anything irreversible: `retry_wait ORDER_CENSUS_FAILED`
    /// (a login or risk page keeps its own code for a human).
    fn on_census(&mut self, now: DateTime<Utc>, obs: Observation) -> Action {
        let Some(c) = self.census.as_mut() else {
            return self.open_goods();
        };
        let a = c.observe(now, obs);
        if let Some(census) = c.census_result() {
            self.census_taken = Some(census.orders);
            self.census_top = Some(census.top);
            self.census_unopened = Some(census.unopened);
            self.census = None;
            return self.open_goods();
        }
        match a {
            Action::Finish(FlowOutcome::Failed(mut f)) => {
                if !matches!(
                    f.code,
                    FailureCode::LoginRequired | FailureCode::RiskVerification
                ) {
                    let why = f.message.clone();
                    f.diagnostics
                        .insert("census_code".into(), f.code.as_str().into());
                    f.code = FailureCode::OrderCensusFailed;
                    f.message = format!(
                        "the unpaid orders of the goods could not be counted before the live submit ({why}); nothing was tapped"
                    );
                }
                f.status = cmautobuy_contract::FailureStatus::RetryWait;
                if matches!(
                    f.code,
                    FailureCode::LoginRequired | FailureCode::RiskVerification
                ) {
                    f.status = cmautobuy_contract::FailureStatus::ManualReview;
                }
                f.step = FlowStep::OrderCensus;
                finish_fail(f)
            }
            other => other,
        }
    }

    /// Between the spec sheet's 确定 and 确认订单 (or the late mark): an order may exist.
    fn proceed_unproven(&self) -> bool {
        self.phase == Phase::Confirming && !self.confirm_seen
    }

    /// What a screen met while the spec sheet's 确定 is unproven ends in, before the
    /// pages every step shares are handled as usual: a login or risk page, a goods-gone
    /// page, a popup over anything but the sheet or 确认订单, or popups past their limit
    /// are not 确认订单 — an order may exist ([`Self::order_may_exist`]). A popup over the
    /// sheet or 确认订单 is dismissed (`None`).
    fn unproven_page(&mut self, screen: &Screen) -> Option<Action> {
        match screen {
            Screen::Popup(p) => {
                let under = p
                    .underlying
                    .map_or("nothing recognisable", ScreenKind::as_str);
                if !matches!(
                    p.underlying,
                    Some(ScreenKind::ConfirmOrder | ScreenKind::SkuSheet)
                ) {
                    return Some(self.order_may_exist(
                        "popup",
                        format!("a popup over {under} after the spec sheet's 确定"),
                    ));
                }
                (self.popups >= self.limits.popups).then(|| {
                    self.order_may_exist(
                        "popups",
                        "popups kept coming back after the spec sheet's 确定".into(),
                    )
                })
            }
            Screen::LoginRequired(_) | Screen::RiskVerification(_) => {
                let k = screen.kind().as_str();
                Some(self.order_may_exist(k, format!("{k} after the spec sheet's 确定")))
            }
            Screen::Unknown(u) if goods::says_goods_gone(&u.labels) => Some(self.order_may_exist(
                "goods_gone",
                "a goods-gone page after the spec sheet's 确定".into(),
            )),
            _ => None,
        }
    }

    /// The confirmation as far as it is known when an order may exist without a
    /// confirmed total: `what` came instead of 确认订单, `by` names it for the operator.
    fn unconfirmed_confirmation(&self, by: &str, what: &str) -> Confirmation {
        let chosen = self
            .chosen
            .clone()
            .unwrap_or_else(|| self.task.options.clone());
        Confirmation {
            goods_id: self.identity.reported_goods_id(),
            goods_identity: self.identity.proof(),
            title: self.title.clone(),
            options: chosen,
            original_options: self.task.options.clone(),
            quantity: self.task.quantity,
            total: crate::money::Fen(0),
            max_price: self.task.max_price,
            spec_resolution_id: self.resolution.as_ref().map(|r| r.resolution_id.clone()),
            delivery_address: self.address_read.clone(),
            spec_text: None,
            census: self.census_taken.clone(),
            census_top: self.census_top.clone(),
            census_unopened: self.census_unopened.clone(),
            unconfirmed: Some(what.to_string()),
            unconfirmed_by: Some(by.to_string()),
        }
    }

    /// After the spec sheet's 确定 something else than 确认订单 came (`what`; `by` names
    /// it: a screen kind, `sheet_stayed`, `popups`, `goods_gone`, or the failure code
    /// that ended the wait): an order may exist whose total was never confirmed. The run
    /// is marked now (crash recovery then reconciles instead of ordering again), then
    /// reconciled; the outcome is `manual_review ORDER_PLACED_UNCONFIRMED` whatever is
    /// found — or, when the screen was the repeat-order dialog or a payment offer, that
    /// screen's own code. Never `retry_wait`.
    fn order_may_exist(&mut self, by: &str, what: String) -> Action {
        self.unconfirmed = Some(what.clone());
        let conf = self.unconfirmed_confirmation(by, &what);
        self.confirmation = Some(conf.clone());
        self.phase = Phase::LateMarking;
        self.d.step = FlowStep::SubmitOrder;
        Action::Effect(Effect::MarkIrreversible {
            confirmation: Box::new(conf),
        })
    }

    fn on_screen(&mut self, now: DateTime<Utc>, o: Observed) -> Action {
        let Observed { screen, .. } = o;
        if self.proceed_unproven() {
            if let Some(a) = self.unproven_page(&screen) {
                return a;
            }
        }
        if let Some(a) = self
            .d
            .common_page(&screen, &mut self.popups, self.limits.popups)
        {
            return a;
        }
        match screen {
            Screen::ConfirmOrder(c) if self.phase == Phase::Confirming => {
                // The 确定 opened 确认订单: it ordered nothing.
                self.confirm_seen = true;
                self.on_confirm_page(c)
            }
            // 确定 was tapped and the sheet is still there: wait (bounded), never tap it
            // again blind — 确认订单 may open right under a second tap. When the polls are
            // spent nothing proves the tap ordered nothing: an order may exist.
            Screen::SkuSheet(_) if self.proceed_unproven() && self.polls >= self.limits.polls => {
                self.order_may_exist(
                    "sheet_stayed",
                    format!(
                        "the spec sheet still showing {} polls after its 确定",
                        self.limits.polls
                    ),
                )
            }
            Screen::SkuSheet(_) if self.phase == Phase::Confirming => self.poll(
                FlowStep::ConfirmTotal,
                "确认订单 did not open after the sheet's 确定",
                FailureCode::PageNotRecognized,
            ),
            // The spec sheet's 确定 led anywhere else: a payment page, 收银台, another app,
            // an unknown page, a dialog, the goods page — an order may exist. Mark, then
            // reconcile; never retry_wait. The repeat-order dialog and a payment offer are
            // remembered: that screen's own code ends the reconciliation.
            other if self.phase == Phase::Confirming => {
                match &other {
                    Screen::RepeatOrderDialog(d) => {
                        self.late_after.repeat_prompt = Some(d.marker.clone());
                    }
                    Screen::PaymentOffer(o) => self.late_after.offer = Some(o.offer),
                    _ => {}
                }
                let k = other.kind().as_str();
                self.order_may_exist(k, format!("{k} after the spec sheet's 确定"))
            }
            Screen::GoodsDetail(g) => self.on_goods(g),
            Screen::SkuSheet(s) if self.phase == Phase::Sheet => self.on_sheet(now, s),
            other => {
                let kind = other.kind().as_str();
                let step = self.d.step.clone();
                self.poll(
                    step,
                    &format!("the expected page did not appear (saw {kind})"),
                    FailureCode::PageNotRecognized,
                )
            }
        }
    }
}

impl Flow for PurchaseFlow {
    fn observe(&mut self, now: DateTime<Utc>, obs: Observation) -> Action {
        if self.phase == Phase::Submitted {
            let Some(r) = self.reconcile.as_mut() else {
                return finish_fail(FlowFailure::manual(
                    FailureCode::InterruptedAfterSubmit,
                    FlowStep::SubmitOrder,
                    "no reconciliation after the submit",
                ));
            };
            // The submit tap's own answer starts the reconciliation (a device error
            // included: the tap may still have reached the phone) — unless the device
            // guard refused it: then it never left, and a human looks.
            if let Observation::TapRefused { reason } = &obs {
                if !r.started() {
                    return finish_fail(
                        FlowFailure::manual(
                            FailureCode::PageNotRecognized,
                            FlowStep::SubmitOrder,
                            format!("the device guard refused the submit tap ({reason}); nothing was tapped"),
                        )
                        .with("device_error", "TAP_REFUSED"),
                    );
                }
            }
            let obs = match obs {
                Observation::Done | Observation::DeviceError { .. } if !r.started() => {
                    Observation::Start
                }
                o => o,
            };
            return r.observe(now, obs);
        }
        if self.phase == Phase::Census {
            return self.on_census(now, obs);
        }
        if self.phase == Phase::Confirming && !self.proceed_answered {
            self.proceed_answered = true;
            // The guard or the phone refused the spec sheet's 确定 itself: it never reached
            // the app, nothing can have been ordered by it.
            if let Observation::TapRefused { .. } | Observation::InputRefused { .. } = &obs {
                self.confirm_seen = true;
            }
        }
        let screen = matches!(obs, Observation::Screen(_));
        if screen {
            self.quiet_dumps += 1;
            // Only the dump right before this one may settle a total with it.
            self.prev_settle = self.settling.take();
        }
        let action = match self.d.route(obs) {
            Routed::Start if self.task.live => {
                // Nothing is tapped for a live task before it can be told apart from
                // what is already there: the address fingerprint, then the census.
                if self.task.expected_address.is_empty() {
                    let text = crate::reasons::for_code(&FailureCode::AddressFingerprintMissing);
                    return finish_fail(
                        FlowFailure::manual(
                            FailureCode::AddressFingerprintMissing,
                            FlowStep::OpenGoods,
                            "a live purchase on a phone without its address fingerprint (expected_address): nothing was tapped",
                        )
                        .explain(&text),
                    );
                }
                self.phase = Phase::Census;
                let mut c = ReconcileFlow::census(self.census_basis(), now, self.limits.reconcile);
                let a = c.observe(now, Observation::Start);
                self.census = Some(c);
                a
            }
            Routed::Start => self.open_goods(),
            Routed::Act(a) => a,
            // Between the spec sheet's 确定 and 确认订单 every failure — dumps that fail, a
            // phone that does not answer, a refused tap, a window that stays — leaves an
            // order possible: mark late and reconcile, never retry_wait.
            Routed::Fail(f) if self.proceed_unproven() => self.order_may_exist(
                f.code.as_str(),
                format!(
                    "{} after the spec sheet's 确定 ({})",
                    f.code.as_str(),
                    f.message
                ),
            ),
            Routed::Fail(f) => finish_fail(f),
            Routed::Resume => self.observe_now(self.d.step.clone()),
            Routed::Screen(o) => self.on_screen(now, *o),
            Routed::GoodsId(read) => match self.identity.on_read(read, &mut self.d) {
                Verdict::Proceed(g) => self.after_identity(*g),
                Verdict::Act(a) => a,
                Verdict::Fail(f) => finish_fail(f),
            },
            Routed::Effect(out) => self.on_effect(now, out),
        };
        // A gesture may change the page: the dumps after it start a new quiet stretch,
        // and a total read before it no longer counts.
        if matches!(
            action,
            Action::Tap { .. }
                | Action::Swipe { .. }
                | Action::Back { .. }
                | Action::OpenUrl { .. }
        ) {
            self.quiet_dumps = 0;
            self.settling = None;
        }
        action
    }

    fn checkpoint(&mut self) -> Option<&'static str> {
        self.reconcile.as_mut().and_then(|r| r.checkpoint())
    }

    fn abort(&mut self, now: DateTime<Utc>, reason: AbortReason) -> FlowFailure {
        if let Some(r) = self.reconcile.as_mut() {
            return r.abort(now, reason);
        }
        if let Some(c) = self.census.as_mut() {
            return c.abort(now, reason);
        }
        if self.marked_at.is_some() {
            return FlowFailure::manual(
                FailureCode::InterruptedAfterSubmit,
                self.d.step.clone(),
                format!("stopped by the driver after the irreversible mark: {reason:?}"),
            );
        }
        // The spec sheet's 确定 is out and 确认订单 never proved it harmless (or the late
        // mark was being saved): an order may exist, and nothing can reconcile it now.
        if self.proceed_unproven() || self.phase == Phase::LateMarking {
            return FlowFailure::manual(
                FailureCode::OrderPlacedUnconfirmed,
                FlowStep::ConfirmTotal,
                format!(
                    "stopped by the driver ({reason:?}) after the spec sheet's 确定, before 确认订单 showed: an order may exist; it was not reconciled"
                ),
            )
            .explain(&crate::reasons::placed_unconfirmed(Some("aborted")));
        }
        FlowFailure::retry(
            FailureCode::PageNotRecognized,
            self.d.step.clone(),
            format!("stopped by the driver: {reason:?}"),
        )
    }
}
