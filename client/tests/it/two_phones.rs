//! "several phones per host": the real binary with two simulated phones
//! (over ADB, direct TCP) in one `run` against the bundled mock Admin.
//!
//! - `register --device A --device B` registers two clients (two client ids at the
//!   Admin's `/api/v1/admin/clients`, named `NAME · SERIAL`), each with its own store:
//!   the first phone in the data directory's own store, the second in
//!   `phones/<key>/`.
//! - Live purchases assigned to each client run only on that client's phone: each phone's
//!   order ledger holds exactly its tasks' orders (their options tell them apart), and
//!   each attempt's artifacts sit in its phone's folder only.
//! - The console (`--console 127.0.0.1:0`) shows both phones.
//! - Phone B goes offline: B's worker pauses (its `status --device` says so), B's task
//!   waits, while A's tasks created afterwards all succeed on A. B comes back, its task
//!   completes; one SIGTERM drains both workers and `run` exits 0.
//!
//! - With `--exit-when-idle`, `run` ends once every worker has ended, with the most
//!   severe end's code: phone B blocked by a risk page's `account_paused` alert (exit 5,
//!   naming B) while phone A did all its tasks; `ack --device B`, and the next run
//!   completes B's waiting task (exit 0).
//!
//! No timing luck: every wait is a bounded poll on an observable fact (the Admin's
//! reports, `status --json --device`, the phones' ledgers).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use cmautobuy_sim_phone::{Catalog, SimConfig, SimPhone};
use serde_json::{json, Value};

use crate::support::world::{live_purchase, wait_exit, wait_until, World};

const TOKEN: &str = "tok-two-phones";
const GOODS: &str = "737116531267";

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    c.env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_ALLOW_LIVE")
        .env_remove("CMAUTOBUY_DEVICE")
        .env_remove("CMAUTOBUY_DEVICES")
        // Both simulated phones ship to the default account's address: their fingerprint.
        .env(
            "CMAUTOBUY_EXPECTED_ADDRESS",
            crate::support::world::SIM_ADDRESS_FINGERPRINT,
        );
    c
}

/// `status --json --device SERIAL` on `data`.
fn status_of(data: &Path, serial: &str) -> Value {
    let out = bin()
        .arg("--data-dir")
        .arg(data)
        .args(["status", "--json", "--device", serial])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// A task assigned to `client`: one 黑色/L (phone A's) or 雾霾蓝/M (phone B's), live.
fn task(id: &str, client: &str, options: Value) -> Value {
    let mut t = live_purchase(id, GOODS, options, 1, 11800);
    t["assigned_client"] = json!(client);
    t
}

/// The last report of `id` is a live result.
fn succeeded(w: &World, id: &str) -> bool {
    let t = w.task(id);
    t["results"]
        .as_array()
        .and_then(|a| a.last())
        .is_some_and(|r| r["kind"] == "result" && r["body"]["purchase"]["mode"] == "live")
}

/// The console's URL as `run` prints it on stdout (`console: http://ADDR/ …`).
fn console_url(child: &mut Child) -> String {
    use std::io::{BufRead, BufReader};
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the console URL on stdout");
        if let Some(rest) = line.strip_prefix("console: ") {
            return rest
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .trim_end_matches('/')
                .to_string();
        }
    }
}

fn term(child: &Child) {
    let ok = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -TERM");
}

