//! Item 1: the claim loop claims only when the phone can work. Policy tests on
//! the virtual clock ([`VirtualClock`]) against the in-process mock Admin: a phone that
//! fails its check gets no claim, the probes back off 1 s → 60 s, the worker resumes by
//! itself; a `retry_wait` after a device failure pauses; consecutive `retry_wait`s of any
//! code space the claims.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::support::claim_loop::{loop_world, LoopWorld};
use crate::support::*;
use cmautobuy_client::clock::Clock;
use cmautobuy_client::executor::{failure, DeviceCheck, Executor, Job, Outcome, Readiness};
use cmautobuy_client::runner::ClaimStep;
use cmautobuy_contract::FailureStatus;

/// A phone that is online or not, and answers every job with `retry_wait <code>` (or a
/// result when `code` is `None`).
#[derive(Clone)]
struct Phone {
    online: Arc<AtomicBool>,
    checks: Arc<AtomicUsize>,
    code: Option<&'static str>,
    jobs: Arc<Mutex<Vec<DateTime<Utc>>>>,
    clock: VirtualClock,
}

impl Executor for Phone {
    fn readiness(&self) -> Readiness {
        Readiness {
            device_ready: true,
            ..Readiness::default()
        }
    }
    async fn check_device(&self) -> DeviceCheck {
        self.checks.fetch_add(1, Ordering::SeqCst);
        if self.online.load(Ordering::SeqCst) {
            DeviceCheck::Ready
        } else {
            DeviceCheck::NotReady {
                code: "DEVICE_OFFLINE".into(),
                message: "device 127.0.0.1:1 is offline".into(),
            }
        }
    }
    async fn execute(&self, job: Job) -> Outcome {
        self.jobs.lock().unwrap().push(self.clock.now());
        match self.code {
            None => cmautobuy_client::executor::StubExecutor.execute(job).await,
            Some(code) => Outcome::Failure(Box::new(failure(
                &job,
                FailureStatus::RetryWait,
                code,
                "scripted",
                Some("open_goods"),
            ))),
        }
    }
}

type World = LoopWorld<Phone>;

async fn world(online: bool, code: Option<&'static str>, tasks: usize) -> World {
    loop_world("127.0.0.1:1", tasks, |clock| Phone {
        online: Arc::new(AtomicBool::new(online)),
        checks: Arc::default(),
        code,
        jobs: Arc::default(),
        clock: clock.clone(),
    })
    .await
}

/// One claim cycle; a wait is taken on the virtual clock. The step is returned.
async fn cycle(w: &World) -> ClaimStep {
    w.cycle(&w.runner, None).await
}

fn secs(v: &[Duration]) -> Vec<u64> {
    v.iter().map(Duration::as_secs).collect()
}

#[tokio::test]
async fn an_offline_phone_gets_no_claim_probes_back_off_and_claims_resume() {
    let w = world(false, None, 3).await;
    for _ in 0..10 {
        let step = cycle(&w).await;
        assert!(matches!(step, ClaimStep::Waiting { .. }), "{step:?}");
    }
    assert_eq!(w.claims(), 0, "no claim while the phone is away");
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 10);
    // 1 s doubling to the 60 s cap.
    assert_eq!(
        secs(&w.clock.waits()),
        vec![1, 2, 4, 8, 16, 32, 60, 60, 60, 60]
    );
    let pause = w
        .store
        .device_pause()
        .unwrap()
        .expect("the pause is recorded");
    assert_eq!(pause.code, "DEVICE_OFFLINE");
    assert!(w.runner.device_pause().is_some());
    if let ClaimStep::Waiting { reason, .. } = w.runner.claim_once().await.unwrap() {
        assert!(
            reason.contains("paused since") && reason.contains("DEVICE_OFFLINE"),
            "{reason}"
        );
    } else {
        panic!("still paused before the next probe time");
    }

    w.phone.online.store(true, Ordering::SeqCst);
    w.clock.advance(Duration::from_secs(60));
    for _ in 0..3 {
        assert!(matches!(cycle(&w).await, ClaimStep::Processed { .. }));
    }
    assert_eq!(w.phone.jobs.lock().unwrap().len(), 3);
    assert_eq!(
        w.store.device_pause().unwrap(),
        None,
        "the resume clears it"
    );
    assert!(w.runner.device_pause().is_none());
}

#[tokio::test]
async fn a_fresh_check_is_reused_and_an_old_one_is_repeated() {
    let w = world(true, None, 3).await;
    assert!(matches!(cycle(&w).await, ClaimStep::Processed { .. }));
    assert!(matches!(cycle(&w).await, ClaimStep::Processed { .. }));
    assert_eq!(
        w.phone.checks.load(Ordering::SeqCst),
        1,
        "30 s not yet over"
    );
    w.clock.advance(Duration::from_secs(30));
    assert!(matches!(cycle(&w).await, ClaimStep::Processed { .. }));
    assert_eq!(w.phone.checks.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn retry_wait_after_a_device_failure_pauses_instead_of_claiming_again() {
    // The phone passes its check, then the task fails on it: retry_wait DEVICE_OFFLINE.
    let w = world(true, Some("DEVICE_OFFLINE"), 20).await;
    assert!(matches!(cycle(&w).await, ClaimStep::Processed { .. }));
    assert_eq!(w.claims(), 1);
    w.phone.online.store(false, Ordering::SeqCst);
    for _ in 0..8 {
        let step = cycle(&w).await;
        assert!(matches!(step, ClaimStep::Waiting { .. }), "{step:?}");
    }
    assert_eq!(w.claims(), 1, "never a new claim while paused");
    assert_eq!(
        w.store.device_pause().unwrap().map(|p| p.code).as_deref(),
        Some("DEVICE_OFFLINE")
    );
    // Back online: the next probe passes and claiming resumes.
    w.phone.online.store(true, Ordering::SeqCst);
    let mut n = 0;
    while !matches!(cycle(&w).await, ClaimStep::Processed { .. }) {
        n += 1;
        assert!(n < 5, "resumed within a few cycles");
    }
    assert_eq!(w.claims(), 2);
}

#[tokio::test]
async fn consecutive_retry_waits_of_any_code_space_the_claims() {
    // The mock hands a retry_wait task straight back: the same task again and again.
    let w = world(true, Some("INTERRUPTED_BEFORE_SUBMIT"), 1).await;
    let start = w.clock.now();
    let mut processed = 0;
    while w.clock.now() - start < chrono::Duration::minutes(30) {
        if matches!(cycle(&w).await, ClaimStep::Processed { .. }) {
            processed += 1;
        }
        assert!(w.runner.device_pause().is_none(), "not a device failure");
    }
    let jobs = w.phone.jobs.lock().unwrap().clone();
    let gaps: Vec<i64> = jobs
        .windows(2)
        .map(|p| (p[1] - p[0]).num_seconds())
        .collect();
    // 5 s doubling to 5 min: 5+10+20+40+80+160 = 315 s, then every 300 s.
    assert_eq!(&gaps[..7], &[5, 10, 20, 40, 80, 160, 300], "{gaps:?}");
    assert!(gaps.iter().all(|&g| g >= 5), "{gaps:?}");
    assert!(processed <= 12, "{processed} claims in 30 minutes");
    assert_eq!(w.claims(), processed);
}
