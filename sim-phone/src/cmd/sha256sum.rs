//! `sha256sum FILE...` (toybox): `HASH  PATH` per file — how a client checks the phone's
//! copy of `u2.jar` before pushing it again.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};
use crate::u2::jar::sha256_hex;

pub(crate) fn run(d: &mut Device, args: &[&str], stdin: &[u8], e: &mut Exec) -> u64 {
    if args.is_empty() || args == ["-"] {
        e.stdout = format!("{}  -\n", sha256_hex(stdin)).into_bytes();
        return QUICK_MS;
    }
    let mut ms = QUICK_MS;
    for a in args {
        match d.read_file(a) {
            Some(data) => {
                // ≈ 200 MB/s on a phone.
                ms += data.len() as u64 / 200_000;
                e.stdout
                    .extend_from_slice(format!("{}  {a}\n", sha256_hex(&data)).as_bytes());
            }
            None => {
                let msg = if d.stat(a).is_some() {
                    format!("sha256sum: {a}: Is a directory\n")
                } else {
                    format!("sha256sum: {a}: No such file or directory\n")
                };
                e.stderr.extend_from_slice(msg.as_bytes());
                e.code = 1;
            }
        }
    }
    ms
}
