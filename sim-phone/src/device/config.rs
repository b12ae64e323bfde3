//! How a phone is set up: screen, seed, latency profile, clock, scripted faults, dump shape.

use chrono::{DateTime, Utc};

use crate::account::{Account, PddVersion};
use crate::page::PopupSchedule;
use crate::system::SystemConfig;

/// How long things take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LatencyProfile {
    /// No real delay at all (tests). Simulated device time is still accounted.
    #[default]
    Zero,
    /// Really sleep like a phone: dump ≈0.8–1.5 s, tap ≈80 ms, page transitions 0.3–0.7 s.
    Realistic,
}

impl std::str::FromStr for LatencyProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "zero" => Ok(LatencyProfile::Zero),
            "realistic" => Ok(LatencyProfile::Realistic),
            o => Err(format!("unknown profile {o:?} (zero|realistic)")),
        }
    }
}

/// A scripted failure of one `uiautomator dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpFault {
    /// "ERROR: could not get idle state." on stderr, exit 0, no file written.
    IdleState,
    /// "ERROR: null root node returned by UiTestAutomationBridge.", exit 0, no file written
    /// (a previous `/sdcard/window_dump.xml` stays: a stale read if the caller cats it).
    NullRoot,
    /// Reports success but leaves the previous dump in place (file or /dev/tty output).
    Stale,
}

/// Faults scripted up front (more can be added at run time through the handle).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultPlan {
    /// (n, fault): the n-th `uiautomator dump` (1-based, counting every dump) fails so.
    pub dump_faults: Vec<(u64, DumpFault)>,
    /// After this many shell commands the device goes offline (connections dropped,
    /// new ones closed) until `SimPhoneHandle::set_offline(false)`.
    pub offline_after_commands: Option<u64>,
    /// Once the ledger holds this many orders, the phone goes offline right after the
    /// command that placed the last one (the 提交订单 tap: its answer is cut too) until
    /// `SimPhoneHandle::set_offline(false)`; fires once. A phone that drops off Wi-Fi
    /// or USB just after the order was placed.
    pub offline_after_orders: Option<usize>,
    /// Once the ledger holds this many orders, the screen goes off right after the
    /// command that placed the last one (the keyguard engages when a lock is set); fires
    /// once. The screen-off timeout or the power key while PDD shows the order.
    pub screen_off_after_orders: Option<usize>,
    /// Chance in percent that any dump fails with "could not get idle state" (drawn from
    /// the seeded RNG, so a given seed fails the same dumps every run).
    pub random_idle_failure_percent: u8,
}

/// Dump shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DumpFormat {
    /// One node per line with visible-to-user/drawing-order/hint/display-id (current phones).
    #[default]
    Pretty,
    /// One line without those attributes (old Android).
    Compact,
}

/// Device-level settings.
#[derive(Debug, Clone)]
pub struct DeviceConfig {
    pub width: i32,
    pub height: i32,
    pub seed: u64,
    pub profile: LatencyProfile,
    pub utc_offset_secs: i32,
    pub start_time: Option<DateTime<Utc>>,
    /// The phone's clock minus the one above, seconds (an unsynced phone).
    pub clock_offset_secs: i64,
    pub faults: FaultPlan,
    pub dump_format: DumpFormat,
    pub popups: PopupSchedule,
    pub show_goods_id: bool,
    pub launch_app: bool,
    pub account: Account,
    pub pdd_version: PddVersion,
    /// The phone's own state (screen, lock, battery, chooser, keyboard).
    pub system: SystemConfig,
}
