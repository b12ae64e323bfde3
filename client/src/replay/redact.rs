//! Redaction of recorded dumps and of free text (an export, a diagnose bundle).
//!
//! What is personal on a PDD screen: the receiver's name, phone numbers (full, and the
//! app's `138****0000`), the delivery address and order numbers. Notifications can carry
//! anything (SMS codes): windows of packages other than PDD are dropped from dumps.
//!
//! **Consistent and shape-keeping.** One [`Masker`] serves a whole export: the same input
//! gets the same mask in every file (so a tap selector recorded on a label still finds
//! that label), and each mask keeps the shape the client's recognisers read
//! (`screen::sku_sheet::address_in`, `screen::profile::masked_phone`,
//! `screen::pages`' order numbers): a masked phone stays `1dd****dddd`, an order number
//! `yymmdd-ddd…` of the same length, an address names a 省, 市, 区 and 路.
//!
//! **Idempotent.** Masks are never taken for originals: phone masks start `100`
//! (no Chinese mobile number does), order-number masks are zeros but for their last four
//! digits, names start 某 and addresses 某某省.
//!
//! **Byte-identical otherwise.** [`Masker::redact_dump`] rewrites only the attribute
//! values it masks and removes the windows it drops; a dump with nothing personal comes
//! out byte for byte as it went in.

use std::collections::HashMap;
use std::sync::OnceLock;

use regex::Regex;

// PDD's package: its windows are kept.
use crate::screen::PDD_PACKAGE;

/// The kinds of personal data masked.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    Phone,
    Name,
    Address,
    Order,
}

/// What one dump's redaction did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DumpRedaction {
    pub xml: String,
    /// Top-level windows of other packages removed (their packages).
    pub dropped_windows: Vec<String>,
    /// Attribute values changed.
    pub masked_values: usize,
    /// Top-level windows kept (PDD's, and windows naming no package); 0 for text that
    /// is not a dump.
    pub kept_windows: usize,
}

/// The masks of one export (see the module).
#[derive(Debug, Default)]
pub struct Masker {
    /// (kind, original) → mask.
    masks: HashMap<(Kind, String), String>,
    counters: HashMap<Kind, u32>,
    /// Whole labels changed → their masked form (a selector is masked like its node).
    labels: HashMap<String, String>,
}

fn re(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).expect("static regex"))
}

/// A phone number as PDD masks it, `138****0000` (full-width ＊ too), or spaced/dashed.
fn phone_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    re(&RE, r"1[3-9]\d[*＊]{4}\d{4}|1[3-9]\d[ -]\d{4}[ -]\d{4}|\d+")
}

/// An order number `yymmdd-…` (PDD's form).
fn order_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    re(&RE, r"\d{6}-\d{6,}")
}

/// An address: a province or city, then a district, county, street or road.
fn address_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    re(
        &RE,
        r"(?:\p{Han}{2,}?(?:省|自治区))?\p{Han}{2,}?(?:市|州|盟)[\p{Han}0-9A-Za-z（）()#\-－]*?(?:区|县|旗|镇|街道|路|街|村)[\p{Han}0-9A-Za-z（）()#\-－·]*",
    )
}

/// `收货人：张三` and the like.
fn receiver_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    re(
        &RE,
        r"(收货人|收件人|联系人)([：:]\s*)([^\s\d：:*＊,，]{1,12})",
    )
}

/// Address-block labels that are controls, not data.
const CONTROLS: &[&str] = &[
    "关闭",
    "关闭弹窗",
    "返回",
    "更换地址",
    "修改地址",
    "默认",
    "编辑",
    "修改",
    "收货地址",
    "地址",
];

impl Masker {
    pub fn new() -> Masker {
        Masker::default()
    }

    fn next(&mut self, kind: Kind) -> u32 {
        let c = self.counters.entry(kind).or_insert(0);
        *c += 1;
        *c
    }

    fn mask_of(&mut self, kind: Kind, original: &str, make: impl FnOnce(u32) -> String) -> String {
        if let Some(m) = self.masks.get(&(kind, original.to_string())) {
            return m.clone();
        }
        let n = self.next(kind);
        let m = make(n);
        self.masks.insert((kind, original.to_string()), m.clone());
        m
    }

    fn phone(&mut self, p: &str) -> String {
        // Keep the form: masked (`100****0001`), spaced or dashed (`100 0000 0001`), or
        // plain (`10000000001`).
        self.mask_of(Kind::Phone, p, |n| {
            let n = n % 10_000;
            let chars: Vec<char> = p.chars().collect();
            if chars.len() == 11 && !chars[3].is_ascii_digit() && !chars[4].is_ascii_digit() {
                let stars: String = chars[3..7].iter().collect();
                format!("100{stars}{n:04}")
            } else if chars.len() == 13 {
                format!("100{}0000{}{n:04}", chars[3], chars[8])
            } else {
                format!("1000000{n:04}")
            }
        })
    }

