//! [`FlowExecutor`]: the [`Executor`] that runs device flows for claimed tasks.
//!
//! For each job: open the attempt's artifact directory (pruning old attempts per the
//! retention setting), get a device from the [`DeviceSource`], build the flow for the
//! task type, [`drive`] it on a blocking thread, and turn its outcome into a §6 result
//! or a §7 failure carrying `diagnostics.artifact_ids` and
//! `diagnostics.artifact_ref` (`{client_id}:artifacts/{task}/{attempt}/`). Every job
//! also leaves a [`TaskReport`] (round trips, wall time, device time when the source can
//! tell) for `rehearse` and the run log.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use chrono::Utc;
use cmautobuy_contract::time::format_utc;
use cmautobuy_contract::{
    CollectPayload, FailureCode, FailureError, FailureRequest, FailureStatus, FlowStep,
    ResultRequest, ResultType,
};
use serde::Serialize;
use serde_json::{Map, Value};

use super::collect::{CollectFlow, CollectLimits, CollectTask};
use super::driver::{
    drive, DeviceFailure, DriveLimits, DriveStats, FlowDevice, NoEffects, SystemClock,
};
use super::{FlowFailure, FlowOutcome};
use crate::artifacts::{self, AttemptArtifacts, Retention};
use crate::executor::{Executor, Job, Outcome, Readiness};

/// Where the executor gets a phone from.
pub trait DeviceSource: Send + Sync + 'static {
    /// A device for one job (a fresh or a reused connection).
    fn device(&self) -> Result<Box<dyn FlowDevice>, DeviceFailure>;
    /// Whether a device is configured (cheap; no round trip).
    fn configured(&self) -> bool {
        true
    }
    /// Simulated device time so far, ms, when the device can tell (the simulated phone).
    fn device_time_ms(&self) -> Option<u64> {
        None
    }
}

/// Settings of the executor.
#[derive(Clone, Debug)]
pub struct FlowExecutorConfig {
    /// Root of the artifact directories.
    pub artifacts_root: PathBuf,
    pub retention: Retention,
    pub collect: CollectLimits,
    pub drive: DriveLimits,
}

