//! The real app's variants end to end (acceptance): the real
//! `cmautobuy-client run --exit-when-idle` binary, live, against the bundled mock Admin on
//! loopback HTTP and the simulated phone over the ADB wire protocol (direct TCP), with the
//! repository's catalogs — `fixtures/catalog/variants.json` among them. Each test asserts
//! the task's outcome and code at the Admin and the phone's order ledger:
//!
//! - `pay_later` (811223344502) and `password_free` (811223344503) → `manual_review
//!   PAYMENT_METHOD_NOT_ALLOWED`, the ledger unchanged;
//! - `total_lag_dumps: 2` with a 5-yuan coupon (811223344505): the sheet shows the stale
//!   ¥34 for two dumps after the options are chosen, the settled total is ¥40. With a
//!   ¥37 limit (between the two) the task fails `PRICE_LIMIT_EXCEEDED` on the settled
//!   total and orders nothing; with a ¥40 limit the confirmed and reported total is the
//!   settled ¥40, the order's own total;
//! - `confirm_page` (811223344506): the sheet's 确定 shows no total; the total is checked
//!   on 确认订单 (a ¥70 limit refuses the ¥74.8 there) and exactly one order is placed;
//! - an icon option (811223344501, `乌龙奶茶+手持化妆镜+礼盒`, 已选 `#乌龙奶茶+…`) →
//!   purchased live, one order.
//!
//! One mock Admin and one phone serve every test; the tests take turns (one client on the
//! phone at a time, as the process lock demands) and compare the ledger before and after.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, OnceLock};

use crate::support::world::World;
use cmautobuy_sim_phone::ledger::Order;
use cmautobuy_sim_phone::Catalog;
use serde_json::{json, Value};

/// The bundled mock Admin on loopback HTTP and the simulated phone on loopback TCP,
/// shared by every test of this file; the client processes take their locks in the
/// world's own directory (not the machine-wide default).
fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let catalog = Catalog::load(&Catalog::bundled_dir()).unwrap();
        assert!(
            catalog.goods("811223344506").is_some(),
            "the variants catalog is loaded"
        );
        World::builder("tok-variants")
            .catalog(catalog)
            .private_locks()
            .start()
    })
}

/// One test at a time on the shared phone (a failed test does not block the others).
/// At the end of a test that passed, the shared world's backend check
/// ([`World::assert_no_fallback`]: on the u2 pass no `uiautomator dump`), which
/// `World::stop` would do for a world of the test's own.
fn turn() -> Turn {
    static TURN: Mutex<()> = Mutex::new(());
    Turn(TURN.lock().unwrap_or_else(|p| p.into_inner()))
}

struct Turn(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Drop for Turn {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            world().assert_no_fallback();
        }
    }
}

/// A live purchase task.
fn purchase(id: &str, goods: &str, options: Value, quantity: u32, max_price_cent: i64) -> Value {
    crate::support::world::live_purchase(id, goods, options, quantity, max_price_cent)
}

/// What a test run left behind: the orders it added to the ledger and the client's data
/// directory (its artifacts).
struct Ran {
    orders: Vec<Order>,
    data: tempfile::TempDir,
}

/// Creates `tasks` at the Admin and runs `cmautobuy-client run --allow-live
/// --exit-when-idle` on the phone until it is idle (no config file, its own data
/// directory). The caller holds the [`turn`].
fn run_live(w: &World, tasks: &[Value]) -> Ran {
    run_live_exiting(w, tasks, 0)
}

/// [`run_live`], expecting exit code `code` (5: claiming stopped by an operator alert,
/// e.g. the account pause after `PAYMENT_METHOD_NOT_ALLOWED`).
fn run_live_exiting(w: &World, tasks: &[Value], code: i32) -> Ran {
    let before = w.phone.orders().len();
    for t in tasks {
        w.create(t.clone());
    }
    let data = tempfile::tempdir().unwrap();
    let out = w.command(data.path()).arg("--allow-live").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let orders = w.phone.orders()[before..].to_vec();
    Ran { orders, data }
}

