//! Deterministic hashes and idempotency keys.
//!
//! # Spec resolution (contract §7.1)
//!
//! §7.1 frames every value with its UTF-8 byte length so that no separator can make two
//! different snapshots collide (`"a:b" + "c"` vs `"a" + "b:c"`):
//!
//! ```text
//! frame(value) = decimal(len_utf8(value)) + ":" + value
//! ```
//!
//! Its key is `spec-resolution-v1:` + a SHA-256 of the framed ids: any task id fits it, and
//! the rule below does not touch it.
//!
//! # Result and failure keys (`decisions.md` §3)
//!
//! - result: `{task_id}:{attempt_id}:result-v1`; failure: `{task_id}:{attempt_id}:failure-v1`.
//! - Inside the key, every byte of the UTF-8 task id (and attempt id) outside visible ASCII
//!   (0x21–0x7E), and the visible bytes `%` and `:`, is written `%XX` (uppercase hex):
//!   `采购 0001` → `%E9%87%87%E8%B4%AD%200001`, `50%:off` → `50%25%3Aoff`; `T-0001`, `cg12`
//!   and a UUID stay as they are, so every ordinary id keeps the contract's exact form.
//!   Escaping `%` keeps the encoding one-to-one (two ids never share a key); escaping `:`
//!   keeps the separators unambiguous. The key is a pure function of the ids, the same
//!   after any restart, and always a valid header value (visible ASCII only).
//! - A key is at most [`IDEMPOTENCY_KEY_MAX_BYTES`] (255) bytes. The contract names no
//!   limit: this is the bundled mock Admin's, stated here so client and mock share it.
//! - A task id that cannot be carried — empty, holding a control character (Unicode
//!   `Cc`: C0, DEL, C1), or whose failure key would exceed the limit — is refused when it
//!   is claimed ([`check_task_id_for_keys`]): the client never runs it and raises the
//!   contract §5 protocol alert instead (claiming stops, the id is shown), as for an
//!   incomplete payload.
//! - An Admin accepts any [`is_valid_idempotency_key`]: 1–255 bytes of a valid HTTP field
//!   value (RFC 9110 §5.5), as a server on Go's net/http would; the keys above are the
//!   narrowest case of it.
//!
//! Golden vectors computed independently (Python `hashlib`, `urllib.parse`) live in
//! `fixtures/hash-vectors/` and are checked by this crate's tests.

use crate::types::SpecCandidate;
use sha2::{Digest, Sha256};
use std::borrow::Cow;

/// Domain tag of the v1 snapshot hash and idempotency key.
pub const SPEC_RESOLUTION_V1: &str = "spec-resolution-v1";

/// Appends `frame(value)` to `out`.
pub fn frame_into(out: &mut String, value: &str) {
    out.push_str(&value.len().to_string());
    out.push(':');
    out.push_str(value);
}

/// `frame(value)` as a new string.
pub fn frame(value: &str) -> String {
    let mut s = String::with_capacity(value.len() + 4);
    frame_into(&mut s, value);
    s
}

fn sha256_hex(material: &str) -> String {
    hex::encode(Sha256::digest(material.as_bytes()))
}

/// The view of a candidate the hash covers: id, raw text and the two v1 options.
/// Missing options hash as empty strings (validation rejects them before that matters).
pub struct CandidateView<'a> {
    pub candidate_id: &'a str,
    pub raw_text: &'a str,
    pub color: &'a str,
    pub size: &'a str,
}

impl<'a> From<&'a SpecCandidate> for CandidateView<'a> {
    fn from(c: &'a SpecCandidate) -> Self {
        CandidateView {
            candidate_id: &c.candidate_id,
            raw_text: &c.raw_text,
            color: c.options.get("color").map(String::as_str).unwrap_or(""),
            size: c.options.get("size").map(String::as_str).unwrap_or(""),
        }
    }
}

/// The material of `candidate_snapshot_hash` (exposed for operators' debugging tools).
pub fn candidate_snapshot_material<'a>(
    pdd_goods_id: &str,
    selected_color: &str,
    candidates: impl ExactSizeIterator<Item = CandidateView<'a>>,
) -> String {
    let mut m = String::new();
    frame_into(&mut m, SPEC_RESOLUTION_V1);
    frame_into(&mut m, pdd_goods_id);
    frame_into(&mut m, selected_color);
    frame_into(&mut m, &candidates.len().to_string());
    for c in candidates {
        frame_into(&mut m, c.candidate_id);
        frame_into(&mut m, c.raw_text);
        frame_into(&mut m, c.color);
        frame_into(&mut m, c.size);
    }
    m
}

