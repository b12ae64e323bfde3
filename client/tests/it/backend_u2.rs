//! The `u2` device backend end to end: the real `cmautobuy-client run`
//! binary with `device_backend = "u2"` against the bundled mock Admin and the simulated
//! phone reached through a private real adb server (the server needs `tcp:9008`
//! streams, which direct TCP has not), the jar from `CMAUTOBUY_U2_JAR`
//! (`scripts/install-u2-jar`). The phone's counters tell which path dumps took; the
//! faults come from the simulated server's knobs, and every test asserts one order at
//! most and the outcome. (Named `backend_u2` so that libtest, which starts tests in name
//! order, starts its long ones early: `a_phone_lost_after_the_submit_tap…` started last
//! set the binary's wall time.)

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::support::world::{live_purchase, wait_exit, wait_until, World};
use serde_json::{json, Value};

const TOKEN: &str = "tok-u2";
const GOODS: &str = "737116531267";
const CONFIRM_GOODS: &str = "811223344506";

fn jar() -> String {
    let j = std::env::var("CMAUTOBUY_U2_JAR").unwrap_or_else(|_| {
        format!(
            "{}/../.tools/uiautomator2/u2.jar",
            env!("CARGO_MANIFEST_DIR")
        )
    });
    assert!(
        Path::new(&j).is_file(),
        "no u2.jar at {j}: run scripts/install-u2-jar (or set CMAUTOBUY_U2_JAR)"
    );
    j
}

fn world() -> World {
    World::builder(TOKEN).via_adb_server().start()
}

fn u2_command(w: &World, data: &Path) -> Command {
    let mut c = w.command(data);
    c.env("CMAUTOBUY_DEVICE_BACKEND", "u2")
        .env("CMAUTOBUY_U2_JAR", jar())
        .arg("--allow-live");
    c
}

fn spawn(w: &World, data: &Path) -> Child {
    u2_command(w, data)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn collect(id: &str) -> Value {
    json!({
        "id": id,
        "type": "collect",
        "payload": {"goods_id": GOODS, "goods_url": crate::support::world::goods_url(GOODS)},
    })
}

fn purchase(id: &str) -> Value {
    live_purchase(id, GOODS, json!({"color": "黑色", "size": "L"}), 1, 99_900)
}

/// The task's status at the Admin and its number of reports.
fn outcome(w: &World, id: &str) -> (String, usize) {
    let t = w.task(id);
    (
        t["task"]["status"].as_str().unwrap_or("").to_string(),
        t["results"].as_array().map_or(0, Vec::len),
    )
}

fn stderr_of(child: &mut Child) -> String {
    use std::io::Read;
    let mut s = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut s);
    }
    s
}

fn finish(child: &mut Child) -> String {
    let status = wait_exit(child, Duration::from_secs(240), String::new);
    let log = stderr_of(child);
    assert!(status.success(), "the client failed: {log}");
    log
}

/// A live purchase `id` claimed by a u2 client, once its first dumps went through the
/// server (the moment the fault tests arm their fault); the data directory lives as long
/// as the returned guard.
fn purchase_under_way(w: &World, id: &str) -> (tempfile::TempDir, Child) {
    w.create(purchase(id));
    let data = tempfile::tempdir().unwrap();
    let mut child = spawn(w, data.path());
    wait_until(
        "dumps through the server",
        Duration::from_secs(60),
        &mut child,
        || w.phone.counters().u2_dumps >= 2,
    );
    (data, child)
}

