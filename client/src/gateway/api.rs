//! The gateway core shared by both transports: [`Gateway`] over a [`Transport`],
//! [`GatewayError`] with `is_retryable()`, headers, deadlines, the body cap and decoding.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use cmautobuy_contract::{
    AcceptedResponse, AdminErrorCode, ClaimResponse, ClientProfile, ErrorEnvelope,
    RegistrationResponse, SpecResolutionResponse, Task, CLIENT_API_BASE,
};
use serde::de::DeserializeOwned;
use std::fmt;
use std::future::Future;
use std::time::Duration;

use crate::secret::Secret;

/// Answers larger than this are refused unread (a broken proxy must not exhaust memory).
pub const DEFAULT_MAX_BODY_BYTES: usize = 1024 * 1024;

/// Which operation a request belongs to (for errors and logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Register,
    Claim,
    Result,
    Failure,
    SpecResolution,
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Op::Register => "registration",
            Op::Claim => "claim",
            Op::Result => "result submission",
            Op::Failure => "failure submission",
            Op::SpecResolution => "spec resolution",
        })
    }
}

/// `Retry-After` as sent: a number of seconds or an HTTP date.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryAfter {
    Delay(Duration),
    At(DateTime<Utc>),
}

impl RetryAfter {
    /// Parses `"120"` or `"Wed, 21 Oct 2015 07:28:00 GMT"`; anything else is `None`.
    pub fn parse(value: &str) -> Option<RetryAfter> {
        let v = value.trim();
        if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            return v
                .parse::<u64>()
                .ok()
                .map(|s| RetryAfter::Delay(Duration::from_secs(s)));
        }
        DateTime::parse_from_rfc2822(v)
            .ok()
            .map(|t| RetryAfter::At(t.with_timezone(&Utc)))
    }

    /// How long to wait from `now` (a date in the past means "now").
    pub fn delay_from(&self, now: DateTime<Utc>) -> Duration {
        match self {
            RetryAfter::Delay(d) => *d,
            RetryAfter::At(t) => (*t - now).to_std().unwrap_or(Duration::ZERO),
        }
    }
}

/// Everything that can go wrong talking to the Admin.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("{op}: no answer from the Admin within {timeout:?}")]
    Timeout { op: Op, timeout: Duration },
    #[error("{op}: connection to the Admin failed: {message}")]
    Transport { op: Op, message: String },
    #[error("{op}: the Admin answered HTTP {status}{}", describe_rejection(.code, .message))]
    Rejected {
        op: Op,
        status: u16,
        code: Option<AdminErrorCode>,
        message: Option<String>,
        request_id: Option<String>,
        retry_after: Option<RetryAfter>,
    },
    #[error("{op}: unreadable answer from the Admin (HTTP {status}): {message}")]
    Malformed {
        op: Op,
        status: u16,
        message: String,
    },
    /// The answer began — status line and headers arrived — and was then cut (the
    /// connection closed or the deadline passed before the body ended). The Admin has
    /// handled the request: for a claim answered `200` it may have assigned a task.
    #[error("{op}: the Admin's answer (HTTP {status}) was cut off: {message}")]
    Cut {
        op: Op,
        status: u16,
        message: String,
        /// What arrived of the body (printable, at most 200 characters, scrubbed).
        partial: String,
    },
    #[error("{op}: the Admin's answer is larger than {limit} bytes")]
    TooLarge { op: Op, status: u16, limit: usize },
    #[error("{op}: the Admin answered accepted=false")]
    NotAccepted { op: Op },
    #[error("gateway configuration: {0}")]
    Config(String),
}

fn describe_rejection(code: &Option<AdminErrorCode>, message: &Option<String>) -> String {
    match (code, message) {
        (Some(c), Some(m)) => format!(" {c}: {m}"),
        (Some(c), None) => format!(" {c}"),
        (None, Some(m)) => format!(": {m}"),
        (None, None) => String::new(),
    }
}

