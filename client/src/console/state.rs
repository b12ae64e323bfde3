//! [`ConsoleState`]: what every page handler gets — the workers ([`ConsoleWorker`]) and
//! the console's secrets.

use std::net::{SocketAddr, SocketAddrV4};
use std::sync::{Arc, RwLock};

use chrono::{DateTime, Utc};

use super::auth;
use super::shot::PhoneScreen;
use super::view::Zone;
use crate::progress::ProgressHandle;
use crate::store::Store;

/// One worker (one phone) as the console shows it.
#[derive(Clone, Debug)]
pub struct ConsoleWorker {
    /// The phone's serial or `tcp:HOST:PORT` (or `-` without a phone).
    pub label: String,
    pub store: Store,
    pub progress: ProgressHandle,
    /// The worker's artifact root (`{data dir}/artifacts`): the 历史 pages' viewer reads
    /// attempt folders under it.
    pub artifacts_root: std::path::PathBuf,
    /// The phone the card's live screenshot comes from (`None`: no phone).
    pub screen: Option<PhoneScreen>,
    /// What the configuration (file, environment, flags) says about going live, shown
    /// beside what the console set (the settings page's precedence).
    pub config: ConfigLive,
}

impl ConsoleWorker {
    /// A worker with no phone to screenshot and nothing configured for going live.
    pub fn new(
        label: impl Into<String>,
        store: Store,
        progress: ProgressHandle,
        artifacts_root: std::path::PathBuf,
    ) -> Self {
        ConsoleWorker {
            label: label.into(),
            store,
            progress,
            artifacts_root,
            screen: None,
            config: ConfigLive::default(),
        }
    }

    /// The phone the card's live screenshot comes from.
    pub fn with_screen(mut self, screen: PhoneScreen) -> Self {
        self.screen = Some(screen);
        self
    }

    /// What the configuration says about going live.
    pub fn with_config(mut self, config: ConfigLive) -> Self {
        self.config = config;
        self
    }
}

/// What the configuration (config file, `CMAUTOBUY_*`, flags) says about going live for
/// one phone.
#[derive(Clone, Debug, Default)]
pub struct ConfigLive {
    /// `expected_address` (empty: none).
    pub expected_address: Vec<String>,
    pub self_test_goods_id: Option<String>,
    /// `purchase_mode = "dry_run"` or `run --dry-run-only`.
    pub dry_run: bool,
    /// `allow_live` / `run --allow-live`.
    pub allow_live: bool,
}

/// A configured webhook as the settings page names it (never its URL).
#[derive(Clone, Debug)]
pub struct WebhookName {
    /// `wh-` and 12 hex digits.
    pub id: String,
    pub format: &'static str,
    /// The configured name, or the format and the URL's host.
    pub label: String,
}

/// Registers a worker's store with the Admin (§4.1) as it is saved now, and records the
/// outcome in the store; given by the command that runs the client (it knows the
/// configuration: timeouts, what a claim would declare).
pub type Registrar = Arc<
    dyn Fn(Store) -> futures::future::BoxFuture<'static, crate::store::RegistrationStatus>
        + Send
        + Sync,
>;

/// What every page handler gets: the workers, the bound address and the process's
/// console secrets (CSRF token, password hash, sessions) — none of which is ever served
/// except the CSRF token inside this console's own forms.
#[derive(Clone)]
pub struct ConsoleState {
    pub workers: Arc<Vec<ConsoleWorker>>,
    /// When this process started serving.
    pub started: DateTime<Utc>,
    /// The address the listener is bound to (the `Host` check).
    pub bound: SocketAddr,
    csrf: Arc<String>,
    /// The password hash in force (the console's stored one, else the configured one);
    /// the settings page may replace it.
    password: Arc<RwLock<Option<Arc<auth::PasswordHash>>>>,
    sessions: auth::Sessions,
    /// Wrong passwords per client address and overall (login lockouts).
    throttle: Arc<auth::LoginThrottle>,
    /// The throttle's clock (`Instant::now`; tests freeze it).
    login_clock: Arc<dyn Fn() -> std::time::Instant + Send + Sync>,
    /// The adb server whose phones the settings page offers.
    pub adb_server: Option<SocketAddrV4>,
    /// Registers after the settings page saved (none: saved only).
    pub registrar: Option<Registrar>,
    /// The zone pages show times in.
    pub zone: Zone,
    /// The configured webhooks (`[[webhook]]`), by name.
    pub config_webhooks: Arc<Vec<WebhookName>>,
}