/// The task's one report at the Admin: (kind, body).
fn report(w: &World, id: &str) -> (String, Value) {
    let t = w.task(id);
    let results = t["results"].as_array().cloned().unwrap_or_default();
    assert_eq!(results.len(), 1, "{id}: exactly one report: {t}");
    (
        results[0]["kind"].as_str().unwrap_or_default().to_string(),
        results[0]["body"].clone(),
    )
}

/// A failure's `status:CODE` and its step.
fn failure(w: &World, id: &str) -> (String, String, Value) {
    let (kind, body) = report(w, id);
    assert_eq!(kind, "failure", "{id}: {body}");
    (
        format!(
            "{}:{}",
            body["status"].as_str().unwrap_or("?"),
            body["error"]["code"].as_str().unwrap_or("?")
        ),
        body["error"]["step"].as_str().unwrap_or("?").to_string(),
        body,
    )
}

/// A live purchase result, checked against the one order it reports.
fn purchased<'o>(w: &World, id: &str, orders: &'o [Order]) -> (Value, &'o Order) {
    let (kind, body) = report(w, id);
    assert_eq!(kind, "result", "{id}: {body}");
    let p = body["purchase"].clone();
    assert_eq!(p["mode"], "live", "{id}");
    assert_eq!(p["order_submitted"], true, "{id}");
    assert_eq!(p["payment_attempted"], false, "{id}");
    assert_eq!(p["payment_status"], "unpaid", "{id}");
    let sn = p["order_sn"].as_str().unwrap_or_default();
    let order = orders
        .iter()
        .find(|o| o.order_sn == sn)
        .unwrap_or_else(|| panic!("{id}: reported order {sn} is not in the ledger {orders:?}"));
    assert_eq!(order.status, "unpaid", "{id}");
    assert!(!order.payment_attempted, "{id}");
    assert_eq!(order.payment_attempts, 0, "{id}");
    assert_eq!(
        p["confirmed_total_cent"], order.total_cent,
        "{id}: the confirmed total is the order's"
    );
    (p, order)
}

/// Every dump the client saved for its attempts (artifacts), as text.
fn dumps(data: &Path) -> Vec<String> {
    fn walk(dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "xml") {
                out.push(std::fs::read_to_string(&p).unwrap_or_default());
            }
        }
    }
    let mut out = Vec::new();
    walk(data, &mut out);
    out
}

fn refused_for_the_payment_method(id: &str, goods: &str, options: Value, row: &str) {
    let w = world();
    let _turn = turn();
    // The refused payment method pauses the worker for the account: exit 5 (blocked).
    let ran = run_live_exiting(w, &[purchase(id, goods, options, 1, 100_000)], 5);
    let (outcome, step, body) = failure(w, id);
    assert_eq!(
        outcome, "manual_review:PAYMENT_METHOD_NOT_ALLOWED",
        "{body}"
    );
    assert_eq!(step, "confirm_total", "{body}");
    assert_eq!(body["diagnostics"]["payment_method_text"], row, "{body}");
    assert!(ran.orders.is_empty(), "ordered: {:?}", ran.orders);
}

#[test]
fn pay_later_goods_end_in_manual_review_and_order_nothing() {
    refused_for_the_payment_method(
        "var-pay-later",
        "811223344502",
        json!({"color": "黑色", "size": "M"}),
        "使用#先用后付，确认收货后自动付款",
    );
}

#[test]
fn password_free_goods_end_in_manual_review_and_order_nothing() {
    refused_for_the_payment_method(
        "var-password-free",
        "811223344503",
        json!({"style": "单层"}),
        "使用#多多支付(免密支付)，更换支付方式",
    );
}

