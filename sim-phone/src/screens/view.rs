//! What the screens read of the app: the page on top, the popup, the catalog, the ledger and
//! the display settings. The app hands a [`View`] in; screens never see the app itself.

use crate::account::{Account, Address};
use crate::catalog::{Catalog, Goods};
use crate::ledger::{Ledger, Order};
use crate::page::{Page, PopupKind};

/// The app's state as the screens need it.
pub struct View<'a> {
    /// The logged-in account (nickname, masked phone, delivery address).
    pub account: &'a Account,
    pub catalog: &'a Catalog,
    pub ledger: &'a Ledger,
    /// The page on screen; `None` when the launcher shows.
    pub page: Option<&'a Page>,
    pub popup: Option<PopupKind>,
    /// Screen height in pixels (layouts are designed for 1080 wide).
    pub height: i32,
    /// Show a 商品编号 row on every goods page (a goods can also ask for it itself).
    pub show_goods_id: bool,
    /// The profile draws its order entries on canvas (no accessible 待付款).
    pub profile_canvas: bool,
}

impl<'a> View<'a> {
    pub(crate) fn goods(&self, id: &str) -> Option<&'a Goods> {
        self.catalog.goods(id)
    }

    /// The address the sheet and 确认订单 show for `g`: the account's, unless the goods'
    /// own variant shows none (`address_present: false`).
    pub(crate) fn address_for(&self, g: &Goods) -> Option<&'a Address> {
        self.account.address.as_ref().filter(|_| g.address_present)
    }

    pub(crate) fn order_by_sn(&self, sn: &str) -> Option<&'a Order> {
        self.ledger.orders().iter().find(|o| o.order_sn == sn)
    }

    /// The order's status as its card and detail show it (the goods' unpaid wording).
    pub(crate) fn status_text(&self, o: &Order) -> &'static str {
        let unpaid = self
            .goods(&o.goods_id)
            .map(|g| g.unpaid_wording)
            .unwrap_or_default();
        crate::variants::order_status_text(&o.status, unpaid)
    }

    /// "颜色分类：黑色；尺码：L" — dimension headings from the catalog, canonical names.
    pub(crate) fn options_text(&self, o: &Order) -> String {
        let g = self.goods(&o.goods_id);
        o.options
            .iter()
            .filter_map(|(k, v)| {
                let v = v.as_str()?;
                let heading = g
                    .and_then(|g| g.dimensions.iter().find(|d| &d.key == k))
                    .map(|d| d.name.clone())
                    .unwrap_or_else(|| k.clone());
                Some(format!("{heading}：{v}"))
            })
            .collect::<Vec<_>>()
            .join("；")
    }
}
