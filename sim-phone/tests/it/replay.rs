//! Replay mode: scenario format v1 refused when bad (in-process and by the CLI), the
//! matching rules, off-script actions, orders reaching the ledger, dumps served
//! byte-for-byte through the real ADB protocol (adb_client directly and Debian's adb
//! server), screenshots recorded and rendered, the phone's own state still at work.
//!
//! Nothing here sleeps for luck: every wait is a bounded poll for a condition.

use std::io::Read;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use cmautobuy_sim_phone::replay::read_replay_log;
use cmautobuy_sim_phone::testing::{run_with_deadline, AdbServer};
use cmautobuy_sim_phone::{
    DumpFault, ReplayLogEntry, Scenario, ScenarioError, SimConfig, SimPhone, SimPhoneHandle,
};

// ---------------------------------------------------------------------------------------
// scenario fixtures

const PDD: &str = "com.xunmeng.pinduoduo";

/// One `<node>` line (pretty dump shape); the attributes a recorded dump carries.
#[allow(clippy::too_many_arguments)]
fn node(
    depth: usize,
    text: &str,
    desc: &str,
    rid: &str,
    class: &str,
    clickable: bool,
    b: [i32; 4],
    children: &str,
) -> String {
    let pad = "  ".repeat(depth);
    let head = format!(
        "{pad}<node index=\"0\" text=\"{text}\" resource-id=\"{rid}\" class=\"{class}\" package=\"{PDD}\" content-desc=\"{desc}\" checkable=\"false\" checked=\"false\" clickable=\"{clickable}\" enabled=\"true\" focusable=\"{clickable}\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" visible-to-user=\"true\" bounds=\"[{},{}][{},{}]\" drawing-order=\"1\" hint=\"\" display-id=\"0\"",
        b[0], b[1], b[2], b[3]
    );
    if children.is_empty() {
        format!("{head} />\n")
    } else {
        format!("{head}>\n{children}{pad}</node>\n")
    }
}

/// A PDD page: a title, a button with a label inside, a text, plus the status bar window.
fn page(title: &str, button: &str, extra: &str) -> String {
    let label = node(
        3,
        button,
        "",
        "",
        "android.widget.TextView",
        false,
        [760, 2250, 920, 2300],
        "",
    );
    let btn = node(
        2,
        "",
        "",
        "com.xunmeng.pinduoduo:id/pdd",
        "android.widget.LinearLayout",
        true,
        [600, 2200, 1080, 2350],
        &label,
    );
    let t = node(
        2,
        title,
        "",
        "",
        "android.widget.TextView",
        false,
        [40, 200, 1040, 300],
        "",
    );
    let x = node(
        2,
        extra,
        "说明",
        "",
        "android.widget.TextView",
        false,
        [40, 400, 540, 500],
        "",
    );
    let root = node(
        1,
        "",
        "",
        "",
        "android.widget.FrameLayout",
        false,
        [0, 0, 1080, 2400],
        &format!("{t}{x}{btn}"),
    );
    format!(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\n<hierarchy rotation=\"0\">\n{root}  <node index=\"1\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\" package=\"com.android.systemui\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" visible-to-user=\"true\" bounds=\"[0,0][1080,95]\" drawing-order=\"2\" hint=\"\" display-id=\"0\" />\n</hierarchy>\n"
    )
}

/// The launcher as the top window.
fn launcher() -> String {
    "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node index=\"0\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\" package=\"com.miui.home\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[0,0][1080,2400]\"><node index=\"0\" text=\"拼多多\" resource-id=\"\" class=\"android.widget.TextView\" package=\"com.miui.home\" content-desc=\"拼多多\" checkable=\"false\" checked=\"false\" clickable=\"true\" enabled=\"true\" focusable=\"true\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" bounds=\"[100,1800][300,2000]\" /></node></hierarchy>".to_string()
}

/// A tiny real PNG (2×2).
fn png_bytes() -> Vec<u8> {
    let img = image::RgbImage::from_pixel(2, 2, image::Rgb([1, 2, 3]));
    let mut out = Vec::new();
    img.write_to(&mut std::io::Cursor::new(&mut out), image::ImageFormat::Png)
        .expect("png");
    out
}

const ACTIVITY_TOP: &str = "TASK 10234:com.xunmeng.pinduoduo id=42 userId=0\n  ACTIVITY com.xunmeng.pinduoduo/.order.OrderActivity 8b2e4f1 pid=12345\n    recorded: yes\n";

