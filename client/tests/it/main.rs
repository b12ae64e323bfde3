//! One integration-test binary for the crate: each file of this folder is a module.
//! libtest starts tests in name order, so the longest ones live in modules whose names
//! sort early (`backend_u2`, `batch_failure_paths`): started last, one of them alone set
//! the binary's wall time.

mod account_check;
mod account_e2e;
mod account_pause;
mod against_mock;
mod alerts_e2e;
mod android_state;
mod backend_u2;
mod backups;
#[cfg(feature = "rehearse")]
mod batch_failure_paths;
mod bench_device;
mod clock_skew;
mod collect_run;
mod console_browser;
mod console_e2e;
mod damaged_store;
mod dead_phone;
mod device;
mod device_gate;
mod doctor_cli;
mod drain;
mod fingerprint_e2e;
mod flows;
mod gateway_http;
mod goods_identity;
mod hostile_admin;
mod live_default;
mod live_settings;
mod money_path_e2e;
mod offline_after_submit;
mod pacing;
mod package;
mod pdd_version_gate;
mod phone_state_e2e;
mod process_lock;
#[cfg(feature = "rehearse")]
mod purchase_e2e;
mod reconcile_e2e;
#[cfg(feature = "rehearse")]
mod rehearse_cli;
mod replay_export_e2e;
mod replay_real;
mod replay_rehearse;
mod replay_roundtrip;
mod resources;
mod status_cli;
mod support;
mod two_phones;
mod variants_e2e;
mod webhooks;
