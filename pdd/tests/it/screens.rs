//! Screen understanding, driven by data: every dump in `fixtures/screens/` is inspected
//! and compared with `NAME.expected.json` next to it through one `check` helper.
//!
//! The expected JSON is a *subset* of what `inspect --json` prints: every key it names
//! must be there with that value (objects recursively; arrays element by element, same
//! length), other keys are free. So an expectation says what matters about a screen
//! and stays readable.
//!
//! Also here: the real PDD dumps of `../shared/pdd-real-dumps/` (never committed; CI
//! has them), the query API on a fixture, and a proptest that feeds mutated dumps to
//! parser + recognizers looking for panics.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::Value;

use cmautobuy_pdd::money::Fen;
use cmautobuy_pdd::screen::cover::{self, InAppCover};
use cmautobuy_pdd::screen::{
    classify, inspect, inspect_json, Bounds, DumpError, Matcher, Point, Query, Screen, ScreenKind,
    Tree, WindowFilter,
};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("pdd/ has a parent")
        .to_path_buf()
}

fn fixtures_dir() -> PathBuf {
    repo_root().join("fixtures/screens")
}

fn read_dump(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Where `expected` is not a subset of `actual`, as a list of "path: expected X, got Y".
fn diff(path: &str, expected: &Value, actual: &Value, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (k, ev) in e {
                match a.get(k) {
                    Some(av) => diff(&format!("{path}.{k}"), ev, av, out),
                    None => out.push(format!("{path}.{k}: missing (expected {ev})")),
                }
            }
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                out.push(format!(
                    "{path}: expected {} items, got {}",
                    e.len(),
                    a.len()
                ));
            }
            for (i, (ev, av)) in e.iter().zip(a).enumerate() {
                diff(&format!("{path}[{i}]"), ev, av, out);
            }
        }
        _ if expected == actual => {}
        _ => out.push(format!("{path}: expected {expected}, got {actual}")),
    }
}

/// Inspects `dump` and checks the result against `expected` (subset semantics).
fn check(dump: &Path, expected: &Value) {
    let actual = inspect_json(&read_dump(dump));
    let mut problems = Vec::new();
    diff("$", expected, &actual, &mut problems);
    assert!(
        problems.is_empty(),
        "{}:\n  {}\nactual:\n{}",
        dump.display(),
        problems.join("\n  "),
        serde_json::to_string_pretty(&actual).unwrap_or_default()
    );
}

fn dump_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures_dir())
        .expect("fixtures/screens exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| matches!(p.extension().and_then(|e| e.to_str()), Some("xml" | "txt")))
        .collect();
    files.sort();
    files
}

#[test]
fn every_fixture_matches_its_expectation() {
    let files = dump_files();
    assert!(files.len() >= 20, "fixtures/screens looks empty: {files:?}");
    let mut checked = 0;
    for dump in files {
        let stem = dump
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default();
        let exp_path = dump.with_file_name(format!("{stem}.expected.json"));
        // A fixture without an expectation is a test nobody runs: fail, don't skip.
        let exp_text = std::fs::read_to_string(&exp_path)
            .unwrap_or_else(|e| panic!("{} has no {}: {e}", dump.display(), exp_path.display()));
        let expected: Value = serde_json::from_str(&exp_text)
            .unwrap_or_else(|e| panic!("{}: {e}", exp_path.display()));
        check(&dump, &expected);
        checked += 1;
    }
    eprintln!("checked {checked} screen fixtures");
}

/// Every kind the recognizers know has at least one fixture.
#[test]
fn every_screen_kind_has_a_fixture() {
    let mut seen = std::collections::HashSet::new();
    for dump in dump_files() {
        if let Ok(screen) = inspect(&read_dump(&dump)) {
            seen.insert(screen.kind());
        }
    }
    for kind in [
        ScreenKind::GoodsDetail,
        ScreenKind::SkuSheet,
        ScreenKind::ConfirmOrder,
        ScreenKind::Payment,
        ScreenKind::PaymentAbandonDialog,
        ScreenKind::RepeatOrderDialog,
        ScreenKind::PaymentOffer,
        ScreenKind::OrderList,
        ScreenKind::OrderDetail,
        ScreenKind::Popup,
        ScreenKind::LoginRequired,
        ScreenKind::RiskVerification,
        ScreenKind::Unknown,
    ] {
        assert!(seen.contains(&kind), "no fixture classified as {kind}");
    }
}