/// The standard scenario: s00 launcher, s01 goods, s02 sheet, s03 confirm, s05 ordered,
/// s09 orders list; every trigger kind appears.
fn write_standard(dir: &Path) {
    std::fs::write(dir.join("s00.xml"), launcher()).expect("w");
    std::fs::write(
        dir.join("s01.xml"),
        page("商品详情 ¥69", "发起拼单", "已拼10万件"),
    )
    .expect("w");
    std::fs::write(dir.join("s02.xml"), page("选择规格", "确定", "黑色")).expect("w");
    std::fs::write(
        dir.join("s03.xml"),
        page("确认订单", "提交订单 ¥69", "实付"),
    )
    .expect("w");
    std::fs::write(
        dir.join("s04.xml"),
        page("确认订单 加载中", "提交订单 ¥69", "实付"),
    )
    .expect("w");
    std::fs::write(dir.join("s05.xml"), page("支付成功", "查看订单", "完成")).expect("w");
    std::fs::write(dir.join("s09.xml"), page("我的订单", "待付款", "全部")).expect("w");
    std::fs::write(dir.join("s05.png"), png_bytes()).expect("w");
    std::fs::write(dir.join("s09.top.txt"), ACTIVITY_TOP).expect("w");
    let scenario = serde_json::json!({
        "version": 1,
        "start": "s00",
        "screens": {
            "s00": {"dump": "s00.xml", "on": [
                {"tap": {"desc": "拼多多"}, "to": "s09"}
            ]},
            "s01": {"dump": "s01.xml", "on": [
                {"tap": {"text": "发起拼单"}, "to": "s02"},
                {"tap": {"text": "发起拼单"}, "to": "s09"},
                {"back": true, "to": "s00"},
                {"swipe": {"from": [540, 1800], "to": [540, 900]}, "to": "s01"},
                {"swipe": {"from": [100, 100], "to": [100, 900], "tolerance_px": 5}, "to": "s09"},
                {"url": {"contains": "orders.html"}, "to": "s05"}
            ]},
            "s02": {"dump": "s02.xml", "on": [
                {"tap": {"text_prefix": "确"}, "to": "s03"},
                {"key": 3, "to": "s00"},
                {"tap": {"desc_prefix": "说", "bounds": [40, 400, 540, 500]}, "to": "s01"}
            ]},
            "s03": {"dump": "s03.xml", "on": [
                {"dumped": true, "to": "s04"}
            ]},
            "s04": {"dump": "s04.xml", "on": [
                {"tap": {"text_prefix": "提交订单"}, "to": "s05",
                 "order": {"goods_id": "123", "total_cent": 6900, "quantity": 1, "options": ["黑色", "L"]}},
                {"collapse_shade": true, "to": "s03"}
            ]},
            "s05": {"dump": "s05.xml", "screenshot": "s05.png"},
            "s09": {"dump": "s09.xml", "activity_top": "s09.top.txt"}
        },
        "urls": [
            {"contains": "goods_id=123", "to": "s01"},
            {"contains": "orders.html", "to": "s09"}
        ]
    });
    std::fs::write(
        dir.join("scenario.json"),
        serde_json::to_string_pretty(&scenario).expect("json"),
    )
    .expect("w");
}

fn standard() -> (tempfile::TempDir, Scenario) {
    let dir = tempfile::tempdir().expect("tmp");
    write_standard(dir.path());
    let s = Scenario::load(dir.path()).expect("standard scenario loads");
    (dir, s)
}

fn start(cfg: SimConfig) -> SimPhoneHandle {
    SimPhone::bind("127.0.0.1:0".parse().expect("addr"), cfg).expect("phone starts")
}

fn replay_phone() -> (tempfile::TempDir, SimPhoneHandle) {
    let (dir, s) = standard();
    let mut cfg = SimConfig::replay(s);
    cfg.start_time = Some("2026-11-30T08:02:10Z".parse().expect("time"));
    (dir, start(cfg))
}

fn sh(p: &SimPhoneHandle, line: &str) -> String {
    let e = p.run_shell(line);
    assert_eq!(e.code, 0, "{line}: {}", String::from_utf8_lossy(&e.stderr));
    String::from_utf8_lossy(&e.stdout).into_owned()
}

fn screen(p: &SimPhoneHandle) -> String {
    p.replay_screen().expect("replay mode")
}

fn last(p: &SimPhoneHandle) -> ReplayLogEntry {
    p.replay_log().last().cloned().expect("a log entry")
}

// ---------------------------------------------------------------------------------------
// refusing bad scenarios

/// Write the standard scenario, let `edit` break it, load it: the error's text.
fn refused(edit: impl FnOnce(&Path, &mut serde_json::Value)) -> (ScenarioError, String) {
    let dir = tempfile::tempdir().expect("tmp");
    write_standard(dir.path());
    let p = dir.path().join("scenario.json");
    let mut v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&p).expect("r")).expect("json");
    edit(dir.path(), &mut v);
    std::fs::write(&p, serde_json::to_string_pretty(&v).expect("json")).expect("w");
    match Scenario::load(dir.path()) {
        Ok(_) => panic!("a bad scenario was accepted: {v}"),
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "one line: {s}");
            (e, s)
        }
    }
}