/// `candidate_snapshot_hash` of §7.1: lowercase hex SHA-256 of the framed snapshot.
pub fn candidate_snapshot_hash<'a>(
    pdd_goods_id: &str,
    selected_color: &str,
    candidates: impl ExactSizeIterator<Item = CandidateView<'a>>,
) -> String {
    sha256_hex(&candidate_snapshot_material(
        pdd_goods_id,
        selected_color,
        candidates,
    ))
}

/// Convenience: the snapshot hash of a list of wire candidates.
pub fn snapshot_hash_of(
    pdd_goods_id: &str,
    selected_color: &str,
    candidates: &[SpecCandidate],
) -> String {
    candidate_snapshot_hash(
        pdd_goods_id,
        selected_color,
        candidates.iter().map(CandidateView::from),
    )
}

/// The deterministic `Idempotency-Key` of a spec resolution (§7.1):
/// `"spec-resolution-v1:" + hex(sha256(frame(task_id) + frame(attempt_id) +
/// frame(candidate_snapshot_hash) + frame("spec-resolution-v1")))`.
pub fn spec_resolution_idempotency_key(
    task_id: &str,
    attempt_id: &str,
    candidate_snapshot_hash: &str,
) -> String {
    let mut m = String::new();
    frame_into(&mut m, task_id);
    frame_into(&mut m, attempt_id);
    frame_into(&mut m, candidate_snapshot_hash);
    frame_into(&mut m, SPEC_RESOLUTION_V1);
    format!("{SPEC_RESOLUTION_V1}:{}", sha256_hex(&m))
}

/// Longest `Idempotency-Key`, in bytes. The contract names no limit: this is the bundled
/// mock Admin's, stated here so that client and mock share it.
pub const IDEMPOTENCY_KEY_MAX_BYTES: usize = 255;

/// Suffix of a result key.
pub const RESULT_KEY_SUFFIX: &str = "result-v1";
/// Suffix of a failure key (the longer of the two).
pub const FAILURE_KEY_SUFFIX: &str = "failure-v1";

/// Whether `b` is written as is inside a result/failure key.
fn kept_in_key(b: u8) -> bool {
    (0x21..=0x7e).contains(&b) && b != b'%' && b != b':'
}

/// One id as written inside a result/failure key: bytes outside visible ASCII, and `%`
/// and `:`, percent-encoded (`%XX`, uppercase hex); an ordinary id comes back borrowed.
pub fn key_component(id: &str) -> Cow<'_, str> {
    if id.bytes().all(kept_in_key) {
        return Cow::Borrowed(id);
    }
    let mut out = String::with_capacity(id.len() * 3);
    for b in id.bytes() {
        if kept_in_key(b) {
            out.push(b as char);
        } else {
            out.push('%');
            out.push(char::from(HEX_UPPER[usize::from(b >> 4)]));
            out.push(char::from(HEX_UPPER[usize::from(b & 0x0f)]));
        }
    }
    Cow::Owned(out)
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

fn submission_key(task_id: &str, attempt_id: &str, suffix: &str) -> String {
    format!(
        "{}:{}:{suffix}",
        key_component(task_id),
        key_component(attempt_id)
    )
}

/// `Idempotency-Key` of a result submission: `{task_id}:{attempt_id}:result-v1`, the ids
/// written with [`key_component`] (the rule in the module documentation).
pub fn result_idempotency_key(task_id: &str, attempt_id: &str) -> String {
    submission_key(task_id, attempt_id, RESULT_KEY_SUFFIX)
}

/// `Idempotency-Key` of a failure submission: `{task_id}:{attempt_id}:failure-v1`, the ids
/// written with [`key_component`] (the rule in the module documentation).
pub fn failure_idempotency_key(task_id: &str, attempt_id: &str) -> String {
    submission_key(task_id, attempt_id, FAILURE_KEY_SUFFIX)
}

/// Why a task id cannot be carried in a result/failure key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TaskIdRefusal {
    Empty,
    /// The id holds a control character (the first one's code point).
    ControlCharacter(char),
    /// The failure key would be `key_bytes` long, above [`IDEMPOTENCY_KEY_MAX_BYTES`].
    KeyTooLong {
        key_bytes: usize,
    },
}

impl std::fmt::Display for TaskIdRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TaskIdRefusal::Empty => write!(f, "the task id is empty"),
            TaskIdRefusal::ControlCharacter(c) => write!(
                f,
                "the task id holds a control character (U+{:04X})",
                u32::from(*c)
            ),
            TaskIdRefusal::KeyTooLong { key_bytes } => write!(
                f,
                "its Idempotency-Key would be {key_bytes} bytes, above the limit of {IDEMPOTENCY_KEY_MAX_BYTES}"
            ),
        }
    }
}

