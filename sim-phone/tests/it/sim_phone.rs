//! Integration tests of the simulated phone: through Debian's real `adb` (a private server
//! on a free port), through `adb_client` (via that server and directly over TCP), through a
//! raw protocol client, and in-process against the app model.
//!
//! Nothing here sleeps for luck: every wait is a bounded poll for a condition.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use cmautobuy_sim_phone::testing::AdbServer;
use cmautobuy_sim_phone::ui::{Node, Rect, Screen};
use cmautobuy_sim_phone::{
    Catalog, Device, DumpFault, FaultPlan, PopupKind, PopupSchedule, SimConfig, SimPhone,
    SimPhoneHandle,
};

// ---------------------------------------------------------------------------------------
// helpers

fn catalog() -> Catalog {
    Catalog::load(&Catalog::bundled_dir()).expect("bundled catalog loads")
}

fn fixed_config() -> SimConfig {
    let mut c = SimConfig::new(catalog());
    c.seed = 42;
    c.start_time = Some("2026-11-30T08:02:10Z".parse().expect("time"));
    c
}

fn start(cfg: SimConfig) -> SimPhoneHandle {
    SimPhone::bind("127.0.0.1:0".parse().expect("addr"), cfg).expect("phone starts")
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
    let img =
        image::load_from_memory_with_format(bytes, image::ImageFormat::Png).expect("valid PNG");
    (img.width(), img.height())
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

// ---------------------------------------------------------------------------------------
// real adb

#[test]
fn real_adb_server_drives_the_phone() {
    let phone = start(fixed_config());
    let adb = AdbServer::start();
    let serial = phone.serial();
    adb.connect(&serial);

    let o = adb.shell(&serial, &["uiautomator", "dump", "/dev/tty"]);
    assert!(o.status.success());
    let out = text(&o);
    assert!(out.contains("<hierarchy"), "{out}");
    assert!(out.contains("com.android.systemui"));
    assert!(out.trim_end().ends_with("UI hierchary dumped to: /dev/tty"));

    let o = adb.shell(&serial, &["input", "tap", "540", "1200"]);
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    let o = adb.shell(&serial, &["false"]);
    assert_eq!(o.status.code(), Some(1));
    let o = adb.shell(&serial, &["true"]);
    assert_eq!(o.status.code(), Some(0));
    let o = adb.shell(&serial, &["frobnicate", "x"]);
    assert_eq!(o.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&o.stderr).contains("frobnicate: inaccessible or not found"));

    let o = adb.adb(&["-s", &serial, "exec-out", "screencap", "-p"]);
    assert!(o.status.success());
    assert_eq!(png_size(&o.stdout), (1080, 2400));

    let o = adb.shell(&serial, &["uiautomator", "dump"]);
    assert_eq!(
        text(&o).trim(),
        "UI hierchary dumped to: /sdcard/window_dump.xml"
    );
    let dir = tempfile::tempdir().expect("tmp");
    let local = dir.path().join("dump.xml");
    let o = adb.adb(&[
        "-s",
        &serial,
        "pull",
        "/sdcard/window_dump.xml",
        local.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{o:?}");
    let pulled = std::fs::read(&local).expect("pulled");
    let on_phone = phone
        .with_device(|d| d.read_file("/sdcard/window_dump.xml"))
        .expect("dump file");
    assert_eq!(pulled, *on_phone, "pull must be byte-identical");
    let o = adb.shell(&serial, &["cat", "/sdcard/window_dump.xml"]);
    assert_eq!(o.stdout, pulled);

    let up = dir.path().join("up.bin");
    let payload: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(&up, &payload).expect("write");
    let o = adb.adb(&[
        "-s",
        &serial,
        "push",
        up.to_str().expect("utf8"),
        "/data/local/tmp/up.bin",
    ]);
    assert!(o.status.success(), "{o:?}");
    let back = dir.path().join("back.bin");
    let o = adb.adb(&[
        "-s",
        &serial,
        "pull",
        "/data/local/tmp/up.bin",
        back.to_str().expect("utf8"),
    ]);
    assert!(o.status.success(), "{o:?}");
    assert_eq!(std::fs::read(&back).expect("read"), payload);

    // A goods URL from the network, quoted as the client quotes it: it is one argument.
    let canary = dir.path().join("pwned");
    let url = format!(
        "pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=1;touch {}",
        canary.display()
    );
    let before = phone.counters().shell_commands;
    let o = adb.shell(
        &serial,
        &[
            "am",
            "start",
            "-a",
            "android.intent.action.VIEW",
            "-d",
            &format!("'{url}'"),
        ],
    );
    assert!(o.status.success(), "{o:?}");
    assert_eq!(
        phone.counters().shell_commands,
        before + 1,
        "exactly one command ran"
    );
    assert!(!canary.exists());
    assert_eq!(phone.current_page(), "not_found");

    let c = phone.counters();
    assert!(c.dumps >= 2 && c.taps >= 1 && c.screencaps >= 1, "{c:?}");
}

// ---------------------------------------------------------------------------------------
// adb_client

#[test]
fn adb_client_through_the_adb_server() {
    use adb_client::server_device::ADBServerDevice;
    use adb_client::ADBDeviceExt;

    let phone = start(fixed_config());
    let adb = AdbServer::start();
    let serial = phone.serial();
    adb.connect(&serial);

    let mut dev = ADBServerDevice::new(serial.clone(), Some(adb.addr()));
    let mut out = Vec::new();
    dev.shell_command(&"uiautomator dump /dev/tty", Some(&mut out), None)
        .expect("dump");
    assert!(String::from_utf8_lossy(&out).contains("<hierarchy"));

    // adb_client loses the shell v2 exit code; the `; echo __RC=$?` suffix recovers it.
    for (cmd, rc) in [
        ("false", 1),
        ("true", 0),
        ("input tap 540 1200", 0),
        ("nope", 127),
    ] {
        let mut out = Vec::new();
        let mut err = Vec::new();
        dev.shell_command(
            &format!("{cmd} ; echo __RC=$?"),
            Some(&mut out),
            Some(&mut err),
        )
        .expect("shell");
        let s = String::from_utf8_lossy(&out);
        assert!(s.ends_with(&format!("__RC={rc}\n")), "{cmd}: {s:?}");
    }

    let mut png = Vec::new();
    dev.shell_command(&"screencap -p", Some(&mut png), None)
        .expect("screencap");
    assert_eq!(png_size(&png), (1080, 2400));

    let mut dumped = Vec::new();
    dev.shell_command(&"uiautomator dump /sdcard/x.xml", Some(&mut dumped), None)
        .expect("dump to file");
    let mut pulled = Vec::new();
    dev.pull(&"/sdcard/x.xml", &mut pulled).expect("pull");
    let on_phone = phone
        .with_device(|d| d.read_file("/sdcard/x.xml"))
        .expect("file");
    assert_eq!(pulled, *on_phone);
}

#[test]
fn adb_client_direct_tcp_without_adb() {
    use adb_client::tcp::ADBTcpDevice;
    use adb_client::ADBDeviceExt;

    let phone = start(fixed_config());
    // adb_client reads its RSA key from here; the phone never asks for AUTH, so a fresh
    // key (generated when the file is missing) is all it needs.
    let home = tempfile::tempdir().expect("tmp");
    let key = home.path().join("adbkey");
    let mut dev = ADBTcpDevice::new_with_custom_private_key(phone.addr(), &key).expect("connect");

    let mut out = Vec::new();
    dev.shell_command(&"uiautomator dump /dev/tty", Some(&mut out), None)
        .expect("dump");
    assert!(String::from_utf8_lossy(&out).contains("<hierarchy"));

    let mut out = Vec::new();
    dev.shell_command(&"echo 'a;b' \"$(id)\"", Some(&mut out), None)
        .expect("echo");
    assert_eq!(String::from_utf8_lossy(&out), "a;b $(id)\n");

    let mut out = Vec::new();
    dev.shell_command(&"uiautomator dump", Some(&mut out), None)
        .expect("dump");
    let mut pulled = Vec::new();
    dev.pull(&"/sdcard/window_dump.xml", &mut pulled)
        .expect("pull");
    assert_eq!(
        pulled,
        *phone
            .with_device(|d| d.read_file("/sdcard/window_dump.xml"))
            .expect("f")
    );

    let st = dev.stat(&"/sdcard/window_dump.xml").expect("stat");
    assert_eq!(st.file_size as usize, pulled.len());

    let fb = dev.framebuffer_inner().expect("framebuffer: service");
    assert_eq!((fb.width(), fb.height()), (1080, 2400));

    let mut data: &[u8] = b"pushed by adb_client";
    dev.push(&mut data, &"/data/local/tmp/p.txt").expect("push");
    assert_eq!(
        phone
            .with_device(|d| d.read_file("/data/local/tmp/p.txt"))
            .expect("pushed")
            .as_slice(),
        b"pushed by adb_client"
    );
}

// ---------------------------------------------------------------------------------------
// raw protocol client: checksums, concurrency, payload size, malformed packets, offline

const CNXN: u32 = 0x4e58_4e43;
const OPEN: u32 = 0x4e45_504f;
const OKAY: u32 = 0x5941_4b4f;
const CLSE: u32 = 0x4553_4c43;
const WRTE: u32 = 0x4554_5257;

struct Raw {
    s: TcpStream,
    version: u32,
}

impl Raw {
    fn connect(addr: SocketAddr, version: u32, max: u32) -> (Raw, String, u32) {
        let s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let mut r = Raw { s, version };
        r.send(CNXN, version, max, b"host::features=shell_v2\0");
        let (cmd, a0, a1, data) = r.recv().expect("cnxn reply");
        assert_eq!(cmd, CNXN);
        assert_eq!(a0, version, "version negotiated down to ours");
        let _ = a1;
        (r, String::from_utf8_lossy(&data).to_string(), a1)
    }

    fn send(&mut self, cmd: u32, a0: u32, a1: u32, data: &[u8]) {
        let sum: u32 = data.iter().map(|&b| u32::from(b)).sum();
        let check = if self.version >= 0x0100_0001 { 0 } else { sum };
        let mut v = Vec::new();
        for w in [cmd, a0, a1, data.len() as u32, check, cmd ^ 0xffff_ffff] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(data);
        self.s.write_all(&v).expect("write");
    }

    fn recv(&mut self) -> Option<(u32, u32, u32, Vec<u8>)> {
        let mut h = [0u8; 24];
        self.s.read_exact(&mut h).ok()?;
        let w = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let mut data = vec![0u8; w(12) as usize];
        self.s.read_exact(&mut data).ok()?;
        assert_eq!(w(20), w(0) ^ 0xffff_ffff, "magic");
        let sum: u32 = data.iter().map(|&b| u32::from(b)).sum();
        if self.version < 0x0100_0001 {
            assert_eq!(w(16), sum, "old protocol version carries checksums");
        } else {
            assert_eq!(w(16), 0, "new protocol version skips checksums");
        }
        Some((w(0), w(4), w(8), data))
    }
}

/// Parse shell v2 packets into (stdout, stderr, exit).
fn v2_decode(bytes: &[u8]) -> (Vec<u8>, Vec<u8>, Option<u8>) {
    let (mut out, mut err, mut exit) = (Vec::new(), Vec::new(), None);
    let mut i = 0;
    while i + 5 <= bytes.len() {
        let n =
            u32::from_le_bytes([bytes[i + 1], bytes[i + 2], bytes[i + 3], bytes[i + 4]]) as usize;
        let body = &bytes[i + 5..i + 5 + n];
        match bytes[i] {
            1 => out.extend_from_slice(body),
            2 => err.extend_from_slice(body),
            3 => exit = body.first().copied(),
            _ => {}
        }
        i += 5 + n;
    }
    (out, err, exit)
}

#[test]
fn raw_protocol_concurrent_streams_payload_limit_and_checksums() {
    let phone = start(fixed_config());
    for version in [0x0100_0000u32, 0x0100_0001] {
        let (mut raw, banner, _) = Raw::connect(phone.addr(), version, 4096);
        assert!(banner.starts_with("device::"), "{banner}");
        assert!(banner.contains("features=shell_v2,cmd"));
        let cmds = [
            "shell,v2,TERM=xterm,raw:uiautomator dump /dev/tty",
            "shell,v2,raw:echo one; nope",
            "shell:echo merged; nope",
        ];
        for (i, c) in cmds.iter().enumerate() {
            raw.send(OPEN, 100 + i as u32, 0, format!("{c}\0").as_bytes());
        }
        let mut got: Vec<Vec<u8>> = vec![Vec::new(); 3];
        let mut closed = 0;
        let mut ids = std::collections::HashMap::new();
        while closed < 3 {
            let (cmd, a0, a1, data) = raw.recv().expect("packet");
            let k = (a1 - 100) as usize;
            match cmd {
                OKAY => {
                    ids.insert(k, a0);
                }
                WRTE => {
                    assert!(data.len() <= 4096, "payload above the negotiated maximum");
                    got[k].extend_from_slice(&data);
                    raw.send(OKAY, a1, a0, &[]);
                }
                CLSE => closed += 1,
                other => panic!("unexpected {other:x}"),
            }
        }
        let (out, _, exit) = v2_decode(&got[0]);
        assert!(String::from_utf8_lossy(&out).contains("<hierarchy"));
        assert_eq!(exit, Some(0));
        let (out, err, exit) = v2_decode(&got[1]);
        assert_eq!(out, b"one\n");
        assert!(String::from_utf8_lossy(&err).contains("nope: inaccessible or not found"));
        assert_eq!(exit, Some(127));
        let merged = String::from_utf8_lossy(&got[2]);
        assert!(
            merged.starts_with("merged\n") && merged.contains("not found"),
            "{merged}"
        );
    }
}

#[test]
fn malformed_packets_close_only_their_connection() {
    let phone = start(fixed_config());
    let (mut good, _, _) = Raw::connect(phone.addr(), 0x0100_0001, 1 << 20);
    let bad_inputs: Vec<Vec<u8>> = vec![
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
        {
            // Right magic, absurd length.
            let mut v = Vec::new();
            for w in [WRTE, 1, 1, u32::MAX, 0, WRTE ^ 0xffff_ffff] {
                v.extend_from_slice(&w.to_le_bytes());
            }
            v
        },
        {
            // OPEN before CNXN.
            let mut v = Vec::new();
            for w in [OPEN, 1, 0, 0, 0, OPEN ^ 0xffff_ffff] {
                v.extend_from_slice(&w.to_le_bytes());
            }
            v
        },
    ];
    for bad in bad_inputs {
        let mut s = TcpStream::connect(phone.addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        s.write_all(&bad).expect("write");
        let mut buf = [0u8; 64];
        // The phone closes the connection: read returns 0 (or a reset).
        let n = s.read(&mut buf).unwrap_or(0);
        assert_eq!(n, 0, "malformed connection must be closed");
    }
    // Old-version checksum mismatch closes too.
    {
        let (mut old, _, _) = Raw::connect(phone.addr(), 0x0100_0000, 4096);
        let mut v = Vec::new();
        let data = b"shell:true\0";
        for w in [OPEN, 5, 0, data.len() as u32, 12345, OPEN ^ 0xffff_ffff] {
            v.extend_from_slice(&w.to_le_bytes());
        }
        v.extend_from_slice(data);
        old.s.write_all(&v).expect("write");
        assert!(old.recv().is_none(), "bad checksum closes the connection");
    }
    assert!(phone.counters().malformed_packets >= 4);
    // The healthy connection is still served.
    good.send(OPEN, 7, 0, b"shell,v2,raw:echo still here\0");
    let mut body = Vec::new();
    loop {
        let (cmd, a0, a1, data) = good.recv().expect("packet");
        match cmd {
            WRTE => {
                body.extend_from_slice(&data);
                good.send(OKAY, a1, a0, &[]);
            }
            CLSE => break,
            _ => {}
        }
    }
    assert_eq!(v2_decode(&body).0, b"still here\n");
}

#[test]
fn offline_phone_drops_connections_and_comes_back() {
    let phone = start(fixed_config());
    let (mut raw, _, _) = Raw::connect(phone.addr(), 0x0100_0001, 4096);
    phone.set_offline(true);
    assert!(raw.recv().is_none(), "existing connection is cut");
    let mut s = TcpStream::connect(phone.addr()).expect("tcp accept still happens");
    s.set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let mut buf = [0u8; 8];
    assert_eq!(
        s.read(&mut buf).unwrap_or(0),
        0,
        "new connection closed at once"
    );
    phone.set_offline(false);
    let (_raw, banner, _) = Raw::connect(phone.addr(), 0x0100_0001, 4096);
    assert!(banner.starts_with("device::"));

    // Scripted: offline after N commands.
    let mut cfg = fixed_config();
    cfg.faults = FaultPlan {
        offline_after_commands: Some(2),
        ..FaultPlan::default()
    };
    let phone = start(cfg);
    let (mut raw, _, _) = Raw::connect(phone.addr(), 0x0100_0001, 4096);
    for i in 0..2u32 {
        raw.send(OPEN, 10 + i, 0, b"shell,v2,raw:true\0");
        loop {
            match raw.recv() {
                Some((CLSE, _, _, _)) => break,
                Some((WRTE, a0, a1, _)) => raw.send(OKAY, a1, a0, &[]),
                Some(_) => {}
                None => break,
            }
        }
    }
    assert!(raw.recv().is_none(), "offline after the second command");
}

#[test]
fn refuses_non_loopback_addresses() {
    let r = SimPhone::bind("0.0.0.0:0".parse().expect("addr"), fixed_config());
    assert!(matches!(
        r,
        Err(cmautobuy_sim_phone::SimError::NotLoopback(_))
    ));
}

// ---------------------------------------------------------------------------------------
// app model (in process: the same builtins the shell runs)

struct Phone {
    d: Device,
}

impl Phone {
    fn new(cfg: &SimConfig) -> Phone {
        Phone {
            d: cfg.build_device().expect("device"),
        }
    }

    fn sh(&mut self, line: &str) -> cmautobuy_sim_phone::Exec {
        self.d.run_line(line)
    }

    /// What a dump shows now (the app's screen, or a window in front of it).
    fn screen(&self) -> Screen {
        self.d.dump_screen(self.d.now())
    }

    fn xml(&mut self) -> String {
        let e = self.sh("uiautomator dump /dev/tty");
        assert_eq!(e.code, 0);
        String::from_utf8(e.stdout).expect("utf8")
    }

    fn open(&mut self, goods_id: &str) {
        let e = self.sh(&format!(
            "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id={goods_id}'"
        ));
        assert_eq!(e.code, 0, "{}", String::from_utf8_lossy(&e.stderr));
    }

    /// Tap the nearest clickable ancestor of the first node whose text or content-desc
    /// matches, the way the client will.
    fn tap(&mut self, label: &str) {
        let r = find_target(&self.screen(), label)
            .unwrap_or_else(|| panic!("no node {label:?} on {}", self.d.app().page_name()));
        let (x, y) = r.center();
        let e = self.sh(&format!("input tap {x} {y}"));
        assert_eq!(e.code, 0);
    }

    fn page(&self) -> &'static str {
        self.d.app().page_name()
    }
}

fn find_target(screen: &Screen, label: &str) -> Option<Rect> {
    fn go(n: &Node, label: &str, clickable_above: Option<Rect>) -> Option<Rect> {
        let here = if n.clickable {
            Some(n.bounds)
        } else {
            clickable_above
        };
        if n.text == label || n.desc == label || n.text.trim() == label {
            return here;
        }
        n.children.iter().find_map(|c| go(c, label, here))
    }
    screen.windows.iter().rev().find_map(|w| go(w, label, None))
}

fn visit(screen: &Screen, f: &mut dyn FnMut(&Node)) {
    fn go(n: &Node, f: &mut dyn FnMut(&Node)) {
        f(n);
        for c in &n.children {
            go(c, f);
        }
    }
    for w in &screen.windows {
        go(w, f);
    }
}

fn has(screen: &Screen, pred: impl Fn(&Node) -> bool) -> bool {
    fn go(n: &Node, p: &dyn Fn(&Node) -> bool) -> bool {
        p(n) || n.children.iter().any(|c| go(c, p))
    }
    screen.windows.iter().any(|w| go(w, &pred))
}

#[test]
fn scripted_taps_reach_every_screen_and_order_twice_lands_once() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = fixed_config();
    cfg.state_file = Some(dir.path().join("state.json"));
    let mut p = Phone::new(&cfg);
    assert_eq!(p.page(), "home");
    let x = p.xml();
    assert!(x.contains("content-desc=\"个人中心\"") && x.contains("tv_title"));

    // Goods page → sheet via 发起拼单.
    p.open("737116531267");
    assert_eq!(p.page(), "goods");
    p.tap("发起拼单");
    assert_eq!(p.page(), "sku_sheet");
    let x = p.xml();
    for needle in [
        "手动添加地址",
        "tv_select_sku",
        "请选择 颜色分类 尺码",
        "content-desc=\"减少数量\"",
        "content-desc=\"增加数量\"",
        "android.widget.EditText",
        "com.xunmeng.pinduoduo:id/tv_content",
        "text=\"  奶白色\"",
        "content-desc=\"打开大图\"",
    ] {
        if needle == "手动添加地址" {
            assert!(!x.contains(needle), "this goods has an address");
        } else {
            assert!(x.contains(needle), "sheet lacks {needle}");
        }
    }

    // 黑色 + XL is sold out: XL becomes unavailable once 黑色 is chosen.
    p.tap("黑色");
    let s = p.screen();
    assert!(
        has(&s, |n| n.text == "XL" && !n.enabled),
        "XL sold out for 黑色"
    );
    p.tap("XL");
    assert!(
        p.xml().contains("请选择 尺码"),
        "sold-out option not selectable"
    );
    p.tap("L");
    p.tap("增加数量");
    let x = p.xml();
    assert!(x.contains("已选: 黑色 L"), "{x}");
    assert!(x.contains("text=\"2\""), "quantity 2");
    assert!(x.contains("提交订单 ¥118"), "59 × 2");
    assert!(x.contains("selected=\"true\""));

    p.tap("提交订单 ¥118");
    assert_eq!(p.page(), "payment");
    let orders = p.d.app().ledger().orders().to_vec();
    assert_eq!(orders.len(), 1);
    let o = &orders[0];
    assert_eq!(
        (o.quantity, o.total_cent, o.status.as_str()),
        (2, 11_800, "unpaid")
    );
    assert_eq!(o.options["color"], "黑色");
    assert_eq!(o.options["size"], "L");
    assert!(o.order_sn.starts_with("261130-"), "{}", o.order_sn);
    // The fixed clock started at 16:02:10 +08:00 and advanced by simulated time only.
    assert!(o.created_at.starts_with("2026-11-30T16:02:") && o.created_at.ends_with("+08:00"));
    let placed = o.created_at[..19].replace('T', " ");

    // Back out of payment: the retention dialog, then leave without paying.
    p.sh("input keyevent KEYCODE_BACK");
    assert_eq!(p.page(), "abandon_dialog");
    let x = p.xml();
    assert!(x.contains("确定放弃吗?") && x.contains("继续支付") && x.contains("，仅¥118"));
    assert!(x.contains("NAF=\"true\""), "unlabeled close icon");
    p.tap("先去逛逛");
    assert_eq!(p.page(), "goods");
    assert!(!p.d.app().ledger().orders()[0].payment_attempted);

    // 个人中心 → 待付款 → order detail.
    p.sh("input keyevent 4");
    p.tap("个人中心");
    assert_eq!(p.page(), "profile");
    p.tap("待付款");
    assert_eq!(p.page(), "order_list");
    let sn = o.order_sn.clone();
    let s = p.screen();
    let card = find_target(&s, "颜色分类：黑色；尺码：L").expect("order card");
    let (x, y) = card.center();
    p.sh(&format!("input tap {x} {y}"));
    assert_eq!(p.page(), "order_detail");
    let x = p.xml();
    assert!(x.contains(&format!("订单编号：{sn}")));
    assert!(
        x.contains(&format!("下单时间：{placed}")),
        "local time string"
    );
    assert!(p
        .sh("dumpsys window")
        .stdout
        .windows(5)
        .any(|w| w == b"Order"));

    // Exactly one order, never paid; the ledger survives a restart.
    drop(p);
    let p2 = Phone::new(&cfg);
    let orders = p2.d.app().ledger().orders();
    assert_eq!(orders.len(), 1);
    assert!(!orders[0].payment_attempted);
    assert_eq!(orders[0].order_sn, sn);

    // The CLI prints the same ledger.
    let o = Command::new(env!("CARGO_BIN_EXE_sim-phone"))
        .args(["orders", "--state"])
        .arg(dir.path().join("state.json"))
        .output()
        .expect("cli");
    let line = String::from_utf8_lossy(&o.stdout).to_string();
    let v: serde_json::Value = serde_json::from_str(line.trim()).expect("json line");
    for k in [
        "order_sn",
        "goods_id",
        "options",
        "quantity",
        "total_cent",
        "created_at",
        "status",
        "payment_attempted",
    ] {
        assert!(v.get(k).is_some(), "missing {k}");
    }
    assert_eq!(v["total_cent"], 11_800);
}

#[test]
fn pay_buttons_are_recorded_as_payment_attempts() {
    let mut p = Phone::new(&fixed_config());
    p.open("704455667788");
    p.tap("单独购买");
    p.tap("3层100抽*20包");
    let x = p.xml();
    assert!(x.contains("提交订单 ¥21.9"), "23.9 − 2 discount: {x}");
    assert!(x.contains("已减2元"));
    p.tap("提交订单 ¥21.9");
    assert_eq!(p.page(), "payment");
    p.sh("input keyevent 4");
    p.tap("继续支付");
    assert!(
        p.d.app().ledger().orders()[0].payment_attempted,
        "继续支付 is a pay tap"
    );
    assert_eq!(p.page(), "pay_result");
}

#[test]
fn sheet_shapes_discount_image_grid_and_three_dimensions() {
    let mut p = Phone::new(&fixed_config());
    // Preselected first option, merged stock+price label, discount row.
    p.open("715566778899");
    p.tap("发起拼单");
    let x = p.xml();
    // An icon option (page text starting with the icon's spaces) shows "#" in 已选, as on
    // the real sheet ("已选: #乌龙奶茶+手持化妆镜+礼盒").
    assert!(x.contains("已选: #乌龙奶茶+化妆镜+礼盒"), "{x}");
    assert!(x.contains("text=\"即将卖完 ¥88\""), "stock 25");
    assert!(x.contains("用多多支付减7.53元"));
    assert!(x.contains("提交订单 ¥80.47"));
    assert!(x.contains("content-desc=\"  乌龙奶茶+化妆镜+礼盒\""));
    assert!(x.contains("text=\"最后9件\""));
    // The grid scrolls sideways to reach clipped options.
    let tile_width = |p: &Phone| {
        let s = p.screen();
        let mut w = None;
        visit(&s, &mut |n| {
            if n.desc == "草莓色+化妆镜+礼盒" && n.class == "android.view.ViewGroup" {
                w = Some(n.bounds.r - n.bounds.l);
            }
        });
        w
    };
    // Row-major two-row grid: the fourth column is clipped at the screen edge.
    assert!(
        x.contains("bounds=\"[1004,"),
        "a clipped tile at the right edge"
    );
    assert_eq!(
        tile_width(&p),
        Some(76),
        "clipped like the real dump (1004..1080)"
    );
    let grid_y = 1200;
    p.sh(&format!("input swipe 900 {grid_y} 200 {grid_y} 200"));
    assert_eq!(tile_width(&p), Some(300), "scrolled fully into view");
    p.tap("草莓色+化妆镜+礼盒");
    assert!(p.xml().contains("提交订单 ¥90.47"));

    // Three dimensions; the style decides the price.
    p.sh("input keyevent 4");
    p.open("648273910552");
    p.tap("发起拼单");
    let x = p.xml();
    for h in ["颜色", "尺码"] {
        assert!(x.contains(&format!("text=\"{h}\"")), "{h}");
    }
    // Three groups do not fit: the option list scrolls vertically to reveal 款式.
    assert!(!x.contains("text=\"款式\""));
    p.tap("小熊-卡其");
    p.tap("100cm");
    p.sh("input swipe 540 1900 540 1100 300");
    assert!(p.xml().contains("text=\"款式\""));
    p.tap("单件卫衣");
    assert!(p.xml().contains("已选: 小熊-卡其 100cm 单件卫衣"));
    assert!(p.xml().contains("提交订单 ¥25.9"));

    // Spec wordings needing resolution are on the page verbatim.
    p.open("602938475610");
    p.tap("发起拼单");
    let x = p.xml();
    assert!(x.contains("text=\"120斤\"") && x.contains("text=\"130斤\""));
    p.tap("黑色");
    assert!(
        p.xml().contains("text=\"最后5件\""),
        "黑色 130斤 has 5 left"
    );
    p.tap("深灰色");
    assert!(p.xml().contains("text=\"已售罄\""), "深灰色 150斤 sold out");
    p.open("615204938271");
    p.tap("发起拼单");
    assert!(p.xml().contains("text=\"M【建議40-50公斤】\""));

    // All sold out: nothing selectable, no order possible.
    p.open("659910273845");
    p.tap("发起拼单");
    let x = p.xml();
    assert!(x.contains("该款式售罄"));
    assert!(x.contains("已售罄"));
    p.tap("经典黑");
    p.tap("该款式售罄");
    assert_eq!(p.page(), "sku_sheet");
    assert!(p.d.app().ledger().orders().is_empty());

    // No address: 手动添加地址 and submit creates nothing.
    p.open("726677889900");
    p.tap("发起拼单");
    assert!(p.xml().contains("手动添加地址"));
    p.tap("500ml");
    p.tap("提交订单 ¥35.9");
    assert_eq!(p.page(), "sku_sheet");
    assert!(p.d.app().ledger().orders().is_empty());

    // Purchase limit: the + button stops at 限购.
    p.open("737788990011");
    p.tap("发起拼单");
    for _ in 0..5 {
        p.tap("增加数量");
    }
    assert!(p.xml().contains("提交订单 ¥59.8"), "limit 2");
}

#[test]
fn special_goods_pages_and_urls() {
    let mut p = Phone::new(&fixed_config());
    p.open("671122334455");
    assert_eq!(p.page(), "goods");
    assert!(
        p.xml().contains("加厚连帽卫衣女秋冬款"),
        "redirected to the target goods"
    );
    assert!(
        !p.xml().contains("商品编号"),
        "no goods id on the page by default"
    );
    let mut cfg = fixed_config();
    cfg.show_goods_id = true;
    let mut q = Phone::new(&cfg);
    q.open("671122334455");
    assert!(
        q.xml().contains("商品编号：737116531267"),
        "opt-in shows the target id"
    );
    p.open("682233445566");
    assert_eq!(p.page(), "login");
    assert!(p.xml().contains("手机号登录"));
    p.open("693344556677");
    assert_eq!(p.page(), "risk");
    assert!(p.xml().contains("安全验证") && p.xml().contains("拖动滑块"));
    p.open("748899001122");
    assert!(p.xml().contains("商品已下架") && !p.xml().contains("发起拼单"));
    p.open("999999999999");
    assert_eq!(p.page(), "not_found");

    let e = p.sh("am start -a android.intent.action.VIEW -d 'https://mobile.yangkeduo.com/goods.html?goods_id=737116531267&_oak=1'");
    assert_eq!(e.code, 0);
    assert_eq!(p.page(), "goods");

    // Hostile URLs are strings: a page or an error, nothing runs.
    let dir = tempfile::tempdir().expect("tmp");
    let canary = dir.path().join("canary");
    let c = canary.display();
    for url in [
        format!("pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=1;touch {c}"),
        format!("pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=$(touch {c})"),
        format!("pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=`touch {c}`"),
        format!("https://mobile.yangkeduo.com/goods.html?goods_id=737116531267\"; touch {c}; \""),
        format!("https://mobile.yangkeduo.com/goods.html?goods_id=1\ntouch {c}"),
        format!("javascript:touch {c}"),
    ] {
        let before = p.d.counters().shell_commands;
        // Quote the way a careful client does: single quotes, ' escaped as '\''.
        let quoted = format!("'{}'", url.replace('\'', "'\\''"));
        let e = p.sh(&format!(
            "am start -a android.intent.action.VIEW -d {quoted}"
        ));
        assert_eq!(p.d.counters().shell_commands, before + 1, "{url}");
        assert!(e.code == 0 || e.code == 1, "{url}");
        if e.code == 0 {
            assert!(["not_found", "goods"].contains(&p.page()), "{url}");
        }
    }
    assert!(!canary.exists());
    // Unquoted: the shell refuses the construct rather than running it.
    let e = p.sh(&format!(
        "am start -d pinduoduo://x/goods.html?goods_id=$(touch {c})"
    ));
    assert_eq!(e.code, 2);
    assert!(!canary.exists());
}

#[test]
fn dump_faults_and_stale_files() {
    let mut cfg = fixed_config();
    cfg.faults = FaultPlan {
        dump_faults: vec![
            (2, DumpFault::IdleState),
            (3, DumpFault::NullRoot),
            (5, DumpFault::Stale),
        ],
        ..FaultPlan::default()
    };
    let mut p = Phone::new(&cfg);
    let e = p.sh("uiautomator dump");
    assert_eq!(e.code, 0);
    let first = p.sh("cat /sdcard/window_dump.xml").stdout;
    p.open("737116531267");
    let e = p.sh("uiautomator dump");
    assert_eq!(e.code, 0, "idle-state failure still exits 0");
    assert_eq!(
        String::from_utf8_lossy(&e.stderr),
        "ERROR: could not get idle state.\n"
    );
    let e = p.sh("uiautomator dump");
    assert!(String::from_utf8_lossy(&e.stderr)
        .contains("null root node returned by UiTestAutomationBridge"));
    // The old file is still there: reading it now is a stale read of the home page.
    assert_eq!(p.sh("cat /sdcard/window_dump.xml").stdout, first);
    // Deleting first (or dumping to /dev/tty) avoids it.
    assert_eq!(p.sh("rm /sdcard/window_dump.xml").code, 0);
    assert_eq!(p.sh("cat /sdcard/window_dump.xml").code, 1);
    let e = p.sh("uiautomator dump /dev/tty");
    assert!(String::from_utf8_lossy(&e.stdout).contains("发起拼单"));
    let e = p.sh("uiautomator dump /dev/tty");
    assert!(
        String::from_utf8_lossy(&e.stdout).contains("发起拼单"),
        "stale = previous dump"
    );
    assert_eq!(p.d.counters().dump_failures, 3);
}

#[test]
fn popups_on_schedule_and_dismissal() {
    let mut cfg = fixed_config();
    cfg.popups = PopupSchedule::At(vec![(2, PopupKind::RedPacket), (3, PopupKind::Upgrade)]);
    let mut p = Phone::new(&cfg);
    p.open("737116531267");
    assert!(p.xml().contains("专属现金红包"));
    // Modal: the buy button underneath does not react.
    p.tap("发起拼单");
    assert_eq!(p.page(), "goods");
    p.tap("关闭弹窗");
    assert!(!p.xml().contains("专属现金红包"));
    p.open("602938475610");
    assert!(p.xml().contains("立即升级"));
    p.tap("下次再说");
    p.tap("发起拼单");
    assert_eq!(p.page(), "sku_sheet");

    // Seeded schedules are deterministic.
    let run = |seed: u64| {
        let mut c = fixed_config();
        c.seed = seed;
        c.popups = PopupSchedule::Seeded { percent: 50 };
        let mut p = Phone::new(&c);
        let mut seen = Vec::new();
        for _ in 0..10 {
            p.open("737116531267");
            seen.push(p.d.app().popup());
            p.sh("input keyevent 4");
        }
        seen
    };
    assert_eq!(run(7), run(7));
    assert!(run(7).iter().any(Option::is_some));
}

#[test]
fn shell_builtins_and_exit_codes() {
    let mut p = Phone::new(&fixed_config());
    let e = p.sh("false ; echo __RC=$?");
    assert_eq!(String::from_utf8_lossy(&e.stdout), "__RC=1\n");
    let e = p.sh("nope ; echo __RC=$?");
    assert_eq!(String::from_utf8_lossy(&e.stdout), "__RC=127\n");
    let e = p.sh("true && echo yes || echo no");
    assert_eq!(String::from_utf8_lossy(&e.stdout), "yes\n");
    assert_eq!(
        String::from_utf8_lossy(&p.sh("wm size").stdout),
        "Physical size: 1080x2400\n"
    );
    assert_eq!(
        String::from_utf8_lossy(&p.sh("getprop ro.build.version.sdk").stdout),
        "33\n"
    );
    assert!(
        String::from_utf8_lossy(&p.sh("pm list packages pinduoduo").stdout)
            .contains("package:com.xunmeng.pinduoduo")
    );
    assert!(
        String::from_utf8_lossy(&p.sh("dumpsys window").stdout).contains("mCurrentFocus=Window{")
    );
    assert_eq!(p.sh("input tap x y").code, 1);
    // Pipes between builtins: the usual focus query works.
    let e = p.sh("dumpsys window | grep mCurrentFocus");
    let out = String::from_utf8_lossy(&e.stdout).to_string();
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(out.contains("mCurrentFocus=Window{") && out.contains("HomeActivity"));
    // Android 10+ prints the focus in the displays section (DisplayContent.dump), not in
    // `dumpsys window windows`.
    let e = p.sh("dumpsys window displays | grep -E 'mCurrentFocus|mFocusedApp' | wc -l");
    assert_eq!(String::from_utf8_lossy(&e.stdout), "2\n");
    let e = p.sh("dumpsys window windows | grep -E 'mCurrentFocus|mFocusedApp' | wc -l");
    assert_eq!(String::from_utf8_lossy(&e.stdout), "0\n");
    let e = p.sh("echo a | grep b ; echo __RC=$?");
    assert_eq!(String::from_utf8_lossy(&e.stdout), "__RC=1\n");
    let e = p.sh("false && echo x | grep x ; echo __RC=$?");
    assert_eq!(
        String::from_utf8_lossy(&e.stdout),
        "__RC=1\n",
        "a skipped pipeline as a whole"
    );
    p.sh("am force-stop com.xunmeng.pinduoduo");
    assert_eq!(p.page(), "launcher");
    assert!(p.xml().contains("com.miui.home"));
    p.tap("拼多多");
    assert_eq!(p.page(), "home");
    assert_eq!(
        String::from_utf8_lossy(&p.sh("date +%Y-%m-%d").stdout),
        "2026-11-30\n"
    );
    assert!(
        p.d.counters().device_time_ms > 0,
        "simulated time is accounted"
    );
}

#[test]
fn same_seed_same_phone() {
    let run = || {
        let mut p = Phone::new(&fixed_config());
        p.open("704455667788");
        p.tap("发起拼单");
        p.tap("3层100抽*10包");
        p.tap("提交订单 ¥10.9");
        (
            p.d.app().ledger().orders()[0].order_sn.clone(),
            p.xml(),
            p.d.counters().device_time_ms,
        )
    };
    assert_eq!(run(), run());
}

#[test]
fn cli_prints_listening_and_serves() {
    let dir = tempfile::tempdir().expect("tmp");
    struct Kill(std::process::Child);
    impl Drop for Kill {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = Kill(
        Command::new(env!("CARGO_BIN_EXE_sim-phone"))
            .args(["--listen", "127.0.0.1:0", "--state"])
            .arg(dir.path().join("s.json"))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn"),
    );
    let mut out = child.0.stdout.take().expect("stdout");
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while out.read(&mut b).unwrap_or(0) == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    let line = String::from_utf8_lossy(&line).to_string();
    let addr: SocketAddr = line
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("{line}"))
        .parse()
        .expect("addr");
    let (_raw, banner, _) = Raw::connect(addr, 0x0100_0001, 4096);
    assert!(banner.contains("shell_v2"));
}

#[test]
fn realistic_profile_really_waits_and_zero_does_not() {
    // Lower bounds only: a sleep never ends early, so this cannot flake.
    let run = |profile: cmautobuy_sim_phone::LatencyProfile| {
        let mut cfg = fixed_config();
        cfg.profile = profile;
        let phone = start(cfg);
        let (mut raw, _, _) = Raw::connect(phone.addr(), 0x0100_0001, 1 << 20);
        let t = Instant::now();
        raw.send(OPEN, 1, 0, b"shell,v2,raw:input tap 5 5; input tap 5 5\0");
        loop {
            match raw.recv().expect("packet") {
                (CLSE, _, _, _) => break,
                (WRTE, a0, a1, _) => raw.send(OKAY, a1, a0, &[]),
                _ => {}
            }
        }
        (t.elapsed(), phone.counters().device_time_ms)
    };
    let (real, real_ms) = run(cmautobuy_sim_phone::LatencyProfile::Realistic);
    assert!(
        real >= Duration::from_millis(140),
        "two taps ≥ 2 × 70 ms, took {real:?}"
    );
    assert!(real_ms >= 140);
    let (_, zero_ms) = run(cmautobuy_sim_phone::LatencyProfile::Zero);
    assert_eq!(zero_ms, real_ms, "same simulated time, same seed");
}

#[test]
fn fuzzed_command_lines_and_packets_never_hurt_the_phone() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let pieces = [
        "input",
        "tap",
        "swipe",
        "keyevent",
        "text",
        "am",
        "start",
        "-d",
        "-a",
        "uiautomator",
        "dump",
        "/dev/tty",
        "cat",
        "rm",
        "-f",
        "echo",
        "$?",
        "$(id)",
        "`id`",
        "'",
        "\"",
        "\\",
        ";",
        "&&",
        "||",
        "|",
        ">",
        "2>&1",
        "<",
        "(",
        ")",
        "#",
        "\n",
        "99999999999",
        "-5",
        "nan",
        "1e99",
        "4",
        "KEYCODE_BACK",
        "-p",
        "/sdcard/x",
        "date",
        "+%Q%",
        "sleep",
        "pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=737116531267",
        "dumpsys",
        "window",
        "getprop",
        "wm",
        "size",
        "pm",
        "list",
        "packages",
        "发起拼单",
    ];
    let mut p = Phone::new(&fixed_config());
    for _ in 0..1200 {
        let n = rng.gen_range(1..8);
        let line: Vec<&str> = (0..n)
            .map(|_| pieces[rng.gen_range(0..pieces.len())])
            .collect();
        let sep = if rng.gen_bool(0.5) { " " } else { "" };
        let e = p.sh(&line.join(sep));
        assert!(e.code >= 0 && e.code <= 255);
        // Taps anywhere, including far outside the screen.
        let (x, y) = (rng.gen_range(-100..1200), rng.gen_range(-100..2500));
        p.sh(&format!("input tap {x} {y}"));
    }
    assert_eq!(p.sh("true").code, 0);

    // Garbage on the wire: each connection dies alone, the phone keeps serving.
    let phone = start(fixed_config());
    for i in 0..50u32 {
        let mut s = TcpStream::connect(phone.addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        let len = rng.gen_range(1..200);
        let mut junk: Vec<u8> = (0..len).map(|_| rng.gen::<u8>()).collect();
        if i % 2 == 0 {
            // A valid CNXN first, then junk.
            let mut v = Vec::new();
            let data = b"host::\0";
            let sum: u32 = data.iter().map(|&b| u32::from(b)).sum();
            for w in [
                CNXN,
                0x0100_0000,
                4096,
                data.len() as u32,
                sum,
                CNXN ^ 0xffff_ffff,
            ] {
                v.extend_from_slice(&w.to_le_bytes());
            }
            v.extend_from_slice(data);
            v.append(&mut junk);
            junk = v;
        }
        let _ = s.write_all(&junk);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut sink = Vec::new();
        let _ = s.read_to_end(&mut sink);
    }
    let (_raw, banner, _) = Raw::connect(phone.addr(), 0x0100_0001, 4096);
    assert!(banner.starts_with("device::"));
}

#[test]
fn random_dump_failures_follow_the_seed() {
    let run = || {
        let mut cfg = fixed_config();
        cfg.faults.random_idle_failure_percent = 30;
        let mut p = Phone::new(&cfg);
        (0..40)
            .map(|_| p.sh("uiautomator dump /dev/tty").stderr.is_empty())
            .collect::<Vec<bool>>()
    };
    let a = run();
    assert_eq!(a, run(), "same seed, same failures");
    assert!(a.iter().any(|ok| !ok) && a.iter().any(|ok| *ok));
}

#[test]
fn interactive_shell_runs_lines_until_exit() {
    let phone = start(fixed_config());
    let (mut raw, _, _) = Raw::connect(phone.addr(), 0x0100_0001, 4096);
    raw.send(OPEN, 3, 0, b"shell:\0");
    let (cmd, ours, _, _) = raw.recv().expect("okay");
    assert_eq!(cmd, OKAY);
    raw.send(WRTE, 3, ours, b"echo hi; false ; echo rc=$?\nexit\n");
    let mut out = Vec::new();
    loop {
        match raw.recv().expect("packet") {
            (WRTE, a0, a1, d) => {
                out.extend_from_slice(&d);
                raw.send(OKAY, a1, a0, &[]);
            }
            (CLSE, _, _, _) => break,
            _ => {}
        }
    }
    let s = String::from_utf8_lossy(&out);
    assert!(s.contains("hi\n") && s.contains("rc=1\n"), "{s}");
}

#[test]
fn sync_list_and_stat_v2() {
    let phone = start(fixed_config());
    phone.run_shell("uiautomator dump /sdcard/a.xml; uiautomator dump /sdcard/sub/b.xml");
    let size_a = phone
        .with_device(|d| d.read_file("/sdcard/a.xml"))
        .expect("a")
        .len();
    let (mut raw, _, _) = Raw::connect(phone.addr(), 0x0100_0001, 1 << 20);
    raw.send(OPEN, 9, 0, b"sync:\0");
    let (cmd, ours, _, _) = raw.recv().expect("okay");
    assert_eq!(cmd, OKAY);
    let req = |id: &[u8; 4], path: &str| {
        let mut v = id.to_vec();
        v.extend_from_slice(&(path.len() as u32).to_le_bytes());
        v.extend_from_slice(path.as_bytes());
        v
    };
    let reply = |raw: &mut Raw, data: Vec<u8>| -> Vec<u8> {
        raw.send(WRTE, 9, ours, &data);
        let mut got = Vec::new();
        loop {
            match raw.recv().expect("packet") {
                (OKAY, _, _, _) => {}
                (WRTE, a0, a1, d) => {
                    got.extend_from_slice(&d);
                    raw.send(OKAY, a1, a0, &[]);
                    return got;
                }
                other => panic!("unexpected {:x}", other.0),
            }
        }
    };
    let st = reply(&mut raw, req(b"STA2", "/sdcard/a.xml"));
    assert_eq!(&st[..4], b"STA2");
    assert_eq!(
        u32::from_le_bytes([st[4], st[5], st[6], st[7]]),
        0,
        "no error"
    );
    let size = u64::from_le_bytes(st[40..48].try_into().expect("8 bytes"));
    assert_eq!(size as usize, size_a);
    let missing = reply(&mut raw, req(b"STA2", "/sdcard/nope"));
    assert_eq!(
        u32::from_le_bytes([missing[4], missing[5], missing[6], missing[7]]),
        2,
        "ENOENT"
    );
    let list = reply(&mut raw, req(b"LIST", "/sdcard"));
    let text = String::from_utf8_lossy(&list);
    assert!(text.contains("DENT") && text.contains("a.xml") && text.contains("sub"));
    assert!(list.ends_with(b"DONE\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"));
    let fail = reply(&mut raw, req(b"RECV", "/sdcard/nope"));
    assert_eq!(&fail[..4], b"FAIL");
}

#[test]
fn phone_restart_on_the_same_port_keeps_the_ledger() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = fixed_config();
    cfg.state_file = Some(dir.path().join("nested/state.json"));
    let phone = start(cfg.clone());
    let addr = phone.addr();
    for line in [
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=737788990011'",
        "input tap 922 2278",
    ] {
        assert_eq!(phone.run_shell(line).code, 0);
    }
    let submit = find_target(
        &phone.with_device(|d| d.app().screen(d.now())),
        "提交订单 ¥29.9",
    )
    .expect("footer");
    let (x, y) = submit.center();
    phone.run_shell(&format!("input tap {x} {y}"));
    assert_eq!(phone.current_page(), "payment");
    let before = phone.orders();
    assert_eq!(before.len(), 1);
    phone.shutdown();

    let phone = SimPhone::bind(addr, cfg).expect("same port again");
    assert_eq!(phone.orders(), before, "the ledger survived the restart");
    assert_eq!(phone.current_page(), "home", "the app itself restarted");
    let (_raw, banner, _) = Raw::connect(phone.addr(), 0x0100_0001, 4096);
    assert!(banner.starts_with("device::"));
}

