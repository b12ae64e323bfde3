//! The phone itself: the app, the file system, counters, the clock, the latency model and
//! the scripted dump faults. The builtins that act on it live in `cmd/` (one file each),
//! the shell that runs them (`Device::run_line`) in `shell/run.rs`, and the `framebuffer:`
//! picture (`Device::framebuffer`) in `cmd/screencap.rs`: files above this one.
//!
//! Everything here is synchronous and quick; the transport holds the lock only while a
//! command runs and sleeps (realistic profile) after releasing it.

use std::sync::Arc;

use chrono::{DateTime, FixedOffset, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::app::{App, AppConfig};
use crate::catalog::Catalog;
use crate::ledger::Ledger;
use crate::system::SystemState;
use crate::u2::U2State;
use crate::ui;

use super::config::{DeviceConfig, DumpFault, DumpFormat};
use super::counters::Counters;
use super::files::Files;

/// The phone.
pub struct Device {
    pub(crate) app: App,
    pub(crate) cfg: DeviceConfig,
    pub(crate) files: Files,
    pub(crate) counters: Counters,
    rng: StdRng,
    /// Transition time owed by the next observation (dump/screencap), ms.
    pending_transition_ms: u64,
    /// Last successful dump text, for stale /dev/tty dumps.
    pub(crate) last_dump: Option<String>,
    pub(crate) offline: bool,
    pub(crate) extra_dump_faults: Vec<(u64, DumpFault)>,
    /// The phone's own state: screen, keyguard, overlays, battery, input records.
    pub(crate) sys: SystemState,
    /// uiautomator2's server: whether one runs, and the faults scripted for it.
    pub(crate) u2: U2State,
    /// `NAME=value` words before the command now running (`CLASSPATH=… app_process …`).
    pub(crate) cmd_env: Vec<(String, String)>,
    /// Replay mode: the scenario player standing in for the app (`device/replay.rs`).
    pub(crate) replay: Option<Box<crate::replay::Player>>,
}

impl Device {
    pub fn new(catalog: Arc<Catalog>, ledger: Ledger, cfg: DeviceConfig) -> Device {
        let mut app = App::new(
            catalog,
            ledger,
            AppConfig {
                width: cfg.width,
                height: cfg.height,
                seed: cfg.seed,
                popups: cfg.popups.clone(),
                show_goods_id: cfg.show_goods_id,
                account: cfg.account.clone(),
                pdd_version: cfg.pdd_version.clone(),
            },
        );
        if cfg.launch_app {
            app.launch();
        }
        let sys = SystemState::new(cfg.system.clone());
        Device {
            app,
            sys,
            rng: StdRng::seed_from_u64(cfg.seed),
            cfg,
            files: Files::default(),
            counters: Counters::default(),
            pending_transition_ms: 0,
            last_dump: None,
            offline: false,
            extra_dump_faults: Vec::new(),
            u2: U2State::default(),
            cmd_env: Vec::new(),
            replay: None,
        }
    }

    pub fn app(&self) -> &App {
        &self.app
    }

    pub fn app_mut(&mut self) -> &mut App {
        &mut self.app
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// The phone's wall clock, in its own UTC offset.
    pub fn now(&self) -> DateTime<FixedOffset> {
        let utc = match self.cfg.start_time {
            // A fixed start advances by simulated device time only: fully deterministic.
            Some(t) => t + chrono::Duration::milliseconds(self.counters.device_time_ms as i64),
            None => Utc::now(),
        } + chrono::Duration::seconds(self.cfg.clock_offset_secs);
        let off = FixedOffset::east_opt(self.cfg.utc_offset_secs)
            .unwrap_or_else(|| FixedOffset::east_opt(8 * 3600).expect("valid offset"));
        utc.with_timezone(&off)
    }

    fn mtime(&self) -> u32 {
        u32::try_from(self.now().timestamp()).unwrap_or(0)
    }

    // ---- files (the sync service uses these too) ----

    pub fn read_file(&self, path: &str) -> Option<Arc<Vec<u8>>> {
        self.files.read(path)
    }

    pub fn write_file(&mut self, path: &str, data: Vec<u8>) {
        let mtime = self.mtime();
        self.files.write(path, data, mtime);
    }

    /// (mode, size, mtime) of a path; directories are every prefix of a file plus the
    /// usual Android ones.
    pub fn stat(&self, path: &str) -> Option<(u32, u64, u32)> {
        self.files.stat(path)
    }

    /// Entries of a directory: (name, mode, size, mtime).
    pub fn list_dir(&self, path: &str) -> Vec<(String, u32, u64, u32)> {
        self.files.list_dir(path)
    }

    // ---- latency ----

    /// A simulated duration drawn from the seeded RNG, ms.
    pub(crate) fn cost(&mut self, lo_ms: u64, hi_ms: u64) -> u64 {
        if hi_ms <= lo_ms {
            lo_ms
        } else {
            self.rng.gen_range(lo_ms..=hi_ms)
        }
    }

    /// The screen changed: the next observation pays for the animation.
    pub(crate) fn transition(&mut self) {
        let t = self.cost(300, 700);
        self.pending_transition_ms = self.pending_transition_ms.max(t);
    }

    /// Transition time a dump or screencap pays now (waiting for idle), ms.
    pub(crate) fn observe_cost(&mut self) -> u64 {
        std::mem::take(&mut self.pending_transition_ms)
    }

    // ---- dumps ----

    /// The fault (if any) the dump just counted suffers: a random idle-state failure, or
    /// one scripted for its number.
    pub(crate) fn next_dump_fault(&mut self) -> Option<DumpFault> {
        let n = self.counters.dumps;
        let pct = u32::from(self.cfg.faults.random_idle_failure_percent.min(100));
        if pct > 0 && self.rng.gen_range(0..100) < pct {
            return Some(DumpFault::IdleState);
        }
        self.cfg
            .faults
            .dump_faults
            .iter()
            .chain(self.extra_dump_faults.iter())
            .find(|(k, _)| *k == n)
            .map(|(_, f)| *f)
    }

    /// The phone's own state (screen, keyguard, overlays, battery, input records).
    pub fn system(&self) -> &SystemState {
        &self.sys
    }

    pub fn system_mut(&mut self) -> &mut SystemState {
        &mut self.sys
    }

    /// The XML a dump would produce now (the active window: see `phone_state`).
    pub fn dump_xml(&self) -> String {
        if let Some(recorded) = self.replay_dump() {
            return recorded;
        }
        let s = self.dump_screen(self.now());
        match self.cfg.dump_format {
            DumpFormat::Pretty => ui::to_xml(&s),
            DumpFormat::Compact => ui::to_xml_compact(&s),
        }
    }
}
