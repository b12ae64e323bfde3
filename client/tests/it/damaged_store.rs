//! Damaged and missing stores, through the real binary.
//!
//! - A data directory an earlier client used (a backup, a log, its lock file) whose
//!   `client.sqlite3` is gone or empty: `status` and `run` refuse (exit 3) naming
//!   `backups/` and how to restore — no new client id, nothing created in its place —
//!   and the restore the message describes brings the old identity back.
//! - A damaged page in the store (the outbox's): `status` refuses, and `run` refuses
//!   before its first claim (exit 3, pointing at `backups/`): the Admin's task stays
//!   unclaimed.

use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

use crate::support::world::{goods_url, World};

const BIN: &str = env!("CARGO_BIN_EXE_cmautobuy-client");

fn client(data: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.arg("--data-dir")
        .arg(data)
        .env("HOME", data)
        .env_remove("CMAUTOBUY_CONFIG")
        .env_remove("CMAUTOBUY_DATA_DIR")
        .env_remove("CMAUTOBUY_ADMIN_URL")
        .env_remove("CMAUTOBUY_TOKEN")
        .env_remove("CMAUTOBUY_DEVICE")
        .env_remove("CMAUTOBUY_LOG_DIR");
    c
}

/// Exit code, stdout, stderr.
fn output(c: &mut Command) -> (Option<i32>, String, String) {
    let o = c.output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn client_id(data: &Path) -> String {
    let (code, out, err) = output(client(data).args(["status", "--json"]));
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    v["client_id"].as_str().unwrap().to_string()
}

fn store_len(data: &Path) -> Option<u64> {
    std::fs::metadata(data.join("client.sqlite3"))
        .ok()
        .map(|m| m.len())
}

#[test]
fn a_data_directory_without_its_store_is_refused_not_given_a_new_identity() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let id = client_id(&data);
    // What a client that ran leaves: a verified daily backup, a log, its lock file.
    let backups = data.join("backups");
    std::fs::create_dir(&backups).unwrap();
    let backup = backups.join("client-20260101T000000Z-v9-daily.sqlite3");
    std::fs::copy(data.join("client.sqlite3"), &backup).unwrap();
    std::fs::create_dir(data.join("logs")).unwrap();
    std::fs::write(
        data.join("logs/cmautobuy-client.log"),
        "2026-01-01T00:00:00Z INFO starting\n",
    )
    .unwrap();
    std::fs::write(data.join("client.lock"), "").unwrap();

    // The store deleted: refused, pointing at the backups, by `status` and `run` alike.
    for f in ["client.sqlite3", "client.sqlite3-wal", "client.sqlite3-shm"] {
        let _ = std::fs::remove_file(data.join(f));
    }
    let (code, _, err) = output(client(&data).arg("status"));
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("STORE_MISSING"), "{err}");
    assert!(err.contains("is missing"), "{err}");
    assert!(
        err.contains(&backup.display().to_string()),
        "names the newest backup: {err}"
    );
    assert!(err.contains("backups/") && err.contains("logs/"), "{err}");
    assert_eq!(store_len(&data), None, "nothing created in its place");
    let (code, _, err) = output(client(&data).args([
        "run",
        "--stub-executor",
        "--exit-when-idle",
        "--admin",
        "http://127.0.0.1:9",
    ]));
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("STORE_MISSING"), "{err}");
    assert_eq!(store_len(&data), None);

    // Truncated to 0 bytes (a full disk): the same.
    std::fs::write(data.join("client.sqlite3"), b"").unwrap();
    let (code, _, err) = output(client(&data).arg("status"));
    assert_eq!(code, Some(3), "{err}");
    assert!(err.contains("empty (0 bytes)"), "{err}");
    assert_eq!(store_len(&data), Some(0));

    // Restored as the message says: the old identity is back.
    std::fs::copy(&backup, data.join("client.sqlite3")).unwrap();
    assert_eq!(client_id(&data), id);
}

/// Overwrites the root page of `table` with garbage (the WAL checkpointed first).
fn damage_table_root(path: &Path, table: &str) {
    let c = rusqlite::Connection::open(path).unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    let page_size: i64 = c.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
    let root: i64 = c
        .query_row(
            "SELECT rootpage FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |r| r.get(0),
        )
        .unwrap();
    drop(c);
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(((root - 1) * page_size) as u64))
        .unwrap();
    f.write_all(&vec![0x5a; page_size as usize]).unwrap();
    f.sync_all().unwrap();
}

#[test]
fn run_checks_the_store_before_its_first_claim() {
    let w = World::start("tok-damaged-store-3");
    w.create(json!({"id": "dmg-1", "type": "collect",
        "payload": {"goods_id": "602938475610", "goods_url": goods_url("602938475610")}}));
    let data = tempfile::tempdir().unwrap();
    client_id(data.path());
    damage_table_root(&data.path().join("client.sqlite3"), "outbox");

    let (code, _, err) = output(client(data.path()).arg("status"));
    assert_eq!(code, Some(3), "status refuses: {err}");
    assert!(err.contains("backups"), "{err}");

    let out = w.command(data.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("STORE_DAMAGED"), "{err}");
    assert!(err.contains("backups"), "{err}");
    // Refused before the claim: the task is still the Admin's to give.
    let t = w.task("dmg-1");
    assert_eq!(t["task"]["status"], "pending", "{t}");
    assert!(t["claims"].as_array().unwrap().is_empty(), "{t}");
    w.stop();
}

/// A first `run` refused after it took the data directory's lock (here: a `u2` backend
/// on a direct-TCP phone, exit 2) leaves its store beside the lock file and its log, so
/// the next command is not refused as if a store had been lost.
#[test]
fn a_first_run_refused_at_its_phone_leaves_a_usable_data_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let (code, _, err) = output(
        client(&data)
            .args(["run", "--device", "tcp:127.0.0.1:9", "--exit-when-idle"])
            .env("CMAUTOBUY_DEVICE_BACKEND", "u2"),
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("U2_UNAVAILABLE"), "{err}");
    assert!(data.join("client.lock").exists());
    let id = client_id(&data);
    assert!(id.starts_with("CLIENT-"), "{id}");
}
