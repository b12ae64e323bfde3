//! The claim loop (contract §5): claim one task at a time, validate it, save it, hand it
//! to the [`Executor`], write its outcome to the outbox.
//!
//! Layout: this file is the claim loop itself (claim, take, execute, record, run); the
//! [`Runner`]'s other duties are in their own files, each an `impl` of the same type:
//! `live` — the live gate (what is declared and why live waits); `between_tasks` — the
//! device gate, disk budget, backups, the self-test, the clock and account checks;
//! `recovery` — runs a crash or a lost phone left open.
//!
//! Rules this loop keeps:
//! - one claim in flight; a 204 waits the poll interval (±20 %) and is never an error;
//! - capabilities follow §5 ([`client_profile`]): `collect` only without a ready device
//!   and purchase adapter; `live` only with a valid identity, a saved device and a ready
//!   live adapter; a task's mode is never promoted (a live task claimed while we declared
//!   `dry_run` is reported as `LIVE_NOT_DECLARED`, never run);
//! - every claimed task is checked with `validate::claimed_task` before anything is
//!   saved; an incomplete one raises a protocol-error alert and claiming stops;
//! - so is a task whose id cannot be carried in its result/failure `Idempotency-Key`
//!   (control characters, a key over 255 bytes: the key rule in
//!   `cmautobuy_contract::hash`): it is never run, since its outcome could never be
//!   delivered; every other id is percent-encoded inside the key where needed;
//! - a claimed task that cannot be saved (§5.2) raises an alert naming its id and claiming
//!   stops until the operator acknowledges it (`ack`); if even the alert cannot be saved
//!   the process keeps it in memory and repeats it in the log every poll interval;
//! - a claim needs a passing device check younger than `device_check_max_age`; a
//!   failing check — or a `retry_wait` with a device failure code — pauses the worker
//!   (no claims; the pause is logged and saved for `status`) until a probe passes, probes
//!   backing off 1 s → 60 s; consecutive `retry_wait`s of any code space the claims
//!   (5 s doubling to 5 min) — the rules live in [`crate::gate`];
//! - the phone lost after a purchase's irreversible mark (a device-loss failure,
//!   [`crate::gate::device_lost_after_mark`]) is treated like a crash: nothing is
//!   reported, the run stays open (marked, no outcome), the worker pauses for the phone,
//!   and when a probe passes the run is reconciled through crash recovery
//!   ([`Executor::recover_marked`]: never a second submit) before any new claim; a run
//!   whose phone stays away `reconcile_wait_max` past its mark is reported
//!   `manual_review` without the phone (the contract has no deadline: this bound is ours);
//! - account trouble (a login page, a risk/verification page, `PAYMENT_METHOD_NOT_ALLOWED`,
//!   or `PAGE_NOT_RECOGNIZED` outcomes in a row on `unrecognized_pages_pause_after` different
//!   goods) raises
//!   an `account_paused` alert naming the task, the code and the attempt's artifacts;
//!   like every open alert it stops claiming until `ack` (and survives a restart);
//! - bounded resources ([`crate::disk_budget`]): below the free-disk floor
//!   no claim is made (a `low_disk` alert says why; it resolves itself when space
//!   returns); the artifact sweep and outbox compaction run at start and after each task;
//! - pacing ([`crate::pacing`]): no claim sooner than `min_task_gap` after the last task
//!   ended; at a live order cap (per rolling hour / day, counted from the store's
//!   irreversible marks) the declared mode narrows to `dry_run` until the window passes;
//! - the account fingerprint ([`crate::account`]): a client that would
//!   declare `live` reads 个人中心 between tasks (first passing device check of the run,
//!   daily, 5 min after a failure) and declares `dry_run` until a check succeeds or
//!   while an `account_changed` alert is open (claims continue; `ack` accepts the new
//!   account);
//! - transient claim errors back off like the outbox (1 s doubling to 5 min, full jitter,
//!   `Retry-After` honoured; until when is recorded for `status`); permanent ones (4xx)
//!   raise an alert and stop claiming;
//! - a claim answered `200` that cannot be taken — unreadable, cut off after its headers,
//!   over the size cap ([`GatewayError::unreadable_success`]) — is the §5.2 gap: the
//!   Admin has assigned a task this client never saved. It raises the blocking protocol
//!   alert (naming the client id and what arrived of the answer), never a retry that
//!   would claim the next task past it. A claim that got no answer byte at all stays a
//!   retried network error: it cannot be told from a request that never arrived.

mod between_tasks;
mod live;
mod recovery;

use crate::alert::AlertKind;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{watch, Notify};

use cmautobuy_contract::{hash, validate};
use cmautobuy_contract::{
    Capabilities, ClientInfo, ClientProfile, DeviceInfo, ExecutionMode, FailureStatus, FlowStep,
    Task, TaskType,
};

use crate::clock::Clock;
use crate::disk_budget::DiskBudget;
use crate::executor::{failure, Executor, Job, Outcome, Readiness};
use crate::gate::{DeviceGate, GateConfig, GateStep, Transition};
use crate::gateway::{AdminGateway, GatewayError, PreparedRequest};
use crate::pacing::{self, LiveCap, PacingConfig};
use crate::retry::{poll_delay, random_unit, RetryPolicy};
use crate::store::{
    ClaimWait, DevicePause, LiveCapNote, OutboxDraft, OutboxKind, Settings, Store, StoreError,
    TaskState,
};

