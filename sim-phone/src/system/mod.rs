//! The phone's own state: screen and screen-off timeout, keyguard,
//! heads-up notification, notification shade, low-battery dialog, battery, input method,
//! app chooser — the window stack they make, and the formats `dumpsys power|battery|window`
//! print them in. `state` is the data, `windows` the window stack and input routing,
//! `format` the dumpsys text, `screens` the system's accessibility trees. The device
//! (`device/phone_state.rs`) ties them to the app.

pub mod format;
pub mod screens;
pub mod state;
pub mod windows;

pub use state::{
    Battery, Chooser, ChooserTarget, ForeignApp, HeadsUp, KeyRecord, LockKind, Plug, SwipeRecord,
    SystemConfig, SystemState, TapRecord, WechatPay, HEADS_UP_DECAY_MS, LOW_BATTERY_WARN_PERCENT,
};
pub use windows::{Win, WinKind};
