//! Live declared as the contract's §5 says, end to end: the real
//! `cmautobuy-client run` binary against the bundled mock Admin and the simulated phone
//! over ADB, with **no** `--allow-live` — `purchase_mode = auto` (the default) declares
//! live once the self-test (a dry-run purchase on `self_test_goods_id`, no Admin
//! involved) passed on the phone's current PDD version. The mock hands live tasks only
//! to a client that declares `live`. The new-PDD-version gate is on (as in production):
//! the self-test is what proves the version.
//!
//! - (a) a test goods configured: the self-test runs and passes (no order on the phone),
//!   then a live purchase is claimed and places exactly one unpaid order; `register`
//!   afterwards declares what the Admin stored (live), neither narrower nor wider;
//! - (b) no test goods: `dry_run` declared, the live task is never handed, `status` says
//!   what is missing, `register` declares `dry_run` too;
//! - (c) `--dry-run-only` (even with `--allow-live` and a test goods): never live, no
//!   self-test;
//! - (d) PDD updates itself while the client runs: a new self-test on the new version
//!   before the next live claim.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::world::{goods_url, live_purchase, status_json, wait_until, World};
use cmautobuy_client::runner::NO_ADDRESS_FINGERPRINT;
use serde_json::{json, Value};

/// The self-test goods: the bundled catalog's goods with sold-out combinations (the
/// self-test picks the first available one).
const TEST_GOODS: &str = "737116531267";

fn live(id: &str) -> Value {
    live_purchase(
        id,
        TEST_GOODS,
        json!({"color": "黑色", "size": "L"}),
        1,
        10000,
    )
}

fn collect(id: &str) -> Value {
    json!({
        "id": id,
        "type": "collect",
        "payload": {"goods_id": TEST_GOODS, "goods_url": goods_url(TEST_GOODS)},
    })
}

/// `run --exit-when-idle` with the version gate on, the account check off (it has its
/// own tests) and, given, the self-test goods; it must exit 0. Returns its log.
fn run(w: &World, data: &Path, goods: Option<&str>, extra: &[&str]) -> String {
    let mut c = w.command(data);
    c.arg("--no-console")
        .args(extra)
        .env("CMAUTOBUY_PDD_VERSION_GATE", "true")
        .env("CMAUTOBUY_ACCOUNT_CHECK", "false");
    if let Some(g) = goods {
        c.env("CMAUTOBUY_SELF_TEST_GOODS_ID", g);
    }
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

fn client(data: &Path, args: &[&str], goods: Option<&str>) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    c.arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_ALLOW_LIVE")
        .env_remove("CMAUTOBUY_PURCHASE_MODE")
        .env("CMAUTOBUY_PDD_VERSION_GATE", "true")
        .env("CMAUTOBUY_ACCOUNT_CHECK", "false")
        .env(
            "CMAUTOBUY_EXPECTED_ADDRESS",
            crate::support::world::SIM_ADDRESS_FINGERPRINT,
        );
    match goods {
        Some(g) => c.env("CMAUTOBUY_SELF_TEST_GOODS_ID", g),
        None => c.env_remove("CMAUTOBUY_SELF_TEST_GOODS_ID"),
    };
    c.output().unwrap()
}

fn status_text(data: &Path) -> String {
    let out = client(data, &["status"], None);
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).to_string()
}

/// What the Admin stored for the (only) client: its capabilities' purchase mode.
fn stored_mode(w: &World) -> Value {
    let clients = w.rt.block_on(w.op.clients()).unwrap();
    clients["clients"][0]["capabilities"]["purchase_mode"].clone()
}

/// `register` with the same configuration; it must exit 0.
fn register(w: &World, data: &Path, goods: Option<&str>) -> String {
    let out = client(data, &["register", "--admin", &w.url], goods);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    said
}

fn self_tests(s: &Value) -> Vec<Value> {
    s["self_tests"].as_array().cloned().unwrap_or_default()
}

fn never_handed(w: &World, id: &str) {
    let t = w.task(id);
    assert!(
        t["claims"].as_array().is_none_or(|c| c.is_empty()),
        "{id} was handed out: {t}"
    );
}

