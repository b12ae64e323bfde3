//! Item 9: clock skew. The real binary against the bundled mock Admin and the
//! simulated phone: with the Admin's `Date` (or the phone's clock) two minutes off the
//! host's, `run --allow-live` declares `dry_run` — the live task stays at the Admin, no
//! order is placed — while collects continue; `status` gives the reason; a `clock_skew`
//! operator alert is raised that does not stop claiming (exit 0, not 5).

use std::process::Command;

use crate::support::world::{run_ok, World};
use serde_json::{json, Value};

fn collect(id: &str) -> Value {
    let goods = "602938475610";
    json!({"id": id, "type": "collect", "priority": 10, "payload": {"goods_id": goods,
        "goods_url": crate::support::world::goods_url(goods)}})
}

fn live(id: &str) -> Value {
    crate::support::world::live_purchase(
        id,
        "737116531267",
        json!({"color": "黑色", "size": "L"}),
        1,
        10000,
    )
}

fn status(data: &std::path::Path, json: bool) -> String {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    c.arg("--data-dir").arg(data).arg("status");
    if json {
        c.arg("--json");
    }
    let out = c.env_remove("CMAUTOBUY_CONFIG").output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn check(w: &World, data: &std::path::Path, who: &str) {
    let (kind, _) = w.report("skew-collect");
    assert_eq!(kind, "result", "collects continue");
    assert!(
        w.task("skew-live")["results"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "the live task was run: {}",
        w.task("skew-live")
    );
    assert!(w.phone.orders().is_empty(), "an order was placed");
    if crate::support::world::backend_from_env().as_deref() == Some("u2") {
        assert!(
            w.phone.counters().u2_dumps > 0,
            "the collect's dumps did not go through uiautomator2's server"
        );
    }
    let text = status(data, false);
    assert!(text.contains("LIVE REFUSED for clock skew"), "{text}");
    assert!(
        text.contains(&format!("{who} clock is 120 s ahead of the host's"))
            || text.contains(&format!("{who} clock is 121 s ahead of the host's"))
            || text.contains(&format!("{who} clock is 119 s ahead of the host's")),
        "{text}"
    );
    let v: Value = serde_json::from_str(&status(data, true)).unwrap();
    let alerts = v["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "{v}");
    assert_eq!(alerts[0]["kind"], "clock_skew", "{v}");
}

#[test]
fn an_admin_two_minutes_ahead_refuses_live_and_collects_continue() {
    let w = World::builder("tok-skew").admin_date_offset(120).start();
    w.create(collect("skew-collect"));
    w.create(live("skew-live"));
    let data = tempfile::tempdir().unwrap();
    // Exit 0: the alert does not stop claiming (exit 5 would).
    run_ok(w.command(data.path()).arg("--allow-live"));
    check(&w, data.path(), "the Admin's");
    w.stop();
}

#[test]
fn a_phone_two_minutes_ahead_refuses_live_and_collects_continue() {
    let w = World::builder("tok-skew2").clock_offset(120).start();
    w.create(collect("skew-collect"));
    w.create(live("skew-live"));
    let data = tempfile::tempdir().unwrap();
    run_ok(w.command(data.path()).arg("--allow-live"));
    check(&w, data.path(), "the phone's");
    w.stop();
}
