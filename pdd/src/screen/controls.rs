//! The controls a tap must never land on by accident: **submit controls** (提交订单,
//! 确认下单: they create an order) and **pay actions** (去支付, 立即支付, 继续付款,
//! `支付 ¥59`, 0元下单, …: they pay, or commit an order without the unpaid stage). The
//! device guard (`job::guard`) asks [`controls_at`] before every tap.
//!
//! # Whole-label rule
//! A label is judged as a whole, never by prefix or substring: whitespace and
//! punctuation are dropped, then decorations at either end are peeled off (a money
//! amount such as `¥59`, `￥59.00`, `59元`, `，仅¥59`; a countdown such as `剩余23:59`; a
//! bracketed tail such as `(剩余14:59)`), and what is left — the *core* — must be one of
//! the listed phrasings exactly. So `支付 ¥59` and `继续支付，仅¥59` are pay actions, while
//! tabs and statuses (待付款, 待支付, 已支付, 支付成功), rows (支付方式,
//! `使用#微信支付，更换支付方式`, `用多多支付减7.53元`) and sales counts (`10万+人付款`) are
//! not. A payment-method name followed by an amount (`微信支付 ¥59.00`) is a cashier's
//! pay button; the bare method name (a row that only selects the method) is not.
//!
//! # Point inside a control
//! A labelled node's *control* is its nearest clickable ancestor-or-self (the node itself
//! when nothing around it is clickable). A tap at `p` hits the control when `p` lies
//! inside the labelled node's own visible bounds, or inside the control's and no other
//! clickable nested in the control (one that does not hold the label) takes the tap
//! there — an option chip inside a large clickable container is not the container's
//! footer. Every window of the dump counts (a cashier in another app included) when the
//! tree was parsed with every window.

use serde::Serialize;

use super::tree::{Bounds, NodeRef, Point, Tree};

/// What a flagged control does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ControlKind {
    /// Creates the order (提交订单 / 确认下单): tapped once, after the irreversible mark.
    Submit,
    /// Pays, or commits an order without the unpaid stage: never tapped.
    Pay,
}

/// A flagged control that a tap point lies in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ControlHit {
    pub kind: ControlKind,
    /// The label that flagged it (text or content-desc, trimmed).
    pub label: String,
    /// The bounds of the control (the clickable that takes the tap).
    pub bounds: Bounds,
}

/// Labels (cores) of the controls that create an order: the checkout's button, and the
/// repeat-order dialog's 继续下单 (PDD asks it when an unpaid order of the same goods
/// exists; it places a second order).
pub const SUBMIT_CORES: &[&str] = &[
    "提交订单",
    "确认下单",
    "继续下单",
    "仍要下单",
    "继续提交",
    "继续提交订单",
];

/// Labels (cores) that place the order only on a checkout screen (a sheet or page with
/// an address block, a payment row or a total): the 确定 / 立即购买 of a sheet that
/// carries the checkout's rows. Elsewhere they open a sheet or 确认订单 —
/// unless the button carries an amount ("确定 ¥59"): a button that quotes what the order
/// costs places it, wherever it is ([`proceed_carries_amount`]).
pub const CHECKOUT_SUBMIT_CORES: &[&str] = &["确定", "立即购买"];

/// The repeat-order dialog's controls that would place a second order (a subset of
/// [`SUBMIT_CORES`]: not the checkout's own 提交订单 / 确认下单).
pub const CONTINUE_ORDER_CORES: &[&str] = &["继续下单", "仍要下单", "继续提交", "继续提交订单"];

/// What may stand before a pay verb in a pay action (`""`: the bare verb).
pub const PAY_PREFIXES: &[&str] = &[
    "",
    "去",
    "立即",
    "立刻",
    "马上",
    "现在",
    "继续",
    "确认",
    "确定",
    "确认并",
    "同意并",
    "前往",
    "一键",
    "快速",
    "快捷",
    "直接",
    "完成",
    "免密",
    "指纹",
    "密码",
    "提交并",
    "提交订单并",
    "下单并",
    "开通免密",
    "开启免密",
];