/// How the `claim_rejected` alert of a claim refused with `401` (the token) begins: a
/// registration the Admin accepts afterwards — a new token, or the old one accepted again
/// — closes it (`registration::register`); any other refused claim waits for `ack`.
pub const TOKEN_REFUSED: &str = "令牌被拒绝（HTTP 401）/ the token was refused (HTTP 401)";

/// Why live is refused without the address fingerprint (status, doctor).
pub const NO_ADDRESS_FINGERPRINT: &str = "no address fingerprint: set expected_address = [\"<receiver>\", \"<street>\"] in config.toml (or CMAUTOBUY_EXPECTED_ADDRESS, or on the console's 设置 page) to what PDD shows for this phone's delivery address; live orders are never declared without it";

/// Length of an attempt id (`Store::start_run` makes hyphenated UUIDs), for the key check
/// of a claimed task's id.
pub const ATTEMPT_ID_LEN: usize = uuid::fmt::Hyphenated::LENGTH;

/// The Android package the flows drive (sent in the profile's `device`): the screen
/// module's, one constant for the whole client.
pub use crate::screen::PDD_PACKAGE;

#[derive(Clone, Debug)]
pub struct RunConfig {
    pub poll_interval: Duration,
    /// Exit after a 204 once nothing is left to deliver in the outbox.
    pub exit_when_idle: bool,
    pub policy: RetryPolicy,
    /// When the worker may claim (device checks, pauses, spacing after `retry_wait`).
    pub gate: GateConfig,
    /// The gap between tasks and the live order caps ([`crate::pacing`]). The claim
    /// loop's default is unpaced; `config::Config` carries the operator's defaults.
    pub pacing: PacingConfig,
    /// Daily store backups kept (`backups_keep`; 0 = no daily backup). See
    /// [`crate::store::backup`].
    pub backups_keep: usize,
    /// Live is refused while the host's clock is more than this off the Admin's or the
    /// phone's (`max_clock_skew_secs`, [`crate::clock_check`]).
    pub max_clock_skew: Duration,
    /// What may be declared live without the other gates ([`LivePolicy`]).
    pub live: LivePolicy,
}

/// How `purchase_mode` is decided ([`crate::self_test`]). The claim
/// loop's default vouches (live as the executor's readiness says — what in-process tests
/// and `rehearse` want); `run` sets it from the configuration.
#[derive(Clone, Debug)]
pub struct LivePolicy {
    /// `purchase_mode = dry_run` / `run --dry-run-only`: never live.
    pub dry_run_only: bool,
    /// The operator vouches (`--allow-live` / `allow_live = true`): no self-test needed.
    pub vouched: bool,
    /// The self-test's goods (`self_test_goods_id`); `None`: no self-test runs.
    pub self_test_goods_id: Option<String>,
    /// The phone's delivery-address fingerprint is configured (`expected_address`):
    /// without it live is never declared (an order could go to whatever
    /// address PDD preselects).
    pub address_fingerprint: bool,
}

impl LivePolicy {
    /// This policy with what the operator set on the console's 设置 page
    /// ([`crate::store::OperatorSettings`], read at every claim): the console's address
    /// fingerprint and self-test goods win over the configuration's; for the purchase
    /// mode the strictest wins (the console's `dry_run` narrows, it never widens a
    /// configured `dry_run`). A store that cannot be read fails closed: `dry_run`.
    pub fn with_operator(
        &self,
        op: Result<&crate::store::OperatorSettings, &StoreError>,
    ) -> LivePolicy {
        let mut p = self.clone();
        match op {
            Ok(op) => {
                if op.dry_run() {
                    p.dry_run_only = true;
                    p.vouched = false;
                }
                if let Some(g) = &op.self_test_goods_id {
                    p.self_test_goods_id = Some(g.clone());
                }
                if op.expected_address.as_ref().is_some_and(|a| !a.is_empty()) {
                    p.address_fingerprint = true;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the console's settings: dry_run");
                p.dry_run_only = true;
                p.vouched = false;
            }
        }
        p
    }

    /// This policy with what the operator saved on the console now, read from `store`
    /// ([`LivePolicy::with_operator`]): what a claim, the purchase backend's live switch
    /// and `register`/`doctor` all apply.
    pub fn in_force(&self, store: &Store) -> LivePolicy {
        self.with_operator(store.operator_settings().as_ref())
    }

    /// Whether live can ever be declared under this policy (the purchase backend's live
    /// switch): not `dry_run`, and vouched for or provable by a self-test. Whether it
    /// *is* declared at a claim is [`Runner::profile`]'s — the one source of truth the
    /// job's `declared_mode` carries.
    pub fn may_go_live(&self) -> bool {
        !self.dry_run_only && (self.vouched || self.self_test_goods_id.is_some())
    }
}

impl Default for LivePolicy {
    fn default() -> Self {
        LivePolicy {
            dry_run_only: false,
            vouched: true,
            self_test_goods_id: None,
            address_fingerprint: true,
        }
    }
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            poll_interval: Duration::from_secs(10),
            exit_when_idle: false,
            policy: RetryPolicy::default(),
            gate: GateConfig::default(),
            pacing: PacingConfig::unpaced(),
            backups_keep: 0,
            max_clock_skew: crate::clock_check::DEFAULT_MAX_SKEW,
            live: LivePolicy::default(),
        }
    }
}

