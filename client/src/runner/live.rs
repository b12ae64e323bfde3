//! The live gate: what the claim loop declares (`dry_run` or `live`) and why live
//! waits — identity, the address fingerprint, the self-test and the PDD version, the
//! live order caps, the clocks, the account fingerprint and an order found paid.

use super::*;
use crate::alert::AlertKind;

impl<G: AdminGateway, E: Executor, C: Clock> Runner<G, E, C> {
    /// The profile this client declares now: [`client_profile`], narrowed to `dry_run`
    /// while a live order cap binds ([`crate::pacing`]; contract §5 allows narrowing).
    pub fn profile(&self) -> Result<ClientProfile, StoreError> {
        let settings = self.store.settings()?;
        let mut p = self.proven_profile(&settings);
        if p.capabilities.purchase_mode == ExecutionMode::Live {
            let hold = self.version_hold_now(settings.device.as_deref())?;
            if hold.is_some() {
                p.capabilities.purchase_mode = ExecutionMode::DryRun;
            }
            // Before the first read nothing is known yet: narrowed, not noted.
            if hold.as_ref().is_none_or(|h| h.alert) {
                self.note_version_hold(settings.device.as_deref(), hold);
            }
        }
        if p.capabilities.purchase_mode == ExecutionMode::Live && self.clock_refusal().is_some() {
            p.capabilities.purchase_mode = ExecutionMode::DryRun;
        }
        if p.capabilities.purchase_mode == ExecutionMode::Live && self.account_refusal().is_some() {
            p.capabilities.purchase_mode = ExecutionMode::DryRun;
        }
        if p.capabilities.purchase_mode == ExecutionMode::Live
            && self.paid_order_refusal().is_some()
        {
            p.capabilities.purchase_mode = ExecutionMode::DryRun;
        }
        if p.capabilities.purchase_mode == ExecutionMode::Live {
            let cap = self.live_cap_now()?;
            if cap.is_some() {
                p.capabilities.purchase_mode = ExecutionMode::DryRun;
            }
            self.note_live_cap(cap);
        }
        Ok(p)
    }

    /// [`client_profile`] narrowed to `dry_run` until the self-test passed on the
    /// phone's current PDD version ([`crate::self_test::refusal`]; the
    /// operator's `allow_live` vouches instead). Why live waits is recorded for `status`.
    pub(super) fn proven_profile(&self, settings: &Settings) -> ClientProfile {
        let mut p = client_profile(settings, self.executor.readiness());
        let purchase = p.supported_types.contains(&TaskType::Purchase);
        let refusal = if purchase {
            self.address_refusal()
                .or_else(|| self.self_test_refusal(settings))
        } else {
            None
        };
        if refusal.is_some() {
            p.capabilities.purchase_mode = ExecutionMode::DryRun;
        }
        let mut noted = self
            .self_test_noted
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if noted.as_ref() != Some(&refusal) {
            match &refusal {
                // The operator's own choice (`purchase_mode = dry_run`) is no warning.
                Some(why) if self.live().dry_run_only => {
                    tracing::info!(reason = %why, "dry run only: declaring dry_run")
                }
                Some(why) => tracing::warn!(reason = %why, "live paused: declaring dry_run"),
                None if purchase && self.live().self_test_goods_id.is_some() => {
                    tracing::info!(
                        "self-test passed on this phone's PDD version: live may be declared"
                    )
                }
                None => {}
            }
            if let Err(e) = self.store.set_self_test_note(refusal.as_deref()) {
                tracing::warn!(error = %e, "cannot record the self-test note");
            } else {
                *noted = Some(refusal);
            }
        }
        p
    }

    /// The live policy in force now: the configuration's with what the operator set on
    /// the console ([`LivePolicy::with_operator`]), read from the store at every call —
    /// a value saved on the console applies from the next claim, no restart.
    pub fn live(&self) -> LivePolicy {
        self.cfg.live.in_force(&self.store)
    }

    /// Why live is never declared: no address fingerprint configured.
    fn address_refusal(&self) -> Option<String> {
        let live = &self.live();
        (!live.dry_run_only && !live.address_fingerprint).then(|| NO_ADDRESS_FINGERPRINT.into())
    }

