//! The new-PDD-version gate end to end: the real `cmautobuy-client run
//! --allow-live --exit-when-idle` binary against the bundled mock Admin and the
//! simulated phone over ADB, with `CMAUTOBUY_PDD_VERSION_GATE=true` (the test world
//! switches it off by default) and a webhook.
//!
//! - fresh store, a live and a dry-run purchase pooled (the live one first): the client
//!   declares `dry_run` (PDD 7.36.0 never proven on this phone), so the Admin hands the
//!   dry run first; it succeeds and proves 7.36.0; live is declared and the live purchase
//!   places its one order;
//! - PDD updates itself to 7.99.0: `dry_run` again — a live purchase pooled alone is never
//!   handed, no order; `status` says "live paused: PDD 7.99.0 not yet proven on this
//!   phone", the `pdd_version_unproven` alert is open and has reached the webhook;
//! - a dry run on 7.99.0 succeeds: the alert closes, live is declared again and the live
//!   purchase places its order — after the dry run, never before;
//! - PDD 8.0.0, proven by hand: `ack N` of its alert records `ack N by USER`, and live
//!   purchases run on it without a dry run.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::support::receiver::Receiver;
use crate::support::world::{goods_url, live_purchase, wait_until, World};
use serde_json::{json, Value};

const GOODS: &str = "737116531267";

fn options() -> Value {
    json!({"color": "黑色", "size": "L"})
}

fn live(id: &str) -> Value {
    live_purchase(id, GOODS, options(), 1, 10000)
}

fn dry(id: &str) -> Value {
    json!({
        "id": id,
        "type": "purchase",
        "execution_mode": "dry_run",
        "payload": {
            "goods_id": GOODS,
            "goods_url": goods_url(GOODS),
            "options": options(),
            "quantity": 1,
            "max_price_cent": 10000,
        },
    })
}

fn collect(id: &str) -> Value {
    json!({
        "id": id,
        "type": "collect",
        "payload": {"goods_id": GOODS, "goods_url": goods_url(GOODS)},
    })
}

/// `run --allow-live` with the gate on and the webhook config; it must exit 0.
fn run_gated(w: &World, data: &Path, config: &Path) -> String {
    let out = w
        .command(data)
        .arg("--allow-live")
        .arg("--config")
        .arg(config)
        .arg("--no-console")
        .env("CMAUTOBUY_PDD_VERSION_GATE", "true")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    stderr
}

fn client(data: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("CMAUTOBUY_CONFIG")
        .env("USER", "ops-anna")
        .output()
        .unwrap()
}

fn status(data: &Path) -> String {
    let out = client(data, &["status"]);
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn status_json(data: &Path) -> Value {
    let out = client(data, &["status", "--json"]);
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).unwrap()
}

/// When the Admin handed task `id` out (its first claim), if it did.
fn claimed_at(w: &World, id: &str) -> Option<String> {
    w.task(id)["claims"]
        .as_array()
        .and_then(|c| c.first())
        .and_then(|c| c["claimed_at"].as_str())
        .map(str::to_string)
}

/// `first` was handed out before `then`.
fn handed_before(w: &World, first: &str, then: &str) {
    let (a, b) = (claimed_at(w, first), claimed_at(w, then));
    let (Some(a), Some(b)) = (a, b) else {
        panic!("{first} or {then} never claimed")
    };
    let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap();
    assert!(t(&a) < t(&b), "{first} at {a}, {then} at {b}");
}

fn attempt_of(w: &World, id: &str) -> String {
    let (kind, body) = w.report(id);
    assert_eq!(kind, "result", "{id}: {body}");
    body["attempt_id"].as_str().unwrap().to_string()
}

