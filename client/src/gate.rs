//! The device gate: whether the claim loop may claim now. Sans-IO — a pure
//! function of `now`, the last device check and the last outcomes; the runner does the
//! checks and the waits.
//!
//! Rules:
//! - **A fresh check before each claim.** A claim needs a passing device check younger
//!   than [`GateConfig::check_max_age`]; otherwise the runner checks first
//!   ([`GateStep::Probe`]).
//! - **Pause and resume.** A failing check pauses the worker: no claims; the next probe
//!   waits `probe_min · 2^(n-1)`, capped at `probe_max`, after the n-th failing probe
//!   (1 s, 2 s, 4 s … 60 s by default). The first passing probe resumes it.
//! - **`retry_wait` after a device failure** ([`is_device_failure`]: the failure codes a
//!   device error maps to) pauses the same way (first probe after `probe_min`), never an
//!   immediate new claim.
//! - **Consecutive `retry_wait`s of any code** space the claims: after the k-th in a row the
//!   next claim waits `retry_gap · 2^(k-1)`, capped at `retry_gap_max` (5 s, 10 s, 20 s …
//!   5 min by default). Any other outcome (a result, `failed`, `manual_review`,
//!   `cancelled`) resets the count; a 204 does not.
//! - **Account trouble** ([`DeviceGate::on_account`]): an outcome with
//!   one of [`ACCOUNT_TROUBLE_CODES`] (a login page, a risk/verification page — 操作过于频繁
//!   included — or a refused payment method), or `PAGE_NOT_RECOGNIZED` outcomes in a row
//!   on [`GateConfig::unrecognized_pause_after`] **different goods** (default 3; 0 =
//!   never), is account trouble: the runner raises an `account_paused` operator alert and
//!   claims nothing until it is acknowledged (`ack`). One goods whose page the client
//!   cannot read (a dead link, a page of its own) is that goods' failure however often it
//!   is retried, never the account's. Any other outcome resets the unrecognised count.

use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::executor::DeviceCheck;

/// The failure codes (`decisions.md` §5 and [`crate::device::DeviceError::failure_code`])
/// that mean the phone, not the page, failed: a `retry_wait` with one of them pauses the
/// worker until a device check passes.
pub const DEVICE_FAILURE_CODES: &[&str] = &[
    "DEVICE_OFFLINE",
    "DEVICE_UNAUTHORIZED",
    "DEVICE_COMMAND_FAILED",
    "DEVICE_CONFIG_INVALID",
    "UI_DUMP_FAILED",
    "SCREENSHOT_FAILED",
    // The phone's own state: the device check keeps the pause until
    // the phone is unlocked, charged or cooled down.
    "DEVICE_LOCKED",
    "BATTERY_LOW",
    "BATTERY_HOT",
    "PDD_NOT_INSTALLED",
    // MIUI's input-injection switch: the device check probes input while paused for it.
    "INPUT_INJECTION_DENIED",
];

/// Failure codes that mean the phone went away (ADB gone, offline, device calls timing
/// out: `DeviceError::failure_code` maps them all to `DEVICE_OFFLINE`). After a
/// purchase's irreversible mark such a failure is not reported: the run stays open as a
/// crash would leave it, the worker pauses for the phone, and the run is reconciled
/// through crash recovery when the phone answers ([`device_lost_after_mark`]). A phone
/// that answers but whose dumps fail (`UI_DUMP_FAILED`) is not "away": reconciliation
/// has looked at it and could not read it, so its `manual_review` stands.
pub const DEVICE_LOSS_CODES: &[&str] = &["DEVICE_OFFLINE"];

/// Whether a failure of a marked purchase run means the phone went away (see
/// [`DEVICE_LOSS_CODES`]): keep the run open and reconcile it when the phone is back.
pub fn device_lost_after_mark(code: &str) -> bool {
    DEVICE_LOSS_CODES.contains(&code)
}

/// Whether a marked run whose phone is away has waited past `max_wait` (counted from its
/// irreversible mark): then it is reported `manual_review` without the phone. The
/// contract sets no deadline (no lease, no heartbeat: §1.1, §5); this bound is the
/// client's own, so an order is never left unreported for days.
pub fn reconcile_overdue(mark: DateTime<Utc>, now: DateTime<Utc>, max_wait: Duration) -> bool {
    now >= after(mark, max_wait)
}

