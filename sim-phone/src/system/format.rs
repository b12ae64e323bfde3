//! The text the phone's system services print, in the formats of Android 13 (API 33) on
//! MIUI 14 (AOSP framework code; MIUI adds windows, not formats):
//! - `dumpsys power` — PowerManagerService.dumpInternal (`mWakefulness=`, `Display Power:
//!   state=`),
//! - `dumpsys battery` — BatteryService.dumpInternal (`level:`, `temperature:` in tenths
//!   of °C),
//! - `dumpsys window windows` — RootWindowContainer.dumpWindowsNoHeader + WindowState.dump,
//!   top-most window first,
//! - `dumpsys window displays` — DisplayContent.dump (`mCurrentFocus=`, `mFocusedApp=`),
//! - `dumpsys window policy` — PhoneWindowManager.dump and its KeyguardServiceDelegate
//!   (`showing=`, `secure=`),
//! - `dumpsys window` — those sections in the order the full dump prints them.
//!
//! Sources and samples: `fixtures/android/README.md`.

use std::fmt::Write as _;

use super::state::{LockKind, Plug, SystemState};
use super::windows::{focused, focused_app, hash_of, Win, WinKind};

const SEP: &str =
    "-------------------------------------------------------------------------------\n";

fn rect(r: crate::ui::Rect) -> String {
    format!("[{},{}][{},{}]", r.l, r.t, r.r, r.b)
}

/// `Window{hash u0 TITLE}`.
pub fn window_name(w: &Win) -> String {
    format!("Window{{{} u0 {}}}", hash_of(&w.title), w.title)
}

fn activity_record(w: &Win) -> Option<String> {
    let act = w.activity.as_ref()?;
    Some(format!(
        "ActivityRecord{{{} u0 {act} t{}}}",
        hash_of(act),
        w.task.unwrap_or(1)
    ))
}

const CONFIG: &str = "{1.0 460mcc1mnc [zh_CN_#Hans] ldltr sw392dp w392dp h872dp 440dpi nrml long hdr widecg port finish 1 ui=normal night=no}";

