//! The timestamp every row is written with.

use cmautobuy_contract::time::format_utc_millis;

/// Now, as the RFC 3339 UTC string with milliseconds every table stores.
pub fn now() -> String {
    format_utc_millis(chrono::Utc::now())
}
