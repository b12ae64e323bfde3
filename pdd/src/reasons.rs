//! What an outcome means to the operator: a reason and a next step, Chinese first and
//! English beside ([`OperatorText`]).
//!
//! Every failure code has a default text ([`for_code`], one table for the whole client;
//! a test asserts every code has all four texts). A refusal that knows more says more:
//! the payment refusals of `screen::payment` name what the screen showed (先用后付, 免密,
//! a footer that pays in the same tap, …) and what to change, so the operator is never
//! told to switch to 微信支付 on an account that is already on it. A §7 failure carries its
//! text in `diagnostics.operator` (`job::attempt::failure_request` fills in the default
//! when the flow gave none). Reading a failure back (the console's pages):
//! [`of_failure`] prefers the text the failure carried, and says more than the table
//! when the failure recorded more (the order total and the limit of a price refusal).

use cmautobuy_contract::FailureCode;
use serde::{Deserialize, Serialize};

/// A reason and the next step, in Chinese and in English.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorText {
    /// 原因（中文）.
    pub zh: String,
    /// The reason in English.
    pub en: String,
    /// 下一步（中文）.
    pub next_zh: String,
    /// The next step in English.
    pub next_en: String,
}

impl OperatorText {
    pub fn new(
        zh: impl Into<String>,
        en: impl Into<String>,
        next_zh: impl Into<String>,
        next_en: impl Into<String>,
    ) -> OperatorText {
        OperatorText {
            zh: zh.into(),
            en: en.into(),
            next_zh: next_zh.into(),
            next_en: next_en.into(),
        }
    }

    /// One line for a terminal or a log: `原因 — 下一步 (reason — next step)`.
    pub fn line(&self) -> String {
        format!(
            "{} — {}（{} — {}）",
            self.zh, self.next_zh, self.en, self.next_en
        )
    }

    /// As a JSON value (`diagnostics.operator`).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or(serde_json::Value::Null)
    }
}

