//! The whole screen: the page on top of the stack (or the launcher), a popup over it,
//! the gesture bar and the status bar, in dump order.

use chrono::{DateTime, FixedOffset};

use crate::page::Page;
use crate::ui::Screen;

use super::abandon::abandon;
use super::chrome::{app_window, gesture_bar, status_bar};
use super::confirm::confirm;
use super::goods::goods_page;
use super::home::home;
use super::launcher::launcher;
use super::login::login;
use super::not_found::not_found;
use super::order_detail::order_detail;
use super::order_list::order_list;
use super::order_result::order_result;
use super::pay_promo::pay_promo;
use super::pay_result::pay_result;
use super::payment::payment;
use super::payment_offer::payment_offer;
use super::popup::popup;
use super::profile::profile;
use super::repeat_order::repeat_order;
use super::risk::risk;
use super::sheet::sheet;
use super::view::View;

/// Build the whole screen.
pub(crate) fn build(v: &View<'_>, now: DateTime<FixedOffset>) -> Screen {
    let h = v.height;
    let mut windows = Vec::with_capacity(4);
    match v.page {
        None => windows.push(launcher(h)),
        Some(p) => {
            let content = match p {
                Page::Home { scroll } => home(v, *scroll, h),
                Page::Goods { goods_id } => match v.goods(goods_id) {
                    Some(g) => goods_page(g, h, v.show_goods_id || g.show_goods_id),
                    None => not_found("商品不存在或已下架"),
                },
                Page::Sheet(s) => match v.goods(&s.goods_id) {
                    Some(g) => sheet(g, s, v.address_for(g), h),
                    None => not_found("商品不存在或已下架"),
                },
                Page::Confirm(s) => match v.goods(&s.goods_id) {
                    Some(g) => confirm(g, s, v.address_for(g), h),
                    None => not_found("商品不存在或已下架"),
                },
                Page::Payment { order_sn } => payment(v, order_sn, h),
                Page::Abandon { order_sn } => abandon(v, order_sn, h),
                Page::PayResult { order_sn } => pay_result(order_sn),
                Page::OrderResult { order_sn } => order_result(v, order_sn),
                Page::Profile => profile(v, h),
                Page::OrderList { scroll, tab } => order_list(v, *scroll, *tab, h),
                Page::OrderDetail {
                    order_sn,
                    scroll,
                    expanded,
                } => order_detail(v, order_sn, *scroll, *expanded, now, h),
                Page::PayPromo => pay_promo(),
                Page::RepeatOrder { goods_id } => repeat_order(v, goods_id, h),
                Page::PaymentOffer { offer, .. } => payment_offer(*offer, h),
                Page::Login => login(),
                Page::Risk => risk(),
                Page::NotFound { message } => not_found(message),
            };
            windows.push(app_window(h, content));
            if let Some(k) = v.popup {
                windows.push(popup(k, h));
            }
        }
    }
    windows.push(gesture_bar(h));
    windows.push(status_bar(&now));
    Screen { windows }
}
