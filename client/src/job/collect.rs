//! Collect jobs: one collect task on the phone — the attempt's artifacts (retention is
//! the runner's disk budget, [`crate::disk_budget`]), the [`CollectFlow`] behind the device guard, the §6 result or §7 failure.

use chrono::Utc;
use cmautobuy_contract::time::format_utc;
use cmautobuy_contract::{CollectPayload, FailureCode, FlowStep, ResultRequest, ResultType};
use serde_json::Map;

use super::attempt::{failure_request, label, FlowExecutorConfig, TaskReport};
use super::driver::{drive_with_progress, DriveStats, NoEffects};
use super::guard::GuardedDevice;
use super::source::DeviceSource;
use crate::artifacts::AttemptArtifacts;
use crate::clock::SystemClock;
use crate::executor::{Job, Outcome};
use crate::flow::collect::{CollectFlow, CollectTask};
use crate::flow::{FlowFailure, FlowOutcome};

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
    let artifact_ref = arts.as_ref().map(|a| a.reference(&job.client_id));
    let report = |outcome: &Outcome, stats: DriveStats, device_ms: Option<u64>| TaskReport {
        task_id: remote.clone(),
        task_type: job.task.task_type.clone(),
        attempt_id: attempt.clone(),
        outcome: label(outcome),
        stats,
        device_ms,
        artifact_ref: artifact_ref.clone(),
        operator: crate::job::attempt::operator_text(outcome),
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
                "this client runs collect tasks only: its purchase backend is not configured",
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
                FlowFailure::retry(
                    FailureCode::DeviceOffline,
                    FlowStep::OpenGoods,
                    e.to_string(),
                ),
                &arts,
            )
        }
    };
    // Wake and unlock first; a PIN lock or a flat battery ends the task before PDD is
    // touched (and pauses the worker).
    if let Err(f) = super::prepare::prepare_device(&*device, source.thresholds()) {
        return fail_now(*f, &arts);
    }
    // Defence in depth: collect never taps a pay button or 提交订单.
    let device = GuardedDevice::new(device, false);
    let t0 = source.device_time_ms();
    let drive_report = drive_with_progress(
        &mut flow,
        &device,
        &mut NoEffects,
        &SystemClock,
        arts.as_mut(),
        cfg.drive,
        cfg.progress.as_ref(),
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
        FlowOutcome::Purchased(_) | FlowOutcome::Account(_) => {
            Outcome::Failure(Box::new(failure_request(
                job,
                &FlowFailure::manual(
                    FailureCode::PageNotRecognized,
                    FlowStep::Report,
                    "a collect task produced a purchase result",
                ),
                arts.as_ref(),
                None,
            )))
        }
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
