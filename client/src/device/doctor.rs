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

use super::adb::AdbDevice;
use super::port::{Device, DeviceError};
use crate::screen::PDD_PACKAGE;

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

    r.ready = r.problems.is_empty() && r.screen_width.is_some() && r.pdd_installed == Some(true);
    r
}

/// The claim loop's cheap device check (issue 12): one shell round trip,
/// `pm list packages com.xunmeng.pinduoduo`. Answering proves the phone is listed, online
/// and authorised (otherwise the call fails with that error's code); the answer says
/// whether PDD is installed. Bounded by the device's deadlines.
pub fn probe(dev: &dyn Device) -> Result<(), Problem> {
    match dev.shell(&["pm", "list", "packages", PDD_PACKAGE]) {
        Ok(o) if lists_package(&o.stdout_text(), PDD_PACKAGE) => Ok(()),
        Ok(o) if !o.success() => Err(Problem {
            code: "DEVICE_COMMAND_FAILED".into(),
            message: format!("`pm list packages` failed: {}", o.stderr_text().trim()),
        }),
        Ok(_) => Err(Problem {
            code: "PDD_NOT_INSTALLED".into(),
            message: format!("{PDD_PACKAGE} is not installed on the phone"),
        }),
        Err(e) => Err(Problem {
            code: e.code().into(),
            message: e.to_string(),
        }),
    }
}

/// The installed PDD's `versionName`: one shell round trip (`dumpsys package
/// com.xunmeng.pinduoduo`), read once per task for the manifest and the reports (issue 12
/// item 6). `None` when the phone does not answer or prints no version.
pub fn read_pdd_version(dev: &dyn Device) -> Option<String> {
    let o = dev.shell(&["dumpsys", "package", PDD_PACKAGE]).ok()?;
    if !o.success() {
        return None;
    }
    parse_version_name(&o.stdout_text())
}

fn getprop(dev: &AdbDevice, name: &str) -> Result<Option<String>, DeviceError> {
    let o = dev.shell(&["getprop", name])?;
    let v = o.stdout_text().trim().to_string();
    Ok((!v.is_empty()).then_some(v))
}

/// `wm size`: "Physical size: 1080x2400", and "Override size: 720x1600" when someone
/// ran `wm size WxH` — the override is what the screen really uses.
pub fn parse_wm_size(text: &str) -> Option<(u32, u32)> {
    let find = |prefix: &str| {
        text.lines().find_map(|l| {
            let v = l.trim().strip_prefix(prefix)?.trim();
            let (w, h) = v.split_once('x')?;
            Some((w.trim().parse().ok()?, h.trim().parse().ok()?))
        })
    };
    find("Override size:").or_else(|| find("Physical size:"))
}

/// The `versionName=` of `dumpsys package NAME` (the first package section: an updated
/// system app lists its update first). `None` when absent or empty.
pub fn parse_version_name(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("versionName="))
        .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
        .find(|v| !v.is_empty())
}

/// `pm list packages NAME` filters by substring: look for the exact package line.
pub fn lists_package(text: &str, package: &str) -> bool {
    text.lines()
        .any(|l| l.trim().strip_prefix("package:") == Some(package))
}

/// The focused window from `dumpsys window`: `mCurrentFocus=Window{5e1a7c2 u0
/// com.xunmeng.pinduoduo/….HomeActivity}` → `com.xunmeng.pinduoduo/….HomeActivity`;
/// falls back to `mFocusedApp=ActivityRecord{… u0 pkg/act t42}`.
pub fn parse_focus(text: &str) -> Option<String> {
    let pick = |key: &str| {
        text.lines().find_map(|l| {
            let rest = l.trim().strip_prefix(key)?;
            let inner = rest.split_once('{')?.1;
            let inner = inner.split('}').next()?;
            inner
                .split_whitespace()
                .find(|w| w.contains('/'))
                .map(str::to_string)
        })
    };
    pick("mCurrentFocus=").or_else(|| pick("mFocusedApp="))
}

#[cfg(test)]
mod tests {
    use super::*;

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
