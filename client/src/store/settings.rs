//! The settings table: the client id (`CLIENT-` + random, generated once when the store
//! is first opened, reused forever), the display name, the Admin URL, the token, the
//! device, and the last registration status.
//!
//! The token is bound to the Admin URL it was saved for (
//! `token_admin_url`): when the Admin URL changes and no new token comes with it, the
//! saved token is not handed out ([`Settings::token`] is `None`) and
//! [`Store::token_binding`] says why, so the client never sends one Admin's token to
//! another.

use chrono::Utc;

use super::db::{get_setting, put_setting, Store, SETTING_CLIENT_ID};
use super::error::{Result, StoreError};
use crate::secret::Secret;

const SETTING_NAME: &str = "name";
const SETTING_ADMIN_URL: &str = "admin_url";
const SETTING_TOKEN: &str = "token";
const SETTING_DEVICE: &str = "device";
const SETTING_REGISTRATION: &str = "registration";
const SETTING_DEVICE_PAUSE: &str = "device_pause";
/// The Admin URL the saved token was given for.
const SETTING_TOKEN_ADMIN_URL: &str = "token_admin_url";

/// Whether the saved token may be sent to the saved Admin URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TokenBinding {
    /// No token saved.
    NoToken,
    /// The token was saved for this Admin URL (or for no URL yet: bound at first use).
    Bound,
    /// The token was saved for another Admin URL: it is not sent (give the token again).
    OtherAdmin {
        saved_for: String,
        admin_url: String,
    },
}

/// URLs compared as the operator means them: surrounding blanks and trailing `/` aside.
fn same_admin(a: &str, b: &str) -> bool {
    a.trim().trim_end_matches('/') == b.trim().trim_end_matches('/')
}

fn binding(token: Option<&str>, admin_url: Option<&str>, saved_for: Option<&str>) -> TokenBinding {
    match (token, admin_url, saved_for) {
        (None, _, _) => TokenBinding::NoToken,
        (Some(_), Some(now), Some(was)) if !same_admin(now, was) => TokenBinding::OtherAdmin {
            saved_for: was.to_string(),
            admin_url: now.to_string(),
        },
        _ => TokenBinding::Bound,
    }
}

/// The settings as stored on `conn` (a connection or a transaction).
fn read_settings(conn: &rusqlite::Connection) -> Result<Settings> {
    let client_id = get_setting(conn, SETTING_CLIENT_ID)?
        .ok_or_else(|| StoreError::NotFound("client id".into()))?;
    let registration = match get_setting(conn, SETTING_REGISTRATION)? {
        Some(s) => Some(
            serde_json::from_str(&s)
                .map_err(|e| StoreError::Corrupt(format!("registration status: {e}")))?,
        ),
        None => None,
    };
    let admin_url = get_setting(conn, SETTING_ADMIN_URL)?;
    let token = get_setting(conn, SETTING_TOKEN)?;
    let saved_for = get_setting(conn, SETTING_TOKEN_ADMIN_URL)?;
    let token = match binding(token.as_deref(), admin_url.as_deref(), saved_for.as_deref()) {
        TokenBinding::Bound => token.map(Secret::new),
        TokenBinding::NoToken | TokenBinding::OtherAdmin { .. } => {
            // Not handed out, but still a secret of this process: scrubbed wherever
            // it would show.
            if let Some(t) = &token {
                crate::secret::register(t);
            }
            None
        }
    };
    Ok(Settings {
        client_id,
        name: get_setting(conn, SETTING_NAME)?,
        admin_url,
        token,
        device: get_setting(conn, SETTING_DEVICE)?,
        registration,
    })
}

fn read_binding(conn: &rusqlite::Connection) -> Result<TokenBinding> {
    let token = get_setting(conn, SETTING_TOKEN)?;
    let admin_url = get_setting(conn, SETTING_ADMIN_URL)?;
    let saved_for = get_setting(conn, SETTING_TOKEN_ADMIN_URL)?;
    Ok(binding(
        token.as_deref(),
        admin_url.as_deref(),
        saved_for.as_deref(),
    ))
}

