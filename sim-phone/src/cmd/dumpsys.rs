//! `dumpsys window [windows|displays|policy]`, `dumpsys power`, `dumpsys battery` in the
//! formats of Android 13 (`crate::system::format`), `dumpsys activity` (`mResumedActivity`)
//! `dumpsys package com.xunmeng.pinduoduo` (`versionCode` / `versionName` of the
//! installed PDD), and `dumpsys activity top`: the
//! foreground task's activity as a real phone prints it — on a goods page (and its sheet)
//! with the page's fragment arguments and WebView carrying the **displayed** goods' id in
//! a URL-encoded `url` and an escaped-JSON `props` (field notes §3a); on every other page
//! nothing of the kind.

use crate::device::{Device, Exec};
use crate::system::format;

pub(crate) fn run(d: &mut Device, args: &[&str], _: &[u8], e: &mut Exec) -> u64 {
    let act = d.focus_activity().to_string();
    let act = act.as_str();
    let text = match (args.first().copied(), args.get(1).copied()) {
        (Some("window"), sub) => {
            let wins = d.system_windows();
            match sub {
                Some("windows") => format::windows_section(&wins),
                Some("displays") => format::displays_section(&wins),
                Some("policy") => format::policy_section(&d.sys),
                Some("-a") | None => format::window_all(&d.sys, &wins),
                Some(_) => String::new(),
            }
        }
        (Some("power"), _) => format::power(&d.sys, d.counters.device_time_ms),
        (Some("battery"), _) => format::battery(&d.sys),
        (Some("activity"), Some("top")) => {
            e.stdout = match d.replay().map(|p| p.screen().activity_top.clone()) {
                Some(Some(recorded)) => recorded,
                Some(None) => activity_top(act, None),
                None => activity_top(act, d.app.displayed_goods_id()),
            }
            .into_bytes();
            return 180;
        }
        (Some("package"), Some(name)) => {
            if name == crate::device::PDD_PACKAGE {
                let v = d.app.pdd_version();
                e.stdout = package_dump(name, &v.name, v.code).into_bytes();
            }
            return 260;
        }
        (Some("activity"), _) => {
            let wins = d.system_windows();
            format::activities_section(&d.sys, &wins, act)
        }
        _ => String::new(),
    };
    e.stdout = text.into_bytes();
    120
}

/// `dumpsys package NAME` of an installed app, in the lines Android prints (abridged:
/// the permission and dexopt sections are left out); `versionCode` and `versionName`
/// are where scripts grep for them.
fn package_dump(name: &str, version_name: &str, version_code: u64) -> String {
    format!(
        "Activity Resolver Table:\n  Non-Data Actions:\n      android.intent.action.MAIN:\n        8c2f1a0 {name}/.ui.activity.MainFrameActivity filter 5d3e2b1\n\n\
Packages:\n  Package [{name}] (a7d31c9):\n    userId=10234\n    pkg=Package{{4b0e8f2 {name}}}\n    codePath=/data/app/~~Qm3xT0b1n4VfJwKz8pLr2A==/{name}-Yk7sH2dWcR9uE1nA5fGh3Q==\n    resourcePath=/data/app/~~Qm3xT0b1n4VfJwKz8pLr2A==/{name}-Yk7sH2dWcR9uE1nA5fGh3Q==\n    legacyNativeLibraryDir=/data/app/~~Qm3xT0b1n4VfJwKz8pLr2A==/{name}-Yk7sH2dWcR9uE1nA5fGh3Q==/lib\n    primaryCpuAbi=arm64-v8a\n    secondaryCpuAbi=null\n    versionCode={version_code} minSdk=21 targetSdk=30\n    versionName={version_name}\n    splits=[base]\n    apkSigningVersion=2\n    applicationInfo=ApplicationInfo{{6e1f0a3 {name}}}\n    flags=[ HAS_CODE ALLOW_CLEAR_USER_DATA LARGE_HEAP ]\n    timeStamp=2026-11-29 03:12:45\n    firstInstallTime=2026-03-02 10:41:07\n    lastUpdateTime=2026-11-29 03:12:47\n    installerPackageName=com.xiaomi.market\n    User 0: ceDataInode=409721 installed=true hidden=false suspended=false distractionFlags=0 stopped=false notLaunched=false enabled=0 instant=false virtual=false\n"
    )
}

