//! uiautomator2's server on the simulated phone: the real `u2.jar` (installed by
//! `scripts/test` into `.tools/uiautomator2/`, path in `CMAUTOBUY_U2_JAR`) pushed over ADB,
//! started with the command uiautomator2's `core.py` uses, and JSON-RPC over HTTP through
//! `tcp:PORT` streams — through Debian's adb server (smart sockets, and `adb_client`'s push,
//! shell and forward) — on the same app model as the shell's `input tap` and
//! `uiautomator dump`. Plus: a wrong jar refuses to start, each fault knob, the `animated`
//! pages, the latency model.
//!
//! Tests that need the real jar and do not find it fail under `CI=true` and print
//! NOT CHECKED otherwise. Nothing sleeps for luck: every wait is a bounded poll.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use cmautobuy_sim_phone::testing::AdbServer;
use cmautobuy_sim_phone::u2::jar::{U2_JAR_PATH, U2_JAR_SHA256};
use cmautobuy_sim_phone::ui::{Node, Rect, Screen};
use cmautobuy_sim_phone::{Catalog, Device, SimConfig, SimPhone, SimPhoneHandle};
use serde_json::{json, Value};

const START: &str = "CLASSPATH=/data/local/tmp/u2.jar app_process / com.wetest.uia2.Main -p 9008";
const GOODS: &str = "737116531267";

// ---------------------------------------------------------------------------------------
// helpers

/// The real u2.jar, or `None` (NOT CHECKED) outside CI when it is not installed.
fn real_jar(test: &str) -> Option<Vec<u8>> {
    cmautobuy_sim_phone::testing::u2_jar(test)
}

fn config() -> SimConfig {
    let mut c = SimConfig::new(Catalog::load(&Catalog::bundled_dir()).expect("catalog"));
    c.seed = 42;
    c.start_time = Some("2026-11-30T08:02:10Z".parse().expect("time"));
    c
}

fn start(cfg: SimConfig) -> SimPhoneHandle {
    SimPhone::bind("127.0.0.1:0".parse().expect("addr"), cfg).expect("phone starts")
}

/// Polls `f` until it holds; fails after `secs`.
fn wait_until(what: &str, secs: u64, f: impl FnMut() -> bool) {
    cmautobuy_sim_phone::testing::wait_until(what, Duration::from_secs(secs), f)
}

fn send_smart(s: &mut TcpStream, req: &str) -> Result<(), String> {
    s.write_all(format!("{:04x}{req}", req.len()).as_bytes())
        .map_err(|e| e.to_string())?;
    let mut status = [0u8; 4];
    s.read_exact(&mut status).map_err(|e| e.to_string())?;
    if &status == b"OKAY" {
        return Ok(());
    }
    let mut len = [0u8; 4];
    let _ = s.read_exact(&mut len);
    let n = usize::from_str_radix(std::str::from_utf8(&len).unwrap_or("0"), 16).unwrap_or(0);
    let mut msg = vec![0u8; n];
    let _ = s.read_exact(&mut msg);
    Err(format!(
        "{}: {}",
        String::from_utf8_lossy(&status),
        String::from_utf8_lossy(&msg)
    ))
}

/// A stream to `service` on the phone through the adb server's smart socket
/// (`host:transport:SERIAL`, then the service): what uiautomator2's adbutils does.
fn smart(adb: &AdbServer, serial: &str, service: &str) -> Result<TcpStream, String> {
    let mut s = TcpStream::connect(adb.addr()).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .map_err(|e| e.to_string())?;
    send_smart(&mut s, &format!("host:transport:{serial}"))?;
    send_smart(&mut s, service)?;
    Ok(s)
}

/// One HTTP answer: status line, headers (names lower-cased), body.
type Answer = (String, Vec<(String, String)>, Vec<u8>);

/// One HTTP answer; `Err` when the stream ends (or times out) before a whole answer
/// arrived, with what did.
fn read_answer(s: &mut TcpStream) -> Result<Answer, Vec<u8>> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_string();
            let mut lines = head.split("\r\n");
            let status = lines.next().unwrap_or("").to_string();
            let headers: Vec<(String, String)> = lines
                .filter_map(|l| l.split_once(':'))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
                .collect();
            let len: usize = headers
                .iter()
                .find(|(k, _)| k == "content-length")
                .and_then(|(_, v)| v.parse().ok())
                .unwrap_or(0);
            if buf.len() >= end + 4 + len {
                let body = buf[end + 4..end + 4 + len].to_vec();
                return Ok((status, headers, body));
            }
        }
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => return Err(buf),
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
}

