//! Reading prices off PDD screens into integer [`Fen`].
//!
//! The type itself lives in the contract crate (`cmautobuy_contract::Fen`, re-exported
//! here) so the screens, the flows and the wire agree on one money type. This module only
//! knows how prices are *written* on the page:
//!
//! - one label: `"¥12.56"`, `"￥88"`, `"券后¥4.7"`, `"秒杀价¥12.7"`, `"提交订单 ¥269"`,
//!   `"最后3件 ¥269"`, `"，仅¥59"` — see [`parse_price`];
//! - a price split across sibling nodes: `"券后"` / `"¥"` / `"132"` — see
//!   [`price_from_parts`];
//! - a bare amount inside a node known to hold one: `"22.6"` — see [`parse_amount`];
//! - an amount with the 元 unit and no sign, as real order details write the paid amount
//!   (`"实付:,12.50元,"`, field notes §3a): `"12.50元"` — see [`parse_yuan`].
//!
//! **Invariant:** a price we cannot read exactly is `None` — never 0, never rounded, never
//! a float. Digits that are not behind a currency sign (sales counts such as "已拼8500件",
//! stock such as "最后3件") are never read as a price.

pub use cmautobuy_contract::Fen;

/// The currency signs PDD uses: ASCII-range yen sign and the fullwidth one.
const SIGNS: [char; 2] = ['¥', '￥'];

/// Parses a bare decimal yuan amount (`"22.6"`, `"269"`, `"1,299.00"`, `" 88 "`), the whole
/// string, exactly. More than two decimals, signs, exponents, empty parts or overflow
/// give `None`.
pub fn parse_amount(s: &str) -> Option<Fen> {
    let s = s.trim();
    let (int_part, frac_part) = match s.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (s, None),
    };
    let yuan = parse_int_part(int_part)?;
    let frac: i64 = match frac_part {
        None => 0,
        Some(f) if f.is_empty() || f.len() > 2 || !f.bytes().all(|b| b.is_ascii_digit()) => {
            return None
        }
        Some(f) if f.len() == 1 => i64::from(f.as_bytes()[0] - b'0') * 10,
        Some(f) => {
            let b = f.as_bytes();
            i64::from(b[0] - b'0') * 10 + i64::from(b[1] - b'0')
        }
    };
    yuan.checked_mul(100)?.checked_add(frac).map(Fen)
}

/// The integer part: plain digits, or digits grouped by commas in threes ("1,299").
fn parse_int_part(s: &str) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let mut groups = s.split(',');
    let first = groups.next()?;
    let grouped = s.contains(',');
    if first.is_empty() || (grouped && first.len() > 3) {
        return None;
    }
    let mut value = digits_value(first)?;
    for g in groups {
        if g.len() != 3 {
            return None;
        }
        value = value.checked_mul(1000)?.checked_add(digits_value(g)?)?;
    }
    Some(value)
}

fn digits_value(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.bytes().try_fold(0i64, |acc, b| {
        acc.checked_mul(10)?.checked_add(i64::from(b - b'0'))
    })
}

/// Reads the price in one label: the amount right behind the single currency sign.
///
/// Text before the sign is a wording ("券后", "折后", "秒杀价", "补贴价", "到手价",
/// "提交订单 ", "最后3件 ", "即将卖完 ", "，仅") and is not read. `None` when:
/// there is no sign or more than one (an original and a sale price side by side is
/// ambiguous); the amount has more than two decimals; it is negative ("-¥7.53" is a
/// discount); it is a range ("¥12-15", "¥12~15") or a lower bound ("¥12起"); it is in
/// units of ten thousand ("¥1.2万"); or digits run straight into it from before the sign.
pub fn parse_price(text: &str) -> Option<Fen> {
    let mut signs = text.char_indices().filter(|(_, c)| SIGNS.contains(c));
    let (pos, sign) = signs.next()?;
    if signs.next().is_some() {
        return None;
    }
    let before = text[..pos].trim_end();
    if let Some(last) = before.chars().last() {
        // "-¥5" / "−¥5" is a discount; "12¥" has digits glued to the sign.
        if matches!(last, '-' | '−' | '—' | '减') || last.is_ascii_digit() {
            return None;
        }
    }
    let after = text[pos + sign.len_utf8()..].trim_start();
    let end = after
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
        .unwrap_or(after.len());
    let (number, rest) = after.split_at(end);
    // "¥59," at the end of a sentence: the comma is punctuation, not a digit group.
    let number = number.trim_end_matches(',');
    if let Some(next) = rest.trim_start().chars().next() {
        // Ranges, lower bounds and 万-units do not state one exact price.
        if matches!(
            next,
            '-' | '~' | '～' | '—' | '起' | '万' | '千' | '百' | '亿' | '+'
        ) {
            return None;
        }
    }
    parse_amount(number)
}

