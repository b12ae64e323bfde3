//! When the account check runs and what it does to the declared mode.
//! Policy tests on the virtual clock ([`VirtualClock`]) against the in-process mock Admin,
//! with a scripted live-ready phone whose 个人中心 shows what the test says:
//!
//! - one check before the first claim of a run, none again within a day; the first
//!   reading is the baseline (no alert) and the claim is live;
//! - another account logged in mid-run is seen at the daily check: `account_changed`,
//!   `dry_run` declared, collects still claimed (the alert does not block); `ack` → live
//!   again without another check;
//! - a check that fails (个人中心 not reached) keeps live off — fail closed — with the
//!   reason for `status`, collects continue, and it is tried again 5 min later, not
//!   sooner.

use cmautobuy_client::alert::AlertKind;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::claim_loop::{loop_world, LoopRunner, LoopWorld};
use cmautobuy_client::clock::Clock;
use cmautobuy_client::executor::{AccountCheck, Executor, Job, Outcome, Readiness, StubExecutor};
use cmautobuy_client::runner::ClaimStep;
use cmautobuy_client::screen::AccountReading;
use cmautobuy_contract::ExecutionMode;

#[derive(Clone, Default)]
struct Phone {
    /// What 个人中心 shows; `None`: it cannot be reached.
    shows: Arc<Mutex<Option<AccountReading>>>,
    checks: Arc<AtomicU32>,
    /// The mode each claimed task was claimed under.
    declared: Arc<Mutex<Vec<ExecutionMode>>>,
}

impl Executor for Phone {
    fn readiness(&self) -> Readiness {
        Readiness {
            device_ready: true,
            purchase_adapter_ready: true,
            live_adapter_ready: true,
        }
    }
    async fn execute(&self, job: Job) -> Outcome {
        self.declared.lock().unwrap().push(job.declared_mode);
        StubExecutor.execute(job).await
    }
    async fn check_account(&self) -> Option<AccountCheck> {
        self.checks.fetch_add(1, Ordering::SeqCst);
        Some(match self.shows.lock().unwrap().clone() {
            Some(r) => AccountCheck::Read(r),
            None => AccountCheck::Failed {
                code: "PAGE_NOT_RECOGNIZED".into(),
                message: "个人中心 could not be reached".into(),
            },
        })
    }
}

fn account(nick: &str, phone: &str) -> Option<AccountReading> {
    Some(AccountReading {
        nickname: Some(nick.into()),
        masked_phone: Some(phone.into()),
    })
}

type World = LoopWorld<Phone>;

fn mode(r: &LoopRunner<Phone>) -> ExecutionMode {
    r.profile().unwrap().capabilities.purchase_mode
}

async fn claim(w: &World, r: &LoopRunner<Phone>) -> ExecutionMode {
    let step = w.cycle(r, None).await;
    assert!(matches!(step, ClaimStep::Processed { .. }), "{step:?}");
    *w.phone.declared.lock().unwrap().last().unwrap()
}

fn open_kinds(w: &World) -> Vec<String> {
    w.store
        .open_alerts()
        .unwrap()
        .into_iter()
        .map(|a| a.kind.to_string())
        .collect()
}

#[tokio::test]
async fn checked_at_start_and_daily_another_account_pauses_live_until_ack() {
    let w = loop_world("127.0.0.1:5555", 8, |_| Phone::default()).await;
    *w.phone.shows.lock().unwrap() = account("拼多多用户", "138****0000");
    let r = &w.runner;
    // Before the first claim: one check, the baseline, a live claim.
    assert_eq!(claim(&w, r).await, ExecutionMode::Live);
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 1);
    let f = w
        .store
        .account_fingerprint("127.0.0.1:5555")
        .unwrap()
        .unwrap();
    assert_eq!(f.baseline.masked_phone.as_deref(), Some("138****0000"));
    assert!(open_kinds(&w).is_empty());
    // Another account logs in mid-run: not looked at again within the day.
    *w.phone.shows.lock().unwrap() = account("仓库二号", "177****5678");
    w.clock.advance(Duration::from_secs(23 * 3600));
    assert_eq!(claim(&w, r).await, ExecutionMode::Live);
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 1);
    // A day after the check: checked again, changed → dry_run, claims continue.
    w.clock.advance(Duration::from_secs(3600));
    assert_eq!(claim(&w, r).await, ExecutionMode::DryRun);
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 2);
    assert_eq!(open_kinds(&w), vec![AlertKind::AccountChanged.to_string()]);
    let alert = &w.store.open_alerts().unwrap()[0];
    assert!(
        alert.message.contains("138****0000 / 拼多多用户")
            && alert.message.contains("177****5678 / 仓库二号"),
        "{}",
        alert.message
    );
    assert_eq!(
        w.store.account_refusal().unwrap().as_deref(),
        Some("account changed on this phone")
    );
    assert_eq!(claim(&w, r).await, ExecutionMode::DryRun, "still claiming");
    // The operator acknowledges: the new account is the baseline, live at once.
    w.store.ack_alerts(None, w.clock.now()).unwrap();
    assert_eq!(mode(r), ExecutionMode::Live);
    assert_eq!(claim(&w, r).await, ExecutionMode::Live);
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 2);
    let f = w
        .store
        .account_fingerprint("127.0.0.1:5555")
        .unwrap()
        .unwrap();
    assert_eq!(f.baseline.masked_phone.as_deref(), Some("177****5678"));
    assert_eq!(w.store.account_refusal().unwrap(), None);
}

#[tokio::test]
async fn a_failed_check_keeps_live_off_and_is_retried_after_five_minutes() {
    let w = loop_world("127.0.0.1:5555", 8, |_| Phone::default()).await;
    let r = &w.runner;
    // 个人中心 cannot be reached: dry_run, collects continue, the reason recorded.
    assert_eq!(claim(&w, r).await, ExecutionMode::DryRun);
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 1);
    assert!(open_kinds(&w).is_empty(), "no alert for a failed check");
    let why = w.store.account_refusal().unwrap().unwrap();
    assert!(
        why.contains("account check failed") && why.contains("个人中心"),
        "{why}"
    );
    assert_eq!(w.store.account_fingerprint("127.0.0.1:5555").unwrap(), None);
    // The phone is fine again, but the next check waits 5 min.
    *w.phone.shows.lock().unwrap() = account("拼多多用户", "138****0000");
    w.clock.advance(Duration::from_secs(4 * 60));
    assert_eq!(claim(&w, r).await, ExecutionMode::DryRun);
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 1);
    w.clock.advance(Duration::from_secs(60));
    assert_eq!(claim(&w, r).await, ExecutionMode::Live);
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 2);
    assert_eq!(w.store.account_refusal().unwrap(), None);
    // A restart checks again before its first claim (same account: no alert).
    let r2 = w.restart();
    assert_eq!(claim(&w, &r2).await, ExecutionMode::Live);
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 3);
    assert!(open_kinds(&w).is_empty());
}