fn post(s: &mut TcpStream, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}).to_string();
    write!(
        s,
        "POST /jsonrpc/0 HTTP/1.1\r\nHost: localhost:9008\r\nUser-Agent: uiautomator2\r\nAccept-Encoding: \r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write request");
    let (status, _, body) = read_answer(s).expect("an answer");
    assert_eq!(status, "HTTP/1.1 200 OK ", "NanoHTTPD's status line");
    serde_json::from_slice(&body).expect("JSON answer")
}

fn ping(s: &mut TcpStream) -> bool {
    if s.write_all(b"GET /ping HTTP/1.1\r\nHost: localhost:9008\r\n\r\n")
        .is_err()
    {
        return false;
    }
    matches!(read_answer(s), Ok((_, _, b)) if b == b"pong")
}

/// The server is ready when `/ping` answers `pong` (uiautomator2's readiness check).
fn wait_ready(adb: &AdbServer, serial: &str) -> TcpStream {
    let end = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(mut s) = smart(adb, serial, "tcp:9008") {
            if ping(&mut s) {
                return s;
            }
        }
        assert!(Instant::now() < end, "the server never answered /ping");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Read a v1 shell stream until `needle` appears; what was read.
fn read_until(s: &mut TcpStream, needle: &str) -> String {
    let mut out = Vec::new();
    let mut chunk = [0u8; 1024];
    while !String::from_utf8_lossy(&out).contains(needle) {
        match s.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&chunk[..n]),
        }
    }
    String::from_utf8_lossy(&out).to_string()
}

fn find_target(screen: &Screen, label: &str) -> Option<Rect> {
    fn go(n: &Node, label: &str, clickable_above: Option<Rect>) -> Option<Rect> {
        let here = if n.clickable {
            Some(n.bounds)
        } else {
            clickable_above
        };
        if n.text == label || n.desc == label {
            return here;
        }
        n.children.iter().find_map(|c| go(c, label, here))
    }
    screen.windows.iter().rev().find_map(|w| go(w, label, None))
}

fn target(phone: &SimPhoneHandle, label: &str) -> (i32, i32) {
    phone
        .with_device(|d| find_target(&d.app().screen(d.now()), label))
        .unwrap_or_else(|| panic!("no {label:?} on {}", phone.current_page()))
        .center()
}

fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let digits: Vec<u8> = s.bytes().filter_map(val).collect();
    let mut out = Vec::new();
    for c in digits.chunks(4) {
        let n = c
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, d)| acc | (u32::from(*d) << (18 - 6 * i)));
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..c.len().saturating_sub(1)]);
    }
    out
}

/// (width, height) of a JPEG, decoded by the image crate (a broken one fails here).
fn jpeg_size(j: &[u8]) -> (u16, u16) {
    assert!(
        j.starts_with(&[0xff, 0xd8]) && j.ends_with(&[0xff, 0xd9]),
        "not a JPEG"
    );
    let img = image::load_from_memory_with_format(j, image::ImageFormat::Jpeg)
        .expect("a JPEG the image crate decodes");
    (img.width() as u16, img.height() as u16)
}

/// A phone behind a private adb server with the real jar pushed by `adb_client`.
struct Rig {
    phone: SimPhoneHandle,
    adb: AdbServer,
    serial: String,
}

impl Rig {
    fn new(jar: &[u8]) -> Rig {
        use adb_client::server_device::ADBServerDevice;
        let phone = start(config());
        let adb = AdbServer::start();
        let serial = phone.serial();
        adb.connect(&serial);
        let mut dev = ADBServerDevice::new(serial.clone(), Some(adb.addr()));
        let mut data = jar;
        dev.push(&mut data, U2_JAR_PATH).expect("push u2.jar");
        Rig { phone, adb, serial }
    }

