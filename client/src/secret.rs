//! [`Secret`]: a string that never prints.
//!
//! The Admin token is the only secret the client holds. Contract §2 and `decisions.md` §2
//! say it must never reach a log line, an error message, an artifact or `Debug` output,
//! so it lives in this wrapper from the moment it is read (flag, env, file or store) until
//! the one place that puts it on the wire (the `Authorization` header, marked sensitive).

use std::fmt;

/// A secret string. `Debug` and `Display` print `***`; only [`Secret::expose`] gives the
/// value, and only the gateway's header builder and the store call it.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The raw value. Callers must not log or format it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl From<String> for Secret {
    fn from(s: String) -> Self {
        Secret(s)
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret)
    }
}

/// The saved token was given for another Admin URL (issue 12 item 10): the client
/// refuses to send it. The operator gives the token for the new URL again.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("[{}] the saved token was given for the Admin at {saved_for}, and the Admin URL is now {admin_url}: the token is never sent to another Admin; give the token for {admin_url} again (--token, CMAUTOBUY_TOKEN or token in the config file)", Self::CODE)]
pub struct TokenForOtherAdmin {
    pub saved_for: String,
    pub admin_url: String,
}

impl TokenForOtherAdmin {
    /// The stable code of this refusal.
    pub const CODE: &'static str = "TOKEN_FOR_OTHER_ADMIN";

    /// A configuration problem: retrying does not help.
    pub fn is_retryable(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_prints_the_value() {
        let s = Secret::new("tok-123");
        assert_eq!(format!("{s}"), "***");
        assert_eq!(format!("{s:?}"), "***");
        assert_eq!(format!("{:?}", Some(&s)), "Some(***)");
        assert_eq!(s.expose(), "tok-123");
    }
}
