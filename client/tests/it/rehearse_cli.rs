//! The README's first command as the operator runs it: the real `cmautobuy-client`
//! binary, `rehearse` with no flags (the bundled mock Admin and the simulated phone
//! in-process), its summary and its exit status; and `--tasks FILE` with a batch of the
//! operator's own, where one expectation is wrong, so the exit status says so; a config
//! file's `device_backend` honoured (and a bad one refused with its line); a `--device`
//! that does not answer refused before anything starts; a timeout that still prints the
//! summary and keeps the artifacts. Under
//! `CMAUTOBUY_DEVICE_BACKEND=u2` (scripts/test's u2 pass) every rehearsal here runs on
//! uiautomator2's server through the private adb server it brings.

use std::process::{Command, Output};

use crate::support::rehearse_backend_from_env;
use serde_json::{json, Value};

pub(crate) fn rehearse(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("rehearse")
        .args(["--timeout", "300"])
        .args(args)
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .expect("the client binary runs")
}

#[test]
fn rehearse_with_no_flags_succeeds_on_every_task_and_exits_0() {
    let out = rehearse(&[]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}\n{stdout}\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    // A progress line per task, then the summary.
    let progress = stdout
        .lines()
        .filter(|l| l.starts_with('[') && l.contains("] "))
        .count();
    assert_eq!(progress, 12, "{stdout}");
    assert!(stdout.contains("结果 outcomes: succeeded=12\n"), "{stdout}");
    assert!(
        stdout.contains("every task succeeded (12 of 12)"),
        "{stdout}"
    );
    assert!(!stdout.contains("BAD"), "{stdout}");
    // On this run's backend (u2 through the rehearsal's own adb server under the u2 pass).
    let backend = format!("device backend: {}\n", rehearse_backend_from_env());
    assert!(stdout.contains(&backend), "{stdout}");
    // Dry-run purchases are part of the demo batch.
    assert!(stdout.contains("-purchase-spec-602938475610"), "{stdout}");
    // The happy path speaks to the operator, Chinese first: no warning, no benchmark
    // figures (those are behind --bench / --json).
    assert!(stdout.contains("全部任务成功"), "{stdout}");
    assert!(stdout.contains("采购 purchase"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("WARN") && !stderr.contains("ERROR"),
        "{stderr}"
    );
    for figure in [
        "benchmarks:",
        "dumps ",
        "taps ",
        "simulated device time",
        " ms)",
    ] {
        assert!(!stdout.contains(figure), "{figure:?} in {stdout}");
    }
}

#[test]
fn rehearse_tasks_file_reports_an_unmet_expectation_with_exit_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("batch.json");
    let collect = |id: &str, goods: &str, title: Option<&str>, expect: &str| {
        let mut payload = json!({
            "goods_id": goods,
            "goods_url": format!("https://mobile.yangkeduo.com/goods.html?goods_id={goods}"),
        });
        if let Some(t) = title {
            payload["expected_title"] = json!(t);
        }
        json!({"id": id, "type": "collect", "payload": payload, "expect": expect})
    };
    let batch = json!([
        // An old link that now opens another goods: with the title the Admin expects, the
        // redirect is caught and never reported as a success.
        collect(
            "cli-redirect",
            "671122334455",
            Some("旧链接：加厚连帽卫衣女（已迁移）"),
            "failed:GOODS_MISMATCH"
        ),
        // Collects fine, but the batch (wrongly) expects it delisted.
        collect(
            "cli-wrong",
            "602938475610",
            None,
            "failed:GOODS_UNAVAILABLE"
        ),
    ]);
    std::fs::write(&file, serde_json::to_vec(&batch).expect("json")).expect("write");
    let data = dir.path().join("data");
    let out = rehearse(&[
        "--json",
        "--tasks",
        file.to_str().expect("utf-8 path"),
        "--data-dir",
        data.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(summary["ok"], false);
    let line = |id: &str| {
        summary["tasks"]
            .as_array()
            .and_then(|t| t.iter().find(|l| l["id"] == id))
            .cloned()
            .unwrap_or_else(|| panic!("{id} in {summary}"))
    };
    let redirect = line("cli-redirect");
    assert_eq!(redirect["outcome"], "failed:GOODS_MISMATCH");
    assert_eq!(redirect["as_expected"], true);
    let wrong = line("cli-wrong");
    assert_eq!(wrong["outcome"], "succeeded");
    assert_eq!(wrong["as_expected"], false);
    assert!(wrong["dumps"].as_u64().unwrap_or(0) > 0, "{wrong}");
    // Kept with --data-dir: the artifacts of the run are there to look at.
    assert!(data.join("artifacts").is_dir());
}

#[test]
fn rehearse_refuses_a_batch_file_that_is_not_a_batch() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("batch.json");
    std::fs::write(&file, br#"{"not": "an array"}"#).expect("write");
    let out = rehearse(&["--tasks", file.to_str().expect("utf-8 path")]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("is not a batch"), "{stderr}");
}

/// `--console 127.0.0.1:0 --keep-console --json`: the console URL on
/// stderr; stdout is exactly the JSON summary; after the batch the console keeps serving
/// 状态 and 历史 (with the batch's tasks) until SIGTERM, and the exit status is then the
/// batch's verdict (1: one expectation is wrong).
#[cfg(unix)]
#[test]
fn rehearse_keeps_its_console_until_a_signal_and_exits_with_the_batchs_verdict() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("batch.json");
    let collect = |id: &str, expect: &str| {
        json!({"id": id, "type": "collect", "expect": expect, "payload": {
            "goods_id": "602938475610",
            "goods_url": "https://mobile.yangkeduo.com/goods.html?goods_id=602938475610",
        }})
    };
    let batch = json!([
        collect("kc-good", "succeeded"),
        collect("kc-wrong", "failed:GOODS_UNAVAILABLE"),
    ]);
    std::fs::write(&file, serde_json::to_vec(&batch).expect("json")).expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .args(["rehearse", "--timeout", "300", "--json", "--tasks"])
        .arg(&file)
        .args(["--console", "127.0.0.1:0", "--keep-console"])
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_CONSOLE_PASSWORD")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the client binary runs");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut stdout = child.stdout.take().expect("stdout");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let mut seen = Vec::new();
    let mut wait_line = |what: &str| -> String {
        let until = Instant::now() + Duration::from_secs(300);
        loop {
            let left = until.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) => {
                    seen.push(l.clone());
                    if l.starts_with(what) {
                        return l;
                    }
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!("no {what:?} line on stderr: {seen:#?}");
                }
            }
        }
    };
    let url_line = wait_line("console: http://");
    let addr = url_line["console: http://".len()..]
        .split('/')
        .next()
        .expect("addr")
        .to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{url_line}");
    // The batch is done and the signal handlers are in place.
    let kept = wait_line("console: still serving");
    assert!(kept.contains(&addr), "{kept}");

    let get = |path: &str| -> (String, String) {
        use std::io::Write;
        let mut s = std::net::TcpStream::connect(&addr).expect("the console accepts");
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut r = String::new();
        s.read_to_string(&mut r).expect("a response");
        let (head, body) = r.split_once("\r\n\r\n").unwrap_or((&r, ""));
        (head.to_string(), body.to_string())
    };
    let (head, status) = get("/");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(status.contains("状态"), "{status}");
    let (head, history) = get("/history");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        history.contains("kc-good") && history.contains("kc-wrong"),
        "{history}"
    );
    // Still serving: the process waits for the signal.
    assert!(child.try_wait().expect("try_wait").is_none());

    let pid = child.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    let until = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        assert!(
            Instant::now() < until,
            "rehearse ended within 60 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(1), "the batch's verdict: {seen:#?}");
    let stdout = out_reader.join().expect("stdout reader");
    let summary: Value = serde_json::from_str(&stdout).expect("stdout is the JSON summary");
    assert_eq!(summary["ok"], false, "{summary:#}");
    assert_eq!(summary["tasks"].as_array().map(Vec::len), Some(2));
}

