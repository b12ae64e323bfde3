//! The self-test, sans-IO: the rule that decides when live may be
//! declared on a phone without the operator vouching for it, and what the self-test buys.
//!
//! The self-test is a dry-run purchase on `self_test_goods_id` — the first available
//! option combination the goods' sheet shows ([`pick_options`]), quantity 1 — stopped
//! before 提交订单 exactly like any dry-run purchase (the device guard refuses submit taps
//! anyway). No Admin is involved: no claim, no report, no spec resolution. Its artifacts
//! go under the artifacts root like any attempt's (task folder `self-test`, attempt id
//! `self-test-…`). It is recorded per (device serial, PDD version)
//! (`Store::start_self_test` / `finish_self_test`); a pass also proves that PDD version
//! for the version gate (`proven_by` = `self-test ATTEMPT`).
//!
//! When it runs ([`due`]): at start after the first passing device check, whenever the
//! PDD version read before a claim has no passing self-test on this phone (a PDD update),
//! and on request (`Store::request_self_test`, `cmautobuy-client self-test`). A failure
//! is retried with backoff ([`retry_after`]: 5 min doubling to 1 h) and raises a
//! non-blocking `self_test_failed` alert.
//!
//! `purchase_mode = auto` declares live only when [`refusal`] says nothing: the self-test
//! passed on the phone's current PDD version (or the operator vouches: `allow_live`).
//! `purchase_mode = dry_run` / `run --dry-run-only` never declares live.

use std::time::Duration;

use chrono::{DateTime, Utc};
use cmautobuy_contract::{OptionMap, PddData};

/// The artifacts' task folder of every self-test, and the attempt ids' prefix.
pub const TASK_FOLDER: &str = "self-test";
pub const ATTEMPT_PREFIX: &str = "self-test-";

/// The first retry after a failed self-test, and the cap of the doubling.
pub const FIRST_RETRY: Duration = Duration::from_secs(5 * 60);
pub const MAX_RETRY: Duration = Duration::from_secs(60 * 60);

/// The self-test's order limit (fen): a dry run submits nothing, so it only keeps the
/// total check meaningful; `self_test_goods_id` should name a cheap goods all the same.
pub const MAX_PRICE_FEN: i64 = 10_000_000;

/// Why live waits without a configured test goods (status, logs).
pub const NEEDS_GOODS: &str = "live needs self_test_goods_id: a cheap goods the self-test can open";

/// A goods id as the purchase flow takes it: 1–24 ASCII digits.
pub fn valid_goods_id(v: &str) -> bool {
    !v.is_empty() && v.len() <= 24 && v.bytes().all(|b| b.is_ascii_digit())
}

/// What the store knows of the self-test of one phone on one PDD version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub started_at: DateTime<Utc>,
    /// `None`: started and never finished (the process stopped mid-test).
    pub finished_at: Option<DateTime<Utc>>,
    pub passed: bool,
    /// The failure code of the last failed run.
    pub code: Option<String>,
    /// Failed runs in a row on this version (the backoff counts them).
    pub failures: u32,
    pub attempt_id: String,
}

/// The wait before the next try after `failures` failed runs in a row (≥ 1): 5 min,
/// doubling, capped at 1 h.
pub fn retry_after(failures: u32) -> Duration {
    let n = failures.saturating_sub(1).min(16);
    FIRST_RETRY.saturating_mul(1u32 << n).min(MAX_RETRY)
}

/// Whether the self-test should run now on this phone and version: never run (or cut
/// short) on it; asked for by the operator; or failed and its backoff has passed. A pass
/// stands until the version changes or the operator asks again.
pub fn due(record: Option<&Record>, requested: bool, now: DateTime<Utc>) -> bool {
    if requested {
        return true;
    }
    let Some(r) = record else { return true };
    let Some(finished) = r.finished_at else {
        return true;
    };
    if r.passed {
        return false;
    }
    let wait = chrono::Duration::from_std(retry_after(r.failures.max(1)))
        .unwrap_or(chrono::Duration::hours(1));
    now >= finished + wait
}

/// What the live rule knows about one phone now.
#[derive(Clone, Debug)]
pub struct LiveInputs<'a> {
    /// `purchase_mode = dry_run` or `run --dry-run-only`.
    pub dry_run_only: bool,
    /// The operator vouches (`--allow-live` / `allow_live = true`): no self-test needed.
    pub vouched: bool,
    pub goods_configured: bool,
    /// The PDD version last read on the phone (`None`: not read, or unreadable).
    pub version: Option<&'a str>,
    /// The self-test record of that version on this phone.
    pub record: Option<&'a Record>,
}

/// Why this phone may not be declared live for want of a self-test (`None`: it may, as
/// far as the self-test goes — the other gates may still narrow it). The text is what
/// `status` shows after "live paused: ".
pub fn refusal(i: &LiveInputs<'_>) -> Option<String> {
    if i.dry_run_only {
        return Some("purchase_mode = dry_run (or run --dry-run-only): never live".into());
    }
    if i.vouched {
        return None;
    }
    if !i.goods_configured {
        return Some(NEEDS_GOODS.into());
    }
    let Some(v) = i.version else {
        return Some("self-test waits for the PDD version to be read".into());
    };
    match i.record {
        Some(r) if r.passed => None,
        Some(Record {
            finished_at: Some(at),
            code,
            ..
        }) => Some(format!(
            "self-test failed ({}) at {} on PDD {v}",
            code.as_deref().unwrap_or("-"),
            at.format("%H:%M UTC")
        )),
        Some(_) => Some(format!("self-test running on PDD {v}")),
        None => Some(format!("self-test not run yet on PDD {v}")),
    }
}

