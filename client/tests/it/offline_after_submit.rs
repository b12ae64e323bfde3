//! The phone lost right after the 提交订单 tap (the soak's "orders left to a
//! human"): the real `cmautobuy-client run --allow-live` binary against the bundled mock
//! Admin on loopback HTTP and the simulated phone over ADB (direct TCP). The phone drops
//! off the network right after the command that placed the order
//! (`set_offline_after_orders(Some(1))`: the tap's own answer is cut too).
//!
//! - It comes back a few seconds later: nothing was reported while it was away (the run
//!   stays open, like a crash leaves it; `status` says an order waits for the phone),
//!   then crash recovery reconciles it — exactly one order in the ledger, the task
//!   succeeded with that order's number, one report, the attempt's evidence kept.
//! - The process is killed while the phone is away and started again while it is still
//!   away: the run is still open, the new process waits, then reconciles it.
//! - It stays away past `reconcile_wait_max_secs`: `manual_review` whose message says
//!   the order may exist and where to look; still exactly one order.
//!
//! No timing luck: every wait is a bounded poll on an observable fact (the Admin's task,
//! `status --json`, the process); the fixed sleeps are away windows during which the
//! test asserts that nothing is reported.

use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use crate::support::world::{live_purchase, status_json, wait_until_or, World};
use serde_json::{json, Value};

const GOODS: &str = "811223344507";
const TOTAL: i64 = 1290;

fn task(id: &str) -> Value {
    live_purchase(id, GOODS, json!({"spec": "3卷装"}), 1, 1500)
}

fn status(data: &Path) -> Value {
    status_json(data)
}

fn wait_exit(child: &mut Child, limit: Duration, log: &Path) {
    let read = || std::fs::read_to_string(log).unwrap_or_default();
    let exit = crate::support::world::wait_exit(child, limit, read);
    assert!(exit.success(), "run failed ({exit}): {}", read());
}

