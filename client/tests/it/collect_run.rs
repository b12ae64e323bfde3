//! `cmautobuy-client run` executes collect tasks from an Admin over HTTP on a phone:
//! the real binary, the bundled mock Admin on loopback HTTP, the simulated phone over
//! the real ADB protocol (direct TCP), and the stored `pdd_data` read back; a risk page
//! pausing the worker for the account until `ack` (exit 5, no further claim,
//! across a restart, `status` naming it); the
//! `allow_live` config key gating live purchases; and a live purchase whose task id is not
//! ASCII.

use std::process::Command;

use crate::support::world::{run_ok, World};
use serde_json::{json, Value};

/// A live purchase task `id`: one 黑色 / L of the catalog's goods 737116531267, ¥100 limit.
fn live_purchase(id: &str) -> Value {
    crate::support::world::live_purchase(
        id,
        "737116531267",
        json!({"color": "黑色", "size": "L"}),
        1,
        10000,
    )
}

#[test]
fn run_collects_on_the_configured_device_and_the_admin_stores_pdd_data() {
    let w = World::start("tok-SECRET-42");
    // run-2's goods shows a risk page: the worker pauses for the account, so
    // run-3 is not claimed until the operator acknowledges.
    for (id, goods) in [
        ("run-1", "602938475610"),
        ("run-2", "693344556677"),
        ("run-3", "602938475610"),
    ] {
        w.create(json!({
            "id": id,
            "type": "collect",
            "payload": {
                "goods_id": goods,
                "goods_url": crate::support::world::goods_url(goods),
            },
        }));
    }
    let data = tempfile::tempdir().unwrap();
    let out = w.command(data.path()).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "blocked: {stderr}");
    assert!(stderr.contains("account_paused"), "{stderr}");
    let (kind, body) = w.report("run-1");
    assert_eq!(kind, "result");
    let skus = body["pdd_data"]["skus"].as_array().unwrap();
    assert_eq!(skus.len(), 2 * 5, "two colours × five sizes");
    assert_eq!(body["pdd_data"]["price_granularity"], "color");
    assert_eq!(skus[0]["price_cent"], 4580);
    let (kind, body) = w.report("run-2");
    assert_eq!(kind, "failure");
    assert_eq!(body["status"], "manual_review");
    assert_eq!(body["error"]["code"], "RISK_VERIFICATION");
    let reference = body["diagnostics"]["artifact_ref"].as_str().unwrap();
    let rel = reference.split_once(':').unwrap().1;
    let dir = data.path().join(rel);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    assert!(manifest
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["file"].as_str().is_some_and(|f| f.ends_with(".png"))));
    // The action trace beside it: every dump the manifest lists was saved by
    // an `observe`, and the viewer reads the folder back: the risk page it stopped on.
    let trace: Value =
        serde_json::from_slice(&std::fs::read(dir.join("trace.json")).unwrap()).unwrap();
    // Artifact entries only (action entries have no file).
    for e in manifest.as_array().unwrap() {
        let Some(file) = e["file"].as_str() else {
            continue;
        };
        let kind = if file.ends_with(".png") {
            "screenshot"
        } else {
            "observe"
        };
        if file.ends_with(".png") || file.ends_with(".xml") {
            assert!(
                trace
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|r| r["file"] == file && r["kind"] == kind),
                "{file} not in the trace: {trace}"
            );
        }
    }
    let view = cmautobuy_client::viewer::load(&dir).unwrap();
    assert!(view.steps.iter().any(|s| matches!(
        &s.reading,
        cmautobuy_client::viewer::Reading::Screen { kind, .. } if kind == "risk_verification"
    )));
    assert!(view.steps.iter().any(|s| s.screenshot.is_some()));
    // The token never lands in the evidence.
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let bytes = std::fs::read(e.path()).unwrap();
        assert!(!bytes
            .windows(b"tok-SECRET-42".len())
            .any(|w| w == b"tok-SECRET-42"));
    }
    // Paused: run-3 was never claimed; `status` says so and names the alert.
    assert!(w.task("run-3")["results"]
        .as_array()
        .is_none_or(|a| a.is_empty()));
    let client = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
            .arg("--data-dir")
            .arg(data.path())
            .args(args)
            .env_remove("CMAUTOBUY_CONFIG")
            .output()
            .unwrap()
    };
    let status = String::from_utf8_lossy(&client(&["status"]).stdout).to_string();
    assert!(
        status.contains("PAUSED for the account (task run-2)")
            && status.contains("cmautobuy-client ack "),
        "{status}"
    );
    assert!(status.contains(rel.trim_end_matches('/')), "{status}");
    let again = w.command(data.path()).output().unwrap();
    assert_eq!(again.status.code(), Some(5), "still paused after a restart");
    assert!(w.task("run-3")["results"]
        .as_array()
        .is_none_or(|a| a.is_empty()));
    // The operator acknowledges: claiming resumes.
    assert!(client(&["ack"]).status.success());
    w.run(data.path());
    assert_eq!(w.report("run-3").0, "result");
    w.stop();
}

