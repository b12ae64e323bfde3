//! The payment method a confirming screen (the SKU sheet's footer, or 确认订单) would use
//! if 提交订单 were tapped — judged before any submit, fail closed.
//!
//! An order is allowed only when the screen shows a payment row naming an **interactive**
//! method (微信支付, 支付宝, …: paying needs a further step by a human), no wording that
//! commits or pays without one (先用后付, 免密, 自动扣款, 0元下单, 直接支付, …) anywhere on
//! the screen, and a submit control that reads 提交订单 / 确认下单. Anything else is
//! [`PaymentVerdict::NotAllowed`], with the words that decided it.

use serde::Serialize;

/// Methods that need a human to pay after the order is placed.
pub const INTERACTIVE_METHODS: &[&str] = &["微信支付", "支付宝", "银行卡", "云闪付", "QQ钱包"];

/// Wordings that place a binding order or pay at once: on any of them, no submit.
pub const COMMITTING_WORDS: &[&str] = &[
    "先用后付",
    "先享后付",
    "免密",
    "自动扣款",
    "自动付款",
    "0元下单",
    "直接支付",
    "确认收货后付款",
];

/// The submit controls an order may be placed with (the label starts with one).
pub const SUBMIT_LABELS: &[&str] = &["提交订单", "确认下单"];

/// What the screen says about paying.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum PaymentVerdict {
    /// An interactive method and a plain submit control.
    Interactive { method: String },
    /// Submitting here could pay or bind the order: never tap.
    NotAllowed { reason: String },
    /// This screen places no order (a sheet whose 确定 / 立即购买 opens 确认订单) and
    /// shows no committing wording: the payment is judged on the next page.
    OnNextPage,
}

impl PaymentVerdict {
    pub fn allowed(&self) -> bool {
        matches!(self, PaymentVerdict::Interactive { .. })
    }
}

/// Judges a confirming screen from its payment row, its submit control's label and every
/// visible label (nudges and footers included).
pub fn assess<'a>(
    payment_row: Option<&'a str>,
    submit_label: Option<&'a str>,
    labels: impl IntoIterator<Item = &'a str>,
) -> PaymentVerdict {
    let not_allowed = |reason: String| PaymentVerdict::NotAllowed { reason };
    if let Some(reason) = committing(labels.into_iter().chain(payment_row).chain(submit_label)) {
        return not_allowed(reason);
    }
    let Some(row) = payment_row else {
        return not_allowed("no payment method is shown".into());
    };
    let Some(method) = INTERACTIVE_METHODS.iter().find(|m| row.contains(*m)) else {
        return not_allowed(format!(
            "the payment method `{}` is not one a human must confirm",
            row.chars().take(40).collect::<String>()
        ));
    };
    match submit_label.map(str::trim) {
        Some(l) if SUBMIT_LABELS.iter().any(|s| l.starts_with(s)) => PaymentVerdict::Interactive {
            method: (*method).to_string(),
        },
        Some(l) => not_allowed(format!(
            "the submit control reads `{}`, not 提交订单",
            l.chars().take(40).collect::<String>()
        )),
        None => not_allowed("no 提交订单 control is shown".into()),
    }
}

/// The first label with wording that places a binding or paid order (先用后付, 免密, …),
/// as the reason a submit is not allowed.
pub fn committing<'a>(labels: impl IntoIterator<Item = &'a str>) -> Option<String> {
    labels.into_iter().find_map(|l| {
        COMMITTING_WORDS.iter().find(|w| l.contains(*w)).map(|w| {
            format!(
                "the screen says `{w}` (`{}`): submitting could pay or bind the order",
                l.chars().take(40).collect::<String>()
            )
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(row: Option<&str>, submit: Option<&str>, labels: &[&str]) -> PaymentVerdict {
        assess(row, submit, labels.iter().copied())
    }

    #[test]
    fn wechat_with_a_nudge_is_interactive() {
        // The real sheet: the row, and a 多多支付 nudge that commits to nothing.
        let v = verdict(
            Some("使用#微信支付，更换支付方式"),
            Some("提交订单 ¥59"),
            &["用多多支付减7.53元", "已选: #乌龙奶茶+手持化妆镜+礼盒"],
        );
        assert_eq!(
            v,
            PaymentVerdict::Interactive {
                method: "微信支付".into()
            }
        );
    }

    #[test]
    fn pay_later_password_free_and_auto_pay_are_refused() {
        for (row, submit, labels) in [
            (
                Some("使用#先用后付，确认收货后自动付款"),
                Some("先用后付 0元下单 ¥59"),
                vec![],
            ),
            (
                Some("使用#多多支付(免密支付)，更换支付方式"),
                Some("提交订单 ¥59"),
                vec![],
            ),
            (
                Some("使用#微信支付，更换支付方式"),
                Some("提交订单 ¥59"),
                vec!["先用后付"],
            ),
            (
                Some("使用#微信支付，更换支付方式"),
                Some("提交订单 ¥59"),
                vec!["开启自动扣款"],
            ),
        ] {
            let v = verdict(row, submit, &labels);
            assert!(!v.allowed(), "{row:?} {submit:?} {labels:?}: {v:?}");
        }
    }

    #[test]
    fn a_missing_row_an_unknown_method_or_a_pay_button_is_refused() {
        assert!(!verdict(None, Some("提交订单 ¥59"), &[]).allowed());
        assert!(!verdict(Some("使用#多多支付，更换支付方式"), Some("提交订单"), &[]).allowed());
        assert!(!verdict(
            Some("使用#微信支付，更换支付方式"),
            Some("立即支付 ¥59"),
            &[]
        )
        .allowed());
        assert!(!verdict(Some("使用#微信支付，更换支付方式"), None, &[]).allowed());
        assert!(verdict(Some("支付宝"), Some("确认下单"), &[]).allowed());
    }
}
