//! Stable error codes.
//!
//! Two families cross the wire:
//! - [`AdminErrorCode`]: what an Admin answers in the §3 envelope (`error.code`), with the
//!   HTTP status the contract suggests and whether a retry can help.
//! - [`FailureCode`] and [`FlowStep`]: what the client reports in a §7 failure
//!   (`error.code`, `error.step`), per `decisions.md` §5.
//!
//! Codes are SCREAMING_SNAKE strings; a code we do not know is kept verbatim
//! (`AdminErrorCode::Other`) so a newer Admin never breaks an older client.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
            /// A code this version does not know, kept verbatim.
            Other(String),
        }

        impl $name {
            /// Every known code, in declaration order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )+
                    $name::Other(s) => s.as_str(),
                }
            }

            pub fn parse(s: &str) -> Self {
                match s {
                    $( $text => $name::$variant, )+
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Ok($name::parse(&s))
            }
        }
    };
}

string_enum! {
    /// Error codes an Admin returns in the §3 envelope.
    pub enum AdminErrorCode {
        // §4.1 registration
        MissingClientId = "MISSING_CLIENT_ID",
        InvalidBody = "INVALID_BODY",
        InvalidClientProfile = "INVALID_CLIENT_PROFILE",
        ClientRegisterFailed = "CLIENT_REGISTER_FAILED",
        // §3 generic
        Unauthorized = "UNAUTHORIZED",
        TaskNotFound = "TASK_NOT_FOUND",
        TaskNotClaimedByClient = "TASK_NOT_CLAIMED_BY_CLIENT",
        IdempotencyConflict = "IDEMPOTENCY_CONFLICT",
        MissingIdempotencyKey = "MISSING_IDEMPOTENCY_KEY",
        InvalidIdempotencyKey = "INVALID_IDEMPOTENCY_KEY",
        RateLimited = "RATE_LIMITED",
        Internal = "INTERNAL_ERROR",
        Unavailable = "SERVICE_UNAVAILABLE",
        NotFound = "NOT_FOUND",
        MethodNotAllowed = "METHOD_NOT_ALLOWED",
        UnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE",
        // §6 / §7 / data model §4.3
        InvalidResult = "INVALID_RESULT",
        InvalidFailure = "INVALID_FAILURE",
        CollectGoodsMismatch = "COLLECT_GOODS_MISMATCH",
        TaskTypeMismatch = "TASK_TYPE_MISMATCH",
        // §7.1 spec resolution
        InvalidSpecResolutionSchema = "INVALID_SPEC_RESOLUTION_SCHEMA",
        InvalidSpecResolutionRequest = "INVALID_SPEC_RESOLUTION_REQUEST",
        SpecResolutionHashMismatch = "SPEC_RESOLUTION_HASH_MISMATCH",
        TaskNotPurchase = "TASK_NOT_PURCHASE",
        TaskVersionConflict = "TASK_VERSION_CONFLICT",
        PddGoodsMismatch = "PDD_GOODS_MISMATCH",
        SpecResolutionUnavailable = "SPEC_RESOLUTION_UNAVAILABLE",
        // operator API (decisions.md §10)
        InvalidTaskPayload = "INVALID_TASK_PAYLOAD",
        TaskAlreadyExists = "TASK_ALREADY_EXISTS",
    }
}

impl AdminErrorCode {
    /// The HTTP status the contract suggests for this code (§3, §4.1, §7.1).
    pub fn http_status(&self) -> u16 {
        use AdminErrorCode::*;
        match self {
            MissingClientId
            | InvalidBody
            | InvalidClientProfile
            | MissingIdempotencyKey
            | InvalidIdempotencyKey
            | InvalidSpecResolutionSchema => 400,
            Unauthorized => 401,
            TaskNotClaimedByClient => 403,
            TaskNotFound | NotFound => 404,
            MethodNotAllowed => 405,
            IdempotencyConflict | TaskVersionConflict | TaskAlreadyExists => 409,
            UnsupportedMediaType => 415,
            InvalidResult
            | InvalidFailure
            | CollectGoodsMismatch
            | TaskTypeMismatch
            | InvalidSpecResolutionRequest
            | SpecResolutionHashMismatch
            | TaskNotPurchase
            | PddGoodsMismatch
            | InvalidTaskPayload => 422,
            RateLimited => 429,
            Internal | ClientRegisterFailed => 500,
            Unavailable | SpecResolutionUnavailable => 503,
            Other(_) => 500,
        }
    }

