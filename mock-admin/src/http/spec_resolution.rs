//! §7.1 `POST /api/v1/client/tasks/{task_id}/spec-resolution`: request checks, store
//! transaction 1 (checks + the observation), the resolver outside any transaction,
//! store transaction 2 (the decision and its replayable answer).

use super::extract::{body_bytes, client_id, idempotency_key, parse_object, path_id};
use super::respond::answer;
use crate::error::ApiError;
use crate::openapi as doc;
use crate::resolver;
use crate::state::AppState;
use crate::store::{self, Observed, Reusable, StoredDecision, SubmitCtx};
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::Response;
use cmautobuy_contract::time::format_utc_millis;
use cmautobuy_contract::validate;
use cmautobuy_contract::{AdminErrorCode, SpecOutcome, SpecResolutionResponse, SpecSource};
use serde_json::Map;

/// §7.1: one-shot purchase spec resolution.
#[utoipa::path(
    post,
    path = "/api/v1/client/tasks/{task_id}/spec-resolution",
    tag = "client",
    params(
        ("task_id" = String, Path, description = "Opaque task id, sent back verbatim"),
        ("X-Client-Id" = String, Header, description = "Stable client id (1–128 visible ASCII)",
            min_length = 1, max_length = 128, pattern = "^[!-~]{1,128}$"),
        ("Idempotency-Key" = String, Header, description = "`spec-resolution-v1:` + sha256 of the framed identity (§7.1)",
            min_length = 1, max_length = 255, pattern = "^[!-~]{1,255}$"),
        ("X-Request-Id" = Option<String>, Header, description = "Per-attempt request id"),
    ),
    request_body(content = doc::SpecResolutionRequestDoc, content_type = "application/json"),
    responses(
        (status = 200, description = "The persisted decision (matched, uncertain, rejected or failed)", body = doc::SpecResolutionResponseDoc),
        (status = 400, description = "INVALID_BODY (bad JSON or over 64 KiB), INVALID_SPEC_RESOLUTION_SCHEMA, MISSING_CLIENT_ID, MISSING_IDEMPOTENCY_KEY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED", body = doc::ErrorEnvelopeDoc),
        (status = 403, description = "TASK_NOT_CLAIMED_BY_CLIENT", body = doc::ErrorEnvelopeDoc),
        (status = 404, description = "TASK_NOT_FOUND", body = doc::ErrorEnvelopeDoc),
        (status = 409, description = "TASK_VERSION_CONFLICT or IDEMPOTENCY_CONFLICT", body = doc::ErrorEnvelopeDoc),
        (status = 415, description = "UNSUPPORTED_MEDIA_TYPE", body = doc::ErrorEnvelopeDoc),
        (status = 422, description = "INVALID_SPEC_RESOLUTION_REQUEST, SPEC_RESOLUTION_HASH_MISMATCH, TASK_NOT_PURCHASE or PDD_GOODS_MISMATCH", body = doc::ErrorEnvelopeDoc),
        (status = 503, description = "SPEC_RESOLUTION_UNAVAILABLE (before the record is stored; retry the same request)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    )
)]
pub(crate) async fn spec_resolution(
    State(s): State<AppState>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let task_id = path_id(path)?;
    let client_id = client_id(&headers)?;
    let key = idempotency_key(&headers)?;
    let bytes = body_bytes(&headers, body)?;
    if bytes.len() > validate::SPEC_RESOLUTION_MAX_BODY_BYTES {
        return Err(ApiError::new(
            AdminErrorCode::InvalidBody,
            format!(
                "body is {} bytes; at most {} allowed",
                bytes.len(),
                validate::SPEC_RESOLUTION_MAX_BODY_BYTES
            ),
        ));
    }
    let v = parse_object(&bytes)?;
    let req = validate::spec_resolution_value(&v)?;
    validate::spec_resolution_hashes(&task_id, &key, &req)?;
    let request_hash = store::canonical_hash(&v);
    let unavailable = Some(AdminErrorCode::SpecResolutionUnavailable);

    let over = s.spec_override(&task_id, &req.pdd_goods_id);
    if over
        .as_ref()
        .is_some_and(|o| o.outcome == resolver::ForcedOutcome::Unavailable)
    {
        let mut e = ApiError::new(
            AdminErrorCode::SpecResolutionUnavailable,
            "spec resolution is unavailable (operator override); nothing was stored",
        );
        e.retry_after = Some("1".into());
        return Err(e);
    }

    // Transaction 1: checks + the observation.
    let ctx = SubmitCtx {
        task_id,
        client_id,
        key,
        request_hash,
        // §7.1 stores the request's known fields only, never the body as given.
        raw_body: String::new(),
    };
    let (ctx1, req1) = (ctx.clone(), req.clone());
    let observed =
        s.db.call(move |c| store::spec_observe(c, &ctx1, &req1))
            .await
            .map_err(|e| ApiError::from_store(e, unavailable.clone()))?;
    let (resolution_id, reusable) = match observed {
        Observed::Replay(a) => return Ok(answer(a)),
        Observed::Resolve {
            resolution_id,
            reusable,
        } => (resolution_id, reusable),
    };

    // The resolver: outside any transaction (a real Admin may call a model here).
    // Precedence: the operator's override, then an earlier audited match of the same
    // snapshot (`reused`), then the rules.
    let rules = || resolver::resolve(&req.target_size, &req.candidates);
    let decision = match (&over, reusable) {
        (Some(o), _) => resolver::forced(o, &req).unwrap_or_else(rules),
        (
            None,
            Some(Reusable {
                candidate_id,
                confidence_bps,
            }),
        ) => resolver::reused(&req, &candidate_id, confidence_bps).unwrap_or_else(rules),
        (None, None) => rules(),
    };
    let matched = decision
        .candidate
        .and_then(|i| req.candidates.get(i))
        .cloned();
    // The resolver never answers `Unknown`; were it to, the record says `rule`.
    let source = decision.source.map(|s| match s {
        SpecSource::Unknown => SpecSource::Rule,
        known => known,
    });
    let outcome = if decision.outcome == SpecOutcome::Matched && matched.is_none() {
        SpecOutcome::Failed
    } else {
        decision.outcome
    };
    let response = SpecResolutionResponse {
        schema_version: 1,
        resolution_id,
        outcome,
        source,
        candidate_snapshot_hash: req.candidate_snapshot_hash.clone(),
        matched,
        confidence_bps: decision.confidence_bps,
        reason: Some(decision.reason.chars().take(500).collect()),
        resolved_at: format_utc_millis(chrono::Utc::now()),
        extra: Map::new(),
    };
    let body = serde_json::to_vec(&response)
        .map_err(|e| ApiError::from_store(e.into(), unavailable.clone()))?;

    // Transaction 2: the decision + its replayable answer + the idempotency row.
    let a =
        s.db.call(move |c| {
            let r = &response;
            let d = StoredDecision {
                resolution_id: &r.resolution_id,
                outcome: r.outcome.as_str(),
                source: r.source.map(source_name),
                match_candidate_id: r.matched.as_ref().map(|m| m.candidate_id.as_str()),
                confidence_bps: r.confidence_bps,
                reason: r.reason.as_deref().unwrap_or_default(),
                resolved_at: &r.resolved_at,
                body: &body,
            };
            store::spec_decide(c, &ctx, &d)
        })
        .await
        .map_err(|e| ApiError::from_store(e, unavailable))?;
    Ok(answer(a))
}

/// A decision's source as the `spec_resolutions.source` column stores it.
fn source_name(s: SpecSource) -> &'static str {
    match s {
        SpecSource::Rule | SpecSource::Unknown => "rule",
        SpecSource::Ai => "ai",
        SpecSource::Reused => "reused",
    }
}
