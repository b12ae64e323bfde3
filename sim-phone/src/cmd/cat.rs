//! `cat [FILE...]`: files from the phone, or stdin (no arguments or `-`).

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], stdin: &[u8], e: &mut Exec) -> u64 {
    if args.is_empty() || args == ["-"] {
        e.stdout = stdin.to_vec();
        return QUICK_MS;
    }
    for a in args {
        match d.read_file(a) {
            Some(data) => e.stdout.extend_from_slice(&data),
            None => {
                let msg = if d.stat(a).is_some() {
                    format!("cat: {a}: Is a directory\n")
                } else {
                    format!("cat: {a}: No such file or directory\n")
                };
                e.stderr.extend_from_slice(msg.as_bytes());
                e.code = 1;
            }
        }
    }
    QUICK_MS
}
