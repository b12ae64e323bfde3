//! Bounded resources, secrets at rest, portable file names.
//!
//! In process on the virtual clock (the claim loop with its [`DiskBudget`]): below the
//! free-disk floor no claim is made and one `low_disk` alert says why, resolved by the
//! client when space returns; the artifact sweep after each task keeps the total under
//! its cap and keeps `manual_review` evidence longest. With the real binary: the data
//! directory `0700` and the store `0600` (too-open modes tightened at start), the token
//! never sent to an Admin URL other than the one it was saved for, and `run`'s log file
//! (no ANSI, no token).

use cmautobuy_client::alert::AlertKind;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;

use crate::support::claim_loop::{loop_world, LoopRunner, LoopWorld};
use crate::support::*;
use cmautobuy_client::artifacts::{safe_component, AttemptArtifacts, Retention};
use cmautobuy_client::disk_budget::{DiskBudget, DiskBudgetConfig, DiskProbe};
use cmautobuy_client::executor::{failure, Executor, Job, Outcome, Readiness, StubExecutor};
use cmautobuy_client::lock;
use cmautobuy_client::runner::{ClaimStep, RunConfig, Runner};
use cmautobuy_contract::FailureStatus;

const MB: u64 = 1024 * 1024;

/// A disk whose free space the test sets.
#[derive(Clone, Default)]
struct FakeDisk(Arc<AtomicU64>);

impl DiskProbe for FakeDisk {
    fn free_bytes(&self, _: &Path) -> Option<u64> {
        Some(self.0.load(Ordering::SeqCst))
    }
}

fn with_disk_budget<P: Executor + Clone>(
    w: &LoopWorld<P>,
    cfg: DiskBudgetConfig,
    disk: &FakeDisk,
) -> LoopRunner<P> {
    let disk_budget = DiskBudget::new(w.store.clone(), cfg).with_probe(Arc::new(disk.clone()));
    Runner::new(
        w.store.clone(),
        w.gw.clone(),
        Arc::new(w.phone.clone()),
        w.clock.clone(),
        RunConfig::default(),
        Arc::new(tokio::sync::Notify::new()),
    )
    .with_disk_budget(Arc::new(disk_budget))
}

fn low_disk_alerts<P: Executor + Clone>(w: &LoopWorld<P>) -> usize {
    w.store
        .open_alerts()
        .unwrap()
        .iter()
        .filter(|a| a.kind == AlertKind::LowDisk)
        .count()
}

#[tokio::test]
async fn below_the_free_disk_floor_nothing_is_claimed_and_one_alert_says_why() {
    let w = loop_world("tcp:127.0.0.1:5555", 3, |_| {
        ScriptedExecutor::new(Script::Result)
    })
    .await;
    let disk = FakeDisk::default();
    disk.0.store(100 * MB, Ordering::SeqCst);
    let root = w.dir.path().join("artifacts");
    let cfg = DiskBudgetConfig::new(w.dir.path().to_path_buf(), root, Retention::default());
    assert_eq!(cfg.min_free_disk_bytes, 500 * MB, "the default floor");
    let r = with_disk_budget(&w, cfg, &disk);
    for _ in 0..5 {
        match w.cycle(&r, None).await {
            ClaimStep::Waiting { reason, .. } => {
                assert!(
                    reason.contains("low disk") && reason.contains("100 MB"),
                    "{reason}"
                );
            }
            other => panic!("claimed below the floor: {other:?}"),
        }
    }
    assert_eq!(w.claims(), 0, "no claim below the floor");
    assert_eq!(low_disk_alerts(&w), 1, "one alert, not one per cycle");
    let alert = &w.store.open_alerts().unwrap()[0];
    assert!(
        alert.message.contains("min_free_disk_mb"),
        "{}",
        alert.message
    );
    // The alert does not block like the others: it is the client's to resolve.
    assert_eq!(r.blocked_reason(), None);

    // Space returns: the alert is resolved and claiming resumes without an ack.
    disk.0.store(2048 * MB, Ordering::SeqCst);
    for _ in 0..3 {
        assert!(matches!(
            w.cycle(&r, None).await,
            ClaimStep::Processed { .. }
        ));
    }
    assert_eq!(w.claims(), 3);
    assert_eq!(low_disk_alerts(&w), 0);
    assert!(w.store.open_alerts().unwrap().is_empty());
    assert_eq!(w.phone.job_count(), 3);

    // Low again: a new alert.
    disk.0.store(MB, Ordering::SeqCst);
    assert!(matches!(
        w.cycle(&r, Some(Duration::from_secs(1))).await,
        ClaimStep::Waiting { .. }
    ));
    assert_eq!(low_disk_alerts(&w), 1);
}

