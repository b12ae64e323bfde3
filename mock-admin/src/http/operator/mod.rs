//! The operator API under `/api/v1/admin` (decisions.md §10 plus the mock's test
//! controls), one file per resource. Each resource file's operations are shared with the
//! typed in-process `Operator` (`operator.rs`).

pub(crate) mod clients;
pub(crate) mod controls;
pub(crate) mod products;
pub(crate) mod spec_resolutions;
pub(crate) mod tasks;