    /// Why live waits for the self-test on this phone now ([`crate::self_test::refusal`]).
    pub fn self_test_refusal(&self, settings: &Settings) -> Option<String> {
        use crate::gate::PddVersionRead;
        let live = &self.live();
        let version = match self.executor.pdd_version() {
            Some(PddVersionRead::Version(v)) => Some(v),
            _ => None,
        };
        let record = match (&version, settings.device.as_deref()) {
            (Some(v), Some(d)) if !live.vouched && !live.dry_run_only => {
                match self.store.self_test(d, v) {
                    Ok(r) => r.map(|r| r.record()),
                    Err(e) => return Some(format!("cannot read the self-test record: {e}")),
                }
            }
            _ => None,
        };
        crate::self_test::refusal(&crate::self_test::LiveInputs {
            dry_run_only: live.dry_run_only,
            vouched: live.vouched,
            goods_configured: live.self_test_goods_id.is_some(),
            version: version.as_deref(),
            record: record.as_ref(),
        })
    }

    /// The new-version gate now: the version the executor last read
    /// on the phone against what the store knows of it on this device (a version seen
    /// for the first time is recorded, unproven).
    pub fn version_hold_now(
        &self,
        device: Option<&str>,
    ) -> Result<Option<crate::gate::VersionHold>, StoreError> {
        use crate::gate::{version_hold, KnownVersion, PddVersionRead};
        if !self.cfg.gate.pdd_version_gate {
            return Ok(None);
        }
        let read = self.executor.pdd_version();
        let known = match (&read, device) {
            (Some(PddVersionRead::Version(v)), Some(d)) => {
                let row = self.store.note_pdd_version(d, v, self.clock.now())?;
                Some(KnownVersion {
                    first_seen: row.first_seen,
                    proven_at: row.proven_at,
                })
            }
            _ => None,
        };
        Ok(version_hold(true, read.as_ref(), known.as_ref()))
    }