// ---------------------------------------------------------------------------------------
// the real app's variants: per-goods catalog keys

/// 单独购买, the options named, and the footer's text.
fn open_sheet(p: &mut Phone, goods_id: &str, options: &[&str]) {
    p.open(goods_id);
    assert_eq!(p.page(), "goods", "{goods_id}");
    p.tap("单独购买");
    assert_eq!(p.page(), "sku_sheet");
    for o in options {
        p.tap(o);
    }
}

/// The text of the sheet's footer (the node inside the clickable footer frame).
fn footer_text(p: &Phone) -> String {
    let s = p.screen();
    let mut out = Vec::new();
    visit(&s, &mut |n| {
        if n.text.starts_with("提交订单")
            || n.text.starts_with("先用后付 0元下单")
            || n.text.starts_with("立即支付")
            || n.text == "确定"
            || n.text == "立即购买"
        {
            out.push(n.text.clone());
        }
    });
    assert_eq!(out.len(), 1, "one footer label: {out:?}");
    out.remove(0)
}

#[test]
fn icon_options_show_a_hash_in_the_selection() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344501", &["乌龙奶茶+手持化妆镜+礼盒"]);
    let x = p.xml();
    // The real sheet: page text "  乌龙奶茶+…" (icon spaces), 已选 "#乌龙奶茶+…".
    assert!(x.contains("text=\"  乌龙奶茶+手持化妆镜+礼盒\""), "{x}");
    assert!(
        x.contains("text=\"已选: #乌龙奶茶+手持化妆镜+礼盒\""),
        "{x}"
    );
    p.tap("茶杏色+手持化妆镜+礼盒");
    assert!(p.xml().contains("text=\"已选: 茶杏色+手持化妆镜+礼盒\""));
    // A name that itself contains # and + is shown as is.
    p.tap("复古红棕#TAN周一美式+礼盒");
    assert!(p.xml().contains("text=\"已选: 复古红棕#TAN周一美式+礼盒\""));
    p.tap("玫瑰茶语+手持化妆镜+礼盒");
    let x = p.xml();
    assert!(
        x.contains("text=\"已选: #玫瑰茶语+手持化妆镜+礼盒\""),
        "{x}"
    );
    assert!(x.contains("最后9件 ¥69"));
    p.tap("提交订单 ¥69");
    assert_eq!(p.page(), "payment");
    let o = &p.d.app().ledger().orders()[0];
    assert_eq!(
        o.options["color"], "玫瑰茶语+手持化妆镜+礼盒",
        "canonical name"
    );
    // Several dimensions: each icon option carries its own "#", joined by spaces as before.
    let mut q = Phone::new(&fixed_config());
    open_sheet(&mut q, "715566778899", &[]);
    assert!(
        q.xml().contains("已选: #乌龙奶茶+化妆镜+礼盒"),
        "preselected icon option"
    );
}

