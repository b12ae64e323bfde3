//! The self-test job (the rule is [`crate::self_test`]): a dry-run
//! purchase on `self_test_goods_id` with no Admin involved.
//!
//! 1. The goods' sheet is read with the collect flow (every option's availability), in
//!    its own attempt folder `self-test/ATTEMPT-sheet/`.
//! 2. The first available combination ([`crate::self_test::pick_options`]), quantity 1,
//!    goes to the purchase flow as a **dry run** (`self-test/ATTEMPT/`): it stops before
//!    提交订单 like any dry run, and the device guard refuses submit taps anyway.
//!
//! Nothing is claimed, reported or resolved at the Admin: the backend refuses a §7.1
//! spec resolution (the options come from the sheet itself, so none is needed) and never
//! runs live. The job fabricates a [`Job`] whose task is not in the store (run id 0): a
//! dry run never marks, so nothing is written under it.

use std::sync::Arc;

use cmautobuy_contract::{ExecutionMode, SpecResolutionRequest, SpecResolutionResponse};

use super::attempt::FlowExecutorConfig;
use super::purchase::PurchaseBackend;
use super::source::DeviceSource;
use crate::executor::{Job, Outcome, SelfTestRun};
use crate::spec::SpecError;
use crate::store::{Run, Store, StoreError, StoredTask, TaskState};

/// The self-test's backend: the store (read only by a dry run), never live, no Admin.
struct NoAdmin {
    store: Store,
}

impl PurchaseBackend for NoAdmin {
    fn store(&self) -> &Store {
        &self.store
    }

    fn live_enabled(&self) -> bool {
        false
    }

    fn resolve_spec(
        &self,
        _run: &Run,
        _remote_task_id: &str,
        _req: &SpecResolutionRequest,
    ) -> Result<SpecResolutionResponse, SpecError> {
        Err(SpecError::Store(StoreError::Conflict(
            "the self-test asks no Admin: its options come from the sheet itself".into(),
        )))
    }
}

/// A job for `payload` that no store row backs.
fn job(client_id: &str, task_type: &str, attempt_id: &str, payload: String) -> Job {
    Job {
        client_id: client_id.to_string(),
        task: StoredTask {
            id: 0,
            remote_task_id: crate::self_test::TASK_FOLDER.into(),
            task_type: task_type.into(),
            execution_mode: ExecutionMode::DryRun.as_str().into(),
            version: 1,
            priority: 0,
            payload,
            state: TaskState::Running,
            claimed_at: String::new(),
        },
        run: Run {
            id: 0,
            task_id: 0,
            attempt_id: attempt_id.to_string(),
            started_at: String::new(),
            irreversible_action_at: None,
        },
        declared_mode: ExecutionMode::DryRun,
        previous_run: None,
    }
}

fn failed(o: &Outcome) -> Option<(String, String)> {
    match o {
        Outcome::Failure(f) => Some((f.error.code.to_string(), f.error.message.clone())),
        Outcome::Result(_) => None,
    }
}

/// Runs the self-test on the phone (blocking: call it on a blocking thread).
pub fn run<S: DeviceSource + ?Sized>(
    source: &S,
    cfg: &FlowExecutorConfig,
    store: &Store,
    client_id: &str,
    goods_id: &str,
    attempt_id: &str,
) -> SelfTestRun {
    let version = match super::attempt::try_read_pdd_version(source) {
        Ok(v) => v,
        Err(e) => {
            return SelfTestRun {
                version: None,
                outcome: Err((
                    "DEVICE_OFFLINE".into(),
                    format!("the phone did not answer before the self-test began: {e}"),
                )),
                artifact_ref: None,
            }
        }
    };
    let url = format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods_id}");
    let sheet = job(
        client_id,
        "collect",
        &format!("{attempt_id}-sheet"),
        serde_json::json!({"goods_id": goods_id, "goods_url": url}).to_string(),
    );
    let (out, rep) = super::collect::run_job(source, cfg, &sheet);
    let data = match out {
        Outcome::Result(r) => r.pdd_data,
        o => {
            return SelfTestRun {
                version,
                outcome: Err(failed(&o).unwrap_or_default()),
                artifact_ref: rep.artifact_ref,
            }
        }
    };
    let Some((options, title)) = data
        .as_ref()
        .and_then(|d| crate::self_test::pick_options(d).map(|o| (o, d.title.clone())))
    else {
        return SelfTestRun {
            version,
            outcome: Err((
                "SPEC_SOLD_OUT".into(),
                "the self-test goods shows no available option".into(),
            )),
            artifact_ref: rep.artifact_ref,
        };
    };
    let mut payload = serde_json::json!({
        "goods_id": goods_id,
        "goods_url": url,
        "options": options,
        "quantity": 1,
        "max_price_cent": crate::self_test::MAX_PRICE_FEN,
    });
    if let Some(t) = title {
        payload["expected_title"] = serde_json::Value::String(t);
    }
    let purchase = job(client_id, "purchase", attempt_id, payload.to_string());
    let backend: Arc<dyn PurchaseBackend> = Arc::new(NoAdmin {
        store: store.clone(),
    });
    let (out, rep) = super::purchase::run_job(source, cfg, &*backend, &purchase);
    SelfTestRun {
        version,
        outcome: match failed(&out) {
            Some(f) => Err(f),
            None => Ok(()),
        },
        artifact_ref: rep.artifact_ref,
    }
}
