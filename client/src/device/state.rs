//! The phone's own state: is the screen on, is a lock screen up
//! (and is it a swipe or a PIN / pattern / password), is PDD installed and in front, how
//! full and how hot is the battery. Pure parsers of what `dumpsys power`, `dumpsys window`
//! (its policy section) and `dumpsys battery` print, tolerant of the Android versions and
//! OEM skins seen (the formats differ: `mWakefulness=` since Android 5, `Display Power:
//! state=`, the old `mScreenOn=`; `mShowingLockscreen=` up to Android 8, the
//! `KeyguardServiceDelegate` block with `showing=` / `secure=` / `occluded=` since 6,
//! `KeyguardStateMonitor` `mIsShowing=`; battery `temperature:` in tenths of a degree),
//! and [`assess`]: what the state means for the next task.
//!
//! [`PROBE_COMMANDS`] is the one read the device check sends, as one shell round trip
//! ([`super::Device::shell_batch`]).

use serde::Serialize;

/// The commands of one device check, in order (one round trip: [`super::Device::shell_batch`]).
pub const PROBE_COMMANDS: &[&[&str]] = &[
    &["pm", "list", "packages", crate::screen::PDD_PACKAGE],
    &["dumpsys", "power"],
    &["dumpsys", "window", "policy"],
    &["dumpsys", "window", "displays"],
    &["dumpsys", "battery"],
    &["wm", "size"],
    // The installed PDD's version (live only on a proven version),
    // filtered on the phone so a few dozen bytes travel instead of the whole package
    // dump; a constant script, so no word of it comes from outside.
    &["sh", "-c", PDD_VERSION_SCRIPT],
];

/// `dumpsys package com.xunmeng.pinduoduo | grep versionName`, run by the phone's shell.
pub const PDD_VERSION_SCRIPT: &str = "dumpsys package com.xunmeng.pinduoduo | grep versionName";

/// Whether the display is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ScreenPower {
    On,
    /// Off, dozing (always-on display) or dreaming (screensaver): a key wakes it.
    Off,
    Unknown,
}

/// The lock screen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Keyguard {
    /// No lock screen in front (none, or occluded by an app allowed over it).
    Unlocked,
    /// A lock screen that one upward swipe dismisses (no credential).
    Swipe,
    /// A PIN, pattern or password: only a human may unlock it.
    Secure,
    Unknown,
}

/// What `dumpsys battery` says.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Battery {
    /// 0–100 (`level` scaled by `scale`).
    pub percent: Option<u8>,
    /// Tenths of a degree Celsius (`temperature: 285` = 28.5 °C).
    pub temp_tenths_c: Option<i32>,
    /// On a charger (AC / USB / wireless / dock powered, or status charging / full).
    pub charging: bool,
}

/// Everything one device check read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DeviceState {
    pub pdd_installed: bool,
    pub screen: ScreenPower,
    pub keyguard: Keyguard,
    /// `package/activity` of the focused window, when one is named.
    pub focus: Option<String>,
    pub battery: Option<Battery>,
    /// The screen size (`wm size`), for the unlock swipe.
    pub size: Option<(u32, u32)>,
    /// The installed PDD's `versionName` (`None`: not printed).
    pub pdd_version: Option<String>,
}

impl DeviceState {
    /// Reads the outputs of [`PROBE_COMMANDS`] (in that order; missing ones read as
    /// empty).
    pub fn from_outputs(outs: &[String]) -> DeviceState {
        let get = |i: usize| outs.get(i).map(String::as_str).unwrap_or("");
        // `displays` names the focus (Android 10+); older phones print it in every
        // section, the policy one included.
        let windows = get(3);
        let policy = get(2);
        DeviceState {
            pdd_installed: lists_package(get(0), crate::screen::PDD_PACKAGE),
            screen: parse_power(get(1))
                .or_else(|| screen_from_policy(policy))
                .unwrap_or(ScreenPower::Unknown),
            keyguard: parse_keyguard(policy)
                .or_else(|| parse_keyguard(windows))
                .unwrap_or(Keyguard::Unknown),
            focus: parse_focus(windows).or_else(|| parse_focus(policy)),
            battery: parse_battery(get(4)),
            size: parse_wm_size(get(5)),
            pdd_version: parse_version_name(get(6)),
        }
    }
}

