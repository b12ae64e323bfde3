//! What the console's templates show, shared by its pages: times in the host's zone
//! ([`Zone`], [`When`]), an outcome with its reason and next step, Chinese first
//! ([`Reason`], read back from the report as sent through [`crate::reasons::of_failure`]),
//! the flow's steps named in Chinese ([`step_zh`]), and the page shell's data
//! ([`Shell`]).
//!
//! **Times.** The store keeps UTC; pages show the console host's local time (the zone of
//! the machine the phones sit beside — the operators' office), each as
//! `<time datetime="UTC">local</time>` so the UTC instant stays in the page. The host's
//! zone, not the browser's: the page reads the same with JavaScript off, and "today"
//! on a phone card is the same day for every viewer.

use chrono::{DateTime, FixedOffset, Local, NaiveTime, TimeZone, Utc};

/// The zone pages show times in.
#[derive(Clone, Copy, Debug, Default)]
pub enum Zone {
    /// The console host's local zone (production).
    #[default]
    Host,
    /// A fixed offset (tests).
    Fixed(FixedOffset),
}

/// A time as a page shows it: the UTC instant (the `datetime` attribute) and its local
/// reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct When {
    /// RFC 3339 UTC, as stored.
    pub utc: String,
    /// `2026-12-02 19:00:05` in the page's zone.
    pub full: String,
    /// `19:00:05`.
    pub short: String,
}

impl Zone {
    fn fmt(&self, t: DateTime<Utc>, pattern: &str) -> String {
        match self {
            Zone::Host => t.with_timezone(&Local).format(pattern).to_string(),
            Zone::Fixed(o) => t.with_timezone(o).format(pattern).to_string(),
        }
    }

    /// `t` as a page shows it.
    pub fn when(&self, t: DateTime<Utc>) -> When {
        When {
            utc: cmautobuy_contract::time::format_utc(t),
            full: self.fmt(t, "%Y-%m-%d %H:%M:%S"),
            short: self.fmt(t, "%H:%M:%S"),
        }
    }

    /// A stored RFC 3339 text as a page shows it; text that does not parse is shown as
    /// it is.
    pub fn when_text(&self, s: &str) -> When {
        match cmautobuy_contract::time::parse_rfc3339(s) {
            Some(t) => self.when(t.with_timezone(&Utc)),
            None => When {
                utc: s.to_string(),
                full: s.to_string(),
                short: s.to_string(),
            },
        }
    }

    /// The start of `now`'s local day, in UTC (the cards' "today").
    pub fn day_start(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        fn start<Z: TimeZone>(z: &Z, now: DateTime<Utc>) -> DateTime<Utc> {
            let local = now.with_timezone(z);
            z.from_local_datetime(&local.date_naive().and_time(NaiveTime::MIN))
                .earliest()
                .map(|t| t.with_timezone(&Utc))
                // A zone that skips midnight: the day's first hour is close enough.
                .unwrap_or(now - chrono::Duration::hours(24))
        }
        match self {
            Zone::Host => start(&Local, now),
            Zone::Fixed(o) => start(o, now),
        }
    }
}

/// What an outcome means: its code, the reason and the next step in Chinese and in
/// English.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reason {
    pub code: String,
    pub zh: String,
    pub en: String,
    pub next_zh: String,
    pub next_en: String,
}

/// The reason of an outcome (`failed:CODE`, `manual_review:CODE`, `retry_wait:CODE`; none
/// for `succeeded`), from the failure as it was reported (`report`: its JSON text) when
/// there is one, else from the code alone.
pub fn outcome_reason(outcome: Option<&str>, report: Option<&str>) -> Option<Reason> {
    let report: Option<serde_json::Value> = report.and_then(|r| serde_json::from_str(r).ok());
    let code = report
        .as_ref()
        .and_then(|r| r["error"]["code"].as_str().map(str::to_string))
        .or_else(|| {
            outcome
                .and_then(|o| o.split_once(':'))
                .map(|(_, c)| c.to_string())
        })
        .filter(|c| !c.is_empty())?;
    let none = serde_json::Value::Null;
    let text = crate::reasons::of_failure(
        &code,
        report.as_ref().map(|r| &r["diagnostics"]).unwrap_or(&none),
    );
    Some(Reason {
        code,
        zh: text.zh,
        en: text.en,
        next_zh: text.next_zh,
        next_en: text.next_en,
    })
}