    fn shell(&self, line: &str) -> (String, String, i32) {
        let o = self.adb.shell(&self.serial, &[line]);
        (
            String::from_utf8_lossy(&o.stdout).to_string(),
            String::from_utf8_lossy(&o.stderr).to_string(),
            o.status.code().unwrap_or(-1),
        )
    }

    /// Start the server as `core.py` does (a `shell:` stream kept open); the stream and a
    /// ready `tcp:9008` stream.
    fn start_server(&self) -> (TcpStream, TcpStream) {
        let mut proc = smart(&self.adb, &self.serial, &format!("shell:{START}")).expect("start");
        let first = read_until(&mut proc, "Starting Server");
        assert!(
            first.contains("[server] INFO: [UiAutomator2Server] Starting Server"),
            "{first:?}"
        );
        let http = wait_ready(&self.adb, &self.serial);
        (proc, http)
    }
}

// ---------------------------------------------------------------------------------------
// the server through the adb server

#[test]
fn real_jar_pushed_started_and_driven_over_jsonrpc_through_the_adb_server() {
    let Some(jar) =
        real_jar("real_jar_pushed_started_and_driven_over_jsonrpc_through_the_adb_server")
    else {
        return;
    };
    let rig = Rig::new(&jar);
    let phone = &rig.phone;
    // The client's check before pushing again: the phone's copy by sha256.
    let (out, _, rc) = rig.shell(&format!("sha256sum {U2_JAR_PATH}"));
    assert_eq!(rc, 0);
    assert_eq!(out, format!("{U2_JAR_SHA256}  {U2_JAR_PATH}\n"));

    // Nothing listens before the server runs: the tcp: stream is refused.
    assert!(smart(&rig.adb, &rig.serial, "tcp:9008").is_err());
    let (proc, mut http) = rig.start_server();
    assert!(phone.u2_running());
    assert_eq!(phone.u2_listening_port(), Some(9008));
    assert_eq!(phone.counters().u2_starts, 1);

    // The dump is the model's screen in the server's format (CRLF lines).
    let r = post(&mut http, "dumpWindowHierarchy", json!([false, 50]));
    assert_eq!(r["jsonrpc"], "2.0");
    assert_eq!(r["id"], 1);
    let xml = r["result"].as_str().expect("xml string");
    assert_eq!(xml, phone.with_device(|d| d.u2_dump_xml()));
    assert!(xml.starts_with(
        "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?>\r\n<hierarchy rotation=\"0\">\r\n"
    ));
    assert!(xml.contains("visible-to-user=\"true\"") && xml.contains("display-id=\"0\""));
    assert_eq!(
        xml.replace("\r\n", "\n"),
        phone.dump_xml(),
        "same tree as uiautomator dump"
    );
    assert_eq!(phone.counters().u2_dumps, 1);
    assert_eq!(phone.counters().dumps, 0, "no uiautomator dump ran");

    // deviceInfo: uiautomator2 sends `{}` as the params of a call without arguments.
    let info = post(&mut http, "deviceInfo", json!({}))["result"].clone();
    assert_eq!(info["displayWidth"], 1080);
    assert_eq!(info["displayHeight"], 2400);
    assert_eq!(info["sdkInt"], 33);
    assert_eq!(info["screenOn"], true);
    assert_eq!(info["currentPackageName"], "com.xunmeng.pinduoduo");

    // A click reaches the same window `input tap` does, counted and recorded the same.
    let (_, _, rc) = rig.shell(&format!(
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id={GOODS}'"
    ));
    assert_eq!(rc, 0);
    assert_eq!(phone.current_page(), "goods");
    let taps = phone.counters().taps;
    let (x, y) = target(phone, "发起拼单");
    let r = post(&mut http, "click", json!([x, y]));
    assert_eq!(r["result"], true);
    assert_eq!(phone.current_page(), "sku_sheet");
    assert_eq!(phone.counters().taps, taps + 1);
    let last = phone.system().taps.last().cloned().expect("tap recorded");
    assert_eq!((last.x, last.y), (x, y));
    assert_eq!(last.package.as_deref(), Some("com.xunmeng.pinduoduo"));

    // pressKey back closes the sheet, as `input keyevent KEYCODE_BACK` does.
    assert_eq!(post(&mut http, "pressKey", json!(["back"]))["result"], true);
    assert_eq!(phone.current_page(), "goods");
    assert_eq!(
        post(&mut http, "pressKey", json!(["no_such_key"]))["result"],
        false
    );

    // A swipe and screenshots (base64 JPEG of the picture screencap draws, scaled).
    assert_eq!(
        post(&mut http, "swipe", json!([540, 1800, 540, 900, 20]))["result"],
        true
    );
    let shot = post(&mut http, "takeScreenshot", json!([1, 80]));
    let jpeg = base64_decode(shot["result"].as_str().expect("base64"));
    assert_eq!(jpeg_size(&jpeg), (1080, 2400));
    let shot = post(&mut http, "takeScreenshot", json!([0.5, 60]));
    let half = base64_decode(shot["result"].as_str().expect("base64"));
    assert_eq!(jpeg_size(&half), (540, 1200));

    // jsonrpc4j's own errors.
    let r = post(&mut http, "noSuchMethod", json!([]));
    assert_eq!(r["error"]["code"], -32601);
    let r = post(&mut http, "click", json!(["a", "b"]));
    assert_eq!(r["error"]["code"], -32602);

    // The server dumps every window root: a heads-up is in its dump, not in the shell's
    // (the active window and the bars).
    phone.show_heads_up(
        cmautobuy_sim_phone::HeadsUp::wechat("张三", "在吗"),
        Some(60_000),
    );
    let r = post(&mut http, "dumpWindowHierarchy", json!([false, 50]));
    let with_heads_up = r["result"].as_str().expect("xml");
    assert!(with_heads_up.contains("expandableNotificationRow") && with_heads_up.contains("在吗"));
    assert!(!phone.dump_xml().contains("在吗"));

    // While the server holds UiAutomation, `uiautomator dump` dies (exit 137, "Killed").
    let (out, err, rc) = rig.shell("uiautomator dump /dev/tty");
    assert_eq!(rc, 137, "{out} {err}");
    assert!(format!("{out}{err}").contains("Killed"));
    assert!(!out.contains("<hierarchy"));
    // A second server fails as core.py sees it fail.
    let (out, err, rc) = rig.shell(START);
    assert_eq!(rc, 1);
    assert!(out.contains("Starting Server"));
    assert!(err.contains("already registered"), "{err}");
    assert!(phone.u2_running(), "the first server keeps running");

    // Closing the start stream ends the server (core.py's stop): tcp: refused again, and
    // `uiautomator dump` works again.
    drop(http);
    drop(proc);
    wait_until("the server stopped", 20, || !phone.u2_running());
    assert!(smart(&rig.adb, &rig.serial, "tcp:9008").is_err());
    let (out, _, rc) = rig.shell("uiautomator dump /dev/tty");
    assert_eq!(rc, 0);
    assert!(out.contains("<hierarchy"));
}