fn reports(w: &World, id: &str) -> Vec<Value> {
    w.task(id)["results"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// Starts the client (live) with its log in `log`.
fn spawn(w: &World, data: &Path, log: &Path, env: &[(&str, &str)]) -> Child {
    let mut c = w.command(data);
    c.arg("--allow-live")
        .env("CMAUTOBUY_LOCK_DIR", data.join("locks"))
        .stdout(Stdio::null())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .unwrap(),
        );
    for (k, v) in env {
        c.env(k, v);
    }
    c.spawn().unwrap()
}

/// The phone is away with an order placed: `status` shows the pause and the run waiting
/// for it; nothing was reported. Returns the waiting entry.
fn wait_for_the_open_run(w: &World, id: &str, data: &Path, log: &Path, child: &mut Child) -> Value {
    let mut st = Value::Null;
    wait_until_or(
        "an order waiting for its phone in `status`",
        Duration::from_secs(90),
        child,
        || std::fs::read_to_string(log).unwrap_or_default(),
        || {
            st = status(data);
            !st["device_pause"].is_null()
                && st["awaiting_reconcile"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
        },
    );
    assert_eq!(st["device_pause"]["code"], "DEVICE_OFFLINE", "{st}");
    let msg = st["device_pause"]["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("order placed on") && msg.contains("waiting for the phone to reconcile it"),
        "{st}"
    );
    let waiting = st["awaiting_reconcile"][0].clone();
    assert_eq!(waiting["remote_task_id"], id, "{st}");
    assert!(reports(w, id).is_empty(), "nothing reported while away");
    assert_eq!(w.phone.orders().len(), 1, "the order was placed");
    waiting
}

/// The one report of `id` is a success with the ledger's one order.
fn assert_reconciled(w: &World, id: &str) {
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "exactly one order: {orders:?}");
    let o = &orders[0];
    assert!(!o.payment_attempted && o.status == "unpaid", "{o:?}");
    let t = w.task(id);
    assert_eq!(t["task"]["status"], "succeeded", "{t}");
    let r = reports(w, id);
    assert_eq!(r.len(), 1, "reported exactly once: {t}");
    assert_eq!(r[0]["kind"], "result", "{t}");
    let p = &r[0]["body"]["purchase"];
    assert_eq!(p["order_sn"], o.order_sn.as_str(), "{t}");
    assert_eq!(p["confirmed_total_cent"], TOTAL, "{t}");
    assert_eq!(p["order_submitted"], true, "{t}");
    assert_eq!(p["payment_attempted"], false, "{t}");
}

#[test]
fn a_phone_lost_after_the_submit_tap_is_reconciled_when_it_comes_back() {
    let w = World::start("tok-offline-1");
    let id = "off-back";
    w.create(task(id));
    w.phone.set_offline_after_orders(Some(1));
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("run.log");
    let mut child = spawn(&w, data.path(), &log, &[]);

    let waiting = wait_for_the_open_run(&w, id, data.path(), &log, &mut child);
    // Away: the run stays open, nothing is reported, nothing else is tapped.
    let taps = w.phone.taps().len();
    std::thread::sleep(Duration::from_secs(3));
    assert!(child.try_wait().unwrap().is_none(), "the client waits");
    assert!(reports(&w, id).is_empty(), "nothing reported while away");
    assert_eq!(w.phone.taps().len(), taps);

    w.phone.set_offline(false);
    wait_exit(&mut child, Duration::from_secs(120), &log);
    assert_reconciled(&w, id);
    let st = status(data.path());
    assert!(st["device_pause"].is_null(), "{st}");
    assert_eq!(st["awaiting_reconcile"], json!([]), "{st}");
    let err = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(err.contains("the run stays open"), "{err}");
    assert!(err.contains("interrupted purchase reconciled"), "{err}");

    // The evidence of the attempt that placed the order is kept, recovery's appended.
    let attempt = waiting["attempt_id"].as_str().unwrap();
    let dir = std::fs::read_dir(data.path().join("artifacts"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join(attempt))
        .find(|p| p.is_dir())
        .expect("the attempt's artifact folder");
    // Artifact entries only (action entries have no file).
    let manifest: Vec<Value> =
        serde_json::from_slice::<Vec<Value>>(&std::fs::read(dir.join("manifest.json")).unwrap())
            .unwrap()
            .into_iter()
            .filter(|e| e.get("file").is_some())
            .collect();
    let steps: Vec<&str> = manifest
        .iter()
        .map(|e| e["step"].as_str().unwrap_or(""))
        .collect();
    let files: std::collections::BTreeSet<&str> = manifest
        .iter()
        .map(|e| e["file"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        files.len(),
        manifest.len(),
        "no file written twice: {steps:?}"
    );
    assert!(steps.contains(&"confirm_total"), "{steps:?}");
    assert!(steps.contains(&"reconcile_order"), "{steps:?}");
    w.stop();
}

#[test]
fn a_restart_while_the_phone_is_away_still_reconciles() {
    let w = World::start("tok-offline-2");
    let id = "off-restart";
    w.create(task(id));
    w.phone.set_offline_after_orders(Some(1));
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("run.log");
    let mut child = spawn(&w, data.path(), &log, &[]);
    wait_for_the_open_run(&w, id, data.path(), &log, &mut child);
    // Killed (no drain, as a crash) while the phone is away.
    child.kill().unwrap();
    child.wait().unwrap();

    // Started again with the phone still away: it waits for it.
    let mut child = spawn(&w, data.path(), &log, &[]);
    wait_for_the_open_run(&w, id, data.path(), &log, &mut child);
    std::thread::sleep(Duration::from_secs(2));
    assert!(reports(&w, id).is_empty(), "nothing reported while away");

    w.phone.set_offline(false);
    wait_exit(&mut child, Duration::from_secs(120), &log);
    assert_reconciled(&w, id);
    w.stop();
}

#[test]
fn a_phone_away_past_the_bound_is_left_to_a_human_with_a_clear_message() {
    let w = World::start("tok-offline-3");
    let id = "off-gone";
    w.create(task(id));
    w.phone.set_offline_after_orders(Some(1));
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("run.log");
    let mut child = spawn(
        &w,
        data.path(),
        &log,
        &[("CMAUTOBUY_RECONCILE_WAIT_MAX_SECS", "5")],
    );
    wait_until_or(
        "the manual_review report",
        Duration::from_secs(90),
        &mut child,
        || std::fs::read_to_string(&log).unwrap_or_default(),
        || !reports(&w, id).is_empty(),
    );
    let t = w.task(id);
    assert_eq!(t["task"]["status"], "manual_review", "{t}");
    let r = reports(&w, id);
    assert_eq!(r.len(), 1, "{t}");
    assert_eq!(r[0]["kind"], "failure", "{t}");
    let e = &r[0]["body"]["error"];
    assert_eq!(e["code"], "DEVICE_OFFLINE", "{t}");
    let msg = e["message"].as_str().unwrap_or("");
    assert!(
        msg.contains("the order may exist") && msg.contains("待付款"),
        "{msg}"
    );
    assert!(
        r[0]["body"]["diagnostics"]["irreversible_action_at"].is_string(),
        "{t}"
    );
    assert_eq!(w.phone.orders().len(), 1);

    // The phone returns: nothing more is reported for it, no second order.
    w.phone.set_offline(false);
    wait_exit(&mut child, Duration::from_secs(120), &log);
    assert_eq!(reports(&w, id).len(), 1);
    assert_eq!(w.phone.orders().len(), 1);
    assert_eq!(status(data.path())["awaiting_reconcile"], json!([]));
    w.stop();
}

/// The lock screen after the submit (the screen timed out or someone pressed power while
/// PDD showed the order): the lock screen shares the shade's window, and collapsing it
/// cannot put a keyguard away — the order used to be left to a human (`manual_review
/// SCREEN_OBSTRUCTED`, the final soak: 9 of 149 orders). The driver wakes the phone and
/// swipes it open, as before a task, and the order is reconciled; nothing is tapped into
/// the lock screen.
#[test]
fn a_lock_screen_after_the_submit_tap_is_swiped_open_and_the_order_reconciled() {
    use cmautobuy_sim_phone::{LockKind, SystemConfig};
    let w = World::builder("tok-offline-lock")
        .system(SystemConfig {
            lock: LockKind::Swipe,
            ..SystemConfig::default()
        })
        .start();
    let id = "off-lock";
    w.create(task(id));
    w.phone.set_screen_off_after_orders(Some(1));
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("run.log");
    let mut child = spawn(&w, data.path(), &log, &[]);
    wait_exit(&mut child, Duration::from_secs(120), &log);
    assert_reconciled(&w, id);
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(
        text.contains("the lock screen came up mid-task"),
        "the lock screen did come up after the submit: {text}"
    );
    assert!(!w.phone.system().locked, "swiped open");
    let foreign = w.phone.foreign_taps();
    assert!(foreign.is_empty(), "taps into another window: {foreign:?}");
    w.stop();
}
