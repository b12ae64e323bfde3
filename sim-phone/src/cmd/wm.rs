//! `wm size|density`: the display the layouts are drawn for; `wm dismiss-keyguard`: an
//! insecure keyguard goes away, a PIN one shows its pad.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    match args.first() {
        Some(&"size") => {
            e.stdout = format!("Physical size: {}x{}\n", d.cfg.width, d.cfg.height).into_bytes()
        }
        Some(&"density") => e.stdout = b"Physical density: 440\n".to_vec(),
        Some(&"dismiss-keyguard") => d.dismiss_keyguard(),
        _ => {
            e.stderr = b"usage: wm [size|density]\n".to_vec();
            e.code = 255;
        }
    }
    QUICK_MS
}
