//! `rm [-f] [-r] PATH...`: a file, or everything below a directory.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let force = args.iter().any(|a| a.starts_with('-') && a.contains('f'));
    for a in args.iter().filter(|a| !a.starts_with('-')) {
        if !d.files.remove(a) && !force {
            e.stderr
                .extend_from_slice(format!("rm: {a}: No such file or directory\n").as_bytes());
            e.code = 1;
        }
    }
    QUICK_MS
}
