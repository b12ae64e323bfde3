//! The full-page 确认订单 (the contract's 最终订单确认页): the page some goods go through
//! after the SKU sheet's 确定 / 立即购买 (field notes §3a, "older/other flows": a spec sheet
//! with 确定, then a full-page 确认订单 with the address — "手动添加收货地址" when there is
//! none — coupons such as 领券立减, and 提交订单).
//!
//! Layout, top to bottom (the simulated phone's `confirm_order` draws it so): a back icon
//! (desc 返回) and the title 确认订单; the address block (receiver + masked phone and the
//! street, or 手动添加收货地址); the goods block (shop, image, the title — truncated in
//! text, whole in content-desc —, the spec line "颜色：樱花粉；容量：500ml", the unit
//! price "¥38.9" and the quantity "x2"); discount and coupon rows; the payment row
//! ("使用#微信支付，更换支付方式"); and a bottom bar with "合计：" + "¥74.8" and the order
//! button (提交订单 / 确认下单, inside a clickable parent).
//!
//! The total is the bottom bar's (合计 / 实付款 / 应付 …, never the unit price). When the
//! order button carries an amount too ("提交订单 ¥74.8") the two must agree, else the total
//! is unreadable (`None`): fail closed. The payment method is judged by
//! [`super::payment::assess`] exactly as on the sheet.

use std::sync::OnceLock;

use regex::Regex;
use serde::Serialize;

use super::checkout::{
    self, address_block, address_in, is_total_label, payment_row, total_after, total_node,
    CheckoutRows, OrderControl, OrderCover, OrderKind,
};
use super::label_index::{trim_name, Page};
use super::payment::{self, PaymentVerdict};
use super::sku_sheet::{extract_stepper, QuantityStepper};
use super::target::Target;
use super::tree::NodeRef;
use crate::money::{parse_price, Fen};

/// The page's title.
pub const TITLES: &[&str] = &["确认订单"];

/// What the flows need from 确认订单.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConfirmOrder {
    /// `Some(false)` for 手动添加收货地址 (and the sheet's other no-address wordings),
    /// `Some(true)` when an address is shown, `None` when neither is recognisable.
    pub address_present: Option<bool>,
    /// The address block's labels as PDD shows them (receiver, masked phone, address),
    /// joined by a space — only when an address is shown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_text: Option<String>,
    /// The goods title (the content-desc when the text is truncated).
    pub goods_title: Option<String>,
    /// The chosen options as the page writes them ("颜色：樱花粉；容量：500ml"), if shown.
    pub spec_text: Option<String>,
    /// The quantity: the stepper's field when the page has one, else "x2", "×2", "共2件";
    /// `None` when not shown or when two readings disagree.
    pub quantity: Option<u32>,
    /// The quantity stepper, when 确认订单 lets the quantity change here.
    pub quantity_stepper: Option<QuantityStepper>,
    /// The order total of the bottom bar, in fen.
    #[serde(rename = "total_cent")]
    pub total: Option<Fen>,
    /// The labels the total was read from ("合计：¥74.8").
    pub total_text: Option<String>,
    /// The order button, whatever it reads (提交订单, a 确定, a pay action).
    pub order_button: Option<OrderControl>,
    /// Something PDD drew over the order button (its tap would press that instead).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub order_cover: Option<OrderCover>,
    /// The order button when it places an unpaid order (提交订单 / 确认下单, or a 确定 /
    /// 立即购买 here: 确认订单 carries every checkout row). Tapping it creates an order.
    pub submit: Option<Target>,
    /// "使用#微信支付，更换支付方式".
    pub payment_method_text: Option<String>,
    /// Whether submitting here would need a human to pay ([`super::payment`]).
    pub payment: PaymentVerdict,
}

fn quantity_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        Regex::new(r"^(?:[x×X✕]\s*(\d{1,4})|共\s*(\d{1,4})\s*件)$").expect("static regex")
    })
}

/// The title node: a visible, non-clickable label 确认订单 in the top fifth of the screen
/// (a button that happened to read 确认订单 is not a title).
fn title_node<'t>(page: &Page<'t>) -> Option<NodeRef<'t>> {
    let screen = page.tree.screen();
    let limit = screen.top + (screen.bottom - screen.top) / 5;
    page.labels(|l| TITLES.contains(&l))
        .find(|n| !n.is_clickable() && n.visible_bounds().bottom <= limit)
}

/// Cheap check used by the classifier: the title, and no 已选 (a SKU sheet drawn over the
/// page is the sheet), and something of an order page: an order button, a total line or a
/// payment row.
pub fn looks_like(page: &Page<'_>) -> bool {
    title_node(page).is_some()
        && page.labels(|l| l.starts_with("已选")).next().is_none()
        && (checkout::order_control(page, CheckoutRows::default()).is_some()
            || total_node(page).is_some()
            || payment_row(page).is_some())
}

