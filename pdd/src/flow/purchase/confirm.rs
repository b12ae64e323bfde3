//! The final confirmation and the one submit: the 已选 text must name every chosen
//! option; the selection, quantity, address, payment method and the footer total
//! (提交订单 ¥TOTAL) are read from **one** dump; the payment method must be interactive
//! (`screen::payment`), the total > 0 and at most `max_price_cent`, and settled (the same
//! state on two consecutive quiet dumps).
//! When the sheet's button reads 确定 / 立即购买 instead of 提交订单 (goods that go through
//! the full-page 确认订单), it is tapped once the options and quantity are confirmed on
//! the sheet (it orders nothing), and the address, the payment method, what the page
//! shows of the goods, options and quantity, and the settled total are judged on
//! 确认订单 by the same rules ([`PurchaseFlow::confirm_settled`]); its 提交订单 is the one
//! submit. The flow never goes back from 确认订单.
//! A dry run finishes there. A live run needs a goods-identity proof (else `manual_review
//! GOODS_IDENTITY_UNVERIFIED`, normally refused at the goods page already) and asks for
//! [`Effect::MarkIrreversible`] with the
//! [`Confirmation`]; only on [`EffectOutcome::Marked`] does it tap 提交订单 — once: the
//! flow moves to its reconcile phase before the tap leaves, and no state of that phase
//! can tap the sheet again. [`EffectOutcome::Refused`] ends it without a tap.

use chrono::{DateTime, Utc};
use cmautobuy_contract::{ExecutionMode, FailureCode, FlowStep, OptionMap};

use super::{finish_fail, task, Phase, PurchaseFlow, Settle};
use crate::flow::action::{Action, Effect, EffectOutcome, Flow, FlowOutcome, TapKind};
use crate::flow::confirmation::Confirmation;
use crate::flow::failure::FlowFailure;
use crate::flow::observe::Pending;
use crate::flow::reconcile::ReconcileFlow;
use crate::money::Fen;
use crate::screen::checkout::{OrderCover, OrderKind};
use crate::screen::goods::{self, GoodsProof};
use crate::screen::names::names_all;
use crate::screen::payment::Refusal;
use crate::screen::{ConfirmOrder, PaymentVerdict, SkuSheet, Target};

/// `manual_review PAYMENT_METHOD_NOT_ALLOWED`: nothing is tapped; the operator reads
/// what this refusal means and what to change ([`Refusal::operator_text`]: 先用后付 off,
/// 免密 off, or — for a checkout that pays in the same tap — that no setting helps).
fn payment_refused(step: FlowStep, refusal: &Refusal, row: Option<&str>) -> Action {
    finish_fail(
        FlowFailure::manual(
            FailureCode::PaymentMethodNotAllowed,
            step,
            format!("{}; nothing was tapped", refusal.reason()),
        )
        .with("payment_method_text", row.unwrap_or_default().to_string())
        .with("refusal", refusal.as_str())
        .explain(&refusal.operator_text()),
    )
}

impl PurchaseFlow {
    /// The delivery address of the confirming screen, before anything
    /// is marked: none (手动添加地址) → `manual_review ADDRESS_MISSING`; with a fingerprint
    /// configured, a block that lacks a part of it, or cannot be read →
    /// `manual_review ADDRESS_MISMATCH`. The address read (masked as PDD shows it) is
    /// kept for the result and every failure's diagnostics.
    fn check_address(
        &mut self,
        present: Option<bool>,
        text: Option<&str>,
        wording: &str,
    ) -> Option<Action> {
        if present == Some(false) {
            return Some(finish_fail(FlowFailure::manual(
                FailureCode::AddressMissing,
                FlowStep::CheckAddress,
                format!("the account has no delivery address ({wording})"),
            )));
        }
        self.address_read = text.map(str::to_string);
        let expected = &self.task.expected_address;
        if expected.is_empty() {
            return None;
        }
        let missing = match text {
            None => Some("the address block is not readable".to_string()),
            Some(t) => task::address_mismatch(expected, t)
                .map(|part| format!("the address shown lacks {part:?}")),
        };
        missing.map(|why| {
            finish_fail(
                FlowFailure::manual(
                    FailureCode::AddressMismatch,
                    FlowStep::CheckAddress,
                    format!(
                        "{why}: this phone's orders must go to the configured address (expected_address); nothing submitted"
                    ),
                )
                .with("address_text", text.unwrap_or_default().to_string())
                .with("expected_address", expected.join(" | ")),
            )
        })
    }

