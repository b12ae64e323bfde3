//! Option names in running text (已选, order cards): splitting labels into comparable
//! tokens and checking that a text names every chosen option exactly.

use cmautobuy_contract::OptionMap;

use super::sku_sheet::normalize_name;

/// Splits labels into comparable tokens (spaces and list punctuation separate them).
pub fn tokens<'a>(labels: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out = Vec::new();
    for l in labels {
        for t in l.split(|c: char| {
            c.is_whitespace()
                || matches!(
                    c,
                    ';' | '；' | ',' | '，' | '、' | '/' | ':' | '：' | '\u{3000}'
                )
        }) {
            let n = normalize_name(t);
            if !n.is_empty() {
                out.push(n);
            }
        }
    }
    out
}

/// Does a set of labels name every option (each option one exact token)?
pub fn names_all<'a>(labels: impl Iterator<Item = &'a str>, options: &OptionMap) -> bool {
    let toks = tokens(labels);
    options.values().all(|v| {
        let want = tokens(std::iter::once(v.as_str()));
        !want.is_empty() && want.iter().all(|w| toks.contains(w))
    })
}
