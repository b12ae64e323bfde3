//! `cmautobuy-client doctor` checks everything — the real binary against
//! the bundled mock Admin served on loopback HTTP (requiring the token) and the simulated
//! phone over ADB (direct TCP). It passes (exit 0) when all is well and reports the live
//! verdict (not live ready on a fresh store: no self-test yet); it fails (exit 6) with the
//! fix against a stopped Admin, a wrong token, no Admin configured, an offline phone and a
//! phone that refuses injected input. The token never appears in what it prints.
//!
//! With several phones (`--device A --device B`) the host's checks run once and each
//! phone gets its own section; one phone offline fails the run (exit 6) and shows its fix
//! in its section while the other's passes.
//!
//! Every host and Admin check runs without a phone (none configured, or none
//! answering), nothing given to `doctor` is saved (the store compared before and after),
//! an Admin URL that is not the Admin's base URL is refused at input with the URL to
//! write, and a config file that does not load is a failed `config` check naming the line
//! and the key it meant, the other checks running without it.
//!
//! No timing luck: every run is bounded by a deadline (`wait_exit`); nothing waits for a
//! time to pass.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use cmautobuy_sim_phone::{Catalog, SimConfig, SimPhone};
use serde_json::Value;

use crate::support::world::{wait_exit, World, SIM_ADDRESS_FINGERPRINT};
use cmautobuy_client::runner::NO_ADDRESS_FINGERPRINT;
use cmautobuy_client::self_test::NEEDS_GOODS;

const TOKEN: &str = "doctor-secret-token-7f3a";

/// What one doctor run printed, and its exit code.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Outcome {
    fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }

    /// The token is never printed, whatever the outcome.
    fn assert_no_token(&self, token: &str) {
        assert!(
            !self.all().contains(token),
            "the token was printed: {}",
            self.all()
        );
    }

    /// The text line of check `name` (`ok   name …` / `FAIL name …`) and its fix line.
    fn check_line(&self, name: &str) -> (String, Option<String>) {
        let lines: Vec<&str> = self.stdout.lines().collect();
        let i = lines
            .iter()
            .position(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no {name} check in:\n{}", self.stdout));
        let fix = lines
            .get(i + 1)
            .filter(|l| l.trim_start().starts_with("fix:"))
            .map(|l| l.to_string());
        (lines[i].to_string(), fix)
    }
}

fn doctor(w: &World, data: &Path, args: &[&str]) -> Outcome {
    doctor_env(w, data, args, &[])
}

