//! The §7.1 spec resolver: a deterministic rule engine a real Admin could start with, and
//! the operator's overrides that force any outcome.
//!
//! Rules, in order; the first rule that applies decides:
//! 1. **Normalised exact match** — trim, full-width → ASCII, case-insensitive, whitespace
//!    removed: `" Ｌ "` equals `"l"`.
//! 2. **Letter sizes** — `S/M/L/XL/XXL/2XL/3XL/…` (`2XL` ≡ `XXL`); a candidate matches when
//!    its leading size token (before any `【建議…】` / ` 建議…` advice) is the same size.
//! 3. **Weights** — `公斤`/`千克`/`kg` ↔ `斤` with 1 kg = 2 斤, points (`120斤`) and ranges
//!    (`120-130斤`, `M【建議40-50公斤】`, `L 建議50-57.5kg`). A target weight equal to a
//!    candidate's point or inside its range matches it.
//!
//! A unique candidate → `matched` (source `rule`, with a confidence); several →
//! `uncertain`; none (or no rule applies) → `rejected`. The engine never invents a
//! candidate: a match is always one of the request's candidates, copied verbatim.
//!
//! Weights are compared in integer tenths of a 斤, never floats.

use cmautobuy_contract::{SpecCandidate, SpecOutcome, SpecResolutionRequest, SpecSource};
use serde::{Deserialize, Serialize};

/// The resolver's decision, before it becomes a §7.1 answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub outcome: SpecOutcome,
    pub source: Option<SpecSource>,
    /// Index into the request's candidates (only for `matched`).
    pub candidate: Option<usize>,
    pub confidence_bps: Option<i64>,
    pub reason: String,
}

/// What the operator can force (per task or per goods).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ForcedOutcome {
    /// Matched to `candidate` (1-based index into the request's candidates).
    Matched,
    Uncertain,
    Rejected,
    /// A persisted `failed` conclusion (200, outcome `failed`).
    Failed,
    /// 503 `SPEC_RESOLUTION_UNAVAILABLE` before anything is stored.
    Unavailable,
}

/// An operator override of the resolver. Exactly one of `task_id` / `goods_id` scopes it;
/// a task override beats a goods override. Stays until cleared.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SpecOverride {
    #[serde(default)]
    pub task_id: Option<String>,
    #[serde(default)]
    pub goods_id: Option<String>,
    pub outcome: ForcedOutcome,
    /// For `matched`: 1-based candidate index (`1` = `c1`).
    #[serde(default)]
    pub candidate: Option<usize>,
    /// `rule`, `ai`, `reused` or absent (defaults: `ai` for matched/uncertain/rejected,
    /// null for failed).
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub confidence_bps: Option<i64>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// Applies an override to a request. `None` means "unavailable" (answer 503).
pub fn forced(o: &SpecOverride, req: &SpecResolutionRequest) -> Option<Decision> {
    let source = match o.source.as_deref() {
        Some("rule") => Some(SpecSource::Rule),
        Some("ai") => Some(SpecSource::Ai),
        Some("reused") => Some(SpecSource::Reused),
        Some(_) => None,
        None if o.outcome == ForcedOutcome::Failed => None,
        None => Some(SpecSource::Ai),
    };
    let reason = o.reason.clone();
    Some(match o.outcome {
        ForcedOutcome::Unavailable => return None,
        ForcedOutcome::Matched => {
            let idx = o.candidate.unwrap_or(1);
            if idx == 0 || idx > req.candidates.len() {
                Decision {
                    outcome: SpecOutcome::Failed,
                    source: None,
                    candidate: None,
                    confidence_bps: None,
                    reason: format!(
                        "operator override names candidate {idx}, the request has {}",
                        req.candidates.len()
                    ),
                }
            } else {
                Decision {
                    outcome: SpecOutcome::Matched,
                    source,
                    candidate: Some(idx - 1),
                    confidence_bps: Some(o.confidence_bps.unwrap_or(9300).clamp(0, 10_000)),
                    reason: reason.unwrap_or_else(|| "operator override: matched".into()),
                }
            }
        }
        ForcedOutcome::Uncertain => Decision {
            outcome: SpecOutcome::Uncertain,
            source,
            candidate: None,
            confidence_bps: o.confidence_bps.map(|c| c.clamp(0, 10_000)),
            reason: reason.unwrap_or_else(|| "operator override: uncertain".into()),
        },
        ForcedOutcome::Rejected => Decision {
            outcome: SpecOutcome::Rejected,
            source,
            candidate: None,
            confidence_bps: o.confidence_bps.map(|c| c.clamp(0, 10_000)),
            reason: reason.unwrap_or_else(|| "operator override: rejected".into()),
        },
        ForcedOutcome::Failed => Decision {
            outcome: SpecOutcome::Failed,
            source,
            candidate: None,
            confidence_bps: None,
            reason: reason.unwrap_or_else(|| "operator override: resolver failed".into()),
        },
    })
}

