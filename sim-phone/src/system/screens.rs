//! The accessibility trees of what the system shows (drawn like MIUI 14 / Android 13):
//! the keyguard and its PIN pad, the pulled-down shade, a heads-up card, the 电量不足
//! dialog, the app chooser ("使用以下方式打开"), the keyboard, and the foreign apps a
//! stray tap can open. `uiautomator dump` shows one of these only when it is the active
//! window (the keyboard and a heads-up never are).

use chrono::{DateTime, Datelike, FixedOffset, Timelike};

use crate::ui::{Node, Rect};

use super::state::{heads_up_rect, Chooser, ChooserTarget, ForeignApp, HeadsUp, WechatPay};
use super::windows::{ANDROID, IME_HEIGHT, IME_PACKAGE, SYSTEMUI};

fn sys_text(b: Rect, t: &str, rid: &str) -> Node {
    let mut n = Node::text(b, t).package(SYSTEMUI);
    if !rid.is_empty() {
        n.rid = format!("com.android.systemui:id/{rid}");
    }
    n
}

fn weekday(now: &DateTime<FixedOffset>) -> &'static str {
    [
        "星期一",
        "星期二",
        "星期三",
        "星期四",
        "星期五",
        "星期六",
        "星期日",
    ][now.weekday().num_days_from_monday() as usize]
}

/// The lock screen (滑动解锁 or the first screen of a PIN lock).
pub fn keyguard(now: &DateTime<FixedOffset>, w: i32, h: i32) -> Node {
    let clock = format!("{:02}:{:02}", now.hour(), now.minute());
    let date = format!("{}月{}日 {}", now.month(), now.day(), weekday(now));
    let mut root = Node::frame(Rect::new(0, 0, w, h)).package(SYSTEMUI);
    root.rid = "com.android.systemui:id/notification_container_parent".into();
    let mut kg = Node::frame(Rect::new(0, 0, w, h)).package(SYSTEMUI);
    kg.rid = "com.android.systemui:id/keyguard_root_view".into();
    let mut clock_n = sys_text(Rect::new(90, 300, 600, 520), &clock, "big_time");
    clock_n.drawing_order = Some(1);
    let date_n = sys_text(Rect::new(90, 530, 700, 600), &date, "date");
    let hint = sys_text(
        Rect::new(360, h - 300, 720, h - 240),
        "上滑解锁",
        "keyguard_indication_text",
    );
    let cam = Node::image(Rect::new(w - 200, h - 260, w - 60, h - 120))
        .package(SYSTEMUI)
        .desc("相机");
    root.child(kg.child(clock_n).child(date_n).child(hint).child(cam))
}

/// The PIN pad (bouncer) over the keyguard.
pub fn bouncer(w: i32, h: i32) -> Node {
    let mut root = Node::frame(Rect::new(0, 0, w, h)).package(SYSTEMUI);
    root.rid = "com.android.systemui:id/notification_container_parent".into();
    let mut pin = Node::linear(Rect::new(0, 400, w, h - 200)).package(SYSTEMUI);
    pin.rid = "com.android.systemui:id/keyguard_pin_view".into();
    pin = pin.child(sys_text(
        Rect::new(390, 480, 690, 550),
        "输入锁屏密码",
        "keyguard_message_area",
    ));
    let mut entry = Node::view(Rect::new(240, 600, 840, 700)).package(SYSTEMUI);
    entry.rid = "com.android.systemui:id/pinEntry".into();
    entry.focusable = true;
    pin = pin.child(entry);
    let keys = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "", "0", ""];
    for (i, k) in keys.iter().enumerate() {
        if k.is_empty() {
            continue;
        }
        let (col, row) = ((i % 3) as i32, (i / 3) as i32);
        let b = Rect::new(
            150 + col * 270,
            800 + row * 240,
            390 + col * 270,
            1000 + row * 240,
        );
        let mut key = Node::group(b).package(SYSTEMUI).desc(*k).clickable();
        key.rid = format!("com.android.systemui:id/key{k}");
        pin = pin.child(key.child(sys_text(b, k, "digit_text")));
    }
    let mut emergency = Node::new(
        "android.widget.Button",
        Rect::new(90, h - 320, 400, h - 230),
    )
    .package(SYSTEMUI)
    .clickable();
    emergency.text = "紧急呼叫".into();
    emergency.rid = "com.android.systemui:id/emergency_call_button".into();
    root.child(pin).child(emergency)
}

