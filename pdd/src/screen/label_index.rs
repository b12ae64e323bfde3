//! The per-dump index the recognizers share, and the PDD wordings they look for.
//!
//! [`Page`] is built once per classification: the visible nodes that carry a label, in
//! document order. Recognizers ask it "is there a visible label equal to / starting
//! with / containing X" instead of each walking the tree again.
//!
//! The keyword lists below are the field notes' wordings (§3) plus close variants; keep
//! them here so a change in the app's wording is a one-line change.

use std::sync::OnceLock;

use regex::Regex;

use super::tree::{NodeRef, Tree};
use crate::money::{parse_price, price_from_parts, Fen};

/// Labels longer than this are sentences or goods titles, never buttons or headings;
/// keyword matches on them are ignored (a title may contain "登录" or "验证").
pub const MAX_KEYWORD_LABEL: usize = 24;

/// Risk pages: a human must take over (`RISK_VERIFICATION`). Matched by containment.
pub const RISK_STRONG: &[&str] = &[
    "安全验证",
    "拖动滑块",
    "滑块验证",
    "向右拖动",
    "账号存在风险",
    "账号存在异常",
    "账号异常",
    "身份验证",
    "请完成验证",
    // Field notes §3a: PDD's rate-limit wording; the account is flagged.
    "操作过于频繁",
];
/// Risk wording that also appears on ordinary pages (cross-border checkouts ask for
/// 实名认证): only counts when no ordinary page is recognised.
pub const RISK_WEAK: &[&str] = &["实名认证", "人脸识别", "请验证身份"];

/// Login pages and login sheets (`LOGIN_REQUIRED`). Matched by containment.
pub const LOGIN: &[&str] = &[
    "手机号登录",
    "手机号码登录",
    "微信登录",
    "一键登录",
    "其他登录方式",
    "登录/注册",
    "请先登录",
    "请登录",
    "同意并登录",
    "登录拼多多",
    "立即登录",
];

/// The retention dialog raised when backing out of payment.
pub const ABANDON_TITLE: &[&str] = &["确定放弃", "确认放弃", "放弃支付", "放弃付款", "确定要放弃"];
/// Ways out of that dialog (exact labels).
pub const ABANDON_LEAVE: &[&str] = &[
    "先去逛逛",
    "去逛逛",
    "残忍离开",
    "狠心离开",
    "确认离开",
    "暂时离开",
    "放弃支付",
    "放弃付款",
    "暂不支付",
    "以后再说",
];

/// Buttons of a popup that close it without buying anything, best first. Exact labels
/// only: a goods page may well print "暂不支持退货" or "跳过此步"; a skip countdown
/// ("跳过 3s", "3秒后跳过") is matched by [`is_skip_countdown`].
pub const DISMISS: &[&str] = &[
    "关闭弹窗",
    "跳过",
    "跳过广告",
    "暂不",
    "暂不需要",
    "暂不开启",
    "暂不开通",
    "暂不升级",
    "暂不更新",
    "暂不领取",
    "下次再说",
    "以后再说",
    "稍后再说",
    "残忍拒绝",
    "狠心拒绝",
    "残忍放弃",
    "我知道了",
    "知道了",
    "不感兴趣",
    "不再提醒",
];

/// "跳过 3", "跳过3s", "3s 跳过", "3秒后跳过".
pub fn is_skip_countdown(label: &str) -> bool {
    let rest = label
        .strip_prefix("跳过")
        .or_else(|| label.strip_suffix("跳过"))
        .unwrap_or(label);
    rest != label
        && rest
            .trim()
            .trim_end_matches(['s', 'S', '秒'])
            .trim_end_matches("秒后")
            .trim()
            .chars()
            .all(|c| c.is_ascii_digit())
        && rest.chars().any(|c| c.is_ascii_digit())
}
/// Content-descs of close icons.
pub const CLOSE_DESC: &[&str] = &[
    "关闭弹窗",
    "关闭",
    "关闭按钮",
    "关闭提示",
    "close",
    "Close",
    "关 闭",
];
/// Wordings that mark a promotional popup (besides a dismiss button).
pub const POPUP_MARKERS: &[&str] = &[
    "开心收下",
    "专属现金红包",
    "现金红包",
    "立即领取",
    "立即升级",
    "发现新版本",
    "青少年模式",
    "恭喜获得",
    "恭喜你",
    "限时福利",
    "新人专享",
];
/// Accepting a gift also closes its popup; used only when no real dismiss is found.
pub const ACCEPT_GIFT: &[&str] = &["开心收下", "收下"];

