//! Goods identity end to end (issue 11 A.2): the real `cmautobuy-client run` binary
//! against the bundled mock Admin on loopback HTTP and the simulated phone over the real
//! ADB protocol (direct TCP). Real goods pages print no goods id; the client reads the one
//! the phone shows from `dumpsys activity top`:
//! - a collect of a redirecting link ends `failed GOODS_MISMATCH` naming the goods id
//!   `dumpsys activity top` shows (the redirect's target), and the raw output is kept as
//!   evidence;
//! - a live purchase proven by `dumpsys activity top` places its order and reports
//!   `goods_identity: "activity_top"`;
//! - a live purchase whose deep link fails (811223344509) while another goods with the
//!   same option names (811223344510) is on screen, with no expected title, never
//!   orders: one order in the ledger, the first task's.

use std::process::Command;
use std::time::Duration;

use cmautobuy_mock_admin::{MockAdmin, MockAdminConfig, Operator};
use cmautobuy_sim_phone::{Catalog, SimConfig, SimPhone, SimPhoneHandle};
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
        // The bundled catalog: apparel, general, special (the redirect) and variants
        // (811223344509 `deep_link_fails`, 811223344510 the same option names). Real
        // pages print no goods id (`show_goods_id` is off by default).
        let catalog = Catalog::load(&Catalog::bundled_dir()).unwrap();
        let phone =
            SimPhone::bind("127.0.0.1:0".parse().unwrap(), SimConfig::new(catalog)).unwrap();
        World { rt, op, url, phone }
    }

    fn create(&self, task: Value) {
        self.rt.block_on(self.op.create_task(task)).unwrap();
    }

    /// The last report of task `id`: (kind, body).
    fn report(&self, id: &str) -> (String, Value) {
        let t = self.rt.block_on(self.op.get_task(id)).unwrap();
        let r = t["results"]
            .as_array()
            .and_then(|a| a.last())
            .cloned()
            .unwrap_or_else(|| panic!("{id}: no report: {t}"));
        (
            r["kind"].as_str().unwrap_or("").to_string(),
            r["body"].clone(),
        )
    }

    /// `cmautobuy-client run --exit-when-idle --allow-live` on this phone, exit 0.
    fn run(&self, data: &std::path::Path) {
        let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
            .arg("--data-dir")
            .arg(data)
            .args(["run", "--admin", &self.url, "--token", "tok-ident"])
            .args(["--exit-when-idle", "--allow-live", "--poll-interval", "0.2"])
            .arg("--device")
            .arg(format!("tcp:{}", self.phone.addr()))
            .env_remove("CMAUTOBUY_CONFIG")
            .env_remove("CMAUTOBUY_ALLOW_LIVE")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "run failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn stop(self) {
        drop(self.phone);
        self.rt.shutdown_timeout(Duration::from_secs(1));
    }
}

fn url_of(goods: &str) -> String {
    format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}")
}

fn live_purchase(id: &str, goods: &str) -> Value {
    json!({
        "id": id, "type": "purchase", "execution_mode": "live",
        "payload": {
            "goods_id": goods, "goods_url": url_of(goods),
            "options": {"color": "白色", "size": "M"},
            "quantity": 1, "max_price_cent": 10000,
        },
    })
}

/// The files of the attempt a failure's `artifact_ref` names.
fn artifact_files(data: &std::path::Path, body: &Value) -> Vec<std::path::PathBuf> {
    let reference = body["diagnostics"]["artifact_ref"].as_str().unwrap_or("");
    let rel = reference.split_once(':').map_or("", |(_, r)| r);
    std::fs::read_dir(data.join(rel))
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

#[test]
fn a_collect_of_a_redirecting_link_fails_naming_the_goods_id_activity_top_shows() {
    let w = World::start();
    // 671122334455 redirects to 737116531267; no expected title: only the goods id the
    // phone shows can tell.
    w.create(json!({
        "id": "ident-redirect", "type": "collect",
        "payload": {"goods_id": "671122334455", "goods_url": url_of("671122334455")},
    }));
    let data = tempfile::tempdir().unwrap();
    w.run(data.path());
    let (kind, body) = w.report("ident-redirect");
    assert_eq!(kind, "failure", "{body}");
    assert_eq!(body["status"], "failed");
    assert_eq!(body["error"]["code"], "GOODS_MISMATCH");
    assert_eq!(body["error"]["step"], "check_goods");
    let message = body["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("737116531267"), "{message}");
    assert_eq!(body["diagnostics"]["observed_goods_id"], "737116531267");
    assert_eq!(body["diagnostics"]["observed_by"], "activity_top");
    assert_eq!(body["diagnostics"]["expected_goods_id"], "671122334455");
    // The raw `dumpsys activity top` outputs are evidence in the attempt's artifacts.
    let tops: Vec<String> = artifact_files(data.path(), &body)
        .iter()
        .filter(|p| p.to_string_lossy().ends_with("activity-top.txt"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert_eq!(tops.len(), 2, "a first look and a confirming second look");
    assert!(tops.iter().all(|t| t.contains("goods_id=737116531267")));
    // Nothing of the other goods was stored under this id.
    assert!(w.phone.orders().is_empty());
    w.stop();
}

#[test]
fn a_failed_deep_link_never_buys_the_goods_left_on_screen() {
    let w = World::start();
    let data = tempfile::tempdir().unwrap();

    // An ordinary live purchase: its goods page prints no id; `dumpsys activity top`
    // proves it, one read.
    w.create(live_purchase("ident-510", "811223344510"));
    w.run(data.path());
    let (kind, body) = w.report("ident-510");
    assert_eq!(kind, "result", "{body}");
    let p = &body["purchase"];
    assert_eq!(p["mode"], "live");
    assert_eq!(p["goods_id"], "811223344510");
    assert_eq!(p["goods_identity"], "activity_top");
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "{orders:?}");
    assert_eq!(p["order_sn"], orders[0].order_sn.as_str());

    // 811223344510's goods page is on screen again (as the previous task, or a person
    // browsing, can leave it); 811223344509's deep link fails and leaves it there. Same
    // option names, no expected title.
    let e = w.phone.run_shell(
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=811223344510'",
    );
    assert_eq!(e.code, 0);
    assert_eq!(w.phone.current_page(), "goods");
    w.create(live_purchase("ident-509", "811223344509"));
    w.run(data.path());
    let (kind, body) = w.report("ident-509");
    assert_eq!(kind, "failure", "{body}");
    assert_ne!(body["status"], "succeeded");
    assert_eq!(body["error"]["code"], "GOODS_MISMATCH");
    assert_eq!(body["diagnostics"]["observed_goods_id"], "811223344510");
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "exactly one order, the first: {orders:?}");
    assert_eq!(orders[0].goods_id, "811223344510");
    assert!(orders.iter().all(|o| !o.payment_attempted));
    w.stop();
}
