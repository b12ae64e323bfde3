//! The notifier's rules, sans-IO: when the daily summary is due ([`SummaryAt`]), when a
//! pause has lasted too long or successes stopped, and the [`Message`] each event
//! becomes. Inputs are store rows and `now`; nothing here reads a clock or the store.

use crate::alert::AlertKind;
use chrono::{DateTime, Duration as ChronoDuration, FixedOffset, NaiveTime, TimeZone, Utc};
use serde_json::{json, Value};
use std::time::Duration;

use super::message::{Message, Origin};
use crate::store::{Alert, DevicePause, OutboxItem, PeriodReport};

/// Event kinds that are not operator alerts.
pub const KIND_MANUAL_REVIEW: &str = "manual_review";
pub const KIND_PARKED: &str = "outbox_parked";
pub const KIND_DEVICE_PAUSED: &str = "device_paused";
pub const KIND_NO_SUCCESS: &str = "no_success";
pub const KIND_SUMMARY: &str = "daily_summary";
/// The category of every operator alert (any alert kind).
pub const CATEGORY_ALERT: &str = "alert";

/// The time of day the daily summary goes out, at a fixed UTC offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SummaryAt {
    pub time: NaiveTime,
    pub offset: FixedOffset,
}

impl SummaryAt {
    /// `HH:MM` (UTC) or `HH:MM±HH:MM`, e.g. `09:00+08:00`.
    pub fn parse(s: &str) -> Result<SummaryAt, String> {
        let s = s.trim();
        let bad = || format!("{s:?} is not HH:MM or HH:MM+HH:MM (e.g. 09:00+08:00)");
        let (time, offset) = match s.find(['+', '-']) {
            Some(i) => (&s[..i], &s[i..]),
            None => (s, "+00:00"),
        };
        let time = NaiveTime::parse_from_str(time, "%H:%M").map_err(|_| bad())?;
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let (h, m) = offset[1..].split_once(':').ok_or_else(bad)?;
        let (h, m): (i32, i32) = (h.parse().map_err(|_| bad())?, m.parse().map_err(|_| bad())?);
        if !(0..=14).contains(&h) || !(0..60).contains(&m) {
            return Err(bad());
        }
        let offset = FixedOffset::east_opt(sign * (h * 3600 + m * 60)).ok_or_else(bad)?;
        Ok(SummaryAt { time, offset })
    }

    /// The latest scheduled instant at or before `now`.
    pub fn latest(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        let local = now.with_timezone(&self.offset);
        let today = self
            .offset
            .from_local_datetime(&local.date_naive().and_time(self.time))
            .single()
            .map(|t| t.with_timezone(&Utc))
            .unwrap_or(now);
        if today <= now {
            today
        } else {
            today - ChronoDuration::days(1)
        }
    }
}

/// What to do about the daily summary now, given the end of the last period summarised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SummaryStep {
    /// Nothing due.
    Wait,
    /// First run: remember this instant, send nothing (no summary of a day this client
    /// did not watch).
    Start(DateTime<Utc>),
    /// Send the summary of `[from, to)` and remember `to`. After downtime only the
    /// latest period is sent.
    Send {
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
}

pub fn summary_step(
    at: &SummaryAt,
    last: Option<DateTime<Utc>>,
    now: DateTime<Utc>,
) -> SummaryStep {
    let due = at.latest(now);
    match last {
        None => SummaryStep::Start(due),
        Some(l) if due > l => SummaryStep::Send {
            from: due - ChronoDuration::days(1),
            to: due,
        },
        Some(_) => SummaryStep::Wait,
    }
}

fn dur(d: Duration) -> ChronoDuration {
    ChronoDuration::from_std(d).unwrap_or(ChronoDuration::MAX)
}

fn mins(d: Duration) -> u64 {
    d.as_secs() / 60
}