    /// Logs and records (for `status`) a version hold that began, changed or ended; a
    /// hold raises one `pdd_version_unproven` alert per version (remembered on its row,
    /// so `ack N` can prove it), an end closes it.
    fn note_version_hold(&self, device: Option<&str>, hold: Option<crate::gate::VersionHold>) {
        let mut last = self.version_hold.lock().unwrap_or_else(|p| p.into_inner());
        if *last == hold {
            return;
        }
        let now = self.clock.now();
        let open: Vec<_> = self
            .store
            .open_alerts()
            .unwrap_or_default()
            .into_iter()
            .filter(|a| a.kind == AlertKind::PddVersionUnproven)
            .collect();
        let saved = match &hold {
            Some(h) => {
                tracing::warn!(version = ?h.version, since = ?h.since, reason = %h.reason, "PDD version not proven on this phone: declaring dry_run until a dry-run purchase succeeds on it");
                let since = h
                    .since
                    .clone()
                    .unwrap_or_else(|| cmautobuy_contract::time::format_utc(now));
                let message = match &h.version {
                    Some(v) => format!(
                        "拼多多新版本未验证，暂停实单 / PDD {v} on this phone ({}) is not proven, seen since {since}: live purchases paused (dry_run declared; collects and dry runs continue). Proof: a dry-run purchase that succeeds on {v} (the client closes this alert), or `cmautobuy-client ack` with this alert's id after you checked {v} by hand (recorded as proven by you)",
                        device.unwrap_or("-")
                    ),
                    None => format!(
                        "拼多多版本无法读取，暂停实单 / {} on this phone ({}): check `cmautobuy-client doctor`; live resumes once the version reads and is proven",
                        h.reason,
                        device.unwrap_or("-")
                    ),
                };
                // The alert already open for this version (an earlier process raised it)
                // stays; any other closes.
                let linked = match (&h.version, device) {
                    (Some(v), Some(d)) => self
                        .store
                        .pdd_version(d, v)
                        .ok()
                        .flatten()
                        .and_then(|r| r.alert_id),
                    _ => None,
                };
                let keep = open
                    .iter()
                    .find(|a| Some(a.id) == linked || (linked.is_none() && a.message == message))
                    .map(|a| a.id);
                for a in open.iter().filter(|a| Some(a.id) != keep) {
                    let _ = self.store.ack_alerts(Some(a.id), now);
                }
                if keep.is_none() {
                    match self
                        .store
                        .raise_alert(AlertKind::PddVersionUnproven, None, &message, now)
                    {
                        Ok(id) => {
                            if let (Some(v), Some(d)) = (&h.version, device) {
                                if let Err(e) = self.store.set_pdd_version_alert(d, v, id) {
                                    tracing::warn!(error = %e, "cannot link the alert to its version");
                                }
                            }
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "cannot save the pdd_version_unproven alert")
                        }
                    }
                }
                self.store.set_pdd_version_hold(Some(&h.reason))
            }
            None => {
                tracing::info!("PDD version proven on this phone: declaring live again");
                if let Err(e) = self
                    .store
                    .resolve_alerts(AlertKind::PddVersionUnproven, now)
                {
                    tracing::warn!(error = %e, "cannot close the pdd_version_unproven alert");
                }
                self.store.set_pdd_version_hold(None)
            }
        };
        if let Err(e) = saved {
            tracing::warn!(error = %e, "cannot record the PDD version hold in the store");
        }
        *last = hold;
    }

    /// A successful dry-run purchase proves the PDD version it ran on (as read for that
    /// attempt: the report's `diagnostics.pdd_version`) on this phone.
    pub(super) fn prove_version(&self, job: &Job, outcome: &Outcome) {
        let Outcome::Result(r) = outcome else { return };
        let version = r
            .extra
            .get("diagnostics")
            .and_then(|d| d.get("pdd_version"))
            .and_then(|v| v.as_str());
        let Some(v) = crate::gate::proves_version(
            &job.task.task_type,
            &job.task.execution_mode,
            true,
            version,
        ) else {
            return;
        };
        let device = match self.store.settings() {
            Ok(s) => s.device,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the device to record a proven PDD version");
                return;
            }
        };
        let Some(device) = device else { return };
        match self
            .store
            .prove_pdd_version(&device, v, &job.run.attempt_id, self.clock.now())
        {
            Ok(true) => {
                tracing::info!(version = v, attempt_id = %job.run.attempt_id, "PDD version proven on this phone by a successful dry-run purchase")
            }
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "cannot record the proven PDD version"),
        }
    }

    /// The live cap at this moment, from the orders the store holds.
    pub fn live_cap_now(&self) -> Result<Option<LiveCap>, StoreError> {
        let Some(back) = self.cfg.pacing.lookback() else {
            return Ok(None);
        };
        let now = self.clock.now();
        let since = now - chrono::Duration::from_std(back).unwrap_or(chrono::Duration::zero());
        let orders = self.store.order_marks_since(since)?;
        Ok(pacing::live_cap(&self.cfg.pacing, now, &orders))
    }

    /// Logs and records (for `status`) a live cap that began, changed or ended.
    fn note_live_cap(&self, cap: Option<LiveCap>) {
        let mut last = self.live_cap.lock().unwrap_or_else(|p| p.into_inner());
        if *last == cap {
            return;
        }
        let saved = match &cap {
            Some(c) => {
                let until = cmautobuy_contract::time::format_utc(c.until);
                let reason = format!(
                    "{} live orders in the last {} (cap {})",
                    c.orders, c.window, c.cap
                );
                tracing::warn!(%until, %reason, "live order cap reached: declaring dry_run until the window passes");
                self.store
                    .set_live_cap(Some(&LiveCapNote { until, reason }))
            }
            None => {
                tracing::info!("live order cap passed: declaring live again");
                self.store.set_live_cap(None)
            }
        };
        if let Err(e) = saved {
            tracing::warn!(error = %e, "cannot record the live cap in the store");
        }
        *last = cap;
    }

    /// Why live is refused for clock skew now, if it is.
    pub fn clock_refusal(&self) -> Option<String> {
        self.clocks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .refused
            .clone()
    }

    pub(super) fn account_state(&self) -> std::sync::MutexGuard<'_, AccountState> {
        self.account.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why live is refused for the account now, if it is: an open
    /// `account_changed` alert (also across a restart), or — once the executor has shown
    /// it can check — no successful check yet this run, or a failed one since the last
    /// success went stale.
    /// Why live is stopped on this phone after an order was found paid or bound (an
    /// open `order_not_unpaid` alert), if it is.
    pub fn paid_order_refusal(&self) -> Option<String> {
        match self.store.open_alerts() {
            Ok(a) => a
                .iter()
                .find(|a| a.kind == AlertKind::OrderNotUnpaid)
                .map(|a| {
                    format!(
                        "an order was found paid or bound on this phone: {}",
                        a.message
                    )
                }),
            Err(e) => Some(format!("cannot read operator alerts: {e}")),
        }
    }

    pub fn account_refusal(&self) -> Option<String> {
        match self.store.open_alerts() {
            Ok(a) if a.iter().any(|a| a.kind == AlertKind::AccountChanged) => {
                return Some("account changed on this phone".into())
            }
            Ok(_) => {}
            Err(e) => return Some(format!("cannot read operator alerts: {e}")),
        }
        let st = self.account_state();
        if st.applies != Some(true) {
            return None;
        }
        st.check.refusal(self.clock.now())
    }

    /// Records the account refusal for `status` when it changed.
    pub(super) fn note_account_refusal(&self) {
        let now = self.account_refusal();
        let mut st = self.account_state();
        if st.noted.as_ref() == Some(&now) {
            return;
        }
        if let Err(e) = self.store.set_account_refusal(now.as_deref()) {
            tracing::warn!(error = %e, "cannot record the account refusal");
            return;
        }
        st.noted = Some(now);
    }
}
