//! Replay scenarios at test time: a builder that writes a scenario directory
//! (format v1, `sim-phone/README.md`), the real client binary's `rehearse --replay` run
//! on it, and what the tests read back (the summary, the replay log, the Admin's stored
//! result, an attempt's manifest and trace).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{json, Map, Value};

/// The repository's root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("client/ has a parent")
        .to_path_buf()
}

/// A fixture screen of ours (`fixtures/screens/NAME`), as text.
pub fn fixture_screen(name: &str) -> String {
    let p = repo_root().join("fixtures/screens").join(name);
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `text` with `from` replaced by `to`, which must occur exactly `times` times — a test's
/// edit of recorded material fails loudly when the material changed under it.
pub fn edit(text: &str, from: &str, to: &str, times: usize) -> String {
    let n = text.matches(from).count();
    assert_eq!(
        n, times,
        "expected {times} of {from:?} in the dump, found {n}"
    );
    text.replace(from, to)
}

/// A scenario directory being written.
pub struct ScenarioBuilder {
    dir: PathBuf,
    start: String,
    screens: Map<String, Value>,
    urls: Vec<Value>,
}

impl ScenarioBuilder {
    /// A scenario in `dir` (created) starting on screen `start`.
    pub fn new(dir: &Path, start: &str) -> Self {
        std::fs::create_dir_all(dir).expect("scenario dir");
        ScenarioBuilder {
            dir: dir.to_path_buf(),
            start: start.into(),
            screens: Map::new(),
            urls: Vec::new(),
        }
    }

    /// Screen `id` whose dump is `dump` (written as `{id}.xml`), left by `on`.
    pub fn screen(&mut self, id: &str, dump: &str, on: Vec<Value>) -> &mut Self {
        let file = format!("{id}.xml");
        std::fs::write(self.dir.join(&file), dump).expect("write dump");
        let mut s = json!({ "dump": file });
        if !on.is_empty() {
            s["on"] = Value::Array(on);
        }
        self.screens.insert(id.into(), s);
        self
    }

    /// A deep link containing `contains` opens screen `to` from any screen.
    pub fn url(&mut self, contains: &str, to: &str) -> &mut Self {
        self.urls.push(json!({"contains": contains, "to": to}));
        self
    }

    /// Writes `scenario.json`; returns the directory.
    pub fn write(&self) -> PathBuf {
        let mut s = json!({
            "version": 1,
            "start": self.start,
            "screens": Value::Object(self.screens.clone()),
        });
        if !self.urls.is_empty() {
            s["urls"] = Value::Array(self.urls.clone());
        }
        std::fs::write(
            self.dir.join("scenario.json"),
            serde_json::to_string_pretty(&s).expect("json"),
        )
        .expect("write scenario.json");
        self.dir.clone()
    }
}

/// A transition on a tap of the node whose text is `text`.
pub fn tap_text(text: &str, to: &str) -> Value {
    json!({"tap": {"text": text}, "to": to})
}

/// A purchase task of a `--tasks` batch.
pub fn purchase_task(
    id: &str,
    mode: &str,
    goods: &str,
    options: Value,
    quantity: i64,
    max_price_cent: i64,
    expect: &str,
) -> Value {
    json!({
        "id": id, "type": "purchase", "execution_mode": mode,
        "payload": {
            "goods_id": goods,
            "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}"),
            "options": options, "quantity": quantity, "max_price_cent": max_price_cent,
        },
        "expect": expect,
    })
}

/// What one `rehearse --replay` run left.
pub struct Replayed {
    pub out: Output,
    /// The `--json` summary (`Null` when stdout held none).
    pub summary: Value,
    /// The kept data directory (store, mock Admin database, artifacts, replay log).
    pub data_dir: PathBuf,
}

impl Replayed {
    /// Exit status, stdout and stderr, for assertion messages.
    pub fn explain(&self) -> String {
        format!(
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.out.status.code(),
            String::from_utf8_lossy(&self.out.stdout),
            String::from_utf8_lossy(&self.out.stderr)
        )
    }

    /// The summary's line of task `id`.
    pub fn task(&self, id: &str) -> &Value {
        self.summary["tasks"]
            .as_array()
            .and_then(|a| a.iter().find(|t| t["id"] == id))
            .unwrap_or_else(|| panic!("no task {id} in the summary\n{}", self.explain()))
    }

    /// The replay log (`--replay-log`), one JSON object per line.
    pub fn log(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.data_dir.join("replay.log")).unwrap_or_default();
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).expect("a replay log line is JSON"))
            .collect()
    }

    /// The complete body the mock Admin stored for task `id` (`tasks.result_data`).
    pub fn admin_result(&self, id: &str) -> Value {
        admin_result(&self.data_dir, id)
    }

    /// The attempt directory of task `id`'s (last) attempt.
    pub fn attempt_dir(&self, id: &str) -> PathBuf {
        attempt_dir(&self.data_dir, id)
    }
}

/// The complete body the mock Admin of the rehearsal kept in `data_dir` stored for `id`.
pub fn admin_result(data_dir: &Path, id: &str) -> Value {
    let db = rusqlite::Connection::open(data_dir.join("mock-admin.sqlite")).expect("mock db");
    let text: Option<String> = db
        .query_row(
            "SELECT result_data FROM tasks WHERE task_id = ?1",
            [id],
            |r| r.get(0),
        )
        .expect("the task is in the mock Admin");
    text.map(|t| serde_json::from_str(&t).expect("result_data is JSON"))
        .unwrap_or(Value::Null)
}