#[test]
fn every_kind_of_bad_scenario_is_refused_with_its_problem() {
    // missing file
    let (e, s) = refused(|d, _| std::fs::remove_file(d.join("s02.xml")).expect("rm"));
    assert!(matches!(e, ScenarioError::MissingFile { .. }), "{s}");
    assert!(
        s.contains("\"s02\"") && s.contains("s02.xml") && s.contains("missing"),
        "{s}"
    );
    let (_, s) = refused(|d, _| std::fs::remove_file(d.join("s05.png")).expect("rm"));
    assert!(s.contains("s05.png") && s.contains("missing"), "{s}");
    let (_, s) = refused(|d, _| std::fs::remove_file(d.join("s09.top.txt")).expect("rm"));
    assert!(s.contains("s09.top.txt") && s.contains("missing"), "{s}");

    // unknown screen id: start, a transition's `to`, a global url's `to`
    let (e, s) = refused(|_, v| v["start"] = "s99".into());
    assert!(matches!(e, ScenarioError::UnknownScreen { .. }), "{s}");
    assert!(s.contains("start") && s.contains("\"s99\""), "{s}");
    let (_, s) = refused(|_, v| v["screens"]["s01"]["on"][2]["to"] = "nowhere".into());
    assert!(
        s.contains("\"s01\"") && s.contains("transition 3") && s.contains("\"nowhere\""),
        "{s}"
    );
    let (_, s) = refused(|_, v| v["urls"][1]["to"] = "s77".into());
    assert!(s.contains("urls[1]") && s.contains("\"s77\""), "{s}");

    // malformed JSON: line and column
    let dir = tempfile::tempdir().expect("tmp");
    write_standard(dir.path());
    std::fs::write(
        dir.path().join("scenario.json"),
        "{\"version\": 1,\n \"start\": \"s00\",\n \"screens\": {,}}",
    )
    .expect("w");
    let e = Scenario::load(dir.path()).expect_err("malformed");
    let s = e.to_string();
    assert!(matches!(e, ScenarioError::Json { line: 3, .. }), "{s}");
    assert!(s.contains("scenario.json: line 3 column"), "{s}");

    // a dump that is not a dump
    let (e, s) = refused(|d, _| {
        std::fs::write(d.join("s03.xml"), "<html><body>hi</body></html>").expect("w")
    });
    assert!(matches!(e, ScenarioError::NotADump { .. }), "{s}");
    assert!(
        s.contains("\"s03\"") && s.contains("s03.xml") && s.contains("not a uiautomator dump"),
        "{s}"
    );
    let (_, s) = refused(|d, _| {
        std::fs::write(
            d.join("s03.xml"),
            "<hierarchy><node bounds=\"[0,0][10]\"/></hierarchy>",
        )
        .expect("w")
    });
    assert!(s.contains("bad bounds"), "{s}");
    let (_, s) = refused(|d, _| std::fs::write(d.join("s05.png"), b"GIF89a").expect("w"));
    assert!(s.contains("s05.png") && s.contains("not a PNG"), "{s}");

    // wrong version
    let (e, s) = refused(|_, v| v["version"] = 2.into());
    assert!(matches!(e, ScenarioError::Version { found: 2, .. }), "{s}");
    assert!(s.contains("version 2 is not supported"), "{s}");
    let (_, s) = refused(|_, v| {
        v.as_object_mut().expect("obj").remove("version");
    });
    assert!(s.contains("missing field `version`"), "{s}");

    // unknown keys, at every level
    let (_, s) = refused(|_, v| v["strat"] = "s00".into());
    assert!(s.contains("unknown field `strat`"), "{s}");
    let (_, s) = refused(|_, v| v["screens"]["s01"]["screnshot"] = "x.png".into());
    assert!(s.contains("unknown field `screnshot`"), "{s}");
    let (_, s) = refused(|_, v| v["screens"]["s01"]["on"][0]["too"] = "s02".into());
    assert!(s.contains("unknown field `too`"), "{s}");
    let (_, s) = refused(|_, v| v["screens"]["s01"]["on"][0]["tap"]["txt"] = "x".into());
    assert!(s.contains("unknown field `txt`"), "{s}");

    // two triggers, none, a false flag, an empty selector
    let (e, s) = refused(|_, v| v["screens"]["s01"]["on"][0]["back"] = true.into());
    assert!(
        matches!(e, ScenarioError::Transition { index: 1, .. }),
        "{s}"
    );
    assert!(
        s.contains("\"s01\"") && s.contains("2 triggers (tap, back)") && s.contains("exactly one"),
        "{s}"
    );
    let (_, s) = refused(|_, v| {
        v["screens"]["s01"]["on"][0]
            .as_object_mut()
            .expect("o")
            .remove("tap");
    });
    assert!(s.contains("has no trigger"), "{s}");
    let (_, s) = refused(|_, v| v["screens"]["s03"]["on"][0]["dumped"] = false.into());
    assert!(s.contains("`dumped: false` is not a trigger"), "{s}");
    let (_, s) = refused(|_, v| v["screens"]["s01"]["on"][0]["tap"] = serde_json::json!({}));
    assert!(s.contains("selector is empty"), "{s}");

    // money is integer fen, never negative
    let (_, s) = refused(|_, v| {
        v["screens"]["s04"]["on"][0]["order"]["total_cent"] = serde_json::json!(69.5)
    });
    assert!(s.contains("line") && s.contains("floating point"), "{s}");
    let (_, s) =
        refused(|_, v| v["screens"]["s04"]["on"][0]["order"]["total_cent"] = serde_json::json!(-1));
    assert!(s.contains("negative"), "{s}");

    // file names are plain relative names
    for bad in ["../s01.xml", "/etc/passwd", "sub/s01.xml", "..", ""] {
        let (e, s) = refused(|_, v| v["screens"]["s01"]["dump"] = bad.into());
        assert!(matches!(e, ScenarioError::BadFileName { .. }), "{bad}: {s}");
        assert!(s.contains("not a plain relative name"), "{s}");
    }

    // no scenario.json at all
    let empty = tempfile::tempdir().expect("tmp");
    let e = Scenario::load(empty.path()).expect_err("nothing there");
    assert!(e.to_string().contains("scenario.json"), "{e}");
}

// ---------------------------------------------------------------------------------------
// the CLI

struct Kill(std::process::Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_sim-phone"))
}

#[test]
fn the_cli_refuses_a_bad_scenario_with_exit_2_and_one_line() {
    let dir = tempfile::tempdir().expect("tmp");
    write_standard(dir.path());
    std::fs::remove_file(dir.path().join("s02.xml")).expect("rm");
    let mut c = bin();
    c.args(["--listen", "127.0.0.1:0", "--replay"])
        .arg(dir.path());
    let o = run_with_deadline(c, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("s02.xml") && err.contains("missing"), "{err}");
    assert!(o.stdout.is_empty(), "never listened");

    // --catalog and --replay together are refused too.
    let mut c = bin();
    c.args(["--listen", "127.0.0.1:0", "--catalog", "x", "--replay"])
        .arg(dir.path());
    let o = run_with_deadline(c, Duration::from_secs(30));
    assert_eq!(o.status.code(), Some(2), "{o:?}");
    assert!(String::from_utf8_lossy(&o.stderr).contains("cannot be used with"));
}

/// Wait for `listening on ADDR` on the child's stdout.
fn listening(child: &mut Kill) -> SocketAddr {
    let mut out = child.0.stdout.take().expect("stdout");
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while out.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    let line = String::from_utf8_lossy(&line).to_string();
    line.strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .expect("addr")
}