/// `--json` names the device backend at top level and the text summary says
/// it: `uiautomator` when chosen; `u2` through an adb server with the real jar, where
/// the simulated phone's server answered the dumps.
#[test]
fn rehearse_json_names_the_device_backend() {
    let run = |backend: &str, extra: &[&str], adb: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
        c.arg("rehearse")
            .args(["--timeout", "300", "--no-purchases", "--no-console"])
            .args(extra)
            .env_remove("CMAUTOBUY_CONFIG")
            .env("CMAUTOBUY_DEVICE_BACKEND", backend);
        if let Some(a) = adb {
            c.args(["--adb-server", a]);
        }
        c.output().expect("the client binary runs")
    };
    let out = run("uiautomator", &["--json"], None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let v: Value = serde_json::from_str(&stdout).expect("one JSON summary");
    assert_eq!(v["device_backend"], "uiautomator", "{stdout}");
    assert!(v.get("device_backend_fallback").is_none(), "{stdout}");

    let bad = run("adb", &["--json"], None);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("CMAUTOBUY_DEVICE_BACKEND"));

    let jar = cmautobuy_sim_phone::testing::u2_jar_path();
    if cmautobuy_sim_phone::testing::u2_jar("rehearse_json_names_the_device_backend").is_none() {
        return;
    }
    let adb = cmautobuy_sim_phone::testing::AdbServer::start();
    let addr = adb.addr().to_string();
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    let out = c
        .arg("rehearse")
        .args([
            "--timeout",
            "300",
            "--no-purchases",
            "--no-console",
            "--bench",
        ])
        .args(["--adb-server", &addr])
        .env_remove("CMAUTOBUY_CONFIG")
        .env("CMAUTOBUY_DEVICE_BACKEND", "u2")
        .env("CMAUTOBUY_U2_JAR", &jar)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("device backend: u2\n"), "{stdout}");
    // --bench: the device work and the benchmark figures.
    assert!(stdout.contains("benchmarks: "), "{stdout}");
    assert!(stdout.contains("(dumps "), "{stdout}");
}