/// [`doctor`] with these environment variables set (the phone's address fingerprint is
/// unset unless given).
fn doctor_env(w: &World, data: &Path, args: &[&str], env: &[(&str, &str)]) -> Outcome {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    w.adb_env(&mut c);
    c.arg("--data-dir")
        .arg(data)
        .arg("doctor")
        .args(args)
        .arg("--adb-key")
        .arg(data.join("adbkey"))
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_ADMIN_URL")
        .env_remove("CMAUTOBUY_TOKEN")
        .env_remove("CMAUTOBUY_DEVICE")
        .env_remove("CMAUTOBUY_ALLOW_LIVE")
        .env_remove("CMAUTOBUY_PURCHASE_MODE")
        .env_remove("CMAUTOBUY_SELF_TEST_GOODS_ID")
        .env_remove("CMAUTOBUY_EXPECTED_ADDRESS")
        // The backend is chosen per test (`--env` below): these phones are direct TCP.
        .env_remove("CMAUTOBUY_DEVICE_BACKEND")
        // The disk floor is its own check; a busy test machine must not fail this one.
        .env("CMAUTOBUY_MIN_FREE_DISK_MB", "0")
        .env("NO_COLOR", "1")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn doctor");
    let status = wait_exit(&mut child, Duration::from_secs(120), || {
        "doctor hung".to_string()
    });
    let out = child.wait_with_output().expect("output");
    Outcome {
        code: status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn device(w: &World) -> String {
    w.device()
}

/// A loopback address nobody listens on.
fn dead_addr() -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let a = l.local_addr().expect("addr");
    drop(l);
    a.to_string()
}

#[test]
fn doctor_passes_against_the_sim_phone_and_the_mock_admin() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    let dev = device(&w);
    let args = ["--admin", &w.url, "--token", TOKEN, "--device", &dev];
    let o = doctor(&w, data.path(), &args);
    // Shown with `--nocapture`: what an operator sees.
    println!("{}", o.stdout);
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(0), "{}", o.all());
    for name in [
        "adb_server",
        "device",
        "phone",
        "screen",
        "pdd",
        "input",
        "data_dir",
        "disk",
        "store",
        "admin",
        "token",
        "clock",
    ] {
        let (line, fix) = o.check_line(name);
        assert!(line.starts_with("ok "), "{line}\n{}", o.stdout);
        assert!(fix.is_none(), "{line}: {fix:?}");
    }
    // Direct TCP needs no adb server; through one (the u2 pass) it is checked.
    let adb_line = o.check_line("adb_server").0;
    match &w.adb {
        None => assert!(adb_line.contains("skipped"), "{adb_line}"),
        Some(_) => assert!(adb_line.starts_with("ok "), "{adb_line}"),
    }
    assert!(o.check_line("pdd").0.contains("7.36.0"), "{}", o.stdout);
    assert!(
        o.check_line("phone").0.contains("1080x2400"),
        "{}",
        o.stdout
    );
    assert!(o.stdout.contains("ready: yes\n"), "{}", o.stdout);
    // Ready to work, not yet to declare live: no self-test on this PDD version (§5).
    let live = o
        .stdout
        .lines()
        .find(|l| l.starts_with("live ready: "))
        .expect("verdict line");
    assert!(live.starts_with("live ready: no — "), "{live}");

    // The registration probe was a real §4.1 registration, authenticated by the token.
    let j = doctor(&w, data.path(), &[&args[..], &["--json"]].concat());
    j.assert_no_token(TOKEN);
    assert_eq!(j.code, Some(0), "{}", j.all());
    let v: Value = serde_json::from_str(&j.stdout).expect("one JSON object");
    assert_eq!(v["ready"], true);
    let checks = v["checks"].as_array().expect("checks");
    assert!(checks.len() >= 12, "{v}");
    for c in checks {
        assert!(c["name"].is_string() && c["detail"].is_string(), "{c}");
        assert_eq!(c["ok"], true, "{c}");
        assert!(c.get("fix").is_some_and(Value::is_null), "{c}");
    }
    assert_eq!(v["live"]["ready"], false);
    assert!(!v["live"]["reasons"].as_array().expect("reasons").is_empty());
    assert_eq!(v["device"]["input_injection"], true);
    w.stop();
}

#[test]
fn doctor_fails_with_the_fix_against_a_stopped_admin() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    let dev = device(&w);
    let url = format!("http://{}", dead_addr());
    let o = doctor(
        &w,
        data.path(),
        &["--admin", &url, "--token", TOKEN, "--device", &dev],
    );
    println!("{}", o.stdout);
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(6), "{}", o.all());
    let (line, fix) = o.check_line("admin");
    assert!(line.starts_with("FAIL"), "{line}");
    let fix = fix.expect("a fix");
    assert!(
        fix.contains("check that the Admin runs and answers at"),
        "{fix}"
    );
    assert!(fix.contains(&url), "{fix}");
    // The phone is fine.
    assert!(o.check_line("input").0.starts_with("ok "), "{}", o.stdout);
    assert!(
        o.stdout.contains("live ready: no — admin check failed"),
        "{}",
        o.stdout
    );
    w.stop();
}