impl GatewayError {
    /// Whether resending the same request may succeed. Network trouble, timeouts and
    /// unreadable answers are retryable (every request is safe to repeat: keyed or
    /// idempotent), and so is a 2xx answer cut off ([`GatewayError::Cut`]; a cut error
    /// answer follows its status); an HTTP error status follows the one table of the contract crate,
    /// `cmautobuy_contract::codes::STATUS_RULES` (retried: 408, 425, 429, 500, 502, 503,
    /// 504; everything else parked — the other 4xx, the other 5xx); oversized answers,
    /// `accepted: false` and configuration errors are not retryable (decisions §8). The
    /// retry module's policy ([`crate::retry`]) is built on this.
    pub fn is_retryable(&self) -> bool {
        match self {
            GatewayError::Timeout { .. }
            | GatewayError::Transport { .. }
            | GatewayError::Malformed { .. } => true,
            GatewayError::Rejected { status, .. } => {
                cmautobuy_contract::codes::status_is_retryable(*status)
            }
            GatewayError::Cut { status, .. } => {
                (200..300).contains(status)
                    || cmautobuy_contract::codes::status_is_retryable(*status)
            }
            GatewayError::TooLarge { .. }
            | GatewayError::NotAccepted { .. }
            | GatewayError::Config(_) => false,
        }
    }

    /// The Admin's stable error code, when it sent the §3 envelope.
    pub fn code(&self) -> Option<&AdminErrorCode> {
        match self {
            GatewayError::Rejected { code, .. } => code.as_ref(),
            _ => None,
        }
    }

    /// The HTTP status, when there was an answer.
    pub fn status(&self) -> Option<u16> {
        match self {
            GatewayError::Rejected { status, .. }
            | GatewayError::Malformed { status, .. }
            | GatewayError::Cut { status, .. }
            | GatewayError::TooLarge { status, .. } => Some(*status),
            _ => None,
        }
    }

