//! The collect flow: read every option's unit price and availability from a goods page
//! and report contract §6 `pdd_data`.
//!
//! # Steps
//! 1. `open_goods` — open the deep link built from the task's goods id; dismiss popups;
//!    login → `manual_review LOGIN_REQUIRED`, risk page → `manual_review
//!    RISK_VERIFICATION`, "goods gone" pages → `failed GOODS_UNAVAILABLE`.
//! 2. `check_goods` — the page must be the task's goods ([`super::identity`]: the goods
//!    id the phone shows — on the page, else one `dumpsys activity top` read — else the
//!    expected title): another goods id (a redirect) is `failed GOODS_MISMATCH` naming
//!    it (confirmed by a second, fresh dump and read so a stale page is never taken for
//!    a redirect); with no proof at all the result says `goods_identity: "unverified"`;
//!    a screenshot is taken.
//! 3. `open_sku_sheet` — tap the preferred buy button ([`crate::screen::goods::PREFERRED_BUY_BUTTONS`]).
//! 4. `read_sku_sheet` — scroll the option list to its end once when it hides groups
//!    (the set of dimensions must be known before anything is selected).
//! 5. `select_color` — for every combination of the *selected* dimensions (every
//!    dimension but `size`; all of them when there is no size or only one dimension),
//!    tap what differs from the current selection (visible options first; clipped ones
//!    are scrolled into view), dump once, poll (bounded) until the sheet shows the
//!    combination selected, then read the header's unit price and the availability of
//!    every size under it.
//!
//! # The report
//! `goods_id` is the goods id the phone showed (never copied from the task; when no id
//! was observable — title proof, or unverified — the deep link's id, and
//! `goods_identity` says which proof holds: `goods_id_on_page`, `activity_top`,
//! `title` or `unverified`); `price_granularity: "color"`; one sku per combination × size in page order;
//! `price_observed_at` names exactly the options that were selected when the price was
//! read (never a size), and is empty when no price was read; a price that cannot be read
//! exactly (a range, no header) is `null`, never 0; an option that cannot be selected
//! (sold out) yields `available: false` and `null` prices.
//!
//! Dumps: 2 + one per combination without popups or clipped options (C + 2 for C
//! colours), + 1 per scroll; plus one `dumpsys activity top` read when the page prints
//! no goods id (two on a redirect).

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use cmautobuy_contract::{
    Dimension, FailureCode, FlowStep, OptionMap, PddData, PriceGranularity, Sku,
};
use serde_json::{Map, Value};

use super::action::{AbortReason, Action, Flow, FlowOutcome, Observation, Observed, TapKind};
use super::failure::FlowFailure;
use super::identity::{GoodsProof, IdentityCheck, Verdict};
use super::observe::{Dispatch, Pending, Policy, QueuedTap, Routed};
use super::sheet::{self, grid_more, tappable, Reveal, SheetModel};
use crate::money::Fen;
use crate::screen::goods;
use crate::screen::{OptionForm, Point, Screen, SkuSheet};

/// What a collect task asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectTask {
    pub goods_id: String,
    pub expected_title: Option<String>,
}

impl CollectTask {
    /// The deep link the flow opens. Built from the goods id (digits only, checked by
    /// [`CollectFlow::new`]) rather than the task's URL: the link is then known-good
    /// and carries nothing else from the network.
    pub fn deep_link(&self) -> String {
        format!(
            "pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id={}",
            self.goods_id
        )
    }
}

/// Bounds of the flow's own polling.
#[derive(Clone, Copy, Debug)]
pub struct CollectLimits {
    /// Polls of one screen that has not arrived yet (page loading, selection pending).
    pub polls: u32,
    /// Pause between polls.
    pub poll_pause: Duration,
    pub popups: u32,
    /// Consecutive failed dumps before `retry_wait UI_DUMP_FAILED`.
    pub dump_failures: u32,
    /// Scroll gestures for the whole sheet.
    pub swipes: u32,
    /// Swipe duration (ms).
    pub swipe_ms: u32,
}