/// Device pause codes only a human can end (unlock the PIN, plug in the charger, cool the
/// phone, install PDD, accept the USB debugging prompt): the pause raises a
/// `device_attention` operator alert that says what to do. It does not stop claiming by
/// itself — the pause does, and the alert is closed when the phone passes a check again.
pub const HUMAN_DEVICE_CODES: &[&str] = &[
    "DEVICE_LOCKED",
    "BATTERY_LOW",
    "BATTERY_HOT",
    "PDD_NOT_INSTALLED",
    "DEVICE_UNAUTHORIZED",
    "INPUT_INJECTION_DENIED",
];

/// Whether a device pause with this code needs a human (see [`HUMAN_DEVICE_CODES`]).
pub fn needs_human(code: &str) -> bool {
    HUMAN_DEVICE_CODES.contains(&code)
}

/// Whether a failure code is a device failure (see [`DEVICE_FAILURE_CODES`]).
pub fn is_device_failure(code: &str) -> bool {
    DEVICE_FAILURE_CODES.contains(&code)
}

/// The failure codes that mean the account needs a human: the worker pauses until an
/// operator acknowledges the alert.
pub const ACCOUNT_TROUBLE_CODES: &[&str] = &[
    "LOGIN_REQUIRED",
    "RISK_VERIFICATION",
    "PAYMENT_METHOD_NOT_ALLOWED",
];

/// The code counted towards [`GateConfig::unrecognized_pause_after`].
pub const PAGE_NOT_RECOGNIZED: &str = "PAGE_NOT_RECOGNIZED";

/// Account trouble: pause until an operator acknowledges.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccountTrouble {
    /// The failure code of the outcome that tipped it.
    pub code: String,
    /// The different goods of the `PAGE_NOT_RECOGNIZED` outcomes in a row (0 for the
    /// other codes).
    pub unrecognized_goods: u32,
}

/// The gate's timings (config keys `device_check_max_age_secs`, `device_probe_max_secs`,
/// `retry_wait_gap_secs`, `retry_wait_gap_max_secs`) and the account rule
/// (`unrecognized_pages_pause_after`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GateConfig {
    pub check_max_age: Duration,
    pub probe_min: Duration,
    pub probe_max: Duration,
    pub retry_gap: Duration,
    pub retry_gap_max: Duration,
    /// Whether account trouble pauses the worker (off only for `rehearse`, whose batch
    /// includes risk and login pages on purpose and must run to the end).
    pub account_pause: bool,
    /// `PAGE_NOT_RECOGNIZED` outcomes in a row that pause the worker (0 = never).
    pub unrecognized_pause_after: u32,
    /// The rate alert: this many `PAGE_NOT_RECOGNIZED` outcomes
    /// (0 = never) …
    pub unrecognized_rate_count: u32,
    /// … among the last this many tasks raise a non-blocking operator alert.
    pub unrecognized_rate_window: u32,
    /// Live only on a PDD version proven on this phone ([`version_hold`];
    /// config `pdd_version_gate`, default true).
    pub pdd_version_gate: bool,
    /// The account check on 个人中心 before live purchases (config
    /// `account_check`, default true).
    pub account_check: bool,
    /// How long a purchase whose phone went away after its irreversible mark waits for
    /// the phone (counted from the mark) before it is reported `manual_review` without
    /// it (`reconcile_wait_max_secs`, default 30 min; see [`reconcile_overdue`]).
    pub reconcile_wait_max: Duration,
}

impl Default for GateConfig {
    fn default() -> Self {
        GateConfig {
            check_max_age: Duration::from_secs(30),
            probe_min: Duration::from_secs(1),
            probe_max: Duration::from_secs(60),
            retry_gap: Duration::from_secs(5),
            retry_gap_max: Duration::from_secs(300),
            account_pause: true,
            unrecognized_pause_after: 3,
            unrecognized_rate_count: 3,
            unrecognized_rate_window: 20,
            pdd_version_gate: true,
            account_check: true,
            reconcile_wait_max: Duration::from_secs(30 * 60),
        }
    }
}

/// `base · 2^(n-1)` capped at `max` (n ≥ 1; n = 0 counts as 1).
pub fn doubling(base: Duration, n: u32, max: Duration) -> Duration {
    let shift = n.saturating_sub(1).min(30);
    base.checked_mul(1u32 << shift).unwrap_or(max).min(max)
}

/// Why and since when the worker is paused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pause {
    pub since: DateTime<Utc>,
    pub code: String,
    pub message: String,
    /// Failing probes since the pause began.
    pub probes: u32,
    pub next_probe: DateTime<Utc>,
}

/// What the runner does next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateStep {
    /// Claim now.
    Claim,
    /// Check the device now, then ask again.
    Probe,
    /// Neither: wait this long (paused, or spacing after `retry_wait`s).
    Wait(Duration),
}

