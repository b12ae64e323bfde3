//! Screen builders: the accessibility trees of each page, shaped like the real app's dumps.
//!
//! Shapes follow `shared/pdd-real-dumps` (studied, never copied): three top-level windows
//! (the app, the MIUI gesture bar, the systemui status bar with its clock), almost every
//! id `com.xunmeng.pinduoduo:id/pdd`, labels as non-clickable TextViews inside clickable
//! parents, merged labels ("最后3件 ¥269", "提交订单 ¥88"), prices split across siblings on
//! cards ("券后" / "¥" / "132"), image-grid options that a horizontally scrollable
//! RecyclerView clips at the screen edge. Layouts are designed for a 1080-px-wide screen.

use chrono::{DateTime, FixedOffset, Timelike};

use crate::app::{qty_limit, App, Page, PopupKind, SheetState};
use crate::catalog::{format_yuan, Goods, OptionForm};
use crate::ui::{Action, Node, Rect, Screen, PDD};

const W: i32 = 1080;
const STATUS_H: i32 = 95;
const NAV_H: i32 = 46;

/// Rough rendered width of a label: CJK glyphs are square, Latin about half as wide.
fn tw(s: &str, px: i32) -> i32 {
    s.chars()
        .map(|c| if c.is_ascii() { px * 11 / 20 } else { px })
        .sum()
}

fn label(x: i32, y: i32, s: &str, px: i32) -> Node {
    Node::text(Rect::new(x, y, (x + tw(s, px)).min(W), y + px + px / 4), s).pdd()
}

fn r(l: i32, t: i32, rr: i32, b: i32) -> Rect {
    Rect::new(l, t, rr, b)
}

/// "下午3:20" as the MIUI status bar shows it.
fn clock_text(now: &DateTime<FixedOffset>) -> String {
    let h = now.hour();
    let half = if h < 12 { "上午" } else { "下午" };
    let h12 = if h.is_multiple_of(12) { 12 } else { h % 12 };
    format!("{half}{h12}:{:02}", now.minute())
}

fn status_bar(now: &DateTime<FixedOffset>) -> Node {
    let sys = "com.android.systemui";
    let rid = |s: &str| format!("com.android.systemui:id/{s}");
    let f = |b: Rect| Node::frame(b).package(sys);
    let mut clock = Node::text(r(50, 28, 211, 92), clock_text(now)).package(sys);
    clock.rid = rid("clock");
    clock.drawing_order = Some(4);
    let mut left = Node::linear(r(50, 28, 504, 92)).package(sys).child(clock);
    left.rid = rid("phone_status_bar_left_container");
    let mut contents = Node::linear(r(47, 0, 1033, 92)).package(sys).child(left);
    contents.rid = rid("status_bar_contents");
    contents.drawing_order = Some(2);
    let mut bar = f(r(0, 0, W, STATUS_H)).child(contents);
    bar.rid = rid("status_bar");
    let mut container = f(r(0, 0, W, STATUS_H)).child(bar);
    container.rid = rid("status_bar_container");
    let mut anim = f(r(0, 0, W, STATUS_H));
    anim.rid = rid("status_bar_launch_animation_container");
    f(r(0, 0, W, STATUS_H)).child(anim).child(container)
}

fn gesture_bar(h: i32) -> Node {
    Node::frame(r(0, h - 72, W, h)).package("com.miui.home")
}

/// The app window: decor frame → content → the page's own frame.
fn app_window(h: i32, content: Vec<Node>) -> Node {
    let bottom = h - NAV_H;
    let page = Node::frame(r(0, STATUS_H, W, bottom))
        .pdd()
        .children(content);
    let mut android_content = Node::frame(r(0, STATUS_H, W, bottom)).child(page);
    android_content.rid = "android:id/content".into();
    Node::frame(r(0, 0, W, h))
        .child(Node::linear(r(0, 0, W, bottom)).child(android_content.order(2)))
}

/// Build the whole screen.
pub(crate) fn build(app: &App, now: DateTime<FixedOffset>) -> Screen {
    let h = app.cfg.height;
    let mut windows = Vec::with_capacity(4);
    match app.page() {
        None => windows.push(launcher(h)),
        Some(p) => {
            let content = match p {
                Page::Home { scroll } => home(app, *scroll, h),
                Page::Goods { goods_id } => match app.goods(goods_id) {
                    Some(g) => goods_page(g, h, app.cfg.show_goods_id),
                    None => not_found("商品不存在或已下架"),
                },
                Page::Sheet(s) => match app.goods(&s.goods_id) {
                    Some(g) => sheet(g, s, h),
                    None => not_found("商品不存在或已下架"),
                },
                Page::Payment { order_sn } => payment(app, order_sn, h),
                Page::Abandon { order_sn } => abandon(app, order_sn, h),
                Page::PayResult { order_sn } => pay_result(order_sn),
                Page::Profile => profile(app, h),
                Page::OrderList { scroll } => order_list(app, *scroll, h),
                Page::OrderDetail { order_sn } => order_detail(app, order_sn, now, h),
                Page::Login => login(),
                Page::Risk => risk(),
                Page::NotFound { message } => not_found(message),
            };
            windows.push(app_window(h, content));
            if let Some(k) = app.popup() {
                windows.push(popup(k, h));
            }
        }
    }
    windows.push(gesture_bar(h));
    windows.push(status_bar(&now));
    Screen { windows }
}

