//! Money in integer fen (分, 1/100 yuan).
//!
//! Every amount in this project is a [`Fen`]: prices, totals and limits are compared as
//! integers, never as floats (contract §0, data model §1, `decisions.md` §9). On the wire a
//! `Fen` is a bare JSON integer (`"price_cent": 1256`).
//!
//! # Decisions
//!
//! **Integers only on the wire (data model §1 "禁止 float").** Every `*_cent` field of a
//! body — known or unknown, at any depth — is `null` or a JSON integer. `4.0`, `1e3` and
//! `12.56` are all refused, with the body's §3 validation code (`INVALID_RESULT`,
//! `INVALID_TASK_PAYLOAD`), `details.field` naming the field and a message saying
//! integers only ([`crate::validate::money_fields_are_integers`], called first by every
//! validator of a body that carries money). JSON has one number type, but a peer that
//! writes `4.0` does money in floats; the refusal is explicit, never a generic parse
//! error. (`Fen`'s own serde refuses any float too, `4.0` included — it is an `i64`.)
//! Other integer fields (`task_version`, `quantity`, …) are not money: the mock Admin
//! reads an integral float there as the integer it is (JSON Schema calls `1.0` an
//! integer).
//!
//! **A price of 0.** "Unknown" is `null`, never 0 (data model §4.2). But a free option
//! exists on real pages (a gift SKU shows `¥0`), and its price is known: 0. So a
//! `price_cent` of 0 is valid **only together with the non-empty `raw_price` it was read
//! from**; a 0 without that text is how "unknown written as 0" bugs look and is refused
//! (`INVALID_RESULT`). A `list_price_cent` (the struck-through price) is positive or
//! null. Limits stay strictly positive: `max_price_cent` > 0 (§5; a task cannot be
//! "spend nothing"), `expected_price_cent` > 0 when present. The client's collect reads
//! `¥0` as `Fen(0)` with its label as `raw_price`, which this rule accepts; the mock and
//! the client call the same [`crate::validate::check_pdd_data`], so they agree.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An amount of renminbi in fen. Can be negative only as the result of arithmetic
/// (a discount); amounts read from the wire are validated positive where the contract
/// says so.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(transparent)]
pub struct Fen(pub i64);

impl Fen {
    pub const ZERO: Fen = Fen(0);

    pub const fn new(fen: i64) -> Self {
        Fen(fen)
    }

    pub const fn get(self) -> i64 {
        self.0
    }

    pub fn checked_add(self, other: Fen) -> Option<Fen> {
        self.0.checked_add(other.0).map(Fen)
    }

    pub fn checked_sub(self, other: Fen) -> Option<Fen> {
        self.0.checked_sub(other.0).map(Fen)
    }

    pub fn checked_mul(self, n: i64) -> Option<Fen> {
        self.0.checked_mul(n).map(Fen)
    }

    /// Parses a plain decimal yuan amount such as `"12.56"`, `"88"` or `"4.7"` exactly.
    /// More than two decimals, signs, exponents, empty parts or overflow give `None`:
    /// an amount we cannot read exactly is unknown, never 0 and never rounded.
    pub fn from_yuan_str(s: &str) -> Option<Fen> {
        let (int_part, frac_part) = match s.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (s, None),
        };
        if int_part.is_empty() || !int_part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let yuan: i64 = int_part.parse().ok()?;
        let frac: i64 = match frac_part {
            None => 0,
            Some(f) if f.is_empty() || f.len() > 2 || !f.bytes().all(|b| b.is_ascii_digit()) => {
                return None
            }
            Some(f) if f.len() == 1 => f.parse::<i64>().ok()? * 10,
            Some(f) => f.parse().ok()?,
        };
        yuan.checked_mul(100)?.checked_add(frac).map(Fen)
    }
}

impl fmt::Debug for Fen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Fen({})", self.0)
    }
}

/// Displays as yuan with two decimals and a currency sign, e.g. `¥12.56`, `-¥0.30`.
impl fmt::Display for Fen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        write!(f, "{sign}¥{}.{:02}", abs / 100, abs % 100)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_yuan_exactly() {
        assert_eq!(Fen::from_yuan_str("12.56"), Some(Fen(1256)));
        assert_eq!(Fen::from_yuan_str("4.7"), Some(Fen(470)));
        assert_eq!(Fen::from_yuan_str("88"), Some(Fen(8800)));
        assert_eq!(Fen::from_yuan_str("0.01"), Some(Fen(1)));
        assert_eq!(Fen::from_yuan_str("269.00"), Some(Fen(26900)));
    }

    #[test]
    fn refuses_anything_inexact() {
        for bad in [
            "",
            ".5",
            "5.",
            "1.234",
            "-1",
            "+1",
            "1e3",
            "1,000",
            "¥1",
            " 1",
            "99999999999999999999",
        ] {
            assert_eq!(Fen::from_yuan_str(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn displays_as_yuan() {
        assert_eq!(Fen(1256).to_string(), "¥12.56");
        assert_eq!(Fen(5).to_string(), "¥0.05");
        assert_eq!(Fen(-30).to_string(), "-¥0.30");
    }

    #[test]
    fn serde_refuses_an_integral_float() {
        // `4.0` is not an i64 to serde_json, whatever its value: Fen never reads a float.
        assert!(serde_json::from_str::<Fen>("4.0").is_err());
        assert!(serde_json::from_value::<Fen>(serde_json::json!(4.0)).is_err());
        assert!(serde_json::from_str::<Fen>("1e3").is_err());
    }

    #[test]
    fn is_a_bare_integer_on_the_wire() {
        assert_eq!(serde_json::to_string(&Fen(470)).unwrap(), "470");
        assert_eq!(serde_json::from_str::<Fen>("2360").unwrap(), Fen(2360));
        assert!(serde_json::from_str::<Fen>("23.6").is_err());
        assert!(serde_json::from_str::<Fen>("\"2360\"").is_err());
    }
}
