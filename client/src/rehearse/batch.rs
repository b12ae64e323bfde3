//! The batch a rehearsal seeds: the embedded fixture catalog, the demo batch (a collect
//! task per catalog goods, the purchase demo) or a batch file of the operator's own,
//! each task with the outcome it must end with at the Admin.

use std::path::Path;

use anyhow::{anyhow, Context};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use cmautobuy_sim_phone::catalog::CatalogFile;
use cmautobuy_sim_phone::Catalog;

/// The catalog compiled into the binary, so `rehearse` works from any directory.
const EMBEDDED_CATALOG: &[(&str, &str)] = &[
    (
        "apparel.json",
        include_str!("../../../fixtures/catalog/apparel.json"),
    ),
    (
        "general.json",
        include_str!("../../../fixtures/catalog/general.json"),
    ),
    (
        "special.json",
        include_str!("../../../fixtures/catalog/special.json"),
    ),
];

/// The embedded fixture catalog.
pub fn embedded_catalog() -> anyhow::Result<Catalog> {
    let mut goods = Vec::new();
    for (name, text) in EMBEDDED_CATALOG {
        let f: CatalogFile =
            serde_json::from_str(text).with_context(|| format!("embedded catalog {name}"))?;
        goods.extend(f.goods);
    }
    Catalog::new(goods).map_err(|e| anyhow!("embedded catalog: {e}"))
}

/// One task of a batch and the outcome it must end with at the Admin.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BatchTask {
    #[serde(default)]
    pub id: Option<String>,
    #[serde(rename = "type")]
    pub task_type: String,
    #[serde(default)]
    pub execution_mode: Option<String>,
    pub payload: Value,
    /// `succeeded`, or `{status}:{code}` (`failed:GOODS_MISMATCH`).
    pub expect: String,
}

/// The batch a rehearsal runs: the file's tasks, else the demo batch (collect, plus the
/// purchase demo with `purchases` or `live`). `run_tag` makes the demo's task ids unique.
pub fn load(
    file: Option<&Path>,
    catalog: &Catalog,
    run_tag: &str,
    purchases: bool,
    live: bool,
    failure_paths: bool,
) -> anyhow::Result<Vec<BatchTask>> {
    Ok(match file {
        Some(p) => {
            let text = std::fs::read(p).with_context(|| format!("cannot read {}", p.display()))?;
            serde_json::from_slice::<Vec<BatchTask>>(&text).with_context(|| {
                format!("{} is not a batch (a JSON array of tasks)", p.display())
            })?
        }
        None => {
            let mut b = demo_batch(catalog, run_tag, failure_paths);
            if purchases || live {
                b.extend(purchase_demo(run_tag, live, failure_paths));
            }
            b
        }
    })
}

/// The demo batch: one collect task per catalog goods that can be collected, all
/// `succeeded`; with `failure_paths` also the goods that must end with a code (redirect →
/// `failed:GOODS_MISMATCH`, login → `manual_review:LOGIN_REQUIRED`, risk page →
/// `manual_review:RISK_VERIFICATION`, delisted → `failed:GOODS_UNAVAILABLE`).
pub fn demo_batch(catalog: &Catalog, run_tag: &str, failure_paths: bool) -> Vec<BatchTask> {
    catalog
        .goods
        .iter()
        .filter(|g| {
            failure_paths
                || !(g.redirect_to.is_some() || g.login_required || g.risk_verification || g.delisted)
        })
        .map(|g| {
            let expect = if g.redirect_to.is_some() {
                "failed:GOODS_MISMATCH"
            } else if g.login_required {
                "manual_review:LOGIN_REQUIRED"
            } else if g.risk_verification {
                "manual_review:RISK_VERIFICATION"
            } else if g.delisted {
                "failed:GOODS_UNAVAILABLE"
            } else {
                "succeeded"
            };
            BatchTask {
                id: Some(format!("{run_tag}-collect-{}", g.goods_id)),
                task_type: "collect".into(),
                execution_mode: None,
                payload: json!({
                    "goods_id": g.goods_id,
                    "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={}", g.goods_id),
                    "expected_title": g.title,
                }),
                expect: expect.into(),
            }
        })
        .collect()
}