#[test]
fn adb_client_pushes_starts_and_forwards_to_the_server() {
    use adb_client::server_device::ADBServerDevice;
    use adb_client::ADBDeviceExt;
    let Some(jar) = real_jar("adb_client_pushes_starts_and_forwards_to_the_server") else {
        return;
    };
    let rig = Rig::new(&jar);
    // adb_client's shell runs until the server process ends: a thread of its own.
    let (addr, serial) = (rig.adb.addr(), rig.serial.clone());
    let runner = std::thread::spawn(move || {
        let mut dev = ADBServerDevice::new(serial, Some(addr));
        let mut out = Vec::new();
        let _ = dev.shell_command(&START, Some(&mut out), None);
        String::from_utf8_lossy(&out).to_string()
    });
    wait_until("the server listens", 30, || {
        rig.phone.u2_listening_port() == Some(9008)
    });

    // adb forward tcp:LOCAL tcp:9008 through adb_client, then plain HTTP on loopback.
    let local = cmautobuy_sim_phone::testing::free_port();
    let mut dev = ADBServerDevice::new(rig.serial.clone(), Some(rig.adb.addr()));
    dev.forward("tcp:9008".to_string(), format!("tcp:{local}"))
        .expect("forward");
    let mut s = TcpStream::connect(("127.0.0.1", local)).expect("forwarded port");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    assert!(ping(&mut s));
    let r = post(&mut s, "dumpWindowHierarchy", json!([false, 50]));
    assert!(r["result"]
        .as_str()
        .is_some_and(|x| x.contains("<hierarchy")));

    // /stop ends the process by itself: adb_client's shell returns.
    write!(s, "GET /stop HTTP/1.1\r\nHost: localhost\r\n\r\n").expect("stop");
    let (_, _, body) = read_answer(&mut s).expect("stop answer");
    assert_eq!(body, b"Server stopped!!!");
    let out = runner.join().expect("shell thread");
    assert!(out.contains("Starting Server"), "{out}");
    assert!(!rig.phone.u2_running());
}