fn launcher(h: i32) -> Node {
    let home = "com.miui.home";
    let icon = |x: i32, y: i32, name: &str, act: Option<&str>| {
        let mut n = Node::text(r(x, y, x + 216, y + 260), name)
            .package(home)
            .desc(name);
        n.class = "android.widget.TextView";
        if let Some(a) = act {
            n = n.tap(a);
        } else {
            n = n.clickable();
        }
        n
    };
    Node::frame(r(0, 0, W, h)).package(home).child(
        Node::group(r(0, STATUS_H, W, h - 72))
            .package(home)
            .child(icon(40, 300, "相机", None))
            .child(icon(300, 300, "设置", None))
            .child(icon(560, 300, "拼多多", Some("launch")))
            .child(icon(820, 300, "微信", None)),
    )
}

fn back_button() -> Node {
    Node::image(r(0, STATUS_H, 130, 225))
        .pdd()
        .desc("返回")
        .tap("back")
}

fn bottom_nav(h: i32, selected: &str) -> Node {
    let bottom = h - NAV_H;
    let tabs = ["首页", "多多视频", "大促狂降价", "聊天", "个人中心"];
    let mut bar = Node::linear(r(0, bottom - 187, W, bottom))
        .pdd()
        .clickable();
    for (i, t) in tabs.iter().enumerate() {
        let x = i as i32 * 216;
        let act = match *t {
            "首页" => "nav_home",
            "个人中心" => "nav_profile",
            _ => "toast:敬请期待",
        };
        let tab = Node::new(
            "android.widget.RelativeLayout",
            r(x, bottom - 141, x + 216, bottom),
        )
        .desc(*t)
        .tap(act)
        .child(Node::image(r(x + 75, bottom - 128, x + 141, bottom - 62)).pdd())
        .child(label(x + 108 - tw(t, 38) / 2, bottom - 50, t, 38).selected(*t == selected));
        bar = bar.child(tab);
    }
    bar
}

/// Card price row: wording, "¥", amount and sales as separate siblings (as on real cards).
fn price_row(x: i32, y: i32, g: &Goods) -> Node {
    let mut row = Node::linear(r(x, y, x + 478, y + 75)).pdd();
    let mut cx = x;
    if let Some(wd) = &g.price_wording {
        row = row.child(label(cx, y + 19, wd, 37));
        cx += tw(wd, 37) + 3;
    }
    row = row.child(label(cx, y + 24, "¥", 37));
    cx += 23;
    let amount = format_yuan(g.min_price_cent());
    row = row.child(Node::text(r(cx, y, cx + tw(&amount, 60), y + 66), amount.clone()).pdd());
    cx += tw(&amount, 60) + 9;
    if let Some(s) = &g.sales_text {
        row = row.child(label(cx, y + 12, s, 37));
    }
    row
}

fn home(app: &App, scroll: i32, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let list_vp = r(0, 330, W, bottom - 187);
    let search = Node::group(r(35, 120, 1045, 210))
        .desc("搜索")
        .tap("toast:搜索")
        .child(label(120, 140, "搜索商品", 43));
    let mut list = Node::recycler(list_vp).pdd().scrollable();
    for (i, g) in app.catalog.goods.iter().enumerate() {
        let col = (i % 2) as i32;
        let row = (i / 2) as i32;
        let x = 2 + col * 538;
        let y = 340 + row * 790 - scroll;
        let short: String = g.title.chars().take(8).collect();
        let mut title = Node::text(r(x + 23, y + 537, x + 513, y + 590), short)
            .rid("com.xunmeng.pinduoduo:id/tv_title")
            .desc(format!("{}\n", g.title));
        title.package = PDD;
        let card = Node::group(r(x, y, x + 538, y + 777))
            .tap(&format!("open:{}", g.goods_id))
            .child(
                Node::linear(r(x + 7, y + 7, x + 531, y + 770))
                    .child(
                        Node::frame(r(x + 7, y + 7, x + 531, y + 524))
                            .pdd()
                            .child(Node::image(r(x + 7, y + 7, x + 531, y + 524)).pdd()),
                    )
                    .child(
                        Node::linear(r(x + 7, y + 524, x + 531, y + 770))
                            .pdd()
                            .child(
                                Node::frame(r(x + 7, y + 524, x + 531, y + 590))
                                    .pdd()
                                    .child(title),
                            )
                            .child(price_row(x + 30, y + 680, g)),
                    ),
            );
        if let Some(c) = card.clip(&list_vp) {
            list = list.child(c);
        }
    }
    vec![Node::frame(r(0, STATUS_H, W, bottom))
        .pdd()
        .child(search)
        .child(list)
        .child(bottom_nav(h, "首页"))]
}

