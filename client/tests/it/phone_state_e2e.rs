//! The phone's own state: the real binary (`run
//! --exit-when-idle`) against the bundled mock Admin and the simulated phone over ADB,
//! one phone-state variant per test. The task succeeds — screen off (woken), swipe lock
//! (one upward swipe), the notification shade (collapsed), a heads-up (waited out), the
//! low-battery dialog (BACK), the chooser (avoided: deep links name the package) — or the
//! worker pauses with its operator alert and claims nothing — PIN lock, low battery, hot
//! battery — until the phone is fixed, then completes. In every run **no tap reaches a
//! window of another package** (the phone records every tap with the window it landed in).
//!
//! No timing luck: waits are bounded polls on observable facts (`status --json`, the
//! Admin's journal, the process exit).

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use cmautobuy_mock_admin::Endpoint;
use cmautobuy_sim_phone::{Battery, HeadsUp, LockKind, Plug, SimPhoneHandle, SystemConfig};
use serde_json::{json, Value};

use crate::support::world::{goods_url, status_json, wait_exit, wait_until, World};

const GOODS: &str = "602938475610";

fn world(token: &str, sys: SystemConfig) -> World {
    let w = World::builder(token).system(sys).start();
    w.create(json!({
        "id": format!("{token}-1"),
        "type": "collect",
        "payload": {"goods_id": GOODS, "goods_url": goods_url(GOODS)},
    }));
    w
}

fn no_foreign_taps(phone: &SimPhoneHandle) {
    let foreign = phone.foreign_taps();
    assert!(
        foreign.is_empty(),
        "taps reached another package's window: {foreign:?}"
    );
}

fn log_of(data: &Path) -> String {
    std::fs::read_to_string(data.join("run.log")).unwrap_or_default()
}

/// One run to the end; the task's report must be a result.
fn succeeds(token: &str, sys: SystemConfig, before: impl FnOnce(&SimPhoneHandle)) -> String {
    let w = world(token, sys);
    before(&w.phone);
    let data = tempfile::tempdir().unwrap();
    let out = w.command(data.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "run failed: {err}");
    let (kind, body) = w.report(&format!("{token}-1"));
    assert_eq!(kind, "result", "{body}\n{err}");
    no_foreign_taps(&w.phone);
    eprintln!(
        "{token}: taps {} (foreign 0), swipes {:?}, keys {:?}",
        w.phone.taps().len(),
        w.phone.swipes().len(),
        w.phone.keys().len()
    );
    w.stop();
    err
}

#[test]
fn screen_off_and_swipe_lock_are_woken_and_swiped_away() {
    let err = succeeds(
        "ps-swipe",
        SystemConfig {
            lock: LockKind::Swipe,
            start_screen_off: true,
            ..SystemConfig::default()
        },
        |_| {},
    );
    assert!(err.contains("phone woken / unlocked"), "{err}");
}

#[test]
fn the_shade_is_collapsed_and_the_low_battery_dialog_dismissed_without_a_tap() {
    succeeds("ps-shade", SystemConfig::default(), |p| p.set_shade(true));
    succeeds("ps-dialog", SystemConfig::default(), |p| {
        p.show_low_battery_dialog()
    });
}

#[test]
fn a_heads_up_is_waited_out_and_the_chooser_never_appears() {
    succeeds("ps-heads-up", SystemConfig::default(), |p| {
        p.show_heads_up(HeadsUp::wechat("张三", "在吗"), Some(5_000))
    });
    succeeds(
        "ps-chooser",
        SystemConfig {
            second_browser: true,
            keyboard: true,
            ..SystemConfig::default()
        },
        |_| {},
    );
}

/// Starts `run` (its log in `data/run.log`) and waits for the worker to pause with `code`
/// and a `device_attention` alert; returns the running client and the alert's message.
fn run_until_paused(w: &World, data: &Path, code: &str) -> (Child, String) {
    let mut child = w
        .command(data)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(data.join("run.log")).unwrap())
        .spawn()
        .unwrap();
    let mut st = Value::Null;
    wait_until(
        "the pause and its alert",
        Duration::from_secs(60),
        &mut child,
        || {
            st = status_json(data);
            st["device_pause"]["code"] == code
                && st["alerts"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x["kind"] == "device_attention"))
        },
    );
    let msg = st["alerts"]
        .as_array()
        .and_then(|a| a.iter().find(|x| x["kind"] == "device_attention"))
        .and_then(|a| a["message"].as_str())
        .unwrap_or("")
        .to_string();
    (child, msg)
}

