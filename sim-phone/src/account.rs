//! The logged-in account and the installed app, as the phone shows them: the nickname
//! and the masked phone on 个人中心, the delivery address PDD preselects (the checkout
//! sheet's address block and 确认订单's; 手动添加地址 when there is none), and the PDD
//! version `dumpsys package` prints. Plain data; the handle changes it mid-test
//! (another account logged in, another address chosen, an app-store update overnight).

use serde::{Deserialize, Serialize};

/// A delivery address as PDD shows it: the receiver, the phone number masked the way
/// the app masks it (`138****0000`), and the address text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Address {
    pub receiver: String,
    pub phone: String,
    pub text: String,
}

/// The account logged in to the app.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// Shown on 个人中心 beside the avatar.
    pub nickname: String,
    /// Shown on 个人中心 under the nickname (`138****0000`).
    pub masked_phone: String,
    /// The preselected delivery address; `None`: the account has none (手动添加地址).
    pub address: Option<Address>,
}

impl Default for Account {
    /// 拼多多用户 / 138****0000, address 张三 138****0000 广东省深圳市南山区科技园路1号.
    fn default() -> Self {
        Account {
            nickname: "拼多多用户".into(),
            masked_phone: "138****0000".into(),
            address: Some(Address {
                receiver: "张三".into(),
                phone: "138****0000".into(),
                text: "广东省深圳市南山区科技园路1号".into(),
            }),
        }
    }
}

/// The installed PDD's version, as `dumpsys package com.xunmeng.pinduoduo` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PddVersion {
    /// `versionName=7.36.0`
    pub name: String,
    /// `versionCode=73600`
    pub code: u64,
}

impl Default for PddVersion {
    fn default() -> Self {
        PddVersion {
            name: "7.36.0".into(),
            code: 73600,
        }
    }
}
