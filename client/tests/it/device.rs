//! Device acceptance tests: [`AdbDevice`] against the simulated phone, through Debian's
//! real `adb` server (a private one per test, on a free port — never 5037, never the
//! emulator ports 5555–5585 — killed on drop) and directly over TCP.
//!
//! A missing `adb` binary fails these tests loudly; nothing is skipped. Nothing sleeps
//! for luck: deadlines are tested with a command the phone holds until it is released,
//! and the assertions are on the error kind, never on elapsed time.

use std::io::Read;
use std::net::{SocketAddrV4, TcpListener};
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use cmautobuy_client::device::adb::{default_adb_server, MAX_ABANDONED};
use cmautobuy_client::device::{
    doctor, AdbDevice, AdbOptions, Deadlines, Device, DeviceAddress, DeviceError, DumpMode, Op,
};
use cmautobuy_client::screen::{classify, DumpError, Screen, ScreenKind, Tree};
use cmautobuy_sim_phone::testing::{adb_bin, free_port, run_with_deadline, AdbServer};
use cmautobuy_sim_phone::{
    Catalog, Counters, DumpFault, Page, SimConfig, SimPhone, SimPhoneHandle,
};

// ---------------------------------------------------------------------------------------
// harness

const GOODS: &str = "737116531267";

fn phone() -> SimPhoneHandle {
    let catalog = Catalog::load(&Catalog::bundled_dir()).expect("bundled catalog loads");
    let mut cfg = SimConfig::new(catalog);
    cfg.seed = 7;
    SimPhone::bind("127.0.0.1:0".parse().expect("addr"), cfg).expect("phone starts")
}

/// One key for every direct connection of this test binary, made by `adb keygen`:
/// RSA generation in an unoptimized build takes half a minute (the client's own
/// generation is covered by a unit test). Kept in Cargo's per-target temp dir.
fn key_path() -> PathBuf {
    static KEY: OnceLock<PathBuf> = OnceLock::new();
    KEY.get_or_init(|| {
        let p = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("device-tests-adbkey");
        if !p.is_file() {
            let mut c = Command::new(adb_bin());
            c.arg("keygen").arg(&p);
            let o = run_with_deadline(c, Duration::from_secs(60));
            assert!(
                o.status.success() && p.is_file(),
                "adb keygen failed: {o:?}"
            );
        }
        p
    })
    .clone()
}

fn options() -> AdbOptions {
    AdbOptions::new(key_path())
}

/// A device through the private server; the serial `127.0.0.1:PORT` makes it `adb
/// connect` the phone itself.
fn via_server(phone: &SimPhoneHandle, adb: &AdbServer, opts: AdbOptions) -> AdbDevice {
    let addr = DeviceAddress::parse(&phone.serial(), adb.addr()).expect("address");
    AdbDevice::open(addr, opts).expect("device")
}

fn direct(phone: &SimPhoneHandle, opts: AdbOptions) -> AdbDevice {
    let addr = DeviceAddress::parse(&format!("tcp:{}", phone.addr()), default_adb_server(None))
        .expect("address");
    AdbDevice::open(addr, opts).expect("device")
}

fn goods_url(id: &str) -> String {
    format!("pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id={id}")
}

