//! [`Confirmation`]: what the final confirmation of a purchase showed right before the
//! irreversible mark. It travels with [`super::action::Effect::MarkIrreversible`], is
//! stored with the mark (crash recovery reconciles against it without the page), and
//! builds the §6 purchase section (`decisions.md` §6).

use std::collections::BTreeSet;

use cmautobuy_contract::{ExecutionMode, OptionMap, PurchaseResult};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::money::Fen;
use crate::screen::goods::GoodsProof;

/// What the final confirmation showed, right before the mark; stored with the mark so a
/// restarted client can reconcile without the page (crash recovery).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// The goods id the phone showed (the task's; without an observable id, the deep
    /// link's — `goods_identity` says which).
    pub goods_id: String,
    /// What proved the goods (reported as `goods_identity`); absent in snapshots stored
    /// before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goods_identity: Option<GoodsProof>,
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
    /// The delivery address the confirming screen showed (receiver, masked phone,
    /// address, as PDD shows them); reported as `delivery_address`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_address: Option<String>,
    /// The spec line the confirming screen showed ("颜色：雾霾蓝；尺码：L", the sheet's
    /// 已选 …), as read: what the page showed, not what the task asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_text: Option<String>,
    /// The order numbers of the unpaid orders of the goods counted before the submit
    ///: reconciliation adopts only an order absent from it. `None` in
    /// snapshots of older clients (and dry runs): nothing can be proven new.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub census: Option<BTreeSet<String>>,
    /// The cards at the top of the unpaid list as the census saw them (its first view,
    /// top to bottom). After the submit, a list that shows them again below the new
    /// order is read no further: the list is newest first, so every order placed after
    /// the census is above them. `None` in older snapshots: the whole list is read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub census_top: Option<Vec<ListCard>>,
    /// The unpaid cards the census saw but did not open: they did not fit its match (the
    /// task's expected title, its options as the Admin spells them), which the page's
    /// title and spelling — what reconciliation matches on — may not share. An order whose
    /// card reads like one of them cannot be proven new by its number (the census never
    /// read that card's number): never adopted, `ORDER_NOVELTY_UNPROVEN`. `None` in older
    /// snapshots: every card that could fit was opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub census_unopened: Option<Vec<ListCard>>,
    /// Set when an order may have been placed by a tap that should only have opened
    /// 确认订单: what showed instead. The total was never confirmed (`total` is not
    /// matched) and the outcome is `manual_review ORDER_PLACED_UNCONFIRMED`, never a
    /// success.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconfirmed: Option<String>,
    /// What came instead of 确认订单, by a stable name (a screen kind, `sheet_stayed`,
    /// `popups`, `goods_gone`, or the failure code that ended the wait): the operator
    /// text names it ([`crate::reasons::placed_unconfirmed`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unconfirmed_by: Option<String>,
}

/// An order card of a list as it reads (not its position): what the census records of
/// the list's top and what the walk after the submit compares with it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListCard {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shop: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantity: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_cent: Option<i64>,
}

impl ListCard {
    pub fn of(e: &crate::screen::pages::OrderEntry) -> Self {
        ListCard {
            shop: e.shop.clone(),
            title: e.title.clone(),
            spec: e.spec_text.clone(),
            quantity: e.quantity,
            total_cent: e.total.map(|t| t.get()),
        }
    }
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
        if let Some(p) = self.goods_identity {
            extra.insert("goods_identity".into(), Value::String(p.as_str().into()));
        }
        if let Some(a) = &self.delivery_address {
            extra.insert("delivery_address".into(), Value::String(a.clone()));
        }
        if let Some(t) = &self.spec_text {
            extra.insert("spec_text".into(), Value::String(t.clone()));
        }
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
