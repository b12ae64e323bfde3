//! Documentation-only schema types for `/openapi.json`.
//!
//! The wire types live in `cmautobuy-contract` (which has no utoipa dependency); these
//! mirror them with the contract's constraints written as JSON Schema, so a fuzzer that
//! generates schema-valid requests gets them accepted up to the business rules the schema
//! cannot express (cross-field rules: 422), and schema-invalid ones are refused (4xx).
//! Integers are bounded to `i64` because that is what the server parses.

#![allow(dead_code)]

use serde::Serialize;
use utoipa::ToSchema;

/// Header value syntax the server accepts for `X-Client-Id`: 1–128 visible ASCII characters.
pub const CLIENT_ID_PATTERN: &str = "^[!-~]{1,128}$";
/// `Idempotency-Key`: a header value (no leading or trailing space, no control character
/// but inner tabs; UTF-8 allowed) of at most 255 bytes (`cmautobuy_contract::hash`).
pub const IDEMPOTENCY_KEY_PATTERN: &str =
    r"^[^\u0000-\u0020\u007f](?:[^\u0000-\u0008\u000a-\u001f\u007f]*[^\u0000-\u0020\u007f])?$";

#[derive(Serialize, ToSchema, Default)]
#[schema(as = ClientInfo)]
pub struct ClientInfoDoc {
    /// Display name: at most 50 characters, no control characters. Empty keeps the
    /// stored name (§4.1).
    #[schema(
        max_length = 50,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*$",
        nullable
    )]
    pub name: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = TaskType)]
#[serde(rename_all = "snake_case")]
pub enum TaskTypeDoc {
    Collect,
    Purchase,
}

#[derive(Serialize, ToSchema)]
#[schema(as = ExecutionMode)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionModeDoc {
    DryRun,
    Live,
}

#[derive(Serialize, ToSchema)]
#[schema(as = DeviceInfo)]
pub struct DeviceInfoDoc {
    #[schema(nullable)]
    pub address: Option<String>,
    #[schema(nullable)]
    pub platform: Option<String>,
    #[schema(nullable)]
    pub pdd_package: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = Capabilities)]
pub struct CapabilitiesDoc {
    pub purchase_mode: ExecutionModeDoc,
    /// Positive integers; optional (absent = empty: no narrowing).
    #[schema(inline)]
    #[serde(default)]
    pub schema_versions: Vec<SchemaVersion>,
}

/// A positive schema version (an `i64` ≥ 1).
#[derive(Serialize)]
pub struct SchemaVersion(pub i64);

impl utoipa::PartialSchema for SchemaVersion {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Int64)))
            .minimum(Some(1))
            .maximum(Some(i64::MAX))
            .into()
    }
}

impl utoipa::ToSchema for SchemaVersion {}

/// Body of registration (§4.1) and claim (§5).
#[derive(Serialize, ToSchema)]
#[schema(as = ClientProfile, example = json!({
    "client": {"name": "办公室-01"},
    "supported_types": ["collect", "purchase"],
    "device": {"address": "192.168.0.173:5555", "platform": "android",
               "pdd_package": "com.xunmeng.pinduoduo"},
    "capabilities": {"purchase_mode": "live", "schema_versions": [1]}
}))]
pub struct ClientProfileDoc {
    #[serde(default)]
    pub client: ClientInfoDoc,
    #[schema(min_items = 1)]
    pub supported_types: Vec<TaskTypeDoc>,
    #[schema(nullable)]
    pub device: Option<DeviceInfoDoc>,
    pub capabilities: CapabilitiesDoc,
}

#[derive(Serialize, ToSchema)]
#[schema(as = RegistrationResponse)]
pub struct RegistrationResponseDoc {
    pub registered: bool,
    pub client_id: String,
    #[schema(format = DateTime)]
    pub registered_at: String,
}

/// A task as dispatched (§4, §5). `payload` depends on `type`.
#[derive(Serialize, ToSchema)]
#[schema(as = Task)]
pub struct TaskDoc {
    pub id: String,
    #[serde(rename = "type")]
    pub task_type: TaskTypeDoc,
    pub execution_mode: ExecutionModeDoc,
    pub version: i64,
    pub priority: i64,
    pub payload: serde_json::Value,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = ClaimResponse)]
pub struct ClaimResponseDoc {
    pub task: TaskDoc,
}

#[derive(Serialize, ToSchema)]
#[schema(as = ResultType)]
#[serde(rename_all = "snake_case")]
pub enum ResultTypeDoc {
    Collect,
    Purchase,
}

