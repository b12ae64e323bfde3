//! The dialog BACK raises on the payment page: 确定放弃吗? with 继续支付 and 先去逛逛.

use crate::catalog::format_yuan;
use crate::ui::Node;

use super::nodes::{r, NAV_H, STATUS_H, W};
use super::view::View;

pub(crate) fn abandon(v: &View<'_>, sn: &str, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let total = v.order_by_sn(sn).map(|o| o.total_cent).unwrap_or(0);
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