/// Poll `cond` (bounded) — for things that happen on another thread.
fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(30);
    while !cond() {
        assert!(Instant::now() < end, "never happened: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn delta(before: &Counters, after: &Counters) -> (u64, u64, u64) {
    (
        after.shell_commands - before.shell_commands,
        after.am_starts - before.am_starts,
        after.taps - before.taps,
    )
}

// ---------------------------------------------------------------------------------------
// the story both transports must tell

/// Dump, open a goods page, tap the buy button, go back, swipe, screenshot, exit codes.
fn story(dev: &AdbDevice, phone: &SimPhoneHandle) {
    let home = dev.dump_ui().expect("dump of the home page");
    assert!(home.xml.contains("<hierarchy"));
    assert!(home.tree.len() > 3, "the PDD window was kept");

    dev.open_url(&goods_url(GOODS)).expect("open goods");
    assert_eq!(phone.current_page(), "goods");

    let dump = dev.dump_ui().expect("dump goods");
    let screen = classify(&dump.tree);
    assert_eq!(screen.kind(), ScreenKind::GoodsDetail, "{screen:?}");
    let Screen::GoodsDetail(g) = screen else {
        unreachable!("kind checked above")
    };
    assert!(!g.buy_buttons.is_empty());

    // Tap an element by its node (the label's clickable ancestor takes the tap).
    let label = dump
        .tree
        .nodes()
        .find(|n| n.text() == "发起拼单")
        .expect("buy label");
    let before = phone.counters();
    dev.tap_node(label).expect("tap buy");
    assert_eq!(phone.counters().taps, before.taps + 1);
    assert_eq!(phone.current_page(), "sku_sheet");

    let sheet = dev.dump_ui().expect("dump sheet");
    assert_eq!(classify(&sheet.tree).kind(), ScreenKind::SkuSheet);

    dev.back().expect("back");
    assert_eq!(phone.current_page(), "goods");

    // A recognizer's target works the same way.
    dev.tap_target(&g.buy_buttons[0].target)
        .expect("tap target");
    assert_eq!(phone.current_page(), "sku_sheet");
    dev.back().expect("back");

    let swipes = phone.counters().swipes;
    dev.swipe(
        cmautobuy_client::screen::Point { x: 540, y: 1800 },
        cmautobuy_client::screen::Point { x: 540, y: 600 },
        Duration::from_millis(200),
    )
    .expect("swipe");
    assert_eq!(phone.counters().swipes, swipes + 1);

    let png = dev.screenshot().expect("screenshot");
    assert_eq!((png.width, png.height), (1080, 2400));
    let img = image::load_from_memory_with_format(&png.bytes, image::ImageFormat::Png)
        .expect("a PNG that decodes");
    assert_eq!((img.width(), img.height()), (1080, 2400));

    // Exit codes, recovered on a transport that loses them.
    assert_eq!(dev.shell(&["false"]).expect("false").exit_code, 1);
    assert_eq!(dev.shell(&["true"]).expect("true").exit_code, 0);
    let missing = dev.shell(&["no-such-tool", "x"]).expect("runs");
    assert_eq!(missing.exit_code, 127);
    assert!(
        missing.stderr_text().contains("not found") || missing.stdout_text().contains("not found"),
        "{missing:?}"
    );
    let echo = dev.shell(&["echo", "-n", "no newline"]).expect("echo");
    assert_eq!(
        (echo.stdout_text().as_str(), echo.exit_code),
        ("no newline", 0)
    );
    let size = dev.shell(&["wm", "size"]).expect("wm");
    assert_eq!(size.stdout_text(), "Physical size: 1080x2400\n");
}

#[test]
fn story_through_the_real_adb_server() {
    let phone = phone();
    let adb = AdbServer::start();
    let dev = via_server(&phone, &adb, options());
    story(&dev, &phone);
    // The server's stderr channel (shell v2) keeps stderr apart.
    let out = dev.shell(&["cat", "/nope"]).expect("cat");
    assert_eq!(out.exit_code, 1);
    assert!(out.stdout.is_empty());
    assert_eq!(out.stderr_text(), "cat: /nope: No such file or directory\n");
}

#[test]
fn story_directly_over_tcp() {
    let phone = phone();
    let dev = direct(&phone, options());
    story(&dev, &phone);
}

#[test]
fn the_story_also_works_through_a_device_trait_object_on_a_blocking_pool() {
    // Flows hold `Arc<dyn Device>` and call it from tokio's blocking pool.
    let phone = phone();
    let dev: Arc<dyn Device> = Arc::new(direct(&phone, options()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let url = goods_url(GOODS);
    rt.block_on(async {
        let d = dev.clone();
        tokio::task::spawn_blocking(move || d.open_url(&url))
            .await
            .expect("join")
            .expect("open");
    });
    assert_eq!(phone.current_page(), "goods");
}

// ---------------------------------------------------------------------------------------
// injection: hostile arguments are one word each and run nothing

const HOSTILE: &[&str] = &[
    "a;b",
    "; input tap 1 1",
    "$(input tap 1 1)",
    "`input tap 1 1`",
    "it's \"quoted\"",
    "'; input tap 1 1; echo '",
    "line one\ninput tap 1 1",
    "  spaces  and\ttabs ",
    "&& input tap 1 1 || input tap 2 2",
    "| input tap 1 1",
    "> /sdcard/owned",
    "\\'; input tap 1 1 #",
    "$? $HOME ${x} \\ * ? [a]",
    "# not a comment",
    "中文 ¥12.56",
    "",
];

fn injection(dev: &AdbDevice, phone: &SimPhoneHandle) {
    for word in HOSTILE {
        let before = phone.counters();
        let out = dev.shell(&["echo", word]).expect("echo runs");
        assert_eq!(out.exit_code, 0, "{word:?}");
        assert_eq!(out.stdout_text(), format!("{word}\n"), "arrived intact");
        // One `echo` plus our own exit-status echo, nothing else; no tap.
        assert_eq!(delta(&before, &phone.counters()), (2, 0, 0), "{word:?}");
    }
    assert!(phone
        .with_device(|d| d.read_file("/sdcard/owned"))
        .is_none());

    // A goods URL with every metacharacter *before* goods_id: had the shell split it, the
    // app would get a URL without goods_id and show "not found".
    let evil = format!(
        "pinduoduo://com.xunmeng.pinduoduo/goods.html?x=a;input%20tap%201%201;b$(input tap 1 1)`input tap 1 1`'\"\n&goods_id={GOODS}"
    );
    let before = phone.counters();
    dev.open_url(&evil).expect("opens");
    assert_eq!(delta(&before, &phone.counters()), (2, 1, 0));
    assert_eq!(phone.current_page(), "goods");
    assert!(
        matches!(phone.page(), Some(Page::Goods { goods_id, .. }) if goods_id == GOODS),
        "{:?}",
        phone.page()
    );
    // And `am` saw exactly that URL as its -d argument.
    let out = dev
        .shell(&[
            "am",
            "start",
            "-a",
            "android.intent.action.VIEW",
            "-d",
            &evil,
        ])
        .expect("am");
    assert!(
        out.stdout_text().contains(&format!("dat={evil} }}")),
        "{}",
        out.stdout_text()
    );

    // A URL that the app cannot handle fails as a command, still running nothing else.
    let before = phone.counters();
    let e = dev
        .open_url("https://example.com/; input tap 1 1")
        .expect_err("unresolvable");
    assert!(matches!(e, DeviceError::CommandFailed { .. }), "{e}");
    assert_eq!(delta(&before, &phone.counters()), (2, 1, 0));

    // NUL cannot be carried by a shell word: refused before anything is sent.
    let before = phone.counters();
    assert!(matches!(
        dev.shell(&["echo", "a\0b"]),
        Err(DeviceError::InvalidArgument(_))
    ));
    assert_eq!(phone.counters().shell_commands, before.shell_commands);
}

#[test]
fn injection_runs_nothing_through_the_adb_server() {
    let phone = phone();
    let adb = AdbServer::start();
    let dev = via_server(&phone, &adb, options());
    injection(&dev, &phone);
}

#[test]
fn injection_runs_nothing_over_direct_tcp() {
    let phone = phone();
    let dev = direct(&phone, options());
    injection(&dev, &phone);
}

// ---------------------------------------------------------------------------------------
// deadlines: a command the phone holds until released

fn deadline_fires(dev: &AdbDevice, phone: &SimPhoneHandle) {
    // A working connection first, so the dump's deadline is the dump's alone.
    assert_eq!(dev.shell(&["true"]).expect("warm up").exit_code, 0);
    let gate = phone.hang_commands("uiautomator dump");
    let e = dev.dump_ui().expect_err("the dump hangs");
    assert!(
        matches!(e, DeviceError::DeadlineExceeded { op: Op::Dump, .. }),
        "{e:?}"
    );
    assert!(e.is_retryable());
    assert_eq!(e.code(), "DEVICE_DEADLINE_EXCEEDED");
    assert_eq!(e.failure_code(), "DEVICE_OFFLINE");
    // The command really is pending on the phone (not lost on the way).
    eventually("the dump reaches the phone", || gate.hits() == 1);

    // Meanwhile the device is usable again on a fresh connection.
    let before = phone.counters();
    dev.tap(cmautobuy_client::screen::Point { x: 540, y: 1200 })
        .expect("tap on a fresh connection");
    assert_eq!(phone.counters().taps, before.taps + 1);

    // Releasing lets the abandoned worker finish and end.
    gate.release();
    eventually("the abandoned worker ends", || dev.live_workers() == 1);
    // Dumps work again (through `shell`, whose deadline is not the tight test one).
    let out = dev
        .shell(&["uiautomator", "dump", "/dev/tty"])
        .expect("dumps again");
    assert!(Tree::parse_bytes(&out.stdout).expect("tree").len() > 3);
}

fn short_dump_deadline() -> AdbOptions {
    let mut o = options();
    o.deadlines.dump = Duration::from_millis(300);
    o
}

#[test]
fn deadline_fires_on_a_hung_dump_through_the_adb_server() {
    let phone = phone();
    let adb = AdbServer::start();
    let dev = via_server(&phone, &adb, short_dump_deadline());
    deadline_fires(&dev, &phone);
}

#[test]
fn deadline_fires_on_a_hung_dump_over_direct_tcp() {
    let phone = phone();
    let dev = direct(&phone, short_dump_deadline());
    deadline_fires(&dev, &phone);
}

#[test]
fn hung_calls_do_not_keep_threads_while_the_phone_still_holds_them() {
    let phone = phone();
    let dev = direct(&phone, short_dump_deadline());
    assert!(dev.shell(&["true"]).is_ok());
    let gate = phone.hang_commands("uiautomator dump");
    for i in 0..=MAX_ABANDONED {
        let e = dev.dump_ui().expect_err("hangs");
        assert!(
            matches!(e, DeviceError::DeadlineExceeded { op: Op::Dump, .. }),
            "{e}"
        );
        eventually("the call is held by the phone", || {
            gate.hits() == i as u64 + 1
        });
        // The relay cut the abandoned connection: its thread ended although the phone
        // has not answered (and will not until released).
        eventually("the abandoned worker ends", || dev.live_workers() == 0);
    }
    assert_eq!(gate.hits(), MAX_ABANDONED as u64 + 1);
    gate.release();
    assert_eq!(dev.shell(&["true"]).expect("works again").exit_code, 0);
}

// ---------------------------------------------------------------------------------------
// dump failures: typed and retryable even with exit status 0

fn dump_failures(dev: &AdbDevice, phone: &SimPhoneHandle) {
    phone.fail_next_dump(DumpFault::IdleState);
    let e = dev.dump_ui().expect_err("idle state");
    assert!(
        matches!(e, DeviceError::Dump(DumpError::IdleState)),
        "{e:?}"
    );
    assert!(e.is_retryable());
    assert_eq!(e.failure_code(), "UI_DUMP_FAILED");

    phone.fail_next_dump(DumpFault::NullRoot);
    let e = dev.dump_ui().expect_err("null root");
    assert!(matches!(e, DeviceError::Dump(DumpError::NullRoot)), "{e:?}");
    assert!(e.is_retryable());

    // The exit status really was 0 for these (checked on the same phone).
    phone.fail_next_dump(DumpFault::IdleState);
    let raw = dev
        .shell(&["uiautomator", "dump", "/dev/tty"])
        .expect("raw");
    assert_eq!(raw.exit_code, 0);

    assert!(dev.dump_ui().is_ok(), "the next dump is fine");
}

#[test]
fn dump_failures_are_typed_through_the_adb_server() {
    let phone = phone();
    let adb = AdbServer::start();
    let dev = via_server(&phone, &adb, options());
    dump_failures(&dev, &phone);
}

#[test]
fn dump_failures_are_typed_over_direct_tcp() {
    let phone = phone();
    let dev = direct(&phone, options());
    dump_failures(&dev, &phone);
}

#[test]
fn file_mode_never_reads_a_stale_dump() {
    const PATH: &str = "/sdcard/window_dump.xml";
    let phone = phone();
    let mut o = options();
    o.dump_mode = DumpMode::File(PATH.into());
    let dev = direct(&phone, o);

    let home = dev.dump_ui().expect("file dump");
    assert!(home.xml.contains("<hierarchy"));
    assert!(phone.with_device(|d| d.read_file(PATH)).is_some());

    dev.open_url(&goods_url(GOODS)).expect("open");
    // uiautomator claims success but writes nothing: the old file would be the home page.
    phone.fail_next_dump(DumpFault::Stale);
    let e = dev.dump_ui().expect_err("stale");
    assert!(
        matches!(&e, DeviceError::DumpFileMissing { path } if path == PATH),
        "{e:?}"
    );
    assert!(e.is_retryable());
    assert_eq!(e.failure_code(), "UI_DUMP_FAILED");

    // Null root after a good dump left a file behind: still an error, not the old file.
    assert!(dev.dump_ui().is_ok());
    phone.fail_next_dump(DumpFault::NullRoot);
    let e = dev.dump_ui().expect_err("null root");
    assert!(matches!(e, DeviceError::Dump(DumpError::NullRoot)), "{e:?}");

    let fresh = dev.dump_ui().expect("fresh");
    assert_eq!(classify(&fresh.tree).kind(), ScreenKind::GoodsDetail);
}

// ---------------------------------------------------------------------------------------
// states and doctor

#[test]
fn unknown_serials_unreachable_servers_and_offline_phones_are_typed() {
    let adb = AdbServer::start();
    let dev = AdbDevice::open(
        DeviceAddress::parse("NOSUCHSERIAL", adb.addr()).expect("addr"),
        options(),
    )
    .expect("device");
    let e = dev.shell(&["true"]).expect_err("not found");
    assert!(matches!(e, DeviceError::NotFound { .. }), "{e:?}");
    assert_eq!(e.failure_code(), "DEVICE_OFFLINE");
    assert_eq!(dev.state().expect("listing"), "not found");

    // Nothing listens on this port: no adb server gets started implicitly either.
    let port = free_port();
    let nowhere = default_adb_server(Some(&port.to_string()));
    let dev = AdbDevice::open(
        DeviceAddress::parse("SERIAL", nowhere).expect("addr"),
        options(),
    )
    .expect("device");
    let e = dev.shell(&["true"]).expect_err("no server");
    assert!(
        matches!(e, DeviceError::AdbServerUnavailable { .. }),
        "{e:?}"
    );
    assert!(
        std::net::TcpStream::connect(nowhere).is_err(),
        "no server was started on {nowhere}"
    );

    let phone = phone();
    let dev = direct(&phone, options());
    assert_eq!(dev.shell(&["true"]).expect("online").exit_code, 0);
    phone.set_offline(true);
    let e = dev.shell(&["true"]).expect_err("offline");
    assert!(e.is_retryable(), "{e:?}");
    assert_eq!(e.failure_code(), "DEVICE_OFFLINE");
    phone.set_offline(false);
    assert_eq!(dev.shell(&["true"]).expect("reconnects").exit_code, 0);
}

fn check_ready(r: &doctor::DoctorReport) {
    assert!(r.ready, "{}", r.render_text());
    assert_eq!(r.state, "device");
    assert_eq!(r.authorized, Some(true));
    assert_eq!(r.model.as_deref(), Some("SimPhone_PDD"));
    assert_eq!((r.screen_width, r.screen_height), (Some(1080), Some(2400)));
    assert_eq!(r.pdd_installed, Some(true));
    assert_eq!(r.pdd_version.as_deref(), Some("7.36.0"), "dumpsys package");
    assert_eq!(r.pdd_in_foreground, Some(true));
    assert!(r
        .foreground
        .as_deref()
        .is_some_and(|f| f.starts_with("com.xunmeng.pinduoduo/")));
    assert_eq!(r.input_injection, Some(true));
    assert!(r.problems.is_empty());
    let text = r.render_text();
    assert!(text.contains("ready:        yes"), "{text}");
    assert_eq!(r.to_json()["ready"], serde_json::json!(true));
}

#[test]
fn doctor_through_the_server_and_directly() {
    let phone = phone();
    let adb = AdbServer::start();
    check_ready(&doctor::check(&via_server(&phone, &adb, options())));
    check_ready(&doctor::check(&direct(&phone, options())));

    let missing = AdbDevice::open(
        DeviceAddress::parse("NOSUCHSERIAL", adb.addr()).expect("addr"),
        options(),
    )
    .expect("device");
    let r = doctor::check(&missing);
    assert!(!r.ready);
    assert_eq!(r.state, "not found");
    assert_eq!(r.problems[0].code, "DEVICE_NOT_FOUND");
}

/// MIUI's "USB调试（安全设置）" trap: doctor tries one harmless key event and says what
/// to turn on.
#[test]
fn doctor_finds_a_phone_that_refuses_injected_input() {
    let phone = phone();
    phone.set_input_injection_denied(true);
    let r = doctor::check(&direct(&phone, options()));
    assert!(!r.ready, "{}", r.render_text());
    assert_eq!(r.input_injection, Some(false));
    assert_eq!(r.problems.len(), 1, "{:?}", r.problems);
    assert_eq!(r.problems[0].code, "INPUT_INJECTION_DENIED");
    assert!(r.problems[0].message.contains("USB调试（安全设置）"));
    assert!(r.render_text().contains("input:        REFUSED"));
    phone.set_input_injection_denied(false);
    check_ready(&doctor::check(&direct(&phone, options())));
}

/// The claim loop's cheap check — ready on an online phone, the offline
/// error's code on an offline one, ready again when it comes back.
#[test]
fn the_claim_loops_probe_follows_the_phone() {
    let phone = phone();
    let dev = direct(&phone, options());
    assert_eq!(doctor::probe(&dev), Ok(()));
    phone.set_offline(true);
    let p = doctor::probe(&dev).expect_err("offline");
    assert!(
        ["DEVICE_OFFLINE", "DEVICE_IO_ERROR", "DEVICE_PROTOCOL_ERROR"].contains(&p.code.as_str()),
        "{p:?}"
    );
    phone.set_offline(false);
    assert_eq!(doctor::probe(&dev), Ok(()));
}

#[test]
fn doctor_command_line() {
    let phone = phone();
    let adb = AdbServer::start();
    let data = tempfile::tempdir().expect("tmp");
    let run = |device: &str| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
        c.arg("--data-dir")
            .arg(data.path())
            .args(["doctor", "--device", device, "--adb-server"])
            .arg(adb.addr().to_string())
            .arg("--adb-key")
            .arg(key_path())
            .arg("--json")
            .env_remove("CMAUTOBUY_CONFIG")
            .env_remove("CMAUTOBUY_DEVICE");
        run_with_deadline(c, Duration::from_secs(120))
    };
    // Every check but the Admin's passes: no Admin is configured here (exit 6; the
    // passing run against the mock Admin is `doctor_cli.rs`).
    let check = |v: &serde_json::Value, name: &str| -> serde_json::Value {
        v["checks"]
            .as_array()
            .and_then(|a| a.iter().find(|c| c["name"] == name).cloned())
            .unwrap_or_else(|| panic!("no {name} check: {v}"))
    };
    let failed = |v: &serde_json::Value| -> Vec<String> {
        v["checks"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|c| c["ok"] != true)
                    .map(|c| c["name"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    };
    let ok = run(&phone.serial());
    assert_eq!(ok.status.code(), Some(6), "{ok:?}");
    let v: serde_json::Value = serde_json::from_slice(&ok.stdout).expect("json");
    assert_eq!(failed(&v), ["admin"], "{v}");
    assert_eq!(check(&v, "admin")["detail"], "not configured");
    assert_eq!(v["device"]["ready"], serde_json::json!(true));
    assert_eq!(v["device"]["screen_width"], serde_json::json!(1080));
    // Through the adb server: its version (`host:version`) and its listing.
    let server = check(&v, "adb_server");
    assert!(
        server["detail"]
            .as_str()
            .is_some_and(|d| d.contains("adb server version")),
        "{server}"
    );
    let listed = check(&v, "adb_devices");
    assert!(
        listed["detail"]
            .as_str()
            .is_some_and(|d| d.contains(&format!("{} (device)", phone.serial()))),
        "{listed}"
    );

    let direct = run(&format!("tcp:{}", phone.addr()));
    let v: serde_json::Value = serde_json::from_slice(&direct.stdout).expect("json");
    assert_eq!(failed(&v), ["admin"], "{direct:?}");

    let bad = run("NOSUCHSERIAL");
    assert_eq!(bad.status.code(), Some(6), "{bad:?}");
    let v: serde_json::Value = serde_json::from_slice(&bad.stdout).expect("json");
    assert_eq!(v["ready"], serde_json::json!(false));
    assert_eq!(v["device"]["ready"], serde_json::json!(false));
    let d = check(&v, "device");
    assert_eq!(d["ok"], false);
    assert!(
        d["fix"]
            .as_str()
            .is_some_and(|f| f.contains("`adb devices` lists it")),
        "{d}"
    );
}

#[test]
fn a_phone_that_drops_off_the_adb_server_comes_back() {
    let phone = phone();
    let adb = AdbServer::start();
    let dev = via_server(&phone, &adb, options());
    assert_eq!(dev.shell(&["true"]).expect("online").exit_code, 0);
    phone.set_offline(true);
    let e = dev.shell(&["true"]).expect_err("offline");
    assert!(e.is_retryable(), "{e:?}");
    assert_eq!(e.failure_code(), "DEVICE_OFFLINE", "{e:?}");
    phone.set_offline(false);
    // The server reconnects on its own schedule (≈10 s); every try is bounded.
    let end = Instant::now() + Duration::from_secs(60);
    loop {
        match dev.shell(&["true"]) {
            Ok(o) => {
                assert_eq!(o.exit_code, 0);
                break;
            }
            Err(e) => {
                assert!(e.is_retryable(), "{e:?}");
                assert!(Instant::now() < end, "never came back: {e:?}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
}

/// Accepts connections and never answers: an adb server that hangs.
fn silent_server() -> (SocketAddrV4, std::thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = match l.local_addr().expect("addr") {
        std::net::SocketAddr::V4(a) => a,
        other => panic!("not v4: {other}"),
    };
    let t = std::thread::spawn(move || {
        let mut held = Vec::new();
        for c in l.incoming() {
            match c {
                // Enough for one test; the thread ends with the test process.
                Ok(s) if held.len() > 64 => {
                    drop(s);
                    return;
                }
                Ok(s) => held.push(s),
                Err(_) => return,
            }
        }
    });
    (addr, t)
}

#[test]
fn a_hung_adb_server_hits_deadlines_and_threads_are_capped() {
    let (server, _t) = silent_server();
    let mut o = options();
    o.deadlines = Deadlines::all(Duration::from_millis(200));
    let dev =
        AdbDevice::open(DeviceAddress::parse("SERIAL", server).expect("addr"), o).expect("device");
    // The listing request hangs inside the worker: each call gives up at its deadline,
    // and its thread stays blocked (nothing to cut on a host request).
    for _ in 0..MAX_ABANDONED {
        let e = dev.shell(&["true"]).expect_err("hangs");
        assert!(
            matches!(
                e,
                DeviceError::DeadlineExceeded {
                    op: Op::Connect,
                    ..
                }
            ),
            "{e:?}"
        );
    }
    assert_eq!(dev.live_workers(), MAX_ABANDONED);
    let e = dev.shell(&["true"]).expect_err("capped");
    assert!(matches!(e, DeviceError::Offline { .. }), "{e:?}");
    assert_eq!(
        dev.live_workers(),
        MAX_ABANDONED,
        "no new thread was started"
    );

    let e = dev.state().expect_err("state hangs too");
    assert!(
        matches!(e, DeviceError::DeadlineExceeded { op: Op::State, .. }),
        "{e:?}"
    );
    let r = doctor::check(&dev);
    assert!(!r.ready);
    assert_eq!(r.problems[0].code, "DEVICE_DEADLINE_EXCEEDED");
}

/// A phone whose owner never accepts this computer: it answers CNXN with an AUTH
/// token, every signature with another token, and a public key with silence.
fn phone_that_never_authorizes() -> SocketAddrV4 {
    const CNXN: u32 = 0x4e58_4e43;
    const AUTH: u32 = 0x4854_5541;
    fn send(s: &mut std::net::TcpStream, cmd: u32, a0: u32, a1: u32, data: &[u8]) -> bool {
        use std::io::Write;
        let sum: u32 = data.iter().map(|&b| u32::from(b)).sum();
        let mut m = Vec::new();
        for w in [cmd, a0, a1, data.len() as u32, sum, cmd ^ 0xffff_ffff] {
            m.extend_from_slice(&w.to_le_bytes());
        }
        m.extend_from_slice(data);
        s.write_all(&m).is_ok()
    }
    fn serve(mut s: std::net::TcpStream) {
        let mut hdr = [0u8; 24];
        while s.read_exact(&mut hdr).is_ok() {
            let word = |i: usize| u32::from_le_bytes([hdr[i], hdr[i + 1], hdr[i + 2], hdr[i + 3]]);
            let mut data = vec![0u8; word(12) as usize];
            if s.read_exact(&mut data).is_err() {
                return;
            }
            // A signature we never accept gets a new token; the public key (arg0 3) would
            // show the prompt nobody answers: silence.
            let answer = word(0) == CNXN || (word(0) == AUTH && word(4) == 2);
            if answer && !send(&mut s, AUTH, 1, 0, &[7u8; 20]) {
                return;
            }
        }
    }
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = match l.local_addr().expect("addr") {
        std::net::SocketAddr::V4(a) => a,
        other => panic!("not v4: {other}"),
    };
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve(s));
        }
    });
    addr
}

#[test]
fn an_unauthorized_phone_is_reported_as_such_through_the_adb_server() {
    let fake = phone_that_never_authorizes();
    let adb = AdbServer::start();
    let dev = AdbDevice::open(
        DeviceAddress::parse(&fake.to_string(), adb.addr()).expect("addr"),
        options(),
    )
    .expect("device");
    // The server may show `authorizing` first; a bounded number of tries.
    let end = Instant::now() + Duration::from_secs(60);
    let e = loop {
        let e = dev.shell(&["true"]).expect_err("never authorized");
        if matches!(e, DeviceError::Unauthorized { .. }) || Instant::now() > end {
            break e;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(matches!(e, DeviceError::Unauthorized { .. }), "{e:?}");
    assert!(!e.is_retryable(), "a human has to accept the prompt");
    assert_eq!(e.failure_code(), "DEVICE_UNAUTHORIZED");

    let r = doctor::check(&dev);
    assert!(!r.ready);
    assert_eq!(r.state, "unauthorized");
    assert_eq!(r.authorized, Some(false));
    assert_eq!(r.problems[0].code, "DEVICE_UNAUTHORIZED");
}
