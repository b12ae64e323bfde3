//! What a webhook receives, sans-IO: the [`Message`] (stored as an event's payload) and
//! its rendering per [`Format`] at send time — signatures carry the send time, and
//! 钉钉/飞书 refuse a timestamp more than an hour old — plus how each format's answer is
//! read ([`read_answer`]).
//!
//! Formats (checked against the vendors' bot documentation):
//! - `json`: `{"source":"cmautobuy-client","schema":1,"kind",…}` (the [`Message`]); with
//!   a secret, `X-Cmautobuy-Timestamp: <unix secs>` and `X-Cmautobuy-Signature:
//!   sha256=<hex HMAC-SHA256(secret, "<timestamp>.<body>")>` (RustCrypto `hmac`).
//! - 企业微信 group bot: `{"msgtype":"text","text":{"content":…}}`; content at most 2048
//!   bytes; the answer `{"errcode":0,"errmsg":"ok"}`.
//! - 钉钉 custom robot: `{"msgtype":"text","text":{"content":…}}`; 加签: `timestamp` (ms)
//!   and `sign` = Base64(HMAC-SHA256(key = secret, "<timestamp>\n<secret>")) appended to
//!   the query (URL-encoded); the answer `{"errcode":0,…}`.
//! - 飞书 custom bot: `{"msg_type":"text","content":{"text":…}}`; 签名校验: `timestamp`
//!   (s, a string) and `sign` = Base64(HMAC-SHA256(key = "<timestamp>\n<secret>", empty
//!   message)) in the body; the answer `{"code":0,…}` (19021: signature or time wrong).
//!
//! Every bot text starts with `[cmautobuy]`, so a 钉钉 robot secured by a custom keyword
//! can use `cmautobuy`. Nothing here ever sees the Admin token.

use base64::Engine as _;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::Sha256;

use super::webhook::{Format, Webhook};

/// Which client sent it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Origin {
    pub client_id: String,
    pub name: Option<String>,
    pub device: Option<String>,
}

/// One event as a human reads it; stored as the event's payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The alert kind for an operator alert (`account_paused`, `low_disk`, …), else the
    /// event kind (`manual_review`, `outbox_parked`, `device_paused`, `no_success`,
    /// `daily_summary`).
    pub kind: String,
    /// `alert` for an operator alert (claiming stops until `ack`), else the kind.
    pub category: String,
    /// What deduplication compares with the kind (a task id, a pause's start, …).
    pub subject: String,
    pub title: String,
    pub text: String,
    /// When it happened (RFC 3339 UTC).
    pub at: String,
    pub client: Origin,
    #[serde(default)]
    pub details: Value,
}

