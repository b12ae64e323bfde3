//! The full-page 确认订单 of goods with `confirm_page` (sheet → 确定 → this page): address
//! (or 手动添加收货地址), the goods with the chosen spec and quantity ("x2", or a working
//! stepper), the discount, the payment row, and a bottom bar with 合计 + "¥TOTAL" and the
//! order button.

use crate::account::Address;
use crate::catalog::{format_yuan, ConfirmPageQuantity, Goods};
use crate::page::{qty_limit, SheetState};
use crate::ui::Node;
use crate::variants::TOTAL_LABEL;

use super::nodes::{back_button, label, payment_row, quantity_stepper, r, tw, NAV_H, STATUS_H, W};

pub(crate) fn confirm(g: &Goods, s: &SheetState, address: Option<&Address>, h: i32) -> Vec<Node> {
    let bottom = h - NAV_H;
    let address = if let Some(a) = address {
        Node::group(r(0, 250, W, 450))
            .pdd()
            .tap("toast:地址")
            .child(label(35, 280, &format!("{} {}", a.receiver, a.phone), 44))
            .child(label(35, 350, &a.text, 40))
    } else {
        Node::group(r(0, 250, W, 450))
            .pdd()
            .tap("toast:地址")
            .child(label(35, 320, "手动添加收货地址", 46))
    };
    let spec = g
        .dimensions
        .iter()
        .zip(&s.sel)
        .filter_map(|(d, x)| x.map(|i| format!("{}：{}", d.name, d.options[i].name)))
        .collect::<Vec<_>>()
        .join("；");
    let short: String = g.title.chars().take(18).collect();
    // The quantity: "x2", or the sheet's stepper (limited as on the sheet).
    let quantity = match g.confirm_page_quantity {
        ConfirmPageQuantity::Text => label(980, 720, &format!("x{}", s.qty), 38),
        ConfirmPageQuantity::Stepper => {
            let limit = qty_limit(g, &s.sel).max(1);
            quantity_stepper(805, 705, s.qty, s.qty < limit).order(6)
        }
    };
    let mut nodes = vec![
        back_button(),
        label(420, 130, "确认订单", 52),
        address,
        Node::group(r(0, 480, W, 820))
            .pdd()
            .child(label(35, 500, &g.shop, 44))
            .child(Node::image(r(35, 570, 275, 810)).pdd())
            .child(
                Node::text(r(300, 570, 1045, 630), short)
                    .pdd()
                    .desc(g.title.clone()),
            )
            .child(label(300, 650, &spec, 38))
            .child(label(
                300,
                720,
                &format!("¥{}", format_yuan(g.unit_price_cent(&s.sel))),
                38,
            ))
            .child(quantity),
    ];
    if g.discount_cent > 0 {
        let text = g
            .discount_label
            .clone()
            .unwrap_or_else(|| format!("已减{}元", format_yuan(g.discount_cent)));
        nodes.push(
            Node::group(r(0, 840, W, 940))
                .pdd()
                .tap("toast:优惠")
                .child(label(35, 865, "优惠", 44))
                .child(label(1000 - tw(&text, 44), 865, &text, 44)),
        );
    }
    nodes.push(payment_row(g.payment_method, 960));
    let total = format!("¥{}", format_yuan(g.total_cent(&s.sel, s.qty)));
    let button = g.payment_method.submit_label();
    let bw = tw(button, 48);
    nodes.push(
        Node::linear(r(0, bottom - 150, W, bottom))
            .pdd()
            .child(label(330, bottom - 100, TOTAL_LABEL, 44))
            .child(label(330 + tw(TOTAL_LABEL, 44), bottom - 104, &total, 50))
            .child(
                Node::frame(r(1045 - bw - 80, bottom - 130, 1045, bottom - 20))
                    .pdd()
                    .tap("submit")
                    .child(label(1045 - bw - 40, bottom - 105, button, 48)),
            ),
    );
    vec![Node::frame(r(0, STATUS_H, W, bottom)).pdd().children(nodes)]
}