fn goods_page(g: &Goods, h: i32, show_id: bool) -> Vec<Node> {
    let bottom = h - NAV_H;
    let mut nodes = vec![
        back_button(),
        Node::image(r(950, STATUS_H + 20, 1045, STATUS_H + 110))
            .pdd()
            .desc("分享")
            .tap("toast:分享"),
        Node::image(r(0, 225, W, 1175)).pdd().desc("商品图片"),
    ];
    // Price: wording, "¥", amount, list price, sales — separate siblings.
    let mut price = Node::linear(r(35, 1185, 1045, 1290)).pdd();
    let mut x = 35;
    if let Some(wd) = &g.price_wording {
        price = price.child(label(x, 1225, wd, 40));
        x += tw(wd, 40) + 6;
    }
    price = price.child(label(x, 1228, "¥", 40));
    x += 26;
    let amount = format_yuan(g.min_price_cent());
    price = price.child(Node::text(r(x, 1190, x + tw(&amount, 80), 1285), amount.clone()).pdd());
    x += tw(&amount, 80) + 16;
    if let Some(lp) = g.list_price_cent {
        let t = format!("¥{}", format_yuan(lp));
        price = price.child(label(x, 1232, &t, 36));
        x += tw(&t, 36) + 16;
    }
    if let Some(s) = &g.sales_text {
        price = price.child(label(x.min(700), 1232, s, 36));
    }
    nodes.push(price);
    nodes.push(
        Node::text(r(35, 1300, 1045, 1420), g.title.clone())
            .pdd()
            .desc(g.title.clone()),
    );
    nodes.push(
        Node::linear(r(0, 1440, W, 1530))
            .pdd()
            .child(label(35, 1460, "发货", 40))
            .child(label(160, 1460, "48小时内发货 · 包邮", 40)),
    );
    nodes.push(
        Node::linear(r(0, 1540, W, 1630))
            .pdd()
            .child(label(35, 1560, "服务", 40))
            .child(label(
                160,
                1560,
                "退货包运费 · 极速退款 · 7天无理由退货",
                40,
            )),
    );
    nodes.push(
        Node::group(r(0, 1660, W, 1860))
            .pdd()
            .child(Node::image(r(35, 1680, 195, 1840)).pdd())
            .child(label(220, 1700, &g.shop, 44))
            .child(
                Node::text(r(880, 1730, 1045, 1790), "进店")
                    .rid("com.xunmeng.pinduoduo:id/tv_enter_mall")
                    .tap("toast:进店"),
            ),
    );
    if show_id {
        nodes.push(label(35, 1880, &format!("商品编号：{}", g.goods_id), 36));
    }
    let bar_top = bottom - 152;
    let mut bar = Node::linear(r(0, bar_top, W, bottom)).pdd();
    for (i, t) in ["店铺", "收藏", "客服"].iter().enumerate() {
        let x = i as i32 * 150;
        bar = bar.child(
            Node::group(r(x, bar_top, x + 150, bottom))
                .desc(*t)
                .tap("toast:")
                .child(label(x + 45, bar_top + 90, t, 34)),
        );
    }
    if g.delisted {
        bar = bar.child(Node::group(r(450, bar_top, W, bottom)).pdd().child(label(
            640,
            bar_top + 45,
            "商品已下架",
            48,
        )));
    } else {
        let p = format!("¥{}", format_yuan(g.min_price_cent()));
        let single = Node::linear(r(450, bar_top, 765, bottom))
            .pdd()
            .tap("buy")
            .child(label(560, bar_top + 18, &p, 44))
            .child(label(535, bar_top + 80, "单独购买", 40));
        let group = Node::linear(r(765, bar_top, W, bottom))
            .pdd()
            .tap("buy_group")
            .child(label(870, bar_top + 18, &p, 44))
            .child(label(840, bar_top + 80, "发起拼单", 40));
        bar = bar.child(single).child(group);
    }
    nodes.push(bar);
    nodes
}

/// Geometry of the sheet the app needs to route swipes.
pub(crate) struct SheetGeom {
    /// (dimension, visible grid rect, max horizontal scroll)
    pub grids: Vec<(usize, Rect, i32)>,
    /// Visible rect of the option list.
    pub list: Rect,
    pub list_max_scroll: i32,
}

const LIST_BOTTOM: i32 = 2118;
const TILE_W: i32 = 300;
const TILE_H: i32 = 395;
const TILE_GAP: i32 = 23;

fn list_top(g: &Goods) -> i32 {
    if g.discount_cent > 0 {
        1002
    } else {
        872
    }
}

fn grid_dims(n: usize) -> (i32, i32) {
    let rows = if n <= 3 { 1 } else { 2 };
    let cols = (n as i32 + rows - 1) / rows;
    (rows, cols)
}

