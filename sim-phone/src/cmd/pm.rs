//! `pm list packages [FILTER]`: the installed packages (the PDD app among them).

use crate::device::{Device, Exec, PDD_PACKAGE};

pub(crate) fn run(_: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    if args.first() == Some(&"list") && args.get(1) == Some(&"packages") {
        let filter = args[2..].iter().find(|a| !a.starts_with('-')).copied();
        for p in [
            "com.android.systemui",
            "com.miui.home",
            "com.tencent.mm",
            PDD_PACKAGE,
            "com.eg.android.AlipayGphone",
        ] {
            if filter.is_none_or(|f| p.contains(f)) {
                e.stdout
                    .extend_from_slice(format!("package:{p}\n").as_bytes());
            }
        }
    } else {
        e.stderr = b"Error: unknown pm command\n".to_vec();
        e.code = 1;
    }
    150
}
