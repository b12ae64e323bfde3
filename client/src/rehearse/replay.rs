//! `rehearse --replay DIR`: the simulated phone serves a recorded
//! scenario (`sim-phone/README.md`, "Replay mode"; format v1) instead of the catalog, and
//! the summary says, per task, which actions went off-script.
//!
//! Everything that touches the simulated phone's replay API is in this file: loading
//! (a bad scenario is refused before anything starts, with the loader's message), the
//! phone's configuration, the log (kept in-process, written to `--replay-log FILE` at the
//! end) and the attribution of its off-script lines to the tasks. Tasks run one at a time
//! on one phone, so a task owns the log lines written between the report before it and
//! its own report.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use cmautobuy_sim_phone::replay::{ReplayLogEntry, Scenario};
use cmautobuy_sim_phone::SimConfig;

/// Loads and checks the scenario in `dir`; the error is the loader's message (it names
/// the file, the screen or the JSON position).
pub fn load(dir: &Path) -> Result<Scenario, String> {
    Scenario::load(dir).map_err(|e| format!("--replay {}: {e}", dir.display()))
}

/// The delivery address the recording's checkout shows (the first sheet or 确认订单 with
/// an address block, as the export masked it): a replay's address fingerprint, so its
/// live purchase is checked against the address it was recorded with (no live
/// order without a fingerprint). `None` when no recorded screen shows one.
pub fn recorded_address(scenario: &Scenario) -> Option<String> {
    use crate::screen::{inspect, Screen};
    scenario.screen_ids().into_iter().find_map(|id| {
        let screen = scenario.screen_by_id(id)?;
        match inspect(&screen.dump).ok()? {
            Screen::SkuSheet(s) => s.address_text,
            Screen::ConfirmOrder(c) => c.address_text,
            _ => None,
        }
    })
}

/// The simulated phone's configuration for `scenario`; the phone appends its replay log
/// to `log` as it goes (`--replay-log FILE`).
pub fn sim_config(scenario: Scenario, log: Option<PathBuf>) -> SimConfig {
    let mut c = SimConfig::replay(scenario);
    c.replay_log = log;
    c
}

/// One line of the replay log as JSON (the format of `--replay-log`).
pub fn entry_json(e: &ReplayLogEntry) -> Value {
    serde_json::to_value(e).unwrap_or(Value::Null)
}

fn off_script(v: &Value) -> bool {
    v.get("off_script").and_then(Value::as_bool) == Some(true)
}

/// The off-script actions of one task (or of the whole run).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OffScript {
    pub count: usize,
    /// The first one, as its replay log line (screen, action, point or link).
    pub first: Option<Value>,
}

impl OffScript {
    fn of(lines: &[Value]) -> OffScript {
        let mut off = lines.iter().filter(|v| off_script(v));
        let first = off.next().cloned();
        OffScript {
            count: first.as_ref().map_or(0, |_| 1 + off.count()),
            first,
        }
    }

    /// "tap at [x,y] on s03" — the first off-script action in words.
    pub fn first_words(&self) -> Option<String> {
        let v = self.first.as_ref()?;
        let action = v.get("action").and_then(Value::as_str).unwrap_or("action");
        let screen = v.get("screen").and_then(Value::as_str).unwrap_or("?");
        let what = [
            v.get("at").map(|a| format!(" at {a}")),
            v.get("swipe").map(|a| format!(" {a}")),
            v.get("url")
                .and_then(Value::as_str)
                .map(|u| format!(" {u}")),
            v.get("keycode").map(|k| format!(" keycode {k}")),
        ]
        .into_iter()
        .flatten()
        .collect::<String>();
        Some(format!("{action}{what} on {screen}"))
    }
}

/// The replay log split by task: `marks` are (task id, log length when its report
/// came), in report order. Returns each task's off-script actions (a task reported more
/// than once sums its stretches) and those outside every task (after the last report).
pub fn attribute(
    log: &[Value],
    marks: &[(String, usize)],
) -> (std::collections::BTreeMap<String, OffScript>, OffScript) {
    let mut per_task: std::collections::BTreeMap<String, Vec<Value>> = Default::default();
    let mut from = 0;
    for (task, until) in marks {
        let until = (*until).clamp(from, log.len());
        per_task
            .entry(task.clone())
            .or_default()
            .extend(log[from..until].iter().cloned());
        from = until;
    }
    let rest = OffScript::of(&log[from.min(log.len())..]);
    (
        per_task
            .into_iter()
            .map(|(k, v)| (k, OffScript::of(&v)))
            .collect(),
        rest,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn off_script_lines_belong_to_the_task_whose_report_closes_them() {
        let log = vec![
            json!({"seq": 1, "action": "open_url", "screen": "s00", "to": "s01"}),
            json!({"seq": 2, "action": "tap", "screen": "s01", "at": [1, 2], "off_script": true}),
            json!({"seq": 3, "action": "dump", "screen": "s01", "to": "s01"}),
            json!({"seq": 4, "action": "tap", "screen": "s01", "to": "s02"}),
            json!({"seq": 5, "action": "back", "screen": "s02", "keycode": 4, "off_script": true}),
            json!({"seq": 6, "action": "key", "screen": "s02", "keycode": 3, "off_script": true}),
        ];
        let marks = vec![
            ("a".to_string(), 3),
            ("b".to_string(), 4),
            ("a".to_string(), 5),
        ];
        let (tasks, rest) = attribute(&log, &marks);
        assert_eq!(tasks["a"].count, 2);
        assert_eq!(tasks["a"].first.as_ref().unwrap()["seq"], 2);
        assert_eq!(
            tasks["a"].first_words().as_deref(),
            Some("tap at [1,2] on s01")
        );
        assert_eq!(tasks["b"], OffScript::default());
        assert_eq!(rest.count, 1);
        assert_eq!(rest.first_words().as_deref(), Some("key keycode 3 on s02"));
        // Marks beyond the log (it cannot shrink, but nothing panics).
        let (tasks, rest) = attribute(&log[..1], &[("a".into(), 9)]);
        assert_eq!(tasks["a"].count, 0);
        assert_eq!(rest.count, 0);
    }
}
