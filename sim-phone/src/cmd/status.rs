//! `true`, `:` and `false`: nothing but an exit status.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

/// `true` / `:`: exit 0.
pub(crate) fn truth(_: &mut Device, _: &[&str], _: &[u8], _: &mut Exec) -> u64 {
    QUICK_MS
}

/// `false`: exit 1.
pub(crate) fn falsity(_: &mut Device, _: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    e.code = 1;
    QUICK_MS
}
