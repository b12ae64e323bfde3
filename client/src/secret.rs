//! [`Secret`]: a string that never prints, and the one redaction point for every secret
//! the process knows ([`register`], [`scrub`]).
//!
//! The Admin token, the console password and the webhook URLs (their keys) and signing
//! secrets must never reach a log line, an error message, an artifact, a served page, a
//! webhook post or `Debug` output (contract §2, `decisions.md` §2). They live in this
//! wrapper from the moment they are read (flag, environment, file or store) until the
//! one place that uses them (the `Authorization` header, marked sensitive; the webhook
//! request).
//!
//! A wrapper keeps our own code from printing a secret, but not someone else's: an Admin
//! or a proxy that echoes the request's headers in its error answer hands the token
//! back as text, and that text would be stored, logged, served and posted like any
//! other. So every [`Secret`] is also put into a process-wide registry when it is
//! made, and [`scrub`] replaces each registered value — and the forms an echo gives it:
//! percent-encoded, JSON-escaped (serde's and Go's `\u003c` style), HTML-escaped,
//! base64; for a URL, also its long query values and path segments (a webhook's key) —
//! with `***`. It is applied where text from outside comes in (the gateway, before any
//! answer is decoded; a webhook's answer) and, as a last line, where text goes out (the
//! log writer, the console's responses, the webhook message, `diagnose-bundle`).
//! Values shorter than [`MIN_SCRUB_LEN`] are not scrubbed: no real token is that short,
//! and replacing a two-letter word everywhere would garble every log line.

use std::borrow::Cow;
use std::fmt;
use std::sync::RwLock;

/// What a scrubbed secret is replaced with.
pub const REDACTED: &str = "***";

/// Shorter registered values are not scrubbed (see the module documentation).
pub const MIN_SCRUB_LEN: usize = 4;

/// A part of a URL-shaped secret (a query value, a path segment) is registered on its
/// own from this length: a webhook key is 32+ characters, `send` or `v2` are not keys.
const MIN_URL_PART_LEN: usize = 16;

/// Every pattern to scrub, longest first (so a whole URL goes before its key).
static PATTERNS: RwLock<Vec<String>> = RwLock::new(Vec::new());

/// Registers `value` (and its encodings) for [`scrub`]. [`Secret`]'s constructors call
/// it; call it directly for a secret that is not held in a [`Secret`] (a token read from
/// a store only to be scrubbed). Idempotent.
pub fn register(value: &str) {
    if value.chars().count() < MIN_SCRUB_LEN {
        return;
    }
    // Known already (the store hands out the same token at every read): nothing to do.
    if PATTERNS
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .iter()
        .any(|p| p == value)
    {
        return;
    }
    let mut new = forms(value);
    if let Ok(url) = reqwest::Url::parse(value) {
        if url.has_host() {
            let mut parts: Vec<String> = url
                .query_pairs()
                .map(|(_, v)| v.into_owned())
                .chain(
                    url.path_segments()
                        .into_iter()
                        .flatten()
                        .map(|s| s.to_string()),
                )
                .filter(|p| p.chars().count() >= MIN_URL_PART_LEN)
                .collect();
            if let Some(pw) = url.password() {
                parts.push(pw.to_string());
            }
            for p in parts {
                new.extend(forms(&p));
            }
        }
    }
    {
        let known = PATTERNS.read().unwrap_or_else(|p| p.into_inner());
        new.retain(|p| !known.contains(p));
        if new.is_empty() {
            return;
        }
    }
    let mut known = PATTERNS.write().unwrap_or_else(|p| p.into_inner());
    for p in new {
        if !known.contains(&p) {
            known.push(p);
        }
    }
    known.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
}