/// A heads-up card (drawn in screenshots; never in a PDD dump).
pub fn heads_up(n: &HeadsUp) -> Node {
    let r = heads_up_rect();
    let mut row = Node::frame(r).package(SYSTEMUI).clickable();
    row.rid = "com.android.systemui:id/expandableNotificationRow".into();
    row.child(sys_text(
        Rect::new(r.l + 170, r.t + 30, r.l + 600, r.t + 85),
        &n.app_label,
        "app_name_text",
    ))
    .child(sys_text(
        Rect::new(r.l + 170, r.t + 100, r.r - 40, r.t + 170),
        &n.title,
        "title",
    ))
    .child(sys_text(
        Rect::new(r.l + 170, r.t + 180, r.r - 40, r.t + 250),
        &n.text,
        "text",
    ))
}

/// The pulled-down shade (MIUI 通知中心), with the pinned notification among its rows.
pub fn shade(now: &DateTime<FixedOffset>, w: i32, h: i32, n: Option<&HeadsUp>) -> Node {
    let mut root = Node::frame(Rect::new(0, 0, w, h)).package(SYSTEMUI);
    root.rid = "com.android.systemui:id/notification_panel".into();
    let clock = format!("{:02}:{:02}", now.hour(), now.minute());
    let date = format!("{}月{}日 {}", now.month(), now.day(), weekday(now));
    root = root
        .child(sys_text(Rect::new(60, 120, 380, 260), &clock, "big_time"))
        .child(sys_text(Rect::new(60, 270, 500, 330), &date, "date_time"));
    let mut list = Node::new("android.widget.ScrollView", Rect::new(0, 380, w, h - 300))
        .package(SYSTEMUI)
        .scrollable();
    list.rid = "com.android.systemui:id/notification_stack_scroller".into();
    let item = n
        .cloned()
        .unwrap_or_else(|| HeadsUp::wechat("文件传输助手", "[图片]"));
    let mut card = heads_up(&item).translate(0, 300);
    card.rid = "com.android.systemui:id/expandableNotificationRow".into();
    list = list.child(card);
    let mut clear = Node::image(Rect::new(w / 2 - 80, h - 260, w / 2 + 80, h - 120))
        .package(SYSTEMUI)
        .desc("清除所有通知")
        .clickable();
    clear.rid = "com.android.systemui:id/clear_all".into();
    root.child(list).child(clear)
}

/// MIUI's 电量不足 dialog (a SystemUIDialog).
pub fn low_battery(level: u8, frame: Rect) -> Node {
    let f = |b: Rect| Node::frame(b).package(SYSTEMUI);
    let t = |b: Rect, s: &str, rid: &str| {
        let mut n = Node::text(b, s).package(SYSTEMUI);
        n.rid = rid.into();
        n
    };
    let btn = |b: Rect, s: &str, rid: &str| {
        let mut n = Node::new("android.widget.Button", b)
            .package(SYSTEMUI)
            .clickable();
        n.text = s.into();
        n.rid = rid.into();
        n
    };
    let Rect { l, t: top, r, b } = frame;
    let mut panel = f(frame);
    panel.rid = "android:id/content".into();
    panel
        .child(t(
            Rect::new(l + 60, top + 60, r - 60, top + 140),
            "电量不足",
            "android:id/alertTitle",
        ))
        .child(t(
            Rect::new(l + 60, top + 180, r - 60, top + 330),
            &format!("剩余电量{level}%，请及时充电。是否开启省电模式？"),
            "android:id/message",
        ))
        .child(btn(
            Rect::new(l + 60, b - 200, (l + r) / 2 - 20, b - 60),
            "关闭",
            "android:id/button2",
        ))
        .child(btn(
            Rect::new((l + r) / 2 + 20, b - 200, r - 60, b - 60),
            "省电模式",
            "android:id/button1",
        ))
}

