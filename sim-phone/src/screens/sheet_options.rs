//! The SKU sheet's option list: one group per dimension (image grids in a horizontally
//! scrollable RecyclerView, or text chips), stock labels, and the geometry the app needs
//! to route swipes ([`sheet_geometry`]).

use crate::catalog::{Goods, OptionForm};
use crate::page::SheetState;
use crate::ui::{Action, Node, Rect};

use super::nodes::{label, r, tw, W};

/// Geometry of the sheet the app needs to route swipes.
pub(crate) struct SheetGeom {
    /// (dimension, visible grid rect, max horizontal scroll)
    pub grids: Vec<(usize, Rect, i32)>,
    /// Visible rect of the option list.
    pub list: Rect,
    pub list_max_scroll: i32,
}

pub(crate) const LIST_BOTTOM: i32 = 2118;
const TILE_W: i32 = 300;
const TILE_H: i32 = 395;
const TILE_GAP: i32 = 23;

/// Height of the sheet's address row band (row and divider, y 332–487).
pub(crate) const ADDRESS_BAND: i32 = 155;

/// How far the sheet's goods block sits above its usual place: the spec sheet of goods
/// that go through 确认订单 has no address row (the address is on 确认订单), so
/// everything below moves up by the band.
pub(crate) fn sheet_lift(g: &Goods) -> i32 {
    if g.confirm_page {
        ADDRESS_BAND
    } else {
        0
    }
}

pub(crate) fn list_top(g: &Goods) -> i32 {
    let top = if g.discount_cent > 0 { 1002 } else { 872 };
    top - sheet_lift(g)
}

fn grid_dims(n: usize) -> (i32, i32) {
    let rows = if n <= 3 { 1 } else { 2 };
    let cols = (n as i32 + rows - 1) / rows;
    (rows, cols)
}

/// Lay out the option groups in content coordinates (top at `y0`, before vertical scroll).
/// Returns the group nodes, the grid rects (content coords) and the content bottom.
pub(crate) fn option_groups(
    g: &Goods,
    s: &SheetState,
    y0: i32,
) -> (Vec<Node>, Vec<(usize, Rect, i32)>, i32) {
    let mut out = Vec::new();
    let mut grids = Vec::new();
    let mut y = y0;
    for (di, d) in g.dimensions.iter().enumerate() {
        let mut group = Node::linear(r(0, y, W, y)); // bottom fixed below
        let head_h = 107;
        group = group.child(Node::linear(r(0, y, W, y + head_h)).pdd().child(label(
            35,
            y + 24,
            &d.name,
            46,
        )));
        y += head_h;
        match d.form {
            OptionForm::ImageGrid => {
                let (rows, cols) = grid_dims(d.options.len());
                let grid_h = rows * TILE_H + (rows - 1) * 29;
                let vp = r(35, y, W, y + grid_h);
                let content_w = cols * TILE_W + (cols - 1) * TILE_GAP;
                let max = (content_w - (W - 35)).max(0);
                let off = s.hscroll.get(di).copied().unwrap_or(0).clamp(0, max);
                let mut rv = Node::recycler(vp).pdd().scrollable();
                for (oi, o) in d.options.iter().enumerate() {
                    let (row, col) = (oi as i32 / cols, oi as i32 % cols);
                    let x = 35 + col * (TILE_W + TILE_GAP) - off;
                    let ty = y + row * (TILE_H + 29);
                    let tile = image_tile(g, s, di, oi, o.page_text(), x, ty);
                    if let Some(t) = tile.clip(&vp) {
                        rv = rv.child(t);
                    }
                }
                grids.push((di, vp, max));
                group = group.child(
                    Node::linear(r(0, y, W, y + grid_h + 6)).pdd().child(
                        Node::frame(r(0, y, W, y + grid_h))
                            .pdd()
                            .child(rv)
                            .child(Node::image(r(446, y + grid_h - 6, 633, y + grid_h)).pdd()),
                    ),
                );
                y += grid_h + 20;
            }
            OptionForm::TextChips => {
                let mut flow = Node::group(r(35, y, 1045, y)).pdd();
                let (mut x, mut cy) = (35, y);
                for (oi, o) in d.options.iter().enumerate() {
                    let text = o.page_text();
                    let cw = (tw(text, 43) + 80).min(1010);
                    if x + cw > 1045 && x > 35 {
                        x = 35;
                        cy += 87 + 23;
                    }
                    flow = flow.child(text_chip(g, s, di, oi, text, x, cy, cw));
                    x += cw + 23;
                }
                cy += 87;
                flow.bounds.b = cy;
                group = group.child(Node::linear(r(35, y, 1045, cy)).child(flow.order(2)));
                y = cy + 35;
            }
        }
        group.bounds.b = y;
        out.push(group);
    }
    (out, grids, y)
}

