//! One process per data directory and per phone, with the real binary:
//! a `run` holds its data directory and its phone; a second `run` on the same data
//! directory, or on another data directory but the same phone (written in the other
//! serial form), exits 2 at once with one line naming the first one's pid; once the
//! first is SIGKILLed, its lock files (still naming it) do not block a new `run`.
//!
//! The `run`s stay alive on their own: the Admin is unreachable (they back off and
//! retry) and no task is ever claimed, so the phone (nothing listens there) is never
//! touched. Each test has its own lock directory (`CMAUTOBUY_LOCK_DIR`).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use cmautobuy_client::device::DeviceAddress;
use cmautobuy_client::lock::{self, DATA_DIR_LOCK_FILE};

const BIN: &str = env!("CARGO_BIN_EXE_cmautobuy-client");
/// Nothing listens there: claims fail and are retried, the client stays up.
const ADMIN: &str = "http://127.0.0.1:9";

fn client(data_dir: &Path, lock_dir: &Path, device: &str) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--data-dir")
        .arg(data_dir)
        .args([
            "run",
            "--admin",
            ADMIN,
            "--token",
            "t",
            "--poll-interval",
            "0.2",
        ])
        .args(["--device", device])
        .env("CMAUTOBUY_LOCK_DIR", lock_dir)
        .env("HOME", data_dir)
        .env("RUST_LOG", "warn")
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_DATA_DIR")
        .env_remove("CMAUTOBUY_DEVICE")
        .env_remove("CMAUTOBUY_ADMIN_URL")
        .env_remove("CMAUTOBUY_TOKEN");
    c
}

/// Kills the child (SIGKILL) when the test ends, however it ends.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn start(c: &mut Command) -> Running {
    Running(
        c.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the client starts"),
    )
}

/// Bounded poll: until `path` names `pid` as its holder (the lock is held then).
fn wait_for_holder(path: &Path, pid: u32, child: &mut Child) {
    let start = Instant::now();
    loop {
        if lock::read_holder(path).is_some_and(|h| h.pid == pid) {
            return;
        }
        if let Some(st) = child.try_wait().unwrap() {
            panic!(
                "the first run exited ({st}) before holding {}",
                path.display()
            );
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{} never named pid {pid}",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs `c` to its end (bounded: a second process that is *not* refused would run on).
fn run_to_end(c: &mut Command) -> (ExitStatus, String) {
    let mut child = Running(
        c.stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("the client starts"),
    );
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the second run was not refused: still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    child
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status, err)
}

fn device_lock(lock_dir: &Path, serial: &str) -> PathBuf {
    let addr = DeviceAddress::parse(serial, "127.0.0.1:5037".parse().unwrap()).unwrap();
    lock::device_lock_path(lock_dir, &lock::device_key(&addr))
}

#[test]
fn a_second_run_on_the_same_data_dir_or_phone_exits_2_naming_the_first_pid() {
    let tmp = tempfile::tempdir().unwrap();
    let locks = tmp.path().join("locks");
    let a = tmp.path().join("a");
    let b = tmp.path().join("b");
    let phone = "tcp:127.0.0.1:9";
    let phone_lock = device_lock(&locks, phone);

    let mut first = start(&mut client(&a, &locks, phone));
    let pid = first.0.id();
    wait_for_holder(&a.join(DATA_DIR_LOCK_FILE), pid, &mut first.0);
    wait_for_holder(&phone_lock, pid, &mut first.0);

    // The same data directory: refused before it opens the store.
    let (st, err) = run_to_end(&mut client(&a, &locks, phone));
    assert_eq!(st.code(), Some(2), "{err}");
    let line = format!(
        "cmautobuy-client run: the data directory {} is in use by pid {pid} (cmautobuy-client run)",
        a.display()
    );
    assert!(err.contains(&line), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");

    // Another data directory, the same phone written as HOST:PORT (one adbd): refused
    // before the phone is touched.
    let (st, err) = run_to_end(&mut client(&b, &locks, "127.0.0.1:9"));
    assert_eq!(st.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "cmautobuy-client run: the device 127.0.0.1:9 is in use by pid {pid} (cmautobuy-client run, data directory {})",
            a.display()
        )),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    // The refused processes changed nothing: the first one still holds both.
    assert_eq!(
        lock::read_holder(&a.join(DATA_DIR_LOCK_FILE)).unwrap().pid,
        pid
    );
    assert_eq!(lock::read_holder(&phone_lock).unwrap().pid, pid);

    // SIGKILL: the lock files stay, still naming the dead process, and block nothing.
    drop(first);
    assert_eq!(
        lock::read_holder(&a.join(DATA_DIR_LOCK_FILE)).unwrap().pid,
        pid
    );
    assert_eq!(lock::read_holder(&phone_lock).unwrap().pid, pid);
    let mut next = start(&mut client(&a, &locks, phone));
    let next_pid = next.0.id();
    wait_for_holder(&a.join(DATA_DIR_LOCK_FILE), next_pid, &mut next.0);
    wait_for_holder(&phone_lock, next_pid, &mut next.0);
}

#[test]
fn another_data_dir_on_another_phone_runs_alongside() {
    let tmp = tempfile::tempdir().unwrap();
    let locks = tmp.path().join("locks");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    let mut first = start(&mut client(&a, &locks, "tcp:127.0.0.1:9"));
    let mut second = start(&mut client(&b, &locks, "tcp:127.0.0.1:7"));
    let (p1, p2) = (first.0.id(), second.0.id());
    wait_for_holder(&device_lock(&locks, "tcp:127.0.0.1:9"), p1, &mut first.0);
    wait_for_holder(&device_lock(&locks, "tcp:127.0.0.1:7"), p2, &mut second.0);
    wait_for_holder(&b.join(DATA_DIR_LOCK_FILE), p2, &mut second.0);
    assert!(
        first.0.try_wait().unwrap().is_none(),
        "the first still runs"
    );
}
