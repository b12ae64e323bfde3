//! Purchase jobs for the executor: the [`PurchaseBackend`] (store and Admin
//! behind the flow's effects), running a purchase task ([`run_job`]) and reconciling a
//! run a crash left behind ([`recover_run`]).
//!
//! # Never submit twice — the sequence
//! 1. [`crate::flow::purchase::PurchaseFlow`] confirms the total and asks for
//!    [`Effect::MarkIrreversible`] with the confirmation snapshot.
//! 2. [`JobEffects`] commits it through [`Store::mark_irreversible_once`] (one
//!    `BEGIN IMMEDIATE`, `synchronous=FULL` transaction that refuses when any run of the
//!    same remote task already has a mark, or this run already has an outcome).
//! 3. Only on `Marked` does the flow emit the 提交订单 tap, and it moves to its reconcile
//!    phase in the same step; the [`GuardedDevice`] lets exactly one 提交订单 tap through
//!    for a live job (none for dry runs and recovery) and never a pay button.
//! 4. After a crash the runner never runs a marked run again: it asks
//!    [`recover_run`], which only reconciles (device guard: no submit at all).
//!
//! # What reconciliation gets besides the confirmation
//! Before a live purchase or a recovery runs, the job reads the order numbers this client
//! reported (or stored to report) for other tasks ([`Store::order_sns_of_other_tasks`]:
//! never adopted) and measures the host ↔ phone clock skew ([`super::skew`]), and hands
//! both to the flow ([`ReconcileContext`]).

use std::sync::Arc;

use chrono::{DateTime, Utc};
use cmautobuy_contract::time::format_utc;
use cmautobuy_contract::{
    ExecutionMode, FailureCode, FailureStatus, FlowStep, PurchasePayload, ResultRequest,
    ResultType, SpecResolutionRequest, SpecResolutionResponse,
};
use serde_json::{Map, Value};

use super::attempt::{artifacts_for, failure_request, label, FlowExecutorConfig, TaskReport};
use super::driver::{drive_with_progress, DriveStats, Effects, TraceEntry};
use super::guard::GuardedDevice;
use super::skew;
use super::source::DeviceSource;
use crate::artifacts::AttemptArtifacts;
use crate::clock::Clock;
use crate::clock::SystemClock;
use crate::executor::{Job, Outcome};
use crate::flow::purchase::task::{PurchaseLimits, PurchaseTask};
use crate::flow::purchase::PurchaseFlow;
use crate::flow::reconcile::{ReconcileContext, ReconcileFlow};
use crate::flow::{Confirmation, Effect, EffectOutcome, FlowFailure, FlowOutcome};
use crate::gateway::AdminGateway;
use crate::retry::RetryPolicy;
use crate::spec::{self, Resolver, SpecError};
use crate::store::{MarkOutcome, Run, Store};

/// What purchase jobs need besides the phone.
pub trait PurchaseBackend: Send + Sync + 'static {
    fn store(&self) -> &Store;
    /// This client may place real orders (declares `live`, runs live tasks live).
    fn live_enabled(&self) -> bool;
    /// One §7.1 resolution, blocking (the caller is on a blocking thread).
    fn resolve_spec(
        &self,
        run: &Run,
        remote_task_id: &str,
        req: &SpecResolutionRequest,
    ) -> Result<SpecResolutionResponse, SpecError>;
}

/// The backend over the store, an Admin gateway and a clock, on a tokio runtime.
pub struct Backend<G, C> {
    pub store: Store,
    pub gateway: Arc<G>,
    pub clock: C,
    pub handle: tokio::runtime::Handle,
    pub live: bool,
    /// When set, asked instead of `live` at every call: whether live is possible now
    /// (the configuration with what the operator set on the console since the start —
    /// `app` gives it; a console `purchase_mode` or self-test goods applies at the next
    /// claim, no restart).
    pub live_switch: Option<Arc<dyn Fn() -> bool + Send + Sync>>,
    pub policy: RetryPolicy,
    pub max_attempts: u32,
}

impl<G: AdminGateway, C: Clock> Backend<G, C> {
    pub fn new(
        store: Store,
        gateway: Arc<G>,
        clock: C,
        handle: tokio::runtime::Handle,
        live: bool,
    ) -> Self {
        Backend {
            store,
            gateway,
            clock,
            handle,
            live,
            live_switch: None,
            policy: RetryPolicy::default(),
            max_attempts: spec::DEFAULT_MAX_ATTEMPTS,
        }
    }

    /// Asks `switch` whether live is possible, at every call (see [`Backend::live_switch`]).
    pub fn with_live_switch(mut self, switch: Arc<dyn Fn() -> bool + Send + Sync>) -> Self {
        self.live_switch = Some(switch);
        self
    }
}

impl<G: AdminGateway, C: Clock> PurchaseBackend for Backend<G, C> {
    fn store(&self) -> &Store {
        &self.store
    }

    fn live_enabled(&self) -> bool {
        match &self.live_switch {
            Some(switch) => switch(),
            None => self.live,
        }
    }

    fn resolve_spec(
        &self,
        run: &Run,
        remote_task_id: &str,
        req: &SpecResolutionRequest,
    ) -> Result<SpecResolutionResponse, SpecError> {
        let r = Resolver {
            store: &self.store,
            gateway: &*self.gateway,
            clock: &self.clock,
            policy: self.policy,
            max_attempts: self.max_attempts,
        };
        self.handle
            .block_on(spec::resolve(&r, run, remote_task_id, req))
    }
}

