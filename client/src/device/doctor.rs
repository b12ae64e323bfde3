//! `cmautobuy-client doctor`: is this phone ready to be driven?
//!
//! Checks, in order, stopping at the first that makes the rest meaningless: the
//! device's state (listed, online, authorized), then model and Android version
//! (`getprop`), screen size (`wm size`), whether PDD is installed
//! (`pm list packages com.xunmeng.pinduoduo`) and what is in the foreground
//! (`dumpsys window`). The parsers are pure functions tested on recorded outputs.
//!
//! Ready means: state `device`, a known screen size, PDD installed. PDD not being in the
//! foreground is reported but is not a problem (flows open goods pages by URL).

use serde::Serialize;

use std::time::Duration;

use super::adb::AdbDevice;
use super::port::{Device, DeviceError, KeyCode};
use super::state::{self, DeviceState, Keyguard, ScreenPower, Thresholds, Verdict};
pub use super::state::{lists_package, parse_focus, parse_version_name, parse_wm_size};
use crate::screen::{Point, PDD_PACKAGE};

/// One thing that keeps the device from being ready.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// Stable code (the [`DeviceError::code`] when an error caused it).
    pub code: String,
    pub message: String,
}

/// What `doctor` found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DoctorReport {
    pub device: String,
    /// `adb-server` or `tcp`.
    pub transport: String,
    /// `device`, `offline`, `unauthorized`, `not found`, `unreachable`, …
    pub state: String,
    pub authorized: Option<bool>,
    pub model: Option<String>,
    pub android_version: Option<String>,
    pub screen_width: Option<u32>,
    pub screen_height: Option<u32>,
    pub pdd_installed: Option<bool>,
    /// The installed PDD's `versionName` (`dumpsys package com.xunmeng.pinduoduo`).
    pub pdd_version: Option<String>,
    /// `package/activity` of the focused window.
    pub foreground: Option<String>,
    pub pdd_in_foreground: Option<bool>,
    /// Whether the phone accepts injected input (one `input keyevent 0`; MIUI / HyperOS
    /// refuse it until "USB调试（安全设置）" is on).
    pub input_injection: Option<bool>,
    /// `on` / `off` / `unknown` (`dumpsys power`); an off screen is woken before a task.
    pub screen: Option<ScreenPower>,
    /// The lock screen (`dumpsys window policy`): `unlocked`, `swipe` (swiped away before
    /// a task), `secure` (a PIN / pattern: only a human unlocks it), `unknown`.
    pub lock: Option<Keyguard>,
    /// `dumpsys battery`.
    pub battery: Option<state::Battery>,
    pub problems: Vec<Problem>,
    pub ready: bool,
}

impl DoctorReport {
    fn new(dev: &AdbDevice) -> DoctorReport {
        DoctorReport {
            device: dev.address().label(),
            transport: dev.address().transport().to_string(),
            state: "unknown".into(),
            authorized: None,
            model: None,
            android_version: None,
            screen_width: None,
            screen_height: None,
            pdd_installed: None,
            pdd_version: None,
            foreground: None,
            pdd_in_foreground: None,
            input_injection: None,
            screen: None,
            lock: None,
            battery: None,
            problems: Vec::new(),
            ready: false,
        }
    }

    fn problem(&mut self, code: &str, message: impl Into<String>) {
        self.problems.push(Problem {
            code: code.to_string(),
            message: message.into(),
        });
    }

    fn error(&mut self, e: &DeviceError) {
        self.problem(e.code(), e.to_string());
    }

