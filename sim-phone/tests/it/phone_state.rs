//! The phone's own state: the real Android 13 formats of `dumpsys power`,
//! `dumpsys battery` and `dumpsys window` (compared with `fixtures/android/`; run with
//! `UPDATE_EXPECT=1` to rewrite them, then review the diff), and each state's behaviour:
//! wake and unlock, the PIN pad, taps routed to the window on top, a heads-up that the
//! dump does not show, the shade, the keyboard, the low-battery dialog, the chooser.

use std::path::PathBuf;

use cmautobuy_sim_phone::system::state::ChooserTarget;
use cmautobuy_sim_phone::system::windows::WinKind;
use cmautobuy_sim_phone::{
    Battery, Catalog, Device, HeadsUp, LockKind, Plug, SimConfig, SystemConfig,
};

const GOODS: &str = "737116531267";

fn config(system: SystemConfig) -> SimConfig {
    let mut c = SimConfig::new(Catalog::load(&Catalog::bundled_dir()).expect("catalog"));
    c.seed = 42;
    c.start_time = Some("2026-11-30T08:02:10Z".parse().expect("time"));
    c.system = system;
    c
}

fn device(system: SystemConfig) -> Device {
    config(system).build_device().expect("device")
}

fn sh(d: &mut Device, line: &str) -> String {
    let e = d.run_line(line);
    assert_eq!(e.code, 0, "{line}: {}", String::from_utf8_lossy(&e.stderr));
    String::from_utf8(e.stdout).expect("utf8")
}

fn open_goods(d: &mut Device) {
    sh(
        d,
        &format!("am start -a android.intent.action.VIEW -p com.xunmeng.pinduoduo -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id={GOODS}'"),
    );
}

/// The centre of the first node of the dump whose text or description is `label`.
fn find(d: &Device, label: &str) -> Option<(i32, i32)> {
    let s = d.dump_screen(d.now());
    let mut all = Vec::new();
    for w in &s.windows {
        w.walk(&mut all);
    }
    all.iter()
        .find(|n| n.text == label || n.desc == label || n.text.starts_with(label))
        .map(|n| n.bounds.center())
}

fn tap_label(d: &mut Device, label: &str) {
    let (x, y) = find(d, label).unwrap_or_else(|| panic!("{label} on screen"));
    sh(d, &format!("input tap {x} {y}"));
}

/// The goods page with its sheet open (发起拼单).
fn sheet(d: &mut Device) {
    open_goods(d);
    tap_label(d, "发起拼单");
    assert_eq!(d.app().page_name(), "sku_sheet");
}

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/android")
        .join(name)
}

/// Compare with (or, with UPDATE_EXPECT=1, write) `fixtures/android/NAME`.
fn expect(name: &str, text: &str) {
    let p = fixture(name);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&p, text).expect("write fixture");
        return;
    }
    let want = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert_eq!(
        text, want,
        "{name} differs from the sim's output (UPDATE_EXPECT=1?)"
    );
}

#[test]
fn fixtures_power_and_battery() {
    let mut d = device(SystemConfig::default());
    expect("dumpsys_power_awake.txt", &sh(&mut d, "dumpsys power"));
    expect("dumpsys_battery_normal.txt", &sh(&mut d, "dumpsys battery"));
    sh(&mut d, "input keyevent KEYCODE_POWER");
    expect("dumpsys_power_asleep.txt", &sh(&mut d, "dumpsys power"));
    let mut d = device(SystemConfig::default());
    d.system_mut().set_battery(Battery {
        level: 12,
        temperature_tenths: 312,
        plug: Plug::None,
    });
    expect("dumpsys_battery_low.txt", &sh(&mut d, "dumpsys battery"));
    d.system_mut().set_battery(Battery {
        level: 64,
        temperature_tenths: 471,
        plug: Plug::Ac,
    });
    expect(
        "dumpsys_battery_hot_charging.txt",
        &sh(&mut d, "dumpsys battery"),
    );
}