#[test]
fn doctor_fails_with_the_fix_on_a_wrong_token_and_without_an_admin() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    let dev = device(&w);
    let wrong = "wrong-token-0d1e";
    let o = doctor(
        &w,
        data.path(),
        &["--admin", &w.url, "--token", wrong, "--device", &dev],
    );
    o.assert_no_token(wrong);
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(6), "{}", o.all());
    assert!(o.check_line("admin").0.starts_with("ok "), "{}", o.stdout);
    let (line, fix) = o.check_line("token");
    assert!(line.starts_with("FAIL") && line.contains("401"), "{line}");
    assert!(
        fix.expect("a fix")
            .contains("give the token the Admin issued for this client"),
        "{}",
        o.stdout
    );
    // Nothing given to doctor is saved: the same flags again, as JSON.
    let v: Value = serde_json::from_str(
        &doctor(
            &w,
            data.path(),
            &[
                "--admin", &w.url, "--token", wrong, "--device", &dev, "--json",
            ],
        )
        .stdout,
    )
    .expect("json");
    assert!(!v.to_string().contains(wrong), "{v}");
    let token = v["checks"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == "token").cloned())
        .expect("token check");
    assert_eq!(token["ok"], false, "{v}");
    assert!(token["fix"]
        .as_str()
        .is_some_and(|f| f.contains("--token T")));

    // No Admin configured at all: "not configured", with the setting to give.
    let fresh = tempfile::tempdir().expect("tmp");
    let o = doctor(&w, fresh.path(), &["--device", &dev]);
    assert_eq!(o.code, Some(6), "{}", o.all());
    let (line, fix) = o.check_line("admin");
    assert!(
        line.starts_with("FAIL") && line.contains("not configured"),
        "{line}"
    );
    assert!(fix.expect("a fix").contains("--admin URL"), "{}", o.stdout);
    w.stop();
}

#[test]
fn doctor_fails_with_the_fix_on_an_offline_phone() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    let nowhere = dead_addr();
    let dev = w.device_at(nowhere.parse().expect("addr"));
    let o = doctor(
        &w,
        data.path(),
        &["--admin", &w.url, "--token", TOKEN, "--device", &dev],
    );
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(6), "{}", o.all());
    let (line, fix) = o.check_line("device");
    assert!(line.starts_with("FAIL"), "{line}");
    let fix = fix.expect("a fix");
    // Direct TCP finds nobody listening; an adb server (the u2 pass) lists it offline.
    let expected = match &w.adb {
        None => format!("nothing answers at {nowhere}"),
        Some(_) => "`adb connect HOST:PORT`".to_string(),
    };
    assert!(fix.contains(&expected), "{fix}");
    // The Admin is fine; the live verdict names the phone.
    assert!(o.check_line("token").0.starts_with("ok "), "{}", o.stdout);
    assert!(
        o.stdout.contains("live ready: no — device check failed"),
        "{}",
        o.stdout
    );
    w.stop();
}

#[test]
fn doctor_fails_with_the_fix_on_a_phone_that_refuses_injected_input() {
    let w = World::builder(TOKEN).require_token().start();
    w.phone.set_input_injection_denied(true);
    let data = tempfile::tempdir().expect("tmp");
    let dev = device(&w);
    let o = doctor(
        &w,
        data.path(),
        &["--admin", &w.url, "--token", TOKEN, "--device", &dev],
    );
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(6), "{}", o.all());
    let (line, fix) = o.check_line("input");
    assert!(line.starts_with("FAIL"), "{line}");
    assert!(
        fix.expect("a fix").contains("USB调试（安全设置）"),
        "{}",
        o.stdout
    );
    assert!(o.check_line("pdd").0.starts_with("ok "), "{}", o.stdout);
    w.phone.set_input_injection_denied(false);
    let o = doctor(
        &w,
        data.path(),
        &["--admin", &w.url, "--token", TOKEN, "--device", &dev],
    );
    assert_eq!(o.code, Some(0), "{}", o.all());
    w.stop();
}

/// The registration probe declares exactly what a claim would: after a `run` registered
/// and claimed, `doctor` on the same data directory leaves the Admin's stored profile
/// (types, capabilities, device) as the run left it — never narrower, never wider.
#[test]
fn doctor_declares_what_a_claim_would() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    w.run(data.path());
    let profile = |w: &World| {
        let v = w.rt.block_on(w.op.clients()).expect("clients");
        let c = v["clients"][0].clone();
        assert!(!c.is_null(), "no client registered: {v}");
        (
            c["supported_types"].clone(),
            c["capabilities"].clone(),
            c["device"].clone(),
        )
    };
    let before = profile(&w);
    assert!(
        before.0.to_string().contains("purchase"),
        "the run declared purchases: {before:?}"
    );
    // The saved Admin, token and device: no flags needed.
    let o = doctor(&w, data.path(), &[]);
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(0), "{}", o.all());
    assert_eq!(profile(&w), before);
    w.stop();
}

