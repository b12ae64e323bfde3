//! The purchase flow (issue 7): from the goods page to a confirmed order total — and,
//! when the task is live and the client declared live, one 提交订单 tap, leaving the
//! payment screen without paying, and reconciling the order that tap created.
//!
//! # Steps
//! 1. `open_goods` / `check_goods` — the deep link built from the goods id; popups
//!    dismissed; login → `manual_review LOGIN_REQUIRED`; risk page → `manual_review
//!    RISK_VERIFICATION`; "goods gone" → `failed GOODS_UNAVAILABLE`; another goods →
//!    `failed GOODS_MISMATCH` (confirmed by a second dump).
//! 2. `open_sku_sheet` — the preferred buy button (the same one collect uses).
//! 3. `check_address` — 手动添加地址 → `manual_review ADDRESS_MISSING`.
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
//! 5. `set_quantity` — stepper taps, then the field must show the task's quantity.
//! 6. `confirm_total` — on the final sheet: the selection, 已选 text, quantity, address
//!    and the footer total (提交订单 ¥TOTAL) are all read from **one** dump; the total is
//!    the order total and is compared with `max_price_cent` (a total) →
//!    `failed PRICE_LIMIT_EXCEEDED`, nothing submitted.
//! 7. dry run: finish with the dry-run purchase result (`decisions.md` §6).
//! 8. live: [`Effect::MarkIrreversible`] (durable, with the confirmation snapshot); only
//!    after the store answers `Marked` the flow taps 提交订单 — once: the flow moves to
//!    its reconcile phase before the tap leaves, and no state of that phase can tap the
//!    sheet again. Everything after the mark is [`super::reconcile::ReconcileFlow`]:
//!    leave payment (back, 先去逛逛), find the order, report success or `manual_review`.
//!
//! Dumps on the happy path: goods, sheet, selection, quantity (4 for a dry run), then
//! payment, abandon dialog, goods, home link page, home, profile, order list, order
//! detail (12 live; `BENCHMARKS.md`).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use cmautobuy_contract::hash::snapshot_hash_of;
use cmautobuy_contract::time::format_utc;
use cmautobuy_contract::{
    ExecutionMode, FailureCode, FlowStep, OptionMap, PurchaseResult, SpecCandidate, SpecOutcome,
    SpecResolutionRequest, SpecResolutionResponse,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::goods::{self, Identity};
use super::reconcile::{ReconcileFlow, ReconcileLimits};
use super::sheet::{self, list_view, tappable, Reveal, SheetModel};
use super::{
    device_error, dump_failed, AbortReason, Action, Effect, EffectOutcome, Flow, FlowFailure,
    FlowOutcome, Observation, Observed,
};
use crate::money::Fen;
use crate::screen::sku_sheet::normalize_name;
use crate::screen::{OptionForm, Point, Screen, SkuGroup, SkuSheet, Tree};

/// What a purchase task asks for, with the attempt it runs in.
#[derive(Clone, Debug, PartialEq)]
pub struct PurchaseTask {
    pub remote_task_id: String,
    pub attempt_id: String,
    pub task_version: i64,
    pub goods_id: String,
    pub expected_title: Option<String>,
    /// Dimension key → wanted option, as the task gives them.
    pub options: OptionMap,
    pub quantity: u32,
    /// The limit of the order **total** (contract §4).
    pub max_price: Fen,
    /// Tap 提交订单 (task live *and* client declared live); otherwise a dry run.
    pub live: bool,
}

impl PurchaseTask {
    /// The deep link (from the digits-only goods id, never the task's URL).
    pub fn deep_link(&self) -> String {
        format!(
            "pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id={}",
            self.goods_id
        )
    }
}

/// Bounds of the flow's own polling and gestures.
#[derive(Clone, Copy, Debug)]
pub struct PurchaseLimits {
    pub polls: u32,
    pub poll_pause: Duration,
    pub popups: u32,
    pub dump_failures: u32,
    pub swipes: u32,
    pub swipe_ms: u32,
    /// Rounds of stepper taps before `QUANTITY_NOT_SETTABLE`.
    pub quantity_rounds: u32,
    /// Taps of one option before giving up on it.
    pub option_taps: u32,
    pub reconcile: ReconcileLimits,
}

impl Default for PurchaseLimits {
    fn default() -> Self {
        PurchaseLimits {
            polls: 4,
            poll_pause: Duration::from_millis(300),
            popups: 6,
            dump_failures: 4,
            swipes: 16,
            swipe_ms: 250,
            quantity_rounds: 3,
            option_taps: 3,
            reconcile: ReconcileLimits::default(),
        }
    }
}

/// What the final confirmation showed, right before the mark; stored with the mark so a
/// restarted client can reconcile without the page (crash recovery).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    pub goods_id: String,
    /// The goods title as the page showed it (order cards are matched on it).
    pub title: Option<String>,
    /// Key → the option as the page names it (what was ordered).
    pub options: OptionMap,
    /// The task's options (differ from `options` after a spec resolution).
    pub original_options: OptionMap,
    pub quantity: u32,
    pub total: Fen,
    pub max_price: Fen,
    pub spec_resolution_id: Option<String>,
}

