//! Operator `GET /api/v1/admin/clients`: known clients with derived `online`.

use crate::error::ApiError;
use crate::http::respond::{json_response, stored_json_opt};
use crate::openapi as doc;
use crate::state::{AppState, Inner};
use crate::store::{self, ClientRow};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

/// `{"clients": [...]}`; shared with `Operator::clients`.
pub(crate) async fn list(s: &Inner) -> Result<Value, ApiError> {
    let rows = s.db.call(store::list_clients).await?;
    let now = chrono::Utc::now();
    let clients: Vec<Value> = rows
        .iter()
        .map(|c| client_view(c, now))
        .collect::<Result<_, _>>()?;
    Ok(json!({ "clients": clients }))
}

fn client_view(c: &ClientRow, now: chrono::DateTime<chrono::Utc>) -> Result<Value, ApiError> {
    Ok(json!({
        "client_id": c.client_id,
        "name": c.name,
        "online": c.online_at(now),
        "last_seen_at": c.last_seen_at,
        "capabilities": stored_json_opt(c.capabilities.as_deref())?,
        "supported_types": stored_json_opt(c.supported_types.as_deref())?,
        "device": {
            "address": c.device.address,
            "platform": c.device.platform,
            "pdd_package": c.device.pdd_package,
        },
        "created_at": c.created_at,
        "updated_at": c.updated_at,
    }))
}

/// Known clients; `online` is derived from `last_seen_at` (10 minutes).
#[utoipa::path(get, path = "/api/v1/admin/clients", tag = "operator",
    responses((status = 200, description = "Clients", body = doc::OperatorClientsDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
pub(crate) async fn op_clients(State(s): State<AppState>) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, list(&s).await?))
}