#[test]
fn fixtures_window() {
    // PDD in front (the sheet), nothing over it.
    let mut d = device(SystemConfig::default());
    sheet(&mut d);
    expect("dumpsys_window_pdd.txt", &sh(&mut d, "dumpsys window"));
    expect(
        "dumpsys_window_windows_pdd.txt",
        &sh(&mut d, "dumpsys window windows"),
    );
    expect(
        "dumpsys_activity_activities_pdd.txt",
        &sh(&mut d, "dumpsys activity activities"),
    );

    // A heads-up notification over the sheet's top.
    d.system_mut().heads_up = Some(HeadsUp::wechat("张三", "今晚一起吃饭吗？"));
    expect("dumpsys_window_heads_up.txt", &sh(&mut d, "dumpsys window"));
    d.system_mut().heads_up = None;

    // The shade pulled down.
    sh(&mut d, "cmd statusbar expand-notifications");
    expect("dumpsys_window_shade.txt", &sh(&mut d, "dumpsys window"));
    sh(&mut d, "cmd statusbar collapse");

    // The low-battery dialog.
    d.system_mut().set_battery(Battery {
        level: 19,
        temperature_tenths: 300,
        plug: Plug::None,
    });
    assert!(d.system().low_battery_dialog);
    expect(
        "dumpsys_window_low_battery.txt",
        &sh(&mut d, "dumpsys window"),
    );

    // The keyboard over the sheet's bottom (quantity field focused).
    let mut d = device(SystemConfig {
        keyboard: true,
        ..SystemConfig::default()
    });
    sheet(&mut d);
    tap_label(&mut d, "1");
    expect("dumpsys_window_keyboard.txt", &sh(&mut d, "dumpsys window"));

    // The chooser after an https link without a package.
    let mut d = device(SystemConfig {
        second_browser: true,
        ..SystemConfig::default()
    });
    sh(&mut d, &format!("am start -a android.intent.action.VIEW -d 'https://mobile.yangkeduo.com/goods.html?goods_id={GOODS}'"));
    expect("dumpsys_window_chooser.txt", &sh(&mut d, "dumpsys window"));

    // The keyguards, screen off and on.
    for (lock, name) in [(LockKind::Swipe, "swipe"), (LockKind::Pin, "pin")] {
        let mut d = device(SystemConfig {
            lock,
            ..SystemConfig::default()
        });
        open_goods(&mut d);
        sh(&mut d, "input keyevent 26");
        expect(
            &format!("dumpsys_window_keyguard_{name}_screen_off.txt"),
            &sh(&mut d, "dumpsys window"),
        );
        sh(&mut d, "input keyevent KEYCODE_WAKEUP");
        expect(
            &format!("dumpsys_window_keyguard_{name}.txt"),
            &sh(&mut d, "dumpsys window"),
        );
        if lock == LockKind::Swipe {
            expect(
                "dumpsys_activity_activities_keyguard.txt",
                &sh(&mut d, "dumpsys activity activities"),
            );
        }
    }
}

#[test]
fn fixtures_dumps_of_system_windows() {
    // What `uiautomator dump` gives on the keyguard, the PIN pad, the shade, the dialog
    // and the chooser (the active window each time).
    let mut d = device(SystemConfig {
        lock: LockKind::Pin,
        ..SystemConfig::default()
    });
    open_goods(&mut d);
    sh(&mut d, "input keyevent 26");
    sh(&mut d, "input keyevent 224");
    expect(
        "uiautomator_keyguard.xml",
        &sh(&mut d, "uiautomator dump /dev/tty"),
    );
    sh(&mut d, "input swipe 540 1800 540 600 300");
    expect(
        "uiautomator_pin_pad.xml",
        &sh(&mut d, "uiautomator dump /dev/tty"),
    );
    let mut d = device(SystemConfig {
        second_browser: true,
        ..SystemConfig::default()
    });
    sh(&mut d, &format!("am start -a android.intent.action.VIEW -d 'https://mobile.yangkeduo.com/goods.html?goods_id={GOODS}'"));
    expect(
        "uiautomator_chooser.xml",
        &sh(&mut d, "uiautomator dump /dev/tty"),
    );
    sh(&mut d, "input keyevent 4");
    d.system_mut().set_battery(Battery {
        level: 19,
        temperature_tenths: 300,
        plug: Plug::None,
    });
    expect(
        "uiautomator_low_battery.xml",
        &sh(&mut d, "uiautomator dump /dev/tty"),
    );
    sh(&mut d, "input keyevent 4");
    sh(&mut d, "cmd statusbar expand-notifications");
    expect(
        "uiautomator_shade.xml",
        &sh(&mut d, "uiautomator dump /dev/tty"),
    );
}

