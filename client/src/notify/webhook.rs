//! A configured webhook: where alerts go, in which format, signed or not, for which
//! kinds. The URL carries the bot's key (`?key=`, `?access_token=`, `/hook/<token>`), so
//! it is a secret: it lives in a [`Secret`], `Debug` shows only scheme and host, and the
//! store names a webhook by [`Webhook::id`] (a hash of the URL), never by the URL.

use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::secret::Secret;

/// The body a webhook expects.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Our own JSON document (`crate::notify::message`), optionally HMAC-signed.
    #[default]
    Json,
    /// 企业微信 group bot: `{"msgtype":"text","text":{"content":…}}`, no signing.
    Wecom,
    /// 钉钉 custom robot: `msgtype` text; signed with `timestamp` and `sign` in the query.
    Dingtalk,
    /// 飞书 custom bot: `msg_type` text; signed with `timestamp` and `sign` in the body.
    Feishu,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Wecom => "wecom",
            Format::Dingtalk => "dingtalk",
            Format::Feishu => "feishu",
        }
    }
}

/// One `[[webhook]]` entry of the config file as written.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WebhookConfig {
    pub url: Secret,
    #[serde(default)]
    pub format: Format,
    /// The signing secret (钉钉 加签 `SEC…`, 飞书 签名校验; for `json`: an HMAC header).
    pub secret: Option<Secret>,
    /// Only these event kinds (`alert` = every operator alert; or an alert kind such as
    /// `account_paused`; `manual_review`, `outbox_parked`, `device_paused`, `no_success`,
    /// `daily_summary`). Absent: every kind.
    pub kinds: Option<Vec<String>>,
    /// A name for logs (default: the format and the URL's host).
    pub name: Option<String>,
}

impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("url", &redact(self.url.expose()))
            .field("format", &self.format)
            .field("secret", &self.secret)
            .field("kinds", &self.kinds)
            .field("name", &self.name)
            .finish()
    }
}

/// `https://qyapi.weixin.qq.com/…`: scheme and host only.
pub fn redact(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!("{}://{}/…", u.scheme(), u.host_str().unwrap_or("?")),
        Err(_) => "(invalid URL)".into(),
    }
}

/// A checked webhook.
#[derive(Clone)]
pub struct Webhook {
    /// `wh-` and 12 hex digits of the URL's SHA-256: stable across restarts and
    /// reorderings of the config, and safe to store and log.
    pub id: String,
    /// For logs: the configured name, or the format and the URL's host.
    pub label: String,
    pub format: Format,
    url: reqwest::Url,
    secret: Option<Secret>,
    kinds: Option<Vec<String>>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("id", &self.id)
            .field("label", &self.label)
            .field("format", &self.format)
            .finish_non_exhaustive()
    }
}

/// The webhooks the console saved (`Store::operator_settings`: a JSON array of
/// `[[webhook]]` tables), each checked like a configured one; one that no longer checks
/// (or a list that does not parse) is left out with a warning naming no URL.
pub fn stored_webhooks(json: &str) -> Vec<Webhook> {
    let configs: Vec<WebhookConfig> = match serde_json::from_str(json) {
        Ok(c) => c,
        Err(e) => {
            // serde quotes what it read: only where.
            tracing::warn!(
                line = e.line(),
                column = e.column(),
                "the console's webhooks cannot be read; none used"
            );
            return Vec::new();
        }
    };
    configs
        .iter()
        .filter_map(|c| match Webhook::from_config(c) {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::warn!(error = %e, "a webhook saved on the console is left out");
                None
            }
        })
        .collect()
}

