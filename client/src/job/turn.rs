//! [`TurnSource`]: the worker's device source with every device call made under the
//! phone's turn ([`crate::progress::PhoneTurn`]) — the one lock the console's live
//! screenshot takes as well — so nothing else ever sends the phone a command while one
//! of the worker's own is in flight (tasks, device checks, the account check and the
//! self-test all get their device here). The turn is held for one call at a time, never
//! across two: a screenshot waits at most one call, and falls between two.

use std::sync::Arc;
use std::time::Duration;

use super::source::DeviceSource;
use crate::device::{Device, DeviceError, KeyCode, Png, ShellOutput, UiDump};
use crate::progress::PhoneTurn;
use crate::screen::Point;

/// A device source whose devices take the phone's turn for every call.
pub struct TurnSource<S> {
    inner: S,
    turn: PhoneTurn,
}

impl<S: DeviceSource> TurnSource<S> {
    pub fn new(inner: S, turn: PhoneTurn) -> Self {
        TurnSource { inner, turn }
    }
}

impl<S: DeviceSource> DeviceSource for TurnSource<S> {
    fn device(&self) -> Result<Arc<dyn Device>, DeviceError> {
        Ok(Arc::new(TurnDevice {
            inner: self.inner.device()?,
            turn: self.turn.clone(),
        }))
    }
    fn configured(&self) -> bool {
        self.inner.configured()
    }
    fn thresholds(&self) -> crate::device::state::Thresholds {
        self.inner.thresholds()
    }
    // `check` is the trait's default over `device()`: under the turn too.
    fn begin_job(&self) {
        self.inner.begin_job()
    }
    fn device_time_ms(&self) -> Option<u64> {
        self.inner.device_time_ms()
    }
}

/// A device whose every call holds the phone's turn. The default methods (`back`,
/// `tap_node`, `tap_target`) go through `key` / `tap`, so they take it once as well.
pub struct TurnDevice {
    inner: Arc<dyn Device>,
    turn: PhoneTurn,
}

impl TurnDevice {
    pub fn new(inner: Arc<dyn Device>, turn: PhoneTurn) -> Self {
        TurnDevice { inner, turn }
    }
}

impl Device for TurnDevice {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        let _t = self.turn.hold();
        self.inner.dump_ui()
    }
    fn tap(&self, at: Point) -> Result<(), DeviceError> {
        let _t = self.turn.hold();
        self.inner.tap(at)
    }
    fn swipe(&self, from: Point, to: Point, duration: Duration) -> Result<(), DeviceError> {
        let _t = self.turn.hold();
        self.inner.swipe(from, to, duration)
    }
    fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
        let _t = self.turn.hold();
        self.inner.key(code)
    }
    fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        let _t = self.turn.hold();
        self.inner.open_url(url)
    }
    fn screenshot(&self) -> Result<Png, DeviceError> {
        let _t = self.turn.hold();
        self.inner.screenshot()
    }
    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        let _t = self.turn.hold();
        self.inner.shell(argv)
    }
    fn shell_batch(&self, cmds: &[&[&str]]) -> Result<Vec<ShellOutput>, DeviceError> {
        let _t = self.turn.hold();
        self.inner.shell_batch(cmds)
    }
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }
    fn backend_fallback(&self) -> Option<String> {
        self.inner.backend_fallback()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A device that records how many calls are in flight at once.
    #[derive(Default)]
    struct Counting {
        now: AtomicUsize,
        max: AtomicUsize,
        calls: AtomicUsize,
    }

    impl Counting {
        fn enter(&self) {
            let n = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.max.fetch_max(n, Ordering::SeqCst);
            self.calls.fetch_add(1, Ordering::SeqCst);
            // Long enough for the threads to overlap if nothing serialised them.
            std::thread::yield_now();
            std::thread::sleep(Duration::from_millis(2));
            self.now.fetch_sub(1, Ordering::SeqCst);
        }
    }

    impl Device for Counting {
        fn dump_ui(&self) -> Result<UiDump, DeviceError> {
            self.enter();
            Err(DeviceError::NotOnScreen)
        }
        fn tap(&self, _: Point) -> Result<(), DeviceError> {
            self.enter();
            Ok(())
        }
        fn swipe(&self, _: Point, _: Point, _: Duration) -> Result<(), DeviceError> {
            self.enter();
            Ok(())
        }
        fn key(&self, _: KeyCode) -> Result<(), DeviceError> {
            self.enter();
            Ok(())
        }
        fn open_url(&self, _: &str) -> Result<(), DeviceError> {
            self.enter();
            Ok(())
        }
        fn screenshot(&self) -> Result<Png, DeviceError> {
            self.enter();
            Err(DeviceError::NotOnScreen)
        }
        fn shell(&self, _: &[&str]) -> Result<ShellOutput, DeviceError> {
            self.enter();
            Ok(ShellOutput::default())
        }
    }

    /// Calls from the worker's device and the console's screenshot, on four threads at
    /// once: never two in flight on the phone.
    #[test]
    fn calls_through_the_turn_never_overlap() {
        let raw = Arc::new(Counting::default());
        let turn = PhoneTurn::default();
        let dev: Arc<dyn Device> = Arc::new(TurnDevice::new(raw.clone(), turn.clone()));
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let dev = dev.clone();
                let raw = raw.clone();
                let turn = turn.clone();
                std::thread::spawn(move || {
                    for _ in 0..25 {
                        if i == 3 {
                            // The console: holds the turn, then calls the raw device.
                            let _t = turn.hold();
                            let _ = raw.screenshot();
                        } else {
                            let _ = dev.tap(Point { x: 1, y: 1 });
                            let _ = dev.back();
                            let _ = dev.shell(&["true"]);
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(raw.calls.load(Ordering::SeqCst), 3 * 25 * 3 + 25);
        assert_eq!(raw.max.load(Ordering::SeqCst), 1, "two calls overlapped");
    }
}
