//! Item 3: pacing. Policy tests on the virtual clock ([`VirtualClock`]) against the
//! in-process mock Admin: at a live order cap the worker declares `dry_run` (dry runs and
//! collects continue, live tasks stay at the Admin) until the window passes, then live
//! again; the count comes from the store, so it survives a restart; the next claim waits
//! `min_task_gap` after a task ended.

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::support::claim_loop::{loop_world, LoopRunner, LoopWorld};
use crate::support::world::goods_url;
use crate::support::*;
use cmautobuy_client::clock::Clock;
use cmautobuy_client::executor::{failure, Executor, Job, Outcome, Readiness, StubExecutor};
use cmautobuy_client::pacing::PacingConfig;
use cmautobuy_client::runner::{ClaimStep, RunConfig};
use cmautobuy_client::store::{MarkOutcome, Store};
use cmautobuy_contract::{ExecutionMode, FailureStatus};

/// A phone ready for live purchases. A live job "orders": it takes the irreversible mark
/// in the store, as the purchase job does before its submit tap, and reports
/// `manual_review` (what happened after the mark is not this test's subject); a dry run
/// ends `failed`; a collect gets the stub's result.
/// (task id, declared mode, when).
type Ran = (String, ExecutionMode, DateTime<Utc>);

#[derive(Clone)]
struct Phone {
    store: Arc<OnceLock<Store>>,
    clock: VirtualClock,
    jobs: Arc<Mutex<Vec<Ran>>>,
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
        self.jobs.lock().unwrap().push((
            job.task.remote_task_id.clone(),
            job.declared_mode,
            self.clock.now(),
        ));
        if job.task.task_type == "collect" {
            return StubExecutor.execute(job).await;
        }
        if job.task.execution_mode == "live" {
            let store = self.store.get().expect("store set");
            let marked = store
                .mark_irreversible_once(job.run.id, self.clock.now(), "{}")
                .unwrap();
            assert!(matches!(marked, MarkOutcome::Marked { .. }), "{marked:?}");
            return Outcome::Failure(Box::new(failure(
                &job,
                FailureStatus::ManualReview,
                "ORDER_NOT_FOUND",
                "scripted: ordered, not reconciled",
                Some("reconcile"),
            )));
        }
        Outcome::Failure(Box::new(failure(
            &job,
            FailureStatus::Failed,
            "GOODS_UNAVAILABLE",
            "scripted dry run",
            Some("check_goods"),
        )))
    }
}

type World = LoopWorld<Phone>;

async fn world(collects: usize) -> World {
    let w = loop_world("127.0.0.1:5555", collects, |clock| Phone {
        store: Arc::default(),
        clock: clock.clone(),
        jobs: Arc::default(),
    })
    .await;
    w.phone.store.set(w.store.clone()).ok().unwrap();
    w
}

/// A purchase task `id` in `mode` with `priority` (live ones first).
async fn purchase(w: &World, id: &str, mode: &str, priority: i64) {
    let goods = "602938475610";
    w.op.create_task(json!({
        "id": id, "type": "purchase", "execution_mode": mode, "priority": priority,
        "payload": {"goods_id": goods, "goods_url": goods_url(goods),
                    "options": {"颜色": "黑色"}, "quantity": 1, "max_price_cent": 2000}
    }))
    .await
    .unwrap();
}

fn mode(r: &LoopRunner<Phone>) -> ExecutionMode {
    r.profile().unwrap().capabilities.purchase_mode
}