#[test]
fn payment_methods_show_their_rows_and_place_orders_their_way() {
    // (goods, options, row, footer, page after the order button, status, paid)
    let cases = [
        (
            "811223344510",
            vec!["白色", "M"],
            "使用#微信支付，更换支付方式",
            "提交订单 ¥25",
            "payment",
            "unpaid",
            false,
        ),
        (
            "811223344502",
            vec!["黑色", "L"],
            "使用#先用后付，确认收货后自动付款",
            "先用后付 0元下单 ¥39.9",
            "order_result",
            "committed_unpaid",
            false,
        ),
        (
            "811223344503",
            vec!["双层"],
            "使用#多多支付(免密支付)，更换支付方式",
            "提交订单 ¥59.9",
            "order_result",
            "paid",
            true,
        ),
    ];
    for (id, options, row, footer, after, status, paid) in cases {
        let mut p = Phone::new(&fixed_config());
        open_sheet(&mut p, id, &options);
        let s = p.screen();
        // The real row's shape: a TextView inside a LinearLayout inside a clickable ViewGroup.
        assert!(
            has(&s, |n| n.class == "android.widget.TextView"
                && n.text == row),
            "{id}: row {row}"
        );
        assert!(
            find_target(&s, row).is_some(),
            "{id}: row has a clickable parent"
        );
        assert_eq!(footer_text(&p), footer, "{id}");
        p.tap(footer);
        assert_eq!(p.page(), after, "{id}");
        let orders = p.d.app().ledger().orders().to_vec();
        assert_eq!(orders.len(), 1, "{id}");
        assert_eq!(orders[0].status, status, "{id}");
        assert_eq!(orders[0].payment_attempted, paid, "{id}");
        assert_eq!(orders[0].payment_attempts, u32::from(paid), "{id}");
        let x = p.xml();
        match status {
            "committed_unpaid" => {
                assert!(x.contains("下单成功") && x.contains("先用后付 确认收货后自动付款¥39.9"))
            }
            "paid" => assert!(x.contains("支付成功") && x.contains("免密支付 实付¥59.9")),
            _ => assert!(x.contains("立即支付 ¥25")),
        }
        if after == "order_result" {
            // Neither order waits in 待付款; BACK leaves for the goods page.
            p.sh("input keyevent 4");
            assert_eq!(p.page(), "goods");
            p.sh("am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/orders.html?type=1'");
            assert_eq!(p.page(), "order_list");
            assert!(p.xml().contains("暂无相关订单"), "{id}");
        }
    }
}

