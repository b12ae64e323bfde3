//! Between tasks: what the claim loop does when no task is in hand — the device gate
//! (checks, pauses, spacing), the disk budget, the daily store backup, the
//! self-test, the clock and account checks.

use super::*;
use crate::alert::AlertKind;

impl<G: AdminGateway, E: Executor, C: Clock> Runner<G, E, C> {
    /// The disk budget after a task (or at start: `job = None`), on a blocking thread.
    pub(super) async fn disk_budget_step(&self, job: Option<&Job>) {
        let Some(u) = self.disk_budget.clone() else {
            return;
        };
        let now = self.clock.now();
        let ids = job.map(|j| {
            (
                j.task.remote_task_id.clone(),
                j.run.attempt_id.clone(),
                j.run.id,
            )
        });
        let done = tokio::task::spawn_blocking(move || match ids {
            Some((t, a, r)) => u.after_task(&t, &a, r, now),
            None => u.start(now),
        })
        .await;
        if let Err(e) = done {
            tracing::error!(error = %e, "disk budget panicked");
        }
    }

    /// The self-test before a claim: when `self_test_goods_id` is set
    /// and [`crate::self_test::due`] says so for the phone's current PDD version — never
    /// run on it, asked for (`Store::request_self_test`), or failed and its backoff
    /// passed. A pass proves the version (`self-test ATTEMPT`) and closes
    /// `self_test_failed`; a failure raises it (non-blocking). Returns whether a
    /// self-test ran (the pacing gap then counts from its end, like a task's).
    pub async fn self_test_step(&self) -> bool {
        use crate::gate::PddVersionRead;
        let live = &self.live();
        let Some(goods) = live.self_test_goods_id.clone() else {
            return false;
        };
        if live.dry_run_only {
            return false;
        }
        let r = self.executor.readiness();
        if !(r.device_ready && r.purchase_adapter_ready && r.live_adapter_ready) {
            return false;
        }
        let settings = match self.store.settings() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read settings for the self-test");
                return false;
            }
        };
        let Some(serial) = settings.device.clone().filter(|d| !d.is_empty()) else {
            return false;
        };
        let Some(PddVersionRead::Version(version)) = self.executor.pdd_version() else {
            return false;
        };
        let now = self.clock.now();
        let requested = self.store.self_test_requested(&serial).unwrap_or(false);
        let record = match self.store.self_test(&serial, &version) {
            Ok(r) => r.map(|r| r.record()),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the self-test record");
                return false;
            }
        };
        if !crate::self_test::due(record.as_ref(), requested, now) {
            return false;
        }
        if requested {
            if let Err(e) = self.store.clear_self_test_request() {
                tracing::warn!(error = %e, "cannot clear the self-test request");
            }
        }
        let attempt_id = format!(
            "{}{}",
            crate::self_test::ATTEMPT_PREFIX,
            uuid::Uuid::new_v4()
        );
        tracing::info!(device = %serial, pdd_version = %version, %attempt_id, goods_id = %goods, requested, "self-test: a dry-run purchase on the test goods (no Admin involved)");
        if let Err(e) = self
            .store
            .start_self_test(&serial, &version, &attempt_id, now)
        {
            tracing::warn!(error = %e, "cannot record the self-test start; not run");
            return false;
        }
        let Some(run) = self
            .executor
            .self_test(settings.client_id.clone(), goods, attempt_id.clone())
            .await
        else {
            return false;
        };
        let now = self.clock.now();
        // Keyed on the version the self-test itself read, when it differs (PDD updated
        // between the check and the test).
        let v = run.version.clone().unwrap_or_else(|| version.clone());
        if v != version {
            let _ = self.store.start_self_test(&serial, &v, &attempt_id, now);
        }
        let folder = run.artifact_ref.clone().unwrap_or_else(|| "-".into());
        let finished = match &run.outcome {
            Ok(()) => self
                .store
                .finish_self_test(&serial, &v, &attempt_id, Ok(()), now),
            Err((code, message)) => {
                self.store
                    .finish_self_test(&serial, &v, &attempt_id, Err((code, message)), now)
            }
        };
        if let Err(e) = finished {
            tracing::warn!(error = %e, "cannot record the self-test outcome");
        }
        match &run.outcome {
            Ok(()) => {
                tracing::info!(device = %serial, pdd_version = %v, %attempt_id, artifacts = %folder, "self-test passed");
                let by = format!("self-test {attempt_id}");
                if let Err(e) = self.store.prove_pdd_version(&serial, &v, &by, now) {
                    tracing::warn!(error = %e, "cannot record the proven PDD version");
                }
                if let Err(e) = self.store.resolve_alerts(AlertKind::SelfTestFailed, now) {
                    tracing::warn!(error = %e, "cannot close the self_test_failed alert");
                }
            }
            Err((code, message)) => {
                let failures = self
                    .store
                    .self_test(&serial, &v)
                    .ok()
                    .flatten()
                    .map_or(1, |r| r.failures);
                let next = crate::self_test::retry_after(failures);
                tracing::error!(device = %serial, pdd_version = %v, %attempt_id, %code, %message, artifacts = %folder, next_try_secs = next.as_secs(), "self-test failed: live paused (collects and dry runs continue)");
                let text = format!(
                    "自检失败，暂停实单 / self-test failed on phone {serial}, PDD {v}: [{code}] {message}; evidence: {folder}; live paused (collects and dry runs continue), next try in {} min (or `cmautobuy-client self-test`)",
                    next.as_secs() / 60
                );
                let open = self
                    .store
                    .open_alerts()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|a| a.kind == AlertKind::SelfTestFailed)
                    .collect::<Vec<_>>();
                // One open alert: the newest failure replaces the older one.
                for a in &open {
                    let _ = self.store.ack_alerts(Some(a.id), now);
                }
                if let Err(e) = self
                    .store
                    .raise_alert(AlertKind::SelfTestFailed, None, &text, now)
                {
                    tracing::warn!(error = %e, "cannot save the self_test_failed alert");
                }
            }
        }
        self.task_ended();
        true
    }

    /// The daily store backup, between tasks: due when the newest one in `backups/` is a
    /// day old (or there is none). Read through a connection of its own, so it holds
    /// nothing the tasks need; a failure is logged and tried again an hour later.
    pub fn daily_backup(&self) {
        if self.cfg.backups_keep == 0 {
            return;
        }
        let now = self.clock.now();
        let day = chrono::Duration::from_std(crate::store::backup::DAILY)
            .unwrap_or(chrono::Duration::days(1));
        let mut last = self.last_backup.lock().unwrap_or_else(|p| p.into_inner());
        let newest = *last.get_or_insert_with(|| {
            self.store
                .latest_backup()
                .unwrap_or(chrono::DateTime::<chrono::Utc>::MIN_UTC)
        });
        if now - newest < day {
            return;
        }
        match self.store.backup("daily", self.cfg.backups_keep, now) {
            Ok(b) => {
                tracing::info!(path = %b.path.display(), bytes = b.bytes, ms = b.took.as_millis() as u64, "daily store backup taken and verified");
                *last = Some(now);
            }
            Err(e) => {
                tracing::warn!(error = %e, "daily store backup failed; trying again in an hour");
                *last = Some(now - day + chrono::Duration::hours(1));
            }
        }
    }

    /// The clock check before a claim: the phone's clock at start and hourly, the
    /// Admin's from its last answer; a refusal that begins raises a `clock_skew` alert
    /// (it does not stop claiming) and is recorded for `status`; one that ends is cleared.
    pub async fn check_clocks(&self) {
        let now = self.clock.now();
        let due = {
            let c = self.clocks.lock().unwrap_or_else(|p| p.into_inner());
            crate::clock_check::phone_due(
                c.phone_read_at,
                now,
                crate::clock_check::PHONE_CHECK_EVERY,
            )
        };
        let phone = if due {
            Some(self.executor.phone_clock_offset_ms().await)
        } else {
            None
        };
        let offsets = {
            let mut c = self.clocks.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(ms) = phone {
                c.phone_read_at = Some(now);
                c.phone_ms = ms;
            }
            crate::clock_check::Offsets {
                admin_ms: self.gateway.admin_clock_offset_ms(),
                phone_ms: c.phone_ms,
            }
        };
        let verdict = crate::clock_check::too_far(self.cfg.max_clock_skew, &offsets);
        let before = {
            let mut c = self.clocks.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut c.refused, verdict.clone())
        };
        match (before.is_some(), verdict) {
            (false, Some(why)) => {
                tracing::error!(admin_offset_ms = ?offsets.admin_ms, phone_offset_ms = ?offsets.phone_ms, "clock skew: {why}; declaring dry_run");
                let open = self
                    .store
                    .open_alerts()
                    .map(|a| a.iter().any(|a| a.kind == AlertKind::ClockSkew))
                    .unwrap_or(false);
                if !open {
                    let msg = format!("时钟偏差，暂停实单 / clock skew: {why}");
                    if let Err(e) = self
                        .store
                        .raise_alert(AlertKind::ClockSkew, None, &msg, now)
                    {
                        tracing::warn!(error = %e, "cannot save the clock skew alert");
                    }
                }
                if let Err(e) = self.store.set_clock_skew(Some(&why)) {
                    tracing::warn!(error = %e, "cannot record the clock skew");
                }
            }
            (true, None) => {
                tracing::info!("clocks agree again: live purchases allowed");
                if let Err(e) = self.store.set_clock_skew(None) {
                    tracing::warn!(error = %e, "cannot clear the clock skew");
                }
            }
            _ => {}
        }
    }

    /// The account check before a claim, between tasks: only while
    /// this client would declare `live`, at the first passing device check of the run,
    /// daily after, and 5 min after a failed check. The first reading on this phone is
    /// recorded as its baseline; another account raises an `account_changed` alert (live
    /// stops, claims continue) until `ack` accepts it; the recorded account seen again
    /// closes that alert. A failed check keeps live off until one succeeds.
    pub async fn check_account(&self) {
        let settings = match self.store.settings() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read settings for the account check");
                return;
            }
        };
        if !self.cfg.gate.account_check {
            return;
        }
        let would_be_live =
            self.proven_profile(&settings).capabilities.purchase_mode == ExecutionMode::Live;
        let now = self.clock.now();
        if !would_be_live || !self.account_state().check.due(now) {
            self.note_account_refusal();
            return;
        }
        let Some(check) = self.executor.check_account().await else {
            self.account_state().applies = Some(false);
            return;
        };
        let serial = settings.device.clone().unwrap_or_default();
        let outcome = match check {
            crate::executor::AccountCheck::Read(r) => {
                match self.store.record_account_check(&serial, &r, now) {
                    Ok((verdict, before)) => Ok((r, verdict, before)),
                    Err(e) => Err(format!("the reading could not be recorded: {e}")),
                }
            }
            crate::executor::AccountCheck::Failed { code, message } => {
                Err(format!("[{code}] {message}"))
            }
        };
        {
            let mut st = self.account_state();
            st.applies = Some(true);
            match &outcome {
                Ok(_) => {
                    st.check.ok_at = Some(now);
                    st.check.failed = None;
                }
                Err(why) => st.check.failed = Some((now, why.clone())),
            }
        }
        match outcome {
            Ok((r, crate::account::Verdict::Baseline, _)) => {
                tracing::info!(device = %serial, account = %r.describe(), "account fingerprint recorded as this phone's baseline");
            }
            Ok((r, crate::account::Verdict::Same, _)) => {
                tracing::info!(device = %serial, account = %r.describe(), "account check: the recorded account");
                match self.store.resolve_alerts(AlertKind::AccountChanged, now) {
                    Ok(n) if n > 0 => tracing::info!(
                        "the recorded account is back on the phone: account_changed closed"
                    ),
                    Ok(_) => {}
                    Err(e) => tracing::warn!(error = %e, "cannot close account_changed"),
                }
            }
            Ok((r, crate::account::Verdict::Changed, before)) => {
                let old = before
                    .map(|f| f.baseline.describe())
                    .unwrap_or_else(|| "-".into());
                let open = self
                    .store
                    .open_alerts()
                    .map(|a| a.iter().any(|a| a.kind == AlertKind::AccountChanged))
                    .unwrap_or(false);
                tracing::error!(device = %serial, recorded = %old, now = %r.describe(), "the account on the phone changed: declaring dry_run until acknowledged");
                if !open {
                    let msg = format!(
                        "手机 {serial} 上的账号已变更 / the account on phone {serial} changed: recorded {old}, now {}",
                        r.describe()
                    );
                    if let Err(e) =
                        self.store
                            .raise_alert(AlertKind::AccountChanged, None, &msg, now)
                    {
                        tracing::warn!(error = %e, "cannot save the account_changed alert");
                    }
                }
            }
            Err(why) => {
                tracing::warn!(device = %serial, %why, "account check failed: declaring dry_run until a check succeeds (collects and dry runs continue)");
            }
        }
        self.note_account_refusal();
    }

    /// Marks the end of a task: the pacing gap counts from now.
    pub(super) fn task_ended(&self) {
        *self.last_task_end.lock().unwrap_or_else(|p| p.into_inner()) = Some(self.clock.now());
    }

    /// The pacing gap: `Some(step)` while the last task ended less than
    /// `min_task_gap` ago.
    pub(super) fn gap_step(&self) -> Option<ClaimStep> {
        let last = *self.last_task_end.lock().unwrap_or_else(|p| p.into_inner());
        let wait = pacing::gap_wait(&self.cfg.pacing, last, self.clock.now())?;
        Some(ClaimStep::Waiting {
            reason: format!(
                "min_task_gap: {} s between tasks",
                self.cfg.pacing.min_task_gap.as_secs_f64()
            ),
            wait,
        })
    }

    pub(super) fn gate(&self) -> std::sync::MutexGuard<'_, DeviceGate> {
        self.gate.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The device pause, if the worker is paused for its phone.
    pub fn device_pause(&self) -> Option<crate::gate::Pause> {
        self.gate().pause().cloned()
    }

    /// Logs a pause or a resume and records it for `status` (a store failure is logged;
    /// the pause holds in memory either way).
    pub(super) fn transition(&self, t: Option<Transition>) {
        let saved = match t {
            None => return,
            Some(Transition::Paused(p)) => {
                tracing::warn!(code = %p.code, reason = %p.message, since = %p.since, "device not ready: worker paused, no claims until the phone answers");
                if crate::gate::needs_human(&p.code) {
                    self.device_alert(&p.code, &p.message);
                }
                self.store.set_device_pause(Some(&DevicePause {
                    since: cmautobuy_contract::time::format_utc(p.since),
                    code: p.code.clone(),
                    message: p.message.clone(),
                }))
            }
            Some(Transition::Resumed { since, probes }) => {
                let away = (self.clock.now() - since).num_seconds();
                tracing::info!(%since, away_secs = away, probes, "device ready again: worker resumed");
                if let Err(e) = self
                    .store
                    .resolve_alerts(AlertKind::DeviceAttention, self.clock.now())
                {
                    tracing::warn!(error = %e, "cannot close the device_attention alert");
                }
                self.store.set_device_pause(None)
            }
        };
        if let Err(e) = saved {
            tracing::warn!(error = %e, "cannot record the device pause in the store");
        }
    }

    /// Raises a `device_attention` alert for a pause only a human can end, once per
    /// code while it stays open.
    fn device_alert(&self, code: &str, message: &str) {
        let text = format!("[{code}] {message}");
        let open = self.store.open_alerts().unwrap_or_default();
        if open
            .iter()
            .any(|a| a.kind == AlertKind::DeviceAttention && a.message == text)
        {
            return;
        }
        tracing::error!(alert = AlertKind::DeviceAttention.as_str(), code, %message, "the phone needs a human");
        if let Err(e) =
            self.store
                .raise_alert(AlertKind::DeviceAttention, None, &text, self.clock.now())
        {
            tracing::warn!(error = %e, "cannot save the device_attention alert");
        }
    }

    /// Asks the device gate; probes the device when it says so. `Some(step)`: do not
    /// claim now.
    pub(super) async fn gate_step(&self) -> Option<ClaimStep> {
        // At most: probe, then claim or wait (a passing probe makes the check fresh).
        for _ in 0..2 {
            let step = self.gate().next(self.clock.now());
            match step {
                GateStep::Claim => return None,
                GateStep::Wait(wait) => {
                    let g = self.gate();
                    let reason = match g.pause() {
                        Some(p) => format!(
                            "paused since {}: [{}] {} (probe {} failed)",
                            cmautobuy_contract::time::format_utc(p.since),
                            p.code,
                            p.message,
                            p.probes
                        ),
                        None => format!(
                            "{} retry_wait outcome(s) in a row: next claim spaced",
                            g.retry_waits()
                        ),
                    };
                    return Some(ClaimStep::Waiting { reason, wait });
                }
                GateStep::Probe => {
                    let check = self.executor.check_device().await;
                    let t = self.gate().on_check(self.clock.now(), &check);
                    self.transition(t);
                }
            }
        }
        None
    }

    /// Records (`Some`) or clears the claim backoff `status` shows: until when, and the
    /// Admin's `Retry-After` when it sent one. Written on changes only.
    pub(super) fn note_claim_wait(&self, wait: Option<&ClaimWait>) {
        let mut noted = self
            .claim_wait_noted
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if wait.is_none() && !*noted {
            return;
        }
        match self.store.set_claim_wait(wait) {
            Ok(()) => *noted = wait.is_some(),
            Err(e) => tracing::warn!(error = %e, "cannot record the claim backoff for status"),
        }
    }
}
