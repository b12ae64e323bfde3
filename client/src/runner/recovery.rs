//! Recovery: runs a crash or a lost phone left open — reconciled through the executor
//! (never a second submit), kept open while the phone is away, reported
//! `manual_review` once they are overdue.

use super::*;

/// A marked run whose phone stayed away past `reconcile_wait_max`: what its
/// `manual_review` says.
pub(super) struct Overdue {
    device: String,
    marked_at: String,
    max: Duration,
}

impl Overdue {
    /// Makes `f` the `manual_review` report of a run the phone left unreconciled: the
    /// message says that an unpaid order may exist and where to look for it.
    pub(super) fn apply(&self, f: &mut cmautobuy_contract::FailureRequest) {
        f.status = FailureStatus::ManualReview;
        f.error.retryable = false;
        let before = std::mem::take(&mut f.error.message);
        f.error.message = format!(
            "订单可能已生成：提交订单后手机离线，{} 秒内未能核对，请在手机 {} 的待付款中查找（不要付款） / the order may exist: the phone {} went away after the 提交订单 tap at {} and did not answer within {} s to reconcile it; look for an unpaid order in 待付款 on it (never pay){}",
            self.max.as_secs(),
            self.device,
            self.device,
            self.marked_at,
            self.max.as_secs(),
            if before.is_empty() {
                String::new()
            } else {
                format!(" — {before}")
            }
        );
        f.diagnostics.insert(
            "irreversible_action_at".into(),
            serde_json::Value::String(self.marked_at.clone()),
        );
        f.diagnostics.insert(
            "reconcile_wait_max_secs".into(),
            serde_json::Value::from(self.max.as_secs()),
        );
    }
}

impl<G: AdminGateway, E: Executor, C: Clock> Runner<G, E, C> {
    /// Re-runs tasks interrupted by a crash (claimed or running, no outcome yet).
    pub async fn recover(&self) -> Result<(), RunError> {
        let declared = self.profile()?.capabilities.purchase_mode;
        for t in self.store.unfinished_tasks()? {
            if t.state == TaskState::Reporting {
                continue; // the outbox delivers it
            }
            if t.task_type == TaskType::Purchase.as_str() {
                // An interrupted purchase attempt is reported under its own
                // attempt id and never run again in-process (see `recover_purchase`).
                let open = self.store.open_runs(t.id)?;
                if !open.is_empty() {
                    for run in open {
                        self.recover_purchase(&t, run, declared).await?;
                    }
                    continue;
                }
            }
            tracing::warn!(task_id = %t.remote_task_id, state = t.state.as_str(), "resuming an interrupted task");
            let previous = self.store.latest_run(t.id)?;
            self.execute(t.id, declared, previous).await?;
        }
        Ok(())
    }

