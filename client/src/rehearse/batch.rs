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

/// The real app's variants: payment methods that commit or pay, a lagging
/// total, a full-page 确认订单, a canvas-drawn order entry, a folded order detail, an
/// icon option, a deep link that does not open. The simulated phone of a rehearsal
/// always knows them; the failure-path batch ([`variant_demo`]) exercises them.
const EMBEDDED_VARIANTS: (&str, &str) = (
    "variants.json",
    include_str!("../../../fixtures/catalog/variants.json"),
);

/// The embedded demo catalog (the goods the demo batch collects; without the variants).
pub fn embedded_catalog() -> anyhow::Result<Catalog> {
    catalog_of(EMBEDDED_CATALOG, false)
}

/// The embedded variant goods (`fixtures/catalog/variants.json`).
pub fn variant_catalog() -> anyhow::Result<Catalog> {
    catalog_of(&[EMBEDDED_VARIANTS], false)
}

/// What the simulated phone of a rehearsal serves: the demo catalog and the variants.
pub fn sim_catalog() -> anyhow::Result<Catalog> {
    sim_catalog_animated(false)
}

/// [`sim_catalog`], with every goods `animated` when asked (benchmarks).
pub fn sim_catalog_animated(animated: bool) -> anyhow::Result<Catalog> {
    let mut files = EMBEDDED_CATALOG.to_vec();
    files.push(EMBEDDED_VARIANTS);
    catalog_of(&files, animated)
}

fn catalog_of(files: &[(&str, &str)], animated: bool) -> anyhow::Result<Catalog> {
    let mut goods = Vec::new();
    for (name, text) in files {
        let f: CatalogFile =
            serde_json::from_str(text).with_context(|| format!("embedded catalog {name}"))?;
        goods.extend(f.goods);
    }
    if animated {
        for g in &mut goods {
            g.animated = true;
        }
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
                let mut p = purchase_demo(run_tag, live, failure_paths);
                if failure_paths {
                    p.extend(variant_demo(run_tag, live));
                }
                b.extend(titled(p, &sim_catalog()?));
            }
            b
        }
    })
}