impl FlowExecutorConfig {
    pub fn new(artifacts_root: PathBuf) -> Self {
        FlowExecutorConfig {
            artifacts_root,
            retention: Retention::default(),
            collect: CollectLimits::default(),
            drive: DriveLimits::default(),
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
}

/// Called with every finished job (progress lines).
pub type ReportHook = Arc<dyn Fn(&TaskReport) + Send + Sync>;

/// Runs collect tasks on a device (purchase arrives with issue 7).
pub struct FlowExecutor<S: DeviceSource> {
    source: Arc<S>,
    cfg: FlowExecutorConfig,
    reports: Arc<Mutex<Vec<TaskReport>>>,
    hook: Option<ReportHook>,
    /// Purchases (issue 7): store and Admin behind the purchase flow's effects; `None`
    /// = this executor runs collect tasks only.
    purchase: Option<Arc<dyn super::purchase_job::PurchaseBackend>>,
}

impl<S: DeviceSource> FlowExecutor<S> {
    pub fn new(source: S, cfg: FlowExecutorConfig) -> Self {
        FlowExecutor {
            source: Arc::new(source),
            cfg,
            reports: Arc::new(Mutex::new(Vec::new())),
            hook: None,
            purchase: None,
        }
    }

    /// Runs purchase tasks too (dry run; live when the backend allows it), issue 7.
    pub fn with_purchase(mut self, backend: Arc<dyn super::purchase_job::PurchaseBackend>) -> Self {
        self.purchase = Some(backend);
        self
    }

    pub fn with_hook(mut self, hook: ReportHook) -> Self {
        self.hook = Some(hook);
        self
    }

    /// Every job's report so far.
    pub fn reports(&self) -> Arc<Mutex<Vec<TaskReport>>> {
        self.reports.clone()
    }
}

impl<S: DeviceSource> Executor for FlowExecutor<S> {
    fn readiness(&self) -> Readiness {
        // Collect needs a device; purchases need the purchase flow (issue 7).
        Readiness {
            device_ready: self.source.configured(),
            purchase_adapter_ready: self.purchase.is_some(),
            live_adapter_ready: self.purchase.as_ref().is_some_and(|b| b.live_enabled()),
        }
    }

    async fn execute(&self, job: Job) -> Outcome {
        let source = self.source.clone();
        let cfg = self.cfg.clone();
        let fallback = job.clone();
        let purchase = self.purchase.clone();
        let joined = tokio::task::spawn_blocking(move || match &purchase {
            Some(b) if job.task.task_type == "purchase" => {
                super::purchase_job::run_job(&*source, &cfg, &**b, &job)
            }
            _ => run_job(&*source, &cfg, &job),
        })
        .await;
        let (outcome, report) = match joined {
            Ok(r) => r,
            Err(e) => {
                // A panic in a flow is a bug; the task must still be reported.
                tracing::error!(error = %e, "flow job panicked");
                let mut f = FlowFailure::retry(
                    FailureCode::PageNotRecognized,
                    FlowStep::OpenGoods,
                    "internal error while running the flow",
                );
                // After an irreversible mark nothing unproven may be retried (issue 7).
                let marked = self.purchase.as_ref().is_some_and(|b| {
                    b.store()
                        .run(fallback.run.id)
                        .map_or(true, |r| r.irreversible_action_at.is_some())
                });
                if marked {
                    f.status = cmautobuy_contract::FailureStatus::ManualReview;
                    f.code = FailureCode::InterruptedAfterSubmit;
                }
                let out = Outcome::Failure(Box::new(failure_request(&fallback, &f, None, None)));
                let rep = TaskReport {
                    task_id: fallback.task.remote_task_id.clone(),
                    task_type: fallback.task.task_type.clone(),
                    attempt_id: fallback.run.attempt_id.clone(),
                    outcome: label(&out),
                    stats: DriveStats::default(),
                    device_ms: None,
                    artifact_ref: None,
                };
                (out, rep)
            }
        };
        tracing::info!(task_id = %report.task_id, outcome = %report.outcome, dumps = report.stats.dumps, taps = report.stats.taps, wall_ms = report.stats.wall_ms, "task finished on the device");
        if let Some(h) = &self.hook {
            h(&report);
        }
        self.reports
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(report);
        outcome
    }

    async fn recover_marked(&self, job: Job) -> Option<Outcome> {
        let backend = self.purchase.clone()?;
        let source = self.source.clone();
        let cfg = self.cfg.clone();
        let joined = tokio::task::spawn_blocking(move || {
            super::purchase_job::recover_run(&*source, &cfg, &*backend, &job)
        })
        .await;
        match joined {
            Ok((outcome, report)) => {
                tracing::info!(task_id = %report.task_id, outcome = %report.outcome, "interrupted purchase reconciled");
                if let Some(h) = &self.hook {
                    h(&report);
                }
                self.reports
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(report);
                Some(outcome)
            }
            // The runner reports manual_review INTERRUPTED_AFTER_SUBMIT itself.
            Err(e) => {
                tracing::error!(error = %e, "reconciliation panicked");
                None
            }
        }
    }
}

fn label(o: &Outcome) -> String {
    match o {
        Outcome::Result(_) => "succeeded".into(),
        Outcome::Failure(f) => format!("{}:{}", f.status.as_str(), f.error.code),
    }
}

/// One job, synchronously (on a blocking thread).
pub fn run_job<S: DeviceSource + ?Sized>(
    source: &S,
    cfg: &FlowExecutorConfig,
    job: &Job,
) -> (Outcome, TaskReport) {
    let remote = &job.task.remote_task_id;
    let attempt = &job.run.attempt_id;
    let mut arts = match AttemptArtifacts::create(&cfg.artifacts_root, remote, attempt) {
        Ok(a) => Some(a),
        Err(e) => {
            // Evidence is best effort: the job still runs.
            tracing::warn!(error = %e, "no artifact directory for this attempt");
            None
        }
    };
    let pruned = artifacts::prune(
        &cfg.artifacts_root,
        cfg.retention,
        SystemTime::now(),
        arts.as_ref().map(|a| a.dir()),
    );
    if pruned > 0 {
        tracing::info!(pruned, "old artifact attempts removed (retention)");
    }
    let artifact_ref = arts.as_ref().map(|a| a.reference(&job.client_id));
    let report = |outcome: &Outcome, stats: DriveStats, device_ms: Option<u64>| TaskReport {
        task_id: remote.clone(),
        task_type: job.task.task_type.clone(),
        attempt_id: attempt.clone(),
        outcome: label(outcome),
        stats,
        device_ms,
        artifact_ref: artifact_ref.clone(),
    };

    let fail_now = |f: FlowFailure, arts: &Option<AttemptArtifacts>| {
        let out = Outcome::Failure(Box::new(failure_request(job, &f, arts.as_ref(), None)));
        let r = report(&out, DriveStats::default(), None);
        (out, r)
    };

    if job.task.task_type != "collect" {
        return fail_now(
            FlowFailure::failed(
                FailureCode::UnsupportedTask,
                FlowStep::OpenGoods,
                "this client build runs collect tasks only (purchase arrives with issue 7)",
            ),
            &arts,
        );
    }
    let payload: CollectPayload = match serde_json::from_str(&job.task.payload) {
        Ok(p) => p,
        Err(e) => {
            return fail_now(
                FlowFailure::failed(
                    FailureCode::InvalidTaskPayload,
                    FlowStep::OpenGoods,
                    format!("collect payload unreadable: {e}"),
                ),
                &arts,
            )
        }
    };
    let mut flow = match CollectFlow::new(
        CollectTask {
            goods_id: payload.goods_id.clone(),
            expected_title: payload.expected_title.clone(),
        },
        cfg.collect,
    ) {
        Ok(f) => f,
        Err(f) => return fail_now(*f, &arts),
    };
    let device = match source.device() {
        Ok(d) => d,
        Err(e) => {
            return fail_now(
                FlowFailure::retry(FailureCode::DeviceOffline, FlowStep::OpenGoods, e.message),
                &arts,
            )
        }
    };
    // Defence in depth (issue 7): collect never taps a pay button or 提交订单.
    let mut device = super::guard::GuardedDevice::new(device, false);
    let t0 = source.device_time_ms();
    let drive_report = drive(
        &mut flow,
        &mut device,
        &mut NoEffects,
        &mut SystemClock,
        arts.as_mut(),
        cfg.drive,
    );
    let device_ms = match (t0, source.device_time_ms()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let outcome = match drive_report.outcome {
        FlowOutcome::Collected(data) => Outcome::Result(Box::new(ResultRequest {
            task_version: job.task.version,
            attempt_id: attempt.clone(),
            result_type: ResultType::Collect,
            completed_at: format_utc(Utc::now()),
            pdd_data: Some(*data),
            purchase: None,
            extra: Map::new(),
        })),
        FlowOutcome::Purchased(_) => Outcome::Failure(Box::new(failure_request(
            job,
            &FlowFailure::manual(
                FailureCode::PageNotRecognized,
                FlowStep::Report,
                "a collect task produced a purchase result",
            ),
            arts.as_ref(),
            None,
        ))),
        FlowOutcome::Failed(f) => Outcome::Failure(Box::new(failure_request(
            job,
            &f,
            arts.as_ref(),
            Some(&drive_report.trace),
        ))),
    };
    let r = report(&outcome, drive_report.stats, device_ms);
    (outcome, r)
}

/// A §7 failure for `job` with the artifact references.
pub fn failure_request(
    job: &Job,
    f: &FlowFailure,
    arts: Option<&AttemptArtifacts>,
    trace: Option<&[super::driver::TraceEntry]>,
) -> FailureRequest {
    let mut diagnostics = f.diagnostics.clone();
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