    /// Reports a purchase run a crash cut short. With an irreversible mark the
    /// executor reconciles it (never a second submit) and anything unproven is
    /// `manual_review`. Without a mark but with the note a spec sheet's 确定 leaves before
    /// it is tapped (`Store::note_proceed`: a purchase snapshot and no mark), that tap may
    /// have led to a cashier and an order may exist: `manual_review
    /// ORDER_PLACED_UNCONFIRMED`, not reconciled (no mark time to reconcile against),
    /// nothing tapped again. Otherwise nothing was submitted, so the attempt is reported
    /// `retry_wait INTERRUPTED_BEFORE_SUBMIT` and the Admin may dispatch the task again.
    async fn recover_purchase(
        &self,
        task: &crate::store::StoredTask,
        run: crate::store::Run,
        declared: ExecutionMode,
    ) -> Result<(), RunError> {
        tracing::warn!(task_id = %task.remote_task_id, attempt_id = %run.attempt_id, marked = run.irreversible_action_at.is_some(), "recovering an interrupted purchase attempt");
        let marked = run.irreversible_action_at.is_some();
        let job = Job {
            client_id: self.store.client_id()?,
            task: task.clone(),
            run,
            declared_mode: declared,
            previous_run: None,
        };
        let outcome = if marked {
            match self.executor.recover_marked(job.clone()).await {
                Some(Outcome::Failure(mut f)) => {
                    // The phone went away (again): the run stays open until it answers.
                    if crate::gate::device_lost_after_mark(&f.error.code) {
                        match self.keep_open(&job, &f.error.code, &f.error.message) {
                            Ok(()) => return Ok(()),
                            Err(overdue) => overdue.apply(&mut f),
                        }
                    }
                    // Defence in depth: after the mark, every failure is manual_review.
                    f.status = FailureStatus::ManualReview;
                    f.error.retryable = false;
                    Outcome::Failure(f)
                }
                Some(o) => o,
                None => Outcome::Failure(Box::new(failure(
                    &job,
                    FailureStatus::ManualReview,
                    "INTERRUPTED_AFTER_SUBMIT",
                    "interrupted after the irreversible mark; this client cannot reconcile the order",
                    Some("recover"),
                ))),
            }
        } else if let Some(noted) = self.store.purchase_snapshot(job.run.id)? {
            // A spec sheet's 确定 may have gone out: never "nothing was submitted".
            let unconfirmed = serde_json::from_str::<serde_json::Value>(&noted).ok();
            let mut f = failure(
                &job,
                FailureStatus::ManualReview,
                cmautobuy_contract::FailureCode::OrderPlacedUnconfirmed.as_str(),
                "interrupted after the spec sheet's 确定 was noted for its tap, before 确认订单 or the 提交订单 mark: if that tap led to a cashier an order may exist; it was not reconciled and nothing is tapped again",
                Some("recover"),
            );
            f.diagnostics.insert(
                "operator".into(),
                crate::reasons::placed_unconfirmed(Some("interrupted")).to_value(),
            );
            if let Some(mut c) = unconfirmed {
                // Other orders' cards stay on the phone's side.
                if let Some(o) = c.as_object_mut() {
                    o.remove("census_top");
                    o.remove("census_unopened");
                }
                f.diagnostics.insert("proceed_note".into(), c);
            }
            Outcome::Failure(Box::new(f))
        } else {
            Outcome::Failure(Box::new(failure(
                &job,
                FailureStatus::RetryWait,
                "INTERRUPTED_BEFORE_SUBMIT",
                "the attempt was interrupted before anything irreversible; nothing was submitted",
                Some("recover"),
            )))
        };
        self.task_ended();
        self.record(&job, outcome)
    }

