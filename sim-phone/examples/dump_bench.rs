//! Per-command overhead of the simulated phone on loopback, `zero` latency profile:
//! `uiautomator dump /dev/tty` of a checkout sheet, end to end, three ways:
//!
//! 1. a minimal ADB client speaking the device protocol directly (shell v2),
//! 2. `adb_client`'s `ADBTcpDevice` (direct TCP, shell v1),
//! 3. `adb_client`'s `ADBServerDevice` through Debian's real adb server (if `adb` is on
//!    PATH; a private server on a free port, killed afterwards).
//!
//! The same four measurements in replay mode (`replay` or `both` as the second argument):
//! the checkout sheet's dump recorded into a one-screen scenario (with a `dumped`
//! transition back to itself, so every dump goes through the player), served
//! byte-for-byte.
//!
//! Run: `cargo run --release -p cmautobuy-sim-phone --example dump_bench [ITERATIONS]
//! [catalog|replay|both]` (default: 300, catalog).

use std::io::{Read, Write};
use std::net::{SocketAddr, SocketAddrV4, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use adb_client::ADBDeviceExt;
use cmautobuy_sim_phone::{Catalog, Scenario, SimConfig, SimPhone, SimPhoneHandle};

const DUMP: &str = "uiautomator dump /dev/tty";

fn stats(name: &str, mut v: Vec<Duration>) {
    v.sort();
    let q = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    println!(
        "{name:<42} n={:<5} median={:>8.3} ms  p90={:>8.3} ms  max={:>8.3} ms",
        v.len(),
        q(0.5).as_secs_f64() * 1e3,
        q(0.9).as_secs_f64() * 1e3,
        q(1.0).as_secs_f64() * 1e3
    );
}

fn packet(cmd: u32, a0: u32, a1: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(24 + data.len());
    for w in [cmd, a0, a1, data.len() as u32, 0, cmd ^ 0xffff_ffff] {
        v.extend_from_slice(&w.to_le_bytes());
    }
    v.extend_from_slice(data);
    v
}

fn read_packet(s: &mut TcpStream) -> (u32, u32, u32, Vec<u8>) {
    let mut h = [0u8; 24];
    s.read_exact(&mut h).expect("header");
    let w = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let mut d = vec![0u8; w(12) as usize];
    s.read_exact(&mut d).expect("payload");
    (w(0), w(4), w(8), d)
}

fn raw(addr: SocketAddr, n: usize) -> Vec<Duration> {
    const CNXN: u32 = 0x4e58_4e43;
    const OPEN: u32 = 0x4e45_504f;
    const OKAY: u32 = 0x5941_4b4f;
    const CLSE: u32 = 0x4553_4c43;
    const WRTE: u32 = 0x4554_5257;
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_nodelay(true).expect("nodelay");
    s.write_all(&packet(CNXN, 0x0100_0001, 1 << 20, b"host::\0"))
        .expect("cnxn");
    let _ = read_packet(&mut s);
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let t = Instant::now();
        let local = 1000 + i as u32;
        s.write_all(&packet(
            OPEN,
            local,
            0,
            format!("shell,v2,raw:{DUMP}\0").as_bytes(),
        ))
        .expect("open");
        let mut bytes = 0;
        loop {
            let (cmd, a0, a1, d) = read_packet(&mut s);
            match cmd {
                WRTE => {
                    bytes += d.len();
                    s.write_all(&packet(OKAY, a1, a0, &[])).expect("okay");
                }
                CLSE => break,
                _ => {}
            }
        }
        assert!(bytes > 10_000, "a checkout-sheet dump is tens of KB");
        times.push(t.elapsed());
    }
    times
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    let mode = std::env::args().nth(2).unwrap_or_else(|| "catalog".into());
    let catalog = Catalog::load(&Catalog::bundled_dir()).expect("catalog");
    let phone = SimPhone::bind(
        "127.0.0.1:0".parse().expect("addr"),
        SimConfig::new(catalog),
    )
    .expect("phone");
    // Put the checkout sheet (image grid, discount, preselected option) on screen.
    let e = phone.run_shell(
        "am start -a android.intent.action.VIEW -d 'pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=715566778899'",
    );
    assert_eq!(e.code, 0);
    phone.run_shell("input tap 922 2278");
    assert_eq!(
        phone.current_page(),
        "sku_sheet",
        "buy button tap opens the sheet"
    );
    let size = phone.dump_xml().len();
    if mode == "catalog" || mode == "both" {
        println!(
            "CATALOG MODE — checkout-sheet dump: {size} bytes; {n} iterations each; zero profile; loopback"
        );
        measure(&phone, n);
    }
    if mode == "replay" || mode == "both" {
        // Record the sheet's dump into a one-screen scenario and replay it.
        let dir = std::env::temp_dir().join(format!("sim-phone-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp");
        std::fs::write(dir.join("s01.xml"), phone.dump_xml()).expect("dump");
        std::fs::write(
            dir.join("scenario.json"),
            r#"{"version":1,"start":"s01","screens":{"s01":{"dump":"s01.xml","on":[{"dumped":true,"to":"s01"}]}}}"#,
        )
        .expect("scenario");
        let scenario = Scenario::load(&dir).expect("scenario loads");
        let replay = SimPhone::bind(
            "127.0.0.1:0".parse().expect("addr"),
            SimConfig::replay(scenario),
        )
        .expect("replay phone");
        println!(
            "REPLAY MODE — the same dump recorded, served byte-for-byte: {size} bytes; {n} iterations each; zero profile; loopback"
        );
        measure(&replay, n);
        let served = replay.replay_log().len();
        assert!(
            served >= 3 * n,
            "every dump went through the player ({served})"
        );
        replay.shutdown();
        let _ = std::fs::remove_dir_all(&dir);
    }
    phone.shutdown();
}

/// The four paths against `phone`, whatever it has on screen.
fn measure(phone: &SimPhoneHandle, n: usize) {
    // In-process cost of building + serialising the dump, for reference.
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let e = phone.run_shell(DUMP);
        std::hint::black_box(e);
        v.push(t.elapsed());
    }
    stats("in-process (no ADB)", v);

    stats("raw ADB device protocol, shell v2", raw(phone.addr(), n));

    let home = std::env::temp_dir().join(format!("sim-phone-bench-{}", std::process::id()));
    std::fs::create_dir_all(&home).expect("tmp");
    let mut dev = adb_client::tcp::ADBTcpDevice::new_with_custom_private_key(
        phone.addr(),
        home.join("adbkey"),
    )
    .expect("adb_client direct");
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let mut out = Vec::new();
        let t = Instant::now();
        dev.shell_command(&DUMP, Some(&mut out), None)
            .expect("dump");
        v.push(t.elapsed());
    }
    stats("adb_client ADBTcpDevice (direct, shell v1)", v);
    drop(dev);

    // Through the real adb server, when installed.
    let have_adb = Command::new("adb").arg("version").output().is_ok();
    if have_adb {
        let port = loop {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
            let p = l.local_addr().expect("addr").port();
            if p != 5037 && !(5555..=5585).contains(&p) {
                break p;
            }
        };
        let adb = |args: &[&str]| {
            Command::new("adb")
                .arg("-P")
                .arg(port.to_string())
                .args(args)
                .env("HOME", &home)
                .output()
                .expect("adb")
        };
        adb(&["start-server"]);
        let serial = phone.serial();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            adb(&["connect", &serial]);
            let d = String::from_utf8_lossy(&adb(&["devices"]).stdout).to_string();
            if d.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>() == [serial.as_str(), "device"])
            {
                break;
            }
            assert!(Instant::now() < deadline, "device never came online");
            std::thread::sleep(Duration::from_millis(50));
        }
        let mut dev = adb_client::server_device::ADBServerDevice::new(
            serial.clone(),
            Some(SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, port)),
        );
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let mut out = Vec::new();
            let t = Instant::now();
            dev.shell_command(&DUMP, Some(&mut out), None)
                .expect("dump");
            v.push(t.elapsed());
        }
        stats("adb_client ADBServerDevice via adb server", v);
        adb(&["kill-server"]);
    } else {
        println!("(adb not on PATH: skipped the adb-server measurement)");
    }
    let _ = std::fs::remove_dir_all(&home);
}
