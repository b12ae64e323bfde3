//! What every connection shares: the phone behind its lock, the offline switch, the
//! scripted hangs, and running a command line under them.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::device::{Device, Exec, LatencyProfile};
use crate::identity::{DEVICE, MODEL, PRODUCT};

/// State shared by every connection: the phone itself plus the switches the handle flips.
pub(crate) struct Shared {
    pub device: Mutex<Device>,
    pub profile: LatencyProfile,
    pub offline: watch::Sender<bool>,
    pub banner: String,
    /// Scripted hangs (see `SimPhoneHandle::hang_commands`): a command line
    /// containing a rule's pattern waits, before it runs, until the rule is released.
    pub hangs: Mutex<Vec<HangRule>>,
    /// Scripted holds of uiautomator2's server calls (see `SimPhoneHandle::hold_u2_calls`):
    /// a JSON-RPC call whose method is a rule's pattern waits, before it runs, until the
    /// rule is released.
    pub u2_holds: Mutex<Vec<HangRule>>,
    /// Bumped whenever uiautomator2's server starts listening, stops or is killed: the
    /// streams it lives on and the streams that reach it wake up and look.
    pub u2_changed: watch::Sender<u64>,
}

/// One scripted hang: lines containing `pattern` (server calls: of method `pattern`) wait
/// until `released` turns true.
pub(crate) struct HangRule {
    pub pattern: String,
    pub released: watch::Receiver<bool>,
    pub hits: Arc<std::sync::atomic::AtomicU64>,
}

impl Shared {
    /// Lock the phone. A panic while holding the lock would poison it; the phone state is
    /// still consistent enough for a simulator, so keep going rather than cascade panics.
    pub fn lock(&self) -> std::sync::MutexGuard<'_, Device> {
        self.device.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Publish the device's offline flag (a fault plan may have flipped it).
    pub(crate) fn sync_offline(&self) {
        let off = self.lock().offline;
        self.offline.send_if_modified(|v| {
            let changed = *v != off;
            *v = off;
            changed
        });
    }
}

impl Shared {
    /// Wake everything that watches the server.
    pub(crate) fn u2_notify(&self) {
        self.u2_changed.send_modify(|g| *g = g.wrapping_add(1));
    }
}

pub(crate) fn banner() -> String {
    format!(
        "device::ro.product.name={PRODUCT};ro.product.model={MODEL};ro.product.device={DEVICE};features=shell_v2,cmd"
    )
}

/// Run a command line on the phone; sleep its simulated cost in the realistic profile.
pub(crate) async fn execute(shared: &Arc<Shared>, line: &str) -> Exec {
    hold_if_hung(shared, line).await;
    let out = shared.lock().run_line(line);
    shared.sync_offline();
    // A resident process (uiautomator2's server) prints first and finishes starting after:
    // its stream sleeps the start-up (see `adb/u2.rs`).
    if out.resident.is_none() && shared.profile == LatencyProfile::Realistic && !out.delay.is_zero()
    {
        tokio::time::sleep(out.delay).await;
    }
    out
}

/// Wait (outside the phone's lock, so other connections keep being served) while an
/// unreleased hang rule matches `line`. Nothing of the line has run yet.
pub(crate) async fn hold_if_hung(shared: &Arc<Shared>, line: &str) {
    if let Some(mut released) = matching_hold(&shared.hangs, |p| line.contains(p)) {
        // A dropped gate counts as released (wait_for then returns Err).
        let _ = released.wait_for(|r| *r).await;
    }
}

/// The first unreleased rule of `rules` whose pattern `matches`, its hit counted: the
/// receiver to wait on. Released rules are dropped on the way.
pub(crate) fn matching_hold(
    rules: &Mutex<Vec<HangRule>>,
    matches: impl Fn(&str) -> bool,
) -> Option<watch::Receiver<bool>> {
    let mut rules = rules.lock().unwrap_or_else(|p| p.into_inner());
    rules.retain(|h| !*h.released.borrow());
    let rule = rules.iter().find(|h| matches(&h.pattern))?;
    rule.hits.fetch_add(1, Ordering::AcqRel);
    Some(rule.released.clone())
}
