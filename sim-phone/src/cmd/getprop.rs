//! `getprop [KEY]`: one system property, or all of them as `[key]: [value]` lines.

use crate::device::exec::QUICK_MS;
use crate::device::{Device, Exec};
use crate::identity::{DEVICE, MODEL, PRODUCT};

pub(crate) fn run(_: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let props = props();
    match args.first() {
        Some(k) => {
            let v = props
                .iter()
                .find(|(pk, _)| pk == k)
                .map(|(_, v)| v.as_str());
            e.stdout = format!("{}\n", v.unwrap_or("")).into_bytes();
        }
        None => {
            for (k, v) in &props {
                e.stdout
                    .extend_from_slice(format!("[{k}]: [{v}]\n").as_bytes());
            }
        }
    }
    QUICK_MS
}

/// The phone's system properties, in `getprop` order.
fn props() -> Vec<(String, String)> {
    [
        ("ro.product.manufacturer", "Xiaomi"),
        ("ro.product.brand", "Redmi"),
        ("ro.product.model", MODEL),
        ("ro.product.name", PRODUCT),
        ("ro.product.device", DEVICE),
        ("ro.build.version.release", "13"),
        ("ro.build.version.sdk", "33"),
        ("ro.serialno", "simphone0001"),
        ("persist.sys.timezone", "Asia/Shanghai"),
        ("ro.product.locale", "zh-CN"),
        ("sys.boot_completed", "1"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}
