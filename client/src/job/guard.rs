//! [`GuardedDevice`]: defence in depth at the device port.
//!
//! The flows already never ask for a pay action and tap 提交订单 at most once. This
//! wrapper makes both true even if a flow had a bug. It keeps the **freshest** parsed
//! dump (every window of it, another app's cashier included) for as long as nothing can
//! have changed the screen, and judges every tap on it with
//! [`crate::screen::controls::controls_at`] (which nodes are submit controls and pay
//! actions, whole-label rule, and whether the point is inside one or its clickable
//! ancestor):
//!
//! - **No fresh dump → every tap refused.** None yet, the last one failed, or a gesture
//!   since may have changed the screen: a tap of kind [`TapKind::ChangesScreen`] or
//!   [`TapKind::Submit`], a swipe, a key, a deep link. Only in-page taps
//!   ([`TapKind::InPage`]: options, steppers) leave the dump they were planned on in
//!   force. Deep links and the BACK / HOME / APP_SWITCH / WAKEUP keys — the navigation
//!   flows declare — need no dump; any other key (ENTER would press a focused button) is
//!   refused, and so is `input` through the shell.
//! - **A pay action → refused**, always.
//! - **A submit control (提交订单 / 确认下单) → refused**, except the single submit: a tap
//!   the flow declared [`TapKind::Submit`], on a guard built for a live purchase, after
//!   the driver reported the irreversible mark ([`GuardedDevice::marked`]), the first
//!   time. A `Submit` tap that lands on no submit control is refused too.
//!
//! - **Something of PDD's own drawn over the target → refused**: the
//!   guard finds the node the tap aims at from its label
//!   ([`GuardedDevice::tap_labelled`]; the driver passes the flow's label, a tap without
//!   one is aimed by the point alone) and the node a touch there reaches in PDD's window
//!   as Android dispatches it ([`crate::screen::cover`]: z-order from `drawing-order`);
//!   when that is neither the aimed control nor inside it — a 多多支付 promo bubble drawn
//!   over the 提交订单 footer — the tap is refused naming both, and the one submit is not
//!   spent. A PDD window of its own (a PopupWindow: a separate PDD root of the dump,
//!   listed after the target's) that holds the point covers the tap the same way.
//! - **A 确定 / 立即购买 that places the order is a submit control**: on a checkout screen
//!   ([`is_checkout`]: a payment row, a total line, an address beside a stepper), and on
//!   any screen when the button quotes an amount ("确定 ¥59").
//! - **A point another package's window would receive → refused**: the
//!   window stack (`dumpsys window windows`, [`crate::screen::windows`]) is read once per
//!   fresh dump, at the first tap judged on it (dumps no tap follows cost nothing), and
//!   the receiver of a touch at the point is found as Android finds it. A notification
//!   shade, heads-up, keyboard, system dialog or chooser there is a retryable
//!   [`DeviceError::TapCovered`]: the flow puts it away with a key or a shell command
//!   (never a tap) and dumps again, bounded (`flow::observe`).
//!
//! A refused tap never reaches the phone: it is a non-retryable
//! [`DeviceError::TapRefused`] (code `TAP_REFUSED`), which the driver hands the flow as
//! `Observation::TapRefused`; the flow fails closed (`manual_review`).

use std::sync::Mutex;
use std::time::Duration;

use crate::device::{Device, DeviceError, KeyCode, Png, ShellOutput, UiDump};
use crate::flow::TapKind;
use crate::screen::checkout::is_checkout;
use crate::screen::controls::{controls_at, ControlKind};
use crate::screen::cover::covering;
use crate::screen::windows::{
    cover_at, focused_cover, parse_windows, Cover, WindowInfo, WINDOWS_ARGV,
};
use crate::screen::{Point, Tree, WindowFilter};

/// Keys that navigate without pressing anything on screen.
pub const SAFE_KEYS: &[KeyCode] = &[
    KeyCode::BACK,
    KeyCode::HOME,
    KeyCode::APP_SWITCH,
    KeyCode::WAKEUP,
];

/// Where the one submit stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubmitState {
    /// Dry runs, collect, recovery: never.
    NotAllowed,
    /// A live purchase before the irreversible mark.
    AwaitingMark,
    /// Marked: the next [`TapKind::Submit`] on a submit control goes through.
    Armed,
    /// The one submit went out.
    Spent,
}

