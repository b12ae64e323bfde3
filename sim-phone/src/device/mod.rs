//! The phone behind the ADB transport: [`Device`] (state, clock, latency, faults), its
//! settings, counters, the result of a command and its file system.

pub mod config;
pub mod counters;
pub mod exec;
pub mod files;
pub mod phone_state;
pub mod replay;
pub mod state;

pub use crate::ui::PDD as PDD_PACKAGE;
pub use config::{DeviceConfig, DumpFault, DumpFormat, FaultPlan, LatencyProfile};
pub use counters::Counters;
pub use exec::Exec;
pub use files::normalize;
pub use state::Device;