/// `value` as an echo may carry it: itself, percent-encoded (upper and lower case hex),
/// JSON-escaped (serde's and Go's), HTML-escaped (named entities, and the numeric ones
/// the console's templates write), base64 (standard and URL-safe).
fn forms(value: &str) -> Vec<String> {
    use base64::Engine;
    let mut v = vec![value.to_string()];
    let upper = percent(value, true);
    v.push(upper.clone());
    v.push(percent(value, false));
    v.push(upper.replace("%20", "+"));
    let json = serde_json::to_string(value).unwrap_or_default();
    let json = json
        .strip_prefix('"')
        .and_then(|j| j.strip_suffix('"'))
        .unwrap_or(&json)
        .to_string();
    v.push(
        json.replace('<', "\\u003c")
            .replace('>', "\\u003e")
            .replace('&', "\\u0026"),
    );
    v.push(json);
    v.push(html(value));
    // As the console's askama templates escape it (`&#60;` …): the scrubber over the
    // console's answers must know the form its own pages give a secret.
    let Ok(escaped) = askama::filters::escape(value, askama::filters::Html);
    v.push(escaped.to_string());
    v.push(base64::engine::general_purpose::STANDARD.encode(value));
    v.push(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(value));
    v.retain(|p| p.chars().count() >= MIN_SCRUB_LEN);
    v.sort();
    v.dedup();
    v
}

