//! The payment page: amount, payment methods, 立即支付.

use crate::catalog::format_yuan;
use crate::ui::Node;

use super::nodes::{label, r, NAV_H, STATUS_H, W};
use super::view::View;

pub(crate) fn payment(v: &View<'_>, sn: &str, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let total = v.order_by_sn(sn).map(|o| o.total_cent).unwrap_or(0);
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
