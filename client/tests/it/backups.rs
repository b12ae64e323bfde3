//! Item 9: the claim loop's daily store backup, on the virtual clock — one at the
//! first look, the next a day later, rotated to `backups_keep`, each verified.

use std::time::Duration;

use crate::support::claim_loop::loop_world;
use crate::support::*;
use cmautobuy_client::clock::Clock;
use cmautobuy_client::runner::RunConfig;
use cmautobuy_client::store::backup;

#[tokio::test]
async fn the_daily_backup_is_taken_once_a_day_and_rotated() {
    let w = loop_world("127.0.0.1:5555", 0, |_| {
        ScriptedExecutor::new(Script::Result)
    })
    .await;
    let r = w.runner_with(RunConfig {
        backups_keep: 2,
        ..RunConfig::default()
    });
    let dir = w.store.backup_dir();
    let count = || backup::list(&dir).len();
    r.daily_backup();
    assert_eq!(count(), 1, "the first look takes one");
    r.daily_backup();
    w.clock.advance(Duration::from_secs(23 * 3600));
    r.daily_backup();
    assert_eq!(count(), 1, "not again within the day");
    w.clock.advance(Duration::from_secs(3600));
    r.daily_backup();
    assert_eq!(count(), 2);
    // A restarted loop reads the newest from the directory: not due yet.
    let again = w.runner_with(RunConfig {
        backups_keep: 2,
        ..RunConfig::default()
    });
    again.daily_backup();
    assert_eq!(count(), 2);
    w.clock.advance(Duration::from_secs(24 * 3600));
    r.daily_backup();
    let kept = backup::list(&dir);
    assert_eq!(kept.len(), 2, "rotated to backups_keep");
    assert_eq!(kept[1].0, w.clock.now());
    for (_, p) in &kept {
        backup::verify(p).unwrap();
    }
    // 0: no daily backup.
    let off = w.runner_with(RunConfig::default());
    w.clock.advance(Duration::from_secs(7 * 86_400));
    off.daily_backup();
    assert_eq!(backup::list(&dir).len(), 2);
}