/// Never tap a label containing one of these to get *out* of something.
pub const MONEY_WORDS: &[&str] = &[
    "支付", "付款", "提交", "购买", "下单", "拼单", "继续", "确认", "确定", "开通", "立即", "抢",
    "领取", "升级", "¥", "￥",
];

/// Goods-page buy buttons (the label starts with one).
pub const BUY_BUTTONS: &[&str] = &[
    "发起拼单",
    "单独购买",
    "免拼购买",
    "去拼单",
    "参与拼单",
    "立即购买",
    "立即抢购",
    "马上抢",
    "一键拼单",
];

/// The payment (cashier) page's pay buttons (the label starts with one).
pub const PAYMENT_BUTTONS: &[&str] = &["立即支付", "确认支付", "确认付款"];
/// Other wordings only the payment page shows (contained in a label).
pub const PAYMENT_MARKERS: &[&str] = &["支付剩余时间", "选择支付方式", "收银台"];

/// The statuses of an unpaid order (every wording PDD uses for it).
pub const UNPAID_STATUSES: &[&str] = &["待付款", "待支付", "等待付款", "等待买家付款"];

/// Wordings on an order that say it is paid or bound to be paid without a human, whatever
/// its status line says (先用后付 orders are shipped and charged after delivery).
pub const BINDING_ORDER_WORDS: &[&str] = &[
    "先用后付",
    "先享后付",
    "确认收货后自动付款",
    "确认收货后付款",
    "自动扣款",
    "免密支付",
    "已支付",
    "支付成功",
];

/// Order statuses as the order list and detail pages print them.
pub const ORDER_STATUSES: &[&str] = &[
    "待付款",
    "待支付",
    "等待付款",
    "等待买家付款",
    "待分享",
    "拼单中",
    "待发货",
    "已发货",
    "待收货",
    "待评价",
    "已完成",
    "交易成功",
    "已取消",
    "交易已取消",
    "交易关闭",
    "交易已关闭",
    "退款中",
    "已退款",
    "售后中",
    "已签收",
    "未发货，退款成功",
];
/// Tabs of the order list (个人中心 → 我的订单).
pub const ORDER_TABS: &[&str] = &[
    "全部",
    "待付款",
    "待支付",
    "待分享",
    "待发货",
    "待收货",
    "评价",
    "退款/售后",
];

/// Words looked up with [`Page::containing`] outside the lists above.
pub const OTHER_CONTAINED: &[&str] = &[
    "手机号",
    "验证码",
    "密码",
    "该款式售罄",
    "已售罄",
    "商品已下架",
    "已下架",
    "已抢光",
];

/// Every word [`Page::containing`] is asked about, for the one-pass prefilter.
const CONTAINED_LISTS: &[&[&str]] = &[
    RISK_STRONG,
    RISK_WEAK,
    LOGIN,
    ABANDON_TITLE,
    POPUP_MARKERS,
    PAYMENT_MARKERS,
    OTHER_CONTAINED,
];

/// One regex over all contained-keywords: a label that does not match it cannot match
/// any `containing` query, so most labels are ruled out by one (prefiltered) pass
/// instead of dozens of substring searches.
fn keyword_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| {
        let alternation: Vec<String> = CONTAINED_LISTS
            .iter()
            .flat_map(|l| l.iter())
            .map(|w| regex::escape(w))
            .collect();
        Regex::new(&alternation.join("|")).expect("static keyword regex")
    })
}

fn is_prefiltered(word: &str) -> bool {
    CONTAINED_LISTS.iter().any(|l| l.contains(&word))
}

/// Trims the whitespace PDD pads names with (ASCII, ideographic space, NBSP).
pub fn trim_name(s: &str) -> &str {
    s.trim_matches(|c: char| c.is_whitespace() || c == '\u{3000}' || c == '\u{a0}')
}

/// True when `label` starts with `word` and is at most `slack` characters longer.
pub fn starts_short(label: &str, word: &str, slack: usize) -> bool {
    label.starts_with(word) && label.chars().count() <= word.chars().count() + slack
}

pub fn has_money_word(label: &str) -> bool {
    MONEY_WORDS.iter().any(|w| label.contains(w))
}

/// The visible, labelled nodes of a tree in document order.
pub struct Page<'t> {
    pub tree: &'t Tree,
    pub labelled: Vec<NodeRef<'t>>,
    /// Trimmed (text, desc) of each `labelled` node: every recognizer reads them.
    trimmed: Vec<(&'t str, &'t str)>,
    /// Whether each labelled node's text or desc holds any contained-keyword.
    keyworded: Vec<bool>,
}