/// Reads a price split over consecutive sibling labels, in page order, such as
/// `["券后", "¥", "132"]`, `["¥", "22.6", "本店已拼8.2万件"]` or `["¥", "22", ".6"]`.
///
/// The first part holding a currency sign starts the price: if it carries the amount
/// itself ("券后¥4.7") that is the answer; if it ends with the sign, the following parts
/// are joined only while they are pure amount pieces ("22", ".6"), so a neighbouring
/// sales count ("本店已拼8.2万件", "3人拼") is never glued onto the price. A second sign
/// in the parts makes it ambiguous (`None`).
pub fn price_from_parts<'a, I>(parts: I) -> Option<Fen>
where
    I: IntoIterator<Item = &'a str>,
{
    let mut iter = parts.into_iter().map(str::trim).filter(|p| !p.is_empty());
    let mut found = None;
    for part in iter.by_ref() {
        if part.contains(SIGNS) {
            found = Some(part);
            break;
        }
    }
    let head = found?;
    let sign_count = head.chars().filter(|c| SIGNS.contains(c)).count();
    if sign_count != 1 {
        return None;
    }
    let sign_end = head
        .char_indices()
        .find(|(_, c)| SIGNS.contains(c))
        .map(|(i, c)| i + c.len_utf8())?;
    let result = if head[sign_end..].trim().is_empty() {
        // Sign alone (or "券后¥"): the amount is in the next part(s).
        let mut joined = String::with_capacity(16);
        joined.push_str(head);
        let mut has_dot = false;
        for part in iter.by_ref() {
            let piece_ok = part
                .bytes()
                .all(|b| b.is_ascii_digit() || b == b'.' || b == b',');
            if !piece_ok {
                // A wording after the amount ("起", "万") still disqualifies it.
                if joined.ends_with(SIGNS) {
                    return None;
                }
                joined.push_str(part);
                break;
            }
            let dots = part.bytes().filter(|&b| b == b'.').count();
            if dots > 1 || (has_dot && dots > 0) {
                return None;
            }
            // Only an integer part may be followed by a ".6"-style fraction part.
            if joined.ends_with(|c: char| c.is_ascii_digit()) && !part.starts_with('.') {
                break;
            }
            has_dot |= dots > 0;
            joined.push_str(part);
        }
        parse_price(&joined)
    } else {
        parse_price(head)
    };
    // A later, separate price in the same run of parts ("¥269" "¥299") is ambiguous.
    if iter.any(|p| p.contains(SIGNS)) {
        return None;
    }
    result
}

