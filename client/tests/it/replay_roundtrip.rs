//! Record → export → replay, the replay's acceptance, through the real binary:
//!
//! - **Round trip**: every task of the rehearse demo batch (the default batch, and with
//!   `--live` the live purchases and their reconciliation) is recorded on the simulated
//!   phone (`rehearse --data-dir`, artifacts kept), its attempt exported
//!   (`replay-export`), and replayed alone (`rehearse --replay` with that one task): the
//!   same outcome, the same device actions in the manifest (kind, step, tap point and
//!   target, link, swipe, key), no off-script action.
//! - **Divergence**: the committed dry-run purchase scenario with its option 黑色 renamed
//!   in the dumps ends with the code the live flow gives on the catalog for goods without
//!   that option, and the replay log shows the screen where the replay left the script.
//! - **The corpus** (`fixtures/replays/`): each committed scenario replays its
//!   `tasks.json` as expected with no off-script action.
//!
//! A live scenario's order detail carries the 下单时间 of its recording; reconciliation
//! accepts an order only near the replay's own irreversible mark, so a live scenario is
//! replayed from a copy with that time moved next to now (`crate::support::replay::
//! restamp_order_time`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::support::replay::{
    attempt_dir, copy_scenario, off_script, rehearse_replay, repo_root, restamp_scenario_orders,
};

fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    c.env_remove("CMAUTOBUY_CONFIG");
    c
}

