//! "Dead phone": the real binary (`run --exit-when-idle`) against
//! the bundled mock Admin over loopback HTTP and the simulated phone over ADB (direct
//! TCP). 20 collect tasks are pooled; after the first result the phone goes away
//! (`set_offline(true)`). While it is away the client makes at most one claim, reports it
//! once (`retry_wait DEVICE_OFFLINE`), pauses (`status` says why and since when) and the
//! data directory grows < 1 MB; when the phone answers again it resumes by itself and
//! completes the batch.
//!
//! The second test starts with no phone listening at the address at all; one starts
//! listening later there: at most one claim before, a pause, then the whole batch.
//!
//! No timing luck: every wait is a bounded poll on an observable fact (the Admin's
//! journal, `status --json`); the one fixed wait is the away window itself, during which
//! the test asserts that nothing happens.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use cmautobuy_mock_admin::{Endpoint, Operator};
use cmautobuy_sim_phone::{Catalog, SimConfig, SimPhone};
use serde_json::{json, Value};

use crate::support::world::{goods_url, status_json, wait_exit, wait_until, World};

const TASKS: usize = 20;
/// How long the phone stays away once the worker is paused (the probes run at 1, 2, 4 s…).
const AWAY: Duration = Duration::from_secs(8);

fn count(op: &Operator, endpoint: Endpoint) -> usize {
    op.journal()
        .iter()
        .filter(|e| e.endpoint == endpoint)
        .count()
}

fn dir_bytes(p: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(p).into_iter().flatten().flatten() {
        let Ok(md) = e.metadata() else { continue };
        n += if md.is_dir() {
            dir_bytes(&e.path())
        } else {
            md.len()
        };
    }
    n
}