#[test]
fn a_passing_self_test_declares_live_and_the_live_task_places_one_order() {
    let w = World::builder("tok-live-a").private_locks().start();
    let data = tempfile::tempdir().unwrap();

    // 0. `register` before any run: the store knows nothing about the phone yet, so it
    // declares what a claim would then — purchases, but `dry_run`.
    let device = w.device();
    let out = client(
        data.path(),
        &[
            "register",
            "--admin",
            &w.url,
            "--token",
            "tok-live-a",
            "--device",
            &device,
        ],
        Some(TEST_GOODS),
    );
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("declaring: collect, purchase (purchase_mode dry_run)"),
        "{said}"
    );
    assert_eq!(stored_mode(&w), "dry_run");

    // 1. No task yet: the self-test runs at start (after the first passing device
    // check) and passes; it is a dry run, so the phone's order ledger stays empty.
    let log = run(&w, data.path(), Some(TEST_GOODS), &[]);
    assert!(
        w.phone.orders().is_empty(),
        "the self-test ordered something"
    );
    let s = status_json(data.path());
    let tests = self_tests(&s);
    assert_eq!(tests.len(), 1, "{s}");
    let t = &tests[0];
    assert_eq!(t["outcome"], "passed", "{s}\n{log}");
    assert_eq!(t["pdd_version"], "7.36.0", "{s}");
    let attempt = t["attempt_id"].as_str().unwrap().to_string();
    assert!(attempt.starts_with("self-test-"), "{attempt}");
    // A pass proves the version for the version gate.
    let v = &s["pdd_versions"][0];
    assert_eq!(v["proven_by"], format!("self-test {attempt}"), "{s}");
    // Its evidence sits under the artifacts root like any attempt's.
    let folder = data
        .path()
        .join("artifacts")
        .join("self-test")
        .join(&attempt);
    assert!(folder.is_dir(), "no {}", folder.display());
    assert_eq!(s["self_test_note"], Value::Null, "{s}");
    // Nothing went to the Admin but the registration and the claim: no task exists.
    assert!(w.rt.block_on(w.op.clients()).unwrap()["clients"][0].is_object());

    // 2. A live purchase: declared live (no flag), claimed, one unpaid order.
    w.create(live("live-a"));
    run(&w, data.path(), Some(TEST_GOODS), &[]);
    let (kind, body) = w.report("live-a");
    assert_eq!(kind, "result", "{body}");
    assert_eq!(body["purchase"]["mode"], "live", "{body}");
    assert_eq!(body["purchase"]["order_submitted"], true, "{body}");
    assert_eq!(body["purchase"]["payment_attempted"], false, "{body}");
    assert_eq!(w.phone.orders().len(), 1);
    // The pass stands: no second self-test on the same version.
    assert_eq!(self_tests(&status_json(data.path())).len(), 1);

    // 3. `register` declares what a claim would: the Admin stored live (the last
    // claim), and register neither narrows nor widens it.
    assert_eq!(stored_mode(&w), "live");
    let said = register(&w, data.path(), Some(TEST_GOODS));
    assert!(said.contains("purchase_mode live"), "{said}");
    assert_eq!(stored_mode(&w), "live");
    w.stop();
}

/// Without the address fingerprint (`expected_address`, `CMAUTOBUY_EXPECTED_ADDRESS`) the
/// client never declares live, even with everything else in place (a self-test goods
/// that passes, the version proven): `run` registers and claims as `dry_run` — the mock
/// Admin's `GET /api/v1/admin/clients` shows it — the live task is never handed over,
/// collects go on; `status` says why (the note NO_ADDRESS_FINGERPRINT and its fix), in
/// text and JSON.
#[test]
fn without_an_address_fingerprint_run_declares_dry_run_and_status_says_why() {
    let w = World::builder("tok-live-fp").private_locks().start();
    let data = tempfile::tempdir().unwrap();
    w.create(live("live-fp"));
    w.create(collect("coll-fp"));
    let mut c = w.command(data.path());
    c.arg("--no-console")
        .env("CMAUTOBUY_PDD_VERSION_GATE", "true")
        .env("CMAUTOBUY_ACCOUNT_CHECK", "false")
        .env("CMAUTOBUY_SELF_TEST_GOODS_ID", TEST_GOODS)
        .env_remove("CMAUTOBUY_EXPECTED_ADDRESS");
    let out = c.output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{log}");
    // Everything but the fingerprint is in place: the self-test ran and passed.
    let s = status_json(data.path());
    assert_eq!(self_tests(&s)[0]["outcome"], "passed", "{s}");
    // Declared dry_run at the Admin; the live task is never handed over.
    assert_eq!(stored_mode(&w), "dry_run");
    never_handed(&w, "live-fp");
    assert_eq!(w.report("coll-fp").0, "result", "collects go on");
    assert!(w.phone.orders().is_empty());
    assert!(log.contains(NO_ADDRESS_FINGERPRINT), "{log}");
    // `status` names the note, in JSON and in text.
    assert_eq!(s["expected_address"], json!([]), "{s}");
    assert_eq!(s["self_test_note"], NO_ADDRESS_FINGERPRINT, "{s}");
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data.path())
        .arg("status")
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_EXPECTED_ADDRESS")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("LIVE OFF"), "{text}");
    assert!(text.contains(NO_ADDRESS_FINGERPRINT), "{text}");
    // With the fingerprint, the same store and phone declare live.
    let said = register(&w, data.path(), Some(TEST_GOODS));
    assert!(said.contains("purchase_mode live"), "{said}");
    assert_eq!(stored_mode(&w), "live");
    w.stop();
}

