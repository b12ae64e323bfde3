//! Errors: [`ApiError`] is what a handler answers (always the §3 envelope), [`StoreError`]
//! is what the SQLite layer can fail with, [`OperatorError`] is what the typed in-process
//! operator access returns.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use cmautobuy_contract::validate::Violation;
use cmautobuy_contract::{AdminErrorCode, ErrorBody, ErrorEnvelope};
use serde_json::{Map, Value};

/// Failures of the storage layer.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Another process holds the write lock beyond `busy_timeout` (SQLITE_BUSY/LOCKED).
    /// Retryable: nothing was written.
    #[error("database is busy")]
    Busy,
    /// The database thread is gone (the server is shutting down).
    #[error("database worker stopped")]
    Closed,
    #[error("sqlite: {0}")]
    Sqlite(rusqlite::Error),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The database was written by a newer mock-admin (`user_version` beyond the known
    /// migrations): refused at start-up, never migrated down.
    #[error("database schema version {found} is newer than this mock-admin ({known})")]
    NewerSchema { found: i64, known: i64 },
    /// A business rule refused the request inside a transaction (which was rolled back).
    #[error("{0:?}")]
    Api(Box<ApiError>),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode;
        match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy) | Some(ErrorCode::DatabaseLocked) => StoreError::Busy,
            _ => StoreError::Sqlite(e),
        }
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Corrupt(e.to_string())
    }
}

impl From<ApiError> for StoreError {
    fn from(e: ApiError) -> Self {
        StoreError::Api(Box::new(e))
    }
}

/// A rejection in the §3 envelope. The request id is filled in by the envelope layer
/// (`http/envelope.rs`), which knows the request's `X-Request-Id`.
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: AdminErrorCode,
    pub message: String,
    pub details: Map<String, Value>,
    /// `Retry-After` header value (seconds or HTTP date), for injected faults.
    pub retry_after: Option<String>,
    /// Overrides the code's contract status (injected faults choose their own status).
    pub status: Option<u16>,
}

impl ApiError {
    pub fn new(code: AdminErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            details: Map::new(),
            retry_after: None,
            status: None,
        }
    }

    pub fn with_detail(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.details.insert(key.to_string(), value.into());
        self
    }

    pub fn status(&self) -> u16 {
        self.status.unwrap_or_else(|| self.code.http_status())
    }

    /// Maps a storage failure to the answer the contract wants: busy → 503 retryable,
    /// anything else → 500 retryable. `unavailable` picks the endpoint's own 5xx code
    /// (e.g. `CLIENT_REGISTER_FAILED`, `SPEC_RESOLUTION_UNAVAILABLE`).
    pub fn from_store(e: StoreError, unavailable: Option<AdminErrorCode>) -> Self {
        match e {
            StoreError::Api(api) => *api,
            StoreError::Busy => {
                let code = unavailable.unwrap_or(AdminErrorCode::Unavailable);
                let mut err = ApiError::new(
                    code,
                    "the database is locked by another process; nothing was stored, retry later",
                );
                err.status = Some(503);
                err.retry_after = Some("1".into());
                err
            }
            other => {
                tracing::error!(error = %other, "store failure");
                let code = unavailable.unwrap_or(AdminErrorCode::Internal);
                ApiError::new(code, "the mock Admin failed to process the request")
            }
        }
    }

    pub fn body(&self, request_id: Option<String>) -> ErrorEnvelope {
        ErrorEnvelope {
            error: ErrorBody {
                code: self.code.as_str().to_string(),
                message: self.message.clone(),
                // One rule for both sides of the wire (the contract's status table).
                retryable: self.code.is_retryable()
                    || cmautobuy_contract::codes::status_is_retryable(self.status()),
                request_id,
                details: self.details.clone(),
            },
        }
    }
}

impl From<Violation> for ApiError {
    fn from(v: Violation) -> Self {
        let mut e = ApiError::new(v.code, v.message);
        if !v.field.is_empty() {
            e.details.insert("field".into(), Value::String(v.field));
        }
        e
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        ApiError::from_store(e, None)
    }
}

/// Marks a response as an [`ApiError`] so the envelope layer can add the request id and
/// the journal can record the code.
#[derive(Clone, Debug)]
pub struct ErrorMark(pub ApiError);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = serde_json::to_vec(&self.body(None)).unwrap_or_default();
        let mut resp = (
            status,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        if let Some(ra) = &self.retry_after {
            if let Ok(v) = HeaderValue::from_str(ra) {
                resp.headers_mut()
                    .insert(axum::http::header::RETRY_AFTER, v);
            }
        }
        resp.extensions_mut().insert(ErrorMark(self));
        resp
    }
}

/// What the typed operator access ([`crate::Operator`]) fails with.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{code}: {message}")]
pub struct OperatorError {
    pub code: AdminErrorCode,
    pub status: u16,
    pub message: String,
}

impl From<ApiError> for OperatorError {
    fn from(e: ApiError) -> Self {
        OperatorError {
            status: e.status(),
            code: e.code,
            message: e.message,
        }
    }
}

impl From<StoreError> for OperatorError {
    fn from(e: StoreError) -> Self {
        ApiError::from(e).into()
    }
}
