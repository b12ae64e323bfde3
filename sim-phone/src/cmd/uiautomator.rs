//! `uiautomator dump [--compressed] [PATH|/dev/tty]`: the accessibility tree as XML, to a
//! file (default `/sdcard/window_dump.xml`) or stdout, with the scripted and random dump
//! faults ("could not get idle state", "null root node", stale dumps).

use crate::device::{Device, DumpFault, Exec};

const USAGE: &[u8] = b"Usage: uiautomator <subcommand> [options]\n\nAvailable subcommands:\n\nhelp: displays help message\n\nruntest: executes UI automation tests\n\ndump: creates an XML dump of current UI hierarchy\n\nevents: prints out accessibility events until terminated\n";

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    if args.first() != Some(&"dump") {
        e.stderr = USAGE.to_vec();
        e.code = 1;
        return 5;
    }
    d.counters.dumps += 1;
    let ms = d.observe_cost() + d.cost(800, 1500);
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
