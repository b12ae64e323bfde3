//! Alerts out: what a human should hear about, sent to webhooks.
//!
//! # What lives where
//! - `webhook` — a configured webhook ([`WebhookConfig`] as written, [`Webhook`]
//!   checked): URL kept secret, [`Format`], signing secret, kinds filter.
//! - `message` — sans-IO: the [`Message`] an event becomes, its rendering per format
//!   (plain JSON, 企业微信, 钉钉, 飞书, with their signatures), reading the answer.
//! - `rules` — sans-IO: the daily summary's schedule, "paused too long", "no success",
//!   and the message of each event kind.
//! - `notifier` — the driver ([`Notifier`]): events from the store, deduplication, the
//!   durable delivery queue, retries with backoff, giving up after N tries.
//!
//! Where events come from: the store's triggers (any operator alert — whatever its
//! kind, so alerts added later are delivered without changes here —, a `manual_review`
//! outcome, a parked outbox item) and the notifier's own checks (a device pause longer
//! than N minutes, no success for N minutes while tasks were claimed, the daily
//! summary). See `store/notify.rs`.

mod message;
mod notifier;
mod rules;
mod webhook;

pub use message::{
    bot_text, dingtalk_sign, feishu_sign, hmac_sha256, json_signature, Message, Origin,
};
pub use notifier::{Delivered, Notifier, NotifyConfig, NotifyError, DEFAULT_SUMMARY_AT};
pub use rules::{
    SummaryAt, CATEGORY_ALERT, KIND_DEVICE_PAUSED, KIND_MANUAL_REVIEW, KIND_NO_SUCCESS,
    KIND_PARKED, KIND_SUMMARY,
};
pub use webhook::{redact, stored_webhooks, Format, Webhook, WebhookConfig};