/// A rendered request.
pub struct Request {
    pub url: reqwest::Url,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// Bot messages are cut to this many bytes (企业微信's text limit is 2048).
pub const BOT_TEXT_MAX: usize = 2000;

/// The text a bot shows.
pub fn bot_text(m: &Message) -> String {
    let who = match &m.client.name {
        Some(n) => format!("{n} ({})", m.client.client_id),
        None => m.client.client_id.clone(),
    };
    let device = m
        .client
        .device
        .as_deref()
        .map(|d| format!(", {d}"))
        .unwrap_or_default();
    let full = format!(
        "[cmautobuy] {}\n{who}{device}\n{}\n{}",
        m.title, m.text, m.at
    );
    truncate(&full, BOT_TEXT_MAX)
}

fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max.saturating_sub(3);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// HMAC-SHA256 (RFC 2104): RustCrypto's `hmac` over `sha2`.
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    use hmac::Mac as _;
    // Any key length is valid for HMAC (a longer one is hashed first): `new_from_slice`
    // cannot fail here.
    let mut mac = hmac::Hmac::<Sha256>::new_from_slice(key)
        .unwrap_or_else(|_| unreachable!("HMAC takes keys of any length"));
    mac.update(msg);
    mac.finalize().into_bytes().into()
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// 钉钉's `sign` for `timestamp_ms` (before URL encoding).
pub fn dingtalk_sign(secret: &str, timestamp_ms: i64) -> String {
    b64(&hmac_sha256(
        secret.as_bytes(),
        format!("{timestamp_ms}\n{secret}").as_bytes(),
    ))
}

/// 飞书's `sign` for `timestamp_secs`.
pub fn feishu_sign(secret: &str, timestamp_secs: i64) -> String {
    b64(&hmac_sha256(
        format!("{timestamp_secs}\n{secret}").as_bytes(),
        b"",
    ))
}

/// The `json` format's signature header value for `body` sent at `timestamp_secs`.
pub fn json_signature(secret: &str, timestamp_secs: i64, body: &[u8]) -> String {
    let mut msg = format!("{timestamp_secs}.").into_bytes();
    msg.extend_from_slice(body);
    format!(
        "sha256={}",
        hex::encode(hmac_sha256(secret.as_bytes(), &msg))
    )
}

/// The request for `m` to `w`, signed for `now`.
pub fn render(w: &Webhook, m: &Message, now: DateTime<Utc>) -> Request {
    let mut url = w.url().clone();
    let mut headers = vec![("content-type", "application/json".to_string())];
    let secret = w.secret().map(|s| s.expose().to_string());
    let body = match w.format {
        Format::Json => {
            let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
            if let Value::Object(o) = &mut v {
                let mut doc = serde_json::Map::new();
                doc.insert("source".into(), json!("cmautobuy-client"));
                doc.insert("schema".into(), json!(1));
                doc.append(o);
                v = Value::Object(doc);
            }
            let body = serde_json::to_vec(&v).unwrap_or_default();
            if let Some(s) = &secret {
                let t = now.timestamp();
                headers.push(("x-cmautobuy-timestamp", t.to_string()));
                headers.push(("x-cmautobuy-signature", json_signature(s, t, &body)));
            }
            body
        }
        Format::Wecom => {
            serde_json::to_vec(&json!({"msgtype": "text", "text": {"content": bot_text(m)}}))
                .unwrap_or_default()
        }
        Format::Dingtalk => {
            if let Some(s) = &secret {
                let t = now.timestamp_millis();
                url.query_pairs_mut()
                    .append_pair("timestamp", &t.to_string())
                    .append_pair("sign", &dingtalk_sign(s, t));
            }
            serde_json::to_vec(&json!({"msgtype": "text", "text": {"content": bot_text(m)}}))
                .unwrap_or_default()
        }
        Format::Feishu => {
            let mut v = json!({"msg_type": "text", "content": {"text": bot_text(m)}});
            if let (Some(s), Value::Object(o)) = (&secret, &mut v) {
                let t = now.timestamp();
                o.insert("timestamp".into(), json!(t.to_string()));
                o.insert("sign".into(), json!(feishu_sign(s, t)));
            }
            serde_json::to_vec(&v).unwrap_or_default()
        }
    };
    Request { url, headers, body }
}

/// What an answer means for a delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Delivered,
    /// Try again later (a transient status, a bot's non-zero error code, an unreadable
    /// answer).
    Retry(String),
    /// Never going to work as configured (404, 401, …).
    GiveUp(String),
}

