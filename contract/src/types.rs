//! Wire types of every request and response of the v1 client contract.
//!
//! Conventions:
//! - Unknown JSON fields are ignored on input; types the client may have to carry forward
//!   keep them in an `extra` map (flattened) so nothing a newer Admin sends is lost.
//! - Enumerations a peer may extend carry an `Unknown` variant (`#[serde(other)]`) instead
//!   of failing the whole document; validation turns them into a stable error code.
//! - Option maps (`options`) preserve their order ([`OptionMap`] is an `IndexMap`):
//!   page order matters to humans, never to equality (`IndexMap` compares as a map).
//! - Money is [`Fen`]; times are RFC 3339 strings, validated by [`crate::validate`].

use crate::money::Fen;
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Dynamic options such as `{"color": "黑色", "size": "L"}` in page order.
pub type OptionMap = IndexMap<String, String>;

/// Unknown fields kept verbatim.
pub type Extra = Map<String, Value>;

/// `task.type` and the entries of `supported_types` (§4, §4.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskType {
    Collect,
    Purchase,
    /// A type this version does not know.
    #[serde(other)]
    Unknown,
}

impl TaskType {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskType::Collect => "collect",
            TaskType::Purchase => "purchase",
            TaskType::Unknown => "unknown",
        }
    }
}

/// `task.execution_mode` and `capabilities.purchase_mode` (§4.1, §5).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionMode {
    /// The compatible default (§5): stop before anything irreversible.
    #[default]
    DryRun,
    Live,
    #[serde(other)]
    Unknown,
}

impl ExecutionMode {
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutionMode::DryRun => "dry_run",
            ExecutionMode::Live => "live",
            ExecutionMode::Unknown => "unknown",
        }
    }
}

// ---------------------------------------------------------------------------------------
// §4.1 registration and §5 claim share one body: the client profile.
// ---------------------------------------------------------------------------------------

/// Body of `PUT /registration` (§4.1) and of `POST /tasks/claim` (§5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClientProfile {
    #[serde(default)]
    pub client: ClientInfo,
    pub supported_types: Vec<TaskType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceInfo>,
    pub capabilities: Capabilities,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientInfo {
    /// Display name, at most 50 characters; empty or absent keeps the Admin's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdd_package: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Capabilities {
    pub purchase_mode: ExecutionMode,
    /// May be absent (an older client): the same as empty, "any version" — an Admin
    /// narrows by it only when it names some (the mock: it must then contain 1).
    #[serde(default)]
    pub schema_versions: Vec<i64>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `200` answer of §4.1.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RegistrationResponse {
    pub registered: bool,
    pub client_id: String,
    pub registered_at: String,
}

// ---------------------------------------------------------------------------------------
// §4 / §5 tasks
// ---------------------------------------------------------------------------------------

/// `200` answer of §5.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ClaimResponse {
    pub task: Task,
}

/// A task as the Admin hands it out (§4, §5). Contains no Admin-side state.
///
/// `id` is opaque: stored and sent back verbatim, never parsed (§5).
/// `payload` stays raw JSON here: its shape depends on `task_type` and is checked by
/// [`crate::validate::purchase_payload`] / [`crate::validate::collect_payload`]
/// before anything is stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: String,
    #[serde(rename = "type")]
    pub task_type: TaskType,
    /// Absent means the compatible default `dry_run` (§5).
    #[serde(default)]
    pub execution_mode: ExecutionMode,
    pub version: i64,
    #[serde(default)]
    pub priority: i64,
    pub payload: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The payload of a collect task (§5): only the goods.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CollectPayload {
    pub goods_id: String,
    pub goods_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_title: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// The payload of a purchase task (§4). `max_price_cent` is the limit of the order
/// **total** (price × quantity, after discounts), not a unit price.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PurchasePayload {
    pub goods_id: String,
    pub goods_url: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_title: Option<String>,
    pub options: OptionMap,
    pub quantity: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_price_cent: Option<Fen>,
    pub max_price_cent: Fen,
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------
// §6 results
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultType {
    Collect,
    Purchase,
    #[serde(other)]
    Unknown,
}

/// Body of `POST /tasks/{id}/result` (§6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResultRequest {
    pub task_version: i64,
    pub attempt_id: String,
    pub result_type: ResultType,
    pub completed_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pdd_data: Option<PddData>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purchase: Option<PurchaseResult>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceGranularity {
    Color,
    Sku,
    #[serde(other)]
    Unknown,
}

/// What a collect task read from a goods page (§6, data model §4.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PddData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<i64>,
    pub goods_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Omitted or empty when not visible; never overwrites a saved name at the Admin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shop_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub captured_at: Option<String>,
    pub price_granularity: PriceGranularity,
    /// In page order; `key` is `color`, `size` or another stable key.
    pub dimensions: Vec<Dimension>,
    pub skus: Vec<Sku>,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dimension {
    pub key: String,
    pub name: String,
}

/// One colour × size (× …) combination as seen on the page.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Sku {
    pub options: OptionMap,
    /// The price actually payable, or `null` when none was read — never 0.
    pub price_cent: Option<Fen>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub list_price_cent: Option<Fen>,
    /// Only the options actually selected when the price was read (`{"color": "黑色"}`).
    #[serde(default)]
    pub price_observed_at: OptionMap,
    pub available: bool,
    pub raw_price: Option<String>,
}

