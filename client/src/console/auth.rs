//! The console's password and sessions (needed for any address but loopback); the
//! login form is `auth_routes`.
//!
//! The password (`--console-password`, config `console_password`,
//! `CMAUTOBUY_CONSOLE_PASSWORD`, or set on the 设置 page) is kept only as a
//! PBKDF2-HMAC-SHA256 hash with a random salt ([`PasswordHash`], RustCrypto's `pbkdf2`);
//! the plain text is dropped once hashed, and a password set on the page is stored as
//! that hash only (`Store::set_console_password_hash`). `/login` checks it (in
//! constant time) and sets a random session id in an `HttpOnly; SameSite=Strict` cookie;
//! `/logout` forgets it. Sessions live in memory: a restart logs everybody out.
//!
//! The password is at least [`super::listen::MIN_PASSWORD_CHARS`] characters
//! ([`super::listen::check_password_length`], applied where it is configured), and guessing is throttled ([`LoginThrottle`]): after
//! [`FREE_TRIES_PER_IP`] wrong passwords from one address, or [`FREE_TRIES_GLOBAL`] from
//! all addresses together, every login is answered `429` with `Retry-After` — the right
//! password too — for 1 s, doubling with each further wrong password up to
//! [`MAX_LOCKOUT`]; a login refused this way is not checked and not counted. A right
//! password after the lockout clears its address's count and the global one.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{header, HeaderMap};
use rand::RngCore;

/// PBKDF2 iterations of a new hash (OWASP's 2023 floor for PBKDF2-HMAC-SHA256 is
/// 600 000; a console login is rare, a start must stay quick on a small box). A stored
/// hash keeps the count it was made with ([`PasswordHash::to_phc`]), so raising this
/// never locks anybody out. Unit tests use fewer (the function itself is checked
/// against published vectors with their own counts).
#[cfg(not(test))]
pub const PBKDF2_ITERATIONS: u32 = 200_000;
#[cfg(test)]
pub const PBKDF2_ITERATIONS: u32 = 1_000;

/// The fewest iterations a stored hash may carry (a tampered store cannot make the
/// hash cheap to guess).
pub const MIN_STORED_ITERATIONS: u32 = 1_000;

/// The session cookie's name.
pub const COOKIE: &str = "cmautobuy_session";

/// 32 random bytes, hex.
pub fn random_token() -> String {
    let mut b = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// PBKDF2-HMAC-SHA256 (RFC 8018), one 32-byte block: RustCrypto's `pbkdf2` over `hmac`
/// and `sha2`.
pub fn pbkdf2_sha256(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    pbkdf2::pbkdf2_hmac_array::<sha2::Sha256, 32>(password, salt, iterations)
}

/// A salted PBKDF2-HMAC-SHA256 password hash with its iteration count; `Debug` shows
/// nothing of it. Stored (a password set on the console's 设置 page) in the PHC string
/// format `$pbkdf2-sha256$i=N,l=32$SALT$HASH` (B64 without padding, as RustCrypto's
/// `password-hash` crate writes it). The scheme is the one the console always used
/// (earlier clients stored no hash: the config file holds the password itself, hashed at
/// each start); a stored hash carries its iteration count, so a later change of
/// [`PBKDF2_ITERATIONS`] leaves every stored password valid.
#[derive(Clone)]
pub struct PasswordHash {
    salt: Vec<u8>,
    iterations: u32,
    hash: [u8; 32],
}

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordHash(***)")
    }
}

/// A stored password hash that cannot be read (`CONSOLE_PASSWORD_HASH_INVALID`).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the stored console password hash cannot be read: {0}")]
pub struct HashFormatError(pub String);

impl HashFormatError {
    pub fn code(&self) -> &'static str {
        "CONSOLE_PASSWORD_HASH_INVALID"
    }
}

const PHC_ID: &str = "pbkdf2-sha256";