/// Poll `f` until it gives a value, for at most 30 s.
fn poll<T>(mut f: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(v) = f() {
            return Some(v);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn the_cli_replays_writes_its_log_and_the_order_reaches_the_state_file() {
    use adb_client::tcp::ADBTcpDevice;
    use adb_client::ADBDeviceExt;

    let (dir, _) = standard();
    let work = tempfile::tempdir().expect("tmp");
    let log = work.path().join("replay.jsonl");
    let state = work.path().join("state.json");
    let mut c = bin();
    c.args(["--listen", "127.0.0.1:0", "--replay"])
        .arg(dir.path())
        .arg("--replay-log")
        .arg(&log)
        .arg("--state")
        .arg(&state)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = Kill(c.spawn().expect("spawn"));
    let addr = listening(&mut child);
    let key = work.path().join("adbkey");
    let mut dev = ADBTcpDevice::new_with_custom_private_key(addr, &key).expect("connect");
    for line in [
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=123' -p com.xunmeng.pinduoduo",
        "input tap 650 2210",
        "input tap 800 2270",
        "uiautomator dump /dev/tty",
        "input tap 800 2270",
        "input tap 5 1000",
    ] {
        let mut out = Vec::new();
        dev.shell_command(&line, Some(&mut out), None).expect(line);
    }
    let entries = poll(|| read_replay_log(&log).ok().filter(|v| v.len() >= 6))
        .unwrap_or_else(|| panic!("six log lines: {:?}", std::fs::read_to_string(&log)));
    let brief: Vec<(String, String, Option<String>, bool)> = entries
        .iter()
        .map(|e| {
            (
                e.action.clone(),
                e.screen.clone(),
                e.to.clone(),
                e.off_script,
            )
        })
        .collect();
    let t = |a: &str, s: &str, to: Option<&str>, off: bool| {
        (a.to_string(), s.to_string(), to.map(str::to_string), off)
    };
    assert_eq!(
        brief,
        vec![
            t("open_url", "s00", Some("s01"), false),
            t("tap", "s01", Some("s02"), false),
            t("tap", "s02", Some("s03"), false),
            t("dump", "s03", Some("s04"), false),
            t("tap", "s04", Some("s05"), false),
            t("tap", "s05", None, true),
        ]
    );
    assert_eq!(
        entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5, 6]
    );
    assert_eq!(entries[1].at, Some([650, 2210]));
    assert!(entries[4].order_sn.is_some());
    let raw = std::fs::read_to_string(&log).expect("log");
    assert!(
        raw.lines()
            .next()
            .expect("line")
            .starts_with("{\"seq\":1,\"action\":\"open_url\",\"screen\":\"s00\",\"to\":\"s01\""),
        "{raw}"
    );
    assert!(raw.contains("\"off_script\":true"), "{raw}");

    // `sim-phone orders` reads the order back from the state file.
    let mut c = bin();
    c.arg("orders").arg("--state").arg(&state);
    let o = run_with_deadline(c, Duration::from_secs(30));
    assert!(o.status.success(), "{o:?}");
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("order json"))
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["goods_id"], "123");
    assert_eq!(lines[0]["total_cent"], 6900);
    assert_eq!(lines[0]["quantity"], 1);
    assert_eq!(lines[0]["options"]["option1"], "黑色");
    assert_eq!(lines[0]["status"], "unpaid");
    assert_eq!(lines[0]["order_sn"], serde_json::json!(entries[4].order_sn));
}

// ---------------------------------------------------------------------------------------
// matching rules (in-process: the same shell the transport runs)

#[test]
fn taps_match_labels_in_their_buttons_prefixes_bounds_and_the_first_transition_wins() {
    let (_d, p) = replay_phone();
    assert_eq!(screen(&p), "s00");
    // The launcher's icon (desc) opens the order list.
    sh(&p, "input tap 200 1900");
    assert_eq!(screen(&p), "s09");

    let (_d, p) = replay_phone();
    sh(&p, "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=123&x=1'");
    assert_eq!(screen(&p), "s01");
    // Outside the button: off-script, the screen stays.
    sh(&p, "input tap 500 2270");
    assert_eq!(screen(&p), "s01");
    assert!(last(&p).off_script);
    assert_eq!(last(&p).at, Some([500, 2270]));
    assert_eq!(p.off_script_count(), 1);
    // In the button but outside its label: the label's clickable ancestor takes it, and
    // of the two transitions on 发起拼单 the first wins (s02, not s09).
    sh(&p, "input tap 610 2320");
    assert_eq!(screen(&p), "s02");
    assert_eq!(last(&p).to.as_deref(), Some("s02"));
    // desc_prefix + bounds: the 说明 text (not clickable) at its exact bounds.
    sh(&p, "input tap 539 499");
    assert_eq!(screen(&p), "s01");
    sh(&p, "input tap 610 2320");
    // text_prefix: 确定 starts with 确.
    sh(&p, "input tap 1079 2200");
    assert_eq!(screen(&p), "s03");
    assert_eq!(p.off_script_count(), 1);
}