/// `rehearse` (catalog mode) with its data kept in `data_dir`; the `--json` summary.
fn record(data_dir: &Path, args: &[&str]) -> Value {
    let out = bin()
        .arg("--data-dir")
        .arg(data_dir)
        .args(["rehearse", "--no-console", "--json", "--timeout", "300"])
        .args(args)
        .output()
        .expect("the client binary runs");
    assert!(
        out.status.success(),
        "recording: exit {:?}\n{}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("--json summary")
}

/// The batch entry of task `id` as the mock Admin of `data_dir` holds it.
fn batch_task(data_dir: &Path, id: &str, expect: &str) -> Value {
    let db = rusqlite::Connection::open(data_dir.join("mock-admin.sqlite")).expect("mock db");
    let (task_type, mode, payload): (String, Option<String>, String) = db
        .query_row(
            "SELECT task_type, execution_mode, payload FROM tasks WHERE task_id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("the task is in the mock Admin");
    let mut t = json!({
        "id": id, "type": task_type,
        "payload": serde_json::from_str::<Value>(&payload).expect("payload JSON"),
        "expect": expect,
    });
    if let Some(m) = mode {
        t["execution_mode"] = json!(m);
    }
    t
}

/// `replay-export ATTEMPT OUT`.
fn export(attempt: &Path, out_dir: &Path) {
    let out = bin()
        .arg("replay-export")
        .arg(attempt)
        .arg(out_dir)
        .output()
        .expect("the client binary runs");
    assert!(
        out.status.success(),
        "replay-export {}: exit {:?}\n{}\n{}",
        attempt.display(),
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The device actions of an attempt's manifest, comparable across runs: every action
/// entry (no `file`) but its `seq`, without the ones the phone never sees (`wait`).
fn device_actions(attempt: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(attempt.join("manifest.json")).expect("manifest");
    let elements: Vec<Value> = serde_json::from_str(&text).expect("manifest JSON");
    elements
        .into_iter()
        .filter(|e| e.get("file").is_none())
        .filter(|e| e["action"] != "wait")
        .map(|mut e| {
            if let Some(o) = e.as_object_mut() {
                o.remove("seq");
                o.remove("taken_at");
            }
            e
        })
        .collect()
}

/// One task's round trip: its recorded attempt exported and replayed alone; the same
/// outcome, the same device actions, nothing off-script. Returns a line for the report.
fn round_trip(rec_dir: &Path, line: &Value, work: &Path) -> Result<String, String> {
    let id = line["id"].as_str().expect("task id");
    let outcome = line["outcome"].as_str().expect("outcome");
    let recorded = attempt_dir(rec_dir, id);
    let scenario = work.join(format!("{id}-scenario"));
    export(&recorded, &scenario);
    let live =
        line["type"] == "purchase" && batch_task(rec_dir, id, outcome)["execution_mode"] == "live";
    if live {
        restamp_scenario_orders(
            &scenario,
            chrono::Utc::now() + chrono::Duration::seconds(60),
        );
    }
    let r = rehearse_replay(
        &scenario,
        &[batch_task(rec_dir, id, outcome)],
        &work.join(format!("{id}-replay")),
    );
    let t = r.task(id);
    if t["outcome"] != outcome || !r.out.status.success() {
        return Err(format!(
            "{id}: recorded {outcome}, replayed {}\n{}",
            t["outcome"],
            r.explain()
        ));
    }
    let log = r.log();
    if t["off_script"] != 0 || !off_script(&log).is_empty() {
        return Err(format!(
            "{id}: off-script {:?}\nlog: {log:?}",
            off_script(&log)
        ));
    }
    let (a, b) = (
        device_actions(&recorded),
        device_actions(&r.attempt_dir(id)),
    );
    if !a.iter().any(|e| e["action"] == "open_url") {
        return Err(format!(
            "{id}: the recorded manifest holds no deep link: {a:?}"
        ));
    }
    if a != b {
        let first = a
            .iter()
            .zip(&b)
            .position(|(x, y)| x != y)
            .unwrap_or(a.len().min(b.len()));
        return Err(format!(
            "{id}: the action sequences differ at {first} (recorded {} actions, replayed {}):\n\
             recorded: {}\nreplayed: {}",
            a.len(),
            b.len(),
            a.get(first).map(Value::to_string).unwrap_or_default(),
            b.get(first).map(Value::to_string).unwrap_or_default()
        ));
    }
    Ok(format!("{id}: {outcome}, {} actions", a.len()))
}

/// Records the batch of `args`, then round-trips every task (of `only` type when given).
fn round_trip_batch(args: &[&str], only: Option<&str>) {
    let tmp = tempfile::tempdir().expect("tmp");
    let rec = tmp.path().join("recorded");
    let summary = record(&rec, args);
    let lines: Vec<&Value> = summary["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter(|l| only.is_none_or(|t| l["type"] == t))
        .collect();
    assert!(!lines.is_empty());
    let mut problems = Vec::new();
    let mut done = Vec::new();
    for line in &lines {
        match round_trip(&rec, line, tmp.path()) {
            Ok(l) => done.push(l),
            Err(e) => problems.push(e),
        }
    }
    assert!(
        problems.is_empty(),
        "{} of {} tasks did not round-trip:\n\n{}\n\nround-tripped:\n{}",
        problems.len(),
        lines.len(),
        problems.join("\n\n"),
        done.join("\n")
    );
}

/// The default demo batch: 9 collects and 3 dry-run purchases (one through a §7.1 spec
/// resolution).
#[test]
fn every_task_of_the_demo_batch_round_trips_through_export_and_replay() {
    round_trip_batch(&[], None);
}

/// `--live`: the purchases place orders and are reconciled to them (payment left through
/// the abandon dialog, 待付款 list, order detail).
#[test]
fn the_live_purchases_round_trip_through_export_and_replay() {
    // The demo's collects are the default batch's: only the purchases here.
    round_trip_batch(&["--live"], Some("purchase"));
}

// ---- the corpus ---------------------------------------------------------------------

fn corpus(name: &str) -> PathBuf {
    repo_root().join("fixtures/replays").join(name)
}

/// Replays `fixtures/replays/NAME` (a copy, restamped when it places an order) with its
/// `tasks.json`; every task as expected, nothing off-script. Returns the replay log.
fn replay_corpus(name: &str) -> Vec<Value> {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path().join(name);
    copy_scenario(&corpus(name), &dir);
    restamp_scenario_orders(&dir, chrono::Utc::now() + chrono::Duration::seconds(60));
    let tasks: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tasks.json")).expect("tasks.json"))
            .expect("tasks.json is a batch");
    let r = rehearse_replay(&dir, &tasks, &tmp.path().join("data"));
    assert!(r.out.status.success(), "{name}: {}", r.explain());
    for t in &tasks {
        let line = r.task(t["id"].as_str().expect("id"));
        assert_eq!(line["outcome"], t["expect"], "{name}: {}", r.explain());
        assert_eq!(line["off_script"], 0, "{name}: {}", r.explain());
    }
    assert_eq!(r.summary["replay"]["off_script"], 0);
    r.log()
}

#[test]
fn the_committed_collect_scenario_replays() {
    replay_corpus("collect");
}

#[test]
fn the_committed_dry_run_purchase_scenario_replays() {
    replay_corpus("purchase-dry-run");
}

#[test]
fn the_committed_live_purchase_scenario_replays_with_its_reconcile() {
    let log = replay_corpus("purchase-live");
    // The order was placed on the replayed phone and the client found it.
    assert!(
        log.iter().any(|l| l["order_sn"].is_string()),
        "an order transition fired: {log:?}"
    );
}

// ---- divergence ---------------------------------------------------------------------

/// The committed dry-run purchase (黑色 / L × 2 of 737116531267) with 黑色 renamed 曜石黑
/// in its dumps: the option the task names is not on the sheet. On the catalog the same
/// task against goods without 黑色 (659910273845: 经典黑 / 米白) ends with a code; the
/// replay must end with the same one, and its log must show where it left the script —
/// the sheet whose scripted tap on 黑色 never came.
#[test]
fn a_renamed_option_ends_with_the_live_flows_code_and_the_log_shows_where() {
    let tmp = tempfile::tempdir().expect("tmp");
    let name = "purchase-dry-run";
    let tasks: Vec<Value> = serde_json::from_str(
        &std::fs::read_to_string(corpus(name).join("tasks.json")).expect("tasks.json"),
    )
    .expect("batch");
    let task = tasks[0].clone();
    assert_eq!(task["payload"]["options"]["color"], "黑色", "{task}");

    // The catalog first: the same task against goods without that option.
    let other_goods = "659910273845";
    let mut on_catalog = task.clone();
    on_catalog["id"] = json!("catalog-missing-option");
    on_catalog["payload"]["goods_id"] = json!(other_goods);
    on_catalog["payload"]["goods_url"] = json!(format!(
        "https://mobile.yangkeduo.com/goods.html?goods_id={other_goods}"
    ));
    on_catalog["expect"] = json!("?");
    let batch = tmp.path().join("catalog-tasks.json");
    std::fs::write(&batch, serde_json::to_vec(&[&on_catalog]).expect("json")).expect("write");
    let out = bin()
        .args(["rehearse", "--no-console", "--json", "--tasks"])
        .arg(&batch)
        .output()
        .expect("runs");
    let summary: Value = serde_json::from_slice(&out.stdout).expect("summary");
    let live_code = summary["tasks"][0]["outcome"]
        .as_str()
        .expect("outcome")
        .to_string();
    assert_eq!(live_code, "failed:SPEC_NOT_FOUND", "{summary}");

    // The replay with the option renamed in the recorded dumps.
    let dir = tmp.path().join("renamed");
    copy_scenario(&corpus(name), &dir);
    let mut renamed = 0;
    for e in std::fs::read_dir(&dir).expect("dir").flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("xml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("dump");
        if text.contains("黑色") {
            std::fs::write(&p, text.replace("黑色", "曜石黑")).expect("write");
            renamed += 1;
        }
    }
    assert!(renamed > 0, "no dump shows 黑色");
    let mut replayed = task.clone();
    replayed["expect"] = json!(live_code);
    let r = rehearse_replay(&dir, &[replayed.clone()], &tmp.path().join("data"));
    let id = replayed["id"].as_str().expect("id");
    assert_eq!(r.task(id)["outcome"], live_code.as_str(), "{}", r.explain());

    // Where it diverged: the screen whose script goes on with the tap on 黑色 — the
    // client met it and never left it (an off-script line, or the last screen).
    let scenario: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("scenario.json")).expect("scenario"),
    )
    .expect("json");
    let tap_screen = scenario["screens"]
        .as_object()
        .expect("screens")
        .iter()
        .find(|(_, s)| {
            s["on"].as_array().is_some_and(|on| {
                on.iter()
                    .any(|t| t["tap"]["text"] == "黑色" || t["tap"]["desc"] == "黑色")
            })
        })
        .map(|(id, _)| id.clone())
        .expect("the scenario taps 黑色 somewhere");
    let log = r.log();
    let diverged = off_script(&log)
        .first()
        .map(|l| l["screen"].clone())
        .or_else(|| log.last().map(|l| l["screen"].clone()))
        .expect("a replay log");
    assert_eq!(diverged, json!(tap_screen), "log: {log:?}");
    assert!(
        !log.iter().any(|l| l["screen"] == tap_screen.as_str()
            && l["action"] == "tap"
            && l["to"].is_string()),
        "the scripted tap never came: {log:?}"
    );
}