/// Body of a result (§6). `pdd_data` is required for collect results, `purchase` for
/// purchase results; cross-field rules are answered with 422.
#[derive(Serialize, ToSchema)]
#[schema(as = ResultRequest)]
pub struct ResultRequestDoc {
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub task_version: i64,
    #[schema(
        min_length = 1,
        max_length = 191,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"
    )]
    pub attempt_id: String,
    pub result_type: ResultTypeDoc,
    #[schema(format = DateTime)]
    pub completed_at: String,
    #[schema(nullable)]
    pub pdd_data: Option<PddDataDoc>,
    #[schema(nullable)]
    pub purchase: Option<PurchaseResultDoc>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = PriceGranularity)]
#[serde(rename_all = "snake_case")]
pub enum PriceGranularityDoc {
    Color,
    Sku,
}

#[derive(Serialize, ToSchema)]
#[schema(as = Dimension)]
pub struct DimensionDoc {
    pub key: String,
    pub name: String,
}

/// One SKU as read from the page; prices in integer fen or null (never 0 for unknown).
/// Every `*_cent` field must be written as a JSON integer: `4.0` is refused like `12.56`
/// (422 `INVALID_RESULT`, data model §1 "禁止 float"). `price_cent: 0` is a free option
/// and needs the non-empty `raw_price` it was read from (422 otherwise). Unknown fields
/// are kept: `skus_json` is stored as submitted.
#[derive(Serialize, ToSchema)]
#[schema(as = Sku)]
pub struct SkuDoc {
    pub options: std::collections::BTreeMap<String, String>,
    #[schema(minimum = 0, maximum = 9223372036854775807_i64, nullable)]
    pub price_cent: Option<i64>,
    #[schema(minimum = 1, maximum = 9223372036854775807_i64, nullable)]
    pub list_price_cent: Option<i64>,
    #[serde(default)]
    pub price_observed_at: std::collections::BTreeMap<String, String>,
    pub available: bool,
    #[schema(nullable)]
    pub raw_price: Option<String>,
}

/// Collected data (§6, data model §4.2).
#[derive(Serialize, ToSchema)]
#[schema(as = PddData)]
pub struct PddDataDoc {
    #[schema(nullable, minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64)]
    pub schema_version: Option<i64>,
    #[schema(min_length = 1)]
    pub goods_id: String,
    #[schema(nullable)]
    pub title: Option<String>,
    /// May be omitted or empty; never overwrites a saved shop name.
    #[schema(nullable)]
    pub shop_name: Option<String>,
    #[schema(nullable, format = DateTime)]
    pub captured_at: Option<String>,
    pub price_granularity: PriceGranularityDoc,
    pub dimensions: Vec<DimensionDoc>,
    pub skus: Vec<SkuDoc>,
}

/// The purchase section of a result (decisions.md §6).
#[derive(Serialize, ToSchema)]
#[schema(as = PurchaseResult)]
pub struct PurchaseResultDoc {
    #[schema(minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64)]
    pub schema_version: i64,
    pub mode: ExecutionModeDoc,
    pub order_submitted: bool,
    pub payment_attempted: bool,
    pub payment_status: String,
    pub match_status: String,
    #[schema(nullable)]
    pub order_sn: Option<String>,
    /// RFC 3339 with an offset (checked for live successes).
    #[schema(nullable)]
    pub ordered_at: Option<String>,
    #[schema(min_length = 1)]
    pub goods_id: String,
    pub options: std::collections::BTreeMap<String, String>,
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub quantity: i64,
    #[schema(nullable, minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64)]
    pub confirmed_total_cent: Option<i64>,
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub max_price_cent: i64,
    #[schema(nullable)]
    pub spec_resolution_id: Option<String>,
    #[schema(nullable)]
    pub irreversible_action_at: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = AcceptedResponse)]
pub struct AcceptedResponseDoc {
    pub accepted: bool,
    #[schema(min_length = 1)]
    pub result_id: String,
    #[schema(format = DateTime)]
    pub accepted_at: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = FailureStatus)]
#[serde(rename_all = "snake_case")]
pub enum FailureStatusDoc {
    RetryWait,
    ManualReview,
    Failed,
    Cancelled,
}

#[derive(Serialize, ToSchema)]
#[schema(as = FailureError)]
pub struct FailureErrorDoc {
    #[schema(min_length = 1)]
    pub code: String,
    pub message: String,
    #[serde(default)]
    pub retryable: bool,
    #[schema(nullable)]
    pub step: Option<String>,
}

