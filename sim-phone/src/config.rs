//! [`SimConfig`]: everything a phone is started with, and building the bare [`Device`] from
//! it (no network) for in-process tests.

use std::path::PathBuf;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::account::{Account, PddVersion};
use crate::catalog::Catalog;
use crate::device::{Device, DeviceConfig, DumpFormat, FaultPlan, LatencyProfile};
use crate::error::SimError;
use crate::ledger::Ledger;
use crate::page::PopupSchedule;
use crate::replay::{Player, Scenario};
use crate::system::SystemConfig;

/// Everything a phone is started with.
#[derive(Debug, Clone)]
pub struct SimConfig {
    pub catalog: Catalog,
    /// Where the order ledger lives; `None` keeps it in memory.
    pub state_file: Option<PathBuf>,
    pub profile: LatencyProfile,
    pub seed: u64,
    /// Screen size in pixels (layouts are designed for 1080 wide).
    pub width: u32,
    pub height: u32,
    pub popups: PopupSchedule,
    /// Show "商品编号：ID" on goods pages. The real app shows no goods id, which makes a
    /// redirected link hard to notice; this opt-in makes it visible. Default off.
    pub show_goods_id: bool,
    pub faults: FaultPlan,
    /// The phone's UTC offset (China: +08:00).
    pub utc_offset_secs: i32,
    /// Fixed clock start; `None` = the host's clock.
    pub start_time: Option<DateTime<Utc>>,
    /// Seconds the phone's clock is ahead of (negative: behind) the one above — a phone
    /// whose clock is not synced. Its 下单时间, status bar and `date` all follow it.
    pub clock_offset_secs: i64,
    pub dump_format: DumpFormat,
    /// Start with the app on its home page (else the launcher shows).
    pub launch_app: bool,
    /// The logged-in account: nickname, masked phone, delivery address.
    pub account: Account,
    /// The installed PDD's version (`dumpsys package`).
    pub pdd_version: PddVersion,
    /// The phone's own state at start (all off by default: awake, unlocked, uncovered).
    pub system: SystemConfig,
    /// Replay mode: play this recorded scenario instead of the catalog's app
    /// ([`SimConfig::replay`]).
    pub replay: Option<Scenario>,
    /// Replay mode: also append the replay log to this file (JSON lines).
    pub replay_log: Option<PathBuf>,
}

impl SimConfig {
    /// Defaults: in-memory ledger, zero latency, seed 0, 1080×2400, no popups, no faults,
    /// +08:00, host clock (no offset), pretty dumps, app launched.
    pub fn new(catalog: Catalog) -> SimConfig {
        SimConfig {
            catalog,
            state_file: None,
            profile: LatencyProfile::Zero,
            seed: 0,
            width: 1080,
            height: 2400,
            popups: PopupSchedule::Off,
            show_goods_id: false,
            faults: FaultPlan::default(),
            utc_offset_secs: 8 * 3600,
            start_time: None,
            clock_offset_secs: 0,
            dump_format: DumpFormat::Pretty,
            launch_app: true,
            account: Account::default(),
            pdd_version: PddVersion::default(),
            system: SystemConfig::default(),
            replay: None,
            replay_log: None,
        }
    }

    /// A phone that replays `scenario` (format v1) instead of running the catalog's app;
    /// the phone's own state, latency profiles and dump faults work as usual.
    pub fn replay(scenario: Scenario) -> SimConfig {
        let mut c = SimConfig::new(Catalog::default());
        c.replay = Some(scenario);
        c
    }

    /// Build the phone (without any network) — for in-process tests of the app model.
    pub fn build_device(&self) -> Result<Device, SimError> {
        let ledger = match &self.state_file {
            Some(p) => Ledger::open(p)?,
            None => Ledger::in_memory(),
        };
        let mut device = Device::new(
            Arc::new(self.catalog.clone()),
            ledger,
            DeviceConfig {
                width: i32::try_from(self.width).unwrap_or(1080),
                height: i32::try_from(self.height).unwrap_or(2400),
                seed: self.seed,
                profile: self.profile,
                utc_offset_secs: self.utc_offset_secs,
                start_time: self.start_time,
                clock_offset_secs: self.clock_offset_secs,
                faults: self.faults.clone(),
                dump_format: self.dump_format,
                popups: self.popups.clone(),
                show_goods_id: self.show_goods_id,
                launch_app: self.launch_app,
                account: self.account.clone(),
                pdd_version: self.pdd_version.clone(),
                system: self.system.clone(),
            },
        );
        if let Some(s) = &self.replay {
            let player = Player::new(s.clone(), self.replay_log.as_deref()).map_err(|source| {
                SimError::Write {
                    path: self.replay_log.clone().unwrap_or_default(),
                    source,
                }
            })?;
            device.set_replay(player);
        }
        Ok(device)
    }
}
