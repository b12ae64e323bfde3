//! Money by positive proof, end to end: the real `cmautobuy-client run
//! --exit-when-idle --allow-live` binary against the bundled mock Admin on loopback HTTP
//! and the simulated phone over the ADB wire protocol, with the repository's catalogs
//! (`fixtures/catalog/variants.json`: the money-path goods 811223344511–526). Each test holds
//! the client to the phone's order ledger — the truth for "one order, never paid":
//!
//! - a sheet whose 确定 places the order (address, payment row and 合计 on it) is the
//!   submit: marked, tapped once, reconciled — one unpaid order, reported;
//! - checkouts that cannot be proven are refused before any order: 确定 without a total
//!   (`ORDER_TOTAL_NOT_SHOWN`), a 立即支付 footer (`PAYMENT_METHOD_NOT_ALLOWED`, whose
//!   operator text does not send the operator to 微信支付), 确认订单 opening at quantity 1
//!   with no stepper (`QUANTITY_NOT_SETTABLE`);
//! - 确认订单's stepper sets and reads the task's quantity; a promo drawn over 提交订单 is
//!   closed first (the order is placed: the submit reached 提交订单, not the promo);
//! - 待支付 and 等待付款 orders are reconciled as unpaid;
//! - the same goods twice: PDD's 相同商品订单待支付 is never tapped through (继续下单 never
//!   pressed, one order in the ledger) and the first order is never reported for the
//!   second task;
//! - 免密支付 / 先用后付 offers and the hand-off to WeChat: nothing tapped there (no payment
//!   attempt on any order, no tap in WeChat), each ends with its own code naming the order;
//! - an account that pays by itself: the order is found paid under 全部 →
//!   `ORDER_NOT_UNPAID`, a critical `order_not_unpaid` alert, live stopped on the phone
//!   (the next live task is not handed over; a collect is) until `ack` — here it pays
//!   at a 多多支付 discount, so its 实付 is not the total the checkout confirmed.

use std::path::Path;

use crate::support::world::{goods_url, live_purchase, World};
use cmautobuy_sim_phone::ledger::Order;
use cmautobuy_sim_phone::Catalog;
use serde_json::{json, Value};

fn world(token: &str) -> World {
    let catalog = Catalog::load(&Catalog::bundled_dir()).unwrap();
    assert!(
        catalog.goods("811223344525").is_some(),
        "the variants catalog"
    );
    World::builder(token)
        .catalog(catalog)
        .private_locks()
        .start()
}

/// `run --allow-live --exit-when-idle` on `data`; it must exit `code` (5: claiming
/// stopped by an alert). The orders it added to the ledger.
fn run(w: &World, data: &Path, code: i32) -> Vec<Order> {
    let before = w.phone.orders().len();
    let out = w.command(data).arg("--allow-live").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(code),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    w.phone.orders()[before..].to_vec()
}

fn purchase(id: &str, goods: &str, options: Value) -> Value {
    live_purchase(id, goods, options, 1, 100_000)
}

/// The task's one failure: (`status:CODE`, body).
fn failure(w: &World, id: &str) -> (String, Value) {
    let (kind, body) = w.report(id);
    assert_eq!(kind, "failure", "{id}: {body}");
    (
        format!(
            "{}:{}",
            body["status"].as_str().unwrap_or("?"),
            body["error"]["code"].as_str().unwrap_or("?")
        ),
        body,
    )
}

/// The task's live result and the one order it reports.
fn purchased(w: &World, id: &str) -> (Value, Order) {
    let (kind, body) = w.report(id);
    assert_eq!(kind, "result", "{id}: {body}");
    let p = body["purchase"].clone();
    assert_eq!(p["mode"], "live", "{id}");
    let sn = p["order_sn"].as_str().unwrap_or_default().to_string();
    let order = w
        .phone
        .orders()
        .into_iter()
        .find(|o| o.order_sn == sn)
        .unwrap_or_else(|| panic!("{id}: reported order {sn} is not in the ledger"));
    assert_eq!(order.status, "unpaid", "{id}");
    assert_eq!(order.payment_attempts, 0, "{id}");
    (p, order)
}

fn no_payment_attempt(orders: &[Order]) {
    for o in orders {
        assert!(!o.payment_attempted && o.payment_attempts == 0, "{o:?}");
    }
}

#[test]
fn a_sheet_whose_confirm_places_the_order_is_marked_tapped_once_and_reconciled() {
    let w = world("tok-m1");
    let data = tempfile::tempdir().unwrap();
    w.create(purchase(
        "m-confirm",
        "811223344511",
        json!({"color": "粉色", "size": "M"}),
    ));
    let orders = run(&w, data.path(), 0);
    assert_eq!(orders.len(), 1, "{orders:?}");
    let (p, order) = purchased(&w, "m-confirm");
    assert_eq!(p["confirmed_total_cent"], order.total_cent);
    assert!(p["irreversible_action_at"].is_string(), "{p}");
    w.stop();
}