// ---- behaviour ----

fn windows_text(d: &mut Device) -> String {
    sh(d, "dumpsys window windows")
}

/// (title, package, isVisible) of each window block, top first, read back from the text.
fn parse_windows(text: &str) -> Vec<(String, String, bool)> {
    let mut out: Vec<(String, String, bool)> = Vec::new();
    for l in text.lines() {
        let t = l.trim();
        if let Some(rest) = t.strip_prefix("Window #") {
            let title = rest
                .split_once(" u0 ")
                .map(|(_, r)| r.trim_end_matches("}:").to_string())
                .unwrap_or_default();
            out.push((title, String::new(), false));
        } else if let Some(p) = t.split(" package=").nth(1) {
            if let Some(last) = out.last_mut() {
                last.1 = p.split_whitespace().next().unwrap_or("").to_string();
            }
        } else if let Some(v) = t.strip_prefix("isVisible=") {
            if let Some(last) = out.last_mut() {
                last.2 = v == "true";
            }
        }
    }
    out
}

#[test]
fn default_phone_is_awake_unlocked_uncovered() {
    let mut d = device(SystemConfig::default());
    let p = sh(&mut d, "dumpsys power");
    assert!(p.contains("mWakefulness=Awake") && p.contains("Display Power: state=ON"));
    let w = sh(&mut d, "dumpsys window policy");
    assert!(w.contains("      showing=false"));
    let ws = parse_windows(&windows_text(&mut d));
    let visible: Vec<_> = ws.iter().filter(|w| w.2).map(|w| w.1.as_str()).collect();
    assert_eq!(
        visible,
        [
            "com.android.systemui",
            "com.android.systemui",
            "com.miui.home",
            "com.android.systemui",
            "com.xunmeng.pinduoduo"
        ],
        "{ws:?}"
    );
    let b = sh(&mut d, "dumpsys battery");
    assert!(b.contains("  level: 80\n") && b.contains("  temperature: 285\n"));
}

