//! `ls [PATH...]`: names in a directory, or the path of a file.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let paths: Vec<&str> = args
        .iter()
        .copied()
        .filter(|a| !a.starts_with('-'))
        .collect();
    let paths = if paths.is_empty() { vec!["/"] } else { paths };
    for p in paths {
        match d.stat(p) {
            Some((m, _, _)) if m & 0o040_000 != 0 => {
                for (n, _, _, _) in d.list_dir(p) {
                    e.stdout.extend_from_slice(format!("{n}\n").as_bytes());
                }
            }
            Some(_) => e.stdout.extend_from_slice(format!("{p}\n").as_bytes()),
            None => {
                e.stderr
                    .extend_from_slice(format!("ls: {p}: No such file or directory\n").as_bytes());
                e.code = 1;
            }
        }
    }
    QUICK_MS
}