/// Body of a failure (§7).
#[derive(Serialize, ToSchema)]
#[schema(as = FailureRequest)]
pub struct FailureRequestDoc {
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub task_version: i64,
    #[schema(
        min_length = 1,
        max_length = 191,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"
    )]
    pub attempt_id: String,
    pub status: FailureStatusDoc,
    pub error: FailureErrorDoc,
    #[serde(default)]
    pub diagnostics: serde_json::Map<String, serde_json::Value>,
    #[schema(format = DateTime)]
    pub reported_at: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = FailureAccepted)]
pub struct FailureAcceptedDoc {
    pub accepted: bool,
    #[schema(min_length = 1)]
    pub result_id: String,
    pub task_status: String,
    #[schema(format = DateTime)]
    pub accepted_at: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = SpecCandidateOptions)]
pub struct SpecCandidateOptionsDoc {
    #[schema(min_length = 1, max_length = 191)]
    pub color: String,
    #[schema(min_length = 1, max_length = 191)]
    pub size: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = SpecCandidate)]
pub struct SpecCandidateDoc {
    /// `c1` … `c100`, in array order.
    #[schema(pattern = "^c[1-9][0-9]?$|^c100$")]
    pub candidate_id: String,
    #[schema(
        min_length = 1,
        max_length = 191,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"
    )]
    pub raw_text: String,
    pub options: SpecCandidateOptionsDoc,
}

/// Body of a spec resolution (§7.1, schema v1; at most 64 KiB).
#[derive(Serialize, ToSchema)]
#[schema(as = SpecResolutionRequest)]
pub struct SpecResolutionRequestDoc {
    #[schema(minimum = 1, maximum = 1)]
    pub schema_version: i64,
    #[schema(minimum = 1, maximum = 9223372036854775807_i64)]
    pub task_version: i64,
    #[schema(min_length = 1, max_length = 191)]
    pub attempt_id: String,
    #[schema(min_length = 1, max_length = 191)]
    pub pdd_goods_id: String,
    /// 1–16 entries; keys and values 1–191 characters (checked by the server: 422).
    pub original_options: std::collections::BTreeMap<String, String>,
    #[schema(
        min_length = 1,
        max_length = 191,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"
    )]
    pub selected_color: String,
    #[schema(
        min_length = 1,
        max_length = 191,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]+$"
    )]
    pub target_size: String,
    #[schema(min_items = 1, max_items = 100)]
    pub candidates: Vec<SpecCandidateDoc>,
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub candidate_snapshot_hash: String,
    #[schema(format = DateTime)]
    pub observed_at: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = SpecOutcome)]
#[serde(rename_all = "snake_case")]
pub enum SpecOutcomeDoc {
    Matched,
    Uncertain,
    Rejected,
    Failed,
}

#[derive(Serialize, ToSchema)]
#[schema(as = SpecResolutionResponse)]
pub struct SpecResolutionResponseDoc {
    pub schema_version: i64,
    pub resolution_id: String,
    pub outcome: SpecOutcomeDoc,
    /// `rule`, `ai`, `reused` or null.
    #[schema(nullable)]
    pub source: Option<String>,
    pub candidate_snapshot_hash: String,
    #[serde(rename = "match")]
    #[schema(nullable)]
    pub matched: Option<SpecCandidateDoc>,
    #[schema(minimum = 0, maximum = 10000, nullable)]
    pub confidence_bps: Option<i64>,
    #[schema(max_length = 500, nullable)]
    pub reason: Option<String>,
    pub resolved_at: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = ErrorBody)]
pub struct ErrorBodyDoc {
    pub code: String,
    pub message: String,
    pub retryable: bool,
    #[schema(nullable)]
    pub request_id: Option<String>,
    pub details: serde_json::Map<String, serde_json::Value>,
}

/// The §3 envelope every rejection uses.
#[derive(Serialize, ToSchema)]
#[schema(as = ErrorEnvelope)]
pub struct ErrorEnvelopeDoc {
    pub error: ErrorBodyDoc,
}

// ---------------------------------------------------------------------------------------
// operator API (decisions.md §10)
// ---------------------------------------------------------------------------------------