    pub fn retry_after(&self) -> Option<RetryAfter> {
        match self {
            GatewayError::Rejected { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    pub fn op(&self) -> Option<Op> {
        match self {
            GatewayError::Timeout { op, .. }
            | GatewayError::Transport { op, .. }
            | GatewayError::Rejected { op, .. }
            | GatewayError::Malformed { op, .. }
            | GatewayError::Cut { op, .. }
            | GatewayError::TooLarge { op, .. }
            | GatewayError::NotAccepted { op } => Some(*op),
            GatewayError::Config(_) => None,
        }
    }

    /// Whether the Admin answered `200` and the client could not take the answer — it
    /// was unreadable, cut off after its headers, or over the size cap. For a claim this
    /// is the §5.2 gap: the Admin has assigned a task this client never saved. (A claim
    /// that got no answer byte at all — refused, reset, no headers by the deadline — is
    /// not this: it cannot be told from a request that never arrived, the Admin's
    /// reassignment after a claim timeout covers it, and it stays an ordinary
    /// retryable network error.)
    pub fn unreadable_success(&self) -> bool {
        matches!(
            self,
            GatewayError::Malformed { status: 200, .. }
                | GatewayError::Cut { status: 200, .. }
                | GatewayError::TooLarge { status: 200, .. }
        )
    }

    /// The same error with every registered secret ([`crate::secret::scrub`]) out of its
    /// texts: transport messages come from outside too.
    pub fn scrubbed(self) -> GatewayError {
        let s = |t: String| crate::secret::scrub(&t).into_owned();
        match self {
            GatewayError::Transport { op, message } => GatewayError::Transport {
                op,
                message: s(message),
            },
            GatewayError::Rejected {
                op,
                status,
                code,
                message,
                request_id,
                retry_after,
            } => GatewayError::Rejected {
                op,
                status,
                code,
                message: message.map(s),
                request_id: request_id.map(s),
                retry_after,
            },
            GatewayError::Malformed {
                op,
                status,
                message,
            } => GatewayError::Malformed {
                op,
                status,
                message: s(message),
            },
            GatewayError::Cut {
                op,
                status,
                message,
                partial,
            } => GatewayError::Cut {
                op,
                status,
                message: s(message),
                partial: s(partial),
            },
            GatewayError::Config(m) => GatewayError::Config(s(m)),
            e => e,
        }
    }
}

/// What arrived of a cut answer's body, for the operator: printable, at most 200
/// characters, scrubbed (a partial claim answer often names the task).
pub fn partial_excerpt(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    let s: String = s.chars().filter(|c| !c.is_control()).take(200).collect();
    crate::secret::scrub(&s).into_owned()
}

/// The Admin's acknowledgement of a result or failure (§6, §7).
#[derive(Clone, Debug, PartialEq)]
pub struct Accepted {
    pub result_id: Option<String>,
    pub accepted_at: String,
    pub task_status: Option<String>,
    /// A §7 failure answer without `result_id`, taken under the compatibility rule.
    pub compat_without_result_id: bool,
    /// The answer body as received.
    pub raw: Bytes,
}

/// The five operations of contract §9.
pub trait AdminGateway: Send + Sync + 'static {
    /// `PUT /registration` (§4.1).
    fn register_client(
        &self,
        profile: &ClientProfile,
    ) -> impl Future<Output = Result<RegistrationResponse, GatewayError>> + Send;

    /// `POST /tasks/claim` (§5). `Ok(None)` is a 204: no work, not an error.
    fn claim_next(
        &self,
        profile: &ClientProfile,
    ) -> impl Future<Output = Result<Option<Task>, GatewayError>> + Send;

    /// `POST /tasks/{id}/result` (§6) with the exact stored body bytes.
    fn submit_result(
        &self,
        task_id: &str,
        idempotency_key: &str,
        body: &[u8],
    ) -> impl Future<Output = Result<Accepted, GatewayError>> + Send;

    /// `POST /tasks/{id}/failure` (§7) with the exact stored body bytes.
    fn submit_failure(
        &self,
        task_id: &str,
        idempotency_key: &str,
        body: &[u8],
    ) -> impl Future<Output = Result<Accepted, GatewayError>> + Send;

    /// `POST /tasks/{id}/spec-resolution` (§7.1) with the exact stored body bytes.
    fn resolve_purchase_spec(
        &self,
        task_id: &str,
        idempotency_key: &str,
        body: &[u8],
    ) -> impl Future<Output = Result<SpecResolutionResponse, GatewayError>> + Send;

    /// The Admin's clock minus the host's, ms, from the last answer's `Date` header
    ///; `None` before one was seen.
    fn admin_clock_offset_ms(&self) -> Option<i64> {
        None
    }
}

/// A request as it goes on the wire, minus the per-attempt parts (`Authorization`,
/// `X-Request-Id`) the transport adds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreparedRequest {
    pub op: Op,
    pub method: &'static str,
    /// Path below the Admin base URL, e.g. `/api/v1/client/tasks/cg1/result`.
    pub path: String,
    /// `X-Client-Id`, `Content-Type` and, for submissions, `Idempotency-Key`.
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

/// Percent-encodes a task id for one path segment. The id is opaque (§5): anything
/// outside the unreserved set is escaped so it arrives verbatim.
pub fn encode_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl PreparedRequest {
    fn new(op: Op, method: &'static str, path: String, client_id: &str, body: Bytes) -> Self {
        PreparedRequest {
            op,
            method,
            path,
            headers: vec![
                (
                    cmautobuy_contract::headers::CLIENT_ID.to_string(),
                    client_id.to_string(),
                ),
                ("Content-Type".to_string(), "application/json".to_string()),
            ],
            body,
        }
    }

    fn with_key(mut self, key: &str) -> Self {
        self.headers.push((
            cmautobuy_contract::headers::IDEMPOTENCY_KEY.to_string(),
            key.to_string(),
        ));
        self
    }

    pub fn registration(client_id: &str, body: Bytes) -> Self {
        Self::new(
            Op::Register,
            "PUT",
            format!("{CLIENT_API_BASE}/registration"),
            client_id,
            body,
        )
    }

    pub fn claim(client_id: &str, body: Bytes) -> Self {
        Self::new(
            Op::Claim,
            "POST",
            format!("{CLIENT_API_BASE}/tasks/claim"),
            client_id,
            body,
        )
    }

    pub fn result(client_id: &str, task_id: &str, key: &str, body: Bytes) -> Self {
        Self::new(
            Op::Result,
            "POST",
            format!("{CLIENT_API_BASE}/tasks/{}/result", encode_segment(task_id)),
            client_id,
            body,
        )
        .with_key(key)
    }

    pub fn failure(client_id: &str, task_id: &str, key: &str, body: Bytes) -> Self {
        Self::new(
            Op::Failure,
            "POST",
            format!(
                "{CLIENT_API_BASE}/tasks/{}/failure",
                encode_segment(task_id)
            ),
            client_id,
            body,
        )
        .with_key(key)
    }

    pub fn spec_resolution(client_id: &str, task_id: &str, key: &str, body: Bytes) -> Self {
        Self::new(
            Op::SpecResolution,
            "POST",
            format!(
                "{CLIENT_API_BASE}/tasks/{}/spec-resolution",
                encode_segment(task_id)
            ),
            client_id,
            body,
        )
        .with_key(key)
    }
}

/// An answer as the transport read it (body already capped).
#[derive(Clone, Debug)]
pub struct RawResponse {
    pub status: u16,
    pub retry_after: Option<String>,
    /// The answer's `Date` header (the Admin's clock, for the skew check).
    pub date: Option<String>,
    pub body: Bytes,
}

/// How a request reaches an Admin: over the network or in-process.
pub trait Transport: Send + Sync + 'static {
    /// Sends one attempt. Implementations add `Authorization` and a fresh `X-Request-Id`,
    /// enforce the deadline and cap the body read.
    fn send(
        &self,
        req: &PreparedRequest,
    ) -> impl Future<Output = Result<RawResponse, GatewayError>> + Send;
}

/// Settings shared by both transports.
#[derive(Clone, Debug)]
pub struct GatewaySettings {
    pub client_id: String,
    pub token: Option<Secret>,
    pub connect_timeout: Duration,
    /// Deadline for a whole attempt: connect, send, read the answer.
    pub request_timeout: Duration,
    pub max_body_bytes: usize,
}

impl GatewaySettings {
    pub fn new(client_id: impl Into<String>, token: Option<Secret>) -> Self {
        GatewaySettings {
            client_id: client_id.into(),
            token,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
        }
    }