#[test]
fn screen_off_timeout_on_simulated_time_and_wakeup() {
    let mut d = device(SystemConfig {
        screen_off_timeout_ms: Some(5_000),
        lock: LockKind::Swipe,
        ..SystemConfig::default()
    });
    open_goods(&mut d);
    // Dumps are not user activity: the simulated time they take runs the countdown down.
    for _ in 0..10 {
        d.run_line("uiautomator dump /dev/tty");
    }
    assert!(d.counters().device_time_ms >= 5_000);
    assert!(!d.system().screen_on);
    assert!(d.system().locked);
    assert!(sh(&mut d, "dumpsys power").contains("mWakefulness=Asleep"));
    assert!(sh(&mut d, "dumpsys power").contains("Display Power: state=OFF"));
    // A screenshot of a screen that is off is black.
    let png = d.run_line("screencap -p").stdout;
    let img = image::load_from_memory(&png).expect("png").to_rgb8();
    assert!(img.pixels().all(|p| p.0 == [0, 0, 0]));
    // Taps and BACK do nothing while the screen is off; the tap is recorded undelivered.
    let before = d.app().page_name();
    sh(&mut d, "input tap 540 1200");
    sh(&mut d, "input keyevent 4");
    assert_eq!(d.app().page_name(), before);
    let last = d.system().taps.last().cloned().expect("recorded");
    assert_eq!(last.package, None);
    // The dump shows the keyguard (systemui), not the goods page.
    let x = sh(&mut d, "uiautomator dump /dev/tty");
    assert!(x.contains("上滑解锁") && !x.contains("发起拼单"), "{x}");
    // WAKEUP: screen on, still locked; an upward swipe unlocks.
    sh(&mut d, "input keyevent KEYCODE_WAKEUP");
    assert!(d.system().screen_on && d.system().locked);
    sh(&mut d, "input swipe 540 1800 540 600 300");
    assert!(!d.system().locked);
    assert!(sh(&mut d, "uiautomator dump /dev/tty").contains("发起拼单"));
    // Input is user activity: a tap restarts the countdown.
    let t0 = d.counters().device_time_ms;
    sh(&mut d, "input keyevent 0");
    assert_eq!(d.system().last_activity_ms, t0);
}

#[test]
fn pin_lock_cannot_be_opened() {
    let mut d = device(SystemConfig {
        lock: LockKind::Pin,
        start_screen_off: true,
        ..SystemConfig::default()
    });
    assert!(sh(&mut d, "dumpsys window policy").contains("      secure=true"));
    sh(&mut d, "input keyevent 224");
    sh(&mut d, "wm dismiss-keyguard");
    assert!(d.system().locked && d.system().bouncer);
    let x = sh(&mut d, "uiautomator dump /dev/tty");
    assert!(x.contains("keyguard_pin_view") && x.contains("com.android.systemui"));
    sh(&mut d, "input text 1234");
    sh(&mut d, "input keyevent 66");
    assert!(d.system().locked);
    assert_eq!(d.system().failed_unlocks, 1);
    sh(&mut d, "input swipe 540 1800 540 600 300");
    assert!(d.system().locked);
    // Every tap on the PIN pad lands in systemui.
    sh(&mut d, "input tap 270 900");
    assert_eq!(
        d.system()
            .taps
            .last()
            .and_then(|t| t.package.clone())
            .as_deref(),
        Some("com.android.systemui")
    );
}

#[test]
fn heads_up_covers_the_top_not_the_dump_and_takes_the_tap() {
    let mut d = device(SystemConfig::default());
    sheet(&mut d);
    let dump_before = sh(&mut d, "uiautomator dump /dev/tty");
    d.system_mut().heads_up = Some(HeadsUp::wechat("张三", "在吗"));
    // uiautomator dumps the active window only: PDD's, without the card.
    let dump = sh(&mut d, "uiautomator dump /dev/tty");
    assert_eq!(dump, dump_before);
    assert!(!dump.contains("在吗"));
    // dumpsys window windows shows the NotificationShade visible, touchable over the card.
    let w = windows_text(&mut d);
    assert!(
        w.contains("touchable region=SkRegion((24,95,1056,383))"),
        "{w}"
    );
    // The card covers the sheet's top: its 关闭 icon is under it (PDD's dump still shows
    // the icon; a tap there reaches systemui, not the sheet).
    let (cx, cy) = find(&d, "关闭").expect("the sheet's close icon");
    assert!(cy < 383, "关闭 at {cx},{cy}");
    // A tap inside the card lands in systemui and opens WeChat; PDD never sees it.
    sh(&mut d, &format!("input tap {cx} {cy}"));
    let t = d.system().taps.last().cloned().expect("tap");
    assert_eq!(t.package.as_deref(), Some("com.android.systemui"));
    assert_eq!(t.window.as_deref(), Some("NotificationShade"));
    let focus = sh(&mut d, "dumpsys window displays");
    assert!(focus.contains("mCurrentFocus=Window{") && focus.contains("com.tencent.mm/"));
    // BACK returns to PDD's sheet.
    sh(&mut d, "input keyevent 4");
    assert_eq!(d.app().page_name(), "sku_sheet");
    // A tap below the card reaches PDD.
    d.system_mut().heads_up = Some(HeadsUp::wechat("张三", "在吗"));
    sh(&mut d, "input tap 540 1000");
    assert_eq!(
        d.system()
            .taps
            .last()
            .and_then(|t| t.package.clone())
            .as_deref(),
        Some("com.xunmeng.pinduoduo")
    );
    // An upward swipe on the card puts it away; BACK would have gone to the app.
    sh(&mut d, "input swipe 540 300 540 100 200");
    assert!(d.system().heads_up.is_none());
    // A timed heads-up expires on simulated time.
    let now = d.counters().device_time_ms;
    let mut n = HeadsUp::wechat("李四", "?");
    n.expires_at_ms = Some(now + 1_000);
    d.system_mut().heads_up = Some(n);
    d.run_line("uiautomator dump /dev/tty");
    assert!(d.system().heads_up.is_none());
}