    fn name(&mut self, name: &str) -> String {
        const STEMS: &[char] = &['甲', '乙', '丙', '丁', '戊', '己', '庚', '辛', '壬', '癸'];
        self.mask_of(Kind::Name, name, |n| {
            let i = (n - 1) as usize;
            if i < STEMS.len() {
                format!("某{}", STEMS[i])
            } else {
                format!("某{n}")
            }
        })
    }

    fn address(&mut self, a: &str) -> String {
        self.mask_of(Kind::Address, a, |n| {
            format!("某某省某某市某某区某某路{n}号")
        })
    }

    fn order(&mut self, o: &str) -> String {
        self.mask_of(Kind::Order, o, |n| {
            let (head, tail) = match o.split_once('-') {
                Some((h, t)) => (format!("{h}-"), t),
                None => (String::new(), o),
            };
            let len = tail.len().max(4);
            let num = format!("{:04}", n % 10_000);
            format!("{head}{}{num}", "0".repeat(len - 4))
        })
    }

    fn is_order_mask(tail: &str) -> bool {
        tail.len() >= 6 && tail[..tail.len() - 4].bytes().all(|b| b == b'0')
    }

    fn is_name_mask(s: &str) -> bool {
        s.starts_with('某')
    }

    /// Masks what the text holds: phone numbers, order numbers, addresses and names
    /// after 收货人：. Free text (log lines) and labels alike.
    pub fn mask_text(&mut self, s: &str) -> String {
        if s.is_empty() {
            return String::new();
        }
        let mut out = self.mask_orders(s);
        out = self.mask_phones(&out);
        out = self.mask_receivers(&out);
        out = self.mask_addresses(&out);
        out
    }

    fn mask_orders(&mut self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut last = 0;
        for m in order_re().find_iter(s) {
            let tail = m.as_str().split_once('-').map_or("", |(_, t)| t);
            out.push_str(&s[last..m.start()]);
            if Masker::is_order_mask(tail) {
                out.push_str(m.as_str());
            } else {
                out.push_str(&self.order(m.as_str()));
            }
            last = m.end();
        }
        out.push_str(&s[last..]);
        // Bare order numbers: after 订单编号/订单号, or 15 digits and more anywhere
        // (goods ids are shorter).
        let labelled = s.contains("订单编号") || s.contains("订单号");
        let src = out;
        let mut out = String::with_capacity(src.len());
        let mut last = 0;
        static DIGITS: OnceLock<Regex> = OnceLock::new();
        for m in re(&DIGITS, r"\d+").find_iter(&src) {
            let d = m.as_str();
            let after_dash = src[..m.start()].ends_with('-');
            let before_dash = src[m.end()..].starts_with('-');
            let long = d.len() >= 15 || (labelled && d.len() >= 10);
            out.push_str(&src[last..m.start()]);
            if long && !after_dash && !before_dash && !Masker::is_order_mask(d) {
                out.push_str(&self.order(d));
            } else {
                out.push_str(d);
            }
            last = m.end();
        }
        out.push_str(&src[last..]);
        out
    }

    fn mask_phones(&mut self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut last = 0;
        for m in phone_re().find_iter(s) {
            let p = m.as_str();
            let plain_digits = p.bytes().all(|b| b.is_ascii_digit());
            let is_phone = if plain_digits {
                // Exactly 11 digits, a mobile prefix, not a goods id in a link.
                let before = &s[..m.start()];
                let ctx: String = before.chars().rev().take(12).collect();
                p.len() == 11
                    && p.as_bytes()[1] >= b'3'
                    && p.starts_with('1')
                    && !ctx.contains("sdoog")
                    && !ctx.contains("di_sdoog")
                    && !before.ends_with('-')
                    && !s[m.end()..].starts_with('-')
            } else {
                true
            };
            out.push_str(&s[last..m.start()]);
            if is_phone {
                out.push_str(&self.phone(p));
            } else {
                out.push_str(p);
            }
            last = m.end();
        }
        out.push_str(&s[last..]);
        out
    }

    fn mask_receivers(&mut self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut last = 0;
        for c in receiver_re().captures_iter(s) {
            let (Some(all), Some(name)) = (c.get(0), c.get(3)) else {
                continue;
            };
            out.push_str(&s[last..name.start()]);
            if Masker::is_name_mask(name.as_str()) {
                out.push_str(name.as_str());
            } else {
                out.push_str(&self.name(name.as_str()));
            }
            last = all.end();
        }
        out.push_str(&s[last..]);
        out
    }