    /// `Bearer <token>`, if a token is set.
    pub(crate) fn bearer(&self) -> Option<String> {
        self.token
            .as_ref()
            .filter(|t| !t.is_empty())
            .map(|t| format!("Bearer {}", t.expose()))
    }
}

/// The gateway: request building and answer decoding over any [`Transport`].
pub struct Gateway<T> {
    transport: T,
    client_id: String,
    /// The Admin's clock minus the host's, ms, from the last answer with a `Date` header.
    admin_offset_ms: std::sync::Mutex<Option<i64>>,
}

impl<T> fmt::Debug for Gateway<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Gateway")
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

impl<T: Transport> Gateway<T> {
    pub fn with_transport(transport: T, client_id: impl Into<String>) -> Self {
        Gateway {
            transport,
            client_id: client_id.into(),
            admin_offset_ms: std::sync::Mutex::new(None),
        }
    }

    /// Sends one attempt and notes the Admin's clock from the answer's `Date` header
    /// (whole seconds: the middle of its second is compared with the host's clock at
    /// receipt).
    ///
    /// The one redaction point for what the Admin sends: every registered secret
    /// ([`crate::secret::scrub`]) is taken out of an error answer's body before anything
    /// decodes it, and out of every error text — an Admin or proxy that echoes the
    /// request's headers hands the token back, and §3 messages, `details`, unreadable-body
    /// excerpts and the registration outcome are all stored, logged, served or posted
    /// from here. A success answer is business data (a task's id and payload, an
    /// acknowledgement's ids) and is decoded as it came: rewriting it would change what
    /// the client executes and reports; only the copy of an acknowledgement kept in the
    /// outbox is scrubbed ([`decode_accepted`]), and the log and console writers scrub
    /// whatever they print.
    async fn send(&self, req: &PreparedRequest) -> Result<RawResponse, GatewayError> {
        let mut raw = self
            .transport
            .send(req)
            .await
            .map_err(GatewayError::scrubbed)?;
        if let std::borrow::Cow::Owned(clean) = crate::secret::scrub_bytes(&raw.body) {
            if (200..300).contains(&raw.status) {
                tracing::warn!(op = %req.op, status = raw.status, "the Admin's success answer holds a secret of this client (an echo of the request?); it is read as it came, and scrubbed wherever it is shown");
            } else {
                tracing::warn!(op = %req.op, status = raw.status, "the Admin's error answer held a secret of this client (an echo of the request?); it was removed before the answer was read");
                raw.body = Bytes::from(clean);
            }
        }
        let received = chrono::Utc::now();
        if let Some(date) = raw
            .date
            .as_deref()
            .and_then(|d| chrono::DateTime::parse_from_rfc2822(d).ok())
        {
            let offset = date.timestamp_millis() + 500 - received.timestamp_millis();
            *self
                .admin_offset_ms
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = Some(offset);
        }
        Ok(raw)
    }

    pub fn client_id(&self) -> &str {
        &self.client_id
    }

