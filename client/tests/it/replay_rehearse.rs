//! `cmautobuy-client rehearse --replay DIR --tasks FILE` as the operator runs it: the real binary, the bundled mock Admin, a scenario replayed by the simulated
//! phone over the real ADB protocol. A bad scenario is refused at start (exit 2, the
//! loader's message); an action that went off-script fails the rehearsal (exit 1) even
//! when every task ended as expected, and the summary names the first one.

use std::process::Command;

use serde_json::json;

use crate::support::replay::{
    fixture_screen, purchase_task, rehearse_replay, tap_text, ScenarioBuilder,
};

const GOODS: &str = "737116531267";

/// home → goods link → our goods page → 发起拼单 → our sheet (雾霾蓝 / L selected,
/// quantity 2, ¥47.2): a dry run of 雾霾蓝 / L × 2 needs no other tap.
fn dry_run_scenario(dir: &std::path::Path, goods_on: Vec<serde_json::Value>) -> std::path::PathBuf {
    let mut b = ScenarioBuilder::new(dir, "home");
    b.screen("home", &fixture_screen("sim_home.xml"), vec![])
        .screen("goods", &fixture_screen("goods_detail.xml"), goods_on)
        .screen(
            "sheet",
            &fixture_screen("sku_sheet_text_two_dims.xml"),
            vec![],
        )
        .url(&format!("goods_id={GOODS}"), "goods");
    b.write()
}

fn dry_run_task(id: &str) -> serde_json::Value {
    purchase_task(
        id,
        "dry_run",
        GOODS,
        json!({"color": "雾霾蓝", "size": "L"}),
        2,
        5000,
        "succeeded",
    )
}

#[test]
fn a_replayed_dry_run_on_script_passes_and_reports_no_off_script_action() {
    let tmp = tempfile::tempdir().expect("tmp");
    let scenario = dry_run_scenario(
        &tmp.path().join("scenario"),
        vec![tap_text("发起拼单", "sheet")],
    );
    let r = rehearse_replay(
        &scenario,
        &[dry_run_task("on-script")],
        &tmp.path().join("data"),
    );
    assert!(r.out.status.success(), "{}", r.explain());
    assert_eq!(r.summary["ok"], true, "{}", r.explain());
    let t = r.task("on-script");
    assert_eq!(t["outcome"], "succeeded");
    assert_eq!(t["off_script"], 0);
    assert!(t.get("first_off_script").is_none(), "{t}");
    let replay = &r.summary["replay"];
    assert_eq!(replay["off_script"], 0, "{replay}");
    assert!(replay["actions"].as_u64().unwrap_or(0) >= 3, "{replay}");
    assert!(replay["scenario"]
        .as_str()
        .unwrap_or("")
        .ends_with("scenario"));
    // The replay log went to --replay-log, one line per action, dumps included.
    let log = r.log();
    assert_eq!(log.len() as u64, replay["actions"].as_u64().unwrap_or(0));
    assert!(log
        .iter()
        .any(|l| l["action"] == "open_url" && l["to"] == "goods"));
    assert!(log
        .iter()
        .any(|l| l["action"] == "tap" && l["screen"] == "goods" && l["to"] == "sheet"));
    assert!(log
        .iter()
        .any(|l| l["action"] == "dump" && l["screen"] == "sheet"));
    // The human summary says the same.
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(tmp.path().join("data2"))
        .args(["rehearse", "--no-console", "--replay"])
        .arg(&scenario)
        .arg("--tasks")
        .arg(tmp.path().join("data/tasks.json"))
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains(" on script"), "{stdout}");
    assert!(stdout.contains("0 off-script"), "{stdout}");
}

/// The goods page changes into the sheet by itself right after its first dump (a
/// `dumped` transition) and its 发起拼单 has no transition: the client's tap meets the
/// sheet, where nothing is scripted. The task still ends as expected — the sheet was the
/// page it wanted — but the replay went off-script, so the rehearsal fails and says where.
#[test]
fn an_off_script_action_fails_the_rehearsal_even_when_every_task_ended_as_expected() {
    let tmp = tempfile::tempdir().expect("tmp");
    let scenario = dry_run_scenario(
        &tmp.path().join("scenario"),
        vec![json!({"dumped": true, "to": "sheet"})],
    );
    let r = rehearse_replay(
        &scenario,
        &[dry_run_task("off-script")],
        &tmp.path().join("data"),
    );
    assert_eq!(r.out.status.code(), Some(1), "{}", r.explain());
    assert_eq!(r.summary["ok"], false, "{}", r.explain());
    let t = r.task("off-script");
    assert_eq!(t["outcome"], "succeeded", "{}", r.explain());
    assert_eq!(t["as_expected"], true);
    assert_eq!(t["off_script"], 1, "{t}");
    let first = &t["first_off_script"];
    assert_eq!(first["action"], "tap", "{first}");
    assert_eq!(first["screen"], "sheet", "{first}");
    assert_eq!(first["off_script"], true, "{first}");
    assert!(first["at"].is_array(), "{first}");
    assert_eq!(r.summary["replay"]["off_script"], 1);
    // The log line is the same one.
    let log = r.log();
    let off: Vec<_> = log.iter().filter(|l| l["off_script"] == true).collect();
    assert_eq!(off.len(), 1, "{log:?}");
    assert_eq!(off[0], first);
}

