//! The catalog: the ground truth of what the simulated shop sells.
//!
//! Loaded from `fixtures/catalog/*.json` (format documented in `sim-phone/README.md`).
//! Other crates' end-to-end tests load the same files through this type to compare what
//! the client collected with the truth, so everything here is plain data plus a few pure
//! lookups (price of a selection, stock of a selection). Money is integer fen, never float.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::SimError;
pub use crate::variants::{
    CheckoutButton, ConfirmPageQuantity, OrderDetailForm, OrderListEntry, PaymentHandoff,
    PaymentMethod, PaymentOffer, UnpaidWording,
};

/// Version of the catalog file format this crate reads.
pub const CATALOG_SCHEMA_VERSION: u32 = 1;

/// One catalog file: `{"schema_version": 1, "goods": [...]}`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CatalogFile {
    pub schema_version: u32,
    pub goods: Vec<Goods>,
}

/// All goods the simulated app knows, in file order (files sorted by name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Catalog {
    pub goods: Vec<Goods>,
}

/// One goods page.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Goods {
    /// PDD goods id, digits as a string (it does not fit every JSON reader's integers).
    pub goods_id: String,
    /// Full title (the page shows it truncated in `text`, whole in `content-desc`).
    pub title: String,
    /// Shop name shown on the goods page and in the order list.
    pub shop: String,
    /// Unit price in fen for SKUs whose options carry no `price_cent` of their own.
    pub price_cent: i64,
    /// Crossed-out list price in fen shown on the goods page, if any.
    #[serde(default)]
    pub list_price_cent: Option<i64>,
    /// Wording before the price on cards and the goods page ("券后", "秒杀价", "补贴价" ...).
    #[serde(default)]
    pub price_wording: Option<String>,
    /// Discount in fen subtracted once per order: total = unit × quantity − discount.
    #[serde(default)]
    pub discount_cent: i64,
    /// Text of the 优惠 row; defaults to "已减{discount}元" when there is a discount.
    #[serde(default)]
    pub discount_label: Option<String>,
    /// Sales wording on the goods page ("已拼8500件"): digits that are NOT a price.
    #[serde(default)]
    pub sales_text: Option<String>,
    /// Whether the account has a delivery address; without one the sheet shows 手动添加地址
    /// and 提交订单 creates no order.
    #[serde(default = "yes")]
    pub address_present: bool,
    /// Per-order purchase limit (限购); `None` = limited by stock only.
    #[serde(default)]
    pub max_quantity: Option<u32>,
    /// Stock of every SKU no `stock` rule mentions.
    #[serde(default = "default_stock")]
    pub default_stock: u32,
    /// Preselect the first available option of every dimension when the sheet opens
    /// (the real app does this for some goods; single-option dimensions are always
    /// preselected).
    #[serde(default)]
    pub preselect_first: bool,
    /// SKU dimensions in page order.
    #[serde(default)]
    pub dimensions: Vec<Dimension>,
    /// Stock overrides; the last rule matching a SKU wins.
    #[serde(default)]
    pub stock: Vec<StockRule>,
    /// Opening this goods shows another goods' page instead (the link redirects).
    #[serde(default)]
    pub redirect_to: Option<String>,
    /// Opening this goods shows the login page (the session expired).
    #[serde(default)]
    pub login_required: bool,
    /// Opening this goods shows a slider security check (安全验证).
    #[serde(default)]
    pub risk_verification: bool,
    /// The goods page says 商品已下架 and has no buy buttons.
    #[serde(default)]
    pub delisted: bool,
    /// How the account pays: `wechat` (default), `pay_later` (先用后付: the order is
    /// committed, ledger status `committed_unpaid`), `password_free` (免密支付: 提交订单
    /// pays at once, ledger status `paid`).
    #[serde(default)]
    pub payment_method: PaymentMethod,
    /// Print "商品编号：ID" on this goods' page (the real app never does; the phone's
    /// `show_goods_id` switch turns it on for every goods).
    #[serde(default)]
    pub show_goods_id: bool,
    /// After a selection or quantity change, the sheet's footer shows the previous total for
    /// this many more dumps (the app re-prices late).
    #[serde(default)]
    pub total_lag_dumps: u32,
    /// The sheet's button reads 确定 / 立即购买 and opens a full-page 确认订单 that carries the
    /// payment row, the total and 提交订单.
    #[serde(default)]
    pub confirm_page: bool,
    /// How 确认订单 draws the quantity: `text` (default, "x2") or `stepper` (减少数量 /
    /// EditText / 增加数量, which change the quantity on 确认订单 itself).
    #[serde(default)]
    pub confirm_page_quantity: ConfirmPageQuantity,
    /// 确认订单 opens with quantity 1, whatever the sheet had.
    #[serde(default)]
    pub confirm_page_resets_quantity: bool,
    /// The order button of a sheet that orders directly (goods without `confirm_page`):
    /// `submit` (default, "提交订单 ¥T"), `confirm` ("确定", the total as 合计 labels on the
    /// footer's left), `confirm_no_total` ("确定", no total), `pay_now` ("立即支付 ¥T":
    /// orders and pays at once).
    #[serde(default)]
    pub checkout_button: CheckoutButton,
    /// A 多多支付 promo bubble ("开通多多支付，本单立减5元", close desc 关闭提示) lies over the
    /// sheet's order button, inside PDD's window: a tap on its body opens 开通多多支付.
    #[serde(default)]
    pub footer_promo: bool,
    /// An order button tapped while the ledger holds an unpaid order of this goods raises
    /// 相同商品订单待支付 (去支付 / 继续下单 / close) instead of ordering.
    #[serde(default)]
    pub repeat_order_prompt: bool,
    /// After an order placed with 微信支付 the cashier shows under an offer dialog: `none`
    /// (default), `password_free` (开通免密支付) or `pay_later` (开通先用后付); its 立即开通
    /// counts as a payment attempt.
    #[serde(default)]
    pub payment_offer: PaymentOffer,
    /// Where the order button of a 微信支付 order hands the payment: `none` (default, PDD's
    /// cashier) or `wechat` (WeChat comes to the front with its pay sheet; BACK there
    /// returns to PDD's cashier).
    #[serde(default)]
    pub payment_handoff: PaymentHandoff,
    /// The account pays this goods' 微信支付 orders by itself — an auto-deduct the
    /// checkout does not show (it reads 使用#微信支付 and 提交订单 like any other): the order
    /// button places the order and it is paid at once (status `paid`; no pay button was
    /// tapped, `payment_attempted` stays false), then 支付成功. What the client can only
    /// find out afterwards, under 全部 (a critical alert, live stopped).
    #[serde(default)]
    pub pays_silently: bool,
    /// With `pays_silently`: the account's 多多支付 pays at a discount (field notes §3a:
    /// "用多多支付减7.53元" beside the payment row), so the order list and the detail show
    /// 实付 = total − this, not the total the checkout confirmed.
    #[serde(default)]
    pub silent_discount_cent: i64,
    /// How the profile page draws its 待付款 entry once this goods was opened or ordered:
    /// `label` (default) or `canvas` (no accessible entry; only the deep link reaches the list).
    #[serde(default)]
    pub order_list_entry: OrderListEntry,
    /// Status text of this goods' unpaid orders on their order-list card and detail page:
    /// `"待付款"` (default), `"待支付"` or `"等待付款"` (the list's tab stays 待付款).
    #[serde(default)]
    pub unpaid_wording: UnpaidWording,
    /// Layout of this goods' order detail: `open` (default) or `folded`.
    #[serde(default)]
    pub order_detail: OrderDetailForm,
    /// Opening this goods' deep link does nothing: whatever page was on screen stays.
    #[serde(default)]
    pub deep_link_fails: bool,
    /// This goods' page and sheet keep animating (PDD's countdowns, carousels): a
    /// `uiautomator dump` there fails with "could not get idle state" at a bounded rate
    /// (about half, never more than 3 in a row), while uiautomator2's server still dumps.
    #[serde(default)]
    pub animated: bool,
}