/// A pause that has lasted `after` or longer: its subject (the pause's start).
pub fn paused_too_long(
    pause: &DevicePause,
    now: DateTime<Utc>,
    after: Duration,
) -> Option<DateTime<Utc>> {
    let since = DateTime::parse_from_rfc3339(&pause.since)
        .ok()?
        .with_timezone(&Utc);
    (now - since >= dur(after)).then_some(since)
}

/// No success for `window` while tasks were claimed: the subject (the last success, or
/// `never`). Needs the notifier to have watched for `window` itself.
pub fn no_success(
    watching_since: DateTime<Utc>,
    now: DateTime<Utc>,
    window: Duration,
    claimed_in_window: i64,
    last_success: Option<&str>,
) -> Option<String> {
    let cut = now - dur(window);
    if watching_since > cut || claimed_in_window == 0 {
        return None;
    }
    match last_success {
        None => Some("never".into()),
        Some(l) => {
            let at = DateTime::parse_from_rfc3339(l).ok()?.with_timezone(&Utc);
            (at < cut).then(|| l.to_string())
        }
    }
}

fn message(
    (kind, category): (&str, &str),
    subject: &str,
    title: String,
    text: String,
    at: &str,
    client: &Origin,
    details: Value,
) -> Message {
    Message {
        kind: kind.into(),
        category: category.into(),
        subject: subject.into(),
        title,
        text,
        at: at.into(),
        client: client.clone(),
        details,
    }
}

/// An operator alert of any kind: its title, the message, what it does to the work and
/// the next step, from the one table ([`AlertKind::text`], [`AlertKind::effect`]).
pub fn alert_message(a: &Alert, client: &Origin) -> Message {
    let t = a.kind.text();
    let (effect_zh, effect_en) = a.kind.effect();
    let task = a
        .remote_task_id
        .as_deref()
        .map(|t| format!("任务 task {t}: "))
        .unwrap_or_default();
    // One alert per PDD version: each is its own subject, so a new version's alert is
    // not taken for a repeat of the last one's.
    let own_subject = format!("alert {}", a.id);
    let subject = match (a.kind, a.remote_task_id.as_deref()) {
        (AlertKind::PddVersionUnproven, _) => own_subject.as_str(),
        (_, t) => t.unwrap_or(""),
    };
    let next = |s: &str| s.replace("ack N", &format!("ack {}", a.id));
    message(
        (a.kind.as_str(), CATEGORY_ALERT),
        subject,
        format!("{} / {}", t.zh, t.en),
        format!(
            "{task}{}\n{effect_zh} / {effect_en}\n下一步：{}\nNext: {}",
            a.message,
            next(&t.next_zh),
            next(&t.next_en)
        ),
        &a.raised_at,
        client,
        json!({"alert_id": a.id, "alert_kind": a.kind.as_str(), "task_id": a.remote_task_id,
               "message": a.message, "blocks_claims": a.kind.blocks_claims(),
               "next_zh": next(&t.next_zh), "next_en": next(&t.next_en)}),
    )
}

/// A `manual_review` outcome written to the outbox.
pub fn manual_review_message(item: &OutboxItem, client: &Origin) -> Message {
    let body: Value = serde_json::from_slice(&item.body).unwrap_or(Value::Null);
    let code = body["error"]["code"].as_str().unwrap_or("?");
    let text = body["error"]["message"].as_str().unwrap_or("");
    let evidence = body["diagnostics"]["artifact_ref"].as_str();
    let why = crate::reasons::of_failure(code, &body["diagnostics"]);
    message(
        (KIND_MANUAL_REVIEW, KIND_MANUAL_REVIEW),
        &item.remote_task_id,
        format!("人工复核：{} / manual review: {}", why.zh, why.en),
        format!(
            "任务 task {}: {}\n下一步：{}\nNext: {}\n[{code}] {text}{}",
            item.remote_task_id,
            why.zh,
            why.next_zh,
            why.next_en,
            evidence
                .map(|r| format!("\n证据 evidence: {r}"))
                .unwrap_or_default()
        ),
        &item.created_at,
        client,
        json!({"task_id": item.remote_task_id, "code": code, "message": text,
               "reason_zh": why.zh, "reason_en": why.en,
               "next_zh": why.next_zh, "next_en": why.next_en,
               "attempt_id": body["attempt_id"], "artifact_ref": evidence}),
    )
}