/// `../shared/pdd-real-dumps`, or `None` (NOT CHECKED, said loudly) when it is missing
/// and `CMAUTOBUY_NO_SHARED=1` accepts that; a missing directory otherwise fails.
fn real_dumps_dir() -> Option<PathBuf> {
    let dir = repo_root().join("../shared/pdd-real-dumps");
    if !dir.is_dir() {
        let msg = format!(
            "\n\n!!! {} is missing: the real PDD dumps were NOT checked.\n\
             !!! Put the shared material next to the repository, or set \
             CMAUTOBUY_NO_SHARED=1 to accept running without it.\n",
            dir.display()
        );
        eprintln!("{msg}");
        if std::env::var("CMAUTOBUY_NO_SHARED").as_deref() == Ok("1") {
            return None;
        }
        panic!("{msg}");
    }
    Some(dir)
}

/// The real dumps live next to the repository (`../shared/pdd-real-dumps`), never in it.
/// Their absence is loud: the test fails unless `CMAUTOBUY_NO_SHARED=1` says so
/// (`scripts/test` sets it, with a banner at its start and end, when they are missing).
#[test]
fn real_pdd_dumps_are_classified() {
    let Some(dir) = real_dumps_dir() else {
        return;
    };
    let cases: &[(&str, Value)] = &[
        (
            "pdd_checkout_sheet_text_sku.xml",
            serde_json::json!({
                "screen": "sku_sheet", "total_cent": 26900, "quantity": 1,
                "address_present": false, "unit_price_cent": 26900, "stock_text": "最后3件",
                "groups": [{"name": "款式", "options": [{"selected": true, "available": true,
                    "stock_label": "最后3件"}]}]
            }),
        ),
        (
            "pdd_checkout_sheet_image_sku.xml",
            serde_json::json!({
                "screen": "sku_sheet", "total_cent": 8800, "quantity": 1,
                "address_present": false, "stock_text": "即将卖完",
                "groups": [{"name": "颜色", "form": "image_grid", "options": [
                    {"selected": true, "clipped": false}, {"selected": false}, {"selected": false},
                    {"selected": false, "clipped": true, "stock_label": "最后9件"},
                    {"selected": false}, {"selected": false, "stock_label": "最后5件"},
                    {"selected": false}, {"selected": false, "clipped": true}
                ]}]
            }),
        ),
        (
            "pdd_popup_abandon_payment.xml",
            serde_json::json!({
                "screen": "payment_abandon_dialog", "leave_button": "先去逛逛",
                "continue_amount_cent": 5900
            }),
        ),
        (
            "pdd_search_result_goods_cards.xml",
            serde_json::json!({"screen": "unknown"}),
        ),
        (
            "pdd_home_feed_and_bottom_nav.fragment.xml",
            serde_json::json!({"screen": "unknown"}),
        ),
    ];
    for (name, expected) in cases {
        check(&dir.join(name), expected);
    }
    // The option names: trimmed vs raw, straight from the image grid.
    let text = read_dump(&dir.join("pdd_checkout_sheet_image_sku.xml"));
    let Ok(Screen::SkuSheet(sheet)) = inspect(&text) else {
        panic!("image sheet is not a sku_sheet");
    };
    let first = &sheet.groups[0].options[0];
    assert!(first.raw_name.starts_with("  ") && !first.name.starts_with(' '));
    assert_eq!(sheet.total, Some(Fen(8800)));
}