    /// Whether resending the same request may succeed (the envelope's `retryable`):
    /// [`status_is_retryable`] of its status.
    pub fn is_retryable(&self) -> bool {
        status_is_retryable(self.http_status())
    }
}

// ---------------------------------------------------------------------------------------
// The retry rule per HTTP status: the one table both sides use
// ---------------------------------------------------------------------------------------

/// What a client does after an HTTP error status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnStatus {
    /// Resend the same request (same bytes, same key) after a backoff, honouring
    /// `Retry-After`.
    Retry,
    /// Do not resend: park the request for the operator (outbox) or stop and alert
    /// (claim). Sending the same bytes again would get the same answer.
    Park,
}

/// One row of [`STATUS_RULES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatusRule {
    pub status: u16,
    pub on: OnStatus,
    pub why: &'static str,
}

/// The retry rule for every status the contract lists (§3; §8: "对 429、500 和 503
/// 使用有上限的指数退避，并遵守 Retry-After"; "对认证、幂等冲突和业务校验错误不得无限重试"),
/// plus the transport-level "try again" answers 408 and 425 and the proxy answers 502
/// and 504. Any status not listed here is [`OnStatus::Park`].
///
/// Why retrying 408 and 425 is safe: both say the server did **not** process the request
/// (408: it gave up waiting for the request; 425, RFC 8470: it will not process a
/// request that might be replayed until the connection is established), so they are
/// answers about the transport, not about the content. Every request the client sends is
/// safe to repeat: results, failures and spec resolutions carry an `Idempotency-Key`
/// (a repeat returns the stored answer, §8), registration is an idempotent `PUT`
/// upsert (§4.1), and a repeated claim never hands out several tasks (§8).
///
/// Used by the client (`GatewayError::is_retryable`, hence the outbox relay, the claim
/// loop, registration and spec resolution) and by the mock Admin (the §3 envelope's
/// `retryable`), so both sides of the wire say the same thing.
#[rustfmt::skip]
pub const STATUS_RULES: &[StatusRule] = &[
    StatusRule { status: 400, on: OnStatus::Park, why: "request structure or field invalid (§3): the same bytes are refused again" },
    StatusRule { status: 401, on: OnStatus::Park, why: "unauthenticated (§3): the operator fixes the token; never retried blindly (§8)" },
    StatusRule { status: 403, on: OnStatus::Park, why: "task never dispatched to this client (§3, §6.1)" },
    StatusRule { status: 404, on: OnStatus::Park, why: "task does not exist (§3)" },
    StatusRule { status: 408, on: OnStatus::Retry, why: "Request Timeout: the server gave up waiting for the request and did not process it; resending the same (keyed or idempotent) request is safe" },
    StatusRule { status: 409, on: OnStatus::Park, why: "idempotency conflict (§3, §8): never retried" },
    StatusRule { status: 422, on: OnStatus::Park, why: "business rule not met (§3): never retried (§8)" },
    StatusRule { status: 425, on: OnStatus::Retry, why: "Too Early (RFC 8470): not processed for fear of a replay; resending the same (keyed or idempotent) request is safe" },
    StatusRule { status: 429, on: OnStatus::Retry, why: "rate limited (§3): bounded exponential backoff, Retry-After honoured (§8)" },
    StatusRule { status: 500, on: OnStatus::Retry, why: "Admin failure (§3: 可按策略重试)" },
    StatusRule { status: 502, on: OnStatus::Retry, why: "Bad Gateway: a proxy in front of the Admin failed, like 500/503" },
    StatusRule { status: 503, on: OnStatus::Retry, why: "Admin temporarily unavailable (§3, §7.1 SPEC_RESOLUTION_UNAVAILABLE): bounded retries, Retry-After honoured" },
    StatusRule { status: 504, on: OnStatus::Retry, why: "Gateway Timeout: a proxy got no answer in time, like 503" },
];

/// The rule for `status`: its row of [`STATUS_RULES`], else [`OnStatus::Park`] (any
/// other 4xx, any other 5xx, 3xx).
pub fn on_status(status: u16) -> OnStatus {
    STATUS_RULES
        .iter()
        .find(|r| r.status == status)
        .map_or(OnStatus::Park, |r| r.on)
}

/// Whether an HTTP error `status` is worth resending: [`on_status`] is
/// [`OnStatus::Retry`].
pub fn status_is_retryable(status: u16) -> bool {
    on_status(status) == OnStatus::Retry
}