    async fn submit(&self, req: PreparedRequest) -> Result<Accepted, GatewayError> {
        let op = req.op;
        let raw = self.send(&req).await?;
        decode_accepted(op, raw)
    }
}

fn profile_body(profile: &ClientProfile) -> Result<Bytes, GatewayError> {
    serde_json::to_vec(profile)
        .map(Bytes::from)
        .map_err(|e| GatewayError::Config(format!("cannot serialise the client profile: {e}")))
}

impl<T: Transport> AdminGateway for Gateway<T> {
    fn admin_clock_offset_ms(&self) -> Option<i64> {
        *self
            .admin_offset_ms
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    async fn register_client(
        &self,
        profile: &ClientProfile,
    ) -> Result<RegistrationResponse, GatewayError> {
        let req = PreparedRequest::registration(&self.client_id, profile_body(profile)?);
        let raw = self.send(&req).await?;
        let (answer, unexpected) = decode_registration(&raw)?;
        if let Some(status) = unexpected {
            tracing::warn!(
                status,
                "registration answered HTTP {status}, not the 200 of contract §4.1; \
                 its body is the §4.1 answer, so it is taken (accepted with a warning)"
            );
        }
        Ok(answer)
    }

    async fn claim_next(&self, profile: &ClientProfile) -> Result<Option<Task>, GatewayError> {
        let req = PreparedRequest::claim(&self.client_id, profile_body(profile)?);
        let raw = self.send(&req).await?;
        // 204 means "no work"; a body on a 204, if any, is ignored.
        if raw.status == 204 {
            return Ok(None);
        }
        expect_ok(Op::Claim, &raw, &[200])?;
        let claim: ClaimResponse = parse_json(Op::Claim, &raw)?;
        Ok(Some(claim.task))
    }

    async fn submit_result(
        &self,
        task_id: &str,
        idempotency_key: &str,
        body: &[u8],
    ) -> Result<Accepted, GatewayError> {
        self.submit(PreparedRequest::result(
            &self.client_id,
            task_id,
            idempotency_key,
            Bytes::copy_from_slice(body),
        ))
        .await
    }

    async fn submit_failure(
        &self,
        task_id: &str,
        idempotency_key: &str,
        body: &[u8],
    ) -> Result<Accepted, GatewayError> {
        self.submit(PreparedRequest::failure(
            &self.client_id,
            task_id,
            idempotency_key,
            Bytes::copy_from_slice(body),
        ))
        .await
    }

    async fn resolve_purchase_spec(
        &self,
        task_id: &str,
        idempotency_key: &str,
        body: &[u8],
    ) -> Result<SpecResolutionResponse, GatewayError> {
        let req = PreparedRequest::spec_resolution(
            &self.client_id,
            task_id,
            idempotency_key,
            Bytes::copy_from_slice(body),
        );
        let raw = self.send(&req).await?;
        expect_ok(Op::SpecResolution, &raw, &[200])?;
        parse_json(Op::SpecResolution, &raw)
    }
}

/// A short, printable excerpt of an unreadable body for error messages.
fn excerpt(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(&body[..body.len().min(120)]);
    s.chars().filter(|c| !c.is_control()).collect()
}

/// Maps a non-success status to [`GatewayError::Rejected`] (with the §3 envelope when
/// there is one) and an unexpected 2xx to [`GatewayError::Malformed`].
fn expect_ok(op: Op, raw: &RawResponse, ok: &[u16]) -> Result<(), GatewayError> {
    if ok.contains(&raw.status) {
        return Ok(());
    }
    if (200..300).contains(&raw.status) {
        return Err(GatewayError::Malformed {
            op,
            status: raw.status,
            message: format!("unexpected success status {}", raw.status),
        });
    }
    let envelope: Option<ErrorEnvelope> = serde_json::from_slice(&raw.body).ok();
    let (code, message, request_id) = match envelope {
        Some(e) => (
            Some(AdminErrorCode::parse(&e.error.code)),
            Some(e.error.message),
            e.error.request_id,
        ),
        None if raw.body.is_empty() => (None, None, None),
        None => (None, Some(excerpt(&raw.body)), None),
    };
    Err(GatewayError::Rejected {
        op,
        status: raw.status,
        code,
        message,
        request_id,
        retry_after: raw.retry_after.as_deref().and_then(RetryAfter::parse),
    })
}

/// Decodes a §4.1 registration answer. The contract says success is `200 OK`. The one
/// rule for any other 2xx (201, 202, …): it is unexpected and reported as such (the
/// second value, which the gateway logs as a warning), and it is **accepted when its body
/// parses as the §4.1 answer** — a 2xx says the Admin took the upsert, and the upsert is
/// idempotent, so refusing a well-formed answer would only make us repeat it; a 2xx
/// whose body is not the §4.1 answer (a 204, an empty or foreign body) is
/// [`GatewayError::Malformed`]. Non-2xx statuses are [`GatewayError::Rejected`].
pub(crate) fn decode_registration(
    raw: &RawResponse,
) -> Result<(RegistrationResponse, Option<u16>), GatewayError> {
    let unexpected = if raw.status == 200 {
        None
    } else if (200..300).contains(&raw.status) {
        Some(raw.status)
    } else {
        // Not a success: the §3 envelope, typed.
        expect_ok(Op::Register, raw, &[200])?;
        None
    };
    let answer = parse_json(Op::Register, raw).map_err(|e| match (e, unexpected) {
        (
            GatewayError::Malformed {
                op,
                status,
                message,
            },
            Some(s),
        ) => GatewayError::Malformed {
            op,
            status,
            message: format!("unexpected success status {s} (contract §4.1: 200) and {message}"),
        },
        (e, _) => e,
    })?;
    Ok((answer, unexpected))
}

fn parse_json<T: DeserializeOwned>(op: Op, raw: &RawResponse) -> Result<T, GatewayError> {
    serde_json::from_slice(&raw.body).map_err(|e| GatewayError::Malformed {
        op,
        status: raw.status,
        message: if raw.body.is_empty() {
            "empty body".to_string()
        } else {
            // serde quotes the value it choked on: an echoed header would be in it.
            crate::secret::scrub(&e.to_string()).into_owned()
        },
    })
}

/// Decodes a §6/§7 acknowledgement. Only `accepted: true` counts. `result_id` is
/// required, except that a failure answer carrying `task_status` and `accepted_at` is
/// taken without it once (the §7 compatibility rule for old Admins).
fn decode_accepted(op: Op, raw: RawResponse) -> Result<Accepted, GatewayError> {
    expect_ok(op, &raw, &[200, 201])?;
    let a: AcceptedResponse = parse_json(op, &raw)?;
    if !a.accepted {
        return Err(GatewayError::NotAccepted { op });
    }
    let result_id = a.result_id.filter(|r| !r.is_empty());
    let compat = match (&result_id, op, &a.task_status) {
        (Some(_), _, _) => false,
        (None, Op::Failure, Some(s)) if !s.is_empty() && !a.accepted_at.is_empty() => true,
        (None, _, _) => {
            return Err(GatewayError::Malformed {
                op,
                status: raw.status,
                message: "acknowledgement without result_id".to_string(),
            })
        }
    };
    Ok(Accepted {
        result_id,
        accepted_at: a.accepted_at,
        task_status: a.task_status,
        compat_without_result_id: compat,
        // Kept in the outbox and shown by the console: an echo goes no further.
        raw: match crate::secret::scrub_bytes(&raw.body) {
            std::borrow::Cow::Owned(clean) => Bytes::from(clean),
            std::borrow::Cow::Borrowed(_) => raw.body,
        },
    })
}

/// A fresh `X-Request-Id` for one HTTP attempt.
pub(crate) fn new_request_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(status: u16, body: &str) -> RawResponse {
        RawResponse {
            status,
            retry_after: None,
            date: None,
            body: Bytes::copy_from_slice(body.as_bytes()),
        }
    }