/// On both real checkout sheets every tap a flow plans — each option tile or chip, the
/// stepper buttons, the 提交订单 footer — reaches what it aims at: nothing in PDD's
/// window is drawn over it (`screen::cover`). The same dump with a
/// clickable 多多支付 bubble injected over the footer (a later sibling, drawn above it)
/// covers the footer's tap, and only that one.
#[test]
fn real_sheet_taps_are_not_covered_and_an_injected_bubble_is() {
    let Some(dir) = real_dumps_dir() else {
        return;
    };
    for name in [
        "pdd_checkout_sheet_text_sku.xml",
        "pdd_checkout_sheet_image_sku.xml",
    ] {
        let xml = read_dump(&dir.join(name));
        let taps = |xml: &str| -> Vec<(String, Point, Option<InAppCover>)> {
            let tree = Tree::parse(xml).expect("parses");
            let Screen::SkuSheet(sheet) = classify(&tree) else {
                panic!("{name}: not a sku_sheet");
            };
            let mut taps: Vec<(String, Point)> = Vec::new();
            for g in &sheet.groups {
                for o in &g.options {
                    if let Some(at) = o.tap {
                        taps.push((o.name.clone(), at));
                    }
                }
            }
            let stepper = sheet.quantity_stepper.as_ref().expect("stepper");
            for t in [&stepper.decrease, &stepper.increase].into_iter().flatten() {
                taps.push((t.label.clone(), t.tap));
            }
            let submit = sheet.submit.as_ref().expect("submit");
            taps.push((submit.label.clone(), submit.tap));
            taps.into_iter()
                .map(|(label, at)| {
                    let c = cover::covering(&tree, at, &label);
                    (label, at, c)
                })
                .collect()
        };
        let plain = taps(&xml);
        // Every option, both stepper buttons and the footer.
        assert!(plain.len() >= 4, "{name}: {plain:?}");
        for (label, at, c) in &plain {
            assert_eq!(c, &None, "{name}: `{label}` at {at:?} is covered");
        }

        // A clickable bubble drawn over the footer: the footer's next sibling, inside the
        // same parent, with a higher drawing order.
        let lines: Vec<&str> = xml.lines().collect();
        let open = lines
            .iter()
            .position(|l| l.contains(r#"bounds="[334,2213][1080,2354]""#))
            .expect("footer");
        assert!(lines[open].contains(r#"drawing-order="11""#), "{name}");
        let indent: String = lines[open].chars().take_while(|c| *c == ' ').collect();
        let close = open
            + lines[open..]
                .iter()
                .position(|l| *l == format!("{indent}</node>"))
                .expect("footer's end");
        let attrs = |text: &str, clickable: bool, order: u32, bounds: &str| {
            format!(
                r#"index="6" text="{text}" resource-id="com.xunmeng.pinduoduo:id/pdd" class="android.widget.TextView" package="com.xunmeng.pinduoduo" content-desc="" checkable="false" checked="false" clickable="{clickable}" enabled="true" focusable="{clickable}" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" visible-to-user="true" bounds="{bounds}" drawing-order="{order}" hint="" display-id="0""#
            )
        };
        let bubble = format!(
            "{indent}<node {}>\n{indent}  <node {} />\n{indent}</node>",
            attrs("", true, 12, "[420,2160][1000,2330]"),
            attrs("开通多多支付，立减3元", false, 1, "[440,2180][980,2310]")
        );
        let mut edited: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        edited.insert(close + 1, bubble);
        let edited = edited.join("\n") + "\n";
        let covered = taps(&edited);
        assert_eq!(covered.len(), plain.len(), "{name}");
        let (last, rest) = covered.split_last().unwrap();
        for (label, at, c) in rest {
            assert_eq!(c, &None, "{name}: `{label}` at {at:?} is covered");
        }
        let c = last
            .2
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: the footer is not covered"));
        assert!(last.0.starts_with("提交订单"), "{name}: {last:?}");
        assert_eq!(c.label, "开通多多支付，立减3元");
        assert_eq!(c.bounds, Bounds::new(420, 2160, 1000, 2330));
        assert!(c.drawn_over);
        assert_eq!(c.target_bounds, Bounds::new(334, 2213, 1080, 2354));
        // The same bubble with a lower drawing order than the footer's is beneath it.
        let below = edited.replace(r#"drawing-order="12""#, r#"drawing-order="10""#);
        for (label, at, c) in taps(&below) {
            assert_eq!(c, None, "{name}: `{label}` at {at:?} is covered");
        }
    }
}

/// A 多多支付 bubble drawn as a PDD window of its own (a PopupWindow: a second PDD root,
/// listed after the sheet's window and before the gesture bar and the status bar, as the
/// real dumps list windows bottom to top) over the footer of both real checkout sheets:
/// the footer's tap is covered, naming the bubble, and no other planned tap is. The same
/// window listed before the sheet's window is beneath it and covers nothing.
#[test]
fn real_sheet_footer_under_a_pdd_window_of_its_own_is_covered() {
    let Some(dir) = real_dumps_dir() else {
        return;
    };
    let window = r#"  <node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.xunmeng.pinduoduo" content-desc="" checkable="false" checked="false" clickable="false" enabled="true" focusable="false" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" visible-to-user="true" bounds="[480,2150][1060,2310]" drawing-order="0" hint="" display-id="0">
    <node index="0" text="用多多支付减7.53元" resource-id="com.xunmeng.pinduoduo:id/pdd" class="android.widget.TextView" package="com.xunmeng.pinduoduo" content-desc="" checkable="false" checked="false" clickable="true" enabled="true" focusable="true" focused="false" scrollable="false" long-clickable="false" password="false" selected="false" visible-to-user="true" bounds="[500,2170][1040,2290]" drawing-order="1" hint="" display-id="0" />
  </node>"#;
    for name in [
        "pdd_checkout_sheet_text_sku.xml",
        "pdd_checkout_sheet_image_sku.xml",
    ] {
        let xml = read_dump(&dir.join(name));
        let lines: Vec<&str> = xml.lines().collect();
        let home = lines
            .iter()
            .position(|l| l.starts_with("  <node") && l.contains(r#"package="com.miui.home""#))
            .expect("the gesture bar's window");
        let first = lines
            .iter()
            .position(|l| l.starts_with("  <node"))
            .expect("the sheet's window");
        assert!(
            lines[first].contains(r#"package="com.xunmeng.pinduoduo""#),
            "{name}: the real dump lists PDD's window first"
        );
        let with_window_at = |at: usize| {
            let mut edited: Vec<&str> = lines.clone();
            edited.insert(at, window);
            edited.join("\n") + "\n"
        };
        let taps = |xml: &str| -> Vec<(String, Point, Option<InAppCover>)> {
            let tree = Tree::parse(xml).expect("parses");
            assert_eq!(tree.roots().count(), 2, "{name}: both PDD windows kept");
            let Screen::SkuSheet(sheet) = classify(&tree) else {
                panic!("{name}: not a sku_sheet");
            };
            let mut taps: Vec<(String, Point)> = Vec::new();
            for g in &sheet.groups {
                for o in &g.options {
                    if let Some(at) = o.tap {
                        taps.push((o.name.clone(), at));
                    }
                }
            }
            let stepper = sheet.quantity_stepper.as_ref().expect("stepper");
            for t in [&stepper.decrease, &stepper.increase].into_iter().flatten() {
                taps.push((t.label.clone(), t.tap));
            }
            let submit = sheet.submit.as_ref().expect("submit");
            taps.push((submit.label.clone(), submit.tap));
            taps.into_iter()
                .map(|(label, at)| {
                    let c = cover::covering(&tree, at, &label);
                    (label, at, c)
                })
                .collect()
        };
        let covered = taps(&with_window_at(home));
        let (last, rest) = covered.split_last().unwrap();
        for (label, at, c) in rest {
            assert_eq!(c, &None, "{name}: `{label}` at {at:?} is covered");
        }
        assert!(last.0.starts_with("提交订单"), "{name}: {last:?}");
        let c = last
            .2
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: the footer is not covered"));
        assert_eq!(c.label, "用多多支付减7.53元");
        assert_eq!(c.bounds, Bounds::new(500, 2170, 1040, 2290));
        assert!(c.drawn_over);
        // Listed before the sheet's window: beneath it.
        for (label, at, c) in taps(&with_window_at(first)) {
            assert_eq!(c, None, "{name}: `{label}` at {at:?} is covered");
        }
    }
}

#[test]
fn query_api_on_a_fixture() {
    let tree = Tree::parse(&read_dump(
        &fixtures_dir().join("sku_sheet_text_two_dims.xml"),
    ))
    .expect("parses");
    // Systemui and the launcher are dropped; only the PDD window remains.
    assert_eq!(tree.roots().count(), 1);
    assert!(tree.nodes().all(|n| n.package() == "com.xunmeng.pinduoduo"));
    assert_eq!(tree.screen(), Bounds::new(0, 0, 1080, 2400));

    // The submit label is not clickable; its nearest clickable ancestor is the footer.
    let label = tree
        .find(&Query::new().text(Matcher::Contains("提交订单")))
        .expect("submit label");
    assert!(!label.is_clickable());
    let button = label.nearest_clickable().expect("clickable ancestor");
    assert_eq!(button.bounds(), Bounds::new(334, 2213, 1080, 2354));

    let re = regex::Regex::new(r"^最后\d+件$").expect("regex");
    let stock: Vec<_> = tree
        .select(&Query::new().text(Matcher::Regex(&re)))
        .map(|n| n.text().to_string())
        .collect();
    assert_eq!(stock, ["最后2件"]);

    assert_eq!(
        tree.find(&Query::new().id("tv_select_sku"))
            .map(|n| n.text().to_string()),
        Some("已选: 雾霾蓝 L".to_string())
    );
    assert!(tree
        .find(
            &Query::new()
                .desc(Matcher::Exact("增加数量"))
                .class("ImageView")
        )
        .is_some());
    let top_half = Bounds::new(0, 0, 1080, 1200);
    assert!(tree
        .select(&Query::new().within(top_half).visible())
        .all(|n| n.bounds().bottom <= 1200));

    // All windows kept on request.
    let all = Tree::parse_with(
        &read_dump(&fixtures_dir().join("sku_sheet_text_two_dims.xml")),
        WindowFilter::All,
    )
    .expect("parses");
    assert_eq!(all.roots().count(), 3);
    assert!(all
        .find(&Query::new().id("com.android.systemui:id/clock"))
        .is_some());
}

#[test]
fn entities_and_both_shapes() {
    let pretty = read_dump(&fixtures_dir().join("goods_detail.xml"));
    let tree = Tree::parse(&pretty).expect("parses");
    // `&#10;` and `&amp;` decoded in content-desc.
    assert!(tree.nodes().any(|n| n.desc().ends_with("宿舍 & 办公室\n")));
    assert_eq!(tree.shape(), cmautobuy_pdd::screen::DumpShape::Pretty);
    let old = read_dump(&fixtures_dir().join("sku_sheet_oneline_old_format.xml"));
    assert!(old.ends_with("UI hierchary dumped to: /dev/tty\n"));
    assert_eq!(old.matches('\n').count(), 1, "one line plus the trailer");
    let tree = Tree::parse(&old).expect("parses");
    assert_eq!(tree.shape(), cmautobuy_pdd::screen::DumpShape::Compact);
    assert!(tree.nodes().all(|n| n.visible_to_user().is_none()));
}

#[test]
fn dump_errors_have_stable_codes() {
    let cases = [
        ("", "UI_DUMP_EMPTY", true),
        (
            "ERROR: could not get idle state.",
            "UI_DUMP_IDLE_STATE",
            true,
        ),
        (
            "ERROR: null root node returned by UiTestAutomationBridge.",
            "UI_DUMP_NULL_ROOT",
            true,
        ),
        ("<hierarchy><node", "UI_DUMP_MALFORMED", true),
        ("<hierarchy rotation=\"0\"/>", "UI_DUMP_NO_NODES", true),
        ("garbage", "UI_DUMP_NO_HIERARCHY", false),
        (
            "<hierarchy rotation=\"0\"/>UI hierchary dumped to: /dev/tty",
            "UI_DUMP_NO_NODES",
            true,
        ),
        (
            "<hierarchy><node bounds=\"[0,0][1,1]\"/></hierarchy><hierarchy><node/></hierarchy>",
            "UI_DUMP_MALFORMED",
            true,
        ),
        (
            "<hierarchy><node bounds=\"[0,0][1,1]\" text=unquoted/></hierarchy>",
            "UI_DUMP_MALFORMED",
            true,
        ),
    ];
    for (input, code, retry) in cases {
        let err: DumpError = Tree::parse(input).expect_err(input);
        assert_eq!(err.code(), code, "{input:?}");
        assert_eq!(err.is_retryable(), retry, "{input:?}");
        assert_eq!(err.failure_code(), "UI_DUMP_FAILED");
    }
    // Idle-state text after a complete dump still wins (the command may exit 0).
    let ok = read_dump(&fixtures_dir().join("payment.xml"));
    let err = Tree::parse(&format!("{ok}ERROR: could not get idle state.\n")).expect_err("idle");
    assert_eq!(err, DumpError::IdleState);
}

// ---------------------------------------------------------------------------------------
// No panics: parser + recognizers over mutated dumps. The proptests run 256 cases each;
// `fuzz_mutated_dumps_for_a_while` runs for CMAUTOBUY_FUZZ_SECS seconds (default 2):
//   CMAUTOBUY_FUZZ_SECS=600 cargo test --release -p cmautobuy-pdd --test it screens:: \
//     fuzz_mutated_dumps_for_a_while -- --nocapture
// ---------------------------------------------------------------------------------------

fn seeds() -> &'static [String] {
    static SEEDS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    SEEDS.get_or_init(load_seeds)
}

fn load_seeds() -> Vec<String> {
    let mut seeds: Vec<String> = dump_files().iter().map(|p| read_dump(p)).collect();
    // The one-line shape and a tiny dump keep mutations dense.
    seeds.push(
        r#"<hierarchy rotation="0"><node index="0" text="提交订单 ¥1" package="com.xunmeng.pinduoduo" clickable="true" bounds="[0,0][10,10]"><node text="已选: x" resource-id="com.xunmeng.pinduoduo:id/tv_select_sku" bounds="[0,0][5,5]"/></node></hierarchy>"#
            .to_string(),
    );
    seeds
}

/// Fragments that make mutations hit the interesting paths.
const TOKENS: &[&str] = &[
    "<node ",
    "</node>",
    "/>",
    ">",
    "<",
    "&",
    "&#10;",
    "&amp;",
    "&#xFFFF;",
    "&#0;",
    "\"",
    "'",
    "bounds=\"[",
    "][",
    "]\"",
    "-2147483648",
    "99999999999",
    "¥",
    "￥",
    "提交订单",
    "已选",
    "减少数量",
    "selected=\"true\"",
    "clickable=\"true\"",
    "visible-to-user=\"false\"",
    "</hierarchy>",
    "<hierarchy>",
    "UI hierchary dumped to: /dev/tty",
    "\u{0}",
    "订单编号：",
    "下单时间：2026-02-30 25:61",
    "先去逛逛",
    "继续支付",
    "关闭弹窗",
    "package=\"com.android.systemui\"",
];

#[derive(Clone, Debug)]
enum Mutation {
    Delete {
        at: usize,
        len: usize,
    },
    Insert {
        at: usize,
        token: usize,
    },
    Truncate {
        at: usize,
    },
    Duplicate {
        at: usize,
        len: usize,
    },
    Byte {
        at: usize,
        byte: u8,
    },
    /// Replace the attribute value after `at` by a token, escaped: the XML stays well
    /// formed, so these reach the recognizers.
    Value {
        at: usize,
        token: usize,
    },
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0usize..64).prop_map(|(at, len)| Mutation::Delete { at, len }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Insert { at, token }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), 0usize..400).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Byte { at, byte }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Value { at, token }),
        (any::<usize>(), 0..TOKENS.len()).prop_map(|(at, token)| Mutation::Value { at, token }),
    ]
}

fn apply(mut bytes: Vec<u8>, m: &Mutation) -> Vec<u8> {
    let n = bytes.len().max(1);
    match *m {
        Mutation::Delete { at, len } => {
            let at = at % n;
            let end = (at + len).min(bytes.len());
            if at < end {
                bytes.drain(at..end);
            }
        }
        Mutation::Insert { at, token } => {
            let at = at % (bytes.len() + 1);
            let t = TOKENS[token].as_bytes();
            bytes.splice(at..at, t.iter().copied());
        }
        Mutation::Truncate { at } => bytes.truncate(at % n),
        Mutation::Duplicate { at, len } => {
            let at = at % n;
            let end = (at + len).min(bytes.len());
            if at < end {
                let piece = bytes[at..end].to_vec();
                bytes.splice(end..end, piece);
            }
        }
        Mutation::Byte { at, byte } => {
            if !bytes.is_empty() {
                let at = at % bytes.len();
                bytes[at] = byte;
            }
        }
        Mutation::Value { at, token } => {
            let at = at % n;
            let open = bytes[at.min(bytes.len())..]
                .windows(2)
                .position(|w| w == b"=\"")
                .map(|i| at + i + 2);
            if let Some(open) = open {
                if let Some(len) = bytes[open..].iter().position(|&b| b == b'"') {
                    let escaped = TOKENS[token]
                        .replace('&', "&amp;")
                        .replace('<', "&lt;")
                        .replace('"', "&quot;");
                    bytes.splice(open..open + len, escaped.into_bytes());
                }
            }
        }
    }
    bytes
}

fn exercise(input: &[u8]) {
    let text = String::from_utf8_lossy(input);
    if let Ok(tree) = Tree::parse(&text) {
        let screen = classify(&tree);
        let _ = serde_json::to_string(&screen).expect("serialises");
        let _ = cmautobuy_pdd::screen::render_text(&screen);
        for n in tree.nodes() {
            let _ = (n.tap_point(), n.nearest_clickable(), n.children().count());
        }
    }
    let _ = inspect_json(&text);
    let _ = Tree::parse_with(&text, WindowFilter::All).map(|t| classify(&t));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn no_panic_on_mutated_dumps(
        seed in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..12),
    ) {
        let seeds = seeds();
        let base = seeds[seed.index(seeds.len())].clone().into_bytes();
        let input = mutations.iter().fold(base, apply);
        exercise(&input);
    }

    #[test]
    fn no_panic_on_arbitrary_text(s in ".{0,400}") {
        exercise(s.as_bytes());
        let wrapped = format!(
            r#"<hierarchy><node package="com.xunmeng.pinduoduo" text="{0}" content-desc="{0}" bounds="[0,0][1080,2400]"><node text="{0}" bounds="{0}"/></node></hierarchy>"#,
            s.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;")
        );
        exercise(wrapped.as_bytes());
    }

    #[test]
    fn prices_never_panic_and_never_zero_from_noise(s in "[¥￥0-9., 券后已拼件万起-]{0,24}") {
        if let Some(f) = cmautobuy_pdd::money::parse_price(&s) {
            prop_assert!(f.0 >= 0);
            prop_assert!(s.contains(['¥', '￥']));
        }
    }
}

/// Time-bounded fuzzing with the same mutations (a recorded run of at least ten
/// minutes is kept in BENCHMARKS.md). A panic prints the seed
/// and the mutations that caused it before failing.
#[test]
fn fuzz_mutated_dumps_for_a_while() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    use std::time::{Duration, Instant};

    let secs: u64 = std::env::var("CMAUTOBUY_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let seeds = seeds();
    let names: Vec<String> = dump_files()
        .iter()
        .map(|p| p.display().to_string())
        .chain(std::iter::once("<tiny seed>".to_string()))
        .collect();
    let strategy = (
        any::<prop::sample::Index>(),
        prop::collection::vec(mutation(), 1..12),
    );
    let mut runner = TestRunner::deterministic();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut cases = 0u64;
    let mut parsed = 0u64;
    while Instant::now() < deadline {
        let Ok(tree) = strategy.new_tree(&mut runner) else {
            continue;
        };
        let (seed, mutations) = tree.current();
        let i = seed.index(seeds.len());
        let input = mutations.iter().fold(seeds[i].clone().into_bytes(), apply);
        let outcome = std::panic::catch_unwind(|| {
            exercise(&input);
            Tree::parse(&String::from_utf8_lossy(&input)).is_ok()
        });
        match outcome {
            Ok(ok) => parsed += u64::from(ok),
            Err(panic) => {
                eprintln!("PANIC on seed {} with {:?}", names[i], mutations);
                std::panic::resume_unwind(panic);
            }
        }
        cases += 1;
    }
    eprintln!(
        "fuzzed {cases} mutated dumps ({parsed} still parsed) in {:.0?} without a panic",
        started.elapsed()
    );
    assert!(cases > 0);
}

/// The goods page's price row as the app draws it with a struck-through list price:
/// "券后" "¥" "4.7" "¥12.9" "已拼8500件". The price is the deal price (4.7), never the
/// list price that happens to be the first label carrying its own sign.
#[test]
fn goods_price_is_the_deal_price_not_the_list_price() {
    let xml = read_dump(&fixtures_dir().join("goods_detail.xml"));
    let line = xml
        .lines()
        .find(|l| l.contains(r#"text="4.7""#))
        .expect("the amount node");
    let list_price = line
        .replace(r#"index="2""#, r#"index="3""#)
        .replace(r#"text="4.7""#, r#"text="¥12.9""#);
    let xml = xml.replacen(line, &format!("{line}\n{list_price}"), 1);
    let tree = Tree::parse(&xml).expect("parses");
    match classify(&tree) {
        Screen::GoodsDetail(g) => {
            assert_eq!(g.price, Some(Fen(470)), "{:?}", g.price_text);
            assert_eq!(g.price_text.as_deref(), Some("券后¥4.7"));
        }
        other => panic!("not the goods page: {other:?}"),
    }
}
