//! What a purchase task asks for ([`PurchaseTask`]) and the bounds of the flow's own
//! polling and gestures ([`PurchaseLimits`]).

use std::time::Duration;

use cmautobuy_contract::OptionMap;

use crate::flow::reconcile::ReconcileLimits;
use crate::money::Fen;

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
    /// The phone's delivery-address fingerprint (config `expected_address`): every part
    /// must appear in the confirming screen's address block (spaces ignored), else
    /// `manual_review ADDRESS_MISMATCH`. Empty: not checked (the address read is
    /// reported all the same).
    pub expected_address: Vec<String>,
}

/// Whether `shown` (an address block as read) carries every part of `expected`,
/// whitespace ignored on both sides: `Some(part)`, the first part it lacks; `None`, all
/// there.
pub fn address_mismatch<'a>(expected: &'a [String], shown: &str) -> Option<&'a str> {
    let squash = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let shown = squash(shown);
    expected
        .iter()
        .find(|part| !shown.contains(&squash(part)))
        .map(String::as_str)
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