#[test]
fn a_wrong_or_missing_jar_refuses_to_start() {
    let Some(jar) = real_jar("a_wrong_or_missing_jar_refuses_to_start") else {
        return;
    };
    let phone = start(config());
    let adb = AdbServer::start();
    let serial = phone.serial();
    adb.connect(&serial);
    let run = |line: &str| {
        let o = adb.shell(&serial, &[line]);
        (
            String::from_utf8_lossy(&o.stderr).to_string(),
            o.status.code().unwrap_or(-1),
        )
    };
    // No file at the class path.
    let (err, rc) = run(START);
    assert_eq!(rc, 1);
    assert!(
        err.contains("java.lang.ClassNotFoundException: Didn't find class \"com.wetest.uia2.Main\" on path: DexPathList[[],"),
        "{err}"
    );
    // Another file there (the jar with one byte changed).
    let mut other = jar.clone();
    if let Some(b) = other.last_mut() {
        *b ^= 1;
    }
    phone.with_device(|d| d.write_file(U2_JAR_PATH, other));
    let (err, rc) = run(START);
    assert_eq!(rc, 1);
    assert!(
        err.contains("ClassNotFoundException")
            && err.contains("zip file \"/data/local/tmp/u2.jar\""),
        "{err}"
    );
    assert!(!phone.u2_running());
    assert_eq!(phone.counters().u2_starts, 0);
    // The pinned jar, but no CLASSPATH or another class: not found either.
    phone.with_device(|d| d.write_file(U2_JAR_PATH, jar.clone()));
    let (err, rc) = run("app_process / com.wetest.uia2.Main -p 9008");
    assert_eq!(rc, 1);
    assert!(err.contains("ClassNotFoundException"));
    let (err, rc) = run("CLASSPATH=/data/local/tmp/u2.jar app_process / com.example.Main");
    assert_eq!(rc, 1);
    assert!(err.contains("com.example.Main"));
    // A bad port is the server's own complaint.
    let (err, rc) = run("CLASSPATH=/data/local/tmp/u2.jar app_process / com.wetest.uia2.Main -p 0");
    assert_eq!(rc, 1);
    assert!(err.contains("Invalid port: 0"), "{err}");
    assert!(!phone.u2_running());
    assert!(smart(&adb, &serial, "tcp:9008").is_err());
}

