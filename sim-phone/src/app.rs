//! The simulated PDD app: a page stack, popups and the order ledger, driven by taps, swipes,
//! keys and deep links. No sockets, no sleeping, no clock of its own: the device passes
//! `now` in, the app hands back screens (drawn by [`crate::screens`] from a
//! [`View`] of it) and outcomes. The pages themselves are plain data in [`crate::page`].

use std::sync::Arc;

use chrono::{DateTime, FixedOffset};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::account::{Account, PddVersion};
use crate::catalog::{Catalog, Goods, OrderListEntry, PaymentHandoff, PaymentMethod, PaymentOffer};
use crate::ledger::{Ledger, Order};
use crate::page::{qty_limit, QTY_CAP};
pub use crate::page::{OrderTab, Page, PopupKind, PopupSchedule, SheetState};
use crate::screens::{self, View};
use crate::ui::{Action, Screen};

/// Configuration of the app model.
#[derive(Debug, Clone)]
pub struct AppConfig {
    pub width: i32,
    pub height: i32,
    pub seed: u64,
    pub popups: PopupSchedule,
    /// Show a 商品编号 row on goods pages (the real app does not; a test aid).
    pub show_goods_id: bool,
    /// The logged-in account (nickname, masked phone, delivery address).
    pub account: Account,
    /// The installed PDD's version.
    pub pdd_version: PddVersion,
}

/// What a gesture did, for latency accounting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Outcome {
    /// The page (or a popup) changed: a real phone would animate a transition.
    pub transition: bool,
}

/// The app.
pub struct App {
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) ledger: Ledger,
    pub(crate) cfg: AppConfig,
    /// Page stack; the last page is on screen. Empty = app not running.
    pub(crate) stack: Vec<Page>,
    /// The app is in the foreground (false after HOME: the launcher shows).
    pub(crate) foreground: bool,
    pub(crate) popup: Option<PopupKind>,
    pub(crate) page_views: u64,
    rng: StdRng,
    /// Last toast text (toasts are not in dumps on real phones; tests read it here).
    pub(crate) last_toast: Option<String>,
    /// The goods whose page was shown last (decides how the profile draws 待付款).
    pub(crate) last_goods_id: Option<String>,
    /// An order just placed whose payment goes to WeChat (`payment_handoff`): (order, total
    /// in fen), for the phone to bring WeChat's pay sheet to the front.
    handoff: Option<(String, i64)>,
}

impl App {
    pub fn new(catalog: Arc<Catalog>, ledger: Ledger, cfg: AppConfig) -> App {
        let rng = StdRng::seed_from_u64(cfg.seed ^ 0x005e_ed0f_a990);
        App {
            catalog,
            ledger,
            cfg,
            stack: Vec::new(),
            foreground: false,
            popup: None,
            page_views: 0,
            rng,
            last_toast: None,
            last_goods_id: None,
            handoff: None,
        }
    }

    /// The page on screen, `None` when the launcher shows.
    pub fn page(&self) -> Option<&Page> {
        if self.foreground {
            self.stack.last()
        } else {
            None
        }
    }

