//! The HTTP surface: client endpoints (§4.1–§7.1), the operator API (decisions.md §10
//! plus faults, spec-resolution overrides and the journal) and `/openapi.json`. Request
//! JSON is parsed here into typed values for [`crate::store`], and the rows it returns
//! are rendered here.
//!
//! | file | job |
//! |---|---|
//! | `router` | [`build`]: every route, the layers, `/openapi.json` |
//! | `envelope` | outermost layer: every 4xx/5xx as the §3 envelope with the request id; 404/405 fallbacks |
//! | `auth` | the bearer token (client layer and operator routes) |
//! | `client_layer` | client endpoints only: token, fault plans, journal, `last_seen_at` on refusals |
//! | `extract` | headers, path id, body (content type, size, JSON object, integral numbers) |
//! | `respond` | stored answers byte for byte, JSON documents, stored JSON text read back |
//! | `registration` | §4.1 `PUT /registration` |
//! | `claim` | §5 `POST /tasks/claim` |
//! | `submissions` | §6 `POST /tasks/{id}/result`, §7 `POST /tasks/{id}/failure` |
//! | `spec_resolution` | §7.1 `POST /tasks/{id}/spec-resolution` |
//! | `operator/` | `/api/v1/admin`: `tasks`, `clients`, `products`, `spec_resolutions`, `controls` (faults, overrides, journal) |

mod auth;
mod claim;
mod client_layer;
mod envelope;
mod extract;
pub(crate) mod operator;
mod registration;
mod respond;
mod router;
mod spec_resolution;
mod submissions;

pub use client_layer::FAULT_HEADER;
pub use extract::MAX_BODY_BYTES;
pub use router::build;