/// The flow's effects for one job.
pub struct JobEffects<'a> {
    pub backend: &'a dyn PurchaseBackend,
    pub run: &'a Run,
    pub remote_task_id: &'a str,
}

impl Effects for JobEffects<'_> {
    fn perform(&mut self, effect: &Effect) -> EffectOutcome {
        match effect {
            Effect::MarkIrreversible { confirmation } => {
                crate::failpoint::hit("purchase.before_mark");
                let snapshot = match serde_json::to_string(&**confirmation) {
                    Ok(s) => s,
                    Err(e) => {
                        return EffectOutcome::Failed {
                            message: format!("the confirmation cannot be stored: {e}"),
                            retryable: false,
                        }
                    }
                };
                let now = Utc::now();
                let out = self
                    .backend
                    .store()
                    .mark_irreversible_once(self.run.id, now, &snapshot);
                match out {
                    Ok(MarkOutcome::Marked { at }) => {
                        crate::failpoint::hit("purchase.after_mark");
                        let at = DateTime::parse_from_rfc3339(&at)
                            .map(|t| t.with_timezone(&Utc))
                            .unwrap_or(now);
                        tracing::info!(run_id = self.run.id, at = %format_utc(at), "irreversible mark committed");
                        EffectOutcome::Marked { at }
                    }
                    Ok(MarkOutcome::Refused { reason }) => EffectOutcome::Refused { reason },
                    Err(e) => EffectOutcome::Failed {
                        message: e.to_string(),
                        retryable: e.is_retryable(),
                    },
                }
            }
            Effect::NoteProceed { confirmation } => {
                let snapshot = match serde_json::to_string(&**confirmation) {
                    Ok(s) => s,
                    Err(e) => {
                        return EffectOutcome::Failed {
                            message: format!("the note cannot be stored: {e}"),
                            retryable: false,
                        }
                    }
                };
                match self.backend.store().note_proceed(self.run.id, &snapshot) {
                    Ok(true) => {
                        crate::failpoint::hit("purchase.after_proceed_note");
                        tracing::info!(
                            run_id = self.run.id,
                            "noted: the spec sheet's 确定 is about to be tapped"
                        );
                        EffectOutcome::Noted
                    }
                    Ok(false) => EffectOutcome::Refused {
                        reason: format!("run {} is already marked or has an outcome", self.run.id),
                    },
                    Err(e) => EffectOutcome::Failed {
                        message: e.to_string(),
                        retryable: e.is_retryable(),
                    },
                }
            }
            Effect::ResolveSpec(req) => {
                match self
                    .backend
                    .resolve_spec(self.run, self.remote_task_id, req)
                {
                    Ok(resp) => EffectOutcome::Resolved(Box::new(resp)),
                    Err(e) => {
                        // Exhausted transient errors (503s, timeouts) may clear later.
                        let retryable =
                            e.is_retryable() || matches!(e, SpecError::Exhausted { .. });
                        EffectOutcome::Failed {
                            message: e.to_string(),
                            retryable,
                        }
                    }
                }
            }
        }
    }
}

fn result_of(job: &Job, r: cmautobuy_contract::PurchaseResult) -> Outcome {
    Outcome::Result(Box::new(ResultRequest {
        task_version: job.task.version,
        attempt_id: job.run.attempt_id.clone(),
        result_type: ResultType::Purchase,
        completed_at: format_utc(Utc::now()),
        pdd_data: None,
        purchase: Some(r),
        extra: Map::new(),
    }))
}

/// After a mark anything but a proven success is `manual_review` (decisions §5): a
/// safety net under the flows, which already say so.
fn after_mark(mut f: FlowFailure) -> FlowFailure {
    if f.status != FailureStatus::ManualReview {
        f.diagnostics.insert(
            "status_before_mark_rule".into(),
            Value::String(f.status.as_str().into()),
        );
        f.status = FailureStatus::ManualReview;
    }
    f
}

struct Ctx<'a> {
    job: &'a Job,
    arts: Option<AttemptArtifacts>,
}

impl Ctx<'_> {
    fn report(&self, outcome: &Outcome, stats: DriveStats, device_ms: Option<u64>) -> TaskReport {
        TaskReport {
            task_id: self.job.task.remote_task_id.clone(),
            task_type: self.job.task.task_type.clone(),
            attempt_id: self.job.run.attempt_id.clone(),
            outcome: label(outcome),
            stats,
            device_ms,
            artifact_ref: self.arts.as_ref().map(|a| a.reference(&self.job.client_id)),
            operator: crate::job::attempt::operator_text(outcome),
        }
    }

    fn fail(&self, f: &FlowFailure, trace: Option<&[TraceEntry]>) -> Outcome {
        Outcome::Failure(Box::new(failure_request(
            self.job,
            f,
            self.arts.as_ref(),
            trace,
        )))
    }
}