/// The live verdict names a missing address fingerprint (`expected_address`) beside the
/// self-test's refusal — which used to hide it — and drops it once one is configured.
#[test]
fn doctor_names_the_missing_address_fingerprint_beside_the_self_test() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    let dev = device(&w);
    let args = ["--admin", &w.url, "--token", TOKEN, "--device", &dev];
    let live_line = |o: &Outcome| {
        o.stdout
            .lines()
            .find(|l| l.starts_with("live ready: "))
            .unwrap_or_else(|| panic!("no verdict line:\n{}", o.stdout))
            .to_string()
    };
    let o = doctor(&w, data.path(), &args);
    assert_eq!(o.code, Some(0), "{}", o.all());
    let line = live_line(&o);
    assert!(line.contains(NO_ADDRESS_FINGERPRINT), "{line}");
    assert!(
        line.contains(NEEDS_GOODS),
        "the self-test's refusal too: {line}"
    );
    let j = doctor(&w, data.path(), &[&args[..], &["--json"]].concat());
    let v: Value = serde_json::from_str(&j.stdout).expect("one JSON object");
    let reasons = v["live"]["reasons"].to_string();
    assert!(reasons.contains("no address fingerprint"), "{reasons}");
    assert!(reasons.contains("self_test_goods_id"), "{reasons}");
    // Configured: only the self-test is left.
    let o = doctor_env(
        &w,
        data.path(),
        &args,
        &[("CMAUTOBUY_EXPECTED_ADDRESS", SIM_ADDRESS_FINGERPRINT)],
    );
    let line = live_line(&o);
    assert!(!line.contains("no address fingerprint"), "{line}");
    assert!(line.contains(NEEDS_GOODS), "{line}");
    w.stop();
}

/// An Admin whose clock is two minutes ahead: the `clock` check fails with the fix.
#[test]
fn doctor_fails_with_the_fix_on_clock_skew() {
    let w = World::builder(TOKEN)
        .require_token()
        .admin_date_offset(120)
        .start();
    let data = tempfile::tempdir().expect("tmp");
    let dev = device(&w);
    let o = doctor(
        &w,
        data.path(),
        &["--admin", &w.url, "--token", TOKEN, "--device", &dev],
    );
    assert_eq!(o.code, Some(6), "{}", o.all());
    let (line, fix) = o.check_line("clock");
    assert!(
        line.starts_with("FAIL") && line.contains("ahead of"),
        "{line}"
    );
    assert!(fix.expect("a fix").contains("timedatectl set-ntp true"));
    assert!(o.check_line("token").0.starts_with("ok "), "{}", o.stdout);
    w.stop();
}

/// The lines of phone `serial`'s section (`phone SERIAL:` up to the next blank line).
fn section<'a>(stdout: &'a str, serial: &str) -> Vec<&'a str> {
    let head = format!("phone {serial}:");
    stdout
        .lines()
        .skip_while(|l| *l != head)
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// `(ok, fix)` of check `name` in a section's lines.
fn in_section(lines: &[&str], name: &str) -> (bool, Option<String>) {
    let i = lines
        .iter()
        .position(|l| l.split_whitespace().nth(1) == Some(name))
        .unwrap_or_else(|| panic!("no {name} check in {lines:#?}"));
    let fix = lines
        .get(i + 1)
        .filter(|l| l.trim_start().starts_with("fix:"))
        .map(|l| l.to_string());
    (lines[i].starts_with("ok "), fix)
}

