//! The phone's own state tied to the app: which window each tap, swipe and key reaches
//! (and what it does there), what `uiautomator dump` and `screencap` show, the deep link
//! that raises the chooser, the screen-off timeout and a heads-up's decay on the device's
//! simulated clock. Data, windows and formats live in [`crate::system`].

use chrono::{DateTime, FixedOffset};

use crate::app::Outcome;
use crate::page::Page;
use crate::system::screens;
use crate::system::state::{Chooser, ChooserTarget, ForeignApp, LockKind, WechatPay};
use crate::system::windows::{self, Scene, Win, WinKind};
use crate::system::{KeyRecord, SwipeRecord, TapRecord};
use crate::ui::{Action, Screen, PDD};

use super::state::Device;

/// Keys that wake a sleeping phone (KeyEvent.isWakeKey): POWER, WAKEUP; others are
/// dropped while the screen is off.
const KEY_POWER: i32 = 26;
const KEY_WAKEUP: i32 = 224;
const KEY_SLEEP: i32 = 223;
const KEY_BACK: i32 = 4;
const KEY_HOME: i32 = 3;

/// An upward swipe at least this long unlocks (or raises the bouncer).
const UNLOCK_SWIPE_PX: i32 = 300;

impl Device {
    fn scene(&self) -> Scene<'_> {
        let page = self.app.page().filter(|_| self.replay.is_none());
        Scene {
            width: self.cfg.width,
            height: self.cfg.height,
            pdd_activity: self.pdd_activity(),
            pdd_popup: page.is_some() && self.app.popup().is_some(),
            text_focus: matches!(page, Some(Page::Sheet(s) | Page::Confirm(s)) if s.qty_focused),
        }
    }

    /// The window stack, top first (what `dumpsys window windows` lists).
    pub fn system_windows(&self) -> Vec<Win> {
        windows::windows(&self.sys, &self.scene())
    }

    /// Simulated time has passed (after every command line).
    pub(crate) fn tick_system(&mut self) {
        let now = self.counters.device_time_ms;
        self.sys.tick(now);
    }

    /// `input` is user activity: it restarts the screen-off countdown.
    pub(crate) fn user_activity(&mut self) {
        if self.sys.screen_on {
            self.sys.last_activity_ms = self.counters.device_time_ms;
        }
    }

    /// A tap at (x, y), routed to the window on top there.
    pub(crate) fn deliver_tap(&mut self, x: i32, y: i32, now: DateTime<FixedOffset>) -> Outcome {
        if !self.sys.screen_on {
            // A non-interactive phone drops touches (interceptMotionBeforeQueueing).
            self.sys.taps.push(TapRecord {
                x,
                y,
                window: None,
                package: None,
            });
            return Outcome::default();
        }
        let wins = self.system_windows();
        let hit = windows::route(&wins, x, y).cloned();
        self.sys.taps.push(TapRecord {
            x,
            y,
            window: hit.as_ref().map(|w| w.title.clone()),
            package: hit.as_ref().map(|w| w.package.to_string()),
        });
        let Some(win) = hit else {
            return Outcome::default();
        };
        let t = Outcome { transition: true };
        match win.kind {
            WinKind::Pdd | WinKind::PddPopup | WinKind::Launcher if self.replay.is_some() => {
                self.app_tap(x, y, now)
            }
            WinKind::Pdd | WinKind::PddPopup | WinKind::Launcher => {
                let refocus = self
                    .app
                    .screen(now)
                    .hit(x, y)
                    .is_some_and(|n| n.action == Action::Do("qty_edit".into()));
                if refocus {
                    self.sys.ime_hidden = false;
                }
                let o = self.app.tap(x, y, now);
                self.take_payment_handoff();
                o
            }
            WinKind::Foreign(ForeignApp::WeChatPay) => self.wechat_pay_tap(x, y),
            WinKind::LowBattery => {
                // 关闭, 省电模式, or a touch outside the dialog: it goes away either way.
                self.sys.low_battery_dialog = false;
                t
            }
            WinKind::Shade if !self.sys.locked && !self.sys.shade => {
                // The heads-up card: opens the notification's app.
                if let Some(n) = self.sys.heads_up.take() {
                    if n.package == ForeignApp::WeChat.package() {
                        self.sys.foreign = Some(ForeignApp::WeChat);
                    }
                }
                t
            }
            WinKind::Chooser => self.chooser_tap(x, y),
            _ => Outcome::default(),
        }
    }

    /// An order of `payment_handoff: "wechat"` goods was just placed: WeChat comes to the
    /// front with its pay sheet (PDD's cashier for the order waits behind it).
    fn take_payment_handoff(&mut self) {
        if let Some((order_sn, total_cent)) = self.app.take_handoff() {
            self.sys.close_foreign();
            self.sys.foreign = Some(ForeignApp::WeChatPay);
            self.sys.wechat_pay = Some(WechatPay {
                order_sn,
                total_cent,
            });
        }
    }

    /// A tap in WeChat's pay sheet: 立即支付 is a payment attempt on the PDD order; the
    /// close icon cancels back to PDD (as BACK does).
    fn wechat_pay_tap(&mut self, x: i32, y: i32) -> Outcome {
        let Some(pay) = self.sys.wechat_pay.clone() else {
            return Outcome::default();
        };
        let sheet = screens::wechat_pay_sheet(&pay, self.cfg.width, self.cfg.height);
        let action = sheet.hit(x, y).map(|n| n.action.clone());
        match action {
            Some(Action::Do(a)) if a == screens::WECHAT_PAY_ACTION => {
                if let Err(e) = self.app.ledger_mut().record_payment_attempt(&pay.order_sn) {
                    tracing::warn!(error = %e, "the ledger refused a payment attempt");
                }
                Outcome::default()
            }
            Some(Action::Do(a)) if a == screens::WECHAT_CLOSE_ACTION => {
                self.sys.close_foreign();
                Outcome { transition: true }
            }
            _ => Outcome::default(),
        }
    }

    fn chooser_tap(&mut self, x: i32, y: i32) -> Outcome {
        let (w, h) = (self.cfg.width, self.cfg.height);
        let (pdd, browser, once, always) = screens::chooser_rects(w, h);
        let Some(c) = self.sys.chooser.as_mut() else {
            return Outcome::default();
        };
        if !screens::chooser_sheet(w, h).contains(x, y) {
            // A touch above the sheet dismisses the chooser; nothing opens.
            self.sys.chooser = None;
            return Outcome { transition: true };
        }
        if pdd.contains(x, y) {
            c.selected = Some(ChooserTarget::Pdd);
            return Outcome::default();
        }
        if browser.contains(x, y) {
            c.selected = Some(ChooserTarget::Browser);
            return Outcome::default();
        }
        let always_hit = always.contains(x, y);
        if !(once.contains(x, y) || always_hit) {
            return Outcome::default();
        }
        let (Some(target), url) = (c.selected, c.url.clone()) else {
            return Outcome::default();
        };
        self.sys.chooser = None;
        match target {
            ChooserTarget::Pdd => {
                if always_hit {
                    self.sys.chooser_default_pdd = true;
                }
                self.app_open_url(&url).unwrap_or_default()
            }
            ChooserTarget::Browser => {
                self.sys.foreign = Some(ForeignApp::Browser);
                self.sys.browser_url = Some(url);
                Outcome { transition: true }
            }
        }
    }

    /// A swipe, routed by where it starts.
    pub(crate) fn deliver_swipe(&mut self, x1: i32, y1: i32, x2: i32, y2: i32) -> Outcome {
        if !self.sys.screen_on {
            self.sys.swipes.push(SwipeRecord {
                from: (x1, y1),
                to: (x2, y2),
                window: None,
                package: None,
            });
            return Outcome::default();
        }
        let wins = self.system_windows();
        let hit = windows::route(&wins, x1, y1).cloned();
        self.sys.swipes.push(SwipeRecord {
            from: (x1, y1),
            to: (x2, y2),
            window: hit.as_ref().map(|w| w.title.clone()),
            package: hit.as_ref().map(|w| w.package.to_string()),
        });
        let Some(win) = hit else {
            return Outcome::default();
        };
        let up = y1.saturating_sub(y2);
        let t = Outcome { transition: true };
        match win.kind {
            WinKind::Shade if self.sys.locked => {
                if up >= UNLOCK_SWIPE_PX && !self.sys.bouncer {
                    match self.sys.cfg.lock {
                        LockKind::Pin => self.sys.bouncer = true,
                        _ => self.sys.locked = false,
                    }
                    return t;
                }
                if up <= -UNLOCK_SWIPE_PX && self.sys.bouncer {
                    self.sys.bouncer = false;
                    return t;
                }
                Outcome::default()
            }
            WinKind::Shade if self.sys.shade => {
                if up >= UNLOCK_SWIPE_PX / 2 {
                    self.sys.shade = false;
                    return t;
                }
                Outcome::default()
            }
            WinKind::Shade => {
                // The heads-up card: an upward flick puts it away.
                if up > 0 {
                    self.sys.heads_up = None;
                    return t;
                }
                Outcome::default()
            }
            WinKind::StatusBar => {
                if -up >= UNLOCK_SWIPE_PX / 2 {
                    self.sys.shade = true;
                    return t;
                }
                Outcome::default()
            }
            WinKind::Pdd | WinKind::PddPopup | WinKind::Launcher => self.app_swipe(x1, y1, x2, y2),
            _ => Outcome::default(),
        }
    }

    /// One key event, to the focused window (or the power policy).
    pub(crate) fn deliver_key(&mut self, code: i32) -> Outcome {
        let now_ms = self.counters.device_time_ms;
        let t = Outcome { transition: true };
        if !self.sys.screen_on {
            let record = KeyRecord {
                code,
                window: None,
                package: None,
            };
            self.sys.keys.push(record);
            return match code {
                KEY_POWER | KEY_WAKEUP => {
                    self.sys.screen_on(now_ms);
                    t
                }
                _ => Outcome::default(),
            };
        }
        let wins = self.system_windows();
        let focus = windows::focused(&wins).cloned();
        self.sys.keys.push(KeyRecord {
            code,
            window: focus.as_ref().map(|w| w.title.clone()),
            package: focus.as_ref().map(|w| w.package.to_string()),
        });
        match code {
            KEY_POWER | KEY_SLEEP => {
                self.sys.screen_off();
                return t;
            }
            KEY_WAKEUP => return Outcome::default(),
            KEY_HOME => {
                if self.sys.locked {
                    return Outcome::default();
                }
                self.sys.shade = false;
                self.sys.chooser = None;
                self.sys.close_foreign();
                self.sys.low_battery_dialog = false;
                return self.app_key(KEY_HOME);
            }
            KEY_BACK => {}
            // Other keys reach the app's window when it has the focus (replay hands them
            // to the player; the simulated app ignores them).
            _ if self.replay.is_some() && self.app_window_focused() => return self.app_key(code),
            _ => return Outcome::default(),
        }
        // BACK: to the focused window; the keyboard takes it first when it is up.
        let ime_up = wins.iter().any(|w| w.kind == WinKind::Ime && w.visible);
        match focus.map(|w| w.kind) {
            Some(WinKind::LowBattery) => {
                self.sys.low_battery_dialog = false;
                t
            }
            Some(WinKind::Shade) if self.sys.locked => {
                if self.sys.bouncer {
                    self.sys.bouncer = false;
                    return t;
                }
                Outcome::default()
            }
            Some(WinKind::Shade) => {
                self.sys.shade = false;
                t
            }
            Some(WinKind::Chooser) => {
                self.sys.chooser = None;
                t
            }
            Some(WinKind::Foreign(_)) => {
                // WeChat's pay sheet: the user cancels, PDD's cashier shows again.
                self.sys.close_foreign();
                t
            }
            _ if ime_up => {
                self.sys.ime_hidden = true;
                t
            }
            _ => self.app_key(KEY_BACK),
        }
    }

    /// `input text`: to the focused window (PDD's focused field, or a PIN pad that
    /// rejects every guess: the client never knows the PIN).
    pub(crate) fn deliver_text(&mut self, text: &str) {
        if !self.sys.screen_on {
            return;
        }
        let wins = self.system_windows();
        match windows::focused(&wins).map(|w| w.kind) {
            Some(WinKind::Pdd) => self.app_text(text),
            Some(WinKind::Launcher) if self.replay.is_some() => self.app_text(text),
            Some(WinKind::Shade) if self.sys.bouncer => self.sys.failed_unlocks += 1,
            _ => {}
        }
    }

    /// `wm dismiss-keyguard`: an insecure keyguard goes away; a secure one shows its PIN
    /// pad (the screen must be on).
    pub(crate) fn dismiss_keyguard(&mut self) {
        if !self.sys.screen_on || !self.sys.locked {
            return;
        }
        match self.sys.cfg.lock {
            LockKind::Pin => self.sys.bouncer = true,
            _ => self.sys.locked = false,
        }
    }

    /// `am start -a VIEW -d URL [-p PKG | -n COMPONENT]`: PDD, or the chooser when a second
    /// app handles the link and the intent names no package.
    pub(crate) fn start_view(
        &mut self,
        url: &str,
        package: Option<&str>,
        component: Option<&str>,
    ) -> Result<(Outcome, bool), String> {
        let explicit = package.is_some() || component.is_some();
        if let Some(p) = package.or(component.and_then(|c| c.split('/').next())) {
            if p != PDD {
                return Err(format!("unable to resolve Intent for {url:?}"));
            }
        }
        let web = url.starts_with("https://") || url.starts_with("http://");
        if web && !explicit && self.sys.cfg.second_browser && !self.sys.chooser_default_pdd {
            // Only a URL PDD itself handles reaches the chooser; anything else is refused
            // exactly as before (the browser takes it alone on a real phone; not modelled).
            let host_ok = url.contains("://mobile.yangkeduo.com/");
            if host_ok {
                self.sys.chooser = Some(Chooser {
                    url: url.to_string(),
                    selected: None,
                });
                self.sys.close_foreign();
                return Ok((Outcome { transition: true }, true));
            }
        }
        self.sys.chooser = None;
        self.sys.close_foreign();
        self.app_open_url(url).map(|o| (o, false))
    }

    /// Split the app's screen into its own windows and the chrome (gesture bar, status
    /// bar: the last two).
    fn app_and_chrome(
        &self,
        now: DateTime<FixedOffset>,
    ) -> (Vec<crate::ui::Node>, Vec<crate::ui::Node>) {
        if let Some(split) = self.replay_app_windows() {
            return split;
        }
        let mut app = self.app.screen(now).windows;
        let chrome = app.split_off(app.len().saturating_sub(2));
        (app, chrome)
    }

    /// What `uiautomator dump` shows: the active window (AOSP DumpCommand dumps the active
    /// window's root) with the status and gesture bars as the phone's dumps list them.
    /// A heads-up and the keyboard are never the active window: they are not in it.
    pub fn dump_screen(&self, now: DateTime<FixedOffset>) -> Screen {
        let (app, chrome) = self.app_and_chrome(now);
        let mut windows = self.active_windows(app, now);
        windows.extend(chrome);
        Screen { windows }
    }

    fn active_windows(
        &self,
        app: Vec<crate::ui::Node>,
        now: DateTime<FixedOffset>,
    ) -> Vec<crate::ui::Node> {
        let (w, h) = (self.cfg.width, self.cfg.height);
        let wins = self.system_windows();
        match windows::focused(&wins).map(|x| (x.kind, x.frame)) {
            Some((WinKind::LowBattery, frame)) => {
                vec![screens::low_battery(self.sys.battery.level, frame)]
            }
            Some((WinKind::Shade, _)) if self.sys.locked => {
                if self.sys.bouncer {
                    vec![screens::bouncer(w, h)]
                } else {
                    vec![screens::keyguard(&now, w, h)]
                }
            }
            Some((WinKind::Shade, _)) => {
                vec![screens::shade(&now, w, h, self.sys.heads_up.as_ref())]
            }
            Some((WinKind::Chooser, _)) => match &self.sys.chooser {
                Some(c) => vec![screens::chooser(c, w, h)],
                None => app,
            },
            Some((WinKind::Foreign(f), _)) => {
                vec![screens::foreign(
                    f,
                    self.sys.browser_url.as_deref(),
                    self.sys.wechat_pay.as_ref(),
                    w,
                    h,
                )]
            }
            _ => app,
        }
    }

    /// What the display shows (for `screencap`): the active window plus the keyboard and a
    /// heads-up drawn over it, the dialog over the app.
    pub fn display_screen(&self, now: DateTime<FixedOffset>) -> Screen {
        let (w, h) = (self.cfg.width, self.cfg.height);
        let (app, chrome) = self.app_and_chrome(now);
        let wins = self.system_windows();
        let mut windows = if self.sys.low_battery_dialog {
            // The dialog over whatever was on screen.
            let mut under = self.sys.clone();
            under.low_battery_dialog = false;
            let mut v = Device::active_windows_of(self, &under, app, now);
            v.push(screens::low_battery(
                self.sys.battery.level,
                wins.iter()
                    .find(|x| x.kind == WinKind::LowBattery)
                    .map(|x| x.frame)
                    .unwrap_or_default(),
            ));
            v
        } else {
            self.active_windows(app, now)
        };
        if wins.iter().any(|x| x.kind == WinKind::Ime && x.visible) {
            windows.push(screens::keyboard(w, h));
        }
        if let (Some(n), false) = (&self.sys.heads_up, self.sys.shade || self.sys.locked) {
            windows.push(screens::heads_up(n));
        }
        windows.extend(chrome);
        Screen { windows }
    }

    fn active_windows_of(
        d: &Device,
        sys: &crate::system::SystemState,
        app: Vec<crate::ui::Node>,
        now: DateTime<FixedOffset>,
    ) -> Vec<crate::ui::Node> {
        let (w, h) = (d.cfg.width, d.cfg.height);
        if sys.locked {
            return vec![if sys.bouncer {
                screens::bouncer(w, h)
            } else {
                screens::keyguard(&now, w, h)
            }];
        }
        if sys.shade {
            return vec![screens::shade(&now, w, h, sys.heads_up.as_ref())];
        }
        if let Some(c) = &sys.chooser {
            return vec![screens::chooser(c, w, h)];
        }
        if let Some(f) = sys.foreign {
            return vec![screens::foreign(
                f,
                sys.browser_url.as_deref(),
                sys.wechat_pay.as_ref(),
                w,
                h,
            )];
        }
        app
    }
}