/// Why [`Runner::run`] returned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunExit {
    Shutdown,
    /// `exit_when_idle`: a 204 with nothing left in the outbox.
    Idle,
    /// `exit_when_idle`: claiming is stopped by an operator alert and the outbox is empty.
    Blocked(String),
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What one claim cycle did.
#[derive(Clone, Debug, PartialEq)]
pub enum ClaimStep {
    /// 204: wait this long.
    NoWork(Duration),
    /// A task was claimed, run and its outcome written to the outbox.
    Processed { remote_task_id: String },
    /// A transient error: wait this long.
    Backoff(Duration),
    /// Claiming is stopped until the operator acts.
    Blocked(String),
    /// The device gate said wait (paused for the phone, or spacing after `retry_wait`s):
    /// no claim was made.
    Waiting { reason: String, wait: Duration },
}

/// Whether the identity is valid for declaring `live` (§5): a well-formed client id, an
/// Admin URL and a token, and no permanent rejection of the last registration.
pub fn identity_valid(s: &Settings) -> bool {
    let id_ok = s.client_id.starts_with("CLIENT-") && s.client_id.len() > "CLIENT-".len();
    let configured = s.admin_url.as_deref().is_some_and(|u| !u.is_empty())
        && s.token.as_ref().is_some_and(|t| !t.is_empty());
    let rejected = s.registration.as_ref().is_some_and(|r| r.rejected);
    id_ok && configured && !rejected
}

/// The §4.1/§5 profile this client declares, computed from what is saved and ready.
pub fn client_profile(s: &Settings, r: Readiness) -> ClientProfile {
    let device_saved = s.device.as_deref().is_some_and(|d| !d.is_empty());
    let purchase = device_saved && r.device_ready && r.purchase_adapter_ready;
    let live = purchase && r.live_adapter_ready && identity_valid(s);
    ClientProfile {
        client: ClientInfo {
            name: s.name.clone().filter(|n| !n.trim().is_empty()),
            extra: Default::default(),
        },
        supported_types: if purchase {
            vec![TaskType::Collect, TaskType::Purchase]
        } else {
            vec![TaskType::Collect]
        },
        device: s
            .device
            .as_ref()
            .filter(|d| !d.is_empty())
            .map(|d| DeviceInfo {
                address: Some(d.clone()),
                platform: Some("android".into()),
                pdd_package: Some(PDD_PACKAGE.into()),
                extra: Default::default(),
            }),
        capabilities: Capabilities {
            purchase_mode: if live {
                ExecutionMode::Live
            } else {
                ExecutionMode::DryRun
            },
            schema_versions: vec![1],
            extra: Default::default(),
        },
        extra: Default::default(),
    }
}

/// The claim loop and task hand-off.
pub struct Runner<G, E, C> {
    store: Store,
    gateway: Arc<G>,
    executor: Arc<E>,
    clock: C,
    cfg: RunConfig,
    relay_wake: Arc<Notify>,
    /// An alert that could not be saved (the store is failing): kept here so claiming
    /// stays stopped and the operator keeps seeing it.
    unsaved_alert: Mutex<Option<String>>,
    consecutive_failures: AtomicU32,
    gate: Mutex<DeviceGate>,
    /// Artifact sweep, outbox compaction, the free-disk floor ([`Runner::with_disk_budget`]).
    disk_budget: Option<Arc<DiskBudget>>,
    /// When the last task ended (the pacing gap counts from it).
    last_task_end: Mutex<Option<chrono::DateTime<chrono::Utc>>>,
    /// The live cap last recorded for `status` (to log and save changes only).
    live_cap: Mutex<Option<LiveCap>>,
    /// When the last backup was taken (read from `backups/` at the first look).
    last_backup: Mutex<Option<chrono::DateTime<chrono::Utc>>>,
    /// The clock check: when the phone was last read, its offset, and the refusal now in
    /// force (if any).
    clocks: Mutex<ClockState>,
    /// The PDD version hold last recorded for `status` (to log and save changes only).
    version_hold: Mutex<Option<crate::gate::VersionHold>>,
    /// The account check ([`crate::account`]): this run's state, and whether the
    /// executor can check at all (`None` until asked).
    account: Mutex<AccountState>,
    /// The self-test refusal last recorded for `status` (`None`: nothing recorded by
    /// this run yet).
    self_test_noted: Mutex<Option<Option<String>>>,
    /// Whether a claim backoff is recorded for `status` (to write changes only).
    claim_wait_noted: Mutex<bool>,
}