string_enum! {
    /// Codes the client reports in a §7 failure's `error.code` (`decisions.md` §5).
    pub enum FailureCode {
        DeviceOffline = "DEVICE_OFFLINE",
        UiDumpFailed = "UI_DUMP_FAILED",
        PageNotRecognized = "PAGE_NOT_RECOGNIZED",
        GoodsMismatch = "GOODS_MISMATCH",
        GoodsUnavailable = "GOODS_UNAVAILABLE",
        SpecNotFound = "SPEC_NOT_FOUND",
        SpecSoldOut = "SPEC_SOLD_OUT",
        SpecResolutionUncertain = "SPEC_RESOLUTION_UNCERTAIN",
        SpecResolutionRejected = "SPEC_RESOLUTION_REJECTED",
        SpecResolutionFailed = "SPEC_RESOLUTION_FAILED",
        QuantityNotSettable = "QUANTITY_NOT_SETTABLE",
        PriceLimitExceeded = "PRICE_LIMIT_EXCEEDED",
        PriceUnreadable = "PRICE_UNREADABLE",
        AddressMissing = "ADDRESS_MISSING",
        // The confirming screen's delivery address does not carry every part of the
        // phone's configured address fingerprint (`expected_address`), or cannot be read
        // while one is configured: manual_review, nothing submitted.
        AddressMismatch = "ADDRESS_MISMATCH",
        LoginRequired = "LOGIN_REQUIRED",
        RiskVerification = "RISK_VERIFICATION",
        OrderNotFound = "ORDER_NOT_FOUND",
        AmbiguousOrderMatch = "AMBIGUOUS_ORDER_MATCH",
        OrderTimeOutOfWindow = "ORDER_TIME_OUT_OF_WINDOW",
        OrderNotUnpaid = "ORDER_NOT_UNPAID",
        InterruptedAfterSubmit = "INTERRUPTED_AFTER_SUBMIT",
        // A purchase run cut short by a crash before its irreversible mark:
        // nothing was submitted, the Admin may dispatch the task again.
        InterruptedBeforeSubmit = "INTERRUPTED_BEFORE_SUBMIT",
        // The store refused a second irreversible mark for the same task: an earlier
        // attempt may already have ordered (never submit twice).
        OrderAlreadySubmitted = "ORDER_ALREADY_SUBMITTED",
        InvalidTaskPayload = "INVALID_TASK_PAYLOAD",
        UnsupportedTask = "UNSUPPORTED_TASK",
        LiveNotDeclared = "LIVE_NOT_DECLARED",
        // The confirming screen pays or commits without a further human step (先用后付,
        // 免密支付, auto-pay) or names no interactive method: the operator must change the
        // account's setting (manual_review, nothing tapped).
        PaymentMethodNotAllowed = "PAYMENT_METHOD_NOT_ALLOWED",
        // A live submit without proof that the page shows the task's goods
        // (manual_review, nothing tapped).
        GoodsIdentityUnverified = "GOODS_IDENTITY_UNVERIFIED",
        // The phone's own state. A PIN / pattern / password lock
        // screen: the client never tries to unlock it; a human must.
        DeviceLocked = "DEVICE_LOCKED",
        // The battery is below `battery_min_percent` and not charging.
        BatteryLow = "BATTERY_LOW",
        // The battery is hotter than `battery_max_temp_c`.
        BatteryHot = "BATTERY_HOT",
        // A window of another package (notification shade, heads-up notification,
        // keyboard, system dialog, app chooser) kept covering the point to tap after the
        // bounded dismissals: nothing was tapped into it (retry_wait).
        ScreenObstructed = "SCREEN_OBSTRUCTED",
        // A live purchase whose attempt read a PDD version not proven on this phone (it
        // changed since the claim was declared live): nothing touched,
        // retry_wait — the client declares dry_run until a dry run proves the version.
        PddVersionUnproven = "PDD_VERSION_UNPROVEN",
        // The phone refuses injected input (MIUI / HyperOS without "USB调试（安全设置）"):
        // nothing was tapped; the worker pauses until a probe key event goes through
        // (retry_wait).
        InputInjectionDenied = "INPUT_INJECTION_DENIED",
        // Money path by positive proof. The confirming screen shows options
        // other than the task's, or none that can be read (failed, nothing tapped).
        SpecMismatch = "SPEC_MISMATCH",
        // The order button would place the order but the screen shows no order total to
        // hold against `max_price_cent` (a 确定 on a sheet with checkout rows): failed,
        // nothing tapped.
        OrderTotalNotShown = "ORDER_TOTAL_NOT_SHOWN",
        // A tap that should only have opened 确认订单 (the spec sheet's 确定 / 立即购买)
        // led to a payment page, another app or an unknown page: an order may exist
        // whose total was never confirmed (manual_review, reconciled first).
        OrderPlacedUnconfirmed = "ORDER_PLACED_UNCONFIRMED",
        // After the submit tap PDD asked 相同商品订单待支付 / 继续下单: 继续下单 was never
        // tapped; an earlier unpaid order of the goods exists (manual_review).
        RepeatOrderPrompt = "REPEAT_ORDER_PROMPT",
        // After the submit tap PDD offered 免密支付 / 先用后付; declined, never accepted
        // (manual_review: the account is being pushed towards paying by itself).
        PaymentOfferShown = "PAYMENT_OFFER_SHOWN",
        // After the submit tap PDD handed the payment to another app (WeChat, Alipay);
        // nothing was tapped there (manual_review).
        PaymentAppOpened = "PAYMENT_APP_OPENED",
        // The unpaid orders of the goods could not be counted before a live submit
        // (retry_wait: nothing was tapped, no order can be told apart from an old one).
        OrderCensusFailed = "ORDER_CENSUS_FAILED",
        // A live purchase on a phone without its delivery-address fingerprint
        // (`expected_address`): nothing tapped (manual_review: set it).
        AddressFingerprintMissing = "ADDRESS_FINGERPRINT_MISSING",
        // The order found cannot be proven new: the run kept no census of the unpaid
        // orders before its submit (a mark from an older client); manual_review.
        OrderNoveltyUnproven = "ORDER_NOVELTY_UNPROVEN",
        // A tap target is covered by something PDD drew over it (a promo bubble) that
        // could not be put away: nothing was tapped (retry_wait).
        TargetCovered = "TARGET_COVERED",
        // After the mark no new order was found under 待付款 and the 全部 list could not
        // be read to its end: an order in another state (paid, 先用后付) cannot be ruled
        // out (manual_review).
        OrderListIncomplete = "ORDER_LIST_INCOMPLETE",
    }
}

