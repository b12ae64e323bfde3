//! An order's detail page: status and countdown, address, goods, amounts, order number
//! and time, 取消订单 / 去支付.

use chrono::{DateTime, FixedOffset};

use crate::catalog::format_yuan;
use crate::ui::Node;

use super::nodes::{back_button, label, r, NAV_H, STATUS_H, W};
use super::not_found::not_found;
use super::view::View;

pub(crate) fn order_detail(
    v: &View<'_>,
    sn: &str,
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
    let shop = v
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
        label(300, 820, &v.options_text(o), 38),
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
