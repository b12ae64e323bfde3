//! The goods id the phone is *showing*, read from `dumpsys activity top` (field notes
//! §3a): real goods pages print no goods id in the accessibility tree, but the goods
//! page's WebView shows up in `dumpsys activity top` with a `url` field
//! (`goods.html?thumb_url=<enc>&…&goods_id=<digits>…`) and/or an escaped-JSON `props`
//! field (`{\"thumb_url\":\"…\",\"goods_id\":\"<digits>\"}`), and the page's fragment
//! arguments carry the same.
//!
//! # The pattern
//! One loose pattern takes every form: `goods_id` (not part of a longer name such as
//! `refer_goods_id`) followed by 1–5 of `\ " : = space`, then 6–24 digits.
//!
//! # Several ids in one output — the rule
//! An output can name more than one goods: a stale fragment of the previous goods page,
//! a hidden WebView, another task's activity. [`displayed_goods_id`] decides
//! deliberately, and never guesses:
//! 1. **Scope.** Only the ACTIVITY sections that say `mResumed=true` count (the
//!    foreground activity). When no section says so (an Android build that prints no
//!    state), every section counts.
//! 2. **Hidden parts do not count.** Inside the scope, a view whose visibility flag is
//!    `I` (invisible) or `G` (gone) — with every view nested under it — and a fragment
//!    that is `mHidden=true`, `mDetached=true` or `mRemoving=true` are skipped.
//! 3. **One id or none.** Exactly one distinct id left → [`TopGoods::Shown`]; none →
//!    [`TopGoods::NotShown`]; two or more different ids → [`TopGoods::Conflicting`],
//!    which callers treat as *unknown*: neither proof of identity nor proof of a
//!    redirect (a purchase then needs its expected title, a collect reports
//!    `unverified`).
//!
//! Pure: text in, value out; no panic on any input.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

/// The goods id `dumpsys activity top` says the foreground page shows.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "goods_ids", rename_all = "snake_case")]
pub enum TopGoods {
    /// Exactly one goods id in the visible part of the foreground activity.
    Shown(String),
    /// No goods id: not a goods page, or a phone that does not print it.
    NotShown,
    /// Different goods ids in the visible part of the foreground activity (sorted):
    /// which one is displayed cannot be told.
    Conflicting(Vec<String>),
}

impl TopGoods {
    /// The id when exactly one is shown.
    pub fn shown(&self) -> Option<&str> {
        match self {
            TopGoods::Shown(id) => Some(id),
            _ => None,
        }
    }

    /// A short description for traces and messages (ids only, never page text).
    pub fn describe(&self) -> String {
        match self {
            TopGoods::Shown(id) => format!("goods_id {id}"),
            TopGoods::NotShown => "no goods id".into(),
            TopGoods::Conflicting(ids) => format!("conflicting goods ids {}", ids.join(", ")),
        }
    }
}

/// The `dumpsys activity top` command line (argv).
pub const ACTIVITY_TOP_ARGV: &[&str] = &["dumpsys", "activity", "top"];

fn goods_id_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        // The preceding character must not extend the name (`refer_goods_id=` is not a
        // goods id of this page).
        Regex::new(r#"(?:^|[^A-Za-z0-9_])goods_id[\\": =]{1,5}([0-9]{6,})"#).expect("static regex")
    })
}

/// `Name{hash F…` of a view line in the View Hierarchy: F is its visibility flag.
fn view_flag_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^[\w.$]+\{[0-9a-f]+ ([VIG])").expect("static regex"))
}

/// `Name{hash} (` — the first line of a fragment in `Active Fragments` / `Added
/// Fragments`.
fn fragment_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:#\d+: )?[\w.$]+\{[0-9a-f]+\}(?:\s|$)").expect("static regex")
    })
}

/// The goods ids in `line` (6–24 digits each).
fn ids_in(line: &str) -> impl Iterator<Item = String> + '_ {
    goods_id_re()
        .captures_iter(line)
        .filter_map(|c| c.get(1))
        .map(|m| m.as_str())
        .filter(|d| d.len() <= 24)
        .map(str::to_string)
}

