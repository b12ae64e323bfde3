//! The claim loop in process, on the virtual clock: the bundled mock Admin behind
//! [`MockAdminGateway`], a store, a relay and a runner over a scripted phone `P`, with
//! collect tasks pooled. Used by the gate policy tests (`device_gate`, `account_pause`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use cmautobuy_client::clock::Clock;
use cmautobuy_client::executor::Executor;
use cmautobuy_client::gateway::{GatewaySettings, MockAdminGateway};
use cmautobuy_client::outbox::{Relay, Step};
use cmautobuy_client::retry::RetryPolicy;
use cmautobuy_client::runner::{ClaimStep, RunConfig, Runner};
use cmautobuy_client::secret::Secret;
use cmautobuy_client::store::Store;
use cmautobuy_mock_admin::{Endpoint, MockAdmin, MockAdminConfig, Operator};

use super::{store, test_clock, VirtualClock, TOKEN};

pub type LoopRunner<P> = Runner<MockAdminGateway, P, VirtualClock>;

pub struct LoopWorld<P: Executor + Clone> {
    pub mock: MockAdmin,
    pub op: Operator,
    pub store: Store,
    pub clock: VirtualClock,
    pub phone: P,
    pub gw: Arc<MockAdminGateway>,
    pub runner: LoopRunner<P>,
    pub relay: Relay<MockAdminGateway, VirtualClock>,
    pub dir: tempfile::TempDir,
}

/// `tasks` collect tasks pooled at a fresh mock; the store saved with `device`; the
/// phone made by `phone` on the world's clock.
pub async fn loop_world<P: Executor + Clone>(
    device: &str,
    tasks: usize,
    phone: impl FnOnce(&VirtualClock) -> P,
) -> LoopWorld<P> {
    let dir = tempfile::tempdir().unwrap();
    let mock = MockAdmin::open(MockAdminConfig::in_memory()).unwrap();
    let op = mock.operator();
    let store = store(dir.path(), "http://in-process", Some(device));
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
    let clock = test_clock();
    let phone = phone(&clock);
    let relay = Relay::new(
        store.clone(),
        gw.clone(),
        clock.clone(),
        RetryPolicy::default(),
    );
    let runner = new_runner(&store, &gw, &phone, &clock);
    LoopWorld {
        mock,
        op,
        store,
        clock,
        phone,
        gw,
        runner,
        relay,
        dir,
    }
}

fn new_runner<P: Executor + Clone>(
    store: &Store,
    gw: &Arc<MockAdminGateway>,
    phone: &P,
    clock: &VirtualClock,
) -> LoopRunner<P> {
    runner_with(store, gw, phone, clock, RunConfig::default())
}

fn runner_with<P: Executor + Clone>(
    store: &Store,
    gw: &Arc<MockAdminGateway>,
    phone: &P,
    clock: &VirtualClock,
    cfg: RunConfig,
) -> LoopRunner<P> {
    Runner::new(
        store.clone(),
        gw.clone(),
        Arc::new(phone.clone()),
        clock.clone(),
        cfg,
        Arc::new(tokio::sync::Notify::new()),
    )
}

impl<P: Executor + Clone> LoopWorld<P> {
    /// Another runner on the same store, Admin, phone and clock (a restart).
    pub fn restart(&self) -> LoopRunner<P> {
        new_runner(&self.store, &self.gw, &self.phone, &self.clock)
    }

    /// A runner on the world's store, Admin, phone and clock with its own configuration
    /// (pacing, gate timings).
    pub fn runner_with(&self, cfg: RunConfig) -> LoopRunner<P> {
        runner_with(&self.store, &self.gw, &self.phone, &self.clock, cfg)
    }

    /// Claims the mock has answered so far.
    pub fn claims(&self) -> usize {
        self.op
            .journal()
            .iter()
            .filter(|e| e.endpoint == Endpoint::Claim)
            .count()
    }

    /// One claim cycle of `r`: a wait is taken on the virtual clock, an outcome delivered
    /// (so the Admin may hand the task out again). A blocked loop waits `blocked` (the
    /// operator has not acknowledged yet), or panics when `None`.
    pub async fn cycle(&self, r: &LoopRunner<P>, blocked: Option<Duration>) -> ClaimStep {
        let step = r.claim_once().await.unwrap();
        match &step {
            ClaimStep::Waiting { wait, .. }
            | ClaimStep::NoWork(wait)
            | ClaimStep::Backoff(wait) => self.clock.sleep(*wait).await,
            ClaimStep::Processed { .. } => loop {
                match self.relay.step().await.unwrap() {
                    Step::Accepted { .. } => {}
                    Step::Idle(_) => break,
                    other => panic!("not delivered: {other:?}"),
                }
            },
            ClaimStep::Blocked(m) => match blocked {
                Some(d) => self.clock.sleep(d).await,
                None => panic!("blocked: {m}"),
            },
        }
        step
    }
}
