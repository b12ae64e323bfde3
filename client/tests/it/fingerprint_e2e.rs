//! The phone's delivery-address fingerprint end to end: the real
//! `cmautobuy-client run --allow-live --exit-when-idle` binary against the bundled mock
//! Admin and the simulated phone over ADB, with `CMAUTOBUY_EXPECTED_ADDRESS` configured.
//!
//! - the account's preselected address is not the configured one → `manual_review
//!   ADDRESS_MISMATCH` before the mark, the address read in the diagnostics, and the
//!   phone's ledger holds NO new order;
//! - once the phone's address is the warehouse's, the same purchase goes through: one
//!   order, placed with that address, and the result carries the address read
//!   (`delivery_address`, the phone masked as PDD shows it).

use crate::support::world::{live_purchase, World};
use cmautobuy_sim_phone::Address;
use serde_json::json;

const FINGERPRINT: &str = "集货路88号|李四";

fn warehouse() -> Address {
    Address {
        receiver: "李四".into(),
        phone: "139****1234".into(),
        text: "浙江省杭州市萧山区集货路88号转运仓".into(),
    }
}

#[test]
fn a_live_purchase_to_another_address_is_refused_and_orders_nothing() {
    let w = World::builder("tok-fingerprint").private_locks().start();
    let options = json!({"color": "黑色", "size": "L"});
    // The account's address is the default one (张三, 科技园路): not the warehouse.
    w.create(live_purchase(
        "fp-mismatch",
        "737116531267",
        options.clone(),
        1,
        10000,
    ));
    let data = tempfile::tempdir().unwrap();
    let out = w
        .command(data.path())
        .arg("--allow-live")
        .env("CMAUTOBUY_EXPECTED_ADDRESS", FINGERPRINT)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (kind, body) = w.report("fp-mismatch");
    assert_eq!(kind, "failure", "{body}");
    assert_eq!(body["status"], "manual_review", "{body}");
    assert_eq!(body["error"]["code"], "ADDRESS_MISMATCH", "{body}");
    assert_eq!(body["error"]["step"], "check_address", "{body}");
    assert_eq!(body["diagnostics"]["pdd_version"], "7.36.0", "{body}");
    let read = body["diagnostics"]["address_text"].as_str().unwrap_or("");
    assert!(
        read.contains("张三 138****0000") && read.contains("科技园路1号"),
        "{body}"
    );
    assert!(
        w.phone.orders().is_empty(),
        "no order: {:?}",
        w.phone.orders()
    );

    // The phone now preselects the warehouse: the same purchase is placed, once.
    w.phone.set_address(Some(warehouse()));
    w.create(live_purchase("fp-match", "737116531267", options, 1, 10000));
    let out = w
        .command(data.path())
        .arg("--allow-live")
        .env("CMAUTOBUY_EXPECTED_ADDRESS", FINGERPRINT)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (kind, body) = w.report("fp-match");
    assert_eq!(kind, "result", "{body}");
    let p = &body["purchase"];
    assert_eq!(p["mode"], "live", "{body}");
    assert_eq!(
        p["delivery_address"], "李四 139****1234 浙江省杭州市萧山区集货路88号转运仓",
        "{body}"
    );
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "{orders:?}");
    assert_eq!(orders[0].ship_to, Some(warehouse()));
    assert_eq!(p["order_sn"], orders[0].order_sn.as_str());
    w.stop();
}

fn collect(id: &str) -> serde_json::Value {
    json!({
        "id": id,
        "type": "collect",
        "payload": {
            "goods_id": "737116531267",
            "goods_url": crate::support::world::goods_url("737116531267"),
        },
    })
}

/// Every report carries the installed PDD's version (a result's
/// top-level `diagnostics.pdd_version`), and so does the attempt's `device.json` beside
/// its manifest; an update between runs shows in the next report.
#[test]
fn every_report_and_manifest_carries_the_pdd_version() {
    let w = World::builder("tok-pdd-version").private_locks().start();
    let data = tempfile::tempdir().unwrap();
    w.create(collect("ver-1"));
    w.run(data.path());
    let (kind, body) = w.report("ver-1");
    assert_eq!(kind, "result", "{body}");
    assert_eq!(body["diagnostics"]["pdd_version"], "7.36.0", "{body}");
    let attempt = body["attempt_id"].as_str().unwrap();
    let dir = data.path().join("artifacts").join("ver-1");
    let sidecar = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("device.json"))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("no device.json under {dir:?} ({attempt})"));
    let dev: serde_json::Value = serde_json::from_slice(&std::fs::read(sidecar).unwrap()).unwrap();
    assert_eq!(dev["pdd_version"], "7.36.0");

    // PDD updated itself: the next report says so.
    w.phone.set_pdd_version("7.40.1", 74010);
    w.create(collect("ver-2"));
    w.run(data.path());
    let (kind, body) = w.report("ver-2");
    assert_eq!(kind, "result", "{body}");
    assert_eq!(body["diagnostics"]["pdd_version"], "7.40.1", "{body}");
    w.stop();
}