impl std::error::Error for TaskIdRefusal {}

/// Whether `task_id` can be carried in every result/failure key of its attempts, whose
/// ids are `attempt_id_len` bytes once written with [`key_component`] (a hyphenated UUID:
/// 36). A refused id must never be executed (the rule in the module documentation).
pub fn check_task_id_for_keys(task_id: &str, attempt_id_len: usize) -> Result<(), TaskIdRefusal> {
    if task_id.is_empty() {
        return Err(TaskIdRefusal::Empty);
    }
    if let Some(c) = task_id.chars().find(|c| c.is_control()) {
        return Err(TaskIdRefusal::ControlCharacter(c));
    }
    let key_bytes =
        key_component(task_id).len() + 1 + attempt_id_len + 1 + FAILURE_KEY_SUFFIX.len();
    if key_bytes > IDEMPOTENCY_KEY_MAX_BYTES {
        return Err(TaskIdRefusal::KeyTooLong { key_bytes });
    }
    Ok(())
}

/// Whether an Admin accepts `key` as an `Idempotency-Key`: 1–[`IDEMPOTENCY_KEY_MAX_BYTES`]
/// bytes of a valid HTTP field value (RFC 9110 §5.5: visible ASCII and obs-text — here
/// UTF-8 —, spaces and tabs only between them, no other control byte).
pub fn is_valid_idempotency_key(key: &str) -> bool {
    let b = key.as_bytes();
    let field_vchar = |c: u8| (0x21..=0x7e).contains(&c) || c >= 0x80;
    !b.is_empty()
        && b.len() <= IDEMPOTENCY_KEY_MAX_BYTES
        && field_vchar(b[0])
        && field_vchar(b[b.len() - 1])
        && b.iter().all(|&c| field_vchar(c) || c == b' ' || c == b'\t')
}

