//! Named failpoints for the purchase crash matrix (`scripts/crash-matrix`).
//!
//! In the manner of TiKV's `fail` crate, reduced to what the matrix needs: a failpoint
//! is a name at a step boundary ([`hit`]). Compiled without the `failpoints` cargo
//! feature it is an empty inline function. With the feature, the environment variable
//! `CMAUTOBUY_FAILPOINTS` (a comma-separated list of names) is read once, and reaching a
//! listed name aborts the process right there — no destructor, no flush, no outbox
//! write — which is exactly what a crash (or a SIGKILL) leaves behind. `NAME@N` aborts
//! at the N-th time this process reaches the name (e.g. `purchase.after_mark@2`: the
//! second task's mark), passing the earlier ones.
//!
//! The names are stable strings so the matrix script can list them: see [`ALL`].

/// Every failpoint the client has, in the order a live purchase reaches them.
pub const ALL: &[&str] = &[
    "claim.before_save",
    "spec.before_send",
    "purchase.after_proceed_note",
    "purchase.before_mark",
    "purchase.after_mark",
    "purchase.after_submit_tap",
    "purchase.payment_screen",
    "purchase.abandon_dialog",
    "purchase.left_payment",
    "reconcile.order_list",
    "reconcile.order_detail",
    "purchase.before_report",
    "outbox.before_send",
    "outbox.after_send",
];

/// The environment variable listing the failpoints to arm.
pub const ENV: &str = "CMAUTOBUY_FAILPOINTS";

/// Reaching `name`: aborts the process when the point is armed (feature `failpoints`).
#[cfg(feature = "failpoints")]
pub fn hit(name: &str) {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::OnceLock;
    // (name, the hit that aborts, hits so far)
    static ARMED: OnceLock<Vec<(String, u32, AtomicU32)>> = OnceLock::new();
    let armed = ARMED.get_or_init(|| {
        std::env::var(ENV)
            .unwrap_or_default()
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| match s.split_once('@') {
                Some((n, k)) => (n.to_string(), k.parse().unwrap_or(1), AtomicU32::new(0)),
                None => (s.to_string(), 1, AtomicU32::new(0)),
            })
            .collect()
    });
    let fire = armed
        .iter()
        .filter(|(a, _, _)| a == name)
        .any(|(_, nth, hits)| hits.fetch_add(1, Ordering::SeqCst) + 1 == *nth);
    if fire {
        // stderr is unbuffered: the matrix log shows where the process died.
        eprintln!("failpoint {name}: aborting the process");
        std::process::abort();
    }
}

/// Reaching `name`: nothing happens in a build without the `failpoints` feature.
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn hit(_name: &str) {}

/// Whether this build can abort at failpoints (the matrix refuses a build without).
pub const ENABLED: bool = cfg!(feature = "failpoints");
