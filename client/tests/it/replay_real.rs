//! Real PDD dumps driving the whole client: scenarios built at test
//! time, in a temporary directory, from `../shared/pdd-real-dumps/` (read in place, never
//! copied into the repository), replayed by the simulated phone over the real ADB
//! protocol to the real client binary (`rehearse --replay`, the bundled mock Admin).
//!
//! - the real text-chip sheet (`pdd_checkout_sheet_text_sku.xml`) and the real image-grid
//!   sheet (`pdd_checkout_sheet_image_sku.xml`), each behind one of our goods pages
//!   (`fixtures/screens/goods_detail.xml`, the goods 737116531267): a dry run that
//!   confirms the selected option and the footer total on the real sheet; on the image
//!   grid the client taps another option than the recorded one, and the sheet after the
//!   tap is the real dump with `selected` moved to that option and its 已选 text naming
//!   it — the minimal edit a tap makes, documented in [`reselect`];
//! - a live path whose payment page is left through the REAL abandon dialog
//!   (`pdd_popup_abandon_payment.xml`, 先去逛逛) before the order is found on our order
//!   list and detail dumps.
//!
//! The recorded account had no delivery address (手动添加地址), which stops every purchase
//! first (`fixtures/flows/purchase_real_icon_sheet_no_address`), so the sheets' address
//! label is edited into a receiver, as the flow cases on the same dumps do.
//!
//! Each asserts the outcome, what the Admin stored (option, total), and that no action
//! went off-script. When the shared folder is absent the tests fail loudly — unless
//! `CMAUTOBUY_NO_SHARED=1` (set by `scripts/test` when the shared material is missing)
//! accepts that: then they are reported NOT CHECKED, as `screens.rs` does.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::support::replay::{
    edit, fixture_screen, off_script, purchase_task, rehearse_replay, repo_root,
    restamp_order_time, tap_text, ScenarioBuilder,
};

const GOODS: &str = "737116531267";
const ADDRESS_EDIT: (&str, &str) = ("text=\"手动添加地址\"", "text=\"张三 138****0000\"");

/// The real dumps' folder, or `None` (NOT CHECKED, accepted by `CMAUTOBUY_NO_SHARED=1`).
fn real_dumps(test: &str) -> Option<PathBuf> {
    let dir = repo_root().join("../shared/pdd-real-dumps");
    if dir.is_dir() {
        return Some(dir);
    }
    let msg = format!(
        "\n\n!!! {} is missing: {test} was NOT CHECKED (real-dump replay).\n\
         !!! Put the shared material next to the repository, or set \
         CMAUTOBUY_NO_SHARED=1 to accept running without it.\n",
        dir.display()
    );
    {
        // Straight to the process's stderr: the harness captures a passing test's output.
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "{msg}");
    }
    if std::env::var("CMAUTOBUY_NO_SHARED").as_deref() == Ok("1") {
        return None;
    }
    panic!("{msg}");
}