/// The default text of a failure code: what it means and what the operator does next.
pub fn for_code(code: &FailureCode) -> OperatorText {
    use FailureCode as C;
    fn t(
        zh: impl Into<String>,
        en: impl Into<String>,
        next_zh: impl Into<String>,
        next_en: impl Into<String>,
    ) -> OperatorText {
        OperatorText::new(zh, en, next_zh, next_en)
    }
    match code {
        C::DeviceOffline => t(
            "手机未连接或无响应",
            "the phone is not connected or does not answer",
            "检查 USB / Wi-Fi 连接和 adb 授权；恢复后客户端自动继续",
            "check the USB / Wi-Fi link and the adb authorisation; the client resumes by itself",
        ),
        C::UiDumpFailed => t(
            "读取屏幕内容失败",
            "the screen could not be read (uiautomator dump failed)",
            "通常会自动重试；反复出现时重启手机或关闭其他自动化工具",
            "usually retried by itself; if it keeps happening, restart the phone or stop other automation tools",
        ),
        C::PageNotRecognized => t(
            "拼多多显示了无法识别的页面",
            "PDD showed a page the client does not recognise",
            "查看任务截图；拼多多改版时请联系维护者",
            "look at the attempt's screenshots; if PDD changed its pages, tell the maintainers",
        ),
        C::GoodsMismatch => t(
            "打开的商品不是任务里的商品",
            "the goods opened is not the task's goods",
            "在管理端核对商品链接",
            "check the goods link in the Admin",
        ),
        C::GoodsUnavailable => t(
            "商品已下架或不存在",
            "the goods is off the shelf or gone",
            "在管理端更换商品或取消任务",
            "replace the goods or cancel the task in the Admin",
        ),
        C::SpecNotFound => t(
            "页面上找不到任务要求的规格",
            "the page has no option the task asks for",
            "在管理端核对颜色/尺码写法",
            "check the colour / size wording in the Admin",
        ),
        C::SpecSoldOut => t(
            "任务要求的规格已售罄",
            "the option the task asks for is sold out",
            "等补货或在管理端更换规格",
            "wait for restock or choose another option in the Admin",
        ),
        C::SpecResolutionUncertain => t(
            "尺码无法唯一对应，管理端未能确定",
            "the size could not be matched to exactly one option",
            "人工确认尺码后重新派发",
            "confirm the size by hand and dispatch the task again",
        ),
        C::SpecResolutionRejected => t(
            "管理端拒绝自动选择规格",
            "the Admin refused to choose the option automatically",
            "在管理端处理规格后重新派发",
            "settle the option in the Admin and dispatch again",
        ),
        C::SpecResolutionFailed => t(
            "规格解析服务暂时失败",
            "the spec resolution service failed for now",
            "稍后自动重试",
            "retried later",
        ),
        C::QuantityNotSettable => t(
            "无法把数量设为任务要求的数量（限购或库存不足），或页面上读不到数量",
            "the quantity could not be set to the task's (purchase limit or stock), or could not be read",
            "在管理端调整数量",
            "adjust the quantity in the Admin",
        ),
        C::PriceLimitExceeded => t(
            "订单总价超过上限",
            "the order total is above the limit",
            "在管理端提高上限或放弃该任务",
            "raise the limit in the Admin or drop the task",
        ),
        C::PriceUnreadable => t(
            "读不到稳定的订单总价",
            "no settled order total could be read",
            "通常会自动重试；反复出现时查看截图",
            "usually retried; if it keeps happening, look at the screenshots",
        ),
        C::AddressMissing => t(
            "拼多多账号没有收货地址",
            "the PDD account has no delivery address",
            "在手机上给该账号添加收货地址",
            "add a delivery address to the account on the phone",
        ),
        C::AddressMismatch => t(
            "下单页的收货地址与本机配置的地址指纹不符",
            "the delivery address shown differs from this phone's address fingerprint",
            "在手机上选对收货地址，或更新 expected_address",
            "select the right address on the phone, or update expected_address",
        ),
        C::LoginRequired => t(
            "拼多多要求登录",
            "PDD asks to log in",
            "在手机上登录该账号，然后在控制台确认告警",
            "log the account in on the phone, then acknowledge the alert",
        ),
        C::RiskVerification => t(
            "拼多多要求安全验证（滑块、实名等）",
            "PDD asks for a security verification (slider, identity)",
            "在手机上完成验证，然后在控制台确认告警",
            "complete the verification on the phone, then acknowledge the alert",
        ),
        C::OrderNotFound => t(
            "提交后在待付款里找不到这笔订单",
            "after the submit no matching order was found under 待付款",
            "先在手机的全部订单里人工查找，确认没有下单前不要重新下单",
            "look for it by hand under 全部订单 first; do not order again until you know none exists",
        ),
        C::AmbiguousOrderMatch => t(
            "有多笔订单都可能属于本任务",
            "several orders could belong to this task",
            "在待付款里人工核对，取消多余的订单",
            "check 待付款 by hand and cancel the extra orders",
        ),
        C::OrderTimeOutOfWindow => t(
            "找到的订单下单时间不在本次提交前后",
            "the orders found were not placed around this submit",
            "人工核对待付款中的订单",
            "check the orders under 待付款 by hand",
        ),
        C::OrderNotUnpaid => t(
            "找到的订单不是待付款状态（已付款或先用后付已生效）",
            "the order found is not unpaid (paid, or bound by 先用后付)",
            "立即人工处理：核对是否被扣款；检查账号的免密/先用后付设置；确认告警后才会恢复真实下单",
            "act now: check whether money was taken and the account's 免密 / 先用后付 settings; live resumes only after the alert is acknowledged",
        ),
        C::InterruptedAfterSubmit => t(
            "提交订单后被中断，可能已经下单",
            "interrupted after the submit: an order may exist",
            "在待付款里人工核对，不要重新下单",
            "check 待付款 by hand; do not order again",
        ),
        C::InterruptedBeforeSubmit => t(
            "提交前被中断，没有下单",
            "interrupted before the submit: nothing was ordered",
            "管理端可以重新派发",
            "the Admin may dispatch it again",
        ),
        C::OrderAlreadySubmitted => t(
            "该任务之前的一次执行可能已经下单",
            "an earlier attempt of this task may already have ordered",
            "在待付款里人工核对",
            "check 待付款 by hand",
        ),
        C::InvalidTaskPayload => t(
            "任务内容无效",
            "the task's payload is invalid",
            "在管理端修正任务",
            "fix the task in the Admin",
        ),
        C::UnsupportedTask => t(
            "本客户端不支持该任务类型",
            "this client does not run this kind of task",
            "在管理端指派给其他客户端",
            "assign it to another client in the Admin",
        ),
        C::LiveNotDeclared => t(
            "这是真实下单任务，但本机只在演练模式",
            "a live task, but this client runs dry runs only",
            "在 doctor 里查看真实下单还缺什么",
            "run doctor to see what live purchases still need",
        ),
        C::PaymentMethodNotAllowed => t(
            "下单页的付款方式不需要人工确认（会直接付款或绑定订单），或者无法确认需要人工付款",
            "the checkout's payment would not need a human (it pays or binds the order), or nothing proves it would",
            "若是账号设置（先用后付/免密支付）：在手机上改为微信支付并关闭它们，账号会暂停接单直到在控制台确认告警；若只是这个商品的下单页（一点就付款、没有付款方式）：人工下单或取消任务，账号照常接单",
            "for the account's setting (先用后付 / 免密支付): set 微信支付 on the phone and turn them off — the account takes no tasks until the alert is acknowledged; for this goods' checkout only (it pays in one tap, shows no payment method): order by hand or cancel the task — the account goes on",
        ),
        C::GoodsIdentityUnverified => t(
            "无法证明页面上的商品就是任务的商品（没有读到商品编号）",
            "nothing proves the page shows the task's goods (no goods id read)",
            "真实下单需要商品编号；确认 dumpsys activity top 可读，或人工下单",
            "live orders need the goods id; make dumpsys activity top readable, or order by hand",
        ),
        C::DeviceLocked => t(
            "手机锁屏需要密码",
            "the phone's lock screen needs a PIN",
            "在手机上解锁，并关闭锁屏密码或延长锁屏时间",
            "unlock the phone and turn off the PIN or lengthen the screen timeout",
        ),
        C::BatteryLow => t(
            "手机电量过低且未充电",
            "the phone's battery is low and not charging",
            "给手机充电",
            "charge the phone",
        ),
        C::BatteryHot => t(
            "手机电池温度过高",
            "the phone's battery is too hot",
            "让手机降温后再用",
            "let the phone cool down",
        ),
        C::ScreenObstructed => t(
            "系统窗口一直挡住要点击的位置",
            "a system window kept covering the point to tap",
            "在手机上关闭通知栏、键盘或弹窗",
            "close the shade, keyboard or dialog on the phone",
        ),
        C::PddVersionUnproven => t(
            "手机上的拼多多版本还没有经过演练验证",
            "the PDD version on the phone is not proven yet",
            "等待自检演练通过，或在控制台确认该版本",
            "wait for the self-test dry run, or acknowledge the version in the console",
        ),
        C::InputInjectionDenied => t(
            "手机拒绝模拟点击",
            "the phone refuses injected input",
            "小米手机请在开发者选项里打开“USB调试（安全设置）”",
            "on MIUI turn on 开发者选项 › “USB调试（安全设置）”",
        ),
        C::SpecMismatch => t(
            "确认页显示的规格与任务不符，或读不到规格",
            "the confirming page shows other options than the task's, or none that can be read",
            "查看截图核对规格；必要时在管理端修正任务",
            "compare the options on the screenshots; fix the task in the Admin if needed",
        ),
        C::OrderTotalNotShown => t(
            "该按钮会直接下单，但页面没有显示订单总价，无法核对上限",
            "the button would place the order, but the page shows no order total to check against the limit",
            "人工下单，或等拼多多恢复显示总价的下单页",
            "order by hand, or wait for a checkout that shows its total",
        ),
        C::OrderPlacedUnconfirmed => t(
            "点规格弹窗的“确定”后没能确认进入了确认订单页（出现了付款页、其他页面或对话框，或屏幕读不到、手机无响应、任务中断）：可能已经下单，但总价未经核对",
            "after the spec sheet's 确定 tap, 确认订单 was never confirmed (a payment page, another page or a dialog showed, or the screen could not be read, the phone did not answer, or the task was cut short): an order may exist whose total was never checked",
            "在待付款和全部订单里人工核对这笔订单和金额，不要重新下单",
            "check the order and its amount under 待付款 and 全部订单 by hand; do not order again",
        ),
        C::RepeatOrderPrompt => t(
            "拼多多提示已有相同商品的待支付订单，本次没有点“继续下单”",
            "PDD said an unpaid order of the same goods exists; 继续下单 was not tapped",
            "在待付款里处理旧订单（支付或取消）后再重新派发",
            "settle the earlier order under 待付款 (pay or cancel it), then dispatch again",
        ),
        C::PaymentOfferShown => t(
            "提交订单后拼多多推荐开通免密支付/先用后付，已拒绝",
            "after the submit PDD offered 免密支付 / 先用后付; it was declined",
            "核对订单仍为待付款，并确认账号没有开通免密/先用后付",
            "check the order is still unpaid and the account has no 免密 / 先用后付 turned on",
        ),
        C::PaymentAppOpened => t(
            "提交订单后跳转到了其他付款应用（微信/支付宝），没有在其中操作",
            "after the submit PDD handed the payment to another app (WeChat / Alipay); nothing was tapped there",
            "核对订单仍为待付款；在手机上关闭该付款页面",
            "check the order is still unpaid; close that payment page on the phone",
        ),
        C::OrderCensusFailed => t(
            "真实下单前无法清点该商品已有的待付款订单",
            "the existing unpaid orders of the goods could not be counted before the live submit",
            "通常会自动重试；反复出现时检查待付款页面能否打开",
            "usually retried; if it keeps happening, check that 待付款 opens on the phone",
        ),
        C::AddressFingerprintMissing => t(
            "本机没有配置收货地址指纹（expected_address），不做真实下单",
            "this phone has no delivery-address fingerprint (expected_address): no live order",
            "在 config.toml 写 expected_address = [\"收货人\", \"街道地址\"]，或在控制台设置",
            "set expected_address = [\"receiver\", \"street\"] in config.toml, or in the console",
        ),
        C::OrderNoveltyUnproven => t(
            "找到的订单无法证明是本次新下的（下单前的待付款订单清点没有覆盖到它）",
            "the order found cannot be proven new (the census of unpaid orders taken before the submit does not cover it)",
            "在待付款里人工核对，不要重新下单",
            "check 待付款 by hand; do not order again",
        ),
        C::TargetCovered => t(
            "拼多多在要点击的按钮上盖了一层（推广气泡等），无法关闭",
            "PDD drew something over the button to tap (a promo bubble) that could not be closed",
            "通常会自动重试；反复出现时在手机上关闭该推广",
            "usually retried; if it keeps happening, close the promo on the phone",
        ),
        C::OrderListIncomplete => t(
            "提交后在待付款里没有找到新订单，而且“全部”订单列表打不开：订单可能已经以其他状态存在（已付款、先用后付）",
            "after the submit no new order was found under 待付款 and the 全部 list could not be read: the order may exist in another state (paid, 先用后付)",
            "在手机的全部订单里人工查找这笔订单并核对是否被扣款；确认没有下单前不要重新下单",
            "look for the order under 全部订单 by hand and check whether money was taken; do not order again until you know none exists",
        ),
        C::Other(code) => t(
            format!("其他原因（{code}）"),
            format!("another reason ({code})"),
            "查看任务的诊断信息和截图",
            "look at the task's diagnostics and screenshots",
        ),
    }
}

