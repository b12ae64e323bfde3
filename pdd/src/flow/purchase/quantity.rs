//! The quantity, read and never assumed: stepper taps (queued from one dump) until the
//! field shows the task's quantity — on the sheet, and again on a 确认订单 that carries a
//! stepper; no progress since the last round, or a disabled stepper, is
//! `failed QUANTITY_NOT_SETTABLE` (限购, stock); a quantity that cannot be read is too,
//! once the polls are spent.

use cmautobuy_contract::{FailureCode, FlowStep};

use super::{finish_fail, PurchaseFlow};
use crate::flow::action::Action;
use crate::flow::failure::FlowFailure;
use crate::flow::observe::QueuedTap;
use crate::screen::QuantityStepper;

impl PurchaseFlow {
    /// `Some` while the quantity shown (`have`) is not the task's quantity yet (the
    /// taps, a poll, or the failure); `None` when it is. `confirm_page`: read on 确认订单
    /// (a quantity unreadable there is refused, not retried).
    pub(super) fn set_quantity(
        &mut self,
        have: Option<u32>,
        stepper: Option<&QuantityStepper>,
        confirm_page: bool,
    ) -> Option<Action> {
        let want = self.task.quantity;
        let step = if confirm_page {
            FlowStep::ConfirmTotal
        } else {
            FlowStep::SetQuantity
        };
        let Some(have) = have else {
            if confirm_page {
                return Some(self.poll_then(step.clone(), || {
                    FlowFailure::failed(
                        FailureCode::QuantityNotSettable,
                        step,
                        "确认订单 shows no quantity that can be read: nothing was tapped",
                    )
                    .with("quantity_wanted", want)
                }));
            }
            return Some(self.poll(
                step,
                "the quantity field is not readable",
                FailureCode::QuantityNotSettable,
            ));
        };
        if have == want {
            return None;
        }
        let not_settable = |m: String| {
            finish_fail(
                FlowFailure::failed(FailureCode::QuantityNotSettable, step.clone(), m)
                    .with("quantity_shown", have)
                    .with("quantity_wanted", want),
            )
        };
        // No progress since the last round: the stepper stops here (限购, stock).
        if self.last_quantity == Some(have) || self.quantity_rounds >= self.limits.quantity_rounds {
            return Some(not_settable(format!("the stepper stops at {have}")));
        }
        self.quantity_rounds += 1;
        self.last_quantity = Some(have);
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
            let m = if stepper.is_none() {
                format!("the page shows quantity {have}, not {want}, and offers no stepper")
            } else {
                format!("the stepper cannot go from {have} to {want}")
            };
            return Some(not_settable(m));
        };
        if n > 200 {
            return Some(not_settable(format!(
                "{n} stepper taps is more than this flow makes"
            )));
        }
        let taps: Vec<QueuedTap> = (0..n)
            .map(|_| QueuedTap::in_page(t.tap, t.label.clone()))
            .collect();
        self.d.tap_all(taps, step)
    }
}