    /// The quantity, then the final confirmation on the same dump — or, on a spec sheet
    /// whose button reads 确定 / 立即购买, the tap that opens 确认订单.
    pub(super) fn set_quantity_or_confirm(&mut self, s: SkuSheet, chosen: OptionMap) -> Action {
        if let Some(a) = self.set_quantity(s.quantity, s.quantity_stepper.as_ref(), false) {
            return a;
        }
        // The final confirmation: everything above was read from this very dump.
        let step = FlowStep::ConfirmTotal;
        // Fail closed on the payment method before anything else is judged: an account
        // on 先用后付 or 免密支付, or a button that pays, must never see a submit tap (nor
        // pass a dry run).
        if let PaymentVerdict::NotAllowed { refusal, .. } = &s.payment {
            return payment_refused(step, refusal, s.payment_method_text.as_deref());
        }
        if let Some(c) = &s.order_cover {
            return self.uncover_order_button(c);
        }
        let kind = s.order_button.as_ref().map(|b| b.kind);
        if kind == Some(OrderKind::Proceed) {
            if let Some(proceed) = s.proceed.clone() {
                return self.proceed(proceed, chosen);
            }
        }
        if let Some(a) =
            self.check_address(s.address_present, s.address_text.as_deref(), "手动添加地址")
        {
            return a;
        }
        // A 确定 that places the order (the sheet has checkout rows) but no total to hold
        // against the limit: refused, never tapped.
        if kind == Some(OrderKind::CommittingProceed) && s.total.is_none() {
            let label = s
                .submit
                .as_ref()
                .map(|t| t.label.clone())
                .unwrap_or_default();
            return self.poll_then(step.clone(), || {
                FlowFailure::failed(
                    FailureCode::OrderTotalNotShown,
                    step,
                    format!(
                        "the sheet's `{label}` would place the order (the sheet shows the checkout's rows), but no order total is shown to check against the limit: nothing was tapped"
                    ),
                )
                .with("button", label.clone())
            });
        }
        let state = Settle {
            options: chosen.clone(),
            selected_text: s.selected_text.clone(),
            quantity: s.quantity.unwrap_or(self.task.quantity),
            total: Fen(0),
        };
        self.confirm_settled(step, state, s.total, s.submit.clone())
    }

    /// PDD drew something over the order button (a 多多支付 promo bubble): a tap there
    /// would press it. Its own close is tapped (nothing covers it; at most twice), then
    /// the page is read again; without one, or when it keeps coming back, the purchase
    /// stops before anything is marked: `retry_wait TARGET_COVERED`.
    fn uncover_order_button(&mut self, c: &OrderCover) -> Action {
        self.uncovers += 1;
        match c.close.clone().filter(|_| self.uncovers <= 2) {
            Some(t) => {
                self.d.pending = Pending::Observe(FlowStep::ConfirmTotal);
                Action::Tap {
                    at: t.tap,
                    label: t.label,
                    step: FlowStep::DismissOverlay,
                    kind: TapKind::ChangesScreen,
                }
            }
            None => finish_fail(
                FlowFailure::retry(
                    FailureCode::TargetCovered,
                    FlowStep::ConfirmTotal,
                    format!(
                        "{}: it could not be put away, nothing was tapped",
                        c.cover.describe()
                    ),
                )
                .with("cover", c.cover.label.clone()),
            ),
        }
    }