    /// The report for a human, one fact per line.
    pub fn render_text(&self) -> String {
        let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
        let yes_no = |v: Option<bool>| match v {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        };
        let mut s = String::new();
        s.push_str(&format!(
            "device:       {} ({})\n",
            self.device, self.transport
        ));
        s.push_str(&format!("state:        {}\n", self.state));
        s.push_str(&format!("authorized:   {}\n", yes_no(self.authorized)));
        s.push_str(&format!("model:        {}\n", opt(&self.model)));
        s.push_str(&format!("android:      {}\n", opt(&self.android_version)));
        match (self.screen_width, self.screen_height) {
            (Some(w), Some(h)) => s.push_str(&format!("screen:       {w}x{h}\n")),
            _ => s.push_str("screen:       -\n"),
        }
        let pdd = match self.pdd_installed {
            Some(true) => "installed",
            Some(false) => "NOT installed",
            None => "-",
        };
        match &self.pdd_version {
            Some(v) => s.push_str(&format!("pdd:          {pdd} ({v})\n")),
            None => s.push_str(&format!("pdd:          {pdd}\n")),
        }
        s.push_str(&format!("foreground:   {}\n", opt(&self.foreground)));
        s.push_str(&format!(
            "input:        {}\n",
            match self.input_injection {
                Some(true) => "accepted",
                Some(false) => "REFUSED (INJECT_EVENTS)",
                None => "-",
            }
        ));
        for p in &self.problems {
            s.push_str(&format!("problem:      [{}] {}\n", p.code, p.message));
        }
        s.push_str(if self.ready {
            "ready:        yes\n"
        } else {
            "ready:        NO\n"
        });
        s
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// Examine the device. Never fails: what goes wrong becomes a problem in the report.
pub fn check(dev: &AdbDevice) -> DoctorReport {
    check_with(dev, Thresholds::default())
}

/// [`check`] with the configured battery thresholds: also reads the screen, the lock
/// screen and the battery (one [`read_state`] round trip) and judges them as the claim
/// loop's device check does ([`state::assess`]: a PIN lock, a low or hot battery are
/// problems; an off screen or a swipe lock are not — a task wakes and swipes first).
pub fn check_with(dev: &AdbDevice, t: Thresholds) -> DoctorReport {
    let mut r = DoctorReport::new(dev);
    match dev.state() {
        Ok(state) => {
            r.authorized = match state.as_str() {
                "unauthorized" => Some(false),
                "device" => Some(true),
                _ => None,
            };
            r.state = state;
        }
        Err(e) => {
            r.state = match &e {
                DeviceError::Unauthorized { .. } => {
                    r.authorized = Some(false);
                    "unauthorized".into()
                }
                DeviceError::NotFound { .. } => "not found".into(),
                DeviceError::AdbServerUnavailable { .. } => "adb server unreachable".into(),
                DeviceError::Offline { state, .. } => state.clone(),
                _ => "unreachable".into(),
            };
            r.error(&e);
            return r;
        }
    }
    if r.state != "device" {
        match r.state.as_str() {
            "unauthorized" => r.problem(
                "DEVICE_UNAUTHORIZED",
                "accept the USB debugging prompt on the phone (tick \"always allow\")",
            ),
            "not found" => r.problem(
                "DEVICE_NOT_FOUND",
                "the adb server does not list this serial (cable, `adb connect`, `adb devices`)",
            ),
            other => r.problem("DEVICE_OFFLINE", format!("the device is {other}")),
        }
        return r;
    }

    match getprop(dev, "ro.product.model") {
        Ok(v) => r.model = v,
        Err(e) => {
            // If the first command fails the rest will too.
            r.error(&e);
            return r;
        }
    }
    r.android_version = getprop(dev, "ro.build.version.release").ok().flatten();

    match dev.shell(&["wm", "size"]) {
        Ok(o) => match parse_wm_size(&o.stdout_text()) {
            Some((w, h)) => {
                r.screen_width = Some(w);
                r.screen_height = Some(h);
            }
            None => r.problem("SCREEN_SIZE_UNKNOWN", "`wm size` printed no size"),
        },
        Err(e) => r.error(&e),
    }

    match dev.shell(&["pm", "list", "packages", PDD_PACKAGE]) {
        Ok(o) => {
            let installed = lists_package(&o.stdout_text(), PDD_PACKAGE);
            r.pdd_installed = Some(installed);
            if !installed {
                r.problem(
                    "PDD_NOT_INSTALLED",
                    format!("{PDD_PACKAGE} is not installed on the phone"),
                );
            } else if let Ok(o) = dev.shell(&["dumpsys", "package", PDD_PACKAGE]) {
                r.pdd_version = parse_version_name(&o.stdout_text());
            }
        }
        Err(e) => r.error(&e),
    }

    match dev.shell(&["dumpsys", "window"]) {
        Ok(o) => {
            r.foreground = parse_focus(&o.stdout_text());
            r.pdd_in_foreground = r
                .foreground
                .as_ref()
                .map(|f| f.starts_with(&format!("{PDD_PACKAGE}/")));
        }
        Err(e) => r.error(&e),
    }

    // The MIUI trap: `input` is refused until "USB调试（安全设置）" is on. One key no app
    // acts on (KEYCODE_UNKNOWN) tells.
    match dev.key(KeyCode::UNKNOWN) {
        Ok(()) => r.input_injection = Some(true),
        Err(e @ DeviceError::InputDenied { .. }) => {
            r.input_injection = Some(false);
            r.problem(e.failure_code(), e.to_string());
        }
        Err(e) => r.error(&e),
    }

    match read_state(dev) {
        Ok(st) => {
            r.screen = Some(st.screen);
            r.lock = Some(st.keyguard);
            r.battery = st.battery;
            // PDD missing is already a problem above.
            if st.pdd_installed {
                if let Verdict::NotReady { code, message, .. } = state::assess(&st, t) {
                    r.problem(code, message);
                }
            }
        }
        Err(p) => r.problems.push(p),
    }

    r.ready = r.problems.is_empty() && r.screen_width.is_some() && r.pdd_installed == Some(true);
    r
}

/// The claim loop's device check: **one shell round trip**
/// ([`Device::shell_batch`] of [`state::PROBE_COMMANDS`]: `pm list packages`, `dumpsys
/// power`, `dumpsys window policy`, `dumpsys window displays`, `dumpsys battery`, `wm
/// size`). Answering proves the phone is listed, online and authorised (otherwise the call
/// fails with that error's code); the outputs say whether PDD is installed, the screen
/// is on, a lock screen is up (swipe or PIN), and the battery's level and temperature.
/// A screen that is off or a swipe lock is not a problem here (the task wakes and swipes
/// first, [`wake_and_unlock`]); a PIN lock, a low or hot battery and a missing PDD are.
/// Bounded by the device's deadlines.
pub fn probe_with(dev: &dyn Device, t: Thresholds) -> Result<DeviceState, Problem> {
    let state = read_state(dev)?;
    match state::assess(&state, t) {
        Verdict::Ready { .. } => Ok(state),
        Verdict::NotReady { code, message, .. } => Err(Problem {
            code: code.into(),
            message,
        }),
    }
}

/// [`probe_with`] with the default thresholds.
pub fn probe(dev: &dyn Device) -> Result<(), Problem> {
    probe_with(dev, Thresholds::default()).map(drop)
}

/// One read of the phone's state (one round trip).
pub fn read_state(dev: &dyn Device) -> Result<DeviceState, Problem> {
    let outs = dev
        .shell_batch(state::PROBE_COMMANDS)
        // The task-level code (`DEVICE_OFFLINE` for a refused, cut or timed-out
        // connection alike: a phone nobody listens for yet is offline, not a protocol
        // error); the message keeps the detail.
        .map_err(|e| Problem {
            code: e.failure_code().into(),
            message: e.to_string(),
        })?;
    if let Some(pm) = outs.first() {
        if !pm.success() && !lists_package(&pm.stdout_text(), PDD_PACKAGE) {
            return Err(Problem {
                code: "DEVICE_COMMAND_FAILED".into(),
                message: format!(
                    "`pm list packages` failed: {}",
                    format!("{}{}", pm.stdout_text(), pm.stderr_text()).trim()
                ),
            });
        }
    }
    let texts: Vec<String> = outs.iter().map(|o| o.stdout_text()).collect();
    Ok(DeviceState::from_outputs(&texts))
}

/// What [`wake_and_unlock`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WakeReport {
    /// `KEYCODE_WAKEUP` sent (the screen was off).
    pub woke: bool,
    /// One upward swipe sent (a swipe lock screen was up).
    pub swiped: bool,
    /// Device round trips spent (reads, the key, the swipe).
    pub round_trips: u32,
}

/// Reads after a wake or a swipe before giving up on seeing its effect.
pub const WAKE_REREADS: u32 = 3;

/// Before a task: read the state; a screen that is off gets
/// `KEYCODE_WAKEUP`, a swipe lock screen one upward swipe, each verified by a re-read
/// (at most [`WAKE_REREADS`], `pause` between them); a PIN / pattern lock is never
/// attempted (`DEVICE_LOCKED`), nor a lock screen that is still up after the swipe.
/// The common case — screen on, no lock — costs one round trip.
pub fn wake_and_unlock(
    dev: &dyn Device,
    t: Thresholds,
    pause: &dyn Fn(Duration),
) -> Result<(DeviceState, WakeReport), Problem> {
    let mut report = WakeReport::default();
    let mut st = read_state(dev)?;
    report.round_trips += 1;
    let device_error = |e: DeviceError| Problem {
        code: e.code().into(),
        message: e.to_string(),
    };
    let not_ready = |v: Verdict| match v {
        Verdict::NotReady { code, message, .. } => Some(Problem {
            code: code.into(),
            message,
        }),
        Verdict::Ready { .. } => None,
    };
    if let Some(p) = not_ready(state::assess(&st, t)) {
        return Err(p);
    }
    if st.screen == ScreenPower::Off {
        dev.key(KeyCode::WAKEUP).map_err(device_error)?;
        report.woke = true;
        report.round_trips += 1;
        st = reread_until(dev, pause, &mut report, |s| s.screen != ScreenPower::Off)?;
        if st.screen == ScreenPower::Off {
            return Err(Problem {
                code: "DEVICE_COMMAND_FAILED".into(),
                message: "the screen stayed off after KEYCODE_WAKEUP".into(),
            });
        }
        if let Some(p) = not_ready(state::assess(&st, t)) {
            return Err(p);
        }
    }
    if st.keyguard == Keyguard::Swipe {
        let (w, h) = st.size.unwrap_or((1080, 2400));
        let x = i32::try_from(w / 2).unwrap_or(540);
        let from = Point {
            x,
            y: i32::try_from(h.saturating_mul(4) / 5).unwrap_or(1920),
        };
        let to = Point {
            x,
            y: i32::try_from(h / 5).unwrap_or(480),
        };
        dev.swipe(from, to, Duration::from_millis(300))
            .map_err(device_error)?;
        report.swiped = true;
        report.round_trips += 1;
        st = reread_until(dev, pause, &mut report, |s| s.keyguard != Keyguard::Swipe)?;
        if st.keyguard != Keyguard::Unlocked && st.keyguard != Keyguard::Unknown {
            return Err(Problem {
                code: "DEVICE_LOCKED".into(),
                message: "the lock screen is still up after one upward swipe: unlock the phone by hand and set the screen lock to None or Swipe".into(),
            });
        }
    }
    Ok((st, report))
}

/// Re-reads the phone's state after a gesture, at most [`WAKE_REREADS`] times 300 ms
/// apart, until `done` holds; returns the last state read (whether or not `done` held).
fn reread_until(
    dev: &dyn Device,
    pause: &dyn Fn(Duration),
    report: &mut WakeReport,
    done: impl Fn(&DeviceState) -> bool,
) -> Result<DeviceState, Problem> {
    let mut st = None;
    for _ in 0..WAKE_REREADS {
        pause(Duration::from_millis(300));
        let now = read_state(dev)?;
        report.round_trips += 1;
        let finished = done(&now);
        st = Some(now);
        if finished {
            break;
        }
    }
    // WAKE_REREADS > 0, so at least one state was read.
    st.ok_or_else(|| Problem {
        code: "DEVICE_COMMAND_FAILED".into(),
        message: "no state read after the gesture".into(),
    })
}

/// The installed PDD's `versionName`: one shell round trip (`dumpsys package
/// com.xunmeng.pinduoduo | grep versionName`, filtered on the phone as in the device
/// check), read once per task for the manifest, the reports and the new-version gate
///. `None` when the phone does not answer or prints no version.
pub fn read_pdd_version(dev: &dyn Device) -> Option<String> {
    try_read_pdd_version(dev).ok().flatten()
}

/// As [`read_pdd_version`], telling a phone that did not answer (`Err`) from one that
/// printed no version (`Ok(None)`).
pub fn try_read_pdd_version(dev: &dyn Device) -> Result<Option<String>, DeviceError> {
    let o = dev.shell(&["sh", "-c", state::PDD_VERSION_SCRIPT])?;
    Ok(parse_version_name(&o.stdout_text()))
}

fn getprop(dev: &AdbDevice, name: &str) -> Result<Option<String>, DeviceError> {
    let o = dev.shell(&["getprop", name])?;
    let v = o.stdout_text().trim().to_string();
    Ok((!v.is_empty()).then_some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::device::{Png, ShellOutput, UiDump};
    use std::sync::Mutex;

    /// A phone with a screen, a lock screen and a battery; every call is one round trip.
    struct Phone {
        st: Mutex<(bool, &'static str, u32)>, // screen on, lock ("none"|"swipe"|"pin"), level
        log: Mutex<Vec<String>>,
    }

    impl Phone {
        fn new(on: bool, lock: &'static str, level: u32) -> Phone {
            Phone {
                st: Mutex::new((on, lock, level)),
                log: Mutex::new(Vec::new()),
            }
        }
        fn log(&self) -> Vec<String> {
            self.log.lock().unwrap().clone()
        }
    }

    fn out(s: String) -> ShellOutput {
        ShellOutput {
            stdout: s.into_bytes(),
            ..ShellOutput::default()
        }
    }

    impl Device for Phone {
        fn dump_ui(&self) -> Result<UiDump, DeviceError> {
            Err(DeviceError::Io("no dumps".into()))
        }
        fn tap(&self, _: Point) -> Result<(), DeviceError> {
            Err(DeviceError::Io("no taps".into()))
        }
        fn swipe(&self, from: Point, to: Point, _: Duration) -> Result<(), DeviceError> {
            self.log
                .lock()
                .unwrap()
                .push(format!("swipe {},{}->{},{}", from.x, from.y, to.x, to.y));
            let mut st = self.st.lock().unwrap();
            if st.0 && st.1 == "swipe" && to.y < from.y {
                st.1 = "none";
            }
            Ok(())
        }
        fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
            self.log.lock().unwrap().push(format!("key {}", code.0));
            if code == KeyCode::WAKEUP {
                self.st.lock().unwrap().0 = true;
            }
            Ok(())
        }
        fn open_url(&self, _: &str) -> Result<(), DeviceError> {
            Ok(())
        }
        fn screenshot(&self) -> Result<Png, DeviceError> {
            Err(DeviceError::Io("no screenshots".into()))
        }
        fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
            Err(DeviceError::Io(format!(
                "unexpected single command {argv:?}"
            )))
        }
        fn shell_batch(&self, cmds: &[&[&str]]) -> Result<Vec<ShellOutput>, DeviceError> {
            self.log
                .lock()
                .unwrap()
                .push(format!("batch of {}", cmds.len()));
            let (on, lock, level) = *self.st.lock().unwrap();
            Ok(cmds
                .iter()
                .map(|c| {
                    out(match c.get(1).copied() {
                        Some("list") => format!("package:{PDD_PACKAGE}\n"),
                        Some("power") => format!(
                            "  mWakefulness={}\n",
                            if on { "Awake" } else { "Asleep" }
                        ),
                        Some("window") if c.get(2) == Some(&"policy") => format!(
                            "    KeyguardServiceDelegate\n      showing={}\n      occluded=false\n      secure={}\n",
                            lock != "none",
                            lock == "pin"
                        ),
                        Some("battery") => format!("  USB powered: false\n  level: {level}\n  temperature: 300\n"),
                        Some("size") => "Physical size: 1080x2400\n".to_string(),
                        // `sh -c 'dumpsys package … | grep versionName'`
                        Some("-c") => "    versionName=7.36.0\n".to_string(),
                        _ => String::new(),
                    })
                })
                .collect())
        }
    }

    #[test]
    fn the_device_check_is_one_round_trip() {
        let p = Phone::new(true, "none", 80);
        let s = probe_with(&p, Thresholds::default()).expect("ready");
        assert_eq!(s.screen, ScreenPower::On);
        // The PDD version rides in the same round trip.
        assert_eq!(s.pdd_version.as_deref(), Some("7.36.0"));
        assert_eq!(p.log(), ["batch of 7"]);
        // Off and swipe-locked: still ready (the task wakes it), nothing sent.
        let p = Phone::new(false, "swipe", 80);
        assert!(probe_with(&p, Thresholds::default()).is_ok());
        assert_eq!(p.log(), ["batch of 7"]);
        let p = Phone::new(true, "pin", 80);
        assert_eq!(
            probe_with(&p, Thresholds::default()).unwrap_err().code,
            "DEVICE_LOCKED"
        );
        let p = Phone::new(true, "none", 9);
        assert_eq!(
            probe_with(&p, Thresholds::default()).unwrap_err().code,
            "BATTERY_LOW"
        );
    }

    #[test]
    fn a_phone_that_does_not_answer_is_not_an_unreadable_version() {
        // This double fails every single command, as a phone that went away does: the
        // per-task read says so (`Err`) instead of "no version" — the task then ends
        // `retry_wait DEVICE_OFFLINE`, not `PDD_VERSION_UNPROVEN` (soak finding).
        let p = Phone::new(true, "none", 80);
        assert!(try_read_pdd_version(&p).is_err());
        assert_eq!(read_pdd_version(&p), None);
    }

    #[test]
    fn wake_and_unlock_wakes_swipes_once_and_verifies() {
        let p = Phone::new(false, "swipe", 80);
        let (st, rep) = wake_and_unlock(&p, Thresholds::default(), &|_| {}).expect("unlocked");
        assert_eq!(
            (st.screen, st.keyguard),
            (ScreenPower::On, Keyguard::Unlocked)
        );
        assert_eq!(
            rep,
            WakeReport {
                woke: true,
                swiped: true,
                round_trips: 5
            }
        );
        assert_eq!(
            p.log(),
            [
                "batch of 7",
                "key 224",
                "batch of 7",
                "swipe 540,1920->540,480",
                "batch of 7"
            ]
        );
        // The common case: one read.
        let p = Phone::new(true, "none", 80);
        let (_, rep) = wake_and_unlock(&p, Thresholds::default(), &|_| {}).expect("ready");
        assert_eq!(rep.round_trips, 1);
        // A PIN: woken, never swiped, never typed into.
        let p = Phone::new(false, "pin", 80);
        let e = wake_and_unlock(&p, Thresholds::default(), &|_| {}).unwrap_err();
        assert_eq!(e.code, "DEVICE_LOCKED");
        assert!(
            p.log().iter().all(|l| !l.starts_with("swipe")),
            "{:?}",
            p.log()
        );
    }

    #[test]
    fn version_name() {
        let text = "Packages:\n  Package [com.xunmeng.pinduoduo] (a7d31c9):\n    userId=10234\n    versionCode=73600 minSdk=21 targetSdk=30\n    versionName=7.36.0\n    splits=[base]\n";
        assert_eq!(parse_version_name(text).as_deref(), Some("7.36.0"));
        assert_eq!(parse_version_name("versionName=\n"), None);
        assert_eq!(parse_version_name(""), None);
    }

    #[test]
    fn wm_size() {
        assert_eq!(
            parse_wm_size("Physical size: 1080x2400\n"),
            Some((1080, 2400))
        );
        assert_eq!(
            parse_wm_size("Physical size: 1080x2400\nOverride size: 720x1600\n"),
            Some((720, 1600))
        );
        assert_eq!(parse_wm_size("usage: wm\n"), None);
        assert_eq!(parse_wm_size("Physical size: axb\n"), None);
    }

    #[test]
    fn packages() {
        let t = "package:com.xunmeng.pinduoduo\npackage:com.xunmeng.pinduoduo.lite\n";
        assert!(lists_package(t, "com.xunmeng.pinduoduo"));
        assert!(!lists_package(
            "package:com.xunmeng.pinduoduo.lite\n",
            "com.xunmeng.pinduoduo"
        ));
        assert!(!lists_package("", "com.xunmeng.pinduoduo"));
    }

    #[test]
    fn focus() {
        let t = "  mCurrentFocus=Window{5e1a7c2 u0 com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.ui.activity.HomeActivity}\n  mFocusedApp=ActivityRecord{8b2e4f1 u0 com.x/.A t42}\n";
        assert_eq!(
            parse_focus(t).as_deref(),
            Some("com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.ui.activity.HomeActivity")
        );
        assert_eq!(
            parse_focus(
                "mCurrentFocus=null\nmFocusedApp=ActivityRecord{8b2e4f1 u0 com.x/.A t42}\n"
            )
            .as_deref(),
            Some("com.x/.A")
        );
        assert_eq!(parse_focus("nothing"), None);
    }
}