fn yes() -> bool {
    true
}

fn default_stock() -> u32 {
    200
}

/// One SKU group on the sheet (颜色分类, 尺码, 款式 ...).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Dimension {
    /// Stable key used in tasks and ledgers: "color", "size", "style" ...
    pub key: String,
    /// Heading shown on the sheet: 颜色分类 / 尺码 / 款式 ...
    pub name: String,
    /// How the options are drawn.
    #[serde(default)]
    pub form: OptionForm,
    /// Options in page order.
    pub options: Vec<OptionSpec>,
}

/// How a dimension's options are drawn on the checkout sheet.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OptionForm {
    /// Wrapped text chips, `selected="true"` on the chosen one.
    #[default]
    TextChips,
    /// A horizontally scrollable grid of image tiles (two rows), clipped at the screen edge.
    ImageGrid,
}

/// One option of a dimension.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OptionSpec {
    /// Canonical name (what a task names and the ledger records).
    pub name: String,
    /// Exact text on the page when it differs from `name`, e.g. with two leading spaces
    /// ("  玫瑰茶语") or a size hint ("M【建議40-50公斤】").
    #[serde(default)]
    pub page_text: Option<String>,
    /// Unit price in fen of every SKU with this option (the first option in page order that
    /// has one decides); typically set on colours.
    #[serde(default)]
    pub price_cent: Option<i64>,
}