    fn mask_addresses(&mut self, s: &str) -> String {
        let mut out = String::with_capacity(s.len());
        let mut last = 0;
        for m in address_re().find_iter(s) {
            out.push_str(&s[last..m.start()]);
            if m.as_str().starts_with("某某") {
                out.push_str(m.as_str());
            } else {
                out.push_str(&self.address(m.as_str()));
            }
            last = m.end();
        }
        out.push_str(&s[last..]);
        out
    }

    /// Masks one whole label of a dump (a node's text or content-desc, or a tap
    /// selector's): a label already masked in this export gets the same mask; otherwise
    /// phone numbers and order numbers anywhere, the name before a phone number (`张三
    /// 138****0000`) or after 收货人：, and an address that starts the label or follows
    /// the phone number. Goods titles are left alone (an address must start the label).
    pub fn mask_label(&mut self, label: &str) -> String {
        if label.trim().is_empty() {
            return label.to_string();
        }
        if let Some(m) = self.labels.get(label) {
            return m.clone();
        }
        // A name or an address this export already masked, standing alone.
        for kind in [Kind::Name, Kind::Address] {
            if let Some(m) = self.masks.get(&(kind, label.trim().to_string())) {
                let m = label.replacen(label.trim(), m, 1);
                self.labels.insert(label.to_string(), m.clone());
                return m;
            }
        }
        let mut out = self.mask_orders(label);
        out = self.mask_receivers(&out);
        // A phone number: the name before it, the address after it.
        if let Some(m) = phone_re()
            .find_iter(&out.clone())
            .find(|m| !m.as_str().bytes().all(|b| b.is_ascii_digit()) || is_mobile(m.as_str()))
        {
            let before = out[..m.start()].trim_end();
            let after = out[m.end()..].trim_start();
            let (prefix, name) = split_prefix(before);
            let mut s = String::new();
            s.push_str(prefix);
            if !name.is_empty() && name.chars().count() <= 12 && !has_digit(name) {
                if Masker::is_name_mask(name) {
                    s.push_str(name);
                } else {
                    s.push_str(&self.name(name));
                }
            } else {
                s.push_str(name);
            }
            s.push_str(&out[before.len()..m.start()]);
            s.push_str(&self.mask_phones(m.as_str()));
            let gap = &out[m.end()..out.len() - after.len()];
            s.push_str(gap);
            if after.is_empty() || after.starts_with("某某") {
                s.push_str(after);
            } else if address_re().is_match(after) || after.chars().count() >= 6 {
                s.push_str(&self.address(after));
            } else {
                s.push_str(&self.mask_phones(after));
            }
            out = s;
        } else {
            out = self.mask_phones(&out);
            // An address that starts the label (after 收货地址：).
            let (prefix, rest) = split_prefix(&out);
            if let Some(m) = address_re().find(rest) {
                if m.start() == 0 && !rest.starts_with("某某") {
                    let masked = format!("{prefix}{}", self.address(rest));
                    out = masked;
                }
            }
        }
        if out != label {
            self.labels.insert(label.to_string(), out.clone());
        }
        out
    }

    /// One part of the configured address fingerprint (`expected_address`: receiver,
    /// phone, address — personal whatever it looks like).
    pub fn mask_address_part(&mut self, part: &str) -> String {
        let m = self.mask_label(part);
        if m != part || part.trim().is_empty() {
            return m;
        }
        let t = part.trim();
        if t.chars().count() <= 12 && !has_digit(t) {
            self.mask_name_label(part)
        } else {
            self.mask_address_label(part)
        }
    }

    /// A label the address block's context says is the receiver's name.
    fn mask_name_label(&mut self, label: &str) -> String {
        let t = label.trim();
        if t.is_empty() || Masker::is_name_mask(t) {
            return label.to_string();
        }
        let m = label.replacen(t, &self.name(t), 1);
        self.labels.insert(label.to_string(), m.clone());
        m
    }

    /// A label the address block's context says is the address.
    fn mask_address_label(&mut self, label: &str) -> String {
        let (prefix, rest) = split_prefix(label.trim());
        if rest.is_empty() || rest.starts_with("某某") {
            return label.to_string();
        }
        let m = format!("{prefix}{}", self.address(rest));
        self.labels.insert(label.to_string(), m.clone());
        m
    }

