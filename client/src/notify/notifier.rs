//! [`Notifier`]: the driver that turns events into webhook deliveries and sends them.
//!
//! Each tick (every few seconds, on the injected [`Clock`]):
//! 1. **time-based checks** (only with webhooks configured): the phone paused longer than
//!    `device_paused_after`, no success for `no_success_after` while tasks were claimed,
//!    the daily summary when its time has come — each added as an event unless the same
//!    kind and subject was sent within the deduplication window;
//! 2. **resolve** the new events (the triggers' and the checks'): build the
//!    [`Message`], suppress a duplicate (same kind and subject sent within
//!    `dedup_window`), queue one delivery per webhook that wants the kind;
//! 3. **deliver** what is due: one request each, under its deadline; an answer that is
//!    not a success is retried with backoff (2 s doubling to 10 min, equal jitter) until
//!    `max_attempts`, then
//!    given up with an error log line; a permanent refusal (404, …) is given up at once;
//! 4. now and then, prune old rows and give up deliveries for webhooks no longer
//!    configured.
//!
//! Its webhooks are the configured ones and those the operator saved on the console's
//! 设置 page (`Store::operator_settings`), read at every scan and send: one added or
//! removed there is used, or given up, without a restart.
//!
//! It runs beside the claim loop and never blocks it: the only shared resource is the
//! store, held for single short statements. At shutdown it flushes what is due, bounded
//! by `flush_deadline`; whatever is still pending is sent by the next start.

use std::sync::Mutex;
use std::time::Duration;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use super::message::{read_answer, render, Answer, Message, Origin};
use super::rules::{self, SummaryAt, SummaryStep, CATEGORY_ALERT};
use super::webhook::Webhook;
use crate::clock::Clock;
use crate::retry::{random_unit, RetryPolicy};
use crate::store::{NewEvent, Resolution, Store, StoreError};

/// How the notifier runs.
#[derive(Clone, Debug)]
pub struct NotifyConfig {
    pub webhooks: Vec<Webhook>,
    /// The same kind and subject is not sent twice within this window.
    pub dedup_window: Duration,
    /// Announce a device pause once it has lasted this long (`None`: never).
    pub device_paused_after: Option<Duration>,
    /// Announce when no task succeeded for this long while tasks were claimed.
    pub no_success_after: Option<Duration>,
    /// When the daily summary goes out (`None`: no summary).
    pub daily_summary: Option<SummaryAt>,
    /// Attempts per delivery before it is given up.
    pub max_attempts: u32,
    pub connect_timeout: Duration,
    /// The deadline of one webhook request.
    pub request_timeout: Duration,
    /// Between ticks.
    pub tick: Duration,
    /// Backoff between attempts of one delivery.
    pub retry: RetryPolicy,
    /// Finished deliveries and events older than this are deleted.
    pub keep: Duration,
    /// A delivery still pending this long after it was queued is given up.
    pub stale_after: Duration,
    /// At shutdown, deliver what is due for at most this long.
    pub flush_deadline: Duration,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            webhooks: Vec::new(),
            dedup_window: Duration::from_secs(30 * 60),
            device_paused_after: Some(Duration::from_secs(10 * 60)),
            no_success_after: Some(Duration::from_secs(60 * 60)),
            daily_summary: SummaryAt::parse(DEFAULT_SUMMARY_AT).ok(),
            max_attempts: 8,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(10),
            tick: Duration::from_secs(5),
            retry: RetryPolicy {
                base: Duration::from_secs(2),
                cap: Duration::from_secs(600),
                max_retry_after: Duration::from_secs(600),
            },
            keep: Duration::from_secs(8 * 86_400),
            stale_after: Duration::from_secs(86_400),
            flush_deadline: Duration::from_secs(10),
        }
    }
}

/// The daily summary's default time: 09:00 China Standard Time.
pub const DEFAULT_SUMMARY_AT: &str = "09:00+08:00";

/// Answers larger than this are not read further (only the error code matters).
const ANSWER_MAX: usize = 64 * 1024;

/// What one delivery round did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Delivered {
    pub delivered: usize,
    pub retried: usize,
    pub given_up: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error("cannot build the webhook HTTP client: {0}")]
    Http(String),
}