impl OptionSpec {
    /// The text the page shows for this option.
    pub fn page_text(&self) -> &str {
        self.page_text.as_deref().unwrap_or(&self.name)
    }
}

/// Stock of the SKUs matching `options` (dimension key → option name; keys not named match
/// every option of that dimension). `stock: 0` means sold out.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StockRule {
    pub options: serde_json::Map<String, serde_json::Value>,
    pub stock: u32,
}

/// A (possibly partial) selection: for each dimension in page order, the chosen option's
/// index.
pub type Selection = Vec<Option<usize>>;

impl Catalog {
    /// Load a catalog from one JSON file or from every `*.json` file of a directory
    /// (sorted by file name, so the goods order is stable).
    pub fn load(path: &Path) -> Result<Catalog, SimError> {
        let files: Vec<PathBuf> = if path.is_dir() {
            let rd = std::fs::read_dir(path).map_err(|source| SimError::Read {
                path: path.to_path_buf(),
                source,
            })?;
            let mut v: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect();
            v.sort();
            v
        } else {
            vec![path.to_path_buf()]
        };
        let mut goods = Vec::new();
        for f in files {
            let bytes = std::fs::read(&f).map_err(|source| SimError::Read {
                path: f.clone(),
                source,
            })?;
            let file: CatalogFile =
                serde_json::from_slice(&bytes).map_err(|source| SimError::Json {
                    path: f.clone(),
                    source,
                })?;
            if file.schema_version != CATALOG_SCHEMA_VERSION {
                return Err(SimError::InvalidCatalog(format!(
                    "{}: schema_version {} (this build reads {CATALOG_SCHEMA_VERSION})",
                    f.display(),
                    file.schema_version
                )));
            }
            goods.extend(file.goods);
        }
        Catalog::new(goods)
    }

    /// The catalog shipped in `fixtures/catalog/` of this repository (for tests and
    /// `rehearse`).
    pub fn bundled_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/catalog")
    }

    /// Build and validate a catalog from goods.
    pub fn new(goods: Vec<Goods>) -> Result<Catalog, SimError> {
        let mut ids = BTreeSet::new();
        for g in &goods {
            if !ids.insert(g.goods_id.clone()) {
                return Err(SimError::InvalidCatalog(format!(
                    "goods_id {} appears twice",
                    g.goods_id
                )));
            }
            g.validate().map_err(SimError::InvalidCatalog)?;
        }
        for g in &goods {
            if let Some(to) = &g.redirect_to {
                if !ids.contains(to) {
                    return Err(SimError::InvalidCatalog(format!(
                        "goods {} redirects to unknown goods {to}",
                        g.goods_id
                    )));
                }
            }
        }
        Ok(Catalog { goods })
    }

    /// The goods with this id.
    pub fn goods(&self, goods_id: &str) -> Option<&Goods> {
        self.goods.iter().find(|g| g.goods_id == goods_id)
    }
}