/// Judges a tap at `at` of `kind`, labelled `label` (what the flow meant to press; empty
/// when unknown), on the freshest dump (`None`: no fresh dump). `Ok(true)` when it is the
/// single submit (the caller spends it), `Ok(false)` for any other allowed tap,
/// `Err(reason)` when refused.
pub fn judge(
    fresh: Option<&Tree>,
    submit: SubmitState,
    at: Point,
    kind: TapKind,
    label: &str,
) -> Result<bool, String> {
    let Some(tree) = fresh else {
        return Err(
            "no fresh dump to judge the tap on (none yet, or a gesture since may have changed the screen)"
                .into(),
        );
    };
    // On a checkout screen a 确定 / 立即购买 places the order like 提交订单.
    let hits = controls_at(tree, at, is_checkout(tree));
    if let Some(pay) = hits.iter().find(|h| h.kind == ControlKind::Pay) {
        return Err(format!(
            "`{}` is a pay action: this client never pays",
            pay.label
        ));
    }
    // Something of PDD's own drawn over the node the tap aims at would take it.
    if let Some(c) = covering(tree, at, label) {
        return Err(c.describe());
    }
    let submit_hit = hits.iter().find(|h| h.kind == ControlKind::Submit);
    match (submit_hit, kind) {
        (Some(_), TapKind::Submit) if submit == SubmitState::Armed => Ok(true),
        (Some(h), TapKind::Submit) => Err(format!(
            "`{}` may not be pressed: {}",
            h.label,
            match submit {
                SubmitState::NotAllowed => "no submit is allowed here (dry run, collect, recovery)",
                SubmitState::AwaitingMark => "the irreversible mark is not confirmed",
                SubmitState::Spent => "the one submit was already tapped",
                SubmitState::Armed => "unreachable",
            }
        )),
        (Some(h), _) => Err(format!(
            "`{}` is a submit control: only the flow's one submit after the irreversible mark may press it",
            h.label
        )),
        (None, TapKind::Submit) => {
            Err("the submit tap does not land on a 提交订单 / 确认下单 control".into())
        }
        (None, _) => Ok(false),
    }
}

/// What the guard remembers between calls.
struct GuardState {
    /// The freshest dump, every window, while nothing since can have changed the screen.
    fresh: Option<Tree>,
    submit: SubmitState,
    /// Taps refused so far.
    refused: u32,
    /// The window stack read for the fresh dump (`None`: not read yet).
    windows: Option<Vec<WindowInfo>>,
    /// `dumpsys window windows` reads so far (device round trips).
    window_reads: u32,
    /// Taps refused because a foreign window covered the point.
    covered: u32,
}

/// A [`Device`] that refuses pay actions, unwanted submits and blind taps.
pub struct GuardedDevice<D: Device> {
    inner: D,
    state: Mutex<GuardState>,
}