#[derive(Default)]
struct AccountState {
    check: crate::account::CheckState,
    applies: Option<bool>,
    /// The refusal last recorded for `status` (`None`: nothing recorded by this run
    /// yet, so the first note always writes over what an earlier run left).
    noted: Option<Option<String>>,
}

#[derive(Default)]
struct ClockState {
    phone_read_at: Option<chrono::DateTime<chrono::Utc>>,
    phone_ms: Option<i64>,
    refused: Option<String>,
}

impl<G: AdminGateway, E: Executor, C: Clock> Runner<G, E, C> {
    pub fn new(
        store: Store,
        gateway: Arc<G>,
        executor: Arc<E>,
        clock: C,
        cfg: RunConfig,
        relay_wake: Arc<Notify>,
    ) -> Self {
        Runner {
            store,
            gateway,
            executor,
            clock,
            relay_wake,
            unsaved_alert: Mutex::new(None),
            consecutive_failures: AtomicU32::new(0),
            gate: Mutex::new(DeviceGate::new(cfg.gate)),
            last_task_end: Mutex::new(None),
            live_cap: Mutex::new(None),
            last_backup: Mutex::new(None),
            clocks: Mutex::new(ClockState::default()),
            version_hold: Mutex::new(None),
            account: Mutex::new(AccountState::default()),
            self_test_noted: Mutex::new(None),
            claim_wait_noted: Mutex::new(false),
            cfg,
            disk_budget: None,
        }
    }

    /// Runs the disk budget at start and after each task, and applies its free-disk floor
    /// before each claim.
    pub fn with_disk_budget(mut self, disk_budget: Arc<DiskBudget>) -> Self {
        self.disk_budget = Some(disk_budget);
        self
    }

    fn alert(&self, kind: AlertKind, remote_task_id: Option<&str>, message: &str) -> String {
        tracing::error!(alert = kind.as_str(), task_id = ?remote_task_id, %message, "claiming stopped");
        let shown = match remote_task_id {
            Some(t) => format!("[{kind}] task {t}: {message}"),
            None => format!("[{kind}] {message}"),
        };
        if let Err(e) = self
            .store
            .raise_alert(kind, remote_task_id, message, self.clock.now())
        {
            let full = format!("{shown} (alert not saved: {e})");
            *self.unsaved_alert.lock().unwrap_or_else(|p| p.into_inner()) = Some(full.clone());
            return full;
        }
        shown
    }

    /// Why claiming is stopped, if it is.
    pub fn blocked_reason(&self) -> Option<String> {
        if let Some(m) = self
            .unsaved_alert
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
        {
            return Some(m);
        }
        // Only the kinds that need a human before any claim ([`AlertKind::blocks_claims`]);
        // `low_disk` resolves itself when space returns ([`Runner::claim_once`] waits on
        // it instead).
        match self.store.open_alerts() {
            Ok(alerts) => {
                alerts
                    .iter()
                    .find(|a| a.kind.blocks_claims())
                    .map(|a| match &a.remote_task_id {
                        Some(t) => format!("[{}] task {t}: {}", a.kind, a.message),
                        None => format!("[{}] {}", a.kind, a.message),
                    })
            }
            Err(e) => Some(format!("cannot read operator alerts: {e}")),
        }
    }