impl PasswordHash {
    pub fn new(password: &str) -> Self {
        let mut salt = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut salt);
        PasswordHash {
            salt: salt.to_vec(),
            iterations: PBKDF2_ITERATIONS,
            hash: pbkdf2_sha256(password.as_bytes(), &salt, PBKDF2_ITERATIONS),
        }
    }

    pub fn verify(&self, password: &str) -> bool {
        let h = pbkdf2_sha256(password.as_bytes(), &self.salt, self.iterations);
        constant_time_eq(&h, &self.hash)
    }

    /// The PHC string stored for it.
    pub fn to_phc(&self) -> String {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD_NO_PAD;
        format!(
            "${PHC_ID}$i={},l=32${}${}",
            self.iterations,
            b64.encode(&self.salt),
            b64.encode(self.hash)
        )
    }

    /// Reads a stored PHC string ([`PasswordHash::to_phc`]).
    pub fn from_phc(s: &str) -> Result<Self, HashFormatError> {
        use base64::Engine as _;
        let bad = |why: &str| HashFormatError(why.to_string());
        let b64 = base64::engine::general_purpose::STANDARD_NO_PAD;
        let mut parts = s
            .strip_prefix('$')
            .ok_or_else(|| bad("no leading $"))?
            .split('$');
        if parts.next() != Some(PHC_ID) {
            return Err(bad("not pbkdf2-sha256"));
        }
        let params = parts.next().ok_or_else(|| bad("no parameters"))?;
        let mut iterations = None;
        for kv in params.split(',') {
            match kv.split_once('=') {
                Some(("i", v)) => iterations = v.parse::<u32>().ok(),
                Some(("l", "32")) => {}
                _ => return Err(bad("unknown parameter")),
            }
        }
        let iterations = iterations
            .filter(|n| *n >= MIN_STORED_ITERATIONS)
            .ok_or_else(|| bad("iteration count missing or too low"))?;
        let salt = parts
            .next()
            .and_then(|p| b64.decode(p).ok())
            .filter(|s| s.len() >= 8)
            .ok_or_else(|| bad("salt"))?;
        let hash: [u8; 32] = parts
            .next()
            .and_then(|p| b64.decode(p).ok())
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| bad("hash"))?;
        if parts.next().is_some() {
            return Err(bad("trailing fields"));
        }
        Ok(PasswordHash {
            salt,
            iterations,
            hash,
        })
    }
}

/// Wrong passwords from one address before it is locked out.
pub const FREE_TRIES_PER_IP: u32 = 5;
/// Wrong passwords from all addresses together before every login is locked out.
pub const FREE_TRIES_GLOBAL: u32 = 20;
/// The first lockout; each further wrong password doubles it.
pub const FIRST_LOCKOUT: Duration = Duration::from_secs(1);
/// The longest lockout.
pub const MAX_LOCKOUT: Duration = Duration::from_secs(15 * 60);
/// A count whose last wrong password is older than this starts again from zero.
const FORGET_AFTER: Duration = Duration::from_secs(3600);
/// Addresses remembered at most (the global count still holds beyond).
const MAX_ADDRESSES: usize = 4096;

#[derive(Clone, Copy, Debug, Default)]
struct Bucket {
    failures: u32,
    last: Option<Instant>,
    until: Option<Instant>,
}

impl Bucket {
    fn locked_for(&self, now: Instant) -> Option<Duration> {
        self.until
            .and_then(|u| u.checked_duration_since(now))
            .filter(|d| !d.is_zero())
    }

    /// Counts a wrong password; the lockout it starts, if any.
    fn fail(&mut self, now: Instant, free: u32) -> Option<Duration> {
        if self
            .last
            .is_some_and(|l| now.saturating_duration_since(l) > FORGET_AFTER)
        {
            *self = Bucket::default();
        }
        self.failures = self.failures.saturating_add(1);
        self.last = Some(now);
        if self.failures < free {
            return None;
        }
        let doublings = (self.failures - free).min(20);
        let lock = FIRST_LOCKOUT
            .saturating_mul(1u32 << doublings)
            .min(MAX_LOCKOUT);
        self.until = Some(now + lock);
        Some(lock)
    }
}

/// Counts wrong console passwords per client address and overall (see the module
/// documentation). Sans-IO: every call takes the time.
#[derive(Debug, Default)]
pub struct LoginThrottle {
    inner: Mutex<ThrottleState>,
}

#[derive(Debug, Default)]
struct ThrottleState {
    per_ip: HashMap<Option<IpAddr>, Bucket>,
    global: Bucket,
}