#[test]
fn doctor_checks_every_phone_of_a_several_phones_host_one_section_each() {
    let w = World::builder(TOKEN).require_token().start();
    let phone_b = SimPhone::bind(
        "127.0.0.1:0".parse().expect("addr"),
        SimConfig::new(Catalog::load(&Catalog::bundled_dir()).expect("catalog")),
    )
    .expect("bind phone B");
    let data = tempfile::tempdir().expect("tmp");
    let a = device(&w);
    let b = w.device_of(&phone_b);
    let args = [
        "--admin", &w.url, "--token", TOKEN, "--device", &a, "--device", &b,
    ];
    let o = doctor(&w, data.path(), &args);
    println!("{}", o.stdout);
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(0), "{}", o.all());
    // The host's checks once, before the first section.
    let host: Vec<&str> = o.stdout.lines().take_while(|l| !l.is_empty()).collect();
    for name in [
        "adb_server",
        "data_dir",
        "disk",
        "store",
        "admin",
        "token",
        "clock",
    ] {
        assert!(in_section(&host, name).0, "{name}: {}", o.stdout);
    }
    assert_eq!(o.stdout.matches(" token ").count(), 1, "{}", o.stdout);
    for serial in [&a, &b] {
        let s = section(&o.stdout, serial);
        for name in ["device", "phone", "screen", "pdd", "input"] {
            assert_eq!(
                in_section(&s, name),
                (true, None),
                "{serial} {name}: {s:#?}"
            );
        }
        assert!(
            s.iter().any(|l| l.starts_with("live ready: no — ")),
            "{serial}: {s:#?}"
        );
    }
    // Phone B has a store of its own, as `run` would give it; A keeps the root store.
    assert!(data.path().join("client.sqlite3").is_file());
    assert!(cmautobuy_client::phones::phone_dir(data.path(), &b)
        .join("client.sqlite3")
        .is_file());
    assert!(o.stdout.trim_end().ends_with("ready: yes"), "{}", o.stdout);

    let j = doctor(&w, data.path(), &[&args[..], &["--json"]].concat());
    j.assert_no_token(TOKEN);
    assert_eq!(j.code, Some(0), "{}", j.all());
    let v: Value = serde_json::from_str(&j.stdout).expect("one JSON object");
    assert_eq!(v["ready"], true);
    let phones = v["phones"].as_array().expect("phones");
    assert_eq!(phones.len(), 2, "{v}");
    assert_eq!(phones[0]["device"], a.as_str());
    assert_eq!(phones[1]["device"], b.as_str());
    for p in phones {
        assert!(p["checks"].as_array().is_some_and(|c| c.len() >= 5), "{p}");
        assert_eq!(p["live"]["ready"], false, "{p}");
    }

    // Phone B offline: exit 6; B's section shows the fix, A's passes.
    phone_b.set_offline(true);
    let o = doctor(&w, data.path(), &args);
    println!("{}", o.stdout);
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(6), "{}", o.all());
    let sa = section(&o.stdout, &a);
    let sb = section(&o.stdout, &b);
    assert_eq!(in_section(&sa, "device"), (true, None), "{}", o.stdout);
    assert_eq!(in_section(&sa, "input"), (true, None), "{}", o.stdout);
    let (ok, fix) = in_section(&sb, "device");
    assert!(!ok, "{}", o.stdout);
    assert!(fix.is_some(), "{}", o.stdout);
    assert!(
        sb.iter()
            .any(|l| l.starts_with("live ready: no — device check failed")),
        "{sb:#?}"
    );
    assert!(o.stdout.trim_end().ends_with("ready: NO"), "{}", o.stdout);
    phone_b.set_offline(false);
    w.stop();
}

