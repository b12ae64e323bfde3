//! `cmd SERVICE ARGS…`: only `cmd statusbar expand-notifications | expand-settings |
//! collapse` (StatusBarShellCommand), the way scripts pull the shade down or put it away.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    match (args.first().copied(), args.get(1).copied()) {
        (Some("statusbar"), Some("expand-notifications" | "expand-settings")) => {
            if d.sys.screen_on && !d.sys.locked {
                d.sys.shade = true;
                d.transition();
            }
            40
        }
        (Some("statusbar"), Some("collapse")) => {
            if d.sys.shade {
                d.sys.shade = false;
                d.transition();
            }
            if d.replay_collapse_shade().transition {
                d.transition();
            }
            40
        }
        (Some("statusbar"), _) => {
            e.stderr = b"Unknown command\n".to_vec();
            e.code = 255;
            QUICK_MS
        }
        (Some(svc), _) => {
            e.stderr = format!("Can't find service: {svc}\n").into_bytes();
            e.code = 20;
            QUICK_MS
        }
        (None, _) => {
            e.stderr = b"cmd: No service specified; use -l to list all running services. Use -w to start and wait for a service.\n".to_vec();
            e.code = 20;
            QUICK_MS
        }
    }
}
