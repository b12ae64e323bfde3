//! The account fingerprint end to end: the real `cmautobuy-client run
//! --allow-live --exit-when-idle` binary against the bundled mock Admin and the simulated
//! phone over ADB.
//!
//! - the first run reads 个人中心 (`personal.html`) before its first claim, records the
//!   account as the phone's baseline (no alert) and a live purchase completes;
//! - another account logs in on the phone (`SimPhoneHandle::set_account`): the next run's
//!   check sees it, raises `account_changed` (at a webhook receiver too), declares
//!   `dry_run` — the pooled live purchase is not handed out, no order is placed on the
//!   new account — while a collect still runs; `status` says "live paused: account
//!   changed on this phone";
//! - `cmautobuy-client ack N` accepts the new account as the baseline: the next run is
//!   live again and the purchase completes on the new account (its address).

use std::process::Command;
use std::time::Duration;

use crate::support::receiver::Receiver;
use crate::support::world::{goods_url, live_purchase, World};
use cmautobuy_sim_phone::{Account, Address};
use serde_json::json;

fn other_account() -> Account {
    Account {
        nickname: "仓库二号".into(),
        masked_phone: "177****5678".into(),
        address: Some(Address {
            receiver: "王五".into(),
            phone: "177****5678".into(),
            text: "浙江省杭州市萧山区集货路88号转运仓".into(),
        }),
    }
}

fn cli(data: &std::path::Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A log line without its ANSI colours.
fn plain(line: &str) -> String {
    let mut out = String::new();
    let mut esc = false;
    for c in line.chars() {
        match (esc, c) {
            (false, '\x1b') => esc = true,
            (true, 'm') => esc = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

#[test]
fn a_changed_account_pauses_live_until_acknowledged() {
    let w = World::builder("tok-account").private_locks().start();
    let rx = w.rt.block_on(Receiver::start());
    let data = tempfile::tempdir().unwrap();
    let config = data.path().join("hooks.toml");
    std::fs::write(
        &config,
        format!(
            "[[webhook]]\nurl = \"{}/json/hook\"\nformat = \"json\"\n",
            rx.url
        ),
    )
    .unwrap();
    // The phone's address fingerprint follows the account the operator accepts (a new
    // account ships elsewhere: the address fingerprint would refuse its orders otherwise).
    let fingerprint =
        std::cell::RefCell::new(crate::support::world::SIM_ADDRESS_FINGERPRINT.to_string());
    let run = || {
        let out = w
            .command(data.path())
            .arg("--allow-live")
            .arg("--config")
            .arg(&config)
            .arg("--no-console")
            .env("CMAUTOBUY_EXPECTED_ADDRESS", fingerprint.borrow().as_str())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        stderr
    };
    let options = json!({"color": "黑色", "size": "L"});

    // 1. The first run records the baseline and buys live.
    w.create(live_purchase(
        "acc-1",
        "737116531267",
        options.clone(),
        1,
        10000,
    ));
    let log = run();
    // One check before the first claim: the link lands, one dump reads 个人中心.
    let check = plain(
        log.lines()
            .find(|l| l.contains("account check on 个人中心"))
            .unwrap_or_else(|| panic!("no account check: {log}")),
    );
    assert!(
        check.contains("round_trips=2") && check.contains("open_urls=1"),
        "{check}"
    );
    assert!(
        log.contains("account fingerprint recorded as this phone's baseline"),
        "{log}"
    );
    let (kind, body) = w.report("acc-1");
    assert_eq!(kind, "result", "{body}");
    assert_eq!(body["purchase"]["mode"], "live", "{body}");
    assert_eq!(w.phone.orders().len(), 1);
    let status = cli(data.path(), &["status", "--json"]);
    let st: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(st["account"]["masked_phone"], "138****0000", "{st}");
    assert_eq!(st["account"]["nickname"], "拼多多用户", "{st}");
    assert!(st["alerts"].as_array().unwrap().is_empty(), "{st}");

    // 2. Another account logs in on the phone.
    w.phone.set_account(other_account());
    w.create(live_purchase(
        "acc-2",
        "737116531267",
        options.clone(),
        1,
        10000,
    ));
    w.create(json!({
        "id": "acc-collect",
        "type": "collect",
        "payload": {"goods_id": "602938475610", "goods_url": goods_url("602938475610")},
    }));
    run();
    // Collects continue; the live purchase is not handed to a dry_run client.
    assert_eq!(w.report("acc-collect").0, "result");
    assert!(
        w.task("acc-2")["results"]
            .as_array()
            .is_none_or(|a| a.is_empty()),
        "{}",
        w.task("acc-2")
    );
    assert_eq!(w.phone.orders().len(), 1, "no order on the new account");
    let st: serde_json::Value =
        serde_json::from_str(&cli(data.path(), &["status", "--json"])).unwrap();
    let alerts = st["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "{st}");
    assert_eq!(alerts[0]["kind"], "account_changed");
    let msg = alerts[0]["message"].as_str().unwrap();
    assert!(
        msg.contains("138****0000 / 拼多多用户") && msg.contains("177****5678 / 仓库二号"),
        "{msg}"
    );
    assert_eq!(st["account"]["pending"]["masked_phone"], "177****5678");
    let text = cli(data.path(), &["status"]);
    assert!(
        text.contains("live paused: account changed on this phone"),
        "{text}"
    );
    // The alert reached the webhook receiver.
    let hits = w.rt.block_on(rx.wait_for(1, Duration::from_secs(30)));
    assert!(
        hits.iter().any(|h| h.json()["kind"] == "account_changed"),
        "{hits:?}"
    );

    // 3. The operator accepts the new account (and its address as the phone's
    // fingerprint): live resumes on it.
    let id = alerts[0]["id"].as_i64().unwrap();
    cli(data.path(), &["ack", &id.to_string()]);
    *fingerprint.borrow_mut() = "王五|浙江省杭州市萧山区集货路88号转运仓".into();
    run();
    let (kind, body) = w.report("acc-2");
    assert_eq!(kind, "result", "{body}");
    assert_eq!(body["purchase"]["mode"], "live", "{body}");
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 2, "{orders:?}");
    assert_eq!(orders[1].ship_to, other_account().address);
    let st: serde_json::Value =
        serde_json::from_str(&cli(data.path(), &["status", "--json"])).unwrap();
    assert_eq!(st["account"]["masked_phone"], "177****5678", "{st}");
    assert!(st["account"]["pending"].is_null(), "{st}");
    assert!(st["account_refusal"].is_null(), "{st}");
    w.stop();
}
