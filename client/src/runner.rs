//! The claim loop (contract §5): claim one task at a time, validate it, save it, hand it
//! to the [`Executor`], write its outcome to the outbox.
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
//!   or `unrecognized_pages_pause_after` `PAGE_NOT_RECOGNIZED` outcomes in a row) raises
//!   an `account_paused` alert naming the task, the code and the attempt's artifacts;
//!   like every open alert it stops claiming until `ack` (and survives a restart);
//! - bounded resources ([`crate::upkeep`], issue 12 item 8): below the free-disk floor
//!   no claim is made (a `low_disk` alert says why; it resolves itself when space
//!   returns); the artifact sweep and outbox compaction run at start and after each task;
//! - pacing ([`crate::pacing`]): no claim sooner than `min_task_gap` after the last task
//!   ended; at a live order cap (per rolling hour / day, counted from the store's
//!   irreversible marks) the declared mode narrows to `dry_run` until the window passes;
//! - the account fingerprint ([`crate::account`], issue 12 item 5): a client that would
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
use crate::executor::{failure, Executor, Job, Outcome, Readiness};
use crate::gate::{DeviceGate, GateConfig, GateStep, Transition};
use crate::gateway::{AdminGateway, GatewayError, PreparedRequest};
use crate::pacing::{self, LiveCap, PacingConfig};
use crate::retry::{poll_delay, random_unit, RetryPolicy};
use crate::store::{
    ClaimWait, DevicePause, LiveCapNote, OutboxDraft, OutboxKind, Settings, Store, StoreError,
    TaskState,
};
use crate::upkeep::{Upkeep, ALERT_LOW_DISK};

/// Alert kinds (stored in `operator_alerts.kind`).
pub const ALERT_PROTOCOL: &str = "protocol_error";
pub const ALERT_NOT_SAVED: &str = "claim_not_saved";
pub const ALERT_REJECTED: &str = "claim_rejected";
/// How the `claim_rejected` alert of a claim refused with `401` (the token) begins: a
/// registration the Admin accepts afterwards — a new token, or the old one accepted again
/// — closes it (`registration::register`); any other refused claim waits for `ack`.
pub const TOKEN_REFUSED: &str = "令牌被拒绝（HTTP 401）/ the token was refused (HTTP 401)";
/// Account trouble (issue 12 item 2): a login page, a risk page, a refused payment
/// method or K unrecognised pages in a row; no claims until acknowledged.
pub const ALERT_ACCOUNT: &str = "account_paused";
/// The phone needs a human (issue 12 item 4): a PIN lock, a low or hot battery, PDD
/// missing, USB debugging not authorised (`gate::HUMAN_DEVICE_CODES`). Raised with the
/// device pause and closed by the first passing check; unlike the other kinds it does not
/// stop claiming by itself (the pause does, and ends by itself).
pub const ALERT_DEVICE: &str = "device_attention";
/// The host's clock is too far off the Admin's or the phone's: live purchases refused
/// (issue 12 item 9). Informational: it does not stop claiming (collects and dry runs
/// continue); `ack` closes it.
pub const ALERT_CLOCK_SKEW: &str = "clock_skew";
/// A live order was found paid or bound (先用后付 / 免密) after its submit (issue 25): the
/// account pays without a human. Critical: live stops on this phone — `dry_run` is
/// declared, collects and dry runs continue — until `ack` after a human checked the
/// account and the money.
pub const ALERT_ORDER_NOT_UNPAID: &str = "order_not_unpaid";

/// Why live is refused without the address fingerprint (status, doctor).
pub const NO_ADDRESS_FINGERPRINT: &str = "no address fingerprint: set expected_address = [\"<receiver>\", \"<street>\"] in config.toml (or CMAUTOBUY_EXPECTED_ADDRESS) to what PDD shows for this phone's delivery address; live orders are never declared without it";

/// Alert kinds that do not stop claiming (`low_disk` holds claims itself, through the
/// upkeep's free-disk floor, and is resolved by the client when space returns).
pub const NON_BLOCKING_ALERTS: &[&str] = &[
    ALERT_ORDER_NOT_UNPAID,
    ALERT_ACCOUNT_CHANGED,
    ALERT_CLOCK_SKEW,
    ALERT_LOW_DISK,
    ALERT_DEVICE,
    ALERT_UNRECOGNIZED_RATE,
    ALERT_PDD_VERSION,
    crate::selftest::ALERT_SELF_TEST_FAILED,
];