/// `dumpsys power` (the lines of PowerManagerService.dumpInternal scripts read, in order).
pub fn power(sys: &SystemState, now_ms: u64) -> String {
    let wake = if sys.screen_on { "Awake" } else { "Asleep" };
    let b = &sys.battery;
    let (powered, plug) = match b.plug {
        Plug::None => (false, 0),
        Plug::Ac => (true, 1),
        Plug::Usb => (true, 2),
    };
    let timeout = sys.cfg.screen_off_timeout_ms.unwrap_or(2_147_483_647);
    let since_activity = now_ms.saturating_sub(sys.last_activity_ms);
    let display = if sys.screen_on { "ON" } else { "OFF" };
    format!(
        "POWER MANAGER (dumpsys power)\n\n\
Power Manager State:\n  \
Settings power_manager_constants:\n    \
no_cached_wake_locks=true\n  \
mDirty=0x0\n  \
mWakefulness={wake}\n  \
mWakefulnessChanging=false\n  \
mIsPowered={powered}\n  \
mPlugType={plug}\n  \
mBatteryLevel={level}\n  \
mBatteryLevelWhenDreamStarted=0\n  \
mDockState=0\n  \
mStayOn=false\n  \
mProximityPositive=false\n  \
mBootCompleted=true\n  \
mSystemReady=true\n  \
mHalAutoSuspendModeEnabled=false\n  \
mHalInteractiveModeEnabled={interactive}\n  \
mWakeLockSummary=0x{wls}\n  \
mNotifyLongScheduled=(none)\n  \
mNotifyLongDispatched=(none)\n  \
mNotifyLongNextCheck=(none)\n  \
mRequestWaitForNegativeProximity=false\n  \
mSandmanScheduled=false\n  \
mBatteryLevelLow={low}\n  \
mLightDeviceIdleMode=false\n  \
mDeviceIdleMode=false\n  \
mDeviceIdleWhitelist=[]\n  \
mDeviceIdleTempWhitelist=[]\n  \
mLowPowerStandbyActive=false\n  \
mLastWakeTime={last_wake} ({since_activity} ms ago)\n  \
mLastSleepTime=0 (n/a)\n  \
mLastSleepReason={sleep_reason}\n  \
mLastInteractivePowerHintTime={last_wake} ({since_activity} ms ago)\n  \
mLastScreenBrightnessBoostTime=0 (n/a)\n  \
mScreenBrightnessBoostInProgress=false\n  \
mHoldingWakeLockSuspendBlocker=false\n  \
mHoldingDisplaySuspendBlocker={interactive}\n  \
mLastFlipTime=0\n  \
mIsFaceDown=false\n\
\n\
Settings and Configuration:\n  \
mDecoupleHalAutoSuspendModeFromDisplayConfig=false\n  \
mDecoupleHalInteractiveModeFromDisplayConfig=true\n  \
mWakeUpWhenPluggedOrUnpluggedConfig=true\n  \
mWakeUpWhenPluggedOrUnpluggedInTheaterModeConfig=false\n  \
mTheaterModeEnabled=false\n  \
mSuspendWhenScreenOffDueToProximityConfig=false\n  \
mDreamsSupportedConfig=true\n  \
mDreamsEnabledByDefaultConfig=true\n  \
mDreamsActivatedOnSleepByDefaultConfig=false\n  \
mDreamsActivatedOnDockByDefaultConfig=true\n  \
mDreamsEnabledOnBatteryConfig=false\n  \
mDreamsEnabledSetting=false\n  \
mDreamsActivateOnSleepSetting=false\n  \
mDreamsActivateOnDockSetting=false\n  \
mDozeAfterScreenOff=true\n  \
mMinimumScreenOffTimeoutConfig=10000\n  \
mMaximumScreenDimDurationConfig=7000\n  \
mMaximumScreenDimRatioConfig=0.20000005\n  \
mAttentiveTimeoutConfig=-1\n  \
mAttentiveTimeoutSetting=-1\n  \
mAttentiveWarningDurationConfig=0\n  \
mScreenOffTimeoutSetting={timeout}\n  \
mSleepTimeoutSetting=-1\n  \
mMaximumScreenOffTimeoutFromDeviceAdmin=9223372036854775807 (enforced=false)\n  \
mStayOnWhilePluggedInSetting=0\n  \
mScreenBrightnessModeSetting=1\n  \
mScreenBrightnessOverrideFromWindowManager=NaN\n  \
mUserActivityTimeoutOverrideFromWindowManager=-1\n  \
mUserInactiveOverrideFromWindowManager=false\n  \
mDozeScreenStateOverrideFromDreamManager=0\n  \
mDrawWakeLockOverrideFromSidekick=false\n  \
mDozeScreenBrightnessOverrideFromDreamManager=-1\n  \
mScreenBrightnessMinimum=0.0\n  \
mScreenBrightnessMaximum=1.0\n  \
mScreenBrightnessDefault=0.39763778\n  \
mDoubleTapWakeEnabled=false\n  \
mIsVrModeEnabled=false\n  \
mForegroundProfile=0\n  \
mUserId=0\n\
\n\
Attentive timeout: -1 ms\n\
Sleep timeout: -1 ms\n\
Screen off timeout: {timeout} ms\n\
Screen dim duration: 7000 ms\n\
\n\
Wake Locks: size=0\n\
\n\
Suspend Blockers: size=4\n  \
PowerManagerService.WakeLocks: ref count=0\n  \
PowerManagerService.Display: ref count={blockers}\n  \
PowerManagerService.Broadcasts: ref count=0\n  \
PowerManagerService.WirelessChargerDetector: ref count=0\n\
\n\
Display Power: state={display}\n",
        level = b.level,
        interactive = sys.screen_on,
        wls = "0",
        low = b.level < 15,
        last_wake = sys.last_activity_ms,
        sleep_reason = if sys.screen_on {
            "timeout"
        } else {
            "power_button"
        },
        blockers = u8::from(sys.screen_on),
    )
}

/// `dumpsys battery` (BatteryService.dumpInternal of Android 13: no `Dock powered` line,
/// which Android 14 added).
pub fn battery(sys: &SystemState) -> String {
    let b = &sys.battery;
    let voltage = 3_600 + u32::from(b.level) * 6;
    format!(
        "Current Battery Service state:\n  AC powered: {ac}\n  USB powered: {usb}\n  Wireless powered: false\n  Max charging current: {cur}\n  Max charging voltage: {volt}\n  Charge counter: {cc}\n  status: {status}\n  health: {health}\n  present: true\n  level: {level}\n  scale: 100\n  voltage: {voltage}\n  temperature: {temp}\n  technology: Li-poly\n",
        ac = b.plug == Plug::Ac,
        usb = b.plug == Plug::Usb,
        cur = if b.plug == Plug::None { 0 } else { 3_000_000 },
        volt = if b.plug == Plug::None { 0 } else { 5_000_000 },
        cc = u32::from(b.level) * 45_000,
        status = b.status(),
        health = b.health(),
        level = b.level,
        temp = b.temperature_tenths,
    )
}

