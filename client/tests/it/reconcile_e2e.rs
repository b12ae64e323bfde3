//! Reconciliation on the real app's variants, end to end: the real
//! `cmautobuy-client run --allow-live` binary against the bundled mock Admin on loopback
//! HTTP and the simulated phone over the real ADB protocol (direct TCP), the outcome read
//! back from the Admin and the phone's order ledger (the truth).
//!
//! - 811223344507 (`order_list_entry: "canvas"`): the profile has no accessible 待付款
//!   entry; the 待付款 deep link reaches the list.
//! - 811223344508 (`order_detail: "folded"`): 下单时间 behind 查看更多订单信息, the paid
//!   amount written `实付:` `12.50元`, the detail longer than one screen.
//! - Two identical tasks in a row: the second never adopts the first one's order (its
//!   number was reported for the first task), it finds its own.
//! - A phone whose clock runs 150 s behind the host's: its orders look placed 150 s
//!   before the mark, outside the bare 60 s; the measured skew widens the window.

use crate::support::world::World;
use serde_json::{json, Value};

const TOKEN: &str = "tok-recon";

/// The one report of task `id`: it must be a result; its `purchase` object.
fn purchase(w: &World, id: &str) -> Value {
    let t = w.task(id);
    assert_eq!(t["task"]["status"], "succeeded", "{id}: {t}");
    let results = t["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), 1, "{id}: exactly one report: {t}");
    assert_eq!(results[0]["kind"], "result", "{id}: {t}");
    results[0]["body"]["purchase"].clone()
}

fn live_task(id: &str, goods: &str, options: Value, max: i64) -> Value {
    crate::support::world::live_purchase(id, goods, options, 1, max)
}

#[test]
fn canvas_and_folded_goods_are_reconciled_to_the_ledgers_order() {
    let w = World::start(TOKEN);
    let cases = [
        (
            "recon-canvas",
            "811223344507",
            json!({"spec": "3卷装"}),
            1290,
        ),
        (
            "recon-folded",
            "811223344508",
            json!({"color": "白色"}),
            1250,
        ),
    ];
    for (id, goods, options, _) in &cases {
        w.create(live_task(id, goods, options.clone(), 1500));
    }
    let data = tempfile::tempdir().unwrap();
    w.run_live(data.path());
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 2, "one order per task: {orders:?}");
    assert!(orders
        .iter()
        .all(|o| !o.payment_attempted && o.status == "unpaid"));
    for (id, goods, options, total) in &cases {
        let o = orders
            .iter()
            .find(|o| o.goods_id == *goods)
            .unwrap_or_else(|| panic!("{id}: no order of {goods} in the ledger"));
        assert_eq!(o.total_cent, *total, "{id}");
        let p = purchase(&w, id);
        assert_eq!(p["mode"], "live", "{id}");
        assert_eq!(p["order_submitted"], true, "{id}");
        assert_eq!(p["payment_attempted"], false, "{id}");
        assert_eq!(p["payment_status"], "unpaid", "{id}");
        assert_eq!(p["order_sn"], o.order_sn.as_str(), "{id}");
        assert_eq!(p["confirmed_total_cent"], *total, "{id}");
        assert_eq!(&p["options"], options, "{id}");
        // The order time the detail showed is the ledger's.
        let shown =
            chrono::DateTime::parse_from_rfc3339(p["ordered_at"].as_str().unwrap()).unwrap();
        let created = chrono::DateTime::parse_from_rfc3339(&o.created_at).unwrap();
        assert_eq!(shown, created, "{id}");
    }
    w.stop();
}

/// Two identical live tasks, one after the other: when the second one reconciles, the
/// first one's order fits and lies inside its window too. Its number was reported for
/// the first task, so it is skipped: each task reports its own order (without the rule
/// the second would end `AMBIGUOUS_ORDER_MATCH`, or adopt the wrong one).
#[test]
fn an_identical_order_of_another_task_is_never_adopted() {
    let w = World::start(TOKEN);
    for id in ["recon-same-1", "recon-same-2"] {
        w.create(live_task(
            id,
            "811223344508",
            json!({"color": "黑色"}),
            1500,
        ));
    }
    let data = tempfile::tempdir().unwrap();
    w.run_live(data.path());
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 2, "one order per task: {orders:?}");
    let a = purchase(&w, "recon-same-1");
    let b = purchase(&w, "recon-same-2");
    assert_ne!(a["order_sn"], b["order_sn"]);
    let mut reported = vec![
        a["order_sn"].as_str().unwrap().to_string(),
        b["order_sn"].as_str().unwrap().to_string(),
    ];
    let mut ledger: Vec<String> = orders.iter().map(|o| o.order_sn.clone()).collect();
    reported.sort();
    ledger.sort();
    assert_eq!(reported, ledger);
    w.stop();
}

/// The phone's clock runs 150 s behind the host's, which stamps the mark: the order's
/// 下单时间 reads about 150 s before the mark. The client measures the skew (`date +%s`)
/// and accepts it — the bare 60 s would have ended `ORDER_TIME_OUT_OF_WINDOW`.
///
/// A skew above `max_clock_skew_secs` (30 s) refuses live
/// purchases (`client/tests/it/clock_skew.rs`); this operator has raised the limit, so the
/// reconcile window is what is tested here.
#[test]
fn a_phone_clock_behind_the_host_is_measured_and_its_order_adopted() {
    let w = World::builder(TOKEN).clock_offset(-150).start();
    w.create(live_task(
        "recon-skew",
        "811223344508",
        json!({"color": "白色"}),
        1500,
    ));
    let data = tempfile::tempdir().unwrap();
    crate::support::world::run_ok(
        w.command(data.path())
            .arg("--allow-live")
            .env("CMAUTOBUY_MAX_CLOCK_SKEW_SECS", "300"),
    );
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "{orders:?}");
    let p = purchase(&w, "recon-skew");
    assert_eq!(p["order_sn"], orders[0].order_sn.as_str());
    let mark = chrono::DateTime::parse_from_rfc3339(p["irreversible_action_at"].as_str().unwrap())
        .unwrap();
    let shown = chrono::DateTime::parse_from_rfc3339(p["ordered_at"].as_str().unwrap()).unwrap();
    let before = (mark - shown).num_seconds();
    assert!(
        (140..=160).contains(&before),
        "the order reads {before} s before the mark"
    );
    w.stop();
}
