//! `cmautobuy-client bench-device` against the simulated phone reached
//! through a private adb server: dumps, taps and screenshots timed on both backends (the
//! u2 calls reached the phone's server, the taps landed on the status bar), `--json`;
//! refused while another process holds the phone's lock.

use std::process::{Command, Output};

use crate::support::world::World;
use cmautobuy_client::device::DeviceAddress;
use serde_json::Value;

fn bench(w: &World, locks: &std::path::Path, args: &[&str]) -> Output {
    let adb = w.adb.as_ref().expect("adb server");
    Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("bench-device")
        .args(["--device", &w.device()])
        .args(args)
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_DEVICE_BACKEND")
        .env(
            "CMAUTOBUY_U2_JAR",
            cmautobuy_sim_phone::testing::u2_jar_path(),
        )
        .env("CMAUTOBUY_LOCK_DIR", locks)
        .env("ANDROID_ADB_SERVER_PORT", adb.port().to_string())
        .output()
        .expect("the client binary runs")
}

#[test]
fn bench_device_times_both_backends_and_waits_for_no_task() {
    if cmautobuy_sim_phone::testing::u2_jar(
        "bench_device_times_both_backends_and_waits_for_no_task",
    )
    .is_none()
    {
        return;
    }
    let w = World::builder("tok-bench").via_adb_server().start();
    let locks = tempfile::tempdir().unwrap();
    let taps_before = w.phone.counters().taps;
    let out = bench(&w, locks.path(), &["--samples", "3", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).expect("one JSON object");
    for b in ["u2", "uiautomator"] {
        let r = &v["backends"][b];
        assert!(r["unavailable"].is_null(), "{b}: {r}");
        for op in ["dump", "tap", "screenshot"] {
            assert_eq!(r[op]["samples"], 3, "{b} {op}: {r}");
            assert_eq!(r[op]["errors"], 0, "{b} {op}: {r}");
            assert!(r[op]["median_ms"].as_u64().is_some(), "{b} {op}: {r}");
            assert!(r[op]["p90_ms"].as_u64() >= r[op]["median_ms"].as_u64());
        }
    }
    assert!(v["backends"]["u2"]["server_start_ms"].as_u64().is_some());
    assert!(v["uiautomator_over_u2"]["dump"].as_f64().is_some(), "{v}");
    assert_eq!(v["tap_point"]["y"], 10);
    // The u2 half went through the phone's server; every tap landed (on the status bar).
    assert_eq!(w.phone.u2_calls(Some("click")), 3);
    assert!(w.phone.u2_calls(Some("dumpWindowHierarchy")) >= 4);
    assert_eq!(w.phone.counters().taps - taps_before, 6);

    // The text table.
    let out = bench(&w, locks.path(), &["--samples", "1"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    for op in ["dump ", "tap ", "screenshot "] {
        assert!(text.lines().any(|l| l.starts_with(op)), "{text}");
    }

    // A client holding the phone (its lock): refused, nothing sent.
    let addr = DeviceAddress::parse(&w.device(), w.adb.as_ref().unwrap().addr()).unwrap();
    let held = cmautobuy_client::lock::lock_device(locks.path(), &w.device(), &addr, "a test run")
        .expect("lock");
    let taps = w.phone.counters().taps;
    let out = bench(&w, locks.path(), &["--samples", "1"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(w.phone.counters().taps, taps);
    drop(held);
    w.stop();
}