    /// Redacts one dump: drops the top-level windows of other packages, masks the
    /// personal data in `text`, `content-desc` and `hint` (see the module). Input that
    /// is not a dump is masked as text.
    pub fn redact_dump(&mut self, xml: &str) -> DumpRedaction {
        let Some(doc) = scan(xml) else {
            let masked = self.mask_text(xml);
            return DumpRedaction {
                masked_values: usize::from(masked != xml),
                xml: masked,
                dropped_windows: Vec::new(),
                kept_windows: 0,
            };
        };
        // Windows to drop.
        let mut dropped = Vec::new();
        let mut drop_ranges: Vec<(usize, usize)> = Vec::new();
        let mut gone = vec![false; doc.nodes.len()];
        for (i, n) in doc.nodes.iter().enumerate() {
            if n.parent.is_none() && !n.package.is_empty() && n.package != PDD_PACKAGE {
                dropped.push(n.package.clone());
                // The window and the indentation before it.
                let mut start = n.start;
                while start > 0 && xml.as_bytes()[start - 1].is_ascii_whitespace() {
                    start -= 1;
                }
                drop_ranges.push((start, n.end));
            }
            gone[i] = n
                .parent
                .map_or(!n.package.is_empty() && n.package != PDD_PACKAGE, |p| {
                    gone[p]
                });
        }
        // The address blocks' roles by context: the labels in the row of a phone number.
        let roles = self.roles(&doc, &gone);
        // The new values.
        let mut edits: Vec<(usize, usize, String)> = Vec::new();
        let mut masked_values = 0;
        for (i, n) in doc.nodes.iter().enumerate() {
            if gone[i] {
                continue;
            }
            for a in &n.attrs {
                let raw = &xml[a.start..a.end];
                let value = unescape(raw);
                let new = match roles[i] {
                    Role::Name => {
                        let v = self.mask_name_label(&value);
                        self.mask_label(&v)
                    }
                    Role::Address => {
                        let v = self.mask_address_label(&value);
                        self.mask_label(&v)
                    }
                    Role::None => self.mask_label(&value),
                };
                if new != value {
                    if value != new && roles[i] != Role::None {
                        self.labels.insert(value.clone(), new.clone());
                    }
                    masked_values += 1;
                    edits.push((a.start, a.end, escape(&new)));
                }
            }
        }
        for (s, e) in drop_ranges {
            edits.push((s, e, String::new()));
        }
        edits.sort_by_key(|(s, _, _)| *s);
        let mut out = String::with_capacity(xml.len());
        let mut last = 0;
        for (s, e, v) in edits {
            if s < last {
                // Inside a dropped window: already gone.
                continue;
            }
            out.push_str(&xml[last..s]);
            out.push_str(&v);
            last = e;
        }
        out.push_str(&xml[last..]);
        let kept_windows = doc.nodes.iter().filter(|n| n.parent.is_none()).count() - dropped.len();
        DumpRedaction {
            xml: out,
            dropped_windows: dropped,
            masked_values,
            kept_windows,
        }
    }

    /// Per node: a receiver's name or an address by the address block's context — the
    /// labels in the row (nearest clickable ancestor, or parent, of at most 6 labels) of
    /// a label holding a phone number: before it a short label without digits is the
    /// name, after it the address.
    fn roles(&self, doc: &Doc, gone: &[bool]) -> Vec<Role> {
        let mut roles = vec![Role::None; doc.nodes.len()];
        let label = |i: usize| -> String {
            let n = &doc.nodes[i];
            let v = n
                .attrs
                .iter()
                .find(|a| a.name == "text")
                .or_else(|| n.attrs.iter().find(|a| a.name == "content-desc"))
                .map(|a| unescape(&doc.src[a.start..a.end]))
                .unwrap_or_default();
            if v.trim().is_empty() {
                n.attrs
                    .iter()
                    .find(|a| a.name == "content-desc")
                    .map(|a| unescape(&doc.src[a.start..a.end]))
                    .unwrap_or_default()
            } else {
                v
            }
        };
        let has_phone = |s: &str| {
            phone_re()
                .find_iter(s)
                .any(|m| !m.as_str().bytes().all(|b| b.is_ascii_digit()) || is_mobile(m.as_str()))
        };
        for (i, n) in doc.nodes.iter().enumerate() {
            if gone[i] || !has_phone(&label(i)) {
                continue;
            }
            // The row.
            let labelled_under = |r: usize| -> Vec<usize> {
                (r..doc.nodes.len())
                    .take_while(|&j| j == r || doc.is_under(j, r))
                    .filter(|&j| !label(j).trim().is_empty())
                    .collect()
            };
            let mut row = None;
            let mut cur = Some(i);
            while let Some(c) = cur {
                if doc.nodes[c].clickable && c != i {
                    row = Some(c);
                    break;
                }
                cur = doc.nodes[c].parent;
            }
            // A row is small: a few labels, a few lines high.
            let small = |r: &usize| {
                labelled_under(*r).len() <= 6
                    && doc.nodes[*r].bounds.is_none_or(|b| b[3] - b[1] <= 400)
            };
            let row = row.filter(small).or_else(|| n.parent.filter(small));
            let Some(row) = row else {
                continue;
            };
            for j in labelled_under(row) {
                if j == i {
                    continue;
                }
                let l = label(j);
                let t = l.trim();
                if CONTROLS.contains(&t) || has_phone(t) {
                    continue;
                }
                // On the phone number's line or the two below it.
                let near = match (n.bounds, doc.nodes[j].bounds) {
                    (Some(p), Some(q)) => q[1] >= p[1] - 150 && q[1] <= p[3] + 200,
                    _ => true,
                };
                if !near {
                    continue;
                }
                if j < i {
                    if t.chars().count() <= 12 && !has_digit(t) && !address_re().is_match(t) {
                        roles[j] = Role::Name;
                    } else {
                        roles[j] = Role::Address;
                    }
                } else {
                    roles[j] = Role::Address;
                }
            }
        }
        roles
    }
}

