//! A rehearsal's summary: a line per task (its outcome at the Admin against the batch's
//! expectation, with the device work the executor reported), outcome counts and the
//! benchmark figures; printed for people or serialised as one JSON object.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::batch::BatchTask;
use crate::job::attempt::TaskReport;

/// One line of the summary.
#[derive(Clone, Debug, Serialize)]
pub struct TaskLine {
    pub id: String,
    #[serde(rename = "type")]
    pub task_type: String,
    /// As stored at the Admin: `succeeded` or `{status}:{code}`; `missing` when the
    /// Admin has nothing.
    pub outcome: String,
    pub expected: String,
    pub as_expected: bool,
    pub dumps: u32,
    pub taps: u32,
    pub swipes: u32,
    pub screenshots: u32,
    /// `dumpsys activity top` reads of the goods id (in `round_trips`).
    pub goods_id_reads: u32,
    pub round_trips: u32,
    /// Collect: the option combinations read (colours, × styles …): the C of the
    /// "≤ C + 4 dumps" goal.
    pub combinations: Option<usize>,
    pub wall_ms: u64,
    pub device_ms: Option<u64>,
    /// wall_ms ÷ device_ms (meaningful under `--profile realistic`).
    pub wall_over_device: Option<f64>,
    pub artifact_ref: Option<String>,
    /// With `--replay`: the actions of this task that went off-script …
    #[serde(skip_serializing_if = "Option::is_none")]
    pub off_script: Option<usize>,
    /// … and the first of them (its replay log line).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_off_script: Option<Value>,
}

/// `--replay`: the scenario, how many actions the phone logged, the off-script ones.
#[derive(Clone, Debug, Serialize)]
pub struct ReplaySummary {
    pub scenario: String,
    /// Lines of the replay log (dumps included).
    pub actions: usize,
    /// Off-script actions of the whole run (the tasks' and any outside them).
    pub off_script: usize,
    /// Those after the last task's report.
    pub off_script_outside_tasks: super::replay::OffScript,
    /// Where the log was written (`--replay-log`).
    pub log: Option<String>,
}

/// The whole summary (`--json` prints it as one object).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub ok: bool,
    pub profile: String,
    pub admin: String,
    pub device: String,
    pub tasks: Vec<TaskLine>,
    pub counts: BTreeMap<String, usize>,
    pub simulated_device_ms: Option<u64>,
    /// The simulated phone's failed dumps (`could not get idle state`, …), all paths.
    pub simulated_dump_failures: Option<u64>,
    pub benchmarks: Value,
    pub artifacts_dir: String,
    /// With `--replay`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplaySummary>,
    /// `"u2"` or `"uiautomator"`: how the client read the screen and sent input (issue
    /// 15) — at the end of the batch (a job that fell back says `uiautomator`).
    pub device_backend: String,
    /// Why the last job fell back from the u2 server to `uiautomator dump`, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_backend_fallback: Option<String>,
    /// The batch was not done by `--timeout`: the rehearsal stopped (the task in hand
    /// finished first), and this is what did not finish.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timed_out: Option<TimedOut>,
}

/// A rehearsal stopped at its `--timeout`.
#[derive(Clone, Debug, Serialize)]
pub struct TimedOut {
    pub after_secs: u64,
    /// The tasks that have no outcome at the Admin (their `outcome` is
    /// [`NOT_FINISHED`]).
    pub unfinished: Vec<String>,
}

/// The outcome of a task the Admin has no result for.
pub const NOT_FINISHED: &str = "missing";

impl TaskLine {
    /// The line of task `id` (stored at the Admin as `admin_task`, the operator API's
    /// answer) that the batch expected to end as `task.expect`; `report` is what the
    /// executor said about its last attempt, if it ran.
    pub fn new(
        id: &str,
        task: &BatchTask,
        admin_task: &Value,
        report: Option<&TaskReport>,
    ) -> Self {
        let last = admin_task
            .get("results")
            .and_then(Value::as_array)
            .and_then(|a| a.last())
            .cloned();
        let (outcome, combinations) = match &last {
            Some(r) if r.get("kind").and_then(Value::as_str) == Some("result") => {
                ("succeeded".to_string(), combinations_of(r.get("body")))
            }
            Some(r) => {
                let b = r.get("body").cloned().unwrap_or(Value::Null);
                let status = b.get("status").and_then(Value::as_str).unwrap_or("?");
                let code = b
                    .pointer("/error/code")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                (format!("{status}:{code}"), None)
            }
            None => (NOT_FINISHED.to_string(), None),
        };
        let stats = report.map(|r| r.stats.clone()).unwrap_or_default();
        let device_ms = report.and_then(|r| r.device_ms);
        let ratio = device_ms
            .filter(|d| *d > 0)
            .map(|d| stats.wall_ms as f64 / d as f64);
        TaskLine {
            id: id.to_string(),
            task_type: task.task_type.clone(),
            as_expected: outcome == task.expect,
            outcome,
            expected: task.expect.clone(),
            dumps: stats.dumps,
            taps: stats.taps,
            swipes: stats.swipes,
            screenshots: stats.screenshots,
            goods_id_reads: stats.goods_id_reads,
            round_trips: stats.round_trips(),
            combinations,
            wall_ms: stats.wall_ms,
            device_ms,
            wall_over_device: ratio,
            artifact_ref: report.and_then(|r| r.artifact_ref.clone()),
            off_script: None,
            first_off_script: None,
        }
    }

    /// With `--replay`: this task's off-script actions.
    pub fn set_off_script(&mut self, off: super::replay::OffScript) {
        self.off_script = Some(off.count);
        self.first_off_script = off.first;
    }
}