/// `tasks` with the `expected_title` the contract's task object carries (§4), from the
/// simulated phone's catalog, where a task names none: what the Admin sends, and what
/// a live purchase's census matches cards on (without it, every unpaid card whose
/// options fit is opened for its order number).
pub fn titled(mut tasks: Vec<BatchTask>, catalog: &Catalog) -> Vec<BatchTask> {
    for t in &mut tasks {
        let Some(p) = t.payload.as_object_mut() else {
            continue;
        };
        if p.contains_key("expected_title") {
            continue;
        }
        let id = p
            .get("goods_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(g) = catalog.goods.iter().find(|g| g.goods_id == id) {
            p.insert("expected_title".into(), Value::String(g.title.clone()));
        }
    }
    tasks
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

/// The purchase demo: ordinary purchases and a §7.1 spec resolution (60公斤
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

/// The real app's variants as purchases, each with the outcome the safety
/// rules demand; in batch order, which is claim order on one phone:
/// - an option drawn with an icon (已选 shows `#乌龙奶茶+…`) → `succeeded`;
/// - 先用后付 and 免密支付 accounts → `manual_review:PAYMENT_METHOD_NOT_ALLOWED`, no tap
///   on the order button, dry runs too;
/// - the goods id printed on the page → `succeeded`;
/// - a total that lags two dumps behind a coupon, with a limit between the stale and the
///   settled total → `succeeded` on the settled total;
/// - a full-page 确认订单 → `succeeded`, the total checked there;
/// - 待付款 reachable only by its deep link, and a folded order detail → `succeeded`
///   (live: reconciled to the order number);
/// - the money-path checkouts: a sheet whose 确定 places the order (its 合计 shown) →
///   `succeeded` (live: marked, then 确定 tapped once); the same without a total →
///   `failed:ORDER_TOTAL_NOT_SHOWN`; a 立即支付 footer → `PAYMENT_METHOD_NOT_ALLOWED`;
///   确认订单 with a stepper (quantity 2) → `succeeded`, one whose stepper opens at
///   quantity 1 → set to 2 there, `succeeded`, and one that opens at quantity 1 with no
///   stepper → `failed:QUANTITY_NOT_SETTABLE`; a promo drawn over 提交订单 →
///   `succeeded` (closed first); 待支付 / 等待付款 orders → `succeeded`;
/// - the post-submit screens, live only (a dry run never submits: `succeeded`):
///   the same goods bought twice where PDD asks 相同商品订单待支付 → the first
///   `succeeded`, the second `manual_review:REPEAT_ORDER_PROMPT` (never 继续下单; the
///   first order is never adopted), on the sheet, on 确认订单 and on a sheet whose 确定
///   orders; a 免密支付 / 先用后付 offer → `manual_review:PAYMENT_OFFER_SHOWN`; the
///   hand-off to WeChat → `manual_review:PAYMENT_APP_OPENED`; an account that pays by
///   itself, last (its critical alert stops live on the phone) → the order found paid
///   under 全部, `manual_review:ORDER_NOT_UNPAID`.
///
/// Not here: `deep_link_fails` (811223344509). Our flows never leave a goods page on
/// screen (a purchase ends on the order list, a collect on the sheet), so a dead link
/// leaves a page that is not a goods page: `retry_wait:PAGE_NOT_RECOGNIZED`, which the
/// mock hands straight back — a loop the claim
/// gate (claim only when the phone can work) is about. Its safety (never the goods left on screen, `GOODS_MISMATCH`, no order) is
/// proven by `client/tests/it/goods_identity.rs` and the job tests.
pub fn variant_demo(run_tag: &str, live: bool) -> Vec<BatchTask> {
    let mode = if live { "live" } else { "dry_run" };
    let tq = |name: &str, goods: &str, options: Value, quantity: u32, max: i64, expect: &str| {
        BatchTask {
            id: Some(format!("{run_tag}-variant-{name}-{goods}")),
            task_type: "purchase".into(),
            execution_mode: Some(mode.into()),
            payload: json!({
                "goods_id": goods,
                "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}"),
                "options": options, "quantity": quantity, "max_price_cent": max,
            }),
            expect: expect.into(),
        }
    };
    let t = |name: &str, goods: &str, options: Value, max: i64, expect: &str| {
        tq(name, goods, options, 1, max, expect)
    };
    let refused = "manual_review:PAYMENT_METHOD_NOT_ALLOWED";
    // What a live submit meets after the tap; a dry run never gets there.
    let after_submit = |code: &str| {
        if live {
            format!("manual_review:{code}")
        } else {
            "succeeded".to_string()
        }
    };
    vec![
        t(
            "icon",
            "811223344501",
            json!({"color": "乌龙奶茶+手持化妆镜+礼盒"}),
            10000,
            "succeeded",
        ),
        t(
            "paylater",
            "811223344502",
            json!({"color": "黑色", "size": "M"}),
            10000,
            refused,
        ),
        t(
            "pwfree",
            "811223344503",
            json!({"style": "单层"}),
            10000,
            refused,
        ),
        t(
            "shownid",
            "811223344504",
            json!({"spec": "100x150cm"}),
            10000,
            "succeeded",
        ),
        t(
            "lag",
            "811223344505",
            json!({"color": "浅灰", "size": "L"}),
            3600,
            "succeeded",
        ),
        t(
            "confirm",
            "811223344506",
            json!({"color": "天空蓝", "capacity": "350ml"}),
            10000,
            "succeeded",
        ),
        t(
            "canvas",
            "811223344507",
            json!({"spec": "3卷装"}),
            10000,
            "succeeded",
        ),
        t(
            "folded",
            "811223344508",
            json!({"color": "白色"}),
            10000,
            "succeeded",
        ),
        t(
            "tee",
            "811223344510",
            json!({"color": "白色", "size": "M"}),
            10000,
            "succeeded",
        ),
        // The checkout's order button, whatever it reads.
        t(
            "checkout-confirm",
            "811223344511",
            json!({"color": "粉色", "size": "M"}),
            10000,
            "succeeded",
        ),
        t(
            "confirm-no-total",
            "811223344512",
            json!({"color": "浅灰"}),
            10000,
            "failed:ORDER_TOTAL_NOT_SHOWN",
        ),
        t(
            "pay-now",
            "811223344513",
            json!({"color": "白色"}),
            10000,
            refused,
        ),
        tq(
            "confirm-stepper",
            "811223344514",
            json!({"color": "米黄", "size": "110cm"}),
            2,
            20000,
            "succeeded",
        ),
        tq(
            "confirm-stepper-reset",
            "811223344526",
            json!({"color": "燕麦色"}),
            2,
            20000,
            "succeeded",
        ),
        tq(
            "confirm-reset",
            "811223344515",
            json!({"color": "奶白"}),
            2,
            20000,
            "failed:QUANTITY_NOT_SETTABLE",
        ),
        t(
            "promo",
            "811223344516",
            json!({"color": "燕麦色"}),
            10000,
            "succeeded",
        ),
        t(
            "daizhifu",
            "811223344517",
            json!({"color": "咖啡色"}),
            10000,
            "succeeded",
        ),
        t(
            "dengdai",
            "811223344518",
            json!({"style": "夹式"}),
            10000,
            "succeeded",
        ),
        // The same goods twice: PDD asks before a second unpaid order of it.
        t(
            "repeat-first",
            "811223344519",
            json!({"spec": "50只装"}),
            10000,
            "succeeded",
        ),
        t(
            "repeat-second",
            "811223344519",
            json!({"spec": "50只装"}),
            10000,
            &after_submit("REPEAT_ORDER_PROMPT"),
        ),
        t(
            "repeat-confirm-first",
            "811223344523",
            json!({"color": "粉色"}),
            10000,
            "succeeded",
        ),
        t(
            "repeat-confirm-second",
            "811223344523",
            json!({"color": "粉色"}),
            10000,
            &after_submit("REPEAT_ORDER_PROMPT"),
        ),
        t(
            "repeat-checkout-first",
            "811223344524",
            json!({"color": "白色"}),
            10000,
            "succeeded",
        ),
        t(
            "repeat-checkout-second",
            "811223344524",
            json!({"color": "白色"}),
            10000,
            &after_submit("REPEAT_ORDER_PROMPT"),
        ),
        t(
            "offer-password-free",
            "811223344520",
            json!({"color": "奶茶色"}),
            10000,
            &after_submit("PAYMENT_OFFER_SHOWN"),
        ),
        t(
            "offer-pay-later",
            "811223344521",
            json!({"color": "卡其"}),
            10000,
            &after_submit("PAYMENT_OFFER_SHOWN"),
        ),
        t(
            "wechat-handoff",
            "811223344522",
            json!({"color": "小熊款"}),
            10000,
            &after_submit("PAYMENT_APP_OPENED"),
        ),
        // Last: an account that pays by itself. The order is found paid under 全部 — the
        // critical `order_not_unpaid` alert stops live on the phone, so nothing live may
        // follow it in the batch.
        t(
            "pays-silently",
            "811223344525",
            json!({"color": "磨砂黑"}),
            10000,
            &after_submit("ORDER_NOT_UNPAID"),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default rehearsal is a batch where every task succeeds ("its summary
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

    /// The demo's purchases carry the title the contract's task object does (§4), from
    /// the phone's catalog: a live purchase's census opens only the unpaid cards of that
    /// goods. A title the task names is kept; a batch file's tasks are the user's.
    #[test]
    fn demo_purchases_carry_the_goods_title_like_the_admins_tasks() {
        let catalog = embedded_catalog().expect("catalog");
        let b = load(None, &catalog, "t", false, true, true).expect("batch");
        let sim = sim_catalog().expect("sim catalog");
        let purchases: Vec<&BatchTask> = b.iter().filter(|t| t.task_type == "purchase").collect();
        assert!(purchases.len() > 20);
        for t in purchases {
            let id = t.payload["goods_id"].as_str().expect("goods id");
            let g = sim.goods.iter().find(|g| g.goods_id == id).expect("goods");
            assert_eq!(
                t.payload["expected_title"].as_str(),
                Some(g.title.as_str()),
                "{id}"
            );
        }
        let mut named = purchase_demo("t", true, false);
        named[0].payload["expected_title"] = "别的标题".into();
        let kept = titled(named, &sim);
        assert_eq!(kept[0].payload["expected_title"], "别的标题");
    }

    /// Every variant task names a variant goods and options that goods offers, and the
    /// variants cover each catalog key of the real app's variants.
    #[test]
    fn the_variant_demo_names_real_variant_goods_and_options() {
        let variants = variant_catalog().expect("variants");
        let demo = variant_demo("t", true);
        for t in &demo {
            let id = t.payload["goods_id"].as_str().expect("goods id");
            let g = variants
                .goods
                .iter()
                .find(|g| g.goods_id == id)
                .unwrap_or_else(|| panic!("{id} is not a variant goods"));
            for (key, name) in t.payload["options"].as_object().expect("options") {
                let dim = g
                    .dimensions
                    .iter()
                    .find(|d| &d.key == key)
                    .unwrap_or_else(|| panic!("{id}: no dimension {key}"));
                assert!(
                    dim.options
                        .iter()
                        .any(|o| Some(o.name.as_str()) == name.as_str()),
                    "{id}: no option {name} in {key}"
                );
            }
        }
        let ids: Vec<&str> = demo
            .iter()
            .map(|t| t.payload["goods_id"].as_str().unwrap_or_default())
            .collect();
        // Every variant but the dead deep link (see `variant_demo`).
        for g in variants.goods.iter().filter(|g| !g.deep_link_fails) {
            assert!(
                ids.contains(&g.goods_id.as_str()),
                "{} not rehearsed",
                g.goods_id
            );
        }
        // The demo catalog itself holds no variant goods: the default rehearsal is unchanged.
        let demo_cat = embedded_catalog().expect("catalog");
        assert!(demo_cat
            .goods
            .iter()
            .all(|g| !ids.contains(&g.goods_id.as_str())));
        assert_eq!(
            sim_catalog().expect("sim").goods.len(),
            demo_cat.goods.len() + variants.goods.len()
        );
    }
}
