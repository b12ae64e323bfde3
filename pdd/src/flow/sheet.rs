//! The SKU sheet as the flows navigate it (collect now, purchase next): stable dimension
//! keys, the option lists merged across scroll positions, where the option list can
//! still scroll, and the swipes that reveal a clipped option.
//!
//! A dump only shows what is on screen: image grids scroll sideways and clip their last
//! tiles; the option list scrolls vertically and may hide whole groups. [`SheetModel`]
//! accumulates what every dump showed (groups by heading, options in page order) so the
//! flow can plan over all options while tapping only what is visible.

use crate::screen::label_index::trim_name;
use crate::screen::{Bounds, OptionForm, Point, SkuGroup, SkuOption, SkuSheet};

/// The stable key of a dimension from its heading: colour headings → `color`, size
/// headings → `size`, other known headings → an English word, anything else → the
/// heading itself (stable for the same goods page).
pub fn dimension_key(name: &str) -> String {
    let n = trim_name(name);
    const COLOR: &[&str] = &["颜色", "色号", "色系", "配色", "花色", "色彩"];
    const SIZE: &[&str] = &["尺码", "尺寸", "码数", "鞋码", "大小", "码"];
    const OTHER: &[(&str, &str)] = &[
        ("款式", "style"),
        ("规格", "spec"),
        ("容量", "capacity"),
        ("型号", "model"),
        ("套餐", "package"),
        ("口味", "flavor"),
        ("重量", "weight"),
        ("版本", "version"),
        ("材质", "material"),
        ("净含量", "net_content"),
        ("适用年龄", "age"),
        ("长度", "length"),
    ];
    if COLOR.iter().any(|w| n.contains(w)) {
        return "color".into();
    }
    if SIZE
        .iter()
        .any(|w| n == *w || (w.chars().count() > 1 && n.contains(w)))
    {
        return "size".into();
    }
    if let Some((_, k)) = OTHER.iter().find(|(w, _)| n == *w || n.contains(w)) {
        return (*k).into();
    }
    if n.is_empty() {
        "option".into()
    } else {
        n.to_string()
    }
}

/// One dimension as known so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KnownDim {
    pub name: String,
    pub key: String,
    pub form: OptionForm,
    /// Option names (trimmed) in page order.
    pub options: Vec<String>,
}

/// What all dumps of the sheet showed so far.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SheetModel {
    pub dims: Vec<KnownDim>,
}

impl SheetModel {
    /// [`SheetModel::merge`], as "where each known dimension is on this screen": the
    /// known dimension's index → the first screen group placed in it.
    pub fn merge_on_screen(
        &mut self,
        sheet: &SkuSheet,
    ) -> std::collections::BTreeMap<usize, usize> {
        let mut on_screen = std::collections::BTreeMap::new();
        for (gi, p) in self.merge(sheet).into_iter().enumerate() {
            if let Some(di) = p {
                on_screen.entry(di).or_insert(gi);
            }
        }
        on_screen
    }

    /// Merges one screen's groups into the model; returns, for each screen group, the
    /// index of the known dimension it belongs to (`None` when it cannot be placed).
    pub fn merge(&mut self, sheet: &SkuSheet) -> Vec<Option<usize>> {
        let mut placed: Vec<Option<usize>> = Vec::with_capacity(sheet.groups.len());
        // The known dimension before the first named group of this screen: a headless
        // group at the top continues it.
        let first_named = sheet
            .groups
            .iter()
            .find(|g| !trim_name(&g.name).is_empty())
            .and_then(|g| self.dims.iter().position(|d| d.name == trim_name(&g.name)));
        for (gi, g) in sheet.groups.iter().enumerate() {
            let name = trim_name(&g.name).to_string();
            let names: Vec<String> = g.options.iter().map(|o| o.name.clone()).collect();
            let idx = if !name.is_empty() {
                match self.dims.iter().position(|d| d.name == name) {
                    Some(i) => Some(i),
                    None => {
                        // A new group: after the dimension of the previous screen group.
                        let at = placed
                            .last()
                            .copied()
                            .flatten()
                            .map(|i| i + 1)
                            .unwrap_or(self.dims.len())
                            .min(self.dims.len());
                        let mut key = dimension_key(&name);
                        if self.dims.iter().any(|d| d.key == key) {
                            key = format!("{key}_{}", self.dims.len() + 1);
                        }
                        self.dims.insert(
                            at,
                            KnownDim {
                                name,
                                key,
                                form: g.form,
                                options: Vec::new(),
                            },
                        );
                        for p in placed.iter_mut().flatten() {
                            if *p >= at {
                                *p += 1;
                            }
                        }
                        Some(at)
                    }
                }
            } else {
                // Headless: by shared option names, else the dimension before the
                // first named group, else (first screen) a dimension of its own.
                self.dims
                    .iter()
                    .position(|d| names.iter().any(|n| d.options.contains(n)))
                    .or_else(|| {
                        if gi == 0 {
                            first_named.and_then(|i| i.checked_sub(1))
                        } else {
                            None
                        }
                    })
                    .or_else(|| {
                        if self.dims.is_empty() {
                            self.dims.push(KnownDim {
                                name: String::new(),
                                key: "option".into(),
                                form: g.form,
                                options: Vec::new(),
                            });
                            Some(0)
                        } else {
                            None
                        }
                    })
            };
            if let Some(i) = idx {
                merge_names(&mut self.dims[i].options, &names);
            }
            placed.push(idx);
        }
        placed
    }
}