#[test]
fn a_phone_that_goes_away_pauses_the_worker_and_the_batch_completes_when_it_returns() {
    let w = World::start("tok-dead");
    let (op, phone) = (&w.op, &w.phone);
    let goods = "602938475610";
    for i in 0..TASKS {
        w.create(json!({
            "id": format!("dead-{i:02}"),
            "type": "collect",
            "payload": {"goods_id": goods, "goods_url": goods_url(goods)},
        }));
    }

    let data = tempfile::tempdir().unwrap();
    // The log goes beside the data directory, not into it (its size is measured).
    let logs = tempfile::tempdir().unwrap();
    let log_path = logs.path().join("run.log");
    let mut child = w
        .command(data.path())
        .env("CMAUTOBUY_LOCK_DIR", data.path().join("locks"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();

    // The batch is under way: the first result, then the phone goes away.
    wait_until(
        "a first result",
        Duration::from_secs(120),
        &mut child,
        || count(op, Endpoint::Result) >= 1,
    );
    phone.set_offline(true);
    let claims_at_offline = count(op, Endpoint::Claim);
    let results_at_offline = count(op, Endpoint::Result);

    // It pauses, and says so.
    let mut paused = Value::Null;
    wait_until(
        "the pause in `status`",
        Duration::from_secs(60),
        &mut child,
        || {
            paused = status_json(data.path())["device_pause"].clone();
            !paused.is_null()
        },
    );
    assert_eq!(paused["code"], "DEVICE_OFFLINE", "{paused}");
    assert!(
        paused["since"].as_str().is_some_and(|s| s.ends_with('Z')),
        "{paused}"
    );
    let bytes_paused = dir_bytes(data.path());
    let claims_paused = count(op, Endpoint::Claim);

    // Away: nothing is claimed, nothing grows.
    std::thread::sleep(AWAY);
    assert!(
        child.try_wait().unwrap().is_none(),
        "the client waits for the phone"
    );
    let claims_away = count(op, Endpoint::Claim);
    let failures_away = count(op, Endpoint::Failure);
    let grown = dir_bytes(data.path()).saturating_sub(bytes_paused);
    assert_eq!(claims_away, claims_paused, "no claim while paused");
    assert!(
        claims_away - claims_at_offline <= 1,
        "at most one claim while the phone is away: {} (at offline {claims_at_offline})",
        claims_away
    );
    assert!(
        failures_away <= 1,
        "reported once: {failures_away} failures"
    );
    assert!(
        grown < 1_000_000,
        "data directory grew {grown} bytes while away"
    );
    eprintln!(
        "away: {} claim(s), {failures_away} failure report(s), {grown} bytes written while paused ({} results before)",
        claims_away - claims_at_offline,
        results_at_offline
    );

    // Back: the worker resumes by itself and completes the batch.
    phone.set_offline(false);
    let exit = wait_exit(&mut child, Duration::from_secs(240), || {
        "the batch did not complete after the phone came back".to_string()
    });
    let err = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(exit.success(), "run failed: {err}");
    assert!(err.contains("worker paused"), "the log says why: {err}");
    assert!(
        err.contains("worker resumed"),
        "the log says it resumed: {err}"
    );
    for i in 0..TASKS {
        let t = w.task(&format!("dead-{i:02}"));
        let last = t["results"].as_array().and_then(|a| a.last()).cloned();
        assert_eq!(
            last.as_ref().map(|r| r["kind"].clone()),
            Some(json!("result")),
            "dead-{i:02}: {t}"
        );
    }
    assert!(status_json(data.path())["device_pause"].is_null());
    w.stop();
}

#[test]
fn a_phone_that_starts_listening_later_gets_the_whole_batch_after_at_most_one_claim() {
    let w = World::start("tok-later");
    let op = &w.op;
    let goods = "602938475610";
    for i in 0..TASKS {
        w.create(json!({
            "id": format!("later-{i:02}"),
            "type": "collect",
            "payload": {"goods_id": goods, "goods_url": goods_url(goods)},
        }));
    }
    // An address nobody listens on (yet).
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let data = tempfile::tempdir().unwrap();
    let logs = tempfile::tempdir().unwrap();
    let log_path = logs.path().join("run.log");
    let mut child = w
        .command_on(data.path(), &w.device_at(addr))
        .env("CMAUTOBUY_LOCK_DIR", data.path().join("locks"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .spawn()
        .unwrap();
    let mut paused = Value::Null;
    wait_until(
        "the pause in `status`",
        Duration::from_secs(60),
        &mut child,
        || {
            paused = status_json(data.path())["device_pause"].clone();
            !paused.is_null()
        },
    );
    assert_eq!(paused["code"], "DEVICE_OFFLINE", "{paused}");
    let bytes_paused = dir_bytes(data.path());
    std::thread::sleep(AWAY);
    let claims_away = count(op, Endpoint::Claim);
    assert!(
        claims_away <= 1,
        "at most one claim while no phone listens: {claims_away}"
    );
    let grown = dir_bytes(data.path()).saturating_sub(bytes_paused);
    assert!(
        grown < 1_000_000,
        "data directory grew {grown} bytes while away"
    );
    eprintln!("no phone yet: {claims_away} claim(s), {grown} bytes written while paused");

    // The phone starts listening at that address.
    let phone = SimPhone::bind(
        addr,
        SimConfig::new(Catalog::load(&Catalog::bundled_dir()).unwrap()),
    )
    .unwrap();
    let exit = wait_exit(&mut child, Duration::from_secs(240), || {
        "the batch did not complete after the phone started listening".to_string()
    });
    let err = std::fs::read_to_string(&log_path).unwrap_or_default();
    assert!(exit.success(), "run failed: {err}");
    assert!(err.contains("worker resumed"), "{err}");
    for i in 0..TASKS {
        let t = w.task(&format!("later-{i:02}"));
        let last = t["results"].as_array().and_then(|a| a.last()).cloned();
        assert_eq!(
            last.as_ref().map(|r| r["kind"].clone()),
            Some(json!("result")),
            "later-{i:02}: {t}"
        );
    }
    assert!(phone.foreign_taps().is_empty());
    drop(phone);
    w.stop();
}