impl Goods {
    fn validate(&self) -> Result<(), String> {
        let id = &self.goods_id;
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("goods_id {id:?} must be digits"));
        }
        if self.price_cent <= 0 {
            return Err(format!("{id}: price_cent must be > 0"));
        }
        if self.discount_cent < 0 {
            return Err(format!("{id}: discount_cent must be >= 0"));
        }
        if self.confirm_page && self.checkout_button != CheckoutButton::Submit {
            return Err(format!(
                "{id}: checkout_button is the button of a sheet that orders; confirm_page goods order on 确认订单"
            ));
        }
        if !self.confirm_page
            && (self.confirm_page_quantity != ConfirmPageQuantity::Text
                || self.confirm_page_resets_quantity)
        {
            return Err(format!(
                "{id}: confirm_page_quantity / confirm_page_resets_quantity need confirm_page"
            ));
        }
        if self.payment_offer != PaymentOffer::None
            && (self.payment_method != PaymentMethod::Wechat
                || self.checkout_button == CheckoutButton::PayNow)
        {
            return Err(format!(
                "{id}: payment_offer shows over the 微信支付 cashier (payment_method wechat, no pay_now)"
            ));
        }
        if self.payment_handoff != PaymentHandoff::None
            && (self.payment_method != PaymentMethod::Wechat
                || self.checkout_button == CheckoutButton::PayNow
                || self.payment_offer != PaymentOffer::None)
        {
            return Err(format!(
                "{id}: payment_handoff hands a 微信支付 order to WeChat (payment_method wechat, no pay_now, no payment_offer)"
            ));
        }
        if self.pays_silently
            && (self.payment_method != PaymentMethod::Wechat
                || self.checkout_button == CheckoutButton::PayNow
                || self.payment_offer != PaymentOffer::None
                || self.payment_handoff != PaymentHandoff::None)
        {
            return Err(format!(
                "{id}: pays_silently pays a 微信支付 order without its cashier (payment_method wechat, no pay_now, no payment_offer, no payment_handoff)"
            ));
        }
        if self.silent_discount_cent != 0
            && (!self.pays_silently
                || self.silent_discount_cent < 0
                || self.silent_discount_cent >= self.price_cent)
        {
            return Err(format!(
                "{id}: silent_discount_cent is a discount on an order the account pays by itself (pays_silently, 0 < discount < price_cent)"
            ));
        }
        if self.checkout_button == CheckoutButton::PayNow
            && self.payment_method != PaymentMethod::Wechat
        {
            return Err(format!(
                "{id}: checkout_button pay_now pays with 微信支付 (payment_method wechat)"
            ));
        }
        let mut keys = BTreeSet::new();
        for d in &self.dimensions {
            if !keys.insert(d.key.as_str()) {
                return Err(format!("{id}: dimension key {} twice", d.key));
            }
            if d.options.is_empty() {
                return Err(format!("{id}: dimension {} has no options", d.key));
            }
            let mut names = BTreeSet::new();
            for o in &d.options {
                if !names.insert(o.name.as_str()) {
                    return Err(format!("{id}: option {} twice in {}", o.name, d.key));
                }
                if o.price_cent.is_some_and(|p| p <= 0) {
                    return Err(format!("{id}: option {} price_cent must be > 0", o.name));
                }
            }
        }
        for r in &self.stock {
            for (k, v) in &r.options {
                let Some(d) = self.dimensions.iter().find(|d| &d.key == k) else {
                    return Err(format!("{id}: stock rule names unknown dimension {k}"));
                };
                let Some(v) = v.as_str() else {
                    return Err(format!("{id}: stock rule value for {k} must be a string"));
                };
                if !d.options.iter().any(|o| o.name == v) {
                    return Err(format!("{id}: stock rule names unknown option {k}={v}"));
                }
            }
        }
        Ok(())
    }

    /// Index of the dimension with this key.
    pub fn dimension_index(&self, key: &str) -> Option<usize> {
        self.dimensions.iter().position(|d| d.key == key)
    }

    /// Unit price in fen of a complete selection (or of the options chosen so far).
    pub fn unit_price_cent(&self, sel: &[Option<usize>]) -> i64 {
        for (d, s) in self.dimensions.iter().zip(sel) {
            if let Some(p) = s.and_then(|i| d.options.get(i)).and_then(|o| o.price_cent) {
                return p;
            }
        }
        self.price_cent
    }

    /// Stock of a complete selection (every dimension chosen).
    pub fn stock_of(&self, sel: &[usize]) -> u32 {
        let mut stock = self.default_stock;
        for rule in &self.stock {
            let matches = rule.options.iter().all(|(k, v)| {
                let Some(di) = self.dimension_index(k) else {
                    return false;
                };
                let chosen = sel
                    .get(di)
                    .and_then(|&i| self.dimensions[di].options.get(i))
                    .map(|o| o.name.as_str());
                chosen.is_some() && chosen == v.as_str()
            });
            if matches {
                stock = rule.stock;
            }
        }
        stock
    }

    /// Every complete selection consistent with a partial one, in page order.
    pub fn completions(&self, sel: &[Option<usize>]) -> Vec<Vec<usize>> {
        let mut out: Vec<Vec<usize>> = vec![Vec::new()];
        for (di, d) in self.dimensions.iter().enumerate() {
            let choices: Vec<usize> = match sel.get(di).copied().flatten() {
                Some(i) => vec![i],
                None => (0..d.options.len()).collect(),
            };
            out = out
                .into_iter()
                .flat_map(|prefix| {
                    choices.iter().map(move |&c| {
                        let mut p = prefix.clone();
                        p.push(c);
                        p
                    })
                })
                .collect();
        }
        out
    }

    /// Total stock over every SKU consistent with a partial selection.
    pub fn stock_of_partial(&self, sel: &[Option<usize>]) -> u64 {
        self.completions(sel)
            .iter()
            .map(|c| u64::from(self.stock_of(c)))
            .sum()
    }

    /// Headings of the dimensions `sel` leaves unchosen, in page order ("请选择 尺码").
    pub fn missing_dimensions(&self, sel: &[Option<usize>]) -> Vec<&str> {
        self.dimensions
            .iter()
            .zip(sel)
            .filter(|(_, x)| x.is_none())
            .map(|(d, _)| d.name.as_str())
            .collect()
    }

    /// Whether option `oi` of dimension `di` can be chosen given the other dimensions'
    /// current choices (sold out = every consistent SKU has stock 0).
    pub fn option_available(&self, sel: &[Option<usize>], di: usize, oi: usize) -> bool {
        let mut s = sel.to_vec();
        s.resize(self.dimensions.len(), None);
        s[di] = Some(oi);
        self.stock_of_partial(&s) > 0
    }

    /// Whether every SKU is sold out.
    pub fn all_sold_out(&self) -> bool {
        self.stock_of_partial(&vec![None; self.dimensions.len()]) == 0
    }

    /// Lowest unit price over available SKUs (what cards and the goods page show).
    pub fn min_price_cent(&self) -> i64 {
        self.completions(&vec![None; self.dimensions.len()])
            .iter()
            .filter(|c| self.stock_of(c) > 0)
            .map(|c| {
                let s: Selection = c.iter().map(|&i| Some(i)).collect();
                self.unit_price_cent(&s)
            })
            .min()
            .unwrap_or(self.price_cent)
    }

    /// Order total in fen: unit × quantity − discount, never below 1 fen.
    pub fn total_cent(&self, sel: &[Option<usize>], quantity: u32) -> i64 {
        (self.unit_price_cent(sel) * i64::from(quantity) - self.discount_cent).max(1)
    }
}