    #[test]
    fn retry_after_forms() {
        assert_eq!(
            RetryAfter::parse("7"),
            Some(RetryAfter::Delay(Duration::from_secs(7)))
        );
        let now = DateTime::parse_from_rfc3339("2015-10-21T07:27:00Z")
            .unwrap()
            .with_timezone(&Utc);
        let at = RetryAfter::parse("Wed, 21 Oct 2015 07:28:00 GMT").unwrap();
        assert_eq!(at.delay_from(now), Duration::from_secs(60));
        assert_eq!(
            at.delay_from(now + chrono::Duration::hours(1)),
            Duration::ZERO
        );
        assert_eq!(RetryAfter::parse("soon"), None);
        assert_eq!(RetryAfter::parse("-1"), None);
    }

    #[test]
    fn task_ids_are_escaped_not_parsed() {
        assert_eq!(encode_segment("cg1"), "cg1");
        assert_eq!(encode_segment("a/b c?"), "a%2Fb%20c%3F");
        assert_eq!(encode_segment("采购"), "%E9%87%87%E8%B4%AD");
    }

    #[test]
    fn failure_without_result_id_is_taken_once_per_compat_rule() {
        let ok = decode_accepted(
            Op::Failure,
            raw(
                200,
                r#"{"accepted":true,"task_status":"assigned","accepted_at":"2026-08-06T08:03:01Z"}"#,
            ),
        )
        .unwrap();
        assert!(ok.compat_without_result_id);
        let err = decode_accepted(
            Op::Result,
            raw(
                200,
                r#"{"accepted":true,"accepted_at":"2026-08-06T08:03:01Z"}"#,
            ),
        )
        .unwrap_err();
        assert!(matches!(err, GatewayError::Malformed { .. }));
        let err = decode_accepted(
            Op::Failure,
            raw(
                200,
                r#"{"accepted":true,"accepted_at":"2026-08-06T08:03:01Z"}"#,
            ),
        )
        .unwrap_err();
        assert!(matches!(err, GatewayError::Malformed { .. }));
    }

