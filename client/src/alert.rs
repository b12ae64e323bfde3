//! Operator alerts: every kind the client raises, whether it stops claiming, how it
//! closes, and what it tells the operator — Chinese first, English beside.
//!
//! One enum, [`AlertKind`], is the only place an alert kind is named: the store keeps
//! [`AlertKind::as_str`] in `operator_alerts.kind`, the claim loop asks
//! [`AlertKind::blocks_claims`], and `status`, the console, the webhooks, `rehearse` and
//! `doctor` print [`AlertKind::text`] and [`AlertKind::effect`]. A test holds every kind
//! to all of its texts.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::reasons::OperatorText;

/// What an operator alert is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AlertKind {
    /// The Admin sent a claim answer the client cannot take (incomplete task, unreadable
    /// or cut-off `200`): the §5 protocol error, the §5.2 gap. Blocks claims.
    ProtocolError,
    /// A claimed task could not be saved here (§5.2). Blocks claims.
    ClaimNotSaved,
    /// The Admin refused the claim with a 4xx (a wrong token, a wrong client). Blocks.
    ClaimRejected,
    /// Account trouble: a login page, a risk page, the account's payment setting, or
    /// unrecognised pages on several goods in a row. Blocks claims.
    AccountPaused,
    /// The phone needs a human (PIN lock, battery, PDD missing, USB debugging): raised
    /// with the device pause, closed by the first passing check.
    DeviceAttention,
    /// The host's clock is off the Admin's or the phone's: live paused.
    ClockSkew,
    /// An order was found paid or bound after its submit: live stopped on this phone.
    OrderNotUnpaid,
    /// The account on the phone is not the one recorded for it: live paused.
    AccountChanged,
    /// Free disk below the floor: claims wait until space returns.
    LowDisk,
    /// Many unrecognised pages among the recent tasks (claiming continues).
    UnrecognizedRate,
    /// The phone's PDD version is not proven: live paused until a self-test passes.
    PddVersionUnproven,
    /// The self-test failed on the phone's PDD version: live waits for it.
    SelfTestFailed,
}

impl AlertKind {
    /// Every kind, in the order the guides list them.
    pub const ALL: [AlertKind; 12] = [
        AlertKind::ProtocolError,
        AlertKind::ClaimNotSaved,
        AlertKind::ClaimRejected,
        AlertKind::AccountPaused,
        AlertKind::DeviceAttention,
        AlertKind::ClockSkew,
        AlertKind::OrderNotUnpaid,
        AlertKind::AccountChanged,
        AlertKind::LowDisk,
        AlertKind::UnrecognizedRate,
        AlertKind::PddVersionUnproven,
        AlertKind::SelfTestFailed,
    ];