    /// One claim cycle.
    pub async fn claim_once(&self) -> Result<ClaimStep, RunError> {
        if let Some(reason) = self.blocked_reason() {
            return Ok(ClaimStep::Blocked(reason));
        }
        if let Some(reason) = self
            .disk_budget
            .as_ref()
            .and_then(|u| u.disk_floor(self.clock.now()))
        {
            return Ok(ClaimStep::Waiting {
                reason,
                wait: self.cfg.poll_interval,
            });
        }
        if let Some(step) = self.gap_step() {
            return Ok(step);
        }
        self.report_overdue()?;
        if let Some(step) = self.gate_step().await {
            return Ok(step);
        }
        // Orders placed on a phone that went away are reconciled before any new claim.
        if let Some(step) = self.reconcile_waiting().await? {
            return Ok(step);
        }
        if self.self_test_step().await {
            // The next cycle checks the gap (counted from the self-test's end) and the
            // phone again before it claims.
            return Ok(ClaimStep::Waiting {
                reason: "a self-test just ran".into(),
                wait: Duration::ZERO,
            });
        }
        self.check_clocks().await;
        self.check_account().await;
        let profile = self.profile()?;
        let declared = profile.capabilities.purchase_mode;
        let result = self.gateway.claim_next(&profile).await;
        let failures = &self.consecutive_failures;
        // Any answer but a backoff ends the wait `status` shows.
        if !matches!(&result, Err(e) if e.is_retryable() && !e.unreadable_success()) {
            self.note_claim_wait(None);
        }
        match result {
            Ok(None) => {
                failures.store(0, Ordering::Relaxed);
                Ok(ClaimStep::NoWork(poll_delay(
                    self.cfg.poll_interval,
                    random_unit(),
                )))
            }
            Ok(Some(task)) => {
                failures.store(0, Ordering::Relaxed);
                self.take(task, declared).await
            }
            Err(e) if e.unreadable_success() => {
                // A 200 we cannot take — unreadable, cut off after its headers, over the
                // size cap: the Admin has assigned a task this client never saved (§5,
                // §5.2). Retrying would claim the next one and strand this one silently.
                let partial = match &e {
                    GatewayError::Cut { partial, .. } if !partial.is_empty() => {
                        format!(" (what arrived / 已收到: {partial})")
                    }
                    _ => String::new(),
                };
                let msg = format!(
                    "领取应答无法读取，Admin 可能已把任务派给本机：请在 Admin 查看派给本机（{client}）的已领取任务，处理后执行 ack / the claim answer could not be read, the Admin may have assigned a task to this client: look in the Admin for tasks claimed by {client}, then `cmautobuy-client ack`: {e}{partial}",
                    client = self.store.client_id().unwrap_or_else(|_| "?".into()),
                );
                Ok(ClaimStep::Blocked(self.alert(
                    AlertKind::ProtocolError,
                    None,
                    &msg,
                )))
            }
            Err(e) if e.is_retryable() => {
                let n = failures.fetch_add(1, Ordering::Relaxed).saturating_add(1);
                let now = self.clock.now();
                let delay = self
                    .cfg
                    .policy
                    .delay(n, e.retry_after(), now, random_unit());
                tracing::warn!(error = %e, ?delay, "claim failed; backing off");
                let until = chrono::Duration::from_std(delay)
                    .ok()
                    .and_then(|d| now.checked_add_signed(d))
                    .unwrap_or(now);
                self.note_claim_wait(Some(&ClaimWait {
                    until: cmautobuy_contract::time::format_utc(until),
                    retry_after_secs: e.retry_after().map(|r| r.delay_from(now).as_secs()),
                    status: e.status(),
                    reason: e.to_string(),
                }));
                Ok(ClaimStep::Backoff(delay))
            }
            Err(e) => {
                let msg = format!("Admin 拒绝领取 / the Admin rejected the claim: {e}");
                // A refused token is named so that the next request a new token gets
                // through closes this alert ([`TOKEN_REFUSED`]).
                let msg = match e.status() == Some(401)
                    || e.code() == Some(&cmautobuy_contract::AdminErrorCode::Unauthorized)
                {
                    true => format!("{TOKEN_REFUSED} — {msg}"),
                    false => msg,
                };
                Ok(ClaimStep::Blocked(self.alert(
                    AlertKind::ClaimRejected,
                    None,
                    &msg,
                )))
            }
        }
    }

    /// Validates, saves and runs a claimed task.
    async fn take(&self, task: Task, declared: ExecutionMode) -> Result<ClaimStep, RunError> {
        tracing::info!(task_id = %task.id, task_type = task.task_type.as_str(), mode = task.execution_mode.as_str(), "claimed a task");
        if let Err(v) = validate::claimed_task(&task) {
            let msg = format!("任务不完整，未执行 / incomplete task, not run: {v}");
            return Ok(ClaimStep::Blocked(self.alert(
                AlertKind::ProtocolError,
                Some(&task.id),
                &msg,
            )));
        }
        if let Err(why) = hash::check_task_id_for_keys(&task.id, ATTEMPT_ID_LEN) {
            // Shown escaped: the id may hold a control character.
            let msg = format!(
                "任务编号无法放入幂等键，未执行 / task id {:?} cannot be carried in an Idempotency-Key, not run: {why}",
                task.id
            );
            return Ok(ClaimStep::Blocked(self.alert(
                AlertKind::ProtocolError,
                Some(&task.id),
                &msg,
            )));
        }
        let raw = serde_json::to_string(&task).unwrap_or_default();
        // Claimed at the Admin, not yet saved here: the contract's §5.2 window.
        crate::failpoint::hit("claim.before_save");
        let local_id = match self.store.save_claimed_task(&task, &raw, self.clock.now()) {
            Ok(id) => id,
            Err(e) => {
                let msg = format!(
                    "任务已在 Admin 领取但本地保存失败，请记录任务编号并联系维护者 / claimed at the Admin but not saved locally: {e}"
                );
                return Ok(ClaimStep::Blocked(self.alert(
                    AlertKind::ClaimNotSaved,
                    Some(&task.id),
                    &msg,
                )));
            }
        };
        self.execute(local_id, declared, None).await?;
        Ok(ClaimStep::Processed {
            remote_task_id: task.id,
        })
    }

    async fn execute(
        &self,
        local_id: i64,
        declared: ExecutionMode,
        previous_run: Option<crate::store::Run>,
    ) -> Result<(), RunError> {
        let run = self.store.start_run(local_id, self.clock.now())?;
        let task = self.store.task(local_id)?;
        let job = Job {
            client_id: self.store.client_id()?,
            task,
            run,
            declared_mode: declared,
            previous_run,
        };
        let outcome = if job.task.execution_mode == ExecutionMode::Live.as_str()
            && declared != ExecutionMode::Live
        {
            // §5: never promote a task's mode; a live task we did not declare is refused.
            Outcome::Failure(Box::new(failure(
                &job,
                FailureStatus::Failed,
                "LIVE_NOT_DECLARED",
                "live task claimed while this client declared dry_run; not run",
                None,
            )))
        } else {
            self.executor.execute(job.clone()).await
        };
        let outcome = match outcome {
            Outcome::Failure(mut f) if crate::gate::device_lost_after_mark(&f.error.code) => {
                let marked = self
                    .store
                    .run(job.run.id)
                    .is_ok_and(|r| r.irreversible_action_at.is_some());
                if marked {
                    match self.keep_open(&job, &f.error.code, &f.error.message) {
                        // Open, like a crash leaves it; reconciled when the phone answers.
                        Ok(()) => return Ok(()),
                        Err(overdue) => overdue.apply(&mut f),
                    }
                }
                Outcome::Failure(f)
            }
            o => o,
        };
        self.task_ended();
        self.record(&job, outcome)?;
        self.disk_budget_step(Some(&job)).await;
        Ok(())
    }