/// The purchase task of `job`, or why it cannot run.
pub fn purchase_task(job: &Job, live_enabled: bool) -> Result<PurchaseTask, Box<FlowFailure>> {
    let p: PurchasePayload = serde_json::from_str(&job.task.payload).map_err(|e| {
        Box::new(FlowFailure::failed(
            FailureCode::InvalidTaskPayload,
            FlowStep::OpenGoods,
            format!("purchase payload unreadable: {e}"),
        ))
    })?;
    let quantity = u32::try_from(p.quantity)
        .ok()
        .filter(|q| *q > 0)
        .ok_or_else(|| {
            FlowFailure::failed(
                FailureCode::InvalidTaskPayload,
                FlowStep::OpenGoods,
                "quantity must be a positive integer",
            )
        })?;
    // §5: the task's mode is never promoted, and a live task runs live only when this
    // client declared live and its live adapter is enabled.
    let live = job.task.execution_mode == ExecutionMode::Live.as_str()
        && job.declared_mode == ExecutionMode::Live
        && live_enabled;
    if job.task.execution_mode == ExecutionMode::Live.as_str() && !live {
        return Err(Box::new(FlowFailure::failed(
            FailureCode::LiveNotDeclared,
            FlowStep::OpenGoods,
            "a live task, but this client does not run live purchases",
        )));
    }
    Ok(PurchaseTask {
        remote_task_id: job.task.remote_task_id.clone(),
        attempt_id: job.run.attempt_id.clone(),
        task_version: job.task.version,
        goods_id: p.goods_id,
        expected_title: p.expected_title,
        options: p.options,
        quantity,
        max_price: p.max_price_cent,
        live,
        expected_address: Vec::new(),
    })
}

/// What reconciliation needs from the store and the phone ([`ReconcileContext`]); `Err`
/// when the store cannot say which order numbers belong to other tasks.
fn reconcile_context(
    backend: &dyn PurchaseBackend,
    job: &Job,
    device: &dyn crate::device::Device,
) -> Result<ReconcileContext, crate::store::StoreError> {
    let known_orders = backend
        .store()
        .order_sns_of_other_tasks(&job.task.remote_task_id)?;
    let s = skew::measure(device);
    tracing::info!(
        run_id = job.run.id,
        skew_ms = u64::try_from(s.skew.as_millis()).unwrap_or(u64::MAX),
        offset_ms = ?s.offset_ms,
        note = s.note.as_deref().unwrap_or(""),
        known_orders = known_orders.len(),
        "reconcile context"
    );
    Ok(ReconcileContext {
        known_orders,
        clock_skew: s.skew,
    })
}

/// Runs one purchase job synchronously (on a blocking thread).
pub fn run_job<S: DeviceSource + ?Sized>(
    source: &S,
    cfg: &FlowExecutorConfig,
    backend: &dyn PurchaseBackend,
    job: &Job,
) -> (Outcome, TaskReport) {
    let mut ctx = Ctx {
        job,
        arts: artifacts_for(cfg, job),
    };
    let task = match purchase_task(job, backend.live_enabled()) {
        Ok(mut t) => {
            // The console's fingerprint wins over the configuration's, read at each
            // task (a value saved on the console applies from the next task). A store
            // that cannot be read leaves the configuration's: no fingerprint, no live
            // order; a wrong one, `ADDRESS_MISMATCH` before the mark.
            t.expected_address = match backend.store().operator_settings() {
                Ok(op) => op.expected_address_or(&cfg.expected_address),
                Err(_) => cfg.expected_address.clone(),
            };
            t
        }
        Err(f) => {
            let out = ctx.fail(&f, None);
            let r = ctx.report(&out, DriveStats::default(), None);
            return (out, r);
        }
    };
    let live = task.live;
    let mut flow = match PurchaseFlow::new(task, PurchaseLimits::default()) {
        Ok(f) => f,
        Err(f) => {
            let out = ctx.fail(&f, None);
            let r = ctx.report(&out, DriveStats::default(), None);
            return (out, r);
        }
    };
    let device = match source.device() {
        Ok(d) => d,
        Err(e) => {
            let f = FlowFailure::retry(
                FailureCode::DeviceOffline,
                FlowStep::OpenGoods,
                e.to_string(),
            );
            let out = ctx.fail(&f, None);
            let r = ctx.report(&out, DriveStats::default(), None);
            return (out, r);
        }
    };
    // Wake and unlock first; a PIN lock or a flat battery ends the task before PDD is
    // touched (and pauses the worker).
    if let Err(f) = super::prepare::prepare_device(&*device, source.thresholds()) {
        let out = ctx.fail(&f, None);
        let r = ctx.report(&out, DriveStats::default(), None);
        return (out, r);
    }
    if live {
        // Read before anything is tapped: without it no order could be told apart from
        // another task's, so the purchase does not start.
        match reconcile_context(backend, job, &*device) {
            Ok(c) => flow = flow.with_reconcile(c),
            Err(e) => {
                let f = FlowFailure::retry(
                    FailureCode::Other("LOCAL_STORE_ERROR".into()),
                    FlowStep::OpenGoods,
                    format!("the order numbers of other tasks cannot be read: {e}"),
                );
                let out = ctx.fail(&f, None);
                let r = ctx.report(&out, DriveStats::default(), None);
                return (out, r);
            }
        }
    }
    let device = GuardedDevice::new(device, live);
    let mut effects = JobEffects {
        backend,
        run: &job.run,
        remote_task_id: &job.task.remote_task_id,
    };
    let t0 = source.device_time_ms();
    let rep = drive_with_progress(
        &mut flow,
        &device,
        &mut effects,
        &SystemClock,
        ctx.arts.as_mut(),
        cfg.drive,
        cfg.progress.as_ref(),
    );
    let device_ms = match (t0, source.device_time_ms()) {
        (Some(a), Some(b)) => Some(b.saturating_sub(a)),
        _ => None,
    };
    let outcome = match rep.outcome {
        FlowOutcome::Purchased(r) => result_of(job, *r),
        FlowOutcome::Failed(f) => {
            let f = if flow.marked() { after_mark(f) } else { f };
            ctx.fail(&f, Some(&rep.trace))
        }
        FlowOutcome::Collected(_) | FlowOutcome::Account(_) => ctx.fail(
            &after_mark(FlowFailure::manual(
                FailureCode::PageNotRecognized,
                FlowStep::Report,
                "a purchase produced a collect result",
            )),
            None,
        ),
    };
    crate::failpoint::hit("purchase.before_report");
    let r = ctx.report(&outcome, rep.stats, device_ms);
    (outcome, r)
}