impl<D: Device> GuardedDevice<D> {
    /// `submit_allowed`: a live purchase may tap 提交订单 once, after the mark; everything
    /// else never.
    pub fn new(inner: D, submit_allowed: bool) -> Self {
        GuardedDevice {
            inner,
            state: Mutex::new(GuardState {
                fresh: None,
                submit: if submit_allowed {
                    SubmitState::AwaitingMark
                } else {
                    SubmitState::NotAllowed
                },
                refused: 0,
                windows: None,
                window_reads: 0,
                covered: 0,
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

    /// `dumpsys window windows` reads so far (one per fresh dump a tap was judged on).
    pub fn window_reads(&self) -> u32 {
        self.state().window_reads
    }

    /// Taps refused because another package's window covered the point.
    pub fn covered(&self) -> u32 {
        self.state().covered
    }

    /// The window stack for the fresh dump: read once per dump (outside the lock). An
    /// unreadable stack is empty: the dump's own checks still hold, coverage is unknown.
    fn windows_for_fresh_dump(&self) -> Vec<WindowInfo> {
        if let Some(w) = &self.state().windows {
            return w.clone();
        }
        let read = self.inner.shell(WINDOWS_ARGV);
        let wins = match &read {
            Ok(o) if o.success() => parse_windows(&o.stdout_text()),
            Ok(o) => {
                tracing::warn!(
                    exit_code = o.exit_code,
                    "dumpsys window windows failed: coverage unknown"
                );
                Vec::new()
            }
            Err(e) => {
                tracing::warn!(error = %e, "dumpsys window windows failed: coverage unknown");
                Vec::new()
            }
        };
        let mut st = self.state();
        st.window_reads += 1;
        if st.fresh.is_some() {
            st.windows = Some(wins.clone());
        }
        wins
    }

    /// The focused window when another package's (read with the fresh dump's window
    /// stack): asked when a dump shows no PDD window at all.
    pub fn foreign_focus(&self) -> Option<Cover> {
        let height = self
            .state()
            .fresh
            .as_ref()
            .and_then(|t| t.roots().map(|r| r.bounds().bottom).max());
        focused_cover(&self.windows_for_fresh_dump(), height)
    }

    /// Where the one submit stands.
    pub fn submit_state(&self) -> SubmitState {
        self.state().submit
    }

    /// The driver saw the store answer `Marked` to the irreversible mark: a live
    /// purchase's one submit is armed (a guard that allows no submit stays so).
    pub fn marked(&self) {
        let mut st = self.state();
        if st.submit == SubmitState::AwaitingMark {
            st.submit = SubmitState::Armed;
        }
    }

    /// A tap the flow declared as `kind`, without a label: [`GuardedDevice::tap_labelled`]
    /// with an empty one (the node aimed at is then found by the point alone).
    pub fn tap_as(&self, at: Point, kind: TapKind) -> Result<(), DeviceError> {
        self.tap_labelled(at, kind, "")
    }

    /// A tap the flow declared as `kind`, meant for the node labelled `label`, judged on
    /// the freshest dump ([`judge`]) and the window stack read for it.
    pub fn tap_labelled(&self, at: Point, kind: TapKind, label: &str) -> Result<(), DeviceError> {
        let height = {
            let mut st = self.state();
            if let Err(why) = judge(st.fresh.as_ref(), st.submit, at, kind, label) {
                return Err(refuse(&mut st, why));
            }
            st.fresh
                .as_ref()
                .and_then(|t| t.roots().map(|r| r.bounds().bottom).max())
        };
        let windows = self.windows_for_fresh_dump();
        {
            let mut st = self.state();
            if let Some(c) = cover_at(&windows, at, height) {
                st.covered += 1;
                tracing::warn!(cover = c.kind.as_str(), window = %c.window, package = %c.package, x = at.x, y = at.y, "tap refused: another package's window covers the point");
                return Err(DeviceError::TapCovered {
                    kind: c.kind,
                    window: c.window,
                });
            }
            // Judged again under the same lock that spends the submit: a refused tap (an
            // in-app cover included) never spends it.
            match judge(st.fresh.as_ref(), st.submit, at, kind, label) {
                Err(why) => return Err(refuse(&mut st, why)),
                Ok(true) => st.submit = SubmitState::Spent,
                Ok(false) => {}
            }
            // The tap may change the screen even if the call fails: the next tap needs a
            // fresh dump.
            if kind.changes_screen() {
                st.fresh = None;
                st.windows = None;
            }
        }
        self.inner.tap(at)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, GuardState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A gesture that may change the screen: the dump in hand is no longer fresh.
    fn screen_may_change(&self) {
        let mut st = self.state();
        st.fresh = None;
        st.windows = None;
    }
}

fn refuse(state: &mut GuardState, why: String) -> DeviceError {
    state.refused += 1;
    tracing::error!(reason = %why, "tap refused by the device guard");
    DeviceError::TapRefused(why)
}

impl<D: Device> Device for GuardedDevice<D> {
    fn dump_ui(&self) -> Result<UiDump, DeviceError> {
        let out = self.inner.dump_ui();
        // Every window counts (a cashier in another app); a failed dump leaves nothing to
        // judge on. The window stack belongs to the dump before: read again when needed.
        let mut st = self.state();
        st.windows = None;
        st.fresh = out.as_ref().ok().map(|d| {
            if d.tree.dropped_packages().next().is_none() {
                return d.tree.clone();
            }
            Tree::parse_with(&d.xml, WindowFilter::All).unwrap_or_else(|_| d.tree.clone())
        });
        drop(st);
        out
    }

    /// A tap with no declared kind and no label: judged as one that changes the screen,
    /// aimed by the point alone.
    fn tap(&self, at: Point) -> Result<(), DeviceError> {
        self.tap_labelled(at, TapKind::ChangesScreen, "")
    }

    fn swipe(&self, from: Point, to: Point, duration: Duration) -> Result<(), DeviceError> {
        self.screen_may_change();
        self.inner.swipe(from, to, duration)
    }

    fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
        if !SAFE_KEYS.contains(&code) {
            let mut st = self.state();
            return Err(refuse(
                &mut st,
                format!(
                    "key {} is not declared safe navigation (it could press a focused button)",
                    code.0
                ),
            ));
        }
        self.screen_may_change();
        self.inner.key(code)
    }

    fn open_url(&self, url: &str) -> Result<(), DeviceError> {
        self.screen_may_change();
        self.inner.open_url(url)
    }

    fn screenshot(&self) -> Result<Png, DeviceError> {
        self.inner.screenshot()
    }

    fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
        match argv.first().copied() {
            // Gestures go through tap / swipe / key, where they are judged.
            Some("input") => {
                let mut st = self.state();
                return Err(refuse(
                    &mut st,
                    "`input` through the shell bypasses the tap checks".into(),
                ));
            }
            Some("dumpsys" | "getprop" | "wm" | "pm") => {}
            _ => self.screen_may_change(),
        }
        self.inner.shell(argv)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::windows::CoverKind;

    fn tree(body: &str) -> Tree {
        Tree::parse(&format!(
            r#"<hierarchy rotation="0"><node index="0" package="com.xunmeng.pinduoduo" class="android.widget.FrameLayout" bounds="[0,0][1080,2400]">{body}</node></hierarchy>"#
        ))
        .expect("tree")
    }

    /// A sheet: an option chip, the stepper, the 提交订单 footer.
    fn sheet(submit: &str) -> Tree {
        tree(&format!(
            r#"<node text="黑色" clickable="true" bounds="[50,1500][250,1600]"/><node content-desc="增加数量" clickable="true" bounds="[950,1200][1030,1280]"/><node class="android.widget.FrameLayout" clickable="true" bounds="[334,2213][1080,2354]"><node text="{submit}" bounds="[548,2251][865,2316]"/></node>"#
        ))
    }

    const OPTION: Point = Point { x: 150, y: 1550 };
    const FOOTER: Point = Point { x: 700, y: 2280 };

    #[test]
    fn a_tap_on_submit_before_the_mark_is_refused() {
        let t = sheet("提交订单 ¥269");
        for state in [SubmitState::AwaitingMark, SubmitState::NotAllowed] {
            let e = judge(Some(&t), state, FOOTER, TapKind::Submit, "").unwrap_err();
            assert!(e.contains("提交订单"), "{e}");
        }
        // An ordinary tap on it, even after the mark.
        for state in [SubmitState::AwaitingMark, SubmitState::Armed] {
            assert!(judge(Some(&t), state, FOOTER, TapKind::ChangesScreen, "").is_err());
            assert!(judge(Some(&t), state, FOOTER, TapKind::InPage, "").is_err());
        }
    }

    #[test]
    fn the_single_allowed_submit_passes_once() {
        for label in ["提交订单 ¥269", "确认下单 ¥88"] {
            let t = sheet(label);
            assert_eq!(
                judge(Some(&t), SubmitState::Armed, FOOTER, TapKind::Submit, ""),
                Ok(true),
                "{label}"
            );
            assert!(judge(Some(&t), SubmitState::Spent, FOOTER, TapKind::Submit, "").is_err());
            // A submit aimed off the control.
            assert!(judge(Some(&t), SubmitState::Armed, OPTION, TapKind::Submit, "").is_err());
            // Options and steppers pass.
            assert_eq!(
                judge(Some(&t), SubmitState::Armed, OPTION, TapKind::InPage, ""),
                Ok(false)
            );
        }
    }

    #[test]
    fn confirm_order_is_treated_like_submit() {
        let t = sheet("确认下单");
        assert!(judge(
            Some(&t),
            SubmitState::AwaitingMark,
            FOOTER,
            TapKind::ChangesScreen,
            ""
        )
        .unwrap_err()
        .contains("确认下单"));
    }

    #[test]
    fn pay_actions_are_refused_and_a_pay_tab_is_not() {
        for label in [
            "去付款",
            "继续付款",
            "支付 ¥59",
            "去支付",
            "立即支付 ¥59.00",
        ] {
            let t = tree(&format!(
                r#"<node class="android.widget.FrameLayout" clickable="true" bounds="[700,800][1000,900]"><node text="{label}" bounds="[720,810][980,890]"/></node>"#
            ));
            let p = Point { x: 710, y: 850 };
            for state in [SubmitState::Armed, SubmitState::NotAllowed] {
                for kind in [TapKind::InPage, TapKind::ChangesScreen, TapKind::Submit] {
                    let e = judge(Some(&t), state, p, kind, "").unwrap_err();
                    assert!(e.contains("pay action"), "{label}: {e}");
                }
            }
        }
        let tabs = tree(
            r#"<node text="全部" clickable="true" bounds="[0,200][200,300]"/><node text="待付款" clickable="true" bounds="[200,200][400,300]"/><node text="支付方式" clickable="true" bounds="[0,400][1080,500]"/>"#,
        );
        for p in [Point { x: 300, y: 250 }, Point { x: 500, y: 450 }] {
            assert_eq!(
                judge(
                    Some(&tabs),
                    SubmitState::NotAllowed,
                    p,
                    TapKind::ChangesScreen,
                    ""
                ),
                Ok(false)
            );
        }
    }

    #[test]
    fn no_dump_yet_refuses_every_tap() {
        for kind in [TapKind::InPage, TapKind::ChangesScreen, TapKind::Submit] {
            assert!(judge(None, SubmitState::Armed, OPTION, kind, "")
                .unwrap_err()
                .contains("no fresh dump"));
        }
    }

    /// A phone that answers every dump with `xml` and logs what reached it.
    struct Fake {
        xml: Mutex<String>,
        log: Mutex<Vec<String>>,
        /// What `dumpsys window windows` prints.
        windows: Mutex<String>,
    }

    impl Fake {
        fn new(xml: &str) -> Fake {
            Fake {
                xml: Mutex::new(xml.into()),
                log: Mutex::new(Vec::new()),
                windows: Mutex::new(String::new()),
            }
        }
        fn log(&self) -> Vec<String> {
            self.log.lock().unwrap().clone()
        }
        fn push(&self, s: String) -> Result<(), DeviceError> {
            self.log.lock().unwrap().push(s);
            Ok(())
        }
    }

    impl Device for Fake {
        fn dump_ui(&self) -> Result<UiDump, DeviceError> {
            let xml = self.xml.lock().unwrap().clone();
            let tree = Tree::parse(&xml)?;
            Ok(UiDump { xml, tree })
        }
        fn tap(&self, at: Point) -> Result<(), DeviceError> {
            self.push(format!("tap {},{}", at.x, at.y))
        }
        fn swipe(&self, _: Point, _: Point, _: Duration) -> Result<(), DeviceError> {
            self.push("swipe".into())
        }
        fn key(&self, code: KeyCode) -> Result<(), DeviceError> {
            self.push(format!("key {}", code.0))
        }
        fn open_url(&self, url: &str) -> Result<(), DeviceError> {
            self.push(format!("open {url}"))
        }
        fn screenshot(&self) -> Result<Png, DeviceError> {
            Err(DeviceError::Io("no screenshots here".into()))
        }
        fn shell(&self, argv: &[&str]) -> Result<ShellOutput, DeviceError> {
            self.push(format!("shell {}", argv.join(" ")))?;
            if argv == WINDOWS_ARGV {
                return Ok(ShellOutput {
                    stdout: self.windows.lock().unwrap().clone().into_bytes(),
                    ..ShellOutput::default()
                });
            }
            Ok(ShellOutput::default())
        }
    }

    /// `dumpsys window windows` with the keyboard up (bottom 885 px) over PDD.
    fn keyboard_over_pdd(keyboard: bool) -> String {
        let win = |i: usize,
                   title: &str,
                   pkg: &str,
                   ty: &str,
                   fl: &str,
                   frame: &str,
                   visible: bool| {
            format!("  Window #{i} Window{{a1b2c3 u0 {title}}}:\n    mOwnerUid=10102 showForAllUsers=false package={pkg} appop=NONE\n    mAttrs={{(0,0)(fillxfill) ty={ty} fmt=TRANSLUCENT\n      fl={fl}\n      bhv=DEFAULT}}\n    mViewVisibility=0x0 mHaveFrame=true mObscured=false\n    Frames: parent=[0,0][1080,2400] display=[0,0][1080,2400] frame={frame} last={frame} insetsChanged=false\n    isOnScreen={visible}\n    isVisible={visible}\n")
        };
        format!(
            "WINDOW MANAGER WINDOWS (dumpsys window windows)\n{}{}  mGlobalConfiguration={{}}\n",
            win(
                0,
                "InputMethod",
                "com.sohu.inputmethod.sogou.xiaomi",
                "INPUT_METHOD",
                "NOT_FOCUSABLE LAYOUT_IN_SCREEN",
                "[0,1515][1080,2400]",
                keyboard
            ),
            win(
                1,
                "com.xunmeng.pinduoduo/.activity.NewPageActivity",
                "com.xunmeng.pinduoduo",
                "BASE_APPLICATION",
                "LAYOUT_IN_SCREEN",
                "[0,0][1080,2400]",
                true
            ),
        )
    }

    #[test]
    fn a_point_under_another_packages_window_is_refused_and_the_stack_is_read_once_per_dump() {
        let fake = Fake::new(&sheet_xml("提交订单 ¥59"));
        *fake.windows.lock().unwrap() = keyboard_over_pdd(true);
        let g = GuardedDevice::new(&fake, false);
        g.dump_ui().unwrap();
        // Above the keyboard: PDD gets it.
        g.tap_as(Point { x: 990, y: 1240 }, TapKind::InPage)
            .unwrap();
        // The option at y 1550 is under the keyboard: refused, not tapped.
        let e = g.tap_as(OPTION, TapKind::InPage).unwrap_err();
        assert!(
            matches!(&e, DeviceError::TapCovered { kind: CoverKind::Keyboard, window } if window == "InputMethod"),
            "{e:?}"
        );
        assert_eq!(e.failure_code(), "SCREEN_OBSTRUCTED");
        assert_eq!((g.window_reads(), g.covered()), (1, 1));
        // BACK (the flow's answer) hides it; the next dump is judged on a new read.
        g.back().unwrap();
        *fake.windows.lock().unwrap() = keyboard_over_pdd(false);
        g.dump_ui().unwrap();
        g.tap_as(OPTION, TapKind::InPage).unwrap();
        assert_eq!(g.window_reads(), 2);
        let taps: Vec<_> = fake
            .log()
            .into_iter()
            .filter(|l| l.starts_with("tap"))
            .collect();
        assert_eq!(taps, ["tap 990,1240", "tap 150,1550"]);
    }

    fn sheet_xml(submit: &str) -> String {
        format!(
            r#"<hierarchy rotation="0"><node index="0" package="com.xunmeng.pinduoduo" class="android.widget.FrameLayout" bounds="[0,0][1080,2400]"><node text="黑色" clickable="true" bounds="[50,1500][250,1600]"/><node content-desc="增加数量" clickable="true" bounds="[950,1200][1030,1280]"/><node class="android.widget.FrameLayout" clickable="true" bounds="[334,2213][1080,2354]"><node text="{submit}" bounds="[548,2251][865,2316]"/></node></node></hierarchy>"#
        )
    }

    #[test]
    fn with_no_dump_yet_a_tap_is_refused_and_a_deep_link_or_back_is_not() {
        let fake = Fake::new(&sheet_xml("提交订单 ¥59"));
        let g = GuardedDevice::new(&fake, true);
        let e = g.tap_as(OPTION, TapKind::InPage).unwrap_err();
        assert_eq!(e.code(), "TAP_REFUSED");
        g.open_url("pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=1")
            .unwrap();
        g.back().unwrap();
        g.key(KeyCode::HOME).unwrap();
        assert_eq!(g.key(KeyCode::ENTER).unwrap_err().code(), "TAP_REFUSED");
        assert_eq!(
            g.shell(&["input", "tap", "700", "2280"])
                .unwrap_err()
                .code(),
            "TAP_REFUSED"
        );
        assert_eq!(g.refused(), 3);
        assert_eq!(
            fake.log(),
            [
                "open pinduoduo://com.xunmeng.pinduoduo/goods.html?goods_id=1",
                "key 4",
                "key 3"
            ]
        );
    }

    #[test]
    fn queued_taps_are_rechecked_and_a_screen_change_needs_a_fresh_dump() {
        let fake = Fake::new(&sheet_xml("提交订单 ¥59"));
        let g = GuardedDevice::new(&fake, false);
        g.dump_ui().unwrap();
        // In-page taps planned on one dump: each judged on it.
        g.tap_as(OPTION, TapKind::InPage).unwrap();
        g.tap_as(Point { x: 990, y: 1240 }, TapKind::InPage)
            .unwrap();
        // A queued tap that would land on the footer is refused even mid-queue.
        assert!(g.tap_as(FOOTER, TapKind::InPage).is_err());
        // A tap that changes the screen (a popup's close) ends what the dump vouches for.
        g.tap_as(Point { x: 10, y: 10 }, TapKind::ChangesScreen)
            .unwrap();
        assert!(g
            .tap_as(OPTION, TapKind::InPage)
            .unwrap_err()
            .to_string()
            .contains("no fresh dump"));
        g.dump_ui().unwrap();
        g.tap_as(OPTION, TapKind::InPage).unwrap();
        // A swipe too.
        g.swipe(OPTION, FOOTER, Duration::from_millis(300)).unwrap();
        assert!(g.tap_as(OPTION, TapKind::InPage).is_err());
        assert_eq!(g.refused(), 3);
        assert_eq!(
            fake.log().iter().filter(|l| l.starts_with("tap")).count(),
            4
        );
    }

    #[test]
    fn the_one_submit_needs_a_live_guard_the_mark_and_a_submit_control() {
        let fake = Fake::new(&sheet_xml("确认下单 ¥59"));
        // Live, before the mark: refused.
        let g = GuardedDevice::new(&fake, true);
        g.dump_ui().unwrap();
        assert!(g.tap_as(FOOTER, TapKind::Submit).is_err());
        g.marked();
        assert_eq!(g.submit_state(), SubmitState::Armed);
        g.tap_as(FOOTER, TapKind::Submit).unwrap();
        assert_eq!(g.submit_state(), SubmitState::Spent);
        // Never a second one, even on a fresh dump.
        g.dump_ui().unwrap();
        assert!(g.tap_as(FOOTER, TapKind::Submit).is_err());
        // A guard built for a dry run or recovery never arms.
        let dry = GuardedDevice::new(&fake, false);
        dry.marked();
        dry.dump_ui().unwrap();
        assert!(dry.tap_as(FOOTER, TapKind::Submit).is_err());
        assert_eq!(
            fake.log().iter().filter(|l| l.starts_with("tap")).count(),
            1
        );
    }

    /// The sheet of [`sheet_xml`] with a clickable 多多支付 bubble over the footer's centre,
    /// a later sibling with drawing order `bubble` (the footer's is 3), in the pretty shape.
    fn sheet_with_bubble(bubble: u32) -> String {
        format!(
            r#"<hierarchy rotation="0"><node index="0" package="com.xunmeng.pinduoduo" class="android.widget.FrameLayout" visible-to-user="true" drawing-order="0" bounds="[0,0][1080,2400]"><node index="0" text="黑色" clickable="true" drawing-order="1" bounds="[50,1500][250,1600]"/><node index="1" content-desc="增加数量" clickable="true" drawing-order="2" bounds="[950,1200][1030,1280]"/><node index="2" class="android.widget.FrameLayout" clickable="true" drawing-order="3" bounds="[334,2213][1080,2354]"><node index="0" text="提交订单 ¥47.2" drawing-order="1" bounds="[548,2251][865,2316]"/></node><node index="3" class="android.widget.LinearLayout" clickable="true" drawing-order="{bubble}" bounds="[500,2180][1000,2300]"><node index="0" text="开通多多支付，立减3元" drawing-order="1" bounds="[520,2200][980,2280]"/></node><node index="4" class="android.view.View" drawing-order="9" bounds="[0,1450][1080,1650]"/></node></hierarchy>"#
        )
    }

    #[test]
    fn a_clickable_drawn_over_the_target_refuses_the_tap_and_leaves_the_submit_armed() {
        let t = Tree::parse(&sheet_with_bubble(4)).unwrap();
        for kind in [TapKind::Submit, TapKind::ChangesScreen, TapKind::InPage] {
            let e =
                judge(Some(&t), SubmitState::Armed, FOOTER, kind, "提交订单 ¥47.2").unwrap_err();
            assert_eq!(
                e,
                "`开通多多支付，立减3元` is drawn over `提交订单 ¥47.2` (a tap there would press it)",
                "{kind:?}"
            );
        }
        // The non-clickable band drawn over the option lets its taps through.
        assert_eq!(
            judge(
                Some(&t),
                SubmitState::Armed,
                OPTION,
                TapKind::InPage,
                "黑色"
            ),
            Ok(false)
        );
        // Drawn below the footer, the bubble takes nothing: the one submit goes.
        let below = Tree::parse(&sheet_with_bubble(2)).unwrap();
        assert_eq!(
            judge(
                Some(&below),
                SubmitState::Armed,
                FOOTER,
                TapKind::Submit,
                "提交订单 ¥47.2"
            ),
            Ok(true)
        );

        // Through the guard: refused before the phone, counted, the submit not spent.
        let fake = Fake::new(&sheet_with_bubble(4));
        let g = GuardedDevice::new(&fake, true);
        g.marked();
        g.dump_ui().unwrap();
        let e = g
            .tap_labelled(FOOTER, TapKind::Submit, "提交订单 ¥47.2")
            .unwrap_err();
        assert_eq!(e.code(), "TAP_REFUSED");
        assert!(
            e.to_string().contains("is drawn over `提交订单 ¥47.2`"),
            "{e}"
        );
        assert_eq!((g.refused(), g.covered()), (1, 0));
        assert_eq!(g.submit_state(), SubmitState::Armed);
        // A tap without a label is aimed by the point alone and refused alike.
        assert_eq!(g.tap(FOOTER).unwrap_err().code(), "TAP_REFUSED");
        // The option beside it still goes through.
        g.tap_labelled(OPTION, TapKind::InPage, "黑色").unwrap();
        // The bubble gone (the same dump without it drawn above), the one submit goes out.
        *fake.xml.lock().unwrap() = sheet_with_bubble(2);
        g.dump_ui().unwrap();
        g.tap_labelled(FOOTER, TapKind::Submit, "提交订单 ¥47.2")
            .unwrap();
        assert_eq!(g.submit_state(), SubmitState::Spent);
        let taps: Vec<_> = fake
            .log()
            .into_iter()
            .filter(|l| l.starts_with("tap"))
            .collect();
        assert_eq!(taps, ["tap 150,1550", "tap 700,2280"]);
        assert_eq!(g.refused(), 2);
    }

    #[test]
    fn a_proceed_quoting_an_amount_is_a_submit_control_without_checkout_rows() {
        // A sheet with no address, payment row or total line: a plain 确定 opens 确认订单
        // and passes; the same 确定 quoting an amount places the order.
        let plain = sheet("确定");
        assert!(!is_checkout(&plain));
        assert_eq!(
            judge(
                Some(&plain),
                SubmitState::AwaitingMark,
                FOOTER,
                TapKind::ChangesScreen,
                "确定"
            ),
            Ok(false)
        );
        for label in ["确定 ¥59", "立即购买 ¥47.2"] {
            let t = sheet(label);
            assert!(!is_checkout(&t), "{label}");
            for state in [SubmitState::AwaitingMark, SubmitState::NotAllowed] {
                let e = judge(Some(&t), state, FOOTER, TapKind::ChangesScreen, label).unwrap_err();
                assert!(e.contains("submit control"), "{label}: {e}");
            }
            // Only as the one submit after the mark.
            assert_eq!(
                judge(Some(&t), SubmitState::Armed, FOOTER, TapKind::Submit, label),
                Ok(true),
                "{label}"
            );
        }
        // The amount in a sibling text of the same button counts too.
        let split = tree(
            r#"<node class="android.widget.FrameLayout" clickable="true" bounds="[334,2213][1080,2354]"><node text="确定" bounds="[548,2251][700,2316]"/><node text="¥59" bounds="[710,2251][865,2316]"/></node>"#,
        );
        assert!(judge(
            Some(&split),
            SubmitState::AwaitingMark,
            FOOTER,
            TapKind::ChangesScreen,
            "确定"
        )
        .is_err());
    }

    #[test]
    fn a_pdd_window_over_the_target_refuses_the_tap() {
        // The sheet, then a 多多支付 bubble drawn as its own PDD window over the footer.
        let xml = format!(
            r#"<hierarchy rotation="0">{}<node index="0" package="com.xunmeng.pinduoduo" class="android.widget.FrameLayout" bounds="[480,2160][1020,2320]"><node text="用多多支付减7.53元" clickable="true" bounds="[500,2180][1000,2300]"/></node></hierarchy>"#,
            sheet_xml("提交订单 ¥47.2")
                .trim_start_matches(r#"<hierarchy rotation="0">"#)
                .trim_end_matches("</hierarchy>")
        );
        let t = Tree::parse(&xml).unwrap();
        let e = judge(
            Some(&t),
            SubmitState::Armed,
            FOOTER,
            TapKind::Submit,
            "提交订单 ¥47.2",
        )
        .unwrap_err();
        assert_eq!(
            e,
            "`用多多支付减7.53元` is drawn over `提交订单 ¥47.2` (a tap there would press it)"
        );
        // The option above it is not under that window.
        assert_eq!(
            judge(
                Some(&t),
                SubmitState::Armed,
                OPTION,
                TapKind::InPage,
                "黑色"
            ),
            Ok(false)
        );
        // Through the guard: refused before the phone, the one submit not spent.
        let fake = Fake::new(&xml);
        let g = GuardedDevice::new(&fake, true);
        g.marked();
        g.dump_ui().unwrap();
        assert_eq!(
            g.tap_labelled(FOOTER, TapKind::Submit, "提交订单 ¥47.2")
                .unwrap_err()
                .code(),
            "TAP_REFUSED"
        );
        assert_eq!(g.submit_state(), SubmitState::Armed);
        assert!(fake.log().iter().all(|l| !l.starts_with("tap")));
    }

    #[test]
    fn another_apps_cashier_counts() {
        // PDD handed WeChat Pay to com.tencent.mm: the tree the flows see has no PDD
        // window, the guard still sees the pay button.
        let xml = r#"<hierarchy rotation="0"><node index="0" package="com.tencent.mm" class="android.widget.FrameLayout" bounds="[0,0][1080,2400]"><node text="立即支付" clickable="true" bounds="[100,2000][980,2150]"/></node></hierarchy>"#;
        let fake = Fake::new(xml);
        let g = GuardedDevice::new(&fake, true);
        g.dump_ui().unwrap();
        assert!(g
            .tap_as(Point { x: 500, y: 2050 }, TapKind::ChangesScreen)
            .unwrap_err()
            .to_string()
            .contains("pay action"));
    }
}