/// The newest attempt directory of task `id` under `data_dir/artifacts`.
pub fn attempt_dir(data_dir: &Path, id: &str) -> PathBuf {
    let task_dir = data_dir.join("artifacts").join(id);
    let mut dirs: Vec<(std::time::SystemTime, PathBuf)> = std::fs::read_dir(&task_dir)
        .unwrap_or_else(|e| panic!("{}: {e}", task_dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.join("manifest.json").is_file())
        .map(|p| {
            let t = std::fs::metadata(p.join("manifest.json"))
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (t, p)
        })
        .collect();
    dirs.sort();
    dirs.pop()
        .unwrap_or_else(|| panic!("no attempt of {id} in {}", task_dir.display()))
        .1
}

/// Runs the real client binary: `rehearse --replay scenario --tasks (tasks) --json`, its
/// data (and the replay log, `replay.log`) kept in `data_dir`.
pub fn rehearse_replay(scenario: &Path, tasks: &[Value], data_dir: &Path) -> Replayed {
    std::fs::create_dir_all(data_dir).expect("data dir");
    let tasks_file = data_dir.join("tasks.json");
    std::fs::write(&tasks_file, serde_json::to_vec_pretty(tasks).expect("json")).expect("tasks");
    rehearse_replay_args(
        scenario,
        &["--tasks".as_ref(), tasks_file.as_os_str()],
        data_dir,
    )
}

/// `rehearse --replay scenario ARGS… --json`, data in `data_dir`.
pub fn rehearse_replay_args(
    scenario: &Path,
    args: &[&std::ffi::OsStr],
    data_dir: &Path,
) -> Replayed {
    std::fs::create_dir_all(data_dir).expect("data dir");
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--data-dir")
        .arg(data_dir)
        .arg("rehearse")
        .args(["--timeout", "120", "--no-console", "--json"])
        .arg("--replay")
        .arg(scenario)
        .arg("--replay-log")
        .arg(data_dir.join("replay.log"))
        .args(args)
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .expect("the client binary runs");
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    // The recording is served on this run's device backend (scripts/test's u2 pass: the
    // simulated phone's uiautomator2 server, through the rehearsal's private adb server).
    if !summary.is_null() {
        assert_eq!(
            summary["device_backend"],
            super::rehearse_backend_from_env(),
            "{summary:#}"
        );
    }
    Replayed {
        out,
        summary,
        data_dir: data_dir.to_path_buf(),
    }
}

/// The phone's 下单时间 format (+08:00, `YYYY-MM-DD HH:MM:SS`) for `t`.
pub fn order_time_text(t: chrono::DateTime<chrono::Utc>) -> String {
    t.with_timezone(&chrono::FixedOffset::east_opt(8 * 3600).expect("+08:00"))
        .format("%Y-%m-%d %H:%M:%S")
        .to_string()
}

/// A recorded order detail's 下单时间 moved to `at`. A recording's order was placed when
/// it was recorded; reconciliation accepts an order only near the irreversible mark
/// (60 s + clock skew before it … 5 min after), so a replay of a live path needs its
/// order stamped near the replay's own mark — the one edit a live scenario needs to be
/// replayed later. Stamped a minute ahead of the scenario's writing, the window holds
/// whether the replay's mark comes at once or up to two minutes later.
pub fn restamp_order_time(dump: &str, at: chrono::DateTime<chrono::Utc>) -> String {
    const LABEL: &str = "下单时间：";
    let mut out = String::with_capacity(dump.len());
    let mut rest = dump;
    while let Some(i) = rest.find(LABEL) {
        let after = i + LABEL.len();
        out.push_str(&rest[..after]);
        let stamp: String = rest[after..].chars().take(19).collect();
        assert!(
            chrono::NaiveDateTime::parse_from_str(&stamp, "%Y-%m-%d %H:%M:%S").is_ok(),
            "下单时间 is not followed by a time: {stamp:?}"
        );
        out.push_str(&order_time_text(at));
        rest = &rest[after + stamp.len()..];
    }
    out.push_str(rest);
    out
}

/// Every file of `dir` whose dump shows a 下单时间, restamped (see [`restamp_order_time`]).
pub fn restamp_scenario_orders(dir: &Path, at: chrono::DateTime<chrono::Utc>) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(dir).expect("scenario dir").flatten() {
        let p = e.path();
        if p.extension().and_then(|x| x.to_str()) != Some("xml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).expect("dump");
        if text.contains("下单时间：") {
            std::fs::write(&p, restamp_order_time(&text, at)).expect("write dump");
            n += 1;
        }
    }
    n
}

/// Copies the scenario directory `from` into `to` (flat: a scenario names plain files).
pub fn copy_scenario(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("copy target");
    for e in std::fs::read_dir(from).expect("scenario dir").flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), to.join(e.file_name())).expect("copy");
        }
    }
}

/// The log lines that went off-script.
pub fn off_script(log: &[Value]) -> Vec<&Value> {
    log.iter().filter(|l| l["off_script"] == true).collect()
}