/// Lay out the option groups in content coordinates (top at `y0`, before vertical scroll).
/// Returns the group nodes, the grid rects (content coords) and the content bottom.
fn option_groups(g: &Goods, s: &SheetState, y0: i32) -> (Vec<Node>, Vec<(usize, Rect, i32)>, i32) {
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

fn selection_text(g: &Goods, s: &SheetState) -> String {
    let missing: Vec<&str> = g
        .dimensions
        .iter()
        .zip(&s.sel)
        .filter(|(_, x)| x.is_none())
        .map(|(d, _)| d.name.as_str())
        .collect();
    if !missing.is_empty() {
        return format!("请选择 {}", missing.join(" "));
    }
    let names: Vec<&str> = g
        .dimensions
        .iter()
        .zip(&s.sel)
        .filter_map(|(d, x)| x.map(|i| d.options[i].page_text().trim()))
        .collect();
    format!("已选: {}", names.join(" "))
}

fn price_label(g: &Goods, s: &SheetState) -> String {
    let complete: Option<Vec<usize>> = s.sel.iter().copied().collect();
    match complete {
        Some(full) => {
            let p = format_yuan(g.unit_price_cent(&s.sel));
            let st = g.stock_of(&full);
            if st <= 10 {
                format!("最后{st}件 ¥{p}")
            } else if st <= 30 {
                format!("即将卖完 ¥{p}")
            } else {
                format!("¥{p}")
            }
        }
        None => {
            let prices: Vec<i64> = g
                .completions(&s.sel)
                .iter()
                .filter(|c| g.stock_of(c) > 0)
                .map(|c| g.unit_price_cent(&c.iter().map(|&i| Some(i)).collect::<Vec<_>>()))
                .collect();
            match (prices.iter().min(), prices.iter().max()) {
                (Some(a), Some(b)) if a != b => format!("¥{}-{}", format_yuan(*a), format_yuan(*b)),
                (Some(a), _) => format!("¥{}", format_yuan(*a)),
                _ => format!("¥{}", format_yuan(g.price_cent)),
            }
        }
    }
}

fn sheet(g: &Goods, s: &SheetState, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let header = Node::group(r(0, STATUS_H, W, 225)).child(
        Node::frame(r(0, STATUS_H, W, 225))
            .pdd()
            .order(2)
            .child(Node::image(r(0, 119, W, 200))),
    );
    let promo = Node::frame(r(0, 225, W, 332))
        .pdd()
        .order(2)
        .child(
            Node::new("android.widget.ViewSwitcher", r(0, 225, W, 332))
                .pdd()
                .clickable()
                .child(
                    Node::group(r(0, 225, W, 332)).child(
                        Node::text(r(158, 245, 921, 311), "#24小时发货#七天退换#假一赔十")
                            .pdd()
                            .order(2),
                    ),
                ),
        )
        .child(
            Node::view(r(0, 225, W, 248))
                .pdd()
                .clickable()
                .naf()
                .order(2),
        )
        .child(
            Node::image(r(979, 242, 1051, 314))
                .pdd()
                .desc("关闭")
                .tap("back")
                .order(3),
        );
    // Address row: 手动添加地址 when the account has none.
    let addr_inner = if g.address_present {
        vec![
            Node::frame(r(127, 350, 1026, 400))
                .child(Node::text(r(127, 350, 560, 400), "张三 138****0000").order(1)),
            Node::frame(r(127, 405, 1026, 455)).child(Node::text(
                r(127, 405, 1000, 455),
                "广东省深圳市南山区科技园路1号",
            )),
        ]
    } else {
        vec![Node::frame(r(127, 375, 1026, 428))
            .order(2)
            .child(Node::text(r(127, 375, 367, 428), "手动添加地址"))]
    };
    let address = Node::group(r(0, 332, W, 470))
        .tap("toast:地址")
        .order(3)
        .child(Node::group(r(35, 372, 93, 430)).child(Node::image(r(49, 386, 78, 415))))
        .children(addr_inner)
        .child(Node::image(r(1026, 387, 1046, 416)).order(3));
    let limit = qty_limit(g, &s.sel).max(1);
    let price = price_label(g, s);
    let goods_block = Node::frame(r(0, 487, W, 871)).pdd().order(4).child(
        Node::new("android.widget.RelativeLayout", r(0, 487, W, 871))
            .pdd()
            .focusable()
            .child(
                Node::group(r(0, 487, W, 871))
                    .pdd()
                    .order(3)
                    .child(Node::view(r(35, 513, 358, 836)).order(2))
                    .child(
                        Node::image(r(35, 513, 358, 836))
                            .rid("com.xunmeng.pinduoduo:id/iv_goods_img")
                            .desc("商品主图")
                            .tap("toast:主图")
                            .order(3),
                    )
                    .child(
                        Node::frame(r(393, 510, 1054, 582)).pdd().order(5).child(
                            Node::linear(r(393, 510, 393 + tw(&price, 48) + 17, 582))
                                .pdd()
                                .child(
                                    Node::text(r(393, 510, 393 + tw(&price, 48), 582), price)
                                        .pdd()
                                        .order(2),
                                ),
                        ),
                    )
                    .child(
                        Node::text(r(393, 594, 1054, 653), selection_text(g, s))
                            .rid("com.xunmeng.pinduoduo:id/tv_select_sku")
                            .order(9),
                    )
                    .child(
                        Node::linear(r(393, 764, 633, 836))
                            .rid("com.xunmeng.pinduoduo:id/gnl")
                            .focusable()
                            .order(13)
                            .child(
                                Node::linear(r(393, 764, 633, 836))
                                    .child(
                                        Node::image(r(393, 764, 468, 836))
                                            .pdd()
                                            .desc("减少数量")
                                            .tap("qty_minus"),
                                    )
                                    .child(
                                        Node::new("android.widget.EditText", r(474, 764, 552, 836))
                                            .pdd()
                                            .tap("qty_edit")
                                            .order(4)
                                            .text_of(s.qty.to_string()),
                                    )
                                    .child(
                                        Node::image(r(558, 764, 633, 836))
                                            .pdd()
                                            .desc("增加数量")
                                            .tap("qty_plus")
                                            .enabled(s.qty < limit)
                                            .order(6),
                                    ),
                            ),
                    )
                    .child(Node::view(r(35, 836, 1054, 871)).pdd().order(18)),
            ),
    );
    let mut upper = Node::linear(r(0, 332, W, list_top(g)))
        .pdd()
        .child(
            Node::linear(r(0, 332, W, 486)).pdd().child(
                Node::linear(r(0, 332, W, 470)).pdd().child(
                    Node::frame(r(0, 332, W, 470))
                        .pdd()
                        .child(Node::group(r(0, 332, W, 470)).child(address)),
                ),
            ),
        )
        .child(Node::view(r(0, 486, W, 487)).pdd().order(2))
        .child(goods_block)
        .child(Node::view(r(35, 871, W, 872)).pdd().order(5));
    if g.discount_cent > 0 {
        let text = g
            .discount_label
            .clone()
            .unwrap_or_else(|| format!("已减{}元", format_yuan(g.discount_cent)));
        upper = upper.child(
            Node::linear(r(0, 872, W, 1002)).pdd().order(7).child(
                Node::group(r(0, 872, W, 1002))
                    .tap("toast:优惠")
                    .child(label(35, 908, "优惠", 46))
                    .child(Node::text(
                        r(1000 - tw(&text, 46), 910, 996, 963),
                        text.clone(),
                    )),
            ),
        );
    }
    // Option groups in a vertically scrolling list.
    let top = list_top(g);
    let list_vp = r(0, top, W, LIST_BOTTOM);
    let (groups, _, content_bottom) = option_groups(g, s, top);
    let max = (content_bottom - LIST_BOTTOM).max(0);
    let off = s.vscroll.clamp(0, max);
    let mut list = Node::recycler(list_vp).pdd().focusable().order(3);
    if max > 0 {
        list = list.scrollable();
    }
    for grp in groups {
        if let Some(c) = grp.translate(0, -off).clip(&list_vp) {
            list = list.child(c);
        }
    }
    let all_sold_out = g.all_sold_out();
    let total = g.total_cent(&s.sel, s.qty);
    let footer_text = if all_sold_out {
        "该款式售罄".to_string()
    } else {
        format!("提交订单 ¥{}", format_yuan(total))
    };
    let fw = tw(&footer_text, 52);
    let footer = Node::frame(r(334, 2213, W, bottom))
        .pdd()
        .tap(if all_sold_out {
            "toast:该款式售罄"
        } else {
            "submit"
        })
        .enabled(!all_sold_out)
        .order(11)
        .child(
            Node::linear(r(707 - fw / 2 - 12, 2213, 707 + fw / 2 + 12, bottom))
                .order(2)
                .child(Node::text(
                    r(707 - fw / 2, 2251, 707 + fw / 2, 2316),
                    footer_text,
                )),
        );
    let body = Node::group(r(0, 332, W, bottom))
        .pdd()
        .clickable()
        .order(3)
        .child(
            Node::linear(r(0, 332, W, LIST_BOTTOM))
                .pdd()
                .order(4)
                .child(
                    Node::group(r(0, 332, W, LIST_BOTTOM))
                        .child(upper)
                        .child(list),
                ),
        )
        .child(
            Node::group(r(0, 2118, W, 2213))
                .pdd()
                .tap("toast:支付方式")
                .order(7)
                .child(Node::view(r(0, 2118, W, 2119)).pdd())
                .child(Node::linear(r(206, 2138, 819, 2192)).pdd().order(2).child(
                    Node::text(r(223, 2138, 819, 2192), "使用#微信支付，更换支付方式").pdd(),
                ))
                .child(Node::image(r(828, 2151, 857, 2180)).pdd().order(3)),
        )
        .child(
            Node::group(r(0, 2213, 334, bottom))
                .pdd()
                .clickable()
                .order(10)
                .child(Node::text(r(0, 2213, 334, bottom), "添加").pdd()),
        )
        .child(footer);
    vec![Node::linear(r(0, STATUS_H, W, bottom))
        .pdd()
        .clickable()
        .child(header)
        .child(promo)
        .child(body)]
}

fn order_by_sn<'a>(app: &'a App, sn: &str) -> Option<&'a crate::ledger::Order> {
    app.ledger.orders().iter().find(|o| o.order_sn == sn)
}

