//! Goods identity, shared by collect and purchase: is the goods page on screen the task's
//! goods — and what proves it?
//!
//! After the goods page has loaded, the goods id the phone is **showing** is read:
//! 1. the goods id printed on the page, when the dump has one (`goods_id_on_page`);
//! 2. else `dumpsys activity top` ([`Action::ReadGoodsId`], one read per goods page; the
//!    driver parses it with `crate::screen::activity`): exactly one id shown
//!    (`activity_top`);
//! 3. else — no id, or conflicting ids, which prove nothing either way — the task's
//!    `expected_title` against the page's title (`title`);
//! 4. else nothing proves it: `unverified`.
//!
//! An observed id other than the task's is a redirect or a wrong page: it must be seen
//! again on a fresh dump and a fresh read, a bounded pause later, before the flow ends
//! `failed GOODS_MISMATCH` naming the observed id (a transient state — the previous
//! goods' page still on screen — is never taken for a redirect). A title that does not
//! match is confirmed the same way. A page that is merely fresh is never proof: a
//! redirect is fresh too.
//!
//! The proof is reported as `goods_identity` ([`GoodsProof::as_str`]); the observed id is
//! the goods id the result carries. What a caller does with `unverified` is its own
//! rule: a collect reports it, a live purchase refuses to submit.

use std::time::Duration;

use cmautobuy_contract::{FailureCode, FlowStep};
use serde_json::Value;

use super::action::{Action, GoodsIdRead};
use super::failure::FlowFailure;
use super::observe::{Dispatch, Pending};
pub use crate::screen::goods::GoodsProof;
use crate::screen::goods::{self, Identity};
use crate::screen::{GoodsDetail, TopGoods};

/// What the check made of a goods page or a read.
#[derive(Debug)]
pub enum Verdict {
    /// The identity is settled ([`IdentityCheck::proof`], [`IdentityCheck::observed`]):
    /// carry on with this goods page.
    Proceed(Box<GoodsDetail>),
    /// Do this first (read the goods id; pause before looking again).
    Act(Action),
    /// Finish with this failure (`failed GOODS_MISMATCH`; too many reads).
    Fail(FlowFailure),
}

/// Reads of one flow's goods pages at most (two looks at a redirect, device errors in
/// between).
const MAX_READS: u32 = 4;

/// The identity check of one flow.
#[derive(Clone, Debug)]
pub struct IdentityCheck {
    goods_id: String,
    expected_title: Option<String>,
    pause: Duration,
    mismatches: u32,
    reads: u32,
    /// The goods page waiting for the answer of its read.
    waiting: Option<GoodsDetail>,
    proof: Option<GoodsProof>,
    observed: Option<String>,
}

impl IdentityCheck {
    pub fn new(goods_id: &str, expected_title: Option<&str>, pause: Duration) -> IdentityCheck {
        IdentityCheck {
            goods_id: goods_id.to_string(),
            expected_title: expected_title.map(str::to_string),
            pause,
            mismatches: 0,
            reads: 0,
            waiting: None,
            proof: None,
            observed: None,
        }
    }

    /// The proof, once settled.
    pub fn proof(&self) -> Option<GoodsProof> {
        self.proof
    }

    /// The goods id the phone showed (on the page or in `dumpsys activity top`); `None`
    /// when the identity rests on the title or is unverified.
    pub fn observed(&self) -> Option<&str> {
        self.observed.as_deref()
    }

    /// The goods id a result carries: the observed one; without one (title, unverified)
    /// the id of the deep link that was opened, with `goods_identity` saying so.
    pub fn reported_goods_id(&self) -> String {
        self.observed
            .clone()
            .unwrap_or_else(|| self.goods_id.clone())
    }

    /// A goods page has loaded. Once the identity is settled, every later dump of the
    /// page proceeds as it is (callers need not ask [`IdentityCheck::proof`] first).
    pub fn on_goods(&mut self, g: GoodsDetail, d: &mut Dispatch) -> Verdict {
        if self.proof().is_some() {
            // Settled already: a later dump of the same page (a poll for the buy button).
            return Verdict::Proceed(Box::new(g));
        }
        if let Some(seen) = g.goods_id.clone() {
            return self.judge_id(g, seen, GoodsProof::GoodsIdOnPage, d);
        }
        self.reads += 1;
        if self.reads > MAX_READS {
            return Verdict::Fail(FlowFailure::retry(
                FailureCode::DeviceOffline,
                FlowStep::CheckGoods,
                format!(
                    "the goods id could not be read after {MAX_READS} tries (dumpsys activity top)"
                ),
            ));
        }
        self.waiting = Some(g);
        d.step = FlowStep::CheckGoods;
        Verdict::Act(Action::ReadGoodsId {
            step: FlowStep::CheckGoods,
        })
    }

