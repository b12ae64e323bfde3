//! Reading a request: headers (`X-Client-Id`, `Idempotency-Key`), the path's task id,
//! and the body (content type, size, one JSON object with integral numbers as integers).

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection};
use axum::extract::Path;
use axum::http::{header, HeaderMap, StatusCode};
use cmautobuy_contract::AdminErrorCode;
use cmautobuy_contract::{hash, validate};
use serde_json::Value;

/// Largest request body read at all (a collect result with many SKUs fits easily).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// 1–`max` visible ASCII characters (the syntax of client ids).
pub(crate) fn visible_ascii(s: &str, max: usize) -> bool {
    !s.is_empty() && s.len() <= max && s.bytes().all(|b| (0x21..=0x7e).contains(&b))
}

/// `X-Client-Id`: 1–128 visible ASCII characters (see `openapi::CLIENT_ID_PATTERN`).
pub(crate) fn client_id(headers: &HeaderMap) -> Result<String, ApiError> {
    match headers.get("x-client-id").map(|v| v.to_str()) {
        None => Err(ApiError::new(
            AdminErrorCode::MissingClientId,
            "X-Client-Id header is required",
        )),
        Some(Ok(v)) if visible_ascii(v, 128) => Ok(v.to_string()),
        Some(_) => Err(ApiError::new(
            AdminErrorCode::MissingClientId,
            "X-Client-Id must be 1–128 visible ASCII characters",
        )),
    }
}

/// `Idempotency-Key`: what the contract allows (`cmautobuy_contract::hash`, the key rule):
/// 1–255 bytes of a valid header value, UTF-8 text included, as an Admin on Go's net/http
/// takes it. The client's own keys are visible ASCII (non-ASCII task-id bytes
/// percent-encoded), the narrowest case.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<String, ApiError> {
    let Some(v) = headers.get("idempotency-key") else {
        return Err(ApiError::new(
            AdminErrorCode::MissingIdempotencyKey,
            "Idempotency-Key header is required",
        ));
    };
    match std::str::from_utf8(v.as_bytes()) {
        Ok(k) if hash::is_valid_idempotency_key(k) => Ok(k.to_string()),
        _ => Err(ApiError::new(
            AdminErrorCode::InvalidIdempotencyKey,
            format!(
                "Idempotency-Key must be a UTF-8 header value of 1–{} bytes",
                hash::IDEMPOTENCY_KEY_MAX_BYTES
            ),
        )),
    }
}

/// The body as bytes, after checking the content type (415) and the read (400).
pub(crate) fn body_bytes(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Bytes, ApiError> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if mime != "application/json" {
        return Err(ApiError::new(
            AdminErrorCode::UnsupportedMediaType,
            "Content-Type must be application/json",
        ));
    }
    body.map_err(|e| {
        let too_large = e.status() == StatusCode::PAYLOAD_TOO_LARGE;
        ApiError::new(
            AdminErrorCode::InvalidBody,
            if too_large {
                format!("request body larger than {MAX_BODY_BYTES} bytes")
            } else {
                "request body could not be read".to_string()
            },
        )
    })
}

/// [`body_bytes`], then [`parse_object`].
pub(crate) fn json_body(
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Value, ApiError> {
    let bytes = body_bytes(headers, body)?;
    parse_object(&bytes)
}

/// One JSON object, with integral numbers written as floats (`3995.0`, `1e3`) read as the
/// integers they are: JSON has one number type and JSON Schema calls `1.0` an integer, so
/// the representation must not decide validity. Non-integral values stay floats and are
/// refused wherever an integer is required.
///
/// **Except money.** A `*_cent` field is left exactly as written, so the contract's
/// validators refuse `4.0` there like `12.56` (data model §1 "禁止 float";
/// `cmautobuy_contract::validate::money_fields_are_integers`, 422 with the body's
/// validation code and `details.field`).
pub(crate) fn parse_object(bytes: &[u8]) -> Result<Value, ApiError> {
    let mut v = validate::json_object(bytes)?;
    integral_numbers(&mut v);
    Ok(v)
}

fn integral_numbers(v: &mut Value) {
    match v {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64() {
                // Strictly inside (-2^63, 2^63): an integer literal just below i64::MIN
                // (e.g. -9223372036854775809) is parsed as a float that rounds to exactly
                // -2^63 and must stay out of range, not snap to i64::MIN. (i64::MIN
                // written as an integer is an i64 already and never reaches this.)
                const TWO_63: f64 = 9_223_372_036_854_775_808.0;
                if f.fract() == 0.0 && f > -TWO_63 && f < TWO_63 {
                    *v = Value::from(f as i64);
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(integral_numbers),
        Value::Object(m) => m
            .iter_mut()
            .filter(|(k, _)| !k.ends_with("_cent"))
            .for_each(|(_, v)| integral_numbers(v)),
        _ => {}
    }
}

/// The `{task_id}` path segment (400 `INVALID_BODY` when it is not UTF-8).
pub(crate) fn path_id(p: Result<Path<String>, PathRejection>) -> Result<String, ApiError> {
    p.map(|Path(id)| id).map_err(|_| {
        ApiError::new(
            AdminErrorCode::InvalidBody,
            "task id in the path is not valid UTF-8",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_floats_become_integers_and_nothing_else_changes() {
        let mut v: Value = serde_json::from_str(
            r#"{"a": 3995.0, "b": [1e3, 12.5], "c": -9223372036854775809,
                "d": 3780336783387706.0, "e": "7.0", "f": 18446744073709551615}"#,
        )
        .unwrap();
        integral_numbers(&mut v);
        assert_eq!(v["a"].as_i64(), Some(3995));
        assert_eq!(v["b"][0].as_i64(), Some(1000));
        assert!(v["b"][1].is_f64());
        assert!(v["c"].is_f64(), "out of range stays out of range");
        assert_eq!(v["d"].as_i64(), Some(3_780_336_783_387_706));
        assert_eq!(v["e"], "7.0");
        assert!(v["f"].is_u64());
    }

    #[test]
    fn money_fields_are_left_as_written_for_the_validators_to_refuse() {
        let mut v: Value = serde_json::from_str(
            r#"{"quantity": 2.0, "max_price_cent": 4200.0,
                "skus": [{"price_cent": 4.0, "list_price_cent": 1e3, "n": 3.0}]}"#,
        )
        .unwrap();
        integral_numbers(&mut v);
        assert_eq!(v["quantity"].as_i64(), Some(2));
        assert!(v["max_price_cent"].is_f64());
        assert!(v["skus"][0]["price_cent"].is_f64());
        assert!(v["skus"][0]["list_price_cent"].is_f64());
        assert_eq!(v["skus"][0]["n"].as_i64(), Some(3));
    }
}