/// One SKU of a goods, as the truth for comparisons: every dimension chosen.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sku {
    /// Dimension key → canonical option name, in page order.
    pub options: serde_json::Map<String, serde_json::Value>,
    pub unit_price_cent: i64,
    pub stock: u32,
    /// `stock > 0`.
    pub available: bool,
}

impl Goods {
    /// Every SKU in page order (first dimension slowest): what a complete collect of this
    /// goods should find.
    pub fn skus(&self) -> Vec<Sku> {
        self.completions(&vec![None; self.dimensions.len()])
            .into_iter()
            .map(|c| {
                let sel: Selection = c.iter().map(|&i| Some(i)).collect();
                let mut options = serde_json::Map::new();
                for (d, &i) in self.dimensions.iter().zip(&c) {
                    options.insert(
                        d.key.clone(),
                        serde_json::Value::String(d.options[i].name.clone()),
                    );
                }
                let stock = self.stock_of(&c);
                Sku {
                    options,
                    unit_price_cent: self.unit_price_cent(&sel),
                    stock,
                    available: stock > 0,
                }
            })
            .collect()
    }

    /// The SKU with these options (dimension key → canonical name), if it exists.
    pub fn sku(&self, options: &[(&str, &str)]) -> Option<Sku> {
        self.skus().into_iter().find(|s| {
            s.options.len() == options.len()
                && options
                    .iter()
                    .all(|(k, v)| s.options.get(*k).and_then(|x| x.as_str()) == Some(*v))
        })
    }
}

