//! `mkdir`: succeeds without doing anything (directories exist implicitly on this phone).

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(_: &mut Device, _: &[&str], _: &[u8], _: &mut Exec) -> u64 {
    QUICK_MS
}
