//! The artifact sweep's cost, printed as numbers for BENCHMARKS.md:
//! 10 000 attempt folders (3 files each: two dumps and a manifest, like a short
//! collect) in a temporary directory, then
//! - the start-up walk (`ArtifactIndex::scan`),
//! - the sweep after a task (`note_attempt` + `sweep`, nothing to remove),
//! - a sweep that removes 10 % for the size cap.
//!
//! `cargo run --release -p cmautobuy-client --example artifact_sweep [-- N]`

use std::time::{Duration, Instant, SystemTime};

use chrono::Utc;
use cmautobuy_client::artifacts::{ArtifactIndex, AttemptArtifacts, Retention};

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("artifacts");
    let t = Instant::now();
    let dump = vec![b'x'; 2_000];
    for i in 0..n {
        // 2 000 tasks with 5 attempts each at 10 000.
        let task = format!("task-{}", i / 5);
        let mut a = AttemptArtifacts::create(&root, &task, &format!("attempt-{i}")).expect("dir");
        a.save("open_goods", "xml", &dump, Utc::now());
        a.save("check_goods", "xml", &dump, Utc::now());
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + i as u64);
        let _ = std::fs::File::open(a.dir()).and_then(|f| f.set_modified(at));
    }
    println!(
        "created {n} attempt folders in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let keep = Retention {
        keep_attempts: 5,
        max_age: None,
        max_total_bytes: None,
        evidence_max_age: None,
    };
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);

    let t = Instant::now();
    let mut index = ArtifactIndex::scan(&root, &|_, a| a.ends_with('7'));
    let scan = t.elapsed();
    let total = index.total_bytes();
    println!(
        "start-up walk: {} attempts, {:.1} MB, {:.1} ms",
        index.len(),
        total as f64 / 1e6,
        scan.as_secs_f64() * 1e3
    );

    let t = Instant::now();
    let r = index.sweep(keep, now, None);
    println!(
        "first sweep (nothing to remove): removed {}, {:.2} ms",
        r.removed,
        t.elapsed().as_secs_f64() * 1e3
    );

    // After a task: one new attempt noted, then the sweep.
    let mut samples = Vec::new();
    for k in 0..20 {
        let id = format!("new-{k}");
        let mut a = AttemptArtifacts::create(&root, &id, "attempt").expect("dir");
        a.save("open_goods", "xml", &dump, Utc::now());
        let t = Instant::now();
        index.note_attempt(&id, "attempt", false);
        let r = index.sweep(keep, now, None);
        samples.push(t.elapsed());
        assert_eq!(r.removed, 0);
    }
    samples.sort();
    println!(
        "after-task sweep ({} attempts): median {:.2} ms, max {:.2} ms",
        index.len(),
        samples[samples.len() / 2].as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3
    );

    let cap = index.total_bytes() / 10 * 9;
    let t = Instant::now();
    let r = index.sweep(
        Retention {
            max_total_bytes: Some(cap),
            ..keep
        },
        now,
        None,
    );
    println!(
        "size-cap sweep (cap 90 %): removed {} ({} evidence), freed {:.1} MB, {:.1} ms",
        r.removed,
        r.removed_evidence,
        r.freed_bytes as f64 / 1e6,
        t.elapsed().as_secs_f64() * 1e3
    );
}
