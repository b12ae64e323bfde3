//! The phone behind the ADB transport: a tiny file system, the builtins of the simulated
//! shell, counters, scripted faults and the latency model.
//!
//! Everything here is synchronous and quick; the transport holds the lock only while a
//! command runs and sleeps (realistic profile) after releasing it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, FixedOffset, Utc};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::app::{App, AppConfig, PopupSchedule};
use crate::catalog::Catalog;
use crate::ledger::Ledger;
use crate::shell::{self, Join};
use crate::ui;

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
    /// new ones closed) until [`crate::SimPhoneHandle::set_offline`]`(false)`.
    pub offline_after_commands: Option<u64>,
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

/// What the phone counted so far.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    pub connections: u64,
    pub streams: u64,
    pub shell_commands: u64,
    pub dumps: u64,
    pub dump_failures: u64,
    pub taps: u64,
    pub swipes: u64,
    pub keyevents: u64,
    pub screencaps: u64,
    pub am_starts: u64,
    pub sync_sessions: u64,
    pub malformed_packets: u64,
    /// Simulated device time spent on commands, ms (accounted in both profiles).
    pub device_time_ms: u64,
}

/// Result of one command line.
#[derive(Debug, Default)]
pub struct Exec {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub code: i32,
    /// How long a real phone would have taken (slept only in the realistic profile).
    pub delay: Duration,
}

#[derive(Debug, Clone)]
struct File {
    data: Arc<Vec<u8>>,
    mtime: u32,
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
    pub faults: FaultPlan,
    pub dump_format: DumpFormat,
    pub popups: PopupSchedule,
    pub show_goods_id: bool,
    pub launch_app: bool,
}

/// The phone.
pub struct Device {
    pub(crate) app: App,
    pub(crate) cfg: DeviceConfig,
    files: BTreeMap<String, File>,
    pub(crate) counters: Counters,
    rng: StdRng,
    /// Transition time owed by the next observation (dump/screencap), ms.
    pending_transition_ms: u64,
    /// Last successful dump text, for stale /dev/tty dumps.
    last_dump: Option<String>,
    pub(crate) offline: bool,
    pub(crate) extra_dump_faults: Vec<(u64, DumpFault)>,
}