/// An earlier `matched` decision on the same snapshot, applied to this request (the
/// candidate must be in it — the snapshot hash guarantees it, but nothing is assumed).
pub fn reused(
    req: &SpecResolutionRequest,
    candidate_id: &str,
    confidence_bps: Option<i64>,
) -> Option<Decision> {
    let idx = req
        .candidates
        .iter()
        .position(|c| c.candidate_id == candidate_id)?;
    Some(Decision {
        outcome: SpecOutcome::Matched,
        source: Some(SpecSource::Reused),
        candidate: Some(idx),
        confidence_bps,
        reason: "复用此前对同一候选快照与目标尺码的解析结论".into(),
    })
}

/// The rule engine.
pub fn resolve(target: &str, candidates: &[SpecCandidate]) -> Decision {
    let t = normalize(target);
    // 1. normalised exact match
    let exact: Vec<usize> = candidates
        .iter()
        .enumerate()
        .filter(|(_, c)| normalize(&c.raw_text) == t)
        .map(|(i, _)| i)
        .collect();
    if !exact.is_empty() {
        return decide(exact, 10_000, "规格原文规范化后完全一致");
    }
    // 2. letter sizes
    if let Some(size) = letter_size(&t) {
        let hits: Vec<usize> = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| leading_letter_size(&normalize(&c.raw_text)) == Some(size))
            .map(|(i, _)| i)
            .collect();
        if !hits.is_empty() {
            return decide(hits, 9_000, "字母尺码唯一对应");
        }
    }
    // 3. weights
    if let Some(w) = weight_range(&t) {
        let hits: Vec<usize> = candidates
            .iter()
            .enumerate()
            .filter(|(_, c)| {
                weight_range(&normalize(&c.raw_text))
                    .map(|(lo, hi)| lo <= w.0 && w.1 <= hi)
                    .unwrap_or(false)
            })
            .map(|(i, _)| i)
            .collect();
        if !hits.is_empty() {
            return decide(hits, 8_500, "目标重量与候选范围唯一对应");
        }
        return Decision {
            outcome: SpecOutcome::Rejected,
            source: Some(SpecSource::Rule),
            candidate: None,
            confidence_bps: None,
            reason: "没有候选覆盖目标重量".into(),
        };
    }
    Decision {
        outcome: SpecOutcome::Rejected,
        source: Some(SpecSource::Rule),
        candidate: None,
        confidence_bps: None,
        reason: "没有规则能把目标尺码对应到候选".into(),
    }
}

fn decide(hits: Vec<usize>, confidence: i64, why: &str) -> Decision {
    if hits.len() == 1 {
        Decision {
            outcome: SpecOutcome::Matched,
            source: Some(SpecSource::Rule),
            candidate: hits.first().copied(),
            confidence_bps: Some(confidence),
            reason: why.to_string(),
        }
    } else {
        Decision {
            outcome: SpecOutcome::Uncertain,
            source: Some(SpecSource::Rule),
            candidate: None,
            confidence_bps: None,
            reason: format!("{} 个候选同时符合，不能唯一选择", hits.len()),
        }
    }
}

/// Trim, full-width → ASCII, lowercase, whitespace removed.
pub fn normalize(s: &str) -> String {
    s.trim()
        .chars()
        .map(|c| match c {
            '\u{3000}' => ' ',
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect()
}

/// A letter size in canonical form: the number of X's (signed: XS < S) and the base letter.
/// `s` = (0,'s'), `xs` = (1,'s'), `m` = (0,'m'), `xl` = (1,'l'), `xxl` = `2xl` = (2,'l').
fn letter_size(s: &str) -> Option<(u32, char)> {
    let (count, rest) = if let Some(pos) = s.find(|c: char| !c.is_ascii_digit()) {
        let (digits, rest) = s.split_at(pos);
        if digits.is_empty() {
            let xs = rest.chars().take_while(|c| *c == 'x').count();
            (xs as u32, &rest[xs..])
        } else {
            let n: u32 = digits.parse().ok()?;
            // "2xl" means two X's: the digits replace the run of x's, which must be one.
            let rest = rest.strip_prefix('x')?;
            (n, rest)
        }
    } else {
        return None;
    };
    match rest {
        "s" | "l" => Some((count, rest.chars().next()?)),
        "m" if count == 0 => Some((0, 'm')),
        _ => None,
    }
}

/// The letter size a candidate starts with ("m【建議40-50公斤】" → m, "l建議50-57.5kg" → l).
fn leading_letter_size(s: &str) -> Option<(u32, char)> {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || matches!(c, 'x' | 's' | 'm' | 'l')))
        .unwrap_or(s.len());
    letter_size(&s[..end])
}