/// The purchase demo (issue 7): ordinary purchases and a §7.1 spec resolution (60公斤
/// among 110斤…150斤, the mock's rule resolver matches 120斤), all `succeeded`; with
/// `failure_paths` also a total above the limit, no delivery address and a sold-out
/// option. Dry runs unless `live`.
pub fn purchase_demo(run_tag: &str, live: bool, failure_paths: bool) -> Vec<BatchTask> {
    let mode = if live { "live" } else { "dry_run" };
    let t = |name: &str, goods: &str, options: Value, qty: i64, max: i64, expect: &str| BatchTask {
        id: Some(format!("{run_tag}-purchase-{name}-{goods}")),
        task_type: "purchase".into(),
        execution_mode: Some(mode.into()),
        payload: json!({
            "goods_id": goods,
            "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}"),
            "options": options, "quantity": qty, "max_price_cent": max,
        }),
        expect: expect.into(),
    };
    let mut tasks = vec![
        t(
            "ok",
            "737116531267",
            json!({"color": "黑色", "size": "L"}),
            2,
            11800,
            "succeeded",
        ),
        t(
            "spec",
            "602938475610",
            json!({"color": "黑色", "size": "60公斤"}),
            1,
            4580,
            "succeeded",
        ),
        t(
            "ok2",
            "737116531267",
            json!({"color": "雾霾蓝", "size": "M"}),
            1,
            10000,
            "succeeded",
        ),
    ];
    if failure_paths {
        tasks.extend([
            t(
                "limit",
                "737116531267",
                json!({"color": "奶白色", "size": "M"}),
                2,
                9999,
                "failed:PRICE_LIMIT_EXCEEDED",
            ),
            t(
                "noaddr",
                "726677889900",
                json!({"capacity": "500ml"}),
                1,
                10000,
                "manual_review:ADDRESS_MISSING",
            ),
            t(
                "soldout",
                "737116531267",
                json!({"color": "黑色", "size": "XL"}),
                1,
                10000,
                "failed:SPEC_SOLD_OUT",
            ),
        ]);
    }
    tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default rehearsal is a batch where every task succeeds (issue 6: "its summary
    /// shows every task succeeded"); `--failure-paths` adds every failure page of the
    /// catalog and the refused purchases.
    #[test]
    fn default_demo_batch_expects_only_successes_and_failure_paths_add_the_rest() {
        let catalog = embedded_catalog().expect("embedded catalog");
        let mut plain = demo_batch(&catalog, "t", false);
        plain.extend(purchase_demo("t", false, false));
        assert!(plain.iter().all(|t| t.expect == "succeeded"));
        assert!(plain.iter().any(|t| t.task_type == "purchase"));

        let mut full = demo_batch(&catalog, "t", true);
        assert_eq!(full.len(), catalog.goods.len());
        full.extend(purchase_demo("t", false, true));
        let failures: Vec<&str> = full
            .iter()
            .filter(|t| t.expect != "succeeded")
            .map(|t| t.expect.as_str())
            .collect();
        for code in [
            "failed:GOODS_MISMATCH",
            "manual_review:LOGIN_REQUIRED",
            "manual_review:RISK_VERIFICATION",
            "failed:GOODS_UNAVAILABLE",
            "failed:PRICE_LIMIT_EXCEEDED",
            "manual_review:ADDRESS_MISSING",
            "failed:SPEC_SOLD_OUT",
        ] {
            assert!(failures.contains(&code), "{code} missing from {failures:?}");
        }
        assert_eq!(full.len(), plain.len() + failures.len());
    }
}
