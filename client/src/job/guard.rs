//! [`GuardedDevice`]: defence in depth at the device port (issue 7).
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
//! A refused tap is a non-retryable [`DeviceFailure`] with code `TAP_REFUSED`.

use super::driver::{DeviceFailure, FlowDevice};
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

/// A [`FlowDevice`] that refuses pay buttons and a second (or unwanted) submit.
pub struct GuardedDevice<D: FlowDevice> {
    inner: D,
    last: Option<Tree>,
    /// Submits still allowed (1 for a live purchase, 0 otherwise).
    submits_left: u32,
    /// Taps refused so far (tests).
    pub refused: u32,
}

impl<D: FlowDevice> GuardedDevice<D> {
    /// `submit_allowed`: a live purchase may tap 提交订单 once; everything else never.
    pub fn new(inner: D, submit_allowed: bool) -> Self {
        GuardedDevice {
            inner,
            last: None,
            submits_left: u32::from(submit_allowed),
            refused: 0,
        }
    }

    pub fn into_inner(self) -> D {
        self.inner
    }

    fn refuse(&mut self, why: String) -> Result<(), DeviceFailure> {
        self.refused += 1;
        tracing::error!(reason = %why, "tap refused by the device guard");
        Err(DeviceFailure {
            code: "TAP_REFUSED".into(),
            message: why,
            retryable: false,
            dump: false,
        })
    }
}

impl<D: FlowDevice> FlowDevice for GuardedDevice<D> {
    fn dump_ui(&mut self) -> Result<String, DeviceFailure> {
        let out = self.inner.dump_ui()?;
        // Keep the tree even when the flow's own parse fails later: a failed parse
        // clears it, so the next tap is judged on nothing rather than on a stale page.
        self.last = Tree::parse(&out).ok();
        Ok(out)
    }

    fn tap(&mut self, at: Point) -> Result<(), DeviceFailure> {
        let labels = self
            .last
            .as_ref()
            .map(|t| labels_at(t, at))
            .unwrap_or_default();
        if let Some(pay) = labels.iter().find(|l| is_pay_label(l)) {
            return self.refuse(format!("`{pay}` is a pay button: this client never pays"));
        }
        let submit = labels.iter().any(|l| l.starts_with(SUBMIT_LABEL));
        if submit {
            if self.submits_left == 0 {
                return self.refuse(
                    "提交订单 is not allowed here (dry run, recovery, or already tapped once)"
                        .into(),
                );
            }
            self.submits_left -= 1;
        }
        self.inner.tap(at)
    }

    fn swipe(&mut self, from: Point, to: Point, duration_ms: u32) -> Result<(), DeviceFailure> {
        self.inner.swipe(from, to, duration_ms)
    }

    fn back(&mut self) -> Result<(), DeviceFailure> {
        self.inner.back()
    }

    fn open_url(&mut self, url: &str) -> Result<(), DeviceFailure> {
        self.inner.open_url(url)
    }

    fn screenshot(&mut self) -> Result<Vec<u8>, DeviceFailure> {
        self.inner.screenshot()
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
