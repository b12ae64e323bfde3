//! The §7.1 spec resolution: a size with no exact match gets **one** request (the
//! candidates are the sizes shown available under the selected colour, in page order,
//! `c1…cN`); on `matched` the page is read again, the snapshot recomputed and compared,
//! and the match selected only if it is still exactly there.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use cmautobuy_contract::hash::snapshot_hash_of;
use cmautobuy_contract::time::format_utc;
use cmautobuy_contract::{
    FailureCode, FlowStep, OptionMap, SpecCandidate, SpecOutcome, SpecResolutionRequest,
    SpecResolutionResponse,
};

use super::{finish_fail, Phase, PurchaseFlow, Resolution};
use crate::flow::action::{Action, Effect, TapKind};
use crate::flow::failure::FlowFailure;
use crate::flow::observe::Pending;
use crate::flow::sheet::tappable;
use crate::screen::{SkuGroup, SkuSheet};

impl PurchaseFlow {
    /// The sizes shown available under the current selection, in page order, as §7.1
    /// candidates; `None` when the size group is not wholly on screen.
    pub(super) fn candidates(&self, g: &SkuGroup, color: &str) -> Option<Vec<SpecCandidate>> {
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

    /// Size without an exact match: send the one spec resolution, or (after a matched
    /// answer) verify on this fresh dump that the snapshot and the match are unchanged.
    pub(super) fn resolve_or_verify(
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
            self.d.pending = Pending::Observe(FlowStep::SelectSize);
            self.d.step = FlowStep::SelectSize;
            return Action::Tap {
                at,
                label: raw,
                step: FlowStep::SelectSize,
                kind: TapKind::InPage,
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
        self.spec_request = Some(req.clone());
        self.phase = Phase::Resolving;
        self.d.step = step;
        Action::Effect(Effect::ResolveSpec(Box::new(req)))
    }

    pub(super) fn on_resolved(&mut self, resp: SpecResolutionResponse) -> Action {
        let step = FlowStep::ResolveSpec;
        self.phase = Phase::Sheet;
        let Some(req) = self.spec_request.clone() else {
            return finish_fail(FlowFailure::retry(
                FailureCode::SpecResolutionFailed,
                step,
                "a spec answer without a request",
            ));
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
}