fn indent(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// One ACTIVITY section: whether it is resumed, and the ids of its visible parts.
#[derive(Default)]
struct Section {
    resumed: bool,
    ids: BTreeSet<String>,
}

/// A fragment block being read: its indentation, whether it is hidden, its ids.
struct Fragment {
    indent: usize,
    hidden: bool,
    ids: BTreeSet<String>,
}

/// Reads one section's lines.
fn read_section(lines: &[&str]) -> Section {
    let mut s = Section::default();
    // A hidden view: lines indented deeper than it belong to it.
    let mut hidden_view: Option<usize> = None;
    let mut fragment: Option<Fragment> = None;
    let close = |f: Option<Fragment>, s: &mut Section| {
        if let Some(f) = f {
            if !f.hidden {
                s.ids.extend(f.ids);
            }
        }
    };
    for line in lines {
        if line.trim().is_empty() {
            continue;
        }
        let ind = indent(line);
        let body = line.trim_start();
        if line.contains("mResumed=true") {
            s.resumed = true;
        }
        if let Some(h) = hidden_view {
            if ind > h {
                continue;
            }
            hidden_view = None;
        }
        if fragment.as_ref().is_some_and(|f| ind <= f.indent) {
            close(fragment.take(), &mut s);
        }
        if let Some(c) = view_flag_re().captures(body) {
            if c.get(1).is_some_and(|m| m.as_str() != "V") {
                hidden_view = Some(ind);
                continue;
            }
        } else if fragment_re().is_match(body) {
            fragment = Some(Fragment {
                indent: ind,
                hidden: false,
                ids: BTreeSet::new(),
            });
        }
        match fragment.as_mut() {
            Some(f) => {
                if ["mHidden=true", "mDetached=true", "mRemoving=true"]
                    .iter()
                    .any(|m| body.contains(m))
                {
                    f.hidden = true;
                }
                f.ids.extend(ids_in(body));
            }
            None => s.ids.extend(ids_in(body)),
        }
    }
    close(fragment.take(), &mut s);
    s
}

/// The goods id the foreground page shows, from the text of `dumpsys activity top` (the
/// rule is in the module documentation).
pub fn displayed_goods_id(output: &str) -> TopGoods {
    let lines: Vec<&str> = output.lines().collect();
    // ACTIVITY sections: from an `ACTIVITY …` line to the next one (or a TASK line).
    let mut sections: Vec<Section> = Vec::new();
    let mut start: Option<usize> = None;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        let header = t.starts_with("ACTIVITY ");
        if header || t.starts_with("TASK ") {
            if let Some(s) = start.take() {
                sections.push(read_section(&lines[s..i]));
            }
            if header {
                start = Some(i + 1);
            }
        }
    }
    if let Some(s) = start {
        sections.push(read_section(&lines[s..]));
    }
    if sections.is_empty() {
        // No ACTIVITY header at all: the whole output is one section.
        sections.push(read_section(&lines));
    }
    let any_resumed = sections.iter().any(|s| s.resumed);
    let ids: BTreeSet<String> = sections
        .into_iter()
        .filter(|s| s.resumed || !any_resumed)
        .flat_map(|s| s.ids)
        .collect();
    let mut ids: Vec<String> = ids.into_iter().collect();
    match ids.len() {
        0 => TopGoods::NotShown,
        1 => TopGoods::Shown(ids.remove(0)),
        _ => TopGoods::Conflicting(ids),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOODS: &str = include_str!("../../../fixtures/activity/goods_737116531267.txt");
    const HOME: &str = include_str!("../../../fixtures/activity/home.txt");
    const STALE: &str = include_str!("../../../fixtures/activity/stale_fragment_hidden.txt");
    const TWO_TASKS: &str = include_str!("../../../fixtures/activity/two_tasks.txt");
    const CONFLICT: &str = include_str!("../../../fixtures/activity/conflicting_ids.txt");

    #[test]
    fn the_goods_page_shows_its_id_in_url_props_and_arguments() {
        assert_eq!(
            displayed_goods_id(GOODS),
            TopGoods::Shown("737116531267".into())
        );
    }

    #[test]
    fn other_pages_show_none() {
        assert_eq!(displayed_goods_id(HOME), TopGoods::NotShown);
        assert_eq!(displayed_goods_id(""), TopGoods::NotShown);
        assert_eq!(
            displayed_goods_id("Permission Denial: can't dump ActivityManager"),
            TopGoods::NotShown
        );
    }

    #[test]
    fn a_hidden_fragment_and_a_gone_webview_of_the_previous_goods_do_not_count() {
        assert_eq!(
            displayed_goods_id(STALE),
            TopGoods::Shown("811223344509".into())
        );
    }

    #[test]
    fn only_the_resumed_activity_counts() {
        assert_eq!(
            displayed_goods_id(TWO_TASKS),
            TopGoods::Shown("811223344510".into())
        );
    }

    #[test]
    fn two_visible_ids_are_conflicting_never_a_guess() {
        assert_eq!(
            displayed_goods_id(CONFLICT),
            TopGoods::Conflicting(vec!["671122334455".into(), "737116531267".into()])
        );
    }

    #[test]
    fn every_form_of_the_loose_pattern() {
        for (text, want) in [
            ("url=goods.html?a=1&goods_id=123456&b=2", Some("123456")),
            (r#"props={\"goods_id\":\"1234567\"}"#, Some("1234567")),
            (r#"{"goods_id": "12345678"}"#, Some("12345678")),
            ("goods_id = 123456789", Some("123456789")),
            ("goods_id=12345", None),                     // too short
            ("refer_goods_id=123456", None),              // another name
            ("goods_id_list=123456", None),               // another name
            (r#"goods_id\\\":\\\"123456"#, None),         // more than 5 separators
            ("goods_id=1234567890123456789012345", None), // 25 digits
        ] {
            assert_eq!(
                displayed_goods_id(text).shown(),
                want,
                "{text}: {:?}",
                displayed_goods_id(text)
            );
        }
    }

    #[test]
    fn no_panic_on_odd_input() {
        for t in [
            "ACTIVITY",
            "  ACTIVITY \n",
            "TASK\nACTIVITY x\n    mResumed=true\n  goods_id=",
            "\u{0}\u{ffff}goods_id=999999",
            "    Foo{1 G\n      Bar{2 V goods_id=123456\n",
        ] {
            let _ = displayed_goods_id(t);
        }
    }
}