impl<'t> Page<'t> {
    pub fn new(tree: &'t Tree) -> Page<'t> {
        let mut labelled = Vec::with_capacity(tree.len() / 2);
        let mut trimmed = Vec::with_capacity(tree.len() / 2);
        for n in tree.nodes() {
            let t = trim_name(n.text());
            let d = trim_name(n.desc());
            if (t.is_empty() && d.is_empty()) || !n.is_visible() {
                continue;
            }
            labelled.push(n);
            trimmed.push((t, d));
        }
        let re = keyword_re();
        let keyworded = trimmed
            .iter()
            .map(|(t, d)| {
                (t.len() <= MAX_KEYWORD_LABEL * 4 && re.is_match(t))
                    || (d.len() <= MAX_KEYWORD_LABEL * 4 && re.is_match(d))
            })
            .collect();
        Page {
            tree,
            labelled,
            trimmed,
            keyworded,
        }
    }

    /// Visible nodes whose text or desc (trimmed) satisfies `pred`, in document order.
    pub fn labels<'p, F>(&'p self, mut pred: F) -> impl Iterator<Item = NodeRef<'t>> + 'p
    where
        F: FnMut(&str) -> bool + 'p,
    {
        self.labelled
            .iter()
            .zip(&self.trimmed)
            .filter(move |(_, (t, d))| (!t.is_empty() && pred(t)) || (!d.is_empty() && pred(d)))
            .map(|(n, _)| *n)
    }

    /// The first visible node whose text or desc equals one of `words`.
    pub fn exact(&self, words: &[&str]) -> Option<NodeRef<'t>> {
        self.labels(|l| words.contains(&l)).next()
    }

    /// The first visible short label containing one of `words`.
    pub fn containing(&self, words: &[&str]) -> Option<NodeRef<'t>> {
        let matches =
            |l: &str| l.chars().count() <= MAX_KEYWORD_LABEL && words.iter().any(|w| l.contains(w));
        if !words.iter().all(|w| is_prefiltered(w)) {
            return self.labels(matches).next();
        }
        self.labelled
            .iter()
            .zip(&self.trimmed)
            .zip(&self.keyworded)
            .filter(|(_, &k)| k)
            .find(|((_, (t, d)), _)| (!t.is_empty() && matches(t)) || (!d.is_empty() && matches(d)))
            .map(|((n, _), _)| *n)
    }

    /// The first visible label starting with one of `words` with at most `slack` more
    /// characters.
    pub fn starting(&self, words: &[&str], slack: usize) -> Option<NodeRef<'t>> {
        self.labels(|l| words.iter().any(|w| starts_short(l, w, slack)))
            .next()
    }

    /// The visible label of `n`'s text if any, else of its desc, trimmed.
    pub fn label_of(n: &NodeRef<'t>) -> &'t str {
        let t = trim_name(n.text());
        if t.is_empty() {
            trim_name(n.desc())
        } else {
            t
        }
    }
}

/// The currency signs a price label carries.
pub const SIGNS: [char; 2] = ['¥', '￥'];

/// The first price in page order outside `skip`: a label with a sign ("券后¥4.7"), or
/// a sign node whose siblings hold the amount ("¥" / "22.6").
pub fn first_price(
    page: &Page<'_>,
    skip: &dyn Fn(&NodeRef<'_>) -> bool,
) -> (Option<Fen>, Option<String>) {
    for n in page.labelled.iter() {
        let text = trim_name(n.text());
        if !text.contains(SIGNS) || skip(n) {
            continue;
        }
        if let Some(p) = parse_price(text) {
            return (Some(p), Some(text.to_string()));
        }
        // Split: read the siblings from the one before the sign (a "券后" wording). The
        // row's first price is the one shown as the price; a second sign-bearing sibling
        // after it is the struck-through list price ("券后" "¥" "59" "¥129"), not an
        // ambiguity, so the row is cut there.
        if let Some(parent) = n.parent() {
            let mut parts: Vec<&str> = parent
                .children()
                .map(|c| trim_name(c.text()))
                .filter(|t| !t.is_empty())
                .collect();
            if let Some(second) = parts
                .iter()
                .enumerate()
                .filter(|(_, t)| t.contains(SIGNS))
                .nth(1)
                .map(|(i, _)| i)
            {
                parts.truncate(second);
            }
            if let Some(p) = price_from_parts(parts.iter().copied()) {
                let joined: String = parts
                    .iter()
                    .take_while(|t| !t.contains("已") && !t.contains("件"))
                    .copied()
                    .collect();
                return (Some(p), Some(joined));
            }
        }
    }
    (None, None)
}
