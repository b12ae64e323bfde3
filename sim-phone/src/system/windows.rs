//! The window stack as the window manager holds it (top first, as `dumpsys window windows`
//! lists it): what is visible, where, whether it takes touches and focus. The same list
//! routes every tap (the topmost visible touchable window whose touchable area holds the
//! point, as InputDispatcher finds it) and prints `dumpsys window`.

use crate::ui::Rect;

use super::state::{heads_up_rect, ForeignApp, SystemState};

pub const SYSTEMUI: &str = "com.android.systemui";
pub const MIUI_HOME: &str = "com.miui.home";
pub const IME_PACKAGE: &str = "com.sohu.inputmethod.sogou.xiaomi";
pub const ANDROID: &str = "android";
pub const RESOLVER: &str = "android/com.android.internal.app.ResolverActivity";
pub const LAUNCHER: &str = "com.miui.home/com.miui.home.launcher.Launcher";
pub const WALLPAPER: &str = "com.miui.miwallpaper.wallpaperservice.ImageWallpaper";

/// What a window is, for routing input to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WinKind {
    ScreenDecor,
    GestureStub,
    LowBattery,
    /// systemui's NotificationShade window: the keyguard, the pulled-down shade, or only a
    /// pinned heads-up notification (then it takes touches in that card only).
    Shade,
    StatusBar,
    Ime,
    Chooser,
    Foreign(ForeignApp),
    PddPopup,
    Pdd,
    Launcher,
    Wallpaper,
}

/// One window.
#[derive(Debug, Clone)]
pub struct Win {
    pub kind: WinKind,
    /// `Window{… u0 TITLE}`.
    pub title: String,
    pub package: &'static str,
    pub uid: u32,
    pub pid: u32,
    /// `ty=` of its layout params.
    pub ty: &'static str,
    /// `fl=` flags.
    pub flags: &'static str,
    /// `(x,y)(WxH)` of its layout params.
    pub attrs_size: String,
    pub frame: Rect,
    /// A touchable region narrower than the frame (`touchable region=SkRegion(…)`).
    pub touch_region: Option<Rect>,
    pub visible: bool,
    pub touchable: bool,
    pub focusable: bool,
    /// Touches outside its frame still go to it (a modal dialog without
    /// FLAG_NOT_TOUCH_MODAL).
    pub touch_modal: bool,
    /// The activity record of an activity window (`pkg/.Class`), or `None`.
    pub activity: Option<String>,
    pub task: Option<u32>,
}

impl Win {
    /// The area a touch must fall in to reach this window.
    pub fn touch_area(&self) -> Rect {
        self.touch_region.unwrap_or(self.frame)
    }
}

/// What the windows are built from besides the system state.
pub struct Scene<'a> {
    pub width: i32,
    pub height: i32,
    /// The PDD activity in front (full class name), `None` when PDD is not in front.
    pub pdd_activity: Option<&'a str>,
    pub pdd_popup: bool,
    /// A text field of PDD has focus (the sheet's quantity).
    pub text_focus: bool,
}

fn size_of(r: Rect, full: (i32, i32)) -> String {
    let w = if r.r - r.l == full.0 {
        "fill".to_string()
    } else {
        (r.r - r.l).to_string()
    };
    let h = if r.b - r.t == full.1 {
        "fill".to_string()
    } else {
        (r.b - r.t).to_string()
    };
    format!("({},{})({w}x{h})", r.l, r.t)
}

/// `pkg/full.Class` → `pkg/.Class` as ActivityRecord prints it.
pub fn short_component(act: &str) -> String {
    match act.split_once('/') {
        Some((pkg, class)) => match class.strip_prefix(pkg) {
            Some(rest) if rest.starts_with('.') => format!("{pkg}/{rest}"),
            _ => act.to_string(),
        },
        None => act.to_string(),
    }
}

/// Whether the input method window is up.
pub fn ime_visible(sys: &SystemState, s: &Scene<'_>) -> bool {
    sys.cfg.keyboard
        && s.text_focus
        && !sys.ime_hidden
        && s.pdd_activity.is_some()
        && sys.foreign.is_none()
        && sys.chooser.is_none()
        && !sys.locked
}

