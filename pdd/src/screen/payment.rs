//! The payment method a confirming screen (the SKU sheet's footer, or 确认订单) would use
//! if its order button were tapped — judged before any submit, fail closed.
//!
//! An order is allowed only when the screen shows a payment row naming an **interactive**
//! method (微信支付, 支付宝, …: paying needs a further step by a human), no wording that
//! commits or pays without one (先用后付, 免密, 自动扣款, 0元下单, 直接支付, …) anywhere on
//! the screen, and an order button that places an unpaid order: 提交订单 / 确认下单, or a
//! 确定 / 立即购买 on a sheet that carries the checkout's rows ([`OrderButton`]). A button
//! that pays in the same tap (立即支付 ¥59) never is. Anything else is
//! [`PaymentVerdict::NotAllowed`], with the [`Refusal`] that decided it — each refusal
//! has its own operator text ([`Refusal::operator_text`]): an account on 先用后付 is told
//! to turn 先用后付 off, a checkout that pays in one tap is not told to switch to 微信支付.

use serde::Serialize;

use crate::reasons::OperatorText;

/// Methods that need a human to pay after the order is placed.
pub const INTERACTIVE_METHODS: &[&str] = &["微信支付", "支付宝", "银行卡", "云闪付", "QQ钱包"];

/// Wordings that place an order bound to pay after delivery: on any of them, no submit.
pub const PAY_LATER_WORDS: &[&str] = &[
    "先用后付",
    "先享后付",
    "0元下单",
    "确认收货后付款",
    "确认收货后自动付款",
];

/// Wordings that pay at once without a human: on any of them, no submit.
pub const PASSWORD_FREE_WORDS: &[&str] = &["免密", "自动扣款", "自动付款", "直接支付"];

/// The submit controls an order may be placed with (the label starts with one).
pub const SUBMIT_LABELS: &[&str] = &["提交订单", "确认下单"];

/// What the screen says about paying.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum PaymentVerdict {
    /// An interactive method and an order button that places an unpaid order.
    Interactive { method: String },
    /// Submitting here could pay or bind the order, or nothing says it would not: never
    /// tap.
    NotAllowed { reason: String, refusal: Refusal },
    /// This screen places no order (a spec sheet whose 确定 / 立即购买 opens 确认订单) and
    /// shows no committing wording: the payment is judged on the next page.
    OnNextPage,
}

impl PaymentVerdict {
    pub fn allowed(&self) -> bool {
        matches!(self, PaymentVerdict::Interactive { .. })
    }
}

/// Why a confirming screen is refused, as the operator needs to hear it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Refusal {
    /// 先用后付 / 0元下单: the tap places an order paid automatically after delivery.
    PayLater { word: String },
    /// 免密 / 自动扣款: the tap pays at once.
    PasswordFree { word: String },
    /// The order button itself pays (立即支付 ¥59, 确认支付): the checkout has no unpaid
    /// stage; switching the method would not help.
    PaysInSameTap { label: String },
    /// No payment row at all.
    NoPaymentRow,
    /// A payment row naming a method that needs no human (多多支付 …).
    MethodNotInteractive { row: String },
    /// No order button on the screen.
    NoOrderButton,
    /// The order button reads something this client does not place orders with.
    UnknownOrderButton { label: String },
}

/// Whether a refusal (its stable name, `refusal` in diagnostics) is about the account's
/// payment setting — 先用后付, 免密 / auto-pay, a method that needs no human — which every
/// task of the account would meet: the worker pauses until an operator acknowledges. The
/// others are about one goods' checkout (its button pays in the same tap, it shows no
/// payment row or no order button): that task is refused, the account goes on.
pub fn refusal_pauses_account(name: &str) -> bool {
    matches!(
        name,
        "pay_later" | "password_free" | "method_not_interactive"
    )
}

impl Refusal {
    /// About the account's payment setting ([`refusal_pauses_account`]).
    pub fn pauses_account(&self) -> bool {
        refusal_pauses_account(self.as_str())
    }

