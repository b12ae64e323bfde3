//! Operator `GET /api/v1/admin/products`: the `pdd_products` rows.

use crate::error::ApiError;
use crate::http::respond::{json_response, stored_json_opt};
use crate::openapi as doc;
use crate::state::{AppState, Inner};
use crate::store::{self, ProductRow};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

/// `{"products": [...]}`; shared with `Operator::products`.
pub(crate) async fn list(s: &Inner) -> Result<Value, ApiError> {
    let rows = s.db.call(store::list_products).await?;
    let products: Vec<Value> = rows.iter().map(product_view).collect::<Result<_, _>>()?;
    Ok(json!({ "products": products }))
}

fn product_view(p: &ProductRow) -> Result<Value, ApiError> {
    Ok(json!({
        "goods_id": p.goods_id, "url": p.url, "title": p.title, "shop_name": p.shop_name,
        "skus_json": stored_json_opt(p.skus_json.as_deref())?,
        "collect_status": p.collect_status, "collect_msg": p.collect_msg,
        "collected_at": p.collected_at, "created_at": p.created_at, "updated_at": p.updated_at,
    }))
}

/// The `pdd_products` rows (collect results).
#[utoipa::path(get, path = "/api/v1/admin/products", tag = "operator",
    responses((status = 200, description = "Products", body = doc::OperatorProductsDoc),
        (status = 400, description = "INVALID_BODY", body = doc::ErrorEnvelopeDoc),
        (status = 401, description = "UNAUTHORIZED (only with --require-token)", body = doc::ErrorEnvelopeDoc),
        (status = "default", description = "Any other rejection, §3 envelope", body = doc::ErrorEnvelopeDoc),
    ))]
pub(crate) async fn op_products(State(s): State<AppState>) -> Result<Response, ApiError> {
    Ok(json_response(StatusCode::OK, list(&s).await?))
}