fn pdd_alerts(s: &Value) -> Vec<Value> {
    s["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["kind"] == "pdd_version_unproven")
        .cloned()
        .collect()
}

#[test]
fn live_runs_only_on_a_pdd_version_a_dry_run_proved_on_this_phone() {
    let w = World::builder("tok-pdd-gate").private_locks().start();
    let rx = w.rt.block_on(Receiver::start());
    let data = tempfile::tempdir().unwrap();
    let config = data.path().join("hooks.toml");
    std::fs::write(
        &config,
        format!(
            "[[webhook]]\nurl = \"{}/json/hook\"\nformat = \"json\"\n",
            rx.url
        ),
    )
    .unwrap();

    // 1. A fresh store: 7.36.0 is unproven. The live task was pooled first, yet the dry
    // run is handed first (dry_run declared), proves the version, then live runs.
    w.create(live("live-1"));
    w.create(dry("dry-1"));
    run_gated(&w, data.path(), &config);
    handed_before(&w, "dry-1", "live-1");
    let dry1 = attempt_of(&w, "dry-1");
    let (_, body) = w.report("dry-1");
    assert_eq!(body["purchase"]["mode"], "dry_run", "{body}");
    assert_eq!(body["diagnostics"]["pdd_version"], "7.36.0", "{body}");
    let (_, body) = w.report("live-1");
    assert_eq!(body["purchase"]["mode"], "live", "{body}");
    assert_eq!(w.phone.orders().len(), 1);
    let s = status_json(data.path());
    assert_eq!(s["pdd_version_hold"], Value::Null, "{s}");
    let v = &s["pdd_versions"][0];
    assert_eq!(
        (v["version"].as_str(), v["proven_by"].as_str()),
        (Some("7.36.0"), Some(dry1.as_str())),
        "{s}"
    );
    // The first version of a fresh store raised the alert, which the dry run closed.
    assert!(pdd_alerts(&s).is_empty(), "{s}");

    // 2. PDD updates itself: dry_run again. The live task pooled alone is never handed.
    w.phone.set_pdd_version("7.99.0", 79900);
    w.create(live("live-2"));
    w.create(collect("coll-2"));
    run_gated(&w, data.path(), &config);
    assert_eq!(w.report("coll-2").0, "result", "collects continue");
    assert!(
        w.task("live-2")["results"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "live-2 was handed on an unproven version"
    );
    assert_eq!(claimed_at(&w, "live-2"), None);
    assert_eq!(w.phone.orders().len(), 1, "no order on 7.99.0");
    let text = status(data.path());
    assert!(
        text.contains("live paused: PDD 7.99.0 not yet proven on this phone"),
        "{text}"
    );
    let s = status_json(data.path());
    let alerts = pdd_alerts(&s);
    assert_eq!(alerts.len(), 1, "{s}");
    let msg = alerts[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("PDD 7.99.0") && msg.contains("seen since") && msg.contains("dry-run"),
        "{msg}"
    );
    // Non-blocking: claiming went on (the collect) and the exit was 0, not 5.
    let hits = w.rt.block_on(rx.wait_for(1, Duration::from_secs(30)));
    let hook = hits
        .iter()
        .map(|h| h.json())
        .find(|b| b["kind"] == "pdd_version_unproven" && b["text"].to_string().contains("7.99.0"))
        .unwrap_or_else(|| panic!("no pdd_version_unproven webhook: {hits:?}"));
    assert_eq!(hook["category"], "alert", "{hook}");

    // 3. A dry run on 7.99.0 succeeds: the alert closes, live is declared again.
    w.create(dry("dry-2"));
    run_gated(&w, data.path(), &config);
    handed_before(&w, "dry-2", "live-2");
    let dry2 = attempt_of(&w, "dry-2");
    let (_, body) = w.report("live-2");
    assert_eq!(body["purchase"]["mode"], "live", "{body}");
    assert_eq!(body["diagnostics"]["pdd_version"], "7.99.0", "{body}");
    assert_eq!(w.phone.orders().len(), 2);
    let s = status_json(data.path());
    assert_eq!(s["pdd_version_hold"], Value::Null, "{s}");
    assert!(pdd_alerts(&s).is_empty(), "the alert closed itself: {s}");
    let proven = s["pdd_versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == "7.99.0")
        .cloned()
        .unwrap();
    assert_eq!(proven["proven_by"], dry2.as_str(), "{s}");
    assert!(!status(data.path()).contains("live paused"));

    // 4. PDD 8.0.0, checked by hand: `ack N` of its alert proves it (who and when
    // recorded); live runs on it without a dry run.
    w.phone.set_pdd_version("8.0.0", 80000);
    w.create(collect("coll-3"));
    run_gated(&w, data.path(), &config);
    let s = status_json(data.path());
    let alerts = pdd_alerts(&s);
    assert_eq!(alerts.len(), 1, "{s}");
    let id = alerts[0]["id"].as_i64().unwrap().to_string();
    let out = client(data.path(), &["ack", &id]);
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        said.contains("PDD 8.0.0") && said.contains("proven by hand"),
        "{said}"
    );
    w.create(live("live-3"));
    run_gated(&w, data.path(), &config);
    let (_, body) = w.report("live-3");
    assert_eq!(body["purchase"]["mode"], "live", "{body}");
    assert_eq!(w.phone.orders().len(), 3);
    let s = status_json(data.path());
    let v = s["pdd_versions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["version"] == "8.0.0")
        .cloned()
        .unwrap();
    assert_eq!(v["proven_by"], format!("ack {id} by ops-anna"), "{s}");
    assert!(v["proven_at"].is_string(), "{s}");
    w.stop();
}

/// A version that cannot be read fails closed: no live task is handed, with its own
/// reason in `status`.
#[test]
fn an_unreadable_pdd_version_holds_live_back() {
    let w = World::builder("tok-pdd-unreadable").private_locks().start();
    let data = tempfile::tempdir().unwrap();
    let config = data.path().join("none.toml");
    std::fs::write(&config, "").unwrap();
    // `dumpsys package` prints an empty versionName.
    w.phone.set_pdd_version("", 0);
    w.create(live("live-u"));
    w.create(collect("coll-u"));
    run_gated(&w, data.path(), &config);
    assert_eq!(w.report("coll-u").0, "result");
    assert!(w.task("live-u")["results"]
        .as_array()
        .is_none_or(|a| a.is_empty()));
    assert!(w.phone.orders().is_empty());
    let text = status(data.path());
    assert!(
        text.contains("live paused: the PDD version on this phone cannot be read"),
        "{text}"
    );
    w.stop();
}

/// §4.1 / §5: the registration at start declares what a claim would — with the PDD version
/// not yet proven that is `dry_run`, even with `--allow-live` — so it never widens what
/// the Admin stored. (The phone is away: the client registers and claims nothing.)
#[test]
fn the_registration_at_start_declares_dry_run_while_the_version_is_unproven() {
    let w = World::start("tok-version-reg");
    w.phone.set_offline(true);
    let data = tempfile::tempdir().unwrap();
    let mut child = w
        .command(data.path())
        .arg("--allow-live")
        .arg("--no-console")
        .env("CMAUTOBUY_PDD_VERSION_GATE", "true")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut caps = Value::Null;
    wait_until(
        "the registration",
        Duration::from_secs(60),
        &mut child,
        || {
            let clients = w.rt.block_on(w.op.clients()).unwrap();
            caps = clients["clients"]
                .as_array()
                .and_then(|a| a.first())
                .map(|c| c["capabilities"].clone())
                .unwrap_or(Value::Null);
            !caps.is_null()
        },
    );
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(caps["purchase_mode"], "dry_run", "{caps}");
    w.stop();
}