/// `doctor` names the device backend `run` would use, the server's
/// version and one timed dump — `u2` through the world's adb server with the real jar
/// (the jar's version.json beside it says 0.4.1), `uiautomator` with the reason when u2
/// is not chosen, in text and `--json`; the server is stopped afterwards (a
/// `uiautomator dump` runs again).
#[test]
fn doctor_reports_the_device_backend_and_its_dump_latency() {
    let Some(_) = cmautobuy_sim_phone::testing::u2_jar(
        "doctor_reports_the_device_backend_and_its_dump_latency",
    ) else {
        return;
    };
    let jar = cmautobuy_sim_phone::testing::u2_jar_path();
    let w = World::builder(TOKEN)
        .require_token()
        .via_adb_server()
        .both_backends()
        .start();
    let adb_port = w.adb.as_ref().expect("adb server").port().to_string();
    let data = tempfile::tempdir().expect("tmp");
    let dev = w.device();
    let args = ["--admin", &w.url, "--token", TOKEN, "--device", &dev];
    let run = |backend: &str, extra: &[&str]| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
        c.arg("--data-dir")
            .arg(data.path())
            .arg("doctor")
            .args(args)
            .args(extra)
            .env_remove("CMAUTOBUY_CONFIG")
            .env("CMAUTOBUY_DEVICE_BACKEND", backend)
            .env("CMAUTOBUY_U2_JAR", &jar)
            .env("ANDROID_ADB_SERVER_PORT", &adb_port)
            .env("CMAUTOBUY_MIN_FREE_DISK_MB", "0")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn doctor");
        let status = wait_exit(&mut child, Duration::from_secs(120), || {
            "doctor hung".to_string()
        });
        let out = child.wait_with_output().expect("output");
        Outcome {
            code: status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let o = run("u2", &[]);
    println!("{}", o.stdout);
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(0), "{}", o.all());
    let (line, fix) = o.check_line("backend");
    assert!(line.starts_with("ok "), "{line}");
    assert!(fix.is_none());
    assert!(line.contains("u2 (server 0.4.1, dump "), "{line}");
    // The dumps went through the simulated phone's server.
    assert!(w.phone.u2_calls(Some("dumpWindowHierarchy")) >= 2);

    let j = run("u2", &["--json"]);
    assert_eq!(j.code, Some(0), "{}", j.all());
    let v: Value = serde_json::from_str(&j.stdout).expect("one JSON object");
    let b = &v["device_backend"];
    assert_eq!(b["backend"], "u2", "{b}");
    assert_eq!(b["configured"], "u2", "{b}");
    assert_eq!(b["server_version"], "0.4.1", "{b}");
    assert!(b["dump_ms"].as_u64().is_some(), "{b}");
    assert!(b["u2_unavailable"].is_null(), "{b}");

    // uiautomator as chosen: its dump works, so our server was stopped.
    let u = run("uiautomator", &["--json"]);
    assert_eq!(u.code, Some(0), "{}", u.all());
    let v: Value = serde_json::from_str(&u.stdout).expect("one JSON object");
    let b = &v["device_backend"];
    assert_eq!(b["backend"], "uiautomator", "{b}");
    assert!(b["dump_ms"].as_u64().is_some(), "{b}");
    assert!(
        b["u2_unavailable"]
            .as_str()
            .is_some_and(|r| r.contains("uiautomator")),
        "{b}"
    );
    let t = run("uiautomator", &[]);
    let (line, _) = t.check_line("backend");
    assert!(
        line.contains("uiautomator (u2 unavailable: device_backend = \"uiautomator\"; dump "),
        "{line}"
    );
    w.stop();
}

/// Every row of the store's settings table (key, value, updated_at): what `doctor` must
/// leave as it found it.
fn settings_rows(data: &Path) -> Vec<(String, String, String)> {
    let path = data.join("client.sqlite3");
    if !path.exists() {
        return Vec::new();
    }
    let db = rusqlite::Connection::open(path).expect("open the store");
    let mut st = db
        .prepare("SELECT key, value, updated_at FROM settings ORDER BY key")
        .expect("prepare");
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .map(|r| r.expect("row"))
        .collect()
}

/// `doctor` checks the settings it is given and saves none of them: after a `run` saved
/// its Admin, token and device, `doctor` with other ones (and with none) leaves every
/// setting — the registration's outcome included — as it was; on a data directory where
/// nothing is saved yet, its flags are not saved either.
#[test]
fn doctor_changes_no_saved_setting() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    w.run(data.path());
    let before = settings_rows(data.path());
    assert!(
        before.iter().any(|(k, _, _)| k == "token") && before.iter().any(|(k, _, _)| k == "device"),
        "the run saved its settings: {before:?}"
    );
    let dev = device(&w);
    let wrong = "another-token-9c2e";
    let o = doctor(
        &w,
        data.path(),
        &[
            "--admin", &w.url, "--token", wrong, "--device", &dev, "--json",
        ],
    );
    o.assert_no_token(wrong);
    assert_eq!(
        o.code,
        Some(6),
        "the wrong token fails its check: {}",
        o.all()
    );
    assert_eq!(
        settings_rows(data.path()),
        before,
        "doctor changed the store"
    );
    let o = doctor(&w, data.path(), &[]);
    assert_eq!(o.code, Some(0), "{}", o.all());
    assert_eq!(
        settings_rows(data.path()),
        before,
        "doctor changed the store"
    );

    let fresh = tempfile::tempdir().expect("tmp");
    let o = doctor(
        &w,
        fresh.path(),
        &["--admin", &w.url, "--token", TOKEN, "--device", &dev],
    );
    assert_eq!(o.code, Some(0), "{}", o.all());
    let keys: Vec<String> = settings_rows(fresh.path())
        .into_iter()
        .map(|(k, _, _)| k)
        .collect();
    for k in ["admin_url", "token", "device", "registration"] {
        assert!(!keys.contains(&k.to_string()), "{k} saved: {keys:?}");
    }
    w.stop();
}