/// A change the runner logs and records.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    Paused(Pause),
    Resumed { since: DateTime<Utc>, probes: u32 },
}

/// The gate's state.
#[derive(Clone, Debug)]
pub struct DeviceGate {
    cfg: GateConfig,
    last_ready: Option<DateTime<Utc>>,
    pause: Option<Pause>,
    retry_waits: u32,
    not_before: Option<DateTime<Utc>>,
    /// The goods of the `PAGE_NOT_RECOGNIZED` outcomes in a row, each once.
    unrecognized: Vec<String>,
    rate: UnrecognizedRate,
}

fn until(now: DateTime<Utc>, t: DateTime<Utc>) -> Duration {
    (t - now).to_std().unwrap_or(Duration::ZERO)
}

fn after(now: DateTime<Utc>, d: Duration) -> DateTime<Utc> {
    now + chrono::Duration::from_std(d).unwrap_or(chrono::Duration::zero())
}

impl DeviceGate {
    pub fn new(cfg: GateConfig) -> Self {
        DeviceGate {
            cfg,
            last_ready: None,
            pause: None,
            retry_waits: 0,
            not_before: None,
            unrecognized: Vec::new(),
            rate: UnrecognizedRate::new(cfg.unrecognized_rate_count, cfg.unrecognized_rate_window),
        }
    }

    /// Counts one task outcome towards the unrecognised-page rate; see
    /// [`UnrecognizedRate::push`].
    pub fn on_rate(&mut self, failure_code: Option<&str>) -> Option<RateChange> {
        self.rate.push(failure_code == Some(PAGE_NOT_RECOGNIZED))
    }

    pub fn config(&self) -> GateConfig {
        self.cfg
    }

    /// The current pause, if the worker is paused.
    pub fn pause(&self) -> Option<&Pause> {
        self.pause.as_ref()
    }

    /// `retry_wait` outcomes in a row.
    pub fn retry_waits(&self) -> u32 {
        self.retry_waits
    }

    /// What to do at `now`.
    pub fn next(&self, now: DateTime<Utc>) -> GateStep {
        if let Some(p) = &self.pause {
            return if now < p.next_probe {
                GateStep::Wait(until(now, p.next_probe))
            } else {
                GateStep::Probe
            };
        }
        if let Some(nb) = self.not_before {
            if now < nb {
                return GateStep::Wait(until(now, nb));
            }
        }
        match self.last_ready {
            Some(t) if until(t, now) < self.cfg.check_max_age && t <= now => GateStep::Claim,
            _ => GateStep::Probe,
        }
    }

    /// A device check finished at `now`.
    pub fn on_check(&mut self, now: DateTime<Utc>, check: &DeviceCheck) -> Option<Transition> {
        match check {
            DeviceCheck::Ready => {
                self.last_ready = Some(now);
                self.pause.take().map(|p| Transition::Resumed {
                    since: p.since,
                    probes: p.probes,
                })
            }
            DeviceCheck::NotReady { code, message } => {
                self.last_ready = None;
                match &mut self.pause {
                    Some(p) => {
                        p.probes = p.probes.saturating_add(1);
                        p.next_probe = after(
                            now,
                            doubling(self.cfg.probe_min, p.probes, self.cfg.probe_max),
                        );
                        let changed = p.code != *code;
                        p.code = code.clone();
                        p.message = message.clone();
                        changed.then(|| Transition::Paused(p.clone()))
                    }
                    None => self.start_pause(now, code, message, 1),
                }
            }
        }
    }

    /// A task's outcome was recorded: `Some(code)` for a failure of any status, `None` for
    /// a result; `refusal`: a payment refusal's stable name (`diagnostics.refusal`);
    /// `goods`: the task's goods (its id, else anything that names the task).
    /// `Some(trouble)`: the account needs a human — pause until acknowledged. A
    /// `PAYMENT_METHOD_NOT_ALLOWED` about one goods' checkout (its button pays in the same
    /// tap, no payment row, no order button: [`crate::screen::payment::refusal_pauses_account`]
    /// is false) is that task's refusal, not the account's: no pause.
    pub fn on_account(
        &mut self,
        failure_code: Option<&str>,
        refusal: Option<&str>,
        goods: &str,
    ) -> Option<AccountTrouble> {
        let code = match failure_code {
            Some(c) if c == PAGE_NOT_RECOGNIZED => {
                if !self.unrecognized.iter().any(|g| g == goods) {
                    self.unrecognized.push(goods.to_string());
                }
                let k = self.cfg.unrecognized_pause_after;
                let n = u32::try_from(self.unrecognized.len()).unwrap_or(u32::MAX);
                if !self.cfg.account_pause || k == 0 || n < k {
                    return None;
                }
                self.unrecognized.clear();
                return Some(AccountTrouble {
                    code: c.to_string(),
                    unrecognized_goods: n,
                });
            }
            Some(c) => c,
            None => {
                self.unrecognized.clear();
                return None;
            }
        };
        self.unrecognized.clear();
        let goods_only = code == "PAYMENT_METHOD_NOT_ALLOWED"
            && refusal.is_some_and(|r| !crate::screen::payment::refusal_pauses_account(r));
        (self.cfg.account_pause && !goods_only && ACCOUNT_TROUBLE_CODES.contains(&code)).then(
            || AccountTrouble {
                code: code.to_string(),
                unrecognized_goods: 0,
            },
        )
    }

