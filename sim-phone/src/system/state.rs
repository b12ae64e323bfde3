//! The phone's own state, apart from the PDD app: the screen (on/off, the screen-off
//! timeout), the keyguard (none, swipe, PIN), what systemui lays over the app (heads-up
//! notification, notification shade, the low-battery dialog), the input method, the app
//! chooser after a deep link, a foreign app brought to the front, the battery — and every
//! tap, swipe and key as it was delivered (which window, which package).
//!
//! Plain data with small transitions; no clock of its own: the device hands in its
//! simulated time (`counters.device_time_ms`), so every state change is deterministic.

use serde::{Deserialize, Serialize};

use crate::ui::Rect;

/// The screen lock the phone is set up with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LockKind {
    /// No keyguard at all (设置 › 锁屏 › 无): the screen turns off and on over the app.
    #[default]
    None,
    /// A swipe-to-unlock keyguard (滑动解锁): an upward swipe unlocks.
    Swipe,
    /// A PIN (or pattern/password) keyguard: a swipe shows the PIN pad; nothing the
    /// client can do unlocks it.
    Pin,
}

/// Where the phone draws its power from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Plug {
    #[default]
    None,
    Ac,
    Usb,
}

/// What `dumpsys battery` reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Battery {
    /// Percent, 0–100.
    pub level: u8,
    /// Tenths of a degree Celsius (`temperature: 285` = 28.5 °C), as BatteryService prints.
    pub temperature_tenths: i32,
    pub plug: Plug,
}

impl Default for Battery {
    fn default() -> Battery {
        Battery {
            level: 80,
            temperature_tenths: 285,
            plug: Plug::None,
        }
    }
}

impl Battery {
    /// `status:` (BatteryManager.BATTERY_STATUS_*): 2 charging, 3 discharging, 5 full.
    pub fn status(&self) -> u8 {
        match (self.plug, self.level) {
            (Plug::None, _) => 3,
            (_, 100) => 5,
            _ => 2,
        }
    }
    /// `health:` 2 good, 3 overheat (BatteryManager.BATTERY_HEALTH_*), from 50 °C.
    pub fn health(&self) -> u8 {
        if self.temperature_tenths >= 500 {
            3
        } else {
            2
        }
    }
}

/// MIUI raises its 电量不足 dialog when the level falls below this (unplugged).
pub const LOW_BATTERY_WARN_PERCENT: u8 = 20;

/// A heads-up notification pinned over the top of the screen.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeadsUp {
    /// The app that posted it (a tap opens it).
    pub package: String,
    pub app_label: String,
    pub title: String,
    pub text: String,
    /// Simulated device time (ms) at which it collapses by itself; `None` = it stays
    /// (a sticky one, e.g. an incoming call) until swiped away.
    pub expires_at_ms: Option<u64>,
}

/// How long a heads-up stays pinned, ms (AOSP `heads_up_notification_decay` = 5000).
pub const HEADS_UP_DECAY_MS: u64 = 5_000;

impl HeadsUp {
    /// A WeChat message, as the usual one arrives.
    pub fn wechat(title: &str, text: &str) -> HeadsUp {
        HeadsUp {
            package: "com.tencent.mm".into(),
            app_label: "微信".into(),
            title: title.into(),
            text: text.into(),
            expires_at_ms: None,
        }
    }
}

/// The phone-state knobs a phone starts with (all off by default: a phone that is awake,
/// unlocked, uncovered, 80 % charged at 28.5 °C, as every earlier test assumed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SystemConfig {
    /// The screen turns off after this much simulated device time (ms) without user
    /// activity (any `input` command); `None` = never (开发者选项 › 不锁定屏幕).
    pub screen_off_timeout_ms: Option<u64>,
    pub lock: LockKind,
    /// Start with the screen off (and, with a lock, the keyguard showing).
    pub start_screen_off: bool,
    pub battery: Battery,
    /// A second app (the MIUI browser, `com.android.browser`) also handles
    /// `http(s)://mobile.yangkeduo.com/…` links: an `am start -a VIEW -d URL` that names no
    /// package or component opens the app chooser instead of PDD.
    pub second_browser: bool,
    /// Focusing a text field (the sheet's quantity) raises the input method window (the
    /// MIUI 搜狗输入法小米版 keyboard) over the bottom of the screen.
    pub keyboard: bool,
    /// The phone refuses injected input, as MIUI / HyperOS do until 开发者选项 › "USB调试
    /// （安全设置）" is turned on: every `input tap|swipe|keyevent|text` fails with the
    /// `INJECT_EVENTS` `SecurityException` and has no effect.
    pub input_injection_denied: bool,
}