/// [`Store::save_settings`]'s rules, in the caller's transaction.
fn apply_patch(
    tx: &rusqlite::Transaction<'_>,
    patch: &SettingsPatch,
    now: chrono::DateTime<Utc>,
) -> Result<()> {
    let has_token = get_setting(tx, SETTING_TOKEN)?.is_some();
    if has_token && get_setting(tx, SETTING_TOKEN_ADMIN_URL)?.is_none() {
        if let Some(old) = get_setting(tx, SETTING_ADMIN_URL)? {
            put_setting(tx, SETTING_TOKEN_ADMIN_URL, &old, now)?;
        }
    }
    if let Some(v) = &patch.name {
        put_setting(tx, SETTING_NAME, v, now)?;
    }
    if let Some(v) = &patch.admin_url {
        put_setting(tx, SETTING_ADMIN_URL, v, now)?;
    }
    if let Some(v) = &patch.token {
        put_setting(tx, SETTING_TOKEN, v.expose(), now)?;
    }
    if let Some(v) = &patch.device {
        put_setting(tx, SETTING_DEVICE, v, now)?;
    }
    let admin = get_setting(tx, SETTING_ADMIN_URL)?;
    let bound = get_setting(tx, SETTING_TOKEN_ADMIN_URL)?;
    let token_now = get_setting(tx, SETTING_TOKEN)?.is_some();
    // A new token is for the Admin URL it comes with; a token saved before any
    // URL is bound to the first one.
    if patch.token.is_some() || (token_now && bound.is_none()) {
        match &admin {
            Some(url) => put_setting(tx, SETTING_TOKEN_ADMIN_URL, url, now)?,
            None => {
                tx.execute(
                    "DELETE FROM settings WHERE key = ?1",
                    [SETTING_TOKEN_ADMIN_URL],
                )?;
            }
        }
    }
    Ok(())
}

const SETTING_LIVE_CAP: &str = "live_cap";
const SETTING_CLAIM_WAIT: &str = "claim_wait";
const SETTING_CLOCK_SKEW: &str = "clock_skew";
const SETTING_PDD_VERSION_HOLD: &str = "pdd_version_hold";
/// Why live is refused for the account check, as last recorded.
const SETTING_ACCOUNT_REFUSAL: &str = "account_refusal";

/// Why the worker declares `dry_run` although live is allowed (pacing): a live
/// order cap reached. Written by the running client, removed when the window has passed;
/// `status` shows it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveCapNote {
    /// RFC 3339 UTC: live again from then on.
    pub until: String,
    pub reason: String,
}

/// Why claiming waits (a transient claim error: network trouble, 429, 5xx), written by
/// the running client when it backs off and removed at the next claim that gets an
/// answer; `status` shows it — above all the Admin's `Retry-After`, which can hold
/// claims for a long time (the policy caps it at an hour).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClaimWait {
    /// RFC 3339 UTC: the next claim is not sent before then.
    pub until: String,
    /// The Admin's `Retry-After`, in seconds from the answer, when it sent one.
    pub retry_after_secs: Option<u64>,
    /// The HTTP status of the answer, when there was one.
    pub status: Option<u16>,
    /// The claim's error (scrubbed like every gateway error).
    pub reason: String,
}

/// Why the claim loop is paused for the phone: written when the worker pauses,
/// removed when it resumes; `status` shows it. Not an operator alert — the worker resumes
/// by itself when a device check passes.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DevicePause {
    /// RFC 3339 UTC.
    pub since: String,
    /// The failing check's code (`DEVICE_OFFLINE`, `PDD_NOT_INSTALLED`, …) or the device
    /// failure code of the `retry_wait` outcome that paused it.
    pub code: String,
    pub message: String,
}

/// Settings as stored. `client_id` always exists once the store is open.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    pub client_id: String,
    pub name: Option<String>,
    pub admin_url: Option<String>,
    /// `None` also when the saved token was given for another Admin URL
    /// ([`TokenBinding::OtherAdmin`]): it is never handed to a gateway for this one.
    pub token: Option<Secret>,
    pub device: Option<String>,
    pub registration: Option<RegistrationStatus>,
}

/// A change to the settings; `None` fields are left alone.
#[derive(Clone, Debug, Default)]
pub struct SettingsPatch {
    pub name: Option<String>,
    pub admin_url: Option<String>,
    pub token: Option<Secret>,
    pub device: Option<String>,
}

/// The outcome of the last background registration (§4.1), shown by `status`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RegistrationStatus {
    /// `ok`, `pending` or `failed`.
    pub state: String,
    pub at: String,
    #[serde(default)]
    pub error: Option<String>,
    /// Whether the failure was a permanent rejection (401/403/4xx): identity not valid.
    #[serde(default)]
    pub rejected: bool,
}

impl Store {
    /// The stable client id (`X-Client-Id`).
    pub fn client_id(&self) -> Result<String> {
        let conn = self.lock();
        get_setting(&conn, SETTING_CLIENT_ID)?
            .ok_or_else(|| StoreError::NotFound("client id".into()))
    }

