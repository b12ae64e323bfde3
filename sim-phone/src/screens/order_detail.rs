//! An order's detail page: status and countdown, address, goods, amounts, order number
//! and time, 取消订单 / 去支付.

use chrono::{DateTime, FixedOffset};

use crate::account::Account;
use crate::catalog::{format_yuan, OrderDetailForm};
use crate::ledger::Order;
use crate::ui::Node;
use crate::variants::{
    order_payment_text, placed_note, yuan_with_unit, CheckoutButton, PaymentMethod,
    MORE_ORDER_INFO, STATUS_COMMITTED_UNPAID, STATUS_UNPAID,
};

use super::nodes::{back_button, label, r, tw, NAV_H, STATUS_H, W};
use super::not_found::not_found;
use super::view::View;

pub(crate) fn order_detail(
    v: &View<'_>,
    sn: &str,
    scroll: i32,
    expanded: bool,
    now: DateTime<FixedOffset>,
    h: i32,
) -> Vec<Node> {
    let bottom = h - NAV_H;
    let Some(o) = v.order_by_sn(sn) else {
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
    if v.goods(&o.goods_id)
        .is_some_and(|g| g.order_detail == OrderDetailForm::Folded)
    {
        return folded(v, o, scroll, expanded, &created_local, remaining, h);
    }
    let mut nodes = vec![back_button(), label(440, 130, "订单详情", 52)];
    nodes.extend(order_head(v, o, remaining, "x"));
    nodes.extend([
        Node::linear(r(0, 1020, W, 1110))
            .pdd()
            .child(label(35, 1040, "实付款", 44))
            .child(label(
                860,
                1040,
                &format!("¥{}", format_yuan(o.shown_paid_cent())),
                44,
            )),
        order_sn_row(o, 1150),
        label(35, 1245, &format!("下单时间：{created_local}"), 40),
        label(35, 1325, order_payment_text(&o.status), 40),
    ]);
    if o.status == STATUS_COMMITTED_UNPAID {
        // 先用后付: paid after delivery ("先用后付 确认收货后自动付款¥T", field notes §3a).
        let note = placed_note(
            PaymentMethod::PayLater,
            CheckoutButton::Submit,
            &format_yuan(o.total_cent),
        );
        nodes.push(label(35, 1405, &note, 40));
    }
    if o.status == STATUS_UNPAID {
        nodes.push(pay_bar(o, bottom));
    }
    vec![Node::frame(r(0, STATUS_H, W, bottom)).pdd().children(nodes)]
}

/// The top of a detail, both forms: status (and countdown while unpaid), address, shop,
/// the goods with its spec, unit price and quantity (`times`: "x" or the real "×").
fn order_head(v: &View<'_>, o: &Order, remaining: i64, times: &str) -> Vec<Node> {
    let mut nodes = vec![label(35, 280, v.status_text(o), 60)];
    if o.status == STATUS_UNPAID {
        nodes.push(label(
            35,
            370,
            &format!("剩余{:02}:{:02}自动关闭", remaining / 60, remaining % 60),
            40,
        ));
    }
    let shop = v
        .goods(&o.goods_id)
        .map(|g| g.shop.clone())
        .unwrap_or_default();
    // The address the order was placed with (older ledgers: the default account's).
    let ship_to = o.ship_to.clone().or_else(|| Account::default().address);
    let (who, addr) = ship_to
        .map(|a| (format!("{} {}", a.receiver, a.phone), a.text))
        .unwrap_or_default();
    nodes.extend([
        Node::group(r(0, 450, W, 620))
            .pdd()
            .child(label(35, 470, &who, 44))
            .child(label(35, 540, &addr, 40)),
        label(35, 660, &shop, 44),
        Node::image(r(35, 740, 275, 980)).pdd(),
        Node::text(
            r(300, 740, 1045, 800),
            o.title.chars().take(18).collect::<String>(),
        )
        .rid("com.xunmeng.pinduoduo:id/tv_goods_name")
        .desc(o.title.clone()),
        label(300, 820, &v.options_text(o), 38),
        label(
            300,
            880,
            &format!("¥{}", format_yuan(o.unit_price_cent)),
            38,
        ),
        label(980, 880, &format!("{times}{}", o.quantity), 38),
    ]);
    nodes
}

/// "订单编号：…" in one node, and 复制, in an 80-px row from `y`.
fn order_sn_row(o: &Order, y: i32) -> Node {
    Node::linear(r(0, y, W, y + 80))
        .pdd()
        .child(label(35, y + 15, &format!("订单编号：{}", o.order_sn), 40))
        .child(
            Node::text(r(940, y + 10, 1040, y + 65), "复制")
                .pdd()
                .tap("toast:已复制"),
        )
}

/// 取消订单 / 去支付 at the bottom of an unpaid order's detail.
fn pay_bar(o: &Order, bottom: i32) -> Node {
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
        )
}