#[test]
fn a_collect_and_a_live_purchase_go_through_the_u2_server() {
    let w = world();
    w.create(collect("u2-collect"));
    w.create(purchase("u2-live"));
    let data = tempfile::tempdir().unwrap();
    let before = w.phone.counters();
    let out = u2_command(&w, data.path()).output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    assert_eq!(outcome(&w, "u2-collect"), ("succeeded".into(), 1));
    assert_eq!(outcome(&w, "u2-live"), ("succeeded".into(), 1));
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "one order: {orders:?}");
    assert!(!orders[0].payment_attempted);
    let c = w.phone.counters();
    assert_eq!(
        c.u2_starts - before.u2_starts,
        1,
        "one server for the run: {c:?}"
    );
    assert!(
        c.u2_dumps - before.u2_dumps >= 5,
        "dumps through the server: {c:?}"
    );
    assert_eq!(c.dumps, before.dumps, "no `uiautomator dump`: {c:?}");
    assert!(!log.contains("falling back"), "{log}");
    // The server goes with the client.
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while w.phone.u2_running() {
        assert!(
            std::time::Instant::now() < end,
            "the server outlived the client"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_server_that_dies_twice_is_restarted_once_then_the_job_falls_back() {
    let w = world();
    let (_data, mut child) = purchase_under_way(&w, "u2-kill");
    // The server dies; its restart answers its first call "UiAutomation not connected":
    // dead again after the one restart → uiautomator for the rest of the job.
    assert!(w.phone.u2_kill(), "a server ran");
    w.phone.u2_rpc_error_next_call();
    let log = finish(&mut child);
    assert_eq!(outcome(&w, "u2-kill"), ("succeeded".into(), 1), "{log}");
    assert_eq!(w.phone.orders().len(), 1, "one order");
    let c = w.phone.counters();
    assert_eq!(c.u2_starts, 2, "started, restarted once: {c:?}\n{log}");
    assert!(
        c.dumps > 0,
        "the rest of the job on uiautomator dump: {c:?}"
    );
    assert!(log.contains("restarting it once"), "{log}");
    assert!(log.contains("falling back"), "{log}");
}

#[test]
fn a_json_rpc_error_restarts_the_server_and_the_call_runs_once() {
    let w = world();
    let (_data, mut child) = purchase_under_way(&w, "u2-rpc");
    w.phone.u2_rpc_error_next_call();
    let log = finish(&mut child);
    assert_eq!(outcome(&w, "u2-rpc"), ("succeeded".into(), 1), "{log}");
    assert_eq!(w.phone.orders().len(), 1, "one order");
    let c = w.phone.counters();
    assert_eq!(c.u2_starts, 2, "restarted once: {c:?}\n{log}");
    assert_eq!(c.dumps, 0, "no fallback: {c:?}\n{log}");
}

#[test]
fn a_truncated_answer_to_the_submit_tap_is_never_repeated_and_the_order_is_reconciled() {
    let w = world();
    // 确认订单 goods: the submit tap is the only tap on that page.
    w.create(live_purchase(
        "u2-trunc",
        CONFIRM_GOODS,
        json!({"color": "天空蓝", "capacity": "350ml"}),
        1,
        99_900,
    ));
    let data = tempfile::tempdir().unwrap();
    let mut child = spawn(&w, data.path());
    wait_until(
        "the confirm page",
        Duration::from_secs(60),
        &mut child,
        || w.phone.current_page() == "confirm_order",
    );
    // The device guard reads the window stack right before the tap it judges (the
    // submit): hold that read, arm the cut answer, let it go — the next server call is
    // the submit's `click`. It runs (the order is placed) and its answer is cut.
    let gate = w.phone.hang_commands("windows");
    wait_until(
        "the window read before the submit",
        Duration::from_secs(60),
        &mut child,
        || gate.hits() >= 1,
    );
    w.phone.u2_truncate_next_answer();
    gate.release();
    let log = finish(&mut child);
    assert_eq!(outcome(&w, "u2-trunc"), ("succeeded".into(), 1), "{log}");
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "one order in the ledger: {orders:?}");
    assert!(!orders[0].payment_attempted);
    let t = w.task("u2-trunc");
    let p = &t["results"][0]["body"]["purchase"];
    assert_eq!(
        p["order_sn"],
        orders[0].order_sn.as_str(),
        "reconciled: {t}"
    );
    assert!(
        log.contains("U2_ANSWER_TRUNCATED") || log.contains("truncated"),
        "{log}"
    );
}

/// A hung server call: the deadline ends it with a typed, logged error and the task
/// goes on to one order. Scheduled on a given call of a given method (a "next call" knob
/// raced the running client: in CI it landed on a dump, whose deadline error was not
/// logged at all).
fn a_hung_call_on(method: &str, nth: u64, id: &str) {
    let w = world();
    w.phone
        .u2_fault_on_call(Some(method), nth, cmautobuy_sim_phone::u2::CallFault::Hang);
    w.create(purchase(id));
    let data = tempfile::tempdir().unwrap();
    let mut child = spawn(&w, data.path());
    let log = finish(&mut child);
    let (status, reports) = outcome(&w, id);
    assert_eq!(reports, 1, "{log}");
    assert!(w.phone.orders().len() <= 1, "one order at most");
    assert_eq!(status, "succeeded", "{log}");
    assert!(
        log.contains("did not finish within") && log.contains("device call failed"),
        "the deadline, typed and logged: {log}"
    );
}

#[test]
fn a_hung_call_hits_its_deadline_typed_and_the_task_goes_on() {
    // The first click of the purchase (the goods page's buy button): before the mark.
    a_hung_call_on("click", 1, "u2-hang");
}

#[test]
fn a_hung_dump_hits_its_deadline_logged_and_the_task_goes_on() {
    // The account check's dump is the first; the third is inside the purchase.
    a_hung_call_on("dumpWindowHierarchy", 3, "u2-hang-dump");
}

/// The phone drops off the network right after the submit tap (a Wi-Fi link lost): the
/// adb server refuses `host:transport` ("device offline"). That is the phone going away,
/// as on the uiautomator backend — the run stays open and is reconciled when the phone is
/// back — not a server death: no restart is spent on it, no fallback to `uiautomator
/// dump` is taken, and the reconciliation reads the phone through the server again.
#[test]
fn a_phone_lost_after_the_submit_tap_is_no_server_death_and_no_fallback() {
    let w = world();
    w.create(purchase("u2-away"));
    w.phone.set_offline_after_orders(Some(1));
    let data = tempfile::tempdir().unwrap();
    let before = w.phone.counters();
    let mut child = spawn(&w, data.path());
    wait_until(
        "an order waiting for its phone in `status`",
        Duration::from_secs(90),
        &mut child,
        || {
            let st = crate::support::world::status_json(data.path());
            !st["device_pause"].is_null()
                && st["awaiting_reconcile"]
                    .as_array()
                    .is_some_and(|a| !a.is_empty())
        },
    );
    assert_eq!(w.phone.orders().len(), 1, "the order was placed");
    let away = w.phone.counters();
    w.phone.set_offline(false);
    let log = finish(&mut child);
    assert_eq!(outcome(&w, "u2-away"), ("succeeded".into(), 1), "{log}");
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "exactly one order: {orders:?}");
    assert!(!orders[0].payment_attempted);
    let c = w.phone.counters();
    assert_eq!(c.dumps, before.dumps, "no `uiautomator dump`: {c:?}\n{log}");
    assert!(
        c.u2_dumps > away.u2_dumps,
        "the reconciliation read the phone through the server: {c:?}"
    );
    assert!(!log.contains("falling back"), "{log}");
    assert!(!log.contains("restarting it once"), "{log}");
    assert!(log.contains("the run stays open"), "{log}");
    assert!(log.contains("interrupted purchase reconciled"), "{log}");
}