/// Reconciles a run that carries an irreversible mark and no outcome (crash recovery):
/// never submits, reports success or `manual_review`.
pub fn recover_run<S: DeviceSource + ?Sized>(
    source: &S,
    cfg: &FlowExecutorConfig,
    backend: &dyn PurchaseBackend,
    job: &Job,
) -> (Outcome, TaskReport) {
    let mut ctx = Ctx {
        job,
        arts: artifacts_for(cfg, job),
    };
    let interrupted =
        |m: String| FlowFailure::manual(FailureCode::InterruptedAfterSubmit, FlowStep::Recover, m);
    let mark = job
        .run
        .irreversible_action_at
        .as_deref()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc));
    let snapshot = backend
        .store()
        .purchase_snapshot(job.run.id)
        .ok()
        .flatten()
        .and_then(|s| serde_json::from_str::<Confirmation>(&s).ok());
    let (Some(mark), Some(conf)) = (mark, snapshot) else {
        let f = interrupted(
            "interrupted after the irreversible mark; its snapshot is unreadable".into(),
        );
        let out = ctx.fail(&f, None);
        let r = ctx.report(&out, DriveStats::default(), None);
        return (out, r);
    };
    let device = match source.device() {
        Ok(d) => d,
        Err(e) => {
            // A device-loss code: the runner keeps the run open until the phone answers
            // (`gate::device_lost_after_mark`), and reports this only past its bound.
            let f = FlowFailure::manual(
                FailureCode::DeviceOffline,
                FlowStep::Recover,
                format!("after the irreversible mark the phone is not reachable: {e}"),
            );
            let out = ctx.fail(&f, None);
            let r = ctx.report(&out, DriveStats::default(), None);
            return (out, r);
        }
    };
    let rctx = match reconcile_context(backend, job, &*device) {
        Ok(c) => c,
        Err(e) => {
            let f = interrupted(format!(
                "interrupted after the irreversible mark; the order numbers of other tasks cannot be read: {e}"
            ));
            let out = ctx.fail(&f, None);
            let r = ctx.report(&out, DriveStats::default(), None);
            return (out, r);
        }
    };
    // Wake and unlock if it can be done; if not, reconciliation fails on its own
    // (manual_review) — an order may exist either way.
    if let Err(f) = super::prepare::prepare_device(&*device, source.thresholds()) {
        tracing::warn!(code = %f.code.as_str(), "recovery on a phone that is not ready: {}", f.message);
    }
    // Recovery never submits: the guard lets no 提交订单 through.
    let device = GuardedDevice::new(device, false);
    let mut flow = ReconcileFlow::new(conf, mark, true, PurchaseLimits::default().reconcile)
        .with_context(rctx);
    let mut effects = JobEffects {
        backend,
        run: &job.run,
        remote_task_id: &job.task.remote_task_id,
    };
    let rep = drive_with_progress(
        &mut flow,
        &device,
        &mut effects,
        &SystemClock,
        ctx.arts.as_mut(),
        cfg.drive,
        cfg.progress.as_ref(),
    );
    let outcome = match rep.outcome {
        FlowOutcome::Purchased(r) => result_of(job, *r),
        FlowOutcome::Failed(f) => ctx.fail(&after_mark(f), Some(&rep.trace)),
        FlowOutcome::Collected(_) | FlowOutcome::Account(_) => {
            ctx.fail(&interrupted("unexpected collect result".into()), None)
        }
    };
    crate::failpoint::hit("purchase.before_report");
    let r = ctx.report(&outcome, rep.stats, None);
    (outcome, r)
}

#[cfg(test)]
mod tests {
    //! Purchases on the simulated phone in-process: the flow, the device guard and the
    //! job's effects (a real store; a scripted §7.1 answer), checked against the phone's
    //! order ledger (the truth for "one order, never paid").

    use super::*;
    use crate::device::Device;
    use crate::job::driver::{drive, DriveLimits, DriveReport};
    use crate::job::sim_device::SimFlowDevice;
    use cmautobuy_contract::{SpecCandidate, SpecOutcome, Task};
    use cmautobuy_sim_phone::{Catalog, SimConfig};
    use serde_json::json;

    /// How the scripted Admin answers a §7.1 request.
    #[derive(Clone, Copy)]
    enum Answer {
        /// Matched: the candidate with this raw text.
        Match(&'static str),
        Other(SpecOutcome),
    }

    struct Fake {
        store: Store,
        answer: Answer,
        asked: std::sync::Mutex<u32>,
    }

    impl PurchaseBackend for Fake {
        fn store(&self) -> &Store {
            &self.store
        }
        fn live_enabled(&self) -> bool {
            true
        }
        fn resolve_spec(
            &self,
            _run: &Run,
            _remote: &str,
            req: &SpecResolutionRequest,
        ) -> Result<SpecResolutionResponse, SpecError> {
            *self.asked.lock().unwrap() += 1;
            let (outcome, matched): (SpecOutcome, Option<SpecCandidate>) = match self.answer {
                Answer::Match(raw) => (
                    SpecOutcome::Matched,
                    req.candidates.iter().find(|c| c.raw_text == raw).cloned(),
                ),
                Answer::Other(o) => (o, None),
            };
            Ok(SpecResolutionResponse {
                schema_version: 1,
                resolution_id: "psr-test".into(),
                outcome,
                source: None,
                candidate_snapshot_hash: req.candidate_snapshot_hash.clone(),
                matched,
                confidence_bps: None,
                reason: Some("test".into()),
                resolved_at: "2026-11-30T08:00:01Z".into(),
                extra: Map::new(),
            })
        }
    }

