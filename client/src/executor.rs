//! The [`Executor`] trait: where claimed tasks go.
//!
//! The runner claims, validates and saves a task, opens a run (fresh `attempt_id`) and
//! hands the [`Job`] to the executor; the executor answers with an [`Outcome`] (a §6
//! result or a §7 failure body). The runner writes it to the outbox together with the
//! local outcome. The device flows (collect, purchase) implement it in
//! [`crate::job::exec`]; [`StubExecutor`] is the trivial one for tests and rehearsals without a phone.

use chrono::Utc;
use cmautobuy_contract::time::format_utc;
use cmautobuy_contract::{
    ExecutionMode, FailureError, FailureRequest, FailureStatus, PddData, PriceGranularity,
    ResultRequest, ResultType,
};
use serde_json::Map;
use std::future::Future;

use crate::store::{Run, StoredTask};

/// What the executor can do right now; drives the claim capabilities (contract §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// A device is connected and answering.
    pub device_ready: bool,
    /// A purchase adapter (the purchase flow on that device) is ready.
    pub purchase_adapter_ready: bool,
    /// The purchase adapter may place real orders.
    pub live_adapter_ready: bool,
}

/// The result of a device check: may the worker claim now?
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceCheck {
    /// Listed, authorised, answering a shell probe, PDD installed.
    Ready,
    /// Not usable now: a stable code (`DEVICE_OFFLINE`, `DEVICE_UNAUTHORIZED`,
    /// `PDD_NOT_INSTALLED`, …) and a message for the operator.
    NotReady { code: String, message: String },
}

/// The installed PDD's version as last read on the phone: by the
/// device check before a claim (its one round trip carries `dumpsys package … | grep
/// versionName`) and again at the start of each task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PddVersionRead {
    /// A plausible `versionName` ([`plausible_version`]).
    Version(String),
    /// No answer, no `versionName`, or garbage: why.
    Unreadable(String),
    /// Not read yet (before the first device check of this process).
    NotReadYet,
}

impl PddVersionRead {
    /// From a parsed `versionName` (`None`: absent): garbage counts as unreadable.
    pub fn from_parsed(v: Option<&str>) -> PddVersionRead {
        match v {
            Some(v) if plausible_version(v) => PddVersionRead::Version(v.to_string()),
            Some(v) => PddVersionRead::Unreadable(format!(
                "`dumpsys package` printed an implausible versionName {:?}",
                v.chars().take(40).collect::<String>()
            )),
            None => PddVersionRead::Unreadable(
                "`dumpsys package com.xunmeng.pinduoduo` printed no versionName".into(),
            ),
        }
    }
}

/// A `versionName` worth keying proofs on: 1–64 characters, ASCII letters, digits and
/// `. _ - +`, with at least one digit (`7.36.0`, `7.36.0-beta`).
pub fn plausible_version(v: &str) -> bool {
    (1..=64).contains(&v.len())
        && v.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+'))
        && v.bytes().any(|b| b.is_ascii_digit())
}

/// The account check's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccountCheck {
    /// 个人中心 showed this account.
    Read(crate::screen::AccountReading),
    /// 个人中心 was not reached or showed nothing readable: a stable code and why.
    Failed { code: String, message: String },
}

/// How a self-test ended ([`crate::self_test`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SelfTestRun {
    /// The PDD version read at its start (`None`: unreadable, or the phone did not answer).
    pub version: Option<String>,
    /// Passed, or the failure's stable code and message.
    pub outcome: Result<(), (String, String)>,
    /// Where its evidence is (`CLIENT:artifacts/self-test/ATTEMPT/`).
    pub artifact_ref: Option<String>,
}

/// A claimed task handed to the executor.
#[derive(Clone, Debug)]
pub struct Job {
    pub client_id: String,
    pub task: StoredTask,
    pub run: Run,
    /// The purchase mode this client declared when it claimed the task. A task's own
    /// mode is never promoted (§5): a live task only runs live if this is live too.
    pub declared_mode: ExecutionMode,
    /// A previous, interrupted run of the same task (after a crash): its irreversible
    /// mark tells a purchase flow to reconcile instead of tapping again.
    pub previous_run: Option<Run>,
}

/// What an execution produced.
#[derive(Clone, Debug)]
pub enum Outcome {
    Result(Box<ResultRequest>),
    Failure(Box<FailureRequest>),
}