    /// The stable name stored in `operator_alerts.kind`, shown by `status --json`, sent
    /// in webhooks (`alert_kind`) and used in a webhook's `kinds` filter.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertKind::ProtocolError => "protocol_error",
            AlertKind::ClaimNotSaved => "claim_not_saved",
            AlertKind::ClaimRejected => "claim_rejected",
            AlertKind::AccountPaused => "account_paused",
            AlertKind::DeviceAttention => "device_attention",
            AlertKind::ClockSkew => "clock_skew",
            AlertKind::OrderNotUnpaid => "order_not_unpaid",
            AlertKind::AccountChanged => "account_changed",
            AlertKind::LowDisk => "low_disk",
            AlertKind::UnrecognizedRate => "unrecognized_rate",
            AlertKind::PddVersionUnproven => "pdd_version_unproven",
            AlertKind::SelfTestFailed => "self_test_failed",
        }
    }

    /// The kind stored under `name`, if it is one.
    pub fn parse(name: &str) -> Option<AlertKind> {
        AlertKind::ALL.into_iter().find(|k| k.as_str() == name)
    }

    /// Whether an open alert of this kind stops claiming until it is acknowledged. The
    /// others narrow what is declared (live paused) or hold claims by their own rule
    /// (`low_disk` through the free-disk floor, `device_attention` through the device
    /// pause) and close by themselves or by `ack`.
    pub fn blocks_claims(self) -> bool {
        matches!(
            self,
            AlertKind::ProtocolError
                | AlertKind::ClaimNotSaved
                | AlertKind::ClaimRejected
                | AlertKind::AccountPaused
        )
    }

    /// Whether the client closes it by itself when the condition passes (an operator may
    /// still `ack` it).
    pub fn closes_by_itself(self) -> bool {
        matches!(
            self,
            AlertKind::DeviceAttention
                | AlertKind::LowDisk
                | AlertKind::UnrecognizedRate
                | AlertKind::PddVersionUnproven
                | AlertKind::SelfTestFailed
        )
    }

    /// Whether it is about live orders and money (shown first, marked critical).
    pub fn critical(self) -> bool {
        matches!(self, AlertKind::OrderNotUnpaid | AlertKind::ClaimNotSaved)
    }

    /// What it does to the work, for the operator: (Chinese, English).
    pub fn effect(self) -> (&'static str, &'static str) {
        match self {
            k if k.blocks_claims() => ("停止领取任务", "no claims until acknowledged"),
            AlertKind::LowDisk => (
                "暂停领取，空间恢复后自动继续",
                "claims wait until space returns",
            ),
            AlertKind::DeviceAttention => (
                "这台手机暂停，检查通过后自动继续",
                "this phone is paused until it passes a check",
            ),
            AlertKind::UnrecognizedRate => ("继续领取", "claiming continues"),
            AlertKind::SelfTestFailed => (
                "暂停实单，采集和试运行继续",
                "live paused; collects and dry runs continue",
            ),
            _ => (
                "暂停实单，采集和试运行继续",
                "live paused; collects and dry runs continue",
            ),
        }
    }

    /// The title (`zh` / `en`) and the next step (`next_zh` / `next_en`).
    pub fn text(self) -> OperatorText {
        let (zh, en, next_zh, next_en) = match self {
            AlertKind::ProtocolError => (
                "Admin 协议错误：领到的任务无法使用",
                "Admin protocol error: a claimed task cannot be used",
                "记下消息里的任务编号和收到的内容，请 Admin 维护者核对并重派该任务；然后执行 `cmautobuy-client ack N`",
                "note the task id and what arrived, have the Admin's maintainers check and reassign that task, then run `cmautobuy-client ack N`",
            ),
            AlertKind::ClaimNotSaved => (
                "领取的任务未能保存到本机",
                "a claimed task could not be saved on this computer",
                "记下任务编号；用 `doctor` 检查磁盘和数据目录；告诉 Admin 该任务需要重派；然后 `cmautobuy-client ack N`",
                "note the task id; check the disk and data directory with `doctor`; tell the Admin the task needs reassigning; then `cmautobuy-client ack N`",
            ),
            AlertKind::ClaimRejected => (
                "Admin 拒绝领取任务",
                "the Admin refused the claim",
                "用 `doctor` 检查令牌和 Admin 地址；改正后执行 `cmautobuy-client ack N`（新令牌第一次成功时也会自动关闭）",
                "check the token and the Admin URL with `doctor`; once fixed run `cmautobuy-client ack N` (a new token's first success closes it too)",
            ),
            AlertKind::AccountPaused => (
                "账号暂停：需要人工处理手机",
                "account paused: a human must look at the phone",
                "看告警里的截图；在手机上登录、完成验证、等操作过于频繁解除（几小时）或改支付方式；处理好后 `cmautobuy-client ack N`",
                "look at the screenshot named in the alert; on the phone log in, pass the verification, wait out 操作过于频繁 (hours) or change the payment method; then `cmautobuy-client ack N`",
            ),
            AlertKind::DeviceAttention => (
                "手机需要人工处理",
                "the phone needs a human",
                "按消息处理手机：解锁、充电、降温、安装拼多多或允许 USB 调试；手机检查通过后自动恢复",
                "do what the message says on the phone: unlock it, charge or cool it, install PDD or allow USB debugging; work resumes once the phone passes a check",
            ),
            AlertKind::ClockSkew => (
                "时钟偏差过大，暂停实单",
                "the clocks disagree: live orders paused",
                "校准这台电脑（NTP）或手机的时间；校准后执行 `cmautobuy-client ack N`",
                "set this computer's clock (NTP) or the phone's right, then run `cmautobuy-client ack N`",
            ),
            AlertKind::OrderNotUnpaid => (
                "严重：订单已被付款或先用后付，这台手机已停止真实下单",
                "critical: an order was paid or bound — live orders stopped on this phone",
                "立即核对是否被扣款，检查账号的免密支付和先用后付设置并关闭；确认后执行 `cmautobuy-client ack N` 恢复实单",
                "check now whether money was taken, and turn off the account's 免密 / 先用后付 settings; then `cmautobuy-client ack N` to allow live orders again",
            ),
            AlertKind::AccountChanged => (
                "手机上的拼多多账号变了，暂停实单",
                "the PDD account on this phone changed: live orders paused",
                "确认手机登录的是应该用的账号；确认后执行 `cmautobuy-client ack N` 把它记为这台手机的账号",
                "make sure the phone is logged in to the right account, then `cmautobuy-client ack N` records it as this phone's account",
            ),
            AlertKind::LowDisk => (
                "磁盘空间不足，暂停领取",
                "low disk space: claims wait",
                "清理磁盘或调低证据保留上限（artifacts_max_mb）；空间恢复后自动继续",
                "free disk space or lower the evidence cap (artifacts_max_mb); claims resume by themselves",
            ),
            AlertKind::UnrecognizedRate => (
                "最近很多页面无法识别",
                "many recent pages were not recognised",
                "运行 `doctor` 看拼多多版本，看证据截图里是什么页面，报告维护者；比例下降后自动关闭",
                "run `doctor` for the PDD version, look at the evidence screenshots and tell the maintainers; it closes once the rate falls",
            ),
            AlertKind::PddVersionUnproven => (
                "拼多多版本尚未验证，暂停实单",
                "PDD version not proven on this phone: live orders paused",
                "等自检（试运行）成功后自动恢复；或人工检查后执行 `cmautobuy-client ack N`",
                "wait for the self-test (a dry run) to pass, which resumes live by itself; or check by hand and run `cmautobuy-client ack N`",
            ),
            AlertKind::SelfTestFailed => (
                "自检失败，暂停实单",
                "the self-test failed: live orders paused",
                "看自检证据（artifacts/self-test/）；检查 self_test_goods_id 的商品是否还能买；稍后会自动重试（也可执行 `cmautobuy-client self-test`），通过后自动关闭",
                "look at the self-test's evidence (artifacts/self-test/); check that the self_test_goods_id goods can still be bought; it is retried later (or run `cmautobuy-client self-test`) and closes when one passes",
            ),
        };
        OperatorText::new(zh, en, next_zh, next_en)
    }
}