fn real(dir: &std::path::Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// The sheet after a tap on option `to` (whose container's content-desc is `to_desc`):
/// the recorded dump with every node of the formerly selected option's container
/// (content-desc `from_desc`) set `selected="false"`, every node of `to`'s set
/// `selected="true"`, and 已选 `from_chosen` → `to_chosen`. Nothing else changes (bounds,
/// stock labels, total, footer are the real ones). The dump is pretty-printed one node per
/// line, so a container's subtree is the lines indented deeper than it.
fn reselect(
    xml: &str,
    from_desc: &str,
    to_desc: &str,
    from_chosen: &str,
    to_chosen: &str,
) -> String {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let mut out = Vec::new();
    // (indentation of the container, the value its subtree gets)
    let mut inside: Option<(usize, &str)> = None;
    let (mut flipped_off, mut flipped_on) = (0, 0);
    for line in xml.split_inclusive('\n') {
        let trimmed = line.trim_start();
        if let Some((at, _)) = inside {
            if trimmed.starts_with("<node") && indent(line) <= at
                || trimmed.starts_with("</node") && indent(line) <= at
            {
                inside = None;
            }
        }
        if inside.is_none()
            && trimmed.starts_with("<node")
            && line.contains("android.view.ViewGroup")
        {
            if line.contains(&format!("content-desc=\"{from_desc}\"")) {
                inside = Some((indent(line), "false"));
            } else if line.contains(&format!("content-desc=\"{to_desc}\"")) {
                inside = Some((indent(line), "true"));
            }
        }
        match inside {
            Some((_, v)) if trimmed.starts_with("<node") => {
                let other = if v == "true" { "false" } else { "true" };
                let from = format!("selected=\"{other}\"");
                if line.contains(&from) {
                    if v == "true" {
                        flipped_on += 1;
                    } else {
                        flipped_off += 1;
                    }
                }
                out.push(line.replace(&from, &format!("selected=\"{v}\"")));
            }
            _ => out.push(line.to_string()),
        }
    }
    assert!(
        flipped_off > 0 && flipped_on > 0,
        "the options to reselect were not found ({flipped_off} off, {flipped_on} on)"
    );
    edit(
        &out.concat(),
        &format!("text=\"{from_chosen}\""),
        &format!("text=\"{to_chosen}\""),
        1,
    )
}

/// home → (the goods link) → our goods page → 发起拼单 → the screen `sheet`.
fn goods_then_sheet(dir: &std::path::Path) -> ScenarioBuilder {
    let mut b = ScenarioBuilder::new(dir, "home");
    b.screen("home", &fixture_screen("sim_home.xml"), vec![])
        .screen(
            "goods",
            &fixture_screen("goods_detail.xml"),
            vec![tap_text("发起拼单", "sheet")],
        )
        .url(&format!("goods_id={GOODS}"), "goods");
    b
}

fn assert_clean(r: &crate::support::replay::Replayed, id: &str) -> Value {
    assert!(r.out.status.success(), "{}", r.explain());
    let line = r.task(id).clone();
    assert_eq!(line["outcome"], "succeeded", "{}", r.explain());
    assert_eq!(line["off_script"], 0, "{}", r.explain());
    assert_eq!(r.summary["replay"]["off_script"], 0, "{}", r.explain());
    let log = r.log();
    assert!(
        off_script(&log).is_empty(),
        "off-script: {:?}\n{}",
        off_script(&log),
        r.explain()
    );
    line
}

/// The visited screens, in order, from the replay log's transitions.
fn path_of(log: &[Value]) -> Vec<String> {
    let mut path: Vec<String> = Vec::new();
    for l in log {
        if let Some(to) = l["to"].as_str() {
            if path.last().map(String::as_str) != Some(to) {
                path.push(to.to_string());
            }
        }
    }
    path
}

#[test]
fn the_real_image_sheet_in_a_dry_run_selects_another_option_and_confirms_it_and_the_total() {
    let Some(real_dir) = real_dumps("the image-sheet dry run") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let recorded = edit(
        &real(&real_dir, "pdd_checkout_sheet_image_sku.xml"),
        ADDRESS_EDIT.0,
        ADDRESS_EDIT.1,
        1,
    );
    // The recording selected `  乌龙奶茶+…` (an icon before its name, `#` in 已选); the
    // task asks for 茶杏色+手持化妆镜+礼盒, the grid's second option.
    let option = "茶杏色+手持化妆镜+礼盒";
    let after_tap = reselect(
        &recorded,
        "  乌龙奶茶+手持化妆镜+礼盒",
        option,
        "已选: #乌龙奶茶+手持化妆镜+礼盒",
        &format!("已选: {option}"),
    );
    let scenario = tmp.path().join("scenario");
    let mut b = goods_then_sheet(&scenario);
    b.screen(
        "sheet",
        &recorded,
        vec![json!({"tap": {"desc": option}, "to": "sheet_selected"})],
    )
    .screen("sheet_selected", &after_tap, vec![]);
    let scenario = b.write();

    let id = "real-image-sheet-dry-run";
    let r = rehearse_replay(
        &scenario,
        &[purchase_task(
            id,
            "dry_run",
            GOODS,
            json!({"color": option}),
            1,
            9000,
            "succeeded",
        )],
        &tmp.path().join("data"),
    );
    assert_clean(&r, id);
    let log = r.log();
    assert_eq!(
        path_of(&log),
        ["goods", "sheet", "sheet_selected"],
        "{log:?}"
    );
    // The dry run confirmed the tapped option and the real footer's total.
    let p = &r.admin_result(id)["purchase"];
    assert_eq!(p["mode"], "dry_run", "{p}");
    assert_eq!(p["options"], json!({"color": option}), "{p}");
    assert_eq!(p["quantity"], 1, "{p}");
    assert_eq!(p["confirmed_total_cent"], 8800, "提交订单 ¥88: {p}");
    assert_eq!(p["order_submitted"], false, "{p}");
}

#[test]
fn the_real_text_sheet_in_a_dry_run_confirms_its_selected_option_and_the_total() {
    let Some(real_dir) = real_dumps("the text-sheet dry run") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let sheet = edit(
        &real(&real_dir, "pdd_checkout_sheet_text_sku.xml"),
        ADDRESS_EDIT.0,
        ADDRESS_EDIT.1,
        1,
    );
    let scenario = tmp.path().join("scenario");
    let mut b = goods_then_sheet(&scenario);
    // Its one chip is the selected one: no transition leaves the sheet, and any tap on
    // it would be off-script.
    b.screen("sheet", &sheet, vec![]);
    let scenario = b.write();

    let id = "real-text-sheet-dry-run";
    // The chip's name; the real 已选 writes it `[流砂限定]鎏金盘OUIET BROWN`.
    let option = "【流砂限定】鎏金盘OUIET BROWN";
    let r = rehearse_replay(
        &scenario,
        &[purchase_task(
            id,
            "dry_run",
            GOODS,
            json!({"style": option}),
            1,
            30000,
            "succeeded",
        )],
        &tmp.path().join("data"),
    );
    assert_clean(&r, id);
    assert_eq!(path_of(&r.log()), ["goods", "sheet"]);
    let p = &r.admin_result(id)["purchase"];
    assert_eq!(p["options"], json!({"style": option}), "{p}");
    assert_eq!(p["confirmed_total_cent"], 26900, "提交订单 ¥269: {p}");
    assert_eq!(p["order_submitted"], false, "{p}");
}

#[test]
fn a_live_path_leaves_payment_through_the_real_abandon_dialog_and_finds_its_order() {
    let Some(real_dir) = real_dumps("the live path through the real abandon dialog") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let scenario = tmp.path().join("scenario");
    // Our sheet (雾霾蓝 / L, quantity 2, ¥47.2), our payment page, the REAL dialog that
    // backing out of payment shows, then our order list and detail of that order — its
    // 下单时间 moved next to this replay's mark (crate::support::replay::restamp_order_time).
    let stamp = chrono::Utc::now() + chrono::Duration::seconds(60);
    let order = json!({"goods_id": GOODS, "total_cent": 4720, "quantity": 2,
                       "options": ["雾霾蓝", "L"]});
    let card = "加厚珊瑚绒毛毯冬季 午睡盖毯 沙发毯子 双人床单人";
    let mut b = goods_then_sheet(&scenario);
    // The census of unpaid orders before anything is tapped: the first 待付款
    // link, from the home page, shows the list still empty.
    b.screen(
        "home",
        &fixture_screen("sim_home.xml"),
        vec![json!({"url": {"contains": "orders.html"}, "to": "census"})],
    )
    .screen("census", &fixture_screen("order_list_empty.xml"), vec![])
    .screen(
        "sheet",
        &fixture_screen("sku_sheet_text_two_dims.xml"),
        vec![json!({"tap": {"text_prefix": "提交订单"}, "to": "payment", "order": order})],
    )
    .screen(
        "payment",
        &fixture_screen("payment.xml"),
        vec![json!({"back": true, "to": "abandon"})],
    )
    .screen(
        "abandon",
        &real(&real_dir, "pdd_popup_abandon_payment.xml"),
        vec![tap_text("先去逛逛", "left")],
    )
    .screen("left", &fixture_screen("goods_detail.xml"), vec![])
    .screen(
        "orders",
        &fixture_screen("order_list.xml"),
        vec![
            tap_text(card, "detail"),
            json!({"swipe": {"from": [540, 1949], "to": [540, 734]}, "to": "orders"}),
        ],
    )
    .screen(
        "detail",
        &restamp_order_time(&fixture_screen("order_detail.xml"), stamp),
        vec![json!({"back": true, "to": "orders"})],
    )
    .url("orders.html", "orders");
    let scenario = b.write();

    let id = "real-abandon-dialog-live";
    let r = rehearse_replay(
        &scenario,
        &[purchase_task(
            id,
            "live",
            GOODS,
            json!({"color": "雾霾蓝", "size": "L"}),
            2,
            5000,
            "succeeded",
        )],
        &tmp.path().join("data"),
    );
    assert_clean(&r, id);
    let log = r.log();
    let path = path_of(&log);
    let at = |s: &str| path.iter().position(|p| p == s);
    // Payment was left through the real dialog (先去逛逛), before the order was found.
    assert!(
        at("payment") < at("abandon")
            && at("abandon") < at("left")
            && at("left") < at("orders")
            && at("orders") < at("detail"),
        "{path:?}"
    );
    assert!(
        log.iter()
            .any(|l| l["screen"] == "abandon" && l["action"] == "tap" && l["to"] == "left"),
        "先去逛逛 tapped on the real dialog: {log:?}"
    );
    let p = &r.admin_result(id)["purchase"];
    assert_eq!(p["mode"], "live", "{p}");
    assert_eq!(p["order_submitted"], true, "{p}");
    assert_eq!(p["payment_attempted"], false, "{p}");
    assert_eq!(p["payment_status"], "unpaid", "{p}");
    assert_eq!(p["order_sn"], "261130-094512345678901", "{p}");
    assert_eq!(p["confirmed_total_cent"], 4720, "{p}");
}

/// `xml` with its top-level `com.miui.home` window (the gesture bar, one self-closed
/// line in the real dumps) moved FIRST, before PDD's: real MIUI multi-window dumps list
/// it so too (uiautomator's roots come in no defined order). Nothing else changes.
fn gesture_bar_first(xml: &str) -> String {
    let lines: Vec<&str> = xml.split_inclusive('\n').collect();
    let bar = lines
        .iter()
        .position(|l| l.starts_with("  <node ") && l.contains("package=\"com.miui.home\""))
        .expect("the gesture bar's window");
    assert!(
        lines[bar].trim_end().ends_with("/>"),
        "one line: {}",
        lines[bar]
    );
    let open = lines
        .iter()
        .position(|l| l.starts_with("<hierarchy"))
        .expect("<hierarchy>");
    let mut out: Vec<&str> = lines.clone();
    let moved = out.remove(bar);
    out.insert(open + 1, moved);
    let out = out.concat();
    assert_eq!(out.len(), xml.len());
    out
}

/// A real recorded sheet whose roots list MIUI's gesture bar
/// (`com.miui.home`, `[0,2328][1080,2400]`) before PDD's window. The simulated phone must
/// still take PDD's window as the app in front (its window stack names PDD's activity,
/// not the launcher's), so the client's guard lets its taps on the sheet through — the
/// option tap and the dry run's confirmation — instead of refusing every one as covered
/// by the launcher.
#[test]
fn a_real_sheet_listing_the_gesture_bar_first_is_tapped_as_pdds() {
    let Some(real_dir) = real_dumps("the gesture-bar-first real sheet") else {
        return;
    };
    let tmp = tempfile::tempdir().expect("tmp");
    let recorded = edit(
        &real(&real_dir, "pdd_checkout_sheet_image_sku.xml"),
        ADDRESS_EDIT.0,
        ADDRESS_EDIT.1,
        1,
    );
    let option = "茶杏色+手持化妆镜+礼盒";
    let after_tap = reselect(
        &recorded,
        "  乌龙奶茶+手持化妆镜+礼盒",
        option,
        "已选: #乌龙奶茶+手持化妆镜+礼盒",
        &format!("已选: {option}"),
    );
    let (recorded, after_tap) = (gesture_bar_first(&recorded), gesture_bar_first(&after_tap));
    assert!(recorded.find("com.miui.home") < recorded.find("com.xunmeng.pinduoduo"));
    let scenario = tmp.path().join("scenario");
    let mut b = goods_then_sheet(&scenario);
    b.screen(
        "sheet",
        &recorded,
        vec![json!({"tap": {"desc": option}, "to": "sheet_selected"})],
    )
    .screen("sheet_selected", &after_tap, vec![]);
    let scenario = b.write();

    let id = "real-sheet-gesture-bar-first";
    let r = rehearse_replay(
        &scenario,
        &[purchase_task(
            id,
            "dry_run",
            GOODS,
            json!({"color": option}),
            1,
            9000,
            "succeeded",
        )],
        &tmp.path().join("data"),
    );
    assert_clean(&r, id);
    assert_eq!(
        path_of(&r.log()),
        ["goods", "sheet", "sheet_selected"],
        "the option tap reached the sheet: {}",
        r.explain()
    );
    let p = &r.admin_result(id)["purchase"];
    assert_eq!(p["options"], json!({"color": option}), "{p}");
    assert_eq!(p["confirmed_total_cent"], 8800, "提交订单 ¥88: {p}");
}