/// A phone that writes `bytes` of evidence per job under `root` and answers the first
/// job with `manual_review`, every later one with a result.
#[derive(Clone)]
struct EvidencePhone {
    root: std::path::PathBuf,
    bytes: usize,
    jobs: Arc<AtomicUsize>,
}

impl Executor for EvidencePhone {
    fn readiness(&self) -> Readiness {
        Readiness {
            device_ready: true,
            ..Readiness::default()
        }
    }
    async fn execute(&self, job: Job) -> Outcome {
        let n = self.jobs.fetch_add(1, Ordering::SeqCst);
        let mut a =
            AttemptArtifacts::create(&self.root, &job.task.remote_task_id, &job.run.attempt_id)
                .unwrap();
        a.save("open_goods", "png", &vec![0u8; self.bytes], Utc::now());
        // Distinct, increasing times without sleeping.
        let t = std::time::SystemTime::now() - Duration::from_secs(3600 - n as u64 * 60);
        std::fs::File::open(a.dir())
            .unwrap()
            .set_modified(t)
            .unwrap();
        if n == 0 {
            Outcome::Failure(Box::new(failure(
                &job,
                FailureStatus::ManualReview,
                "ORDER_STATE_UNCERTAIN",
                "scripted",
                Some("reconcile"),
            )))
        } else {
            StubExecutor.execute(job).await
        }
    }
}

fn attempt_dirs(root: &Path) -> Vec<String> {
    let mut v = Vec::new();
    for t in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for a in std::fs::read_dir(t.path()).unwrap().flatten() {
            v.push(a.file_name().to_string_lossy().into_owned());
        }
    }
    v
}

#[tokio::test]
async fn the_sweep_after_each_task_bounds_artifacts_and_keeps_manual_review_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("artifacts");
    let phone = EvidencePhone {
        root: root.clone(),
        bytes: 100_000,
        jobs: Arc::default(),
    };
    let w = loop_world("tcp:127.0.0.1:5555", 6, |_| phone.clone()).await;
    let disk = FakeDisk::default();
    disk.0.store(u64::MAX / 2, Ordering::SeqCst);
    let retention = Retention {
        // Room for about two attempts.
        max_total_bytes: Some(250_000),
        ..Retention::default()
    };
    let cfg = DiskBudgetConfig::new(dir.path().to_path_buf(), root.clone(), retention);
    let r = with_disk_budget(&w, cfg, &disk);
    let mut first_attempt = None;
    for i in 0..6 {
        assert!(matches!(
            w.cycle(&r, None).await,
            ClaimStep::Processed { .. }
        ));
        if i == 0 {
            let dirs = attempt_dirs(&root);
            assert_eq!(dirs.len(), 1);
            first_attempt = Some(dirs[0].clone());
        }
        let size: u64 = walk_size(&root);
        assert!(size <= 250_000, "after task {i}: {size} bytes");
    }
    let left = attempt_dirs(&root);
    assert_eq!(left.len(), 2, "{left:?}");
    // The oldest attempt, a manual_review, is still there; the ordinary ones went first.
    assert!(left.contains(first_attempt.as_ref().unwrap()), "{left:?}");
}

