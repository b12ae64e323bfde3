//! 个人中心 (the profile page): the logged-in account's nickname and masked phone, the
//! account fingerprint.
//!
//! Not a page kind: the profile is classified as what its other contents make it (its
//! 我的订单 row reads as an order list with a 待付款 entry; drawn on canvas, it is
//! `unknown` with the 个人中心 tab as its way on) and the reconcile flow relies on that.
//! [`read`] is asked beside [`crate::screen::classify`] for every dump (the driver puts
//! its answer in `flow::Observed::account`).
//!
//! What counts as the profile: the bottom tab bar's 个人中心 on screen (the lowest fifth),
//! and above it the avatar (desc 头像), a masked phone or 我的订单. The masked phone is a
//! whole label `138****1234` (an unmasked `13812341234` is masked here, never kept); the
//! nickname is the text beside the avatar (its vertical span, right of it), or without an
//! avatar the label right above the masked phone. Neither read → `None`.
//!
//! No real 个人中心 dump exists in the shared material; the shapes are the simulated
//! phone's (`sim-phone/src/screens/profile.rs`) and the field notes' (bottom tab
//! 个人中心, `com.xunmeng.pinduoduo:id/pdd` ids, labels as handles).

use serde::Serialize;

use super::label_index::trim_name;
use super::tree::{Bounds, NodeRef, Tree};

/// What 个人中心 shows of the account.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
pub struct AccountReading {
    pub nickname: Option<String>,
    /// As PDD shows it: `138****1234`.
    pub masked_phone: Option<String>,
}

impl AccountReading {
    /// `138****1234 / 拼多多用户` for messages (already masked as the app shows it).
    pub fn describe(&self) -> String {
        match (&self.masked_phone, &self.nickname) {
            (Some(p), Some(n)) => format!("{p} / {n}"),
            (Some(p), None) => p.clone(),
            (None, Some(n)) => n.clone(),
            (None, None) => "(nothing read)".into(),
        }
    }
}

/// Labels of the profile page that are never the nickname.
const NOT_A_NICKNAME: &[&str] = &[
    "个人中心",
    "我的订单",
    "查看全部",
    "设置",
    "头像",
    "登录",
    "立即登录",
    "编辑资料",
    "待付款",
    "待分享",
    "待发货",
    "待收货",
    "评价",
];

/// `138****1234` (also with full-width ＊), as a whole label.
pub fn masked_phone(label: &str) -> Option<String> {
    let s: String = label
        .trim()
        .chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| if c == '＊' { '*' } else { c })
        .collect();
    let b = s.as_bytes();
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    match b.len() {
        11 if b[0] == b'1' && digits(0..3) && &b[3..7] == b"****" && digits(7..11) => Some(s),
        // Unmasked: masked here, the digits in the middle never kept.
        11 if b[0] == b'1' && digits(0..11) => Some(format!("{}****{}", &s[..3], &s[7..])),
        _ => None,
    }
}

fn visible_labels(tree: &Tree) -> impl Iterator<Item = (NodeRef<'_>, &str)> {
    tree.nodes().filter(|n| n.is_visible()).filter_map(|n| {
        let l = trim_name(n.label());
        (!l.is_empty()).then_some((n, l))
    })
}