pub const PDD_PACKAGE: &str = ui::PDD;

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
            },
        );
        if cfg.launch_app {
            app.launch();
        }
        Device {
            app,
            rng: StdRng::seed_from_u64(cfg.seed),
            cfg,
            files: BTreeMap::new(),
            counters: Counters::default(),
            pending_transition_ms: 0,
            last_dump: None,
            offline: false,
            extra_dump_faults: Vec::new(),
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
        };
        let off = FixedOffset::east_opt(self.cfg.utc_offset_secs)
            .unwrap_or_else(|| FixedOffset::east_opt(8 * 3600).expect("valid offset"));
        utc.with_timezone(&off)
    }

    fn mtime(&self) -> u32 {
        u32::try_from(self.now().timestamp()).unwrap_or(0)
    }

    // ---- files (the sync service uses these too) ----

    pub fn read_file(&self, path: &str) -> Option<Arc<Vec<u8>>> {
        self.files.get(&normalize(path)).map(|f| f.data.clone())
    }

    pub fn write_file(&mut self, path: &str, data: Vec<u8>) {
        let mtime = self.mtime();
        self.files.insert(
            normalize(path),
            File {
                data: Arc::new(data),
                mtime,
            },
        );
    }

    /// (mode, size, mtime) of a path; directories are every prefix of a file plus the
    /// usual Android ones.
    pub fn stat(&self, path: &str) -> Option<(u32, u64, u32)> {
        let p = normalize(path);
        if let Some(f) = self.files.get(&p) {
            return Some((0o100_660, f.data.len() as u64, f.mtime));
        }
        if self.is_dir(&p) {
            return Some((0o040_771, 4096, 0));
        }
        None
    }

    fn is_dir(&self, p: &str) -> bool {
        const DIRS: &[&str] = &[
            "/",
            "/sdcard",
            "/data",
            "/data/local",
            "/data/local/tmp",
            "/storage",
            "/storage/emulated",
            "/storage/emulated/0",
        ];
        if DIRS.contains(&p) {
            return true;
        }
        let prefix = format!("{}/", p.trim_end_matches('/'));
        self.files.keys().any(|k| k.starts_with(&prefix))
    }

    /// Entries of a directory: (name, mode, size, mtime).
    pub fn list_dir(&self, path: &str) -> Vec<(String, u32, u64, u32)> {
        let p = normalize(path);
        let prefix = if p == "/" {
            "/".to_string()
        } else {
            format!("{p}/")
        };
        let mut out: BTreeMap<String, (u32, u64, u32)> = BTreeMap::new();
        for (k, f) in &self.files {
            if let Some(rest) = k.strip_prefix(&prefix) {
                match rest.split_once('/') {
                    Some((d, _)) => {
                        out.entry(d.to_string()).or_insert((0o040_771, 4096, 0));
                    }
                    None => {
                        out.insert(rest.to_string(), (0o100_660, f.data.len() as u64, f.mtime));
                    }
                }
            }
        }
        out.into_iter().map(|(n, (m, s, t))| (n, m, s, t)).collect()
    }

    // ---- latency ----

    fn cost(&mut self, lo_ms: u64, hi_ms: u64) -> u64 {
        if hi_ms <= lo_ms {
            lo_ms
        } else {
            self.rng.gen_range(lo_ms..=hi_ms)
        }
    }

    fn transition(&mut self) {
        let t = self.cost(300, 700);
        self.pending_transition_ms = self.pending_transition_ms.max(t);
    }

    fn observe_cost(&mut self) -> u64 {
        std::mem::take(&mut self.pending_transition_ms)
    }

    // ---- the shell ----

    /// Run one command line as `/system/bin/sh -c` would (see [`crate::shell`]).
    pub fn run_line(&mut self, line: &str) -> Exec {
        let mut out = Exec::default();
        let mut ms: u64 = 0;
        let parsed = match shell::parse(line) {
            Ok(p) => p,
            Err(e) => {
                out.stderr = format!("/system/bin/sh: {e}\n").into_bytes();
                out.code = 2;
                self.counters.shell_commands += 1;
                return out;
            }
        };
        let mut status = 0;
        let mut skipping = false;
        let mut piped: Option<Vec<u8>> = None;
        let cmds = &parsed.commands;
        for (i, (join, cmd)) in cmds.iter().enumerate() {
            // A pipeline is skipped (or run) as a whole: `false && a | b` runs neither.
            skipping = match join {
                Join::Pipe => skipping,
                Join::IfOk => status != 0,
                Join::IfFailed => status == 0,
                Join::Always => false,
            };
            let feeds_next = matches!(cmds.get(i + 1), Some((Join::Pipe, _)));
            if skipping {
                continue;
            }
            let stdin = if *join == Join::Pipe {
                piped.take().unwrap_or_default()
            } else {
                Vec::new()
            };
            let argv: Vec<String> = cmd.words.iter().map(|w| shell::render(w, status)).collect();
            self.counters.shell_commands += 1;
            let mut r = self.builtin(&argv, &stdin);
            ms += r.1;
            status = r.0.code;
            if cmd.stderr_to_stdout {
                let e = std::mem::take(&mut r.0.stderr);
                r.0.stdout.extend_from_slice(&e);
            }
            if feeds_next {
                piped = Some(if cmd.stdout_null {
                    Vec::new()
                } else {
                    std::mem::take(&mut r.0.stdout)
                });
            } else if !cmd.stdout_null {
                out.stdout.extend_from_slice(&r.0.stdout);
            }
            if !cmd.stderr_null {
                out.stderr.extend_from_slice(&r.0.stderr);
            }
            if let Some(n) = self.cfg.faults.offline_after_commands {
                if self.counters.shell_commands >= n {
                    self.offline = true;
                }
            }
        }
        out.code = status;
        self.counters.device_time_ms += ms;
        out.delay = Duration::from_millis(ms);
        out
    }

    fn builtin(&mut self, argv: &[String], stdin: &[u8]) -> (Exec, u64) {
        let Some(name) = argv.first() else {
            return (Exec::default(), 0);
        };
        let args: Vec<&str> = argv[1..].iter().map(String::as_str).collect();
        let mut e = Exec::default();
        let mut ms = 2;
        match name.as_str() {
            "true" | ":" => {}
            "false" => e.code = 1,
            "echo" => {
                let (nl, rest) = match args.first() {
                    Some(&"-n") => (false, &args[1..]),
                    _ => (true, &args[..]),
                };
                e.stdout = rest.join(" ").into_bytes();
                if nl {
                    e.stdout.push(b'\n');
                }
            }
            "uiautomator" | "/system/bin/uiautomator" => ms = self.uiautomator(&args, &mut e),
            "input" | "/system/bin/input" => ms = self.input(&args, &mut e),
            "am" | "/system/bin/am" => ms = self.am(&args, &mut e),
            "monkey" => {
                if args.contains(&PDD_PACKAGE) {
                    let o = self.app.launch();
                    if o.transition {
                        self.transition();
                    }
                    e.stdout =
                        b"  bash arg: -p\n  bash arg: com.xunmeng.pinduoduo\nEvents injected: 1\n"
                            .to_vec();
                    ms = 300;
                } else {
                    e.stderr = b"** No activities found to run, monkey aborted.\n".to_vec();
                    e.code = 252;
                }
            }
            "screencap" | "/system/bin/screencap" => ms = self.screencap(&args, &mut e),
            "grep" => grep(&args, stdin, self, &mut e),
            "head" | "tail" => {
                let n = args
                    .iter()
                    .zip(args.iter().skip(1))
                    .find(|(a, _)| **a == "-n")
                    .and_then(|(_, v)| v.parse::<usize>().ok())
                    .or_else(|| args.iter().find_map(|a| a.strip_prefix('-')?.parse().ok()))
                    .unwrap_or(10);
                let lines: Vec<&[u8]> = stdin.split_inclusive(|&b| b == b'\n').collect();
                let pick: Vec<&[u8]> = if name == "head" {
                    lines.into_iter().take(n).collect()
                } else {
                    let skip = lines.len().saturating_sub(n);
                    lines.into_iter().skip(skip).collect()
                };
                e.stdout = pick.concat();
            }
            "wc" => {
                let lines = stdin.iter().filter(|&&b| b == b'\n').count();
                e.stdout = if args.contains(&"-l") {
                    format!("{lines}\n")
                } else {
                    let words = String::from_utf8_lossy(stdin).split_whitespace().count();
                    format!("{lines} {words} {}\n", stdin.len())
                }
                .into_bytes();
            }
            "cat" => {
                if args.is_empty() || args == ["-"] {
                    e.stdout = stdin.to_vec();
                    return (e, ms);
                }
                for a in &args {
                    match self.read_file(a) {
                        Some(d) => e.stdout.extend_from_slice(&d),
                        None => {
                            let msg = if self.stat(a).is_some() {
                                format!("cat: {a}: Is a directory\n")
                            } else {
                                format!("cat: {a}: No such file or directory\n")
                            };
                            e.stderr.extend_from_slice(msg.as_bytes());
                            e.code = 1;
                        }
                    }
                }
            }
            "rm" => {
                let force = args.iter().any(|a| a.starts_with('-') && a.contains('f'));
                for a in args.iter().filter(|a| !a.starts_with('-')) {
                    let p = normalize(a);
                    if self.files.remove(&p).is_none() {
                        let prefix = format!("{p}/");
                        let before = self.files.len();
                        self.files.retain(|k, _| !k.starts_with(&prefix));
                        if before == self.files.len() && !force {
                            e.stderr.extend_from_slice(
                                format!("rm: {a}: No such file or directory\n").as_bytes(),
                            );
                            e.code = 1;
                        }
                    }
                }
            }
            "ls" => {
                let paths: Vec<&str> = args
                    .iter()
                    .copied()
                    .filter(|a| !a.starts_with('-'))
                    .collect();
                let paths = if paths.is_empty() { vec!["/"] } else { paths };
                for p in paths {
                    match self.stat(p) {
                        Some((m, _, _)) if m & 0o040_000 != 0 => {
                            for (n, _, _, _) in self.list_dir(p) {
                                e.stdout.extend_from_slice(format!("{n}\n").as_bytes());
                            }
                        }
                        Some(_) => e.stdout.extend_from_slice(format!("{p}\n").as_bytes()),
                        None => {
                            e.stderr.extend_from_slice(
                                format!("ls: {p}: No such file or directory\n").as_bytes(),
                            );
                            e.code = 1;
                        }
                    }
                }
            }
            "mkdir" => {}
            "sleep" => {
                let secs: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(-1.0);
                if !(0.0..=60.0).contains(&secs) {
                    e.stderr = b"sleep: invalid number\n".to_vec();
                    e.code = 1;
                } else {
                    ms = (secs * 1000.0) as u64;
                }
            }
            "date" => {
                let now = self.now();
                let fmt = args
                    .iter()
                    .find_map(|a| a.strip_prefix('+'))
                    .unwrap_or("%a %b %e %H:%M:%S %Z %Y");
                let mut s = String::new();
                if write!(s, "{}", now.format(fmt)).is_err() {
                    e.stderr = b"date: bad format\n".to_vec();
                    e.code = 1;
                } else {
                    e.stdout = format!("{s}\n").into_bytes();
                }
            }
            "id" => {
                e.stdout =
                    b"uid=2000(shell) gid=2000(shell) groups=2000(shell) context=u:r:shell:s0\n"
                        .to_vec()
            }
            "getprop" => {
                let props = self.props();
                match args.first() {
                    Some(k) => {
                        let v = props
                            .iter()
                            .find(|(pk, _)| pk == k)
                            .map(|(_, v)| v.as_str());
                        e.stdout = format!("{}\n", v.unwrap_or("")).into_bytes();
                    }
                    None => {
                        for (k, v) in &props {
                            e.stdout
                                .extend_from_slice(format!("[{k}]: [{v}]\n").as_bytes());
                        }
                    }
                }
            }
            "wm" => match args.first() {
                Some(&"size") => {
                    e.stdout = format!("Physical size: {}x{}\n", self.cfg.width, self.cfg.height)
                        .into_bytes()
                }
                Some(&"density") => e.stdout = b"Physical density: 440\n".to_vec(),
                _ => {
                    e.stderr = b"usage: wm [size|density]\n".to_vec();
                    e.code = 255;
                }
            },
            "pm" => {
                if args.first() == Some(&"list") && args.get(1) == Some(&"packages") {
                    let filter = args[2..].iter().find(|a| !a.starts_with('-')).copied();
                    for p in [
                        "com.android.systemui",
                        "com.miui.home",
                        "com.tencent.mm",
                        PDD_PACKAGE,
                        "com.eg.android.AlipayGphone",
                    ] {
                        if filter.is_none_or(|f| p.contains(f)) {
                            e.stdout
                                .extend_from_slice(format!("package:{p}\n").as_bytes());
                        }
                    }
                } else {
                    e.stderr = b"Error: unknown pm command\n".to_vec();
                    e.code = 1;
                }
                ms = 150;
            }
            "dumpsys" => {
                let act = self.app.focus_activity();
                match args.first() {
                    Some(&"window") => {
                        e.stdout = format!(
                            "WINDOW MANAGER WINDOWS (dumpsys window windows)\n  Window #0 Window{{5e1a7c2 u0 {act}}}:\n    mDisplayId=0 rootTaskId=42 mSession=Session{{3f0c1d 12345:u0a123}}\n\n  mCurrentFocus=Window{{5e1a7c2 u0 {act}}}\n  mFocusedApp=ActivityRecord{{8b2e4f1 u0 {act} t42}}\n"
                        )
                        .into_bytes()
                    }
                    Some(&"activity") => {
                        e.stdout = format!(
                            "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\n  mResumedActivity: ActivityRecord{{8b2e4f1 u0 {act} t42}}\n  mFocusedApp=ActivityRecord{{8b2e4f1 u0 {act} t42}}\n"
                        )
                        .into_bytes()
                    }
                    _ => {}
                }
                ms = 120;
            }
            other => {
                e.stderr =
                    format!("/system/bin/sh: {other}: inaccessible or not found\n").into_bytes();
                e.code = 127;
            }
        }
        (e, ms)
    }

    fn props(&self) -> Vec<(String, String)> {
        [
            ("ro.product.manufacturer", "Xiaomi"),
            ("ro.product.brand", "Redmi"),
            ("ro.product.model", crate::adb::MODEL),
            ("ro.product.name", crate::adb::PRODUCT),
            ("ro.product.device", crate::adb::DEVICE),
            ("ro.build.version.release", "13"),
            ("ro.build.version.sdk", "33"),
            ("ro.serialno", "simphone0001"),
            ("persist.sys.timezone", "Asia/Shanghai"),
            ("ro.product.locale", "zh-CN"),
            ("sys.boot_completed", "1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn next_dump_fault(&mut self) -> Option<DumpFault> {
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

    /// The XML a dump would produce now.
    pub fn dump_xml(&self) -> String {
        let s = self.app.screen(self.now());
        match self.cfg.dump_format {
            DumpFormat::Pretty => ui::to_xml(&s),
            DumpFormat::Compact => ui::to_xml_compact(&s),
        }
    }

    fn uiautomator(&mut self, args: &[&str], e: &mut Exec) -> u64 {
        if args.first() != Some(&"dump") {
            e.stderr = b"Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\nruntest: executes UI automation tests\n\ndump: creates an XML dump of current UI hierarchy\n\nevents: prints out accessibility events until terminated\n".to_vec();
            e.code = 1;
            return 5;
        }
        self.counters.dumps += 1;
        let ms = self.observe_cost() + self.cost(800, 1500);
        let path = args[1..]
            .iter()
            .copied()
            .find(|a| !a.starts_with('-'))
            .unwrap_or("/sdcard/window_dump.xml");
        let fault = self.next_dump_fault();
        match fault {
            Some(DumpFault::IdleState) => {
                self.counters.dump_failures += 1;
                e.stderr = b"ERROR: could not get idle state.\n".to_vec();
                return ms;
            }
            Some(DumpFault::NullRoot) => {
                self.counters.dump_failures += 1;
                e.stderr = b"ERROR: null root node returned by UiTestAutomationBridge.\n".to_vec();
                return ms;
            }
            _ => {}
        }
        let xml = if fault == Some(DumpFault::Stale) {
            self.counters.dump_failures += 1;
            self.last_dump.clone()
        } else {
            let x = self.dump_xml();
            self.last_dump = Some(x.clone());
            Some(x)
        };
        if path == "/dev/tty" {
            if let Some(x) = xml {
                e.stdout = x.into_bytes();
            }
        } else if fault != Some(DumpFault::Stale) {
            if let Some(x) = xml {
                self.write_file(path, x.into_bytes());
            }
        }
        e.stdout
            .extend_from_slice(format!("UI hierchary dumped to: {path}\n").as_bytes());
        ms
    }

    fn input(&mut self, args: &[&str], e: &mut Exec) -> u64 {
        // `input [touchscreen|...] tap x y`: skip an optional source word.
        let args: &[&str] = match args.first() {
            Some(&("touchscreen" | "touchpad" | "mouse" | "keyboard" | "dpad")) => &args[1..],
            _ => args,
        };
        let nums = |xs: &[&str]| -> Option<Vec<i32>> {
            xs.iter()
                .map(|s| s.parse::<f64>().ok().map(|f| f as i32))
                .collect()
        };
        let bad = |e: &mut Exec, what: &str| {
            e.stderr = format!("Error: Invalid arguments for command: {what}\n").into_bytes();
            e.code = 1;
        };
        let now = self.now();
        match args.first().copied() {
            Some("tap") => match nums(&args[1..]) {
                Some(v) if v.len() == 2 => {
                    self.counters.taps += 1;
                    if self.app.tap(v[0], v[1], now).transition {
                        self.transition();
                    }
                    self.cost(70, 90)
                }
                _ => {
                    bad(e, "tap");
                    5
                }
            },
            Some("swipe") => match nums(&args[1..]) {
                Some(v) if v.len() == 4 || v.len() == 5 => {
                    self.counters.swipes += 1;
                    self.app.swipe(v[0], v[1], v[2], v[3]);
                    let dur = v.get(4).copied().unwrap_or(300).clamp(0, 10_000) as u64;
                    dur + 30
                }
                _ => {
                    bad(e, "swipe");
                    5
                }
            },
            Some("keyevent") => {
                let mut ms = 0;
                if args.len() < 2 {
                    bad(e, "keyevent");
                    return 5;
                }
                for k in &args[1..] {
                    let code = match *k {
                        "KEYCODE_BACK" => Some(4),
                        "KEYCODE_HOME" => Some(3),
                        "KEYCODE_MENU" => Some(82),
                        "KEYCODE_APP_SWITCH" => Some(187),
                        "KEYCODE_POWER" => Some(26),
                        "KEYCODE_WAKEUP" => Some(224),
                        "KEYCODE_ENTER" => Some(66),
                        s => s.parse::<i32>().ok(),
                    };
                    let Some(code) = code else {
                        e.stderr = format!("Error: Unknown keycode: {k}\n").into_bytes();
                        e.code = 1;
                        return ms + 5;
                    };
                    self.counters.keyevents += 1;
                    let o = match code {
                        4 => self.app.back(),
                        3 => self.app.home_key(),
                        _ => Default::default(),
                    };
                    if o.transition {
                        self.transition();
                    }
                    ms += self.cost(70, 90);
                }
                ms
            }
            Some("text") => {
                if args.len() < 2 {
                    bad(e, "text");
                    return 5;
                }
                let t = args[1..].join(" ");
                if !t.is_ascii() {
                    // Real `input text` cannot type non-ASCII either.
                    e.stderr = b"java.lang.IllegalArgumentException: Invalid characters\n".to_vec();
                    e.code = 1;
                    return 20;
                }
                self.app.input_text(&t.replace("%s", " "));
                60
            }
            _ => {
                e.stderr = b"Usage: input [<source>] <command> [<arg>...]\n".to_vec();
                e.code = 1;
                5
            }
        }
    }

    fn am(&mut self, args: &[&str], e: &mut Exec) -> u64 {
        match args.first().copied() {
            Some("start") | Some("start-activity") => {
                self.counters.am_starts += 1;
                let mut action = None;
                let mut data = None;
                let mut component = None;
                let mut wait = false;
                let mut stop_first = false;
                let mut i = 1;
                while i < args.len() {
                    match args[i] {
                        "-a" => {
                            action = args.get(i + 1).copied();
                            i += 1;
                        }
                        "-d" => {
                            data = args.get(i + 1).copied();
                            i += 1;
                        }
                        "-n" => {
                            component = args.get(i + 1).copied();
                            i += 1;
                        }
                        "-W" => wait = true,
                        "-S" => stop_first = true,
                        "-c" | "-t" | "-f" | "--user" => i += 1,
                        "-e" | "--es" | "--ei" | "--ez" | "--el" => i += 2,
                        _ => {}
                    }
                    i += 1;
                }
                let mut desc = String::from("Intent {");
                if let Some(a) = action {
                    let _ = write!(desc, " act={a}");
                }
                if let Some(d) = data {
                    let _ = write!(desc, " dat={d}");
                }
                if let Some(c) = component {
                    let _ = write!(desc, " cmp={c}");
                }
                desc.push_str(" }");
                if stop_first {
                    self.app.force_stop();
                }
                let result = match (data, component) {
                    (Some(url), _) => self.app.open_url(url),
                    (None, Some(c)) if c.starts_with(PDD_PACKAGE) => Ok(self.app.launch()),
                    _ => Err("no data".to_string()),
                };
                match result {
                    Ok(o) => {
                        if o.transition {
                            self.transition();
                        }
                        e.stdout = format!("Starting: {desc}\n").into_bytes();
                        if wait {
                            let act = self.app.focus_activity();
                            e.stdout.extend_from_slice(
                                format!("Status: ok\nLaunchState: WARM\nActivity: {act}\nTotalTime: 412\nWaitTime: 415\nComplete\n").as_bytes(),
                            );
                        }
                        self.cost(250, 450)
                    }
                    Err(_) => {
                        e.stdout = format!("Starting: {desc}\n").into_bytes();
                        e.stderr =
                            format!("Error: Activity not started, unable to resolve {desc}\n")
                                .into_bytes();
                        e.code = 1;
                        60
                    }
                }
            }
            Some("force-stop") => {
                if args.get(1) == Some(&PDD_PACKAGE) {
                    self.app.force_stop();
                }
                80
            }
            _ => {
                e.stderr = b"Error: unknown or missing am command\n".to_vec();
                e.code = 1;
                5
            }
        }
    }

    /// The screen as raw RGBA pixels for the `framebuffer:` service: (width, height, data,
    /// simulated cost).
    pub fn framebuffer(&mut self) -> (u32, u32, Vec<u8>, Duration) {
        self.counters.screencaps += 1;
        let ms = self.observe_cost() + self.cost(200, 350);
        self.counters.device_time_ms += ms;
        let screen = self.app.screen(self.now());
        let (w, h) = (self.cfg.width.max(1) as u32, self.cfg.height.max(1) as u32);
        let img = crate::render::render(&screen, w, h);
        let mut out = Vec::with_capacity((w * h * 4) as usize);
        for p in img.pixels() {
            out.extend_from_slice(&[p.0[0], p.0[1], p.0[2], 255]);
        }
        (w, h, out, Duration::from_millis(ms))
    }

    fn screencap(&mut self, args: &[&str], e: &mut Exec) -> u64 {
        self.counters.screencaps += 1;
        let ms = self.observe_cost() + self.cost(200, 350);
        let png = args.contains(&"-p");
        let file = args.iter().copied().find(|a| !a.starts_with('-'));
        let screen = self.app.screen(self.now());
        let w = self.cfg.width.max(1) as u32;
        let h = self.cfg.height.max(1) as u32;
        let img = crate::render::render(&screen, w, h);
        let bytes = if png || file.is_some_and(|f| f.ends_with(".png")) {
            crate::render::encode_png(&img)
        } else {
            crate::render::encode_raw(&img)
        };
        match file {
            Some(f) => self.write_file(f, bytes),
            None => e.stdout = bytes,
        }
        ms
    }
}

/// `grep [-E|-F] [-i] [-v] [-c] [-q] PATTERN [FILE...]` with fixed-string matching; under
/// `-E` (or with `\|` in a basic pattern) alternatives separated by `|` each match as a
/// fixed string. Enough for `dumpsys window | grep -E 'mCurrentFocus|mFocusedApp'`.
fn grep(args: &[&str], stdin: &[u8], d: &Device, e: &mut Exec) {
    let (mut ext, mut icase, mut invert, mut count, mut quiet) =
        (false, false, false, false, false);
    let mut rest: Vec<&str> = Vec::new();
    for a in args {
        match *a {
            s if s.starts_with('-') && s.len() > 1 && rest.is_empty() => {
                for c in s[1..].chars() {
                    match c {
                        'E' => ext = true,
                        'F' => ext = false,
                        'i' => icase = true,
                        'v' => invert = true,
                        'c' => count = true,
                        'q' => quiet = true,
                        _ => {}
                    }
                }
            }
            s => rest.push(s),
        }
    }
    let Some((pattern, files)) = rest.split_first() else {
        e.stderr = b"usage: grep [-EFicqv] PATTERN [FILE...]\n".to_vec();
        e.code = 2;
        return;
    };
    let norm = |s: &str| {
        if icase {
            s.to_lowercase()
        } else {
            s.to_string()
        }
    };
    let alts: Vec<String> = if ext {
        pattern.split('|').map(norm).collect()
    } else {
        pattern.split("\\|").map(norm).collect()
    };
    let mut input = Vec::new();
    if files.is_empty() {
        input.extend_from_slice(stdin);
    } else {
        for f in files {
            match d.read_file(f) {
                Some(b) => input.extend_from_slice(&b),
                None => {
                    e.stderr.extend_from_slice(
                        format!("grep: {f}: No such file or directory\n").as_bytes(),
                    );
                }
            }
        }
    }
    let text = String::from_utf8_lossy(&input);
    let mut n = 0;
    for line in text.lines() {
        let l = norm(line);
        if alts.iter().any(|a| l.contains(a.as_str())) != invert {
            n += 1;
            if !count && !quiet {
                e.stdout.extend_from_slice(line.as_bytes());
                e.stdout.push(b'\n');
            }
        }
    }
    if count && !quiet {
        e.stdout = format!("{n}\n").into_bytes();
    }
    e.code = if n > 0 { 0 } else { 1 };
}

/// Collapse `//`, `.` and a trailing slash; `/storage/emulated/0` and `/sdcard` are the
/// same place on Android.
pub fn normalize(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            x => parts.push(x),
        }
    }
    let mut s = format!("/{}", parts.join("/"));
    if let Some(rest) = s.strip_prefix("/storage/emulated/0") {
        if rest.is_empty() || rest.starts_with('/') {
            s = format!("/sdcard{rest}");
        }
    }
    s
}