    /// Saves the given settings durably (the §4.1 "save locally first" step). A token is
    /// bound to the Admin URL it is saved with (the patch's, else the saved one); a new
    /// Admin URL without a token leaves the old token bound to the old URL, so it is not
    /// sent ([`Store::token_binding`]). A token saved by a client that did not bind
    /// tokens is bound to the Admin URL saved with it.
    pub fn settings(&self) -> Result<Settings> {
        read_settings(&self.lock())
    }

    /// Whether the saved token may be sent to the saved Admin URL (see [`TokenBinding`]).
    pub fn token_binding(&self) -> Result<TokenBinding> {
        read_binding(&self.lock())
    }

    /// Saves the given settings durably (the §4.1 "save locally first" step). A token is
    /// bound to the Admin URL it is saved with (the patch's, else the saved one); a new
    /// Admin URL without a token leaves the old token bound to the old URL, so it is not
    /// sent ([`Store::token_binding`]). A token saved by a client that did not bind
    /// tokens is bound to the Admin URL saved with it.
    pub fn save_settings(&self, patch: &SettingsPatch) -> Result<Settings> {
        let now = Utc::now();
        self.durable(|tx| apply_patch(tx, patch, now))?;
        self.settings()
    }

    /// What [`Store::settings`] and [`Store::token_binding`] would say after
    /// [`Store::save_settings`] of `patch` — without saving it: the same rules run in a
    /// transaction that is rolled back (`doctor` checks the settings it is given and
    /// changes none).
    pub fn preview_settings(&self, patch: &SettingsPatch) -> Result<(Settings, TokenBinding)> {
        let mut conn = self.lock();
        let tx = conn.transaction()?;
        apply_patch(&tx, patch, Utc::now())?;
        let out = (read_settings(&tx)?, read_binding(&tx)?);
        tx.rollback()?;
        Ok(out)
    }

    pub fn set_registration_status(&self, status: &RegistrationStatus) -> Result<()> {
        let json = serde_json::to_string(status)
            .map_err(|e| StoreError::Corrupt(format!("registration status: {e}")))?;
        let conn = self.lock();
        put_setting(&conn, SETTING_REGISTRATION, &json, Utc::now())
    }
}

impl Store {
    /// Records (`Some`) or clears (`None`) the device pause.
    pub fn set_device_pause(&self, pause: Option<&DevicePause>) -> Result<()> {
        let conn = self.lock();
        match pause {
            Some(p) => {
                let json = serde_json::to_string(p)
                    .map_err(|e| StoreError::Corrupt(format!("device pause: {e}")))?;
                put_setting(&conn, SETTING_DEVICE_PAUSE, &json, Utc::now())
            }
            None => {
                conn.execute(
                    "DELETE FROM settings WHERE key = ?1",
                    [SETTING_DEVICE_PAUSE],
                )?;
                Ok(())
            }
        }
    }

    /// The device pause last recorded by a running client, if any.
    pub fn device_pause(&self) -> Result<Option<DevicePause>> {
        let conn = self.lock();
        match get_setting(&conn, SETTING_DEVICE_PAUSE)? {
            Some(s) => serde_json::from_str(&s)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("device pause: {e}"))),
            None => Ok(None),
        }
    }
}

impl Store {
    /// Records (`Some`) or clears (`None`) the claim backoff ([`ClaimWait`]).
    pub fn set_claim_wait(&self, wait: Option<&ClaimWait>) -> Result<()> {
        let conn = self.lock();
        match wait {
            Some(w) => {
                let json = serde_json::to_string(w)
                    .map_err(|e| StoreError::Corrupt(format!("claim wait: {e}")))?;
                put_setting(&conn, SETTING_CLAIM_WAIT, &json, Utc::now())
            }
            None => {
                conn.execute("DELETE FROM settings WHERE key = ?1", [SETTING_CLAIM_WAIT])?;
                Ok(())
            }
        }
    }

