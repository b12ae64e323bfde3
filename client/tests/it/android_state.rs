//! The phone's own state read from real-format outputs (`fixtures/android/`, Android 13 on
//! MIUI 14; see its README for the sources): `dumpsys power`, `dumpsys battery`, the
//! keyguard in `dumpsys window` (policy section), the focus, and which window a tap at a
//! point would reach (`dumpsys window windows`). Older and other formats are unit-tested
//! beside the parsers (`device::state`, `screen::windows`).

use std::path::PathBuf;

use cmautobuy_client::device::state::{
    assess, parse_battery, parse_focus, parse_keyguard, parse_power, Battery, DeviceState,
    Keyguard, ScreenPower, Thresholds, Verdict,
};
use cmautobuy_client::screen::windows::{cover_at, parse_windows, CoverKind};
use cmautobuy_client::screen::Point;

fn fixture(name: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/android")
        .join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn power() {
    assert_eq!(
        parse_power(&fixture("dumpsys_power_awake.txt")),
        Some(ScreenPower::On)
    );
    assert_eq!(
        parse_power(&fixture("dumpsys_power_asleep.txt")),
        Some(ScreenPower::Off)
    );
}

#[test]
fn battery_and_its_thresholds() {
    let normal = parse_battery(&fixture("dumpsys_battery_normal.txt")).expect("battery");
    assert_eq!(
        normal,
        Battery {
            percent: Some(80),
            temp_tenths_c: Some(285),
            charging: false
        }
    );
    let low = parse_battery(&fixture("dumpsys_battery_low.txt")).expect("battery");
    assert_eq!((low.percent, low.charging), (Some(12), false));
    let hot = parse_battery(&fixture("dumpsys_battery_hot_charging.txt")).expect("battery");
    assert_eq!((hot.temp_tenths_c, hot.charging), (Some(471), true));
    let verdict = |b: Battery| {
        let s = DeviceState {
            pdd_installed: true,
            screen: ScreenPower::On,
            keyguard: Keyguard::Unlocked,
            focus: None,
            battery: Some(b),
            size: None,
            pdd_version: None,
        };
        match assess(&s, Thresholds::default()) {
            Verdict::Ready { .. } => None,
            Verdict::NotReady { code, .. } => Some(code),
        }
    };
    assert_eq!(verdict(normal), None);
    assert_eq!(verdict(low), Some("BATTERY_LOW"));
    assert_eq!(verdict(hot), Some("BATTERY_HOT"));
}

#[test]
fn keyguard_and_focus() {
    for (file, want) in [
        ("dumpsys_window_pdd.txt", Keyguard::Unlocked),
        ("dumpsys_window_keyguard_swipe.txt", Keyguard::Swipe),
        (
            "dumpsys_window_keyguard_swipe_screen_off.txt",
            Keyguard::Swipe,
        ),
        ("dumpsys_window_keyguard_pin.txt", Keyguard::Secure),
        (
            "dumpsys_window_keyguard_pin_screen_off.txt",
            Keyguard::Secure,
        ),
    ] {
        assert_eq!(parse_keyguard(&fixture(file)), Some(want), "{file}");
    }
    assert_eq!(
        parse_focus(&fixture("dumpsys_window_pdd.txt")).as_deref(),
        Some("com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.activity.NewPageActivity")
    );
}

/// Points the flows tap: the top of the sheet, a middle option, the 提交订单 footer.
const TOP: Point = Point { x: 540, y: 200 };
const MIDDLE: Point = Point { x: 540, y: 1200 };
const FOOTER: Point = Point { x: 700, y: 2280 };

fn cover(file: &str, p: Point) -> Option<CoverKind> {
    let wins = parse_windows(&fixture(file));
    assert!(!wins.is_empty(), "{file}: no windows parsed");
    cover_at(&wins, p, Some(2400)).map(|c| c.kind)
}

#[test]
fn which_window_a_tap_reaches() {
    for file in ["dumpsys_window_pdd.txt", "dumpsys_window_windows_pdd.txt"] {
        for p in [TOP, MIDDLE, FOOTER] {
            assert_eq!(cover(file, p), None, "{file} {p:?}");
        }
    }
    // A heads-up takes touches in its card only.
    assert_eq!(
        cover("dumpsys_window_heads_up.txt", TOP),
        Some(CoverKind::HeadsUp)
    );
    assert_eq!(cover("dumpsys_window_heads_up.txt", FOOTER), None);
    // The pulled-down shade, the low-battery dialog (modal) and the chooser take every
    // point.
    for p in [TOP, MIDDLE, FOOTER] {
        assert_eq!(cover("dumpsys_window_shade.txt", p), Some(CoverKind::Shade));
        assert_eq!(
            cover("dumpsys_window_low_battery.txt", p),
            Some(CoverKind::SystemDialog)
        );
        assert_eq!(
            cover("dumpsys_window_chooser.txt", p),
            Some(CoverKind::Chooser)
        );
    }
    // The keyboard covers the bottom of the screen.
    assert_eq!(
        cover("dumpsys_window_keyboard.txt", FOOTER),
        Some(CoverKind::Keyboard)
    );
    assert_eq!(cover("dumpsys_window_keyboard.txt", TOP), None);
}
