//! Shared helpers for the end-to-end tests in `e2e.rs` (which span the crates).