#[test]
fn a_bad_scenario_is_refused_at_start_with_the_loaders_message() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = dry_run_scenario(
        &tmp.path().join("good"),
        vec![tap_text("发起拼单", "sheet")],
    );
    let tasks = tmp.path().join("tasks.json");
    std::fs::write(
        &tasks,
        serde_json::to_vec(&[dry_run_task("t")]).expect("json"),
    )
    .expect("tasks");
    let scenario_json = std::fs::read_to_string(good.join("scenario.json")).expect("json");

    // Each bad scenario: a copy of the good one with one thing broken, and a word the
    // refusal must name.
    type Break = Box<dyn Fn(&std::path::Path)>;
    let cases: Vec<(&str, Break, &str)> = vec![
        (
            "missing file",
            Box::new(|d| std::fs::remove_file(d.join("sheet.xml")).expect("rm")),
            "sheet.xml",
        ),
        (
            "unknown screen id",
            Box::new({
                let s = scenario_json.clone();
                move |d| {
                    std::fs::write(
                        d.join("scenario.json"),
                        s.replace("\"to\": \"sheet\"", "\"to\": \"nowhere\""),
                    )
                    .expect("write")
                }
            }),
            "nowhere",
        ),
        (
            "malformed JSON",
            Box::new(|d| {
                std::fs::write(d.join("scenario.json"), "{\"version\": 1, \"start\": ")
                    .expect("write")
            }),
            "scenario.json",
        ),
        (
            "a dump that is not a dump",
            Box::new(|d| std::fs::write(d.join("goods.xml"), "{\"not\": \"xml\"}").expect("write")),
            "goods.xml",
        ),
    ];
    for (what, breakit, word) in cases {
        let dir = tmp.path().join(what.replace(' ', "_"));
        crate::support::replay::copy_scenario(&good, &dir);
        breakit(&dir);
        let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
            .arg("--data-dir")
            .arg(tmp.path().join(format!("data-{}", what.replace(' ', "_"))))
            .args(["rehearse", "--no-console", "--replay"])
            .arg(&dir)
            .arg("--tasks")
            .arg(&tasks)
            .env_remove("CMAUTOBUY_CONFIG")
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains(word),
            "{what}: the refusal names {word:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{what}: {stderr}");
        // Refused before anything started: no store was made.
        assert!(
            !tmp.path()
                .join(format!("data-{}", what.replace(' ', "_")))
                .join("client.sqlite3")
                .exists(),
            "{what}"
        );
    }
    // --replay needs --tasks.
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .args(["rehearse", "--no-console", "--replay"])
        .arg(&good)
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--tasks"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The committed dry-run purchase (its sheet scripted for a tap on 黑色) asked for another
/// colour: the client taps 雾霾蓝 on the sheet, which the recording never did. The tap lands
/// on the same clickable sheet panel as 黑色's chip, yet it is off-script — a chip is its
/// own target — and the first off-script line names that screen and point.
#[test]
fn a_tap_on_another_option_of_the_recorded_sheet_goes_off_script() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = crate::support::replay::repo_root().join("fixtures/replays/purchase-dry-run");
    let tasks: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(dir.join("tasks.json")).expect("tasks"))
            .expect("batch");
    let mut task = tasks[0].clone();
    assert_eq!(task["payload"]["options"]["color"], "黑色");
    task["payload"]["options"]["color"] = json!("雾霾蓝");
    task["expect"] = json!("?");
    let r = rehearse_replay(&dir, &[task.clone()], &tmp.path().join("data"));
    assert_eq!(r.out.status.code(), Some(1), "{}", r.explain());
    let t = r.task(task["id"].as_str().expect("id"));
    // Ended once (the rehearsal does not replay a retried task until --timeout).
    assert_eq!(t["outcome"], "retry_wait:PAGE_NOT_RECOGNIZED", "{t}");
    assert!(t["off_script"].as_u64().unwrap_or(0) >= 1, "{t}");
    let first = &t["first_off_script"];
    assert_eq!(first["action"], "tap", "{first}");
    assert_eq!(first["screen"], "s02", "{first}");
}
