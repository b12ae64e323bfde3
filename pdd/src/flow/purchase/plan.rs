//! The goods page and the option plan: check the goods, open the SKU sheet, and walk the
//! task's options dimension by dimension in page order — queue the taps for what differs,
//! scroll to reveal what is clipped, and hand sizes without an exact match to the spec
//! resolution ([`super::spec`]).

use chrono::{DateTime, Utc};
use cmautobuy_contract::{FailureCode, FlowStep, OptionMap};
use serde_json::Value;

use super::{finish_fail, Phase, PurchaseFlow};
use crate::flow::action::{Action, TapKind};
use crate::flow::failure::FlowFailure;
use crate::flow::identity::Verdict;
use crate::flow::observe::{Pending, QueuedTap};
use crate::flow::sheet::{self, tappable, Reveal};
use crate::screen::goods::{self, GoodsProof};
use crate::screen::names::selection_names;
use crate::screen::sku_sheet::normalize_name;
use crate::screen::{Bounds, GoodsDetail, OptionForm, SkuSheet};

impl PurchaseFlow {
    pub(super) fn on_goods(&mut self, g: GoodsDetail) -> Action {
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
                self.d.pending = Pending::Observe(FlowStep::OpenSkuSheet);
                self.d.step = FlowStep::OpenSkuSheet;
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

    /// The goods page once its identity is settled: a live task needs a proof; then the
    /// buy button.
    pub(super) fn after_identity(&mut self, g: GoodsDetail) -> Action {
        let proof = self.identity.proof().unwrap_or(GoodsProof::Unverified);
        if self.task.live && !proof.by_goods_id() {
            // No goods id observable: the page may be another goods with the same title
            // and option names (a redirect, a look-alike, the previous task's page). A
            // title match is proof for collects and dry runs only.
            let m = if proof.proven() {
                "only the title matches: no goods id on the page or in dumpsys activity top proves the goods, and a title is no proof for a live order"
            } else {
                "nothing proves that the page shown is the task's goods (no goods id on the page or in dumpsys activity top, no expected title): a live order is not submitted"
            };
            return finish_fail(
                FlowFailure::manual(
                    FailureCode::GoodsIdentityUnverified,
                    FlowStep::CheckGoods,
                    m,
                )
                .with("expected_goods_id", self.task.goods_id.clone())
                .with("goods_identity", proof.as_str()),
            );
        }
        let title = g.full_title.clone();
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
        self.d.step = FlowStep::OpenSkuSheet;
        self.d.pending = Pending::Observe(FlowStep::OpenSkuSheet);
        Action::Tap {
            at: button.target.tap,
            label: button.label.clone(),
            step: FlowStep::OpenSkuSheet,
            kind: TapKind::ChangesScreen,
        }
    }

    pub(super) fn swipe(&mut self, area: Bounds, dir: Reveal, step: FlowStep) -> Action {
        let (limit, ms) = (self.limits.swipes, self.limits.swipe_ms);
        self.d.reveal(&mut self.swipes, limit, ms, area, dir, step)
    }

    pub(super) fn step_for(key: &str) -> FlowStep {
        if key == "size" {
            FlowStep::SelectSize
        } else {
            FlowStep::SelectColor
        }
    }

    pub(super) fn on_sheet(&mut self, now: DateTime<Utc>, s: SkuSheet) -> Action {
        self.polls = 0;
        self.sheet_seen = true;
        if s.address_present == Some(false) {
            return finish_fail(FlowFailure::manual(
                FailureCode::AddressMissing,
                FlowStep::CheckAddress,
                "the account has no delivery address (手动添加地址)",
            ));
        }
        let on_screen = self.model.merge_on_screen(&s);
        if self.model.dims.is_empty() {
            return finish_fail(FlowFailure::failed(
                FailureCode::SpecNotFound,
                FlowStep::ReadSkuSheet,
                "the option sheet shows no options",
            ));
        }
        let list = s.list;
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
        let mut taps: Vec<QueuedTap> = Vec::new();
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
            taps.push(QueuedTap::in_page(at, name.clone()));
        }
        let step = first_step.unwrap_or(FlowStep::SelectColor);
        if let Some(tap) = self.d.tap_all(taps, step) {
            return tap;
        }
        // Everything selected as wanted: the 已选 text must say so too.
        let chosen: OptionMap = desired
            .iter()
            .filter_map(|(_, k, n)| n.clone().map(|n| (k.clone(), n)))
            .collect();
        let sel_ok = s.selected_text.as_deref().is_some_and(|t| {
            selection_names(
                t,
                &chosen,
                self.model
                    .dims
                    .iter()
                    .map(|d| (d.key.as_str(), d.options.as_slice())),
            )
        });
        if !sel_ok {
            // The selection must be read on the page, not assumed from the chips.
            let shown = s.selected_text.clone();
            let want: Vec<String> = chosen.values().cloned().collect();
            return self.poll_then(FlowStep::SelectSize, || {
                FlowFailure::failed(
                    FailureCode::SpecMismatch,
                    FlowStep::SelectSize,
                    format!(
                        "the 已选 text `{}` does not name the selected options: nothing was tapped",
                        shown.clone().unwrap_or_default()
                    ),
                )
                .with("selected_text", shown.clone().unwrap_or_default())
                .with("options_wanted", want.join(" / "))
            });
        }
        self.set_quantity_or_confirm(s, chosen)
    }
}