#[test]
fn shade_keyboard_dialog_and_their_keys() {
    let mut d = device(SystemConfig {
        keyboard: true,
        ..SystemConfig::default()
    });
    sheet(&mut d);
    // A swipe down from the status bar pulls the shade; it is the active window.
    sh(&mut d, "input swipe 540 20 540 1400 300");
    assert!(d.system().shade);
    let x = sh(&mut d, "uiautomator dump /dev/tty");
    assert!(x.contains("notification_panel") && !x.contains("发起拼单") && !x.contains("提交订单"));
    sh(&mut d, "input tap 540 1200");
    assert_eq!(
        d.system()
            .taps
            .last()
            .and_then(|t| t.package.clone())
            .as_deref(),
        Some("com.android.systemui")
    );
    sh(&mut d, "input keyevent 4");
    assert!(!d.system().shade);
    assert_eq!(
        d.app().page_name(),
        "sku_sheet",
        "BACK closed the shade only"
    );

    // The keyboard: up when the quantity field has focus, over the footer; BACK hides it.
    tap_label(&mut d, "1");
    let ws = parse_windows(&windows_text(&mut d));
    assert!(ws
        .iter()
        .any(|w| w.0 == "InputMethod" && w.2 && w.1 == "com.sohu.inputmethod.sogou.xiaomi"));
    let (x, y) = find(&d, "提交订单").expect("footer");
    sh(&mut d, &format!("input tap {x} {y}"));
    assert_eq!(
        d.system()
            .taps
            .last()
            .and_then(|t| t.package.clone())
            .as_deref(),
        Some("com.sohu.inputmethod.sogou.xiaomi")
    );
    assert!(d.app().ledger().orders().is_empty());
    sh(&mut d, "input keyevent 4");
    assert_eq!(
        d.app().page_name(),
        "sku_sheet",
        "BACK hid the keyboard only"
    );
    assert!(!parse_windows(&windows_text(&mut d))
        .iter()
        .any(|w| w.0 == "InputMethod" && w.2));

    // The low-battery dialog: the active window; a tap anywhere goes to it (and closes it).
    d.system_mut().set_battery(Battery {
        level: 15,
        temperature_tenths: 300,
        plug: Plug::None,
    });
    assert!(d.system().low_battery_dialog);
    let x = sh(&mut d, "uiautomator dump /dev/tty");
    assert!(x.contains("电量不足") && x.contains("关闭"));
    let dump_focus = sh(&mut d, "dumpsys window displays");
    assert!(
        dump_focus.contains("mCurrentFocus=Window{")
            && dump_focus.contains("u0 com.android.systemui}")
    );
    sh(&mut d, "input tap 540 300");
    assert_eq!(
        d.system()
            .taps
            .last()
            .and_then(|t| t.package.clone())
            .as_deref(),
        Some("com.android.systemui")
    );
    assert!(!d.system().low_battery_dialog);
    assert_eq!(d.app().page_name(), "sku_sheet");
    // Plugged in: no dialog even when low.
    d.system_mut().set_battery(Battery {
        level: 30,
        temperature_tenths: 300,
        plug: Plug::None,
    });
    d.system_mut().set_battery(Battery {
        level: 10,
        temperature_tenths: 300,
        plug: Plug::Usb,
    });
    assert!(!d.system().low_battery_dialog);
}

