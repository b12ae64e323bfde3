//! The Client–Admin API v1 contract as Rust types and pure functions.
//!
//! Everything that crosses the wire between the cmautobuy client and an Admin lives here,
//! shared by the client (`cmautobuy-client`) and the bundled mock Admin
//! (`cmautobuy-mock-admin`), so both sides agree on every byte. The crate does no I/O:
//! no sockets, no files, no clock (times come in as arguments).
//!
//! Map of the crate (contract section numbers in brackets):
//!
//! - [`money`] — [`Fen`], integer fen (分). Money is never a float anywhere; its module
//!   documentation holds the decisions on `4.0` (refused) and on a price of 0 (a free
//!   option, valid only with the `raw_price` it was read from).
//! - [`time`] — RFC 3339 timestamps with an offset, sent as UTC (§0, data model §1).
//! - [`codes`] — stable error codes: the Admin's (§3, §4.1, §7.1, data model §4.3) and the
//!   client's failure codes and flow steps (`decisions.md` §5).
//! - [`types`] — serde types for every request and response of §4.1, §5, §6, §7, §7.1 and
//!   the §3 error envelope. Unknown fields are tolerated (kept in `extra` maps where the
//!   client may need to round-trip them); known fields never change meaning.
//! - [`validate`] — the contract's validation rules as functions returning a
//!   [`validate::Violation`] with a stable code.
//! - [`hash`] — the length-framed `candidate_snapshot_hash`, the deterministic
//!   spec-resolution `Idempotency-Key` (§7.1) and the result/failure keys (`decisions.md` §3).
//!
//! **Invariant:** the validation here is the single source of truth; the mock Admin and
//! the client call the same functions, so a request the client considers valid is one the
//! mock accepts, and vice versa.

pub mod codes;
pub mod hash;
pub mod money;
pub mod time;
pub mod types;
pub mod validate;

pub use codes::{AdminErrorCode, FailureCode, FlowStep};
pub use money::Fen;
pub use types::*;

/// Base path of every client endpoint (§0).
pub const CLIENT_API_BASE: &str = "/api/v1/client";

/// Base path of the mock Admin's operator API (`decisions.md` §10).
pub const ADMIN_API_BASE: &str = "/api/v1/admin";

/// Request headers of §2.
pub mod headers {
    pub const CLIENT_ID: &str = "X-Client-Id";
    pub const REQUEST_ID: &str = "X-Request-Id";
    pub const IDEMPOTENCY_KEY: &str = "Idempotency-Key";
    pub const AUTHORIZATION: &str = "Authorization";
}