    /// A marked run whose phone went away (a device-loss failure after the mark): keeps
    /// it open — no outcome, nothing reported, exactly as a crash leaves it — and pauses
    /// the worker for the phone; the claim loop reconciles it through
    /// [`Runner::reconcile_waiting`] once a probe passes. `Err` when it has waited past
    /// `reconcile_wait_max` since its mark: the caller reports it `manual_review`.
    pub(super) fn keep_open(&self, job: &Job, code: &str, message: &str) -> Result<(), Overdue> {
        let now = self.clock.now();
        let marked_at = self
            .store
            .run(job.run.id)
            .ok()
            .and_then(|r| r.irreversible_action_at);
        let mark = marked_at
            .as_deref()
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&chrono::Utc));
        let max = self.cfg.gate.reconcile_wait_max;
        let overdue = Overdue {
            device: self.device_name(),
            marked_at: marked_at.clone().unwrap_or_default(),
            max,
        };
        let Some(mark) = mark else {
            return Err(overdue);
        };
        if crate::gate::reconcile_overdue(mark, now, max) {
            tracing::error!(task_id = %job.task.remote_task_id, attempt_id = %job.run.attempt_id, marked_at = %overdue.marked_at, "the phone stayed away past reconcile_wait_max after the 提交订单 tap: reporting manual_review, the order may exist");
            return Err(overdue);
        }
        tracing::warn!(task_id = %job.task.remote_task_id, attempt_id = %job.run.attempt_id, marked_at = %overdue.marked_at, %code, %message, "the phone went away after the 提交订单 tap: the run stays open (like a crash) and is reconciled when the phone answers, never submitted again");
        let why = format!(
            "order placed on {}, waiting for the phone to reconcile it (task {}, submitted {}): {message}",
            overdue.device, job.task.remote_task_id, overdue.marked_at
        );
        let t = self.gate().on_device_lost(now, code, &why);
        self.transition(t);
        self.task_ended();
        Ok(())
    }

    /// The phone this client drives, as configured (for messages).
    fn device_name(&self) -> String {
        self.store
            .settings()
            .ok()
            .and_then(|s| s.device)
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| "the phone".to_string())
    }

    /// The marked runs left open (the phone went away after the mark, or a crash), with
    /// their tasks, oldest first.
    fn waiting_runs(&self) -> Result<Vec<(crate::store::StoredTask, crate::store::Run)>, RunError> {
        let mut out = Vec::new();
        for t in self.store.unfinished_tasks()? {
            if t.task_type != TaskType::Purchase.as_str() || t.state == TaskState::Reporting {
                continue;
            }
            for run in self.store.open_runs(t.id)? {
                if run.irreversible_action_at.is_some() {
                    out.push((t.clone(), run));
                }
            }
        }
        Ok(out)
    }

    /// Runs waiting for their phone past `reconcile_wait_max` while the worker is paused
    /// for it: reported `manual_review` now, without the phone (the message says an
    /// order may exist and where to look).
    pub(super) fn report_overdue(&self) -> Result<(), RunError> {
        if self.gate().pause().is_none() {
            return Ok(());
        }
        let now = self.clock.now();
        let max = self.cfg.gate.reconcile_wait_max;
        for (task, run) in self.waiting_runs()? {
            let Some(mark) = run
                .irreversible_action_at
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map(|t| t.with_timezone(&chrono::Utc))
            else {
                continue;
            };
            if !crate::gate::reconcile_overdue(mark, now, max) {
                continue;
            }
            let overdue = Overdue {
                device: self.device_name(),
                marked_at: run.irreversible_action_at.clone().unwrap_or_default(),
                max,
            };
            let job = Job {
                client_id: self.store.client_id()?,
                task: task.clone(),
                run,
                declared_mode: ExecutionMode::DryRun,
                previous_run: None,
            };
            let since = self
                .gate()
                .pause()
                .map(|p| cmautobuy_contract::time::format_utc(p.since))
                .unwrap_or_default();
            let mut f = failure(
                &job,
                FailureStatus::ManualReview,
                "DEVICE_OFFLINE",
                &format!("the phone has not answered since {since}"),
                Some(FlowStep::ReconcileOrder.as_str()),
            );
            overdue.apply(&mut f);
            f.diagnostics.insert(
                "artifact_ref".into(),
                serde_json::Value::String(format!(
                    "{}:artifacts/{}/{}/",
                    job.client_id,
                    crate::artifacts::safe_component(&job.task.remote_task_id),
                    crate::artifacts::safe_component(&job.run.attempt_id)
                )),
            );
            tracing::error!(task_id = %job.task.remote_task_id, attempt_id = %job.run.attempt_id, marked_at = %overdue.marked_at, "the phone stayed away past reconcile_wait_max after the 提交订单 tap: reporting manual_review, the order may exist");
            self.task_ended();
            self.record(&job, Outcome::Failure(Box::new(f)))?;
        }
        Ok(())
    }

    /// Before any new claim (the device gate has just passed): reconciles the marked runs
    /// left open through crash recovery. `Some(step)` when there was one.
    pub(super) async fn reconcile_waiting(&self) -> Result<Option<ClaimStep>, RunError> {
        let waiting = self.waiting_runs()?;
        let Some((task, _)) = waiting.first() else {
            return Ok(None);
        };
        let remote_task_id = task.remote_task_id.clone();
        let declared = self.profile()?.capabilities.purchase_mode;
        for (task, run) in waiting {
            tracing::info!(task_id = %task.remote_task_id, attempt_id = %run.attempt_id, "the phone answers: reconciling the order placed before it went away");
            self.recover_purchase(&task, run, declared).await?;
            if self.gate().pause().is_some() {
                break; // away again: the rest waits too
            }
        }
        Ok(Some(ClaimStep::Processed { remote_task_id }))
    }
}