    /// `PAGE_NOT_RECOGNIZED` outcomes in a row.
    /// The different goods of the `PAGE_NOT_RECOGNIZED` outcomes in a row.
    pub fn unrecognized(&self) -> u32 {
        u32::try_from(self.unrecognized.len()).unwrap_or(u32::MAX)
    }

    /// The phone went away after a purchase's irreversible mark (its run stays open for
    /// reconciliation): pause for the phone like a device `retry_wait` does, without
    /// counting a `retry_wait` (nothing was reported).
    pub fn on_device_lost(
        &mut self,
        now: DateTime<Utc>,
        code: &str,
        message: &str,
    ) -> Option<Transition> {
        self.last_ready = None;
        if self.pause.is_some() {
            return None;
        }
        self.start_pause(now, code, message, 0)
    }

    /// A task's outcome was recorded at `now`: `Some((code))` for a `retry_wait` failure,
    /// `None` for any other outcome.
    pub fn on_outcome(
        &mut self,
        now: DateTime<Utc>,
        retry_wait: Option<(&str, &str)>,
    ) -> Option<Transition> {
        let Some((code, message)) = retry_wait else {
            self.retry_waits = 0;
            self.not_before = None;
            return None;
        };
        self.retry_waits = self.retry_waits.saturating_add(1);
        self.not_before = Some(after(
            now,
            doubling(self.cfg.retry_gap, self.retry_waits, self.cfg.retry_gap_max),
        ));
        if !is_device_failure(code) || self.pause.is_some() {
            return None;
        }
        self.last_ready = None;
        self.start_pause(now, code, message, 0)
    }

    /// Starts a pause at `now` (after `probes` failed checks); the next probe comes after
    /// the shortest backoff.
    fn start_pause(
        &mut self,
        now: DateTime<Utc>,
        code: &str,
        message: &str,
        probes: u32,
    ) -> Option<Transition> {
        let p = Pause {
            since: now,
            code: code.to_string(),
            message: message.to_string(),
            probes,
            next_probe: after(now, self.cfg.probe_min),
        };
        self.pause = Some(p.clone());
        Some(Transition::Paused(p))
    }
}

/// The unrecognised-page rate, distinct from the K-in-a-row pause:
/// `count` `PAGE_NOT_RECOGNIZED` outcomes among the last `window` tasks raise a
/// non-blocking operator alert (`unrecognized_rate`), resolved when the window holds
/// fewer again. Pure: the runner feeds it each task's outcome.
#[derive(Clone, Debug)]
pub struct UnrecognizedRate {
    count: u32,
    window: u32,
    recent: std::collections::VecDeque<bool>,
    raised: bool,
}

/// A change of the rate alert.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateChange {
    /// `hits` unrecognised pages among the last `window` tasks: raise the alert.
    Raised { hits: u32, window: u32 },
    /// Back under the threshold: resolve it.
    Cleared,
}

impl UnrecognizedRate {
    /// `count` = 0 (or `window` = 0) never alerts; a window below `count` is widened to it.
    pub fn new(count: u32, window: u32) -> Self {
        UnrecognizedRate {
            count,
            window: window.max(count),
            recent: std::collections::VecDeque::new(),
            raised: false,
        }
    }

    /// Unrecognised pages in the window now.
    pub fn hits(&self) -> u32 {
        self.recent.iter().filter(|&&u| u).count() as u32
    }