#[test]
fn keys_links_swipes_dumped_and_collapse_follow_the_scenario() {
    let (_d, p) = replay_phone();
    // A global link from the launcher.
    sh(&p, "am start -a android.intent.action.VIEW -d 'https://mobile.yangkeduo.com/goods.html?goods_id=123'");
    assert_eq!(screen(&p), "s01");
    let e = last(&p);
    assert_eq!(
        (e.action.as_str(), e.url.as_deref()),
        (
            "open_url",
            Some("https://mobile.yangkeduo.com/goods.html?goods_id=123")
        )
    );
    // Per-screen url before the global one (global orders.html → s09, s01's own → s05).
    sh(&p, "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/orders.html?type=1'");
    assert_eq!(screen(&p), "s05");
    // From s05 (no url of its own) the global one applies.
    sh(
        &p,
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/orders.html'",
    );
    assert_eq!(screen(&p), "s09");
    // An unknown link is off-script.
    sh(&p, "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/nothing.html'");
    assert_eq!(screen(&p), "s09");
    assert!(last(&p).off_script);

    let (_d, p) = replay_phone();
    sh(
        &p,
        "am start -a android.intent.action.VIEW -d 'x://goods_id=123'",
    );
    // Swipe tolerance: within 60 px of both ends (default) matches, and stays on s01.
    sh(&p, "input swipe 580 1840 500 940 300");
    assert_eq!(last(&p).to.as_deref(), Some("s01"));
    assert_eq!(last(&p).swipe, Some([580, 1840, 500, 940]));
    sh(&p, "input swipe 540 1900 540 900 300");
    assert!(last(&p).off_script, "100 px off the start");
    // tolerance_px 5: 4 px off matches, 6 px off does not.
    sh(&p, "input swipe 100 106 100 900");
    assert!(last(&p).off_script);
    sh(&p, "input swipe 104 100 100 900");
    assert_eq!(screen(&p), "s09");

    let (_d, p) = replay_phone();
    sh(
        &p,
        "am start -a android.intent.action.VIEW -d 'x://goods_id=123'",
    );
    sh(&p, "input keyevent KEYCODE_BACK");
    assert_eq!(screen(&p), "s00");
    let e = last(&p);
    assert_eq!((e.action.as_str(), e.keycode), ("back", Some(4)));
    sh(
        &p,
        "am start -a android.intent.action.VIEW -d 'x://goods_id=123'",
    );
    sh(&p, "input tap 800 2270");
    assert_eq!(screen(&p), "s02");
    sh(&p, "input keyevent 3");
    assert_eq!(screen(&p), "s00");
    assert_eq!(last(&p).action, "key");
    // An unscripted key is logged off-script.
    sh(&p, "input keyevent 66");
    assert_eq!(
        (
            last(&p).action.as_str(),
            last(&p).keycode,
            last(&p).off_script
        ),
        ("key", Some(66), true)
    );

    // `dumped`: s03's dump is served, then the screen moves on by itself.
    let (_d, p) = replay_phone();
    for l in [
        "am start -a android.intent.action.VIEW -d 'x://goods_id=123'",
        "input tap 800 2270",
        "input tap 800 2270",
    ] {
        sh(&p, l);
    }
    assert_eq!(screen(&p), "s03");
    let d1 = sh(&p, "uiautomator dump /dev/tty");
    assert!(d1.contains("确认订单"), "{d1}");
    assert!(!d1.contains("加载中"));
    assert_eq!(screen(&p), "s04");
    let d2 = sh(&p, "uiautomator dump /dev/tty");
    assert!(d2.contains("确认订单 加载中"));
    assert_eq!(screen(&p), "s04", "s04 has no dumped transition");
    // collapse_shade goes to the player even with no shade down.
    sh(&p, "cmd statusbar collapse");
    assert_eq!(screen(&p), "s03");
    assert_eq!(last(&p).action, "collapse_shade");
    // `input text` is off-script.
    sh(&p, "input text 2");
    assert_eq!(
        (last(&p).action.as_str(), last(&p).off_script),
        ("text", true)
    );
    let actions: Vec<String> = p.replay_log().iter().map(|e| e.action.clone()).collect();
    assert_eq!(
        actions,
        [
            "open_url",
            "tap",
            "tap",
            "dump",
            "dump",
            "collapse_shade",
            "text"
        ]
    );
}

#[test]
fn a_failed_dump_serves_nothing_and_fires_no_dumped_transition() {
    let (_d, p) = replay_phone();
    for l in [
        "am start -a android.intent.action.VIEW -d 'x://goods_id=123'",
        "input tap 800 2270",
        "input tap 800 2270",
    ] {
        sh(&p, l);
    }
    p.fail_next_dump(DumpFault::IdleState);
    let e = p.run_shell("uiautomator dump /dev/tty");
    assert!(String::from_utf8_lossy(&e.stderr).contains("could not get idle state"));
    assert_eq!(screen(&p), "s03");
    sh(&p, "uiautomator dump /dev/tty");
    assert_eq!(screen(&p), "s04");
}

#[test]
fn an_order_transition_reaches_the_ledger() {
    let (_d, p) = replay_phone();
    for l in [
        "am start -a android.intent.action.VIEW -d 'x://goods_id=123'",
        "input tap 800 2270",
        "input tap 800 2270",
        "uiautomator dump",
    ] {
        sh(&p, l);
    }
    assert!(p.orders().is_empty());
    sh(&p, "input tap 700 2300");
    assert_eq!(screen(&p), "s05");
    let orders = p.orders();
    assert_eq!(orders.len(), 1);
    let o = &orders[0];
    assert_eq!(
        (o.goods_id.as_str(), o.total_cent, o.quantity),
        ("123", 6900, 1)
    );
    assert_eq!(o.options.values().collect::<Vec<_>>(), ["黑色", "L"]);
    assert!(o.order_sn.starts_with("261130-"), "{}", o.order_sn);
    assert!(!o.payment_attempted);
    assert_eq!(last(&p).order_sn.as_deref(), Some(o.order_sn.as_str()));
}

// ---------------------------------------------------------------------------------------
// what the phone shows: dumps, screenshots, dumpsys, the phone's own state

#[test]
fn dumps_are_served_byte_for_byte_over_adb_client_and_the_adb_server() {
    use adb_client::server_device::ADBServerDevice;
    use adb_client::tcp::ADBTcpDevice;
    use adb_client::ADBDeviceExt;

    let (dir, p) = replay_phone();
    let s00 = std::fs::read(dir.path().join("s00.xml")).expect("r");
    let s01 = std::fs::read(dir.path().join("s01.xml")).expect("r");
    let home = tempfile::tempdir().expect("tmp");
    let mut dev = ADBTcpDevice::new_with_custom_private_key(p.addr(), home.path().join("adbkey"))
        .expect("connect");
    let mut out = Vec::new();
    dev.shell_command(&"uiautomator dump /dev/tty", Some(&mut out), None)
        .expect("dump");
    let mut want = s00.clone();
    want.extend_from_slice(b"UI hierchary dumped to: /dev/tty\n");
    assert_eq!(
        out, want,
        "to /dev/tty: the recorded bytes, then uiautomator's line"
    );
    let mut out = Vec::new();
    dev.shell_command(
        &"am start -a android.intent.action.VIEW -d x://goods_id=123",
        Some(&mut out),
        None,
    )
    .expect("link");
    let mut out = Vec::new();
    dev.shell_command(&"uiautomator dump /sdcard/w.xml", Some(&mut out), None)
        .expect("dump");
    let mut pulled = Vec::new();
    dev.pull(&"/sdcard/w.xml", &mut pulled).expect("pull");
    assert_eq!(pulled, s01, "to a file: the recorded bytes");

    // Debian's adb server: `adb shell` and adb_client through it.
    let adb = AdbServer::start();
    adb.connect(&p.serial());
    let o = adb.shell(&p.serial(), &["uiautomator", "dump", "/dev/tty"]);
    assert!(o.status.success(), "{o:?}");
    let mut want = s01.clone();
    want.extend_from_slice(b"UI hierchary dumped to: /dev/tty\n");
    assert_eq!(o.stdout, want);
    let mut sdev = ADBServerDevice::new(p.serial(), Some(adb.addr()));
    let mut out = Vec::new();
    sdev.shell_command(&"uiautomator dump /dev/tty", Some(&mut out), None)
        .expect("dump");
    assert_eq!(out, want);
    assert_eq!(
        p.replay_log().iter().filter(|e| e.action == "dump").count(),
        4
    );
}