/// Every window, top first.
pub fn windows(sys: &SystemState, s: &Scene<'_>) -> Vec<Win> {
    let (w, h) = (s.width, s.height);
    let full = Rect::new(0, 0, w, h);
    let fs = (w, h);
    let mut out = Vec::with_capacity(12);
    let base = |kind, title: &str, package, uid, pid, ty, flags, frame: Rect| Win {
        kind,
        title: title.to_string(),
        package,
        uid,
        pid,
        ty,
        flags,
        attrs_size: size_of(frame, fs),
        frame,
        touch_region: None,
        visible: true,
        touchable: true,
        focusable: false,
        touch_modal: false,
        activity: None,
        task: None,
    };
    let decor_flags =
        "NOT_FOCUSABLE NOT_TOUCHABLE LAYOUT_IN_SCREEN SPLIT_TOUCH HARDWARE_ACCELERATED";
    let mut d = base(
        WinKind::ScreenDecor,
        "ScreenDecorOverlayBottom",
        SYSTEMUI,
        10_102,
        2_468,
        "NAVIGATION_BAR_PANEL",
        decor_flags,
        Rect::new(0, h - 96, w, h),
    );
    d.touchable = false;
    out.push(d.clone());
    d.title = "ScreenDecorOverlay".into();
    d.frame = Rect::new(0, 0, w, 96);
    d.attrs_size = size_of(d.frame, fs);
    out.push(d);
    out.push(base(
        WinKind::GestureStub,
        "GestureStubBottom",
        MIUI_HOME,
        10_081,
        3_120,
        "NAVIGATION_BAR_PANEL",
        "NOT_FOCUSABLE NOT_TOUCH_MODAL LAYOUT_IN_SCREEN SPLIT_TOUCH HARDWARE_ACCELERATED",
        Rect::new(0, h - 72, w, h),
    ));
    let mut dlg = base(
        WinKind::LowBattery,
        SYSTEMUI,
        SYSTEMUI,
        10_102,
        2_468,
        "STATUS_BAR_SUB_PANEL",
        "DIM_BEHIND ALT_FOCUSABLE_IM HARDWARE_ACCELERATED",
        Rect::new(60, 880, w - 60, 1520),
    );
    dlg.focusable = true;
    dlg.touch_modal = true;
    // A dialog's window exists only while it shows (dismiss removes it).
    if sys.low_battery_dialog {
        out.push(dlg);
    }
    let mut shade = base(
        WinKind::Shade,
        "NotificationShade",
        SYSTEMUI,
        10_102,
        2_468,
        "NOTIFICATION_SHADE",
        "NOT_FOCUSABLE LAYOUT_IN_SCREEN SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS",
        full,
    );
    let expanded = sys.locked || sys.shade;
    shade.visible = expanded || sys.heads_up.is_some();
    shade.focusable = expanded;
    if expanded {
        shade.flags =
            "LAYOUT_IN_SCREEN SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS";
    } else if sys.heads_up.is_some() {
        shade.touch_region = Some(heads_up_rect());
    }
    out.push(shade);
    out.push(base(
        WinKind::StatusBar,
        "StatusBar",
        SYSTEMUI,
        10_102,
        2_468,
        "STATUS_BAR",
        "NOT_FOCUSABLE LAYOUT_IN_SCREEN SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS",
        Rect::new(0, 0, w, 95),
    ));
    let mut ime = base(
        WinKind::Ime,
        "InputMethod",
        IME_PACKAGE,
        10_156,
        5_210,
        "INPUT_METHOD",
        "NOT_FOCUSABLE LAYOUT_IN_SCREEN SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS",
        Rect::new(0, h - IME_HEIGHT, w, h),
    );
    ime.visible = ime_visible(sys, s);
    out.push(ime);
    let app_visible = !sys.locked;
    if sys.chooser.is_some() {
        let mut ch = base(
            WinKind::Chooser,
            RESOLVER,
            ANDROID,
            1_000,
            1_534,
            "BASE_APPLICATION",
            "DIM_BEHIND LAYOUT_IN_SCREEN SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS",
            full,
        );
        ch.visible = app_visible;
        ch.focusable = true;
        ch.activity = Some(short_component(RESOLVER));
        ch.task = Some(57);
        out.push(ch);
    }
    if let Some(f) = sys.foreign {
        let mut fw = base(
            WinKind::Foreign(f),
            f.activity(),
            f.package(),
            if f.is_wechat() { 10_167 } else { 10_118 },
            if f.is_wechat() { 6_012 } else { 6_340 },
            "BASE_APPLICATION",
            "LAYOUT_IN_SCREEN LAYOUT_INSET_DECOR SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS",
            full,
        );
        fw.visible = app_visible;
        fw.focusable = true;
        fw.activity = Some(short_component(f.activity()));
        fw.task = Some(if f.is_wechat() { 61 } else { 63 });
        out.push(fw);
    }
    let covered_by_app = sys.foreign.is_some();
    if let Some(act) = s.pdd_activity {
        if s.pdd_popup {
            let mut p = base(
                WinKind::PddPopup,
                crate::ui::PDD,
                crate::ui::PDD,
                10_234,
                12_345,
                "APPLICATION",
                "DIM_BEHIND LAYOUT_IN_SCREEN SPLIT_TOUCH HARDWARE_ACCELERATED",
                full,
            );
            p.visible = app_visible && !covered_by_app;
            p.focusable = true;
            p.task = Some(42);
            out.push(p);
        }
        let mut a = base(
            WinKind::Pdd,
            act,
            crate::ui::PDD,
            10_234,
            12_345,
            "BASE_APPLICATION",
            "LAYOUT_IN_SCREEN LAYOUT_INSET_DECOR SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS",
            full,
        );
        a.visible = app_visible && !covered_by_app;
        a.focusable = true;
        a.activity = Some(short_component(act));
        a.task = Some(42);
        out.push(a);
    }
    let mut l = base(
        WinKind::Launcher,
        LAUNCHER,
        MIUI_HOME,
        10_081,
        3_120,
        "BASE_APPLICATION",
        "LAYOUT_IN_SCREEN LAYOUT_INSET_DECOR SHOW_WALLPAPER SPLIT_TOUCH HARDWARE_ACCELERATED DRAWS_SYSTEM_BAR_BACKGROUNDS",
        full,
    );
    l.visible = app_visible && s.pdd_activity.is_none() && sys.foreign.is_none();
    l.focusable = true;
    l.activity = Some(short_component(LAUNCHER));
    l.task = Some(1);
    out.push(l);
    let mut wp = base(
        WinKind::Wallpaper,
        WALLPAPER,
        "com.miui.miwallpaper",
        10_095,
        2_890,
        "WALLPAPER",
        "NOT_FOCUSABLE NOT_TOUCHABLE LAYOUT_IN_SCREEN LAYOUT_NO_LIMITS SCALED",
        full,
    );
    wp.touchable = false;
    wp.visible = sys.locked || (s.pdd_activity.is_none() && sys.foreign.is_none());
    out.push(wp);
    out
}