    /// The stable name (`refusal` in diagnostics).
    pub fn as_str(&self) -> &'static str {
        match self {
            Refusal::PayLater { .. } => "pay_later",
            Refusal::PasswordFree { .. } => "password_free",
            Refusal::PaysInSameTap { .. } => "pays_in_same_tap",
            Refusal::NoPaymentRow => "no_payment_row",
            Refusal::MethodNotInteractive { .. } => "method_not_interactive",
            Refusal::NoOrderButton => "no_order_button",
            Refusal::UnknownOrderButton { .. } => "unknown_order_button",
        }
    }

    /// The refusal in English (logs, the §7 message).
    pub fn reason(&self) -> String {
        match self {
            Refusal::PayLater { word } => format!(
                "the checkout says `{word}`: the tap would place an order paid automatically after delivery (先用后付), not an unpaid one"
            ),
            Refusal::PasswordFree { word } => {
                format!("the checkout says `{word}`: the tap would pay at once without a password")
            }
            Refusal::PaysInSameTap { label } => format!(
                "the order button reads `{label}`: this checkout pays in the same tap, it has no unpaid stage"
            ),
            Refusal::NoPaymentRow => {
                "the checkout shows no payment method: nothing proves a human must pay".into()
            }
            Refusal::MethodNotInteractive { row } => format!(
                "the payment method `{row}` is not one a human must confirm"
            ),
            Refusal::NoOrderButton => "the checkout shows no 提交订单 button".into(),
            Refusal::UnknownOrderButton { label } => format!(
                "the order button reads `{label}`, not 提交订单: this client does not order with it"
            ),
        }
    }

    /// What the operator reads, and does next — including whether the account is paused
    /// until the alert is acknowledged ([`Refusal::pauses_account`]).
    pub fn operator_text(&self) -> OperatorText {
        let mut t = self.text();
        if self.pauses_account() {
            t.next_zh
                .push_str("；在此之前本账号暂停接单，处理后在控制台确认告警");
            t.next_en.push_str(
                "; until then the account takes no tasks: acknowledge the alert in the console once done",
            );
        } else {
            t.next_zh.push_str("（只影响这个商品，账号照常接单）");
            t.next_en
                .push_str(" (this goods only: the account goes on taking tasks)");
        }
        t
    }

    fn text(&self) -> OperatorText {
        fn t(
            zh: impl Into<String>,
            en: impl Into<String>,
            next_zh: impl Into<String>,
            next_en: impl Into<String>,
        ) -> OperatorText {
            OperatorText::new(zh, en, next_zh, next_en)
        }
        match self {
            Refusal::PayLater { word } => t(
                format!("下单页显示“{word}”：点下单会生成先用后付订单（确认收货后自动扣款），不是待付款订单，已停止"),
                format!("the checkout says “{word}”: the tap would place a 先用后付 order (paid automatically after delivery), not an unpaid one; stopped"),
                "在手机上关闭该账号的先用后付（我的 › 设置 › 先用后付），付款方式选微信支付，然后重新派发",
                "turn 先用后付 off for the account on the phone (我的 › 设置 › 先用后付), choose 微信支付, then dispatch again",
            ),
            Refusal::PasswordFree { word } => t(
                format!("下单页显示“{word}”：点下单会直接扣款，已停止"),
                format!("the checkout says “{word}”: the tap would pay at once; stopped"),
                "在手机上关闭免密支付/自动扣款（多多支付 › 免密支付），付款方式选微信支付，然后重新派发",
                "turn off 免密支付 / auto-pay on the phone (多多支付 › 免密支付), choose 微信支付, then dispatch again",
            ),
            Refusal::PaysInSameTap { label } => t(
                format!("这个下单页点一下就直接付款（按钮是“{label}”），没有待付款这一步，已停止"),
                format!("this checkout pays in the same tap (its button reads “{label}”): there is no unpaid stage; stopped"),
                "换付款方式不能解决：请人工下单，或在管理端取消该任务",
                "changing the payment method does not help: order by hand, or cancel the task in the Admin",
            ),
            Refusal::NoPaymentRow => t(
                "下单页没有显示付款方式，无法确认付款需要人工操作，已停止",
                "the checkout shows no payment method, so nothing proves a human must pay; stopped",
                "查看截图；若拼多多改了下单页，请联系维护者",
                "look at the screenshots; if PDD changed its checkout, tell the maintainers",
            ),
            Refusal::MethodNotInteractive { row } => t(
                format!("付款方式“{row}”不需要人工确认，已停止"),
                format!("the payment method “{row}” needs no human to confirm; stopped"),
                "在手机上把付款方式改为微信支付，然后重新派发",
                "set the payment method to 微信支付 on the phone, then dispatch again",
            ),
            Refusal::NoOrderButton => t(
                "下单页没有“提交订单”按钮，已停止",
                "the checkout shows no 提交订单 button; stopped",
                "查看截图；若拼多多改了下单页，请联系维护者",
                "look at the screenshots; if PDD changed its checkout, tell the maintainers",
            ),
            Refusal::UnknownOrderButton { label } => t(
                format!("下单按钮写的是“{label}”，不是“提交订单”，已停止"),
                format!("the order button reads “{label}”, not 提交订单; stopped"),
                "查看截图；若拼多多改了下单页，请联系维护者",
                "look at the screenshots; if PDD changed its checkout, tell the maintainers",
            ),
        }
    }
}