fn is_mobile(d: &str) -> bool {
    d.len() == 11 && d.starts_with('1') && d.as_bytes()[1] >= b'3'
}

fn has_digit(s: &str) -> bool {
    s.chars().any(|c| c.is_ascii_digit())
}

/// `收货地址：`, `收货人：`, `地址：` and the like, kept in front of a mask.
fn split_prefix(s: &str) -> (&str, &str) {
    for p in ["收货地址", "收货人", "收件人", "联系人", "地址"] {
        if let Some(rest) = s.strip_prefix(p) {
            let trimmed = rest.trim_start_matches([':', '：', ' ']);
            let cut = s.len() - trimmed.len();
            return (&s[..cut], &s[cut..]);
        }
    }
    ("", s)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    None,
    Name,
    Address,
}

/// An attribute value's place in the source.
#[derive(Debug)]
struct Attr {
    name: String,
    /// The value's bytes between the quotes.
    start: usize,
    end: usize,
}

/// One `<node>` element.
#[derive(Debug)]
struct Elem {
    start: usize,
    end: usize,
    parent: Option<usize>,
    package: String,
    clickable: bool,
    /// `[l, t, r, b]`, when parsable.
    bounds: Option<[i32; 4]>,
    /// `text`, `content-desc`, `hint` values.
    attrs: Vec<Attr>,
}

struct Doc<'a> {
    src: &'a str,
    nodes: Vec<Elem>,
}

impl Doc<'_> {
    fn is_under(&self, j: usize, anc: usize) -> bool {
        let mut p = self.nodes[j].parent;
        while let Some(x) = p {
            if x == anc {
                return true;
            }
            p = self.nodes[x].parent;
        }
        false
    }
}