/// "颜色分类：黑色；尺码：L" — dimension headings from the catalog, canonical names.
fn options_text(app: &App, o: &crate::ledger::Order) -> String {
    let g = app.goods(&o.goods_id);
    o.options
        .iter()
        .filter_map(|(k, v)| {
            let v = v.as_str()?;
            let heading = g
                .and_then(|g| g.dimensions.iter().find(|d| &d.key == k))
                .map(|d| d.name.clone())
                .unwrap_or_else(|| k.clone());
            Some(format!("{heading}：{v}"))
        })
        .collect::<Vec<_>>()
        .join("；")
}

fn payment(app: &App, sn: &str, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let total = order_by_sn(app, sn).map(|o| o.total_cent).unwrap_or(0);
    let amount = format!("¥{}", format_yuan(total));
    let mut methods = Node::linear(r(0, 1100, W, 1700)).pdd();
    for (i, m) in ["微信支付", "支付宝", "多多支付"].iter().enumerate() {
        let y = 1100 + i as i32 * 200;
        let mut check = Node::image(r(960, y + 60, 1040, y + 140)).pdd();
        check.checkable = true;
        check.checked = i == 0;
        methods = methods.child(
            Node::group(r(0, y, W, y + 200))
                .tap("toast:")
                .child(Node::image(r(35, y + 50, 135, y + 150)).pdd())
                .child(label(170, y + 70, m, 48))
                .child(check),
        );
    }
    vec![Node::frame(r(0, STATUS_H, W, bottom)).pdd().children([
        Node::image(r(20, STATUS_H + 30, 120, STATUS_H + 130))
            .pdd()
            .desc("关闭")
            .tap("pay_close"),
        label(380, STATUS_H + 50, "选择支付方式", 52),
        label(400, 700, "支付剩余时间 14:59", 40),
        Node::text(r(340, 800, 740, 950), amount.clone()).pdd(),
        methods,
        Node::frame(r(35, 2150, 1045, 2300))
            .pdd()
            .tap("pay")
            .child(label(380, 2195, &format!("立即支付 {amount}"), 52)),
    ])]
}