/// Whether `s` is a 64-character lowercase hexadecimal SHA-256.
pub fn is_lower_hex_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_counts_utf8_bytes() {
        assert_eq!(frame("abc"), "3:abc");
        assert_eq!(frame(""), "0:");
        assert_eq!(frame("黑色"), "6:黑色");
        assert_eq!(frame("a:b"), "3:a:b");
    }

    #[test]
    fn separators_cannot_collide() {
        let a = [CandidateView {
            candidate_id: "c1",
            raw_text: "a:b",
            color: "x",
            size: "a:b",
        }];
        let b = [CandidateView {
            candidate_id: "c1",
            raw_text: "a",
            color: "x",
            size: "a",
        }];
        assert_ne!(
            candidate_snapshot_hash("g", "x", a.into_iter()),
            candidate_snapshot_hash("g", "x", b.into_iter())
        );
    }

    #[test]
    fn keys_have_the_documented_shape() {
        let h = candidate_snapshot_hash("937122477375", "黑色", std::iter::empty());
        assert!(is_lower_hex_sha256(&h));
        let k = spec_resolution_idempotency_key("cg1", "attempt-1", &h);
        assert!(k.starts_with("spec-resolution-v1:"));
        assert!(is_lower_hex_sha256(&k["spec-resolution-v1:".len()..]));
        assert_eq!(result_idempotency_key("cg1", "a1"), "cg1:a1:result-v1");
        assert_eq!(failure_idempotency_key("cg1", "a1"), "cg1:a1:failure-v1");
    }

    #[test]
    fn ordinary_ids_keep_the_exact_key() {
        let a = "0b9c2f4e-7d1a-4c3b-9e8f-123456789abc";
        assert_eq!(
            result_idempotency_key("T-0001", a),
            format!("T-0001:{a}:result-v1")
        );
        assert_eq!(
            failure_idempotency_key("COLLECT-20260810-0001", a),
            format!("COLLECT-20260810-0001:{a}:failure-v1")
        );
        assert!(matches!(key_component("cg12"), Cow::Borrowed("cg12")));
        assert!(matches!(key_component("a_b.c~d/e?f#g"), Cow::Borrowed(_)));
    }

    #[test]
    fn non_ascii_space_percent_and_colon_are_percent_encoded() {
        assert_eq!(
            result_idempotency_key("采购-0001", "a1"),
            "%E9%87%87%E8%B4%AD-0001:a1:result-v1"
        );
        assert_eq!(
            failure_idempotency_key("采购 0001", "a1"),
            "%E9%87%87%E8%B4%AD%200001:a1:failure-v1"
        );
        assert_eq!(key_component("50%:off"), "50%25%3Aoff");
        assert_eq!(
            key_component("%25"),
            "%2525",
            "already-encoded text is encoded again"
        );
        assert_eq!(key_component("cg😀"), "cg%F0%9F%98%80");
        assert_eq!(key_component("\u{7f}"), "%7F");
        // One-to-one: ids that differ never share a key.
        assert_ne!(key_component("a:b"), key_component("a%3Ab"));
        assert_ne!(
            result_idempotency_key("a:b", "c"),
            result_idempotency_key("a", "b:c")
        );
        for id in ["采购 0001", "50%:off", "T-0001", "x\ty"] {
            let k = result_idempotency_key(id, "a1");
            assert!(k.bytes().all(|b| (0x21..=0x7e).contains(&b)), "{k}");
            assert!(is_valid_idempotency_key(&k), "{k}");
        }
    }

    #[test]
    fn keys_are_a_pure_function_of_the_ids() {
        // The same ids, built afresh (as after a restart), give the same key.
        let id: String = ["采购", " ", "0001"].concat();
        let attempt = format!("attempt-{}", 1);
        let a = result_idempotency_key(&id, &attempt);
        for _ in 0..3 {
            assert_eq!(result_idempotency_key("采购 0001", "attempt-1"), a);
        }
        assert_eq!(a, "%E9%87%87%E8%B4%AD%200001:attempt-1:result-v1");
        assert_ne!(a, failure_idempotency_key(&id, &attempt));
    }

    #[test]
    fn ids_that_cannot_be_carried_are_refused() {
        const UUID: usize = 36;
        assert_eq!(check_task_id_for_keys("T-0001", UUID), Ok(()));
        assert_eq!(check_task_id_for_keys("采购 0001", UUID), Ok(()));
        assert_eq!(check_task_id_for_keys("", UUID), Err(TaskIdRefusal::Empty));
        for (id, c) in [
            ("cg\n1", '\n'),
            ("cg\t1", '\t'),
            ("\u{0}x", '\u{0}'),
            ("x\u{7f}", '\u{7f}'),
            ("采购\u{85}", '\u{85}'),
        ] {
            assert_eq!(
                check_task_id_for_keys(id, UUID),
                Err(TaskIdRefusal::ControlCharacter(c)),
                "{id:?}"
            );
        }
        // The failure key is the longer one: `{id}:{36}:failure-v1` ≤ 255 bytes.
        let room = IDEMPOTENCY_KEY_MAX_BYTES - UUID - 2 - FAILURE_KEY_SUFFIX.len();
        assert_eq!(check_task_id_for_keys(&"x".repeat(room), UUID), Ok(()));
        assert_eq!(
            check_task_id_for_keys(&"x".repeat(room + 1), UUID),
            Err(TaskIdRefusal::KeyTooLong { key_bytes: 256 })
        );
        // Encoded length counts: 23 CJK characters are 207 encoded bytes, 24 are 216.
        assert_eq!(room, 207);
        assert_eq!(check_task_id_for_keys(&"采".repeat(23), UUID), Ok(()));
        assert!(check_task_id_for_keys(&"采".repeat(24), UUID).is_err());
        let fits = "采".repeat(23);
        let k = failure_idempotency_key(&fits, &"a".repeat(UUID));
        assert_eq!(k.len(), IDEMPOTENCY_KEY_MAX_BYTES);
        assert!(is_valid_idempotency_key(&k));
        let msg = TaskIdRefusal::KeyTooLong { key_bytes: 300 }.to_string();
        assert!(msg.contains("300") && msg.contains("255"), "{msg}");
        assert!(TaskIdRefusal::ControlCharacter('\n')
            .to_string()
            .contains("U+000A"));
    }

    #[test]
    fn an_admin_accepts_any_valid_header_value_up_to_the_limit() {
        for ok in [
            "k",
            "cg1:a1:result-v1",
            "采购-0001:a1:result-v1",
            "a b\tc",
            &"k".repeat(255),
        ] {
            assert!(is_valid_idempotency_key(ok), "{ok:?}");
        }
        for bad in [
            "",
            " k",
            "k ",
            "\tk",
            "a\nb",
            "a\rb",
            "a\u{0}b",
            "a\u{7f}b",
            &"k".repeat(256),
            &"采".repeat(86),
        ] {
            assert!(!is_valid_idempotency_key(bad), "{bad:?}");
        }
    }
}
