//! Deterministic hashes and idempotency keys.
//!
//! §7.1 frames every value with its UTF-8 byte length so that no separator can make two
//! different snapshots collide (`"a:b" + "c"` vs `"a" + "b:c"`):
//!
//! ```text
//! frame(value) = decimal(len_utf8(value)) + ":" + value
//! ```
//!
//! Golden vectors computed independently (Python `hashlib`) live in
//! `fixtures/hash-vectors/` and are checked by this crate's tests.

use crate::types::SpecCandidate;
use sha2::{Digest, Sha256};

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

/// `Idempotency-Key` of a result submission (`decisions.md` §3).
pub fn result_idempotency_key(task_id: &str, attempt_id: &str) -> String {
    format!("{task_id}:{attempt_id}:result-v1")
}

/// `Idempotency-Key` of a failure submission (`decisions.md` §3).
pub fn failure_idempotency_key(task_id: &str, attempt_id: &str) -> String {
    format!("{task_id}:{attempt_id}:failure-v1")
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
}