/// Reads an amount written with the 元 unit and no currency sign: `"12.50元"`, or what is
/// left of the real order detail's `"实付:,12.50元,"` once its 实付 word is taken off
/// (`":,12.50元,"`). The whole text must be the amount and 元, give or take spaces and
/// the separators `,，:：` around it; anything else — a discount ("减7.53元"), an
/// estimate ("约12元"), a lower bound ("12元起"), a sign ("-12元") — is `None`. Integer
/// fen, like [`parse_amount`]: never a float.
pub fn parse_yuan(text: &str) -> Option<Fen> {
    let seps: &[char] = &[',', '，', ':', '：', ' ', '\u{3000}'];
    let t = text.trim().trim_matches(seps);
    let amount = t.strip_suffix('元')?;
    if amount.ends_with(' ') {
        return None;
    }
    parse_amount(amount)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wording_of_the_field_notes() {
        let cases = [
            ("¥12.56", 1256),
            ("¥88", 8800),
            ("券后¥4.7", 470),
            ("折后¥4.7", 470),
            ("提交订单 ¥269", 26900),
            ("最后3件 ¥269", 26900),
            ("即将卖完 ¥88", 8800),
            ("秒杀价¥12.7", 1270),
            ("补贴价¥19.7", 1970),
            ("券后¥2.99", 299),
            ("￥88", 8800),
            ("，仅¥59", 5900),
            ("¥ 269.00", 26900),
            ("¥1,299", 129900),
            ("¥0.01", 1),
        ];
        for (text, fen) in cases {
            assert_eq!(parse_price(text), Some(Fen(fen)), "{text:?}");
        }
    }

    #[test]
    fn unreadable_or_ambiguous_is_none() {
        for text in [
            "",
            "¥",
            "已拼8500件",
            "最后3件",
            "¥12.567",
            "-¥7.53",
            "减¥5",
            "用多多支付减7.53元",
            "¥12-15",
            "¥12~¥15",
            "¥12起",
            "¥1.2万",
            "¥269 ¥299",
            "¥.5",
            "¥5.",
            "¥12,34",
            "¥99999999999999999999",
            "12¥",
        ] {
            assert_eq!(parse_price(text), None, "{text:?}");
        }
    }

    #[test]
    fn yuan_unit_amounts() {
        for (text, fen) in [
            ("12.50元", 1250),
            (":,12.50元,", 1250),
            ("：12元", 1200),
            (" 0.5元 ", 50),
            ("1,299.00元", 129900),
        ] {
            assert_eq!(parse_yuan(text), Some(Fen(fen)), "{text:?}");
        }
        for text in [
            "",
            "元",
            "12.50",
            "减7.53元",
            "用多多支付减7.53元",
            "约12元",
            "12元起",
            "-12元",
            "12.505元",
            "12 元",
            "¥12元",
            "12.5.0元",
        ] {
            assert_eq!(parse_yuan(text), None, "{text:?}");
        }
    }

    #[test]
    fn split_parts() {
        assert_eq!(price_from_parts(["券后", "¥", "132"]), Some(Fen(13200)));
        assert_eq!(
            price_from_parts(["补贴价", "¥", "1499", "本店已拼5.6万件"]),
            Some(Fen(149900))
        );
        assert_eq!(
            price_from_parts(["¥", "22.6", "本店已拼8.2万件"]),
            Some(Fen(2260))
        );
        assert_eq!(price_from_parts(["¥", "22", ".6"]), Some(Fen(2260)));
        assert_eq!(price_from_parts(["继续支付", "，仅¥59"]), Some(Fen(5900)));
        // A sales count right behind the amount is a separate node, never glued on.
        assert_eq!(price_from_parts(["¥", "22.6", "3"]), Some(Fen(2260)));
        assert_eq!(price_from_parts(["¥", "12", "起"]), None);
        assert_eq!(price_from_parts(["¥", "已拼8500件"]), None);
        assert_eq!(price_from_parts(["已拼8500件"]), None);
        assert_eq!(price_from_parts(["¥", "269", "¥", "299"]), None);
        assert_eq!(price_from_parts(["¥", "22.6", ".5"]), None);
    }

    #[test]
    fn bare_amounts() {
        assert_eq!(parse_amount("22.6"), Some(Fen(2260)));
        assert_eq!(parse_amount(" 269 "), Some(Fen(26900)));
        for bad in ["", ".5", "5.", "1.234", "-1", "+1", "1e3", "1,00", "¥1"] {
            assert_eq!(parse_amount(bad), None, "{bad:?}");
        }
    }
}
