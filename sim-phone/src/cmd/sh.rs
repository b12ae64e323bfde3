//! `sh -c SCRIPT`: a nested `/system/bin/sh` running one command line (Android's mksh
//! does; the client sends constant scripts such as `dumpsys package … | grep
//! versionName`). Anything else (`sh` reading stdin, `sh FILE`) exits 2 with the usage
//! line, as there is no file system to read scripts from.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let script = match args {
        ["-c", script, ..] => *script,
        _ => {
            e.stderr = b"usage: sh -c COMMAND\n".to_vec();
            e.code = 2;
            return QUICK_MS;
        }
    };
    let inner = d.run_line(script);
    // `run_line` counted its own time on the device clock already; the outer line counts
    // what this builtin returns, so take it back out once.
    let ms = inner.delay.as_millis() as u64;
    d.counters.device_time_ms = d.counters.device_time_ms.saturating_sub(ms);
    e.stdout = inner.stdout;
    e.stderr = inner.stderr;
    e.code = inner.code;
    ms + QUICK_MS
}