impl Default for CollectLimits {
    fn default() -> Self {
        CollectLimits {
            polls: 4,
            poll_pause: Duration::from_millis(300),
            popups: 6,
            dump_failures: 4,
            swipes: 24,
            swipe_ms: 250,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    Start,
    Goods,
    Sheet,
}

/// One combination of the selected dimensions: (key, option) in page order.
type Combo = Vec<(String, String)>;

#[derive(Clone, Debug, Default)]
struct ComboRead {
    /// False when the combination could not be selected (sold out, never took).
    selected: bool,
    price: Option<Fen>,
    raw_price: Option<String>,
    /// Availability of each size (read dimension) under the combination.
    sizes: BTreeMap<String, bool>,
}

#[derive(Clone, Debug)]
struct Target {
    combo: Combo,
    taps: u32,
    polls: u32,
    reveals: u32,
    /// The last taps skipped options shown sold out: re-tap rather than poll.
    partial: bool,
}

/// The collect state machine.
pub struct CollectFlow {
    task: CollectTask,
    limits: CollectLimits,
    phase: Phase,
    /// Queued taps, the current step, failed-dump and device-error counts.
    d: Dispatch,
    polls: u32,
    popups: u32,
    /// Whether the page is the task's goods, and what proves it.
    identity: IdentityCheck,
    reopens: u32,
    swipes: u32,
    buy_at: Option<(Point, String)>,
    title: Option<String>,
    shop: Option<String>,
    list_price: Option<Fen>,
    model: SheetModel,
    sheet_seen: bool,
    bottom_seen: bool,
    right_end_seen: BTreeMap<String, bool>,
    believed: BTreeMap<String, String>,
    reads: BTreeMap<Combo, ComboRead>,
    target: Option<Target>,
}

impl CollectFlow {
    /// A flow for `task`; `Err` when the goods id is not a PDD goods id (digits).
    pub fn new(task: CollectTask, limits: CollectLimits) -> Result<CollectFlow, Box<FlowFailure>> {
        let id = &task.goods_id;
        if id.is_empty() || id.len() > 24 || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(Box::new(FlowFailure::failed(
                FailureCode::InvalidTaskPayload,
                FlowStep::OpenGoods,
                "goods_id must be 1–24 digits",
            )));
        }
        let identity = IdentityCheck::new(
            &task.goods_id,
            task.expected_title.as_deref(),
            limits.poll_pause,
        );
        Ok(CollectFlow {
            task,
            limits,
            phase: Phase::Start,
            d: Dispatch::new(
                Policy::before_mark(limits.poll_pause, limits.dump_failures),
                FlowStep::OpenGoods,
            ),
            polls: 0,
            popups: 0,
            identity,
            reopens: 0,
            swipes: 0,
            buy_at: None,
            title: None,
            shop: None,
            list_price: None,
            model: SheetModel::default(),
            sheet_seen: false,
            bottom_seen: false,
            right_end_seen: BTreeMap::new(),
            believed: BTreeMap::new(),
            reads: BTreeMap::new(),
            target: None,
        })
    }

    fn observe_now(&mut self, step: FlowStep) -> Action {
        self.d.observe_now(step)
    }

    fn poll(&mut self, step: FlowStep, what: &str) -> Action {
        self.polls += 1;
        if self.polls > self.limits.polls {
            return finish_fail(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                step,
                format!("{what} did not appear after {} polls", self.limits.polls),
            ));
        }
        self.d.pending = Pending::Observe(step);
        Action::Wait {
            duration: self.limits.poll_pause,
        }
    }

    /// Roles: (selected dimensions, the read dimension).
    fn roles(&self) -> (Vec<usize>, Option<usize>) {
        let dims = &self.model.dims;
        let size = dims.iter().position(|d| d.key == "size");
        match size {
            Some(s) if dims.len() >= 2 => ((0..dims.len()).filter(|&i| i != s).collect(), Some(s)),
            _ => ((0..dims.len()).collect(), None),
        }
    }