/// The pay verbs.
pub const PAY_VERBS: &[&str] = &["支付", "付款", "买单", "结账"];

/// What may follow a pay verb in a pay action.
pub const PAY_SUFFIXES: &[&str] = &["", "并下单", "并提交", "并提交订单", "并确认"];

/// Whole labels that pay or commit without the unpaid stage (after whitespace and
/// punctuation are dropped).
pub const PAY_EXTRA: &[&str] = &[
    "确认交易",
    "0元下单",
    "¥0下单",
    "￥0下单",
    "先用后付0元下单",
    "先用后付下单",
    "确认先用后付",
    "开通先用后付",
    "立即开通先用后付",
    // The 免密支付 / 先用后付 offers after a submit: accepting turns auto-pay on.
    "立即开通",
    "开通免密支付",
    "立即开通免密支付",
    "同意开通",
    "确认开通",
];

/// Payment methods: `METHOD + 支付 + amount` is a cashier's pay button.
pub const METHOD_PREFIXES: &[&str] =
    &["微信", "支付宝", "多多", "银行卡", "云闪付", "QQ钱包", "QQ"];

/// What a label is, as a control: `None` for everything that is neither a pay action nor
/// a submit control.
pub fn classify_label(label: &str) -> Option<ControlKind> {
    if is_pay_action(label) {
        Some(ControlKind::Pay)
    } else if is_submit_control(label) {
        Some(ControlKind::Submit)
    } else {
        None
    }
}

/// Does this label (text or content-desc) ask to pay? Whole-label rule (module docs).
pub fn is_pay_action(label: &str) -> bool {
    let flat = flatten(label);
    if flat.is_empty() {
        return false;
    }
    if PAY_EXTRA.contains(&flat.as_str()) {
        return true;
    }
    let (core, amount) = peel(&flat, false);
    if is_pay_core(&core) {
        return true;
    }
    // A leading amount (`¥59 立即支付`): peeled only for the pay verbs themselves, so
    // `0元下单` above stays what it is.
    let (core2, amount2) = peel(&flat, true);
    if is_pay_core(&core2) {
        return true;
    }
    // `微信支付 ¥59.00`: a method's pay button (with an amount only).
    (amount || amount2)
        && [core, core2].iter().any(|c| {
            METHOD_PREFIXES.iter().any(|m| {
                c.strip_prefix(m)
                    .is_some_and(|rest| PAY_VERBS.contains(&rest))
            })
        })
}

/// Is this label a submit control (提交订单 / 确认下单, an amount allowed)?
pub fn is_submit_control(label: &str) -> bool {
    SUBMIT_CORES.contains(&label_core(label).as_str())
}

/// Is this label a control that places a second order from the repeat-order dialog
/// (继续下单, 仍要下单, …; an amount allowed)?
pub fn is_continue_order(label: &str) -> bool {
    CONTINUE_ORDER_CORES.contains(&label_core(label).as_str())
}

/// The label's core by the whole-label rule (module docs): whitespace and punctuation
/// dropped, amounts, countdowns and bracketed tails peeled off both ends.
pub fn label_core(label: &str) -> String {
    peel(&flatten(label), false).0
}

/// Whether a 确定 / 立即购买 node quotes an amount: in its own label ("确定 ¥59") or in
/// the button around it (its nearest clickable, when that is a button — at most three
/// texts — rather than a container: "确定" + "¥59"). Such a button places the order,
/// checkout rows or not.
pub fn proceed_carries_amount(node: NodeRef<'_>) -> bool {
    let own = [node.text(), node.desc()]
        .into_iter()
        .any(|l| peel(&flatten(l), false).1);
    own || node.nearest_clickable().is_some_and(|c| {
        let parts: Vec<&str> = c.texts().collect();
        parts.len() <= 3 && crate::money::price_from_parts(parts.iter().copied()).is_some()
    })
}

