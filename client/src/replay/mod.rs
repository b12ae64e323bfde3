//! Record and replay: an attempt's artifacts as a replay scenario
//! (`export`, format v1 of `sim-phone/README.md`) and the redaction every export and
//! diagnose bundle goes through (`redact`).

pub mod bundle;
pub mod export;
pub mod redact;