/// A price refusal with its two amounts: "订单总价 ¥118.00 超过上限 ¥99.99".
pub fn price_above_limit(
    total: cmautobuy_contract::Fen,
    limit: cmautobuy_contract::Fen,
) -> OperatorText {
    let table = for_code(&FailureCode::PriceLimitExceeded);
    OperatorText::new(
        format!("订单总价 {total} 超过上限 {limit}"),
        format!("the order total {total} is above the limit {limit}"),
        table.next_zh,
        table.next_en,
    )
}

/// `ORDER_PLACED_UNCONFIRMED` naming what came instead of 确认订单 after the spec sheet's
/// 确定: `by` is what the flow recorded (`Confirmation::unconfirmed_by`): a screen kind
/// (`payment`, `unknown`, …), `goods_gone`, `sheet_stayed`, `popups`, `interrupted`,
/// `aborted`, or the failure code that ended the wait (`UI_DUMP_FAILED`, …). Unknown or
/// absent: the default text, which names every case.
pub fn placed_unconfirmed(by: Option<&str>) -> OperatorText {
    let what: Option<(String, String)> = by.map(|b| {
        let (zh, en) = match b {
            "payment" => ("拼多多收银台（付款页）", "PDD's cashier (a payment page)"),
            "payment_abandon_dialog" => ("放弃付款对话框", "the abandon-payment dialog"),
            "repeat_order_dialog" => ("重复下单提示", "the repeat-order dialog"),
            "payment_offer" => ("免密支付/先用后付开通提示", "a 免密支付 / 先用后付 offer"),
            "unknown" => (
                "无法识别的页面或其他应用",
                "a page this client does not recognise, or another app",
            ),
            "goods_detail" => ("商品页", "the goods page"),
            "order_list" | "order_detail" => ("订单页", "an order page"),
            "login_required" => ("登录页", "a login page"),
            "risk_verification" => ("安全验证页", "a security verification"),
            "popup" => (
                "一个弹窗（下面不是确认订单页）",
                "a popup that was not over 确认订单",
            ),
            "popups" => ("反复出现的弹窗", "popups that kept coming back"),
            "goods_gone" => ("“商品不存在或已下架”页", "a goods-gone page"),
            "sheet_stayed" => ("规格弹窗一直没有离开", "the spec sheet, which stayed"),
            "interrupted" => (
                "客户端中断（崩溃或被停止）",
                "the client being interrupted (a crash or a stop)",
            ),
            "aborted" => (
                "任务被中止（超时或步数用尽）",
                "the driver cutting the task short (its deadline or its action budget)",
            ),
            "UI_DUMP_FAILED" => ("屏幕一直读不到", "screens that could not be read"),
            "DEVICE_OFFLINE" => ("手机无响应", "a phone that did not answer"),
            _ => return (format!("出错（{b}）"), format!("an error ({b})")),
        };
        (zh.to_string(), en.to_string())
    });
    let Some((zh, en)) = what else {
        return for_code(&FailureCode::OrderPlacedUnconfirmed);
    };
    OperatorText::new(
        format!("点规格弹窗的“确定”后没有看到确认订单页，而是：{zh}；可能已经下单，但总价未经核对"),
        format!("after the spec sheet's 确定 tap 确认订单 did not show, but {en}: an order may exist whose total was never checked"),
        "在待付款和全部订单里人工核对这笔订单和金额，不要重新下单",
        "check the order and its amount under 待付款 and 全部订单 by hand; do not order again",
    )
}