fn is_pay_core(core: &str) -> bool {
    PAY_PREFIXES.iter().any(|p| {
        core.strip_prefix(p).is_some_and(|rest| {
            PAY_VERBS.iter().any(|v| {
                rest.strip_prefix(v)
                    .is_some_and(|tail| PAY_SUFFIXES.contains(&tail))
            })
        })
    })
}

/// Punctuation dropped anywhere in a label (`.` and `:` are kept: amounts and countdowns
/// need them; they are peeled at the ends).
fn is_dropped(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '\u{3000}'
                | '\u{a0}'
                | '\u{200b}'
                | '\u{feff}'
                | ','
                | '，'
                | '。'
                | '!'
                | '！'
                | '?'
                | '？'
                | ';'
                | '；'
                | '、'
                | '·'
                | '•'
                | '-'
                | '—'
                | '_'
                | '|'
                | '/'
                | '~'
                | '～'
                | '>'
                | '›'
                | '»'
                | '》'
                | '<'
                | '‹'
                | '«'
                | '《'
                | '"'
                | '\''
                | '“'
                | '”'
                | '‘'
                | '’'
                | '#'
                | '*'
                | '+'
        )
}

/// The label without whitespace and dropped punctuation.
fn flatten(label: &str) -> String {
    label.chars().filter(|c| !is_dropped(*c)).collect()
}

/// Words that introduce an amount (`，仅¥59`, `合计¥12`, `实付¥3`).
const AMOUNT_WORDS: &[&str] = &[
    "仅需",
    "只需",
    "仅",
    "共",
    "合计",
    "实付",
    "应付",
    "需付",
    "需支付",
];

/// Peels decorations off both ends of `s` until none is left: amounts at the end (and at
/// the start when `leading_amount`), countdowns, bracketed tails, stray `.` `:`.
/// Returns the core and whether an amount was peeled.
fn peel(s: &str, leading_amount: bool) -> (String, bool) {
    let mut c: Vec<char> = s.chars().collect();
    let mut amount = false;
    loop {
        let before = c.len();
        // Stray separators at either end.
        while c.last().is_some_and(|x| matches!(x, '.' | ':' | '：')) {
            c.pop();
        }
        while c.first().is_some_and(|x| matches!(x, '.' | ':' | '：')) {
            c.remove(0);
        }
        if peel_bracket_tail(&mut c) {
            continue;
        }
        if peel_amount_tail(&mut c) {
            amount = true;
            continue;
        }
        if peel_countdown_tail(&mut c) {
            continue;
        }
        if leading_amount && peel_amount_head(&mut c) {
            amount = true;
            continue;
        }
        if c.len() == before {
            break;
        }
    }
    (c.into_iter().collect(), amount)
}

/// `(…)`, `（…）`, `[…]`, `【…】` at the end.
fn peel_bracket_tail(c: &mut Vec<char>) -> bool {
    let close = match c.last() {
        Some(')') => '(',
        Some('）') => '（',
        Some(']') => '[',
        Some('】') => '【',
        _ => return false,
    };
    match c.iter().rposition(|x| *x == close) {
        Some(i) if i > 0 => {
            c.truncate(i);
            true
        }
        _ => false,
    }
}

fn is_num(x: char) -> bool {
    x.is_ascii_digit() || x == '.'
}

/// Drops an amount word ending at `end` (exclusive) from `c[..end]`, returning the new end.
fn amount_word_before(c: &[char], end: usize) -> usize {
    for w in AMOUNT_WORDS {
        let n = w.chars().count();
        if end >= n && c[end - n..end].iter().copied().eq(w.chars()) {
            return end - n;
        }
    }
    end
}