/// Merges a run of names seen in page order into the known list, keeping order: an
/// unknown name goes right after the last known name seen before it.
fn merge_names(known: &mut Vec<String>, seen: &[String]) {
    let mut cursor: Option<usize> = None;
    for n in seen {
        match known.iter().position(|k| k == n) {
            Some(i) => cursor = Some(i),
            None => {
                let at = cursor.map(|c| c + 1).unwrap_or(0);
                known.insert(at, n.clone());
                cursor = Some(at);
            }
        }
    }
}

/// Can this option be tapped as it is on screen? Visible, with a tap point, and not a
/// sliver at a scroll edge (a clipped tile is scrolled into view first).
pub fn tappable(g: &SkuGroup, o: &SkuOption) -> bool {
    o.tap.is_some() && !o.offscreen && !(o.clipped && sliver(g, o))
}

/// A clipped option whose visible part is too thin to tap with confidence: under half
/// its siblings' width, or under 40 % of their height.
fn sliver(g: &SkuGroup, o: &SkuOption) -> bool {
    sliver_sideways(g, o) || sliver_vertical(g, o)
}

/// Cut by a sideways scroll edge (scroll the grid, not the list).
pub fn sliver_sideways(g: &SkuGroup, o: &SkuOption) -> bool {
    let max_w = g
        .options
        .iter()
        .map(|x| x.bounds.width())
        .max()
        .unwrap_or(0);
    o.bounds.intersect(&g.viewport).width() * 10 < max_w * 5
}

/// Cut by the list's top or bottom edge (scroll the list).
pub fn sliver_vertical(g: &SkuGroup, o: &SkuOption) -> bool {
    let max_h = g
        .options
        .iter()
        .map(|x| x.bounds.height())
        .max()
        .unwrap_or(0);
    o.bounds.intersect(&g.viewport).height() * 10 < max_h * 4
}

/// Is there more of this (sideways scrolling) group past its right / left edge?
pub fn grid_more(g: &SkuGroup) -> (bool, bool) {
    if !g.scrollable || g.options.is_empty() {
        return (false, false);
    }
    let vp = g.viewport;
    let right = g
        .options
        .iter()
        .any(|o| o.offscreen || (o.clipped && o.bounds.right >= vp.right - 1));
    let left = g
        .options
        .iter()
        .any(|o| o.offscreen || (o.clipped && o.bounds.left <= vp.left + 1));
    (left, right)
}

/// Direction of a reveal gesture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reveal {
    /// Show options further right in a sideways group.
    Right,
    Left,
    /// Show content further down the list.
    Down,
    Up,
}

/// The swipe that scrolls `area` by about 60 % of its extent in direction `dir`.
pub fn reveal_swipe(area: Bounds, dir: Reveal) -> (Point, Point) {
    let c = area.center();
    let w = area.width();
    let h = area.height();
    match dir {
        Reveal::Right => (
            Point {
                x: area.left + w * 8 / 10,
                y: c.y,
            },
            Point {
                x: area.left + w * 2 / 10,
                y: c.y,
            },
        ),
        Reveal::Left => (
            Point {
                x: area.left + w * 2 / 10,
                y: c.y,
            },
            Point {
                x: area.left + w * 8 / 10,
                y: c.y,
            },
        ),
        Reveal::Down => (
            Point {
                x: c.x,
                y: area.top + h * 8 / 10,
            },
            Point {
                x: c.x,
                y: area.top + h * 2 / 10,
            },
        ),
        Reveal::Up => (
            Point {
                x: c.x,
                y: area.top + h * 2 / 10,
            },
            Point {
                x: c.x,
                y: area.top + h * 8 / 10,
            },
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stable_words() {
        assert_eq!(dimension_key("颜色分类"), "color");
        assert_eq!(dimension_key("色号"), "color");
        assert_eq!(dimension_key("尺码"), "size");
        assert_eq!(dimension_key("款式"), "style");
        assert_eq!(dimension_key("规格"), "spec");
        assert_eq!(dimension_key("容量"), "capacity");
        assert_eq!(dimension_key("  材质 "), "material");
        assert_eq!(dimension_key("发货地"), "发货地");
    }

    #[test]
    fn names_merge_in_page_order() {
        let mut k: Vec<String> = vec!["a".into(), "b".into(), "c".into()];
        merge_names(&mut k, &["c".into(), "d".into(), "e".into()]);
        assert_eq!(k, ["a", "b", "c", "d", "e"]);
        merge_names(&mut k, &["x".into(), "a".into()]);
        assert_eq!(k, ["x", "a", "b", "c", "d", "e"]);
    }
}
