//! The accessibility tree: parsing a `uiautomator dump` into a compact arena, and the
//! query API the recognizers use. This file is the tree's public face; the parts live in
//!
//! - `geometry.rs` — [`Bounds`] and [`Point`];
//! - `arena.rs` — [`Tree`] and [`NodeRef`]: how nodes are stored, accessors, navigation,
//!   the kept and dropped [`Window`]s;
//! - `scanner.rs` — [`Tree::parse`]: the one-pass dump scanner (both dump shapes,
//!   uiautomator failure texts, malformed input);
//! - `query.rs` — [`Matcher`], [`Query`], [`Tree::select`] and [`Tree::find`].
//!
//! Every item keeps its path `screen::tree::…`; the parts depend only downwards
//! (geometry ← arena ← scanner, query), and the tests here use all of them together.

pub use super::arena::{DumpShape, NodeId, NodeRef, Tree, Window, WindowFilter, PDD_PACKAGE};
pub use super::geometry::{Bounds, Point};
pub use super::query::{Matcher, Query};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn children_and_descendants() {
        let xml = r#"<hierarchy rotation="0"><node index="0" package="com.xunmeng.pinduoduo" bounds="[0,0][100,100]"><node index="0" text="a" bounds="[0,0][10,10]"><node index="0" text="a1" bounds="[0,0][5,5]"/></node><node index="1" text="b" bounds="[10,0][20,10]"/></node><node package="com.android.systemui" bounds="[0,0][100,5]"><node text="12:00"/></node></hierarchy>"#;
        let t = Tree::parse(xml).unwrap();
        assert_eq!(t.len(), 4);
        let root = t.roots().next().unwrap();
        let kids: Vec<_> = root.children().map(|n| n.text()).collect();
        assert_eq!(kids, ["a", "b"]);
        let all: Vec<_> = root.descendants().map(|n| n.text()).collect();
        assert_eq!(all, ["a", "a1", "b"]);
        assert_eq!(
            t.dropped_packages().collect::<Vec<_>>(),
            ["com.android.systemui"]
        );
        assert_eq!(t.screen(), Bounds::new(0, 0, 100, 100));
        let a1 = t.find(&Query::new().text(Matcher::Exact("a1"))).unwrap();
        assert_eq!(a1.depth(), 2);
        assert_eq!(a1.ancestors().count(), 2);
        assert_eq!(t.shape(), DumpShape::Compact);
    }
}