impl LoginThrottle {
    /// `Err(wait)`: logins from `ip` are locked out for `wait` more.
    pub fn check(&self, ip: Option<IpAddr>, now: Instant) -> Result<(), Duration> {
        let st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let own = st.per_ip.get(&ip).and_then(|b| b.locked_for(now));
        match (own, st.global.locked_for(now)) {
            (None, None) => Ok(()),
            (a, b) => Err(a.unwrap_or_default().max(b.unwrap_or_default())),
        }
    }

    /// Counts a wrong password from `ip`; the lockout it starts, if any.
    pub fn failed(&self, ip: Option<IpAddr>, now: Instant) -> Option<Duration> {
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if st.per_ip.len() >= MAX_ADDRESSES && !st.per_ip.contains_key(&ip) {
            st.per_ip.retain(|_, b| b.locked_for(now).is_some());
            if st.per_ip.len() >= MAX_ADDRESSES {
                st.per_ip.clear();
            }
        }
        let own = st
            .per_ip
            .entry(ip)
            .or_default()
            .fail(now, FREE_TRIES_PER_IP);
        let global = st.global.fail(now, FREE_TRIES_GLOBAL);
        match (own, global) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or_default().max(b.unwrap_or_default())),
        }
    }

    /// A right password from `ip` (outside a lockout): its count and the global one
    /// start again.
    pub fn succeeded(&self, ip: Option<IpAddr>) {
        let mut st = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        st.per_ip.remove(&ip);
        st.global = Bucket::default();
    }
}

/// The open sessions (random ids).
#[derive(Clone, Default)]
pub struct Sessions(Arc<Mutex<HashSet<String>>>);

impl Sessions {
    pub(crate) fn open(&self) -> String {
        let id = random_token();
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id.clone());
        id
    }

    pub(crate) fn close(&self, id: &str) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
    }

    /// Forgets every session (the password changed: every browser logs in again).
    pub(crate) fn close_all(&self) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clear();
    }

    /// Whether the request carries an open session's cookie.
    pub fn valid(&self, headers: &HeaderMap) -> bool {
        let Some(id) = cookie(headers) else {
            return false;
        };
        let open = self.0.lock().unwrap_or_else(|p| p.into_inner());
        open.iter()
            .any(|s| constant_time_eq(s.as_bytes(), id.as_bytes()))
    }
}

pub(crate) fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

