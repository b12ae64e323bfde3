//! Item 9: `run` drains on SIGTERM. The real binary against the bundled mock
//! Admin and the simulated phone; the signal is sent while the phone holds one of the
//! task's commands (`SimPhoneHandle::hang_commands` for shell lines, `hold_u2_calls` for
//! uiautomator2's server calls: taps are `input tap` on the uiautomator backend and the
//! server's `click` on u2), so it provably arrives mid-task, on either backend
//! (`CMAUTOBUY_DEVICE_BACKEND`, as `scripts/test` runs it).
//!
//! - One signal: the task in hand finishes, its result reaches the Admin once (the
//!   outbox drain), nothing more is claimed, one order, exit 0.
//! - Two signals while a purchase is between its irreversible mark and its recorded
//!   result: the process does not exit until the result is recorded (a safe point for
//!   money), then exits 130; the next start delivers the result; one order.
#![cfg(unix)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::world::World;
use cmautobuy_mock_admin::Endpoint;
use cmautobuy_sim_phone::HangGate;
use serde_json::{json, Value};

/// A live purchase of one 黑色 / L of the catalog's goods 737116531267 (¥100 limit).
fn live_purchase(id: &str, priority: i64) -> Value {
    let mut t = crate::support::world::live_purchase(
        id,
        "737116531267",
        json!({"color": "黑色", "size": "L"}),
        1,
        10000,
    );
    t["priority"] = json!(priority);
    t
}

/// The client, live, with its stderr lines forwarded to the returned channel.
fn spawn(w: &World, data: &std::path::Path) -> (Child, mpsc::Receiver<String>) {
    let mut child = w
        .command(data)
        .arg("--allow-live")
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// The purchase's taps held at the phone, whichever backend sends them: `input tap`
/// shell lines (uiautomator) and the server's `click` calls (u2). Dropping it releases
/// them.
struct TapHold {
    shell: HangGate,
    server: HangGate,
}

impl TapHold {
    fn new(w: &World) -> TapHold {
        TapHold {
            shell: w.phone.hang_commands("input tap "),
            server: w.phone.hold_u2_calls("click"),
        }
    }

    fn hits(&self) -> u64 {
        self.shell.hits() + self.server.hits()
    }
}

/// Waits (bounded) until the phone holds a command (`hits` counts them).
fn await_hold(hits: impl Fn() -> u64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while hits() == 0 {
        assert!(
            Instant::now() < deadline,
            "the phone never held the command"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Waits (bounded) for a stderr line containing `needle`.
fn await_line(rx: &mpsc::Receiver<String>, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains(needle) => return,
            Ok(_) => {}
            Err(e) => panic!("no log line with {needle:?}: {e}"),
        }
    }
}

fn term(child: &Child) {
    let ok = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -TERM");
}

fn wait_exit(child: &mut Child) -> Option<i32> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s.code();
        }
        assert!(Instant::now() < deadline, "the client did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn claims(w: &World) -> usize {
    w.op.journal()
        .iter()
        .filter(|e| e.endpoint == Endpoint::Claim)
        .count()
}

fn results(w: &World, id: &str) -> Vec<Value> {
    w.task(id)["results"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn sigterm_mid_task_finishes_the_task_reports_it_once_and_exits_0() {
    let w = World::start("tok-drain");
    w.create(live_purchase("drain-1", 10));
    w.create(live_purchase("drain-2", 0));
    let data = tempfile::tempdir().unwrap();
    // The first tap of the purchase (on the goods page) waits at the phone.
    let gate = TapHold::new(&w);
    let (mut child, rx) = spawn(&w, data.path());
    await_hold(|| gate.hits());
    // Held where this run's backend taps.
    let u2 = crate::support::world::backend_from_env().as_deref() == Some("u2");
    assert_eq!(
        (gate.shell.hits(), gate.server.hits()),
        if u2 { (0, 1) } else { (1, 0) }
    );
    term(&child);
    await_line(&rx, "stop signal: draining");
    drop(gate);
    assert_eq!(wait_exit(&mut child), Some(0), "a drained stop exits 0");
    // The task finished and its result reached the Admin once; nothing more claimed.
    let r = results(&w, "drain-1");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["kind"], "result", "{r:?}");
    assert_eq!(r[0]["body"]["purchase"]["mode"], "live");
    assert!(
        results(&w, "drain-2").is_empty(),
        "claimed after the signal"
    );
    assert_eq!(claims(&w), 1);
    let orders = w.phone.orders();
    assert_eq!(orders.len(), 1, "{orders:?}");
    assert_eq!(
        r[0]["body"]["purchase"]["order_sn"],
        orders[0].order_sn.as_str()
    );
    w.stop();
}

#[test]
fn a_second_signal_between_the_mark_and_the_result_waits_for_the_result_then_exits_130() {
    let w = World::start("tok-drain2");
    w.create(live_purchase("drain-3", 0));
    let data = tempfile::tempdir().unwrap();
    // After the submit tap (and so after the mark) reconciliation opens 待付款 by its deep
    // link — an `am start` shell line on either backend: held at the phone, the purchase
    // is between its mark and its result.
    // The first such line is the census of unpaid orders before anything is tapped
    //: let it through, hold the next one.
    let census = w.phone.hang_commands("orders.html");
    let (mut child, rx) = spawn(&w, data.path());
    await_hold(|| census.hits());
    assert_eq!(
        w.phone.orders().len(),
        0,
        "the census comes before the order"
    );
    let gate = w.phone.hang_commands("orders.html");
    drop(census);
    await_hold(|| gate.hits());
    assert_eq!(w.phone.orders().len(), 1, "the order is placed");
    term(&child);
    await_line(&rx, "stop signal: draining");
    term(&child);
    await_line(&rx, "second stop signal");
    // Not a safe point: the process stays while the result is not recorded. (The check
    // loop runs every 100 ms; 20 rounds of it pass here.)
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        child.try_wait().unwrap().is_none(),
        "exited between the mark and the recorded result"
    );
    drop(gate);
    assert_eq!(wait_exit(&mut child), Some(130));
    // The result was recorded before the exit: the next start delivers it, once; no
    // second order.
    w.run(data.path());
    let r = results(&w, "drain-3");
    assert_eq!(r.len(), 1, "{r:?}");
    assert_eq!(r[0]["kind"], "result", "{r:?}");
    assert_eq!(w.phone.orders().len(), 1);
    w.stop();
}