/// `POST /api/v1/admin/tasks`. The payload is checked like contract §5 (collect: goods_id
/// and goods_url; purchase: also options, quantity, max_price_cent); a bad one is 422.
#[derive(Serialize, ToSchema)]
#[schema(as = CreateTask, example = json!({
    "type": "purchase", "execution_mode": "dry_run", "priority": 10, "assigned_client": null,
    "payload": {"goods_id": "737116531267",
                "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=737116531267",
                "options": {"color": "黑色", "size": "L"},
                "quantity": 2, "expected_price_cent": 3990, "max_price_cent": 4200}
}))]
pub struct CreateTaskDoc {
    /// Optional explicit id; generated as `cjN` / `cgN` otherwise.
    #[schema(nullable, min_length = 1, max_length = 191)]
    pub id: Option<String>,
    #[serde(rename = "type")]
    pub task_type: TaskTypeDoc,
    #[schema(nullable)]
    pub execution_mode: Option<ExecutionModeDoc>,
    #[schema(nullable, minimum = -9223372036854775808_i64, maximum = 9223372036854775807_i64)]
    pub priority: Option<i64>,
    /// `null` = the unassigned pool.
    #[schema(nullable, min_length = 1)]
    pub assigned_client: Option<String>,
    pub payload: serde_json::Map<String, serde_json::Value>,
}

/// A task as the operator sees it: the client view plus Admin-side state.
#[derive(Serialize, ToSchema)]
#[schema(as = OperatorTask)]
pub struct OperatorTaskDoc {
    pub id: String,
    #[serde(rename = "type")]
    pub task_type: TaskTypeDoc,
    pub execution_mode: ExecutionModeDoc,
    pub version: i64,
    pub priority: i64,
    pub payload: serde_json::Value,
    /// pending, assigned, claimed, succeeded, manual_review, failed, cancelled
    pub status: String,
    #[schema(nullable)]
    pub assigned_client: Option<String>,
    #[schema(nullable)]
    pub designated_client: Option<String>,
    #[schema(nullable)]
    pub claimed_at: Option<String>,
    #[schema(nullable)]
    pub error_code: Option<String>,
    #[schema(nullable)]
    pub error_message: Option<String>,
    #[schema(nullable)]
    pub finished_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// `tasks.result_data`: the latest accepted §6 result body exactly as the client sent
    /// it (data model §4.3 "完整的采集提交原文"; its `pdd_data` is the product's
    /// `skus_json`), or null before any result.
    #[schema(nullable)]
    pub result_data: Option<serde_json::Map<String, serde_json::Value>>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = OperatorTaskEnvelope)]
pub struct OperatorTaskEnvelopeDoc {
    pub task: OperatorTaskDoc,
}

#[derive(Serialize, ToSchema)]
#[schema(as = OperatorTaskList)]
pub struct OperatorTaskListDoc {
    pub tasks: Vec<OperatorTaskDoc>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = OperatorTaskDetail)]
pub struct OperatorTaskDetailDoc {
    pub task: OperatorTaskDoc,
    /// `[{client_id, claimed_at, task_version}]`
    pub claims: Vec<serde_json::Value>,
    /// `[{result_id, kind, client_id, idempotency_key, body, accepted_at}]`
    pub results: Vec<serde_json::Value>,
}

/// `POST /api/v1/admin/tasks/{id}/reassign`.
#[derive(Serialize, ToSchema)]
#[schema(as = Reassign)]
pub struct ReassignDoc {
    /// A client id, or null for the unassigned pool.
    #[schema(nullable, pattern = "^[!-~]{1,128}$")]
    pub client_id: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = OperatorClients)]
pub struct OperatorClientsDoc {
    /// `[{client_id, name, online, last_seen_at, capabilities, supported_types, device}]`
    pub clients: Vec<serde_json::Value>,
}

/// A `pdd_products` row as the operator sees it.
#[derive(Serialize, ToSchema)]
#[schema(as = OperatorProduct)]
pub struct OperatorProductDoc {
    pub goods_id: String,
    pub url: String,
    #[schema(nullable)]
    pub title: Option<String>,
    #[schema(nullable)]
    pub shop_name: Option<String>,
    /// The last collect result's `pdd_data` exactly as submitted (data model §4.2
    /// "原样提交，Admin 不做转换": unknown fields kept, absent fields absent, key order
    /// kept), or null before any result.
    #[schema(nullable)]
    pub skus_json: Option<serde_json::Map<String, serde_json::Value>>,
    /// pending, collecting, collected, failed
    pub collect_status: String,
    #[schema(nullable)]
    pub collect_msg: Option<String>,
    #[schema(nullable)]
    pub collected_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
#[schema(as = OperatorProducts)]
pub struct OperatorProductsDoc {
    pub products: Vec<OperatorProductDoc>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = OperatorSpecResolutions)]
pub struct OperatorSpecResolutionsDoc {
    pub spec_resolutions: Vec<serde_json::Value>,
}