/// Events in, webhook requests out.
pub struct Notifier<C> {
    store: Store,
    clock: C,
    cfg: NotifyConfig,
    http: reqwest::Client,
    watching_since: DateTime<Utc>,
    last_prune: Mutex<Option<DateTime<Utc>>>,
    /// The console's webhooks as last read (their JSON and the checked list): parsed
    /// again only when they change.
    console_hooks: Mutex<Option<(String, Vec<Webhook>)>>,
}

fn chrono(d: Duration) -> chrono::Duration {
    chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX)
}

impl<C: Clock> Notifier<C> {
    pub fn new(store: Store, clock: C, cfg: NotifyConfig) -> Result<Self, NotifyError> {
        // Its own client: no default headers (the Admin's token never comes near it), no
        // redirects (a redirect could carry the URL's key elsewhere), a deadline per request.
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .timeout(cfg.request_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("cmautobuy-client/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| NotifyError::Http(e.without_url().to_string()))?;
        let watching_since = clock.now();
        Ok(Notifier {
            store,
            clock,
            cfg,
            http,
            watching_since,
            last_prune: Mutex::new(None),
            console_hooks: Mutex::new(None),
        })
    }

    /// The webhooks in force: the configured ones, then the console's (a URL configured
    /// in both is sent to once). A store that cannot be read leaves the configured ones.
    fn webhooks(&self) -> Vec<Webhook> {
        let mut hooks = self.cfg.webhooks.clone();
        let json = match self.store.operator_settings() {
            Ok(op) => op.webhooks_json.unwrap_or_default(),
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the console's webhooks");
                return hooks;
            }
        };
        let mut cache = self.console_hooks.lock().unwrap_or_else(|p| p.into_inner());
        if cache.as_ref().is_none_or(|(j, _)| *j != json) {
            let parsed = if json.is_empty() {
                Vec::new()
            } else {
                super::webhook::stored_webhooks(&json)
            };
            *cache = Some((json, parsed));
        }
        if let Some((_, console)) = cache.as_ref() {
            for h in console {
                if !hooks.iter().any(|c| c.id == h.id) {
                    hooks.push(h.clone());
                }
            }
        }
        hooks
    }

    fn origin(&self) -> Result<Origin, StoreError> {
        let s = self.store.settings()?;
        Ok(Origin {
            client_id: s.client_id,
            name: s.name.filter(|n| !n.trim().is_empty()),
            device: s.device.filter(|d| !d.is_empty()),
        })
    }

    fn recently_sent(
        &self,
        kind: &str,
        subject: &str,
        now: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.store
            .notify_sent_since(kind, subject, now - chrono(self.cfg.dedup_window))
    }

    /// Adds a time-based event unless no webhook wants it or the same was sent within
    /// the window.
    fn check_event(&self, m: &Message, now: DateTime<Utc>) -> Result<(), StoreError> {
        if !self.webhooks().iter().any(|w| w.wants(&m.kind, false))
            || self.recently_sent(&m.kind, &m.subject, now)?
        {
            return Ok(());
        }
        let payload = serde_json::to_string(m).unwrap_or_default();
        self.store
            .notify_insert("check", &m.kind, &m.subject, &payload, now)?;
        Ok(())
    }

    fn time_checks(&self, origin: &Origin, now: DateTime<Utc>) -> Result<(), StoreError> {
        if let Some(after) = self.cfg.device_paused_after {
            if let Some(p) = self.store.device_pause()? {
                if rules::paused_too_long(&p, now, after).is_some() {
                    self.check_event(&rules::device_paused_message(&p, now, origin), now)?;
                }
            }
        }
        if let Some(window) = self.cfg.no_success_after {
            let (claimed, last) = self.store.activity_since(now - chrono(window))?;
            if let Some(subject) =
                rules::no_success(self.watching_since, now, window, claimed, last.as_deref())
            {
                let m = rules::no_success_message(&subject, window, claimed, now, origin);
                self.check_event(&m, now)?;
            }
        }
        if let Some(at) = &self.cfg.daily_summary {
            let last = self
                .store
                .notify_mark("summary_through")?
                .and_then(|s| DateTime::parse_from_rfc3339(&s).ok())
                .map(|t| t.with_timezone(&Utc));
            match rules::summary_step(at, last, now) {
                SummaryStep::Wait => {}
                SummaryStep::Start(t) => self.store.set_notify_mark(
                    "summary_through",
                    &cmautobuy_contract::time::format_utc(t),
                    now,
                )?,
                SummaryStep::Send { from, to } => {
                    let report = self.store.period_report(from, to)?;
                    self.check_event(&rules::summary_message(&report, from, to, origin), now)?;
                    self.store.set_notify_mark(
                        "summary_through",
                        &cmautobuy_contract::time::format_utc(to),
                        now,
                    )?;
                }
            }
        }
        Ok(())
    }

    /// The message an event stands for; `None` when what it names is gone.
    fn message_of(&self, e: &NewEvent, origin: &Origin) -> Result<Option<Message>, StoreError> {
        let id = e.source_id.unwrap_or(-1);
        let item = |id| match self.store.outbox_item(id) {
            Ok(item) => Ok(Some(item)),
            Err(StoreError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        };
        Ok(match e.source.as_str() {
            "alert" => self
                .store
                .alert(id)?
                .map(|a| rules::alert_message(&a, origin)),
            "manual_review" => item(id)?.map(|i| rules::manual_review_message(&i, origin)),
            "outbox_parked" => item(id)?.map(|i| rules::parked_message(&i, &e.created_at, origin)),
            _ => e
                .payload
                .as_deref()
                .and_then(|p| serde_json::from_str::<Message>(p).ok()),
        })
    }

    /// Steps 1 and 2 (and 4 now and then): returns how many events were resolved.
    pub fn scan(&self) -> Result<usize, StoreError> {
        let now = self.clock.now();
        let origin = self.origin()?;
        let webhooks = self.webhooks();
        if !webhooks.is_empty() {
            self.time_checks(&origin, now)?;
        }
        let events = self.store.notify_new_events(100)?;
        for e in &events {
            let Some(m) = self.message_of(e, &origin)? else {
                self.store.notify_skip(e.id)?;
                continue;
            };
            let payload = serde_json::to_string(&m).unwrap_or_default();
            let suppressed = self.recently_sent(&m.kind, &m.subject, now)?;
            let is_alert = m.category == CATEGORY_ALERT;
            let to: Vec<String> = webhooks
                .iter()
                .filter(|w| w.wants(&m.kind, is_alert))
                .map(|w| w.id.clone())
                .collect();
            let r = Resolution {
                kind: &m.kind,
                subject: &m.subject,
                payload: &payload,
                suppressed,
                webhooks: &to,
            };
            self.store.notify_resolve(e.id, &r, now)?;
            if suppressed {
                tracing::info!(kind = %m.kind, subject = %m.subject, "notification suppressed: the same was sent within the deduplication window");
            } else if !to.is_empty() {
                tracing::info!(kind = %m.kind, subject = %m.subject, webhooks = to.len(), "notification queued");
            }
        }
        self.prune(now)?;
        Ok(events.len())
    }

    fn prune(&self, now: DateTime<Utc>) -> Result<(), StoreError> {
        {
            let mut last = self.last_prune.lock().unwrap_or_else(|p| p.into_inner());
            if last.is_some_and(|t| now - t < chrono::Duration::hours(1)) {
                return Ok(());
            }
            *last = Some(now);
        }
        let ids: Vec<String> = self.webhooks().iter().map(|w| w.id.clone()).collect();
        let n =
            self.store
                .webhook_give_up_orphans(&ids, now - chrono(self.cfg.stale_after), now)?;
        if n > 0 {
            tracing::warn!(
                deliveries = n,
                "webhook deliveries given up: webhook no longer configured, or queued too long ago"
            );
        }
        self.store.notify_prune(now - chrono(self.cfg.keep))?;
        Ok(())
    }

    /// One request; the error text never holds the URL.
    async fn send(&self, w: &Webhook, m: &Message) -> Answer {
        let req = render(w, m, self.clock.now());
        let mut b = self.http.post(req.url).body(req.body);
        for (k, v) in req.headers {
            b = b.header(k, v);
        }
        let mut resp = match b.send().await {
            Ok(r) => r,
            Err(e) => return Answer::Retry(e.without_url().to_string()),
        };
        let status = resp.status().as_u16();
        let mut body = Vec::new();
        loop {
            match resp.chunk().await {
                Ok(Some(c)) => {
                    body.extend_from_slice(&c);
                    if body.len() >= ANSWER_MAX {
                        break;
                    }
                }
                Ok(None) => break,
                Err(e) => return Answer::Retry(e.without_url().to_string()),
            }
        }
        read_answer(w.format, status, &body)
    }

    /// Step 3: sends every delivery due now (at most 20 per call).
    pub async fn deliver_due(&self) -> Result<Delivered, StoreError> {
        let mut done = Delivered::default();
        let webhooks = self.webhooks();
        for d in self.store.webhook_due(self.clock.now(), 20)? {
            let attempt = d.attempts.saturating_add(1);
            let Some(w) = webhooks.iter().find(|w| w.id == d.webhook) else {
                self.store.webhook_failed(
                    d.id,
                    "webhook no longer configured",
                    None,
                    self.clock.now(),
                )?;
                done.given_up += 1;
                continue;
            };
            // The message's texts (alert messages, Admin errors) are scrubbed of every
            // known secret before they are posted: the last line of defence for text
            // from outside that was stored before the gateway cleaned it.
            let payload = crate::secret::scrub(&d.payload);
            let answer = match serde_json::from_str::<Message>(&payload) {
                Ok(m) => self.send(w, &m).await,
                Err(e) => Answer::GiveUp(format!("unreadable stored message: {e}")),
            };
            // The receiver's answer is text from outside too (an `errmsg` may echo the
            // request, key included): scrubbed before it is stored or logged.
            let answer = match answer {
                Answer::Retry(e) => Answer::Retry(crate::secret::scrub(&e).into_owned()),
                Answer::GiveUp(e) => Answer::GiveUp(crate::secret::scrub(&e).into_owned()),
                a => a,
            };
            let now = self.clock.now();
            match answer {
                Answer::Delivered => {
                    self.store.webhook_delivered(d.id, now)?;
                    tracing::info!(webhook = %w.label, webhook_id = %w.id, kind = %d.kind, attempt, "webhook delivered");
                    done.delivered += 1;
                }
                Answer::Retry(e) if attempt < self.cfg.max_attempts => {
                    // Equal jitter: at least half the ceiling, so a failing receiver is
                    // never hit again at once.
                    let ceiling = self.cfg.retry.ceiling(attempt);
                    let delay = ceiling / 2 + (ceiling / 2).mul_f64(random_unit());
                    self.store
                        .webhook_failed(d.id, &e, Some(now + chrono(delay)), now)?;
                    tracing::warn!(webhook = %w.label, webhook_id = %w.id, kind = %d.kind, attempt, error = %e, ?delay, "webhook delivery failed; will retry");
                    done.retried += 1;
                }
                Answer::Retry(e) | Answer::GiveUp(e) => {
                    self.store.webhook_failed(d.id, &e, None, now)?;
                    tracing::error!(webhook = %w.label, webhook_id = %w.id, kind = %d.kind, subject = %d.subject, attempt, error = %e, "webhook delivery given up");
                    done.given_up += 1;
                }
            }
        }
        Ok(done)
    }

    /// One tick: scan, then deliver what is due.
    pub async fn tick(&self) -> Result<Delivered, StoreError> {
        self.scan()?;
        self.deliver_due().await
    }

    /// Ticks until `shutdown`, then flushes (bounded). Store errors are logged, never
    /// fatal.
    pub async fn run(&self, mut shutdown: watch::Receiver<bool>) {
        loop {
            if *shutdown.borrow() {
                break;
            }
            if let Err(e) = self.tick().await {
                tracing::warn!(error = %e, "notifier tick failed; trying again");
            }
            let mut wait = self.cfg.tick;
            if let Ok(Some(at)) = self.store.webhook_next_due() {
                if let Ok(d) = (at - self.clock.now()).to_std() {
                    wait = wait.min(d.max(Duration::from_millis(50)));
                }
            }
            tokio::select! {
                _ = self.clock.sleep(wait) => {}
                changed = shutdown.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
            }
        }
        self.flush().await;
    }

    /// Resolves the last events and delivers what is due, for at most `flush_deadline`.
    pub async fn flush(&self) {
        let work = async {
            self.scan()?;
            loop {
                let d = self.deliver_due().await?;
                if d.delivered + d.retried + d.given_up == 0 {
                    return Ok::<_, StoreError>(());
                }
            }
        };
        match tokio::time::timeout(self.cfg.flush_deadline, work).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "notifier flush failed"),
            Err(_) => tracing::warn!("notifier flush cut at its deadline"),
        }
        if let Ok(counts) = self.store.webhook_counts() {
            let pending = counts
                .iter()
                .find(|(s, _)| s == "pending")
                .map(|c| c.1)
                .unwrap_or(0);
            if pending > 0 {
                tracing::warn!(
                    pending,
                    "webhook deliveries still queued; the next start sends them"
                );
            }
        }
    }
}
