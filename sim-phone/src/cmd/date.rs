//! `date [+FORMAT]`: the phone's clock in its own UTC offset.

use std::fmt::Write as _;

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let now = d.now();
    let fmt = args
        .iter()
        .find_map(|a| a.strip_prefix('+'))
        .unwrap_or("%a %b %e %H:%M:%S %Z %Y");
    let mut s = String::new();
    if write!(s, "{}", now.format(fmt)).is_err() {
        e.stderr = b"date: bad format\n".to_vec();
        e.code = 1;
    } else {
        e.stdout = format!("{s}\n").into_bytes();
    }
    QUICK_MS
}
