//! End-to-end purchases: `rehearse` with a batch of purchase tasks — the real
//! claim loop, flow executor, outbox and HTTP gateway against the bundled mock Admin (a
//! real server on 127.0.0.1:0, read back through its operator API), and the simulated
//! phone over the ADB wire protocol. Dry runs place no order; live purchases place one
//! unpaid order each and report its number and time; the §7.1 path goes through the
//! mock's rule resolver; the total-price guard, no address and sold-out end with their
//! codes. Under `CMAUTOBUY_DEVICE_BACKEND=u2` (scripts/test's u2 pass) the rehearsal runs
//! on uiautomator2's server, through the private adb server it brings.

use std::time::Duration;

use crate::support::rehearse_backend_from_env;
use crate::support::world::backend_from_env;
use cmautobuy_client::config::DeviceBackend;
use cmautobuy_client::rehearse::{purchase_demo, rehearse, RehearseOptions, Summary};
use serde_json::Value;

/// The options of a rehearsal in process, on this run's device backend
/// (`CMAUTOBUY_DEVICE_BACKEND`, its jar from `CMAUTOBUY_U2_JAR`), as the binary reads them.
fn options() -> RehearseOptions {
    let device_backend = backend_from_env()
        .map(|b| DeviceBackend::parse(b.trim()).expect("CMAUTOBUY_DEVICE_BACKEND"))
        .unwrap_or_default();
    RehearseOptions {
        device_backend,
        u2_jar: std::env::var_os("CMAUTOBUY_U2_JAR").map(Into::into),
        ..RehearseOptions::default()
    }
}

/// Runs `o` on a thread of its own and checks it ran on this run's device backend.
fn rehearse_on_backend(o: RehearseOptions) -> Summary {
    let s = std::thread::spawn(move || rehearse(o))
        .join()
        .expect("rehearse thread")
        .expect("rehearse runs");
    assert_eq!(
        (s.device_backend.as_str(), &s.device_backend_fallback),
        (rehearse_backend_from_env(), &None),
        "device {}",
        s.device
    );
    s
}

/// The bundled mock Admin on a loopback port, served from its own runtime thread.
struct Admin {
    url: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn admin(dir: &std::path::Path) -> Admin {
    let db = dir.join("admin.sqlite").to_string_lossy().to_string();
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let admin = cmautobuy_mock_admin::MockAdmin::open(
                cmautobuy_mock_admin::MockAdminConfig::file(db),
            )
            .expect("mock admin");
            let l = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            addr_tx.send(l.local_addr().expect("addr")).expect("send");
            let _ = admin
                .serve(l, async move {
                    let _ = rx.await;
                })
                .await;
        });
    });
    let addr = addr_rx
        .recv_timeout(Duration::from_secs(30))
        .expect("admin address");
    Admin {
        url: format!("http://{addr}"),
        _stop: tx,
    }
}

fn run(admin: &Admin, dir: &std::path::Path, live: bool) -> Summary {
    std::fs::create_dir_all(dir).expect("dir");
    let batch = dir.join("batch.json");
    let tag = if live { "e2e-live" } else { "e2e-dry" };
    std::fs::write(
        &batch,
        serde_json::to_vec(&purchase_demo(tag, live, true)).expect("json"),
    )
    .expect("batch");
    let o = RehearseOptions {
        admin: Some(admin.url.clone()),
        data_dir: Some(dir.join("client")),
        tasks: Some(batch),
        json: true,
        live,
        timeout: Some(Duration::from_secs(300)),
        ..options()
    };
    rehearse_on_backend(o)
}

fn post(admin: &Admin, path: &str, body: Value) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let r = reqwest::Client::new()
            .post(format!("{}{path}", admin.url))
            .json(&body)
            .send()
            .await
            .expect("post");
        assert!(r.status().is_success(), "{path}: {}", r.status());
    })
}

fn task(admin: &Admin, id: &str) -> Value {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        reqwest::Client::new()
            .get(format!("{}/api/v1/admin/tasks/{id}", admin.url))
            .send()
            .await
            .expect("get")
            .json::<Value>()
            .await
            .expect("json")
    })
}

