//! The quantity: stepper taps (queued from one dump) until the field shows the task's
//! quantity; no progress since the last round, or a disabled stepper, is
//! `failed QUANTITY_NOT_SETTABLE` (限购, stock).

use cmautobuy_contract::{FailureCode, FlowStep};

use super::{finish_fail, PurchaseFlow};
use crate::flow::action::Action;
use crate::flow::failure::FlowFailure;
use crate::flow::observe::QueuedTap;
use crate::screen::SkuSheet;

impl PurchaseFlow {
    /// `Some` while the quantity field does not show the task's quantity yet (the taps,
    /// a poll, or the failure); `None` when it does.
    pub(super) fn set_quantity(&mut self, s: &SkuSheet) -> Option<Action> {
        let want = self.task.quantity;
        let step = FlowStep::SetQuantity;
        let Some(have) = s.quantity else {
            return Some(self.poll(
                step,
                "the quantity field is not readable",
                FailureCode::QuantityNotSettable,
            ));
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
                return Some(not_settable(format!("the stepper stops at {have}")));
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
                return Some(not_settable(format!(
                    "the stepper cannot go from {have} to {want}"
                )));
            };
            if n > 200 {
                return Some(not_settable(format!(
                    "{n} stepper taps is more than this flow makes"
                )));
            }
            let taps: Vec<QueuedTap> = (0..n)
                .map(|_| QueuedTap::in_page(t.tap, t.label.clone()))
                .collect();
            return self.d.tap_all(taps, step);
        }
        None
    }
}