fn walk_size(root: &Path) -> u64 {
    let mut n = 0;
    for t in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for a in std::fs::read_dir(t.path()).unwrap().flatten() {
            for f in std::fs::read_dir(a.path()).unwrap().flatten() {
                n += f.metadata().unwrap().len();
            }
        }
    }
    n
}

#[test]
fn file_names_from_serials_and_task_ids_are_portable() {
    let locks = Path::new("/locks");
    let forbidden = |c: char| c.is_control() || "<>:\"/\\|?*".contains(c);
    for serial in [
        "127.0.0.1:5555",
        "tcp:[::1]:5555",
        "emulator-5554",
        "R5CT1:2/3",
    ] {
        let p = lock::device_lock_path(locks, &format!("net-{serial}"));
        let name = p.file_name().unwrap().to_str().unwrap();
        assert!(!name.chars().any(forbidden), "{serial} -> {name}");
        assert_eq!(p.parent(), Some(locks));
    }
    for id in ["cg:1", "任务/2", "CON", "a.", "..", "x\\y"] {
        let s = safe_component(id);
        assert!(
            !s.chars().any(forbidden) && !s.ends_with('.'),
            "{id} -> {s}"
        );
    }
}

// --- the binary ---------------------------------------------------------------------------

const BIN: &str = env!("CARGO_BIN_EXE_cmautobuy-client");

fn client(data_dir: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--data-dir")
        .arg(data_dir)
        .env("HOME", data_dir)
        .env("RUST_LOG", "info")
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_DATA_DIR")
        .env_remove("CMAUTOBUY_ADMIN_URL")
        .env_remove("CMAUTOBUY_TOKEN")
        .env_remove("CMAUTOBUY_DEVICE")
        .env_remove("CMAUTOBUY_LOG_DIR");
    c
}

/// An Admin that records each request head and answers 503.
fn recording_admin() -> (String, Arc<std::sync::Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    let seen: Arc<std::sync::Mutex<Vec<String>>> = Arc::default();
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut c) = conn else { continue };
            let _ = c.set_read_timeout(Some(Duration::from_secs(5)));
            let mut buf = vec![0u8; 64 * 1024];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match c.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            s.lock()
                .unwrap()
                .push(String::from_utf8_lossy(&got).into_owned());
            let _ = c.write_all(
                b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
        }
    });
    (url, seen)
}