    fn combos(&self) -> Vec<Combo> {
        let (sel, _) = self.roles();
        let mut out: Vec<Combo> = vec![Vec::new()];
        for di in sel {
            let d = &self.model.dims[di];
            out = out
                .into_iter()
                .flat_map(|prefix| {
                    d.options.iter().map(move |o| {
                        let mut c = prefix.clone();
                        c.push((d.key.clone(), o.clone()));
                        c
                    })
                })
                .collect();
        }
        out
    }

    fn survey_done(&self) -> bool {
        self.bottom_seen && self.right_end_seen.values().all(|v| *v)
    }

    fn on_screen(&mut self, now: DateTime<Utc>, o: Observed) -> Action {
        let Observed { screen, .. } = o;
        if let Some(a) = self
            .d
            .common_page(&screen, &mut self.popups, self.limits.popups)
        {
            return a;
        }
        match screen {
            Screen::GoodsDetail(g) => self.on_goods(g),
            Screen::SkuSheet(s) if self.phase == Phase::Sheet => self.on_sheet(now, s),
            other => {
                let kind = other.kind().as_str();
                let step = self.d.step.clone();
                self.poll(step, &format!("the expected page (saw {kind})"))
            }
        }
    }

    fn on_goods(&mut self, g: crate::screen::GoodsDetail) -> Action {
        if self.phase == Phase::Sheet {
            if !self.sheet_seen && self.polls < 2 {
                // Buy tapped, the sheet is not there yet.
                return self.poll(FlowStep::OpenSkuSheet, "the option sheet");
            }
            // The sheet closed under us (a popup's back, an app hiccup) or never
            // opened: tap the buy button again.
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
                self.d.pending = Pending::Observe(FlowStep::OpenSkuSheet);
                self.d.step = FlowStep::OpenSkuSheet;
                self.target = None;
                return Action::Tap {
                    at,
                    label,
                    step: FlowStep::OpenSkuSheet,
                    kind: TapKind::ChangesScreen,
                };
            }
        }
        match self.identity.on_goods(g, &mut self.d) {
            Verdict::Proceed(g) => self.after_identity(*g),
            Verdict::Act(a) => a,
            Verdict::Fail(f) => finish_fail(f),
        }
    }

    /// The goods page once its identity is settled: the buy button, a screenshot.
    fn after_identity(&mut self, g: crate::screen::GoodsDetail) -> Action {
        let title = g.full_title.clone();
        let Some(button) = goods::buy_button(&g) else {
            if g.sold_out {
                return finish_fail(FlowFailure::failed(
                    FailureCode::GoodsUnavailable,
                    FlowStep::CheckGoods,
                    "the goods is off the shelf",
                ));
            }
            return self.poll(FlowStep::CheckGoods, "a buy button");
        };
        self.title = title;
        self.shop = g.shop.clone();
        self.list_price = g.list_price;
        self.buy_at = Some((button.target.tap, button.label.clone()));
        self.polls = 0;
        self.d.pending = Pending::Resume;
        Action::Screenshot {
            step: FlowStep::CheckGoods,
        }
    }

    fn on_sheet(&mut self, now: DateTime<Utc>, s: SkuSheet) -> Action {
        self.polls = 0;
        self.sheet_seen = true;
        // Where each known dimension is on this screen.
        let on_screen = self.model.merge_on_screen(&s);
        if self.model.dims.is_empty() {
            return finish_fail(FlowFailure::failed(
                FailureCode::SpecNotFound,
                FlowStep::ReadSkuSheet,
                "the option sheet shows no options",
            ));
        }
        // What the screen says is selected.
        for (&di, &gi) in &on_screen {
            let g = &s.groups[gi];
            let key = self.model.dims[di].key.clone();
            if let Some(sel) = g.options.iter().find(|o| o.selected) {
                self.believed.insert(key.clone(), sel.name.clone());
            } else if g.options.len() == self.model.dims[di].options.len() {
                self.believed.remove(&key);
            }
            if g.form == OptionForm::ImageGrid && g.scrollable {
                let (_, right) = grid_more(g);
                let seen = self.right_end_seen.entry(key).or_insert(false);
                *seen |= !right;
            }
        }
        let list = s.list;
        if !list.is_some_and(|l| l.more_below) {
            self.bottom_seen = true;
        }
        // 1. The dimensions must all be known before anything is read: scroll the list
        //    to its end once when it hides groups.
        if !self.bottom_seen {
            if let Some(l) = list {
                return self.swipe(l.bounds, Reveal::Down, FlowStep::ReadSkuSheet);
            }
        }
        let (sel_dims, read_dim) = self.roles();
        let sel_keys: Vec<String> = sel_dims
            .iter()
            .map(|&i| self.model.dims[i].key.clone())
            .collect();
        // 2. Read the current selection if it is a pending combination.
        let current: Option<Combo> = sel_keys
            .iter()
            .map(|k| self.believed.get(k).map(|v| (k.clone(), v.clone())))
            .collect();
        if let Some(c) = current {
            if !self.reads.get(&c).is_some_and(|r| r.selected) {
                match read_dim {
                    None => {
                        self.record(c, &s, BTreeMap::new());
                    }
                    Some(rd) => {
                        let known = self.model.dims[rd].options.clone();
                        let group = on_screen.get(&rd).map(|&gi| &s.groups[gi]);
                        let complete = group.is_some_and(|g| {
                            known
                                .iter()
                                .all(|n| g.options.iter().any(|o| &o.name == n && !o.offscreen))
                        });
                        if complete {
                            let g = group.expect("checked above");
                            let sizes = known
                                .iter()
                                .map(|n| {
                                    let avail = g
                                        .options
                                        .iter()
                                        .find(|o| &o.name == n)
                                        .is_some_and(|o| o.available);
                                    (n.clone(), avail)
                                })
                                .collect();
                            self.record(c, &s, sizes);
                        } else if let Some(l) = list {
                            // The sizes are scrolled away: bring them into view.
                            let dir = if on_screen.keys().next().is_some_and(|&f| f > rd) {
                                Reveal::Up
                            } else {
                                Reveal::Down
                            };
                            return self.swipe(l.bounds, dir, FlowStep::ReadSkuSheet);
                        }
                    }
                }
            }
        }
        // 3. The target: done, still pending (poll / retap), or given up.
        if let Some(t) = self.target.clone() {
            let done = self.reads.get(&t.combo).is_some_and(|r| r.selected);
            if !done {
                // A target option shown sold out while the others are selected: the
                // combination cannot be selected.
                let blocked = t.combo.iter().enumerate().any(|(i, (k, name))| {
                    let others_ok = t
                        .combo
                        .iter()
                        .enumerate()
                        .all(|(j, (k2, n2))| j == i || self.believed.get(k2) == Some(n2));
                    others_ok
                        && self
                            .visible_option(&s, &on_screen, k, name)
                            .is_some_and(|o| !o.available)
                });
                if blocked || t.taps >= 3 {
                    self.reads.entry(t.combo.clone()).or_default();
                    self.target = None;
                } else if t.polls < 2 && t.taps > 0 && !t.partial {
                    if let Some(tt) = self.target.as_mut() {
                        tt.polls += 1;
                    }
                    self.d.pending = Pending::Observe(FlowStep::SelectColor);
                    return Action::Wait {
                        duration: self.limits.poll_pause,
                    };
                }
            } else {
                self.target = None;
            }
        }
        // 4. Next combination: visible ones first; then discover more options; then
        //    scroll to the first pending one.
        let pending: Vec<Combo> = self
            .combos()
            .into_iter()
            .filter(|c| !self.reads.contains_key(c))
            .collect();
        if let Some(t) = self.target.clone() {
            if let Some(a) = self.try_select(&s, &on_screen, &t.combo, true) {
                return a;
            }
        }
        for c in &pending {
            if let Some(a) = self.try_select(&s, &on_screen, c, false) {
                return a;
            }
        }
        if !self.survey_done() {
            // A sideways grid still hides options on its right.
            for (&di, &gi) in &on_screen {
                let g = &s.groups[gi];
                let key = &self.model.dims[di].key;
                if g.form == OptionForm::ImageGrid
                    && g.scrollable
                    && !self.right_end_seen.get(key).copied().unwrap_or(true)
                {
                    return self.swipe(g.viewport, Reveal::Right, FlowStep::ReadSkuSheet);
                }
            }
        }
        if let Some(c) = pending.first().cloned() {
            return self.reveal_for(&s, &on_screen, list.map(|l| l.bounds), c);
        }
        if !self.survey_done() && self.right_end_seen.values().any(|v| !v) {
            // A grid that is not on screen may still hide options: scroll back up.
            if let Some(l) = list {
                return self.swipe(l.bounds, Reveal::Up, FlowStep::ReadSkuSheet);
            }
        }
        Action::Finish(FlowOutcome::Collected(Box::new(self.report(now))))
    }

    fn visible_option<'s>(
        &self,
        s: &'s SkuSheet,
        on_screen: &BTreeMap<usize, usize>,
        key: &str,
        name: &str,
    ) -> Option<&'s crate::screen::SkuOption> {
        let di = self.model.dims.iter().position(|d| d.key == key)?;
        let gi = *on_screen.get(&di)?;
        s.groups[gi].options.iter().find(|o| o.name == name)
    }

    /// Taps what `combo` needs if every needed option can be tapped now.
    fn try_select(
        &mut self,
        s: &SkuSheet,
        on_screen: &BTreeMap<usize, usize>,
        combo: &Combo,
        retry: bool,
    ) -> Option<Action> {
        let mut available: Vec<(Point, String)> = Vec::new();
        let mut sold_out = 0;
        let mut needed = 0;
        for (k, name) in combo {
            if self.believed.get(k) == Some(name) {
                continue;
            }
            needed += 1;
            let di = self.model.dims.iter().position(|d| &d.key == k)?;
            let gi = *on_screen.get(&di)?;
            let g = &s.groups[gi];
            let o = g.options.iter().find(|o| &o.name == name)?;
            if !tappable(g, o) {
                return None;
            }
            if o.available {
                available.push((o.tap?, name.clone()));
            } else {
                sold_out += 1;
            }
        }
        if needed == 0 {
            // Selected but not readable yet (sizes hidden): nothing to tap.
            return None;
        }
        if available.is_empty() && sold_out > 0 {
            // Every option it needs is sold out as things stand: nothing to select.
            self.reads.entry(combo.clone()).or_default();
            return None;
        }
        // Available options first: they can make the sold-out-looking ones selectable.
        let t = match self.target.take() {
            Some(mut t) if retry && &t.combo == combo => {
                t.taps += 1;
                t.polls = 0;
                t.partial = sold_out > 0;
                t
            }
            _ => Target {
                combo: combo.clone(),
                taps: 1,
                polls: 0,
                reveals: 0,
                partial: sold_out > 0,
            },
        };
        self.target = Some(t);
        let taps = available
            .into_iter()
            .map(|(at, label)| QueuedTap::in_page(at, label))
            .collect();
        self.d.tap_all(taps, FlowStep::SelectColor)
    }

    /// Scrolls toward the first option of `combo` that cannot be tapped now.
    fn reveal_for(
        &mut self,
        s: &SkuSheet,
        on_screen: &BTreeMap<usize, usize>,
        list: Option<crate::screen::Bounds>,
        combo: Combo,
    ) -> Action {
        let reveals = match &mut self.target {
            Some(t) if t.combo == combo => {
                t.reveals += 1;
                t.reveals
            }
            _ => {
                self.target = Some(Target {
                    combo: combo.clone(),
                    taps: 0,
                    polls: 0,
                    reveals: 1,
                    partial: false,
                });
                1
            }
        };
        let give_up = |this: &mut Self| {
            this.reads.entry(combo.clone()).or_default();
            this.target = None;
            this.observe_now(FlowStep::SelectColor)
        };
        if reveals > 4 {
            return give_up(self);
        }
        for (k, name) in &combo {
            if self.believed.get(k) == Some(name) {
                continue;
            }
            let Some(di) = self.model.dims.iter().position(|d| &d.key == k) else {
                continue;
            };
            let idx = self.model.dims[di].options.iter().position(|o| o == name);
            match on_screen.get(&di) {
                Some(&gi) => {
                    let g = &s.groups[gi];
                    if g.options.iter().any(|o| &o.name == name && tappable(g, o)) {
                        continue;
                    }
                    let visible_max = g
                        .options
                        .iter()
                        .filter(|o| tappable(g, o))
                        .filter_map(|o| {
                            self.model.dims[di]
                                .options
                                .iter()
                                .position(|n| n == &o.name)
                        })
                        .max();
                    let forward = match (idx, visible_max) {
                        (Some(i), Some(m)) => i > m,
                        _ => true,
                    };
                    let mut sideways = g.form == OptionForm::ImageGrid && g.scrollable;
                    if let Some(o) = g.options.iter().find(|o| &o.name == name) {
                        // Present but cut: scroll along the edge that cuts it.
                        if sheet::sliver_vertical(g, o) && !sheet::sliver_sideways(g, o) {
                            sideways = false;
                        }
                    }
                    return match (sideways, list) {
                        (true, _) => self.swipe(
                            g.viewport,
                            if forward { Reveal::Right } else { Reveal::Left },
                            FlowStep::SelectColor,
                        ),
                        (false, Some(l)) => self.swipe(
                            l,
                            if forward { Reveal::Down } else { Reveal::Up },
                            FlowStep::SelectColor,
                        ),
                        (false, None) => give_up(self),
                    };
                }
                None => {
                    let Some(l) = list else { return give_up(self) };
                    let first = on_screen.keys().next().copied().unwrap_or(0);
                    let dir = if di < first { Reveal::Up } else { Reveal::Down };
                    return self.swipe(l, dir, FlowStep::SelectColor);
                }
            }
        }
        give_up(self)
    }

    fn swipe(&mut self, area: crate::screen::Bounds, dir: Reveal, step: FlowStep) -> Action {
        let (limit, ms) = (self.limits.swipes, self.limits.swipe_ms);
        self.d.reveal(&mut self.swipes, limit, ms, area, dir, step)
    }

    fn record(&mut self, combo: Combo, s: &SkuSheet, sizes: BTreeMap<String, bool>) {
        let raw = s
            .unit_price_text
            .as_deref()
            .map(|t| match s.stock_text.as_deref() {
                Some(stock) => t.strip_prefix(stock).unwrap_or(t).trim().to_string(),
                None => t.trim().to_string(),
            });
        self.reads.insert(
            combo,
            ComboRead {
                selected: true,
                price: s.unit_price,
                raw_price: raw,
                sizes,
            },
        );
    }

    fn report(&self, now: DateTime<Utc>) -> PddData {
        let (_, read_dim) = self.roles();
        let mut skus = Vec::new();
        for combo in self.combos() {
            let r = self.reads.get(&combo).cloned().unwrap_or_default();
            let observed: OptionMap = if r.selected && r.price.is_some() {
                combo.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
            } else {
                OptionMap::new()
            };
            let price = if r.selected { r.price } else { None };
            let raw = if r.selected {
                r.raw_price.clone()
            } else {
                None
            };
            let list = price.and(self.list_price);
            let mut push = |extra: Option<(&String, &String, bool)>| {
                let mut options: OptionMap =
                    combo.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                let available = match extra {
                    Some((k, v, a)) => {
                        options.insert(k.clone(), v.clone());
                        a
                    }
                    None => r.selected,
                };
                skus.push(Sku {
                    options,
                    price_cent: price,
                    list_price_cent: list,
                    price_observed_at: observed.clone(),
                    available,
                    raw_price: raw.clone(),
                });
            };
            match read_dim {
                Some(rd) => {
                    let d = &self.model.dims[rd];
                    for o in &d.options {
                        let a = r.selected && r.sizes.get(o).copied().unwrap_or(false);
                        push(Some((&d.key, o, a)));
                    }
                }
                None => push(None),
            }
        }
        // Skus in page order of every dimension (the combination loop is colour-major
        // already; re-sort so the read dimension's position in the page is respected).
        let order: Vec<(String, Vec<String>)> = self
            .model
            .dims
            .iter()
            .map(|d| (d.key.clone(), d.options.clone()))
            .collect();
        skus.sort_by_key(|s| {
            order
                .iter()
                .map(|(k, opts)| {
                    s.options
                        .get(k)
                        .and_then(|v| opts.iter().position(|o| o == v))
                        .unwrap_or(usize::MAX)
                })
                .collect::<Vec<usize>>()
        });
        let mut extra = Map::new();
        // What proved the goods: the id on the page, `dumpsys activity top`, the title,
        // or nothing ("unverified").
        let proof = self.identity.proof().unwrap_or(GoodsProof::Unverified);
        extra.insert(
            "goods_identity".into(),
            Value::String(proof.as_str().into()),
        );
        PddData {
            schema_version: Some(1),
            // The goods id the phone showed (equal to the task's, or the flow failed
            // GOODS_MISMATCH); without one, the deep link's, `goods_identity` says so.
            goods_id: self.identity.reported_goods_id(),
            title: self.title.clone(),
            shop_name: self.shop.clone().filter(|s| !s.trim().is_empty()),
            captured_at: Some(cmautobuy_contract::time::format_utc(now)),
            price_granularity: PriceGranularity::Color,
            dimensions: self
                .model
                .dims
                .iter()
                .map(|d| Dimension {
                    key: d.key.clone(),
                    name: d.name.clone(),
                })
                .collect(),
            skus,
            extra,
        }
    }
}