fn abandon(app: &App, sn: &str, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let total = order_by_sn(app, sn).map(|o| o.total_cent).unwrap_or(0);
    let only = format!("，仅¥{}", format_yuan(total));
    let g = Node::group;
    vec![Node::frame(r(0, STATUS_H, W, bottom)).focusable().child(
        g(r(0, STATUS_H, W, bottom)).pdd().child(
            g(r(80, 723, 999, 1631))
                .child(
                    g(r(122, 765, 958, 1589))
                        .child(
                            g(r(157, 828, 923, 903))
                                .child(
                                    Node::frame(r(209, 831, 668, 900)).child(Node::text(
                                        r(209, 831, 668, 900),
                                        "该商品疯狂抢购中，",
                                    )),
                                )
                                .child(
                                    Node::frame(r(668, 831, 872, 900))
                                        .child(Node::text(r(668, 831, 872, 900), "即将抢光")),
                                ),
                        )
                        .child(
                            g(r(157, 909, 923, 972)).child(
                                Node::frame(r(430, 914, 650, 967))
                                    .child(Node::text(r(430, 914, 650, 967), "确定放弃吗?")),
                            ),
                        )
                        .child(
                            g(r(122, 1019, 958, 1250))
                                .child(
                                    g(r(168, 1019, 911, 1250))
                                        .child(Node::image(r(168, 1019, 911, 1250))),
                                )
                                .child(Node::frame(r(203, 1134, 633, 1195)).child(Node::text(
                                    r(203, 1134, 633, 1195),
                                    "疯狂抢购中，即将抢光",
                                ))),
                        )
                        .child(
                            g(r(122, 1249, 958, 1436)).child(
                                g(r(168, 1307, 911, 1436))
                                    .tap("abandon_continue")
                                    .child(
                                        Node::frame(r(353, 1339, 545, 1404))
                                            .child(Node::text(r(353, 1339, 545, 1404), "继续支付")),
                                    )
                                    .child(
                                        Node::frame(r(545, 1339, 727, 1404))
                                            .child(Node::text(r(545, 1339, 727, 1404), only)),
                                    ),
                            ),
                        )
                        .child(
                            g(r(171, 1477, 909, 1543)).tap("abandon_leave").child(
                                Node::frame(r(454, 1482, 626, 1539))
                                    .child(Node::text(r(454, 1482, 626, 1539), "先去逛逛")),
                            ),
                        ),
                )
                .child(
                    g(r(916, 723, 999, 807)).child(
                        Node::image(r(916, 723, 999, 807))
                            .tap("abandon_close")
                            .naf(),
                    ),
                ),
        ),
    )]
}

fn pay_result(sn: &str) -> Vec<Node> {
    vec![
        back_button(),
        label(380, 600, "支付未完成", 60),
        label(250, 720, "订单将在15分钟后自动关闭", 44),
        Node::frame(r(290, 900, 790, 1030))
            .pdd()
            .tap(&format!("view_order:{sn}"))
            .child(label(430, 940, "查看订单", 48)),
    ]
}

fn profile(app: &App, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let unpaid = app
        .ledger
        .orders()
        .iter()
        .filter(|o| o.status == "unpaid")
        .count();
    let mut row = Node::linear(r(0, 700, W, 900)).pdd();
    for (i, t) in ["待付款", "待分享", "待发货", "待收货", "评价"]
        .iter()
        .enumerate()
    {
        let x = i as i32 * 216;
        let mut cell = Node::new("android.widget.RelativeLayout", r(x, 700, x + 216, 900))
            .desc(*t)
            .tap(if *t == "待付款" {
                "orders"
            } else {
                "toast:"
            })
            .child(Node::image(r(x + 70, 720, x + 146, 796)).pdd())
            .child(label(x + 108 - tw(t, 38) / 2, 820, t, 38));
        if *t == "待付款" && unpaid > 0 {
            cell = cell.child(label(x + 140, 710, &unpaid.to_string(), 30));
        }
        row = row.child(cell);
    }
    vec![Node::frame(r(0, STATUS_H, W, bottom)).pdd().children([
        Node::image(r(35, 180, 195, 340)).pdd().desc("头像"),
        label(230, 220, "拼多多用户", 52),
        Node::linear(r(0, 580, W, 690))
            .pdd()
            .child(label(35, 610, "我的订单", 48))
            .child(
                Node::group(r(800, 590, 1045, 680))
                    .tap("orders")
                    .child(label(820, 615, "查看全部", 40)),
            ),
        row,
        bottom_nav(h, "个人中心"),
    ])]
}