fn png_dims(b: &[u8]) -> (u32, u32) {
    assert!(b.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let i = image::load_from_memory_with_format(b, image::ImageFormat::Png).expect("png");
    (i.width(), i.height())
}

#[test]
fn screenshots_are_the_recorded_bytes_or_rendered_from_the_dump() {
    use adb_client::tcp::ADBTcpDevice;
    use adb_client::ADBDeviceExt;

    let (dir, p) = replay_phone();
    // s00 has no screenshot: a PNG rendered from its dump, the display's size.
    let e = p.run_shell("screencap -p");
    assert_eq!(png_dims(&e.stdout), (1080, 2400));
    let again = p.run_shell("screencap -p");
    assert_eq!(e.stdout, again.stdout, "rendered once, the same every time");
    let raw = p.run_shell("screencap");
    assert_eq!(raw.stdout.len(), 16 + 1080 * 2400 * 4);
    assert_eq!(last(&p).action, "screencap");
    // s05 has one: those very bytes.
    for l in [
        "am start -a android.intent.action.VIEW -d x://orders.html",
        "uiautomator dump",
    ] {
        sh(&p, l);
    }
    let _ = l_to_s05(&p);
    let rec = std::fs::read(dir.path().join("s05.png")).expect("r");
    assert_eq!(p.run_shell("screencap -p").stdout, rec);
    let home = tempfile::tempdir().expect("tmp");
    let mut dev = ADBTcpDevice::new_with_custom_private_key(p.addr(), home.path().join("adbkey"))
        .expect("connect");
    let mut out = Vec::new();
    dev.shell_command(&"screencap -p", Some(&mut out), None)
        .expect("cap");
    assert_eq!(out, rec);
    let fb = dev.framebuffer_inner().expect("framebuffer");
    assert_eq!(
        (fb.width(), fb.height()),
        (2, 2),
        "the recorded picture's pixels"
    );
    // The screen off: black, the recorded bytes are not what the display shows.
    p.set_screen_on(false);
    assert_ne!(p.run_shell("screencap -p").stdout, rec);
}

/// From the launcher, the global orders.html link leads to s09; s09 has no way on, so
/// take a fresh route to s05 through s01's own link.
fn l_to_s05(p: &SimPhoneHandle) -> String {
    sh(p, "input keyevent 4");
    sh(
        p,
        "am start -a android.intent.action.VIEW -d x://goods_id=123",
    );
    sh(
        p,
        "am start -a android.intent.action.VIEW -d x://orders.html",
    );
    assert_eq!(screen(p), "s05");
    screen(p)
}

#[test]
fn dumpsys_follows_the_recorded_screen_and_the_phone_state_still_works() {
    let (dir, p) = replay_phone();
    // The launcher's dump on top: PDD does not have the focus.
    let w = sh(&p, "dumpsys window windows");
    assert!(w.contains("mCurrentFocus") || w.contains("Window #"), "{w}");
    let top = sh(&p, "dumpsys activity top");
    assert!(top.contains("com.miui.home"), "{top}");
    let disp = sh(&p, "dumpsys window displays");
    assert!(
        disp.contains("mCurrentFocus=Window{") && disp.contains("Launcher"),
        "{disp}"
    );

    sh(
        &p,
        "am start -a android.intent.action.VIEW -d x://goods_id=123",
    );
    let disp = sh(&p, "dumpsys window displays");
    assert!(
        disp.contains("com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.activity.NewPageActivity"),
        "{disp}"
    );
    let top = sh(&p, "dumpsys activity top");
    assert!(
        top.contains("ACTIVITY com.xunmeng.pinduoduo/.activity.NewPageActivity"),
        "{top}"
    );
    assert!(!top.contains("goods_id"), "no goods id shown: {top}");
    // A screen with its recorded `activity_top`: that text, and its activity has focus.
    sh(
        &p,
        "am start -a android.intent.action.VIEW -d x://orders.html",
    );
    sh(&p, "input keyevent 4");
    let p2 = {
        let (_d2, s) = (0, Scenario::load(dir.path()).expect("load"));
        start(SimConfig::replay(s))
    };
    sh(&p2, "input tap 200 1900");
    assert_eq!(screen(&p2), "s09");
    assert_eq!(sh(&p2, "dumpsys activity top"), ACTIVITY_TOP);
    let disp = sh(&p2, "dumpsys window displays");
    assert!(
        disp.contains("com.xunmeng.pinduoduo/.order.OrderActivity"),
        "{disp}"
    );
    let pkg = sh(&p2, "dumpsys package com.xunmeng.pinduoduo");
    assert!(pkg.contains("versionName="), "{pkg}");

    // The phone's own state: a swipe keyguard covers the recording, and unlocking
    // brings it back; the keyguard's taps and swipes never reach the player.
    p2.set_lock(cmautobuy_sim_phone::LockKind::Swipe);
    p2.lock_now();
    p2.set_screen_on(true);
    let d = sh(&p2, "uiautomator dump /dev/tty");
    assert!(
        d.contains("com.android.systemui") && !d.contains("我的订单"),
        "{d}"
    );
    let n = p2.replay_log().len();
    sh(&p2, "input swipe 540 2000 540 800 300");
    assert_eq!(
        p2.replay_log().len(),
        n,
        "the unlock swipe went to the keyguard"
    );
    let d = sh(&p2, "uiautomator dump /dev/tty");
    assert!(d.contains("我的订单"), "{d}");
    assert_eq!(screen(&p2), "s09");
}

/// Random mutations of a scenario's JSON never panic the loader, and a mutated scenario
/// that still loads replays without panicking.
#[test]
fn mutated_scenarios_are_refused_or_replayed_never_a_panic() {
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().expect("tmp");
    write_standard(dir.path());
    let path = dir.path().join("scenario.json");
    let base = std::fs::read(&path).expect("r");
    let alphabet = b"{}[]:,\"0123456789-.etruflsn s0s9/\\";
    let mut rng = rand::rngs::StdRng::seed_from_u64(1414);
    let (mut loaded, mut refused) = (0, 0);
    for _ in 0..400 {
        let mut b = base.clone();
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_range(0..b.len());
            match rng.gen_range(0..3) {
                0 => b[i] = alphabet[rng.gen_range(0..alphabet.len())],
                1 => {
                    b.remove(i);
                }
                _ => b.insert(i, alphabet[rng.gen_range(0..alphabet.len())]),
            }
        }
        std::fs::write(&path, &b).expect("w");
        match Scenario::load(dir.path()) {
            Ok(s) => {
                loaded += 1;
                let mut d = SimConfig::replay(s).build_device().expect("device");
                for l in [
                    "am start -a android.intent.action.VIEW -d x://goods_id=123",
                    "input tap 800 2270",
                    "uiautomator dump /dev/tty",
                    "input swipe 540 1800 540 900",
                    "input keyevent 4",
                    "cmd statusbar collapse",
                    "dumpsys activity top",
                ] {
                    let _ = d.run_line(l);
                }
            }
            Err(e) => {
                refused += 1;
                assert!(!e.to_string().is_empty());
            }
        }
    }
    assert!(
        loaded > 0 && refused > 0,
        "loaded {loaded}, refused {refused}"
    );
}