    const REGISTERED: &str =
        r#"{"registered":true,"client_id":"CLIENT-1","registered_at":"2026-08-06T09:00:00Z"}"#;

    #[test]
    fn s4_1_registration_200_is_the_contract_answer() {
        let (a, unexpected) = decode_registration(&raw(200, REGISTERED)).unwrap();
        assert!(a.registered);
        assert_eq!(a.client_id, "CLIENT-1");
        assert_eq!(unexpected, None);
    }

    #[test]
    fn s4_1_registration_other_2xx_with_the_contract_body_is_accepted_with_a_warning() {
        for status in [201, 202, 203] {
            let (a, unexpected) = decode_registration(&raw(status, REGISTERED)).unwrap();
            assert!(a.registered, "{status}");
            assert_eq!(unexpected, Some(status), "reported as unexpected");
        }
    }

    #[test]
    fn s4_1_registration_other_2xx_without_the_contract_body_is_malformed() {
        for (status, body) in [(204, ""), (201, "{}"), (202, "<html>ok</html>")] {
            let e = decode_registration(&raw(status, body)).unwrap_err();
            match &e {
                GatewayError::Malformed {
                    status: s, message, ..
                } => {
                    assert_eq!(*s, status);
                    assert!(message.contains("unexpected success status"), "{message}");
                }
                other => panic!("{status}: {other:?}"),
            }
        }
    }

    #[test]
    fn s4_1_registration_errors_are_typed_rejections() {
        let e = decode_registration(&raw(
            400,
            r#"{"error":{"code":"INVALID_CLIENT_PROFILE","message":"m","retryable":false}}"#,
        ))
        .unwrap_err();
        assert_eq!(e.code(), Some(&AdminErrorCode::InvalidClientProfile));
        assert!(!e.is_retryable());
    }

