//! The contract's validation rules as functions with stable codes.
//!
//! Each function takes the raw JSON (`serde_json::Value`) or a parsed type and returns
//! either the typed value or a [`Violation`]: a stable [`AdminErrorCode`], the JSON path of
//! the offending field and a human message. The mock Admin turns a violation into the §3
//! envelope; the client uses the same functions to refuse an incomplete task before it
//! stores it (§5) and to check its own requests before the first send.
//!
//! Lengths are counted in characters (Unicode scalar values), as the contract's "字" /
//! "个字符" means, not in bytes.

use crate::codes::AdminErrorCode;
use crate::hash::{self, CandidateView};
use crate::money::Fen;
use crate::time::parse_rfc3339;
use crate::types::*;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;

/// A rule of the contract that a document breaks.
#[derive(Clone, PartialEq, Eq)]
pub struct Violation {
    pub code: AdminErrorCode,
    /// JSON path of the field, e.g. `candidates[2].candidate_id`; empty for the whole body.
    pub field: String,
    pub message: String,
}

impl Violation {
    pub fn new(code: AdminErrorCode, field: impl Into<String>, message: impl Into<String>) -> Self {
        Violation {
            code,
            field: field.into(),
            message: message.into(),
        }
    }
}

impl fmt::Debug for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} ({})", self.code, self.message, self.field)
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.field, self.message)
        }
    }
}

impl std::error::Error for Violation {}

/// Maximum `client.name` length in characters (§4.1).
pub const CLIENT_NAME_MAX_CHARS: usize = 50;
/// Maximum length of the §7.1 string fields in characters.
pub const SPEC_FIELD_MAX_CHARS: usize = 191;
/// Maximum UTF-8 size of a §7.1 request body.
pub const SPEC_RESOLUTION_MAX_BODY_BYTES: usize = 64 * 1024;
/// §7.1 `original_options` entries.
pub const SPEC_OPTIONS_MAX: usize = 16;
/// §7.1 candidates.
pub const SPEC_CANDIDATES_MAX: usize = 100;
/// `reason` of a §7.1 answer.
pub const SPEC_REASON_MAX_CHARS: usize = 500;
/// `attempt_id` (same bound as §7.1 for results and failures).
pub const ATTEMPT_ID_MAX_CHARS: usize = 191;

fn char_len(s: &str) -> usize {
    s.chars().count()
}

fn has_control(s: &str) -> bool {
    s.chars().any(char::is_control)
}

/// Parses a JSON value into `T`; a type error becomes `code` with serde's path-less message.
pub fn parse_as<T: DeserializeOwned>(value: &Value, code: AdminErrorCode) -> Result<T, Violation> {
    serde_json::from_value(value.clone()).map_err(|e| Violation::new(code, "", e.to_string()))
}

/// Parses request bytes as one JSON object (§3 `INVALID_BODY` otherwise).
pub fn json_object(bytes: &[u8]) -> Result<Value, Violation> {
    let v: Value = serde_json::from_slice(bytes).map_err(|e| {
        Violation::new(
            AdminErrorCode::InvalidBody,
            "",
            format!("body is not valid JSON: {e}"),
        )
    })?;
    if !v.is_object() {
        return Err(Violation::new(
            AdminErrorCode::InvalidBody,
            "",
            "body must be a JSON object",
        ));
    }
    Ok(v)
}

fn require_len(
    code: &AdminErrorCode,
    field: &str,
    s: &str,
    min: usize,
    max: usize,
) -> Result<(), Violation> {
    let n = char_len(s);
    if n < min || n > max {
        return Err(Violation::new(
            code.clone(),
            field,
            format!("must be {min}–{max} characters, got {n}"),
        ));
    }
    Ok(())
}

fn require_no_control(code: &AdminErrorCode, field: &str, s: &str) -> Result<(), Violation> {
    if has_control(s) {
        return Err(Violation::new(
            code.clone(),
            field,
            "must not contain control characters",
        ));
    }
    Ok(())
}

