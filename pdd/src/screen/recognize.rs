//! [`classify`]: which page a tree shows, and in what order the kinds are tried.
//!
//! Precedence (first match wins), and why:
//! 1. `risk_verification` (strong wordings) — a human must take over; nothing else on
//!    the screen matters.
//! 2. `login_required` — same, and login sheets cover other pages.
//! 3. `payment_abandon_dialog` — a dialog with its own rules (leave by 先去逛逛, never
//!    继续支付); checked before generic popups because it also has a close icon;
//!    `repeat_order_dialog` (相同商品订单待支付: never 继续下单, never 去支付) and
//!    `payment_offer` (开通免密支付 / 开通先用后付: never 立即开通) likewise — their
//!    暂不开通 / close would otherwise make them ordinary popups.
//! 4. `popup` — anything dismissable drawn over a page; the page under it is classified
//!    too (cheaply, same tree) and reported as `underlying`.
//! 5. `confirm_order`, 6. `sku_sheet`, 7. `payment`, 8. `order_detail`, 9. `order_list`,
//!    10. `goods_detail` — the pages; 确认订单 first (its title, and no 已选: it may carry a
//!    quantity stepper and lists payment methods), then the sheet because it shows
//!    "微信支付" (payment wording) and sits over the goods page's buy buttons.
//! 11. `risk_verification` (weak wordings such as 实名认证, which cross-border checkouts
//!     also print) — only when no page matched.
//! 12. `unknown` — a value with diagnostics, never an error (another app in front —
//!     WeChat's pay sheet after a submit among them — is an unknown page with no PDD
//!     window: `Unknown::payment_app` names a payment app).

use serde::Serialize;

use super::confirm_order::{self, ConfirmOrder};
use super::goods::{self, GoodsDetail};
pub use super::kind::ScreenKind;
use super::label_index::Page;
use super::pages::{self, *};
use super::sku_sheet::{self, SkuSheet};
use super::tree::Tree;

/// A classified screen with what was extracted from it. Serialises as
/// `{"screen": "<kind>", …fields}`.
// One `Screen` exists per dump and is matched on by value; boxing the big variant would
// only make the flows' patterns noisier.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "screen", rename_all = "snake_case")]
pub enum Screen {
    GoodsDetail(GoodsDetail),
    SkuSheet(SkuSheet),
    ConfirmOrder(ConfirmOrder),
    Payment(Payment),
    PaymentAbandonDialog(AbandonDialog),
    RepeatOrderDialog(RepeatOrderDialog),
    PaymentOffer(PaymentOffer),
    OrderList(OrderList),
    OrderDetail(OrderDetail),
    Popup(Popup),
    LoginRequired(LoginRequired),
    RiskVerification(RiskVerification),
    Unknown(Unknown),
}

impl Screen {
    pub fn kind(&self) -> ScreenKind {
        match self {
            Screen::GoodsDetail(_) => ScreenKind::GoodsDetail,
            Screen::SkuSheet(_) => ScreenKind::SkuSheet,
            Screen::ConfirmOrder(_) => ScreenKind::ConfirmOrder,
            Screen::Payment(_) => ScreenKind::Payment,
            Screen::PaymentAbandonDialog(_) => ScreenKind::PaymentAbandonDialog,
            Screen::RepeatOrderDialog(_) => ScreenKind::RepeatOrderDialog,
            Screen::PaymentOffer(_) => ScreenKind::PaymentOffer,
            Screen::OrderList(_) => ScreenKind::OrderList,
            Screen::OrderDetail(_) => ScreenKind::OrderDetail,
            Screen::Popup(_) => ScreenKind::Popup,
            Screen::LoginRequired(_) => ScreenKind::LoginRequired,
            Screen::RiskVerification(_) => ScreenKind::RiskVerification,
            Screen::Unknown(_) => ScreenKind::Unknown,
        }
    }
}

/// Classifies a parsed dump. Never fails: an unrecognised page is [`Screen::Unknown`].
pub fn classify(tree: &Tree) -> Screen {
    let page = Page::new(tree);
    if let Some(r) = pages::detect_risk(&page, false) {
        return Screen::RiskVerification(r);
    }
    if let Some(l) = pages::detect_login(&page) {
        return Screen::LoginRequired(l);
    }
    if pages::detect_abandon(&page) {
        return Screen::PaymentAbandonDialog(pages::extract_abandon(&page));
    }
    if pages::detect_repeat_order(&page) {
        return Screen::RepeatOrderDialog(pages::extract_repeat_order(&page));
    }
    if pages::detect_payment_offer(&page) {
        return Screen::PaymentOffer(pages::extract_payment_offer(&page));
    }
    if pages::detect_popup(&page) {
        return Screen::Popup(pages::extract_popup(&page, page_kind(&page)));
    }
    if let Some(kind) = page_kind(&page) {
        return match kind {
            ScreenKind::SkuSheet => Screen::SkuSheet(sku_sheet::extract(&page)),
            ScreenKind::ConfirmOrder => Screen::ConfirmOrder(confirm_order::extract(&page)),
            ScreenKind::Payment => Screen::Payment(pages::extract_payment(&page)),
            ScreenKind::OrderDetail => Screen::OrderDetail(pages::extract_order_detail(&page)),
            ScreenKind::OrderList => Screen::OrderList(pages::extract_order_list(&page)),
            _ => Screen::GoodsDetail(goods::extract_goods(&page)),
        };
    }
    if let Some(r) = pages::detect_risk(&page, true) {
        return Screen::RiskVerification(r);
    }
    Screen::Unknown(pages::extract_unknown(&page))
}

/// The ordinary page kind of a tree (no dialogs), by detection only.
fn page_kind(page: &Page<'_>) -> Option<ScreenKind> {
    if confirm_order::looks_like(page) {
        Some(ScreenKind::ConfirmOrder)
    } else if sku_sheet::looks_like(page) {
        Some(ScreenKind::SkuSheet)
    } else if pages::detect_payment(page) {
        Some(ScreenKind::Payment)
    } else if pages::detect_order_detail(page) {
        Some(ScreenKind::OrderDetail)
    } else if pages::detect_order_list(page) {
        Some(ScreenKind::OrderList)
    } else if goods::detect_goods(page) {
        Some(ScreenKind::GoodsDetail)
    } else {
        None
    }
}