fn order_list(app: &App, scroll: i32, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let vp = r(0, 330, W, bottom);
    let mut tabs = Node::linear(r(0, 225, W, 330)).pdd();
    for (i, t) in [
        "全部",
        "待付款",
        "待分享",
        "待发货",
        "待收货",
        "评价",
        "退款/售后",
    ]
    .iter()
    .enumerate()
    {
        let x = i as i32 * 154;
        tabs = tabs.child(
            Node::frame(r(x, 225, x + 154, 330))
                .pdd()
                .tap(if *t == "待付款" { "noop" } else { "toast:" })
                .selected(*t == "待付款")
                .child(
                    Node::text(r(x + 20, 250, x + 20 + tw(t, 38).min(114), 305), *t)
                        .pdd()
                        .selected(*t == "待付款"),
                ),
        );
    }
    let mut list = Node::recycler(vp).pdd().scrollable();
    let unpaid: Vec<&crate::ledger::Order> = app
        .ledger
        .orders()
        .iter()
        .rev()
        .filter(|o| o.status == "unpaid")
        .collect();
    if unpaid.is_empty() {
        list = list.child(label(400, 800, "暂无相关订单", 46));
    }
    for (i, o) in unpaid.iter().enumerate() {
        let y = 360 + i as i32 * 640 - scroll;
        let shop = app
            .goods(&o.goods_id)
            .map(|g| g.shop.clone())
            .unwrap_or_default();
        let short: String = o.title.chars().take(18).collect();
        let sn = &o.order_sn;
        let unit = format!("¥{}", format_yuan(o.unit_price_cent));
        let total = format!("¥{}", format_yuan(o.total_cent));
        let head = Node::new("android.widget.RelativeLayout", r(24, y, 1056, y + 100))
            .pdd()
            .child(
                Node::text(r(60, y + 25, 700, y + 80), shop)
                    .rid("com.xunmeng.pinduoduo:id/tv_mall_name"),
            )
            .child(Node::text(r(880, y + 25, 1020, y + 80), "待付款").pdd());
        let price_row = Node::linear(r(330, y + 280, 1020, y + 340))
            .child(Node::text(r(330, y + 280, 500, y + 340), unit).pdd())
            .child(Node::text(r(900, y + 280, 1020, y + 340), format!("x{}", o.quantity)).pdd());
        let body = Node::linear(r(24, y + 100, 1056, y + 360))
            .pdd()
            .child(Node::image(r(60, y + 110, 300, y + 350)).pdd())
            .child(
                Node::linear(r(330, y + 110, 1020, y + 350))
                    .child(
                        Node::text(r(330, y + 110, 1020, y + 200), short)
                            .pdd()
                            .desc(o.title.clone()),
                    )
                    .child(Node::text(r(330, y + 210, 1000, y + 260), options_text(app, o)).pdd())
                    .child(price_row),
            );
        let paid = Node::linear(r(24, y + 370, 1056, y + 440))
            .pdd()
            .child(Node::text(r(560, y + 375, 760, y + 435), "实付：").pdd())
            .child(Node::text(r(770, y + 375, 1020, y + 435), total).pdd());
        let buttons = Node::linear(r(24, y + 460, 1056, y + 580))
            .pdd()
            .child(
                Node::frame(r(540, y + 470, 770, y + 570))
                    .pdd()
                    .tap(&format!("order_cancel:{sn}"))
                    .child(Node::text(r(560, y + 490, 750, y + 550), "取消订单").pdd()),
            )
            .child(
                Node::frame(r(790, y + 470, 1020, y + 570))
                    .pdd()
                    .tap(&format!("order_pay:{sn}"))
                    .child(Node::text(r(810, y + 490, 1000, y + 550), "去支付").pdd()),
            );
        let card = Node::linear(r(24, y, 1056, y + 620))
            .tap(&format!("order:{sn}"))
            .child(head)
            .child(body)
            .child(paid)
            .child(buttons);
        if let Some(c) = card.clip(&vp) {
            list = list.child(c);
        }
    }
    vec![Node::frame(r(0, STATUS_H, W, bottom)).pdd().children([
        Node::group(r(0, STATUS_H, W, 225))
            .child(back_button())
            .child(label(440, 130, "我的订单", 52)),
        tabs,
        list,
    ])]
}