#[test]
fn two_phones_in_one_run_keep_their_tasks_and_orders_apart_and_one_offline_leaves_the_other_working(
) {
    let w = World::builder(TOKEN).private_locks().start();
    let phone_b = SimPhone::bind(
        "127.0.0.1:0".parse().unwrap(),
        SimConfig::new(Catalog::load(&Catalog::bundled_dir()).unwrap()),
    )
    .unwrap();
    let a = w.device();
    let b = w.device_of(&phone_b);
    let data = tempfile::tempdir().unwrap();
    let locks = data.path().join("locks");

    // Two clients at the Admin, one per phone.
    let out = bin()
        .arg("--data-dir")
        .arg(data.path())
        .args([
            "register", "--admin", &w.url, "--token", TOKEN, "--name", "店铺",
        ])
        .args(["--device", &a, "--device", &b])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "register: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let id_a = status_of(data.path(), &a)["client_id"]
        .as_str()
        .unwrap()
        .to_string();
    let id_b = status_of(data.path(), &b)["client_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(id_a, id_b);
    let clients = w.rt.block_on(w.op.clients()).unwrap();
    let names: Vec<(String, String)> = clients["clients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["client_id"].as_str().unwrap_or("").to_string(),
                c["name"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    assert_eq!(names.len(), 2, "{clients}");
    assert!(
        names.contains(&(id_a.clone(), format!("店铺 · {a}"))),
        "{clients}"
    );
    assert!(
        names.contains(&(id_b.clone(), format!("店铺 · {b}"))),
        "{clients}"
    );
    // The layout: A in the data directory's own store, B in its folder.
    let folder_b = cmautobuy_client::phones::phone_dir(data.path(), &b);
    assert!(data.path().join("client.sqlite3").is_file());
    assert!(folder_b.join("client.sqlite3").is_file());
    // Without --device, `ack` cannot tell which phone is meant.
    let out = bin()
        .arg("--data-dir")
        .arg(data.path())
        .arg("ack")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--device"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `status` shows both.
    let out = bin()
        .arg("--data-dir")
        .arg(data.path())
        .args(["status", "--json"])
        .output()
        .unwrap();
    let all: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(all["phones"].as_array().map(Vec::len), Some(2), "{all}");

    let opts_a = json!({"color": "黑色", "size": "L"});
    let opts_b = json!({"color": "雾霾蓝", "size": "M"});
    w.create(task("two-a1", &id_a, opts_a.clone()));
    w.create(task("two-b1", &id_b, opts_b.clone()));

    let logs = tempfile::tempdir().unwrap();
    let log_path = logs.path().join("run.log");
    let mut child = w
        .adb_env(&mut bin())
        .arg("--data-dir")
        .arg(data.path())
        .args(["run", "--allow-live", "--console", "127.0.0.1:0"])
        .args(["--poll-interval", "0.2", "--device", &a, "--device", &b])
        .env("CMAUTOBUY_LOCK_DIR", &locks)
        .env("CMAUTOBUY_MIN_TASK_GAP_SECS", "0")
        .env("CMAUTOBUY_PDD_VERSION_GATE", "false")
        // A fresh device check before every claim: the pause shows within a second.
        .env("CMAUTOBUY_DEVICE_CHECK_MAX_AGE_SECS", "0.5")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let log = || std::fs::read_to_string(&log_path).unwrap_or_default();
    let console = console_url(&mut child);

    wait_until(
        "both phones' first tasks",
        Duration::from_secs(180),
        &mut child,
        || succeeded(&w, "two-a1") && succeeded(&w, "two-b1"),
    );

    // The console shows both phones.
    let page =
        w.rt.block_on(async { reqwest::get(format!("{console}/")).await?.text().await })
            .unwrap();
    for s in [&a, &b] {
        assert!(
            page.contains(&format!("📱 {s}")),
            "{s} not on the console: {page}"
        );
    }

    // Phone B goes away: its worker pauses, A's keeps working.
    phone_b.set_offline(true);
    wait_until(
        "phone B's pause",
        Duration::from_secs(60),
        &mut child,
        || !status_of(data.path(), &b)["device_pause"].is_null(),
    );
    assert!(status_of(data.path(), &a)["device_pause"].is_null());
    w.create(task("two-b2", &id_b, opts_b.clone()));
    for i in 2..=3 {
        w.create(task(&format!("two-a{i}"), &id_a, opts_a.clone()));
    }
    wait_until(
        "phone A's tasks while B is away",
        Duration::from_secs(240),
        &mut child,
        || succeeded(&w, "two-a2") && succeeded(&w, "two-a3"),
    );
    assert!(!succeeded(&w, "two-b2"), "B's task waits for B");
    assert_eq!(phone_b.orders().len(), 1);
    assert!(!status_of(data.path(), &b)["device_pause"].is_null());

    // B is back: its task completes; one SIGTERM drains both workers.
    phone_b.set_offline(false);
    wait_until(
        "phone B's task after it came back",
        Duration::from_secs(180),
        &mut child,
        || succeeded(&w, "two-b2"),
    );
    term(&child);
    let exit = wait_exit(&mut child, Duration::from_secs(60), log);
    assert_eq!(exit.code(), Some(0), "{}", log());

    // Each phone holds exactly its tasks' orders.
    let options = |o: &cmautobuy_sim_phone::Order| Value::Object(o.options.clone());
    let orders_a = w.phone.orders();
    let orders_b = phone_b.orders();
    assert_eq!(orders_a.len(), 3, "{orders_a:?}");
    assert_eq!(orders_b.len(), 2, "{orders_b:?}");
    assert!(
        orders_a.iter().all(|o| options(o) == opts_a),
        "{orders_a:?}"
    );
    assert!(
        orders_b.iter().all(|o| options(o) == opts_b),
        "{orders_b:?}"
    );
    // Each report names its own phone's order.
    for (id, ledger) in [
        ("two-a1", &orders_a),
        ("two-a2", &orders_a),
        ("two-a3", &orders_a),
        ("two-b1", &orders_b),
        ("two-b2", &orders_b),
    ] {
        let (_, body) = w.report(id);
        let sn = body["purchase"]["order_sn"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            ledger.iter().any(|o| o.order_sn == sn),
            "{id}: order {sn:?} not on its phone: {body}"
        );
    }
    // Each attempt's evidence sits in its phone's folder only.
    let has = |dir: &Path, id: &str| dir.join("artifacts").join(id).is_dir();
    for id in ["two-a1", "two-a2", "two-a3"] {
        assert!(has(data.path(), id) && !has(&folder_b, id), "{id}");
    }
    for id in ["two-b1", "two-b2"] {
        assert!(has(&folder_b, id) && !has(data.path(), id), "{id}");
    }
    let text = log();
    // Every log line of a worker names its phone: the pause is B's, and A never paused.
    let paused: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("worker paused"))
        .collect();
    assert!(!paused.is_empty(), "{text}");
    assert!(
        paused.iter().all(|l| l.contains(&format!("serial={b}"))),
        "{paused:?}"
    );
    phone_b.set_offline(false);
    drop(phone_b);
    w.stop();
}

/// `register --device a --device b --name 店铺` on `data`: the two client ids.
fn register_two(w: &World, data: &Path, a: &str, b: &str) -> (String, String) {
    let out = bin()
        .arg("--data-dir")
        .arg(data)
        .args([
            "register", "--admin", &w.url, "--token", TOKEN, "--name", "店铺",
        ])
        .args(["--device", a, "--device", b])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let id = |s: &str| {
        status_of(data, s)["client_id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    (id(a), id(b))
}

fn collect(id: &str, client: &str, goods: &str) -> Value {
    json!({
        "id": id,
        "type": "collect",
        "assigned_client": client,
        "payload": {"goods_id": goods, "goods_url": crate::support::world::goods_url(goods)},
    })
}

#[test]
fn exit_when_idle_waits_for_every_phone_and_exits_with_the_most_severe_end() {
    let w = World::builder(TOKEN).private_locks().start();
    let phone_b = SimPhone::bind(
        "127.0.0.1:0".parse().unwrap(),
        SimConfig::new(Catalog::load(&Catalog::bundled_dir()).unwrap()),
    )
    .unwrap();
    let a = w.device();
    let b = w.device_of(&phone_b);
    let data = tempfile::tempdir().unwrap();
    let (id_a, id_b) = register_two(&w, data.path(), &a, &b);
    // A: two plain collects. B: a risk page (the worker pauses for the account), then a
    // collect that waits for the operator.
    w.create(collect("idle-a1", &id_a, "602938475610"));
    w.create(collect("idle-a2", &id_a, "602938475610"));
    w.create(collect("idle-b1", &id_b, "693344556677"));
    w.create(collect("idle-b2", &id_b, "602938475610"));
    let run = || {
        w.adb_env(&mut bin())
            .arg("--data-dir")
            .arg(data.path())
            .args([
                "run",
                "--exit-when-idle",
                "--no-console",
                "--poll-interval",
                "0.2",
            ])
            .args(["--device", &a, "--device", &b])
            .env("CMAUTOBUY_LOCK_DIR", data.path().join("locks"))
            .env("CMAUTOBUY_MIN_TASK_GAP_SECS", "0")
            .env("CMAUTOBUY_PDD_VERSION_GATE", "false")
            .output()
            .unwrap()
    };
    let out = run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(5), "{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    assert!(
        last.contains(&format!("phone {b}")) && last.contains("account_paused"),
        "{last}"
    );
    assert_eq!(w.report("idle-a1").0, "result");
    assert_eq!(w.report("idle-a2").0, "result");
    assert_eq!(w.report("idle-b1").1["error"]["code"], "RISK_VERIFICATION");
    assert!(w.task("idle-b2")["results"]
        .as_array()
        .is_none_or(|r| r.is_empty()));
    // B's alert is B's: A's store has none.
    assert!(status_of(data.path(), &a)["alerts"]
        .as_array()
        .is_some_and(|v| v.is_empty()));
    assert_eq!(
        status_of(data.path(), &b)["alerts"][0]["kind"],
        "account_paused"
    );
    let ack = bin()
        .arg("--data-dir")
        .arg(data.path())
        .args(["ack", "--device", &b])
        .output()
        .unwrap();
    assert!(
        ack.status.success(),
        "{}",
        String::from_utf8_lossy(&ack.stderr)
    );
    let out = run();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(w.report("idle-b2").0, "result");
    drop(phone_b);
    w.stop();
}
