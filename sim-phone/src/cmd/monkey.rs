//! `monkey -p PKG ...`: the usual way scripts launch an app by package.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec, PDD_PACKAGE};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    if args.contains(&PDD_PACKAGE) {
        let o = d.app.launch();
        if o.transition {
            d.transition();
        }
        e.stdout =
            b"  bash arg: -p\n  bash arg: com.xunmeng.pinduoduo\nEvents injected: 1\n".to_vec();
        300
    } else {
        e.stderr = b"** No activities found to run, monkey aborted.\n".to_vec();
        e.code = 252;
        QUICK_MS
    }
}