/// Top of the scrolling area and where its content ends on a folded detail (content y).
const FOLDED_TOP: i32 = 225;
const FOLDED_BOTTOM: i32 = 3040;
const EXPANDED_EXTRA: i32 = 240;

/// How far a detail page scrolls: 0 unless folded (then the content outgrows the screen).
pub(crate) fn order_detail_max_scroll(folded: bool, expanded: bool, h: i32) -> i32 {
    if !folded {
        return 0;
    }
    let content = FOLDED_BOTTOM + if expanded { EXPANDED_EXTRA } else { 0 };
    (content - (h - NAV_H - 150)).max(0)
}

/// The folded detail: longer than one screen (it scrolls), the paid amount as "实付:" +
/// "12.50元", 订单编号 below the first screen, 下单时间 only after 查看更多订单信息.
fn folded(
    v: &View<'_>,
    o: &Order,
    scroll: i32,
    expanded: bool,
    created_local: &str,
    remaining: i64,
    h: i32,
) -> Vec<Node> {
    let bottom = h - NAV_H;
    let unpaid = o.status == STATUS_UNPAID;
    let vp_bottom = bottom - 150;
    let vp = r(0, FOLDED_TOP, W, vp_bottom);
    let discount = v.goods(&o.goods_id).map(|g| g.discount_cent).unwrap_or(0);
    let row = |y: i32, left: &str, right: &str| {
        Node::linear(r(0, y, W, y + 80))
            .pdd()
            .child(label(35, y + 15, left, 42))
            .child(label(1045 - tw(right, 42), y + 15, right, 42))
    };
    let mut content = order_head(v, o, remaining, "×");
    content.extend([
        row(
            1020,
            "商品总价",
            &format!(
                "¥{}",
                format_yuan(o.unit_price_cent * i64::from(o.quantity))
            ),
        ),
        row(1100, "运费", "免运费"),
    ]);
    if discount > 0 {
        content.push(row(1180, "优惠", &format!("-¥{}", format_yuan(discount))));
    }
    content.push(
        Node::linear(r(0, 1260, W, 1340))
            .pdd()
            .child(label(700, 1275, "实付:", 42))
            .child(label(
                700 + tw("实付:", 42) + 10,
                1275,
                &yuan_with_unit(o.shown_paid_cent()),
                42,
            )),
    );
    let mut y = 1380;
    content.push(label(35, y, "商家服务", 46));
    for t in [
        "联系商家",
        "拨打电话",
        "退货包运费",
        "极速退款",
        "7天无理由退货",
        "售后说明",
    ] {
        y += 130;
        content.push(
            Node::group(r(0, y - 20, W, y + 90))
                .pdd()
                .tap("toast:")
                .child(label(35, y, t, 42)),
        );
    }
    // Below the first screen: the order number, then the fold.
    content.push(order_sn_row(o, 2240));
    let mut y = 2340;
    if expanded {
        for line in [
            format!("下单时间：{created_local}"),
            order_payment_text(&o.status).to_string(),
            "配送方式：快递配送".to_string(),
        ] {
            content.push(label(35, y + 15, &line, 40));
            y += 80;
        }
    } else {
        content.push(
            Node::group(r(0, y, W, y + 80))
                .pdd()
                .tap("more_info")
                .child(label(380, y + 15, MORE_ORDER_INFO, 40)),
        );
        y += 80;
    }
    content.push(label(440, y + 60, "猜你喜欢", 46));
    content.push(Node::image(r(35, y + 160, 525, FOLDED_BOTTOM - 40)).pdd());
    content.push(Node::image(r(555, y + 160, 1045, FOLDED_BOTTOM - 40)).pdd());
    let max = order_detail_max_scroll(true, expanded, h);
    let off = scroll.clamp(0, max);
    let mut list = Node::new("android.widget.ScrollView", vp)
        .pdd()
        .scrollable();
    for n in content {
        if let Some(c) = n.translate(0, -off).clip(&vp) {
            list = list.child(c);
        }
    }
    let mut nodes = vec![back_button(), label(440, 130, "订单详情", 52), list];
    if unpaid {
        nodes.push(pay_bar(o, bottom));
    }
    vec![Node::frame(r(0, STATUS_H, W, bottom)).pdd().children(nodes)]
}