/// `allow_live = true` in the config (here its environment twin) is what an unattended
/// machine uses instead of `run --allow-live`: without it a live purchase task is never
/// claimed (the client declares `dry_run`, contract §5); with it the same task places
/// exactly one unpaid order and the Admin stores the live result.
#[test]
fn allow_live_in_the_config_runs_a_live_purchase_and_without_it_nothing_is_ordered() {
    let w = World::start("tok-live");
    w.create(live_purchase("live-1"));
    let data = tempfile::tempdir().unwrap();
    let run = |allow_live: Option<&str>| {
        let mut c = w.command(data.path());
        if let Some(v) = allow_live {
            c.env("CMAUTOBUY_ALLOW_LIVE", v);
        }
        run_ok(&mut c);
    };
    let task = || w.task("live-1");

    run(None);
    assert!(w.phone.orders().is_empty(), "a dry_run client ordered");
    assert!(
        task()["results"].as_array().is_none_or(|r| r.is_empty()),
        "a dry_run client reported on a live task: {}",
        task()
    );

    run(Some("true"));
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "{orders:?}");
    assert!(!orders[0].payment_attempted);
    let t = task();
    let results = t["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), 1, "{t}");
    let p = &results[0]["body"]["purchase"];
    assert_eq!(p["mode"], "live");
    assert_eq!(p["order_sn"], orders[0].order_sn.as_str());
    assert_eq!(p["payment_attempted"], false);
    w.stop();
}

/// A live task whose id is `采购 0001` (non-ASCII, with a space) places one
/// order and its result is accepted by the bundled mock, under the key of the contract
/// rule (`{task_id}:{attempt_id}:result-v1`, the id's bytes outside visible ASCII
/// percent-encoded) — not parked with 400 `INVALID_IDEMPOTENCY_KEY`.
#[test]
fn a_live_purchase_with_a_non_ascii_task_id_orders_once_and_its_result_is_accepted() {
    let w = World::start("tok-ids");
    let id = "采购 0001";
    w.create(live_purchase(id));
    let data = tempfile::tempdir().unwrap();
    run_ok(w.command(data.path()).env("CMAUTOBUY_ALLOW_LIVE", "true"));
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "{orders:?}");
    assert!(!orders[0].payment_attempted);
    let t = w.task(id);
    assert_eq!(t["task"]["status"], "succeeded", "{t}");
    let results = t["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), 1, "{t}");
    assert_eq!(results[0]["kind"], "result", "{t}");
    let p = &results[0]["body"]["purchase"];
    assert_eq!(p["mode"], "live");
    assert_eq!(p["order_sn"], orders[0].order_sn.as_str());
    let attempt = results[0]["body"]["attempt_id"].as_str().unwrap();
    assert_eq!(
        results[0]["idempotency_key"],
        format!("%E9%87%87%E8%B4%AD%200001:{attempt}:result-v1"),
        "{t}"
    );
    // Nothing left undelivered (or parked) in the client's outbox.
    let listed = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data.path())
        .args(["outbox", "list", "--json"])
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .unwrap();
    assert!(listed.status.success());
    let undelivered: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(undelivered, json!([]));
    w.stop();
}