/// One tap as the phone delivered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TapRecord {
    pub x: i32,
    pub y: i32,
    /// The window that received it (`dumpsys window` title), `None` when nothing did
    /// (the screen was off: a non-interactive phone drops touches).
    pub window: Option<String>,
    /// That window's package (`com.xunmeng.pinduoduo`, `com.android.systemui`, …).
    pub package: Option<String>,
}

/// One swipe as the phone delivered it (routed by its start point).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SwipeRecord {
    pub from: (i32, i32),
    pub to: (i32, i32),
    pub window: Option<String>,
    pub package: Option<String>,
}

/// One key event and the window that had focus for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyRecord {
    pub code: i32,
    pub window: Option<String>,
    pub package: Option<String>,
}

/// The chooser (ResolverActivity) on screen: the URL it was raised for and the row
/// chosen so far.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chooser {
    pub url: String,
    pub selected: Option<ChooserTarget>,
}

/// The apps the chooser offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChooserTarget {
    Pdd,
    Browser,
}

/// A foreign app in front of PDD (opened from a notification or the chooser, or WeChat's
/// pay sheet that a `payment_handoff` order opens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForeignApp {
    WeChat,
    /// WeChat showing its pay sheet for a PDD order ([`SystemState::wechat_pay`]).
    WeChatPay,
    Browser,
}

impl ForeignApp {
    pub fn package(self) -> &'static str {
        match self {
            ForeignApp::WeChat | ForeignApp::WeChatPay => "com.tencent.mm",
            ForeignApp::Browser => "com.android.browser",
        }
    }
    /// The activity `mCurrentFocus` names.
    pub fn activity(self) -> &'static str {
        match self {
            ForeignApp::WeChat => "com.tencent.mm/com.tencent.mm.ui.LauncherUI",
            ForeignApp::WeChatPay => {
                "com.tencent.mm/com.tencent.mm.plugin.wallet.pay.ui.WalletPayUI"
            }
            ForeignApp::Browser => "com.android.browser/com.android.browser.BrowserActivity",
        }
    }
    /// WeChat, whatever it shows.
    pub fn is_wechat(self) -> bool {
        matches!(self, ForeignApp::WeChat | ForeignApp::WeChatPay)
    }
}

/// The PDD order WeChat's pay sheet asks to pay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WechatPay {
    pub order_sn: String,
    pub total_cent: i64,
}

/// The phone's own state.
#[derive(Debug, Clone)]
pub struct SystemState {
    pub cfg: SystemConfig,
    pub screen_on: bool,
    /// The keyguard is showing (only ever with a lock).
    pub locked: bool,
    /// The PIN pad (bouncer) is up over the keyguard.
    pub bouncer: bool,
    /// Device time of the last user activity (input), ms.
    pub last_activity_ms: u64,
    pub heads_up: Option<HeadsUp>,
    pub shade: bool,
    pub low_battery_dialog: bool,
    pub battery: Battery,
    pub chooser: Option<Chooser>,
    /// "始终" was chosen for PDD in the chooser: later links open PDD directly.
    pub chooser_default_pdd: bool,
    pub foreign: Option<ForeignApp>,
    /// The URL the browser shows (when it is the foreign app).
    pub browser_url: Option<String>,
    /// The order WeChat's pay sheet is for (when it is the foreign app).
    pub wechat_pay: Option<WechatPay>,
    /// BACK put the keyboard away while the field keeps focus (a tap on it brings it back).
    pub ime_hidden: bool,
    pub taps: Vec<TapRecord>,
    pub swipes: Vec<SwipeRecord>,
    pub keys: Vec<KeyRecord>,
    /// Wrong PINs typed on the bouncer.
    pub failed_unlocks: u32,
}

