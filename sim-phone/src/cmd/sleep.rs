//! `sleep SECS` (0–60, fractions allowed): simulated time only.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(_: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let secs: f64 = args.first().and_then(|s| s.parse().ok()).unwrap_or(-1.0);
    if !(0.0..=60.0).contains(&secs) {
        e.stderr = b"sleep: invalid number\n".to_vec();
        e.code = 1;
        QUICK_MS
    } else {
        (secs * 1000.0) as u64
    }
}