/// An outbox item parked (never delivered until the operator requeues it).
pub fn parked_message(item: &OutboxItem, at: &str, client: &Origin) -> Message {
    let err = item.last_error.as_deref().unwrap_or("");
    message(
        (KIND_PARKED, KIND_PARKED),
        &format!("outbox {}", item.id),
        "结果未能送达 Admin，已搁置 / an outbox item was parked".into(),
        format!(
            "task {}: the {} was not accepted after {} attempt(s): {err}\n修复后执行 / then run `cmautobuy-client outbox retry {}`",
            item.remote_task_id,
            item.kind.as_str(),
            item.attempts,
            item.id
        ),
        at,
        client,
        json!({"outbox_id": item.id, "task_id": item.remote_task_id,
               "item_kind": item.kind.as_str(), "attempts": item.attempts, "error": err}),
    )
}

/// The phone has been paused longer than `after`.
pub fn device_paused_message(pause: &DevicePause, now: DateTime<Utc>, client: &Origin) -> Message {
    let since = DateTime::parse_from_rfc3339(&pause.since)
        .map(|t| (now - t.with_timezone(&Utc)).num_minutes())
        .unwrap_or(0);
    message(
        (KIND_DEVICE_PAUSED, KIND_DEVICE_PAUSED),
        &pause.since,
        format!("手机暂停 {since} 分钟 / phone paused for {since} min"),
        format!(
            "[{}] {} — since {}; no claims until the phone answers (resumes by itself)",
            pause.code, pause.message, pause.since
        ),
        &cmautobuy_contract::time::format_utc(now),
        client,
        json!({"since": pause.since, "code": pause.code, "message": pause.message,
               "minutes": since}),
    )
}

/// No successful task for `window` while tasks were claimed.
pub fn no_success_message(
    subject: &str,
    window: Duration,
    claimed: i64,
    now: DateTime<Utc>,
    client: &Origin,
) -> Message {
    let last = if subject == "never" {
        "never".to_string()
    } else {
        subject.to_string()
    };
    message(
        (KIND_NO_SUCCESS, KIND_NO_SUCCESS),
        subject,
        format!(
            "{} 分钟无成功任务 / no success for {} min",
            mins(window),
            mins(window)
        ),
        format!("{claimed} task(s) claimed in that time, none succeeded; last success: {last}"),
        &cmautobuy_contract::time::format_utc(now),
        client,
        json!({"window_minutes": mins(window), "claimed": claimed, "last_success": subject}),
    )
}