impl SystemState {
    pub fn new(cfg: SystemConfig) -> SystemState {
        let off = cfg.start_screen_off;
        let locked = off && cfg.lock != LockKind::None;
        SystemState {
            screen_on: !off,
            locked,
            bouncer: false,
            last_activity_ms: 0,
            heads_up: None,
            shade: false,
            low_battery_dialog: false,
            battery: cfg.battery,
            chooser: None,
            chooser_default_pdd: false,
            foreign: None,
            browser_url: None,
            wechat_pay: None,
            ime_hidden: false,
            taps: Vec::new(),
            swipes: Vec::new(),
            keys: Vec::new(),
            failed_unlocks: 0,
            cfg,
        }
    }

    /// The screen goes off (POWER, the timeout, a test): a lock engages at once, the shade
    /// and the bouncer close, a heads-up is put away.
    pub fn screen_off(&mut self) {
        self.screen_on = false;
        self.shade = false;
        self.bouncer = false;
        self.heads_up = None;
        if self.cfg.lock != LockKind::None {
            self.locked = true;
        }
    }

    /// The screen comes on (WAKEUP, POWER); user activity starts now.
    pub fn screen_on(&mut self, now_ms: u64) {
        self.screen_on = true;
        self.last_activity_ms = now_ms;
    }

    /// Time passed to `now_ms`: the screen-off timeout and a heads-up's decay.
    pub fn tick(&mut self, now_ms: u64) {
        if let Some(t) = self.heads_up.as_ref().and_then(|h| h.expires_at_ms) {
            if now_ms >= t {
                self.heads_up = None;
            }
        }
        if let Some(timeout) = self.cfg.screen_off_timeout_ms {
            if self.screen_on && now_ms.saturating_sub(self.last_activity_ms) >= timeout {
                self.screen_off();
            }
        }
    }

    /// The battery changes; falling below the warning level unplugged raises 电量不足.
    pub fn set_battery(&mut self, b: Battery) {
        let was = self.battery.level;
        self.battery = b;
        if b.plug == Plug::None
            && b.level < LOW_BATTERY_WARN_PERCENT
            && was >= LOW_BATTERY_WARN_PERCENT
        {
            self.low_battery_dialog = true;
        }
        if b.plug != Plug::None {
            // Plugging in dismisses the warning (PowerUI.dismissLowBatteryWarning).
            self.low_battery_dialog = false;
        }
    }

    /// Change the lock setting: with the screen off a lock engages at once; `None` takes
    /// a showing keyguard away.
    pub fn set_lock(&mut self, lock: LockKind) {
        self.cfg.lock = lock;
        if lock == LockKind::None {
            self.locked = false;
            self.bouncer = false;
        } else if !self.screen_on {
            self.locked = true;
        }
    }

    /// The foreign app goes to the background (BACK, HOME, a deep link to PDD).
    pub fn close_foreign(&mut self) {
        self.foreign = None;
        self.browser_url = None;
        self.wechat_pay = None;
    }

    /// The keyguard covers the app (screen on or off).
    pub fn keyguard_showing(&self) -> bool {
        self.locked
    }
}

/// The band a heads-up covers on a 1080-wide screen: below the status bar, one card.
pub fn heads_up_rect() -> Rect {
    Rect::new(24, 95, 1056, 383)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_from_json() {
        let c: SystemConfig = serde_json::from_str(
            r#"{"lock":"pin","screen_off_timeout_ms":30000,"battery":{"level":10},"second_browser":true}"#,
        )
        .expect("json");
        assert_eq!(c.lock, LockKind::Pin);
        assert_eq!(c.screen_off_timeout_ms, Some(30_000));
        assert_eq!(c.battery.level, 10);
        assert_eq!(c.battery.temperature_tenths, 285);
        assert!(c.second_browser && !c.keyboard);
        assert!(serde_json::from_str::<SystemConfig>(r#"{"lok":"pin"}"#).is_err());
        // Below 20 % unplugged: the dialog; plugged in: none.
        let mut s = SystemState::new(c);
        s.set_battery(Battery {
            level: 30,
            ..Battery::default()
        });
        assert!(!s.low_battery_dialog);
        s.set_battery(Battery {
            level: 19,
            ..Battery::default()
        });
        assert!(s.low_battery_dialog);
    }
}