impl Confirmation {
    /// The §6 purchase section for this confirmation (`decisions.md` §6).
    pub fn result(
        &self,
        mode: ExecutionMode,
        order: Option<(&str, &str)>,
        irreversible_action_at: Option<String>,
    ) -> PurchaseResult {
        let live = mode == ExecutionMode::Live;
        let mut extra = Map::new();
        if self.original_options != self.options {
            extra.insert(
                "original_options".into(),
                serde_json::to_value(&self.original_options).unwrap_or(Value::Null),
            );
        }
        PurchaseResult {
            schema_version: 1,
            mode,
            order_submitted: live,
            payment_attempted: false,
            payment_status: if live { "unpaid" } else { "not_created" }.into(),
            match_status: if live { "matched" } else { "not_applicable" }.into(),
            order_sn: order.map(|(sn, _)| sn.to_string()),
            ordered_at: order.map(|(_, t)| t.to_string()),
            goods_id: self.goods_id.clone(),
            options: self.options.clone(),
            quantity: i64::from(self.quantity),
            confirmed_total_cent: Some(self.total),
            max_price_cent: self.max_price,
            spec_resolution_id: self.spec_resolution_id.clone(),
            irreversible_action_at,
            extra,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Phase {
    Start,
    Goods,
    Sheet,
    /// Waiting for the spec resolution's answer.
    Resolving,
    /// Waiting for the store to confirm the mark.
    Marking,
    /// The submit tap is out: everything is the reconcile flow's.
    Submitted,
}

#[derive(Clone, Debug, PartialEq)]
enum Then {
    Observe(FlowStep),
    Taps(Vec<(Point, String)>, FlowStep),
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
    then: Then,
    step: FlowStep,
    polls: u32,
    popups: u32,
    dump_failures: u32,
    device_errors: u32,
    mismatches: u32,
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
    /// The request sent (at most one per attempt).
    spec_request: Option<SpecResolutionRequest>,
    resolution: Option<Resolution>,
    confirmation: Option<Confirmation>,
    marked_at: Option<DateTime<Utc>>,
    reconcile: Option<ReconcileFlow>,
}

fn finish_fail(f: FlowFailure) -> Action {
    Action::Finish(FlowOutcome::Failed(f))
}

/// Splits labels into comparable tokens (spaces and list punctuation separate them).
pub fn tokens<'a>(labels: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out = Vec::new();
    for l in labels {
        for t in l.split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    ';' | '；' | ',' | '，' | '、' | '/' | ':' | '：' | '\u{3000}'
                )
        }) {
            let n = normalize_name(t);
            if !n.is_empty() {
                out.push(n);
            }
        }
    }
    out
}

