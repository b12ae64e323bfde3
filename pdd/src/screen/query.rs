//! Searching a [`Tree`]: [`Matcher`] (how one string attribute is compared), [`Query`] (a
//! conjunction of conditions on a node), and [`Tree::select`] / [`Tree::find`].

use regex::Regex;

use super::arena::{NodeId, NodeRef, Tree};
use super::geometry::Bounds;

impl Tree {
    /// Nodes matching `query`, in document order.
    pub fn select<'t: 'a, 'a>(
        &'t self,
        query: &'a Query<'a>,
    ) -> impl Iterator<Item = NodeRef<'t>> + 'a {
        let range = match query.under {
            Some(root) => (root.0 + 1)..self.nodes[root.index()].end,
            None => 0..self.nodes.len() as u32,
        };
        range
            .map(move |id| NodeRef { tree: self, id })
            .filter(move |n| query.matches(n))
    }

    /// The first node matching `query` in document order.
    pub fn find<'t>(&'t self, query: &Query<'_>) -> Option<NodeRef<'t>> {
        self.nodes().find(|n| {
            query.matches(n)
                && query
                    .under
                    .is_none_or(|u| self.get(u).contains(n) && u != n.id())
        })
    }
}

/// How a string attribute is matched. Exact and contains compare against the trimmed
/// value (the app pads some names with spaces); regexes see the raw value.
#[derive(Clone, Copy, Debug)]
pub enum Matcher<'q> {
    Exact(&'q str),
    Contains(&'q str),
    Regex(&'q Regex),
}

impl Matcher<'_> {
    pub fn matches(&self, value: &str) -> bool {
        match self {
            Matcher::Exact(s) => value.trim() == *s,
            Matcher::Contains(s) => value.contains(s),
            Matcher::Regex(r) => r.is_match(value),
        }
    }
}

/// A conjunction of conditions on a node; unset conditions match everything.
///
/// ```
/// use cmautobuy_pdd::screen::{Matcher, Query, Tree};
/// # let tree = Tree::parse(r#"<hierarchy><node text="提交订单 ¥88" package="com.xunmeng.pinduoduo" bounds="[0,0][10,10]"/></hierarchy>"#).unwrap();
/// let submit = tree.find(&Query::new().text(Matcher::Contains("提交订单")).visible());
/// assert!(submit.is_some());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Query<'q> {
    text: Option<Matcher<'q>>,
    desc: Option<Matcher<'q>>,
    label: Option<Matcher<'q>>,
    id: Option<&'q str>,
    class: Option<&'q str>,
    clickable: Option<bool>,
    within: Option<Bounds>,
    visible: bool,
    under: Option<NodeId>,
}

impl<'q> Query<'q> {
    pub fn new() -> Self {
        Query::default()
    }
    /// The `text` attribute matches.
    pub fn text(mut self, m: Matcher<'q>) -> Self {
        self.text = Some(m);
        self
    }
    /// The `content-desc` attribute matches.
    pub fn desc(mut self, m: Matcher<'q>) -> Self {
        self.desc = Some(m);
        self
    }
    /// The text or the content-desc matches.
    pub fn label(mut self, m: Matcher<'q>) -> Self {
        self.label = Some(m);
        self
    }
    /// The resource id equals `id`, or its part after `:id/` does.
    pub fn id(mut self, id: &'q str) -> Self {
        self.id = Some(id);
        self
    }
    /// The class equals `class`, or its short name does ("TextView").
    pub fn class(mut self, class: &'q str) -> Self {
        self.class = Some(class);
        self
    }
    pub fn clickable(mut self, yes: bool) -> Self {
        self.clickable = Some(yes);
        self
    }
    /// The node's bounds lie inside `b`.
    pub fn within(mut self, b: Bounds) -> Self {
        self.within = Some(b);
        self
    }
    /// The node is on screen ([`NodeRef::is_visible`]).
    pub fn visible(mut self) -> Self {
        self.visible = true;
        self
    }
    /// Only the descendants of `root`.
    pub fn under(mut self, root: NodeId) -> Self {
        self.under = Some(root);
        self
    }

    pub fn matches(&self, n: &NodeRef<'_>) -> bool {
        if let Some(m) = &self.text {
            if !m.matches(n.text()) {
                return false;
            }
        }
        if let Some(m) = &self.desc {
            if !m.matches(n.desc()) {
                return false;
            }
        }
        if let Some(m) = &self.label {
            if !m.matches(n.text()) && !m.matches(n.desc()) {
                return false;
            }
        }
        if let Some(id) = self.id {
            if n.resource_id() != id && n.id_name() != id {
                return false;
            }
        }
        if let Some(c) = self.class {
            if n.class() != c && n.class_name() != c {
                return false;
            }
        }
        if let Some(c) = self.clickable {
            if n.is_clickable() != c {
                return false;
            }
        }
        if let Some(b) = &self.within {
            if !b.contains(&n.bounds()) {
                return false;
            }
        }
        if self.visible && !n.is_visible() {
            return false;
        }
        true
    }
}