/// `com.xunmeng.pinduoduo/com.xunmeng.pinduoduo.activity.NewPageActivity` →
/// `com.xunmeng.pinduoduo/.activity.NewPageActivity`, as `dumpsys` abbreviates it.
fn short_component(act: &str) -> String {
    match act.split_once('/') {
        Some((pkg, class)) => match class.strip_prefix(pkg) {
            Some(rest) if rest.starts_with('.') => format!("{pkg}/{rest}"),
            _ => act.to_string(),
        },
        None => act.to_string(),
    }
}

/// The text of `dumpsys activity top` for the foreground activity `act`.
fn activity_top(act: &str, goods_id: Option<&str>) -> String {
    let (pkg, uid, task, pid) = if act.starts_with("com.miui.home/") {
        ("com.miui.home", 10081, 1, 2345)
    } else {
        ("com.xunmeng.pinduoduo", 10234, 42, 12345)
    };
    let short = short_component(act);
    let simple = act.rsplit('.').next().unwrap_or(act);
    let mut out = format!(
        "TASK {uid}:{pkg} id={task} userId=0\n  ACTIVITY {short} 8b2e4f1 pid={pid}\n    Local FragmentActivity 3f0c1d State:\n      mResumed=true mStopped=false mFinished=false\n      mIsChangingConfigurations=false\n      mCurrentConfig={{1.0 460mcc1mnc [zh_CN_#Hans] ldltr sw392dp w392dp h872dp 440dpi nrml long port finish 1 ui=normal night=no}}\n      mLoadersStarted=true\n"
    );
    let web = goods_id.map(|id| {
        let thumb = format!("https://img.pddpic.com/mms-material-img/2026-11-30/{id}.jpeg");
        let enc = thumb.replace(':', "%3A").replace('/', "%2F");
        let url = format!(
            "goods.html?thumb_url={enc}&goods_id={id}&page_from=35&refer_page_name=index&refer_page_id=10002_1764489730000_0123456789"
        );
        let props = format!(
            "{{\\\"thumb_url\\\":\\\"{thumb}\\\",\\\"goods_id\\\":\\\"{id}\\\",\\\"page_from\\\":\\\"35\\\",\\\"refer_page_name\\\":\\\"index\\\"}}"
        );
        (url, props)
    });
    if let Some((url, props)) = &web {
        out.push_str(&format!(
            "    Active Fragments:\n      GoodsDetailFragment{{c41d2e7}} (5b8e0a1c-3f2d-4e61-9a0b-7c1d2e3f4a5b id=0x7f0906d8)\n        mFragmentId=#7f0906d8 mContainerId=#7f0906d8 mTag=null\n        mState=7 mWho=5b8e0a1c-3f2d-4e61-9a0b-7c1d2e3f4a5b mBackStackNesting=0\n        mAdded=true mRemoving=false mFromLayout=false mInLayout=false\n        mHidden=false mDetached=false mMenuVisible=true mHasMenu=false\n        mArguments=Bundle[{{props=ForwardProps{{url='{url}', type='pdd_goods_detail', props='{props}'}}}}]\n"
        ));
    }
    out.push_str(&format!(
        "    View Hierarchy:\n      DecorView@4f1a2b3[{simple}]\n        android.widget.LinearLayout{{9c0d1e2 V.E...... ........ 0,0-1080,2400}}\n          android.widget.FrameLayout{{a3b4c5d V.E...... ........ 0,95-1080,2354 #1020002 android:id/content}}\n"
    ));
    if let Some((url, props)) = &web {
        out.push_str(&format!(
            "            com.xunmeng.pinduoduo.fastjs.FastJsWebView{{e6f7a8b VFEDHVC.. ........ 0,0-1080,2259 #7f0913a2 app:id/pdd}} url=https://mobile.yangkeduo.com/{url} props={props}\n"
        ));
    }
    out
}