/// Scans a dump's `<node>` elements (document order, parents, the masked attributes'
/// places); `None` when there is no `<hierarchy>` or the markup is broken.
fn scan(src: &str) -> Option<Doc<'_>> {
    let b = src.as_bytes();
    let mut i = src.find("<hierarchy")?;
    let mut nodes: Vec<Elem> = Vec::new();
    let mut stack: Vec<usize> = Vec::new();
    let mut in_hierarchy = false;
    while i < b.len() {
        let Some(off) = memchr::memchr(b'<', &b[i..]) else {
            break;
        };
        let lt = i + off;
        let rest = &src[lt..];
        if rest.starts_with("<!--") {
            i = lt + rest.find("-->")? + 3;
            continue;
        }
        if rest.starts_with("<?") || rest.starts_with("<!") {
            i = lt + rest.find('>')? + 1;
            continue;
        }
        if let Some(close) = rest.strip_prefix("</") {
            let gt = lt + 2 + close.find('>')?;
            let name = close[..gt - lt - 2].trim();
            if name == "node" {
                let n = stack.pop()?;
                nodes[n].end = gt + 1;
            } else if name == "hierarchy" {
                return stack.is_empty().then_some(Doc { src, nodes });
            }
            i = gt + 1;
            continue;
        }
        // An opening tag: name, attributes, `/>` or `>`.
        let mut j = lt + 1;
        while j < b.len() && !b[j].is_ascii_whitespace() && b[j] != b'>' && b[j] != b'/' {
            j += 1;
        }
        let name = &src[lt + 1..j];
        let mut attrs = Vec::new();
        let mut package = String::new();
        let mut clickable = false;
        let mut bounds = None;
        let self_closing;
        loop {
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if j >= b.len() {
                return None;
            }
            if b[j] == b'>' {
                self_closing = false;
                j += 1;
                break;
            }
            if b[j] == b'/' && b.get(j + 1) == Some(&b'>') {
                self_closing = true;
                j += 2;
                break;
            }
            let ns = j;
            while j < b.len() && b[j] != b'=' && !b[j].is_ascii_whitespace() && b[j] != b'>' {
                j += 1;
            }
            let aname = &src[ns..j];
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            if b.get(j) != Some(&b'=') {
                return None;
            }
            j += 1;
            while j < b.len() && b[j].is_ascii_whitespace() {
                j += 1;
            }
            let q = *b.get(j)?;
            if q != b'"' && q != b'\'' {
                return None;
            }
            let vs = j + 1;
            let ve = vs + memchr::memchr(q, &b[vs..])?;
            match aname {
                "text" | "content-desc" | "hint" => attrs.push(Attr {
                    name: aname.to_string(),
                    start: vs,
                    end: ve,
                }),
                "package" => package = unescape(&src[vs..ve]),
                "clickable" => clickable = &src[vs..ve] == "true",
                "bounds" => bounds = parse_bounds(&src[vs..ve]),
                _ => {}
            }
            j = ve + 1;
        }
        match name {
            "hierarchy" => {
                in_hierarchy = true;
                if self_closing {
                    return Some(Doc { src, nodes });
                }
            }
            "node" if in_hierarchy => {
                let parent = stack.last().copied();
                // A child node inherits its window's package when it names none.
                let package = if package.is_empty() {
                    parent.map(|p| nodes[p].package.clone()).unwrap_or_default()
                } else {
                    package
                };
                nodes.push(Elem {
                    start: lt,
                    end: j,
                    parent,
                    package,
                    clickable,
                    bounds,
                    attrs,
                });
                if !self_closing {
                    stack.push(nodes.len() - 1);
                }
            }
            _ => return None,
        }
        i = j;
    }
    None
}

/// `[l,t][r,b]`.
fn parse_bounds(s: &str) -> Option<[i32; 4]> {
    let v: Vec<i32> = s
        .split(|c: char| !(c.is_ascii_digit() || c == '-'))
        .filter(|p| !p.is_empty())
        .map(|p| p.parse().ok())
        .collect::<Option<Vec<i32>>>()?;
    (v.len() == 4).then(|| [v[0], v[1], v[2], v[3]])
}