    /// Writes the outcome and its outbox item in one transaction, then wakes the relay.
    fn record(&self, job: &Job, outcome: Outcome) -> Result<(), RunError> {
        let outcome = checked(job, outcome);
        let remote = &job.task.remote_task_id;
        let attempt = &job.run.attempt_id;
        let (kind, key, body, on_accept, label) = match &outcome {
            Outcome::Result(r) => (
                OutboxKind::Result,
                hash::result_idempotency_key(remote, attempt),
                serde_json::to_vec(r),
                TaskState::Succeeded,
                "succeeded".to_string(),
            ),
            Outcome::Failure(f) => (
                OutboxKind::Failure,
                hash::failure_idempotency_key(remote, attempt),
                serde_json::to_vec(f),
                failure_state(f.status),
                format!("{}:{}", f.status.as_str(), f.error.code),
            ),
        };
        let body =
            body.map_err(|e| StoreError::Corrupt(format!("cannot serialise outcome: {e}")))?;
        let req = match kind {
            OutboxKind::Result => {
                PreparedRequest::result(&job.client_id, remote, &key, body.clone().into())
            }
            OutboxKind::Failure => {
                PreparedRequest::failure(&job.client_id, remote, &key, body.clone().into())
            }
        };
        let draft = OutboxDraft {
            kind,
            remote_task_id: remote.clone(),
            method: req.method.to_string(),
            path: req.path,
            headers: req.headers,
            body,
            idempotency_key: key,
            on_accept,
            outcome: label,
        };
        let id = self
            .store
            .record_outcome(job.run.id, &draft, self.clock.now())?;
        self.prove_version(job, &outcome);
        let retry_wait = match &outcome {
            Outcome::Failure(f) if f.status == FailureStatus::RetryWait => {
                Some((f.error.code.as_str(), f.error.message.as_str()))
            }
            _ => None,
        };
        let t = self.gate().on_outcome(self.clock.now(), retry_wait);
        self.transition(t);
        let failure_code = match &outcome {
            Outcome::Failure(f) => Some(f.error.code.as_str()),
            Outcome::Result(_) => None,
        };
        let rate = self.gate().on_rate(failure_code);
        match rate {
            Some(crate::gate::RateChange::Raised { hits, window }) => {
                let message = format!(
                    "最近 {window} 个任务中 {hits} 个无法识别页面 / {hits} unrecognised pages in the last {window} tasks: the PDD app may have changed (check `doctor`, the evidence, the recognisers)"
                );
                tracing::warn!(alert = AlertKind::UnrecognizedRate.as_str(), %message, "operator alert (claiming continues)");
                if let Err(e) = self.store.raise_alert(
                    AlertKind::UnrecognizedRate,
                    None,
                    &message,
                    self.clock.now(),
                ) {
                    tracing::warn!(error = %e, "cannot save the unrecognised-page rate alert");
                }
            }
            Some(crate::gate::RateChange::Cleared) => {
                let _ = self
                    .store
                    .resolve_alerts(AlertKind::UnrecognizedRate, self.clock.now());
            }
            None => {}
        }
        let refusal = match &outcome {
            Outcome::Failure(f) => f.diagnostics.get("refusal").and_then(|v| v.as_str()),
            Outcome::Result(_) => None,
        };
        // The goods counts for the unrecognised-page rule: one goods' page is that goods'
        // trouble, however often it is retried.
        let goods = serde_json::from_str::<serde_json::Value>(&job.task.payload)
            .ok()
            .and_then(|p| {
                p.get("goods_id")
                    .and_then(|g| g.as_str())
                    .map(str::to_string)
            })
            .unwrap_or_else(|| remote.to_string());
        let trouble = self.gate().on_account(failure_code, refusal, &goods);
        if let (Some(trouble), Outcome::Failure(f)) = (trouble, &outcome) {
            self.alert(
                AlertKind::AccountPaused,
                Some(remote),
                &account_message(&trouble, f),
            );
        }
        // An order found paid or bound: the account pays by itself. Live stops on this
        // phone until a human acknowledges it; collects and dry runs go on.
        if let Outcome::Failure(f) = &outcome {
            if f.error.code == cmautobuy_contract::FailureCode::OrderNotUnpaid.as_str() {
                let message = format!(
                    "订单不是待付款（已付款或先用后付），已停止真实下单 / the order placed is not unpaid (paid or bound): live stopped on this phone — {}",
                    f.error.message
                );
                tracing::error!(alert = AlertKind::OrderNotUnpaid.as_str(), task_id = %remote, %message, "critical: live stopped (collects and dry runs continue)");
                if let Err(e) = self.store.raise_alert(
                    AlertKind::OrderNotUnpaid,
                    Some(remote),
                    &message,
                    self.clock.now(),
                ) {
                    tracing::error!(error = %e, "cannot save the order_not_unpaid alert");
                }
            }
        }
        tracing::info!(task_id = %remote, outbox_id = id, kind = kind.as_str(), "outcome written to the outbox");
        self.relay_wake.notify_one();
        Ok(())
    }