/// The value after `key` on the first line that has it (`key` must start a word:
/// `showing=` does not match `mIsShowing=`).
fn value_of<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines().find_map(|l| {
        let mut from = 0;
        while let Some(i) = l[from..].find(key) {
            let at = from + i;
            let starts_word = at == 0
                || l[..at]
                    .chars()
                    .next_back()
                    .is_some_and(|c| c.is_whitespace() || c == ',' || c == '{');
            if starts_word {
                let rest = &l[at + key.len()..];
                let end = rest
                    .find(|c: char| c.is_whitespace() || c == ',' || c == '}')
                    .unwrap_or(rest.len());
                return Some(&rest[..end]);
            }
            from = at + key.len();
        }
        None
    })
}

fn bool_of(text: &str, key: &str) -> Option<bool> {
    match value_of(text, key)? {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// `dumpsys power`: `mWakefulness=Awake|Asleep|Dozing|Dreaming` (Android 5+), else
/// `Display Power: state=ON|OFF|DOZE|…`, else the old `mScreenOn=true|false`.
pub fn parse_power(text: &str) -> Option<ScreenPower> {
    if let Some(w) = value_of(text, "mWakefulness=") {
        return Some(match w {
            "Awake" => ScreenPower::On,
            "Asleep" | "Dozing" | "Dreaming" => ScreenPower::Off,
            _ => ScreenPower::Unknown,
        });
    }
    let display = text.lines().find_map(|l| {
        l.trim()
            .strip_prefix("Display Power: state=")
            .map(|v| v.trim().to_string())
    });
    if let Some(d) = display {
        return Some(if d == "ON" || d == "VR" {
            ScreenPower::On
        } else {
            ScreenPower::Off
        });
    }
    bool_of(text, "mScreenOn=").map(|on| {
        if on {
            ScreenPower::On
        } else {
            ScreenPower::Off
        }
    })
}

/// The policy dump's `screenState=SCREEN_STATE_ON|OFF` / `interactiveState=` (a fallback
/// when `dumpsys power` said nothing usable).
fn screen_from_policy(text: &str) -> Option<ScreenPower> {
    match value_of(text, "interactiveState=").or_else(|| value_of(text, "screenState="))? {
        "INTERACTIVE_STATE_AWAKE" | "SCREEN_STATE_ON" => Some(ScreenPower::On),
        "INTERACTIVE_STATE_SLEEP" | "SCREEN_STATE_OFF" => Some(ScreenPower::Off),
        _ => None,
    }
}

/// The lock screen from `dumpsys window policy` (or the whole `dumpsys window`):
/// showing from the `KeyguardServiceDelegate` block (`showing=`, `occluded=`), else
/// `KeyguardStateMonitor` `mIsShowing=`, else the old `mShowingLockscreen=` /
/// `mDreamingLockscreen=` / `isStatusBarKeyguard=`; secure from `secure=` (the delegate)
/// or `mSecure=` / `isSecure=` (some skins). A showing lock screen whose security cannot be
/// read is taken as [`Keyguard::Secure`]: the client never tries a swipe it cannot
/// verify is harmless.
pub fn parse_keyguard(text: &str) -> Option<Keyguard> {
    let showing = bool_of(text, "showing=")
        .or_else(|| bool_of(text, "mIsShowing="))
        .or_else(|| bool_of(text, "mKeyguardShowing="))
        .or_else(|| {
            let a = bool_of(text, "mShowingLockscreen=");
            let b = bool_of(text, "mDreamingLockscreen=");
            let c = bool_of(text, "isStatusBarKeyguard=");
            match (a, b, c) {
                (None, None, None) => None,
                _ => Some(a == Some(true) || b == Some(true) || c == Some(true)),
            }
        })?;
    let occluded = bool_of(text, "occluded=").unwrap_or(false)
        || bool_of(text, "showingAndNotOccluded=") == Some(false) && showing;
    if !showing || occluded {
        return Some(Keyguard::Unlocked);
    }
    let secure = bool_of(text, "secure=")
        .or_else(|| bool_of(text, "mSecure="))
        .or_else(|| bool_of(text, "isSecure="));
    Some(match secure {
        Some(false) => Keyguard::Swipe,
        _ => Keyguard::Secure,
    })
}

/// `dumpsys battery`: `level:`, `scale:`, `temperature:` (tenths of °C), the `… powered:`
/// lines and `status:` (2 charging, 5 full).
pub fn parse_battery(text: &str) -> Option<Battery> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            (k.trim().eq_ignore_ascii_case(name)).then(|| v.trim().to_string())
        })
    };
    let int = |name: &str| field(name).and_then(|v| v.parse::<i64>().ok());
    let level = int("level");
    let temp = int("temperature");
    if level.is_none() && temp.is_none() {
        return None;
    }
    let scale = int("scale").filter(|s| *s > 0).unwrap_or(100);
    let percent = level
        .filter(|l| *l >= 0)
        .map(|l| ((l * 100) / scale).clamp(0, 100) as u8);
    let powered = text.lines().any(|l| {
        l.trim()
            .split_once(':')
            .is_some_and(|(k, v)| k.trim().ends_with("powered") && v.trim() == "true")
    });
    let status = int("status");
    Some(Battery {
        percent,
        temp_tenths_c: temp.and_then(|t| i32::try_from(t).ok()),
        charging: powered || matches!(status, Some(2) | Some(5)),
    })
}