#[test]
fn a_lagging_total_is_judged_and_reported_only_once_settled() {
    let w = world();
    let _turn = turn();
    // 藏青 / XL, one piece: ¥45 − ¥5 coupon = ¥40 settled; the footer shows the ¥34 of
    // the sheet as it opened (¥39 − ¥5, nothing chosen) for two dumps after the taps.
    let options = json!({"color": "藏青", "size": "XL"});
    let ran = run_live(
        w,
        &[
            purchase("var-lag-limit", "811223344505", options.clone(), 1, 3700),
            purchase("var-lag-ok", "811223344505", options, 1, 4000),
        ],
    );
    // The stale total was on screen: a client reading it would have bought under ¥37.
    assert!(
        dumps(ran.data.path())
            .iter()
            .any(|d| d.contains("text=\"提交订单 ¥34\"")),
        "no dump showed the stale total: the test would not see a wrong read"
    );
    let (outcome, step, body) = failure(w, "var-lag-limit");
    assert_eq!(outcome, "failed:PRICE_LIMIT_EXCEEDED", "{body}");
    assert_eq!(step, "confirm_total");
    assert_eq!(body["diagnostics"]["confirmed_total_cent"], 4000, "{body}");
    assert_eq!(
        ran.orders.len(),
        1,
        "one order, for var-lag-ok: {:?}",
        ran.orders
    );
    let (p, order) = purchased(w, "var-lag-ok", &ran.orders);
    assert_eq!(p["confirmed_total_cent"], 4000);
    assert!(order.total_cent <= 4000, "above the limit: {order:?}");
    assert_eq!(order.options["color"], "藏青");
    assert_eq!(order.options["size"], "XL");
}

#[test]
fn confirm_page_goods_are_checked_on_confirm_order_and_ordered_once() {
    let w = world();
    let _turn = turn();
    // 樱花粉 / 500ml ×2: ¥38.9 × 2 − ¥3 = ¥74.8, shown only on 确认订单 (the sheet's
    // button reads 确定 and carries no total).
    let options = json!({"color": "樱花粉", "capacity": "500ml"});
    let ran = run_live(
        w,
        &[
            purchase(
                "var-confirm-limit",
                "811223344506",
                options.clone(),
                2,
                7000,
            ),
            purchase("var-confirm-ok", "811223344506", options, 2, 8000),
        ],
    );
    let (outcome, step, body) = failure(w, "var-confirm-limit");
    assert_eq!(outcome, "failed:PRICE_LIMIT_EXCEEDED", "{body}");
    assert_eq!(step, "confirm_total");
    assert_eq!(body["diagnostics"]["confirmed_total_cent"], 7480, "{body}");
    assert_eq!(ran.orders.len(), 1, "exactly one order: {:?}", ran.orders);
    let (p, order) = purchased(w, "var-confirm-ok", &ran.orders);
    assert_eq!(p["confirmed_total_cent"], 7480);
    assert_eq!(p["quantity"], 2);
    assert_eq!((order.quantity, order.total_cent), (2, 7480));
    assert_eq!(order.options["capacity"], "500ml");
    // The total was read on 确认订单: no sheet of this goods ever shows one.
    let dumps = dumps(ran.data.path());
    assert!(dumps
        .iter()
        .any(|d| d.contains("text=\"确认订单\"") && d.contains("text=\"¥74.8\"")));
    assert!(!dumps
        .iter()
        .any(|d| d.contains("text=\"确定\"") && d.contains("¥74.8")));
}

#[test]
fn an_icon_option_is_purchased_live() {
    let w = world();
    let _turn = turn();
    let name = "乌龙奶茶+手持化妆镜+礼盒";
    let ran = run_live(
        w,
        &[purchase(
            "var-icon",
            "811223344501",
            json!({ "color": name }),
            1,
            10_000,
        )],
    );
    assert_eq!(ran.orders.len(), 1, "one order: {:?}", ran.orders);
    let (p, order) = purchased(w, "var-icon", &ran.orders);
    assert_eq!(p["options"]["color"], name);
    assert_eq!(order.options["color"], name);
    assert!(
        dumps(ran.data.path())
            .iter()
            .any(|d| d.contains(&format!("已选: #{name}"))),
        "the sheet's 已选 carried the icon marker"
    );
}
