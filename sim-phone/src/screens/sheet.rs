//! The SKU sheet (checkout sheet): address row, goods block with merged price label,
//! selection text and quantity stepper, the discount row, the option list and the
//! 提交订单 footer. Goods that go through 确认订单 get the spec sheet of the older flow
//! instead: no address row, no payment row, no total, the footer 确定 / 立即购买.

use crate::account::Address;
use crate::catalog::{format_yuan, Goods};
use crate::page::{qty_limit, SheetState};
use crate::ui::Node;
use crate::variants::{confirm_button, FOOTER_PROMO_CLOSE, FOOTER_PROMO_TEXT, TOTAL_LABEL};

use super::nodes::{label, payment_row, quantity_stepper, r, tw, NAV_H, STATUS_H, W};
use super::sheet_options::{list_top, option_groups, sheet_lift, LIST_BOTTOM};

/// Where the app draws an option's icon, its page text starts with these spaces.
const ICON_SPACES: &str = "  ";

fn selection_text(g: &Goods, s: &SheetState) -> String {
    let missing = g.missing_dimensions(&s.sel);
    if !missing.is_empty() {
        return format!("请选择 {}", missing.join(" "));
    }
    // An option drawn with an icon (its page text starts with the icon's spaces) shows the
    // icon as "#" here, as on the real sheet: "已选: #乌龙奶茶+手持化妆镜+礼盒".
    let names: Vec<String> = g
        .dimensions
        .iter()
        .zip(&s.sel)
        .filter_map(|(d, x)| x.map(|i| d.options[i].page_text()))
        .map(|t| {
            if t.starts_with(ICON_SPACES) {
                format!("#{}", t.trim())
            } else {
                t.trim().to_string()
            }
        })
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

pub(crate) fn sheet(g: &Goods, s: &SheetState, address: Option<&Address>, h: i32) -> Vec<Node> {
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
    // Address row: receiver + masked phone over the address text; 手动添加地址 when the
    // account has none.
    let addr_inner = if let Some(a) = address {
        let who = format!("{} {}", a.receiver, a.phone);
        vec![
            Node::frame(r(127, 350, 1026, 400))
                .child(Node::text(r(127, 350, (127 + tw(&who, 40)).min(1026), 400), who).order(1)),
            Node::frame(r(127, 405, 1026, 455))
                .child(Node::text(r(127, 405, 1000, 455), a.text.clone())),
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
                    .child(quantity_stepper(393, 764, s.qty, s.qty < limit).order(13))
                    .child(Node::view(r(35, 836, 1054, 871)).pdd().order(18)),
            ),
    );
    // The spec sheet of goods that go through 确认订单 has no address row: the goods block
    // and everything under it move up by the row's band.
    let lift = sheet_lift(g);
    let mut upper = Node::linear(r(0, 332, W, list_top(g))).pdd();
    if lift == 0 {
        upper = upper
            .child(
                Node::linear(r(0, 332, W, 486)).pdd().child(
                    Node::linear(r(0, 332, W, 470)).pdd().child(
                        Node::frame(r(0, 332, W, 470))
                            .pdd()
                            .child(Node::group(r(0, 332, W, 470)).child(address)),
                    ),
                ),
            )
            .child(Node::view(r(0, 486, W, 487)).pdd().order(2));
    }
    upper = upper.child(goods_block.translate(0, -lift)).child(
        Node::view(r(35, 871, W, 872))
            .pdd()
            .order(5)
            .translate(0, -lift),
    );
    if g.discount_cent > 0 {
        let text = g
            .discount_label
            .clone()
            .unwrap_or_else(|| format!("已减{}元", format_yuan(g.discount_cent)));
        upper = upper.child(
            Node::linear(r(0, 872, W, 1002))
                .pdd()
                .order(7)
                .child(
                    Node::group(r(0, 872, W, 1002))
                        .tap("toast:优惠")
                        .child(label(35, 908, "优惠", 46))
                        .child(Node::text(
                            r(1000 - tw(&text, 46), 910, 996, 963),
                            text.clone(),
                        )),
                )
                .translate(0, -lift),
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
    let footer_text = if all_sold_out {
        "该款式售罄".to_string()
    } else if g.confirm_page {
        confirm_button(s.group_buy).to_string()
    } else {
        g.checkout_button
            .footer_label(g.payment_method, &format_yuan(s.shown_total(g)))
    };
    let fw = tw(&footer_text, 52);
    let footer = Node::frame(r(334, 2213, W, bottom))
        .pdd()
        .tap(if all_sold_out {
            "toast:该款式售罄"
        } else if g.confirm_page {
            "confirm"
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
    let mut body = Node::group(r(0, 332, W, bottom))
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
        );
    // Goods that go through 确认订单 show the payment row there, not on the sheet.
    if !g.confirm_page {
        body = body.child(payment_row(g.payment_method, 2118));
    }
    // The footer's left part: 添加, or (`checkout_button: confirm`) the order total as two
    // labels, 合计： + ¥T, the same shown total the 提交订单 footer would carry.
    let left = if g.checkout_button.total_on_the_left() && !g.confirm_page && !all_sold_out {
        let total = format!("¥{}", format_yuan(s.shown_total(g)));
        let tx = 40 + tw(TOTAL_LABEL, 44);
        Node::group(r(0, 2213, 334, bottom))
            .pdd()
            .order(10)
            .child(Node::text(r(40, 2257, tx, 2312), TOTAL_LABEL).pdd())
            .child(
                Node::text(r(tx, 2250, (tx + tw(&total, 52)).min(330), 2316), total)
                    .pdd()
                    .order(2),
            )
    } else {
        Node::group(r(0, 2213, 334, bottom))
            .pdd()
            .clickable()
            .order(10)
            .child(Node::text(r(0, 2213, 334, bottom), "添加").pdd())
    };
    let mut body = body.child(left).child(footer);
    if g.footer_promo && !s.promo_closed && !all_sold_out {
        // Drawn after (over) the footer, in the same window and parent.
        body = body.child(footer_promo().order(12));
    }
    vec![Node::linear(r(0, STATUS_H, W, bottom))
        .pdd()
        .clickable()
        .child(header)
        .child(promo)
        .child(body)]
}

/// The 多多支付 promo bubble laid over the footer's order button (`footer_promo`): a
/// clickable ViewGroup (a tap opens 开通多多支付) whose rectangle holds the footer frame's
/// centre (707, 2283), with its background, the label in a FrameLayout, the tail pointing
/// at the button and, at its right end, the close icon (desc 关闭提示).
fn footer_promo() -> Node {
    let tl = 376;
    let tr = tl + tw(FOOTER_PROMO_TEXT, 46);
    Node::group(r(346, 2150, 1068, 2300))
        .pdd()
        .tap("promo_open")
        .child(Node::image(r(346, 2150, 1068, 2270)).pdd())
        .child(
            Node::frame(r(tl, 2176, tr, 2244))
                .pdd()
                .order(2)
                .child(Node::text(r(tl, 2176, tr, 2244), FOOTER_PROMO_TEXT).pdd()),
        )
        .child(Node::image(r(687, 2270, 727, 2300)).pdd().order(3))
        .child(
            Node::group(r(980, 2166, 1052, 2254)).order(4).child(
                Node::image(r(992, 2178, 1040, 2242))
                    .pdd()
                    .desc(FOOTER_PROMO_CLOSE)
                    .tap("promo_close"),
            ),
        )
}
