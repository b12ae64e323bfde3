//! Going live from the console at the claim loop: what the operator
//! saves on the 设置 page (`Store::set_operator_*`) is read by the running claim loop at
//! its next claim — the same `Runner`, no restart — with the precedence the page shows:
//! the console's address fingerprint completes a configuration without one; the
//! console's `dry_run` narrows live at once and clearing it widens again; a configured
//! `dry_run` is never widened from the console. In process on the virtual clock, the
//! mock Admin behind its router.

use crate::support::claim_loop::{loop_world, LoopWorld};
use cmautobuy_client::executor::{Executor, Job, Outcome, Readiness, StubExecutor};
use cmautobuy_client::runner::{LivePolicy, RunConfig};
use cmautobuy_contract::ExecutionMode;

/// A phone ready for live purchases that runs nothing but collects.
#[derive(Clone)]
struct Phone;

impl Executor for Phone {
    fn readiness(&self) -> Readiness {
        Readiness {
            device_ready: true,
            purchase_adapter_ready: true,
            live_adapter_ready: true,
        }
    }
    async fn execute(&self, job: Job) -> Outcome {
        StubExecutor.execute(job).await
    }
}

async fn world() -> LoopWorld<Phone> {
    loop_world("127.0.0.1:5555", 0, |_| Phone).await
}

fn vouched(address: bool, dry_run_only: bool) -> RunConfig {
    RunConfig {
        live: LivePolicy {
            dry_run_only,
            vouched: !dry_run_only,
            self_test_goods_id: None,
            address_fingerprint: address,
        },
        ..RunConfig::default()
    }
}

#[tokio::test]
async fn an_address_saved_on_the_console_lets_the_running_loop_declare_live() {
    let w = world().await;
    let r = w.runner_with(vouched(false, false));
    let mode = || r.profile().unwrap().capabilities.purchase_mode;
    // No fingerprint configured: never live, and why is recorded for the console.
    assert_eq!(mode(), ExecutionMode::DryRun);
    assert!(w
        .store
        .self_test_note()
        .unwrap()
        .unwrap_or_default()
        .contains("no address fingerprint"));
    // Saved on the console: the same runner declares live at its next profile.
    let parts = vec!["张三".to_string(), "科技园路1号".to_string()];
    w.store.set_operator_expected_address(Some(&parts)).unwrap();
    assert_eq!(mode(), ExecutionMode::Live);
    assert_eq!(w.store.self_test_note().unwrap(), None);
    // The console's dry_run narrows at once; cleared, live again.
    w.store.set_operator_purchase_mode(Some("dry_run")).unwrap();
    assert_eq!(mode(), ExecutionMode::DryRun);
    w.store.set_operator_purchase_mode(None).unwrap();
    assert_eq!(mode(), ExecutionMode::Live);
    // The console's fingerprint cleared: the configuration's (none) holds again.
    w.store.set_operator_expected_address(None).unwrap();
    assert_eq!(mode(), ExecutionMode::DryRun);
}

#[tokio::test]
async fn a_configured_dry_run_is_never_widened_from_the_console() {
    let w = world().await;
    let r = w.runner_with(vouched(true, true));
    let parts = vec!["张三".to_string()];
    w.store.set_operator_expected_address(Some(&parts)).unwrap();
    w.store.set_operator_purchase_mode(Some("auto")).unwrap();
    w.store
        .set_operator_self_test_goods_id(Some("602938475610"))
        .unwrap();
    assert_eq!(
        r.profile().unwrap().capabilities.purchase_mode,
        ExecutionMode::DryRun
    );
    // And the policy says why: dry_run only.
    assert!(r.live().dry_run_only);
    assert_eq!(r.live().self_test_goods_id.as_deref(), Some("602938475610"));
}