/// `CMAUTOBUY_DEVICE_BACKEND=u2` with no `--adb-server`: the rehearsal brings a
/// private adb server for its simulated phone (its address on stderr), the `--json`
/// summary says `u2`, and once the command has exited nothing listens on that port any
/// more. Without `adb` (an empty PATH, no `$ADB`) it refuses with exit 2, naming what to
/// install — it never falls back to direct TCP.
/// `rehearse --timeout 300 --no-console --json` on the u2 backend (the real jar), no
/// `--device`, no `--adb-server`: rehearse brings its own adb server.
fn rehearse_on_u2() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"));
    c.arg("rehearse")
        .args(["--timeout", "300", "--no-console", "--json"])
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("ADB")
        .env("CMAUTOBUY_DEVICE_BACKEND", "u2")
        .env(
            "CMAUTOBUY_U2_JAR",
            cmautobuy_sim_phone::testing::u2_jar_path(),
        );
    c
}

#[test]
fn rehearse_on_u2_brings_its_own_adb_server_and_stops_it() {
    let u2 = |path: Option<&std::path::Path>| {
        let mut c = rehearse_on_u2();
        c.arg("--no-purchases");
        if let Some(p) = path {
            c.env("PATH", p);
        }
        c.output().expect("the client binary runs")
    };
    let empty = tempfile::tempdir().expect("tempdir");
    let no_adb = u2(Some(empty.path()));
    let stderr = String::from_utf8_lossy(&no_adb.stderr);
    assert_eq!(no_adb.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no `adb` on PATH"), "{stderr}");
    assert!(stderr.contains("apt-get install adb"), "{stderr}");
    assert!(no_adb.stdout.is_empty(), "no summary: nothing ran");

    if cmautobuy_sim_phone::testing::u2_jar("rehearse_on_u2_brings_its_own_adb_server_and_stops_it")
        .is_none()
    {
        return;
    }
    let out = u2(None);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("one JSON summary");
    assert_eq!(v["ok"], true, "{stdout}");
    assert_eq!(v["device_backend"], "u2", "{stdout}");
    assert!(v.get("device_backend_fallback").is_none(), "{stdout}");
    // The phone is named by its adb serial, not as a direct TCP device.
    let device = v["device"].as_str().unwrap_or_default();
    assert!(device.starts_with("127.0.0.1:"), "{stdout}");
    const SAID: &str = "adb: a private adb server on ";
    let server = stderr
        .lines()
        .find_map(|l| l.strip_prefix(SAID))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no {SAID:?} line: {stderr}"));
    let server: std::net::SocketAddr = server.parse().expect("HOST:PORT");
    assert!(
        server.ip().is_loopback() && server.port() != 5037,
        "{server}"
    );
    // Gone with the command: the port refuses.
    let e = std::net::TcpStream::connect_timeout(&server, std::time::Duration::from_secs(5))
        .expect_err("the private adb server is stopped when rehearse exits");
    assert_eq!(e.kind(), std::io::ErrorKind::ConnectionRefused, "{e}");
}

/// A rehearsal on u2 killed outright (SIGKILL: no destructor runs) leaves no private adb
/// server behind: its watchdog stops the server within a second or two of the process'
/// end. Bounded polls, no timing luck: the test waits for the server's address on stderr,
/// kills, then polls the port (up to 15 s) until it refuses.
#[test]
fn a_rehearsal_on_u2_killed_outright_leaves_no_adb_server() {
    use std::io::BufRead;
    if cmautobuy_sim_phone::testing::u2_jar(
        "a_rehearsal_on_u2_killed_outright_leaves_no_adb_server",
    )
    .is_none()
    {
        return;
    }
    let mut child = rehearse_on_u2()
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the client binary runs");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    const SAID: &str = "adb: a private adb server on ";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let server: std::net::SocketAddr = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = rx
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no {SAID:?} line within 60 s"));
        if let Some(addr) = line
            .strip_prefix(SAID)
            .and_then(|rest| rest.split_whitespace().next())
        {
            break addr.parse().expect("HOST:PORT");
        }
    };
    assert!(
        std::net::TcpStream::connect(server).is_ok(),
        "the private adb server runs"
    );
    child.kill().expect("SIGKILL"); // no destructor, no stop()
    child.wait().expect("reaped");
    let end = std::time::Instant::now() + std::time::Duration::from_secs(15);
    loop {
        match std::net::TcpStream::connect_timeout(&server, std::time::Duration::from_secs(2)) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => break,
            _ => {
                assert!(
                    std::time::Instant::now() < end,
                    "the private adb server at {server} outlived its killed rehearsal"
                );
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
    }
}

/// `rehearse --config FILE` honours the file's `device_backend`: a value that is none of
/// the backends is refused before anything starts (exit 2) naming the file's line and
/// the key; `u2` (with the real jar) makes the rehearsal run on uiautomator2's server and
/// its summary say so.
#[test]
fn rehearse_honours_the_config_files_device_backend() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("rehearse.toml");
    std::fs::write(&file, "# the backend\ndevice_backend = \"u3\"\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--config")
        .arg(&file)
        .args(["rehearse", "--timeout", "300", "--no-console", "--json"])
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_DEVICE_BACKEND")
        .output()
        .expect("the client binary runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:2:1", file.display())) && stderr.contains("`device_backend`"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "nothing ran");

    if cmautobuy_sim_phone::testing::u2_jar("rehearse_honours_the_config_files_device_backend")
        .is_none()
    {
        return;
    }
    std::fs::write(&file, "device_backend = \"u2\"\n").expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("--config")
        .arg(&file)
        .args(["rehearse", "--timeout", "300", "--no-console", "--json"])
        .arg("--no-purchases")
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_DEVICE_BACKEND")
        .env_remove("ADB")
        .env(
            "CMAUTOBUY_U2_JAR",
            cmautobuy_sim_phone::testing::u2_jar_path(),
        )
        .output()
        .expect("the client binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_str(&stdout).expect("one JSON summary");
    assert_eq!(v["device_backend"], "u2", "{stdout}");
}