/// The device check's thresholds (config `battery_min_percent`, `battery_max_temp_c`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Thresholds {
    /// Below this (and not charging) the worker pauses.
    pub battery_min_percent: u8,
    /// Above this the worker pauses, charging or not.
    pub battery_max_temp_c: i32,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            battery_min_percent: 15,
            battery_max_temp_c: 45,
        }
    }
}

/// What the state means for the next task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The phone can work (the task wakes the screen or swipes the lock away first if
    /// [`Verdict::Ready::wake`] / `swipe` say so).
    Ready { wake: bool, swipe: bool },
    /// Not now: a stable code and what the operator must do. `human`: it will not fix
    /// itself (a PIN lock, PDD missing) — the pause raises an operator alert.
    NotReady {
        code: &'static str,
        message: String,
        human: bool,
    },
}

/// Judges a device state against the thresholds.
pub fn assess(s: &DeviceState, t: Thresholds) -> Verdict {
    if !s.pdd_installed {
        return Verdict::NotReady {
            code: "PDD_NOT_INSTALLED",
            message: format!(
                "{} is not installed on the phone: install PDD and log in to the shop's account",
                crate::screen::PDD_PACKAGE
            ),
            human: true,
        };
    }
    if s.keyguard == Keyguard::Secure {
        return Verdict::NotReady {
            code: "DEVICE_LOCKED",
            message: "the phone shows a PIN / pattern / password lock screen: unlock it by hand and set the screen lock to None or Swipe (Settings → Security)".into(),
            human: true,
        };
    }
    if let Some(b) = s.battery {
        if let Some(t10) = b.temp_tenths_c {
            if t10 > t.battery_max_temp_c.saturating_mul(10) {
                return Verdict::NotReady {
                    code: "BATTERY_HOT",
                    message: format!(
                        "the battery is at {}.{} °C (limit {} °C): let the phone cool down (out of the sun, off the charger stack, case off); work resumes by itself",
                        t10 / 10,
                        (t10 % 10).abs(),
                        t.battery_max_temp_c
                    ),
                    human: true,
                };
            }
        }
        if let Some(p) = b.percent {
            if p < t.battery_min_percent && !b.charging {
                return Verdict::NotReady {
                    code: "BATTERY_LOW",
                    message: format!(
                        "the battery is at {p}% and not charging (minimum {}%): plug the phone into a charger; work resumes by itself",
                        t.battery_min_percent
                    ),
                    human: true,
                };
            }
        }
    }
    Verdict::Ready {
        wake: s.screen == ScreenPower::Off,
        swipe: s.keyguard == Keyguard::Swipe,
    }
}

