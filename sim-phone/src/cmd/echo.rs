//! `echo [-n] WORDS...`.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(_: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let (nl, rest) = match args.first() {
        Some(&"-n") => (false, &args[1..]),
        _ => (true, args),
    };
    e.stdout = rest.join(" ").into_bytes();
    if nl {
        e.stdout.push(b'\n');
    }
    QUICK_MS
}