/// RFC 3986's unreserved characters stay; every other byte is escaped (what
/// `encodeURIComponent`, Go's `url.PathEscape` and Python's `quote(safe="")` leave).
const UNRESERVED: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// `s` percent-encoded (`percent-encoding`, upper-case hex), or with lower-case hex as
/// some servers echo it.
fn percent(s: &str, upper: bool) -> String {
    let encoded = percent_encoding::utf8_percent_encode(s, UNRESERVED).to_string();
    if upper {
        return encoded;
    }
    // Only the escapes' hex digits change case; the unreserved characters around them
    // stay as they are.
    let mut out = String::with_capacity(encoded.len());
    let mut hex_left = 0;
    for c in encoded.chars() {
        if c == '%' {
            hex_left = 2;
            out.push(c);
        } else if hex_left > 0 {
            hex_left -= 1;
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` with every registered secret (in every form [`register`] knows) replaced by
/// [`REDACTED`]. Borrowed when there was nothing to replace.
pub fn scrub(text: &str) -> Cow<'_, str> {
    let known = PATTERNS.read().unwrap_or_else(|p| p.into_inner());
    let mut out = Cow::Borrowed(text);
    for p in known.iter() {
        if out.contains(p.as_str()) {
            out = Cow::Owned(out.replace(p.as_str(), REDACTED));
        }
    }
    out
}

/// [`scrub`] over bytes (a log write, a response chunk, an answer body): UTF-8 text is
/// scrubbed as text; other bytes are searched byte by byte.
pub fn scrub_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    if let Ok(s) = std::str::from_utf8(bytes) {
        return match scrub(s) {
            Cow::Borrowed(_) => Cow::Borrowed(bytes),
            Cow::Owned(s) => Cow::Owned(s.into_bytes()),
        };
    }
    let known = PATTERNS.read().unwrap_or_else(|p| p.into_inner());
    let mut out = Cow::Borrowed(bytes);
    for p in known.iter() {
        let p = p.as_bytes();
        if find(&out, p).is_some() {
            let mut next = Vec::with_capacity(out.len());
            let mut rest: &[u8] = &out;
            while let Some(i) = find(rest, p) {
                next.extend_from_slice(&rest[..i]);
                next.extend_from_slice(REDACTED.as_bytes());
                rest = &rest[i + p.len()..];
            }
            next.extend_from_slice(rest);
            out = Cow::Owned(next);
        }
    }
    out
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > hay.len() {
        return None;
    }
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Whether `text` holds a registered secret (in any known form).
pub fn contains_secret(text: &str) -> bool {
    matches!(scrub(text), Cow::Owned(_))
}

/// A writer that scrubs every write before passing it on: the log writer's last line of
/// defence. `tracing`'s formatter writes each event as one buffer, so a secret is never
/// split across two writes.
#[derive(Debug)]
pub struct ScrubWriter<W>(pub W);

impl<W: std::io::Write> std::io::Write for ScrubWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(&scrub_bytes(buf))?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

/// A [`tracing_subscriber::fmt::MakeWriter`] whose writers scrub ([`ScrubWriter`]).
#[derive(Clone, Debug)]
pub struct Scrubbed<M>(pub M);

impl<'a, M: tracing_subscriber::fmt::MakeWriter<'a>> tracing_subscriber::fmt::MakeWriter<'a>
    for Scrubbed<M>
{
    type Writer = ScrubWriter<M::Writer>;

    fn make_writer(&'a self) -> Self::Writer {
        ScrubWriter(self.0.make_writer())
    }
}

/// A secret string. `Debug` and `Display` print `***`; only [`Secret::expose`] gives the
/// value, and only the gateway's header builder, the webhook request and the store call
/// it. Making one registers the value for [`scrub`].
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Secret(String);

impl Secret {
    /// Wraps `value` and registers it for [`scrub`].
    pub fn new(value: impl Into<String>) -> Self {
        let value = value.into();
        register(&value);
        Secret(value)
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
        Secret::new(s)
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Secret::new)
    }
}

/// The saved token was given for another Admin URL: the client
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

    #[test]
    fn a_secret_is_scrubbed_in_every_form_an_echo_gives_it() {
        let v = "sEcr3t/tok+en&<x>\"q";
        let _s = Secret::new(v);
        let echoes = [
            format!("Authorization: Bearer {v}"),
            format!(
                "{{\"authorization\":{}}}",
                serde_json::to_string(&format!("Bearer {v}")).unwrap()
            ),
            format!("q={}", percent(v, true)),
            format!("q={}", percent(v, false)),
            format!("<p>{}</p>", html(v)),
            // The console's templates (askama) write numeric entities.
            "<p>sEcr3t/tok+en&#38;&#60;x&#62;&#34;q</p>".to_string(),
            format!("b64 {}", {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.encode(v)
            }),
            // Go's encoding/json escapes <, > and &.
            r#""sEcr3t/tok+en\u0026\u003cx\u003e\"q""#.to_string(),
        ];
        for e in echoes {
            let s = scrub(&e);
            assert!(!s.contains("sEcr3t"), "{e} -> {s}");
            assert!(s.contains(REDACTED), "{e} -> {s}");
            assert!(contains_secret(&e));
            let b = scrub_bytes(e.as_bytes());
            assert!(!String::from_utf8_lossy(&b).contains("sEcr3t"), "{e}");
        }
        // Not UTF-8 around it: searched as bytes.
        let mut raw = vec![0xff, 0xfe];
        raw.extend_from_slice(v.as_bytes());
        raw.push(0xff);
        let out = scrub_bytes(&raw);
        assert_eq!(
            &out[..],
            &[&[0xff, 0xfe][..], REDACTED.as_bytes(), &[0xff]].concat()[..]
        );
        assert!(matches!(scrub("nothing here"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_webhook_url_registers_its_key() {
        let key = "693a91f6-7xxx-4bc4-97a0-0ec2sifa5aaa";
        let _s = Secret::new(format!(
            "https://qyapi.weixin.qq.com/cgi-bin/webhook/send?key={key}"
        ));
        let _f = Secret::new(format!(
            "https://open.feishu.cn/open-apis/bot/v2/hook/{key}-feishu"
        ));
        assert_eq!(scrub(&format!("invalid key {key}")), "invalid key ***");
        assert_eq!(scrub(&format!("hook {key}-feishu!")), "hook ***!");
        // Short path parts are not keys.
        assert_eq!(scrub("cgi-bin/webhook/send"), "cgi-bin/webhook/send");
    }

    #[test]
    fn short_values_are_not_scrubbed() {
        let _s = Secret::new("ab");
        assert_eq!(scrub("a tab b"), "a tab b");
    }

    #[test]
    fn the_scrub_writer_scrubs_each_write() {
        use std::io::Write;
        let _s = Secret::new("writer-secret-77");
        let mut w = ScrubWriter(Vec::new());
        let line = b"error=HTTP 401: Bearer writer-secret-77 echoed\n";
        assert_eq!(w.write(line).unwrap(), line.len());
        assert_eq!(
            String::from_utf8(w.0).unwrap(),
            "error=HTTP 401: Bearer *** echoed\n"
        );
    }
}
