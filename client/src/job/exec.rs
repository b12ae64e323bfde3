//! [`FlowExecutor`]: the [`Executor`] that runs device flows for claimed tasks.
//!
//! For each job it picks the job kind (collect: [`super::collect::run_job`]; purchase:
//! [`super::purchase::run_job`]; a marked run after a crash:
//! [`super::purchase::recover_run`]), runs it on a blocking thread, turns a panic into a
//! reported failure (`manual_review` once the run is marked), and keeps every job's
//! [`TaskReport`] for `rehearse` and the run log.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use cmautobuy_contract::{FailureCode, FlowStep};

use super::attempt::{
    failure_request, label, read_pdd_version, stamp_pdd_version, try_read_pdd_version,
    FlowExecutorConfig, ReportHook, TaskReport,
};
use super::driver::DriveStats;
use super::purchase::PurchaseBackend;
use super::source::DeviceSource;
use crate::executor::{AccountCheck, DeviceCheck, Executor, Job, Outcome, Readiness, SelfTestRun};
use crate::flow::FlowFailure;

/// Runs collect and purchase tasks on a device.
pub struct FlowExecutor<S: DeviceSource> {
    source: Arc<S>,
    cfg: FlowExecutorConfig,
    reports: Arc<Mutex<Vec<TaskReport>>>,
    hook: Option<ReportHook>,
    /// Purchases: store and Admin behind the purchase flow's effects; `None`
    /// = this executor runs collect tasks only.
    purchase: Option<Arc<dyn PurchaseBackend>>,
    /// The PDD version last read (device check or task start; `None`: not read yet).
    version_read: Arc<Mutex<Option<crate::executor::PddVersionRead>>>,
    /// A task ended `INPUT_INJECTION_DENIED`: the device checks probe injected input
    /// (one `KEYCODE_UNKNOWN`) until it goes through — the ordinary check cannot see
    /// MIUI's switch.
    input_refused: Arc<AtomicBool>,
}

impl<S: DeviceSource> FlowExecutor<S> {
    pub fn new(source: S, cfg: FlowExecutorConfig) -> Self {
        FlowExecutor {
            source: Arc::new(source),
            cfg,
            reports: Arc::new(Mutex::new(Vec::new())),
            hook: None,
            purchase: None,
            version_read: Arc::new(Mutex::new(None)),
            input_refused: Arc::default(),
        }
    }