#[test]
fn without_a_test_goods_the_client_declares_dry_run_and_is_never_handed_live() {
    let w = World::builder("tok-live-b").private_locks().start();
    let data = tempfile::tempdir().unwrap();
    w.create(live("live-b"));
    w.create(collect("coll-b"));
    let log = run(&w, data.path(), None, &[]);
    assert_eq!(w.report("coll-b").0, "result", "collects go on");
    never_handed(&w, "live-b");
    assert!(w.phone.orders().is_empty());
    assert!(
        log.contains("live needs self_test_goods_id"),
        "the run says what is missing: {log}"
    );
    let text = status_text(data.path());
    assert!(
        text.contains(
            "live paused: live needs self_test_goods_id: a cheap goods the self-test can open"
        ),
        "{text}"
    );
    assert!(self_tests(&status_json(data.path())).is_empty());
    assert_eq!(stored_mode(&w), "dry_run");
    let said = register(&w, data.path(), None);
    assert!(said.contains("purchase_mode dry_run"), "{said}");
    assert_eq!(stored_mode(&w), "dry_run");
    w.stop();
}

#[test]
fn dry_run_only_wins_over_a_test_goods_and_allow_live() {
    let w = World::builder("tok-live-c").private_locks().start();
    let data = tempfile::tempdir().unwrap();
    w.create(live("live-c"));
    w.create(collect("coll-c"));
    run(
        &w,
        data.path(),
        Some(TEST_GOODS),
        &["--dry-run-only", "--allow-live"],
    );
    assert_eq!(w.report("coll-c").0, "result");
    never_handed(&w, "live-c");
    assert!(w.phone.orders().is_empty());
    assert!(
        self_tests(&status_json(data.path())).is_empty(),
        "no self-test in dry_run mode"
    );
    assert!(status_text(data.path()).contains("live paused: purchase_mode = dry_run"));
    // The config key does the same.
    let out = w
        .command(data.path())
        .arg("--no-console")
        .env("CMAUTOBUY_PURCHASE_MODE", "dry_run")
        .env("CMAUTOBUY_SELF_TEST_GOODS_ID", TEST_GOODS)
        .output()
        .unwrap();
    assert!(out.status.success());
    never_handed(&w, "live-c");
    // A bad value is a typed configuration error (exit 2), not a silent default.
    let out = w
        .command(data.path())
        .env("CMAUTOBUY_PURCHASE_MODE", "live")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("purchase_mode"));
    w.stop();
}

