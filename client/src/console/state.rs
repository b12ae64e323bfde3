//! [`ConsoleState`]: what every page handler gets — the workers ([`ConsoleWorker`]) and
//! the console's secrets.

use std::net::{SocketAddr, SocketAddrV4};
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::auth;
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
    password: Option<Arc<auth::PasswordHash>>,
    sessions: auth::Sessions,
    /// Wrong passwords per client address and overall (login lockouts).
    throttle: Arc<auth::LoginThrottle>,
    /// The throttle's clock (`Instant::now`; tests freeze it).
    login_clock: Arc<dyn Fn() -> std::time::Instant + Send + Sync>,
    /// The adb server whose phones the settings page offers.
    pub adb_server: Option<SocketAddrV4>,
    /// Registers after the settings page saved (none: saved only).
    pub registrar: Option<Registrar>,
}

impl std::fmt::Debug for ConsoleState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConsoleState")
            .field("workers", &self.workers.len())
            .field("bound", &self.bound)
            .field("password", &self.password.is_some())
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
            password: None,
            sessions: auth::Sessions::default(),
            throttle: Arc::new(auth::LoginThrottle::default()),
            login_clock: Arc::new(std::time::Instant::now),
            adb_server: None,
            registrar: None,
        }
    }

    /// With a password (hashed here; the plain text is not kept): every page but the
    /// login form needs a session.
    pub fn with_password(mut self, password: &crate::secret::Secret) -> Self {
        self.password = Some(Arc::new(auth::PasswordHash::new(password.expose())));
        self
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

    /// `<input type="hidden" name="csrf" …>` for a form.
    pub fn csrf_field(&self) -> String {
        // Hex: nothing to escape.
        format!(
            "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
            self.csrf
        )
    }

    pub(crate) fn csrf_matches(&self, given: &str) -> bool {
        auth::constant_time_eq(given.as_bytes(), self.csrf.as_bytes())
    }

    pub(crate) fn has_password(&self) -> bool {
        self.password.is_some()
    }

    /// The password hash (login).
    pub(crate) fn password(&self) -> Option<Arc<auth::PasswordHash>> {
        self.password.clone()
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