    /// One task outcome; `Some` only when the alert starts or ends.
    pub fn push(&mut self, unrecognized: bool) -> Option<RateChange> {
        if self.count == 0 || self.window == 0 {
            return None;
        }
        self.recent.push_back(unrecognized);
        while self.recent.len() > self.window as usize {
            self.recent.pop_front();
        }
        let hits = self.hits();
        match (self.raised, hits >= self.count) {
            (false, true) => {
                self.raised = true;
                Some(RateChange::Raised {
                    hits,
                    window: self.window,
                })
            }
            (true, false) => {
                self.raised = false;
                Some(RateChange::Cleared)
            }
            _ => None,
        }
    }
}

pub use crate::executor::{plausible_version, PddVersionRead};

/// What the store knows of one version on this phone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownVersion {
    /// RFC 3339: when this phone first showed it.
    pub first_seen: String,
    /// When it was proven (`None`: not yet).
    pub proven_at: Option<String>,
}

/// Live refused for the PDD version: the `status` line and the alert say why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionHold {
    /// The version read (`None`: it could not be read).
    pub version: Option<String>,
    /// When this phone first showed it.
    pub since: Option<String>,
    /// One line for `status` and the log.
    pub reason: String,
    /// Whether it is worth an operator alert (not before the first read).
    pub alert: bool,
}

/// The new-version gate, pure: live is declared only when the version
/// read on this phone has been proven on it — by a dry-run purchase that succeeded on
/// that version ([`proves_version`]), or by an operator's `ack N` of its alert. A version
/// never seen (the first one on a fresh store included) or one that cannot be read holds
/// live back (fail closed). `read = None`: the executor has no phone to read (no gate).
pub fn version_hold(
    enabled: bool,
    read: Option<&PddVersionRead>,
    known: Option<&KnownVersion>,
) -> Option<VersionHold> {
    if !enabled {
        return None;
    }
    match read? {
        PddVersionRead::NotReadYet => Some(VersionHold {
            version: None,
            since: None,
            reason: "live paused: the PDD version on this phone has not been read yet".into(),
            alert: false,
        }),
        PddVersionRead::Unreadable(why) => Some(VersionHold {
            version: None,
            since: None,
            reason: format!(
                "live paused: the PDD version on this phone cannot be read ({why}); live needs a readable version proven by a dry-run purchase"
            ),
            alert: true,
        }),
        PddVersionRead::Version(v) => match known {
            Some(k) if k.proven_at.is_some() => None,
            _ => Some(VersionHold {
                version: Some(v.clone()),
                since: known.map(|k| k.first_seen.clone()),
                reason: format!("live paused: PDD {v} not yet proven on this phone"),
                alert: true,
            }),
        },
    }
}

