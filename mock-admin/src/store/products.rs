//! `pdd_products`: one row per goods (data model §4) — pending once a collect task names
//! it, then what collect results and failures say about it.

use crate::error::StoreError;
use cmautobuy_contract::PddData;
use rusqlite::{params, Connection, Transaction};
use serde_json::Value;

/// One `pdd_products` row. `skus_json` is the last collect result's `pdd_data` object
/// **as submitted** (data model §4.2 "原样提交，Admin 不做转换"): every field the client
/// sent — unknown per-SKU and per-dimension fields included — in the client's key order,
/// and no field it did not send.
#[derive(Debug, Clone)]
pub struct ProductRow {
    pub goods_id: String,
    pub url: String,
    pub title: Option<String>,
    pub shop_name: Option<String>,
    pub skus_json: Option<String>,
    pub collect_status: String,
    pub collect_msg: Option<String>,
    pub collected_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// The operator asked to collect this goods: it now has a product row (data model §4: a
/// row exists once a link is known), pending until a result arrives.
pub(super) fn insert_pending(
    tx: &Transaction<'_>,
    goods_id: &str,
    url: &str,
    ts: &str,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO pdd_products (goods_id, url, collect_status, created_at, updated_at)
         VALUES (?1, ?2, 'pending', ?3, ?3)
         ON CONFLICT(goods_id) DO NOTHING",
        params![goods_id, url, ts],
    )?;
    Ok(())
}

/// Stores a collect result's data (data model §4.3): zero SKUs is useless to the
/// business, so the product becomes `failed`, not `collected`; an empty or missing
/// `shop_name` (or a missing title) never overwrites a saved one. `data` is the validated
/// typed form (what the rules read); `submitted` is the same `pdd_data` as the client
/// wrote it, stored as `skus_json` (data model §4.2: the Admin does not transform it).
pub(super) fn save_collected(
    tx: &Transaction<'_>,
    url: &str,
    data: &PddData,
    submitted: &Value,
    ts: &str,
) -> Result<(), StoreError> {
    let skus_json = serde_json::to_string(submitted)?;
    let (status, msg) = if data.skus.is_empty() {
        ("failed", Some("collect result has no skus"))
    } else {
        ("collected", None)
    };
    let shop = data
        .shop_name
        .as_deref()
        .map(str::trim)
        .filter(|s| !s.is_empty());
    tx.execute(
        "INSERT INTO pdd_products (goods_id, url, title, shop_name, skus_json, collect_status,
            collect_msg, collected_at, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8, ?8)
         ON CONFLICT(goods_id) DO UPDATE SET
            title = COALESCE(excluded.title, title),
            shop_name = COALESCE(excluded.shop_name, shop_name),
            skus_json = excluded.skus_json,
            collect_status = excluded.collect_status,
            collect_msg = excluded.collect_msg,
            collected_at = excluded.collected_at,
            deleted_at = NULL,
            updated_at = excluded.updated_at",
        params![
            data.goods_id,
            url,
            data.title,
            shop,
            skus_json,
            status,
            msg,
            ts
        ],
    )?;
    Ok(())
}

/// A collect task failed for good: its product becomes `failed` unless already collected.
pub(super) fn mark_collect_failed(
    tx: &Transaction<'_>,
    goods_id: &str,
    msg: &str,
    ts: &str,
) -> Result<(), StoreError> {
    tx.execute(
        "UPDATE pdd_products SET collect_status = 'failed', collect_msg = ?2,
            updated_at = ?3 WHERE goods_id = ?1 AND collect_status <> 'collected'",
        params![goods_id, msg, ts],
    )?;
    Ok(())
}

/// Every product, in insertion order.
pub fn list_products(conn: &mut Connection) -> Result<Vec<ProductRow>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT goods_id, url, title, shop_name, skus_json, collect_status, collect_msg,
            collected_at, created_at, updated_at FROM pdd_products ORDER BY id",
    )?;
    let rows = stmt
        .query_map([], |r| {
            Ok(ProductRow {
                goods_id: r.get(0)?,
                url: r.get(1)?,
                title: r.get(2)?,
                shop_name: r.get(3)?,
                skus_json: r.get(4)?,
                collect_status: r.get(5)?,
                collect_msg: r.get(6)?,
                collected_at: r.get(7)?,
                created_at: r.get(8)?,
                updated_at: r.get(9)?,
            })
        })?
        .collect::<Result<_, _>>()?;
    Ok(rows)
}