/// The geometry of the chooser's rows and buttons: (PDD row, browser row, 仅此一次, 始终).
pub fn chooser_rects(w: i32, h: i32) -> (Rect, Rect, Rect, Rect) {
    let top = h - 900;
    (
        Rect::new(0, top + 200, w / 2, top + 520),
        Rect::new(w / 2, top + 200, w, top + 520),
        Rect::new(60, h - 260, w / 2 - 30, h - 120),
        Rect::new(w / 2 + 30, h - 260, w - 60, h - 120),
    )
}

/// The content area of the chooser's sheet (a touch above it dismisses the chooser).
pub fn chooser_sheet(w: i32, h: i32) -> Rect {
    Rect::new(0, h - 900, w, h)
}

/// ResolverActivity ("使用以下方式打开", 仅此一次 / 始终), package `android`.
pub fn chooser(c: &Chooser, w: i32, h: i32) -> Node {
    let an = |n: Node| n.package(ANDROID);
    let (pdd, browser, once, always) = chooser_rects(w, h);
    let mut root = an(Node::frame(Rect::new(0, 0, w, h)));
    let mut drawer = an(Node::new(
        "android.widget.LinearLayout",
        chooser_sheet(w, h),
    ));
    drawer.rid = "android:id/contentPanel".into();
    let mut title = an(Node::text(
        Rect::new(60, h - 860, w - 60, h - 780),
        "使用以下方式打开",
    ));
    title.rid = "android:id/title".into();
    let row = |b: Rect, label: &str, target: ChooserTarget| {
        let mut n = an(Node::linear(b)).clickable();
        n.selected = c.selected == Some(target);
        let mut icon = an(Node::image(Rect::new(
            b.l + (b.r - b.l) / 2 - 80,
            b.t + 30,
            b.l + (b.r - b.l) / 2 + 80,
            b.t + 190,
        )));
        icon.rid = "android:id/icon".into();
        let mut text = an(Node::text(
            Rect::new(b.l + 40, b.t + 210, b.r - 40, b.t + 280),
            label,
        ));
        text.rid = "android:id/text1".into();
        n.child(icon).child(text)
    };
    let mut list = an(Node::new(
        "android.widget.GridView",
        Rect::new(0, pdd.t, w, pdd.b),
    ));
    list.rid = "android:id/resolver_list".into();
    list = list
        .child(row(pdd, "拼多多", ChooserTarget::Pdd))
        .child(row(browser, "浏览器", ChooserTarget::Browser));
    let button = |b: Rect, label: &str, rid: &str| {
        let mut n = an(Node::new("android.widget.Button", b))
            .clickable()
            .enabled(c.selected.is_some());
        n.text = label.into();
        n.rid = rid.into();
        n
    };
    drawer = drawer
        .child(title)
        .child(list)
        .child(button(once, "仅此一次", "android:id/button_once"))
        .child(button(always, "始终", "android:id/button_always"));
    root = root.child(drawer);
    root
}

/// The keyboard (drawn in screenshots; never in a dump: it is not the active window).
pub fn keyboard(w: i32, h: i32) -> Node {
    let mut root = Node::frame(Rect::new(0, h - IME_HEIGHT, w, h)).package(IME_PACKAGE);
    for row in 0..4 {
        for col in 0..3 {
            let b = Rect::new(
                20 + col * 350,
                h - IME_HEIGHT + 140 + row * 180,
                350 + col * 350,
                h - IME_HEIGHT + 300 + row * 180,
            );
            root = root.child(Node::view(b).package(IME_PACKAGE).clickable());
        }
    }
    root
}

