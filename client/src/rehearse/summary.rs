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
    /// A failure's reason and next step for the operator (Chinese and English).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<crate::reasons::OperatorText>,
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
    /// `"u2"` or `"uiautomator"`: how the client read the screen and sent input — at the end of the batch (a job that fell back says `uiautomator`).
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
        let (outcome, combinations, reason) = match &last {
            Some(r) if r.get("kind").and_then(Value::as_str) == Some("result") => (
                "succeeded".to_string(),
                combinations_of(r.get("body")),
                None,
            ),
            Some(r) => {
                let b = r.get("body").cloned().unwrap_or(Value::Null);
                let status = b.get("status").and_then(Value::as_str).unwrap_or("?");
                let code = b
                    .pointer("/error/code")
                    .and_then(Value::as_str)
                    .unwrap_or("?");
                let reason = crate::reasons::of_failure(code, &b["diagnostics"]);
                (format!("{status}:{code}"), None, Some(reason))
            }
            None => (NOT_FINISHED.to_string(), None, None),
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
            reason,
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

/// A task type in Chinese, then English.
fn type_words(t: &str) -> String {
    match t {
        "collect" => "采集 collect".into(),
        "purchase" => "采购 purchase".into(),
        other => other.into(),
    }
}

/// An outcome (`succeeded`, `{status}:{code}`, `missing`) in Chinese, then English.
fn outcome_words(outcome: &str) -> String {
    let (status, code) = outcome.split_once(':').unwrap_or((outcome, ""));
    let zh = match status {
        "succeeded" => "成功",
        "failed" => "失败",
        "manual_review" => "需人工复核",
        "retry_wait" => "稍后重试",
        "cancelled" => "已取消",
        s if s == NOT_FINISHED => "未完成",
        _ => "",
    };
    match (zh, code) {
        ("", _) => outcome.to_string(),
        (zh, "") => format!("{zh} {status}"),
        (zh, code) => format!("{zh} {status} [{code}]"),
    }
}

/// A task's progress line: `[n/N] 采集 collect ID → 成功 succeeded`; a failure adds its
/// reason and next step, Chinese first; `bench` adds the device work.
pub fn progress_line(n: usize, total: usize, r: &TaskReport, bench: bool) -> String {
    let mut line = format!(
        "[{n}/{total}] {} {} → {}",
        type_words(&r.task_type),
        r.task_id,
        outcome_words(&r.outcome)
    );
    if let Some(t) = &r.operator {
        line.push_str(&format!(
            "：{}；下一步：{}（{} — {}）",
            t.zh, t.next_zh, t.en, t.next_en
        ));
    }
    if bench {
        line.push_str(&format!(
            " (dumps {}, taps {}, {} ms)",
            r.stats.dumps, r.stats.taps, r.stats.wall_ms
        ));
    }
    line
}

/// The human summary: each task's outcome against the batch's expectation (a failure
/// with its reason), the counts, where the artifacts are and the verdict — Chinese first;
/// `bench` adds the device work and the benchmark figures.
pub fn print_summary(s: &Summary, bench: bool) {
    println!();
    println!(
        "演练 rehearse: Admin {} · 手机 device {} · profile {} · device backend: {}{}",
        s.admin,
        s.device,
        s.profile,
        s.device_backend,
        s.device_backend_fallback
            .as_ref()
            .map(|r| format!(" (u2 fell back: {r})"))
            .unwrap_or_default()
    );
    for l in &s.tasks {
        let off = l.off_script.unwrap_or(0);
        let expected = if l.outcome == l.expected {
            String::new()
        } else {
            format!(" — 应为 expected {}", outcome_words(&l.expected))
        };
        let work = if bench {
            format!(
                " · dumps {} taps {}{}",
                l.dumps,
                l.taps,
                l.wall_over_device
                    .map(|r| format!(" wall/device {r:.2}"))
                    .unwrap_or_default()
            )
        } else {
            String::new()
        };
        println!(
            "  {} {} {} → {}{expected}{work}{}",
            if l.as_expected && off == 0 {
                "ok "
            } else {
                "BAD"
            },
            type_words(&l.task_type),
            l.id,
            outcome_words(&l.outcome),
            match (&l.off_script, &l.first_off_script) {
                (Some(n), Some(first)) if *n > 0 => format!(" OFF-SCRIPT {n} (first: {first})"),
                (Some(_), _) => " on script".to_string(),
                _ => String::new(),
            }
        );
        if let Some(t) = &l.reason {
            println!("        {} — 下一步：{}", t.zh, t.next_zh);
            println!("        {} — next: {}", t.en, t.next_en);
        }
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
    println!("结果 outcomes: {}", counts.join(" "));
    if bench {
        if let Some(ms) = s.simulated_device_ms {
            println!("simulated device time: {ms} ms");
        }
        if let Some(n) = s.simulated_dump_failures.filter(|n| *n > 0) {
            println!("simulated failed dumps: {n}");
        }
        println!("benchmarks: {}", s.benchmarks);
    }
    println!("证据 artifacts: {}", s.artifacts_dir);
    if let Some(t) = &s.timed_out {
        let finished = s.tasks.len() - t.unfinished.len();
        println!(
            "超时 TIMED OUT after {} s: {finished} of {} tasks finished; not finished: {} (artifacts kept in {})",
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
        println!(
            "有操作偏离了录制脚本 / SOME ACTIONS WENT OFF-SCRIPT (the replay log shows where)"
        );
    }
    if s.timed_out.is_some() {
        println!("演练超时 / THE REHEARSAL TIMED OUT");
    } else if s.tasks.iter().any(|l| !l.as_expected) {
        println!("有任务的结果与预期不同 / SOME TASKS DID NOT END AS EXPECTED");
    } else if !s.ok {
        println!("每个任务都如预期结束，但回放偏离了脚本 / every task ended as expected, but the replay went off-script");
    } else if succeeded == total {
        println!("全部任务成功 / every task succeeded ({succeeded} of {total})");
    } else {
        println!(
            "每个任务都如预期结束 / every task ended as expected ({succeeded} of {total} succeeded, \
             the rest with their expected codes)"
        );
    }
}
