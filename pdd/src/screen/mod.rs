//! Screen understanding: from a UI dump to "which PDD page is this, and what is on it".
//!
//! # Bird's-eye view
//! `uiautomator dump` output → [`Tree::parse`] → [`Tree`] (arena of nodes, PDD windows
//! only) → [`classify`] → [`Screen`], one variant per page kind with the fields the flows
//! need (options and their tap points, order totals in [`Fen`](crate::money::Fen), order
//! numbers, the element that dismisses a popup, …). [`inspect`] does both and is what
//! `cmautobuy-client inspect DUMP.xml` prints.
//!
//! # Code map
//! - [`tree`] — the parser (both dump shapes, several windows, uiautomator failure
//!   texts) and the query API ([`Query`], [`Matcher`], [`NodeRef`]); its parts are
//!   `geometry.rs`, `arena.rs`, `scanner.rs` and `query.rs`.
//! - [`error`] — [`DumpError`]: typed, coded, retryable-or-not dump failures.
//! - [`label_index`] — the per-dump index of visible labels the recognizers share, and the
//!   keyword lists (PDD wordings from the field notes) in one place.
//! - [`recognize`] — [`classify`]: the order in which page kinds are tried, and why.
//! - [`sku_sheet`] — the checkout/SKU bottom sheet: groups, options, quantity, total.
//! - [`confirm_order`] — the full-page 确认订单 some goods go through after the sheet's
//!   确定: address, spec, quantity, payment row, total, 提交订单.
//! - [`controls`] — the controls a tap must not press by accident: submit controls
//!   (提交订单 / 确认下单) and pay actions, by a whole-label rule (the device guard asks).
//! - [`cover`] — what a tap inside PDD's own window would really press: the node a
//!   touch reaches as Android dispatches it (z-order from `drawing-order`), and whether
//!   something drawn over the tap's target takes it (the device guard asks).
//! - [`pages`] — every other page kind: goods detail, payment, the payment-abandon
//!   dialog, order list and detail, popups, login and risk pages.
//! - [`aim`] — the node a tap aimed at (recorded in the manifest for replays).
//! - [`activity`] — not a dump: the goods id the phone shows, from the text of
//!   `dumpsys activity top` ([`activity::displayed_goods_id`]).
//!
//! # How the flows use it
//! Dump → `Tree::parse(&output)` (a [`DumpError`] says whether to dump again) →
//! `classify(&tree)` → match on [`Screen`]:
//! - `SkuSheet(s)`: `s.group("颜色")?.option("黑色")` (names compared after
//!   [`sku_sheet::normalize_name`]) gives `selected`, `available`, `clipped`/`offscreen`
//!   and the `tap` point; `s.total` is the footer order total in fen; `s.submit` is the
//!   button that creates the order;
//! - `Popup(p)`: tap `p.dismiss` (never a pay/confirm button), or press back if `None`;
//! - `PaymentAbandonDialog(d)`: tap `d.leave` (先去逛逛), never 继续支付;
//! - `LoginRequired` / `RiskVerification`: stop, a human is needed;
//! - `Unknown(u)`: `u.packages` empty means PDD is not in the foreground.
//!
//! # Architecture invariants
//! - **No panics, no I/O, no clock.** Every input maps to a `Tree` or a `DumpError`, and
//!   every tree to a `Screen`; [`Screen::Unknown`] is a value. (A proptest over mutated
//!   dumps guards this.)
//! - **Labels are the handles.** PDD resource ids are almost all `…:id/pdd`; recognizers
//!   match text and content-desc, and use the few stable ids (`tv_select_sku`,
//!   `tv_content`, `iv_goods_img`, `tv_title`) only as hints.
//! - **Never offer a money-moving button as a way out.** Dismiss/leave targets are chosen
//!   from allow-lists and then checked against a deny-list (支付, 付款, 提交, 购买, 下单,
//!   继续, 确认 …).
//! - **Unknown money is `None`.** Prices come only from nodes that hold a currency sign
//!   or are split price parts (see [`crate::money`]).

pub mod activity;
pub mod aim;
mod arena;
pub mod checkout;
pub mod confirm_order;
pub mod controls;
pub mod cover;
pub mod error;
mod geometry;
pub mod goods;
pub mod kind;
pub mod label_index;
pub mod names;
pub mod pages;
pub mod payment;
pub mod profile;
mod query;
pub mod recognize;
pub mod render;
mod scanner;
pub mod sku_sheet;
pub mod target;
pub mod tree;
pub mod windows;

pub use activity::TopGoods;
pub use confirm_order::ConfirmOrder;
pub use error::DumpError;
pub use goods::{BuyButton, GoodsDetail};
pub use pages::{
    AbandonDialog, DismissKind, LoginRequired, OrderDetail, OrderEntry, OrderList, Payment, Popup,
    RiskVerification, Unknown,
};
pub use payment::PaymentVerdict;
pub use profile::AccountReading;
pub use recognize::{classify, Screen, ScreenKind};
pub use render::render_text;
pub use sku_sheet::{ListView, OptionForm, QuantityStepper, SkuGroup, SkuOption, SkuSheet};
pub use target::Target;
pub use tree::{
    Bounds, DumpShape, Matcher, NodeId, NodeRef, Point, Query, Tree, Window, WindowFilter,
    PDD_PACKAGE,
};

/// Parses a dump and classifies it: what `inspect` prints.
pub fn inspect(output: &str) -> Result<Screen, DumpError> {
    let tree = Tree::parse(output)?;
    Ok(classify(&tree))
}

/// [`inspect`] rendered as the JSON document of `cmautobuy-client inspect --json`:
/// `{"screen": "<kind>", …}`, or `{"error": {"code", "message", "retryable"}}`.
pub fn inspect_json(output: &str) -> serde_json::Value {
    match inspect(output) {
        Ok(screen) => serde_json::to_value(&screen).unwrap_or_else(|e| {
            serde_json::json!({"error": {"code": "INSPECT_SERIALIZE", "message": e.to_string(), "retryable": false}})
        }),
        Err(e) => serde_json::json!({
            "error": {"code": e.code(), "message": e.to_string(), "retryable": e.is_retryable()}
        }),
    }
}