impl std::fmt::Debug for ConsoleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleState")
            .field("workers", &self.workers.len())
            .field("bound", &self.bound)
            .field("password", &self.has_password())
            .finish_non_exhaustive()
    }
}

impl ConsoleState {
    /// The console of `workers`, listening on `bound`.
    pub fn new(workers: Vec<ConsoleWorker>, bound: SocketAddr) -> Self {
        ConsoleState {
            workers: Arc::new(workers),
            started: Utc::now(),
            bound,
            csrf: Arc::new(auth::random_token()),
            password: Arc::default(),
            sessions: auth::Sessions::default(),
            throttle: Arc::new(auth::LoginThrottle::default()),
            login_clock: Arc::new(std::time::Instant::now),
            adb_server: None,
            registrar: None,
            zone: Zone::Host,
            config_webhooks: Arc::default(),
        }
    }

    /// With a password (hashed here; the plain text is not kept): every page but the
    /// login form needs a session.
    pub fn with_password(self, password: &crate::secret::Secret) -> Self {
        self.set_password(auth::PasswordHash::new(password.expose()));
        self
    }

    /// With a stored password hash (set on the settings page earlier): it replaces a
    /// configured password. One that cannot be read is ignored with a warning (the
    /// configured password, if any, stays in force).
    pub fn with_stored_password(self, phc: Option<&str>) -> Self {
        if let Some(phc) = phc {
            match auth::PasswordHash::from_phc(phc) {
                Ok(h) => self.set_password(h),
                Err(e) => {
                    tracing::warn!(code = e.code(), error = %e, "console password from the store ignored")
                }
            }
        }
        self
    }

    /// Times in this zone (tests; the host's by default).
    pub fn with_zone(mut self, zone: Zone) -> Self {
        self.zone = zone;
        self
    }

    /// The configured webhooks, named for the settings page.
    pub fn with_config_webhooks(mut self, hooks: Vec<WebhookName>) -> Self {
        self.config_webhooks = Arc::new(hooks);
        self
    }

    /// Puts `hash` in force (the settings page's password change).
    pub(crate) fn set_password(&self, hash: auth::PasswordHash) {
        *self.password.write().unwrap_or_else(|p| p.into_inner()) = Some(Arc::new(hash));
    }

    /// The adb server whose phones the settings page lists.
    pub fn with_adb_server(mut self, server: SocketAddrV4) -> Self {
        self.adb_server = Some(server);
        self
    }

    /// What registers after the settings page saved.
    pub fn with_registrar(mut self, registrar: Registrar) -> Self {
        self.registrar = Some(registrar);
        self
    }

    /// Worker `i` (its index in the list, as pages name it).
    pub fn worker(&self, i: usize) -> Option<&ConsoleWorker> {
        self.workers.get(i)
    }

    /// The CSRF token this console's forms carry (hidden field `csrf`).
    pub fn csrf(&self) -> &str {
        &self.csrf
    }

    pub(crate) fn csrf_matches(&self, given: &str) -> bool {
        auth::constant_time_eq(given.as_bytes(), self.csrf.as_bytes())
    }

    pub(crate) fn has_password(&self) -> bool {
        self.password
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .is_some()
    }

    /// The password hash (login).
    pub(crate) fn password(&self) -> Option<Arc<auth::PasswordHash>> {
        self.password
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn throttle(&self) -> &auth::LoginThrottle {
        &self.throttle
    }

    /// Now, for the login throttle.
    pub(crate) fn login_now(&self) -> std::time::Instant {
        (self.login_clock)()
    }

    /// The login throttle on a clock of the test's.
    #[cfg(test)]
    pub(crate) fn with_login_clock(
        mut self,
        clock: Arc<dyn Fn() -> std::time::Instant + Send + Sync>,
    ) -> Self {
        self.login_clock = clock;
        self
    }

    pub(crate) fn sessions(&self) -> &auth::Sessions {
        &self.sessions
    }

    pub(crate) fn session_valid(&self, headers: &axum::http::HeaderMap) -> bool {
        self.sessions.valid(headers)
    }
}