    /// The spec sheet's options and quantity are confirmed and its button reads 确定 /
    /// 立即购买 (no checkout row on it, no amount): it should order nothing and open
    /// 确认订单. First the note that it is about to be tapped is committed
    /// ([`Effect::NoteProceed`]): a crash after the tap must never be recovered as
    /// "nothing was submitted".
    fn proceed(&mut self, proceed: Target, chosen: OptionMap) -> Action {
        self.proceeds += 1;
        if self.proceeds > 2 {
            return finish_fail(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                FlowStep::ConfirmTotal,
                "确认订单 did not stay open after the sheet's 确定",
            ));
        }
        self.chosen = Some(chosen);
        self.pending_proceed = Some(proceed);
        self.phase = Phase::NotingProceed;
        self.d.step = FlowStep::ConfirmTotal;
        let conf = self.unconfirmed_confirmation(
            "interrupted",
            "the spec sheet's 确定 was about to be tapped; 确认订单 was never confirmed",
        );
        Action::Effect(Effect::NoteProceed {
            confirmation: Box::new(conf),
        })
    }

    /// The note is committed: the spec sheet's 确定, once; then 确认订单 is awaited.
    fn tap_proceed(&mut self) -> Action {
        let Some(proceed) = self.pending_proceed.take() else {
            return finish_fail(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                FlowStep::ConfirmTotal,
                "no 确定 to tap after its note",
            ));
        };
        self.phase = Phase::Confirming;
        self.confirm_seen = false;
        self.proceed_answered = false;
        self.polls = 0;
        // 确认订单's quantity is read afresh (and set on its own stepper, if it has one).
        self.quantity_rounds = 0;
        self.last_quantity = None;
        self.d.step = FlowStep::ConfirmTotal;
        self.d.pending = Pending::Observe(FlowStep::ConfirmTotal);
        // It opens 确认订单: nothing may follow it without a fresh dump.
        Action::Tap {
            at: proceed.tap,
            label: proceed.label,
            step: FlowStep::ConfirmTotal,
            kind: TapKind::ChangesScreen,
        }
    }

    /// The full-page 确认订单 (the contract's 最终订单确认页): the address, the payment
    /// method, the goods, and — read, never assumed — the spec line and the quantity
    /// (set on the page's stepper when it has one), then the settled total — as on the
    /// sheet.
    pub(super) fn on_confirm_page(&mut self, c: ConfirmOrder) -> Action {
        let step = FlowStep::ConfirmTotal;
        if let Some(a) = self.check_address(
            c.address_present,
            c.address_text.as_deref(),
            "手动添加收货地址",
        ) {
            return a;
        }
        if let PaymentVerdict::NotAllowed { refusal, .. } = &c.payment {
            return payment_refused(step, refusal, c.payment_method_text.as_deref());
        }
        if let Some(cover) = &c.order_cover {
            return self.uncover_order_button(cover);
        }
        let Some(chosen) = self.chosen.clone() else {
            return finish_fail(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                step,
                "确认订单 without options confirmed on the sheet",
            ));
        };
        // The page must show the goods the sheet confirmed (when both titles are known).
        let title_ok = match (&self.title, &c.goods_title) {
            (Some(want), Some(seen)) => goods::titles_match(want, seen),
            _ => true,
        };
        if !title_ok {
            return self.poll(
                step,
                "确认订单 does not show the goods confirmed on the sheet",
                FailureCode::PageNotRecognized,
            );
        }
        // The quantity, read: the stepper's field or "x2" / "共2件"; set on the stepper.
        if let Some(a) = self.set_quantity(c.quantity, c.quantity_stepper.as_ref(), true) {
            return a;
        }
        // The spec line, read: it must name every option confirmed on the sheet.
        let spec_ok = c
            .spec_text
            .as_deref()
            .is_some_and(|t| names_all(std::iter::once(t), &chosen));
        if !spec_ok {
            let shown = c.spec_text.clone();
            let want: Vec<String> = chosen.values().cloned().collect();
            return self.poll_then(step.clone(), || {
                let m = match &shown {
                    Some(t) => format!("确认订单 shows the options `{t}`, not the task's"),
                    None => "确认订单 shows no spec line that could be read".to_string(),
                };
                FlowFailure::failed(
                    FailureCode::SpecMismatch,
                    step,
                    format!("{m}: nothing was tapped"),
                )
                .with("spec_text", shown.clone().unwrap_or_default())
                .with("options_wanted", want.join(" / "))
            });
        }
        let state = Settle {
            options: chosen,
            selected_text: c.spec_text.clone(),
            quantity: c.quantity.unwrap_or(self.task.quantity),
            total: Fen(0),
        };
        self.confirm_settled(step, state, c.total, c.submit.clone())
    }

    /// The total and the submit control of the confirming screen (the sheet's footer or
    /// 确认订单): the total must be > 0, settled (the same selection, quantity and total
    /// on two consecutive dumps separated by a bounded wait, the first of them not right
    /// after a gesture) and at most `max_price_cent`. Then a dry run finishes; a live run
    /// asks for the mark, right after the dump that re-confirmed exactly that state.
    fn confirm_settled(
        &mut self,
        step: FlowStep,
        mut state: Settle,
        total: Option<Fen>,
        submit: Option<Target>,
    ) -> Action {
        let Some(total) = total else {
            return self.poll(
                step,
                "the order total (提交订单 ¥… / 合计 ¥…) is not readable",
                FailureCode::PriceUnreadable,
            );
        };
        if total.get() <= 0 {
            return finish_fail(
                FlowFailure::retry(
                    FailureCode::PriceUnreadable,
                    step,
                    "the order total reads ¥0: not a price this client confirms",
                )
                .with("confirmed_total_cent", total.get()),
            );
        }
        let Some(submit) = submit else {
            return self.poll(
                step,
                "the submit button is not on screen",
                FailureCode::PageNotRecognized,
            );
        };
        // A settled total: the app re-prices after taps (coupons, stock, the network).
        state.total = total;
        let settled = self.quiet_dumps >= 3 && self.prev_settle.as_ref() == Some(&state);
        if !settled {
            self.settles += 1;
            if self.settles > self.limits.polls + 2 {
                return finish_fail(
                    FlowFailure::retry(
                        FailureCode::PriceUnreadable,
                        step,
                        "the order total did not settle (it changed between dumps)",
                    )
                    .with("last_total_cent", total.get()),
                );
            }
            // The first dump after a gesture only waits; from the second on, each one is
            // the candidate the next must repeat.
            self.settling = (self.quiet_dumps >= 2).then_some(state);
            self.d.pending = Pending::Observe(step.clone());
            self.d.step = step;
            return Action::Wait {
                duration: self.limits.poll_pause,
            };
        }
        // Judged on the settled total: a total still moving is never refused or accepted.
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
        let proof = self.identity.proof().unwrap_or(GoodsProof::Unverified);
        let spec_text = state.selected_text.clone();
        let conf = Confirmation {
            // The goods id the phone showed (never copied from the task when one was
            // observable); `goods_identity` names the proof.
            goods_id: self.identity.reported_goods_id(),
            goods_identity: Some(proof),
            title: self.title.clone(),
            options: state.options,
            original_options: self.task.options.clone(),
            quantity: state.quantity,
            total,
            max_price: self.task.max_price,
            spec_resolution_id: self.resolution.as_ref().map(|r| r.resolution_id.clone()),
            delivery_address: self.address_read.clone(),
            spec_text,
            census: self.census_taken.clone(),
            census_top: self.census_top.clone(),
            census_unopened: self.census_unopened.clone(),
            unconfirmed: None,
            unconfirmed_by: None,
        };
        self.confirmation = Some(conf.clone());
        if !self.task.live {
            // Dry run: stop before the mark and the submit tap.
            return Action::Finish(FlowOutcome::Purchased(Box::new(conf.result(
                ExecutionMode::DryRun,
                None,
                None,
            ))));
        }
        if !proof.by_goods_id() {
            // Refused at the goods page already; never marked without a goods-id proof.
            return finish_fail(
                FlowFailure::manual(
                    FailureCode::GoodsIdentityUnverified,
                    FlowStep::SubmitOrder,
                    "no goods id proves that the page is the task's goods: a live order is not submitted",
                )
                .with("goods_identity", proof.as_str()),
            );
        }
        if self.task.expected_address.is_empty() || self.census_taken.is_none() {
            // Refused at the start already: never marked without the fingerprint and the
            // census.
            return finish_fail(FlowFailure::manual(
                FailureCode::AddressFingerprintMissing,
                FlowStep::SubmitOrder,
                "a live submit needs the address fingerprint and the census of unpaid orders: nothing was tapped",
            ));
        }
        self.phase = Phase::Marking;
        self.d.step = FlowStep::SubmitOrder;
        self.buy_at = Some((submit.tap, submit.label));
        Action::Effect(Effect::MarkIrreversible {
            confirmation: Box::new(conf),
        })
    }

    pub(super) fn on_effect(&mut self, now: DateTime<Utc>, out: EffectOutcome) -> Action {
        match (&self.phase, out) {
            (Phase::Resolving, EffectOutcome::Resolved(answer)) => self.on_resolved(*answer),
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
                self.reconcile = Some(
                    ReconcileFlow::new(conf, at, false, self.limits.reconcile)
                        .with_context(std::mem::take(&mut self.reconcile_ctx)),
                );
                Action::Tap {
                    at: tap,
                    label,
                    step: FlowStep::SubmitOrder,
                    kind: TapKind::Submit,
                }
            }
            (Phase::NotingProceed, EffectOutcome::Noted) => self.tap_proceed(),
            (Phase::NotingProceed, EffectOutcome::Refused { reason }) => {
                finish_fail(FlowFailure::manual(
                    FailureCode::OrderAlreadySubmitted,
                    FlowStep::ConfirmTotal,
                    format!("the store refused the note before the spec sheet's 确定: {reason}; nothing was tapped"),
                ))
            }
            (Phase::NotingProceed, EffectOutcome::Failed { message, .. }) => {
                finish_fail(FlowFailure::retry(
                    FailureCode::Other("LOCAL_STORE_ERROR".into()),
                    FlowStep::ConfirmTotal,
                    format!("the note before the spec sheet's 确定 could not be saved: {message}; nothing was tapped"),
                ))
            }
            // The late mark after the spec sheet's 确定: reconcile what may exist.
            (Phase::LateMarking, EffectOutcome::Marked { at }) => {
                let Some(conf) = self.confirmation.clone() else {
                    return finish_fail(FlowFailure::manual(
                        FailureCode::OrderPlacedUnconfirmed,
                        FlowStep::ConfirmTotal,
                        "marked without a confirmation",
                    ));
                };
                self.marked_at = Some(at);
                self.phase = Phase::Submitted;
                let mut r = ReconcileFlow::new(conf, at, false, self.limits.reconcile)
                    .with_context(std::mem::take(&mut self.reconcile_ctx))
                    .with_after(std::mem::take(&mut self.late_after));
                let a = r.observe(now, crate::flow::action::Observation::Start);
                self.reconcile = Some(r);
                a
            }
            (Phase::LateMarking, out) => {
                let why = match out {
                    EffectOutcome::Refused { reason } => {
                        format!("the store refused the mark: {reason}")
                    }
                    EffectOutcome::Failed { message, .. } => {
                        format!("the mark could not be saved: {message}")
                    }
                    other => format!("unexpected effect answer {other:?}"),
                };
                finish_fail(
                    FlowFailure::manual(
                        FailureCode::OrderPlacedUnconfirmed,
                        FlowStep::ConfirmTotal,
                        format!(
                            "{}: an order may exist and could not be reconciled ({why})",
                            self.unconfirmed.clone().unwrap_or_default()
                        ),
                    )
                    .explain(&crate::reasons::placed_unconfirmed(
                        self.confirmation
                            .as_ref()
                            .and_then(|c| c.unconfirmed_by.as_deref()),
                    )),
                )
            }
            // Another run of this task is marked, or this run already has an outcome:
            // an order may exist, nothing is tapped.
            (Phase::Marking, EffectOutcome::Refused { reason }) => {
                finish_fail(FlowFailure::manual(
                    FailureCode::OrderAlreadySubmitted,
                    FlowStep::SubmitOrder,
                    format!("the store refused the irreversible mark: {reason}"),
                ))
            }
            (Phase::Marking, EffectOutcome::Failed { message, .. }) => {
                // Not marked: nothing was tapped; a later attempt may try again.
                finish_fail(FlowFailure::retry(
                    FailureCode::Other("LOCAL_STORE_ERROR".into()),
                    FlowStep::SubmitOrder,
                    format!("the irreversible mark could not be saved: {message}"),
                ))
            }
            (_, other) => finish_fail(FlowFailure::retry(
                FailureCode::PageNotRecognized,
                self.d.step.clone(),
                format!("unexpected effect answer {other:?}"),
            )),
        }
    }
}