    /// The claim backoff last recorded by a running client, if any.
    pub fn claim_wait(&self) -> Result<Option<ClaimWait>> {
        let conn = self.lock();
        match get_setting(&conn, SETTING_CLAIM_WAIT)? {
            Some(s) => serde_json::from_str(&s)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("claim wait: {e}"))),
            None => Ok(None),
        }
    }

    /// The token saved in the store at `path`, whatever Admin it was saved for, read
    /// without creating, migrating or writing anything (`diagnose-bundle` scrubs it out of
    /// what it packs). `Ok(None)`: no store there, or no token in it.
    pub fn saved_token_at(path: &std::path::Path) -> Result<Option<Secret>> {
        if !path.is_file() {
            return Ok(None);
        }
        let conn = rusqlite::Connection::open_with_flags(
            path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(super::db::BUSY_TIMEOUT)?;
        Ok(get_setting(&conn, SETTING_TOKEN)?.map(Secret::new))
    }

    /// Records (`Some`) or clears (`None`) the live cap note.
    pub fn set_live_cap(&self, note: Option<&LiveCapNote>) -> Result<()> {
        let conn = self.lock();
        match note {
            Some(n) => {
                let json = serde_json::to_string(n)
                    .map_err(|e| StoreError::Corrupt(format!("live cap: {e}")))?;
                put_setting(&conn, SETTING_LIVE_CAP, &json, Utc::now())
            }
            None => {
                conn.execute("DELETE FROM settings WHERE key = ?1", [SETTING_LIVE_CAP])?;
                Ok(())
            }
        }
    }

    /// Records (`Some(why)`) or clears the clock skew refusal.
    pub fn set_clock_skew(&self, why: Option<&str>) -> Result<()> {
        let conn = self.lock();
        match why {
            Some(w) => put_setting(&conn, SETTING_CLOCK_SKEW, w, Utc::now()),
            None => {
                conn.execute("DELETE FROM settings WHERE key = ?1", [SETTING_CLOCK_SKEW])?;
                Ok(())
            }
        }
    }

    /// Records (`Some(why)`) or clears why live is paused for an unproven PDD version
    ///.
    pub fn set_pdd_version_hold(&self, why: Option<&str>) -> Result<()> {
        let conn = self.lock();
        match why {
            Some(w) => put_setting(&conn, SETTING_PDD_VERSION_HOLD, w, Utc::now()),
            None => {
                conn.execute(
                    "DELETE FROM settings WHERE key = ?1",
                    [SETTING_PDD_VERSION_HOLD],
                )?;
                Ok(())
            }
        }
    }

    /// Records (or clears) why live is refused for the account check: not checked yet,
    /// a check that failed, or a changed account.
    pub fn set_account_refusal(&self, why: Option<&str>) -> Result<()> {
        let conn = self.lock();
        match why {
            Some(w) => put_setting(&conn, SETTING_ACCOUNT_REFUSAL, w, Utc::now()),
            None => {
                conn.execute(
                    "DELETE FROM settings WHERE key = ?1",
                    [SETTING_ACCOUNT_REFUSAL],
                )?;
                Ok(())
            }
        }
    }

    /// Why live is paused for the PDD version, as last recorded by a running client.
    pub fn pdd_version_hold(&self) -> Result<Option<String>> {
        let conn = self.lock();
        get_setting(&conn, SETTING_PDD_VERSION_HOLD)
    }

    /// Why live is refused for the account check, as last recorded by a running client.
    pub fn account_refusal(&self) -> Result<Option<String>> {
        let conn = self.lock();
        get_setting(&conn, SETTING_ACCOUNT_REFUSAL)
    }

    /// Why live is refused for clock skew, as last recorded by a running client.
    pub fn clock_skew(&self) -> Result<Option<String>> {
        let conn = self.lock();
        get_setting(&conn, SETTING_CLOCK_SKEW)
    }

    /// The live cap last recorded by a running client, if any.
    pub fn live_cap(&self) -> Result<Option<LiveCapNote>> {
        let conn = self.lock();
        match get_setting(&conn, SETTING_LIVE_CAP)? {
            Some(s) => serde_json::from_str(&s)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("live cap: {e}"))),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn client_id_is_generated_once_and_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = Store::path_in(dir.path());
        let a = Store::open(&path).unwrap().client_id().unwrap();
        let b = Store::open(&path).unwrap().client_id().unwrap();
        assert_eq!(a, b);
        assert!(
            a.starts_with("CLIENT-") && a.len() == "CLIENT-".len() + 16,
            "{a}"
        );
    }

    fn save(s: &Store, admin: Option<&str>, token: Option<&str>) -> Settings {
        s.save_settings(&SettingsPatch {
            admin_url: admin.map(str::to_string),
            token: token.map(Secret::new),
            ..Default::default()
        })
        .unwrap()
    }

    /// A preview says what a save would leave — the token for the URL it comes with,
    /// the old token not handed to another URL — and leaves the store as it was.
    #[test]
    fn a_preview_applies_the_save_rules_and_saves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&Store::path_in(dir.path())).unwrap();
        store
            .save_settings(&SettingsPatch {
                name: Some("n".into()),
                admin_url: Some("http://a".into()),
                token: Some(Secret::new("tok-a".to_string())),
                device: Some("D".into()),
            })
            .unwrap();
        let before = format!("{:?}", store.settings().unwrap());
        let (s, b) = store
            .preview_settings(&SettingsPatch {
                admin_url: Some("http://b".into()),
                token: Some(Secret::new("tok-b".to_string())),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(b, TokenBinding::Bound);
        assert_eq!(s.admin_url.as_deref(), Some("http://b"));
        assert_eq!(s.token.as_ref().map(Secret::expose), Some("tok-b"));
        let (s, b) = store
            .preview_settings(&SettingsPatch {
                admin_url: Some("http://b".into()),
                ..Default::default()
            })
            .unwrap();
        assert!(matches!(b, TokenBinding::OtherAdmin { .. }), "{b:?}");
        assert!(s.token.is_none());
        assert_eq!(format!("{:?}", store.settings().unwrap()), before);
        assert_eq!(store.token_binding().unwrap(), TokenBinding::Bound);
        assert_eq!(
            store.settings().unwrap().token.as_ref().map(Secret::expose),
            Some("tok-a")
        );
    }

    #[test]
    fn the_token_is_bound_to_the_admin_url_it_was_saved_for() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let st = save(&s, Some("http://a.example"), Some("tok-a"));
        assert_eq!(st.token.as_ref().map(Secret::expose), Some("tok-a"));
        assert_eq!(s.token_binding().unwrap(), TokenBinding::Bound);
        // The same Admin (a trailing slash aside): still sent.
        let st = save(&s, Some("http://a.example/"), None);
        assert_eq!(st.token.as_ref().map(Secret::expose), Some("tok-a"));
        // Another Admin without a new token: the old token is not handed out.
        let st = save(&s, Some("http://b.example"), None);
        assert_eq!(st.token, None);
        assert_eq!(
            s.token_binding().unwrap(),
            TokenBinding::OtherAdmin {
                saved_for: "http://a.example".into(),
                admin_url: "http://b.example".into()
            }
        );
        // Back to the first Admin: it is that Admin's token again.
        let st = save(&s, Some("http://a.example"), None);
        assert_eq!(st.token.as_ref().map(Secret::expose), Some("tok-a"));
        // A new token with the new URL: bound to it.
        let st = save(&s, Some("http://b.example"), Some("tok-b"));
        assert_eq!(st.token.as_ref().map(Secret::expose), Some("tok-b"));
        assert_eq!(s.token_binding().unwrap(), TokenBinding::Bound);
        // A new token alone is for the saved URL.
        let st = save(&s, None, Some("tok-b2"));
        assert_eq!(st.token.as_ref().map(Secret::expose), Some("tok-b2"));
        assert_eq!(save(&s, Some("http://a.example"), None).token, None);
    }

    #[test]
    fn a_token_saved_before_binding_existed_is_bound_to_its_admin_url() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        {
            // What an older client wrote: a token and a URL, no binding.
            let c = s.lock();
            put_setting(&c, SETTING_ADMIN_URL, "http://old.example", Utc::now()).unwrap();
            put_setting(&c, SETTING_TOKEN, "tok-old", Utc::now()).unwrap();
        }
        assert_eq!(s.token_binding().unwrap(), TokenBinding::Bound);
        assert!(s.settings().unwrap().token.is_some());
        let st = save(&s, Some("http://new.example"), None);
        assert_eq!(st.token, None, "the old token must not follow the new URL");
        assert!(matches!(
            s.token_binding().unwrap(),
            TokenBinding::OtherAdmin { .. }
        ));
        // A token given before any URL is bound to the first URL saved.
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        save(&s, None, Some("tok"));
        assert!(save(&s, Some("http://first.example"), None).token.is_some());
        assert!(save(&s, Some("http://second.example"), None)
            .token
            .is_none());
    }

    #[test]
    fn saved_settings_are_read_back_and_the_token_is_not_printed() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open(&Store::path_in(dir.path())).unwrap();
        let st = s
            .save_settings(&SettingsPatch {
                name: Some("办公室-01".into()),
                token: Some(Secret::new("tok")),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(st.name.as_deref(), Some("办公室-01"));
        assert_eq!(st.token.as_ref().map(Secret::expose), Some("tok"));
        assert!(!format!("{st:?}").contains("tok\""));
    }
}