// ---------------------------------------------------------------------------------------
// the repository's dump fixtures (real-shaped and re-generated real dumps)

fn fixtures() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

#[test]
fn every_fixture_dump_parses_and_the_broken_ones_are_refused() {
    use cmautobuy_sim_phone::replay::DumpIndex;
    let mut n = 0;
    for dir in ["screens", "android"] {
        for e in std::fs::read_dir(fixtures().join(dir)).expect("fixtures") {
            let p = e.expect("entry").path();
            if p.extension().is_none_or(|x| x != "xml") {
                continue;
            }
            let name = p
                .file_name()
                .and_then(|f| f.to_str())
                .unwrap_or_default()
                .to_string();
            let text = std::fs::read_to_string(&p).expect("utf-8");
            let r = DumpIndex::parse(&text);
            if name.starts_with("fail_") {
                assert!(r.is_err(), "{name} is broken on purpose");
            } else {
                let d = r.unwrap_or_else(|e| panic!("{name}: {e}"));
                assert!(
                    !d.roots.is_empty() && d.nodes.len() >= d.roots.len(),
                    "{name}"
                );
                n += 1;
            }
        }
    }
    assert!(n >= 30, "{n} fixture dumps");
}

#[test]
fn a_real_shaped_checkout_sheet_drives_a_replay_to_an_order() {
    use cmautobuy_sim_phone::replay::DumpIndex;
    let sheet = std::fs::read_to_string(fixtures().join("screens/sku_sheet_text_two_dims.xml"))
        .expect("fixture");
    // Where the label sits in its button.
    let d = DumpIndex::parse(&sheet).expect("dump");
    let (i, label) = d
        .nodes
        .iter()
        .enumerate()
        .find(|(_, n)| n.text.starts_with("提交订单"))
        .expect("提交订单 label");
    let button = d.nodes[d.clickable_ancestor(i).expect("its button")].bounds;
    assert!(
        button.l < label.bounds.l,
        "the button is wider than its label"
    );
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(dir.path().join("sheet.xml"), &sheet).expect("w");
    std::fs::write(
        dir.path().join("done.xml"),
        page("支付成功", "查看订单", "完成"),
    )
    .expect("w");
    std::fs::write(
        dir.path().join("scenario.json"),
        r#"{"version": 1, "start": "sheet",
            "screens": {
              "sheet": {"dump": "sheet.xml", "on": [
                {"tap": {"text_prefix": "提交订单"}, "to": "done",
                 "order": {"goods_id": "811223344510", "total_cent": 4720, "quantity": 2, "options": ["蓝色", "M"]}}]},
              "done": {"dump": "done.xml"}}}"#,
    )
    .expect("w");
    let p = start(SimConfig::replay(Scenario::load(dir.path()).expect("load")));
    let served = p.run_shell("uiautomator dump /dev/tty").stdout;
    assert!(served.starts_with(sheet.as_bytes()), "byte-for-byte");
    // In the button, left of the label.
    sh(
        &p,
        &format!("input tap {} {}", button.l + 2, (button.t + button.b) / 2),
    );
    assert_eq!(screen(&p), "done");
    let o = &p.orders()[0];
    assert_eq!(
        (o.total_cent, o.quantity, o.unit_price_cent),
        (4720, 2, 2360)
    );
}