/// `rehearse --device` naming a phone that does not answer fails fast — exit 2, a line
/// saying why and what to check, no summary — instead of waiting for its timeout: a
/// serial the adb server cannot tell about (no adb server at its address), and a direct
/// `tcp:` address nobody listens at.
#[test]
fn rehearse_refuses_a_phone_that_does_not_answer() {
    let dead = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port");
    for device in ["NOPE".to_string(), format!("tcp:{dead}")] {
        let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
            .args(["rehearse", "--timeout", "300", "--no-console", "--device"])
            .arg(&device)
            .env_remove("CMAUTOBUY_CONFIG")
            .env("ANDROID_ADB_SERVER_PORT", dead.port().to_string())
            .output()
            .expect("the client binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{device}: {stderr}");
        assert!(
            stderr.contains(&format!("cmautobuy-client rehearse: --device {device}: ")),
            "{stderr}"
        );
        assert!(stderr.contains("adb devices"), "{stderr}");
        assert!(out.stdout.is_empty(), "{device}: nothing ran");
    }
}

/// A rehearsal that runs out of time stops (the task in hand finishes), prints its
/// summary — what finished, what did not — keeps its artifacts and says where (exit 1).
/// Under the realistic profile a batch of 9 collects cannot finish in one second.
#[test]
fn a_rehearsal_timeout_prints_the_summary_and_keeps_the_artifacts() {
    let out = Command::new(env!("CARGO_BIN_EXE_cmautobuy-client"))
        .arg("rehearse")
        .args(["--profile", "realistic", "--no-purchases", "--no-console"])
        .args(["--json", "--timeout", "1"])
        .env_remove("CMAUTOBUY_CONFIG")
        .output()
        .expect("the client binary runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stderr.contains("was not done within 1 s"), "{stderr}");
    let v: Value = serde_json::from_str(&stdout).expect("the summary, as JSON");
    assert_eq!(v["ok"], false, "{v:#}");
    assert_eq!(v["timed_out"]["after_secs"], 1, "{v:#}");
    let tasks = v["tasks"].as_array().expect("tasks");
    let unfinished = v["timed_out"]["unfinished"].as_array().expect("unfinished");
    assert!(!unfinished.is_empty(), "{v:#}");
    // Every task is listed: the finished ones with their outcome, the others as missing.
    assert_eq!(tasks.len(), 9, "{v:#}");
    for id in unfinished {
        let t = tasks.iter().find(|t| &t["id"] == id).expect("listed");
        assert_eq!(t["outcome"], "missing", "{t}");
    }
    // Kept: the rehearsal's data directory is still there.
    let artifacts = std::path::PathBuf::from(v["artifacts_dir"].as_str().expect("a path"));
    let kept = artifacts.parent().expect("the data directory");
    assert!(kept.join("client.sqlite3").is_file(), "{}", kept.display());
    std::fs::remove_dir_all(kept).expect("clean up");
}