/// What the screen's order button does when tapped, as far as its label and the screen
/// around it say.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OrderButton<'a> {
    /// 提交订单 / 确认下单: places an unpaid order.
    Submit(&'a str),
    /// 确定 / 立即购买 on a sheet that carries the checkout's rows (address, payment row,
    /// total): it places the order like 提交订单.
    CommittingProceed(&'a str),
    /// A pay action (立即支付 ¥59, 确认支付, 0元下单): pays or binds in the same tap.
    Pays(&'a str),
    /// None on screen.
    Missing,
}

/// Judges a confirming screen from its payment row, its order button and every visible
/// label (nudges and footers included).
pub fn assess<'a>(
    payment_row: Option<&'a str>,
    button: OrderButton<'a>,
    labels: impl IntoIterator<Item = &'a str>,
) -> PaymentVerdict {
    let label = match button {
        OrderButton::Submit(l) | OrderButton::CommittingProceed(l) | OrderButton::Pays(l) => {
            Some(l)
        }
        OrderButton::Missing => None,
    };
    let refuse = |refusal: Refusal| PaymentVerdict::NotAllowed {
        reason: refusal.reason(),
        refusal,
    };
    if let Some(r) = committing(labels.into_iter().chain(payment_row).chain(label)) {
        return refuse(r);
    }
    if let OrderButton::Pays(l) = button {
        return refuse(Refusal::PaysInSameTap { label: short(l) });
    }
    let Some(row) = payment_row else {
        return refuse(Refusal::NoPaymentRow);
    };
    let Some(method) = INTERACTIVE_METHODS.iter().find(|m| row.contains(*m)) else {
        return refuse(Refusal::MethodNotInteractive { row: short(row) });
    };
    match button {
        OrderButton::Submit(l) if SUBMIT_LABELS.iter().any(|s| l.trim().starts_with(s)) => {
            PaymentVerdict::Interactive {
                method: (*method).to_string(),
            }
        }
        OrderButton::CommittingProceed(_) => PaymentVerdict::Interactive {
            method: (*method).to_string(),
        },
        OrderButton::Submit(l) => refuse(Refusal::UnknownOrderButton { label: short(l) }),
        OrderButton::Pays(l) => refuse(Refusal::PaysInSameTap { label: short(l) }),
        OrderButton::Missing => refuse(Refusal::NoOrderButton),
    }
}

fn short(s: &str) -> String {
    s.trim().chars().take(40).collect()
}

/// The first label with wording that places a binding or paid order (先用后付, 免密, …).
pub fn committing<'a>(labels: impl IntoIterator<Item = &'a str>) -> Option<Refusal> {
    labels.into_iter().find_map(|l| {
        if let Some(w) = PAY_LATER_WORDS.iter().find(|w| l.contains(*w)) {
            return Some(Refusal::PayLater {
                word: (*w).to_string(),
            });
        }
        PASSWORD_FREE_WORDS
            .iter()
            .find(|w| l.contains(*w))
            .map(|w| Refusal::PasswordFree {
                word: (*w).to_string(),
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(row: Option<&str>, button: OrderButton<'_>, labels: &[&str]) -> PaymentVerdict {
        assess(row, button, labels.iter().copied())
    }

    fn refusal(v: &PaymentVerdict) -> &Refusal {
        match v {
            PaymentVerdict::NotAllowed { refusal, .. } => refusal,
            other => panic!("not refused: {other:?}"),
        }
    }

    #[test]
    fn wechat_with_a_nudge_is_interactive() {
        // The real sheet: the row, and a 多多支付 nudge that commits to nothing.
        let v = verdict(
            Some("使用#微信支付，更换支付方式"),
            OrderButton::Submit("提交订单 ¥59"),
            &["用多多支付减7.53元", "已选: #乌龙奶茶+手持化妆镜+礼盒"],
        );
        assert_eq!(
            v,
            PaymentVerdict::Interactive {
                method: "微信支付".into()
            }
        );
        // A 确定 that places the order on a checkout sheet: the same rules.
        let v = verdict(
            Some("使用#微信支付，更换支付方式"),
            OrderButton::CommittingProceed("确定"),
            &[],
        );
        assert!(v.allowed());
    }

    #[test]
    fn pay_later_password_free_and_auto_pay_are_refused_each_with_its_reason() {
        for (row, button, labels, kind) in [
            (
                Some("使用#先用后付，确认收货后自动付款"),
                OrderButton::Pays("先用后付 0元下单 ¥59"),
                vec![],
                "pay_later",
            ),
            (
                Some("使用#多多支付(免密支付)，更换支付方式"),
                OrderButton::Submit("提交订单 ¥59"),
                vec![],
                "password_free",
            ),
            (
                Some("使用#微信支付，更换支付方式"),
                OrderButton::Submit("提交订单 ¥59"),
                vec!["先用后付"],
                "pay_later",
            ),
            (
                Some("使用#微信支付，更换支付方式"),
                OrderButton::Submit("提交订单 ¥59"),
                vec!["开启自动扣款"],
                "password_free",
            ),
        ] {
            let v = verdict(row, button, &labels);
            assert_eq!(refusal(&v).as_str(), kind, "{row:?} {button:?} {labels:?}");
        }
    }

    #[test]
    fn a_footer_that_pays_is_never_told_to_switch_to_wechat() {
        let v = verdict(
            Some("使用#微信支付，更换支付方式"),
            OrderButton::Pays("立即支付 ¥59"),
            &[],
        );
        let r = refusal(&v);
        assert_eq!(r.as_str(), "pays_in_same_tap");
        let t = r.operator_text();
        assert!(t.zh.contains("直接付款"), "{}", t.zh);
        assert!(!t.next_zh.contains("改为微信支付"), "{}", t.next_zh);
        assert!(t.next_zh.contains("换付款方式不能解决"), "{}", t.next_zh);
    }

    #[test]
    fn a_missing_row_an_unknown_method_or_no_button_is_refused() {
        let r = |v: PaymentVerdict| refusal(&v).as_str();
        assert_eq!(
            r(verdict(None, OrderButton::Submit("提交订单 ¥59"), &[])),
            "no_payment_row"
        );
        assert_eq!(
            r(verdict(
                Some("使用#多多支付，更换支付方式"),
                OrderButton::Submit("提交订单"),
                &[]
            )),
            "method_not_interactive"
        );
        assert_eq!(
            r(verdict(
                Some("使用#微信支付，更换支付方式"),
                OrderButton::Missing,
                &[]
            )),
            "no_order_button"
        );
        assert!(verdict(Some("支付宝"), OrderButton::Submit("确认下单"), &[]).allowed());
    }

    #[test]
    fn only_the_accounts_payment_setting_pauses_the_account_and_the_text_says_which() {
        for (r, pauses) in [
            (
                Refusal::PayLater {
                    word: "先用后付".into(),
                },
                true,
            ),
            (
                Refusal::PasswordFree {
                    word: "免密".into(),
                },
                true,
            ),
            (
                Refusal::MethodNotInteractive {
                    row: "多多支付".into(),
                },
                true,
            ),
            (
                Refusal::PaysInSameTap {
                    label: "立即支付".into(),
                },
                false,
            ),
            (Refusal::NoPaymentRow, false),
            (Refusal::NoOrderButton, false),
            (
                Refusal::UnknownOrderButton {
                    label: "去结算".into(),
                },
                false,
            ),
        ] {
            assert_eq!(r.pauses_account(), pauses, "{r:?}");
            assert_eq!(refusal_pauses_account(r.as_str()), pauses, "{r:?}");
            let t = r.operator_text();
            assert_eq!(t.next_zh.contains("暂停接单"), pauses, "{}", t.next_zh);
            assert_eq!(
                t.next_en.contains("takes no tasks"),
                pauses,
                "{}",
                t.next_en
            );
            assert_eq!(
                t.next_zh.contains("只影响这个商品"),
                !pauses,
                "{}",
                t.next_zh
            );
        }
    }

    #[test]
    fn every_refusal_has_both_languages_and_a_next_step() {
        for r in [
            Refusal::PayLater {
                word: "先用后付".into(),
            },
            Refusal::PasswordFree {
                word: "免密".into(),
            },
            Refusal::PaysInSameTap {
                label: "立即支付".into(),
            },
            Refusal::NoPaymentRow,
            Refusal::MethodNotInteractive {
                row: "多多支付".into(),
            },
            Refusal::NoOrderButton,
            Refusal::UnknownOrderButton {
                label: "去结算".into(),
            },
        ] {
            let t = r.operator_text();
            assert!(![&t.zh, &t.en, &t.next_zh, &t.next_en]
                .iter()
                .any(|s| s.is_empty()));
        }
    }
}