/// The purchase section of a result (`decisions.md` §6; contract §6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PurchaseResult {
    pub schema_version: i64,
    pub mode: ExecutionMode,
    pub order_submitted: bool,
    pub payment_attempted: bool,
    /// `unpaid` for a live order, `not_created` for a dry run.
    pub payment_status: String,
    /// `matched` for a live success, `not_applicable` for a dry run.
    pub match_status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order_sn: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordered_at: Option<String>,
    pub goods_id: String,
    pub options: OptionMap,
    pub quantity: i64,
    pub confirmed_total_cent: Option<Fen>,
    pub max_price_cent: Fen,
    #[serde(default)]
    pub spec_resolution_id: Option<String>,
    #[serde(default)]
    pub irreversible_action_at: Option<String>,
    #[serde(flatten)]
    pub extra: Extra,
}

/// `accepted` answer of §6 and §7. `result_id` is required by §7 but an old Admin may
/// have stored failure answers without it (the §7 compatibility rule), so it is optional
/// here and the client decides.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AcceptedResponse {
    pub accepted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_status: Option<String>,
    pub accepted_at: String,
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------
// §7 failures
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureStatus {
    RetryWait,
    ManualReview,
    Failed,
    Cancelled,
    #[serde(other)]
    Unknown,
}

impl FailureStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureStatus::RetryWait => "retry_wait",
            FailureStatus::ManualReview => "manual_review",
            FailureStatus::Failed => "failed",
            FailureStatus::Cancelled => "cancelled",
            FailureStatus::Unknown => "unknown",
        }
    }
}

/// Body of `POST /tasks/{id}/failure` (§7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureRequest {
    pub task_version: i64,
    pub attempt_id: String,
    pub status: FailureStatus,
    pub error: FailureError,
    #[serde(default)]
    pub diagnostics: Map<String, Value>,
    pub reported_at: String,
    #[serde(flatten)]
    pub extra: Extra,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FailureError {
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
}

// ---------------------------------------------------------------------------------------
// §7.1 spec resolution
// ---------------------------------------------------------------------------------------

/// Body of `POST /tasks/{id}/spec-resolution` (§7.1, schema v1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecResolutionRequest {
    pub schema_version: i64,
    pub task_version: i64,
    pub attempt_id: String,
    pub pdd_goods_id: String,
    pub original_options: OptionMap,
    pub selected_color: String,
    pub target_size: String,
    pub candidates: Vec<SpecCandidate>,
    pub candidate_snapshot_hash: String,
    pub observed_at: String,
}

/// One size shown as purchasable under the selected colour, in page order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecCandidate {
    /// `c1`, `c2`, … in array order.
    pub candidate_id: String,
    /// The size text exactly as the page shows it.
    pub raw_text: String,
    /// v1: exactly `color` (= `selected_color`) and `size` (= `raw_text`).
    pub options: OptionMap,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecOutcome {
    Matched,
    Uncertain,
    Rejected,
    Failed,
    #[serde(other)]
    Unknown,
}

impl SpecOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            SpecOutcome::Matched => "matched",
            SpecOutcome::Uncertain => "uncertain",
            SpecOutcome::Rejected => "rejected",
            SpecOutcome::Failed => "failed",
            SpecOutcome::Unknown => "unknown",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecSource {
    Rule,
    Ai,
    Reused,
    #[serde(other)]
    Unknown,
}

/// `200` answer of §7.1. `failed` is a persisted business conclusion, not an HTTP error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpecResolutionResponse {
    pub schema_version: i64,
    pub resolution_id: String,
    pub outcome: SpecOutcome,
    pub source: Option<SpecSource>,
    pub candidate_snapshot_hash: String,
    #[serde(rename = "match")]
    pub matched: Option<SpecCandidate>,
    /// 0–10000 or `null` (no comparable confidence — never read as 0).
    pub confidence_bps: Option<i64>,
    #[serde(default)]
    pub reason: Option<String>,
    pub resolved_at: String,
    #[serde(flatten)]
    pub extra: Extra,
}