#[test]
fn chooser_only_without_a_package() {
    let url = format!("https://mobile.yangkeduo.com/goods.html?goods_id={GOODS}");
    // No second browser: PDD opens the link, as before.
    let mut d = device(SystemConfig::default());
    sh(
        &mut d,
        &format!("am start -a android.intent.action.VIEW -d '{url}'"),
    );
    assert_eq!(d.app().page_name(), "goods");

    let mut d = device(SystemConfig {
        second_browser: true,
        ..SystemConfig::default()
    });
    let home = d.app().page_name();
    let out = sh(
        &mut d,
        &format!("am start -W -a android.intent.action.VIEW -d '{url}'"),
    );
    assert!(
        out.contains("Activity: android/com.android.internal.app.ResolverActivity"),
        "{out}"
    );
    assert_eq!(d.app().page_name(), home, "PDD did not open");
    assert!(d.system().chooser.is_some());
    let x = sh(&mut d, "uiautomator dump /dev/tty");
    assert!(x.contains("使用以下方式打开") && x.contains("package=\"android\""));
    let f = sh(&mut d, "dumpsys window | grep mCurrentFocus");
    assert!(f.contains("ResolverActivity"), "{f}");
    // BACK dismisses it; `-p` opens PDD with no chooser, as does `-n`.
    sh(&mut d, "input keyevent 4");
    assert!(d.system().chooser.is_none());
    sh(
        &mut d,
        &format!("am start -a android.intent.action.VIEW -p com.xunmeng.pinduoduo -d '{url}'"),
    );
    assert_eq!(d.app().page_name(), "goods");
    assert!(d.system().chooser.is_none());
    sh(&mut d, "input keyevent 4");
    sh(&mut d, &format!("am start -a android.intent.action.VIEW -n com.xunmeng.pinduoduo/.ui.activity.HomeActivity -d '{url}'"));
    assert_eq!(d.app().page_name(), "goods");
    // Another package: unresolvable.
    let e = d.run_line(&format!(
        "am start -a android.intent.action.VIEW -p com.android.browser -d '{url}'"
    ));
    assert_eq!(e.code, 1);
    // The pinduoduo:// scheme belongs to PDD alone: no chooser.
    sh(&mut d, "input keyevent 4");
    sh(&mut d, &format!("am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id={GOODS}'"));
    assert!(d.system().chooser.is_none());

    // Choosing in the chooser (taps in package `android`): 浏览器 + 仅此一次 opens the browser.
    let mut d = device(SystemConfig {
        second_browser: true,
        ..SystemConfig::default()
    });
    sh(
        &mut d,
        &format!("am start -a android.intent.action.VIEW -d '{url}'"),
    );
    tap_label(&mut d, "浏览器");
    assert_eq!(
        d.system().chooser.as_ref().and_then(|c| c.selected),
        Some(ChooserTarget::Browser)
    );
    tap_label(&mut d, "仅此一次");
    assert!(sh(&mut d, "dumpsys window displays").contains("com.android.browser/"));
    assert!(d
        .system()
        .taps
        .iter()
        .all(|t| t.package.as_deref() == Some("android")));
    // A touch above the sheet dismisses the chooser without opening anything.
    sh(&mut d, "input keyevent 4");
    sh(
        &mut d,
        &format!("am start -a android.intent.action.VIEW -d '{url}'"),
    );
    sh(&mut d, "input tap 540 400");
    assert!(d.system().chooser.is_none());
    assert_ne!(d.app().page_name(), "goods");
}