/// Outcome counts (`succeeded`, `failed:GOODS_MISMATCH`, …) of `lines`.
pub fn counts(lines: &[TaskLine]) -> BTreeMap<String, usize> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for l in lines {
        *counts.entry(l.outcome.clone()).or_default() += 1;
    }
    counts
}

/// The benchmark figures of the successful collects: dumps against the "≤ C + 4" goal,
/// wall time against device time (meaningful only with the realistic profile).
pub fn benchmarks(lines: &[TaskLine], realistic: bool) -> Value {
    let collect_ok: Vec<&TaskLine> = lines
        .iter()
        .filter(|l| l.task_type == "collect" && l.outcome == "succeeded")
        .collect();
    let over: Vec<i64> = collect_ok
        .iter()
        .filter_map(|l| l.combinations.map(|c| i64::from(l.dumps) - c as i64))
        .collect();
    let ratios: Vec<f64> = collect_ok
        .iter()
        .filter_map(|l| l.wall_over_device)
        .collect();
    json!({
        "collect_dumps_minus_combinations_max": over.iter().max(),
        "collect_dumps_goal": "dumps <= C + 4 (C = colour combinations read)",
        "collect_dumps_goal_met": over.iter().all(|d| *d <= 4),
        "wall_over_device_max": ratios.iter().cloned().fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x)))),
        "wall_over_device_mean": if ratios.is_empty() { None } else { Some(ratios.iter().sum::<f64>() / ratios.len() as f64) },
        "wall_over_device_goal": 1.25,
        "wall_over_device_meaningful": realistic,
    })
}

/// The number of option combinations a collect result read: distinct non-size option
/// tuples of its skus.
fn combinations_of(body: Option<&Value>) -> Option<usize> {
    let skus = body?.pointer("/pdd_data/skus")?.as_array()?;
    let mut seen = std::collections::BTreeSet::new();
    for s in skus {
        let opts = s.get("options")?.as_object()?;
        let key: Vec<(String, String)> = opts
            .iter()
            .filter(|(k, _)| k.as_str() != "size" || opts.len() == 1)
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
            .collect();
        seen.insert(key);
    }
    Some(seen.len())
}

/// The human summary.
pub fn print_summary(s: &Summary) {
    println!();
    println!(
        "rehearse: admin {} · device {} · profile {}",
        s.admin, s.device, s.profile
    );
    println!(
        "device backend: {}{}",
        s.device_backend,
        s.device_backend_fallback
            .as_ref()
            .map(|r| format!(" (u2 fell back: {r})"))
            .unwrap_or_default()
    );
    for l in &s.tasks {
        let off = l.off_script.unwrap_or(0);
        println!(
            "  {} {:<36} {:<34} expected {:<34} dumps {:>2} taps {:>2}{}{}",
            if l.as_expected && off == 0 {
                "ok "
            } else {
                "BAD"
            },
            l.id,
            l.outcome,
            l.expected,
            l.dumps,
            l.taps,
            l.wall_over_device
                .map(|r| format!(" wall/device {r:.2}"))
                .unwrap_or_default(),
            match (&l.off_script, &l.first_off_script) {
                (Some(n), Some(first)) if *n > 0 => format!(" OFF-SCRIPT {n} (first: {first})"),
                (Some(_), _) => " on script".to_string(),
                _ => String::new(),
            }
        );
    }
    if let Some(r) = &s.replay {
        println!(
            "replay: {} · {} actions logged · {} off-script{}",
            r.scenario,
            r.actions,
            r.off_script,
            r.log
                .as_ref()
                .map(|l| format!(" · log {l}"))
                .unwrap_or_default()
        );
        if let Some(w) = r.off_script_outside_tasks.first_words() {
            println!(
                "  off-script after the last task: {} (first: {w})",
                r.off_script_outside_tasks.count
            );
        }
    }
    let counts: Vec<String> = s.counts.iter().map(|(k, n)| format!("{k}={n}")).collect();
    println!("outcomes: {}", counts.join(" "));
    if let Some(ms) = s.simulated_device_ms {
        println!("simulated device time: {ms} ms");
    }
    if let Some(n) = s.simulated_dump_failures.filter(|n| *n > 0) {
        println!("simulated failed dumps: {n}");
    }
    println!("benchmarks: {}", s.benchmarks);
    println!("artifacts: {}", s.artifacts_dir);
    if let Some(t) = &s.timed_out {
        let finished = s.tasks.len() - t.unfinished.len();
        println!(
            "TIMED OUT after {} s: {finished} of {} tasks finished; not finished: {} (artifacts kept in {})",
            t.after_secs,
            s.tasks.len(),
            if t.unfinished.is_empty() {
                "none".to_string()
            } else {
                t.unfinished.join(", ")
            },
            s.artifacts_dir
        );
    }
    let succeeded = s.tasks.iter().filter(|l| l.outcome == "succeeded").count();
    let total = s.tasks.len();
    if s.replay.as_ref().is_some_and(|r| r.off_script > 0) {
        println!("SOME ACTIONS WENT OFF-SCRIPT (the replay log shows where)");
    }
    if s.timed_out.is_some() {
        println!("THE REHEARSAL TIMED OUT");
    } else if s.tasks.iter().any(|l| !l.as_expected) {
        println!("SOME TASKS DID NOT END AS EXPECTED");
    } else if !s.ok {
        println!("every task ended as expected, but the replay went off-script");
    } else if succeeded == total {
        println!("every task succeeded ({succeeded} of {total})");
    } else {
        println!(
            "every task ended as expected ({succeeded} of {total} succeeded, the rest with \
             their expected codes)"
        );
    }
}
