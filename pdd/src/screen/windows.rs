//! Which window a tap would reach: the text of `dumpsys window windows`
//! parsed into the window stack (top-most first, as the window manager lists it) and the
//! receiver of a touch at a point, found the way Android's InputDispatcher finds it — the
//! top-most visible window that takes touches (no `NOT_TOUCHABLE`) whose touchable area
//! holds the point, or a touch-modal window above it (neither `NOT_FOCUSABLE` nor
//! `NOT_TOUCH_MODAL`: it takes every touch, e.g. a system dialog or the pulled-down
//! shade). A receiver of another package is a [`Cover`]: the device guard refuses the
//! tap and the flow dismisses it with a key or a shell command, never a tap.
//!
//! Tolerant of the formats seen: `Frames: … frame=[l,t][r,b]` (Android 12+), `mFrame=`
//! (≤ 11), `package=` on the `mOwnerUid` line (8+) or the title's package, `ty=` and `fl=`
//! by name (9+) or as numbers / hex flags (older), `touchable region=SkRegion((l,t,r,b))`,
//! visibility from `isVisible=` or `mViewVisibility=` + `mHasSurface=`.

use serde::Serialize;

use super::arena::PDD_PACKAGE;
use super::geometry::{Bounds, Point};

/// The command whose output [`parse_windows`] reads.
pub const WINDOWS_ARGV: &[&str] = &["dumpsys", "window", "windows"];

/// One window of the stack.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WindowInfo {
    /// `Window{… u0 TITLE}`.
    pub title: String,
    pub package: String,
    /// `ty=` (the name; numbers of older versions are mapped to names).
    pub ty: String,
    /// `fl=` flags by name.
    pub flags: Vec<String>,
    pub frame: Option<Bounds>,
    /// A touchable region narrower than the frame.
    pub touch_region: Vec<Bounds>,
    pub visible: bool,
}

impl WindowInfo {
    fn flag(&self, f: &str) -> bool {
        self.flags.iter().any(|x| x == f)
    }

    /// Takes touches at all.
    pub fn touchable(&self) -> bool {
        !self.flag("NOT_TOUCHABLE")
    }

    /// Takes every touch, inside its frame or not.
    pub fn touch_modal(&self) -> bool {
        !self.flag("NOT_FOCUSABLE") && !self.flag("NOT_TOUCH_MODAL")
    }

    /// Whether a touch at `p` falls in its touchable area.
    pub fn holds(&self, p: Point) -> bool {
        if !self.touch_region.is_empty() {
            return self.touch_region.iter().any(|r| r.contains_point(p));
        }
        self.frame.is_some_and(|f| f.contains_point(p))
    }

    pub fn is_pdd(&self) -> bool {
        self.package == PDD_PACKAGE
    }
}

/// What kind of foreign window covers a point, which decides how it is put away.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CoverKind {
    /// The pulled-down notification shade / quick settings: `cmd statusbar collapse`.
    Shade,
    /// A heads-up notification pinned over the app: wait for it to decay (≈ 5 s).
    HeadsUp,
    /// The input method: BACK hides it.
    Keyboard,
    /// A system dialog (低电量, a permission prompt, an ANR): BACK.
    SystemDialog,
    /// The app chooser (ResolverActivity / ChooserActivity): BACK.
    Chooser,
    /// Another app in front of PDD: BACK.
    OtherApp,
    /// The status bar or the navigation / gesture bar: nothing to dismiss.
    SystemBar,
}

impl CoverKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CoverKind::Shade => "notification_shade",
            CoverKind::HeadsUp => "heads_up_notification",
            CoverKind::Keyboard => "keyboard",
            CoverKind::SystemDialog => "system_dialog",
            CoverKind::Chooser => "app_chooser",
            CoverKind::OtherApp => "other_app",
            CoverKind::SystemBar => "system_bar",
        }
    }
}

/// A foreign window that would receive a tap.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Cover {
    pub kind: CoverKind,
    /// Its title (`NotificationShade`, `InputMethod`, `android/….ResolverActivity`).
    pub window: String,
    pub package: String,
}