#[test]
fn a_pdd_update_mid_run_is_self_tested_again_before_the_next_live_claim() {
    let w = World::builder("tok-live-d").private_locks().start();
    let data = tempfile::tempdir().unwrap();
    let log = data.path().join("client.log");
    let mut child = w
        .serving(data.path())
        .arg("--no-console")
        .env("CMAUTOBUY_PDD_VERSION_GATE", "true")
        .env("CMAUTOBUY_ACCOUNT_CHECK", "false")
        .env("CMAUTOBUY_SELF_TEST_GOODS_ID", TEST_GOODS)
        // The version is read again before a claim once the last check is this old.
        .env("CMAUTOBUY_DEVICE_CHECK_MAX_AGE_SECS", "0.5")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let passed_on = |version: &str| {
        self_tests(&status_json(data.path()))
            .iter()
            .find(|t| t["pdd_version"] == version && t["outcome"] == "passed")
            .cloned()
    };
    let limit = Duration::from_secs(120);
    wait_until("a self-test on 7.36.0", limit, &mut child, || {
        passed_on("7.36.0").is_some()
    });
    // PDD updates itself while the client runs: with no task to prompt it, the next
    // check before a claim reads 7.99.0 and the client self-tests it.
    w.phone.set_pdd_version("7.99.0", 79900);
    wait_until("a self-test on 7.99.0", limit, &mut child, || {
        passed_on("7.99.0").is_some()
    });
    let on_new = passed_on("7.99.0").unwrap();
    assert!(w.phone.orders().is_empty(), "self-tests order nothing");
    w.create(live("live-d"));
    wait_until("the live task's report", limit, &mut child, || {
        w.task("live-d")["results"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
    });
    let _ = child.kill();
    let _ = child.wait();
    let (kind, body) = w.report("live-d");
    assert_eq!(
        kind,
        "result",
        "{body}\n{}",
        std::fs::read_to_string(&log).unwrap_or_default()
    );
    assert_eq!(body["purchase"]["mode"], "live", "{body}");
    assert_eq!(body["diagnostics"]["pdd_version"], "7.99.0", "{body}");
    assert_eq!(w.phone.orders().len(), 1);
    // The self-test on 7.99.0 finished before the live task was claimed, and it is what
    // proved 7.99.0.
    let claimed = w.task("live-d")["claims"][0]["claimed_at"]
        .as_str()
        .unwrap()
        .to_string();
    let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap();
    assert!(
        t(on_new["finished_at"].as_str().unwrap()) <= t(&claimed),
        "{on_new} vs claimed {claimed}"
    );
    let s = status_json(data.path());
    let v = s["pdd_versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == "7.99.0")
        .cloned()
        .unwrap();
    assert_eq!(
        v["proven_by"],
        format!("self-test {}", on_new["attempt_id"].as_str().unwrap()),
        "{s}"
    );
    w.stop();
}

#[test]
fn a_failed_self_test_pauses_live_with_an_alert_and_is_retried_on_request() {
    let w = World::builder("tok-live-e").private_locks().start();
    let data = tempfile::tempdir().unwrap();
    // Goods the phone does not know: 商品不存在或已下架.
    let gone = "100000000001";
    w.create(live("live-e"));
    w.create(collect("coll-e"));
    // Non-blocking: the collect runs and the run exits 0 (not 5, blocked).
    run(&w, data.path(), Some(gone), &[]);
    assert_eq!(w.report("coll-e").0, "result", "collects go on");
    never_handed(&w, "live-e");
    assert!(w.phone.orders().is_empty());
    let s = status_json(data.path());
    let tests = self_tests(&s);
    assert_eq!(tests.len(), 1, "{s}");
    assert_eq!(tests[0]["outcome"], "failed", "{s}");
    let code = tests[0]["code"].as_str().unwrap().to_string();
    let first = tests[0]["attempt_id"].as_str().unwrap().to_string();
    let alert = s["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "self_test_failed")
        .cloned()
        .unwrap_or_else(|| panic!("no self_test_failed alert: {s}"));
    let msg = alert["message"].as_str().unwrap();
    assert!(
        msg.contains(&format!("[{code}]")) && msg.contains("artifacts/self-test/"),
        "{msg}"
    );
    let text = status_text(data.path());
    assert!(
        text.contains(&format!("live paused: self-test failed ({code}) at ")),
        "{text}"
    );
    // Within its backoff (5 min) a new run does not test again…
    run(&w, data.path(), Some(gone), &[]);
    let again = self_tests(&status_json(data.path()));
    assert_eq!(again[0]["attempt_id"], first.as_str());
    // …unless the operator asks for one.
    let out = client(data.path(), &["self-test"], Some(gone));
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("self-test requested"));
    run(&w, data.path(), Some(gone), &[]);
    let s = status_json(data.path());
    let t = &self_tests(&s)[0];
    assert_ne!(t["attempt_id"], first.as_str(), "{s}");
    assert_eq!(t["failures"], 2, "{s}");
    // One open alert, the newest failure's.
    let open: Vec<_> = s["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "self_test_failed")
        .collect();
    assert_eq!(open.len(), 1, "{s}");
    never_handed(&w, "live-e");
    w.stop();
}