fn stock_label(g: &Goods, s: &SheetState, di: usize, oi: usize) -> Option<String> {
    if !g.option_available(&s.sel, di, oi) {
        return Some("已售罄".into());
    }
    let mut sel = s.sel.clone();
    sel[di] = Some(oi);
    let st = g.stock_of_partial(&sel);
    (st <= 10).then(|| format!("最后{st}件"))
}

fn image_tile(g: &Goods, s: &SheetState, di: usize, oi: usize, text: &str, x: i32, y: i32) -> Node {
    let avail = g.option_available(&s.sel, di, oi);
    let act = Action::Option {
        dim: di,
        option: oi,
    };
    let mut tile = Node::group(r(x, y, x + TILE_W, y + TILE_H))
        .desc(text)
        .on_tap(act.clone())
        .enabled(avail)
        .order(2 * oi as u32 + 1)
        .child(Node::view(r(x, y, x + TILE_W, y + TILE_H)).pdd().order(4))
        .child(
            Node::image(r(x, y, x + TILE_W, y + 300))
                .pdd()
                .desc(text)
                .on_tap(act.clone())
                .enabled(avail)
                .order(1),
        );
    if let Some(l) = stock_label(g, s, di, oi) {
        tile = tile.child(
            Node::text(r(x, y, x + tw(&l, 38) + 20, y + 53), l)
                .pdd()
                .order(5),
        );
    }
    tile = tile
        .child(
            Node::image(r(x + 191, y, x + TILE_W, y + 109))
                .pdd()
                .desc("打开大图")
                .tap("toast:大图")
                .order(2),
        )
        .child(
            Node::linear(r(x, y + 288, x + TILE_W, y + TILE_H))
                .pdd()
                .order(3)
                .child(
                    Node::text(r(x, y + 288, x + TILE_W, y + TILE_H), text)
                        .rid("com.xunmeng.pinduoduo:id/tv_content")
                        .on_tap(act)
                        .enabled(avail),
                ),
        );
    if s.sel[di] == Some(oi) {
        tile = tile.select_deep();
    }
    tile
}

#[allow(clippy::too_many_arguments)]
fn text_chip(
    g: &Goods,
    s: &SheetState,
    di: usize,
    oi: usize,
    text: &str,
    x: i32,
    y: i32,
    cw: i32,
) -> Node {
    let avail = g.option_available(&s.sel, di, oi);
    let act = Action::Option {
        dim: di,
        option: oi,
    };
    let b = r(x, y, x + cw, y + 87);
    let mut chip = Node::group(b)
        .on_tap(act.clone())
        .enabled(avail)
        .child(
            Node::text(b, text)
                .pdd()
                .on_tap(act)
                .enabled(avail)
                .selected(s.sel[di] == Some(oi)),
        )
        .child(Node::view(b).pdd().order(3));
    if let Some(l) = stock_label(g, s, di, oi) {
        chip = chip.child(
            Node::text(r(x, y, x + tw(&l, 22) + 14, y + 22), l)
                .pdd()
                .order(4),
        );
    }
    chip
}

pub(crate) fn sheet_geometry(g: &Goods, s: &SheetState, _w: i32) -> SheetGeom {
    let top = list_top(g);
    let (_, grids, bottom) = option_groups(g, s, top);
    let list = r(0, top, W, LIST_BOTTOM);
    let max = (bottom - LIST_BOTTOM).max(0);
    let off = s.vscroll.clamp(0, max);
    let grids = grids
        .into_iter()
        .map(|(d, rc, m)| (d, rc.translate(0, -off).intersect(&list), m))
        .collect();
    SheetGeom {
        grids,
        list,
        list_max_scroll: max,
    }
}