#[test]
fn checkouts_that_cannot_be_proven_are_refused_before_any_order() {
    let w = world("tok-m2");
    let data = tempfile::tempdir().unwrap();
    // 确定 that would order, no total shown; 确认订单 at quantity 1 with no stepper for a
    // task of 2.
    w.create(purchase(
        "m-no-total",
        "811223344512",
        json!({"color": "浅灰"}),
    ));
    w.create(live_purchase(
        "m-reset",
        "811223344515",
        json!({"color": "奶白"}),
        2,
        100_000,
    ));
    let orders = run(&w, data.path(), 0);
    assert!(orders.is_empty(), "{orders:?}");
    let (o, body) = failure(&w, "m-no-total");
    assert_eq!(o, "failed:ORDER_TOTAL_NOT_SHOWN", "{body}");
    let (o, body) = failure(&w, "m-reset");
    assert_eq!(o, "failed:QUANTITY_NOT_SETTABLE", "{body}");
    // A 立即支付 footer: refused with its own text. It is this goods' checkout, not the
    // account's payment setting: no account pause (the run exits 0, no alert).
    w.create(purchase(
        "m-pay-now",
        "811223344513",
        json!({"color": "白色"}),
    ));
    let orders = run(&w, data.path(), 0);
    let st = crate::support::world::status_json(data.path());
    assert!(
        st["alerts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
            .iter()
            .all(|a| a["kind"] != "account_paused"),
        "{st}"
    );
    assert!(orders.is_empty(), "{orders:?}");
    let (o, body) = failure(&w, "m-pay-now");
    assert_eq!(o, "manual_review:PAYMENT_METHOD_NOT_ALLOWED", "{body}");
    let op = &body["diagnostics"]["operator"];
    assert_eq!(body["diagnostics"]["refusal"], "pays_in_same_tap", "{body}");
    let next = op["next_zh"].as_str().unwrap_or_default();
    assert!(
        !next.contains("改为微信支付") && next.contains("换付款方式不能解决"),
        "{op}"
    );
    assert!(
        op["zh"].as_str().unwrap_or_default().contains("立即支付"),
        "{op}"
    );
    assert!(next.contains("账号照常接单"), "{op}");
    w.stop();
}

#[test]
fn confirm_orders_stepper_sets_the_quantity_and_a_promo_over_submit_is_closed_first() {
    let w = world("tok-m3");
    let data = tempfile::tempdir().unwrap();
    w.create(live_purchase(
        "m-stepper",
        "811223344514",
        json!({"color": "米黄", "size": "110cm"}),
        2,
        100_000,
    ));
    w.create(purchase(
        "m-promo",
        "811223344516",
        json!({"color": "燕麦色"}),
    ));
    let orders = run(&w, data.path(), 0);
    assert_eq!(orders.len(), 2, "{orders:?}");
    let (p, order) = purchased(&w, "m-stepper");
    assert_eq!(order.quantity, 2, "{order:?}");
    assert_eq!(p["quantity"], 2);
    // The submit reached 提交订单 (an order exists), not the promo drawn over it.
    let (_, order) = purchased(&w, "m-promo");
    assert_eq!(order.goods_id, "811223344516");
    assert_ne!(w.phone.current_page(), "pay_promo");
    w.stop();
}

#[test]
fn every_unpaid_wording_is_reconciled_as_unpaid() {
    let w = world("tok-m4");
    let data = tempfile::tempdir().unwrap();
    w.create(purchase(
        "m-daizhifu",
        "811223344517",
        json!({"color": "咖啡色"}),
    ));
    w.create(purchase(
        "m-dengdai",
        "811223344518",
        json!({"style": "夹式"}),
    ));
    let orders = run(&w, data.path(), 0);
    assert_eq!(orders.len(), 2, "{orders:?}");
    purchased(&w, "m-daizhifu");
    purchased(&w, "m-dengdai");
    w.stop();
}

#[test]
fn the_repeat_order_dialog_is_never_tapped_through_and_the_first_order_never_reported_twice() {
    let w = world("tok-m5");
    let data = tempfile::tempdir().unwrap();
    let opts = json!({"spec": "50只装"});
    w.create(purchase("m-repeat-1", "811223344519", opts.clone()));
    w.create(purchase("m-repeat-2", "811223344519", opts));
    let orders = run(&w, data.path(), 0);
    // One order: the second task's tap met 相同商品订单待支付, and 继续下单 was never pressed.
    assert_eq!(orders.len(), 1, "{orders:?}");
    let (_, first) = purchased(&w, "m-repeat-1");
    let (o, body) = failure(&w, "m-repeat-2");
    assert_eq!(o, "manual_review:REPEAT_ORDER_PROMPT", "{body}");
    // The order that existed before its tap is never this task's.
    assert!(body["diagnostics"]["order_sn"].is_null(), "{body}");
    let candidates = body["diagnostics"]["candidates"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        candidates
            .iter()
            .filter(|c| c["order_sn"] == first.order_sn.as_str())
            .all(|c| c["in_census"] == true),
        "{body}"
    );
    no_payment_attempt(&w.phone.orders());
    w.stop();
}

#[test]
fn payment_offers_and_a_payment_app_are_never_tapped_through() {
    let w = world("tok-m6");
    let data = tempfile::tempdir().unwrap();
    w.create(purchase(
        "m-offer-pw",
        "811223344520",
        json!({"color": "奶茶色"}),
    ));
    w.create(purchase(
        "m-offer-later",
        "811223344521",
        json!({"color": "卡其"}),
    ));
    w.create(purchase(
        "m-wechat",
        "811223344522",
        json!({"color": "小熊款"}),
    ));
    let orders = run(&w, data.path(), 0);
    assert_eq!(orders.len(), 3, "{orders:?}");
    no_payment_attempt(&orders);
    for (id, code) in [
        ("m-offer-pw", "PAYMENT_OFFER_SHOWN"),
        ("m-offer-later", "PAYMENT_OFFER_SHOWN"),
        ("m-wechat", "PAYMENT_APP_OPENED"),
    ] {
        let (o, body) = failure(&w, id);
        assert_eq!(o, format!("manual_review:{code}"), "{body}");
        // The order is named for the operator.
        let sn = body["diagnostics"]["order_sn"].as_str().unwrap_or_default();
        assert!(orders.iter().any(|o| o.order_sn == sn), "{id}: {body}");
        assert!(
            body["diagnostics"]["operator"]["zh"]
                .as_str()
                .unwrap_or_default()
                .contains(sn),
            "{body}"
        );
    }
    // Nothing was tapped inside WeChat.
    assert!(
        w.phone
            .taps()
            .iter()
            .all(|t| t.package.as_deref() != Some("com.tencent.mm")),
        "{:?}",
        w.phone.taps()
    );
    w.stop();
}

/// The account pays by itself, at a 多多支付 discount ("用多多支付减7.53元"): the order is
/// found under 全部 although its 实付 is not the confirmed total — `ORDER_NOT_UNPAID`,
/// never `ORDER_NOT_FOUND` (which it was while a paid order had to match the total) —
/// and live stops on the phone until acknowledged.
#[test]
fn an_order_found_paid_stops_live_on_the_phone_until_acknowledged() {
    let w = world("tok-m7");
    let data = tempfile::tempdir().unwrap();
    w.create(purchase(
        "m-paid",
        "811223344525",
        json!({"color": "磨砂黑"}),
    ));
    let orders = run(&w, data.path(), 0);
    assert_eq!(orders.len(), 1, "{orders:?}");
    assert_eq!(orders[0].status, "paid");
    assert!(!orders[0].payment_attempted, "the client never paid");
    // Paid at a 多多支付 discount: its card and detail show 实付 ¥32.37, not the ¥39.90 the
    // checkout confirmed. An order that is not unpaid fits without its total.
    assert_eq!(orders[0].total_cent, 3990);
    assert_eq!(orders[0].paid_cent, Some(3237));
    let (o, body) = failure(&w, "m-paid");
    // Never ORDER_NOT_FOUND (which invites a human to order again).
    assert_eq!(o, "manual_review:ORDER_NOT_UNPAID", "{body}");
    assert_eq!(body["diagnostics"]["order_sn"], orders[0].order_sn.as_str());
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("3237 fen against the 3990 fen confirmed"),
        "{body}"
    );
    let st = crate::support::world::status_json(data.path());
    let alerts = st["alerts"].as_array().cloned().unwrap_or_default();
    let alert = alerts
        .iter()
        .find(|a| a["kind"] == "order_not_unpaid")
        .unwrap_or_else(|| panic!("no order_not_unpaid alert: {st}"));
    // Live stops on the phone, claims go on: the next live task is not handed over, a
    // collect is.
    w.create(purchase(
        "m-after",
        "811223344511",
        json!({"color": "粉色", "size": "M"}),
    ));
    w.create(json!({"id": "m-collect", "type": "collect",
                    "payload": {"goods_id": "602938475610", "goods_url": goods_url("602938475610")}}));
    let orders = run(&w, data.path(), 0);
    assert!(orders.is_empty(), "{orders:?}");
    assert_eq!(w.report("m-collect").0, "result");
    assert!(
        w.task("m-after")["results"]
            .as_array()
            .is_none_or(|r| r.is_empty()),
        "{}",
        w.task("m-after")
    );
    // A human checked the money and the account: `ack`, and live resumes.
    let id = alert["id"].as_i64().unwrap().to_string();
    crate::support::world::cli_ok(data.path(), &["ack", &id]);
    let orders = run(&w, data.path(), 0);
    assert_eq!(orders.len(), 1, "{orders:?}");
    purchased(&w, "m-after");
    w.stop();
}