impl fmt::Display for AlertKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for AlertKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_both_texts_its_name_and_an_effect() {
        let mut names = std::collections::HashSet::new();
        for k in AlertKind::ALL {
            let t = k.text();
            for (what, text) in [
                ("zh", &t.zh),
                ("en", &t.en),
                ("next_zh", &t.next_zh),
                ("next_en", &t.next_en),
            ] {
                assert!(!text.trim().is_empty(), "{k}: no {what}");
            }
            assert!(
                t.zh.chars().any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c)),
                "{k}: the Chinese title is Chinese"
            );
            let (zh, en) = k.effect();
            assert!(!zh.is_empty() && !en.is_empty(), "{k}");
            assert_eq!(AlertKind::parse(k.as_str()), Some(k));
            assert!(names.insert(k.as_str()), "{k}: one name per kind");
            // What closes it is said: `ack`, or by itself.
            assert!(
                k.closes_by_itself() || t.next_en.contains("ack"),
                "{k}: the next step names `ack`"
            );
        }
        assert_eq!(AlertKind::parse("nope"), None);
    }

    #[test]
    fn only_what_needs_a_human_before_any_claim_blocks_claims() {
        let blocking: Vec<_> = AlertKind::ALL
            .into_iter()
            .filter(|k| k.blocks_claims())
            .map(AlertKind::as_str)
            .collect();
        assert_eq!(
            blocking,
            [
                "protocol_error",
                "claim_not_saved",
                "claim_rejected",
                "account_paused"
            ]
        );
    }
}
