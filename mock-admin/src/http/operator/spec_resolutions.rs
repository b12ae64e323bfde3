//! Operator `GET /api/v1/admin/spec-resolutions`: the stored §7.1 records.

use crate::error::ApiError;
use crate::http::respond::json_response;
use crate::openapi as doc;
use crate::state::{AppState, Inner};
use crate::store::{self, SpecResolutionRow};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

/// `{"spec_resolutions": [...]}`; shared with `Operator::spec_resolutions`.
pub(crate) async fn list(s: &Inner) -> Result<Value, ApiError> {
    let rows = s.db.call(store::list_spec_resolutions).await?;
    let records: Vec<Value> = rows.iter().map(record_view).collect();
    Ok(json!({ "spec_resolutions": records }))
}

fn record_view(r: &SpecResolutionRow) -> Value {
    json!({
        "resolution_id": r.resolution_id,
        "task_id": r.task_id,
        "attempt_id": r.attempt_id,
        "candidate_snapshot_hash": r.candidate_snapshot_hash,
        "client_id": r.client_id,
        "task_version": r.task_version,
        "pdd_goods_id": r.pdd_goods_id,
        "selected_color": r.selected_color,
        "target_size": r.target_size,
        "candidates": serde_json::from_str::<Value>(&r.candidates).unwrap_or(Value::Null),
        "observed_at": r.observed_at,
        "received_at": r.received_at,
        "outcome": r.outcome,
        "source": r.source,
        "match_candidate_id": r.match_candidate_id,
        "confidence_bps": r.confidence_bps,
        "reason": r.reason,
        "resolved_at": r.resolved_at,
    })
}

/// The stored §7.1 records (observation and decision).
#[utoipa::path(get, path = "/api/v1/admin/spec-resolutions", tag = "operator",
    responses((status = 200, description = "Spec resolutions", body = doc::OperatorSpecResolutionsDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
pub(crate) async fn op_spec_resolutions(State(s): State<AppState>) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, list(&s).await?))
}