/// One WindowState.dump block.
fn window_block(i: usize, w: &Win, display: crate::ui::Rect, out: &mut String) {
    let name = window_name(w);
    let _ = writeln!(out, "  Window #{i} {name}:");
    let task = w
        .task
        .map(|t| format!(" rootTaskId={t}"))
        .unwrap_or_default();
    // UserHandle.formatUid: app ids print as u0aNNN, system ones as their number.
    let uid = if w.uid >= 10_000 {
        format!("u0a{}", w.uid - 10_000)
    } else {
        w.uid.to_string()
    };
    let _ = writeln!(
        out,
        "    mDisplayId=0{task} mSession=Session{{{} {}:{uid}}} mClient=android.os.BinderProxy@{}",
        hash_of(&format!("s{}", w.pid)),
        w.pid,
        hash_of(&format!("c{}", w.title)),
    );
    let _ = writeln!(
        out,
        "    mOwnerUid={} showForAllUsers={} package={} appop=NONE",
        w.uid,
        w.package != crate::ui::PDD && w.activity.is_none(),
        w.package
    );
    let _ = writeln!(
        out,
        "    mAttrs={{{} sim={{adjust=pan}} ty={} fmt=TRANSLUCENT\n      fl={}\n      pfl=USE_BLAST\n      bhv=DEFAULT}}",
        w.attrs_size, w.ty, w.flags
    );
    let (fw, fh) = (w.frame.r - w.frame.l, w.frame.b - w.frame.t);
    let _ = writeln!(out, "    Requested w={fw} h={fh} mLayoutSeq=1214");
    if w.kind == WinKind::Ime {
        let _ = writeln!(
            out,
            "    mIsImWindow=true mIsWallpaper=false mIsFloatingLayer=true"
        );
    }
    if w.kind == WinKind::Wallpaper {
        let _ = writeln!(
            out,
            "    mIsImWindow=false mIsWallpaper=true mIsFloatingLayer=false"
        );
    }
    let token = match activity_record(w) {
        Some(ar) => ar,
        None => format!(
            "WindowToken{{{} type={} android.os.BinderProxy@{}}}",
            hash_of(&format!("t{}", w.title)),
            type_number(w.ty),
            hash_of(&format!("b{}", w.title))
        ),
    };
    let _ = write!(out, "    mBaseLayer={} mSubLayer=0", base_layer(w.ty));
    let _ = writeln!(out, "    mToken={token}");
    if let Some(ar) = activity_record(w) {
        let _ = writeln!(out, "    mActivityRecord={ar}");
        let _ = write!(out, "    drawnStateEvaluated=true");
        let _ = writeln!(out, "    mightAffectAllDrawn=true");
    }
    let vis = if w.visible { "0x0" } else { "0x8" };
    let _ = writeln!(
        out,
        "    mViewVisibility={vis} mHaveFrame=true mObscured=false"
    );
    let _ = writeln!(
        out,
        "    mGivenContentInsets=[0,0][0,0] mGivenVisibleInsets=[0,0][0,0]"
    );
    if let Some(t) = w.touch_region.filter(|_| w.visible) {
        let _ = writeln!(out, "    mTouchableInsets=3 mGivenInsetsPending=false");
        let _ = writeln!(
            out,
            "    touchable region=SkRegion(({},{},{},{}))",
            t.l, t.t, t.r, t.b
        );
    }
    let _ = writeln!(out, "    mFullConfiguration={CONFIG}");
    let _ = writeln!(out, "    mLastReportedConfiguration={CONFIG}");
    let _ = writeln!(
        out,
        "    mHasSurface={v} isReadyForDisplay()={v} mWindowRemovalAllowed=false",
        v = w.visible
    );
    let f = rect(w.frame);
    let disp = rect(display);
    let _ = writeln!(
        out,
        "    Frames: parent={disp} display={disp} frame={f} last={f} insetsChanged=false\n     surface=[0,0][0,0]"
    );
    let _ = writeln!(
        out,
        "    WindowStateAnimator{{{} {}}}:",
        hash_of(&format!("a{}", w.title)),
        w.title
    );
    if w.visible {
        let _ = writeln!(
            out,
            "      mSurface=Surface(name={})/@0x{}\n      Surface: shown=true layer=0 alpha=1.0 rect=(0.0,0.0)  transform=(1.0, 0.0, 0.0, 1.0)",
            w.title,
            hash_of(&format!("f{}", w.title))
        );
        let _ = writeln!(
            out,
            "      mDrawState=HAS_DRAWN       mLastHidden=false\n      mEnterAnimationPending=false      mSystemDecorRect=[0,0][0,0]"
        );
    } else {
        let _ = writeln!(
            out,
            "      mDrawState=NO_SURFACE       mLastHidden=true\n      mEnterAnimationPending=false      mSystemDecorRect=[0,0][0,0]"
        );
    }
    let _ = writeln!(
        out,
        "    mForceSeamlesslyRotate=false seamlesslyRotate: pending=null"
    );
    let _ = writeln!(out, "    isOnScreen={}", w.visible);
    let _ = writeln!(out, "    isVisible={}", w.visible);
}