#[test]
fn a_lagging_total_shows_the_previous_total_for_n_dumps() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344505", &[]);
    assert_eq!(footer_text(&p), "提交订单 ¥34", "39 − 5 before any choice");
    p.tap("藏青");
    // Two dumps still show the old total, the third the new one (45 − 5).
    for _ in 0..2 {
        assert!(p.xml().contains("提交订单 ¥34"));
    }
    assert!(p.xml().contains("提交订单 ¥40"));
    assert!(p.xml().contains("提交订单 ¥40"), "settled");
    // A change during the lag: the footer keeps what it showed.
    p.tap("XL");
    p.tap("增加数量");
    assert!(p.xml().contains("提交订单 ¥40"));
    p.tap("增加数量");
    for _ in 0..2 {
        assert!(p.xml().contains("提交订单 ¥40"));
    }
    let x = p.xml();
    assert!(x.contains("提交订单 ¥130"), "45 × 3 − 5: {x}");
    // The quantity field lags too; the order is placed at the real total.
    p.tap("减少数量");
    assert!(p.xml().contains("提交订单 ¥130"));
    p.tap("提交订单 ¥130");
    assert_eq!(p.page(), "payment");
    let o = &p.d.app().ledger().orders()[0];
    assert_eq!(
        (o.quantity, o.total_cent),
        (2, 8500),
        "the real total, not the shown one"
    );
    // Goods without the key never lag.
    let mut q = Phone::new(&fixed_config());
    open_sheet(&mut q, "811223344510", &["黑色", "L"]);
    q.tap("增加数量");
    assert!(q.xml().contains("提交订单 ¥50"));
}

