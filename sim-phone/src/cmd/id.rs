//! `id`: the adb shell user.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(_: &mut Device, _: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    e.stdout =
        b"uid=2000(shell) gid=2000(shell) groups=2000(shell) context=u:r:shell:s0\n".to_vec();
    QUICK_MS
}