    /// The answer to the read asked for by [`IdentityCheck::on_goods`].
    pub fn on_read(&mut self, read: GoodsIdRead, d: &mut Dispatch) -> Verdict {
        let Some(g) = self.waiting.take() else {
            // No goods page waits for it: look again.
            return Verdict::Act(d.observe_now(d.step.clone()));
        };
        match read.shown {
            TopGoods::Shown(seen) => self.judge_id(g, seen, GoodsProof::ActivityTop, d),
            shown => {
                let unknown = match &shown {
                    TopGoods::Conflicting(ids) => Some(ids.clone()),
                    _ => None,
                };
                self.judge_title(g, unknown, d)
            }
        }
    }

    fn judge_id(
        &mut self,
        g: GoodsDetail,
        seen: String,
        how: GoodsProof,
        d: &mut Dispatch,
    ) -> Verdict {
        if seen == self.goods_id {
            self.proof = Some(how);
            self.observed = Some(seen);
            return Verdict::Proceed(Box::new(g));
        }
        let source = match how {
            GoodsProof::ActivityTop => "dumpsys activity top",
            _ => "the goods page",
        };
        self.mismatch(
            d,
            format!(
                "the link opened another goods (redirect or wrong link): {source} shows goods_id {seen}, the task is for {}",
                self.goods_id
            ),
            format!("goods_id {seen}"),
            Some((seen, how)),
        )
    }

    fn judge_title(
        &mut self,
        g: GoodsDetail,
        conflicting: Option<Vec<String>>,
        d: &mut Dispatch,
    ) -> Verdict {
        let title = g.full_title.clone();
        match goods::identity(
            &self.goods_id,
            self.expected_title.as_deref(),
            &g,
            title.as_deref(),
        ) {
            Identity::Confirmed => {
                self.proof = Some(GoodsProof::Title);
                Verdict::Proceed(Box::new(g))
            }
            Identity::Unverified => {
                self.proof = Some(GoodsProof::Unverified);
                Verdict::Proceed(Box::new(g))
            }
            Identity::Mismatch { seen } => {
                let note = match &conflicting {
                    Some(ids) => format!(" (dumpsys activity top names {})", ids.join(", ")),
                    None => String::new(),
                };
                self.mismatch(
                    d,
                    format!(
                        "the link opened another goods (redirect or wrong link): the page's title does not match the expected title{note}"
                    ),
                    seen,
                    None,
                )
            }
        }
    }

