//! `rehearse --failure-paths --live`, the longest test of this binary (≈ 100 s alone):
//! its own module so that it starts first — libtest starts tests in name order, and
//! started last it alone would set the binary's wall time (BENCHMARKS.md, "the house,
//! third pass"). Under `CMAUTOBUY_DEVICE_BACKEND=u2` it runs on uiautomator2's server
//! like the rest of `rehearse_cli`.

use serde_json::Value;

use crate::rehearse_cli::rehearse;

/// `--failure-paths --live`: every failure page and refused purchase of the demo, and
/// the real app's variants — 先用后付 and 免密 accounts refused before any
/// tap, a lagging total, 确认订单, canvas 待付款, a folded order detail, an icon option —
/// each ends as the batch expects (the ledger checks are in `variants_e2e.rs`).
#[test]
fn rehearse_failure_paths_live_covers_the_real_apps_variants() {
    let out = rehearse(&["--failure-paths", "--live", "--json"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{stderr}",
        out.status.code()
    );
    let summary: Value = serde_json::from_str(&stdout).expect("--json prints the summary");
    assert_eq!(summary["ok"], true, "{summary:#}");
    let tasks = summary["tasks"].as_array().expect("tasks");
    let outcome = |goods: &str| -> Vec<String> {
        tasks
            .iter()
            .filter(|t| {
                t["id"]
                    .as_str()
                    .is_some_and(|i| i.contains("-variant-") && i.ends_with(goods))
            })
            .map(|t| t["outcome"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    for (goods, expected) in [
        ("811223344501", "succeeded"),
        ("811223344502", "manual_review:PAYMENT_METHOD_NOT_ALLOWED"),
        ("811223344503", "manual_review:PAYMENT_METHOD_NOT_ALLOWED"),
        ("811223344504", "succeeded"),
        ("811223344505", "succeeded"),
        ("811223344506", "succeeded"),
        ("811223344507", "succeeded"),
        ("811223344508", "succeeded"),
        ("811223344510", "succeeded"),
    ] {
        assert_eq!(
            outcome(goods),
            vec![expected.to_string()],
            "{goods}: {summary:#}"
        );
    }
}
