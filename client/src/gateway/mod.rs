//! The Admin gateway: the five operations of contract §9 behind one trait.
//!
//! Layout:
//! - [`api`]: the [`AdminGateway`] trait, [`GatewayError`], the request builder
//!   ([`PreparedRequest`], shared with the outbox so stored requests are byte-identical to
//!   sent ones) and the response decoder. Decoding is pure: a [`RawResponse`] in, a typed
//!   answer or error out.
//! - [`http`]: [`HttpAdminGateway`], the [`Transport`] over reqwest + rustls.
//! - [`inproc`]: [`MockAdminGateway`], the [`Transport`] over an in-process axum router
//!   (the bundled mock Admin), driven with `tower::ServiceExt::oneshot`.
//!
//! **Architecture invariant:** both gateways are the same [`Gateway`] over a different
//! [`Transport`]; headers, deadlines, error mapping and decoding are written once, so the
//! in-process mock has the HTTP semantics by construction (faults included: a dropped
//! connection is a transport error in both).
//!
//! **Invariant:** the token is held as a [`Secret`] and only the transports put it in an
//! `Authorization` header (marked sensitive). Errors carry statuses, codes and the
//! Admin's message, never request headers; and what the Admin sends back — an echo of
//! the headers included — is scrubbed of every known secret ([`crate::secret::scrub`])
//! before anything decodes, stores or logs it (`Gateway::send`).

pub mod api;
pub mod http;
pub mod inproc;

pub use api::*;
pub use http::HttpAdminGateway;
pub use inproc::MockAdminGateway;