    /// A mismatch: the first one looks again after a pause (a fresh dump, then a fresh
    /// read); the second ends the flow.
    fn mismatch(
        &mut self,
        d: &mut Dispatch,
        message: String,
        seen: String,
        id: Option<(String, GoodsProof)>,
    ) -> Verdict {
        self.mismatches += 1;
        if self.mismatches < 2 {
            d.pending = Pending::Observe(FlowStep::CheckGoods);
            d.step = FlowStep::CheckGoods;
            return Verdict::Act(Action::Wait {
                duration: self.pause,
            });
        }
        let mut f = FlowFailure::failed(FailureCode::GoodsMismatch, FlowStep::CheckGoods, message)
            .with("expected_goods_id", self.goods_id.clone())
            .with(
                "expected_title",
                self.expected_title
                    .clone()
                    .map(Value::String)
                    .unwrap_or(Value::Null),
            )
            .with("seen", seen);
        if let Some((observed, how)) = id {
            f = f
                .with("observed_goods_id", observed)
                .with("observed_by", how.as_str());
        }
        Verdict::Fail(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::observe::Policy;

    fn page(id: Option<&str>, title: &str) -> GoodsDetail {
        GoodsDetail {
            title: Some(title.into()),
            price: None,
            price_text: None,
            buy_buttons: Vec::new(),
            goods_id: id.map(str::to_string),
            sold_out: false,
            full_title: Some(title.into()),
            shop: None,
            list_price: None,
        }
    }

    fn dispatch() -> Dispatch {
        Dispatch::new(
            Policy::before_mark(Duration::from_millis(300), 4),
            FlowStep::OpenGoods,
        )
    }

    fn read(shown: TopGoods) -> GoodsIdRead {
        GoodsIdRead {
            shown,
            artifact_id: None,
        }
    }

    const T: &str = "加厚连帽卫衣女秋冬款宽松百搭";

    #[test]
    fn an_id_on_the_page_needs_no_read() {
        let mut c = IdentityCheck::new("123456", None, Duration::from_millis(300));
        let mut d = dispatch();
        assert!(matches!(
            c.on_goods(page(Some("123456"), T), &mut d),
            Verdict::Proceed(_)
        ));
        assert_eq!(c.proof(), Some(GoodsProof::GoodsIdOnPage));
        assert_eq!(c.observed(), Some("123456"));
    }

    #[test]
    fn activity_top_proves_it_and_a_title_is_the_fallback() {
        let mut d = dispatch();
        let mut c = IdentityCheck::new("123456", Some(T), Duration::from_millis(300));
        assert!(matches!(
            c.on_goods(page(None, T), &mut d),
            Verdict::Act(Action::ReadGoodsId { .. })
        ));
        assert!(matches!(
            c.on_read(read(TopGoods::Shown("123456".into())), &mut d),
            Verdict::Proceed(_)
        ));
        assert_eq!(c.proof(), Some(GoodsProof::ActivityTop));
        assert_eq!(c.reported_goods_id(), "123456");

        for shown in [
            TopGoods::NotShown,
            TopGoods::Conflicting(vec!["123456".into(), "654321".into()]),
        ] {
            let mut c = IdentityCheck::new("123456", Some(T), Duration::from_millis(300));
            c.on_goods(page(None, T), &mut d);
            assert!(matches!(
                c.on_read(read(shown.clone()), &mut d),
                Verdict::Proceed(_)
            ));
            assert_eq!(c.proof(), Some(GoodsProof::Title), "{shown:?}");
            assert_eq!(c.observed(), None);
            let mut c = IdentityCheck::new("123456", None, Duration::from_millis(300));
            c.on_goods(page(None, T), &mut d);
            assert!(matches!(
                c.on_read(read(shown), &mut d),
                Verdict::Proceed(_)
            ));
            assert_eq!(c.proof(), Some(GoodsProof::Unverified));
            assert!(!GoodsProof::Unverified.proven());
        }
    }

    #[test]
    fn another_id_must_be_seen_twice_and_is_named() {
        let mut d = dispatch();
        let mut c = IdentityCheck::new("123456", Some(T), Duration::from_millis(300));
        c.on_goods(page(None, T), &mut d);
        // The first look only pauses (then a fresh dump): the title would match, the id
        // wins.
        assert!(matches!(
            c.on_read(read(TopGoods::Shown("654321".into())), &mut d),
            Verdict::Act(Action::Wait { .. })
        ));
        assert_eq!(d.pending, Pending::Observe(FlowStep::CheckGoods));
        c.on_goods(page(None, T), &mut d);
        let Verdict::Fail(f) = c.on_read(read(TopGoods::Shown("654321".into())), &mut d) else {
            panic!("a second look at another id ends it")
        };
        assert_eq!(f.code, FailureCode::GoodsMismatch);
        assert_eq!(f.diagnostics["observed_goods_id"], "654321");
        assert_eq!(f.diagnostics["observed_by"], "activity_top");
        assert!(f.message.contains("654321"), "{}", f.message);
        assert!(c.proof().is_none());
    }

    #[test]
    fn a_transient_other_id_then_the_right_one_proceeds() {
        let mut d = dispatch();
        let mut c = IdentityCheck::new("123456", None, Duration::from_millis(300));
        c.on_goods(page(None, T), &mut d);
        assert!(matches!(
            c.on_read(read(TopGoods::Shown("654321".into())), &mut d),
            Verdict::Act(Action::Wait { .. })
        ));
        c.on_goods(page(None, T), &mut d);
        assert!(matches!(
            c.on_read(read(TopGoods::Shown("123456".into())), &mut d),
            Verdict::Proceed(_)
        ));
        assert_eq!(c.proof(), Some(GoodsProof::ActivityTop));
    }

    #[test]
    fn reads_are_bounded() {
        let mut d = dispatch();
        let mut c = IdentityCheck::new("123456", None, Duration::from_millis(300));
        for _ in 0..MAX_READS {
            assert!(matches!(
                c.on_goods(page(None, T), &mut d),
                Verdict::Act(Action::ReadGoodsId { .. })
            ));
        }
        assert!(matches!(
            c.on_goods(page(None, T), &mut d),
            Verdict::Fail(_)
        ));
    }
}