fn type_number(ty: &str) -> u32 {
    match ty {
        "NAVIGATION_BAR_PANEL" => 2024,
        "STATUS_BAR_SUB_PANEL" => 2017,
        "NOTIFICATION_SHADE" => 2040,
        "STATUS_BAR" => 2000,
        "INPUT_METHOD" => 2011,
        "WALLPAPER" => 2013,
        "APPLICATION" => 2,
        _ => 1,
    }
}

fn base_layer(ty: &str) -> u32 {
    match ty {
        "NAVIGATION_BAR_PANEL" => 251_000,
        "STATUS_BAR_SUB_PANEL" => 201_000,
        "NOTIFICATION_SHADE" => 191_000,
        "STATUS_BAR" => 171_000,
        "INPUT_METHOD" => 151_000,
        "WALLPAPER" => 11_000,
        _ => 21_000,
    }
}

/// `dumpsys window windows`.
pub fn windows_section(wins: &[Win]) -> String {
    let mut out = String::from("WINDOW MANAGER WINDOWS (dumpsys window windows)\n");
    // The display: the frame of the bottom-most (full-screen wallpaper) window.
    let display = wins
        .last()
        .map(|w| w.frame)
        .unwrap_or(crate::ui::Rect::new(0, 0, 1080, 2400));
    for (i, w) in wins.iter().enumerate() {
        window_block(i, w, display, &mut out);
    }
    let _ = writeln!(out, "  mGlobalConfiguration={CONFIG}");
    out.push_str("  mHasPermanentDpad=false\n  mTopFocusedDisplayId=0\n");
    let ime_target = wins
        .iter()
        .find(|w| w.visible && w.kind == WinKind::Pdd)
        .or_else(|| focused(wins));
    if let Some(t) = ime_target {
        let n = window_name(t);
        let _ = writeln!(out, "  imeLayeringTarget in display# 0 {n}");
        let _ = writeln!(out, "  imeInputTarget in display# 0 {n}");
        let _ = writeln!(out, "  imeControlTarget in display# 0 {n}");
    }
    out.push_str("  Minimum task size of display#0 220  mBlurEnabled=true\n  mLastDisplayFreezeDuration=0 due to new-config\n  mDisableSecureWindows=false\n  mHighResSnapshotScale=0.8\n  mSnapshotEnabled=true\n");
    out
}

/// `dumpsys window displays` (the focus lines of DisplayContent.dump).
pub fn displays_section(wins: &[Win]) -> String {
    let focus = focused(wins)
        .map(window_name)
        .unwrap_or_else(|| "null".into());
    let app = focused_app(wins)
        .and_then(activity_record)
        .unwrap_or_else(|| "null".into());
    format!(
        "WINDOW MANAGER DISPLAY CONTENTS (dumpsys window displays)\n  Display: mDisplayId=0 rootTasks=3\n    init=1080x2400 440dpi base=1080x2400 440dpi cur=1080x2400 app=1080x2354 rng=1080x1034-2354x2354\n    deferred=false mLayoutNeeded=false mTouchExcludeRegion=SkRegion((0,0,1080,2400))\n\n  mHoldScreenWindow=null\n  mObscuringWindow=null\n  mLastWakeLockHoldingWindow=null\n  mLastWakeLockObscuringWindow=null\n\n  mCurrentFocus={focus}\n  mFocusedApp={app}\n"
    )
}