/// Whether an outcome proves the version it ran on: a `purchase` task
/// in `dry_run` mode that ended with a result (success), on a plausible version as read
/// for that attempt. Returns that version.
pub fn proves_version<'a>(
    task_type: &str,
    execution_mode: &str,
    succeeded: bool,
    version: Option<&'a str>,
) -> Option<&'a str> {
    let v = version?;
    (task_type == "purchase" && execution_mode == "dry_run" && succeeded && plausible_version(v))
        .then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn live_only_on_a_proven_version() {
        let v = PddVersionRead::Version("7.36.0".into());
        let new = KnownVersion {
            first_seen: "2026-12-01T08:00:00Z".into(),
            proven_at: None,
        };
        let proven = KnownVersion {
            proven_at: Some("2026-12-01T08:05:00Z".into()),
            ..new.clone()
        };
        // A phone-less executor has nothing to gate; the escape switches it off.
        assert_eq!(version_hold(true, None, None), None);
        assert_eq!(version_hold(false, Some(&v), None), None);
        // Never seen (a fresh store's first version too) and seen-but-unproven hold.
        let h = version_hold(true, Some(&v), None).unwrap();
        assert_eq!(h.version.as_deref(), Some("7.36.0"));
        assert_eq!(
            h.reason,
            "live paused: PDD 7.36.0 not yet proven on this phone"
        );
        let h = version_hold(true, Some(&v), Some(&new)).unwrap();
        assert_eq!(h.since.as_deref(), Some("2026-12-01T08:00:00Z"));
        assert_eq!(version_hold(true, Some(&v), Some(&proven)), None);
        // Unreadable fails closed, with its own reason.
        let u = PddVersionRead::from_parsed(None);
        let h = version_hold(true, Some(&u), None).unwrap();
        assert_eq!(h.version, None);
        assert!(h.reason.contains("cannot be read"), "{}", h.reason);
        let garbage = PddVersionRead::from_parsed(Some("<html>"));
        assert!(matches!(garbage, PddVersionRead::Unreadable(ref w) if w.contains("implausible")));
        assert!(version_hold(true, Some(&garbage), Some(&proven)).is_some());
        // Before the first read: held, without an alert.
        let h = version_hold(true, Some(&PddVersionRead::NotReadYet), None).unwrap();
        assert!(!h.alert);
    }

    #[test]
    fn only_a_successful_dry_run_purchase_proves_its_version() {
        assert_eq!(
            proves_version("purchase", "dry_run", true, Some("7.36.0")),
            Some("7.36.0")
        );
        assert_eq!(
            proves_version("purchase", "dry_run", false, Some("7.36.0")),
            None
        );
        assert_eq!(
            proves_version("purchase", "live", true, Some("7.36.0")),
            None
        );
        assert_eq!(
            proves_version("collect", "dry_run", true, Some("7.36.0")),
            None
        );
        assert_eq!(proves_version("purchase", "dry_run", true, None), None);
        assert_eq!(proves_version("purchase", "dry_run", true, Some("")), None);
        assert!(plausible_version("7.36.0-beta"));
        assert!(!plausible_version("abc"));
        assert!(!plausible_version("7.0 x"));
    }

    fn t0() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 12, 1, 8, 0, 0).unwrap()
    }
    fn s(n: u64) -> Duration {
        Duration::from_secs(n)
    }
    fn at(n: u64) -> DateTime<Utc> {
        after(t0(), s(n))
    }
    fn offline() -> DeviceCheck {
        DeviceCheck::NotReady {
            code: "DEVICE_OFFLINE".into(),
            message: "device 127.0.0.1:1 is offline".into(),
        }
    }

    #[test]
    fn a_claim_needs_a_fresh_check() {
        let mut g = DeviceGate::new(GateConfig::default());
        assert_eq!(g.next(t0()), GateStep::Probe);
        assert_eq!(g.on_check(t0(), &DeviceCheck::Ready), None);
        assert_eq!(g.next(at(29)), GateStep::Claim);
        assert_eq!(g.next(at(30)), GateStep::Probe);
    }

    #[test]
    fn offline_pauses_with_a_doubling_capped_probe_schedule_and_resumes() {
        let mut g = DeviceGate::new(GateConfig::default());
        let mut now = t0();
        let mut gaps = Vec::new();
        for i in 0..9 {
            assert_eq!(g.next(now), GateStep::Probe);
            let tr = g.on_check(now, &offline());
            assert_eq!(matches!(tr, Some(Transition::Paused(_))), i == 0, "{tr:?}");
            let GateStep::Wait(d) = g.next(now) else {
                panic!("paused: no claim, no probe before the next probe time")
            };
            gaps.push(d.as_secs());
            now = after(now, d);
        }
        assert_eq!(gaps, vec![1, 2, 4, 8, 16, 32, 60, 60, 60]);
        let p = g.pause().unwrap();
        assert_eq!(
            (p.since, p.code.as_str(), p.probes),
            (t0(), "DEVICE_OFFLINE", 9)
        );
        assert_eq!(
            g.on_check(now, &DeviceCheck::Ready),
            Some(Transition::Resumed {
                since: t0(),
                probes: 9
            })
        );
        assert_eq!(g.next(now), GateStep::Claim);
    }

    #[test]
    fn retry_wait_after_a_device_failure_pauses() {
        let mut g = DeviceGate::new(GateConfig::default());
        g.on_check(t0(), &DeviceCheck::Ready);
        let tr = g.on_outcome(at(1), Some(("DEVICE_OFFLINE", "connection refused")));
        assert!(
            matches!(tr, Some(Transition::Paused(ref p)) if p.since == at(1)),
            "{tr:?}"
        );
        // Never an immediate claim: the probe comes first, even with a fresh check.
        assert_eq!(g.next(at(1)), GateStep::Wait(s(1)));
        assert_eq!(g.next(at(2)), GateStep::Probe);
        g.on_check(at(2), &offline());
        assert_eq!(g.next(at(2)), GateStep::Wait(s(1)));
        assert!(matches!(
            g.on_check(at(3), &DeviceCheck::Ready),
            Some(Transition::Resumed { .. })
        ));
        // Resumed, but the retry_wait spacing (5 s after the outcome) still holds.
        assert_eq!(g.next(at(3)), GateStep::Wait(s(3)));
        assert_eq!(g.next(at(6)), GateStep::Claim);
    }

    #[test]
    fn consecutive_retry_waits_space_the_claims_and_a_result_resets() {
        let mut g = DeviceGate::new(GateConfig::default());
        let mut now = t0();
        let mut gaps = Vec::new();
        for _ in 0..8 {
            g.on_check(now, &DeviceCheck::Ready);
            assert_eq!(g.next(now), GateStep::Claim);
            assert_eq!(g.on_outcome(now, Some(("PAGE_NOT_RECOGNIZED", "?"))), None);
            let GateStep::Wait(d) = g.next(now) else {
                panic!("a retry_wait is never followed by an immediate claim")
            };
            gaps.push(d.as_secs());
            now = after(now, d);
        }
        assert_eq!(gaps, vec![5, 10, 20, 40, 80, 160, 300, 300]);
        assert!(g.pause().is_none());
        g.on_check(now, &DeviceCheck::Ready);
        g.on_outcome(now, None);
        assert_eq!(g.retry_waits(), 0);
        assert_eq!(g.next(now), GateStep::Claim);
    }

    #[test]
    fn login_risk_and_payment_method_pause_the_account() {
        for code in [
            "LOGIN_REQUIRED",
            "RISK_VERIFICATION",
            "PAYMENT_METHOD_NOT_ALLOWED",
        ] {
            let mut g = DeviceGate::new(GateConfig::default());
            assert_eq!(
                g.on_account(Some(code), None, "g1"),
                Some(AccountTrouble {
                    code: code.into(),
                    unrecognized_goods: 0
                })
            );
        }
        // A refusal about one goods' checkout does not pause; one about the account's
        // payment setting does.
        for r in [
            "pays_in_same_tap",
            "no_payment_row",
            "no_order_button",
            "unknown_order_button",
        ] {
            let mut g = DeviceGate::new(GateConfig::default());
            assert_eq!(
                g.on_account(Some("PAYMENT_METHOD_NOT_ALLOWED"), Some(r), "g1"),
                None,
                "{r}"
            );
        }
        for r in ["pay_later", "password_free", "method_not_interactive"] {
            let mut g = DeviceGate::new(GateConfig::default());
            assert!(
                g.on_account(Some("PAYMENT_METHOD_NOT_ALLOWED"), Some(r), "g1")
                    .is_some(),
                "{r}"
            );
        }
        let mut g = DeviceGate::new(GateConfig::default());
        for other in ["GOODS_UNAVAILABLE", "DEVICE_OFFLINE", "PRICE_CHANGED"] {
            assert_eq!(g.on_account(Some(other), None, "g1"), None);
        }
        assert_eq!(g.on_account(None, None, "g1"), None);
    }

    #[test]
    fn unrecognised_pages_on_k_goods_in_a_row_pause_and_anything_else_resets() {
        let mut g = DeviceGate::new(GateConfig::default());
        let u = Some(PAGE_NOT_RECOGNIZED);
        assert_eq!(g.on_account(u, None, "g1"), None);
        assert_eq!(g.on_account(u, None, "g2"), None);
        assert_eq!(g.unrecognized(), 2);
        // A result resets; so does another failure.
        assert_eq!(g.on_account(None, None, "g3"), None);
        assert_eq!(g.on_account(u, None, "g1"), None);
        assert_eq!(g.on_account(u, None, "g2"), None);
        assert_eq!(g.on_account(Some("GOODS_UNAVAILABLE"), None, "g3"), None);
        assert_eq!(g.unrecognized(), 0);
        assert_eq!(g.on_account(u, None, "g1"), None);
        assert_eq!(g.on_account(u, None, "g2"), None);
        assert_eq!(
            g.on_account(u, None, "g3"),
            Some(AccountTrouble {
                code: PAGE_NOT_RECOGNIZED.into(),
                unrecognized_goods: 3
            })
        );
        // Counting starts again after the pause.
        assert_eq!(g.unrecognized(), 0);
        assert_eq!(g.on_account(u, None, "g1"), None);
    }

    /// One dead link retried again and again is that goods' failure: it never pauses
    /// the account, and it does not count twice towards a pause with other goods.
    #[test]
    fn one_goods_unrecognised_again_and_again_never_pauses_the_account() {
        let mut g = DeviceGate::new(GateConfig::default());
        let u = Some(PAGE_NOT_RECOGNIZED);
        for _ in 0..10 {
            assert_eq!(g.on_account(u, None, "dead-link"), None);
        }
        assert_eq!(g.unrecognized(), 1);
        assert_eq!(g.on_account(u, None, "g2"), None);
        assert!(g.on_account(u, None, "g3").is_some());
    }

    #[test]
    fn the_account_pause_can_be_switched_off() {
        let never = GateConfig {
            unrecognized_pause_after: 0,
            ..GateConfig::default()
        };
        let mut g = DeviceGate::new(never);
        for i in 0..10 {
            let goods = format!("g{i}");
            assert_eq!(g.on_account(Some(PAGE_NOT_RECOGNIZED), None, &goods), None);
        }
        assert!(g.on_account(Some("LOGIN_REQUIRED"), None, "g").is_some());
        let off = GateConfig {
            account_pause: false,
            ..GateConfig::default()
        };
        let mut g = DeviceGate::new(off);
        assert_eq!(g.on_account(Some("RISK_VERIFICATION"), None, "g"), None);
        for i in 0..5 {
            let goods = format!("g{i}");
            assert_eq!(g.on_account(Some(PAGE_NOT_RECOGNIZED), None, &goods), None);
        }
    }

    #[test]
    fn device_failure_codes() {
        assert!(is_device_failure("DEVICE_OFFLINE"));
        assert!(is_device_failure("UI_DUMP_FAILED"));
        assert!(!is_device_failure("PAGE_NOT_RECOGNIZED"));
        assert!(!is_device_failure("LOGIN_REQUIRED"));
        for c in ["DEVICE_LOCKED", "BATTERY_LOW", "BATTERY_HOT"] {
            assert!(is_device_failure(c) && needs_human(c), "{c}");
        }
        assert!(!needs_human("DEVICE_OFFLINE"));
    }

    #[test]
    fn three_unrecognised_pages_in_twenty_tasks_raise_the_rate_alert_once() {
        let mut r = UnrecognizedRate::new(3, 20);
        // Spread out (never two in a row): the in-a-row pause would never see them.
        let mut changes = Vec::new();
        for i in 0..40u32 {
            let unrec = matches!(i, 0 | 7 | 14 | 15);
            if let Some(c) = r.push(unrec) {
                changes.push((i, c));
            }
        }
        assert_eq!(
            changes,
            vec![
                (
                    14,
                    RateChange::Raised {
                        hits: 3,
                        window: 20
                    }
                ),
                // Task 0 leaves the window at task 20, but 7, 14, 15 keep it at 3; task 7
                // leaves at 27 → 2 left.
                (27, RateChange::Cleared),
            ]
        );
        assert_eq!(r.hits(), 0, "tasks 20..40 held none");
    }

    #[test]
    fn the_rate_alert_is_off_at_zero_and_the_gate_counts_only_page_not_recognized() {
        let mut off = UnrecognizedRate::new(0, 20);
        assert!((0..50).all(|_| off.push(true).is_none()));
        let mut g = DeviceGate::new(GateConfig {
            unrecognized_rate_count: 2,
            unrecognized_rate_window: 3,
            ..GateConfig::default()
        });
        assert_eq!(g.on_rate(Some("PAGE_NOT_RECOGNIZED")), None);
        assert_eq!(g.on_rate(Some("GOODS_NOT_FOUND")), None);
        assert_eq!(g.on_rate(None), None);
        assert_eq!(g.on_rate(Some("PAGE_NOT_RECOGNIZED")), None);
        assert_eq!(
            g.on_rate(Some("PAGE_NOT_RECOGNIZED")),
            Some(RateChange::Raised { hits: 2, window: 3 })
        );
    }

    #[test]
    fn a_phone_lost_after_the_mark_pauses_without_a_retry_wait_and_is_overdue_after_the_bound() {
        assert!(device_lost_after_mark("DEVICE_OFFLINE"));
        for code in [
            "UI_DUMP_FAILED",
            "ORDER_NOT_FOUND",
            "INTERRUPTED_AFTER_SUBMIT",
        ] {
            assert!(!device_lost_after_mark(code), "{code}");
        }
        let mut g = DeviceGate::new(GateConfig::default());
        g.on_check(t0(), &DeviceCheck::Ready);
        let tr = g.on_device_lost(at(2), "DEVICE_OFFLINE", "connection reset");
        assert!(
            matches!(tr, Some(Transition::Paused(ref p)) if p.since == at(2) && p.probes == 0),
            "{tr:?}"
        );
        assert_eq!(g.retry_waits(), 0, "nothing was reported");
        assert_eq!(g.next(at(2)), GateStep::Wait(s(1)));
        assert_eq!(g.next(at(3)), GateStep::Probe);
        // Already paused: no second transition.
        assert_eq!(g.on_device_lost(at(3), "DEVICE_OFFLINE", "again"), None);
        let max = GateConfig::default().reconcile_wait_max;
        assert_eq!(max, s(1800));
        assert!(!reconcile_overdue(t0(), at(1799), max));
        assert!(reconcile_overdue(t0(), at(1800), max));
    }
}