#[test]
fn confirm_page_carries_payment_row_total_and_submit() {
    let mut p = Phone::new(&fixed_config());
    p.open("811223344506");
    p.tap("发起拼单");
    let x = p.xml();
    assert_eq!(footer_text(&p), "确定");
    assert!(
        !x.contains("提交订单") && !x.contains("更换支付方式"),
        "{x}"
    );
    // The spec sheet of the older flow: no address row (the address is on 确认订单), no
    // total; the goods block moves up into the row's place.
    for absent in [
        "张三",
        "138****0000",
        "科技园路",
        "手动添加地址",
        "合计",
        "¥74.8",
    ] {
        assert!(!x.contains(absent), "the spec sheet shows {absent}: {x}");
    }
    let s = p.screen();
    assert!(has(&s, |n| n.desc == "商品主图"
        && n.bounds == Rect::new(35, 358, 358, 681)));
    for present in [
        "tv_select_sku",
        "减少数量",
        "增加数量",
        "text=\"颜色\"",
        "text=\"容量\"",
    ] {
        assert!(x.contains(present), "the spec sheet lacks {present}");
    }
    p.tap("确定");
    assert_eq!(p.page(), "sku_sheet", "nothing chosen yet");
    assert_eq!(p.d.app().last_toast(), Some("请选择 颜色 容量"));
    p.tap("樱花粉");
    p.tap("500ml");
    p.tap("增加数量");
    p.tap("确定");
    assert_eq!(p.page(), "confirm_order");
    assert!(
        p.d.app().ledger().orders().is_empty(),
        "确定 orders nothing"
    );
    let x = p.xml();
    for needle in [
        "text=\"确认订单\"",
        "张三 138****0000",
        "广东省深圳市南山区科技园路1号",
        "颜色：樱花粉；容量：500ml",
        "text=\"¥38.9\"",
        "text=\"x2\"",
        "text=\"已减3元\"",
        "text=\"使用#微信支付，更换支付方式\"",
        "text=\"合计：\"",
        "text=\"¥74.8\"",
        "text=\"提交订单\"",
    ] {
        assert!(x.contains(needle), "确认订单 lacks {needle}: {x}");
    }
    assert!(p
        .sh("dumpsys activity top")
        .stdout
        .windows(8)
        .all(|w| w != b"goods_id"));
    p.tap("提交订单");
    assert_eq!(p.page(), "payment");
    let o = p.d.app().ledger().orders()[0].clone();
    assert_eq!(
        (o.quantity, o.total_cent, o.status.as_str()),
        (2, 7480, "unpaid")
    );
    assert_eq!(o.options["capacity"], "500ml");
    p.sh("input keyevent 4");
    p.tap("先去逛逛");
    assert_eq!(p.page(), "goods", "先去逛逛 leaves 确认订单 too");
    // 单独购买 reads 立即购买; BACK on 确认订单 returns to the sheet.
    p.tap("单独购买");
    assert_eq!(footer_text(&p), "立即购买");
    p.tap("天空蓝");
    p.tap("350ml");
    p.tap("立即购买");
    assert_eq!(p.page(), "confirm_order");
    p.sh("input keyevent 4");
    assert_eq!(p.page(), "sku_sheet");
    assert_eq!(p.d.app().ledger().orders().len(), 1);
}

const UNPAID_LINK: &str =
    "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/orders.html?type=1'";

#[test]
fn canvas_profile_hides_the_unpaid_entry_and_the_deep_link_reaches_it() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344507", &["6卷装"]);
    p.tap("提交订单 ¥22.9");
    p.sh("input keyevent 4");
    p.tap("先去逛逛");
    p.sh("input keyevent 4");
    assert_eq!(p.page(), "home");
    p.tap("个人中心");
    assert_eq!(p.page(), "profile");
    let s = p.screen();
    for t in ["待付款", "我的订单", "查看全部"] {
        assert!(find_target(&s, t).is_none(), "{t} is drawn on canvas");
    }
    assert!(!p.xml().contains("待付款"));
    // Tapping where the cell is drawn does nothing.
    p.sh("input tap 108 800");
    assert_eq!(p.page(), "profile");
    let e = p.sh(UNPAID_LINK);
    assert_eq!(e.code, 0);
    assert_eq!(p.page(), "order_list");
    let x = p.xml();
    assert!(
        x.contains("规格：6卷装") && x.contains("selected=\"true\""),
        "{x}"
    );
    // Still canvas after an ordinary goods was looked at: the newest order decides too.
    p.open("737116531267");
    p.sh("input keyevent 4");
    p.sh("input keyevent 4");
    p.tap("个人中心");
    assert!(find_target(&p.screen(), "待付款").is_none());

    // The label profile has its entry, and the deep link works there too (https form too).
    let mut q = Phone::new(&fixed_config());
    q.tap("个人中心");
    assert!(find_target(&q.screen(), "待付款").is_some());
    assert_eq!(q.sh(UNPAID_LINK).code, 0);
    assert_eq!(q.page(), "order_list");
    q.sh("am start -a android.intent.action.VIEW -d 'https://mobile.yangkeduo.com/orders.html?type=1&refer=x'");
    assert_eq!(q.page(), "order_list");
    q.sh("am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/orders.html?type=3'");
    assert_eq!(q.page(), "not_found", "only 待付款 is modelled");
}

#[test]
fn the_personal_link_opens_the_profile_over_home_with_the_account() {
    let mut p = Phone::new(&fixed_config());
    p.open("737116531267");
    let e = p.sh("am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/personal.html'");
    assert_eq!(e.code, 0);
    assert_eq!(p.page(), "profile");
    let x = p.xml();
    assert!(
        x.contains("text=\"拼多多用户\"") && x.contains("text=\"138****0000\""),
        "{x}"
    );
    // Over 首页, as the bottom tab opens it: BACK leaves the profile for home.
    p.sh("input keyevent 4");
    assert_eq!(p.page(), "home");
    p.sh("am start -a android.intent.action.VIEW -d 'https://mobile.yangkeduo.com/personal.html?refer_page_name=index'");
    assert_eq!(p.page(), "profile");
}

#[test]
fn folded_order_detail_must_be_scrolled_and_expanded() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344508", &["黑色"]);
    p.tap("提交订单 ¥12.5");
    let o = p.d.app().ledger().orders()[0].clone();
    let placed = o.created_at[..19].replace('T', " ");
    p.sh("input keyevent 4");
    p.tap("先去逛逛");
    assert_eq!(p.sh(UNPAID_LINK).code, 0);
    p.tap("颜色：黑色");
    assert_eq!(p.page(), "order_detail");
    let x = p.xml();
    // The paid amount as two labels without ¥; the order number and the fold below the
    // first screen; 下单时间 nowhere yet.
    assert!(
        x.contains("text=\"实付:\"") && x.contains("text=\"12.50元\""),
        "{x}"
    );
    assert!(!x.contains("实付款"));
    assert!(
        !x.contains("订单编号") && !x.contains("查看更多订单信息"),
        "{x}"
    );
    assert!(!x.contains("下单时间"));
    assert!(x.contains("android.widget.ScrollView") && x.contains("scrollable=\"true\""));
    assert!(x.contains("text=\"×1\""));
    p.sh("input swipe 540 1800 540 600 300");
    let x = p.xml();
    assert!(x.contains(&format!("订单编号：{}", o.order_sn)), "{x}");
    assert!(x.contains("查看更多订单信息") && !x.contains("下单时间"));
    p.tap("查看更多订单信息");
    let x = p.xml();
    assert!(x.contains(&format!("下单时间：{placed}")), "{x}");
    assert!(x.contains("支付方式：未支付") && !x.contains("查看更多订单信息"));
    // The page scrolls no further than its content; back up, the amount again.
    p.sh("input swipe 540 1800 540 200 300");
    p.sh("input swipe 540 1800 540 200 300");
    assert!(p.xml().contains("下单时间："));
    p.sh("input swipe 540 400 540 2000 300");
    assert!(p.xml().contains("text=\"12.50元\""));
    // 去支付 stays reachable in the fixed bottom bar.
    assert!(find_target(&p.screen(), "去支付").is_some());
    // One order's own deep link opens its detail, at the top and folded again.
    let e = p.sh(&format!(
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/order.html?order_sn={}'",
        o.order_sn
    ));
    assert_eq!(e.code, 0);
    assert_eq!(p.page(), "order_detail");
    assert!(!p.xml().contains("下单时间"));
    p.sh("am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/order.html?order_sn=261130-000000000000000'");
    assert_eq!(p.page(), "not_found");
}

#[test]
fn a_failing_deep_link_leaves_the_previous_page() {
    let mut p = Phone::new(&fixed_config());
    p.open("811223344510");
    let before = p.xml();
    assert!(before.contains("纯棉短袖T恤女宽松百搭"));
    p.open("811223344509");
    assert_eq!(p.page(), "goods");
    let x = p.xml();
    assert!(x.contains("纯棉短袖T恤女宽松百搭") && !x.contains("纯棉短袖T恤男夏季圆领"));
    assert!(matches!(
        p.d.app().page(),
        Some(cmautobuy_sim_phone::Page::Goods { goods_id }) if goods_id == "811223344510"
    ));
    // From the launcher the app comes to the front on the page it had.
    p.sh("input keyevent KEYCODE_HOME");
    assert_eq!(p.page(), "launcher");
    p.open("811223344509");
    assert_eq!(p.page(), "goods");
    assert!(p.xml().contains("纯棉短袖T恤女宽松百搭"));
    let top = String::from_utf8(p.sh("dumpsys activity top").stdout).expect("utf8");
    assert_eq!(goods_ids_in(&top), vec!["811223344510".to_string(); 4]);
    // Its sheet is the same shape as the other goods' (same option names).
    p.tap("单独购买");
    p.tap("白色");
    p.tap("M");
    assert!(p.xml().contains("已选: 白色 M"));
}