/// Does a set of labels name every option (each option one exact token)?
pub fn names_all<'a>(labels: impl Iterator<Item = &'a str>, options: &OptionMap) -> bool {
    let toks = tokens(labels);
    options.values().all(|v| {
        let want = tokens(std::iter::once(v.as_str()));
        !want.is_empty() && want.iter().all(|w| toks.contains(w))
    })
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
        Ok(PurchaseFlow {
            task,
            limits,
            phase: Phase::Start,
            then: Then::Observe(FlowStep::OpenGoods),
            step: FlowStep::OpenGoods,
            polls: 0,
            popups: 0,
            dump_failures: 0,
            device_errors: 0,
            mismatches: 0,
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
            spec_request: None,
            resolution: None,
            confirmation: None,
            marked_at: None,
            reconcile: None,
        })
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
        self.step = step.clone();
        Action::Observe { step }
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
        self.then = Then::Observe(step);
        Action::Wait {
            duration: self.limits.poll_pause,
        }
    }

    fn on_screen(&mut self, now: DateTime<Utc>, o: Observed) -> Action {
        let Observed { screen, tree, .. } = o;
        match screen {
            Screen::LoginRequired(l) => finish_fail(
                FlowFailure::manual(
                    FailureCode::LoginRequired,
                    self.step.clone(),
                    "the PDD app asks to log in",
                )
                .with("marker", l.marker),
            ),
            Screen::RiskVerification(r) => finish_fail(
                FlowFailure::manual(
                    FailureCode::RiskVerification,
                    self.step.clone(),
                    "the PDD app shows a security verification",
                )
                .with("marker", r.marker),
            ),
            Screen::Popup(p) => {
                self.popups += 1;
                if self.popups > self.limits.popups {
                    return finish_fail(FlowFailure::retry(
                        FailureCode::PageNotRecognized,
                        FlowStep::DismissPopup,
                        "popups keep coming back",
                    ));
                }
                self.then = Then::Observe(self.step.clone());
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
            Screen::GoodsDetail(g) => self.on_goods(g, &tree),
            Screen::SkuSheet(s) if self.phase == Phase::Sheet => self.on_sheet(now, s, &tree),
            Screen::Unknown(u) if goods::says_goods_gone(&u.labels) => {
                finish_fail(FlowFailure::failed(
                    FailureCode::GoodsUnavailable,
                    self.step.clone(),
                    "the goods page says the goods does not exist or is off the shelf",
                ))
            }
            other => {
                let kind = other.kind().as_str();
                let step = self.step.clone();
                self.poll(
                    step,
                    &format!("the expected page did not appear (saw {kind})"),
                    FailureCode::PageNotRecognized,
                )
            }
        }
    }

    fn on_goods(&mut self, g: crate::screen::GoodsDetail, tree: &Tree) -> Action {
        if self.phase == Phase::Sheet {
            if !self.sheet_seen && self.polls < 2 {
                return self.poll(
                    FlowStep::OpenSkuSheet,
                    "the option sheet did not open",
                    FailureCode::PageNotRecognized,
                );
            }
            // The sheet closed under us (a popup's back) or never opened: buy again.
            self.polls = 0;
            self.reopens += 1;
            if self.reopens > 2 {
                return finish_fail(FlowFailure::retry(
                    FailureCode::PageNotRecognized,
                    FlowStep::OpenSkuSheet,
                    "the option sheet keeps closing",
                ));
            }
            if let Some((at, label)) = self.buy_at.clone() {
                self.then = Then::Observe(FlowStep::OpenSkuSheet);
                self.step = FlowStep::OpenSkuSheet;
                return Action::Tap {
                    at,
                    label,
                    step: FlowStep::OpenSkuSheet,
                };
            }
        }
        let title = goods::title(tree, &g);
        if let Identity::Mismatch { seen } = goods::identity(
            &self.task.goods_id,
            self.task.expected_title.as_deref(),
            &g,
            title.as_deref(),
        ) {
            // Only a second, fresh dump that still disagrees proves a redirect.
            self.mismatches += 1;
            if self.mismatches < 2 {
                self.then = Then::Observe(FlowStep::CheckGoods);
                return Action::Wait {
                    duration: self.limits.poll_pause,
                };
            }
            return finish_fail(
                FlowFailure::failed(
                    FailureCode::GoodsMismatch,
                    FlowStep::CheckGoods,
                    "the link opened another goods (redirect or wrong link)",
                )
                .with("expected_goods_id", self.task.goods_id.clone())
                .with("seen", seen),
            );
        }
        let Some(button) = goods::buy_button(&g) else {
            if g.sold_out {
                return finish_fail(FlowFailure::failed(
                    FailureCode::GoodsUnavailable,
                    FlowStep::CheckGoods,
                    "the goods is off the shelf",
                ));
            }
            return self.poll(
                FlowStep::CheckGoods,
                "no buy button",
                FailureCode::PageNotRecognized,
            );
        };
        self.title = title.or(g.title.clone());
        self.buy_at = Some((button.target.tap, button.label.clone()));
        self.polls = 0;
        self.phase = Phase::Sheet;
        self.step = FlowStep::OpenSkuSheet;
        self.then = Then::Observe(FlowStep::OpenSkuSheet);
        Action::Tap {
            at: button.target.tap,
            label: button.label.clone(),
            step: FlowStep::OpenSkuSheet,
        }
    }

    fn swipe(&mut self, area: crate::screen::Bounds, dir: Reveal, step: FlowStep) -> Action {
        self.swipes += 1;
        if self.swipes > self.limits.swipes {
            return finish_fail(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                step,
                "the option sheet needed too many scrolls",
            ));
        }
        let (from, to) = sheet::reveal_swipe(area, dir);
        self.then = Then::Observe(step.clone());
        Action::Swipe {
            from,
            to,
            duration_ms: self.limits.swipe_ms,
            step,
        }
    }

    fn step_for(key: &str) -> FlowStep {
        if key == "size" {
            FlowStep::SelectSize
        } else {
            FlowStep::SelectColor
        }
    }

    /// The sizes shown available under the current selection, in page order, as §7.1
    /// candidates; `None` when the size group is not wholly on screen.
    fn candidates(&self, g: &SkuGroup, color: &str) -> Option<Vec<SpecCandidate>> {
        let di = self.model.dims.iter().position(|d| d.key == "size")?;
        let known = &self.model.dims[di].options;
        if g.options.iter().any(|o| o.offscreen) || g.options.len() < known.len() {
            return None;
        }
        Some(
            g.options
                .iter()
                .filter(|o| o.available)
                .enumerate()
                .map(|(i, o)| {
                    let mut options = OptionMap::new();
                    options.insert("color".into(), color.to_string());
                    options.insert("size".into(), o.name.clone());
                    SpecCandidate {
                        candidate_id: format!("c{}", i + 1),
                        raw_text: o.name.clone(),
                        options,
                    }
                })
                .collect(),
        )
    }

    fn on_sheet(&mut self, now: DateTime<Utc>, s: SkuSheet, tree: &Tree) -> Action {
        self.polls = 0;
        self.sheet_seen = true;
        if s.address_present == Some(false) {
            return finish_fail(FlowFailure::manual(
                FailureCode::AddressMissing,
                FlowStep::CheckAddress,
                "the account has no delivery address (手动添加地址)",
            ));
        }
        let placed = self.model.merge(&s);
        if self.model.dims.is_empty() {
            return finish_fail(FlowFailure::failed(
                FailureCode::SpecNotFound,
                FlowStep::ReadSkuSheet,
                "the option sheet shows no options",
            ));
        }
        let mut on_screen: BTreeMap<usize, usize> = BTreeMap::new();
        for (gi, p) in placed.iter().enumerate() {
            if let Some(di) = p {
                on_screen.entry(*di).or_insert(gi);
            }
        }
        let list = list_view(tree, &s);
        if !list.is_some_and(|l| l.more_below) {
            self.bottom_seen = true;
        }
        // Every dimension must be known before the task's options can be checked.
        if !self.bottom_seen {
            if let Some(l) = list {
                return self.swipe(l.bounds, Reveal::Down, FlowStep::ReadSkuSheet);
            }
        }
        // The task must name every dimension (a single, already selected option aside)
        // and nothing the page does not have.
        for k in self.task.options.keys() {
            if !self.model.dims.iter().any(|d| &d.key == k) {
                return finish_fail(
                    FlowFailure::failed(
                        FailureCode::SpecNotFound,
                        FlowStep::ReadSkuSheet,
                        format!("the page has no dimension `{k}`"),
                    )
                    .with(
                        "dimensions",
                        Value::Array(
                            self.model
                                .dims
                                .iter()
                                .map(|d| Value::String(d.key.clone()))
                                .collect(),
                        ),
                    ),
                );
            }
        }
        // Desired option per dimension, in page order.
        let mut desired: Vec<(usize, String, Option<String>)> = Vec::new();
        for (di, d) in self.model.dims.iter().enumerate() {
            let want = self.task.options.get(&d.key).cloned();
            let group = on_screen.get(&di).map(|&gi| &s.groups[gi]);
            let name = match &want {
                None => {
                    // Unnamed by the task: only a lone option that is already chosen.
                    match group {
                        Some(g) if d.options.len() == 1 && g.options.iter().any(|o| o.selected) => {
                            Some(d.options[0].clone())
                        }
                        _ => {
                            return finish_fail(FlowFailure::failed(
                                FailureCode::SpecNotFound,
                                FlowStep::ReadSkuSheet,
                                format!("the task names no option for `{}`", d.name),
                            ))
                        }
                    }
                }
                Some(w) => {
                    let n = normalize_name(w);
                    match d.options.iter().find(|o| normalize_name(o) == n) {
                        Some(o) => Some(o.clone()),
                        None if d.key == "size" => self
                            .resolution
                            .as_ref()
                            .filter(|r| r.verified)
                            .map(|r| r.matched.1.clone()),
                        None => None,
                    }
                }
            };
            desired.push((di, d.key.clone(), name));
        }
        // Walk the dimensions in page order: queue taps for what differs.
        let mut taps: Vec<(Point, String)> = Vec::new();
        let mut first_step: Option<FlowStep> = None;
        for (di, key, name) in &desired {
            let di = *di;
            let step = Self::step_for(key);
            let group = on_screen.get(&di).map(|&gi| &s.groups[gi]);
            let Some(name) = name else {
                if key == "size" {
                    if !taps.is_empty() {
                        break; // select the colour first, then look at the sizes
                    }
                    return self.resolve_or_verify(now, &s, &on_screen);
                }
                let d = &self.model.dims[di];
                if d.form == OptionForm::ImageGrid {
                    if let Some(g) = group {
                        let (_, right) = sheet::grid_more(g);
                        if right {
                            return self.swipe(g.viewport, Reveal::Right, step);
                        }
                    }
                }
                return finish_fail(
                    FlowFailure::failed(
                        FailureCode::SpecNotFound,
                        step,
                        format!(
                            "no option `{}` under `{}`",
                            self.task.options.get(key).cloned().unwrap_or_default(),
                            d.name
                        ),
                    )
                    .with(
                        "options_seen",
                        Value::Array(d.options.iter().cloned().map(Value::String).collect()),
                    ),
                );
            };
            let Some(g) = group else {
                if !taps.is_empty() {
                    break;
                }
                let Some(l) = list else {
                    return finish_fail(FlowFailure::retry(
                        FailureCode::PageNotRecognized,
                        step,
                        "a dimension is not on screen and the sheet does not scroll",
                    ));
                };
                let first = on_screen.keys().next().copied().unwrap_or(0);
                let dir = if di < first { Reveal::Up } else { Reveal::Down };
                return self.swipe(l.bounds, dir, step);
            };
            let Some(o) = g.option(name) else {
                if !taps.is_empty() {
                    break;
                }
                // Known from another scroll position: bring it back.
                if g.form == OptionForm::ImageGrid && g.scrollable {
                    let idx = self.model.dims[di].options.iter().position(|n| n == name);
                    let max_vis = g
                        .options
                        .iter()
                        .filter_map(|o| {
                            self.model.dims[di]
                                .options
                                .iter()
                                .position(|n| n == &o.name)
                        })
                        .max();
                    let dir = match (idx, max_vis) {
                        (Some(i), Some(m)) if i < m => Reveal::Left,
                        _ => Reveal::Right,
                    };
                    return self.swipe(g.viewport, dir, step);
                }
                return finish_fail(FlowFailure::retry(
                    FailureCode::PageNotRecognized,
                    step,
                    format!("option `{name}` went out of view"),
                ));
            };
            if o.selected {
                continue;
            }
            if !o.available {
                if !taps.is_empty() {
                    break; // may become available once the earlier taps land
                }
                return finish_fail(
                    FlowFailure::failed(
                        FailureCode::SpecSoldOut,
                        step,
                        format!("option `{name}` is sold out under the current selection"),
                    )
                    .with("option", name.clone()),
                );
            }
            if !tappable(g, o) {
                if !taps.is_empty() {
                    break;
                }
                let sideways =
                    g.form == OptionForm::ImageGrid && g.scrollable && sheet::sliver_sideways(g, o);
                return match (sideways, list) {
                    (true, _) => {
                        let dir = if o.bounds.left <= g.viewport.left + 1 {
                            Reveal::Left
                        } else {
                            Reveal::Right
                        };
                        self.swipe(g.viewport, dir, step)
                    }
                    (false, Some(l)) => {
                        let dir = if o.bounds.top <= l.bounds.top + 1 {
                            Reveal::Up
                        } else {
                            Reveal::Down
                        };
                        self.swipe(l.bounds, dir, step)
                    }
                    (false, None) => finish_fail(FlowFailure::retry(
                        FailureCode::PageNotRecognized,
                        step,
                        format!("option `{name}` cannot be tapped"),
                    )),
                };
            }
            let n = self.option_taps.entry(format!("{key}={name}")).or_insert(0);
            *n += 1;
            if *n > self.limits.option_taps {
                return finish_fail(FlowFailure::retry(
                    FailureCode::PageNotRecognized,
                    step,
                    format!("option `{name}` does not stay selected"),
                ));
            }
            let Some(at) = o.tap else { break };
            first_step.get_or_insert(step);
            taps.push((at, name.clone()));
        }
        if !taps.is_empty() {
            let step = first_step.unwrap_or(FlowStep::SelectColor);
            let (at, label) = taps.remove(0);
            self.then = if taps.is_empty() {
                Then::Observe(step.clone())
            } else {
                Then::Taps(taps, step.clone())
            };
            self.step = step.clone();
            return Action::Tap { at, label, step };
        }
        // Everything selected as wanted: the 已选 text must say so too.
        let chosen: OptionMap = desired
            .iter()
            .filter_map(|(_, k, n)| n.clone().map(|n| (k.clone(), n)))
            .collect();
        let sel_ok = s.selected_text.as_deref().is_some_and(|t| {
            t.trim_start().starts_with("已选") && names_all(std::iter::once(t), &chosen)
        });
        if !sel_ok {
            return self.poll(
                FlowStep::SelectSize,
                "the 已选 text does not name the selected options",
                FailureCode::PageNotRecognized,
            );
        }
        self.set_quantity_or_confirm(s, chosen)
    }

    /// Size without an exact match: send the one spec resolution, or (after a matched
    /// answer) verify on this fresh dump that the snapshot and the match are unchanged.
    fn resolve_or_verify(
        &mut self,
        now: DateTime<Utc>,
        s: &SkuSheet,
        on_screen: &BTreeMap<usize, usize>,
    ) -> Action {
        let step = FlowStep::ResolveSpec;
        let Some(cdi) = self.model.dims.iter().position(|d| d.key == "color") else {
            return finish_fail(FlowFailure::failed(
                FailureCode::SpecNotFound,
                FlowStep::SelectSize,
                "no exact size and no colour dimension to resolve it under",
            ));
        };
        let color = on_screen
            .get(&cdi)
            .and_then(|&gi| s.groups[gi].selected())
            .map(|o| o.name.clone());
        let Some(color) = color else {
            return self.poll(
                FlowStep::SelectColor,
                "the colour is not shown selected",
                FailureCode::PageNotRecognized,
            );
        };
        let Some(sdi) = self.model.dims.iter().position(|d| d.key == "size") else {
            return finish_fail(FlowFailure::failed(
                FailureCode::SpecNotFound,
                FlowStep::SelectSize,
                "no size dimension",
            ));
        };
        let Some(g) = on_screen.get(&sdi).map(|&gi| &s.groups[gi]) else {
            return self.poll(
                FlowStep::SelectSize,
                "the sizes are not on screen",
                FailureCode::PageNotRecognized,
            );
        };
        let Some(cands) = self.candidates(g, &color) else {
            return finish_fail(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                step,
                "not every size is on screen for the spec resolution",
            ));
        };
        if cands.is_empty() {
            return finish_fail(FlowFailure::failed(
                FailureCode::SpecSoldOut,
                FlowStep::SelectSize,
                "no size is available under the selected colour",
            ));
        }
        let hash = snapshot_hash_of(&self.task.goods_id, &color, &cands);
        if let Some(r) = &mut self.resolution {
            // The answer was `matched`: this is the fresh read that must agree.
            let (cid, raw) = r.matched.clone();
            let still = cands
                .iter()
                .any(|c| c.candidate_id == cid && c.raw_text == raw);
            if r.hash != hash || !still {
                return finish_fail(
                    FlowFailure::retry(
                        FailureCode::SpecNotFound,
                        step,
                        "the sizes on the page changed after the spec resolution",
                    )
                    .with("resolution_id", r.resolution_id.clone()),
                );
            }
            r.verified = true;
            // Select it on this same screen.
            let Some(o) = g.option(&raw) else {
                return self.observe_now(FlowStep::SelectSize);
            };
            let Some(at) = o.tap.filter(|_| tappable(g, o)) else {
                return finish_fail(FlowFailure::retry(
                    FailureCode::PageNotRecognized,
                    FlowStep::SelectSize,
                    "the matched size cannot be tapped",
                ));
            };
            self.then = Then::Observe(FlowStep::SelectSize);
            self.step = FlowStep::SelectSize;
            return Action::Tap {
                at,
                label: raw,
                step: FlowStep::SelectSize,
            };
        }
        if self.spec_request.is_some() {
            // One resolution per attempt, never a second.
            return finish_fail(FlowFailure::retry(
                FailureCode::SpecResolutionFailed,
                step,
                "the spec resolution gave no usable match",
            ));
        }
        let target = self.task.options.get("size").cloned().unwrap_or_default();
        let req = SpecResolutionRequest {
            schema_version: 1,
            task_version: self.task.task_version,
            attempt_id: self.task.attempt_id.clone(),
            pdd_goods_id: self.task.goods_id.clone(),
            original_options: self.task.options.clone(),
            selected_color: color,
            target_size: target,
            candidates: cands,
            candidate_snapshot_hash: hash,
            observed_at: format_utc(now),
        };
        let request = serde_json::to_value(&req).unwrap_or(Value::Null);
        self.spec_request = Some(req);
        self.phase = Phase::Resolving;
        self.step = step;
        Action::Effect(Effect::ResolveSpec { request })
    }

    fn on_resolved(&mut self, answer: Value) -> Action {
        let step = FlowStep::ResolveSpec;
        self.phase = Phase::Sheet;
        let Some(req) = self.spec_request.clone() else {
            return finish_fail(FlowFailure::retry(
                FailureCode::SpecResolutionFailed,
                step,
                "a spec answer without a request",
            ));
        };
        let resp: SpecResolutionResponse = match serde_json::from_value(answer) {
            Ok(r) => r,
            Err(e) => {
                return finish_fail(FlowFailure::retry(
                    FailureCode::SpecResolutionFailed,
                    step,
                    format!("unreadable spec resolution answer: {e}"),
                ))
            }
        };
        let with = |f: FlowFailure| {
            f.with("resolution_id", resp.resolution_id.clone())
                .with("reason", resp.reason.clone().unwrap_or_default())
        };
        match resp.outcome {
            SpecOutcome::Matched => {
                let m = resp.matched.as_ref().filter(|m| {
                    resp.candidate_snapshot_hash == req.candidate_snapshot_hash
                        && req.candidates.iter().any(|c| *c == **m)
                });
                let Some(m) = m else {
                    return finish_fail(with(FlowFailure::failed(
                        FailureCode::SpecResolutionFailed,
                        step,
                        "the matched candidate is not one of the request's",
                    )));
                };
                self.resolution = Some(Resolution {
                    hash: req.candidate_snapshot_hash.clone(),
                    resolution_id: resp.resolution_id.clone(),
                    matched: (m.candidate_id.clone(), m.raw_text.clone()),
                    verified: false,
                });
                // Re-read the page before selecting anything.
                self.observe_now(FlowStep::ResolveSpec)
            }
            SpecOutcome::Uncertain => finish_fail(with(FlowFailure::manual(
                FailureCode::SpecResolutionUncertain,
                step,
                "the Admin could not pick one size safely",
            ))),
            SpecOutcome::Rejected => finish_fail(with(FlowFailure::failed(
                FailureCode::SpecResolutionRejected,
                step,
                "the Admin rejected choosing a size automatically",
            ))),
            SpecOutcome::Failed | SpecOutcome::Unknown => finish_fail(with(FlowFailure::retry(
                FailureCode::SpecResolutionFailed,
                step,
                "the spec resolution failed at the Admin",
            ))),
        }
    }

    fn set_quantity_or_confirm(&mut self, s: SkuSheet, chosen: OptionMap) -> Action {
        let want = self.task.quantity;
        let step = FlowStep::SetQuantity;
        let Some(have) = s.quantity else {
            return self.poll(
                step,
                "the quantity field is not readable",
                FailureCode::QuantityNotSettable,
            );
        };
        if have != want {
            let not_settable = |m: String| {
                finish_fail(
                    FlowFailure::failed(FailureCode::QuantityNotSettable, FlowStep::SetQuantity, m)
                        .with("quantity_shown", have)
                        .with("quantity_wanted", want),
                )
            };
            // No progress since the last round: the stepper stops here (限购, stock).
            if self.last_quantity == Some(have)
                || self.quantity_rounds >= self.limits.quantity_rounds
            {
                return not_settable(format!("the stepper stops at {have}"));
            }
            self.quantity_rounds += 1;
            self.last_quantity = Some(have);
            let stepper = s.quantity_stepper.as_ref();
            let (target, enabled, n) = if have < want {
                (
                    stepper.and_then(|q| q.increase.clone()),
                    stepper.is_some_and(|q| q.increase_enabled),
                    want - have,
                )
            } else {
                (
                    stepper.and_then(|q| q.decrease.clone()),
                    stepper.is_some_and(|q| q.decrease_enabled),
                    have - want,
                )
            };
            let Some(t) = target.filter(|_| enabled) else {
                return not_settable(format!("the stepper cannot go from {have} to {want}"));
            };
            if n > 200 {
                return not_settable(format!("{n} stepper taps is more than this flow makes"));
            }
            let mut taps: Vec<(Point, String)> = (0..n).map(|_| (t.tap, t.label.clone())).collect();
            let (at, label) = taps.remove(0);
            self.then = if taps.is_empty() {
                Then::Observe(step.clone())
            } else {
                Then::Taps(taps, step.clone())
            };
            self.step = step.clone();
            return Action::Tap { at, label, step };
        }
        // The final confirmation: everything above was read from this very dump.
        let step = FlowStep::ConfirmTotal;
        let Some(total) = s.total else {
            return self.poll(
                step,
                "the order total (提交订单 ¥…) is not readable",
                FailureCode::PriceUnreadable,
            );
        };
        if total > self.task.max_price {
            return finish_fail(
                FlowFailure::failed(
                    FailureCode::PriceLimitExceeded,
                    step,
                    format!(
                        "the order total {} fen is above the limit {} fen",
                        total.get(),
                        self.task.max_price.get()
                    ),
                )
                .with("confirmed_total_cent", total.get())
                .with("max_price_cent", self.task.max_price.get()),
            );
        }
        let Some(submit) = s.submit.clone() else {
            return self.poll(
                step,
                "the submit button is not on screen",
                FailureCode::PageNotRecognized,
            );
        };
        let conf = Confirmation {
            goods_id: self.task.goods_id.clone(),
            title: self.title.clone(),
            options: chosen,
            original_options: self.task.options.clone(),
            quantity: want,
            total,
            max_price: self.task.max_price,
            spec_resolution_id: self.resolution.as_ref().map(|r| r.resolution_id.clone()),
        };
        self.confirmation = Some(conf.clone());
        if !self.task.live {
            // Dry run: stop before the submit tap.
            return Action::Finish(FlowOutcome::Purchased(Box::new(conf.result(
                ExecutionMode::DryRun,
                None,
                None,
            ))));
        }
        self.phase = Phase::Marking;
        self.step = FlowStep::SubmitOrder;
        self.buy_at = Some((submit.tap, submit.label));
        Action::Effect(Effect::MarkIrreversible {
            step: FlowStep::SubmitOrder,
            snapshot: serde_json::to_value(&conf).unwrap_or(Value::Null),
        })
    }

    fn on_effect(&mut self, now: DateTime<Utc>, out: EffectOutcome) -> Action {
        match (&self.phase, out) {
            (Phase::Resolving, EffectOutcome::Resolved { answer }) => self.on_resolved(answer),
            (Phase::Resolving, EffectOutcome::Failed { message, retryable }) => {
                let f = if retryable {
                    FlowFailure::retry(
                        FailureCode::SpecResolutionFailed,
                        FlowStep::ResolveSpec,
                        message,
                    )
                } else {
                    FlowFailure::failed(
                        FailureCode::SpecResolutionFailed,
                        FlowStep::ResolveSpec,
                        message,
                    )
                };
                finish_fail(f)
            }
            (Phase::Marking, EffectOutcome::Marked { at }) => {
                let (Some(conf), Some((tap, label))) =
                    (self.confirmation.clone(), self.buy_at.clone())
                else {
                    return finish_fail(FlowFailure::manual(
                        FailureCode::InterruptedAfterSubmit,
                        FlowStep::SubmitOrder,
                        "marked without a confirmation",
                    ));
                };
                self.marked_at = Some(at);
                // From here on the reconcile flow owns every observation: no state of it
                // can tap the sheet again, so 提交订单 is tapped exactly once.
                self.phase = Phase::Submitted;
                self.reconcile = Some(ReconcileFlow::new(conf, at, false, self.limits.reconcile));
                let _ = now;
                Action::Tap {
                    at: tap,
                    label,
                    step: FlowStep::SubmitOrder,
                }
            }
            (Phase::Marking, EffectOutcome::Failed { message, .. }) => {
                if message.starts_with(super::purchase_job::REFUSED) {
                    finish_fail(FlowFailure::manual(
                        FailureCode::OrderAlreadySubmitted,
                        FlowStep::SubmitOrder,
                        message,
                    ))
                } else {
                    // Not marked: nothing was tapped; a later attempt may try again.
                    finish_fail(FlowFailure::retry(
                        FailureCode::Other("LOCAL_STORE_ERROR".into()),
                        FlowStep::SubmitOrder,
                        format!("the irreversible mark could not be saved: {message}"),
                    ))
                }
            }
            (_, other) => finish_fail(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                self.step.clone(),
                format!("unexpected effect answer {other:?}"),
            )),
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
            // included: the tap may still have reached the phone).
            let obs = match obs {
                Observation::Done | Observation::DeviceError { .. } if !r.started() => {
                    Observation::Start
                }
                o => o,
            };
            return r.observe(now, obs);
        }
        match obs {
            Observation::Start => {
                self.phase = Phase::Goods;
                self.then = Then::Observe(FlowStep::OpenGoods);
                Action::OpenUrl {
                    url: self.task.deep_link(),
                    step: FlowStep::OpenGoods,
                }
            }
            Observation::Done | Observation::Waited => {
                if matches!(obs, Observation::Done) {
                    self.device_errors = 0;
                }
                match std::mem::replace(&mut self.then, Then::Observe(self.step.clone())) {
                    Then::Observe(step) => self.observe_now(step),
                    Then::Taps(mut rest, step) => {
                        let (at, label) = rest.remove(0);
                        self.then = if rest.is_empty() {
                            Then::Observe(step.clone())
                        } else {
                            Then::Taps(rest, step.clone())
                        };
                        Action::Tap { at, label, step }
                    }
                }
            }
            Observation::Screen(o) => {
                self.dump_failures = 0;
                self.device_errors = 0;
                self.on_screen(now, *o)
            }
            Observation::DumpFailed {
                code,
                message,
                retryable,
            } => {
                if let Some(f) = dump_failed(
                    &mut self.dump_failures,
                    self.limits.dump_failures,
                    &self.step,
                    code,
                    message,
                    retryable,
                ) {
                    return finish_fail(f);
                }
                self.then = Then::Observe(self.step.clone());
                Action::Wait {
                    duration: self.limits.poll_pause,
                }
            }
            Observation::DeviceError { message, retryable } => {
                if let Some(f) =
                    device_error(&mut self.device_errors, &self.step, message, retryable)
                {
                    return finish_fail(f);
                }
                self.then = Then::Observe(self.step.clone());
                Action::Wait {
                    duration: self.limits.poll_pause,
                }
            }
            Observation::Effect(out) => self.on_effect(now, out),
        }
    }

    fn abort(&mut self, now: DateTime<Utc>, reason: AbortReason) -> FlowFailure {
        if let Some(r) = self.reconcile.as_mut() {
            return r.abort(now, reason);
        }
        if self.marked_at.is_some() {
            return FlowFailure::manual(
                FailureCode::InterruptedAfterSubmit,
                self.step.clone(),
                format!("stopped by the driver after the irreversible mark: {reason:?}"),
            );
        }
        FlowFailure::retry(
            FailureCode::PageNotRecognized,
            self.step.clone(),
            format!("stopped by the driver: {reason:?}"),
        )
    }
}