/// XML attribute unescaping (the five entities and character references).
fn unescape(s: &str) -> String {
    if !s.contains('&') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(p) = rest.find('&') {
        out.push_str(&rest[..p]);
        let tail = &rest[p..];
        let Some(semi) = tail.find(';').filter(|&x| x <= 10) else {
            out.push('&');
            rest = &tail[1..];
            continue;
        };
        let ent = &tail[1..semi];
        let c = match ent {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => ent
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| ent.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match c {
            Some(c) => {
                out.push(c);
                rest = &tail[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// XML attribute escaping for a value written back.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if (c as u32) < 0x20 => out.push_str(&format!("&#{};", c as u32)),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::sku_sheet::address_in;

    const NOTIFY: &str = r#"<node index="0" text="" resource-id="" class="android.widget.FrameLayout" package="com.android.systemui" bounds="[0,0][1080,300]"><node index="0" text="【拼多多】验证码 834512，收货人张三 13812345678" resource-id="" class="android.widget.TextView" package="com.android.systemui" bounds="[20,20][1060,280]" /></node>"#;

    fn dump(inner: &str) -> String {
        format!(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\"><node index=\"0\" text=\"\" class=\"android.widget.FrameLayout\" package=\"com.xunmeng.pinduoduo\" clickable=\"false\" bounds=\"[0,0][1080,2400]\">{inner}</node>{NOTIFY}</hierarchy>"
        )
    }

    const ADDRESS: &str = r#"<node index="0" text="" class="android.view.ViewGroup" package="com.xunmeng.pinduoduo" clickable="true" bounds="[0,332][1080,470]"><node index="0" text="张三 138****0000" class="android.widget.TextView" package="com.xunmeng.pinduoduo" clickable="false" bounds="[127,350][600,400]" /><node index="1" text="广东省深圳市南山区科技园路1号" class="android.widget.TextView" package="com.xunmeng.pinduoduo" clickable="false" bounds="[127,405][1000,455]" /></node><node index="1" text="订单编号：241130-012345678901234" class="android.widget.TextView" package="com.xunmeng.pinduoduo" clickable="false" bounds="[0,600][1080,650]" /><node index="2" text="小米路由器 北京市发货 海淀区仓" content-desc="" class="android.widget.TextView" package="com.xunmeng.pinduoduo" clickable="false" bounds="[0,700][1080,750]" /><node index="3" text="提交订单" class="android.widget.TextView" package="com.xunmeng.pinduoduo" clickable="true" bounds="[700,2200][1080,2350]" />"#;

    #[test]
    fn a_dump_without_anything_personal_comes_out_byte_identical() {
        for name in ["sku_sheet_text_two_dims.xml", "goods_detail.xml"] {
            let path = format!("{}/../fixtures/screens/{name}", env!("CARGO_MANIFEST_DIR"));
            let Ok(xml) = std::fs::read_to_string(&path) else {
                continue;
            };
            let mut m = Masker::new();
            let r = m.redact_dump(&xml);
            if r.masked_values == 0 && r.dropped_windows.is_empty() {
                assert_eq!(r.xml, xml, "{name}");
            }
        }
        let plain = "<hierarchy rotation=\"0\">\n  <node text=\"发起拼单 &amp; 单独购买\" package=\"com.xunmeng.pinduoduo\" bounds=\"[0,0][10,10]\"/>\n</hierarchy>\n";
        let r = Masker::new().redact_dump(plain);
        assert_eq!(r.xml, plain);
        assert_eq!(r.masked_values, 0);
    }

    #[test]
    fn personal_data_and_other_windows_go_shapes_stay() {
        let xml = dump(ADDRESS);
        let mut m = Masker::new();
        let r = m.redact_dump(&xml);
        assert_eq!(r.dropped_windows, ["com.android.systemui"]);
        for gone in [
            "张三",
            "13812345678",
            "138****0000",
            "广东省",
            "科技园路",
            "012345678901234",
            "834512",
        ] {
            assert!(!r.xml.contains(gone), "{gone} in {}", r.xml);
        }
        // Shapes the recognisers read.
        let t = crate::screen::Tree::parse(&r.xml).unwrap();
        let labels: Vec<&str> = t
            .nodes()
            .map(|n| n.text())
            .filter(|l| !l.is_empty())
            .collect();
        assert!(labels.contains(&"某甲 100****0001"), "{labels:?}");
        assert_eq!(address_in(labels.iter().copied()), Some(true));
        assert!(labels
            .iter()
            .any(|l| l.starts_with("某某省某某市某某区某某路")));
        assert!(
            labels.contains(&"订单编号：241130-000000000000001"),
            "{labels:?}"
        );
        // A goods title that names places is not an address.
        assert!(labels.contains(&"小米路由器 北京市发货 海淀区仓"));
        assert!(labels.contains(&"提交订单"));
        // Only the masked values changed: the rest byte for byte.
        let kept_tail = r#"class="android.widget.TextView" package="com.xunmeng.pinduoduo" clickable="true" bounds="[700,2200][1080,2350]" />"#;
        assert!(r.xml.contains(kept_tail));
        assert!(r.xml.starts_with(
            "<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">"
        ));
    }

    #[test]
    fn masks_are_consistent_across_files_and_idempotent() {
        let mut m = Masker::new();
        let a = m.redact_dump(&dump(ADDRESS)).xml;
        let b = m.redact_dump(&dump(ADDRESS)).xml;
        assert_eq!(a, b, "same input, same mask");
        // A selector recorded on the label gets the node's mask.
        assert_eq!(m.mask_label("张三 138****0000"), "某甲 100****0001");
        assert_eq!(
            m.mask_label("广东省深圳市南山区科技园路1号"),
            "某某省某某市某某区某某路1号"
        );
        // A second number, a second mask.
        assert_eq!(m.mask_label("李四 139****1111"), "某乙 100****0002");
        // Redacting the redacted changes nothing (a fresh masker, as a re-export would).
        let mut again = Masker::new();
        let r = again.redact_dump(&a);
        assert_eq!(r.xml, a);
        assert_eq!(r.masked_values, 0);
        for s in [
            "某甲 100****0001",
            "订单编号：241130-000000000000001",
            "10000000001",
        ] {
            assert_eq!(Masker::new().mask_text(s), s);
            assert_eq!(Masker::new().mask_label(s), s);
        }
    }

    /// Every fixture screen: redacted, it classifies as the same page kind, and
    /// redacting it again (a fresh masker, as a re-export would) changes nothing.
    #[test]
    fn every_fixture_screen_reads_the_same_after_redaction() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/screens");
        let mut m = Masker::new();
        let mut checked = 0;
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.extension().and_then(|x| x.to_str()) != Some("xml") {
                continue;
            }
            let xml = std::fs::read_to_string(&p).unwrap();
            let Ok(before) = crate::screen::inspect(&xml) else {
                continue;
            };
            let r = m.redact_dump(&xml);
            if r.kept_windows == 0 {
                // Another app in front: nothing of it is kept (the export leaves such
                // dumps out).
                assert!(!r.dropped_windows.is_empty(), "{}", p.display());
                continue;
            }
            let after =
                crate::screen::inspect(&r.xml).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            assert_eq!(after.kind(), before.kind(), "{}", p.display());
            // No phone number or order number left.
            static LEFT: OnceLock<Regex> = OnceLock::new();
            let left = re(&LEFT, r"1[3-9]\d[*＊]{4}\d{4}|\D1[3-9]\d{9}\D");
            for m in order_re().find_iter(&r.xml) {
                let tail = m.as_str().split_once('-').map_or("", |(_, t)| t);
                assert!(
                    Masker::is_order_mask(tail),
                    "{}: {}",
                    p.display(),
                    m.as_str()
                );
            }
            assert!(
                !left.is_match(&r.xml),
                "{}: {:?}",
                p.display(),
                left.find(&r.xml).map(|m| m.as_str())
            );
            if r.masked_values == 0 && r.dropped_windows.is_empty() {
                assert_eq!(r.xml, xml, "{}", p.display());
            }
            let again = Masker::new().redact_dump(&r.xml);
            assert_eq!(again.xml, r.xml, "{}", p.display());
            checked += 1;
        }
        assert!(checked > 20, "{checked}");
    }

    /// The real dumps (`../shared/pdd-real-dumps`, never in the repository; their absence
    /// is loud unless `CMAUTOBUY_NO_SHARED=1`, as in `tests/screens.rs`): redacted, they
    /// read exactly as before (`inspect --json`), and what changed is only the other
    /// packages' windows (MIUI's gesture bar, the status bar) dropped.
    #[test]
    fn the_real_dumps_read_the_same_after_redaction() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/pdd-real-dumps");
        if !dir.is_dir() {
            let msg = format!(
                "{} is missing: redaction of the real PDD dumps NOT CHECKED",
                dir.display()
            );
            eprintln!("\n!!! {msg}\n");
            if std::env::var("CMAUTOBUY_NO_SHARED").as_deref() == Ok("1") {
                return;
            }
            panic!("{msg}");
        }
        let mut checked = 0;
        for name in [
            "pdd_checkout_sheet_text_sku.xml",
            "pdd_checkout_sheet_image_sku.xml",
            "pdd_popup_abandon_payment.xml",
            "pdd_search_result_goods_cards.xml",
        ] {
            let xml = std::fs::read_to_string(dir.join(name)).unwrap();
            let r = Masker::new().redact_dump(&xml);
            // What the reading lists of other packages is what was dropped.
            let read = |x: &str| {
                let mut v = crate::screen::inspect_json(x);
                if let Some(o) = v.as_object_mut() {
                    o.remove("other_packages");
                }
                v
            };
            assert_eq!(read(&r.xml), read(&xml), "{name}");
            assert_eq!(r.masked_values, 0, "{name}: nothing personal in it");
            assert!(r.dropped_windows.iter().all(|p| p != PDD_PACKAGE), "{name}");
            if r.dropped_windows.is_empty() {
                assert_eq!(r.xml, xml, "{name}");
            } else {
                assert!(r.xml.len() < xml.len(), "{name}");
                assert!(
                    !r.xml.contains("com.miui.home") && !r.xml.contains("com.android.systemui"),
                    "{name}"
                );
            }
            checked += 1;
        }
        assert_eq!(checked, 4);
    }

    #[test]
    fn free_text_masks_phones_orders_receivers_and_addresses() {
        let mut m = Masker::new();
        let line = "2026-12-02T06:00:00Z INFO order 241130-012345678901234 for 13812345678 (138 1234 5678) 收货人：王小明 at 浙江省杭州市西湖区文三路90号 goods_id=13812345678 took 1500 ms";
        let out = m.mask_text(line);
        for gone in [
            "012345678901234",
            "(138 1234 5678)",
            "王小明",
            "西湖区文三路",
            "for 13812345678",
        ] {
            assert!(!out.contains(gone), "{gone}: {out}");
        }
        assert!(out.contains("goods_id=13812345678"), "{out}");
        assert!(
            out.contains("2026-12-02T06:00:00Z") && out.contains("1500 ms"),
            "{out}"
        );
        assert!(
            out.contains("(100 0000 0002)") || out.contains("100 0000 000"),
            "{out}"
        );
        assert_eq!(m.mask_text(&out), out);
    }
}
