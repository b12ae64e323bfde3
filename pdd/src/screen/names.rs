//! Option names in running text (已选, order cards): splitting labels into comparable
//! tokens and checking that a text names every chosen option exactly.
//!
//! The sheet's 已选 text is checked by [`selection_names`]: the whole value must read as
//! the chosen options, one per dimension, and as nothing else the sheet offers. The real
//! app decorates it: an option whose name starts with an icon (two spaces in the grid,
//! "  乌龙奶茶+手持化妆镜+礼盒") is written with a leading `#` ("已选: #乌龙奶茶+手持化妆镜+礼盒"),
//! 【】 become [] ("【流砂限定】…" → "[流砂限定]…"); names themselves may hold `#` and `+`
//! ("复古红棕#TAN周一美式+礼盒"), and `+` may also join two dimensions.

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

/// One unit of a name or a 已选 value, reduced for comparison: a character folded like
/// [`normalize_name`] does, or one separator (a run of spaces or list punctuation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Char(char),
    Sep,
}

/// Characters that separate words in running text (not `+` and not `#`: names hold them).
fn is_separator(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            ';' | '；' | ',' | '，' | '、' | '/' | ':' | '：' | '\u{3000}' | '\u{a0}'
        )
}

/// `s` as units: separators collapsed into one [`Unit::Sep`], other characters folded
/// (fullwidth → ASCII, 【】 → [], lowercase); leading and trailing separators dropped.
fn units(s: &str) -> Vec<Unit> {
    let mut out: Vec<Unit> = Vec::new();
    for c in s.chars() {
        if is_separator(c) {
            if !out.is_empty() && out.last() != Some(&Unit::Sep) {
                out.push(Unit::Sep);
            }
        } else {
            let mut buf = [0u8; 4];
            out.extend(
                normalize_name(c.encode_utf8(&mut buf))
                    .chars()
                    .map(Unit::Char),
            );
        }
    }
    if out.last() == Some(&Unit::Sep) {
        out.pop();
    }
    out
}

/// What may stand between two options of 已选: separators and `+`.
fn is_delimiter(u: Unit) -> bool {
    matches!(u, Unit::Sep | Unit::Char('+'))
}

/// The icon marker the real app writes before an icon option's name in 已选.
const ICON_MARKER: Unit = Unit::Char('#');

/// Stop looking once this many readings are found: two already make it ambiguous.
const ENOUGH_READINGS: usize = 2;

/// Does the sheet's 已选 text name exactly the `chosen` options (dimension key →
/// option), and could it not be read as any other choice among the `known` options of
/// each dimension (key, option names as the sheet shows them)?
///
/// The value after "已选" must be, in any order, one option per chosen dimension and
/// nothing more, each option separated from the next by spaces, list punctuation or `+`.
/// An option may be written with one leading `#` — the app's icon marker — but only at
/// the start of the value or right after a separator, never inside a name. Comparison is
/// on folded names (fullwidth, 【】, case, spaces). The text must have exactly one such
/// reading with the known options and the chosen ones, and that reading must be the
/// chosen one: with options `TAN` and `#TAN` side by side, "已选: #TAN" proves neither.
///
/// Accepted: "已选: #乌龙奶茶+手持化妆镜+礼盒" for `乌龙奶茶+手持化妆镜+礼盒`;
/// "已选: 复古红棕#TAN周一美式+礼盒" for that name; "已选: [流砂限定]鎏金盘OUIET BROWN" for
/// `【流砂限定】鎏金盘OUIET BROWN`; "已选: 雾霾蓝 L" or "已选: 雾霾蓝+L" for 雾霾蓝 / L.
/// Refused: the same texts for `乌龙奶茶`, `TAN周一美式+礼盒`, `BROWN`, or 雾霾蓝 / XL;
/// "已选: 雾霾蓝" for 雾霾蓝 / L; "请选择 尺码".
pub fn selection_names<'a>(
    text: &str,
    chosen: &OptionMap,
    known: impl IntoIterator<Item = (&'a str, &'a [String])>,
) -> bool {
    let Some(value) = text.trim_start().strip_prefix("已选") else {
        return false;
    };
    if chosen.is_empty() {
        return false;
    }
    // Per chosen dimension: its candidate names as units, the chosen one first.
    let mut known_by_key: Vec<(&str, &[String])> = known.into_iter().collect();
    known_by_key.retain(|(k, _)| chosen.contains_key(*k));
    let mut dims: Vec<Vec<Vec<Unit>>> = Vec::new();
    for (key, want) in chosen {
        let want = units(want);
        if want.is_empty() {
            return false;
        }
        let mut names = vec![want];
        for (_, opts) in known_by_key.iter().filter(|(k, _)| *k == key.as_str()) {
            for o in opts.iter() {
                let u = units(o);
                if !u.is_empty() && !names.contains(&u) {
                    names.push(u);
                }
            }
        }
        dims.push(names);
    }
    let value = units(value);
    let mut readings: Vec<Vec<usize>> = Vec::new();
    let mut picked = vec![usize::MAX; dims.len()];
    read_items(&value, 0, true, &dims, &mut picked, &mut readings);
    // Exactly one reading, and in it every dimension is its chosen option (index 0).
    readings.len() == 1 && readings[0].iter().all(|&i| i == 0)
}