#[test]
fn fault_knobs_kill_hang_rpc_error_truncate() {
    let Some(jar) = real_jar("fault_knobs_kill_hang_rpc_error_truncate") else {
        return;
    };
    let rig = Rig::new(&jar);
    let phone = &rig.phone;
    let (mut proc, mut http) = rig.start_server();

    // A JSON-RPC error: the call does not run.
    let (x, y) = target(phone, "个人中心");
    let taps = phone.counters().taps;
    phone.u2_rpc_error_next_call();
    let r = post(&mut http, "click", json!([x, y]));
    assert_eq!(r["error"]["code"], -32001);
    assert_eq!(r["error"]["message"], "java.lang.IllegalStateException");
    assert!(r["error"]["data"]
        .as_str()
        .is_some_and(|d| d.contains("UiAutomation not connected")));
    assert_eq!(phone.counters().taps, taps, "nothing ran");
    assert!(ping(&mut http), "the connection is still good");

    // A truncated answer: the click ran, half the answer came, the stream closed.
    phone.u2_truncate_next_answer();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "click", "params": [x, y]}).to_string();
    write!(
        http,
        "POST /jsonrpc/0 HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    let partial = read_answer(&mut http).expect_err("cut short");
    assert!(!partial.is_empty(), "half an answer arrived");
    assert_eq!(phone.counters().taps, taps + 1, "the click landed once");
    assert_eq!(phone.current_page(), "profile");

    // A hung call: no answer until the caller gives up; nothing ran; the next stream works.
    let mut hung = smart(&rig.adb, &rig.serial, "tcp:9008").expect("tcp");
    hung.set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    phone.u2_hang_next_call();
    let requests = phone.counters().u2_requests;
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "pressKey", "params": ["back"]}).to_string();
    write!(
        hung,
        "POST /jsonrpc/0 HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    wait_until("the hung call was read", 20, || {
        phone.counters().u2_requests > requests
    });
    let mut b = [0u8; 16];
    assert!(
        matches!(hung.read(&mut b), Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "no answer to a hung call"
    );
    assert_eq!(phone.current_page(), "profile", "the hung call did not run");
    drop(hung);
    let mut http = wait_ready(&rig.adb, &rig.serial);

    // Killed: the start stream ends, tcp: streams are cut and refused, a restart works.
    proc.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    assert!(phone.u2_kill());
    let mut rest = Vec::new();
    let _ = proc.read_to_end(&mut rest);
    assert!(!phone.u2_running());
    let mut b = [0u8; 16];
    assert_eq!(http.read(&mut b).unwrap_or(0), 0, "open stream cut");
    assert!(smart(&rig.adb, &rig.serial, "tcp:9008").is_err());
    let (_proc2, mut http2) = rig.start_server();
    assert_eq!(phone.counters().u2_starts, 2);
    assert!(post(&mut http2, "dumpWindowHierarchy", json!([false, 50]))["result"].is_string());
}

#[test]
fn killed_server_ends_its_shell_v2_stream_with_status_137() {
    let Some(jar) = real_jar("killed_server_ends_its_shell_v2_stream_with_status_137") else {
        return;
    };
    let rig = Rig::new(&jar);
    let (adb_port, serial) = (rig.adb.port(), rig.serial.clone());
    let home = rig.adb.home().to_path_buf();
    // `adb shell CMD` (shell v2) returns the process's exit status.
    let runner = std::thread::spawn(move || {
        let mut c = std::process::Command::new(cmautobuy_sim_phone::testing::adb_bin());
        c.args(["-P", &adb_port.to_string(), "-s", &serial, "shell", START])
            .env("HOME", &home)
            .env("ANDROID_ADB_SERVER_PORT", adb_port.to_string())
            .env("ANDROID_USER_HOME", home.join(".android"));
        cmautobuy_sim_phone::testing::run_with_deadline(c, Duration::from_secs(60))
    });
    wait_until("the server listens", 30, || {
        rig.phone.u2_listening_port() == Some(9008)
    });
    assert!(rig.phone.u2_kill());
    let o = runner.join().expect("adb shell");
    assert_eq!(o.status.code(), Some(137));
    assert!(String::from_utf8_lossy(&o.stdout).contains("Starting Server"));
}

// ---------------------------------------------------------------------------------------
// in process: animated pages, latency

fn open_goods(d: &mut Device, goods_id: &str) {
    let e = d.run_line(&format!(
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id={goods_id}'"
    ));
    assert_eq!(e.code, 0);
}