/// `¥59`, `￥59.00`, `59元`, `59.00元` (with an amount word before it) at the end.
fn peel_amount_tail(c: &mut Vec<char>) -> bool {
    let mut end = c.len();
    let yuan = c.last() == Some(&'元');
    if yuan {
        end -= 1;
    }
    let digits_end = end;
    while end > 0 && is_num(c[end - 1]) {
        end -= 1;
    }
    if end == digits_end || !c[end..digits_end].iter().any(char::is_ascii_digit) {
        return false;
    }
    if end > 0 && matches!(c[end - 1], '¥' | '￥') {
        end -= 1;
    } else if !yuan {
        return false;
    }
    let end = amount_word_before(c, end);
    c.truncate(end);
    true
}

/// `¥59` / `59元` at the start.
fn peel_amount_head(c: &mut Vec<char>) -> bool {
    let mut i = 0;
    let sign = c.first().is_some_and(|x| matches!(x, '¥' | '￥'));
    if sign {
        i = 1;
    }
    let start = i;
    while i < c.len() && is_num(c[i]) {
        i += 1;
    }
    if i == start || !c[start..i].iter().any(char::is_ascii_digit) {
        return false;
    }
    if c.get(i) == Some(&'元') {
        i += 1;
    } else if !sign {
        return false;
    }
    c.drain(..i);
    true
}

/// `23:59`, `23:59:59`, `剩余14:59`, `还剩14:59` at the end.
fn peel_countdown_tail(c: &mut Vec<char>) -> bool {
    let mut end = c.len();
    let mut groups = 0;
    loop {
        let group_end = end;
        while end > 0 && c[end - 1].is_ascii_digit() {
            end -= 1;
        }
        if end == group_end {
            return false;
        }
        groups += 1;
        if end > 0 && matches!(c[end - 1], ':' | '：') && groups < 3 {
            end -= 1;
            continue;
        }
        break;
    }
    if groups < 2 {
        return false;
    }
    for w in ["剩余", "还剩", "剩"] {
        let n = w.chars().count();
        if end >= n && c[end - n..end].iter().copied().eq(w.chars()) {
            end -= n;
            break;
        }
    }
    c.truncate(end);
    true
}

pub use super::target::control_of;

/// Does a tap at `at` press the control of the labelled node `node`? (module docs)
pub fn presses(node: NodeRef<'_>, at: Point) -> bool {
    if !node.is_visible() {
        return false;
    }
    // Something PDD drew over the control takes the touch there: a promo
    // bubble's close over the footer does not press 提交订单.
    if super::cover::covering_node(node, at).is_some() {
        return false;
    }
    if node.visible_bounds().contains_point(at) {
        return true;
    }
    let control = control_of(node);
    if !control.visible_bounds().contains_point(at) {
        return false;
    }
    // Another clickable inside the control, not holding the label, takes the tap there.
    !control.descendants().any(|d| {
        d.is_clickable()
            && d.visible_bounds().contains_point(at)
            && !(d.id() == node.id() || d.contains(&node))
    })
}

/// A 确定 / 立即购买 of a checkout screen (`checkout`), or one that quotes an amount
/// anywhere ([`proceed_carries_amount`]): a submit control.
fn checkout_submit(node: NodeRef<'_>, checkout: bool) -> Option<(ControlKind, &str)> {
    [node.text(), node.desc()].into_iter().find_map(|l| {
        (CHECKOUT_SUBMIT_CORES.contains(&label_core(l).as_str())
            && (checkout || proceed_carries_amount(node)))
        .then(|| (ControlKind::Submit, l.trim()))
    })
}

/// The flagged label of a node (text first, then content-desc), if any.
fn flagged(node: NodeRef<'_>) -> Option<(ControlKind, &str)> {
    [node.text(), node.desc()]
        .into_iter()
        .find_map(|l| classify_label(l).map(|k| (k, l.trim())))
}

