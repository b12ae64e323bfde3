//! `uiautomator dump [--compressed] [PATH|/dev/tty]`: the accessibility tree as XML, to a
//! file (default `/sdcard/window_dump.xml`) or stdout, with the scripted and random dump
//! faults ("could not get idle state", "null root node", stale dumps), the idle failures of
//! `animated` goods pages, and the kill while uiautomator2's server holds UiAutomation.

use crate::device::{Device, DumpFault, Exec};

const USAGE: &[u8] = b"Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\nruntest: executes UI automation tests\n\ndump: creates an XML dump of current UI hierarchy\n\nevents: prints out accessibility events until terminated\n";

/// Chance in percent that a dump of an `animated` goods page or sheet fails idle.
const ANIMATED_FAIL_PERCENT: u64 = 50;
/// At most this many dumps in a row fail there (the animation has pauses).
const ANIMATED_MAX_STREAK: u32 = 3;

/// The goods on screen (page or sheet) keeps animating.
fn animated(d: &Device) -> bool {
    d.app
        .displayed_goods_id()
        .and_then(|id| d.app.goods(id))
        .is_some_and(|g| g.animated)
}

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    if args.first() != Some(&"dump") {
        e.stderr = USAGE.to_vec();
        e.code = 1;
        return 5;
    }
    d.counters.dumps += 1;
    let ms = d.observe_cost() + d.cost(800, 1500);
    if d.u2.running.is_some() {
        // uiautomator2's server holds the phone's one UiAutomation connection: the dump's
        // own connect throws, and the process dies without a word but the shell's.
        d.counters.dump_failures += 1;
        e.stderr = b"Killed\n".to_vec();
        e.code = 137;
        return ms;
    }
    if animated(d) {
        let fail =
            d.u2.animated_streak < ANIMATED_MAX_STREAK && d.cost(0, 99) < ANIMATED_FAIL_PERCENT;
        if fail {
            d.u2.animated_streak += 1;
            d.counters.dump_failures += 1;
            e.stderr = b"ERROR: could not get idle state.\n".to_vec();
            return ms;
        }
        d.u2.animated_streak = 0;
    }
    let path = args[1..]
        .iter()
        .copied()
        .find(|a| !a.starts_with('-'))
        .unwrap_or("/sdcard/window_dump.xml");
    let fault = d.next_dump_fault();
    match fault {
        Some(DumpFault::IdleState) => {
            d.counters.dump_failures += 1;
            e.stderr = b"ERROR: could not get idle state.\n".to_vec();
            return ms;
        }
        Some(DumpFault::NullRoot) => {
            d.counters.dump_failures += 1;
            e.stderr = b"ERROR: null root node returned by UiTestAutomationBridge.\n".to_vec();
            return ms;
        }
        _ => {}
    }
    let xml = if fault == Some(DumpFault::Stale) {
        d.counters.dump_failures += 1;
        d.last_dump.clone()
    } else {
        let x = d.dump_xml();
        d.last_dump = Some(x.clone());
        // A lagging sheet total settles one dump at a time.
        if d.after_dump().transition {
            d.transition();
        }
        Some(x)
    };
    if path == "/dev/tty" {
        if let Some(x) = xml {
            e.stdout = x.into_bytes();
        }
    } else if fault != Some(DumpFault::Stale) {
        if let Some(x) = xml {
            d.write_file(path, x.into_bytes());
        }
    }
    e.stdout
        .extend_from_slice(format!("UI hierchary dumped to: {path}\n").as_bytes());
    ms
}
