//! Issue 12, item 2: account trouble pauses the worker until an operator acknowledges.
//! Policy tests on the virtual clock ([`TestClock`]) against the in-process mock Admin:
//! a login page, a risk page, a refused payment method or K unrecognised pages in a row
//! raise an `account_paused` alert; no claim happens until `ack`; the pause survives a
//! restart (it is the unacknowledged alert in the store).

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::json;

use cmautobuy_client::clock::Clock;
use cmautobuy_client::executor::{failure, DeviceCheck, Executor, Job, Outcome, Readiness};
use cmautobuy_client::gateway::{GatewaySettings, MockAdminGateway};
use cmautobuy_client::outbox::{Relay, Step};
use cmautobuy_client::retry::RetryPolicy;
use cmautobuy_client::runner::{ClaimStep, RunConfig, Runner, ALERT_ACCOUNT};
use cmautobuy_client::secret::Secret;
use cmautobuy_client::store::Store;
use cmautobuy_contract::FailureStatus;
use cmautobuy_mock_admin::{Endpoint, MockAdmin, MockAdminConfig, Operator};
use support::*;

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
                let mut f = failure(&job, status, code, "scripted page", Some("open_goods"));
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

struct World {
    _mock: MockAdmin,
    op: Operator,
    store: Store,
    clock: TestClock,
    phone: Phone,
    gw: Arc<MockAdminGateway>,
    runner: Runner<MockAdminGateway, Phone, TestClock>,
    relay: Relay<MockAdminGateway, TestClock>,
    _dir: tempfile::TempDir,
}

fn runner(
    w_store: &Store,
    gw: &Arc<MockAdminGateway>,
    phone: &Phone,
    clock: &TestClock,
) -> Runner<MockAdminGateway, Phone, TestClock> {
    Runner::new(
        w_store.clone(),
        gw.clone(),
        Arc::new(phone.clone()),
        clock.clone(),
        RunConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    )
}

async fn world(script: Vec<Answer>, tasks: usize) -> World {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockAdmin::open(MockAdminConfig::in_memory()).unwrap();
    let op = mock.operator();
    let store = store(dir.path(), "http://in-process", Some("127.0.0.1:5555"));
    let gw = Arc::new(MockAdminGateway::new(
        mock.router(),
        GatewaySettings::new(store.client_id().unwrap(), Some(Secret::new(TOKEN))),
    ));
    for i in 0..tasks {
        let goods = format!("60293847{:04}", 5610 + i);
        op.create_task(json!({"type": "collect", "payload": {"goods_id": goods,
            "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}")}}))
            .await
            .unwrap();
    }
    let clock = TestClock::new();
    let phone = Phone {
        script: Arc::new(Mutex::new(script.into())),
        jobs: Arc::default(),
    };
    let relay = Relay::new(
        store.clone(),
        gw.clone(),
        clock.clone(),
        RetryPolicy::default(),
    );
    let runner = runner(&store, &gw, &phone, &clock);
    World {
        _mock: mock,
        op,
        store,
        clock,
        phone,
        gw,
        runner,
        relay,
        _dir: dir,
    }
}

fn claims(op: &Operator) -> usize {
    op.journal()
        .iter()
        .filter(|e| e.endpoint == Endpoint::Claim)
        .count()
}