fn require_time(code: &AdminErrorCode, field: &str, s: &str) -> Result<(), Violation> {
    if parse_rfc3339(s).is_none() {
        return Err(Violation::new(
            code.clone(),
            field,
            "must be an RFC 3339 time with an offset",
        ));
    }
    Ok(())
}

fn require_positive(code: &AdminErrorCode, field: &str, n: i64) -> Result<(), Violation> {
    if n <= 0 {
        return Err(Violation::new(
            code.clone(),
            field,
            "must be a positive integer",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Money: integers only (data model §1 "禁止 float")
// ---------------------------------------------------------------------------------------

/// The message of a `*_cent` field that is not a JSON integer.
pub const MONEY_INTEGERS_ONLY: &str =
    "must be an integer number of fen: integers only, never a float such as 4.0 or 12.56, never a string";

/// Data model §1: money is integer fen, "禁止 float". Walks `value` and refuses every
/// field whose name ends in `_cent` — known or not, at any depth — that holds anything
/// but `null` or a JSON integer within `i64`. An integral float (`4.0`, `1e3`) is refused
/// like `12.56`: how a number is written is part of the contract for money, and a peer
/// that writes `4.0` computes money in floats. `prefix` is the JSON path of `value`
/// (`"payload"` for a task payload, empty for a whole body); the violation names the
/// field's full path (`pdd_data.skus[0].price_cent`).
///
/// The validators of bodies that carry money ([`result_request`], [`collect_payload`],
/// [`purchase_payload`], hence [`claimed_task`]) call this first, on the raw JSON, so the
/// refusal is this precise one and never a generic type error.
pub fn money_fields_are_integers(
    value: &Value,
    prefix: &str,
    code: &AdminErrorCode,
) -> Result<(), Violation> {
    fn join(prefix: &str, key: &str) -> String {
        if prefix.is_empty() {
            key.to_string()
        } else {
            format!("{prefix}.{key}")
        }
    }
    /// What the refused value was, without echoing a long text back.
    fn shown(v: &Value) -> String {
        match v {
            Value::Number(n) => n.to_string(),
            Value::String(_) => "a string".into(),
            Value::Bool(_) => "a boolean".into(),
            Value::Array(_) => "an array".into(),
            Value::Object(_) => "an object".into(),
            Value::Null => "null".into(),
        }
    }
    match value {
        Value::Object(m) => {
            for (k, v) in m {
                let path = join(prefix, k);
                if k.ends_with("_cent") {
                    let integer = match v {
                        Value::Null => true,
                        Value::Number(n) => n.is_i64(),
                        _ => false,
                    };
                    if !integer {
                        return Err(Violation::new(
                            code.clone(),
                            path,
                            format!("{MONEY_INTEGERS_ONLY} (got {})", shown(v)),
                        ));
                    }
                } else {
                    money_fields_are_integers(v, &path, code)?;
                }
            }
            Ok(())
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                money_fields_are_integers(v, &format!("{prefix}[{i}]"), code)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------------------
// §4.1 / §5 client profile
// ---------------------------------------------------------------------------------------

/// Parses and checks a registration / claim body (§4.1 rules). Structure problems and
/// rule violations are both `INVALID_CLIENT_PROFILE`; a body that is not a JSON object
/// is `INVALID_BODY` (see [`json_object`]).
pub fn client_profile(value: &Value) -> Result<ClientProfile, Violation> {
    let code = AdminErrorCode::InvalidClientProfile;
    let p: ClientProfile = parse_as(value, code.clone())?;
    check_client_profile(&p)?;
    Ok(p)
}

/// The §4.1 rules on `client.name`: at most [`CLIENT_NAME_MAX_CHARS`] characters, no
/// control characters (what the Admin checks, and the client before it saves a name).
pub fn client_name(name: &str) -> Result<(), Violation> {
    let code = AdminErrorCode::InvalidClientProfile;
    if char_len(name) > CLIENT_NAME_MAX_CHARS {
        return Err(Violation::new(
            code,
            "client.name",
            format!("must be at most {CLIENT_NAME_MAX_CHARS} characters"),
        ));
    }
    require_no_control(&code, "client.name", name)
}

/// The §4.1 rules on an already parsed profile.
pub fn check_client_profile(p: &ClientProfile) -> Result<(), Violation> {
    let code = AdminErrorCode::InvalidClientProfile;
    if let Some(name) = &p.client.name {
        client_name(name)?;
    }
    if p.supported_types.is_empty() {
        return Err(Violation::new(code, "supported_types", "must not be empty"));
    }
    if p.supported_types.contains(&TaskType::Unknown) {
        return Err(Violation::new(
            code,
            "supported_types",
            "may only contain collect and purchase",
        ));
    }
    if p.capabilities.purchase_mode == ExecutionMode::Unknown {
        return Err(Violation::new(
            code,
            "capabilities.purchase_mode",
            "must be dry_run or live",
        ));
    }
    if p.capabilities.schema_versions.iter().any(|v| *v <= 0) {
        return Err(Violation::new(
            code,
            "capabilities.schema_versions",
            "may only contain positive integers",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// §4 / §5 task payloads
// ---------------------------------------------------------------------------------------

fn non_blank(code: &AdminErrorCode, field: &str, s: &str) -> Result<(), Violation> {
    if s.trim().is_empty() {
        return Err(Violation::new(code.clone(), field, "must not be empty"));
    }
    Ok(())
}

/// Checks a collect payload: non-empty `goods_id` and `goods_url`.
pub fn collect_payload(value: &Value) -> Result<CollectPayload, Violation> {
    let code = AdminErrorCode::InvalidTaskPayload;
    money_fields_are_integers(value, "payload", &code)?;
    let p: CollectPayload = parse_as(value, code.clone())?;
    non_blank(&code, "payload.goods_id", &p.goods_id)?;
    non_blank(&code, "payload.goods_url", &p.goods_url)?;
    Ok(p)
}

/// Checks a purchase payload (§4, §5): non-empty `goods_url` and `goods_id`, non-empty
/// dynamic `options` of non-empty strings, positive integer `quantity` and positive
/// integer `max_price_cent` (the order **total** limit).
pub fn purchase_payload(value: &Value) -> Result<PurchasePayload, Violation> {
    let code = AdminErrorCode::InvalidTaskPayload;
    // Check the money fields on the raw JSON first: a float or string must be named
    // precisely, not reported as a generic type error.
    money_fields_are_integers(value, "payload", &code)?;
    for field in ["quantity", "max_price_cent"] {
        match value.get(field) {
            Some(Value::Number(n)) if n.is_i64() => {}
            Some(_) => {
                return Err(Violation::new(
                    code,
                    format!("payload.{field}"),
                    "must be a positive integer",
                ))
            }
            None => {
                return Err(Violation::new(
                    code,
                    format!("payload.{field}"),
                    "is required for purchase tasks",
                ))
            }
        }
    }
    let p: PurchasePayload = parse_as(value, code.clone())?;
    non_blank(&code, "payload.goods_id", &p.goods_id)?;
    non_blank(&code, "payload.goods_url", &p.goods_url)?;
    if p.options.is_empty() {
        return Err(Violation::new(
            code,
            "payload.options",
            "must name at least one option",
        ));
    }
    for (k, v) in &p.options {
        if k.trim().is_empty() || v.trim().is_empty() {
            return Err(Violation::new(
                code,
                format!("payload.options.{k}"),
                "option keys and values must not be empty",
            ));
        }
    }
    require_positive(&code, "payload.quantity", p.quantity)?;
    require_positive(&code, "payload.max_price_cent", p.max_price_cent.get())?;
    if let Some(e) = p.expected_price_cent {
        require_positive(&code, "payload.expected_price_cent", e.get())?;
    }
    Ok(p)
}

/// Checks a task as claimed (§5): known type and mode, positive version, valid payload.
pub fn claimed_task(task: &Task) -> Result<(), Violation> {
    let code = AdminErrorCode::InvalidTaskPayload;
    if task.id.is_empty() {
        return Err(Violation::new(code, "task.id", "must not be empty"));
    }
    require_positive(&code, "task.version", task.version)?;
    if task.execution_mode == ExecutionMode::Unknown {
        return Err(Violation::new(
            code,
            "task.execution_mode",
            "must be dry_run or live",
        ));
    }
    match task.task_type {
        TaskType::Collect => collect_payload(&task.payload).map(|_| ()),
        TaskType::Purchase => purchase_payload(&task.payload).map(|_| ()),
        TaskType::Unknown => Err(Violation::new(
            code,
            "task.type",
            "must be collect or purchase",
        )),
    }
}

// ---------------------------------------------------------------------------------------
// §6 results
// ---------------------------------------------------------------------------------------

fn check_attempt(code: &AdminErrorCode, attempt_id: &str) -> Result<(), Violation> {
    require_len(code, "attempt_id", attempt_id, 1, ATTEMPT_ID_MAX_CHARS)?;
    require_no_control(code, "attempt_id", attempt_id)
}

/// Parses and checks a result body (§6). Shape errors are `INVALID_BODY`; rule
/// violations `INVALID_RESULT`.
pub fn result_request(value: &Value) -> Result<ResultRequest, Violation> {
    money_fields_are_integers(value, "", &AdminErrorCode::InvalidResult)?;
    let r: ResultRequest = parse_as(value, AdminErrorCode::InvalidBody)?;
    check_result(&r)?;
    Ok(r)
}

/// The §6 rules on a parsed result.
pub fn check_result(r: &ResultRequest) -> Result<(), Violation> {
    let code = AdminErrorCode::InvalidResult;
    require_positive(&code, "task_version", r.task_version)?;
    check_attempt(&code, &r.attempt_id)?;
    require_time(&code, "completed_at", &r.completed_at)?;
    match r.result_type {
        ResultType::Collect => {
            let data = r.pdd_data.as_ref().ok_or_else(|| {
                Violation::new(code.clone(), "pdd_data", "is required for collect results")
            })?;
            check_pdd_data(data)
        }
        ResultType::Purchase => {
            let p = r.purchase.as_ref().ok_or_else(|| {
                Violation::new(code.clone(), "purchase", "is required for purchase results")
            })?;
            check_purchase_result(p)
        }
        ResultType::Unknown => Err(Violation::new(
            code,
            "result_type",
            "must be collect or purchase",
        )),
    }
}

/// The §6 / data model §4.2 rules on collected data. Null prices are accepted (§6:
/// "unknown"). Prices of 0 — see [`crate::money`], "A price of 0": a `price_cent` of 0 is
/// a real free option (a gift SKU) and valid only with the non-empty `raw_price` it was
/// read from; 0 without that text is how "unknown written as 0" bugs look and is
/// refused. `list_price_cent` (a struck-through price) is positive or null.
pub fn check_pdd_data(d: &PddData) -> Result<(), Violation> {
    let code = AdminErrorCode::InvalidResult;
    non_blank(&code, "pdd_data.goods_id", &d.goods_id)?;
    if d.price_granularity == PriceGranularity::Unknown {
        return Err(Violation::new(
            code,
            "pdd_data.price_granularity",
            "must be color or sku",
        ));
    }
    if let Some(t) = &d.captured_at {
        require_time(&code, "pdd_data.captured_at", t)?;
    }
    for (i, dim) in d.dimensions.iter().enumerate() {
        if dim.key.trim().is_empty() || dim.name.trim().is_empty() {
            return Err(Violation::new(
                code,
                format!("pdd_data.dimensions[{i}]"),
                "key and name must not be empty",
            ));
        }
    }
    for (i, sku) in d.skus.iter().enumerate() {
        let field = |f: &str| format!("pdd_data.skus[{i}].{f}");
        if sku.options.is_empty() {
            return Err(Violation::new(code, field("options"), "must not be empty"));
        }
        let read_from_page = sku
            .raw_price
            .as_deref()
            .is_some_and(|t| !t.trim().is_empty());
        match sku.price_cent {
            Some(Fen(v)) if v < 0 => {
                return Err(Violation::new(
                    code,
                    field("price_cent"),
                    "must be an integer ≥ 0 or null",
                ))
            }
            Some(Fen(0)) if !read_from_page => {
                return Err(Violation::new(
                    code,
                    field("price_cent"),
                    "0 is a price only with the raw_price it was read from (a free option); \
                     an unknown price is null, never 0",
                ))
            }
            _ => {}
        }
        if let Some(Fen(v)) = sku.list_price_cent {
            if v <= 0 {
                return Err(Violation::new(
                    code,
                    field("list_price_cent"),
                    "must be a positive integer or null",
                ));
            }
        }
        // price_observed_at may only name options the SKU really has (no invented sizes).
        for (k, v) in &sku.price_observed_at {
            if sku.options.get(k) != Some(v) {
                return Err(Violation::new(
                    code,
                    field("price_observed_at"),
                    format!("names {k}={v}, which is not an option of this sku"),
                ));
            }
        }
    }
    Ok(())
}

/// Consistency of a purchase result (`decisions.md` §6, contract §6): a live success
/// needs every condition of §6; a dry run never claims an order.
pub fn check_purchase_result(p: &PurchaseResult) -> Result<(), Violation> {
    let code = AdminErrorCode::InvalidResult;
    require_positive(&code, "purchase.quantity", p.quantity)?;
    require_positive(&code, "purchase.max_price_cent", p.max_price_cent.get())?;
    non_blank(&code, "purchase.goods_id", &p.goods_id)?;
    match p.mode {
        ExecutionMode::Live => {
            let ok = p.order_submitted
                && !p.payment_attempted
                && p.payment_status == "unpaid"
                && p.match_status == "matched";
            if !ok {
                return Err(Violation::new(
                    code,
                    "purchase",
                    "a live success needs order_submitted=true, payment_attempted=false, \
                     payment_status=unpaid and match_status=matched (otherwise report a §7 failure)",
                ));
            }
            match &p.order_sn {
                Some(sn) if !sn.trim().is_empty() => {}
                _ => {
                    return Err(Violation::new(
                        code,
                        "purchase.order_sn",
                        "a live success needs an order number",
                    ))
                }
            }
            match &p.ordered_at {
                Some(t) => require_time(&code, "purchase.ordered_at", t)?,
                None => {
                    return Err(Violation::new(
                        code,
                        "purchase.ordered_at",
                        "a live success needs a tz-aware order time",
                    ))
                }
            }
        }
        ExecutionMode::DryRun => {
            if p.order_submitted || p.payment_attempted || p.order_sn.is_some() {
                return Err(Violation::new(
                    code,
                    "purchase",
                    "a dry run never submits an order",
                ));
            }
        }
        ExecutionMode::Unknown => {
            return Err(Violation::new(
                code,
                "purchase.mode",
                "must be dry_run or live",
            ))
        }
    }
    if let (Some(total), max) = (p.confirmed_total_cent, p.max_price_cent) {
        if total > max {
            return Err(Violation::new(
                code,
                "purchase.confirmed_total_cent",
                "exceeds max_price_cent",
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// §7 failures
// ---------------------------------------------------------------------------------------

/// Parses and checks a failure body (§7). Shape errors are `INVALID_BODY`, rule
/// violations (status outside the set, empty code, bad time) `INVALID_FAILURE`.
pub fn failure_request(value: &Value) -> Result<FailureRequest, Violation> {
    let f: FailureRequest = parse_as(value, AdminErrorCode::InvalidBody)?;
    check_failure(&f)?;
    Ok(f)
}

/// The §7 rules on a parsed failure.
pub fn check_failure(f: &FailureRequest) -> Result<(), Violation> {
    let code = AdminErrorCode::InvalidFailure;
    require_positive(&code, "task_version", f.task_version)?;
    check_attempt(&code, &f.attempt_id)?;
    failure_status(f.status)?;
    non_blank(&code, "error.code", &f.error.code)?;
    require_time(&code, "reported_at", &f.reported_at)?;
    Ok(())
}

/// `status` must be one of `retry_wait`, `manual_review`, `failed`, `cancelled` (§7).
pub fn failure_status(s: FailureStatus) -> Result<(), Violation> {
    if s == FailureStatus::Unknown {
        return Err(Violation::new(
            AdminErrorCode::InvalidFailure,
            "status",
            "must be retry_wait, manual_review, failed or cancelled",
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// §7.1 spec resolution
// ---------------------------------------------------------------------------------------

/// Checks a raw §7.1 body in the contract's order: size (`INVALID_BODY`), JSON
/// (`INVALID_BODY`), `schema_version` (`INVALID_SPEC_RESOLUTION_SCHEMA`), fields
/// (`INVALID_SPEC_RESOLUTION_REQUEST`). Hashes are checked by [`spec_resolution_hashes`]
/// once the task is known.
pub fn spec_resolution_body(bytes: &[u8]) -> Result<SpecResolutionRequest, Violation> {
    if bytes.len() > SPEC_RESOLUTION_MAX_BODY_BYTES {
        return Err(Violation::new(
            AdminErrorCode::InvalidBody,
            "",
            format!(
                "body is {} bytes; at most {SPEC_RESOLUTION_MAX_BODY_BYTES} allowed",
                bytes.len()
            ),
        ));
    }
    let v = json_object(bytes)?;
    spec_resolution_value(&v)
}

/// Like [`spec_resolution_body`] on an already parsed object (size not checked).
pub fn spec_resolution_value(v: &Value) -> Result<SpecResolutionRequest, Violation> {
    match v.get("schema_version") {
        Some(Value::Number(n)) if n.as_i64() == Some(1) => {}
        _ => {
            return Err(Violation::new(
                AdminErrorCode::InvalidSpecResolutionSchema,
                "schema_version",
                "only schema_version 1 is supported",
            ))
        }
    }
    let r: SpecResolutionRequest = parse_as(v, AdminErrorCode::InvalidSpecResolutionRequest)?;
    check_spec_resolution_fields(&r)?;
    Ok(r)
}

/// The §7.1 field table.
pub fn check_spec_resolution_fields(r: &SpecResolutionRequest) -> Result<(), Violation> {
    let code = AdminErrorCode::InvalidSpecResolutionRequest;
    let max = SPEC_FIELD_MAX_CHARS;
    require_positive(&code, "task_version", r.task_version)?;
    require_len(&code, "attempt_id", &r.attempt_id, 1, max)?;
    require_len(&code, "pdd_goods_id", &r.pdd_goods_id, 1, max)?;
    let n = r.original_options.len();
    if !(1..=SPEC_OPTIONS_MAX).contains(&n) {
        return Err(Violation::new(
            code,
            "original_options",
            format!("must have 1–{SPEC_OPTIONS_MAX} entries, got {n}"),
        ));
    }
    for (k, v) in &r.original_options {
        require_len(&code, "original_options (key)", k, 1, max)?;
        require_len(&code, &format!("original_options.{k}"), v, 1, max)?;
    }
    require_len(&code, "selected_color", &r.selected_color, 1, max)?;
    require_no_control(&code, "selected_color", &r.selected_color)?;
    require_len(&code, "target_size", &r.target_size, 1, max)?;
    require_no_control(&code, "target_size", &r.target_size)?;
    let n = r.candidates.len();
    if !(1..=SPEC_CANDIDATES_MAX).contains(&n) {
        return Err(Violation::new(
            code,
            "candidates",
            format!("must have 1–{SPEC_CANDIDATES_MAX} entries, got {n}"),
        ));
    }
    for (i, c) in r.candidates.iter().enumerate() {
        let field = |f: &str| format!("candidates[{i}].{f}");
        let expected_id = format!("c{}", i + 1);
        if c.candidate_id != expected_id {
            return Err(Violation::new(
                code,
                field("candidate_id"),
                format!("must be {expected_id} (c1…cN in array order)"),
            ));
        }
        require_len(&code, &field("raw_text"), &c.raw_text, 1, max)?;
        require_no_control(&code, &field("raw_text"), &c.raw_text)?;
        let keys_ok = c.options.len() == 2
            && c.options.contains_key("color")
            && c.options.contains_key("size");
        if !keys_ok {
            return Err(Violation::new(
                code,
                field("options"),
                "v1 options are exactly color and size",
            ));
        }
        if c.options["color"] != r.selected_color {
            return Err(Violation::new(
                code,
                field("options.color"),
                "must equal selected_color",
            ));
        }
        if c.options["size"] != c.raw_text {
            return Err(Violation::new(
                code,
                field("options.size"),
                "must equal raw_text exactly",
            ));
        }
    }
    if !hash::is_lower_hex_sha256(&r.candidate_snapshot_hash) {
        return Err(Violation::new(
            code,
            "candidate_snapshot_hash",
            "must be 64 lowercase hexadecimal characters",
        ));
    }
    require_time(&code, "observed_at", &r.observed_at)?;
    Ok(())
}

/// Recomputes both §7.1 hashes: the snapshot hash from the fields, and the idempotency
/// key from `task_id`, `attempt_id` and that hash (`SPEC_RESOLUTION_HASH_MISMATCH`).
pub fn spec_resolution_hashes(
    task_id: &str,
    idempotency_key: &str,
    r: &SpecResolutionRequest,
) -> Result<(), Violation> {
    let code = AdminErrorCode::SpecResolutionHashMismatch;
    let expected = hash::candidate_snapshot_hash(
        &r.pdd_goods_id,
        &r.selected_color,
        r.candidates.iter().map(CandidateView::from),
    );
    if expected != r.candidate_snapshot_hash {
        return Err(Violation::new(
            code,
            "candidate_snapshot_hash",
            "does not match the candidates",
        ));
    }
    let expected_key =
        hash::spec_resolution_idempotency_key(task_id, &r.attempt_id, &r.candidate_snapshot_hash);
    if expected_key != idempotency_key {
        return Err(Violation::new(
            code,
            "Idempotency-Key",
            "does not match task_id, attempt_id and candidate_snapshot_hash",
        ));
    }
    Ok(())
}

/// Checks an Admin's §7.1 answer against the request it answers: the `match` must be a
/// verbatim copy of a request candidate, only `matched` may carry one, `confidence_bps`
/// within 0–10000, `reason` ≤ 500 characters, same snapshot hash.
pub fn spec_resolution_response(
    req: &SpecResolutionRequest,
    resp: &SpecResolutionResponse,
) -> Result<(), Violation> {
    let code = AdminErrorCode::InvalidBody;
    if resp.schema_version != 1 {
        return Err(Violation::new(
            code,
            "schema_version",
            "unsupported schema_version in answer",
        ));
    }
    if resp.candidate_snapshot_hash != req.candidate_snapshot_hash {
        return Err(Violation::new(
            code,
            "candidate_snapshot_hash",
            "answer is for another snapshot",
        ));
    }
    if let Some(c) = resp.confidence_bps {
        if !(0..=10_000).contains(&c) {
            return Err(Violation::new(
                code,
                "confidence_bps",
                "must be 0–10000 or null",
            ));
        }
    }
    if let Some(r) = &resp.reason {
        if char_len(r) > SPEC_REASON_MAX_CHARS {
            return Err(Violation::new(code, "reason", "longer than 500 characters"));
        }
    }
    if resp.source == Some(SpecSource::Unknown) {
        return Err(Violation::new(
            code,
            "source",
            "must be rule, ai, reused or null",
        ));
    }
    match (resp.outcome, &resp.matched) {
        (SpecOutcome::Matched, Some(m)) => {
            if !req.candidates.iter().any(|c| c == m) {
                return Err(Violation::new(
                    code,
                    "match",
                    "is not a verbatim copy of a request candidate",
                ));
            }
        }
        (SpecOutcome::Matched, None) => {
            return Err(Violation::new(code, "match", "matched without a match"))
        }
        (SpecOutcome::Unknown, _) => {
            return Err(Violation::new(code, "outcome", "unknown outcome"))
        }
        (_, Some(_)) => {
            return Err(Violation::new(
                code,
                "match",
                "only matched may carry a match",
            ))
        }
        (_, None) => {}
    }
    Ok(())
}