    /// Runs purchase tasks too (dry run; live when the backend allows it).
    pub fn with_purchase(mut self, backend: Arc<dyn PurchaseBackend>) -> Self {
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

/// A live purchase on a PDD version not proven on this phone (the version changed after
/// the claim was declared live: the device check that declared it is up to
/// `device_check_max_age` old): why, when it must not run. Fails closed: an unreadable
/// version or store is unproven.
fn unproven_live(
    cfg: &super::attempt::FlowExecutorConfig,
    backend: &dyn PurchaseBackend,
    job: &crate::executor::Job,
    version: Option<&str>,
) -> Option<String> {
    let live = job.task.execution_mode == "live"
        && job.declared_mode == cmautobuy_contract::ExecutionMode::Live
        && backend.live_enabled();
    if !cfg.pdd_version_gate || !live {
        return None;
    }
    let v = match crate::executor::PddVersionRead::from_parsed(version) {
        crate::executor::PddVersionRead::Version(v) => v,
        _ => return Some("the PDD version cannot be read for this attempt".into()),
    };
    let store = backend.store();
    let device = store.settings().ok().and_then(|s| s.device);
    let proven = device
        .and_then(|d| store.pdd_version(&d, &v).ok().flatten())
        .is_some_and(|r| r.proven_at.is_some());
    (!proven).then(|| format!("PDD {v} is not proven on this phone (it changed since the claim)"))
}

/// The report of a live purchase refused before PDD was touched: `retry_wait
/// PDD_VERSION_UNPROVEN`.
fn refuse_unproven(job: &crate::executor::Job, why: &str) -> (Outcome, TaskReport) {
    tracing::warn!(task_id = %job.task.remote_task_id, reason = %why, "live purchase refused: PDD version not proven");
    refuse_before_start(
        job,
        FailureCode::PddVersionUnproven,
        format!("{why}; nothing was touched — a dry-run purchase on it proves it"),
    )
}

/// The report of a task that ended before PDD was touched: `retry_wait code`.
fn refuse_before_start(
    job: &crate::executor::Job,
    code: FailureCode,
    message: String,
) -> (Outcome, TaskReport) {
    let f = FlowFailure::retry(code, FlowStep::OpenGoods, message);
    let out = Outcome::Failure(Box::new(failure_request(job, &f, None, None)));
    let rep = TaskReport {
        task_id: job.task.remote_task_id.clone(),
        task_type: job.task.task_type.clone(),
        attempt_id: job.run.attempt_id.clone(),
        outcome: label(&out),
        stats: DriveStats::default(),
        device_ms: None,
        artifact_ref: None,
        operator: crate::job::attempt::operator_text(&out),
    };
    (out, rep)
}

impl<S: DeviceSource> FlowExecutor<S> {
    fn note_version(&self, v: Option<&str>) {
        *self.version_read.lock().unwrap_or_else(|p| p.into_inner()) =
            Some(crate::executor::PddVersionRead::from_parsed(v));
    }
}

impl<S: DeviceSource> Executor for FlowExecutor<S> {
    fn readiness(&self) -> Readiness {
        // Collect needs a device; purchases need the purchase backend.
        Readiness {
            device_ready: self.source.configured(),
            purchase_adapter_ready: self.purchase.is_some(),
            live_adapter_ready: self.purchase.as_ref().is_some_and(|b| b.live_enabled()),
        }
    }

    fn pdd_version(&self) -> Option<crate::executor::PddVersionRead> {
        let read = self
            .version_read
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        // Fail closed: a phone whose version was never read is not a proven one.
        Some(read.unwrap_or(crate::executor::PddVersionRead::NotReadYet))
    }

    async fn check_device(&self) -> DeviceCheck {
        let source = self.source.clone();
        let probe_input = self.input_refused.clone();
        let checked = tokio::task::spawn_blocking(in_span(move || {
            let state = source.check()?;
            if probe_input.load(Ordering::SeqCst) {
                probe_injected_input(&*source)?;
                probe_input.store(false, Ordering::SeqCst);
                tracing::info!("the phone accepts injected input again");
            }
            Ok::<_, crate::device::doctor::Problem>(state)
        }));
        match checked.await {
            Ok(Ok(state)) => {
                self.note_version(state.pdd_version.as_deref());
                DeviceCheck::Ready
            }
            Ok(Err(p)) => DeviceCheck::NotReady {
                code: p.code,
                message: p.message,
            },
            Err(e) => DeviceCheck::NotReady {
                code: "DEVICE_CHECK_FAILED".into(),
                message: format!("the device check panicked: {e}"),
            },
        }
    }

    async fn check_account(&self) -> Option<AccountCheck> {
        let source = self.source.clone();
        let joined =
            tokio::task::spawn_blocking(in_span(move || super::account::check(&*source))).await;
        Some(match joined {
            Ok((check, stats)) => {
                tracing::info!(
                    round_trips = stats.round_trips(),
                    dumps = stats.dumps,
                    taps = stats.taps,
                    open_urls = stats.open_urls,
                    wall_ms = stats.wall_ms,
                    ?check,
                    "account check on 个人中心"
                );
                check
            }
            Err(e) => AccountCheck::Failed {
                code: "PAGE_NOT_RECOGNIZED".into(),
                message: format!("the account check panicked: {e}"),
            },
        })
    }

    async fn self_test(
        &self,
        client_id: String,
        goods_id: String,
        attempt_id: String,
    ) -> Option<SelfTestRun> {
        let store = self.purchase.as_ref()?.store().clone();
        let source = self.source.clone();
        let cfg = self.cfg.clone();
        let joined = tokio::task::spawn_blocking(move || {
            super::self_test::run(&*source, &cfg, &store, &client_id, &goods_id, &attempt_id)
        })
        .await;
        let run = match joined {
            Ok(r) => r,
            Err(e) => SelfTestRun {
                version: None,
                outcome: Err((
                    "PAGE_NOT_RECOGNIZED".into(),
                    format!("the self-test panicked: {e}"),
                )),
                artifact_ref: None,
            },
        };
        if let Some(v) = &run.version {
            self.note_version(Some(v));
        }
        Some(run)
    }

    async fn phone_clock_offset_ms(&self) -> Option<i64> {
        let source = self.source.clone();
        tokio::task::spawn_blocking(in_span(move || {
            let device = source.device().ok()?;
            super::skew::measure(&*device).offset_ms
        }))
        .await
        .ok()
        .flatten()
    }

    async fn execute(&self, job: Job) -> Outcome {
        let _board = OnBoard::begin(&self.cfg, &job);
        let source = self.source.clone();
        let cfg = self.cfg.clone();
        let fallback = job.clone();
        let purchase = self.purchase.clone();
        let version_read = self.version_read.clone();
        let joined = tokio::task::spawn_blocking(in_span(move || {
            // A job of its own on the device (the `u2` backend: its restart is there
            // again, a fallback of the last job is tried again).
            source.begin_job();
            // One round trip per task: the version goes into the manifest's sidecar and
            // the report, and is the freshest the gate knows.
            let pdd_version = match try_read_pdd_version(&*source) {
                Ok(v) => v,
                // The phone did not answer (it went away since the device check): a
                // device failure before anything was touched — not an unreadable
                // version, which would hold live back for nothing.
                Err(e) => {
                    return refuse_before_start(
                        &job,
                        FailureCode::DeviceOffline,
                        format!("the phone did not answer before the task began: {e}"),
                    );
                }
            };
            *version_read.lock().unwrap_or_else(|p| p.into_inner()) = Some(
                crate::executor::PddVersionRead::from_parsed(pdd_version.as_deref()),
            );
            let (mut out, rep) = match &purchase {
                Some(b) if job.task.task_type == "purchase" => {
                    match unproven_live(&cfg, &**b, &job, pdd_version.as_deref()) {
                        Some(why) => refuse_unproven(&job, &why),
                        None => super::purchase::run_job(&*source, &cfg, &**b, &job),
                    }
                }
                _ => super::collect::run_job(&*source, &cfg, &job),
            };
            stamp_pdd_version(&cfg, &job, &mut out, pdd_version.as_deref());
            // The backend this task used, for the console.
            if let (Some(p), Ok(d)) = (&cfg.progress, source.device()) {
                p.set_backend(d.backend(), d.backend_fallback());
            }
            (out, rep)
        }))
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
                // After an irreversible mark nothing unproven may be retried.
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
                    operator: crate::job::attempt::operator_text(&out),
                };
                (out, rep)
            }
        };
        if let Outcome::Failure(f) = &outcome {
            if f.error.code.as_str() == FailureCode::InputInjectionDenied.as_str() {
                self.input_refused.store(true, Ordering::SeqCst);
            }
        }
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
        let _board = OnBoard::begin(&self.cfg, &job);
        let source = self.source.clone();
        let cfg = self.cfg.clone();
        let joined = tokio::task::spawn_blocking(in_span(move || {
            let pdd_version = read_pdd_version(&*source);
            let (mut out, rep) = super::purchase::recover_run(&*source, &cfg, &*backend, &job);
            stamp_pdd_version(&cfg, &job, &mut out, pdd_version.as_deref());
            (out, rep)
        }))
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

/// The task on the worker's progress board while it runs: begun here, cleared when
/// dropped (whatever the outcome, a panic included).
struct OnBoard(Option<crate::progress::ProgressHandle>);

impl OnBoard {
    fn begin(cfg: &FlowExecutorConfig, job: &Job) -> OnBoard {
        if let Some(p) = &cfg.progress {
            p.begin(
                &job.task.remote_task_id,
                &job.task.task_type,
                &job.task.execution_mode,
                chrono::Utc::now(),
            );
        }
        OnBoard(cfg.progress.clone())
    }
}

impl Drop for OnBoard {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            p.clear();
        }
    }
}

/// One `input keyevent 0` (`KEYCODE_UNKNOWN`, which no app acts on): `Ok` when the phone
/// accepts injected input.
fn probe_injected_input<S: DeviceSource + ?Sized>(
    source: &S,
) -> Result<(), crate::device::doctor::Problem> {
    let problem = |e: crate::device::DeviceError| crate::device::doctor::Problem {
        code: e.failure_code().into(),
        message: e.to_string(),
    };
    let device = source.device().map_err(problem)?;
    device.key(crate::device::KeyCode::UNKNOWN).map_err(problem)
}

/// `f` on a blocking thread, inside the caller's span (with several phones: the phone's),
/// so that the job's log lines name their phone.
fn in_span<R>(f: impl FnOnce() -> R + Send + 'static) -> impl FnOnce() -> R + Send + 'static {
    let span = tracing::Span::current();
    move || span.in_scope(f)
}