    /// A transport that answers one fixed response.
    struct Fixed(u16, &'static str);

    impl Transport for Fixed {
        async fn send(&self, _req: &PreparedRequest) -> Result<RawResponse, GatewayError> {
            Ok(raw(self.0, self.1))
        }
    }

    #[tokio::test]
    async fn s4_1_register_client_takes_a_201_with_the_contract_body() {
        let profile: ClientProfile = serde_json::from_value(serde_json::json!({
            "supported_types": ["collect"],
            "capabilities": {"purchase_mode": "dry_run", "schema_versions": [1]}
        }))
        .unwrap();
        let g = Gateway::with_transport(Fixed(201, REGISTERED), "CLIENT-1");
        assert!(g.register_client(&profile).await.unwrap().registered);
        let g = Gateway::with_transport(Fixed(204, ""), "CLIENT-1");
        assert!(matches!(
            g.register_client(&profile).await,
            Err(GatewayError::Malformed { status: 204, .. })
        ));
    }

    /// A transport answering one fixed status and body.
    struct Answering(u16, String);

    impl Transport for Answering {
        async fn send(&self, _req: &PreparedRequest) -> Result<RawResponse, GatewayError> {
            Ok(RawResponse {
                status: self.0,
                retry_after: None,
                date: None,
                body: Bytes::from(self.1.clone()),
            })
        }
    }

    /// An Admin (or proxy) that echoes the request's headers hands the token back: no
    /// error text, excerpt or stored answer carries it, in any form it came in.
    #[tokio::test]
    async fn an_echo_of_the_token_is_scrubbed_before_the_answer_is_read() {
        let token = "echo-tok/unit+0123456789";
        let _registered = Secret::new(token);
        let encoded = "echo-tok%2Funit%2B0123456789";
        let profile: ClientProfile = serde_json::from_value(serde_json::json!({
            "supported_types": ["collect"],
            "capabilities": {"purchase_mode": "dry_run", "schema_versions": [1]}
        }))
        .unwrap();
        let leaks = |what: &str, text: &str| {
            assert!(
                !text.contains(token) && !text.contains(encoded),
                "{what}: {text}"
            );
            assert!(text.contains(crate::secret::REDACTED), "{what}: {text}");
        };
        // §3 envelope: message and details echo the headers.
        let envelope = serde_json::json!({"error": {
            "code": "UNAUTHORIZED",
            "message": format!("bad header Authorization: Bearer {token}"),
            "retryable": false,
            "request_id": format!("rid {encoded}"),
            "details": {"headers": {"authorization": format!("Bearer {token}")}},
        }})
        .to_string();
        let g = Gateway::with_transport(Answering(401, envelope), "CLIENT-1");
        let e = g.register_client(&profile).await.unwrap_err();
        leaks("rejection", &format!("{e} {e:?}"));
        // A 200 the client cannot read: serde quotes the value it choked on.
        let body = format!(r#"{{"task": "Authorization: Bearer {token}"}}"#);
        let g = Gateway::with_transport(Answering(200, body), "CLIENT-1");
        let e = g.claim_next(&profile).await.unwrap_err();
        assert!(e.unreadable_success());
        leaks("unreadable 200", &format!("{e} {e:?}"));
        // Not JSON at all: the excerpt.
        let g = Gateway::with_transport(
            Answering(502, format!("<html>proxy: Bearer {token}</html>")),
            "CLIENT-1",
        );
        let e = g.claim_next(&profile).await.unwrap_err();
        leaks("excerpt", &format!("{e} {e:?}"));
        // An acknowledgement kept in the outbox as received.
        let ack = format!(
            r#"{{"accepted":true,"result_id":"r1","accepted_at":"2026-08-06T08:03:01Z","echo":"{encoded}"}}"#
        );
        let g = Gateway::with_transport(Answering(200, ack), "CLIENT-1");
        let a = g.submit_result("cg1", "k", b"{}").await.unwrap();
        assert_eq!(a.result_id.as_deref(), Some("r1"));
        leaks("stored answer", &String::from_utf8_lossy(&a.raw));
    }

    /// A success answer is business data: a task whose id or payload happens to hold a
    /// secret's text (a short token "ps-swipe", the task "ps-swipe-1") is executed and
    /// reported under its own id, never a scrubbed one ("***-1" is another task).
    #[tokio::test]
    async fn a_success_answer_is_decoded_as_it_came() {
        let _registered = Secret::new("ps-swipe");
        let profile: ClientProfile = serde_json::from_value(serde_json::json!({
            "supported_types": ["collect"],
            "capabilities": {"purchase_mode": "dry_run", "schema_versions": [1]}
        }))
        .unwrap();
        let body = serde_json::json!({"task": {
            "id": "ps-swipe-1", "type": "collect", "execution_mode": "dry_run",
            "version": 1, "priority": 0,
            "payload": {"goods_id": "602938475610",
                "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=602938475610"}
        }})
        .to_string();
        let g = Gateway::with_transport(Answering(200, body), "CLIENT-1");
        let task = g.claim_next(&profile).await.unwrap().expect("a task");
        assert_eq!(task.id, "ps-swipe-1");
    }

    #[test]
    fn a_cut_success_is_an_unreadable_success_and_retryable() {
        let cut = |status| GatewayError::Cut {
            op: Op::Claim,
            status,
            message: "connection reset".into(),
            partial: r#"{"task":{"id":"cg7""#.into(),
        };
        assert!(cut(200).unreadable_success());
        assert!(cut(200).is_retryable());
        assert_eq!(cut(200).status(), Some(200));
        // A cut error answer follows its status.
        assert!(!cut(503).unreadable_success());
        assert!(cut(503).is_retryable());
        assert!(!cut(403).is_retryable());
        // No answer byte at all is not a committed claim.
        let t = GatewayError::Transport {
            op: Op::Claim,
            message: "connection closed before a response was received".into(),
        };
        assert!(!t.unreadable_success());
        assert!(t.is_retryable());
    }

    #[test]
    fn rejections_are_typed() {
        let e = expect_ok(
            Op::Result,
            &raw(
                409,
                r#"{"error":{"code":"IDEMPOTENCY_CONFLICT","message":"m","retryable":false}}"#,
            ),
            &[200],
        )
        .unwrap_err();
        assert_eq!(e.code(), Some(&AdminErrorCode::IdempotencyConflict));
        assert!(!e.is_retryable());
        let e = expect_ok(Op::Result, &raw(503, "<html>busy</html>"), &[200]).unwrap_err();
        assert!(e.is_retryable());
        assert_eq!(e.code(), None);
    }
}