/// Format fen the way the app does: yuan with up to two decimals, trailing zeros dropped
/// ("269", "12.7", "2.99").
pub fn format_yuan(cent: i64) -> String {
    let sign = if cent < 0 { "-" } else { "" };
    let c = cent.unsigned_abs();
    let (y, f) = (c / 100, c % 100);
    if f == 0 {
        format!("{sign}{y}")
    } else if f % 10 == 0 {
        format!("{sign}{y}.{}", f / 10)
    } else {
        format!("{sign}{y}.{f:02}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yuan_formatting_drops_trailing_zeros() {
        assert_eq!(format_yuan(26900), "269");
        assert_eq!(format_yuan(1270), "12.7");
        assert_eq!(format_yuan(299), "2.99");
        assert_eq!(format_yuan(5), "0.05");
    }

    #[test]
    fn sku_truth_table() {
        let c = Catalog::load(&Catalog::bundled_dir()).expect("bundled catalog");
        let g = c.goods("737116531267").expect("goods");
        let skus = g.skus();
        assert_eq!(skus.len(), 5 * 4);
        let black_xl = g.sku(&[("color", "黑色"), ("size", "XL")]).expect("sku");
        assert!(!black_xl.available);
        let blue_m = g.sku(&[("color", "雾霾蓝"), ("size", "M")]).expect("sku");
        assert_eq!((blue_m.unit_price_cent, blue_m.stock), (6300, 3));
        let kids = c.goods("648273910552").expect("goods");
        let single = kids
            .sku(&[
                ("color", "小熊-卡其"),
                ("size", "90cm"),
                ("style", "单件卫衣"),
            ])
            .expect("sku");
        assert_eq!(single.unit_price_cent, 2590, "the style sets the price");
    }

    #[test]
    fn bundled_catalog_loads() {
        let c = Catalog::load(&Catalog::bundled_dir()).expect("bundled catalog");
        assert!(c.goods.len() >= 8);
        assert!(c.goods.iter().any(|g| g.all_sold_out()));
        assert!(c.goods.iter().any(|g| g.dimensions.len() == 3));
    }
}
