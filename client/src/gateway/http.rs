//! [`HttpAdminGateway`]: the gateway over HTTP (reqwest + rustls).
//!
//! Every attempt has a connect deadline and a total deadline (connect, send, read), gets a
//! fresh `X-Request-Id`, and reads at most `max_body_bytes` of the answer.

use bytes::{Bytes, BytesMut};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, AUTHORIZATION, RETRY_AFTER};
use std::time::Instant;

use super::api::{
    new_request_id, Gateway, GatewayError, GatewaySettings, Op, PreparedRequest, RawResponse,
    Transport,
};

/// The HTTP gateway.
pub type HttpAdminGateway = Gateway<HttpTransport>;

/// Sends requests to an Admin at `base_url`.
pub struct HttpTransport {
    client: reqwest::Client,
    base_url: String,
    settings: GatewaySettings,
}

impl Gateway<HttpTransport> {
    /// A gateway to the Admin at `base_url` (e.g. `http://127.0.0.1:8080`).
    pub fn new(base_url: &str, settings: GatewaySettings) -> Result<Self, GatewayError> {
        let parsed = reqwest::Url::parse(base_url)
            .map_err(|e| GatewayError::Config(format!("invalid Admin URL {base_url:?}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(GatewayError::Config(format!(
                "invalid Admin URL {base_url:?}: scheme must be http or https"
            )));
        }
        let client = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.request_timeout)
            // Redirects would resend the token to wherever the Location points.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| GatewayError::Config(format!("cannot build the HTTP client: {e}")))?;
        let client_id = settings.client_id.clone();
        Ok(Gateway::with_transport(
            HttpTransport {
                client,
                base_url: base_url.trim_end_matches('/').to_string(),
                settings,
            },
            client_id,
        ))
    }
}

fn classify(op: Op, settings: &GatewaySettings, e: reqwest::Error) -> GatewayError {
    if e.is_timeout() {
        GatewayError::Timeout {
            op,
            timeout: settings.request_timeout,
        }
    } else {
        // `without_url` keeps messages short; the URL never holds the token anyway.
        GatewayError::Transport {
            op,
            message: error_chain(&e.without_url()),
        }
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

impl HttpTransport {
    fn headers(&self, req: &PreparedRequest, request_id: &str) -> Result<HeaderMap, GatewayError> {
        let mut h = HeaderMap::new();
        for (k, v) in &req.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| GatewayError::Config(format!("invalid header name {k:?}")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|_| GatewayError::Config(format!("invalid value for header {k}")))?;
            h.insert(name, value);
        }
        h.insert(
            HeaderName::from_static("x-request-id"),
            HeaderValue::from_str(request_id)
                .map_err(|_| GatewayError::Config("invalid request id".into()))?,
        );
        if let Some(bearer) = self.settings.bearer() {
            // The message must not quote the value: it holds the token.
            let mut v = HeaderValue::from_str(&bearer).map_err(|_| {
                GatewayError::Config("the token contains characters not allowed in a header".into())
            })?;
            v.set_sensitive(true);
            h.insert(AUTHORIZATION, v);
        }
        Ok(h)
    }
}

impl Transport for HttpTransport {
    async fn send(&self, req: &PreparedRequest) -> Result<RawResponse, GatewayError> {
        let op = req.op;
        let request_id = new_request_id();
        let headers = self.headers(req, &request_id)?;
        let method = reqwest::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| GatewayError::Config(format!("invalid method {}", req.method)))?;
        let url = format!("{}{}", self.base_url, req.path);
        let started = Instant::now();
        tracing::debug!(%op, path = %req.path, request_id = %request_id, "sending");
        let mut resp = self
            .client
            .request(method, url)
            .headers(headers)
            .body(req.body.clone())
            .send()
            .await
            .map_err(|e| classify(op, &self.settings, e))?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let date = resp
            .headers()
            .get(reqwest::header::DATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let limit = self.settings.max_body_bytes;
        if resp.content_length().is_some_and(|n| n > limit as u64) {
            return Err(GatewayError::TooLarge { op, status, limit });
        }
        let mut body = BytesMut::new();
        loop {
            match resp.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > limit {
                        return Err(GatewayError::TooLarge { op, status, limit });
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                // The status line and headers came: the Admin handled the request. A
                // body that ends early (connection closed, deadline) is a cut answer,
                // not a request that may never have arrived.
                Err(e) => {
                    return Err(GatewayError::Cut {
                        op,
                        status,
                        message: match classify(op, &self.settings, e) {
                            GatewayError::Transport { message, .. } => message,
                            other => other.to_string(),
                        },
                        partial: super::api::partial_excerpt(&body),
                    })
                }
            }
        }
        tracing::debug!(
            %op,
            status,
            request_id = %request_id,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "answered"
        );
        Ok(RawResponse {
            status,
            retry_after,
            date,
            body: Bytes::from(body),
        })
    }
}