/// Every goods id `dumpsys activity top` carries, by the loose pattern a worker used on a
/// real phone (field notes §3a): `goods_id`, 1–5 of `\ " : = space`, then 6+ digits.
fn goods_ids_in(top: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = top;
    while let Some(i) = rest.find("goods_id") {
        rest = &rest[i + "goods_id".len()..];
        let sep = rest
            .chars()
            .take_while(|c| matches!(c, '\\' | '"' | ':' | '=' | ' '))
            .count();
        let digits: String = rest[sep..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if (1..=5).contains(&sep) && digits.len() >= 6 {
            out.push(digits);
        }
    }
    out
}

#[test]
fn dumpsys_activity_top_names_the_displayed_goods() {
    let mut p = Phone::new(&fixed_config());
    let home = String::from_utf8(p.sh("dumpsys activity top").stdout).expect("utf8");
    assert!(home.starts_with("TASK 10234:com.xunmeng.pinduoduo id=42 userId=0\n"));
    assert!(home.contains("  ACTIVITY com.xunmeng.pinduoduo/.ui.activity.HomeActivity "));
    assert!(!home.contains("goods_id") && !home.contains("goods.html"));

    p.open("737116531267");
    let top = String::from_utf8(p.sh("dumpsys activity top").stdout).expect("utf8");
    assert!(top.contains("  ACTIVITY com.xunmeng.pinduoduo/.activity.NewPageActivity "));
    assert!(
        top.contains("url='goods.html?thumb_url=https%3A%2F%2F"),
        "{top}"
    );
    assert!(top.contains("&goods_id=737116531267&"));
    assert!(
        top.contains("props='{\\\"thumb_url\\\":"),
        "escaped JSON: {top}"
    );
    assert!(top.contains("\\\"goods_id\\\":\\\"737116531267\\\""));
    assert!(top.contains("FastJsWebView"));
    assert_eq!(goods_ids_in(&top), vec!["737116531267".to_string(); 4]);
    // The sheet sits over the same page.
    p.tap("发起拼单");
    let top = String::from_utf8(p.sh("dumpsys activity top").stdout).expect("utf8");
    assert_eq!(goods_ids_in(&top), vec!["737116531267".to_string(); 4]);

    // After a redirect: the target's id, never the link's.
    p.open("671122334455");
    let top = String::from_utf8(p.sh("dumpsys activity top").stdout).expect("utf8");
    assert!(!top.contains("671122334455"));
    assert_eq!(goods_ids_in(&top), vec!["737116531267".to_string(); 4]);

    // Other pages: nothing of the kind.
    p.open("682233445566");
    assert_eq!(p.page(), "login");
    let top = String::from_utf8(p.sh("dumpsys activity top").stdout).expect("utf8");
    assert!(top.contains("ACTIVITY com.xunmeng.pinduoduo/.login.LoginActivity"));
    assert!(goods_ids_in(&top).is_empty() && !top.contains("goods_id"));
    p.sh("input keyevent KEYCODE_HOME");
    let top = String::from_utf8(p.sh("dumpsys activity top").stdout).expect("utf8");
    assert!(top.contains("ACTIVITY com.miui.home/.launcher.Launcher"));
    assert!(!top.contains("goods_id"));

    // Through the real adb, piped through grep as a client would.
    let phone = start(fixed_config());
    let adb = AdbServer::start();
    let serial = phone.serial();
    adb.connect(&serial);
    // adb joins its words with spaces: one word carries the whole quoted command line.
    let link = "'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=671122334455'";
    let o = adb.shell(
        &serial,
        &[&format!("am start -a android.intent.action.VIEW -d {link}")],
    );
    assert!(o.status.success(), "{o:?}");
    let o = adb.shell(
        &serial,
        &["dumpsys", "activity", "top", "|", "grep", "goods_id"],
    );
    assert!(o.status.success(), "{o:?}");
    let out = text(&o);
    assert_eq!(
        goods_ids_in(&out),
        vec!["737116531267".to_string(); 4],
        "{out}"
    );
}

#[test]
fn show_goods_id_is_a_per_goods_key() {
    // (The global switch is covered by `special_goods_pages_and_urls`.)
    let mut p = Phone::new(&fixed_config());
    p.open("811223344504");
    assert!(
        p.xml().contains("text=\"商品编号：811223344504\""),
        "the goods asks for it"
    );
    p.open("811223344510");
    assert!(
        !p.xml().contains("商品编号"),
        "off by default, as on real pages"
    );
}

#[test]
fn the_account_address_and_pdd_version_show_where_the_real_app_shows_them() {
    use cmautobuy_sim_phone::{Account, Address, PddVersion};
    let mut p = Phone::new(&fixed_config());
    // The default account's address in the sheet's address block.
    open_sheet(&mut p, "737116531267", &[]);
    let x = p.xml();
    assert!(x.contains("text=\"张三 138****0000\""), "{x}");
    assert!(x.contains("text=\"广东省深圳市南山区科技园路1号\""), "{x}");
    // Another preselected address: the sheet follows, and the order records it.
    let warehouse = Address {
        receiver: "李四".into(),
        phone: "139****1234".into(),
        text: "浙江省杭州市萧山区集货路88号转运仓".into(),
    };
    let mut acc = p.d.app().account().clone();
    acc.address = Some(warehouse.clone());
    p.d.app_mut().set_account(acc.clone());
    let x = p.xml();
    assert!(x.contains("text=\"李四 139****1234\""), "{x}");
    assert!(x.contains("浙江省杭州市萧山区集货路88号转运仓"), "{x}");
    assert!(!x.contains("张三"), "{x}");
    p.tap("黑色");
    p.tap("L");
    p.tap("提交订单 ¥59");
    assert_eq!(p.page(), "payment");
    let o = p.d.app().ledger().orders()[0].clone();
    assert_eq!(o.ship_to.as_ref(), Some(&warehouse));
    // No address: 手动添加地址 on the sheet, 手动添加收货地址 on 确认订单, no order.
    acc.address = None;
    p.d.app_mut().set_account(acc.clone());
    open_sheet(&mut p, "737116531267", &["黑色", "L"]);
    assert!(p.xml().contains("text=\"手动添加地址\""));
    p.tap("提交订单 ¥59");
    assert_eq!(p.d.app().last_toast(), Some("请先添加收货地址"));
    assert_eq!(p.d.app().ledger().orders().len(), 1);
    p.open("811223344506");
    p.tap("发起拼单");
    p.tap("樱花粉");
    p.tap("500ml");
    p.tap("确定");
    assert_eq!(p.page(), "confirm_order");
    assert!(p.xml().contains("text=\"手动添加收货地址\""));
    // 个人中心: nickname and masked phone, and another account after a change.
    let mut q = Phone::new(&fixed_config());
    q.tap("个人中心");
    let x = q.xml();
    assert!(
        x.contains("text=\"拼多多用户\"") && x.contains("text=\"138****0000\""),
        "{x}"
    );
    q.d.app_mut().set_account(Account {
        nickname: "跨境仓小号".into(),
        masked_phone: "177****5678".into(),
        address: Some(warehouse),
    });
    let x = q.xml();
    assert_eq!(q.page(), "profile");
    assert!(
        x.contains("text=\"跨境仓小号\"") && x.contains("text=\"177****5678\""),
        "{x}"
    );
    // dumpsys package: versionCode / versionName as Android prints them; an update.
    let out = |p: &mut Phone| {
        String::from_utf8(
            p.sh("dumpsys package com.xunmeng.pinduoduo | grep version")
                .stdout,
        )
        .expect("utf8")
    };
    assert_eq!(
        out(&mut p),
        "    versionCode=73600 minSdk=21 targetSdk=30\n    versionName=7.36.0\n"
    );
    p.d.app_mut().set_pdd_version(PddVersion {
        name: "7.37.0".into(),
        code: 73700,
    });
    assert!(out(&mut p).contains("versionName=7.37.0"));
    assert!(p.sh("dumpsys package com.example.none").stdout.is_empty());
}

#[test]
fn the_handle_changes_address_account_and_version_mid_test() {
    let phone = start(fixed_config());
    phone.set_address(None);
    assert_eq!(phone.account().address, None);
    phone.set_pdd_version("7.40.1", 74010);
    let o = phone.run_shell("dumpsys package com.xunmeng.pinduoduo");
    let t = String::from_utf8(o.stdout).expect("utf8");
    assert!(t.contains("    versionName=7.40.1\n"), "{t}");
    assert_eq!(phone.pdd_version().code, 74010);
    phone.shutdown();
}

// ---------------------------------------------------------------------------------------
// order numbers: unique per phone

/// 737788990011 through 发起拼单 and its footer, on a running phone: the new order's number.
fn order_once(phone: &SimPhoneHandle) -> String {
    let before = phone.orders().len();
    for line in [
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=737788990011'",
        "input tap 922 2278",
    ] {
        assert_eq!(phone.run_shell(line).code, 0);
    }
    let submit = find_target(
        &phone.with_device(|d| d.app().screen(d.now())),
        "提交订单 ¥29.9",
    )
    .expect("footer");
    let (x, y) = submit.center();
    phone.run_shell(&format!("input tap {x} {y}"));
    let orders = phone.orders();
    assert_eq!(orders.len(), before + 1);
    orders[before].order_sn.clone()
}

fn order_in_process(p: &mut Phone) -> String {
    let before = p.d.app().ledger().orders().len();
    p.open("737788990011");
    p.tap("发起拼单");
    p.tap("提交订单 ¥29.9");
    let orders = p.d.app().ledger().orders();
    assert_eq!(orders.len(), before + 1);
    orders[before].order_sn.clone()
}

#[test]
fn two_phones_with_the_same_seed_number_their_orders_differently() {
    // Two running phones, in-memory ledgers, the same seed and clock: the salt comes from
    // each phone's serial.
    let (a, b) = (start(fixed_config()), start(fixed_config()));
    let (sa, sb) = (order_once(&a), order_once(&b));
    assert_ne!(sa, sb, "same seed, same purchase, two phones");
    for sn in [&sa, &sb] {
        assert!(sn.starts_with("261130-") && sn.len() == 7 + 15, "{sn}");
        assert!(sn[7..].bytes().all(|c| c.is_ascii_digit()), "{sn}");
    }
    // Two phones on state files of their own: each file's salt, drawn when it was created.
    let dir = tempfile::tempdir().expect("tmp");
    let mut numbers = Vec::new();
    for name in ["a.json", "b.json"] {
        let mut cfg = fixed_config();
        cfg.state_file = Some(dir.path().join(name));
        numbers.push(order_in_process(&mut Phone::new(&cfg)));
    }
    assert_ne!(numbers[0], numbers[1]);
    // A bare in-process device (no serial, no file) stays reproducible: see
    // same_seed_same_phone.
}

#[test]
fn a_restarted_phone_keeps_its_salt_and_never_repeats_a_number() {
    let dir = tempfile::tempdir().expect("tmp");
    let state = dir.path().join("state.json");
    let mut cfg = fixed_config();
    cfg.state_file = Some(state.clone());
    let first = order_in_process(&mut Phone::new(&cfg));
    let salt = |p: &std::path::Path| {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(p).expect("state")).expect("json");
        v["order_sn_salt"].as_u64().expect("a salt in the file")
    };
    let s1 = salt(&state);
    assert!(s1 > 0 && s1 < (1 << 53));
    let mut p = Phone::new(&cfg);
    let second = order_in_process(&mut p);
    let third = order_in_process(&mut p);
    assert_eq!(
        salt(&state),
        s1,
        "the salt is the file's, kept over restarts"
    );
    let all = [first.clone(), second.clone(), third.clone()];
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert_ne!(a, b, "{all:?}");
        }
    }
    // The same file on a running phone (whatever its port): the file's salt, not the serial's.
    let phone = start(cfg.clone());
    let fourth = order_once(&phone);
    assert!(!all.contains(&fourth));
    phone.shutdown();
    assert_eq!(salt(&state), s1);

    // A ledger written before salts: read as it is, given a salt on its first write.
    let old = dir.path().join("old.json");
    let orders: Vec<serde_json::Value> = {
        let v: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&state).expect("state")).expect("json");
        v["orders"].as_array().expect("orders")[..1].to_vec()
    };
    std::fs::write(
        &old,
        serde_json::to_vec(&serde_json::json!({"schema_version": 1, "orders": orders}))
            .expect("json"),
    )
    .expect("write");
    let mut cfg = fixed_config();
    cfg.state_file = Some(old.clone());
    let mut p = Phone::new(&cfg);
    assert_eq!(p.d.app().ledger().orders().len(), 1, "the old file reads");
    let next = order_in_process(&mut p);
    assert_ne!(next, first);
    assert!(salt(&old) > 0, "the first write stored a salt");
    assert_eq!(p.d.app().ledger().orders().len(), 2);
}

// ---------------------------------------------------------------------------------------
// The money path's variants

/// The clickable footer frame every order button sits in.
const FOOTER: Rect = Rect::new(334, 2213, 1080, 2354);

/// The first node with exactly this text inside `area` (panics when there is none).
fn node_in(s: &Screen, text: &str, area: Rect) -> Node {
    let mut found = None;
    visit(s, &mut |n| {
        let inside = n.bounds.intersect(&area) == n.bounds;
        if found.is_none() && n.text == text && inside {
            found = Some(n.clone());
        }
    });
    found.unwrap_or_else(|| panic!("no node {text:?} in {area:?}"))
}

/// The footer band of the sheet (添加 / 合计 on the left, the order button on the right).
const FOOTER_BAND: Rect = Rect::new(0, 2213, 1080, 2354);

#[test]
fn checkout_button_confirm_shows_the_total_on_the_left_and_orders_like_submit() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344511", &["粉色", "M"]);
    assert_eq!(footer_text(&p), "确定");
    let s = p.screen();
    assert_eq!(
        find_target(&s, "确定"),
        Some(FOOTER),
        "确定 in the footer frame"
    );
    // 合计： + ¥47.2 where 添加 is otherwise: two non-clickable TextViews left of the button.
    for t in ["合计：", "¥47.2"] {
        let n = node_in(&s, t, FOOTER_BAND);
        assert_eq!(n.class, "android.widget.TextView");
        assert!(
            !n.clickable && n.bounds.r <= FOOTER.l && n.bounds.t >= FOOTER.t,
            "{t}"
        );
    }
    let x = p.xml();
    assert!(
        !x.contains("text=\"添加\"") && !x.contains("提交订单"),
        "{x}"
    );
    // The sheet keeps its address row and its payment row.
    for t in ["张三 138****0000", "使用#微信支付，更换支付方式"] {
        assert!(x.contains(t), "{t}");
    }
    p.tap("确定");
    assert_eq!(p.page(), "payment");
    let o = p.d.app().ledger().orders()[0].clone();
    assert_eq!((o.total_cent, o.status.as_str()), (4720, "unpaid"));
    assert!(!o.payment_attempted);
    assert!(p.xml().contains("立即支付 ¥47.2"));
    // The 合计 follows the quantity.
    let mut q = Phone::new(&fixed_config());
    open_sheet(&mut q, "811223344511", &["灰色", "L"]);
    q.tap("增加数量");
    assert!(q.xml().contains("text=\"¥94.4\""));
}

#[test]
fn checkout_button_confirm_no_total_keeps_the_add_label_and_shows_no_total() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344512", &["米白"]);
    assert_eq!(footer_text(&p), "确定");
    let s = p.screen();
    assert_eq!(find_target(&s, "确定"), Some(FOOTER));
    let x = p.xml();
    assert!(x.contains("text=\"添加\""), "{x}");
    assert!(!x.contains("合计") && !x.contains("提交订单"), "{x}");
    assert!(x.contains("使用#微信支付，更换支付方式") && x.contains("张三"));
    p.tap("确定");
    assert_eq!(p.page(), "payment");
    let o = &p.d.app().ledger().orders()[0];
    assert_eq!((o.total_cent, o.status.as_str()), (1990, "unpaid"));
}

#[test]
fn checkout_button_pay_now_orders_and_pays_at_once() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344513", &["白色"]);
    assert_eq!(footer_text(&p), "立即支付 ¥25.9");
    assert_eq!(find_target(&p.screen(), "立即支付 ¥25.9"), Some(FOOTER));
    p.tap("立即支付 ¥25.9");
    assert_eq!(p.page(), "order_result");
    let o = p.d.app().ledger().orders()[0].clone();
    assert_eq!(
        (o.status.as_str(), o.payment_attempted, o.payment_attempts),
        ("paid", true, 1)
    );
    let x = p.xml();
    assert!(x.contains("支付成功") && x.contains("实付¥25.9"), "{x}");
    assert!(!x.contains("免密支付"), "{x}");
}