/// One claim cycle of `r`; a wait is taken on the virtual clock, an outcome delivered.
async fn cycle(w: &World, r: &Runner<MockAdminGateway, Phone, TestClock>) -> ClaimStep {
    let step = r.claim_once().await.unwrap();
    match &step {
        ClaimStep::Waiting { wait, .. } | ClaimStep::NoWork(wait) | ClaimStep::Backoff(wait) => {
            w.clock.sleep(*wait).await
        }
        ClaimStep::Processed { .. } => loop {
            match w.relay.step().await.unwrap() {
                Step::Accepted { .. } => {}
                Step::Idle(_) => break,
                other => panic!("not delivered: {other:?}"),
            }
        },
        // The operator has not acknowledged yet: an hour passes.
        ClaimStep::Blocked(_) => w.clock.sleep(std::time::Duration::from_secs(600)).await,
    }
    step
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
    assert_eq!(claims(&w.op), 1, "exactly one claim");
    for _ in 0..6 {
        let step = cycle(&w, &w.runner).await;
        match step {
            ClaimStep::Blocked(reason) => {
                assert!(reason.contains(ALERT_ACCOUNT), "{reason}");
                assert!(reason.contains("RISK_VERIFICATION"), "{reason}");
            }
            other => panic!("paused: {other:?}"),
        }
    }
    assert_eq!(claims(&w.op), 1, "no claim while the alert is open");
    let alerts = w.store.open_alerts().unwrap();
    assert_eq!(alerts.len(), 1);
    let a = &alerts[0];
    assert_eq!(a.kind, ALERT_ACCOUNT);
    let first = w.phone.jobs.lock().unwrap()[0].clone();
    assert_eq!(a.remote_task_id.as_deref(), Some(first.as_str()));
    assert!(
        a.message.contains("RISK_VERIFICATION")
            && a.message.contains(&format!(":artifacts/{first}/")),
        "{}",
        a.message
    );

    // A restart: a new runner on the same store is paused as well.
    let again = runner(&w.store, &w.gw, &w.phone, &w.clock);
    assert!(matches!(cycle(&w, &again).await, ClaimStep::Blocked(_)));
    assert_eq!(claims(&w.op), 1);

    // `ack --id N`: claims resume.
    assert_eq!(w.store.ack_alerts(Some(a.id), w.clock.now()).unwrap(), 1);
    for _ in 0..3 {
        assert!(processed(&cycle(&w, &again).await));
    }
    assert_eq!(claims(&w.op), 4);
}

#[tokio::test]
async fn login_and_payment_method_pause_too() {
    for code in ["LOGIN_REQUIRED", "PAYMENT_METHOD_NOT_ALLOWED"] {
        let w = world(vec![Some((FailureStatus::Failed, code))], 2).await;
        assert!(processed(&cycle(&w, &w.runner).await));
        let step = cycle(&w, &w.runner).await;
        assert!(
            matches!(&step, ClaimStep::Blocked(r) if r.contains(code)),
            "{code}: {step:?}"
        );
        assert_eq!(claims(&w.op), 1, "{code}");
        w.store.ack_alerts(None, w.clock.now()).unwrap();
        assert!(processed(&cycle(&w, &w.runner).await), "{code}");
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
    let u = Some((FailureStatus::RetryWait, "PAGE_NOT_RECOGNIZED"));
    // Two, a result (resets), then three.
    let w = world(vec![u, u, None, u, u, u], 10).await;
    for _ in 0..5 {
        assert!(next_claim(&w).await.is_some(), "not paused yet");
    }
    assert!(w.store.open_alerts().unwrap().is_empty());
    assert!(next_claim(&w).await.is_some(), "the third in a row is run");
    assert_eq!(claims(&w.op), 6);
    assert!(next_claim(&w).await.is_none(), "then paused");
    for _ in 0..5 {
        assert!(matches!(cycle(&w, &w.runner).await, ClaimStep::Blocked(_)));
    }
    assert_eq!(claims(&w.op), 6);
    let alerts = w.store.open_alerts().unwrap();
    assert_eq!(alerts.len(), 1);
    assert!(
        alerts[0].message.contains("PAGE_NOT_RECOGNIZED")
            && alerts[0].message.contains("3 unrecognised pages in a row"),
        "{}",
        alerts[0].message
    );
    w.store
        .ack_alerts(Some(alerts[0].id), w.clock.now())
        .unwrap();
    assert!(next_claim(&w).await.is_some(), "resumed after ack");
    assert_eq!(claims(&w.op), 7);
}