/// Reads a webhook's answer: 2xx, and for the bots a zero `errcode`/`code`.
pub fn read_answer(format: Format, status: u16, body: &[u8]) -> Answer {
    match status {
        200..=299 => {}
        408 | 425 | 429 | 500..=599 => return Answer::Retry(format!("HTTP {status}")),
        _ => return Answer::GiveUp(format!("HTTP {status}")),
    }
    let field = match format {
        Format::Json => return Answer::Delivered,
        Format::Wecom | Format::Dingtalk => "errcode",
        Format::Feishu => "code",
    };
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(_) => return Answer::Retry(format!("HTTP {status}, unreadable answer")),
    };
    // 飞书's older answers carry `StatusCode` only.
    let code = v
        .get(field)
        .or_else(|| v.get("StatusCode"))
        .and_then(Value::as_i64);
    match code {
        Some(0) => Answer::Delivered,
        Some(n) => {
            let msg = ["errmsg", "msg", "StatusMessage"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_str))
                .unwrap_or("");
            Answer::Retry(format!("{field} {n}: {}", truncate(msg, 200)))
        }
        None => Answer::Retry(format!("HTTP {status}, no {field} in the answer")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notify::webhook::WebhookConfig;
    use crate::secret::Secret;

    #[test]
    fn hmac_sha256_matches_rfc_4231() {
        // Test case 2.
        assert_eq!(
            hex::encode(hmac_sha256(b"Jefe", b"what do ya want for nothing?")),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        // Test case 6: a key longer than the block is hashed first.
        assert_eq!(
            hex::encode(hmac_sha256(
                &[0xaa; 131],
                b"Test Using Larger Than Block-Size Key - Hash Key First"
            )),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    fn message() -> Message {
        Message {
            kind: "account_paused".into(),
            category: "alert".into(),
            subject: "run-2".into(),
            title: "账号暂停 / account paused".into(),
            text: "风控页面".into(),
            at: "2026-08-06T08:00:00Z".into(),
            client: Origin {
                client_id: "CLIENT-00000000000000AB".into(),
                name: Some("办公室-01".into()),
                device: Some("tcp:127.0.0.1:5555".into()),
            },
            details: json!({"alert_id": 1}),
        }
    }

    fn hook(url: &str, format: Format, secret: Option<&str>) -> Webhook {
        Webhook::from_config(&WebhookConfig {
            url: Secret::new(url),
            format,
            secret: secret.map(Secret::new),
            kinds: None,
            name: None,
        })
        .unwrap()
    }

    #[test]
    fn each_format_has_its_vendors_shape_and_signature() {
        let now = DateTime::from_timestamp(1_599_360_473, 0).unwrap();
        let m = message();
        let r = render(&hook("https://h/j", Format::Json, Some("s3")), &m, now);
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["source"], "cmautobuy-client");
        assert_eq!(v["kind"], "account_paused");
        assert_eq!(v["client"]["name"], "办公室-01");
        let sig = r
            .headers
            .iter()
            .find(|h| h.0 == "x-cmautobuy-signature")
            .unwrap();
        assert_eq!(sig.1, json_signature("s3", 1_599_360_473, &r.body));

        let r = render(&hook("https://q/send?key=K", Format::Wecom, None), &m, now);
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["msgtype"], "text");
        assert!(v["text"]["content"]
            .as_str()
            .unwrap()
            .starts_with("[cmautobuy] 账号暂停"));
        assert_eq!(r.url.as_str(), "https://q/send?key=K");

        let r = render(
            &hook(
                "https://d/robot/send?access_token=T",
                Format::Dingtalk,
                Some("SECx"),
            ),
            &m,
            now,
        );
        let q: Vec<(String, String)> = r.url.query_pairs().into_owned().collect();
        assert_eq!(q[0], ("access_token".into(), "T".into()));
        assert_eq!(q[1], ("timestamp".into(), "1599360473000".into()));
        assert_eq!(q[2].1, dingtalk_sign("SECx", 1_599_360_473_000));
        // The sign is URL-encoded in the query (Base64's + / = escaped).
        assert!(!r.url.query().unwrap().contains('/'));

        let r = render(
            &hook("https://f/hook/abc", Format::Feishu, Some("fs")),
            &m,
            now,
        );
        let v: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(v["msg_type"], "text");
        assert_eq!(v["timestamp"], "1599360473");
        assert_eq!(v["sign"], feishu_sign("fs", 1_599_360_473));
        assert!(v["content"]["text"].as_str().unwrap().contains("风控页面"));
    }

    #[test]
    fn a_long_text_is_cut_on_a_character_boundary() {
        let mut m = message();
        m.text = "页".repeat(2000);
        let t = bot_text(&m);
        assert!(t.len() <= BOT_TEXT_MAX && t.ends_with('…'));
    }

    #[test]
    fn answers_are_read_per_format() {
        use Answer::*;
        assert_eq!(read_answer(Format::Json, 204, b""), Delivered);
        assert!(matches!(read_answer(Format::Json, 500, b""), Retry(_)));
        assert!(matches!(read_answer(Format::Json, 404, b""), GiveUp(_)));
        assert_eq!(
            read_answer(Format::Wecom, 200, br#"{"errcode":0,"errmsg":"ok"}"#),
            Delivered
        );
        assert!(matches!(
            read_answer(Format::Dingtalk, 200, br#"{"errcode":310000,"errmsg":"sign not match"}"#),
            Retry(e) if e.contains("310000")
        ));
        assert_eq!(
            read_answer(
                Format::Feishu,
                200,
                br#"{"code":0,"msg":"success","data":{}}"#
            ),
            Delivered
        );
        assert_eq!(
            read_answer(Format::Feishu, 200, br#"{"StatusCode":0}"#),
            Delivered
        );
        assert!(matches!(
            read_answer(Format::Feishu, 200, b"<html>"),
            Retry(_)
        ));
    }
}