#[test]
fn checkout_button_keys_are_refused_where_they_mean_nothing() {
    let base: serde_json::Value = serde_json::json!({
        "goods_id": "900000000001", "title": "t", "shop": "s", "price_cent": 100
    });
    let goods = |extra: serde_json::Value| {
        let mut g = base.clone();
        g.as_object_mut()
            .expect("object")
            .extend(extra.as_object().expect("object").clone());
        serde_json::from_value::<cmautobuy_sim_phone::catalog::Goods>(g).expect("goods")
    };
    for bad in [
        serde_json::json!({"confirm_page": true, "checkout_button": "confirm"}),
        serde_json::json!({"checkout_button": "pay_now", "payment_method": "pay_later"}),
    ] {
        assert!(Catalog::new(vec![goods(bad.clone())]).is_err(), "{bad}");
    }
    assert!(Catalog::new(vec![goods(
        serde_json::json!({"checkout_button": "confirm_no_total"})
    )])
    .is_ok());
}

/// The node whose content-desc is `desc`.
fn node_by_desc(s: &Screen, desc: &str) -> Node {
    let mut found = None;
    visit(s, &mut |n| {
        if found.is_none() && n.desc == desc {
            found = Some(n.clone());
        }
    });
    found.unwrap_or_else(|| panic!("no node desc {desc:?}"))
}

/// The text of the one EditText on screen.
fn quantity_field(s: &Screen) -> String {
    let mut out = Vec::new();
    visit(s, &mut |n| {
        if n.class == "android.widget.EditText" {
            out.push(n.text.clone());
        }
    });
    assert_eq!(out.len(), 1, "one quantity field: {out:?}");
    out.remove(0)
}

#[test]
fn confirm_page_stepper_changes_the_quantity_on_confirm_order() {
    let mut p = Phone::new(&fixed_config());
    p.open("811223344514");
    p.tap("发起拼单");
    p.tap("米黄");
    p.tap("110cm");
    p.tap("确定");
    assert_eq!(p.page(), "confirm_order");
    let s = p.screen();
    // The sheet's stepper in the goods block, instead of "x1".
    assert_eq!(quantity_field(&s), "1");
    let minus = node_by_desc(&s, "减少数量");
    let plus = node_by_desc(&s, "增加数量");
    assert_eq!(minus.class, "android.widget.ImageView");
    assert!(minus.clickable && plus.clickable && plus.enabled);
    assert!(
        minus.bounds.t >= 480 && plus.bounds.b <= 820,
        "in the goods block"
    );
    let x = p.xml();
    assert!(!x.contains("text=\"x1\""), "{x}");
    assert!(x.contains("text=\"¥45.9\""), "合计 of one");
    p.tap("增加数量");
    p.tap("增加数量");
    let s = p.screen();
    assert_eq!(quantity_field(&s), "3");
    assert!(
        !node_by_desc(&s, "增加数量").enabled,
        "the + stops at 限购 3"
    );
    p.tap("增加数量");
    assert_eq!(quantity_field(&p.screen()), "3");
    assert!(
        p.xml().contains("text=\"¥137.7\""),
        "the 合计 follows: 45.9 × 3"
    );
    p.tap("减少数量");
    assert!(p.xml().contains("text=\"¥91.8\""));
    // Typed into the focused field, as on the sheet.
    p.tap("2");
    p.sh("input text 3");
    assert_eq!(quantity_field(&p.screen()), "3");
    p.tap("减少数量");
    p.tap("提交订单");
    assert_eq!(p.page(), "payment");
    let o = &p.d.app().ledger().orders()[0];
    assert_eq!((o.quantity, o.total_cent), (2, 9180));
    // BACK from 确认订单 returns to the sheet, which kept its own quantity.
    let mut q = Phone::new(&fixed_config());
    q.open("811223344514");
    q.tap("发起拼单");
    q.tap("藏蓝");
    q.tap("120cm");
    q.tap("确定");
    q.tap("增加数量");
    q.sh("input keyevent 4");
    assert_eq!(q.page(), "sku_sheet");
    assert_eq!(quantity_field(&q.screen()), "1");
}

#[test]
fn confirm_page_may_reset_the_quantity_to_one() {
    let mut p = Phone::new(&fixed_config());
    p.open("811223344515");
    p.tap("单独购买");
    p.tap("雾蓝");
    p.tap("增加数量");
    p.tap("增加数量");
    assert_eq!(quantity_field(&p.screen()), "3");
    p.tap("立即购买");
    assert_eq!(p.page(), "confirm_order");
    let x = p.xml();
    assert!(
        x.contains("text=\"x1\"") && !x.contains("text=\"x3\""),
        "{x}"
    );
    assert!(x.contains("text=\"¥22.9\""), "合计 of one: {x}");
    p.tap("提交订单");
    let o = &p.d.app().ledger().orders()[0];
    assert_eq!((o.quantity, o.total_cent), (1, 2290));
    // Without the key 确认订单 keeps the sheet's quantity (confirm_page_carries_…).
}

/// The children of the node whose children include the clickable footer frame.
fn footer_siblings(s: &Screen) -> Vec<Node> {
    let mut out = None;
    visit(s, &mut |n| {
        if n.children.iter().any(|c| c.bounds == FOOTER && c.clickable) {
            out = Some(n.children.clone());
        }
    });
    out.expect("the footer's parent")
}

#[test]
fn a_promo_bubble_lies_over_the_order_button_until_closed() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344516", &["燕麦色"]);
    let s = p.screen();
    let kids = footer_siblings(&s);
    let fi = kids
        .iter()
        .position(|c| c.bounds == FOOTER)
        .expect("footer");
    let bi = kids
        .iter()
        .position(|c| {
            c.children.iter().any(|k| {
                k.children
                    .iter()
                    .any(|t| t.text == "开通多多支付，本单立减5元")
            })
        })
        .expect("the bubble is a sibling of the footer");
    assert!(bi > fi, "a later sibling");
    let (bubble, footer) = (&kids[bi], &kids[fi]);
    assert_eq!(bubble.class, "android.view.ViewGroup");
    assert!(bubble.clickable && bubble.package == "com.xunmeng.pinduoduo");
    assert_eq!(bubble.rid, "com.xunmeng.pinduoduo:id/pdd");
    let (cx, cy) = FOOTER.center();
    assert!(bubble.bounds.contains(cx, cy), "over the button's centre");
    let close = node_by_desc(&s, "关闭提示");
    assert!(close.clickable && close.class == "android.widget.ImageView");
    assert!(bubble.bounds.intersect(&close.bounds) == close.bounds);
    assert!(close.bounds.l > cx, "at the bubble's right end");
    // The dump really draws it on top: a higher drawing-order, at the footer's depth.
    let x = p.xml();
    let line = |b: Rect| {
        let key = format!("bounds=\"[{},{}][{},{}]\"", b.l, b.t, b.r, b.b);
        x.lines()
            .find(|l| l.contains(&key) && l.contains("clickable=\"true\""))
            .unwrap_or_else(|| panic!("no line {key}"))
            .to_string()
    };
    let order = |l: &str| -> u32 {
        let i = l.find("drawing-order=\"").expect("drawing-order") + 15;
        l[i..]
            .split('"')
            .next()
            .expect("value")
            .parse()
            .expect("number")
    };
    let indent = |l: &str| l.len() - l.trim_start().len();
    let (bl, fl) = (line(bubble.bounds), line(footer.bounds));
    assert!(order(&bl) > order(&fl), "{bl}\n{fl}");
    assert_eq!(indent(&bl), indent(&fl));
    assert!(x.find(&bl) > x.find(&fl));

    // The tap a client aims at the order button's centre lands in the bubble: 开通多多支付.
    p.tap("提交订单 ¥15.9");
    assert_eq!(p.page(), "pay_promo");
    assert!(p.d.app().ledger().orders().is_empty(), "nothing ordered");
    let x = p.xml();
    assert!(
        x.contains("text=\"开通多多支付\"") && x.contains("text=\"立即开通\""),
        "{x}"
    );
    p.tap("立即开通");
    assert_eq!(p.d.app().last_toast(), Some("已提交开通申请"));
    assert_eq!(p.page(), "pay_promo");
    assert!(p.d.app().ledger().orders().is_empty());
    p.tap("返回");
    assert_eq!(p.page(), "sku_sheet");
    assert!(p.xml().contains("开通多多支付，本单立减5元"), "still there");
    p.sh("input keyevent 4");
    p.tap("单独购买");
    p.tap("燕麦色");

    // Closed, the bubble is gone for this sheet and the button orders.
    p.tap("关闭提示");
    assert_eq!(p.page(), "sku_sheet");
    assert!(!p.xml().contains("开通多多支付"));
    p.tap("提交订单 ¥15.9");
    assert_eq!(p.page(), "payment");
    assert_eq!(p.d.app().ledger().orders().len(), 1);
    // A new sheet shows it again.
    p.sh("input keyevent 4");
    p.tap("先去逛逛");
    p.tap("单独购买");
    assert!(p.xml().contains("开通多多支付，本单立减5元"));
}

/// The status texts of the order-list cards on screen, top to bottom.
fn card_statuses(s: &Screen) -> Vec<String> {
    let mut out = Vec::new();
    visit(s, &mut |n| {
        let status =
            ["待付款", "待支付", "等待付款", "待发货", "已取消"].contains(&n.text.as_str());
        if status && n.bounds.t > 330 && n.bounds.l >= 800 {
            out.push(n.text.clone());
        }
    });
    out
}

/// The selected tab of the order list.
fn selected_tab(s: &Screen) -> String {
    let mut out = Vec::new();
    visit(s, &mut |n| {
        if n.selected && n.class == "android.widget.TextView" && n.bounds.t == 250 {
            out.push(n.text.clone());
        }
    });
    assert_eq!(out.len(), 1, "{out:?}");
    out.remove(0)
}

const ALL_LINK: &str =
    "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/orders.html?type=0'";

#[test]
fn unpaid_wording_shows_on_the_card_and_the_detail() {
    for (id, option, wording) in [
        ("811223344517", "浅灰", "待支付"),
        ("811223344518", "磁吸式", "等待付款"),
        ("811223344510", "白色", "待付款"),
    ] {
        let mut p = Phone::new(&fixed_config());
        let mut options = vec![option];
        if id == "811223344510" {
            options.push("M");
        }
        open_sheet(&mut p, id, &options);
        let footer = footer_text(&p);
        p.tap(&footer);
        assert_eq!(p.page(), "payment", "{id}");
        p.sh(UNPAID_LINK);
        let s = p.screen();
        assert_eq!(selected_tab(&s), "待付款", "the tab keeps its name");
        assert_eq!(card_statuses(&s), vec![wording.to_string()], "{id}");
        let shop = catalog().goods(id).expect("goods").shop.clone();
        p.tap(&shop);
        assert_eq!(p.page(), "order_detail");
        let s = p.screen();
        assert!(
            has(&s, |n| n.text == wording && n.bounds.t == 280),
            "{id}: the detail's status"
        );
        if wording != "待付款" {
            assert!(!p.xml().contains("text=\"待付款\""), "{id}");
        }
    }
}

#[test]
fn the_all_tab_lists_every_order_newest_first_with_its_status() {
    let mut p = Phone::new(&fixed_config());
    let buy = |p: &mut Phone, id: &str, options: &[&str]| {
        open_sheet(p, id, options);
        let footer = footer_text(p);
        p.tap(&footer);
    };
    buy(&mut p, "811223344517", &["咖啡色"]); // unpaid, 待支付
    buy(&mut p, "811223344503", &["单层"]); // 免密支付: paid
    buy(&mut p, "811223344502", &["黑色", "M"]); // 先用后付: committed
    buy(&mut p, "811223344510", &["黑色", "L"]); // unpaid, then cancelled
    p.sh(UNPAID_LINK);
    assert_eq!(card_statuses(&p.screen()), vec!["待付款", "待支付"]);
    p.tap("取消订单");
    let orders = p.d.app().ledger().orders().to_vec();
    assert_eq!(
        orders.iter().map(|o| o.status.as_str()).collect::<Vec<_>>(),
        vec!["unpaid", "paid", "committed_unpaid", "cancelled"]
    );

    // type=0: the 全部 tab, selected, every order newest first.
    p.sh(ALL_LINK);
    assert_eq!(p.page(), "order_list");
    let s = p.screen();
    assert_eq!(selected_tab(&s), "全部");
    // The fourth card's head peeks in at the bottom.
    assert_eq!(
        card_statuses(&s),
        vec!["已取消", "待发货", "待发货", "待支付"]
    );
    // One 先用后付 label, on the 先用后付 order's card (the second).
    let mut labels = Vec::new();
    visit(&s, &mut |n| {
        if n.text == "先用后付" {
            labels.push(n.bounds);
        }
    });
    assert_eq!(labels.len(), 1, "{labels:?}");
    assert!(labels[0].t > 1000 && labels[0].t < 1100, "{labels:?}");
    let x = p.xml();
    assert!(
        !x.contains("去支付"),
        "paid, committed and cancelled cards have no pay button"
    );
    assert!(x.contains("提醒发货"));
    // The fourth card below the screen: the unpaid one with its wording and buttons.
    p.sh("input swipe 540 2000 540 900");
    let s = p.screen();
    assert_eq!(card_statuses(&s).last().map(String::as_str), Some("待支付"));
    assert!(find_target(&s, "去支付").is_some());

    // The https form opens the same tab; the tabs switch.
    p.sh("am start -a android.intent.action.VIEW -d 'https://mobile.yangkeduo.com/orders.html?type=0'");
    assert_eq!(selected_tab(&p.screen()), "全部");
    p.tap("待付款");
    let s = p.screen();
    assert_eq!(selected_tab(&s), "待付款");
    assert_eq!(card_statuses(&s), vec!["待支付"]);
    p.tap("全部");
    let s = p.screen();
    assert_eq!(selected_tab(&s), "全部");
    assert_eq!(card_statuses(&s).len(), 4);

    // A card opens its order's detail: the 先用后付 one reads 先用后付 / 确认收货后自动付款.
    p.tap("先用后付");
    assert_eq!(p.page(), "order_detail");
    let x = p.xml();
    assert!(
        x.contains(&format!("订单编号：{}", orders[2].order_sn)),
        "{x}"
    );
    for t in [
        "待发货",
        "支付方式：先用后付",
        "先用后付 确认收货后自动付款¥39.9",
    ] {
        assert!(x.contains(&format!("text=\"{t}\"")), "{t}: {x}");
    }
    // 个人中心's 查看全部 opens the 全部 tab, its 待付款 cell the 待付款 tab.
    p.sh("am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/personal.html'");
    assert_eq!(p.page(), "profile");
    p.tap("查看全部");
    assert_eq!(selected_tab(&p.screen()), "全部");
    p.tap("返回");
    p.tap("待付款");
    assert_eq!(selected_tab(&p.screen()), "待付款");
    // Other types are still not modelled.
    p.sh("am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/orders.html?type=3'");
    assert_eq!(p.page(), "not_found");
}