/// A foreign app in front (what a tap on a notification or the chooser opens, or WeChat's
/// pay sheet after a `payment_handoff` order).
pub fn foreign(
    app: ForeignApp,
    url: Option<&str>,
    pay: Option<&WechatPay>,
    w: i32,
    h: i32,
) -> Node {
    let pkg = app.package();
    if let (ForeignApp::WeChatPay, Some(pay)) = (app, pay) {
        return wechat_pay_sheet(pay, w, h);
    }
    let mut root = Node::frame(Rect::new(0, 0, w, h)).package(pkg);
    let title = match app {
        ForeignApp::WeChat | ForeignApp::WeChatPay => "微信".to_string(),
        ForeignApp::Browser => url.unwrap_or("").to_string(),
    };
    let mut t = Node::text(Rect::new(60, 120, w - 60, 220), title).package(pkg);
    t.rid = match app {
        ForeignApp::WeChat | ForeignApp::WeChatPay => "com.tencent.mm:id/title".into(),
        ForeignApp::Browser => "com.android.browser:id/url".into(),
    };
    root = root.child(t);
    root
}

/// The action of WeChat's 立即支付 (records a payment attempt on the order).
pub const WECHAT_PAY_ACTION: &str = "wechat_pay";
/// The action of the pay sheet's close icon (as BACK: the user cancels in WeChat).
pub const WECHAT_CLOSE_ACTION: &str = "wechat_close";

/// WeChat's pay sheet for a PDD order: the window dimmed above a bottom sheet with its
/// close icon, 微信支付, 支付给拼多多, the amount with two decimals, the payment method row
/// and the 立即支付 button; package `com.tencent.mm`.
pub fn wechat_pay_sheet(pay: &WechatPay, w: i32, h: i32) -> Node {
    use crate::variants::{
        yuan_two_decimals, WECHAT_PAY_BUTTON, WECHAT_PAY_PAYEE, WECHAT_PAY_TITLE,
    };
    let mm = |n: Node| n.package("com.tencent.mm");
    let top = h - 1300;
    let mut content = mm(Node::frame(Rect::new(0, 0, w, h)));
    content.rid = "android:id/content".into();
    let close = mm(Node::image(Rect::new(40, top + 40, 130, top + 130)))
        .desc("关闭")
        .tap(WECHAT_CLOSE_ACTION);
    let title = mm(Node::text(
        Rect::new(w / 2 - 120, top + 55, w / 2 + 120, top + 115),
        WECHAT_PAY_TITLE,
    ));
    let payee = mm(Node::text(
        Rect::new(w / 2 - 150, top + 230, w / 2 + 150, top + 290),
        WECHAT_PAY_PAYEE,
    ));
    let amount = yuan_two_decimals(pay.total_cent);
    let aw = amount.chars().count() as i32 * 60;
    let amount = mm(Node::text(
        Rect::new(w / 2 - aw / 2, top + 320, w / 2 + aw / 2, top + 460),
        amount,
    ));
    let method = mm(Node::linear(Rect::new(40, top + 560, w - 40, top + 680)))
        .clickable()
        .child(mm(Node::text(
            Rect::new(70, top + 590, 310, top + 650),
            "支付方式",
        )))
        .child(mm(Node::text(
            Rect::new(w - 250, top + 590, w - 70, top + 650),
            "零钱",
        )));
    let mut button = mm(Node::new(
        "android.widget.Button",
        Rect::new(90, h - 300, w - 90, h - 160),
    ))
    .tap(WECHAT_PAY_ACTION);
    button.text = WECHAT_PAY_BUTTON.into();
    let sheet = mm(Node::linear(Rect::new(0, top, w, h)))
        .child(close)
        .child(title)
        .child(payee)
        .child(amount)
        .child(method)
        .child(button);
    mm(Node::frame(Rect::new(0, 0, w, h))).child(
        content
            .child(mm(Node::view(Rect::new(0, 0, w, top))))
            .child(sheet),
    )
}