fn purchase_of(admin: &Admin, id: &str) -> Value {
    let t = task(admin, id);
    let results = t["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), 1, "{id}: exactly one report");
    assert_eq!(results[0]["kind"], "result", "{id}");
    results[0]["body"]["purchase"].clone()
}

#[test]
fn dry_run_and_live_purchases_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let a = admin(dir.path());

    // Dry runs: every task ends as expected, nothing is submitted.
    let s = run(&a, &dir.path().join("dry"), false);
    assert!(s.ok, "{:#?}", s.tasks);
    let ok = s
        .tasks
        .iter()
        .find(|l| l.id.contains("-ok-"))
        .expect("ok task");
    let p = purchase_of(&a, &ok.id);
    assert_eq!(p["mode"], "dry_run");
    assert_eq!(p["order_submitted"], false);
    assert_eq!(p["payment_status"], "not_created");
    assert_eq!(p["confirmed_total_cent"], 11800);
    assert!(p.get("order_sn").is_none());

    // Live: one unpaid order per successful task, with its number and time.
    let s = run(&a, &dir.path().join("live"), true);
    assert!(s.ok, "{:#?}", s.tasks);
    for (name, options, qty, total) in [
        ("-ok-", ("黑色", "L"), 2, 11800),
        ("-spec-", ("黑色", "120斤"), 1, 4580),
        ("-ok2-", ("雾霾蓝", "M"), 1, 6300),
    ] {
        let line = s.tasks.iter().find(|l| l.id.contains(name)).expect("task");
        assert!(line.dumps <= 16, "{}: {} dumps", line.id, line.dumps);
        let p = purchase_of(&a, &line.id);
        assert_eq!(p["mode"], "live");
        // Real pages print no goods id: `dumpsys activity top` proved it.
        assert_eq!(p["goods_identity"], "activity_top");
        assert_eq!(p["order_submitted"], true);
        assert_eq!(p["payment_attempted"], false);
        assert_eq!(p["payment_status"], "unpaid");
        assert_eq!(p["match_status"], "matched");
        assert_eq!(p["options"]["color"], options.0);
        assert_eq!(p["options"]["size"], options.1);
        assert_eq!(p["quantity"], qty);
        assert_eq!(p["confirmed_total_cent"], total);
        let sn = p["order_sn"].as_str().unwrap_or("");
        assert!(
            sn.len() > 7 && sn.as_bytes()[6] == b'-',
            "order number {sn}"
        );
        let at = p["ordered_at"].as_str().unwrap_or("");
        assert!(
            chrono::DateTime::parse_from_rfc3339(at).is_ok(),
            "ordered_at {at}"
        );
        assert!(p["irreversible_action_at"].is_string());
    }
    let spec = s.tasks.iter().find(|l| l.id.contains("-spec-")).unwrap();
    assert!(purchase_of(&a, &spec.id)["spec_resolution_id"].is_string());
    for (name, outcome) in [
        ("-limit-", "failed:PRICE_LIMIT_EXCEEDED"),
        ("-noaddr-", "manual_review:ADDRESS_MISSING"),
        ("-soldout-", "failed:SPEC_SOLD_OUT"),
    ] {
        let line = s.tasks.iter().find(|l| l.id.contains(name)).expect("task");
        assert_eq!(line.outcome, outcome);
    }
}

/// The mock's forced §7.1 outcomes (operator overrides per task): uncertain and
/// rejected end the attempt with their codes and no order.
#[test]
fn spec_resolution_outcomes_from_the_mock() {
    let dir = tempfile::tempdir().unwrap();
    let a = admin(dir.path());
    let cases = [
        ("uncertain", "manual_review:SPEC_RESOLUTION_UNCERTAIN"),
        ("rejected", "failed:SPEC_RESOLUTION_REJECTED"),
    ];
    // (`failed` → retry_wait makes the task claimable again, so a rehearsal would claim
    // it until its timeout; the in-process flow tests cover it.)
    let batch: Vec<Value> = cases
        .iter()
        .map(|(o, expect)| {
            serde_json::json!({
                "id": format!("e2e-spec-{o}"), "type": "purchase", "execution_mode": "live",
                "payload": {
                    "goods_id": "602938475610",
                    "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=602938475610",
                    "options": {"color": "黑色", "size": "60公斤"},
                    "quantity": 1, "max_price_cent": 4580
                },
                "expect": expect
            })
        })
        .collect();
    // Overrides are per task id: install them before the tasks exist (they stay).
    for (o, _) in &cases {
        post(
            &a,
            "/api/v1/admin/spec-overrides",
            serde_json::json!({"task_id": format!("e2e-spec-{o}"), "outcome": o}),
        );
    }
    let file = dir.path().join("spec.json");
    std::fs::write(&file, serde_json::to_vec(&batch).unwrap()).unwrap();
    let o = RehearseOptions {
        admin: Some(a.url.clone()),
        data_dir: Some(dir.path().join("client")),
        tasks: Some(file),
        json: true,
        live: true,
        timeout: Some(Duration::from_secs(300)),
        ..options()
    };
    let s = rehearse_on_backend(o);
    for (o, expect) in cases {
        let id = format!("e2e-spec-{o}");
        let line = s.tasks.iter().find(|l| l.id == id).expect("task");
        assert_eq!(line.outcome, expect, "{id}");
    }
}
