//! Screen builders: the accessibility trees of each page, shaped like the real app's dumps.
//!
//! Shapes follow `shared/pdd-real-dumps` (studied, never copied): three top-level windows
//! (the app, the MIUI gesture bar, the systemui status bar with its clock), almost every
//! id `com.xunmeng.pinduoduo:id/pdd`, labels as non-clickable TextViews inside clickable
//! parents, merged labels ("最后3件 ¥269", "提交订单 ¥88"), prices split across siblings on
//! cards ("券后" / "¥" / "132"), image-grid options that a horizontally scrollable
//! RecyclerView clips at the screen edge. Layouts are designed for a 1080-px-wide screen.
//!
//! One file per page (and one for the popups and the system windows); shared node helpers
//! in `nodes`. Screens read the app only through a [`View`] and never change it.

mod abandon;
mod build;
mod chrome;
mod confirm;
mod goods;
mod home;
mod launcher;
mod login;
mod nodes;
mod not_found;
mod order_detail;
mod order_list;
mod order_result;
mod pay_promo;
mod pay_result;
mod payment;
mod payment_offer;
mod popup;
mod profile;
mod repeat_order;
mod risk;
mod sheet;
mod sheet_options;
mod view;

pub(crate) use build::build;
pub(crate) use order_detail::order_detail_max_scroll;
pub(crate) use sheet_options::sheet_geometry;
pub use view::View;