/// Is `l` the spec line of the goods block: "颜色：樱花粉；容量：500ml", "樱花粉，500ml",
/// "颜色:樱花粉", "规格：…", "已选 …" — never a price, total, payment, address or
/// discount line ("已减3元，用多多支付再减1元").
fn is_spec_line(l: &str) -> bool {
    const NOT_SPEC: &[&str] = &["减", "优惠", "券", "省", "运费", "包邮", "支付", "付款"];
    !l.contains(['¥', '￥'])
        && l.chars().count() <= 80
        && !NOT_SPEC.iter().any(|w| l.contains(w))
        && !is_total_label(l)
        && address_in(std::iter::once(l)).is_none()
        && (l.starts_with("规格")
            || l.starts_with("已选")
            || l.contains(['：', ':', '；', ';', '，', ',']))
}

pub fn extract(page: &Page<'_>) -> ConfirmOrder {
    let rows = checkout::checkout_rows(page);
    let button = checkout::order_control(page, rows);
    let submit = button.as_ref().map(|(_, n)| *n);
    let order_button = button.as_ref().map(|(c, _)| c.clone());
    let order_cover = button
        .as_ref()
        .and_then(|(c, n)| checkout::order_cover(page, *n, c.target.tap));
    let labels = || page.labelled.iter().map(Page::label_of);

    // The goods title: a label whose content-desc holds the whole title (its text is
    // the truncated start of it), or a long label that is its own description.
    let title = title_node(page);
    let goods_pos = page.labelled.iter().position(|n| {
        let (t, d) = (trim_name(n.text()), trim_name(n.desc()));
        !t.is_empty()
            && ((d.chars().count() >= 6 && d != t && d.starts_with(t.trim_end_matches(['…', '.'])))
                || (t == d && t.chars().count() >= 8))
    });
    let goods_title = goods_pos.map(|i| trim_name(page.labelled[i].desc()).to_string());

    // The address block: the labels between the title and the goods (its title or its
    // first price, whichever comes first): a goods title may well mention 地址.
    let first_price = page
        .labelled
        .iter()
        .position(|n| trim_name(n.text()).contains(['¥', '￥']))
        .unwrap_or(page.labelled.len());
    let goods_start = goods_pos.unwrap_or(first_price).min(first_price);
    let from = title
        .and_then(|t| page.labelled.iter().position(|n| n.id() == t.id()))
        .map(|i| i + 1)
        .unwrap_or(0);
    let block = &page.labelled[from.min(goods_start)..goods_start];
    let address_present = address_in(block.iter().map(Page::label_of));
    let address_text =
        address_block(block.iter().copied()).filter(|_| address_present == Some(true));

    // The spec line after the goods title: "名称：值；名称：值" (as order cards print it),
    // "值，值", or an 已选 / 规格 line.
    let spec_text = page.labelled[goods_pos.map(|i| i + 1).unwrap_or(0)..]
        .iter()
        .map(Page::label_of)
        .find(|l| is_spec_line(l))
        .map(str::to_string);

    // The quantity: a stepper's field (减少数量 / EditText / 增加数量) and every "x2" /
    // "共2件" label must agree; none of them: unread.
    let quantity_stepper = extract_stepper(page.tree);
    let mut quantities = labels()
        .filter_map(|l| {
            let c = quantity_re().captures(l)?;
            c.get(1).or_else(|| c.get(2))?.as_str().parse::<u32>().ok()
        })
        .chain(quantity_stepper.as_ref().and_then(|q| q.value));
    let stepper_unread = quantity_stepper.as_ref().is_some_and(|q| q.value.is_none());
    let quantity = quantities
        .next()
        .filter(|q| quantities.all(|o| o == *q))
        .filter(|_| !stepper_unread);

    let (mut total, mut total_text) = total_node(page)
        .map(|n| total_after(n, submit))
        .unwrap_or((None, None));
    // The order button may carry the amount too: it must agree, or stand in for a
    // missing total line.
    if let Some(on_button) = submit.and_then(|s| parse_price(trim_name(s.text()))) {
        match total {
            None => {
                total = Some(on_button);
                total_text = submit.map(|s| trim_name(s.text()).to_string());
            }
            Some(t) if t != on_button => {
                total = None;
                total_text = None;
            }
            Some(_) => {}
        }
    }

    let payment_method_text = payment_row(page);
    let payment = payment::assess(
        payment_method_text.as_deref(),
        order_button
            .as_ref()
            .map(OrderControl::as_button)
            .unwrap_or(payment::OrderButton::Missing),
        labels(),
    );
    let places =
        |c: &&OrderControl| matches!(c.kind, OrderKind::Submit | OrderKind::CommittingProceed);
    ConfirmOrder {
        address_present,
        address_text,
        goods_title,
        spec_text,
        quantity,
        quantity_stepper,
        total,
        total_text,
        submit: order_button
            .as_ref()
            .filter(places)
            .map(|c| c.target.clone()),
        order_button,
        order_cover,
        payment_method_text,
        payment,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::{classify, Screen, Tree};

    const PAGE: &str = include_str!("../../../fixtures/screens/confirm_order.xml");

    fn read(xml: &str) -> ConfirmOrder {
        let tree = Tree::parse(xml).expect("dump parses");
        match classify(&tree) {
            Screen::ConfirmOrder(c) => c,
            other => panic!("not 确认订单: {other:?}"),
        }
    }

    fn edited(pairs: &[(&str, &str)]) -> String {
        let mut s = PAGE.to_string();
        for (from, to) in pairs {
            assert_eq!(s.matches(from).count(), 1, "{from}");
            s = s.replace(from, to);
        }
        s
    }

    #[test]
    fn reads_address_goods_payment_total_and_submit() {
        let c = read(PAGE);
        assert_eq!(c.address_present, Some(true));
        assert_eq!(
            c.goods_title.as_deref(),
            Some("加厚珊瑚绒毛毯冬季 午睡盖毯 沙发毯子 双人床单人 宿舍 & 办公室")
        );
        assert_eq!(c.spec_text.as_deref(), Some("颜色：雾霾蓝；尺码：L"));
        assert_eq!(c.quantity, Some(2));
        assert_eq!(
            c.total,
            Some(Fen(4720)),
            "the 合计, not the unit price ¥23.6"
        );
        assert_eq!(
            c.submit.as_ref().map(|t| t.label.as_str()),
            Some("提交订单")
        );
        assert_eq!(
            c.payment,
            PaymentVerdict::Interactive {
                method: "微信支付".into()
            }
        );
    }

    #[test]
    fn no_address_is_the_field_notes_wording() {
        let xml = edited(&[
            ("text=\"王小明 138****5678\"", "text=\"手动添加收货地址\""),
            (
                "text=\"浙江省杭州市西湖区文三路 100 号 3 幢 502 室\"",
                "text=\"\"",
            ),
        ]);
        assert_eq!(read(&xml).address_present, Some(false));
    }

    #[test]
    fn pay_later_and_password_free_and_a_pay_button_are_refused() {
        for pairs in [
            vec![
                (
                    "使用#微信支付，更换支付方式",
                    "使用#先用后付，确认收货后自动付款",
                ),
                ("text=\"提交订单\"", "text=\"先用后付 0元下单\""),
            ],
            vec![(
                "使用#微信支付，更换支付方式",
                "使用#多多支付(免密支付)，更换支付方式",
            )],
            vec![("text=\"提交订单\"", "text=\"立即支付\"")],
        ] {
            let c = read(&edited(&pairs));
            assert!(!c.payment.allowed(), "{pairs:?}: {:?}", c.payment);
        }
    }

    #[test]
    fn split_totals_and_a_disagreeing_button_amount() {
        // "合计：" / "¥" / "47.2": the parts are joined.
        let at = PAGE.find("text=\"¥47.2\"").expect("the total node");
        let start = PAGE[..at].rfind("<node").expect("its start");
        let end = at + PAGE[at..].find("/>").expect("its end") + 2;
        let node = &PAGE[start..end];
        let split = format!(
            "{}{}",
            node.replace("¥47.2", "¥"),
            node.replace("¥47.2", "47.2")
        );
        let c = read(&PAGE.replace(node, &split));
        assert_eq!(c.total, Some(Fen(4720)));
        // The button's own amount agrees: fine; disagrees: unreadable (fail closed).
        let c = read(&edited(&[("text=\"提交订单\"", "text=\"提交订单 ¥47.2\"")]));
        assert_eq!(c.total, Some(Fen(4720)));
        let c = read(&edited(&[("text=\"提交订单\"", "text=\"提交订单 ¥45.2\"")]));
        assert_eq!(c.total, None);
    }

    #[test]
    fn spec_lines_with_every_separator() {
        for l in [
            "颜色：樱花粉；容量：500ml",
            "樱花粉，500ml",
            "颜色:樱花粉",
            "规格 樱花粉",
            "已选 樱花粉 500ml",
        ] {
            assert!(is_spec_line(l), "{l}");
        }
        for l in [
            "已减3元，用多多支付再减1元",
            "合计：¥47.2",
            "使用#微信支付，更换支付方式",
            "王小明，浙江省杭州市西湖区文三路",
            "¥23.6",
        ] {
            assert!(!is_spec_line(l), "{l}");
        }
    }

    #[test]
    fn quantities() {
        for (l, q) in [("x2", 2), ("×12", 12), ("共3件", 3)] {
            let c = quantity_re().captures(l).expect(l);
            let n: u32 = c.get(1).or(c.get(2)).unwrap().as_str().parse().unwrap();
            assert_eq!(n, q);
        }
        assert!(quantity_re().captures("x2件装").is_none());
    }

    #[test]
    fn a_sheet_or_a_page_without_the_title_is_not_confirm_order() {
        // The title lower down (a button reading 确认订单) does not make the page.
        let xml = edited(&[(
            "bounds=\"[420,130][660,190]\"",
            "bounds=\"[420,1900][660,1960]\"",
        )]);
        let tree = Tree::parse(&xml).expect("dump parses");
        assert!(!matches!(classify(&tree), Screen::ConfirmOrder(_)));
    }
}