/// Parses `dumpsys window windows` (top-most first). Windows without a frame are kept
/// (a touch-modal one still takes touches).
pub fn parse_windows(text: &str) -> Vec<WindowInfo> {
    let mut out: Vec<WindowInfo> = Vec::new();
    let mut cur: Option<(WindowInfo, Visibility)> = None;
    let finish = |c: Option<(WindowInfo, Visibility)>, out: &mut Vec<WindowInfo>| {
        if let Some((mut w, v)) = c {
            w.visible = v.decide();
            if w.package.is_empty() {
                w.package = w.title.split('/').next().unwrap_or("").to_string();
            }
            out.push(w);
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Window #") {
            finish(cur.take(), &mut out);
            let title = rest
                .split_once("Window{")
                .map(|(_, r)| r)
                .and_then(|r| r.rsplit_once('}').map(|(a, _)| a))
                .map(|inner| {
                    // `hash u0 TITLE` (the title may contain spaces)
                    let mut parts = inner.splitn(3, ' ');
                    let _hash = parts.next();
                    let _user = parts.next();
                    parts.next().unwrap_or("").to_string()
                })
                .unwrap_or_default();
            cur = Some((
                WindowInfo {
                    title,
                    package: String::new(),
                    ty: String::new(),
                    flags: Vec::new(),
                    frame: None,
                    touch_region: Vec::new(),
                    visible: true,
                },
                Visibility::default(),
            ));
            continue;
        }
        let Some((w, v)) = cur.as_mut() else {
            continue;
        };
        // Lines that end the window list (`mGlobalConfiguration=`, `mCurrentFocus=` …) at
        // the section's own indentation level.
        if !line.starts_with("    ") && !t.is_empty() {
            finish(cur.take(), &mut out);
            continue;
        }
        for word in t.split_whitespace() {
            if let Some(p) = word.strip_prefix("package=") {
                w.package = p.to_string();
            } else if let Some(ty) = word.strip_prefix("ty=") {
                w.ty = type_name(ty);
            } else if let Some(v2) = word.strip_prefix("isVisible=") {
                v.is_visible = Some(v2 == "true");
            } else if let Some(v2) = word.strip_prefix("mViewVisibility=") {
                v.view_visible = Some(v2 == "0x0" || v2 == "0");
            } else if let Some(v2) = word.strip_prefix("mHasSurface=") {
                v.has_surface = Some(v2 == "true");
            } else if let Some(r) = word
                .strip_prefix("frame=")
                .or_else(|| word.strip_prefix("mFrame="))
            {
                if w.frame.is_none() {
                    w.frame = Bounds::parse(r);
                }
            }
        }
        if let Some(fl) = t.strip_prefix("fl=") {
            w.flags = flag_names(fl);
        } else if let Some(i) = t.find(" fl=").or_else(|| t.find("{fl=")) {
            // Older one-line `mAttrs=WM.LayoutParams{… ty=2 fl=#81810100 …}`.
            let rest = &t[i + 4..];
            w.flags = flag_names(rest.split_whitespace().next().unwrap_or(""));
        }
        if let Some(r) = t.strip_prefix("touchable region=SkRegion(") {
            w.touch_region = sk_region(r);
        }
    }
    finish(cur.take(), &mut out);
    out
}

#[derive(Default, Clone, Copy)]
struct Visibility {
    is_visible: Option<bool>,
    view_visible: Option<bool>,
    has_surface: Option<bool>,
}

impl Visibility {
    /// `isVisible=` when printed; else a visible view with a surface; unknown → visible
    /// (a window that may be there counts: the guard errs towards refusing).
    fn decide(self) -> bool {
        if let Some(v) = self.is_visible {
            return v;
        }
        !matches!(
            (self.view_visible, self.has_surface),
            (Some(false), _) | (_, Some(false))
        )
    }
}

/// `(l,t,r,b)(l,t,r,b)…)` → rectangles.
fn sk_region(s: &str) -> Vec<Bounds> {
    s.split('(')
        .filter_map(|part| {
            let inner = part.split(')').next()?;
            let n: Vec<i32> = inner
                .split(',')
                .map(|x| x.trim().parse().ok())
                .collect::<Option<Vec<i32>>>()?;
            (n.len() == 4).then(|| Bounds::new(n[0], n[1], n[2], n[3]))
        })
        .collect()
}

