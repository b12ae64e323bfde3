//! `cmautobuy-client run` executes collect tasks from an Admin over HTTP on a phone:
//! the real binary, the bundled mock Admin on loopback HTTP, the simulated phone over
//! the real ADB protocol (direct TCP), and the stored `pdd_data` read back; the
//! `allow_live` config key gating live purchases; and a live purchase whose task id is not
//! ASCII (issue 11 A.7).

use std::process::Command;
use std::time::Duration;

use cmautobuy_mock_admin::Operator;
use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig};
use cmautobuy_sim_phone::SimPhoneHandle;
use cmautobuy_sim_phone::{Catalog, SimConfig, SimPhone};
use serde_json::{json, Value};

/// The bundled mock Admin on loopback HTTP and the simulated phone on loopback TCP.
struct World {
    rt: tokio::runtime::Runtime,
    op: Operator,
    url: String,
    phone: SimPhoneHandle,
}

impl World {
    fn start() -> World {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let admin = MockAdmin::open(MockAdminConfig::in_memory()).unwrap();
        let op = admin.operator();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        rt.spawn(admin.serve(listener, std::future::pending()));
        let catalog = Catalog::load(&Catalog::bundled_dir()).unwrap();
        let phone =
            SimPhone::bind("127.0.0.1:0".parse().unwrap(), SimConfig::new(catalog)).unwrap();
        World { rt, op, url, phone }
    }
}

/// `cmautobuy-client run --exit-when-idle` against `url` on `phone`, with no config file
/// and no `CMAUTOBUY_ALLOW_LIVE` from the environment.
fn run_command(data: &std::path::Path, url: &str, phone: &SimPhoneHandle, token: &str) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    c.arg("--data-dir")
        .arg(data)
        .args(["run", "--admin", url, "--token", token, "--exit-when-idle"])
        .args(["--poll-interval", "0.2"])
        .arg("--device")
        .arg(format!("tcp:{}", phone.addr()))
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_ALLOW_LIVE");
    c
}

/// Runs a client command and asserts it exited 0.
fn run_ok(c: &mut Command) {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A live purchase task `id`: one 黑色 / L of the catalog's goods 737116531267, ¥100 limit.
fn live_purchase(id: &str) -> Value {
    json!({
        "id": id,
        "type": "purchase",
        "execution_mode": "live",
        "payload": {
            "goods_id": "737116531267",
            "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=737116531267",
            "options": {"color": "黑色", "size": "L"},
            "quantity": 1,
            "max_price_cent": 10000,
        },
    })
}

#[test]
fn run_collects_on_the_configured_device_and_the_admin_stores_pdd_data() {
    let World { rt, op, url, phone } = World::start();
    for (id, goods) in [("run-1", "602938475610"), ("run-2", "693344556677")] {
        rt.block_on(op.create_task(json!({
            "id": id,
            "type": "collect",
            "payload": {
                "goods_id": goods,
                "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}"),
            },
        })))
        .unwrap();
    }
    let data = tempfile::tempdir().unwrap();
    let out = run_command(data.path(), &url, &phone, "tok-SECRET-42")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stored = |id: &str| -> (String, Value) {
        let t = rt.block_on(op.get_task(id)).unwrap();
        let r = t["results"]
            .as_array()
            .and_then(|a| a.last())
            .cloned()
            .unwrap();
        (r["kind"].as_str().unwrap().to_string(), r["body"].clone())
    };
    let (kind, body) = stored("run-1");
    assert_eq!(kind, "result");
    let skus = body["pdd_data"]["skus"].as_array().unwrap();
    assert_eq!(skus.len(), 2 * 5, "two colours × five sizes");
    assert_eq!(body["pdd_data"]["price_granularity"], "color");
    assert_eq!(skus[0]["price_cent"], 4580);
    let (kind, body) = stored("run-2");
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
        .any(|e| e["file"].as_str().unwrap().ends_with(".png")));
    // The token never lands in the evidence.
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let bytes = std::fs::read(e.path()).unwrap();
        assert!(!bytes
            .windows(b"tok-SECRET-42".len())
            .any(|w| w == b"tok-SECRET-42"));
    }
    drop(phone);
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// `allow_live = true` in the config (here its environment twin) is what an unattended
/// machine uses instead of `run --allow-live`: without it a live purchase task is never
/// claimed (the client declares `dry_run`, contract §5); with it the same task places
/// exactly one unpaid order and the Admin stores the live result.
#[test]
fn allow_live_in_the_config_runs_a_live_purchase_and_without_it_nothing_is_ordered() {
    let World { rt, op, url, phone } = World::start();
    rt.block_on(op.create_task(live_purchase("live-1")))
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let run = |allow_live: Option<&str>| {
        let mut c = run_command(data.path(), &url, &phone, "tok-live");
        if let Some(v) = allow_live {
            c.env("CMAUTOBUY_ALLOW_LIVE", v);
        }
        run_ok(&mut c);
    };
    let task = || rt.block_on(op.get_task("live-1")).unwrap();

    run(None);
    assert!(phone.orders().is_empty(), "a dry_run client ordered");
    assert!(
        task()["results"].as_array().is_none_or(|r| r.is_empty()),
        "a dry_run client reported on a live task: {}",
        task()
    );

    run(Some("true"));
    let orders = phone.orders();
    assert_eq!(orders.len(), 1, "{orders:?}");
    assert!(!orders[0].payment_attempted);
    let t = task();
    let results = t["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), 1, "{t}");
    let p = &results[0]["body"]["purchase"];
    assert_eq!(p["mode"], "live");
    assert_eq!(p["order_sn"], orders[0].order_sn.as_str());
    assert_eq!(p["payment_attempted"], false);
    drop(phone);
    rt.shutdown_timeout(Duration::from_secs(1));
}

/// Issue 11 A.7: a live task whose id is `采购 0001` (non-ASCII, with a space) places one
/// order and its result is accepted by the bundled mock, under the key of the contract
/// rule (`{task_id}:{attempt_id}:result-v1`, the id's bytes outside visible ASCII
/// percent-encoded) — not parked with 400 `INVALID_IDEMPOTENCY_KEY`.
#[test]
fn a_live_purchase_with_a_non_ascii_task_id_orders_once_and_its_result_is_accepted() {
    let World { rt, op, url, phone } = World::start();
    let id = "采购 0001";
    rt.block_on(op.create_task(live_purchase(id))).unwrap();
    let data = tempfile::tempdir().unwrap();
    run_ok(run_command(data.path(), &url, &phone, "tok-ids").env("CMAUTOBUY_ALLOW_LIVE", "true"));
    let orders = phone.orders();
    assert_eq!(orders.len(), 1, "{orders:?}");
    assert!(!orders[0].payment_attempted);
    let t = rt.block_on(op.get_task(id)).unwrap();
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
    drop(phone);
    rt.shutdown_timeout(Duration::from_secs(1));
}