#[test]
fn animated_pages_fail_uiautomator_dump_at_a_bounded_rate_while_the_server_dumps() {
    let mut cfg = config();
    let g = cfg
        .catalog
        .goods
        .iter_mut()
        .find(|g| g.goods_id == GOODS)
        .expect("goods");
    g.animated = true;
    let mut d = cfg.build_device().expect("device");
    // Not animated on the home page.
    for _ in 0..10 {
        assert_eq!(d.run_line("uiautomator dump /dev/tty").stderr, b"");
    }
    open_goods(&mut d, GOODS);
    let (mut failed, mut streak, mut worst) = (0, 0, 0);
    for _ in 0..60 {
        let e = d.run_line("uiautomator dump /dev/tty");
        if e.stderr == b"ERROR: could not get idle state.\n" {
            assert_eq!(e.code, 0, "the real command exits 0 on this failure");
            assert!(
                !String::from_utf8_lossy(&e.stdout).contains("<hierarchy"),
                "no XML"
            );
            failed += 1;
            streak += 1;
            worst = worst.max(streak);
        } else {
            assert!(String::from_utf8_lossy(&e.stdout).contains("<hierarchy"));
            streak = 0;
        }
    }
    assert!((15..=45).contains(&failed), "about half fail: {failed}/60");
    assert!(worst <= 3, "never more than 3 in a row: {worst}");
    // The server's dump always answers there.
    for _ in 0..20 {
        let (body, _) = d.u2_jsonrpc(
            br#"{"jsonrpc":"2.0","id":7,"method":"dumpWindowHierarchy","params":[false,50]}"#,
        );
        let v: Value = serde_json::from_slice(&body).expect("json");
        assert!(v["result"].as_str().is_some_and(|x| x.contains("发起拼单")));
    }
    // Same seed, same failures.
    let mut again = cfg.build_device().expect("device");
    open_goods(&mut again, GOODS);
    let mut d2 = cfg.build_device().expect("device");
    open_goods(&mut d2, GOODS);
    for _ in 0..20 {
        assert_eq!(
            again.run_line("uiautomator dump /dev/tty").stderr,
            d2.run_line("uiautomator dump /dev/tty").stderr
        );
    }
}

#[test]
fn a_server_dump_costs_200_to_400_ms_and_uiautomator_dump_800_to_1500() {
    let mut d = config().build_device().expect("device");
    for _ in 0..20 {
        let before = d.counters().device_time_ms;
        let (body, ms) = d.u2_jsonrpc(
            br#"{"jsonrpc":"2.0","id":1,"method":"dumpWindowHierarchy","params":[false,50]}"#,
        );
        assert!(serde_json::from_slice::<Value>(&body).expect("json")["result"].is_string());
        assert!((200..=400).contains(&ms), "{ms}");
        assert_eq!(d.counters().device_time_ms - before, ms);
        let e = d.run_line("uiautomator dump /dev/tty");
        assert!((800..=1500).contains(&e.delay.as_millis()), "{:?}", e.delay);
    }
    // A page change is paid for by the next observation, through either path.
    let e = d.run_line("input tap 1 1");
    assert_eq!(e.code, 0);
}

#[test]
fn realistic_profile_server_dumps_are_several_times_faster_than_uiautomator_dump() {
    let Some(jar) =
        real_jar("realistic_profile_server_dumps_are_several_times_faster_than_uiautomator_dump")
    else {
        return;
    };
    use adb_client::server_device::ADBServerDevice;
    let mut cfg = config();
    cfg.profile = cmautobuy_sim_phone::LatencyProfile::Realistic;
    let phone = start(cfg);
    let adb = AdbServer::start();
    let serial = phone.serial();
    adb.connect(&serial);
    let mut dev = ADBServerDevice::new(serial.clone(), Some(adb.addr()));
    let mut data: &[u8] = &jar;
    dev.push(&mut data, U2_JAR_PATH).expect("push");
    let median = |mut v: Vec<u128>| {
        v.sort_unstable();
        v[v.len() / 2]
    };

    let mut shell_ms = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let o = adb.shell(&serial, &["uiautomator", "dump", "/dev/tty"]);
        assert!(o.status.success());
        shell_ms.push(t.elapsed().as_millis());
    }
    let t = Instant::now();
    let rig_proc = smart(&adb, &serial, &format!("shell:{START}")).expect("start");
    let mut http = wait_ready(&adb, &serial);
    let start_ms = t.elapsed().as_millis();
    let mut server_ms = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let r = post(&mut http, "dumpWindowHierarchy", json!([false, 50]));
        assert!(r["result"].is_string());
        server_ms.push(t.elapsed().as_millis());
    }
    let (s, u) = (median(shell_ms), median(server_ms));
    eprintln!("realistic: uiautomator dump median {s} ms; server start {start_ms} ms; server dump median {u} ms");
    // Lower bounds are the model's (the phone sleeps at least that long); the upper
    // bounds leave room for a slow machine.
    assert!((800..3_000).contains(&s), "uiautomator dump {s} ms");
    assert!((200..1_500).contains(&u), "server dump {u} ms");
    assert!((1_000..5_000).contains(&start_ms), "start-up {start_ms} ms");
    assert!(u < s, "a server dump is faster: {u} vs {s} ms");
    drop(rig_proc);
}

