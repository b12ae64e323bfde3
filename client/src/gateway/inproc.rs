//! [`MockAdminGateway`]: the gateway over an in-process axum router — in practice the
//! bundled mock Admin's `router()` — driven with `tower::ServiceExt::oneshot`.
//!
//! Same semantics as HTTP: the same headers (token included, so a mock that requires
//! one checks it), the same total deadline, the same body cap, and the mock's
//! "connection dropped" fault (a response carrying `x-mock-fault: connection-dropped`)
//! becomes the same transport error a dropped TCP connection gives.

use axum::body::Body;
use axum::http::{HeaderName, HeaderValue, Method, Request};
use bytes::{Bytes, BytesMut};
use futures::StreamExt;
use tower::ServiceExt;

use super::api::{
    new_request_id, Gateway, GatewayError, GatewaySettings, PreparedRequest, RawResponse, Transport,
};

/// The header the mock Admin sets on a response that stands for a dropped connection.
pub const MOCK_FAULT_HEADER: &str = "x-mock-fault";
/// Its value for "the connection was closed (possibly after the Admin committed)".
pub const MOCK_FAULT_DROPPED: &str = "connection-dropped";

/// The in-process gateway.
pub type MockAdminGateway = Gateway<RouterTransport>;

/// Calls an axum router in-process.
pub struct RouterTransport {
    router: axum::Router,
    settings: GatewaySettings,
}

impl Gateway<RouterTransport> {
    /// A gateway calling `router` (e.g. `MockAdmin::router()`) directly.
    pub fn new(router: axum::Router, settings: GatewaySettings) -> Self {
        let client_id = settings.client_id.clone();
        Gateway::with_transport(RouterTransport { router, settings }, client_id)
    }
}

impl RouterTransport {
    fn request(&self, req: &PreparedRequest) -> Result<Request<Body>, GatewayError> {
        let method = Method::from_bytes(req.method.as_bytes())
            .map_err(|_| GatewayError::Config(format!("invalid method {}", req.method)))?;
        let mut builder = Request::builder().method(method).uri(req.path.as_str());
        for (k, v) in &req.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        builder = builder.header(
            HeaderName::from_static("x-request-id"),
            HeaderValue::from_str(&new_request_id())
                .map_err(|_| GatewayError::Config("invalid request id".into()))?,
        );
        if let Some(bearer) = self.settings.bearer() {
            let mut v = HeaderValue::from_str(&bearer).map_err(|_| {
                GatewayError::Config("the token contains characters not allowed in a header".into())
            })?;
            v.set_sensitive(true);
            builder = builder.header(axum::http::header::AUTHORIZATION, v);
        }
        builder
            .body(Body::from(req.body.clone()))
            .map_err(|e| GatewayError::Config(format!("cannot build the request: {e}")))
    }

    /// One attempt under `deadline`: no answer by then is a timeout; an answer whose
    /// body does not end by then is cut ([`GatewayError::Cut`]), as over HTTP.
    async fn attempt(
        &self,
        req: &PreparedRequest,
        deadline: tokio::time::Instant,
    ) -> Result<RawResponse, GatewayError> {
        let op = req.op;
        let timeout = self.settings.request_timeout;
        let request = self.request(req)?;
        let resp =
            match tokio::time::timeout_at(deadline, self.router.clone().oneshot(request)).await {
                Ok(Ok(r)) => r,
                Ok(Err(never)) => match never {},
                Err(_) => return Err(GatewayError::Timeout { op, timeout }),
            };
        let dropped = resp
            .headers()
            .get(MOCK_FAULT_HEADER)
            .is_some_and(|v| v.as_bytes() == MOCK_FAULT_DROPPED.as_bytes());
        if dropped {
            return Err(GatewayError::Transport {
                op,
                message: "connection closed before a response was received".into(),
            });
        }
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(axum::http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let date = resp
            .headers()
            .get(axum::http::header::DATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let limit = self.settings.max_body_bytes;
        let mut stream = resp.into_body().into_data_stream();
        let mut body = BytesMut::new();
        loop {
            let next = match tokio::time::timeout_at(deadline, stream.next()).await {
                Ok(next) => next,
                Err(_) => {
                    return Err(GatewayError::Cut {
                        op,
                        status,
                        message: format!("the answer did not end within {timeout:?}"),
                        partial: super::api::partial_excerpt(&body),
                    })
                }
            };
            let Some(chunk) = next else { break };
            let chunk = chunk.map_err(|e| GatewayError::Cut {
                op,
                status,
                message: format!("answer cut short: {e}"),
                partial: super::api::partial_excerpt(&body),
            })?;
            if body.len() + chunk.len() > limit {
                return Err(GatewayError::TooLarge { op, status, limit });
            }
            body.extend_from_slice(&chunk);
        }
        Ok(RawResponse {
            status,
            retry_after,
            date,
            body: Bytes::from(body),
        })
    }
}

impl Transport for RouterTransport {
    async fn send(&self, req: &PreparedRequest) -> Result<RawResponse, GatewayError> {
        let deadline = tokio::time::Instant::now() + self.settings.request_timeout;
        self.attempt(req, deadline).await
    }
}
