//! [`GuardedDevice`]: defence in depth at the device port.
//!
//! The flows already never ask for a pay button and tap 提交订单 at most once. This
//! wrapper makes both true even if a flow had a bug: it keeps the last dump, and before
//! every tap it looks at what is at the tap point (the deepest visible node there, and
//! everything inside the clickable node that would take the tap).
//!
//! - A tap on anything labelled like a pay button (立即支付, 继续支付, 去支付, 确认支付,
//!   确认付款, 立即付款, 免密支付, 支付) is **refused** — the phone never sees it.
//! - A tap on 提交订单 is refused when submitting is not allowed (dry runs, collect,
//!   crash recovery) and after the first one was let through.
//!
//! A refused tap is a non-retryable [`DeviceError::TapRefused`] (code `TAP_REFUSED`).

use std::sync::Mutex;
use std::time::Duration;

use crate::device::{Device, DeviceError, KeyCode, Png, ShellOutput, UiDump};
use crate::screen::page::trim_name;
use crate::screen::{Point, Tree};

/// Labels of buttons that move money. Compared after trimming, as a prefix.
pub const PAY_LABELS: &[&str] = &[
    "立即支付",
    "继续支付",
    "去支付",
    "确认支付",
    "确认付款",
    "立即付款",
    "免密支付",
    "免密支付并",
];

/// The label of the button that creates an order.
pub const SUBMIT_LABEL: &str = "提交订单";

/// Is this label a pay button?
pub fn is_pay_label(label: &str) -> bool {
    let l = trim_name(label);
    l == "支付" || l == "付款" || PAY_LABELS.iter().any(|p| l.starts_with(p))
}

/// What is at `at`: the labels of the node that would take the tap (the nearest
/// clickable ancestor of the deepest visible node there) and of everything inside it.
pub fn labels_at(tree: &Tree, at: Point) -> Vec<String> {
    let deepest = tree
        .nodes()
        .filter(|n| n.is_visible() && n.visible_bounds().contains_point(at))
        .min_by_key(|n| n.visible_bounds().area());
    let Some(node) = deepest else {
        return Vec::new();
    };
    let target = node.nearest_clickable().unwrap_or(node);
    let mut out: Vec<String> = Vec::new();
    for n in std::iter::once(target).chain(target.descendants()) {
        // A clickable inside the target (a card's 去支付 button) takes its own taps: it
        // is not what this tap presses, unless the tap lands on it (then it is `node`'s
        // own clickable and the target itself).
        let own = n.id() == target.id()
            || !std::iter::once(n)
                .chain(n.ancestors().take_while(|a| a.id() != target.id()))
                .any(|x| x.is_clickable());
        if !own {
            continue;
        }
        for l in [n.text(), n.desc()] {
            let l = trim_name(l);
            if !l.is_empty() {
                out.push(l.to_string());
            }
        }
    }
    out
}

/// What the guard remembers between calls.
#[derive(Default)]
struct GuardState {
    last: Option<Tree>,
    /// Submits still allowed (1 for a live purchase, 0 otherwise).
    submits_left: u32,
    /// Taps refused so far.
    refused: u32,
}

/// A [`Device`] that refuses pay buttons and a second (or unwanted) submit.
pub struct GuardedDevice<D: Device> {
    inner: D,
    state: Mutex<GuardState>,
}

impl<D: Device> GuardedDevice<D> {
    /// `submit_allowed`: a live purchase may tap 提交订单 once; everything else never.
    pub fn new(inner: D, submit_allowed: bool) -> Self {
        GuardedDevice {
            inner,
            state: Mutex::new(GuardState {
                submits_left: u32::from(submit_allowed),
                ..GuardState::default()
            }),
        }
    }

    /// The guarded device.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    /// Taps refused so far.
    pub fn refused(&self) -> u32 {
        self.state().refused
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GuardState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn refuse(state: &mut GuardState, why: String) -> Result<(), DeviceError> {
    state.refused += 1;
    tracing::error!(reason = %why, "tap refused by the device guard");
    Err(DeviceError::TapRefused(why))
}

impl<D: Device> Device for GuardedDevice<D> {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        let out = self.inner.dump_ui();
        // A failed dump clears the page: the next tap is judged on nothing rather than on
        // a stale page.
        self.state().last = out.as_ref().ok().map(|d| d.tree.clone());
        out
    }

    fn tap(&self, at: Point) -> Result<(), DeviceError> {
        {
            let mut st = self.state();
            let labels = st
                .last
                .as_ref()
                .map(|t| labels_at(t, at))
                .unwrap_or_default();
            if let Some(pay) = labels.iter().find(|l| is_pay_label(l)) {
                let why = format!("`{pay}` is a pay button: this client never pays");
                return refuse(&mut st, why);
            }
            if labels.iter().any(|l| l.starts_with(SUBMIT_LABEL)) {
                if st.submits_left == 0 {
                    return refuse(
                        &mut st,
                        "提交订单 is not allowed here (dry run, recovery, or already tapped once)"
                            .into(),
                    );
                }
                st.submits_left -= 1;
            }
        }
        self.inner.tap(at)
    }

    fn swipe(&self, from: Point, to: Point, duration: Duration) -> Result<(), DeviceError> {
        self.inner.swipe(from, to, duration)
    }

    fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
        self.inner.key(code)
    }

    fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        self.inner.open_url(url)
    }

    fn screenshot(&self) -> Result<Png, DeviceError> {
        self.inner.screenshot()
    }

    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        self.inner.shell(argv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pay_labels() {
        for l in ["立即支付 ¥59", "继续支付", "  去支付", "支付", "确认付款"] {
            assert!(is_pay_label(l), "{l}");
        }
        for l in [
            "提交订单 ¥269",
            "先去逛逛",
            "微信支付",
            "使用#微信支付，更换支付方式",
            "支付宝",
        ] {
            assert!(!is_pay_label(l), "{l}");
        }
    }
}