/// `ty=` by name, or the numbers of older versions.
fn type_name(ty: &str) -> String {
    let name = match ty {
        "1" => "BASE_APPLICATION",
        "2" => "APPLICATION",
        "3" => "APPLICATION_STARTING",
        "1000" | "1002" | "1003" => "APPLICATION_PANEL",
        "2000" => "STATUS_BAR",
        "2003" => "SYSTEM_ALERT",
        "2005" => "TOAST",
        "2006" => "SYSTEM_OVERLAY",
        "2008" => "SYSTEM_DIALOG",
        "2009" => "KEYGUARD_DIALOG",
        "2010" => "SYSTEM_ERROR",
        "2011" => "INPUT_METHOD",
        "2012" => "INPUT_METHOD_DIALOG",
        "2013" => "WALLPAPER",
        "2014" => "STATUS_BAR_PANEL",
        "2017" => "STATUS_BAR_SUB_PANEL",
        "2019" => "NAVIGATION_BAR",
        "2024" => "NAVIGATION_BAR_PANEL",
        "2038" => "APPLICATION_OVERLAY",
        "2040" => "NOTIFICATION_SHADE",
        other => other,
    };
    name.to_string()
}

/// `fl=NAME NAME …` as printed since Android 9, or `#81810108` (hex, older).
fn flag_names(fl: &str) -> Vec<String> {
    let fl = fl.trim().trim_end_matches('}');
    if let Some(hex) = fl.strip_prefix('#').or_else(|| fl.strip_prefix("0x")) {
        let bits =
            u32::from_str_radix(hex.split_whitespace().next().unwrap_or(""), 16).unwrap_or(0);
        let mut out = Vec::new();
        for (bit, name) in [
            (0x8, "NOT_FOCUSABLE"),
            (0x10, "NOT_TOUCHABLE"),
            (0x20, "NOT_TOUCH_MODAL"),
        ] {
            if bits & bit != 0 {
                out.push(name.to_string());
            }
        }
        return out;
    }
    fl.split_whitespace()
        .map(|f| f.trim_start_matches("FLAG_").to_string())
        .collect()
}

/// The window a touch at `p` reaches (see the module documentation); `None` when no
/// window takes it.
pub fn receiver(wins: &[WindowInfo], p: Point) -> Option<&WindowInfo> {
    wins.iter()
        .find(|w| w.visible && w.touchable() && (w.holds(p) || w.touch_modal()))
}

/// What covers `p`: the receiver of a touch there when it is not PDD's. `None` when PDD
/// receives it, or when the stack could not be read at all (no windows parsed).
pub fn cover_at(wins: &[WindowInfo], p: Point, screen_height: Option<i32>) -> Option<Cover> {
    let w = receiver(wins, p)?;
    if w.is_pdd() {
        return None;
    }
    Some(Cover {
        kind: classify(w, screen_height),
        window: w.title.clone(),
        package: w.package.clone(),
    })
}

/// The window with input focus (the top-most visible focusable one) when it is not PDD's:
/// a dump that shows no PDD window asks this to tell a shade, a dialog or a chooser in
/// front from a page of another app.
pub fn focused_cover(wins: &[WindowInfo], screen_height: Option<i32>) -> Option<Cover> {
    let w = wins
        .iter()
        .find(|w| w.visible && !w.flag("NOT_FOCUSABLE") && w.frame.is_some())?;
    if w.is_pdd() {
        return None;
    }
    Some(Cover {
        kind: classify(w, screen_height),
        window: w.title.clone(),
        package: w.package.clone(),
    })
}