/// Collects into `readings` (distinct, at most [`ENOUGH_READINGS`]) every way `value[pos..]`
/// reads as one name of each dimension not yet `picked`. `first`: nothing was read yet,
/// so no delimiter is needed before the next name.
fn read_items(
    value: &[Unit],
    pos: usize,
    first: bool,
    dims: &[Vec<Vec<Unit>>],
    picked: &mut Vec<usize>,
    readings: &mut Vec<Vec<usize>>,
) {
    if readings.len() >= ENOUGH_READINGS {
        return;
    }
    // The delimiters here: the next name starts after at least one of them (any number,
    // so a name that itself begins with `+` can be read too), or right here at the start.
    let run_end = pos
        + value[pos..]
            .iter()
            .take_while(|u| is_delimiter(**u))
            .count();
    if picked.iter().all(|&i| i != usize::MAX) {
        if run_end == value.len() && !readings.contains(picked) {
            readings.push(picked.clone());
        }
        return;
    }
    let from = if first { pos } else { pos + 1 };
    for start in from..=run_end.min(value.len()) {
        for (di, names) in dims.iter().enumerate() {
            if picked[di] != usize::MAX {
                continue;
            }
            for (ni, name) in names.iter().enumerate() {
                // The name as written, or after the icon marker.
                for marked in [false, true] {
                    let at = if marked {
                        if value.get(start) != Some(&ICON_MARKER) {
                            continue;
                        }
                        start + 1
                    } else {
                        start
                    };
                    let end = at + name.len();
                    if end > value.len() || value[at..end] != name[..] {
                        continue;
                    }
                    if end < value.len() && !is_delimiter(value[end]) {
                        continue; // only part of a longer name
                    }
                    picked[di] = ni;
                    read_items(value, end, false, dims, picked, readings);
                    picked[di] = usize::MAX;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> OptionMap {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// The real image sheet's colour group (`pdd_checkout_sheet_image_sku.xml`), trimmed.
    fn real_colours() -> Vec<String> {
        names(&[
            "乌龙奶茶+手持化妆镜+礼盒",
            "茶杏色+手持化妆镜+礼盒",
            "焦糖红栗+手持化妆镜+礼盒",
            "玫瑰茶语+手持化妆镜+礼盒",
            "三月蜜桃色+手持化妆镜+礼盒",
            "裸杏烤奶色+手持化妆镜+礼盒",
            "烟熏莓果+手持化妆镜+礼盒",
            "草莓色+手持化妆镜+礼盒",
        ])
    }

    fn sel(text: &str, chosen: &[(&str, &str)], known: &[(&str, Vec<String>)]) -> bool {
        selection_names(
            text,
            &opts(chosen),
            known.iter().map(|(k, v)| (*k, v.as_slice())),
        )
    }

    #[test]
    fn the_icon_marker_is_read_before_a_name_only() {
        let real = [("color", real_colours())];
        let icon = "已选: #乌龙奶茶+手持化妆镜+礼盒";
        assert!(sel(icon, &[("color", "乌龙奶茶+手持化妆镜+礼盒")], &real));
        // The icon spaces of the grid's raw name change nothing.
        assert!(sel(icon, &[("color", "  乌龙奶茶+手持化妆镜+礼盒")], &real));
        // Fullwidth marker and colon.
        assert!(sel(
            "已选：＃乌龙奶茶+手持化妆镜+礼盒",
            &[("color", "乌龙奶茶+手持化妆镜+礼盒")],
            &real
        ));
        // Another option of the group, or a part of the name, is never confirmed.
        assert!(!sel(icon, &[("color", "茶杏色+手持化妆镜+礼盒")], &real));
        assert!(!sel(icon, &[("color", "乌龙奶茶")], &real));
        assert!(!sel(
            icon,
            &[("color", "乌龙奶茶")],
            &[("color", names(&["乌龙奶茶", "乌龙奶茶+手持化妆镜+礼盒"]))]
        ));
        assert!(!sel(icon, &[("color", "手持化妆镜+礼盒")], &real));
        // Without the marker (the simulated phone) it is confirmed too.
        assert!(sel(
            "已选: 乌龙奶茶+手持化妆镜+礼盒",
            &[("color", "乌龙奶茶+手持化妆镜+礼盒")],
            &real
        ));
        // Two markers are not one.
        assert!(!sel(
            "已选: ##乌龙奶茶+手持化妆镜+礼盒",
            &[("color", "乌龙奶茶+手持化妆镜+礼盒")],
            &real
        ));
    }

    #[test]
    fn characters_inside_a_name_are_never_stripped() {
        let known = [(
            "color",
            names(&["复古红棕#TAN周一美式+礼盒", "TAN周一美式+礼盒"]),
        )];
        let text = "已选: 复古红棕#TAN周一美式+礼盒";
        assert!(sel(text, &[("color", "复古红棕#TAN周一美式+礼盒")], &known));
        assert!(!sel(text, &[("color", "TAN周一美式+礼盒")], &known));
        assert!(!sel(text, &[("color", "复古红棕")], &known));
        // A `#` inside a word is no marker.
        assert!(!sel(
            "已选: 复古红棕#TAN周一美式+礼盒",
            &[("color", "复古红棕TAN周一美式+礼盒")],
            &[("color", names(&["复古红棕TAN周一美式+礼盒"]))]
        ));
    }

    #[test]
    fn a_marker_that_could_be_part_of_a_name_proves_nothing() {
        let known = [("color", names(&["TAN", "#TAN"]))];
        assert!(!sel("已选: #TAN", &[("color", "TAN")], &known));
        assert!(!sel("已选: #TAN", &[("color", "#TAN")], &known));
        // The icon form of `#TAN` reads one way only.
        assert!(sel("已选: ##TAN", &[("color", "#TAN")], &known));
        assert!(!sel("已选: ##TAN", &[("color", "TAN")], &known));
        // Without a `#TAN` on the sheet, the marker is the icon's.
        assert!(sel(
            "已选: #TAN",
            &[("color", "TAN")],
            &[("color", names(&["TAN"]))]
        ));
        // A name that starts with `#` and no icon.
        assert!(sel(
            "已选: #TAN",
            &[("color", "#TAN")],
            &[("color", names(&["#TAN"]))]
        ));
    }

    #[test]
    fn brackets_case_and_spaces_are_folded() {
        let known = [(
            "style",
            names(&["【流砂限定】鎏金盘OUIET BROWN", "BROWN", "鎏金盘"]),
        )];
        let text = "已选: [流砂限定]鎏金盘OUIET BROWN";
        assert!(sel(
            text,
            &[("style", "【流砂限定】鎏金盘OUIET BROWN")],
            &known
        ));
        assert!(sel(
            text,
            &[("style", "［流砂限定］鎏金盘ouiet　brown")],
            &known
        ));
        assert!(!sel(text, &[("style", "BROWN")], &known));
        assert!(!sel(text, &[("style", "鎏金盘")], &known));
    }

    #[test]
    fn every_dimension_once_and_nothing_more() {
        let known = [
            ("color", names(&["雾霾蓝", "奶白"])),
            ("size", names(&["S", "L", "XL"])),
        ];
        let both = [("color", "雾霾蓝"), ("size", "L")];
        assert!(sel("已选: 雾霾蓝 L", &both, &known));
        assert!(sel("已选: L，雾霾蓝", &both, &known));
        // `+` may join two dimensions.
        assert!(sel("已选: 雾霾蓝+L", &both, &known));
        assert!(sel("已选:雾霾蓝 + l", &both, &known));
        assert!(!sel("已选: 雾霾蓝 XL", &both, &known));
        assert!(!sel("已选: 雾霾蓝", &both, &known));
        assert!(!sel("已选: 雾霾蓝 L 加绒", &both, &known));
        assert!(!sel("已选: 雾霾蓝L", &both, &known));
        assert!(!sel("请选择 尺码", &both, &known));
        assert!(!sel("雾霾蓝 L", &both, &known));
        assert!(!sel("已选: ", &[], &known));
        // Three dimensions, the first with an icon (fixture sku_sheet_image_three_dims).
        let three = [
            (
                "color",
                names(&["曜石黑+收纳袋", "云雾白+收纳袋", "樱花粉+收纳袋"]),
            ),
            ("style", names(&["标准款", "加长款"])),
            ("pack", names(&["一只装", "两只装"])),
        ];
        let want = [
            ("color", "曜石黑+收纳袋"),
            ("style", "标准款"),
            ("pack", "两只装"),
        ];
        let text = "已选: #曜石黑+收纳袋 标准款 两只装";
        assert!(sel(text, &want, &three));
        assert!(!sel(
            text,
            &[
                ("color", "曜石黑+收纳袋"),
                ("style", "标准款"),
                ("pack", "一只装")
            ],
            &three
        ));
    }

    #[test]
    fn a_plus_between_dimensions_that_reads_two_ways_proves_nothing() {
        // 乌龙奶茶 / 手持化妆镜+礼盒 and 乌龙奶茶+手持化妆镜 / 礼盒 both read the text.
        let known = [
            ("color", names(&["乌龙奶茶", "乌龙奶茶+手持化妆镜"])),
            ("gift", names(&["手持化妆镜+礼盒", "礼盒"])),
        ];
        let text = "已选: 乌龙奶茶+手持化妆镜+礼盒";
        assert!(!sel(
            text,
            &[("color", "乌龙奶茶"), ("gift", "手持化妆镜+礼盒")],
            &known
        ));
        assert!(!sel(
            text,
            &[("color", "乌龙奶茶+手持化妆镜"), ("gift", "礼盒")],
            &known
        ));
        // With a space between the dimensions it is plain.
        assert!(sel(
            "已选: 乌龙奶茶 手持化妆镜+礼盒",
            &[("color", "乌龙奶茶"), ("gift", "手持化妆镜+礼盒")],
            &known
        ));
    }
}
