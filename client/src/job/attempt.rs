//! What every job shares: the executor's settings ([`FlowExecutorConfig`]), the
//! attempt's artifact directory, the per-job [`TaskReport`], and the §7 failure request
//! with its artifact references and last actions ([`failure_request`]).

use std::path::PathBuf;
use std::sync::Arc;

use chrono::Utc;
use cmautobuy_contract::time::format_utc;
use cmautobuy_contract::{FailureError, FailureRequest, FailureStatus};
use serde::Serialize;
use serde_json::{Map, Value};

use super::driver::{DriveLimits, DriveStats, TraceEntry};
use crate::artifacts::{AttemptArtifacts, Retention};
use crate::executor::{Job, Outcome};
use crate::flow::collect::CollectLimits;
use crate::flow::FlowFailure;

/// Settings of the executor.
#[derive(Clone, Debug)]
pub struct FlowExecutorConfig {
    /// Root of the artifact directories.
    pub artifacts_root: PathBuf,
    pub retention: Retention,
    pub collect: CollectLimits,
    pub drive: DriveLimits,
    /// The phone's delivery-address fingerprint (config `expected_address`; empty: not
    /// checked): purchases hold the confirming screen's address against it.
    pub expected_address: Vec<String>,
    /// The new-version gate (config `pdd_version_gate`): a live purchase runs only when
    /// the version read for its attempt is proven on this phone.
    pub pdd_version_gate: bool,
    /// The worker's progress board: the task in hand and its current step,
    /// for the console and the terminal. `None`: not shown anywhere.
    pub progress: Option<crate::progress::ProgressHandle>,
}

impl FlowExecutorConfig {
    pub fn new(artifacts_root: PathBuf) -> Self {
        FlowExecutorConfig {
            artifacts_root,
            retention: Retention::default(),
            collect: CollectLimits::default(),
            drive: DriveLimits::default(),
            expected_address: Vec::new(),
            pdd_version_gate: false,
            progress: None,
        }
    }
}

/// What one job did (for progress lines, summaries and benchmarks).
#[derive(Clone, Debug, Serialize)]
pub struct TaskReport {
    pub task_id: String,
    pub task_type: String,
    pub attempt_id: String,
    /// `succeeded` or `{status}:{code}`.
    pub outcome: String,
    pub stats: DriveStats,
    /// Device time spent during the job (ms), when the source can tell.
    pub device_ms: Option<u64>,
    pub artifact_ref: Option<String>,
    /// A failure's reason and next step for the operator ([`operator_text`]).
    pub operator: Option<crate::reasons::OperatorText>,
}

/// Called with every finished job (progress lines).
pub type ReportHook = Arc<dyn Fn(&TaskReport) + Send + Sync>;

/// A failure's operator text (the one it carries, else the table's); `None` for a result.
pub fn operator_text(o: &Outcome) -> Option<crate::reasons::OperatorText> {
    match o {
        Outcome::Result(_) => None,
        Outcome::Failure(f) => Some(crate::reasons::of_failure(
            f.error.code.as_str(),
            &serde_json::Value::Object(f.diagnostics.clone()),
        )),
    }
}

/// `succeeded` or `{status}:{code}` (progress lines, summaries).
pub fn label(o: &Outcome) -> String {
    match o {
        Outcome::Result(_) => "succeeded".into(),
        Outcome::Failure(f) => format!("{}:{}", f.status.as_str(), f.error.code),
    }
}

/// The attempt's artifact directory (evidence is best effort: `None` when it cannot be
/// created, and the job still runs).
pub fn artifacts_for(cfg: &FlowExecutorConfig, job: &Job) -> Option<AttemptArtifacts> {
    match AttemptArtifacts::create(
        &cfg.artifacts_root,
        &job.task.remote_task_id,
        &job.run.attempt_id,
    ) {
        Ok(a) => Some(a),
        Err(e) => {
            tracing::warn!(error = %e, "no artifact directory for this attempt");
            None
        }
    }
}

/// A §7 failure for `job` with the artifact references.
pub fn failure_request(
    job: &Job,
    f: &FlowFailure,
    arts: Option<&AttemptArtifacts>,
    trace: Option<&[TraceEntry]>,
) -> FailureRequest {
    let mut diagnostics = f.diagnostics.clone();
    // The reason and next step for the operator, zh and en (the code's default text when
    // the flow said nothing more specific).
    diagnostics.insert("operator".into(), f.operator_text().to_value());
    if let Some(a) = arts {
        diagnostics.insert(
            "artifact_ids".into(),
            Value::Array(a.ids().into_iter().map(Value::String).collect()),
        );
        diagnostics.insert(
            "artifact_ref".into(),
            Value::String(a.reference(&job.client_id)),
        );
    }
    if let Some(t) = trace {
        // The last few actions (kinds, steps, screen kinds): no dump text.
        let tail: Vec<Value> = t
            .iter()
            .rev()
            .take(8)
            .rev()
            .map(|e| {
                Value::String(format!(
                    "{} {} {}",
                    e.kind,
                    e.step.as_deref().unwrap_or("-"),
                    e.detail.chars().take(60).collect::<String>()
                ))
            })
            .collect();
        diagnostics.insert("last_actions".into(), Value::Array(tail));
    }
    FailureRequest {
        task_version: job.task.version,
        attempt_id: job.run.attempt_id.clone(),
        status: f.status,
        error: FailureError {
            code: f.code.as_str().to_string(),
            message: f.message.chars().take(500).collect(),
            retryable: matches!(f.status, FailureStatus::RetryWait),
            step: Some(f.step.as_str().to_string()),
        },
        diagnostics,
        reported_at: format_utc(Utc::now()),
        extra: Map::new(),
    }
}

/// Reads the installed PDD's version for one job (one shell round trip; `None` when the
/// phone does not answer).
pub fn read_pdd_version<S: super::source::DeviceSource + ?Sized>(source: &S) -> Option<String> {
    try_read_pdd_version(source).ok().flatten()
}

/// As [`read_pdd_version`]: `Err` when the phone did not answer (a device failure, not
/// an unreadable version).
pub fn try_read_pdd_version<S: super::source::DeviceSource + ?Sized>(
    source: &S,
) -> Result<Option<String>, crate::device::DeviceError> {
    let d = source.device()?;
    crate::device::doctor::try_read_pdd_version(&*d)
}

/// Puts the PDD version of the job into its report and its artifact directory: a
/// failure's `diagnostics.pdd_version`, a result's top-level `diagnostics.pdd_version`
/// (an unknown field, which the contract lets the Admin ignore), and the attempt's
/// [`crate::artifacts::DEVICE_SIDECAR`]. Nothing is added when the version is unknown
/// except the sidecar's `null`.
pub fn stamp_pdd_version(
    cfg: &FlowExecutorConfig,
    job: &Job,
    outcome: &mut Outcome,
    pdd_version: Option<&str>,
) {
    if let Some(mut a) = artifacts_for(cfg, job) {
        a.write_device(pdd_version);
    }
    let Some(v) = pdd_version else { return };
    let v = Value::String(v.chars().take(64).collect());
    match outcome {
        Outcome::Failure(f) => {
            f.diagnostics.insert("pdd_version".into(), v);
        }
        Outcome::Result(r) => {
            let d = r
                .extra
                .entry("diagnostics")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(m) = d {
                m.insert("pdd_version".into(), v);
            }
        }
    }
}