/// `device_backend = "u2"` that cannot work on the phone is refused at start (exit 2,
/// the stable code and what to do), not reported as a device error of every task: a
/// direct TCP phone has no `tcp:PORT` streams, and a configured jar that is not there.
#[test]
fn a_required_u2_backend_that_cannot_work_is_refused_at_start() {
    let w = world();
    w.create(collect("u2-refused"));
    let data = tempfile::tempdir().unwrap();
    let direct = w
        .command_on(data.path(), &format!("tcp:{}", w.phone.addr()))
        .env("CMAUTOBUY_DEVICE_BACKEND", "u2")
        .env("CMAUTOBUY_U2_JAR", jar())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&direct.stderr);
    assert_eq!(direct.status.code(), Some(2), "{err}");
    assert!(
        err.contains("U2_UNAVAILABLE") && err.contains("adb connect"),
        "{err}"
    );
    let missing = data.path().join("no-such-u2.jar");
    let no_jar = u2_command(&w, data.path())
        .env("CMAUTOBUY_U2_JAR", &missing)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&no_jar.stderr);
    assert_eq!(no_jar.status.code(), Some(2), "{err}");
    assert!(
        err.contains("U2_JAR_NOT_FOUND") && err.contains("no-such-u2.jar"),
        "{err}"
    );
    assert_eq!(w.task("u2-refused")["task"]["status"], "pending");
    assert_eq!(w.phone.counters().u2_starts, 0, "no server started");
}
