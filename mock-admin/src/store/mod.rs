//! Everything that reads or writes the database. SQL stays in this module; every function
//! runs on the database thread ([`crate::db::Db::call`]) and every read-then-write goes
//! through one `BEGIN IMMEDIATE` transaction, so a refusal in the middle (an
//! [`crate::error::ApiError`] returned as [`crate::error::StoreError::Api`]) rolls the
//! whole request back.
//!
//! Typed values go in and out: the HTTP layer (`http/`) parses request JSON into contract
//! types or a [`NewTask`] and renders the rows returned here. JSON columns come back as
//! the text stored — result and failure bodies exactly as received, the task payload,
//! `skus_json`, capabilities, candidates — and stored answers as bytes, replayed byte for
//! byte.
//!
//! One file per table group or endpoint family; each sits above what it uses:
//!
//! | file | job |
//! |---|---|
//! | `clock` | the timestamp every row is written with |
//! | `hash` | [`canonical_hash`]: SHA-256 of canonical JSON (request identity) |
//! | `idempotency` | [`SubmitCtx`], [`Answer`]; stored answers: replay (or 409) and remember |
//! | `clients` | `clients`: upsert (registration, implicit on claim), last seen, [`ClientRow`] |
//! | `claim_history` | `task_claims`: who claimed which version; [`ClaimRow`] |
//! | `results` | `task_results`: every accepted result and failure body; [`ResultRow`] |
//! | `products` | `pdd_products`: pending row, collect outcome, [`ProductRow`] |
//! | `tasks` | `tasks`: [`NewTask`] in, [`TaskRow`] out; create, list, detail, cancel, reassign |
//! | `claim` | §5: one task for one client, atomically |
//! | `submissions` | §6/§7: results and failures, and how they move the task |
//! | `spec_resolutions` | §7.1: the two transactions around the resolver; [`SpecResolutionRow`] |
//!
//! Admin-side task states (data model §7): `pending` (unassigned pool), `assigned`
//! (reserved for one client), `claimed`, `succeeded`, `manual_review`, `failed`,
//! `cancelled`. How submissions move a task: see `submissions.rs`.

mod claim;
mod claim_history;
mod clients;
mod clock;
mod hash;
mod idempotency;
mod products;
mod results;
mod spec_resolutions;
mod submissions;
mod tasks;

pub use claim::claim;
pub use claim_history::ClaimRow;
pub use clients::{list_clients, register, touch, ClientRow, DeviceRow, ONLINE_MINUTES};
pub use clock::now;
pub use hash::canonical_hash;
pub use idempotency::{Answer, SubmitCtx};
pub use products::{list_products, ProductRow};
pub use results::ResultRow;
pub use spec_resolutions::{
    list_spec_resolutions, spec_decide, spec_observe, Observed, Reusable, SpecResolutionRow,
    StoredDecision,
};
pub use submissions::{submit_failure, submit_result};
pub use tasks::{
    cancel_task, create_task, get_task, list_tasks, reassign_task, seed, NewTask, PurchaseTerms,
    TaskDetail, TaskRow,
};