#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[test]
fn the_token_is_never_sent_to_another_admin_url() {
    let data = tempfile::tempdir().unwrap();
    let data = data.path().join("d");
    let (first, first_seen) = recording_admin();
    let (second, second_seen) = recording_admin();
    // Saved with the first Admin (which answers 503: exit 4, settings kept).
    let out = client(&data)
        .args(["register", "--admin", &first, "--token", TOKEN])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(first_seen.lock().unwrap()[0].contains(TOKEN));
    // Another Admin URL, no token: refused before any request, with a clear message.
    let out = client(&data)
        .args(["register", "--admin", &second])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("TOKEN_FOR_OTHER_ADMIN") && err.contains("--token") && err.contains(&second),
        "{err}"
    );
    assert!(!err.contains(TOKEN), "{err}");
    // `run` refuses too (exit 2, before claiming anything).
    let out = client(&data)
        .args(["run", "--stub-executor", "--exit-when-idle"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        second_seen.lock().unwrap().is_empty(),
        "a request reached the second Admin"
    );
    // The token given again: sent to the second Admin.
    let out = client(&data)
        .args(["register", "--admin", &second, "--token", "tok-second"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let seen = second_seen.lock().unwrap();
    assert!(!seen.is_empty());
    assert!(seen
        .iter()
        .all(|r| r.contains("tok-second") && !r.contains(TOKEN)));
}

#[cfg(unix)]
#[test]
fn the_data_directory_and_store_are_private_and_too_open_modes_are_tightened() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("d");
    let out = client(&data).arg("status").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(mode(&data), 0o700);
    let store = data.join("client.sqlite3");
    assert_eq!(mode(&store), 0o600);
    for f in ["client.sqlite3-wal", "client.sqlite3-shm"] {
        if data.join(f).exists() {
            assert_eq!(mode(&data.join(f)), 0o600, "{f}");
        }
    }
    // An older client (or a copy) left them readable: fixed at start, with a warning.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&store, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::write(data.join("config.toml"), "token = \"tok\"\n").unwrap();
    std::fs::set_permissions(
        data.join("config.toml"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let out = client(&data).arg("status").output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("tightened"), "{err}");
    assert_eq!(mode(&data), 0o700);
    assert_eq!(mode(&store), 0o600);
    assert_eq!(mode(&data.join("config.toml")), 0o600);
}

#[test]
fn run_writes_a_log_file_without_ansi_or_token() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("d");
    let logs = tmp.path().join("logs");
    let mut child = client(&data)
        .args([
            "run",
            "--stub-executor",
            // Nothing listens there: the client backs off and stays up.
            "--admin",
            "http://127.0.0.1:9",
            "--token",
            TOKEN,
            "--poll-interval",
            "0.2",
            "--log-dir",
        ])
        .arg(&logs)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let file = logs.join(cmautobuy_client::logfile::LOG_FILE);
    let text = read_until_contains(&file, "claim failed");
    let _ = child.kill();
    let _ = child.wait();
    assert!(text.contains("starting"), "{text}");
    assert!(text.contains("claim failed"), "{text}");
    assert!(!text.contains('\u{1b}'), "ANSI escapes in the log file");
    assert!(!text.contains(TOKEN), "the token in the log file");
    #[cfg(unix)]
    assert_eq!(mode(&file), 0o600);
}

/// The text of `file` once it contains `needle` (polled every 100 ms, at most 30 s; the
/// caller asserts on what it got).
fn read_until_contains(file: &Path, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let t = std::fs::read_to_string(file).unwrap_or_default();
        if t.contains(needle) || Instant::now() > deadline {
            return t;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `run` against an Admin nobody answers, stderr redirected to a file, until the log
/// says "claim failed"; returns that stderr.
fn stderr_of_a_failing_run(format: Option<&str>) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("d");
    let err_path = tmp.path().join("stderr.txt");
    let mut c = client(&data);
    if let Some(f) = format {
        c.args(["--log-format", f]);
    }
    let mut child = c
        .args(["run", "--stub-executor", "--admin", "http://127.0.0.1:9"])
        .args(["--token", TOKEN, "--poll-interval", "0.2", "--no-console"])
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .env_remove("CMAUTOBUY_LOG_FORMAT")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let text = read_until_contains(&err_path, "claim failed");
    let _ = child.kill();
    let _ = child.wait();
    assert!(text.contains("claim failed"), "{text}");
    assert!(!text.contains(TOKEN), "the token on stderr");
    text
}

#[test]
fn a_redirected_stderr_gets_no_ansi_and_json_on_request() {
    // A service's journal or a file never gets colour codes.
    let text = stderr_of_a_failing_run(None);
    assert!(
        !text.contains('\u{1b}'),
        "ANSI escapes on a redirected stderr: {text}"
    );
    // `--log-format json`: one object per line, with the level, the message and fields.
    let json = stderr_of_a_failing_run(Some("json"));
    let mut messages = Vec::new();
    for line in json.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        assert!(v["level"].is_string(), "{line}");
        assert!(v["timestamp"].is_string(), "{line}");
        messages.push(v["fields"]["message"].as_str().unwrap_or("").to_string());
    }
    assert!(
        messages.iter().any(|m| m.contains("starting")),
        "{messages:?}"
    );
    assert!(!json.contains('\u{1b}'), "ANSI escapes in JSON logs");
    // A wrong value is a usage error that names the choices.
    let tmp = tempfile::tempdir().unwrap();
    let out = client(tmp.path())
        .args(["--log-format", "xml", "status"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("json"),
        "{out:?}"
    );
    let out = client(tmp.path())
        .arg("status")
        .env("CMAUTOBUY_LOG_FORMAT", "xml")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("log_format"),
        "{out:?}"
    );
}