/// The account on 个人中心, `None` when the dump is not the profile or shows neither a
/// nickname nor a masked phone.
pub fn read(tree: &Tree) -> Option<AccountReading> {
    let screen = tree.screen();
    let height = screen.bottom - screen.top;
    if height <= 0 {
        return None;
    }
    let tab_line = screen.bottom - height / 5;
    let profile_tab =
        visible_labels(tree).any(|(n, l)| l == "个人中心" && n.visible_bounds().top >= tab_line);
    if !profile_tab {
        return None;
    }
    let upper = |b: Bounds| b.bottom <= tab_line;
    let avatar = tree
        .nodes()
        .find(|n| n.is_visible() && trim_name(n.desc()) == "头像" && upper(n.visible_bounds()));
    let phone = visible_labels(tree)
        .filter(|(n, _)| upper(n.visible_bounds()))
        .find_map(|(n, l)| masked_phone(l).map(|p| (n.visible_bounds(), p)));
    let orders = visible_labels(tree).any(|(_, l)| l == "我的订单");
    if avatar.is_none() && phone.is_none() && !orders {
        return None;
    }
    let candidate = |n: &NodeRef<'_>, l: &str| {
        !n.text().trim().is_empty()
            && !NOT_A_NICKNAME.contains(&l)
            && masked_phone(l).is_none()
            && !l.chars().all(|c| c.is_ascii_digit())
            && l.chars().count() <= 40
    };
    let nickname = match (&avatar, &phone) {
        (Some(a), _) => {
            let ab = a.visible_bounds();
            visible_labels(tree)
                .filter(|(n, l)| candidate(n, l))
                .find(|(n, _)| {
                    let b = n.visible_bounds();
                    let mid = (b.top + b.bottom) / 2;
                    b.left >= ab.right && mid >= ab.top && mid <= ab.bottom
                })
                .map(|(_, l)| l.to_string())
        }
        (None, Some((pb, _))) => visible_labels(tree)
            .filter(|(n, l)| candidate(n, l))
            .filter(|(n, _)| {
                let b = n.visible_bounds();
                b.bottom <= pb.top && pb.top - b.bottom <= 120 && (b.left - pb.left).abs() <= 60
            })
            .last()
            .map(|(_, l)| l.to_string()),
        (None, None) => None,
    };
    let masked_phone = phone.map(|(_, p)| p);
    if nickname.is_none() && masked_phone.is_none() {
        return None;
    }
    Some(AccountReading {
        nickname,
        masked_phone,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        std::fs::read_to_string(root.join("fixtures/screens").join(name)).unwrap()
    }

    /// The simulated phone's 个人中心 with a masked phone under the nickname (as the
    /// simulated phone draws it since it models the account).
    fn with_phone(xml: &str, phone: &str) -> String {
        let at = xml.find("拼多多用户").expect("nickname");
        let end = xml[at..].find("/>").expect("node end") + at + 2;
        let start = xml[..end].rfind("<node").expect("node start");
        let phone_node = xml[start..end]
            .replace("拼多多用户", phone)
            .replace("[230,220][490,285]", "[230,280][470,330]");
        format!("{}\n{}{}", &xml[..end], phone_node, &xml[end..])
    }

    #[test]
    fn masked_phones_as_pdd_shows_them_and_unmasked_ones_masked_here() {
        assert_eq!(masked_phone("138****1234").as_deref(), Some("138****1234"));
        assert_eq!(
            masked_phone(" 138＊＊＊＊1234 ").as_deref(),
            Some("138****1234")
        );
        assert_eq!(masked_phone("13812341234").as_deref(), Some("138****1234"));
        assert_eq!(masked_phone("238****1234"), None);
        assert_eq!(masked_phone("138***1234"), None);
        assert_eq!(masked_phone("手机 138****1234"), None);
        assert_eq!(masked_phone("¥138"), None);
    }

    #[test]
    fn the_simulated_profile_gives_its_nickname_and_masked_phone() {
        let xml = with_phone(&fixture("sim_profile.xml"), "138****0000");
        let tree = Tree::parse(&xml).unwrap();
        assert_eq!(
            read(&tree),
            Some(AccountReading {
                nickname: Some("拼多多用户".into()),
                masked_phone: Some("138****0000".into()),
            })
        );
        // Canvas-drawn order entries: the account is still read.
        let xml = with_phone(&fixture("sim_profile_canvas.xml"), "139****4321");
        let r = read(&Tree::parse(&xml).unwrap()).unwrap();
        assert_eq!(r.masked_phone.as_deref(), Some("139****4321"));
        assert_eq!(r.nickname.as_deref(), Some("拼多多用户"));
    }

    #[test]
    fn a_profile_without_a_phone_gives_the_nickname_only() {
        let tree = Tree::parse(&fixture("sim_profile.xml")).unwrap();
        assert_eq!(
            read(&tree),
            Some(AccountReading {
                nickname: Some("拼多多用户".into()),
                masked_phone: None,
            })
        );
    }

    #[test]
    fn other_pages_give_nothing() {
        for f in [
            "sim_home.xml",
            "home_feed.xml",
            "order_list.xml",
            "goods_detail.xml",
            "login_required.xml",
            "sku_sheet_text_two_dims.xml",
        ] {
            let tree = Tree::parse(&fixture(f)).unwrap();
            assert_eq!(read(&tree), None, "{f}");
        }
    }
}
