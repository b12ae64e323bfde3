//! Shared test support: a virtual clock, scripted executors, store helpers, and the
//! end-to-end [`world`] (mock Admin + simulated phone + the real client binary).
#![allow(dead_code)]

pub mod claim_loop;
pub mod receiver;
pub mod replay;
pub mod world;

use chrono::{TimeZone, Utc};
use std::sync::{Arc, Mutex};

use cmautobuy_client::executor::{failure, Executor, Job, Outcome, Readiness, StubExecutor};
use cmautobuy_client::secret::Secret;
use cmautobuy_client::store::{SettingsPatch, Store};
use cmautobuy_contract::FailureStatus;

pub use cmautobuy_client::clock::VirtualClock;

/// The tests' virtual clock, at the same start every time (2026-08-06 08:00 UTC).
pub fn test_clock() -> VirtualClock {
    VirtualClock::new(Utc.with_ymd_and_hms(2026, 8, 6, 8, 0, 0).unwrap())
}

/// What the scripted executor answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Script {
    /// A valid (empty) collect result.
    Result,
    /// A `failed` failure.
    Failure,
}

/// An executor that answers per [`Script`] and counts its jobs.
#[derive(Clone)]
pub struct ScriptedExecutor {
    pub script: Script,
    pub readiness: Readiness,
    pub jobs: Arc<Mutex<Vec<Job>>>,
}

impl ScriptedExecutor {
    pub fn new(script: Script) -> Self {
        ScriptedExecutor {
            script,
            readiness: Readiness::default(),
            jobs: Arc::default(),
        }
    }
    pub fn ready_for_purchase(mut self, live: bool) -> Self {
        self.readiness = Readiness {
            device_ready: true,
            purchase_adapter_ready: true,
            live_adapter_ready: live,
        };
        self
    }
    pub fn job_count(&self) -> usize {
        self.jobs.lock().unwrap().len()
    }
}

impl Executor for ScriptedExecutor {
    fn readiness(&self) -> Readiness {
        self.readiness
    }
    async fn execute(&self, job: Job) -> Outcome {
        self.jobs.lock().unwrap().push(job.clone());
        match self.script {
            Script::Result => StubExecutor.execute(job).await,
            Script::Failure => Outcome::Failure(Box::new(failure(
                &job,
                FailureStatus::Failed,
                "GOODS_UNAVAILABLE",
                "商品已下架",
                Some("check_goods"),
            ))),
        }
    }
}

pub const TOKEN: &str = "tok-Zx9-very-secret-0042";

/// The device backend a rehearsal of its own simulated phone reports under this run's
/// `CMAUTOBUY_DEVICE_BACKEND` ([`world::backend_from_env`]): `u2` when required (through
/// the rehearsal's private adb server), else `uiautomator` (direct TCP, where `auto`
/// does not use u2).
pub fn rehearse_backend_from_env() -> &'static str {
    match world::backend_from_env().as_deref().map(str::trim) {
        Some("u2") => "u2",
        _ => "uiautomator",
    }
}

/// A fresh store in a temp dir, configured with an Admin URL, token and (optionally) a
/// device.
pub fn store(dir: &std::path::Path, admin_url: &str, device: Option<&str>) -> Store {
    let s = Store::open(&Store::path_in(dir)).unwrap();
    s.save_settings(&SettingsPatch {
        name: Some("测试-01".into()),
        admin_url: Some(admin_url.into()),
        token: Some(Secret::new(TOKEN)),
        device: device.map(str::to_string),
    })
    .unwrap();
    s
}