/// The worker pauses with `code` and a `device_attention` alert, claims nothing; once
/// `fix` runs it resumes by itself, the task succeeds and the alert is closed.
fn pauses_until_fixed(
    token: &str,
    sys: SystemConfig,
    code: &str,
    fix: impl FnOnce(&SimPhoneHandle),
) {
    let w = world(token, sys);
    let data = tempfile::tempdir().unwrap();
    let (mut child, msg) = run_until_paused(&w, data.path(), code);
    assert!(msg.contains(code), "{msg}");
    eprintln!("{token}: alert: {msg}");
    assert_eq!(
        w.op.journal()
            .iter()
            .filter(|e| e.endpoint == Endpoint::Claim)
            .count(),
        0,
        "no claim while the phone cannot work"
    );
    fix(&w.phone);
    let exit = wait_exit(&mut child, Duration::from_secs(120), || {
        format!("no completion after the fix: {}", log_of(data.path()))
    });
    assert!(exit.success(), "{}", log_of(data.path()));
    let (kind, body) = w.report(&format!("{token}-1"));
    assert_eq!(kind, "result", "{body}");
    let after = status_json(data.path());
    assert!(after["device_pause"].is_null(), "{after}");
    assert!(
        after["alerts"]
            .as_array()
            .is_none_or(|a| a.iter().all(|x| x["kind"] != "device_attention")),
        "the alert closes itself: {after}"
    );
    no_foreign_taps(&w.phone);
    w.stop();
}

#[test]
fn a_pin_lock_pauses_with_an_alert_until_a_human_unlocks() {
    pauses_until_fixed(
        "ps-pin",
        SystemConfig {
            lock: LockKind::Pin,
            start_screen_off: true,
            ..SystemConfig::default()
        },
        "DEVICE_LOCKED",
        |p| p.set_lock(LockKind::None),
    );
}

#[test]
fn a_low_or_hot_battery_pauses_with_an_alert_until_charged_or_cool() {
    pauses_until_fixed(
        "ps-low",
        SystemConfig {
            battery: Battery {
                level: 12,
                temperature_tenths: 312,
                plug: Plug::None,
            },
            ..SystemConfig::default()
        },
        "BATTERY_LOW",
        |p| {
            p.set_battery(Battery {
                level: 12,
                temperature_tenths: 312,
                plug: Plug::Ac,
            })
        },
    );
    pauses_until_fixed(
        "ps-hot",
        SystemConfig {
            battery: Battery {
                level: 64,
                temperature_tenths: 471,
                plug: Plug::Ac,
            },
            ..SystemConfig::default()
        },
        "BATTERY_HOT",
        |p| {
            p.set_battery(Battery {
                level: 64,
                temperature_tenths: 380,
                plug: Plug::Ac,
            })
        },
    );
}

/// MIUI's "USB调试（安全设置）" trap: the phone refuses injected input. The one task that
/// found out is reported `retry_wait INPUT_INJECTION_DENIED` (nothing was tapped), the
/// worker pauses with an alert that names the switch, its checks keep probing with one
/// harmless key event and claim nothing; once the switch is on the worker resumes and
/// the task succeeds.
#[test]
fn refused_input_injection_pauses_with_the_fix_until_the_switch_is_on() {
    let token = "ps-inject";
    let w = world(
        token,
        SystemConfig {
            input_injection_denied: true,
            ..SystemConfig::default()
        },
    );
    let data = tempfile::tempdir().unwrap();
    let (mut child, msg) = run_until_paused(&w, data.path(), "INPUT_INJECTION_DENIED");
    assert!(
        msg.contains("USB调试（安全设置）"),
        "the alert names the fix: {msg}"
    );
    // The probes go on being refused while the switch is off (each check probes once).
    let refused = w.phone.counters().inputs_refused;
    wait_until(
        "two more refused probes",
        Duration::from_secs(60),
        &mut child,
        || w.phone.counters().inputs_refused >= refused + 2,
    );
    let claims = || {
        w.op.journal()
            .iter()
            .filter(|e| e.endpoint == Endpoint::Claim)
            .count()
    };
    assert_eq!(
        claims(),
        1,
        "one claim found out; the pause claims nothing more"
    );
    assert!(w.phone.taps().is_empty(), "nothing was tapped");
    w.phone.set_input_injection_denied(false);
    let exit = wait_exit(&mut child, Duration::from_secs(120), || {
        format!("no completion after the fix: {}", log_of(data.path()))
    });
    assert!(exit.success(), "{}", log_of(data.path()));
    let t = w.task(&format!("{token}-1"));
    let results = t["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), 2, "{t}");
    assert_eq!(results[0]["kind"], "failure", "{t}");
    assert_eq!(results[0]["body"]["status"], "retry_wait", "{t}");
    assert_eq!(
        results[0]["body"]["error"]["code"], "INPUT_INJECTION_DENIED",
        "{t}"
    );
    assert_eq!(results[1]["kind"], "result", "{t}");
    let after = status_json(data.path());
    assert!(after["device_pause"].is_null(), "{after}");
    assert!(
        after["alerts"]
            .as_array()
            .is_none_or(|a| a.iter().all(|x| x["kind"] != "device_attention")),
        "the alert closes itself: {after}"
    );
    no_foreign_taps(&w.phone);
    w.stop();
}
