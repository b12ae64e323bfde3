//! What the store's tests share: a fixed clock and a claimable task.

use chrono::{DateTime, TimeZone, Utc};
use cmautobuy_contract::Task;
use serde_json::json;

pub(super) fn t0() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap()
}

/// A valid collect task with the remote id `id`.
pub(super) fn task(id: &str) -> Task {
    serde_json::from_value(json!({
        "id": id, "type": "collect", "version": 2,
        "payload": {"goods_id": "1", "goods_url": "u"}
    }))
    .unwrap()
}