#[test]
fn scheduled_faults_hit_the_nth_call_of_a_method() {
    use cmautobuy_sim_phone::u2::CallFault;
    let Some(jar) = real_jar("scheduled_faults_hit_the_nth_call_of_a_method") else {
        return;
    };
    let rig = Rig::new(&jar);
    let phone = &rig.phone;
    phone.u2_fault_on_call(Some("click"), 1, CallFault::KillAfter);
    phone.u2_fault_on_call(Some("dumpWindowHierarchy"), 2, CallFault::Kill);
    let (mut proc, mut http) = rig.start_server();

    // The first click lands, then the server dies before answering: the stream is cut.
    let (x, y) = target(phone, "个人中心");
    let taps = phone.counters().taps;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "click", "params": [x, y]}).to_string();
    write!(
        http,
        "POST /jsonrpc/0 HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    assert_eq!(read_answer(&mut http).expect_err("no answer"), b"");
    assert_eq!(phone.counters().taps, taps + 1, "the click landed once");
    assert_eq!(phone.current_page(), "profile");
    assert!(!phone.u2_running());
    proc.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut rest = Vec::new();
    let _ = proc.read_to_end(&mut rest);
    assert_eq!(phone.u2_calls(Some("click")), 1);

    // Restarted: the first dump answers, the second kills the server before it runs.
    let (_proc, mut http) = rig.start_server();
    assert!(post(&mut http, "dumpWindowHierarchy", json!([false, 50]))["result"].is_string());
    let dumps = phone.counters().u2_dumps;
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "dumpWindowHierarchy", "params": [false, 50]})
            .to_string();
    write!(
        http,
        "POST /jsonrpc/0 HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    assert!(read_answer(&mut http).is_err(), "cut");
    assert_eq!(phone.counters().u2_dumps, dumps, "nothing ran");
    assert!(!phone.u2_running());
    assert_eq!(phone.u2_calls(None), 3);
}

#[test]
fn held_calls_wait_unrun_until_released_and_other_methods_pass() {
    let Some(jar) = real_jar("held_calls_wait_unrun_until_released_and_other_methods_pass") else {
        return;
    };
    let rig = Rig::new(&jar);
    let phone = &rig.phone;
    let (_proc, mut http) = rig.start_server();
    let (x, y) = target(phone, "个人中心");
    let taps = phone.counters().taps;
    let gate = phone.hold_u2_calls("click");

    // The click is held before it runs: no answer, no tap, not counted.
    let mut held = smart(&rig.adb, &rig.serial, "tcp:9008").expect("tcp");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "click", "params": [x, y]}).to_string();
    write!(
        held,
        "POST /jsonrpc/0 HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    wait_until("the click is held", 20, || gate.hits() == 1);
    assert_eq!(phone.counters().taps, taps, "a held click has not run");
    assert_eq!(phone.u2_calls(Some("click")), 0, "nor been counted");

    // Other methods are not held.
    assert!(post(&mut http, "dumpWindowHierarchy", json!([false, 50]))["result"].is_string());

    // Released: the click runs once and answers.
    gate.release();
    let (status, _, answer) = read_answer(&mut held).expect("an answer once released");
    assert_eq!(status, "HTTP/1.1 200 OK ");
    let answer: Value = serde_json::from_slice(&answer).expect("JSON");
    assert_eq!(answer["result"], true, "{answer}");
    assert_eq!(phone.counters().taps, taps + 1);
    assert_eq!(phone.current_page(), "profile");

    // A server that dies while a call is held cuts the stream; nothing runs.
    let gate = phone.hold_u2_calls("pressKey");
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "pressKey", "params": ["back"]}).to_string();
    write!(
        held,
        "POST /jsonrpc/0 HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
    wait_until("the key press is held", 20, || gate.hits() == 1);
    assert!(phone.u2_kill());
    assert_eq!(read_answer(&mut held).expect_err("cut"), b"");
    assert_eq!(
        phone.current_page(),
        "profile",
        "the held key press did not run"
    );
}