fn finish_fail(f: FlowFailure) -> Action {
    Action::Finish(FlowOutcome::Failed(f))
}

impl Flow for CollectFlow {
    fn observe(&mut self, now: DateTime<Utc>, obs: Observation) -> Action {
        match self.d.route(obs) {
            Routed::Start => {
                self.phase = Phase::Goods;
                self.d.pending = Pending::Observe(FlowStep::OpenGoods);
                Action::OpenUrl {
                    url: self.task.deep_link(),
                    step: FlowStep::OpenGoods,
                }
            }
            Routed::Act(a) => a,
            Routed::Fail(f) => finish_fail(f),
            // The buy button's tap, queued after the goods page was checked twice.
            Routed::Resume => match self.buy_at.clone() {
                Some((at, label)) => {
                    self.phase = Phase::Sheet;
                    self.d.step = FlowStep::OpenSkuSheet;
                    self.d.pending = Pending::Observe(FlowStep::OpenSkuSheet);
                    Action::Tap {
                        at,
                        label,
                        step: FlowStep::OpenSkuSheet,
                        kind: TapKind::ChangesScreen,
                    }
                }
                None => self.observe_now(FlowStep::CheckGoods),
            },
            Routed::Screen(o) => self.on_screen(now, *o),
            Routed::GoodsId(read) => match self.identity.on_read(read, &mut self.d) {
                Verdict::Proceed(g) => self.after_identity(*g),
                Verdict::Act(a) => a,
                Verdict::Fail(f) => finish_fail(f),
            },
            Routed::Effect(_) => finish_fail(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                self.d.step.clone(),
                "collect asked for no effect",
            )),
        }
    }

    fn abort(&mut self, _now: DateTime<Utc>, reason: AbortReason) -> FlowFailure {
        // Collect does nothing irreversible: trying again later is always safe.
        FlowFailure::retry(
            FailureCode::PageNotRecognized,
            self.d.step.clone(),
            format!("stopped by the driver: {reason:?}"),
        )
    }
}