    /// Claims until shutdown (or idle with `exit_when_idle`).
    pub async fn run(&self, mut shutdown: watch::Receiver<bool>) -> Result<RunExit, RunError> {
        // A pause saved by an earlier process is stale: this one checks afresh.
        if let Err(e) = self.store.set_device_pause(None) {
            tracing::warn!(error = %e, "cannot clear a saved device pause");
        }
        // So are a clock refusal and a live cap: both are judged afresh.
        let _ = self.store.set_clock_skew(None);
        let _ = self.store.set_live_cap(None);
        let _ = self.store.set_pdd_version_hold(None);
        let _ = self.store.set_claim_wait(None);
        self.disk_budget_step(None).await;
        self.recover().await?;
        loop {
            if *shutdown.borrow() {
                return Ok(RunExit::Shutdown);
            }
            self.daily_backup();
            let step = match self.claim_once().await {
                Ok(step) => step,
                // Another process holding the database a moment longer is not a reason to
                // stop; anything else is (main maps it to an exit code).
                Err(RunError::Store(e)) if e.is_retryable() => {
                    tracing::warn!(error = %e, "store busy; claiming again later");
                    ClaimStep::Backoff(self.cfg.poll_interval)
                }
                Err(e) => return Err(e),
            };
            let wait = match step {
                ClaimStep::Processed { .. } => continue,
                ClaimStep::NoWork(d) => {
                    if self.cfg.exit_when_idle && self.store.outbox_undelivered_count()? == 0 {
                        return Ok(RunExit::Idle);
                    }
                    d
                }
                ClaimStep::Backoff(d) => d,
                ClaimStep::Waiting { reason, wait } => {
                    tracing::debug!(%reason, ?wait, "not claiming yet");
                    wait
                }
                ClaimStep::Blocked(reason) => {
                    tracing::error!(%reason, "claiming stopped until the operator acts (cmautobuy-client status / ack)");
                    if self.cfg.exit_when_idle && self.store.outbox_undelivered_count()? == 0 {
                        return Ok(RunExit::Blocked(reason));
                    }
                    self.cfg.poll_interval
                }
            };
            tokio::select! {
                _ = self.clock.sleep(wait) => {}
                changed = shutdown.changed() => {
                    if changed.is_err() {
                        return Ok(RunExit::Shutdown);
                    }
                }
            }
        }
    }
}

/// The `account_paused` alert's message: the code, what the page said and where the
/// attempt's evidence (dumps, screenshot) is.
fn account_message(
    trouble: &crate::gate::AccountTrouble,
    f: &cmautobuy_contract::FailureRequest,
) -> String {
    let what = if trouble.unrecognized_goods > 0 {
        format!(
            "连续 {} 个不同商品的页面无法识别 / pages of {} different goods in a row were not recognised",
            trouble.unrecognized_goods, trouble.unrecognized_goods
        )
    } else {
        match trouble.code.as_str() {
            "LOGIN_REQUIRED" => "账号需要登录 / the account is logged out".to_string(),
            "PAYMENT_METHOD_NOT_ALLOWED" => {
                "支付方式不允许 / the payment method is not allowed".to_string()
            }
            _ => "风控/验证页面 / a risk or verification page".to_string(),
        }
    };
    // `{client_id}:artifacts/{task}/{attempt}/` under the data directory: the attempt's
    // screenshots (`NN-{step}.png`), dumps and manifest.
    let evidence = match f.diagnostics.get("artifact_ref").and_then(|v| v.as_str()) {
        Some(r) => format!("screenshot and dumps in {r}"),
        None => "no artifacts saved".to_string(),
    };
    format!(
        "账号暂停，请人工处理手机后确认 / account paused, a human must look at the phone: {what} [{}] {}; attempt {}, {evidence}",
        trouble.code, f.error.message, f.attempt_id
    )
}

fn failure_state(s: FailureStatus) -> TaskState {
    match s {
        FailureStatus::RetryWait => TaskState::RetryWait,
        FailureStatus::ManualReview => TaskState::ManualReview,
        FailureStatus::Cancelled => TaskState::Cancelled,
        FailureStatus::Failed | FailureStatus::Unknown => TaskState::Failed,
    }
}