fn classify(w: &WindowInfo, screen_height: Option<i32>) -> CoverKind {
    let title = w.title.as_str();
    if title.contains("ResolverActivity")
        || title.contains("ChooserActivity")
        || w.package == "com.android.intentresolver"
    {
        return CoverKind::Chooser;
    }
    let tall = |w: &WindowInfo| {
        let h = w.frame.map(|f| f.bottom - f.top).unwrap_or(0);
        h > screen_height.unwrap_or(2400) / 4
    };
    match w.ty.as_str() {
        "INPUT_METHOD" | "INPUT_METHOD_DIALOG" => CoverKind::Keyboard,
        "NOTIFICATION_SHADE" | "STATUS_BAR_PANEL" | "STATUS_BAR" => {
            // A heads-up: the shade window is up but takes touches only in the card
            // (NOT_FOCUSABLE, a touchable region narrower than its frame).
            if !w.touch_region.is_empty() && !w.touch_modal() {
                CoverKind::HeadsUp
            } else if w.ty == "STATUS_BAR" && !tall(w) {
                CoverKind::SystemBar
            } else {
                CoverKind::Shade
            }
        }
        "NAVIGATION_BAR" | "NAVIGATION_BAR_PANEL" => CoverKind::SystemBar,
        "STATUS_BAR_SUB_PANEL"
        | "SYSTEM_DIALOG"
        | "SYSTEM_ALERT"
        | "SYSTEM_ERROR"
        | "KEYGUARD_DIALOG"
        | "APPLICATION_OVERLAY"
        | "SYSTEM_OVERLAY"
        | "PHONE"
        | "PRIORITY_PHONE" => CoverKind::SystemDialog,
        _ => CoverKind::OtherApp,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(clippy::too_many_arguments)]
    fn block(
        i: usize,
        title: &str,
        pkg: &str,
        ty: &str,
        fl: &str,
        frame: &str,
        extra: &str,
        visible: bool,
    ) -> String {
        format!(
            "  Window #{i} Window{{a1b2c3 u0 {title}}}:\n    mDisplayId=0 rootTaskId=1 mSession=Session{{1 2:u0a3}} mClient=android.os.BinderProxy@4\n    mOwnerUid=10102 showForAllUsers=true package={pkg} appop=NONE\n    mAttrs={{(0,0)(fillxfill) sim={{adjust=pan}} ty={ty} fmt=TRANSLUCENT\n      fl={fl}\n      pfl=USE_BLAST\n      bhv=DEFAULT}}\n    Requested w=1080 h=2400 mLayoutSeq=1214\n    mViewVisibility={vv} mHaveFrame=true mObscured=false\n{extra}    mHasSurface={visible} isReadyForDisplay()={visible} mWindowRemovalAllowed=false\n    Frames: parent=[0,0][1080,2400] display=[0,0][1080,2400] frame={frame} last={frame} insetsChanged=false\n     surface=[0,0][0,0]\n    isOnScreen={visible}\n    isVisible={visible}\n",
            vv = if visible { "0x0" } else { "0x8" }
        )
    }

    const PDD_ACT: &str = "com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.activity.NewPageActivity";

    /// An Android 13 stack: decor, gesture stub, shade (state given), status bar, IME,
    /// PDD, launcher, wallpaper.
    fn stack(shade: &str, ime: bool, dialog: bool) -> String {
        let mut s = String::from("WINDOW MANAGER WINDOWS (dumpsys window windows)\n");
        s += &block(
            0,
            "ScreenDecorOverlayBottom",
            "com.android.systemui",
            "NAVIGATION_BAR_PANEL",
            "NOT_FOCUSABLE NOT_TOUCHABLE LAYOUT_IN_SCREEN",
            "[0,2304][1080,2400]",
            "",
            true,
        );
        s += &block(
            1,
            "GestureStubBottom",
            "com.miui.home",
            "NAVIGATION_BAR_PANEL",
            "NOT_FOCUSABLE NOT_TOUCH_MODAL LAYOUT_IN_SCREEN",
            "[0,2328][1080,2400]",
            "",
            true,
        );
        s += &block(
            2,
            "com.android.systemui",
            "com.android.systemui",
            "STATUS_BAR_SUB_PANEL",
            "DIM_BEHIND ALT_FOCUSABLE_IM HARDWARE_ACCELERATED",
            "[60,880][1020,1520]",
            "",
            dialog,
        );
        let (shade_fl, region, shade_visible) = match shade {
            "expanded" => ("LAYOUT_IN_SCREEN SPLIT_TOUCH HARDWARE_ACCELERATED", "", true),
            "heads_up" => (
                "NOT_FOCUSABLE LAYOUT_IN_SCREEN SPLIT_TOUCH",
                "    mTouchableInsets=3 mGivenInsetsPending=false\n    touchable region=SkRegion((24,110,1056,380))\n",
                true,
            ),
            _ => ("NOT_FOCUSABLE LAYOUT_IN_SCREEN SPLIT_TOUCH", "", false),
        };
        s += &block(
            3,
            "NotificationShade",
            "com.android.systemui",
            "NOTIFICATION_SHADE",
            shade_fl,
            "[0,0][1080,2400]",
            region,
            shade_visible,
        );
        s += &block(
            4,
            "StatusBar",
            "com.android.systemui",
            "STATUS_BAR",
            "NOT_FOCUSABLE LAYOUT_IN_SCREEN",
            "[0,0][1080,95]",
            "",
            true,
        );
        s += &block(
            5,
            "InputMethod",
            "com.sohu.inputmethod.sogou.xiaomi",
            "INPUT_METHOD",
            "NOT_FOCUSABLE LAYOUT_IN_SCREEN",
            "[0,1515][1080,2400]",
            "",
            ime,
        );
        s += &block(
            6,
            PDD_ACT,
            "com.xunmeng.pinduoduo",
            "BASE_APPLICATION",
            "LAYOUT_IN_SCREEN LAYOUT_INSET_DECOR SPLIT_TOUCH",
            "[0,0][1080,2400]",
            "",
            true,
        );
        s += &block(
            7,
            "com.miui.home/com.miui.home.launcher.Launcher",
            "com.miui.home",
            "BASE_APPLICATION",
            "LAYOUT_IN_SCREEN SHOW_WALLPAPER",
            "[0,0][1080,2400]",
            "",
            false,
        );
        s += &block(
            8,
            "com.miui.miwallpaper.wallpaperservice.ImageWallpaper",
            "com.miui.miwallpaper",
            "WALLPAPER",
            "NOT_FOCUSABLE NOT_TOUCHABLE",
            "[0,0][1080,2400]",
            "",
            false,
        );
        s += "  mGlobalConfiguration={1.0 460mcc1mnc}\n  mHasPermanentDpad=false\n  mTopFocusedDisplayId=0\n";
        s
    }

    const FOOTER: Point = Point { x: 700, y: 2280 };
    const OPTION: Point = Point { x: 150, y: 1550 };
    const TOP: Point = Point { x: 500, y: 200 };

    #[test]
    fn a_plain_stack_gives_every_app_point_to_pdd() {
        let w = parse_windows(&stack("none", false, false));
        assert_eq!(w.len(), 9);
        assert_eq!(w[6].package, PDD_PACKAGE);
        assert_eq!(w[6].frame, Some(Bounds::new(0, 0, 1080, 2400)));
        for p in [FOOTER, OPTION, TOP] {
            assert_eq!(cover_at(&w, p, Some(2400)), None, "{p:?}");
        }
        // The status bar and the gesture bar are not PDD's.
        assert_eq!(
            cover_at(&w, Point { x: 500, y: 40 }, Some(2400)).map(|c| c.kind),
            Some(CoverKind::SystemBar)
        );
        assert_eq!(
            cover_at(&w, Point { x: 500, y: 2390 }, Some(2400)).map(|c| c.kind),
            Some(CoverKind::SystemBar)
        );
    }

    #[test]
    fn shade_heads_up_keyboard_and_dialog_cover_what_they_cover() {
        let w = parse_windows(&stack("expanded", false, false));
        let c = cover_at(&w, FOOTER, Some(2400)).expect("shade takes every touch");
        assert_eq!(
            (c.kind, c.window.as_str()),
            (CoverKind::Shade, "NotificationShade")
        );

        let w = parse_windows(&stack("heads_up", false, false));
        assert_eq!(
            cover_at(&w, TOP, Some(2400)).map(|c| c.kind),
            Some(CoverKind::HeadsUp)
        );
        // Outside the card the app gets the touch.
        assert_eq!(cover_at(&w, FOOTER, Some(2400)), None);

        let w = parse_windows(&stack("none", true, false));
        assert_eq!(
            cover_at(&w, FOOTER, Some(2400)).map(|c| c.kind),
            Some(CoverKind::Keyboard)
        );
        assert_eq!(cover_at(&w, TOP, Some(2400)), None);

        // The low-battery dialog is modal: it takes touches outside its frame too.
        let w = parse_windows(&stack("none", false, true));
        let c = cover_at(&w, FOOTER, Some(2400)).expect("modal dialog");
        assert_eq!(
            (c.kind, c.package.as_str()),
            (CoverKind::SystemDialog, "com.android.systemui")
        );
    }

    #[test]
    fn the_chooser_and_other_apps() {
        let mut s = String::from("WINDOW MANAGER WINDOWS (dumpsys window windows)\n");
        s += &block(
            0,
            "StatusBar",
            "com.android.systemui",
            "STATUS_BAR",
            "NOT_FOCUSABLE",
            "[0,0][1080,95]",
            "",
            true,
        );
        s += &block(
            1,
            "android/com.android.internal.app.ResolverActivity",
            "android",
            "BASE_APPLICATION",
            "DIM_BEHIND LAYOUT_IN_SCREEN",
            "[0,0][1080,2400]",
            "",
            true,
        );
        s += &block(
            2,
            PDD_ACT,
            "com.xunmeng.pinduoduo",
            "BASE_APPLICATION",
            "LAYOUT_IN_SCREEN",
            "[0,0][1080,2400]",
            "",
            true,
        );
        let w = parse_windows(&s);
        assert_eq!(
            cover_at(&w, OPTION, Some(2400)).map(|c| c.kind),
            Some(CoverKind::Chooser)
        );
        let wechat = s.replace(
            "android/com.android.internal.app.ResolverActivity\", \"android\"",
            "",
        );
        let wechat = wechat
            .replace(
                "android/com.android.internal.app.ResolverActivity",
                "com.tencent.mm/com.tencent.mm.ui.LauncherUI",
            )
            .replace("package=android ", "package=com.tencent.mm ");
        let w = parse_windows(&wechat);
        assert_eq!(
            cover_at(&w, OPTION, Some(2400)).map(|c| c.kind),
            Some(CoverKind::OtherApp)
        );
    }

    #[test]
    fn older_formats_numbers_hex_flags_and_mframe() {
        // Android 8: one-line mAttrs with numeric type and hex flags; mFrame=; no
        // isVisible line; the package from the owner line.
        let s = "WINDOW MANAGER WINDOWS (dumpsys window windows)\n  Window #3 Window{3f5a3b1 u0 InputMethod}:\n    mDisplayId=0 stackId=0 mSession=Session{…} mClient=android.os.BinderProxy@…\n    mOwnerUid=10071 mShowToOwnerOnly=true package=com.android.inputmethod.latin appop=NONE\n    mAttrs=WM.LayoutParams{(0,0)(fillxwrap) gr=#50 sim=#120 ty=2011 fl=#81800108 fmt=-2 wanim=0x1030056 vsysui=0x300 needsMenuKey=2}\n    mViewVisibility=0x0 mHaveFrame=true mObscured=false\n    mHasSurface=true mShownPosition=[0,1212] isReadyForDisplay()=true hasSavedSurface()=false mWindowRemovalAllowed=false\n    mFrame=[0,1212][1080,1920] last=[0,1212][1080,1920]\n  Window #2 Window{8c0d1e2 u0 com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.ui.activity.HomeActivity}:\n    mOwnerUid=10234 mShowToOwnerOnly=true package=com.xunmeng.pinduoduo appop=NONE\n    mAttrs=WM.LayoutParams{(0,0)(fillxfill) sim=#110 ty=1 fl=#81810100 wanim=0x1030465 needsMenuKey=2}\n    mViewVisibility=0x0 mHaveFrame=true mObscured=false\n    mHasSurface=true mShownPosition=[0,0] isReadyForDisplay()=true\n    mFrame=[0,0][1080,1920] last=[0,0][1080,1920]\n\n  mCurrentFocus=Window{8c0d1e2 u0 com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.ui.activity.HomeActivity}\n";
        let w = parse_windows(s);
        assert_eq!(w.len(), 2);
        assert_eq!(w[0].ty, "INPUT_METHOD");
        assert!(w[0].flags.contains(&"NOT_FOCUSABLE".to_string()));
        assert_eq!(w[0].frame, Some(Bounds::new(0, 1212, 1080, 1920)));
        assert_eq!(
            cover_at(&w, Point { x: 500, y: 1500 }, Some(1920)).map(|c| c.kind),
            Some(CoverKind::Keyboard)
        );
        assert_eq!(cover_at(&w, Point { x: 500, y: 600 }, Some(1920)), None);
        // A hidden keyboard (surface gone) covers nothing.
        let hidden = s.replacen("mHasSurface=true", "mHasSurface=false", 1);
        assert_eq!(
            cover_at(
                &parse_windows(&hidden),
                Point { x: 500, y: 1500 },
                Some(1920)
            ),
            None
        );
    }

    #[test]
    fn nothing_parsed_means_nothing_known() {
        assert!(parse_windows("Can't find service: window\n").is_empty());
        assert_eq!(cover_at(&[], FOOTER, None), None);
    }
}