/// The phone shows a PDD version not proven on it (issue 12 item 6,
/// [`crate::gate::version_hold`]): live purchases paused (`dry_run` declared; collects
/// and dry runs continue). Closed by the client when a dry-run purchase succeeds on that
/// version; `ack N` of it proves the version by hand (recorded as `ack N by USER`).
pub const ALERT_PDD_VERSION: &str = "pdd_version_unproven";
/// The account on the phone is not the one recorded for it (issue 12 item 5): live
/// stops (the profile declares `dry_run`), claims continue; `ack` accepts the new account.
pub use crate::account::ALERT_ACCOUNT_CHANGED;

/// Too many unrecognised pages among the recent tasks (issue 12 item 6;
/// [`crate::gate::UnrecognizedRate`]): non-blocking, resolved when the rate falls again.
pub const ALERT_UNRECOGNIZED_RATE: &str = "unrecognized_rate";

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
    /// What may be declared live without the other gates ([`LivePolicy`], issue 13).
    pub live: LivePolicy,
}

/// How `purchase_mode` is decided (issue 13 item 3, [`crate::selftest`]). The claim
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
    /// without it live is never declared (issue 25 — an order could go to whatever
    /// address PDD preselects).
    pub address_fingerprint: bool,
}

impl LivePolicy {
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
    /// Artifact sweep, outbox compaction, the free-disk floor ([`Runner::with_upkeep`]).
    upkeep: Option<Arc<Upkeep>>,
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
            upkeep: None,
        }
    }

    /// Runs the upkeep at start and after each task, and applies its free-disk floor
    /// before each claim.
    pub fn with_upkeep(mut self, upkeep: Arc<Upkeep>) -> Self {
        self.upkeep = Some(upkeep);
        self
    }

    /// The upkeep after a task (or at start: `job = None`), on a blocking thread.
    async fn upkeep(&self, job: Option<&Job>) {
        let Some(u) = self.upkeep.clone() else {
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
            tracing::error!(error = %e, "upkeep panicked");
        }
    }

    fn alert(&self, kind: &str, remote_task_id: Option<&str>, message: &str) -> String {
        tracing::error!(alert = kind, task_id = ?remote_task_id, %message, "claiming stopped");
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
        // `low_disk` resolves itself when space returns ([`Runner::claim_once`] waits on
        // it instead); see [`NON_BLOCKING_ALERTS`].
        match self.store.open_alerts() {
            Ok(alerts) => alerts
                .iter()
                .find(|a| !NON_BLOCKING_ALERTS.contains(&a.kind.as_str()))
                .map(|a| match &a.remote_task_id {
                    Some(t) => format!("[{}] task {t}: {}", a.kind, a.message),
                    None => format!("[{}] {}", a.kind, a.message),
                }),
            Err(e) => Some(format!("cannot read operator alerts: {e}")),
        }
    }

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
    /// phone's current PDD version (issue 13 item 3, [`crate::selftest::refusal`]; the
    /// operator's `allow_live` vouches instead). Why live waits is recorded for `status`.
    fn proven_profile(&self, settings: &Settings) -> ClientProfile {
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
                Some(why) => tracing::warn!(reason = %why, "live paused: declaring dry_run"),
                None if purchase && self.cfg.live.self_test_goods_id.is_some() => {
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

    /// Why live is never declared: no address fingerprint configured (issue 25).
    fn address_refusal(&self) -> Option<String> {
        let live = &self.cfg.live;
        (!live.dry_run_only && !live.address_fingerprint).then(|| NO_ADDRESS_FINGERPRINT.into())
    }

    /// Why live waits for the self-test on this phone now ([`crate::selftest::refusal`]).
    pub fn self_test_refusal(&self, settings: &Settings) -> Option<String> {
        use crate::gate::PddVersionRead;
        let live = &self.cfg.live;
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
        crate::selftest::refusal(&crate::selftest::LiveInputs {
            dry_run_only: live.dry_run_only,
            vouched: live.vouched,
            goods_configured: live.self_test_goods_id.is_some(),
            version: version.as_deref(),
            record: record.as_ref(),
        })
    }

    /// The self-test before a claim (issue 13 item 3): when `self_test_goods_id` is set
    /// and [`crate::selftest::due`] says so for the phone's current PDD version — never
    /// run on it, asked for (`Store::request_self_test`), or failed and its backoff
    /// passed. A pass proves the version (`self-test ATTEMPT`) and closes
    /// `self_test_failed`; a failure raises it (non-blocking). Returns whether a
    /// self-test ran (the pacing gap then counts from its end, like a task's).
    pub async fn self_test_step(&self) -> bool {
        use crate::gate::PddVersionRead;
        let live = &self.cfg.live;
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
        if !crate::selftest::due(record.as_ref(), requested, now) {
            return false;
        }
        if requested {
            if let Err(e) = self.store.clear_self_test_request() {
                tracing::warn!(error = %e, "cannot clear the self-test request");
            }
        }
        let attempt_id = format!(
            "{}{}",
            crate::selftest::ATTEMPT_PREFIX,
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
                if let Err(e) = self
                    .store
                    .resolve_alerts(crate::selftest::ALERT_SELF_TEST_FAILED, now)
                {
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
                let next = crate::selftest::retry_after(failures);
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
                    .filter(|a| a.kind == crate::selftest::ALERT_SELF_TEST_FAILED)
                    .collect::<Vec<_>>();
                // One open alert: the newest failure replaces the older one.
                for a in &open {
                    let _ = self.store.ack_alerts(Some(a.id), now);
                }
                if let Err(e) = self.store.raise_alert(
                    crate::selftest::ALERT_SELF_TEST_FAILED,
                    None,
                    &text,
                    now,
                ) {
                    tracing::warn!(error = %e, "cannot save the self_test_failed alert");
                }
            }
        }
        self.task_ended();
        true
    }

    /// The new-version gate now (issue 12 item 6): the version the executor last read
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
            .filter(|a| a.kind == ALERT_PDD_VERSION)
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
                        .raise_alert(ALERT_PDD_VERSION, None, &message, now)
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
                if let Err(e) = self.store.resolve_alerts(ALERT_PDD_VERSION, now) {
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
    fn prove_version(&self, job: &Job, outcome: &Outcome) {
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

    /// Why live is refused for clock skew now, if it is.
    pub fn clock_refusal(&self) -> Option<String> {
        self.clocks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .refused
            .clone()
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
                    .map(|a| a.iter().any(|a| a.kind == ALERT_CLOCK_SKEW))
                    .unwrap_or(false);
                if !open {
                    let msg = format!("时钟偏差，暂停实单 / clock skew: {why}");
                    if let Err(e) = self.store.raise_alert(ALERT_CLOCK_SKEW, None, &msg, now) {
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

    fn account_state(&self) -> std::sync::MutexGuard<'_, AccountState> {
        self.account.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Why live is refused for the account now, if it is (issue 12 item 5): an open
    /// `account_changed` alert (also across a restart), or — once the executor has shown
    /// it can check — no successful check yet this run, or a failed one since the last
    /// success went stale.
    /// Why live is stopped on this phone after an order was found paid or bound (an
    /// open `order_not_unpaid` alert, issue 25), if it is.
    pub fn paid_order_refusal(&self) -> Option<String> {
        match self.store.open_alerts() {
            Ok(a) => a
                .iter()
                .find(|a| a.kind == ALERT_ORDER_NOT_UNPAID)
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
            Ok(a) if a.iter().any(|a| a.kind == ALERT_ACCOUNT_CHANGED) => {
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

    /// The account check before a claim, between tasks (issue 12 item 5): only while
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
                match self.store.resolve_alerts(ALERT_ACCOUNT_CHANGED, now) {
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
                    .map(|a| a.iter().any(|a| a.kind == ALERT_ACCOUNT_CHANGED))
                    .unwrap_or(false);
                tracing::error!(device = %serial, recorded = %old, now = %r.describe(), "the account on the phone changed: declaring dry_run until acknowledged");
                if !open {
                    let msg = format!(
                        "手机 {serial} 上的账号已变更 / the account on phone {serial} changed: recorded {old}, now {}",
                        r.describe()
                    );
                    if let Err(e) = self
                        .store
                        .raise_alert(ALERT_ACCOUNT_CHANGED, None, &msg, now)
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

    /// Records the account refusal for `status` when it changed.
    fn note_account_refusal(&self) {
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

    /// Marks the end of a task: the pacing gap counts from now.
    fn task_ended(&self) {
        *self.last_task_end.lock().unwrap_or_else(|p| p.into_inner()) = Some(self.clock.now());
    }

    /// The pacing gap: `Some(step)` while the last task ended less than
    /// `min_task_gap` ago.
    fn gap_step(&self) -> Option<ClaimStep> {
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

    /// Re-runs tasks interrupted by a crash (claimed or running, no outcome yet).
    pub async fn recover(&self) -> Result<(), RunError> {
        let declared = self.profile()?.capabilities.purchase_mode;
        for t in self.store.unfinished_tasks()? {
            if t.state == TaskState::Reporting {
                continue; // the outbox delivers it
            }
            if t.task_type == TaskType::Purchase.as_str() {
                // Issue 7: an interrupted purchase attempt is reported under its own
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
    /// `manual_review`; without a mark nothing was submitted, so the attempt is reported
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
    fn keep_open(&self, job: &Job, code: &str, message: &str) -> Result<(), Overdue> {
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
    fn report_overdue(&self) -> Result<(), RunError> {
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
    async fn reconcile_waiting(&self) -> Result<Option<ClaimStep>, RunError> {
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

    fn gate(&self) -> std::sync::MutexGuard<'_, DeviceGate> {
        self.gate.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The device pause, if the worker is paused for its phone.
    pub fn device_pause(&self) -> Option<crate::gate::Pause> {
        self.gate().pause().cloned()
    }

    /// Logs a pause or a resume and records it for `status` (a store failure is logged;
    /// the pause holds in memory either way).
    fn transition(&self, t: Option<Transition>) {
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
                if let Err(e) = self.store.resolve_alerts(ALERT_DEVICE, self.clock.now()) {
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
            .any(|a| a.kind == ALERT_DEVICE && a.message == text)
        {
            return;
        }
        tracing::error!(alert = ALERT_DEVICE, code, %message, "the phone needs a human");
        if let Err(e) = self
            .store
            .raise_alert(ALERT_DEVICE, None, &text, self.clock.now())
        {
            tracing::warn!(error = %e, "cannot save the device_attention alert");
        }
    }

    /// Asks the device gate; probes the device when it says so. `Some(step)`: do not
    /// claim now.
    async fn gate_step(&self) -> Option<ClaimStep> {
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
    fn note_claim_wait(&self, wait: Option<&ClaimWait>) {
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

    /// One claim cycle.
    pub async fn claim_once(&self) -> Result<ClaimStep, RunError> {
        if let Some(reason) = self.blocked_reason() {
            return Ok(ClaimStep::Blocked(reason));
        }
        if let Some(reason) = self
            .upkeep
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
                Ok(ClaimStep::Blocked(self.alert(ALERT_PROTOCOL, None, &msg)))
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
                Ok(ClaimStep::Blocked(self.alert(ALERT_REJECTED, None, &msg)))
            }
        }
    }

    /// Validates, saves and runs a claimed task.
    async fn take(&self, task: Task, declared: ExecutionMode) -> Result<ClaimStep, RunError> {
        tracing::info!(task_id = %task.id, task_type = task.task_type.as_str(), mode = task.execution_mode.as_str(), "claimed a task");
        if let Err(v) = validate::claimed_task(&task) {
            let msg = format!("任务不完整，未执行 / incomplete task, not run: {v}");
            return Ok(ClaimStep::Blocked(self.alert(
                ALERT_PROTOCOL,
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
                ALERT_PROTOCOL,
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
                    ALERT_NOT_SAVED,
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
        self.upkeep(Some(&job)).await;
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
                tracing::warn!(alert = ALERT_UNRECOGNIZED_RATE, %message, "operator alert (claiming continues)");
                if let Err(e) = self.store.raise_alert(
                    ALERT_UNRECOGNIZED_RATE,
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
                    .resolve_alerts(ALERT_UNRECOGNIZED_RATE, self.clock.now());
            }
            None => {}
        }
        let trouble = self.gate().on_account(failure_code);
        if let (Some(trouble), Outcome::Failure(f)) = (trouble, &outcome) {
            self.alert(ALERT_ACCOUNT, Some(remote), &account_message(&trouble, f));
        }
        // An order found paid or bound: the account pays by itself. Live stops on this
        // phone until a human acknowledges it; collects and dry runs go on.
        if let Outcome::Failure(f) = &outcome {
            if f.error.code == cmautobuy_contract::FailureCode::OrderNotUnpaid.as_str() {
                let message = format!(
                    "订单不是待付款（已付款或先用后付），已停止真实下单 / the order placed is not unpaid (paid or bound): live stopped on this phone — {}",
                    f.error.message
                );
                tracing::error!(alert = ALERT_ORDER_NOT_UNPAID, task_id = %remote, %message, "critical: live stopped (collects and dry runs continue)");
                if let Err(e) = self.store.raise_alert(
                    ALERT_ORDER_NOT_UNPAID,
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
        self.upkeep(None).await;
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

/// A marked run whose phone stayed away past `reconcile_wait_max`: what its
/// `manual_review` says.
struct Overdue {
    device: String,
    marked_at: String,
    max: Duration,
}

impl Overdue {
    /// Makes `f` the `manual_review` report of a run the phone left unreconciled: the
    /// message says that an unpaid order may exist and where to look for it.
    fn apply(&self, f: &mut cmautobuy_contract::FailureRequest) {
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

/// The `account_paused` alert's message: the code, what the page said and where the
/// attempt's evidence (dumps, screenshot) is.
fn account_message(
    trouble: &crate::gate::AccountTrouble,
    f: &cmautobuy_contract::FailureRequest,
) -> String {
    let what = if trouble.unrecognized_in_a_row > 0 {
        format!(
            "{} 次连续无法识别页面 / {} unrecognised pages in a row",
            trouble.unrecognized_in_a_row, trouble.unrecognized_in_a_row
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