/// No phone configured: every host and Admin check still runs and is reported — the
/// configuration, the data directory, the disk, the store, the Admin, the token, the
/// clock — and the missing phone is one failed check with its fix (exit 6).
#[test]
fn doctor_without_a_phone_runs_every_host_and_admin_check() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    let o = doctor(&w, data.path(), &["--admin", &w.url, "--token", TOKEN]);
    println!("{}", o.stdout);
    o.assert_no_token(TOKEN);
    assert_eq!(o.code, Some(6), "{}", o.all());
    for name in [
        "config", "data_dir", "disk", "store", "admin", "token", "clock",
    ] {
        let (line, fix) = o.check_line(name);
        assert!(line.starts_with("ok "), "{line}\n{}", o.stdout);
        assert!(fix.is_none(), "{line}: {fix:?}");
    }
    let (line, fix) = o.check_line("device");
    assert!(
        line.starts_with("FAIL") && line.contains("no device configured"),
        "{line}"
    );
    assert!(
        fix.expect("a fix").contains("--device SERIAL"),
        "{}",
        o.stdout
    );
    assert!(
        o.stdout.contains("live ready: no — device check failed"),
        "{}",
        o.stdout
    );
    w.stop();
}

/// An Admin URL that is not the Admin's base URL — no scheme, or the API's path
/// appended — is refused where it is given (`doctor --admin`, `register --admin`, the
/// config file), exit 2, with the URL to write.
#[test]
fn a_bad_admin_url_is_refused_at_input_with_the_url_to_write() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    let fix = "write http://127.0.0.1:18080 — the client adds /api/v1/client itself";
    let o = doctor(&w, data.path(), &["--admin", "127.0.0.1:18080"]);
    assert_eq!(o.code, Some(2), "{}", o.all());
    assert!(o.stderr.contains(fix), "{}", o.stderr);
    assert!(o.stderr.contains("--admin"), "{}", o.stderr);
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["register", "--admin", "http://127.0.0.1:18080/api/v1"])
        .args(["--token", TOKEN])
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_ADMIN_URL")
        .output()
        .expect("register runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(fix), "{stderr}");
    assert!(!stderr.contains(TOKEN), "{stderr}");
    // Nothing was saved (no store was even made).
    assert!(
        !settings_rows(data.path())
            .iter()
            .any(|(k, _, _)| k == "admin_url"),
        "the refused URL was saved"
    );
    w.stop();
}

/// A config file that does not load is a failed `config` check — its line and column,
/// the key a typo meant — and every other check still runs without it (exit 6); `run`
/// refuses the same file with the same words (exit 2).
#[test]
fn doctor_reports_a_config_error_with_its_line_and_the_key_it_meant() {
    let w = World::builder(TOKEN).require_token().start();
    let data = tempfile::tempdir().expect("tmp");
    let file = data.path().join("config.toml");
    std::fs::write(&file, "name = \"办公室-01\"\ndevcie_backend = \"u2\"\n").expect("write");
    let dev = device(&w);
    let o = doctor(
        &w,
        data.path(),
        &["--admin", &w.url, "--token", TOKEN, "--device", &dev],
    );
    println!("{}", o.stdout);
    assert_eq!(o.code, Some(6), "{}", o.all());
    let (line, fix) = o.check_line("config");
    assert!(line.starts_with("FAIL"), "{line}");
    assert!(line.contains(&format!("{}:2:1", file.display())), "{line}");
    assert!(line.contains("did you mean `device_backend`?"), "{line}");
    assert!(
        fix.expect("a fix").contains("device_backend"),
        "{}",
        o.stdout
    );
    for name in ["device", "data_dir", "store", "admin", "token"] {
        assert!(
            o.check_line(name).0.starts_with("ok "),
            "{name}: {}",
            o.stdout
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["run", "--exit-when-idle", "--no-console"])
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .expect("run runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "unknown config key `devcie_backend` ({}:2:1) — did you mean `device_backend`?",
            file.display()
        )),
        "{stderr}"
    );
    w.stop();
}