/// The keyboard's height on a 2400-px screen (搜狗 with its candidate bar).
pub const IME_HEIGHT: i32 = 885;

/// The window a touch at (x, y) reaches: the topmost visible, touchable window whose
/// touchable area holds the point, or a touch-modal window above it (which takes every
/// touch). `None`: nothing takes it.
pub fn route(wins: &[Win], x: i32, y: i32) -> Option<&Win> {
    wins.iter()
        .find(|w| w.visible && w.touchable && (w.touch_area().contains(x, y) || w.touch_modal))
}

/// The window with input focus: the topmost visible focusable one.
pub fn focused(wins: &[Win]) -> Option<&Win> {
    wins.iter().find(|w| w.visible && w.focusable)
}

/// The app window behind focus (`mFocusedApp`): the topmost visible activity window, or
/// the topmost activity when none is visible (behind the keyguard).
pub fn focused_app(wins: &[Win]) -> Option<&Win> {
    wins.iter()
        .find(|w| w.visible && w.activity.is_some())
        .or_else(|| {
            wins.iter()
                .find(|w| w.activity.is_some() && w.kind != WinKind::Launcher)
        })
        .or_else(|| wins.iter().find(|w| w.activity.is_some()))
}

/// A stable identity hash for a window title (as `Integer.toHexString` prints it).
pub fn hash_of(s: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{:x}", h & 0x0fff_ffff | 0x0100_0000)
}