string_enum! {
    /// Flow steps reported in a §7 failure's `error.step` (`decisions.md` §5).
    pub enum FlowStep {
        OpenGoods = "open_goods",
        DismissPopup = "dismiss_popup",
        CheckGoods = "check_goods",
        OpenSkuSheet = "open_sku_sheet",
        ReadSkuSheet = "read_sku_sheet",
        SelectColor = "select_color",
        SelectSize = "select_size",
        ResolveSpec = "resolve_spec",
        SetQuantity = "set_quantity",
        CheckAddress = "check_address",
        ConfirmTotal = "confirm_total",
        SubmitOrder = "submit_order",
        LeavePayment = "leave_payment",
        ReconcileOrder = "reconcile_order",
        Report = "report",
        Recover = "recover",
        // Waking and unlocking the phone before a task, dismissing a foreign window.
        PrepareDevice = "prepare_device",
        DismissOverlay = "dismiss_overlay",
        // Counting the unpaid orders of the goods before a live submit.
        OrderCensus = "order_census",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_unknown_ones_survive() {
        for c in AdminErrorCode::ALL {
            assert_eq!(&AdminErrorCode::parse(c.as_str()), c);
            let json = serde_json::to_string(c).unwrap();
            assert_eq!(&serde_json::from_str::<AdminErrorCode>(&json).unwrap(), c);
        }
        let unknown: AdminErrorCode = serde_json::from_str("\"SOMETHING_NEW\"").unwrap();
        assert_eq!(unknown, AdminErrorCode::Other("SOMETHING_NEW".into()));
        assert_eq!(
            serde_json::to_string(&unknown).unwrap(),
            "\"SOMETHING_NEW\""
        );
    }

    #[test]
    fn statuses_follow_the_contract_table() {
        assert_eq!(AdminErrorCode::IdempotencyConflict.http_status(), 409);
        assert_eq!(AdminErrorCode::TaskNotClaimedByClient.http_status(), 403);
        assert_eq!(
            AdminErrorCode::SpecResolutionHashMismatch.http_status(),
            422
        );
        assert_eq!(
            AdminErrorCode::InvalidSpecResolutionSchema.http_status(),
            400
        );
        assert_eq!(AdminErrorCode::SpecResolutionUnavailable.http_status(), 503);
        assert!(AdminErrorCode::SpecResolutionUnavailable.is_retryable());
        assert!(!AdminErrorCode::IdempotencyConflict.is_retryable());
    }

    #[test]
    fn client_codes_are_screaming_snake() {
        for c in FailureCode::ALL {
            assert!(c
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b == b'_'));
        }
        for s in FlowStep::ALL {
            assert!(s
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'));
        }
    }
}