/// Runs claimed tasks.
pub trait Executor: Send + Sync + 'static {
    fn readiness(&self) -> Readiness;
    fn execute(&self, job: Job) -> impl Future<Output = Outcome> + Send;

    /// A cheap check that the phone can work now (the runner asks before a claim when its
    /// last check is older than `device_check_max_age`, and while paused). Default: ready
    /// (executors without a phone).
    fn check_device(&self) -> impl Future<Output = DeviceCheck> + Send {
        async { DeviceCheck::Ready }
    }

    /// The installed PDD's version as last read on the phone (the device check before a
    /// claim, and each task's own read): the new-version gate's input (
    /// `gate::version_hold`). `None`: this executor has no phone to read
    /// (nothing to gate).
    fn pdd_version(&self) -> Option<PddVersionRead> {
        None
    }

    /// The phone's clock minus the host's, ms (live is refused above
    /// `max_clock_skew`); `None`: no phone, or it cannot be read. Asked at start and
    /// hourly.
    fn phone_clock_offset_ms(&self) -> impl Future<Output = Option<i64>> + Send {
        async { None }
    }

    /// Reads the account 个人中心 shows, between tasks; the runner asks
    /// before the first claim that could be live and daily after. `None`: this executor
    /// has no phone to read (no account gate applies).
    fn check_account(&self) -> impl Future<Output = Option<AccountCheck>> + Send {
        async { None }
    }

    /// Runs the self-test: a dry-run purchase on `goods_id`, no Admin
    /// involved, its artifacts under `self-test/ATTEMPT_ID/`. `None`: this executor has
    /// no phone (nothing to test).
    fn self_test(
        &self,
        client_id: String,
        goods_id: String,
        attempt_id: String,
    ) -> impl Future<Output = Option<SelfTestRun>> + Send {
        let _ = (client_id, goods_id, attempt_id);
        async { None }
    }

    /// A purchase run a crash left with an irreversible mark and no outcome:
    /// reconcile it on the phone — never submit again — and answer its outcome (success
    /// or `manual_review`). `None`: this executor cannot look at a phone; the runner then
    /// reports `manual_review INTERRUPTED_AFTER_SUBMIT` itself.
    fn recover_marked(&self, job: Job) -> impl Future<Output = Option<Outcome>> + Send {
        async move {
            let _ = job;
            None
        }
    }
}

/// Builds a §7 failure for `job` (a helper for executors and the runner).
pub fn failure(
    job: &Job,
    status: FailureStatus,
    code: &str,
    message: &str,
    step: Option<&str>,
) -> FailureRequest {
    FailureRequest {
        task_version: job.task.version,
        attempt_id: job.run.attempt_id.clone(),
        status,
        error: FailureError {
            code: code.to_string(),
            message: message.to_string(),
            retryable: matches!(status, FailureStatus::RetryWait),
            step: step.map(str::to_string),
        },
        diagnostics: Map::new(),
        reported_at: format_utc(Utc::now()),
        extra: Map::new(),
    }
}

/// A phone-less executor: collect tasks yield a minimal (empty) collect result built from
/// the payload; purchase tasks fail with `UNSUPPORTED_TASK`. Declares no device, so the
/// client claims collect tasks only and never declares live.
#[derive(Clone, Debug, Default)]
pub struct StubExecutor;

impl Executor for StubExecutor {
    fn readiness(&self) -> Readiness {
        Readiness::default()
    }

    async fn execute(&self, job: Job) -> Outcome {
        if job.task.task_type != "collect" {
            return Outcome::Failure(Box::new(failure(
                &job,
                FailureStatus::Failed,
                "UNSUPPORTED_TASK",
                "this client build has no purchase flow",
                None,
            )));
        }
        let goods_id = serde_json::from_str::<serde_json::Value>(&job.task.payload)
            .ok()
            .and_then(|p| {
                p.get("goods_id")
                    .and_then(|g| g.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_default();
        Outcome::Result(Box::new(ResultRequest {
            task_version: job.task.version,
            attempt_id: job.run.attempt_id.clone(),
            result_type: ResultType::Collect,
            completed_at: format_utc(Utc::now()),
            pdd_data: Some(PddData {
                schema_version: Some(1),
                goods_id,
                title: None,
                shop_name: None,
                captured_at: None,
                price_granularity: PriceGranularity::Color,
                dimensions: vec![],
                skus: vec![],
                extra: Map::new(),
            }),
            purchase: None,
            extra: Map::new(),
        }))
    }
}

/// Without a device flow a real run reports every task as waiting for a
/// device: `retry_wait` / `DEVICE_OFFLINE`, before anything irreversible.
#[derive(Clone, Debug, Default)]
pub struct NoDeviceExecutor;

impl Executor for NoDeviceExecutor {
    fn readiness(&self) -> Readiness {
        Readiness::default()
    }

    async fn execute(&self, job: Job) -> Outcome {
        Outcome::Failure(Box::new(failure(
            &job,
            FailureStatus::RetryWait,
            "DEVICE_OFFLINE",
            "no device flow is available in this client build",
            Some("open_goods"),
        )))
    }
}