/// `xml` with MIUI's gesture-bar window (`com.miui.home`, `[0,2328][1080,2400]`) listed
/// FIRST, before PDD's: real multi-window dumps come in that order too (uiautomator's
/// roots are in no defined order).
fn gesture_bar_first(xml: &str) -> String {
    const BAR: &str = "  <node index=\"0\" text=\"\" resource-id=\"\" class=\"android.widget.FrameLayout\" package=\"com.miui.home\" content-desc=\"\" checkable=\"false\" checked=\"false\" clickable=\"false\" enabled=\"true\" focusable=\"false\" focused=\"false\" scrollable=\"false\" long-clickable=\"false\" password=\"false\" selected=\"false\" visible-to-user=\"true\" bounds=\"[0,2328][1080,2400]\" drawing-order=\"0\" hint=\"\" display-id=\"0\" />\n";
    let open = "<hierarchy rotation=\"0\">\n";
    let at = xml.find(open).expect("a pretty dump") + open.len();
    format!("{}{BAR}{}", &xml[..at], &xml[at..])
}

/// A recorded screen whose first top-level window is the gesture bar, not PDD's: PDD's
/// window is still the app's — its activity has the focus, the window
/// stack puts PDD (not the launcher) under the point, and a tap on its button reaches
/// the player (and PDD's window); a screen with no PDD window at all leaves the launcher
/// in front as before.
#[test]
fn a_dump_listing_the_gesture_bar_first_is_still_pdds_screen() {
    let dir = tempfile::tempdir().expect("tmp");
    let sheet = gesture_bar_first(&page("选择规格", "确定", "黑色"));
    assert!(sheet.find("com.miui.home") < sheet.find(PDD));
    std::fs::write(dir.path().join("sheet.xml"), &sheet).expect("w");
    std::fs::write(
        dir.path().join("done.xml"),
        gesture_bar_first(&page("确认订单", "提交订单 ¥69", "实付")),
    )
    .expect("w");
    std::fs::write(dir.path().join("home.xml"), launcher()).expect("w");
    std::fs::write(
        dir.path().join("scenario.json"),
        r#"{"version": 1, "start": "sheet",
            "screens": {
              "sheet": {"dump": "sheet.xml", "on": [{"tap": {"text": "确定"}, "to": "done"}]},
              "done": {"dump": "done.xml", "on": [{"key": 3, "to": "home"}]},
              "home": {"dump": "home.xml"}}}"#,
    )
    .expect("w");
    let p = start(SimConfig::replay(Scenario::load(dir.path()).expect("load")));
    let disp = sh(&p, "dumpsys window displays");
    assert!(
        disp.contains("mCurrentFocus=Window{")
            && disp
                .contains("com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.activity.NewPageActivity"),
        "{disp}"
    );
    let w = sh(&p, "dumpsys window windows");
    let pdd = w
        .find("package=com.xunmeng.pinduoduo")
        .expect("PDD's window");
    let launcher_visible = w
        .split("  Window #")
        .find(|b| b.contains("Launcher"))
        .is_some_and(|b| b.contains("isVisible=true"));
    assert!(!launcher_visible, "the launcher is not in front:\n{w}");
    assert!(w[pdd..].contains("isVisible=true"), "{w}");
    // The served dump is the recording, byte for byte, gesture bar first.
    assert!(p
        .run_shell("uiautomator dump /dev/tty")
        .stdout
        .starts_with(sheet.as_bytes()));
    sh(&p, "input tap 840 2275");
    assert_eq!(screen(&p), "done");
    let tap = p.taps().last().cloned().expect("a tap");
    assert_eq!(tap.package.as_deref(), Some(PDD), "{tap:?}");
    assert!(p.foreign_taps().is_empty(), "{:?}", p.foreign_taps());
    // No PDD window at all (the launcher's dump): the launcher is in front.
    sh(&p, "input keyevent 3");
    assert_eq!(screen(&p), "home");
    let disp = sh(&p, "dumpsys window displays");
    assert!(disp.contains("Launcher"), "{disp}");
}

#[test]
fn the_chooser_and_simulated_time_work_as_in_catalog_mode() {
    use cmautobuy_sim_phone::system::screens::chooser_rects;
    let (_d, p) = replay_phone();
    // Dumps cost simulated time (the profile decides whether it is slept), transitions
    // owe their animation to the next observation.
    let t0 = p.counters().device_time_ms;
    sh(&p, "uiautomator dump /dev/tty");
    let t1 = p.counters().device_time_ms;
    assert!(
        t1 - t0 >= 800,
        "a dump takes 0.8-1.5 s of device time: {}",
        t1 - t0
    );
    sh(
        &p,
        "am start -a android.intent.action.VIEW -d x://goods_id=123",
    );
    let t2 = p.counters().device_time_ms;
    sh(&p, "uiautomator dump /dev/tty");
    assert!(
        p.counters().device_time_ms - t2 >= 800 + 300,
        "plus the transition"
    );
    assert_eq!(screen(&p), "s01");

    // A second browser: an https link without -p raises the chooser, which the
    // recording never sees (its dump shows the recorded bars under the phone's own
    // chooser); choosing PDD once hands the link to the scenario.
    p.set_second_browser(true);
    let n = p.replay_log().len();
    sh(
        &p,
        "am start -a android.intent.action.VIEW -d https://mobile.yangkeduo.com/orders.html",
    );
    let d = sh(&p, "uiautomator dump /dev/tty");
    assert!(d.contains("package=\"android\""), "the chooser: {d}");
    assert!(
        !d.contains("商品详情"),
        "the recording is not in front: {d}"
    );
    assert!(
        d.contains("com.android.systemui"),
        "the recorded status bar: {d}"
    );
    assert_eq!(
        p.replay_log().len(),
        n,
        "the chooser's dump is not the scenario's"
    );
    let (pdd, _browser, once, _always) = chooser_rects(1080, 2400);
    let (x, y) = pdd.center();
    sh(&p, &format!("input tap {x} {y}"));
    assert_eq!(screen(&p), "s01");
    let (x, y) = once.center();
    sh(&p, &format!("input tap {x} {y}"));
    assert_eq!(screen(&p), "s05", "s01's own orders.html link");
    let e = last(&p);
    assert_eq!(
        (e.action.as_str(), e.url.as_deref()),
        ("open_url", Some("https://mobile.yangkeduo.com/orders.html"))
    );
}
