//! Request identity: [`canonical_hash`], what idempotency keys compare.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// SHA-256 of the canonical form of a JSON document: object keys sorted at every level,
/// no whitespace. `serde_json` here keeps insertion order (`preserve_order`), so two
/// bodies that differ only in key order would otherwise hash differently.
pub fn canonical_hash(v: &Value) -> String {
    let mut s = String::new();
    write_canonical(v, &mut s);
    hex::encode(Sha256::digest(s.as_bytes()))
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                if let Some(child) = m.get(*k) {
                    write_canonical(child, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, child) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(child, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_hash_ignores_key_order_but_not_content() {
        let a: Value = serde_json::from_str(r#"{"b": 1, "a": {"y": [1, 2], "x": "é"}}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a": {"x": "é", "y": [1, 2]}, "b": 1}"#).unwrap();
        let c: Value = serde_json::from_str(r#"{"a": {"x": "é", "y": [2, 1]}, "b": 1}"#).unwrap();
        assert_eq!(canonical_hash(&a), canonical_hash(&b));
        assert_ne!(canonical_hash(&a), canonical_hash(&c));
    }
}