fn order_detail(app: &App, sn: &str, now: DateTime<FixedOffset>, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let Some(o) = order_by_sn(app, sn) else {
        return not_found("订单不存在");
    };
    let created = DateTime::parse_from_rfc3339(&o.created_at).ok();
    let created_local = created
        .map(|c| c.format("%Y-%m-%d %H:%M:%S").to_string())
        .unwrap_or_default();
    let remaining = created
        .map(|c| 15 * 60 - (now - c).num_seconds())
        .unwrap_or(0)
        .max(0);
    let status = if o.status == "unpaid" {
        "待付款"
    } else {
        "已取消"
    };
    let mut nodes = vec![
        back_button(),
        label(440, 130, "订单详情", 52),
        label(35, 280, status, 60),
    ];
    if o.status == "unpaid" {
        nodes.push(label(
            35,
            370,
            &format!("剩余{:02}:{:02}自动关闭", remaining / 60, remaining % 60),
            40,
        ));
    }
    let shop = app
        .goods(&o.goods_id)
        .map(|g| g.shop.clone())
        .unwrap_or_default();
    nodes.extend([
        Node::group(r(0, 450, W, 620))
            .pdd()
            .child(label(35, 470, "张三 138****0000", 44))
            .child(label(35, 540, "广东省深圳市南山区科技园路1号", 40)),
        label(35, 660, &shop, 44),
        Node::image(r(35, 740, 275, 980)).pdd(),
        Node::text(
            r(300, 740, 1045, 800),
            o.title.chars().take(18).collect::<String>(),
        )
        .rid("com.xunmeng.pinduoduo:id/tv_goods_name")
        .desc(o.title.clone()),
        label(300, 820, &options_text(app, o), 38),
        label(
            300,
            880,
            &format!("¥{}", format_yuan(o.unit_price_cent)),
            38,
        ),
        label(980, 880, &format!("x{}", o.quantity), 38),
        Node::linear(r(0, 1020, W, 1110))
            .pdd()
            .child(label(35, 1040, "实付款", 44))
            .child(label(
                860,
                1040,
                &format!("¥{}", format_yuan(o.total_cent)),
                44,
            )),
        Node::linear(r(0, 1150, W, 1230))
            .pdd()
            .child(label(35, 1165, &format!("订单编号：{}", o.order_sn), 40))
            .child(
                Node::text(r(940, 1160, 1040, 1215), "复制")
                    .pdd()
                    .tap("toast:已复制"),
            ),
        label(35, 1245, &format!("下单时间：{created_local}"), 40),
        label(
            35,
            1325,
            if o.status == "unpaid" {
                "支付方式：未支付"
            } else {
                "支付方式：—"
            },
            40,
        ),
    ]);
    if o.status == "unpaid" {
        nodes.push(
            Node::linear(r(0, bottom - 150, W, bottom))
                .pdd()
                .child(
                    Node::group(r(560, bottom - 130, 790, bottom - 30))
                        .tap(&format!("order_cancel:{}", o.order_sn))
                        .child(label(590, bottom - 105, "取消订单", 40)),
                )
                .child(
                    Node::group(r(815, bottom - 130, 1045, bottom - 30))
                        .tap(&format!("order_pay:{}", o.order_sn))
                        .child(label(860, bottom - 105, "去支付", 40)),
                ),
        );
    }
    vec![Node::frame(r(0, STATUS_H, W, bottom)).pdd().children(nodes)]
}

fn login() -> Vec<Node> {
    vec![
        back_button(),
        label(300, 500, "登录后才能继续购买", 52),
        Node::frame(r(90, 1500, 990, 1640))
            .pdd()
            .tap("toast:")
            .child(label(420, 1540, "微信登录", 52)),
        Node::frame(r(90, 1700, 990, 1840))
            .pdd()
            .tap("toast:")
            .child(label(390, 1740, "手机号登录", 52)),
    ]
}

fn risk() -> Vec<Node> {
    vec![
        back_button(),
        label(430, 400, "安全验证", 56),
        label(230, 520, "账号存在风险，请完成验证", 44),
        Node::image(r(140, 700, 940, 1200)).pdd(),
        label(300, 1260, "请拖动滑块完成拼图", 44),
        Node::image(r(140, 1350, 290, 1470))
            .pdd()
            .desc("拖动滑块")
            .tap("toast:"),
    ]
}

fn not_found(message: &str) -> Vec<Node> {
    vec![
        back_button(),
        label(540 - tw(message, 48) / 2, 900, message, 48),
        Node::frame(r(340, 1050, 740, 1170))
            .pdd()
            .tap("home_from_error")
            .child(label(440, 1085, "返回首页", 44)),
    ]
}

fn popup(kind: PopupKind, h: i32) -> Node {
    let root = Node::frame(r(0, 0, W, h)).tap("noop");
    let dialog = Node::group(r(120, 700, 960, 1700)).pdd();
    let close = Node::image(r(860, 600, 960, 700))
        .pdd()
        .desc("关闭弹窗")
        .tap("popup_close");
    let button = |y: i32, t: &str| {
        Node::group(r(240, y, 840, y + 120))
            .pdd()
            .tap("popup_close")
            .child(label(540 - tw(t, 48) / 2, y + 35, t, 48))
    };
    let dialog = match kind {
        PopupKind::RedPacket => dialog
            .child(label(380, 800, "专属现金红包", 52))
            .child(label(400, 1000, "¥5 无门槛", 60))
            .child(button(1450, "开心收下")),
        PopupKind::Upgrade => dialog
            .child(label(420, 800, "发现新版本", 52))
            .child(button(1300, "立即升级"))
            .child(button(1450, "下次再说")),
        PopupKind::TeenMode => dialog
            .child(label(390, 800, "青少年模式", 52))
            .child(label(
                200,
                950,
                "为呵护未成年人健康成长，拼多多推出青少年模式",
                34,
            ))
            .child(button(1450, "我知道了")),
    };
    root.child(dialog).child(close)
}

trait TextOf {
    fn text_of(self, t: String) -> Self;
}

impl TextOf for Node {
    fn text_of(mut self, t: String) -> Node {
        self.text = t;
        self
    }
}
