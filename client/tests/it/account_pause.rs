//! Item 2: account trouble pauses the worker until an operator acknowledges.
//! Policy tests on the virtual clock ([`VirtualClock`]) against the in-process mock Admin:
//! a login page, a risk page, a refused payment method or K unrecognised pages in a row
//! raise an `account_paused` alert; no claim happens until `ack`; the pause survives a
//! restart (it is the unacknowledged alert in the store).

use cmautobuy_client::alert::AlertKind;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::support::claim_loop::{loop_world, LoopRunner, LoopWorld};
use cmautobuy_client::clock::Clock;
use cmautobuy_client::executor::{failure, DeviceCheck, Executor, Job, Outcome, Readiness};
use cmautobuy_client::runner::ClaimStep;
use cmautobuy_contract::FailureStatus;

/// One scripted answer: a failure (status, code), or `None` for a result.
type Answer = Option<(FailureStatus, &'static str)>;

/// A phone that answers jobs from a script (`None`: a result), then with results.
#[derive(Clone)]
struct Phone {
    script: Arc<Mutex<VecDeque<Answer>>>,
    jobs: Arc<Mutex<Vec<String>>>,
}

impl Executor for Phone {
    fn readiness(&self) -> Readiness {
        Readiness {
            device_ready: true,
            ..Readiness::default()
        }
    }
    async fn check_device(&self) -> DeviceCheck {
        DeviceCheck::Ready
    }
    async fn execute(&self, job: Job) -> Outcome {
        self.jobs
            .lock()
            .unwrap()
            .push(job.task.remote_task_id.clone());
        let next = self.script.lock().unwrap().pop_front().flatten();
        match next {
            None => cmautobuy_client::executor::StubExecutor.execute(job).await,
            Some((status, code)) => {
                // `CODE:refusal` carries a payment refusal's name in `diagnostics.refusal`.
                let (code, refusal) = match code.split_once(':') {
                    Some((c, r)) => (c, Some(r)),
                    None => (code, None),
                };
                let mut f = failure(&job, status, code, "scripted page", Some("open_goods"));
                if let Some(r) = refusal {
                    f.diagnostics.insert("refusal".into(), json!(r));
                }
                f.diagnostics.insert(
                    "artifact_ref".into(),
                    json!(format!(
                        "{}:artifacts/{}/{}/",
                        job.client_id, job.task.remote_task_id, job.run.attempt_id
                    )),
                );
                Outcome::Failure(Box::new(f))
            }
        }
    }
}

type World = LoopWorld<Phone>;

async fn world(script: Vec<Answer>, tasks: usize) -> World {
    loop_world("127.0.0.1:5555", tasks, |_| Phone {
        script: Arc::new(Mutex::new(script.into())),
        jobs: Arc::default(),
    })
    .await
}

/// One claim cycle of `r`; a wait is taken on the virtual clock, an outcome delivered.
/// While the operator has not acknowledged, ten minutes pass.
async fn cycle(w: &World, r: &LoopRunner<Phone>) -> ClaimStep {
    w.cycle(r, Some(std::time::Duration::from_secs(600))).await
}

fn processed(s: &ClaimStep) -> bool {
    matches!(s, ClaimStep::Processed { .. })
}

#[tokio::test]
async fn a_risk_page_pauses_until_ack_and_the_pause_survives_a_restart() {
    let w = world(
        vec![Some((FailureStatus::ManualReview, "RISK_VERIFICATION"))],
        4,
    )
    .await;
    assert!(processed(&cycle(&w, &w.runner).await));
    assert_eq!(w.claims(), 1, "exactly one claim");
    for _ in 0..6 {
        let step = cycle(&w, &w.runner).await;
        match step {
            ClaimStep::Blocked(reason) => {
                assert!(
                    reason.contains(AlertKind::AccountPaused.as_str()),
                    "{reason}"
                );
                assert!(reason.contains("RISK_VERIFICATION"), "{reason}");
            }
            other => panic!("paused: {other:?}"),
        }
    }
    assert_eq!(w.claims(), 1, "no claim while the alert is open");
    let alerts = w.store.open_alerts().unwrap();
    assert_eq!(alerts.len(), 1);
    let a = &alerts[0];
    assert_eq!(a.kind, AlertKind::AccountPaused);
    let first = w.phone.jobs.lock().unwrap()[0].clone();
    assert_eq!(a.remote_task_id.as_deref(), Some(first.as_str()));
    assert!(
        a.message.contains("RISK_VERIFICATION")
            && a.message.contains(&format!(":artifacts/{first}/")),
        "{}",
        a.message
    );

    // A restart: a new runner on the same store is paused as well.
    let again = w.restart();
    assert!(matches!(cycle(&w, &again).await, ClaimStep::Blocked(_)));
    assert_eq!(w.claims(), 1);

    // `ack --id N`: claims resume.
    assert_eq!(w.store.ack_alerts(Some(a.id), w.clock.now()).unwrap(), 1);
    for _ in 0..3 {
        assert!(processed(&cycle(&w, &again).await));
    }
    assert_eq!(w.claims(), 4);
}

#[tokio::test]
async fn login_and_payment_method_pause_too() {
    for code in [
        "LOGIN_REQUIRED",
        "PAYMENT_METHOD_NOT_ALLOWED",
        "PAYMENT_METHOD_NOT_ALLOWED:pay_later",
    ] {
        let w = world(vec![Some((FailureStatus::Failed, code))], 2).await;
        assert!(processed(&cycle(&w, &w.runner).await));
        let step = cycle(&w, &w.runner).await;
        let bare = code.split(':').next().unwrap_or(code);
        assert!(
            matches!(&step, ClaimStep::Blocked(r) if r.contains(bare)),
            "{code}: {step:?}"
        );
        assert_eq!(w.claims(), 1, "{code}");
        w.store.ack_alerts(None, w.clock.now()).unwrap();
        assert!(processed(&cycle(&w, &w.runner).await), "{code}");
    }
}

/// A payment refusal about one goods' checkout — its button pays in the same tap (立即支付),
/// it shows no payment method — is that task's: the next task is claimed, no alert.
#[tokio::test]
async fn a_goods_checkout_that_pays_in_one_tap_does_not_pause_the_account() {
    for code in [
        "PAYMENT_METHOD_NOT_ALLOWED:pays_in_same_tap",
        "PAYMENT_METHOD_NOT_ALLOWED:no_payment_row",
    ] {
        let w = world(vec![Some((FailureStatus::ManualReview, code))], 2).await;
        assert!(processed(&cycle(&w, &w.runner).await), "{code}");
        assert!(
            processed(&cycle(&w, &w.runner).await),
            "{code}: the next task is claimed"
        );
        assert_eq!(w.claims(), 2, "{code}");
        assert!(
            w.store
                .open_alerts()
                .unwrap()
                .iter()
                .all(|a| a.kind != AlertKind::AccountPaused),
            "{code}: no account_paused alert"
        );
    }
}

/// Cycles until the next claim is processed (spacing after `retry_wait`s is waited
/// out); `None` if claiming is blocked instead.
async fn next_claim(w: &World) -> Option<ClaimStep> {
    for _ in 0..20 {
        let step = cycle(w, &w.runner).await;
        match step {
            ClaimStep::Processed { .. } => return Some(step),
            ClaimStep::Blocked(_) => return None,
            _ => {}
        }
    }
    panic!("neither a claim nor a pause in 20 cycles")
}

#[tokio::test]
async fn three_unrecognised_pages_in_a_row_pause_two_do_not() {
    // Ended `failed`, so the Admin hands out the next goods rather than the same task
    // again: unrecognised pages of different goods (one goods retried is one goods).
    let u = Some((FailureStatus::Failed, "PAGE_NOT_RECOGNIZED"));
    // Two, a result (resets), then three.
    let w = world(vec![u, u, None, u, u, u], 10).await;
    for _ in 0..5 {
        assert!(next_claim(&w).await.is_some(), "not paused yet");
    }
    // Four unrecognised pages in five tasks: the (non-blocking) rate alert is open, the
    // in-a-row pause is not.
    let kinds: Vec<String> = w
        .store
        .open_alerts()
        .unwrap()
        .into_iter()
        .map(|a| a.kind.to_string())
        .collect();
    assert_eq!(kinds, vec![AlertKind::UnrecognizedRate.to_string()]);
    assert!(next_claim(&w).await.is_some(), "the third in a row is run");
    assert_eq!(w.claims(), 6);
    assert!(next_claim(&w).await.is_none(), "then paused");
    for _ in 0..5 {
        assert!(matches!(cycle(&w, &w.runner).await, ClaimStep::Blocked(_)));
    }
    assert_eq!(w.claims(), 6);
    let alerts: Vec<_> = w
        .store
        .open_alerts()
        .unwrap()
        .into_iter()
        .filter(|a| a.kind == AlertKind::AccountPaused)
        .collect();
    assert_eq!(alerts.len(), 1);
    assert!(
        alerts[0].message.contains("PAGE_NOT_RECOGNIZED")
            && alerts[0]
                .message
                .contains("pages of 3 different goods in a row were not recognised"),
        "{}",
        alerts[0].message
    );
    w.store
        .ack_alerts(Some(alerts[0].id), w.clock.now())
        .unwrap();
    assert!(next_claim(&w).await.is_some(), "resumed after ack");
    assert_eq!(w.claims(), 7);
}

/// One goods whose page is never recognised (a dead link), claimed again after each
/// `retry_wait`: that goods' failure however often it is retried, never the account's —
/// no pause, no `account_paused` alert.
#[tokio::test]
async fn one_goods_unrecognised_again_and_again_never_pauses_the_account() {
    let u = Some((FailureStatus::RetryWait, "PAGE_NOT_RECOGNIZED"));
    let w = world(vec![u, u, u, u], 1).await;
    for _ in 0..4 {
        assert!(next_claim(&w).await.is_some(), "never paused");
    }
    assert_eq!(w.claims(), 4, "the one task, claimed four times");
    assert!(w
        .store
        .open_alerts()
        .unwrap()
        .iter()
        .all(|a| a.kind != AlertKind::AccountPaused));
}

/// Unrecognised pages that never come in a row (so never pause) but
/// reach 3 in the last 20 tasks raise the non-blocking `unrecognized_rate` alert;
/// claiming goes on, and the alert resolves itself once the window holds fewer.
#[tokio::test]
async fn three_unrecognised_pages_in_twenty_tasks_alert_without_pausing() {
    let u = Some((FailureStatus::RetryWait, "PAGE_NOT_RECOGNIZED"));
    let w = world(vec![u, None, None, u, None, u], 40).await;
    let open = |w: &World| -> Vec<String> {
        w.store
            .open_alerts()
            .unwrap()
            .into_iter()
            .map(|a| a.kind.to_string())
            .collect()
    };
    for _ in 0..5 {
        assert!(next_claim(&w).await.is_some());
    }
    assert!(open(&w).is_empty(), "two in five tasks: no alert");
    assert!(next_claim(&w).await.is_some());
    assert_eq!(open(&w), vec![AlertKind::UnrecognizedRate.to_string()]);
    let a = &w.store.open_alerts().unwrap()[0];
    assert!(
        a.message
            .contains("3 unrecognised pages in the last 20 tasks"),
        "{}",
        a.message
    );
    // Not blocking: the next tasks are claimed and run.
    for _ in 0..14 {
        assert!(
            next_claim(&w).await.is_some(),
            "the rate alert does not pause"
        );
    }
    assert_eq!(w.claims(), 20);
    assert_eq!(open(&w), vec![AlertKind::UnrecognizedRate.to_string()]);
    // Task 21 pushes the first unrecognised page out of the window: 2 left, resolved.
    assert!(next_claim(&w).await.is_some());
    assert!(open(&w).is_empty(), "resolved: {:?}", open(&w));
}