/// Constant-time equality of two byte strings (the length is not secret).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_passwords_lock_an_address_out_for_longer_each_time() {
        let t = LoginThrottle::default();
        let a: Option<IpAddr> = Some("10.0.0.7".parse().unwrap());
        let b: Option<IpAddr> = Some("10.0.0.8".parse().unwrap());
        let t0 = Instant::now();
        for _ in 1..FREE_TRIES_PER_IP {
            assert!(t.check(a, t0).is_ok());
            assert_eq!(t.failed(a, t0), None);
        }
        assert_eq!(t.failed(a, t0), Some(FIRST_LOCKOUT));
        assert_eq!(t.check(a, t0), Err(FIRST_LOCKOUT));
        // Another address is not locked by it.
        assert!(t.check(b, t0).is_ok());
        // After the lockout: one more wrong password doubles it.
        let t1 = t0 + FIRST_LOCKOUT;
        assert!(t.check(a, t1).is_ok());
        assert_eq!(t.failed(a, t1), Some(FIRST_LOCKOUT * 2));
        let t2 = t1 + FIRST_LOCKOUT * 2;
        assert_eq!(t.failed(a, t2), Some(FIRST_LOCKOUT * 4));
        // Bounded.
        let mut now = t2;
        for _ in 0..40 {
            now += MAX_LOCKOUT;
            t.failed(a, now);
        }
        assert_eq!(t.check(a, now), Err(MAX_LOCKOUT));
        // A success after the lockout starts again.
        let later = now + MAX_LOCKOUT;
        assert!(t.check(a, later).is_ok());
        t.succeeded(a);
        assert_eq!(t.failed(a, later), None);
    }

    #[test]
    fn many_addresses_together_lock_every_login_out() {
        let t = LoginThrottle::default();
        let t0 = Instant::now();
        let mut started = None;
        for i in 0..FREE_TRIES_GLOBAL {
            let ip: Option<IpAddr> = Some(format!("10.0.1.{i}").parse().unwrap());
            started = t.failed(ip, t0);
        }
        assert_eq!(started, Some(FIRST_LOCKOUT));
        let fresh: Option<IpAddr> = Some("192.168.9.9".parse().unwrap());
        assert_eq!(t.check(fresh, t0), Err(FIRST_LOCKOUT));
        assert!(t.check(fresh, t0 + FIRST_LOCKOUT).is_ok());
    }

    #[test]
    fn constant_time_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }

    #[test]
    fn pbkdf2_matches_rfc_7914() {
        // RFC 7914 §11: PBKDF2-HMAC-SHA256, P = "passwd", S = "salt", c = 1 (first 32
        // bytes of the 64-byte answer).
        assert_eq!(
            hex::encode(pbkdf2_sha256(b"passwd", b"salt", 1)),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc"
        );
        // The RFC 6070 inputs with SHA-256 (the vectors commonly published for it).
        for (c, want) in [
            (
                1,
                "120fb6cffcf8b32c43e7225256c4f837a86548c92ccc35480805987cb70be17b",
            ),
            (
                2,
                "ae4d0c95af6b46d32d0adff928f06dd02a303f8ef3c251dfd6e2d85a95474c43",
            ),
            (
                4096,
                "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a",
            ),
        ] {
            assert_eq!(
                hex::encode(pbkdf2_sha256(b"password", b"salt", c)),
                want,
                "c = {c}"
            );
        }
    }

    #[test]
    fn a_stored_hash_round_trips_and_keeps_its_iteration_count() {
        let h = PasswordHash::new("s3cret-pw-0123");
        let phc = h.to_phc();
        assert!(phc.starts_with("$pbkdf2-sha256$i=1000,l=32$"), "{phc}");
        assert!(!phc.contains("s3cret"));
        let back = PasswordHash::from_phc(&phc).unwrap();
        assert!(back.verify("s3cret-pw-0123"));
        assert!(!back.verify("s3cret-pw-0124"));
        // Made elsewhere (Python's hashlib.pbkdf2_hmac, 4096 rounds, salt "NaCl-salt-16byte"):
        // another count than today's still verifies.
        let other = "$pbkdf2-sha256$i=4096,l=32$TmFDbC1zYWx0LTE2Ynl0ZQ$2f05JaVMpVKU3d1J1g4ytnizK5bw30+qnzOqq1q3JGM";
        let h = PasswordHash::from_phc(other).unwrap();
        assert!(h.verify("hunter2-hunter2"));
        for bad in [
            "",
            "pbkdf2-sha256$i=4096,l=32$TmFDbA$AAAA",
            "$argon2id$v=19$m=1,t=1,p=1$TmFDbA$AAAA",
            "$pbkdf2-sha256$i=10,l=32$TmFDbC1zYWx0LTE2Ynl0ZQ$2f05JaVMpVKU3d1J1g4ytnizK5bw30+qnzOqq1q3JGM",
            "$pbkdf2-sha256$i=4096,l=32$TmFDbC1zYWx0LTE2Ynl0ZQ$AAAA",
            "$pbkdf2-sha256$i=4096,l=32$TmFDbC1zYWx0LTE2Ynl0ZQ$2f05JaVMpVKU3d1J1g4ytnizK5bw30+qnzOqq1q3JGM$x",
            "$pbkdf2-sha256$i=4096,l=32,x=1$TmFDbC1zYWx0LTE2Ynl0ZQ$2f05JaVMpVKU3d1J1g4ytnizK5bw30+qnzOqq1q3JGM",
        ] {
            let e = PasswordHash::from_phc(bad).unwrap_err();
            assert_eq!(e.code(), "CONSOLE_PASSWORD_HASH_INVALID", "{bad}");
        }
    }

    #[test]
    fn a_hash_verifies_its_password_only_and_prints_nothing() {
        let h = PasswordHash::new("s3cret-pw");
        assert!(h.verify("s3cret-pw"));
        assert!(!h.verify("s3cret-px"));
        assert_eq!(format!("{h:?}"), "PasswordHash(***)");
    }
}
