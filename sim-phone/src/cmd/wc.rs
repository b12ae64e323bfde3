//! `wc [-l]` as a pipe filter.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(_: &mut Device, args: &[&str], stdin: &[u8], e: &mut Exec) -> u64 {
    let lines = stdin.iter().filter(|&&b| b == b'\n').count();
    e.stdout = if args.contains(&"-l") {
        format!("{lines}\n")
    } else {
        let words = String::from_utf8_lossy(stdin).split_whitespace().count();
        format!("{lines} {words} {}\n", stdin.len())
    }
    .into_bytes();
    QUICK_MS
}