/// The CSS class of an outcome or a local task state.
pub fn outcome_class(outcome: &str) -> &'static str {
    let status = outcome.split(':').next().unwrap_or_default();
    match status {
        "succeeded" => "ok",
        "manual_review" => "warn",
        "failed" => "bad",
        _ => "warn",
    }
}

/// A flow step's name in Chinese (the name itself when unknown).
pub fn step_zh(step: &str) -> &str {
    match step {
        "open_goods" => "打开商品",
        "dismiss_popup" => "关闭弹窗",
        "check_goods" => "核对商品",
        "open_sku_sheet" => "打开规格",
        "read_sku_sheet" => "读取规格",
        "select_color" => "选择颜色",
        "select_size" => "选择尺码",
        "resolve_spec" => "规格解析",
        "set_quantity" => "设置数量",
        "check_address" => "核对地址",
        "confirm_total" => "核对总价",
        "submit_order" => "提交订单",
        "leave_payment" => "离开付款页",
        "reconcile_order" => "核对订单",
        "report" => "上报",
        "recover" => "恢复核对",
        "prepare_device" => "准备手机",
        "dismiss_overlay" => "关闭遮挡",
        "order_census" => "清点待付款",
        other => other,
    }
}

/// The console's tabs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tab {
    Status,
    Settings,
    History,
    /// A page outside the tabs (login, not found).
    None,
}

/// One tab of the navigation.
#[derive(Clone, Debug)]
pub struct NavTab {
    pub href: &'static str,
    pub zh: &'static str,
    pub en: &'static str,
    pub current: bool,
}

/// The page shell's data (`templates/console/base.html`): the title (plain text), the
/// tabs, whether the page follows `/events`.
#[derive(Clone, Debug)]
pub struct Shell {
    pub title: String,
    pub tabs: Vec<NavTab>,
    pub live: bool,
}

impl Shell {
    pub fn new(tab: Tab, title: impl Into<String>, live: bool) -> Shell {
        const TABS: [(Tab, &str, &str, &str); 3] = [
            (Tab::Status, "/", "状态", "Status"),
            (Tab::Settings, "/settings", "设置", "Settings"),
            (Tab::History, "/history", "历史", "History"),
        ];
        Shell {
            title: title.into(),
            tabs: TABS
                .iter()
                .map(|(t, href, zh, en)| NavTab {
                    href,
                    zh,
                    en,
                    current: *t == tab,
                })
                .collect(),
            live,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_show_in_the_zone_and_keep_the_utc_instant() {
        let z = Zone::Fixed(FixedOffset::east_opt(8 * 3600).unwrap());
        let w = z.when_text("2026-12-02T03:00:05.123Z");
        assert_eq!(w.utc, "2026-12-02T03:00:05Z");
        assert_eq!(w.full, "2026-12-02 11:00:05");
        assert_eq!(w.short, "11:00:05");
        assert_eq!(z.when_text("not a time").full, "not a time");
        // The local day of 2026-12-02T20:00Z at +08:00 began at 2026-12-02T16:00Z.
        let now = cmautobuy_contract::time::parse_rfc3339("2026-12-02T20:00:00Z")
            .unwrap()
            .with_timezone(&Utc);
        assert_eq!(
            cmautobuy_contract::time::format_utc(z.day_start(now)),
            "2026-12-02T16:00:00Z"
        );
    }

    #[test]
    fn outcomes_read_their_reason_from_the_report_else_the_code() {
        assert_eq!(outcome_reason(Some("succeeded"), None), None);
        let r = outcome_reason(Some("manual_review:RISK_VERIFICATION"), None).unwrap();
        assert_eq!(r.code, "RISK_VERIFICATION");
        assert!(r.zh.contains("安全验证"), "{}", r.zh);
        let report = r#"{"status":"failed","error":{"code":"PRICE_LIMIT_EXCEEDED"},
            "diagnostics":{"confirmed_total_cent":11800,"max_price_cent":9999}}"#;
        let r = outcome_reason(Some("failed:PRICE_LIMIT_EXCEEDED"), Some(report)).unwrap();
        assert_eq!(r.zh, "订单总价 ¥118.00 超过上限 ¥99.99");
        assert_eq!(outcome_class("failed:X"), "bad");
        assert_eq!(outcome_class("succeeded"), "ok");
        assert_eq!(step_zh("confirm_total"), "核对总价");
        assert_eq!(step_zh("new_step"), "new_step");
    }
}