    fn phone() -> SimFlowDevice {
        let c = SimConfig::new(Catalog::load(&Catalog::bundled_dir()).expect("catalog"));
        SimFlowDevice::new(c.build_device().expect("device"))
    }

    struct Setup {
        _dir: tempfile::TempDir,
        backend: Fake,
        job: Job,
    }

    fn setup(id: &str, mode: &str, payload: Value, answer: Answer) -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("c.db")).unwrap();
        let task: Task = serde_json::from_value(json!({
            "id": id, "type": "purchase", "execution_mode": mode, "version": 1,
            "priority": 0, "payload": payload
        }))
        .unwrap();
        let now = Utc::now();
        let local = store.save_claimed_task(&task, "{}", now).unwrap();
        let run = store.start_run(local, now).unwrap();
        let job = Job {
            client_id: store.client_id().unwrap(),
            task: store.task(local).unwrap(),
            run,
            declared_mode: ExecutionMode::Live,
            previous_run: None,
        };
        Setup {
            _dir: dir,
            backend: Fake {
                store,
                answer,
                asked: std::sync::Mutex::new(0),
            },
            job,
        }
    }

    fn payload(goods: &str, options: Value, quantity: i64, max: i64) -> Value {
        json!({
            "goods_id": goods,
            "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}"),
            "options": options, "quantity": quantity, "max_price_cent": max
        })
    }

    /// The simulated phone's default delivery address, as a fingerprint.
    fn sim_address() -> Vec<String> {
        vec!["张三".into(), "广东省深圳市南山区科技园路1号".into()]
    }

    /// Runs the purchase of `s.job` on `dev`, like [`run_job`] does (with the simulated
    /// phone's address fingerprint, as a configured phone has).
    fn purchase<D: Device>(dev: &D, s: &Setup) -> (DriveReport, bool) {
        let mut task = purchase_task(&s.job, true).expect("task");
        task.expected_address = sim_address();
        let live = task.live;
        let mut flow = PurchaseFlow::new(task, PurchaseLimits::default()).expect("flow");
        let guarded = GuardedDevice::new(dev, live);
        let mut effects = JobEffects {
            backend: &s.backend,
            run: &s.job.run,
            remote_task_id: &s.job.task.remote_task_id,
        };
        let rep = drive(
            &mut flow,
            &guarded,
            &mut effects,
            &SystemClock,
            None,
            DriveLimits::default(),
        );
        assert_eq!(
            guarded.refused(),
            0,
            "the flow never asks for a refused tap: {:#?}",
            rep.trace
        );
        (rep, flow.marked())
    }

    fn failure(rep: &DriveReport) -> &FlowFailure {
        match &rep.outcome {
            FlowOutcome::Failed(f) => f,
            o => panic!("expected a failure, got {o:?} ({:#?})", rep.trace),
        }
    }

    fn purchased(rep: &DriveReport) -> &cmautobuy_contract::PurchaseResult {
        match &rep.outcome {
            FlowOutcome::Purchased(p) => p,
            o => panic!("expected a purchase, got {o:?} ({:#?})", rep.trace),
        }
    }

    const HOODIE: &str = "737116531267";

    #[test]
    fn dry_run_stops_before_the_submit_and_places_no_order() {
        let dev = phone();
        let s = setup(
            "cg1",
            "dry_run",
            payload(HOODIE, json!({"color": "黑色", "size": "L"}), 2, 20000),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, marked) = purchase(&dev, &s);
        let p = purchased(&rep);
        assert_eq!(p.mode, ExecutionMode::DryRun);
        assert!(!p.order_submitted && !p.payment_attempted);
        assert_eq!(p.payment_status, "not_created");
        assert_eq!(p.confirmed_total_cent.map(|f| f.get()), Some(11800));
        assert!(!marked);
        cmautobuy_contract::validate::check_purchase_result(p).unwrap();
        assert!(dev.phone().app().ledger().orders().is_empty());
        // Goods, sheet, selection, quantity, then two settle dumps for the total.
        assert!(rep.stats.dumps <= 6, "{} dumps", rep.stats.dumps);
    }

    /// With `money_screenshots` (the flow executor's setting), a live purchase keeps one
    /// screenshot per money step it went through, each right after a dump of that step
    /// (the viewer draws the dump over it); no other step is screenshot.
    #[test]
    fn a_live_purchase_keeps_a_screenshot_of_each_money_step() {
        let dev = phone();
        let s = setup(
            "cg-shots",
            "live",
            payload(HOODIE, json!({"color": "雾霾蓝", "size": "M"}), 2, 12600),
            Answer::Other(SpecOutcome::Failed),
        );
        let dir = tempfile::tempdir().unwrap();
        let mut arts =
            crate::artifacts::AttemptArtifacts::create(dir.path(), "cg-shots", "att-1").unwrap();
        let mut task = purchase_task(&s.job, true).expect("task");
        task.expected_address = sim_address();
        let mut flow = PurchaseFlow::new(task, PurchaseLimits::default()).expect("flow");
        let guarded = GuardedDevice::new(&dev, true);
        let mut effects = JobEffects {
            backend: &s.backend,
            run: &s.job.run,
            remote_task_id: &s.job.task.remote_task_id,
        };
        let limits = DriveLimits {
            money_screenshots: true,
            ..DriveLimits::default()
        };
        let rep = drive(
            &mut flow,
            &guarded,
            &mut effects,
            &SystemClock,
            Some(&mut arts),
            limits,
        );
        purchased(&rep);
        let pngs: Vec<&str> = arts
            .entries()
            .iter()
            .filter(|e| e.file.ends_with(".png"))
            .map(|e| e.step.as_str())
            .collect();
        for step in [
            "set_quantity",
            "confirm_total",
            "leave_payment",
            "reconcile_order",
        ] {
            assert!(pngs.contains(&step), "{step}: {pngs:?}");
        }
        assert!(
            pngs.iter().all(|s| crate::progress::is_money_step(s)),
            "{pngs:?}"
        );
        let mut unique = pngs.clone();
        unique.dedup();
        assert_eq!(unique.len(), pngs.len(), "one per step: {pngs:?}");
        assert_eq!(rep.stats.screenshots as usize, pngs.len());
        // Each right after a dump of its step, no gesture between.
        for (i, t) in rep.trace.iter().enumerate() {
            if t.kind == "screenshot" {
                let before = &rep.trace[i - 1];
                assert_eq!(
                    (before.kind, &before.step),
                    ("observe", &t.step),
                    "{:#?}",
                    rep.trace
                );
            }
        }
        // Without the setting (flow cases, tests): none.
        let dev = phone();
        let s = setup(
            "cg-noshots",
            "live",
            payload(HOODIE, json!({"color": "雾霾蓝", "size": "M"}), 2, 12600),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, _) = purchase(&dev, &s);
        assert_eq!(rep.stats.screenshots, 0);
    }

    #[test]
    fn live_places_exactly_one_unpaid_order_and_finds_it() {
        let dev = phone();
        let s = setup(
            "cg2",
            "live",
            payload(HOODIE, json!({"color": "雾霾蓝", "size": "M"}), 2, 12600),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, marked) = purchase(&dev, &s);
        assert!(marked, "{:?} {:#?}", rep.outcome, rep.trace);
        let p = purchased(&rep).clone();
        cmautobuy_contract::validate::check_purchase_result(&p).unwrap();
        let orders = dev.phone().app().ledger().orders().to_vec();
        assert_eq!(orders.len(), 1);
        let o = &orders[0];
        assert_eq!(p.order_sn.as_deref(), Some(o.order_sn.as_str()));
        assert_eq!(o.options["color"], "雾霾蓝");
        assert_eq!(o.options["size"], "M");
        assert_eq!(o.quantity, 2);
        assert_eq!(o.total_cent, 12600);
        assert_eq!(p.confirmed_total_cent.map(|f| f.get()), Some(o.total_cent));
        assert!(!o.payment_attempted && o.status == "unpaid");
        assert!(p
            .ordered_at
            .as_deref()
            .is_some_and(|t| t.ends_with("+08:00")));
        assert!(p.irreversible_action_at.is_some());
        assert!(
            rep.stats.dumps <= 16,
            "{} dumps: {:#?}",
            rep.stats.dumps,
            rep.trace
        );
        eprintln!(
            "live purchase: {} dumps, {} round trips",
            rep.stats.dumps,
            rep.stats.round_trips()
        );
        // Crash recovery of the same run only reconciles: the same order, no second one.
        let conf: Confirmation = serde_json::from_str(
            &s.backend
                .store
                .purchase_snapshot(s.job.run.id)
                .unwrap()
                .unwrap(),
        )
        .unwrap();
        let at = DateTime::parse_from_rfc3339(
            s.backend
                .store
                .run(s.job.run.id)
                .unwrap()
                .irreversible_action_at
                .as_deref()
                .unwrap(),
        )
        .unwrap()
        .with_timezone(&Utc);
        let mut flow = ReconcileFlow::new(conf, at, true, Default::default());
        let guarded = GuardedDevice::new(&dev, false);
        let rep = drive(
            &mut flow,
            &guarded,
            &mut crate::job::driver::NoEffects,
            &SystemClock,
            None,
            DriveLimits::default(),
        );
        assert_eq!(purchased(&rep).order_sn, p.order_sn);
        assert_eq!(dev.phone().app().ledger().orders().len(), 1);
    }

    /// 811223344509's deep link fails and leaves the previous task's page
    /// (811223344510, the same option names) on screen; no title in the tasks. The
    /// goods id `dumpsys activity top` shows tells them apart: one order, the first.
    #[test]
    fn a_deep_link_that_fails_never_buys_the_previous_goods() {
        let dev = phone();
        let opts = || json!({"color": "白色", "size": "M"});
        let s = setup(
            "cg-510",
            "live",
            payload("811223344510", opts(), 1, 10000),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, marked) = purchase(&dev, &s);
        let p = purchased(&rep);
        assert!(marked);
        assert_eq!(p.goods_id, "811223344510");
        assert_eq!(p.extra["goods_identity"], "activity_top");
        assert_eq!(rep.stats.goods_id_reads, 1, "one read per goods page");
        // The previous task's goods page is on screen again (as after a collect of it).
        // A dry run's failing deep link shows it: another goods id, never bought.
        let previous = "pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=811223344510";
        dev.open_url(previous).unwrap();
        let s = setup(
            "cg-509-dry",
            "dry_run",
            payload("811223344509", opts(), 1, 10000),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, marked) = purchase(&dev, &s);
        let f = failure(&rep);
        assert_eq!(
            (f.status, f.code.clone()),
            (FailureStatus::Failed, FailureCode::GoodsMismatch)
        );
        assert_eq!(f.diagnostics["observed_goods_id"], "811223344510");
        assert!(!marked);
        // Live: the census leaves the order list in front, where the failing link
        // lands; nothing is tapped on any sheet and nothing is ordered.
        dev.open_url(previous).unwrap();
        let s = setup(
            "cg-509",
            "live",
            payload("811223344509", opts(), 1, 10000),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, marked) = purchase(&dev, &s);
        let f = failure(&rep);
        assert_ne!(f.status, FailureStatus::ManualReview, "{f:?}");
        assert!(!marked);
        let orders = dev.phone().app().ledger().orders().to_vec();
        assert_eq!(orders.len(), 1, "{orders:?}");
        assert_eq!(orders[0].goods_id, "811223344510");
    }

    /// With no goods id observable (a phone whose `dumpsys` prints none) and no
    /// expected title, a live purchase is refused before any tap on the sheet; a dry run
    /// goes on and says `unverified`; an expected title is a proof for a dry run only
    ///: a live purchase with only the title is refused too.
    #[test]
    fn no_observable_goods_id_refuses_a_live_submit_and_a_title_proves_it() {
        /// The simulated phone whose `dumpsys activity top` names no goods.
        struct Blind(SimFlowDevice);
        impl Device for Blind {
            fn dump_ui(&self) -> Result<crate::device::UiDump, crate::device::DeviceError> {
                self.0.dump_ui()
            }
            fn tap(&self, at: crate::screen::Point) -> Result<(), crate::device::DeviceError> {
                self.0.tap(at)
            }
            fn swipe(
                &self,
                a: crate::screen::Point,
                b: crate::screen::Point,
                d: std::time::Duration,
            ) -> Result<(), crate::device::DeviceError> {
                self.0.swipe(a, b, d)
            }
            fn key(&self, k: crate::device::KeyCode) -> Result<(), crate::device::DeviceError> {
                self.0.key(k)
            }
            fn open_url(&self, u: &str) -> Result<(), crate::device::DeviceError> {
                self.0.open_url(u)
            }
            fn screenshot(&self) -> Result<crate::device::Png, crate::device::DeviceError> {
                self.0.screenshot()
            }
            fn shell(
                &self,
                argv: &[&str],
            ) -> Result<crate::device::ShellOutput, crate::device::DeviceError> {
                if argv.first() == Some(&"dumpsys") {
                    return Ok(crate::device::ShellOutput::default());
                }
                self.0.shell(argv)
            }
        }
        let opts = || json!({"color": "黑色", "size": "L"});
        let dev = Blind(phone());
        let s = setup(
            "cg-blind-live",
            "live",
            payload(HOODIE, opts(), 1, 10000),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, marked) = purchase(&dev, &s);
        let f = failure(&rep);
        assert_eq!(
            (f.status, f.code.clone(), f.step.clone()),
            (
                FailureStatus::ManualReview,
                FailureCode::GoodsIdentityUnverified,
                FlowStep::CheckGoods
            )
        );
        assert!(!marked);
        assert_eq!(rep.stats.taps, 0, "no tap at all: {:#?}", rep.trace);
        assert!(dev.0.phone().app().ledger().orders().is_empty());

        let s = setup(
            "cg-blind-dry",
            "dry_run",
            payload(HOODIE, opts(), 1, 10000),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, _) = purchase(&dev, &s);
        assert_eq!(purchased(&rep).extra["goods_identity"], "unverified");

        let mut titled = payload(HOODIE, opts(), 1, 10000);
        titled["expected_title"] = json!("加厚连帽卫衣女秋冬款");
        let s = setup(
            "cg-blind-title",
            "live",
            titled.clone(),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, marked) = purchase(&dev, &s);
        let f = failure(&rep);
        assert_eq!(
            (f.status, f.code.clone()),
            (
                FailureStatus::ManualReview,
                FailureCode::GoodsIdentityUnverified
            )
        );
        assert_eq!(f.diagnostics["goods_identity"], "title");
        assert!(!marked);
        assert!(dev.0.phone().app().ledger().orders().is_empty());

        let s = setup(
            "cg-blind-title-dry",
            "dry_run",
            titled,
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, _) = purchase(&dev, &s);
        assert_eq!(purchased(&rep).extra["goods_identity"], "title");
    }

    #[test]
    fn a_total_above_the_limit_places_no_order() {
        let dev = phone();
        let s = setup(
            "cg3",
            "live",
            payload(HOODIE, json!({"color": "黑色", "size": "L"}), 2, 11799),
            Answer::Other(SpecOutcome::Failed),
        );
        let (rep, marked) = purchase(&dev, &s);
        let f = failure(&rep);
        assert_eq!(f.code, FailureCode::PriceLimitExceeded);
        assert_eq!(f.status, FailureStatus::Failed);
        assert!(!marked);
        assert!(dev.phone().app().ledger().orders().is_empty());
    }

    #[test]
    fn spec_resolution_outcomes() {
        let weights = "602938475610";
        let cases = [
            (Answer::Match("120斤"), None),
            (
                Answer::Other(SpecOutcome::Uncertain),
                Some((
                    FailureStatus::ManualReview,
                    FailureCode::SpecResolutionUncertain,
                )),
            ),
            (
                Answer::Other(SpecOutcome::Rejected),
                Some((FailureStatus::Failed, FailureCode::SpecResolutionRejected)),
            ),
            (
                Answer::Other(SpecOutcome::Failed),
                Some((FailureStatus::RetryWait, FailureCode::SpecResolutionFailed)),
            ),
        ];
        for (i, (answer, want)) in cases.into_iter().enumerate() {
            let dev = phone();
            let s = setup(
                &format!("cg-spec-{i}"),
                "live",
                payload(weights, json!({"color": "黑色", "size": "60公斤"}), 1, 5000),
                answer,
            );
            let (rep, _) = purchase(&dev, &s);
            assert_eq!(
                *s.backend.asked.lock().unwrap(),
                1,
                "exactly one resolution"
            );
            let orders = dev.phone().app().ledger().orders().to_vec();
            match want {
                None => {
                    let p = purchased(&rep);
                    assert_eq!(p.options["size"], "120斤");
                    assert_eq!(p.spec_resolution_id.as_deref(), Some("psr-test"));
                    assert_eq!(orders.len(), 1);
                    assert_eq!(orders[0].options["size"], "120斤");
                }
                Some((status, code)) => {
                    let f = failure(&rep);
                    assert_eq!((f.status, f.code.clone()), (status, code));
                    assert!(orders.is_empty());
                }
            }
        }
    }

    #[test]
    fn pages_that_stop_a_purchase() {
        let cases = [
            (
                "726677889900",
                json!({"capacity": "500ml"}),
                FailureStatus::ManualReview,
                FailureCode::AddressMissing,
            ),
            (
                HOODIE,
                json!({"color": "黑色", "size": "XL"}),
                FailureStatus::Failed,
                FailureCode::SpecSoldOut,
            ),
            (
                "659910273845",
                json!({"color": "经典黑", "size": "40"}),
                FailureStatus::Failed,
                FailureCode::SpecSoldOut,
            ),
            (
                "682233445566",
                json!({"color": "白色"}),
                FailureStatus::ManualReview,
                FailureCode::LoginRequired,
            ),
            (
                "693344556677",
                json!({"spec": "500ml"}),
                FailureStatus::ManualReview,
                FailureCode::RiskVerification,
            ),
            (
                HOODIE,
                json!({"color": "紫色", "size": "L"}),
                FailureStatus::Failed,
                FailureCode::SpecNotFound,
            ),
        ];
        for (i, (goods, options, status, code)) in cases.into_iter().enumerate() {
            let dev = phone();
            let s = setup(
                &format!("cg-stop-{i}"),
                "live",
                payload(goods, options, 1, 1_000_000),
                Answer::Other(SpecOutcome::Failed),
            );
            let (rep, marked) = purchase(&dev, &s);
            let f = failure(&rep);
            assert_eq!(
                (f.status, f.code.clone()),
                (status, code),
                "{goods}: {}",
                f.message
            );
            assert!(!marked);
            assert!(dev.phone().app().ledger().orders().is_empty());
        }
    }

    #[test]
    fn identical_unpaid_orders_from_before_the_submit_are_never_adopted() {
        // Two identical unpaid orders of the goods are already there (placed minutes
        // ago, inside any time window): the census counts them before the submit, so
        // the third purchase adopts only the order its own tap created.
        let dev = phone();
        let p = || payload(HOODIE, json!({"color": "燕麦色", "size": "S"}), 1, 6300);
        for i in 0..2 {
            let s = setup(
                &format!("cg-pre-{i}"),
                "live",
                p(),
                Answer::Other(SpecOutcome::Failed),
            );
            let (rep, _) = purchase(&dev, &s);
            purchased(&rep);
        }
        let before: Vec<String> = dev
            .phone()
            .app()
            .ledger()
            .orders()
            .iter()
            .map(|o| o.order_sn.clone())
            .collect();
        let s = setup("cg-new", "live", p(), Answer::Other(SpecOutcome::Failed));
        let (rep, marked) = purchase(&dev, &s);
        assert!(marked);
        let r = purchased(&rep);
        let orders = dev.phone().app().ledger().orders().to_vec();
        assert_eq!(orders.len(), 3);
        assert_eq!(r.order_sn.as_deref(), Some(orders[2].order_sn.as_str()));
        assert!(!before.contains(&orders[2].order_sn));
        assert!(orders.iter().all(|o| !o.payment_attempted));
    }

    #[test]
    fn the_guard_refuses_pay_buttons_and_a_second_submit() {
        let dev = phone();
        let s = setup(
            "cg-guard",
            "live",
            payload(HOODIE, json!({"color": "黑色", "size": "M"}), 1, 5900),
            Answer::Other(SpecOutcome::Failed),
        );
        let _ = purchase(&dev, &s).0;
        dev.phone().run_line("input swipe 540 700 540 2200");
        dev.phone().run_line("input swipe 540 700 540 2200");
        // The order list: try 去支付 on the card.
        let g = GuardedDevice::new(&dev, true);
        let dump = g.dump_ui().unwrap();
        let pay = dump
            .tree
            .nodes()
            .find(|n| n.label() == "去支付")
            .and_then(|n| n.tap_point())
            .expect("a 去支付 button on the order list");
        let e = g.tap(pay).unwrap_err();
        assert_eq!(e.code(), "TAP_REFUSED");
        assert_eq!(g.refused(), 1);
        assert!(dev
            .phone()
            .app()
            .ledger()
            .orders()
            .iter()
            .all(|o| !o.payment_attempted));
    }
}
