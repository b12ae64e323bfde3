//! Goods identity end to end: the real `cmautobuy-client run` binary
//! against the bundled mock Admin on loopback HTTP and the simulated phone over the real
//! ADB protocol (direct TCP). Real goods pages print no goods id; the client reads the one
//! the phone shows from `dumpsys activity top`:
//! - a collect of a redirecting link ends `failed GOODS_MISMATCH` naming the goods id
//!   `dumpsys activity top` shows (the redirect's target), and the raw output is kept as
//!   evidence;
//! - a live purchase proven by `dumpsys activity top` places its order and reports
//!   `goods_identity: "activity_top"`;
//! - a purchase whose deep link fails (811223344509) while another goods with the same
//!   option names (811223344510) is on screen, with no expected title, never orders: a
//!   dry run ends `failed GOODS_MISMATCH` naming the goods shown; a live one first takes
//!   its census of unpaid orders, so the failing link leaves the order list
//!   in front and it ends before any sheet — one order in the ledger, the first task's.
//!
//! The phone has the bundled catalog: apparel, general, special (the redirect) and
//! variants (811223344509 `deep_link_fails`, 811223344510 the same option names). Real
//! pages print no goods id (`show_goods_id` is off by default).

use crate::support::world::{goods_url as url_of, World};
use serde_json::{json, Value};

fn live_purchase(id: &str, goods: &str) -> Value {
    crate::support::world::live_purchase(id, goods, json!({"color": "白色", "size": "M"}), 1, 10000)
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
    let w = World::start("tok-ident");
    // 671122334455 redirects to 737116531267; no expected title: only the goods id the
    // phone shows can tell.
    w.create(json!({
        "id": "ident-redirect", "type": "collect",
        "payload": {"goods_id": "671122334455", "goods_url": url_of("671122334455")},
    }));
    let data = tempfile::tempdir().unwrap();
    w.run_live(data.path());
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
    let w = World::start("tok-ident");
    let data = tempfile::tempdir().unwrap();

    // An ordinary live purchase: its goods page prints no id; `dumpsys activity top`
    // proves it, one read.
    w.create(live_purchase("ident-510", "811223344510"));
    w.run_live(data.path());
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
    let mut dry = live_purchase("ident-509-dry", "811223344509");
    dry["execution_mode"] = json!("dry_run");
    w.create(dry);
    // Without the account check: it opens 个人中心 at the start of each run, which would
    // take the goods page this case is about off the screen.
    let run = || {
        crate::support::world::run_ok(
            w.command(data.path())
                .arg("--allow-live")
                .env("CMAUTOBUY_ACCOUNT_CHECK", "false"),
        )
    };
    run();
    let (kind, body) = w.report("ident-509-dry");
    assert_eq!(kind, "failure", "{body}");
    assert_eq!(body["error"]["code"], "GOODS_MISMATCH");
    assert_eq!(body["diagnostics"]["observed_goods_id"], "811223344510");

    // Live: the census (the 待付款 list) comes first, and the failing link leaves that
    // list in front: no sheet is ever opened.
    let e = w.phone.run_shell(
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=811223344510'",
    );
    assert_eq!(e.code, 0);
    w.create(live_purchase("ident-509", "811223344509"));
    // The mock Admin hands a retry_wait back, again and again: one goods whose page is
    // never recognised is that goods' failure, never the account's — no pause. The
    // operator cancels the task once it has been reported; the client then goes idle
    // and exits 0.
    let mut child = w
        .command(data.path())
        .arg("--allow-live")
        .env("CMAUTOBUY_ACCOUNT_CHECK", "false")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    crate::support::world::wait_until(
        "two reports of the dead link",
        std::time::Duration::from_secs(120),
        &mut child,
        || {
            w.task("ident-509")["results"]
                .as_array()
                .is_some_and(|r| r.len() >= 2)
        },
    );
    w.rt.block_on(w.op.cancel_task("ident-509")).unwrap();
    let status = crate::support::world::wait_exit(
        &mut child,
        std::time::Duration::from_secs(120),
        String::new,
    );
    assert_eq!(status.code(), Some(0), "no account pause for one dead link");
    let st = crate::support::world::status_json(data.path());
    let alerts = st["alerts"].as_array().cloned().unwrap_or_default();
    assert!(
        alerts.iter().all(|a| a["kind"] != "account_paused"),
        "{alerts:?}"
    );
    let t = w.task("ident-509");
    let results = t["results"].as_array().cloned().unwrap_or_default();
    assert!(!results.is_empty(), "{t}");
    for r in &results {
        assert_eq!(r["kind"], "failure", "{r}");
        assert_eq!(r["body"]["status"], "retry_wait", "{r}");
    }
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "exactly one order, the first: {orders:?}");
    assert_eq!(orders[0].goods_id, "811223344510");
    assert!(orders.iter().all(|o| !o.payment_attempted));
    w.stop();
}