/// The `versionName=` of `dumpsys package NAME` (the first package section: an updated
/// system app lists its update first). `None` when absent or empty.
pub fn parse_version_name(text: &str) -> Option<String> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("versionName="))
        .map(|v| v.split_whitespace().next().unwrap_or("").to_string())
        .find(|v| !v.is_empty())
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
    fn power_in_every_known_shape() {
        assert_eq!(
            parse_power("POWER MANAGER (dumpsys power)\n\nPower Manager State:\n  mDirty=0x0\n  mWakefulness=Awake\n  mWakefulnessChanging=false\n"),
            Some(ScreenPower::On)
        );
        for w in ["Asleep", "Dozing", "Dreaming"] {
            assert_eq!(
                parse_power(&format!("  mWakefulness={w}\n")),
                Some(ScreenPower::Off),
                "{w}"
            );
        }
        assert_eq!(
            parse_power("Display Power: state=OFF\n"),
            Some(ScreenPower::Off)
        );
        assert_eq!(
            parse_power("  Display Power: state=ON\n"),
            Some(ScreenPower::On)
        );
        // Android 4.x
        assert_eq!(
            parse_power("  mScreenOn=false\n  mScreenOnBlocker=…\n"),
            Some(ScreenPower::Off)
        );
        assert_eq!(parse_power("nothing here"), None);
        // `mWakefulnessChanging=` does not shadow `mWakefulness=`.
        assert_eq!(
            parse_power("  mWakefulnessChanging=false\n  mWakefulness=Asleep\n"),
            Some(ScreenPower::Off)
        );
    }

    const DELEGATE_SWIPE: &str = "WINDOW MANAGER POLICY STATE (dumpsys window policy)\n    mSafeMode=false mSystemReady=true mSystemBooted=true\n    KeyguardServiceDelegate\n      showing=true\n      showingAndNotOccluded=true\n      inputRestricted=true\n      occluded=false\n      secure=false\n      dreaming=false\n      systemIsReady=true\n      deviceHasKeyguard=true\n      enabled=true\n      offReason=OFF_BECAUSE_OF_USER\n      currentUser=0\n      bootCompleted=true\n      screenState=SCREEN_STATE_ON\n      interactiveState=INTERACTIVE_STATE_AWAKE\n      KeyguardStateMonitor\n        mIsShowing=true\n        mSimSecure=false\n        mInputRestricted=true\n        mTrusted=false\n        mCurrentUserId=0\n";

    #[test]
    fn keyguard_from_the_policy_delegate() {
        assert_eq!(parse_keyguard(DELEGATE_SWIPE), Some(Keyguard::Swipe));
        let pin = DELEGATE_SWIPE.replace("secure=false", "secure=true");
        assert_eq!(parse_keyguard(&pin), Some(Keyguard::Secure));
        let gone = DELEGATE_SWIPE
            .replace("showing=true", "showing=false")
            .replace("mIsShowing=true", "mIsShowing=false");
        assert_eq!(parse_keyguard(&gone), Some(Keyguard::Unlocked));
        // Occluded by an app allowed over the lock screen: not in the way.
        let occluded = DELEGATE_SWIPE.replace("occluded=false", "occluded=true");
        assert_eq!(parse_keyguard(&occluded), Some(Keyguard::Unlocked));
        assert_eq!(screen_from_policy(DELEGATE_SWIPE), Some(ScreenPower::On));
    }

    #[test]
    fn keyguard_old_and_skin_shapes() {
        // Android ≤ 8 `dumpsys window policy`.
        assert_eq!(
            parse_keyguard(
                "    mShowingLockscreen=true mShowingDream=false mDreamingLockscreen=false\n"
            ),
            Some(Keyguard::Secure),
            "security unknown: never swiped"
        );
        assert_eq!(
            parse_keyguard(
                "    mShowingLockscreen=false mShowingDream=false mDreamingLockscreen=false\n"
            ),
            Some(Keyguard::Unlocked)
        );
        assert_eq!(
            parse_keyguard(
                "    mStatusBar=Window{…} isStatusBarKeyguard=true\n    mSecure=false\n"
            ),
            Some(Keyguard::Swipe)
        );
        // Monitor only.
        assert_eq!(
            parse_keyguard("      KeyguardStateMonitor\n        mIsShowing=false\n"),
            Some(Keyguard::Unlocked)
        );
        assert_eq!(parse_keyguard("no keyguard lines"), None);
    }

    #[test]
    fn battery_levels_temperatures_and_chargers() {
        let t = "Current Battery Service state:\n  AC powered: false\n  USB powered: false\n  Wireless powered: false\n  Max charging current: 0\n  Max charging voltage: 0\n  Charge counter: 2847000\n  status: 3\n  health: 2\n  present: true\n  level: 12\n  scale: 100\n  voltage: 3701\n  temperature: 285\n  technology: Li-ion\n";
        assert_eq!(
            parse_battery(t),
            Some(Battery {
                percent: Some(12),
                temp_tenths_c: Some(285),
                charging: false
            })
        );
        let usb = t.replace("USB powered: false", "USB powered: true");
        assert!(parse_battery(&usb).unwrap().charging);
        let full = t.replace("status: 3", "status: 5");
        assert!(parse_battery(&full).unwrap().charging);
        // Android 14 adds lines; a scale of 1000 (some OEMs) scales.
        let oem = "Current Battery Service state:\n  AC powered: false\n  USB powered: false\n  Wireless powered: false\n  Dock powered: true\n  status: 2\n  level: 800\n  scale: 1000\n  temperature: 471\n  Charging state: 1\n  Charging policy: 1\n";
        assert_eq!(
            parse_battery(oem),
            Some(Battery {
                percent: Some(80),
                temp_tenths_c: Some(471),
                charging: true
            })
        );
        assert_eq!(parse_battery("Can't find service: battery\n"), None);
    }

    fn state() -> DeviceState {
        DeviceState {
            pdd_installed: true,
            screen: ScreenPower::On,
            keyguard: Keyguard::Unlocked,
            focus: None,
            battery: Some(Battery {
                percent: Some(80),
                temp_tenths_c: Some(300),
                charging: false,
            }),
            size: None,
            pdd_version: None,
        }
    }

    #[test]
    fn assess_pauses_for_a_pin_a_low_or_hot_battery_and_wakes_otherwise() {
        let t = Thresholds::default();
        assert_eq!(
            assess(&state(), t),
            Verdict::Ready {
                wake: false,
                swipe: false
            }
        );
        let off = DeviceState {
            screen: ScreenPower::Off,
            keyguard: Keyguard::Swipe,
            ..state()
        };
        assert_eq!(
            assess(&off, t),
            Verdict::Ready {
                wake: true,
                swipe: true
            }
        );
        let code = |s: &DeviceState| match assess(s, t) {
            Verdict::NotReady { code, human, .. } => Some((code, human)),
            Verdict::Ready { .. } => None,
        };
        let pin = DeviceState {
            keyguard: Keyguard::Secure,
            ..state()
        };
        assert_eq!(code(&pin), Some(("DEVICE_LOCKED", true)));
        let mut low = state();
        low.battery = Some(Battery {
            percent: Some(14),
            temp_tenths_c: Some(300),
            charging: false,
        });
        assert_eq!(code(&low), Some(("BATTERY_LOW", true)));
        // Low but charging: work on.
        low.battery = low.battery.map(|b| Battery {
            charging: true,
            ..b
        });
        assert_eq!(code(&low), None);
        let mut hot = state();
        hot.battery = Some(Battery {
            percent: Some(90),
            temp_tenths_c: Some(451),
            charging: true,
        });
        assert_eq!(code(&hot), Some(("BATTERY_HOT", true)));
        let missing = DeviceState {
            pdd_installed: false,
            ..state()
        };
        assert_eq!(code(&missing), Some(("PDD_NOT_INSTALLED", true)));
        // An unreadable battery does not pause.
        let unknown = DeviceState {
            battery: None,
            ..state()
        };
        assert_eq!(code(&unknown), None);
    }

    #[test]
    fn from_outputs_reads_the_probe_in_order() {
        let outs = vec![
            "package:com.xunmeng.pinduoduo\n".to_string(),
            "  mWakefulness=Asleep\n".to_string(),
            DELEGATE_SWIPE.to_string(),
            "  mCurrentFocus=Window{5e1a7c2 u0 com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.ui.activity.HomeActivity}\n".to_string(),
            "  level: 50\n  temperature: 300\n".to_string(),
            "Physical size: 1080x2400\n".to_string(),
            "    versionName=7.36.0\n".to_string(),
        ];
        let s = DeviceState::from_outputs(&outs);
        assert_eq!(s.pdd_version.as_deref(), Some("7.36.0"));
        assert_eq!(s.size, Some((1080, 2400)));
        // Missing sections read as empty: no version.
        assert_eq!(DeviceState::from_outputs(&outs[..6]).pdd_version, None);
        assert!(s.pdd_installed);
        assert_eq!(s.screen, ScreenPower::Off);
        assert_eq!(s.keyguard, Keyguard::Swipe);
        assert_eq!(
            s.focus.as_deref(),
            Some("com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.ui.activity.HomeActivity")
        );
        assert_eq!(s.battery.and_then(|b| b.percent), Some(50));
    }
}