// ---------------------------------------------------------------------------------------
// §3 error envelope
// ---------------------------------------------------------------------------------------

/// The §3 error envelope every rejection uses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub retryable: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    #[serde(default)]
    pub details: Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn contract_examples_parse() {
        // §5 claim answer, with an unknown field added.
        let claim: ClaimResponse = serde_json::from_value(json!({
            "task": {
                "id": "COLLECT-20260810-0001", "type": "collect", "execution_mode": "dry_run",
                "version": 1, "priority": 10,
                "payload": {"goods_id": "737116531267",
                            "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=737116531267"},
                "lease_hint": "ignored"
            }
        }))
        .unwrap();
        assert_eq!(claim.task.task_type, TaskType::Collect);
        assert_eq!(claim.task.extra["lease_hint"], "ignored");

        // §4 purchase task without execution_mode → dry_run.
        let task: Task = serde_json::from_value(json!({
            "id": "cg1", "type": "purchase", "version": 3, "priority": 10,
            "payload": {"goods_id": "737116531267", "goods_url": "u",
                        "options": {"color": "黑色", "size": "L"},
                        "quantity": 2, "expected_price_cent": 3990, "max_price_cent": 4200},
            "created_at": "2026-08-06T07:00:00Z", "updated_at": "2026-08-06T07:05:00Z"
        }))
        .unwrap();
        assert_eq!(task.execution_mode, ExecutionMode::DryRun);
        let p: PurchasePayload = serde_json::from_value(task.payload).unwrap();
        assert_eq!(p.max_price_cent, Fen(4200));
        assert_eq!(p.options.keys().collect::<Vec<_>>(), ["color", "size"]);
    }

    #[test]
    fn unknown_enum_values_do_not_break_parsing() {
        let t: Task = serde_json::from_value(json!({
            "id": "x", "type": "refund", "execution_mode": "turbo", "version": 1, "payload": {}
        }))
        .unwrap();
        assert_eq!(t.task_type, TaskType::Unknown);
        assert_eq!(t.execution_mode, ExecutionMode::Unknown);
    }

    #[test]
    fn collect_result_matches_section_6() {
        let body = json!({
            "task_version": 3, "attempt_id": "attempt-uuid", "result_type": "collect",
            "completed_at": "2026-08-06T08:03:00Z",
            "pdd_data": {
                "goods_id": "737116531267", "title": "测试商品", "shop_name": "XX旗舰店",
                "price_granularity": "color",
                "dimensions": [{"key": "color", "name": "颜色分类"}, {"key": "size", "name": "尺码"}],
                "skus": [{"options": {"color": "黑色", "size": "M"}, "price_cent": 470,
                          "list_price_cent": 1990, "price_observed_at": {"color": "黑色"},
                          "available": true, "raw_price": "折后¥4.7"},
                         {"options": {"color": "白色", "size": "M"}, "price_cent": null,
                          "price_observed_at": {}, "available": false, "raw_price": null}]
            }
        });
        let r: ResultRequest = serde_json::from_value(body.clone()).unwrap();
        let data = r.pdd_data.as_ref().unwrap();
        assert_eq!(data.skus[0].price_cent, Some(Fen(470)));
        assert_eq!(data.skus[1].price_cent, None);
        // Serialising gives the same document back (null prices stay null, not 0).
        assert_eq!(serde_json::to_value(&r).unwrap(), body);
    }

    #[test]
    fn spec_resolution_response_uses_match_key() {
        let r: SpecResolutionResponse = serde_json::from_value(json!({
            "schema_version": 1, "resolution_id": "psr-1", "outcome": "matched", "source": "ai",
            "candidate_snapshot_hash": "ab", "confidence_bps": 9300, "reason": "r",
            "match": {"candidate_id": "c1", "raw_text": "120斤", "options": {"color": "黑色", "size": "120斤"}},
            "resolved_at": "2026-08-17T08:00:01Z"
        }))
        .unwrap();
        assert_eq!(r.matched.unwrap().candidate_id, "c1");
        let none: SpecResolutionResponse = serde_json::from_value(json!({
            "schema_version": 1, "resolution_id": "psr-2", "outcome": "failed", "source": null,
            "candidate_snapshot_hash": "ab", "match": null, "confidence_bps": null,
            "resolved_at": "2026-08-17T08:00:01Z"
        }))
        .unwrap();
        assert_eq!(none.confidence_bps, None);
        assert_eq!(none.outcome, SpecOutcome::Failed);
    }
}