#[test]
fn taps_route_by_z_order() {
    let mut d = device(SystemConfig::default());
    sheet(&mut d);
    // The status bar and the gesture stub are windows too.
    sh(&mut d, "input tap 540 40");
    sh(&mut d, "input tap 540 2390");
    sh(&mut d, "input tap 540 1200");
    let pk: Vec<_> = d
        .system()
        .taps
        .iter()
        .map(|t| t.package.clone().unwrap_or_default())
        .collect();
    assert_eq!(
        &pk[pk.len() - 3..],
        [
            "com.android.systemui",
            "com.miui.home",
            "com.xunmeng.pinduoduo"
        ]
    );
    let wins = d.system_windows();
    assert_eq!(wins[0].kind, WinKind::ScreenDecor);
    assert!(!wins[0].touchable);
}

#[test]
fn handle_controls_and_tap_records() {
    use cmautobuy_sim_phone::SimPhone;
    let phone = SimPhone::bind(
        "127.0.0.1:0".parse().expect("addr"),
        config(SystemConfig::default()),
    )
    .expect("phone");
    phone.set_lock(LockKind::Swipe);
    phone.set_screen_on(false);
    assert!(phone.system().locked && !phone.system().screen_on);
    phone.run_shell("input tap 540 1200");
    assert_eq!(phone.taps().last().and_then(|t| t.package.clone()), None);
    phone.run_shell("input keyevent 224");
    phone.run_shell("input swipe 540 1800 540 600 300");
    assert!(!phone.system().locked);
    phone.show_heads_up(HeadsUp::wechat("张三", "在吗"), Some(2_000));
    phone.run_shell("input tap 540 200");
    assert_eq!(phone.foreign_taps().len(), 1);
    assert_eq!(
        phone.foreign_taps()[0].package.as_deref(),
        Some("com.android.systemui")
    );
    phone.run_shell("input keyevent 4");
    phone.set_battery(Battery {
        level: 5,
        temperature_tenths: 455,
        plug: Plug::None,
    });
    assert!(phone.system().low_battery_dialog);
    assert!(phone
        .run_shell("dumpsys battery")
        .stdout
        .starts_with(b"Current Battery Service state:\n"));
    assert_eq!(phone.keys().iter().filter(|k| k.code == 4).count(), 1);
    assert_eq!(phone.swipes().len(), 1);
    phone.shutdown();
}

#[test]
fn refused_input_injection_fails_every_input_command_and_delivers_nothing() {
    let mut d = device(SystemConfig {
        input_injection_denied: true,
        ..SystemConfig::default()
    });
    open_goods(&mut d);
    let before = d.dump_xml();
    for (line, cmd) in [
        ("input tap 540 1200", "tap"),
        ("input swipe 540 1800 540 600 300", "swipe"),
        ("input keyevent 4", "keyevent"),
        ("input text 2", "text"),
    ] {
        let e = d.run_line(line);
        assert_eq!(e.code, 255, "{line}");
        let err = String::from_utf8_lossy(&e.stderr);
        assert!(
            err.starts_with(&format!("Exception occurred while executing '{cmd}':\n")),
            "{err}"
        );
        assert!(err.contains("INJECT_EVENTS permission"), "{err}");
        assert!(e.stdout.is_empty());
    }
    assert_eq!(d.counters().inputs_refused, 4);
    // Nothing reached the app: the same screen, no tap, swipe or key recorded.
    assert_eq!(d.dump_xml(), before);
    assert!(d.system().taps.is_empty());
    assert!(d.system().swipes.is_empty());
    assert!(d.system().keys.is_empty());
    // The switch turned on (the operator enabled "USB调试（安全设置）"): input works.
    d.system_mut().cfg.input_injection_denied = false;
    sh(&mut d, "input keyevent 4");
    assert_eq!(d.system().keys.len(), 1);
}