/// `ORDER_NOVELTY_UNPROVEN` when the order's card reads like an unpaid card the census
/// saw before the submit without opening it (its match — the task's expected title, the
/// Admin's option spelling — left that card out).
pub fn census_missed_card() -> OperatorText {
    OperatorText::new(
        "找到的订单无法证明是本次新下的：下单前清点待付款订单时，有一张看起来一样的订单卡片没有被打开核对（任务里的商品标题或规格写法与拼多多页面不同），这可能就是那笔旧订单",
        "the order found cannot be proven new: before the submit the census saw an unpaid card that reads the same without opening it (the task's goods title or option spelling differs from PDD's page); it may be that older order",
        "在待付款里人工核对，不要重新下单；在管理端把任务的商品标题和规格改成拼多多页面上的写法",
        "check 待付款 by hand and do not order again; in the Admin, set the task's goods title and option names to what PDD's page shows",
    )
}

/// The operator's text of a reported outcome: the text the failure carried
/// (`diagnostics.operator`) when it says more than the table, else what the diagnostics
/// add to the table's (a price refusal's total and limit, [`price_above_limit`]), else
/// the table's ([`for_code`]); `code` is the §7 `error.code`. The one lookup every
/// surface uses — `status`, the console, the webhooks, `rehearse` — so an outcome reads
/// the same everywhere.
pub fn of_failure(code: &str, diagnostics: &serde_json::Value) -> OperatorText {
    let code = FailureCode::parse(code);
    let table = for_code(&code);
    let stored = diagnostics
        .get("operator")
        .and_then(|v| serde_json::from_value::<OperatorText>(v.clone()).ok())
        .filter(|t| !t.zh.trim().is_empty() && !t.en.trim().is_empty());
    if let Some(s) = &stored {
        if *s != table {
            return s.clone();
        }
    }
    let cents = |k: &str| {
        diagnostics
            .get(k)
            .and_then(serde_json::Value::as_i64)
            .map(cmautobuy_contract::Fen)
    };
    let richer = match code {
        FailureCode::PriceLimitExceeded => cents("confirmed_total_cent")
            .zip(cents("max_price_cent"))
            .map(|(total, limit)| price_above_limit(total, limit)),
        _ => None,
    };
    richer.or(stored).unwrap_or(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reported_failure_reads_back_with_what_it_recorded() {
        use serde_json::json;
        let price = FailureCode::PriceLimitExceeded;
        // The table's text was stored: the amounts the failure recorded say more.
        let d = json!({"operator": for_code(&price).to_value(),
                       "confirmed_total_cent": 11800, "max_price_cent": 9999});
        let t = of_failure("PRICE_LIMIT_EXCEEDED", &d);
        assert_eq!(t.zh, "订单总价 ¥118.00 超过上限 ¥99.99");
        assert_eq!(t.en, "the order total ¥118.00 is above the limit ¥99.99");
        assert_eq!(t.next_zh, for_code(&price).next_zh);
        // A flow's own explanation wins.
        let own = OperatorText::new(
            "付款方式为先用后付",
            "pay later is on",
            "关闭先用后付",
            "turn it off",
        );
        let d = json!({"operator": own.to_value(), "confirmed_total_cent": 1, "max_price_cent": 2});
        assert_eq!(of_failure("PRICE_LIMIT_EXCEEDED", &d), own);
        // Nothing stored: the table.
        let risk = FailureCode::RiskVerification;
        assert_eq!(of_failure("RISK_VERIFICATION", &json!({})), for_code(&risk));
        assert_eq!(
            of_failure("RISK_VERIFICATION", &json!({"operator": "garbled"})),
            for_code(&risk)
        );
    }

    #[test]
    fn a_failure_says_what_it_carried_else_what_the_table_says() {
        let carried = OperatorText::new("页面上说的", "what the page said", "下一步", "next");
        let d = serde_json::json!({"operator": carried.to_value()});
        assert_eq!(of_failure("PRICE_LIMIT_EXCEEDED", &d), carried);
        let table = for_code(&FailureCode::PriceLimitExceeded);
        assert_eq!(
            of_failure("PRICE_LIMIT_EXCEEDED", &serde_json::json!({})),
            table
        );
        // A damaged or partial text is not shown: the table's is.
        let d = serde_json::json!({"operator": {"zh": "", "en": "x"}});
        assert_eq!(of_failure("PRICE_LIMIT_EXCEEDED", &d), table);
        // A code of a newer client still reads as something.
        assert!(!of_failure("SOMETHING_NEW", &serde_json::json!({}))
            .zh
            .is_empty());
    }

    #[test]
    fn every_code_has_a_reason_and_a_next_step_in_both_languages() {
        for c in FailureCode::ALL {
            let t = for_code(c);
            for (what, s) in [
                ("zh", &t.zh),
                ("en", &t.en),
                ("next_zh", &t.next_zh),
                ("next_en", &t.next_en),
            ] {
                assert!(!s.trim().is_empty(), "{c}: {what} is empty");
            }
            assert!(
                t.zh.chars()
                    .any(|ch| ('\u{4e00}'..='\u{9fff}').contains(&ch)),
                "{c}: the zh text has no Chinese"
            );
        }
    }
}
