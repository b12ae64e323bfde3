//! The PDD app as pure functions — the core of the client, with no I/O at all.
//!
//! - [`screen`] — the accessibility dump parser (a one-pass scanner into an arena) and
//!   every recogniser: the page kind, the goods page, the SKU sheet, 确认订单, the
//!   checkout rows and the order button, covers, payment pages, order lists and details.
//! - [`money`] — prices read from page text into integer fen ([`money::Fen`]).
//! - [`flow`] — the collect, purchase and reconcile state machines: `observe(now,
//!   Observation) -> Action`; time comes in as an argument, actions go out as values.
//! - [`account`] — the account fingerprint's rules (same account, changed, when to check).
//! - [`self_test`] — when the self-test is due and which options it picks.
//! - [`reasons`] — what an outcome means to the operator: every failure code's reason
//!   and next step, Chinese first, English beside.
//!
//! **Architecture invariant:** this crate depends on `cmautobuy-contract` and pure
//! libraries only (no tokio, rusqlite, reqwest, adb_client): it cannot do I/O, read the
//! clock or sleep, and `scripts/check-layers` refuses `std::fs`, `std::net`,
//! `std::thread`, `std::process` and wall-clock reads in it. The client's shell (`job/`)
//! drives these machines against the phone, the store and the Admin.

pub mod account;
pub mod flow;
pub mod money;
pub mod reasons;
pub mod screen;
pub mod self_test;