    /// Name of what is on screen ("launcher" when the app is not in front).
    pub fn page_name(&self) -> &'static str {
        self.page().map(Page::name).unwrap_or("launcher")
    }

    pub fn popup(&self) -> Option<PopupKind> {
        self.popup
    }

    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    pub fn ledger_mut(&mut self) -> &mut Ledger {
        &mut self.ledger
    }

    pub fn last_toast(&self) -> Option<&str> {
        self.last_toast.as_deref()
    }

    /// The logged-in account.
    pub fn account(&self) -> &Account {
        &self.cfg.account
    }

    /// Another account logs in, or the account's details change (nickname, address).
    pub fn set_account(&mut self, account: Account) {
        self.cfg.account = account;
    }

    /// The installed PDD's version.
    pub fn pdd_version(&self) -> &PddVersion {
        &self.cfg.pdd_version
    }

    /// PDD is updated (or downgraded) in place, as an app store does overnight.
    pub fn set_pdd_version(&mut self, version: PddVersion) {
        self.cfg.pdd_version = version;
    }

    /// The address an order of `g` goes to: the account's, unless the goods' own
    /// variant shows none.
    pub(crate) fn delivery_address(&self, g: &Goods) -> Option<&crate::account::Address> {
        self.cfg
            .account
            .address
            .as_ref()
            .filter(|_| g.address_present)
    }

    /// Focused activity as `dumpsys window` prints it.
    pub fn focus_activity(&self) -> &'static str {
        match self.page() {
            Some(p) => p.activity(),
            None => "com.miui.home/com.miui.home.launcher.Launcher",
        }
    }

    /// The goods whose page is in front (the goods page or its sheet), as the app's
    /// WebView URL names it in `dumpsys activity top`; `None` on every other page.
    pub fn displayed_goods_id(&self) -> Option<&str> {
        match self.page()? {
            Page::Goods { goods_id } => Some(goods_id),
            Page::Sheet(s) => Some(&s.goods_id),
            _ => None,
        }
    }

    /// The profile draws its order entries on canvas: the goods shown last or the newest
    /// order's goods says `order_list_entry: "canvas"`.
    fn profile_on_canvas(&self) -> bool {
        self.last_goods_id
            .iter()
            .chain(self.ledger.orders().last().map(|o| &o.goods_id))
            .any(|id| {
                self.goods(id)
                    .is_some_and(|g| g.order_list_entry == OrderListEntry::Canvas)
            })
    }

    /// A dump just showed the screen: a lagging sheet total is one dump closer to settling.
    pub fn after_dump(&mut self) {
        if !self.foreground {
            return;
        }
        if let Some(Page::Sheet(s)) = self.stack.last_mut() {
            s.lag = match s.lag {
                Some((t, n)) if n > 1 => Some((t, n - 1)),
                _ => None,
            };
        }
    }

    /// The order whose payment the app just handed to WeChat (order number, total in
    /// fen), once: the phone then brings WeChat's pay sheet to the front.
    pub fn take_handoff(&mut self) -> Option<(String, i64)> {
        self.handoff.take()
    }

    /// Force the popup on screen now (test knob).
    pub fn show_popup(&mut self, kind: PopupKind) {
        self.popup = Some(kind);
    }

    /// The screen as it is now.
    pub fn screen(&self, now: DateTime<FixedOffset>) -> Screen {
        let view = View {
            account: &self.cfg.account,
            catalog: &self.catalog,
            ledger: &self.ledger,
            page: self.page(),
            popup: self.popup,
            height: self.cfg.height,
            show_goods_id: self.cfg.show_goods_id,
            profile_canvas: self.profile_on_canvas(),
        };
        screens::build(&view, now)
    }

    pub(crate) fn goods(&self, id: &str) -> Option<&Goods> {
        self.catalog.goods(id)
    }

    fn arrive(&mut self, page: Page) {
        let counts = matches!(page, Page::Home { .. } | Page::Goods { .. });
        if let Page::Goods { goods_id } = &page {
            self.last_goods_id = Some(goods_id.clone());
        }
        self.stack.push(page);
        self.foreground = true;
        if counts {
            self.page_views += 1;
            self.maybe_popup();
        }
    }

    fn maybe_popup(&mut self) {
        match &self.cfg.popups {
            PopupSchedule::Off => {}
            PopupSchedule::Seeded { percent } => {
                let p = u32::from(*percent).min(100);
                if self.rng.gen_range(0..100) < p {
                    let kind = match self.rng.gen_range(0..3) {
                        0 => PopupKind::RedPacket,
                        1 => PopupKind::Upgrade,
                        _ => PopupKind::TeenMode,
                    };
                    self.popup = Some(kind);
                }
            }
            PopupSchedule::At(list) => {
                if let Some((_, k)) = list.iter().find(|(n, _)| *n == self.page_views) {
                    self.popup = Some(*k);
                }
            }
        }
    }

    /// Launch the app (launcher icon, `monkey -p`, `am start -n`): resumes where it was, or
    /// opens the home page.
    pub fn launch(&mut self) -> Outcome {
        if self.stack.is_empty() {
            self.arrive(Page::Home { scroll: 0 });
        } else {
            self.foreground = true;
        }
        Outcome { transition: true }
    }

    /// `am force-stop`: the process dies, every page is gone.
    pub fn force_stop(&mut self) -> Outcome {
        self.stack.clear();
        self.foreground = false;
        self.popup = None;
        Outcome { transition: true }
    }

    /// Open a deep link. `Err` = no activity handles this URL (am prints an error).
    /// A URL the app handles but cannot make sense of opens a "not found" page.
    pub fn open_url(&mut self, url: &str) -> Result<Outcome, String> {
        let rest = if let Some(r) = url.strip_prefix("pinduoduo://com.xunmeng.pinduoduo/") {
            r
        } else if let Some(r) = url
            .strip_prefix("https://mobile.yangkeduo.com/")
            .or_else(|| url.strip_prefix("http://mobile.yangkeduo.com/"))
        {
            r
        } else {
            return Err(format!("unable to resolve Intent for {url:?}"));
        };
        let (path, query) = rest.split_once('?').unwrap_or((rest, ""));
        let param = |name: &str| {
            query
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v)
        };
        let goods_id = param("goods_id");
        let is_goods = matches!(path, "goods.html" | "goods2.html");
        if let Some(g) = goods_id.filter(|_| is_goods).and_then(|id| self.goods(id)) {
            if g.deep_link_fails {
                // The link dies in the app: it comes to the front on whatever page it had.
                return Ok(self.launch());
            }
        }
        self.popup = None;
        if path == "personal.html" {
            // 个人中心 is a tab of the main activity: the link opens it over 首页, as the
            // bottom tab does (field notes §3a; `personal.html` is also the mobile web's
            // profile page).
            self.stack.clear();
            self.stack.push(Page::Home { scroll: 0 });
            self.arrive(Page::Profile);
            return Ok(Outcome { transition: true });
        }
        let page = match (path, goods_id) {
            ("goods.html" | "goods2.html", Some(id))
                if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) =>
            {
                self.resolve_goods(id)
            }
            ("orders.html", _) if param("type") == Some("1") => Page::order_list(OrderTab::Unpaid),
            ("orders.html", _) if param("type") == Some("0") => Page::order_list(OrderTab::All),
            ("order.html", _) => match param("order_sn") {
                Some(sn) if self.ledger.orders().iter().any(|o| o.order_sn == sn) => {
                    Page::order_detail(sn)
                }
                _ => Page::NotFound {
                    message: "订单不存在".into(),
                },
            },
            ("goods.html" | "goods2.html", _) => Page::NotFound {
                message: "商品不存在或已下架".into(),
            },
            _ => Page::NotFound {
                message: "页面不存在".into(),
            },
        };
        self.arrive(page);
        Ok(Outcome { transition: true })
    }

    fn resolve_goods(&self, id: &str) -> Page {
        let mut id = id.to_string();
        // Redirect chains are bounded: a loop in a catalog must not hang the phone.
        for _ in 0..8 {
            let Some(g) = self.goods(&id) else {
                return Page::NotFound {
                    message: "商品不存在或已下架".into(),
                };
            };
            if g.login_required {
                return Page::Login;
            }
            if g.risk_verification {
                return Page::Risk;
            }
            match &g.redirect_to {
                Some(to) => id = to.clone(),
                None => return Page::Goods { goods_id: id },
            }
        }
        Page::NotFound {
            message: "页面不存在".into(),
        }
    }

    /// A tap at (x, y).
    pub fn tap(&mut self, x: i32, y: i32, now: DateTime<FixedOffset>) -> Outcome {
        let screen = self.screen(now);
        let action = match screen.hit(x, y) {
            Some(n) => n.action.clone(),
            None => return Outcome::default(),
        };
        match action {
            Action::None => Outcome::default(),
            Action::Option { dim, option } => self.select_option(dim, option),
            Action::Do(name) => self.perform(&name, now),
        }
    }

    fn top_mut(&mut self) -> Option<&mut Page> {
        self.stack.last_mut()
    }

    fn sheet_mut(&mut self) -> Option<&mut SheetState> {
        match self.stack.last_mut() {
            Some(Page::Sheet(s)) => Some(s),
            _ => None,
        }
    }

    fn replace_top(&mut self, p: Page) {
        self.stack.pop();
        self.stack.push(p);
    }

    fn perform(&mut self, name: &str, now: DateTime<FixedOffset>) -> Outcome {
        let t = Outcome { transition: true };
        let (verb, arg) = name.split_once(':').unwrap_or((name, ""));
        match verb {
            "launch" => return self.launch(),
            "popup_close" => {
                self.popup = None;
                return t;
            }
            "open" => {
                let p = self.resolve_goods(arg);
                self.arrive(p);
                return t;
            }
            "nav_home" => {
                self.stack.clear();
                self.arrive(Page::Home { scroll: 0 });
                return t;
            }
            "nav_profile" => {
                self.stack.clear();
                self.stack.push(Page::Home { scroll: 0 });
                self.stack.push(Page::Profile);
                return t;
            }
            "back" => return self.back(),
            "buy" | "buy_group" => {
                let Some(Page::Goods { goods_id }) = self.stack.last().cloned() else {
                    return Outcome::default();
                };
                let Some(g) = self.goods(&goods_id) else {
                    return Outcome::default();
                };
                let st = SheetState::new(g, verb == "buy_group");
                self.stack.push(Page::Sheet(st));
                return t;
            }
            "qty_minus" | "qty_plus" | "qty_edit" => {
                let limit = self.qty_limit();
                let qty = match self.stack.last_mut() {
                    // The sheet, or the stepper of 确认订单 (`confirm_page_quantity`).
                    Some(Page::Sheet(s) | Page::Confirm(s)) => match verb {
                        "qty_minus" => s.qty.saturating_sub(1).max(1),
                        "qty_plus" => (s.qty + 1).min(limit.max(1)),
                        _ => {
                            s.qty_focused = true;
                            s.qty
                        }
                    },
                    _ => return Outcome::default(),
                };
                self.set_quantity(qty);
                return Outcome::default();
            }
            "submit" => return self.submit(now, false),
            "repeat_continue" => {
                // 继续下单: the dialog goes, the page below it orders as its button would.
                if matches!(self.stack.last(), Some(Page::RepeatOrder { .. })) {
                    self.stack.pop();
                    return self.submit(now, true);
                }
                return Outcome::default();
            }
            "repeat_pay" => {
                // 去支付: the cashier of the newest unpaid order of the same goods.
                let Some(Page::RepeatOrder { goods_id }) = self.stack.last().cloned() else {
                    return Outcome::default();
                };
                let newest = self.unpaid_of(&goods_id).last().map(|o| o.order_sn.clone());
                self.stack.pop();
                if let Some(order_sn) = newest {
                    self.stack.push(Page::Payment { order_sn });
                }
                return t;
            }
            "dialog_close" => {
                if matches!(
                    self.stack.last(),
                    Some(Page::RepeatOrder { .. } | Page::PaymentOffer { .. })
                ) {
                    self.stack.pop();
                }
                return t;
            }
            "offer_accept" => {
                // 立即开通: the offer binds the account's payment — counted as a payment
                // attempt on the order whose cashier it was over.
                let Some(Page::PaymentOffer { order_sn, offer }) = self.stack.last().cloned()
                else {
                    return Outcome::default();
                };
                if let Err(e) = self.ledger.record_payment_attempt(&order_sn) {
                    self.last_toast = Some(format!("ledger: {e}"));
                } else {
                    self.last_toast = Some(offer.accepted_toast().into());
                }
                self.stack.pop();
                return t;
            }
            "promo_close" => {
                if let Some(s) = self.sheet_mut() {
                    s.promo_closed = true;
                }
                return t;
            }
            "promo_open" => {
                self.stack.push(Page::PayPromo);
                return t;
            }
            "confirm" => return self.open_confirm(),
            "more_info" => {
                if let Some(Page::OrderDetail { expanded, .. }) = self.top_mut() {
                    *expanded = true;
                }
                return t;
            }
            "pay" | "abandon_continue" | "order_pay" => {
                let sn = match (verb, self.stack.last()) {
                    ("order_pay", _) => arg.to_string(),
                    (_, Some(Page::Payment { order_sn } | Page::Abandon { order_sn })) => {
                        order_sn.clone()
                    }
                    _ => return Outcome::default(),
                };
                if let Err(e) = self.ledger.record_payment_attempt(&sn) {
                    self.last_toast = Some(format!("ledger: {e}"));
                }
                // The simulated app can never complete a payment: the wallet "fails".
                if verb == "order_pay" {
                    self.stack.push(Page::PayResult { order_sn: sn });
                } else {
                    self.replace_top(Page::PayResult { order_sn: sn });
                }
                return t;
            }
            "pay_close" => {
                if let Some(Page::Payment { order_sn }) = self.stack.last().cloned() {
                    self.replace_top(Page::Abandon { order_sn });
                }
                return t;
            }
            "abandon_close" => {
                if let Some(Page::Abandon { order_sn }) = self.stack.last().cloned() {
                    self.replace_top(Page::Payment { order_sn });
                }
                return t;
            }
            "abandon_leave" => {
                // 先去逛逛: leave payment and the sheet, back to the goods page.
                while matches!(
                    self.stack.last(),
                    Some(
                        Page::Abandon { .. }
                            | Page::Payment { .. }
                            | Page::Sheet(_)
                            | Page::Confirm(_)
                    )
                ) {
                    self.stack.pop();
                }
                if self.stack.is_empty() {
                    self.arrive(Page::Home { scroll: 0 });
                }
                return t;
            }
            "view_order" => {
                self.replace_top(Page::order_detail(arg));
                return t;
            }
            "orders" => {
                let tab = if arg == "all" {
                    OrderTab::All
                } else {
                    OrderTab::Unpaid
                };
                self.stack.push(Page::order_list(tab));
                return t;
            }
            "orders_tab" => {
                if let Some(Page::OrderList { scroll, tab }) = self.top_mut() {
                    *tab = if arg == "all" {
                        OrderTab::All
                    } else {
                        OrderTab::Unpaid
                    };
                    *scroll = 0;
                }
                return t;
            }
            "order" => {
                self.stack.push(Page::order_detail(arg));
                return t;
            }
            "order_cancel" => {
                if let Err(e) = self.ledger.cancel(arg) {
                    self.last_toast = Some(format!("ledger: {e}"));
                }
                return t;
            }
            "home_from_error" => {
                self.stack.clear();
                self.arrive(Page::Home { scroll: 0 });
                return t;
            }
            "toast" => {
                self.last_toast = Some(arg.to_string());
            }
            _ => {}
        }
        Outcome::default()
    }

    fn qty_limit(&self) -> u32 {
        let Some(Page::Sheet(s) | Page::Confirm(s)) = self.stack.last() else {
            return QTY_CAP;
        };
        let Some(g) = self.goods(&s.goods_id) else {
            return QTY_CAP;
        };
        qty_limit(g, &s.sel)
    }

    /// A new quantity on the sheet (which may lag its total) or on 确认订单 (whose 合计
    /// follows at once).
    fn set_quantity(&mut self, qty: u32) {
        match self.stack.last_mut() {
            Some(Page::Confirm(s)) => s.qty = qty,
            _ => self.set_sheet(None, qty),
        }
    }

    /// Change the sheet's selection (when given) and quantity; on goods whose total settles
    /// late, the footer keeps showing the total it showed for `total_lag_dumps` dumps.
    fn set_sheet(&mut self, sel: Option<crate::catalog::Selection>, qty: u32) {
        let Some(Page::Sheet(s)) = self.stack.last() else {
            return;
        };
        let Some(g) = self.goods(&s.goods_id) else {
            return;
        };
        let lag_dumps = g.total_lag_dumps;
        let shown = s.shown_total(g);
        let sel = sel.unwrap_or_else(|| s.sel.clone());
        let changed = sel != s.sel || qty != s.qty;
        if let Some(s) = self.sheet_mut() {
            if changed && lag_dumps > 0 {
                s.lag = Some((shown, lag_dumps));
            }
            s.sel = sel;
            s.qty = qty;
        }
    }

    /// 确定 / 立即购买 on a sheet of goods with `confirm_page`: the full-page 确认订单.
    fn open_confirm(&mut self) -> Outcome {
        let Some(Page::Sheet(s)) = self.stack.last().cloned() else {
            return Outcome::default();
        };
        let Some(g) = self.goods(&s.goods_id) else {
            return Outcome::default();
        };
        if let Err(toast) = Self::orderable(g, &s) {
            self.last_toast = Some(toast);
            return Outcome::default();
        }
        let qty = if g.confirm_page_resets_quantity {
            1
        } else {
            s.qty
        };
        self.stack.push(Page::Confirm(SheetState {
            lag: None,
            qty,
            qty_focused: false,
            ..s
        }));
        Outcome { transition: true }
    }

    /// Whether the sheet's choice can be ordered (address aside); else the toast.
    fn orderable(g: &Goods, s: &SheetState) -> Result<Vec<usize>, String> {
        let Some(full): Option<Vec<usize>> = s.sel.iter().copied().collect() else {
            let missing = g.missing_dimensions(&s.sel);
            return Err(format!("请选择 {}", missing.join(" ")));
        };
        if g.stock_of(&full) == 0 || s.qty == 0 {
            return Err("该款式售罄".into());
        }
        Ok(full)
    }

    fn select_option(&mut self, dim: usize, option: usize) -> Outcome {
        let Some(Page::Sheet(s)) = self.stack.last() else {
            return Outcome::default();
        };
        let Some(g) = self.goods(&s.goods_id).cloned() else {
            return Outcome::default();
        };
        let mut sel = s.sel.clone();
        if !g.option_available(&sel, dim, option) {
            self.last_toast = Some("该款式售罄".into());
            return Outcome::default();
        }
        sel[dim] = Some(option);
        // A choice elsewhere can make another dimension's choice unavailable: drop it.
        for d in 0..sel.len() {
            if d != dim {
                if let Some(o) = sel[d] {
                    if !g.option_available(&sel, d, o) {
                        sel[d] = None;
                    }
                }
            }
        }
        let limit = qty_limit(&g, &sel);
        let qty = s.qty.min(limit.max(1));
        self.set_sheet(Some(sel), qty);
        Outcome::default()
    }

    /// The unpaid orders of `goods_id`, oldest first.
    fn unpaid_of(&self, goods_id: &str) -> Vec<&Order> {
        self.ledger
            .orders()
            .iter()
            .filter(|o| o.goods_id == goods_id && o.status == crate::variants::STATUS_UNPAID)
            .collect()
    }

    /// The order button (提交订单, 确定, 立即支付, 确认订单's 提交订单). `confirmed`: 继续下单
    /// of the repeat-order dialog, which never asks again.
    fn submit(&mut self, now: DateTime<FixedOffset>, confirmed: bool) -> Outcome {
        let s = match self.stack.last() {
            Some(Page::Sheet(s) | Page::Confirm(s)) => s.clone(),
            _ => return Outcome::default(),
        };
        let Some(g) = self.goods(&s.goods_id).cloned() else {
            return Outcome::default();
        };
        let Some(ship_to) = self.delivery_address(&g).cloned() else {
            self.last_toast = Some("请先添加收货地址".into());
            return Outcome::default();
        };
        let full = match Self::orderable(&g, &s) {
            Ok(full) => full,
            Err(toast) => {
                self.last_toast = Some(toast);
                return Outcome::default();
            }
        };
        if g.repeat_order_prompt && !confirmed && !self.unpaid_of(&g.goods_id).is_empty() {
            // 相同商品订单待支付: the page stays below the dialog, nothing is ordered.
            self.stack.push(Page::RepeatOrder {
                goods_id: g.goods_id.clone(),
            });
            return Outcome { transition: true };
        }
        let mut options = serde_json::Map::new();
        for (d, &i) in g.dimensions.iter().zip(&full) {
            options.insert(
                d.key.clone(),
                serde_json::Value::String(d.options[i].name.clone()),
            );
        }
        let order_sn = self.ledger.next_order_sn(self.cfg.seed, now);
        // 免密支付, or a 立即支付 order button: the button itself pays; an account that
        // pays by itself (`pays_silently`) too, though nothing on the checkout says so.
        let pays =
            g.payment_method == PaymentMethod::PasswordFree || g.checkout_button.pays_at_once();
        let silently = g.pays_silently;
        let order = Order {
            order_sn: order_sn.clone(),
            goods_id: g.goods_id.clone(),
            options,
            quantity: s.qty,
            total_cent: g.total_cent(&s.sel, s.qty),
            // An account that pays by itself at a 多多支付 discount: 实付 ≠ the total.
            paid_cent: (silently && g.silent_discount_cent > 0)
                .then(|| g.total_cent(&s.sel, s.qty) - g.silent_discount_cent),
            created_at: now.to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
            status: if pays || silently {
                crate::variants::STATUS_PAID.into()
            } else {
                g.payment_method.placed_status().into()
            },
            payment_attempted: pays,
            payment_attempts: u32::from(pays),
            unit_price_cent: g.unit_price_cent(&s.sel),
            title: g.title.clone(),
            ship_to: Some(ship_to),
        };
        if let Err(e) = self.ledger.push(order) {
            self.last_toast = Some(format!("网络错误，请重试 ({e})"));
            return Outcome::default();
        }
        if g.payment_method == PaymentMethod::Wechat && !pays && !silently {
            self.stack.push(Page::Payment {
                order_sn: order_sn.clone(),
            });
            if g.payment_handoff == PaymentHandoff::Wechat {
                // PDD's cashier waits behind WeChat's pay sheet.
                self.handoff = Some((order_sn.clone(), g.total_cent(&s.sel, s.qty)));
            }
            if g.payment_offer != PaymentOffer::None {
                self.stack.push(Page::PaymentOffer {
                    order_sn,
                    offer: g.payment_offer,
                });
            }
        } else {
            self.stack.push(Page::OrderResult { order_sn });
        }
        Outcome { transition: true }
    }

    /// The BACK key.
    pub fn back(&mut self) -> Outcome {
        let t = Outcome { transition: true };
        if !self.foreground {
            return Outcome::default();
        }
        if self.popup.take().is_some() {
            return t;
        }
        match self.stack.last().cloned() {
            Some(Page::Payment { order_sn }) => self.replace_top(Page::Abandon { order_sn }),
            Some(Page::Abandon { order_sn }) => self.replace_top(Page::Payment { order_sn }),
            Some(Page::PayResult { order_sn }) => self.replace_top(Page::order_detail(order_sn)),
            Some(Page::OrderResult { .. }) => {
                // Back from 下单成功 / 支付成功: to the goods page, the sheet is gone.
                while matches!(
                    self.stack.last(),
                    Some(Page::OrderResult { .. } | Page::Confirm(_) | Page::Sheet(_))
                ) {
                    self.stack.pop();
                }
                if self.stack.is_empty() {
                    self.arrive(Page::Home { scroll: 0 });
                }
            }
            Some(_) => {
                self.stack.pop();
                if self.stack.is_empty() {
                    self.foreground = false;
                }
            }
            None => self.foreground = false,
        }
        t
    }

    /// The HOME key: the launcher shows, the app keeps its pages.
    pub fn home_key(&mut self) -> Outcome {
        self.foreground = false;
        Outcome { transition: true }
    }

    /// `input text`: only digits into a focused quantity field do anything (typing Chinese
    /// through `input text` does not work on real phones either).
    pub fn input_text(&mut self, text: &str) {
        let limit = self.qty_limit();
        let focused = matches!(
            self.stack.last(),
            Some(Page::Sheet(s) | Page::Confirm(s)) if s.qty_focused
        );
        if focused {
            if let Ok(n) = text.trim().parse::<u32>() {
                self.set_quantity(n.clamp(1, limit.max(1)));
            }
        }
    }

    /// A swipe from (x1, y1) to (x2, y2): scrolls whatever scrollable area it starts in.
    pub fn swipe(&mut self, x1: i32, y1: i32, x2: i32, y2: i32) -> Outcome {
        // Coordinates come from the command line: saturate instead of overflowing.
        let (dx, dy) = (x1.saturating_sub(x2), y1.saturating_sub(y2));
        let horizontal = dx.abs() > dy.abs();
        let geom = match self.stack.last() {
            Some(Page::Sheet(s)) if self.foreground && self.popup.is_none() => self
                .goods(&s.goods_id)
                .map(|g| screens::sheet_geometry(g, s, self.cfg.width)),
            _ => None,
        };
        let detail_max = match self.stack.last() {
            Some(Page::OrderDetail {
                order_sn, expanded, ..
            }) => {
                let folded = self
                    .ledger
                    .orders()
                    .iter()
                    .find(|o| &o.order_sn == order_sn)
                    .and_then(|o| self.goods(&o.goods_id))
                    .is_some_and(|g| g.order_detail == crate::catalog::OrderDetailForm::Folded);
                screens::order_detail_max_scroll(folded, *expanded, self.cfg.height)
            }
            _ => 0,
        };
        let Some(top) = self.top_mut() else {
            return Outcome::default();
        };
        match top {
            Page::Sheet(s) => {
                let Some(geom) = geom else {
                    return Outcome::default();
                };
                if horizontal {
                    for (dim, rect, max) in &geom.grids {
                        if rect.contains(x1, y1) {
                            s.hscroll[*dim] = s.hscroll[*dim].saturating_add(dx).clamp(0, *max);
                        }
                    }
                } else if geom.list.contains(x1, y1) {
                    s.vscroll = s.vscroll.saturating_add(dy).clamp(0, geom.list_max_scroll);
                }
            }
            Page::Home { scroll } | Page::OrderList { scroll, .. } if !horizontal => {
                *scroll = scroll.saturating_add(dy).clamp(0, 20_000);
            }
            Page::OrderDetail { scroll, .. } if !horizontal => {
                *scroll = scroll.saturating_add(dy).clamp(0, detail_max);
            }
            _ => {}
        }
        Outcome::default()
    }
}