impl Webhook {
    /// Checks one entry: an `http(s)` URL, a secret only where the format can sign, a
    /// non-empty `kinds` list. The message never quotes the URL.
    pub fn from_config(c: &WebhookConfig) -> Result<Webhook, String> {
        let url = reqwest::Url::parse(c.url.expose().trim())
            .map_err(|e| format!("url is not a URL ({e})"))?;
        // As sent (normalised by the URL parser): scrubbed in that form too.
        crate::secret::register(url.as_str());
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(format!(
                "url {} must be http:// or https:// with a host",
                redact(url.as_str())
            ));
        }
        let secret = c.secret.clone().filter(|s| !s.is_empty());
        if secret.is_some() && c.format == Format::Wecom {
            return Err("secret: 企业微信 group bots have no signing; remove it".into());
        }
        if let Some(k) = &c.kinds {
            if k.is_empty() || k.iter().any(|k| k.trim().is_empty()) {
                return Err("kinds: list at least one kind (or leave it out for all)".into());
            }
        }
        let id = format!(
            "wh-{}",
            &hex::encode(Sha256::digest(url.as_str().as_bytes()))[..12]
        );
        let label = match &c.name {
            Some(n) if !n.trim().is_empty() => n.trim().to_string(),
            _ => format!("{} {}", c.format.as_str(), url.host_str().unwrap_or("?")),
        };
        Ok(Webhook {
            id,
            label,
            format: c.format,
            url,
            secret,
            kinds: c.kinds.clone(),
        })
    }

    /// Whether this webhook wants events of `kind` (`is_alert`: an operator alert, which
    /// the kind `alert` selects whatever its own kind).
    pub fn wants(&self, kind: &str, is_alert: bool) -> bool {
        match &self.kinds {
            None => true,
            Some(ks) => ks
                .iter()
                .any(|k| k.trim() == kind || (is_alert && k.trim() == "alert")),
        }
    }

    /// The URL to send to. Callers must not log or format it.
    pub(super) fn url(&self) -> &reqwest::Url {
        &self.url
    }

    pub(super) fn secret(&self) -> Option<&Secret> {
        self.secret.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(url: &str, format: Format, secret: Option<&str>) -> WebhookConfig {
        WebhookConfig {
            url: Secret::new(url),
            format,
            secret: secret.map(Secret::new),
            kinds: None,
            name: None,
        }
    }

    #[test]
    fn the_url_and_the_secret_never_print() {
        let c = cfg(
            "https://oapi.dingtalk.com/robot/send?access_token=TOKEN123",
            Format::Dingtalk,
            Some("SECabc"),
        );
        let w = Webhook::from_config(&c).unwrap();
        for shown in [
            format!("{c:?}"),
            format!("{w:?}"),
            w.label.clone(),
            w.id.clone(),
        ] {
            assert!(
                !shown.contains("TOKEN123") && !shown.contains("SECabc"),
                "{shown}"
            );
        }
        assert!(format!("{c:?}").contains("https://oapi.dingtalk.com/…"));
        assert_eq!(w.label, "dingtalk oapi.dingtalk.com");
        assert!(w.id.starts_with("wh-") && w.id.len() == 15);
    }

    #[test]
    fn bad_entries_are_refused_without_quoting_the_url() {
        let e = Webhook::from_config(&cfg("ftp://h/x?key=K9", Format::Json, None)).unwrap_err();
        assert!(!e.contains("K9"), "{e}");
        assert!(Webhook::from_config(&cfg("nonsense", Format::Json, None)).is_err());
        assert!(Webhook::from_config(&cfg("https://q/x?key=1", Format::Wecom, Some("s"))).is_err());
        let mut c = cfg("https://q/x", Format::Json, None);
        c.kinds = Some(vec![]);
        assert!(Webhook::from_config(&c).is_err());
    }

    #[test]
    fn kinds_select_events_and_alert_selects_every_alert() {
        let mut c = cfg("https://q/x", Format::Json, None);
        c.kinds = Some(vec!["alert".into(), "daily_summary".into()]);
        let w = Webhook::from_config(&c).unwrap();
        assert!(w.wants("low_disk", true));
        assert!(w.wants("daily_summary", false));
        assert!(!w.wants("manual_review", false));
        c.kinds = Some(vec!["account_paused".into()]);
        let w = Webhook::from_config(&c).unwrap();
        assert!(w.wants("account_paused", true) && !w.wants("low_disk", true));
    }
}