/// A weight or weight range in tenths of a 斤, found anywhere in the (normalised) text.
/// Units: 斤, 公斤/千克/kg (×2). A range without a unit after the first number takes the
/// unit after the second ("40-50公斤").
fn weight_range(s: &str) -> Option<(i64, i64)> {
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() {
            let (a, next) = number(&chars, i)?;
            let (unit_a, after_a) = unit(&chars, next);
            // range?
            if after_a < chars.len() && matches!(chars[after_a], '-' | '~' | '～' | '至' | '—')
            {
                if let Some((b, next_b)) = chars
                    .get(after_a + 1)
                    .filter(|c| c.is_ascii_digit())
                    .and_then(|_| number(&chars, after_a + 1))
                {
                    let (unit_b, _) = unit(&chars, next_b);
                    if let Some(ub) = unit_b.or(unit_a) {
                        let ua = unit_a.unwrap_or(ub);
                        let (lo, hi) = (a * ua, b * ub);
                        return Some((lo.min(hi), lo.max(hi)));
                    }
                }
            }
            if let Some(u) = unit_a {
                return Some((a * u, a * u));
            }
            i = after_a.max(i + 1);
        } else {
            i += 1;
        }
    }
    None
}

/// A decimal number at `i` in tenths (one decimal digit kept exactly; more are refused).
fn number(chars: &[char], mut i: usize) -> Option<(i64, usize)> {
    let mut whole: i64 = 0;
    let mut digits = 0;
    while i < chars.len() && chars[i].is_ascii_digit() {
        whole = whole
            .checked_mul(10)?
            .checked_add(chars[i].to_digit(10)? as i64)?;
        digits += 1;
        i += 1;
        if digits > 6 {
            return None;
        }
    }
    let mut tenths = whole.checked_mul(10)?;
    if i + 1 < chars.len() && chars[i] == '.' && chars[i + 1].is_ascii_digit() {
        tenths += chars[i + 1].to_digit(10)? as i64;
        i += 2;
        if i < chars.len() && chars[i].is_ascii_digit() {
            return None;
        }
    }
    Some((tenths, i))
}

/// The unit at `i`: the multiplier to 斤 and the index after it.
fn unit(chars: &[char], i: usize) -> (Option<i64>, usize) {
    let rest: String = chars[i.min(chars.len())..].iter().take(2).collect();
    if rest.starts_with("公斤") || rest.starts_with("千克") || rest.starts_with("kg") {
        (Some(2), i + 2)
    } else if rest.starts_with('斤') {
        (Some(1), i + 1)
    } else {
        (None, i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cands(texts: &[&str]) -> Vec<SpecCandidate> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| SpecCandidate {
                candidate_id: format!("c{}", i + 1),
                raw_text: t.to_string(),
                options: [
                    ("color".to_string(), "黑色".to_string()),
                    ("size".to_string(), t.to_string()),
                ]
                .into_iter()
                .collect(),
            })
            .collect()
    }

    #[test]
    fn kilograms_match_jin() {
        let d = resolve("60公斤", &cands(&["120斤", "130斤"]));
        assert_eq!(d.outcome, SpecOutcome::Matched);
        assert_eq!(d.candidate, Some(0));
        assert_eq!(d.source, Some(SpecSource::Rule));
    }

    #[test]
    fn ranges_match_a_weight_inside_exactly_one() {
        let c = cands(&["M【建議40-50公斤】", "L 建議50-57.5kg", "XL 建議57.5-65kg"]);
        let d = resolve("55公斤", &c);
        assert_eq!((d.outcome, d.candidate), (SpecOutcome::Matched, Some(1)));
        let d = resolve("110斤", &c);
        assert_eq!((d.outcome, d.candidate), (SpecOutcome::Matched, Some(1)));
        // the shared boundary is inside two ranges
        let d = resolve("50kg", &c);
        assert_eq!(d.outcome, SpecOutcome::Uncertain);
        let d = resolve("120-130斤", &cands(&["120-130斤", "130-140斤"]));
        assert_eq!((d.outcome, d.candidate), (SpecOutcome::Matched, Some(0)));
        let d = resolve("125斤", &cands(&["120-130斤", "130-140斤"]));
        assert_eq!((d.outcome, d.candidate), (SpecOutcome::Matched, Some(0)));
        let d = resolve("90公斤", &cands(&["120斤", "130斤"]));
        assert_eq!(d.outcome, SpecOutcome::Rejected);
    }

    #[test]
    fn letter_sizes_and_normalisation() {
        let c = cands(&["M【建議40-50公斤】", "L 建議50-57.5kg", "2XL"]);
        assert_eq!(resolve("l", &c).candidate, Some(1));
        assert_eq!(resolve("XXL", &c).candidate, Some(2));
        assert_eq!(resolve(" Ｍ ", &c).candidate, Some(0));
        assert_eq!(resolve("XS", &c).outcome, SpecOutcome::Rejected);
        assert_eq!(normalize(" Ｘ Ｌ "), "xl");
        let dup = cands(&["L", "l "]);
        assert_eq!(resolve("L", &dup).outcome, SpecOutcome::Uncertain);
        assert_eq!(
            resolve("均码", &cands(&["S", "M"])).outcome,
            SpecOutcome::Rejected
        );
    }
}