/// `dumpsys window policy` (PhoneWindowManager.dump, its keyguard part).
pub fn policy_section(sys: &SystemState) -> String {
    let secure = sys.cfg.lock == LockKind::Pin;
    let (screen, interactive) = if sys.screen_on {
        ("SCREEN_STATE_ON", "INTERACTIVE_STATE_AWAKE")
    } else {
        ("SCREEN_STATE_OFF", "INTERACTIVE_STATE_SLEEP")
    };
    let enabled = sys.cfg.lock != LockKind::None;
    format!(
        "WINDOW MANAGER POLICY STATE (dumpsys window policy)\n    mSafeMode=false mSystemReady=true mSystemBooted=true\n    mCameraLensCoverState=LENS_COVER_ABSENT\n    mWakeGestureEnabledSetting=true\n    mSupportAutoRotation=true mOrientationSensorEnabled=false\n    mUiMode=UI_MODE_TYPE_NORMAL mEnableCarDockHomeCapture=true\n    mLidState=LID_ABSENT mLidOpenRotation=-1\n    mHdmiPlugged=false\n    mShortPressOnPowerBehavior=SHORT_PRESS_POWER_GO_TO_SLEEP\n    mAllowLockscreenWhenOnDisplays=false mLockScreenTimeout=0 mLockScreenTimerActive=false\n    mKeyguardDrawComplete=true mWindowManagerDrawComplete=true\n    mKeyguardOccluded=false\n    mPendingKeyguardOccluded=false\n    mKeyguardOccludedChanged=false\n    KeyguardServiceDelegate\n      showing={showing}\n      inputRestricted={showing}\n      occluded=false\n      secure={secure}\n      dreaming=false\n      systemIsReady=true\n      deviceHasKeyguard={enabled}\n      enabled={enabled}\n      offReason=OFF_BECAUSE_OF_USER\n      currentUser=0\n      bootCompleted=true\n      screenState={screen}\n      interactiveState={interactive}\n      KeyguardStateMonitor\n        mIsShowing={showing}\n        mSimSecure=false\n        mInputRestricted={showing}\n        mTrusted=false\n        mCurrentUserId=0\n",
        showing = sys.locked,
    )
}

/// `dumpsys activity activities` (the lines scripts read): the resumed activity, the
/// focused app, and ActivityTaskSupervisor's KeyguardController state
/// (`mKeyguardShowing=`).
pub fn activities_section(sys: &SystemState, wins: &[Win], pdd_activity: &str) -> String {
    // Behind the keyguard nothing is resumed; otherwise the top visible activity.
    let top = wins.iter().find(|w| w.visible && w.activity.is_some());
    let resumed = match (sys.locked, top) {
        (false, Some(w)) => activity_record(w).unwrap_or_else(|| "null".into()),
        _ => "null".into(),
    };
    let focused = focused_app(wins)
        .and_then(activity_record)
        .unwrap_or_else(|| format!("ActivityRecord{{8b2e4f1 u0 {pdd_activity} t42}}"));
    format!(
        "ACTIVITY MANAGER ACTIVITIES (dumpsys activity activities)\nDisplay #0 (activities from top to bottom):\n\n  ResumedActivity: {resumed}\n  mFocusedApp={focused}\n  mResumedActivity: {resumed}\n  KeyguardController:\n    mKeyguardShowing={showing}\n    mAodShowing=false\n    mKeyguardGoingAway=false\n    Occluded=false DismissingKeyguardActivity=null turnScreenOnActivity=false at display=0\n    mDismissalRequested=false\n    mVisibilityTransactionDepth=0\n",
        showing = sys.locked,
    )
}

/// `dumpsys window` with no section: the sections in the full dump's order.
pub fn window_all(sys: &SystemState, wins: &[Win]) -> String {
    let mut out = String::from(
        "WINDOW MANAGER LAST ANR (dumpsys window lastanr)\n  <no ANR has occurred since boot>\n",
    );
    out.push_str(SEP);
    out.push_str(&policy_section(sys));
    out.push_str(SEP);
    out.push_str(&displays_section(wins));
    out.push_str(SEP);
    out.push_str(&windows_section(wins));
    out
}