fn processed(step: &ClaimStep) -> &str {
    match step {
        ClaimStep::Processed { remote_task_id } => remote_task_id,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn capped(per_hour: u32, per_day: u32) -> RunConfig {
    RunConfig {
        pacing: PacingConfig {
            min_task_gap: Duration::ZERO,
            live_orders_per_hour: per_hour,
            live_orders_per_day: per_day,
        },
        ..RunConfig::default()
    }
}

/// The acceptance point "caps → `dry_run` declared at the cap": two live orders reach an
/// hourly cap of 2; the worker declares `dry_run`, runs the dry-run purchase and the
/// collect, leaves the live task at the Admin (204), says until when in the store for
/// `status`, and declares `live` again — and takes the live task — once the first order
/// is an hour old.
#[tokio::test]
async fn at_the_hourly_cap_the_worker_declares_dry_run_until_the_window_passes() {
    let w = world(1).await;
    for id in ["live-1", "live-2", "live-3"] {
        purchase(&w, id, "live", 10).await;
    }
    purchase(&w, "dry-1", "dry_run", 5).await;
    let r = w.runner_with(capped(2, 0));
    let t0 = w.clock.now();
    assert_eq!(mode(&r), ExecutionMode::Live);
    assert_eq!(processed(&w.cycle(&r, None).await), "live-1");
    w.clock.advance(Duration::from_secs(600));
    assert_eq!(processed(&w.cycle(&r, None).await), "live-2");
    // At the cap: dry_run declared, recorded for `status` with the time live returns.
    assert_eq!(mode(&r), ExecutionMode::DryRun);
    let note = w.store.live_cap().unwrap().expect("the cap is recorded");
    assert_eq!(
        note.until,
        cmautobuy_contract::time::format_utc(t0 + chrono::Duration::hours(1))
    );
    assert!(
        note.reason
            .contains("2 live orders in the last hour (cap 2)"),
        "{note:?}"
    );
    // Dry runs and collects continue; the live task stays at the Admin.
    assert_eq!(processed(&w.cycle(&r, None).await), "dry-1");
    let next = w.cycle(&r, None).await;
    assert!(
        !processed(&next).starts_with("live"),
        "the collect: {next:?}"
    );
    assert!(matches!(w.cycle(&r, None).await, ClaimStep::NoWork(_)));
    let jobs = w.phone.jobs.lock().unwrap().clone();
    assert_eq!(
        jobs.iter().map(|j| j.1).collect::<Vec<_>>(),
        vec![
            ExecutionMode::Live,
            ExecutionMode::Live,
            ExecutionMode::DryRun,
            ExecutionMode::DryRun
        ]
    );
    // A restart counts the orders from the store: still capped.
    let again = w.runner_with(capped(2, 0));
    assert_eq!(mode(&again), ExecutionMode::DryRun);
    // The window passes the first order (t0 + 1 h): live again, the live task is taken.
    let now = w.clock.now();
    w.clock
        .advance((t0 + chrono::Duration::hours(1) - now).to_std().unwrap());
    assert_eq!(mode(&r), ExecutionMode::Live);
    assert_eq!(w.store.live_cap().unwrap(), None, "the note is cleared");
    assert_eq!(processed(&w.cycle(&r, None).await), "live-3");
    // And at the cap again at once (live-2 and live-3 in the last hour).
    assert_eq!(mode(&r), ExecutionMode::DryRun);
}

/// The daily cap outlasts the hourly one; 0 switches a cap off.
#[tokio::test]
async fn the_daily_cap_holds_after_the_hour_and_zero_means_no_cap() {
    let w = world(0).await;
    for i in 0..3 {
        purchase(&w, &format!("live-{i}"), "live", 10).await;
    }
    let r = w.runner_with(capped(5, 2));
    assert_eq!(processed(&w.cycle(&r, None).await), "live-0");
    assert_eq!(processed(&w.cycle(&r, None).await), "live-1");
    assert_eq!(mode(&r), ExecutionMode::DryRun);
    w.clock.advance(Duration::from_secs(2 * 3600));
    assert_eq!(mode(&r), ExecutionMode::DryRun, "the day is not over");
    assert!(matches!(w.cycle(&r, None).await, ClaimStep::NoWork(_)));
    let note = w.store.live_cap().unwrap().unwrap();
    assert!(note.reason.contains("last day (cap 2)"), "{note:?}");
    // No caps at all: live whatever the count.
    let free = w.runner_with(capped(0, 0));
    assert_eq!(mode(&free), ExecutionMode::Live);
    assert_eq!(processed(&w.cycle(&free, None).await), "live-2");
}

/// The next claim waits `min_task_gap` after a task ended; the first goes at once.
#[tokio::test]
async fn the_next_claim_waits_the_gap_after_a_task() {
    let w = world(2).await;
    let r = w.runner_with(RunConfig {
        pacing: PacingConfig {
            min_task_gap: Duration::from_secs(3),
            ..PacingConfig::default()
        },
        ..RunConfig::default()
    });
    processed(&w.cycle(&r, None).await);
    match w.cycle(&r, None).await {
        ClaimStep::Waiting { reason, wait } => {
            assert_eq!(wait, Duration::from_secs(3));
            assert!(reason.contains("min_task_gap"), "{reason}");
        }
        other => panic!("expected the gap, got {other:?}"),
    }
    processed(&w.cycle(&r, None).await);
    let jobs = w.phone.jobs.lock().unwrap().clone();
    assert_eq!(jobs.len(), 2);
    assert!(jobs[1].2 - jobs[0].2 >= chrono::Duration::seconds(3));
}