/// The options the self-test selects: the first available SKU the sheet lists (in page
/// order: the first colour that has an available size, and its first available size),
/// `None` when nothing is available or the goods has no option at all.
pub fn pick_options(data: &PddData) -> Option<OptionMap> {
    data.skus
        .iter()
        .find(|s| s.available && !s.options.is_empty())
        .map(|s| s.options.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use cmautobuy_contract::{PriceGranularity, Sku};

    fn at(min: i64) -> DateTime<Utc> {
        DateTime::<Utc>::from_timestamp(1_800_000_000 + min * 60, 0).unwrap()
    }

    fn rec(passed: bool, finished: Option<i64>, failures: u32) -> Record {
        Record {
            started_at: at(0),
            finished_at: finished.map(at),
            passed,
            code: (!passed).then(|| "GOODS_UNAVAILABLE".into()),
            failures,
            attempt_id: "self-test-1".into(),
        }
    }

    #[test]
    fn the_backoff_doubles_from_5_minutes_to_an_hour() {
        let mins: Vec<u64> = (1..=6).map(|n| retry_after(n).as_secs() / 60).collect();
        assert_eq!(mins, [5, 10, 20, 40, 60, 60]);
        assert_eq!(retry_after(u32::MAX), MAX_RETRY);
    }

    #[test]
    fn it_is_due_when_never_run_cut_short_requested_or_its_backoff_passed() {
        assert!(due(None, false, at(0)));
        assert!(due(Some(&rec(false, None, 0)), false, at(1)), "cut short");
        assert!(
            !due(Some(&rec(true, Some(1), 0)), false, at(999)),
            "a pass stands"
        );
        assert!(due(Some(&rec(true, Some(1), 0)), true, at(2)), "asked for");
        let failed = rec(false, Some(10), 1);
        assert!(!due(Some(&failed), false, at(14)));
        assert!(due(Some(&failed), false, at(15)));
        let failed3 = rec(false, Some(10), 3);
        assert!(!due(Some(&failed3), false, at(29)));
        assert!(due(Some(&failed3), false, at(30)));
    }

    #[test]
    fn live_waits_for_a_pass_on_the_current_version_unless_vouched() {
        let pass = rec(true, Some(1), 0);
        let fail = rec(false, Some(61), 1);
        let base = LiveInputs {
            dry_run_only: false,
            vouched: false,
            goods_configured: true,
            version: Some("7.36.0"),
            record: Some(&pass),
        };
        assert_eq!(refusal(&base), None);
        let r = refusal(&LiveInputs {
            record: Some(&fail),
            ..base.clone()
        })
        .unwrap();
        assert!(
            r.contains("self-test failed (GOODS_UNAVAILABLE) at "),
            "{r}"
        );
        assert!(refusal(&LiveInputs {
            record: None,
            ..base.clone()
        })
        .unwrap()
        .contains("not run yet on PDD 7.36.0"));
        assert!(refusal(&LiveInputs {
            version: None,
            ..base.clone()
        })
        .is_some());
        assert_eq!(
            refusal(&LiveInputs {
                goods_configured: false,
                record: None,
                ..base.clone()
            })
            .as_deref(),
            Some(NEEDS_GOODS)
        );
        // The operator vouches: no self-test needed; dry_run wins over everything.
        let vouched = LiveInputs {
            vouched: true,
            goods_configured: false,
            record: None,
            ..base.clone()
        };
        assert_eq!(refusal(&vouched), None);
        assert!(refusal(&LiveInputs {
            dry_run_only: true,
            ..vouched
        })
        .is_some());
    }

    fn sku(color: &str, size: &str, available: bool) -> Sku {
        let mut options = OptionMap::new();
        options.insert("color".into(), color.into());
        options.insert("size".into(), size.into());
        Sku {
            options,
            price_cent: None,
            list_price_cent: None,
            price_observed_at: OptionMap::new(),
            available,
            raw_price: None,
        }
    }

    #[test]
    fn the_first_available_combination_is_picked() {
        let mut d = PddData {
            schema_version: Some(1),
            goods_id: "1".into(),
            title: None,
            shop_name: None,
            captured_at: None,
            price_granularity: PriceGranularity::Sku,
            dimensions: vec![],
            skus: vec![
                sku("黑色", "S", false),
                sku("黑色", "M", true),
                sku("白色", "S", true),
            ],
            extra: Default::default(),
        };
        let o = pick_options(&d).unwrap();
        assert_eq!((o["color"].as_str(), o["size"].as_str()), ("黑色", "M"));
        d.skus.iter_mut().for_each(|s| s.available = false);
        assert_eq!(pick_options(&d), None);
        assert!(valid_goods_id("602938475610"));
        assert!(!valid_goods_id("60293847561a") && !valid_goods_id(""));
    }
}
