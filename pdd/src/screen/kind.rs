//! [`ScreenKind`]: the page kinds a dump is classified as.

use serde::Serialize;

/// The page kinds, as named in `inspect` output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScreenKind {
    GoodsDetail,
    SkuSheet,
    ConfirmOrder,
    Payment,
    PaymentAbandonDialog,
    RepeatOrderDialog,
    PaymentOffer,
    OrderList,
    OrderDetail,
    Popup,
    LoginRequired,
    RiskVerification,
    Unknown,
}

impl ScreenKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ScreenKind::GoodsDetail => "goods_detail",
            ScreenKind::SkuSheet => "sku_sheet",
            ScreenKind::ConfirmOrder => "confirm_order",
            ScreenKind::Payment => "payment",
            ScreenKind::PaymentAbandonDialog => "payment_abandon_dialog",
            ScreenKind::RepeatOrderDialog => "repeat_order_dialog",
            ScreenKind::PaymentOffer => "payment_offer",
            ScreenKind::OrderList => "order_list",
            ScreenKind::OrderDetail => "order_detail",
            ScreenKind::Popup => "popup",
            ScreenKind::LoginRequired => "login_required",
            ScreenKind::RiskVerification => "risk_verification",
            ScreenKind::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for ScreenKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
