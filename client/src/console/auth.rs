//! The console's password and sessions (needed for any address but loopback); the
//! login form is `auth_routes`.
//!
//! The password (`--console-password`, config `console_password`,
//! `CMAUTOBUY_CONSOLE_PASSWORD`) is kept only as a PBKDF2-HMAC-SHA256 hash with a random
//! salt ([`PasswordHash`]); the plain text is dropped once hashed. `/login` checks it (in
//! constant time) and sets a random session id in an `HttpOnly; SameSite=Strict` cookie;
//! `/logout` forgets it. Sessions live in memory: a restart logs everybody out.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

use axum::http::{header, HeaderMap};
use rand::RngCore;

use crate::notify::hmac_sha256;

/// PBKDF2 iterations (OWASP's 2023 floor for PBKDF2-HMAC-SHA256 is 600 000; a console
/// login is rare, a start must stay quick on a small box). Unit tests use fewer: an
/// unoptimised build takes ~11 s for 200 000 (the function itself is checked against
/// published vectors with their own counts).
#[cfg(not(test))]
pub const PBKDF2_ITERATIONS: u32 = 200_000;
#[cfg(test)]
pub const PBKDF2_ITERATIONS: u32 = 1_000;

/// The session cookie's name.
pub const COOKIE: &str = "cmautobuy_session";

/// 32 random bytes, hex.
pub fn random_token() -> String {
    let mut b = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut b);
    hex::encode(b)
}

/// PBKDF2-HMAC-SHA256 (RFC 8018), one 32-byte block.
pub fn pbkdf2_sha256(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut msg = salt.to_vec();
    msg.extend_from_slice(&1u32.to_be_bytes());
    let mut u = hmac_sha256(password, &msg);
    let mut t = u;
    for _ in 1..iterations {
        u = hmac_sha256(password, &u);
        for (t, u) in t.iter_mut().zip(u.iter()) {
            *t ^= u;
        }
    }
    t
}

/// A salted password hash; `Debug` shows nothing of it.
pub struct PasswordHash {
    salt: [u8; 16],
    hash: [u8; 32],
}

impl std::fmt::Debug for PasswordHash {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordHash(***)")
    }
}

impl PasswordHash {
    pub fn new(password: &str) -> Self {
        let mut salt = [0u8; 16];
        rand::thread_rng().fill_bytes(&mut salt);
        PasswordHash {
            salt,
            hash: pbkdf2_sha256(password.as_bytes(), &salt, PBKDF2_ITERATIONS),
        }
    }

    pub fn verify(&self, password: &str) -> bool {
        let h = pbkdf2_sha256(password.as_bytes(), &self.salt, PBKDF2_ITERATIONS);
        constant_time_eq(&h, &self.hash)
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
    fn a_hash_verifies_its_password_only_and_prints_nothing() {
        let h = PasswordHash::new("s3cret-pw");
        assert!(h.verify("s3cret-pw"));
        assert!(!h.verify("s3cret-px"));
        assert_eq!(format!("{h:?}"), "PasswordHash(***)");
    }
}