/// Tap the centre of the one clickable NAF node on screen (an unlabeled close icon).
fn tap_naf(p: &mut Phone) {
    let mut found = Vec::new();
    visit(&p.screen(), &mut |n| {
        if n.naf && n.clickable && n.text.is_empty() && n.desc.is_empty() {
            found.push(n.bounds);
        }
    });
    assert_eq!(found.len(), 1, "one unlabeled close icon: {found:?}");
    let (x, y) = found[0].center();
    p.sh(&format!("input tap {x} {y}"));
}

/// The order the payment page on screen is for.
fn paying(p: &Phone) -> String {
    match p.d.app().page() {
        Some(cmautobuy_sim_phone::Page::Payment { order_sn }) => order_sn.clone(),
        other => panic!("not the payment page: {other:?}"),
    }
}

/// A dialog button's shape: a clickable ViewGroup › FrameLayout › TextView `label`.
fn assert_dialog_button(s: &Screen, label: &str) {
    assert!(
        has(s, |n| n.class == "android.view.ViewGroup"
            && n.clickable
            && n.children.len() == 1
            && n.children[0].class == "android.widget.FrameLayout"
            && !n.children[0].clickable
            && n.children[0].children.len() == 1
            && n.children[0].children[0].class
                == "android.widget.TextView"
            && n.children[0].children[0].text == label),
        "button {label}"
    );
}

#[test]
fn a_repeat_order_raises_a_dialog_whose_buttons_pay_or_order_again() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344519", &["50只装"]);
    p.tap("提交订单 ¥9.9");
    let first = paying(&p);
    p.sh("input keyevent 4");
    p.tap("先去逛逛");
    p.tap("单独购买");
    p.tap("50只装");
    p.tap("提交订单 ¥9.9");
    assert_eq!(p.page(), "repeat_order_dialog");
    assert_eq!(
        p.d.app().ledger().orders().len(),
        1,
        "the dialog orders nothing"
    );
    let x = p.xml();
    for t in [
        "相同商品订单待支付",
        "您有1笔相同商品的订单尚未支付，是否继续下单？",
        "去支付",
        "继续下单",
    ] {
        assert!(x.contains(&format!("text=\"{t}\"")), "{t}: {x}");
    }
    let s = p.screen();
    assert_dialog_button(&s, "去支付");
    assert_dialog_button(&s, "继续下单");
    // The real dialog's frame: a focusable FrameLayout over nested ViewGroups.
    assert!(has(&s, |n| n.class == "android.widget.FrameLayout"
        && n.focusable
        && !n.clickable
        && n.children
            .first()
            .is_some_and(|c| c.class == "android.view.ViewGroup")));
    assert!(x.contains("NAF=\"true\""));
    // BACK and the close icon dismiss it: the sheet again, nothing ordered.
    p.sh("input keyevent 4");
    assert_eq!(p.page(), "sku_sheet");
    p.tap("提交订单 ¥9.9");
    assert_eq!(p.page(), "repeat_order_dialog");
    tap_naf(&mut p);
    assert_eq!(p.page(), "sku_sheet");
    assert_eq!(p.d.app().ledger().orders().len(), 1);
    // 去支付: the earlier order's cashier; still one order.
    p.tap("提交订单 ¥9.9");
    p.tap("去支付");
    assert_eq!(paying(&p), first);
    assert_eq!(p.d.app().ledger().orders().len(), 1);
    assert!(!p.d.app().ledger().orders()[0].payment_attempted);
    // 继续下单: a second order, placed as 提交订单 would have.
    p.sh("input keyevent 4");
    p.tap("先去逛逛");
    p.tap("单独购买");
    p.tap("100只装");
    p.tap("提交订单 ¥16.9");
    p.tap("继续下单");
    let second = paying(&p);
    let orders = p.d.app().ledger().orders().to_vec();
    assert_eq!(orders.len(), 2, "继续下单 places the second order");
    assert_ne!(first, second);
    assert_eq!(
        (orders[1].total_cent, orders[1].status.as_str()),
        (1690, "unpaid")
    );
    // Two unpaid now: the count follows, 去支付 opens the newest.
    p.sh("input keyevent 4");
    p.tap("先去逛逛");
    p.tap("单独购买");
    p.tap("50只装");
    p.tap("提交订单 ¥9.9");
    assert!(p
        .xml()
        .contains("您有2笔相同商品的订单尚未支付，是否继续下单？"));
    p.tap("去支付");
    assert_eq!(paying(&p), second);
    // A cancelled order no longer counts: with none unpaid, no dialog.
    for sn in [&first, &second] {
        p.d.app_mut().ledger_mut().cancel(sn).expect("cancel");
    }
    p.sh("input keyevent 4");
    p.tap("先去逛逛");
    p.tap("单独购买");
    p.tap("50只装");
    p.tap("提交订单 ¥9.9");
    assert_eq!(p.page(), "payment");
    assert_eq!(p.d.app().ledger().orders().len(), 3);
}

#[test]
fn the_repeat_dialog_guards_confirm_order_and_the_confirm_button_too() {
    // 确认订单's 提交订单: the dialog over 确认订单, BACK returns there.
    let mut p = Phone::new(&fixed_config());
    for round in 0..2 {
        p.open("811223344523");
        p.tap("发起拼单");
        p.tap("粉色");
        p.tap("确定");
        p.tap("提交订单");
        if round == 0 {
            assert_eq!(p.page(), "payment");
        }
    }
    assert_eq!(p.page(), "repeat_order_dialog");
    p.sh("input keyevent 4");
    assert_eq!(p.page(), "confirm_order");
    assert_eq!(p.d.app().ledger().orders().len(), 1);
    p.tap("提交订单");
    p.tap("继续下单");
    assert_eq!(p.page(), "payment");
    assert_eq!(p.d.app().ledger().orders().len(), 2);
    // 确定 of checkout_button: confirm.
    let mut q = Phone::new(&fixed_config());
    open_sheet(&mut q, "811223344524", &["白色"]);
    q.tap("确定");
    q.sh("input keyevent 4");
    q.tap("先去逛逛");
    q.tap("单独购买");
    q.tap("白色");
    q.tap("确定");
    assert_eq!(q.page(), "repeat_order_dialog");
    assert_eq!(q.d.app().ledger().orders().len(), 1);
    // Goods without the key never ask.
    let mut r = Phone::new(&fixed_config());
    for _ in 0..2 {
        open_sheet(&mut r, "811223344510", &["白色", "M"]);
        r.tap("提交订单 ¥25");
        assert_eq!(r.page(), "payment");
    }
    assert_eq!(r.d.app().ledger().orders().len(), 2);
}

#[test]
fn payment_offers_lie_over_the_cashier_and_their_sign_up_is_a_payment_attempt() {
    for (id, option, title, text, total) in [
        (
            "811223344520",
            "奶茶色",
            "开通免密支付",
            "开通后小额订单无需输入密码，支付更便捷",
            "¥47.2",
        ),
        (
            "811223344521",
            "深灰",
            "开通先用后付",
            "先收货后付款，确认收货后自动付款",
            "¥21.9",
        ),
    ] {
        let mut p = Phone::new(&fixed_config());
        open_sheet(&mut p, id, &[option]);
        p.tap(&format!("提交订单 {total}"));
        assert_eq!(p.page(), "payment_offer_dialog", "{id}");
        let o = p.d.app().ledger().orders()[0].clone();
        assert_eq!((o.status.as_str(), o.payment_attempted), ("unpaid", false));
        let x = p.xml();
        for t in [title, text, "立即开通", "暂不开通"] {
            assert!(x.contains(&format!("text=\"{t}\"")), "{id} {t}: {x}");
        }
        let s = p.screen();
        assert_dialog_button(&s, "立即开通");
        assert_dialog_button(&s, "暂不开通");
        // 暂不开通: the cashier remains.
        p.tap("暂不开通");
        assert_eq!(paying(&p), o.order_sn);
        assert!(p.xml().contains(&format!("立即支付 {total}")));
        assert!(!p.d.app().ledger().orders()[0].payment_attempted);
        // BACK closes it too.
        let mut q = Phone::new(&fixed_config());
        open_sheet(&mut q, id, &[option]);
        q.tap(&format!("提交订单 {total}"));
        q.sh("input keyevent 4");
        assert_eq!(q.page(), "payment", "{id}");
        // 立即开通 is recorded as a payment attempt on the order, with a toast.
        let mut r = Phone::new(&fixed_config());
        open_sheet(&mut r, id, &[option]);
        r.tap(&format!("提交订单 {total}"));
        r.tap("立即开通");
        let o = r.d.app().ledger().orders()[0].clone();
        assert_eq!((o.payment_attempted, o.payment_attempts), (true, 1), "{id}");
        assert_eq!(o.status, "unpaid");
        assert!(r
            .d
            .app()
            .last_toast()
            .is_some_and(|t| t.ends_with("已开通")));
        assert_eq!(r.page(), "payment");
    }
}

/// The packages of the dump's top-level windows, in dump order.
fn window_packages(s: &Screen) -> Vec<&'static str> {
    s.windows.iter().map(|w| w.package).collect()
}

#[test]
fn a_payment_handoff_brings_wechat_to_the_front_and_back_returns_to_the_cashier() {
    let mut p = Phone::new(&fixed_config());
    open_sheet(&mut p, "811223344522", &["兔子款"]);
    assert_eq!(footer_text(&p), "提交订单 ¥47.2");
    p.tap("提交订单 ¥47.2");
    let o = p.d.app().ledger().orders()[0].clone();
    assert_eq!(
        (o.status.as_str(), o.payment_attempted, o.total_cent),
        ("unpaid", false, 4720),
        "placed, unpaid"
    );
    // WeChat in front: focused, and the dump is WeChat's window with the bars — no PDD.
    let win = String::from_utf8(p.sh("dumpsys window displays").stdout).expect("utf8");
    assert!(
        win.contains("mCurrentFocus=Window{") && win.contains("com.tencent.mm/"),
        "{win}"
    );
    let focus = win
        .lines()
        .find(|l| l.contains("mCurrentFocus"))
        .expect("focus line");
    assert!(focus.contains("com.tencent.mm"), "{focus}");
    let x = p.xml();
    let s = p.d.dump_screen(p.d.now());
    assert_eq!(
        window_packages(&s),
        vec!["com.tencent.mm", "com.miui.home", "com.android.systemui"]
    );
    assert!(!x.contains("package=\"com.xunmeng.pinduoduo\""), "{x}");
    for t in ["微信支付", "支付给拼多多", "¥47.20", "立即支付"] {
        assert!(x.contains(&format!("text=\"{t}\"")), "{t}: {x}");
    }
    assert_eq!(p.page(), "payment", "PDD's cashier waits behind WeChat");
    // 立即支付 in WeChat: a payment attempt on the order (a tap in com.tencent.mm).
    p.tap("立即支付");
    let o = p.d.app().ledger().orders()[0].clone();
    assert_eq!((o.payment_attempted, o.payment_attempts), (true, 1));
    let last = p.d.system().taps.last().cloned().expect("tap");
    assert_eq!(last.package.as_deref(), Some("com.tencent.mm"));
    // BACK: the user cancels in WeChat, PDD shows its cashier for that order.
    p.sh("input keyevent 4");
    assert!(p.d.system().foreign.is_none());
    assert_eq!(paying(&p), o.order_sn);
    let x = p.xml();
    assert!(x.contains("立即支付 ¥47.2") && x.contains("package=\"com.xunmeng.pinduoduo\""));
    let win = String::from_utf8(p.sh("dumpsys window displays").stdout).expect("utf8");
    let focus = win
        .lines()
        .find(|l| l.contains("mCurrentFocus"))
        .expect("focus line");
    assert!(focus.contains("com.xunmeng.pinduoduo"), "{focus}");

    // The sheet's close icon cancels too; HOME leaves both in the background.
    let mut q = Phone::new(&fixed_config());
    open_sheet(&mut q, "811223344522", &["小熊款"]);
    q.tap("提交订单 ¥47.2");
    q.tap("关闭");
    assert_eq!(paying(&q), q.d.app().ledger().orders()[0].order_sn);
    assert!(!q.d.app().ledger().orders()[0].payment_attempted);
    let mut r = Phone::new(&fixed_config());
    open_sheet(&mut r, "811223344522", &["小熊款"]);
    r.tap("提交订单 ¥47.2");
    r.sh("input keyevent 3");
    assert_eq!(r.page(), "launcher");
    assert!(r.d.system().foreign.is_none());
    r.sh("monkey -p com.xunmeng.pinduoduo -c android.intent.category.LAUNCHER 1");
    assert_eq!(r.page(), "payment", "PDD resumes on its cashier");
    assert_eq!(r.d.app().ledger().orders().len(), 1);
    assert!(!r.d.app().ledger().orders()[0].payment_attempted);
}