/// The daily summary of `[from, to)`.
pub fn summary_message(
    r: &PeriodReport,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    client: &Origin,
) -> Message {
    let total: i64 = r.outcomes.iter().map(|(_, n)| n).sum();
    let outcomes = if r.outcomes.is_empty() {
        "none".to_string()
    } else {
        r.outcomes
            .iter()
            .map(|(o, n)| format!("{o} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let alerts = if r.alerts.is_empty() {
        "none".to_string()
    } else {
        r.alerts
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (f, t) = (
        cmautobuy_contract::time::format_utc(from),
        cmautobuy_contract::time::format_utc(to),
    );
    message(
        (KIND_SUMMARY, KIND_SUMMARY),
        &t,
        format!("每日汇总 / daily summary: {total} task run(s)"),
        format!(
            "{f} … {t}\n结果 / outcomes: {outcomes}\n下单 / orders placed: {} (submits {})\n暂停 / pauses: device {}, alerts {alerts}\n搁置 / parked: {} new, {} now\nwebhooks given up: {}",
            r.orders_placed, r.submits, r.device_pauses, r.parked, r.parked_now, r.webhooks_given_up
        ),
        &t,
        client,
        json!({
            "from": f, "to": t,
            "outcomes": r.outcomes.iter().map(|(o, n)| (o.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "orders_placed": r.orders_placed, "submits": r.submits,
            "device_pauses": r.device_pauses,
            "alerts": r.alerts.iter().map(|(o, n)| (o.clone(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "parked": r.parked, "parked_now": r.parked_now,
            "webhooks_given_up": r.webhooks_given_up,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn summary_times_parse_with_an_offset() {
        let a = SummaryAt::parse("09:00+08:00").unwrap();
        assert_eq!(
            a.latest(t("2026-08-06T01:00:00Z")),
            t("2026-08-06T01:00:00Z")
        );
        assert_eq!(
            a.latest(t("2026-08-06T00:59:59Z")),
            t("2026-08-05T01:00:00Z")
        );
        assert_eq!(
            SummaryAt::parse("23:30")
                .unwrap()
                .latest(t("2026-08-06T23:00:00Z")),
            t("2026-08-05T23:30:00Z")
        );
        for bad in ["9", "25:00", "09:00+8", "09:00+15:00", "x"] {
            assert!(SummaryAt::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_summary_starts_quietly_then_sends_the_latest_period_once() {
        let a = SummaryAt::parse("09:00+08:00").unwrap();
        let now = t("2026-08-06T00:30:00Z");
        let start = t("2026-08-05T01:00:00Z");
        assert_eq!(summary_step(&a, None, now), SummaryStep::Start(start));
        assert_eq!(summary_step(&a, Some(start), now), SummaryStep::Wait);
        let at9 = t("2026-08-06T01:00:00Z");
        assert_eq!(
            summary_step(&a, Some(start), at9),
            SummaryStep::Send {
                from: start,
                to: at9
            }
        );
        assert_eq!(summary_step(&a, Some(at9), at9), SummaryStep::Wait);
        // Three days down: one summary, of the latest day.
        let later = t("2026-08-09T02:00:00Z");
        assert_eq!(
            summary_step(&a, Some(at9), later),
            SummaryStep::Send {
                from: t("2026-08-08T01:00:00Z"),
                to: t("2026-08-09T01:00:00Z")
            }
        );
    }

    #[test]
    fn no_success_needs_claims_a_full_window_and_an_old_success() {
        let w = Duration::from_secs(3600);
        let now = t("2026-08-06T10:00:00Z");
        let watching = t("2026-08-06T08:00:00Z");
        assert_eq!(
            no_success(watching, now, w, 3, None).as_deref(),
            Some("never")
        );
        assert_eq!(no_success(watching, now, w, 0, None), None);
        assert_eq!(no_success(t("2026-08-06T09:30:00Z"), now, w, 3, None), None);
        assert_eq!(
            no_success(watching, now, w, 3, Some("2026-08-06T09:10:00.000Z")),
            None
        );
        assert_eq!(
            no_success(watching, now, w, 3, Some("2026-08-06T08:10:00.000Z")).as_deref(),
            Some("2026-08-06T08:10:00.000Z")
        );
    }

    #[test]
    fn a_pause_is_reported_once_it_lasted_long_enough() {
        let p = DevicePause {
            since: "2026-08-06T09:00:00Z".into(),
            code: "DEVICE_OFFLINE".into(),
            message: "gone".into(),
        };
        let ten = Duration::from_secs(600);
        assert_eq!(paused_too_long(&p, t("2026-08-06T09:09:59Z"), ten), None);
        assert_eq!(
            paused_too_long(&p, t("2026-08-06T09:10:00Z"), ten),
            Some(t("2026-08-06T09:00:00Z"))
        );
    }
}