/// An outcome that breaks the contract's own rules would be rejected by the Admin with a
/// 422 and parked forever; report it as a manual-review failure instead (after an
/// irreversible mark, a human has to look anyway).
fn checked(job: &Job, outcome: Outcome) -> Outcome {
    let violation = match &outcome {
        Outcome::Result(r) => validate::check_result(r).err(),
        Outcome::Failure(f) => validate::check_failure(f).err(),
    };
    match violation {
        None => outcome,
        Some(v) => {
            tracing::error!(task_id = %job.task.remote_task_id, violation = %v, "executor produced an invalid outcome");
            Outcome::Failure(Box::new(failure(
                job,
                FailureStatus::ManualReview,
                "INVALID_OUTCOME",
                &format!("client produced an invalid report: {v}"),
                Some("report"),
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::secret::Secret;
    use crate::store::RegistrationStatus;

    fn settings(device: Option<&str>, token: Option<&str>) -> Settings {
        Settings {
            client_id: "CLIENT-0123456789ABCDEF".into(),
            name: Some("办公室-01".into()),
            admin_url: Some("http://admin".into()),
            token: token.map(Secret::new),
            device: device.map(str::to_string),
            registration: None,
        }
    }

    const ALL_READY: Readiness = Readiness {
        device_ready: true,
        purchase_adapter_ready: true,
        live_adapter_ready: true,
    };

    fn caps(s: &Settings, r: Readiness) -> (Vec<TaskType>, ExecutionMode) {
        let p = client_profile(s, r);
        (p.supported_types, p.capabilities.purchase_mode)
    }

    #[test]
    fn collect_only_without_a_ready_device_and_purchase_adapter() {
        use ExecutionMode::*;
        use TaskType::*;
        let dev = settings(Some("192.168.0.173:5555"), Some("t"));
        assert_eq!(
            caps(&settings(None, Some("t")), ALL_READY),
            (vec![Collect], DryRun)
        );
        let no_adapter = Readiness {
            purchase_adapter_ready: false,
            ..ALL_READY
        };
        assert_eq!(caps(&dev, no_adapter), (vec![Collect], DryRun));
        let offline = Readiness {
            device_ready: false,
            ..ALL_READY
        };
        assert_eq!(caps(&dev, offline), (vec![Collect], DryRun));
        let not_live = Readiness {
            live_adapter_ready: false,
            ..ALL_READY
        };
        assert_eq!(caps(&dev, not_live), (vec![Collect, Purchase], DryRun));
        assert_eq!(caps(&dev, ALL_READY), (vec![Collect, Purchase], Live));
    }

    #[test]
    fn live_needs_a_valid_identity() {
        let no_token = settings(Some("d"), None);
        assert_eq!(caps(&no_token, ALL_READY).1, ExecutionMode::DryRun);
        let mut rejected = settings(Some("d"), Some("t"));
        rejected.registration = Some(RegistrationStatus {
            state: "failed".into(),
            at: "2026-01-01T00:00:00Z".into(),
            error: Some("401".into()),
            rejected: true,
        });
        assert_eq!(caps(&rejected, ALL_READY).1, ExecutionMode::DryRun);
        let mut bad_id = settings(Some("d"), Some("t"));
        bad_id.client_id = "CLIENT-".into();
        assert_eq!(caps(&bad_id, ALL_READY).1, ExecutionMode::DryRun);
    }

    #[test]
    fn the_console_narrows_and_completes_the_live_policy_but_never_widens_dry_run() {
        let base = LivePolicy {
            dry_run_only: false,
            vouched: true,
            self_test_goods_id: None,
            address_fingerprint: false,
        };
        let mut op = crate::store::OperatorSettings::default();
        assert!(!base.with_operator(Ok(&op)).address_fingerprint);
        op.expected_address = Some(vec!["张三".into()]);
        op.self_test_goods_id = Some("602938475610".into());
        let p = base.with_operator(Ok(&op));
        assert!(p.address_fingerprint && p.vouched && !p.dry_run_only);
        assert_eq!(p.self_test_goods_id.as_deref(), Some("602938475610"));
        op.purchase_mode = Some("dry_run".into());
        let p = base.with_operator(Ok(&op));
        assert!(p.dry_run_only && !p.vouched && !p.may_go_live());
        // "auto" on the console never widens a configured dry_run.
        op.purchase_mode = Some("auto".into());
        let pinned = LivePolicy {
            dry_run_only: true,
            vouched: false,
            ..base.clone()
        };
        assert!(pinned.with_operator(Ok(&op)).dry_run_only);
        // A store that cannot be read: dry_run.
        let e = StoreError::Corrupt("x".into());
        assert!(base.with_operator(Err(&e)).dry_run_only);
    }

    #[test]
    fn the_profile_carries_name_and_device() {
        let p = client_profile(&settings(Some("tcp:10.0.0.5:5555"), Some("t")), ALL_READY);
        assert_eq!(p.client.name.as_deref(), Some("办公室-01"));
        let d = p.device.unwrap();
        assert_eq!(d.address.as_deref(), Some("tcp:10.0.0.5:5555"));
        assert_eq!(d.pdd_package.as_deref(), Some(PDD_PACKAGE));
        assert_eq!(p.capabilities.schema_versions, vec![1]);
        cmautobuy_contract::validate::check_client_profile(&client_profile(
            &settings(None, None),
            Readiness::default(),
        ))
        .unwrap();
    }
}