/// Every submit control and pay action of the tree that a tap at `at` would press; pay
/// actions first. `checkout`: the tree is a checkout screen
/// (`super::checkout::is_checkout`), where a 确定 / 立即购买 places the order too (one
/// that quotes an amount does on any screen).
pub fn controls_at(tree: &Tree, at: Point, checkout: bool) -> Vec<ControlHit> {
    let mut hits: Vec<ControlHit> = tree
        .nodes()
        .filter_map(|n| {
            flagged(n)
                .or_else(|| checkout_submit(n, checkout))
                .map(|(k, l)| (n, k, l))
        })
        .filter(|(n, _, _)| presses(*n, at))
        .map(|(n, kind, label)| ControlHit {
            kind,
            label: label.to_string(),
            bounds: control_of(n).bounds(),
        })
        .collect();
    hits.sort_by_key(|h| h.kind != ControlKind::Pay);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pay_actions_each_word() {
        for l in [
            "去支付",
            "立即支付",
            "继续支付",
            "确认支付",
            "去付款",
            "继续付款",
            "立即付款",
            "确认付款",
            "确认并支付",
            "支付",
            "付款",
            "支付 ¥59",
            "支付¥59.00",
            "支付 ￥ 59.00",
            "立即支付 ¥59.00",
            "继续支付，仅¥59",
            "  去支付 ",
            "去支付(剩余23:59:59)",
            "去支付 剩余14:59",
            "¥59 立即支付",
            "微信支付 ¥59.00",
            "支付宝支付￥12",
            "免密支付",
            "开通免密支付",
            "马上支付",
            "立即买单",
            "去结账",
            "支付并下单",
            "提交订单并支付",
            "确认交易",
            "0元下单",
            "先用后付，0元下单",
            "支付59元",
            "立即支付!",
        ] {
            assert!(is_pay_action(l), "{l} is a pay action");
            assert_eq!(classify_label(l), Some(ControlKind::Pay), "{l}");
        }
    }

    #[test]
    fn tabs_statuses_and_rows_are_not_pay_actions() {
        for l in [
            "待付款",
            "待支付",
            "已支付",
            "已付款",
            "支付方式",
            "更换支付方式",
            "选择支付方式",
            "使用#微信支付，更换支付方式",
            "用多多支付减7.53元",
            "支付成功",
            "支付失败",
            "支付未完成",
            "支付剩余时间 14:59",
            "微信支付",
            "支付宝",
            "多多支付",
            "先用后付",
            "实付：",
            "实付款",
            "付款方式",
            "10万+人付款",
            "3人付款",
            "确认收货",
            "确认收货后付款",
            "取消订单",
            "查看订单",
            "先去逛逛",
            "确定放弃吗?",
            "，仅¥59",
            "¥59",
            "提交订单 ¥269",
            "立即购买",
            "发起拼单 ¥59",
            "确定",
            "",
        ] {
            assert!(!is_pay_action(l), "{l} is not a pay action");
        }
    }

    #[test]
    fn submit_controls_whole_label() {
        for l in [
            "提交订单",
            "提交订单 ¥269",
            "提交订单¥59.00",
            "提交订单(¥88)",
            "确认下单",
            "确认下单 ￥12.50",
            "继续下单",
        ] {
            assert!(is_submit_control(l), "{l}");
            assert_eq!(classify_label(l), Some(ControlKind::Submit), "{l}");
        }
        for l in [
            "提交订单并支付",
            "订单提交成功",
            "提交订单后请尽快支付",
            "确认下单吗",
            "待提交订单",
            "确定",
            "立即下单",
        ] {
            assert!(!is_submit_control(l), "{l}");
        }
        assert_eq!(classify_label("提交订单并支付"), Some(ControlKind::Pay));
    }

    fn tree(body: &str) -> Tree {
        Tree::parse(&format!(
            r#"<hierarchy rotation="0"><node index="0" package="com.xunmeng.pinduoduo" class="android.widget.FrameLayout" bounds="[0,0][1080,2400]">{body}</node></hierarchy>"#
        ))
        .expect("tree")
    }

    #[test]
    fn a_point_inside_the_clickable_around_a_label_presses_it() {
        // The real footer: a clickable FrameLayout around the 提交订单 ¥269 text.
        let t = tree(
            r#"<node class="android.widget.FrameLayout" clickable="true" bounds="[334,2213][1080,2354]"><node class="android.widget.TextView" text="提交订单 ¥269" bounds="[548,2251][865,2316]"/></node><node class="android.widget.TextView" text="待付款" clickable="true" bounds="[0,100][200,200]"/>"#,
        );
        let hit = controls_at(&t, Point { x: 400, y: 2300 }, false);
        assert_eq!(hit.len(), 1);
        assert_eq!(hit[0].kind, ControlKind::Submit);
        assert_eq!(hit[0].bounds, Bounds::new(334, 2213, 1080, 2354));
        assert!(controls_at(&t, Point { x: 100, y: 150 }, false).is_empty());
        assert!(controls_at(&t, Point { x: 200, y: 2300 }, false).is_empty());
    }

    #[test]
    fn a_nested_clickable_takes_its_own_taps() {
        // A clickable card with a status and a nested 去支付 button; and a container whose
        // loose 去付款 text makes the whole container a pay control.
        let t = tree(
            r#"<node class="android.widget.LinearLayout" clickable="true" bounds="[24,300][1056,900]"><node text="待付款" bounds="[880,325][1020,380]"/><node class="android.widget.FrameLayout" clickable="true" bounds="[790,770][1020,870]"><node text="去支付" bounds="[810,790][1000,850]"/></node></node><node class="android.widget.LinearLayout" clickable="true" bounds="[0,1000][1080,1400]"><node text="继续付款" bounds="[400,1300][700,1380]"/><node class="android.view.View" clickable="true" content-desc="选项" bounds="[0,1000][300,1100]"/></node>"#,
        );
        // The card (outside the button) is not a pay control.
        assert!(controls_at(&t, Point { x: 300, y: 500 }, false).is_empty());
        let hit = controls_at(&t, Point { x: 900, y: 820 }, false);
        assert_eq!(hit[0].kind, ControlKind::Pay);
        assert_eq!(hit[0].label, "去支付");
        // The loose label's control is its container, except where a nested clickable
        // takes the tap.
        assert_eq!(
            controls_at(&t, Point { x: 900, y: 1200 }, false)[0].label,
            "继续付款"
        );
        assert!(controls_at(&t, Point { x: 100, y: 1050 }, false).is_empty());
    }

    #[test]
    fn a_confirm_on_a_checkout_screen_is_a_submit_control() {
        // 确定 in a sheet's footer: a submit control only where the screen is a checkout.
        let t = tree(
            r#"<node class="android.widget.FrameLayout" clickable="true" bounds="[334,2213][1080,2354]"><node class="android.widget.TextView" text="确定" bounds="[650,2251][760,2316]"/></node>"#,
        );
        let at = Point { x: 700, y: 2280 };
        assert!(controls_at(&t, at, false).is_empty());
        let hit = controls_at(&t, at, true);
        assert_eq!(hit.len(), 1);
        assert_eq!(hit[0].kind, ControlKind::Submit);
        // The repeat-order dialog's 继续下单 places a second order: a submit control
        // everywhere; 立即开通 (免密支付 / 先用后付 offers) is a pay action.
        for (label, kind) in [
            ("继续下单", ControlKind::Submit),
            ("立即开通", ControlKind::Pay),
            ("开通免密支付", ControlKind::Pay),
        ] {
            assert_eq!(classify_label(label), Some(kind), "{label}");
        }
    }

    #[test]
    fn content_desc_counts() {
        let t = tree(
            r#"<node class="android.widget.ImageView" clickable="true" content-desc="立即支付" bounds="[0,0][100,100]"/>"#,
        );
        assert_eq!(
            controls_at(&t, Point { x: 50, y: 50 }, false)[0].kind,
            ControlKind::Pay
        );
    }
}
