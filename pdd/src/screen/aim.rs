//! The node a tap aimed at (the manifest records it so a replay can match the
//! tap by its label rather than by its pixels).
//!
//! The chosen node is a labelled one (non-empty text or content-desc) that contains the
//! point, or whose nearest clickable ancestor does (a label sits inside its button and
//! the tap goes to the button's centre): first one whose text or desc equals or starts
//! with the tap's label, then the deepest containing the point, then the deepest whose
//! button contains it. Without a labelled node, the deepest node containing the point
//! (its label fields empty). `None` when no node contains the point.

use super::tree::{NodeRef, Point, Tree};

/// How a labelled node reaches the point.
fn reach(n: &NodeRef<'_>, at: Point) -> Option<u8> {
    if n.bounds().contains_point(at) {
        Some(0)
    } else if n
        .nearest_clickable()
        .is_some_and(|c| c.bounds().contains_point(at))
    {
        Some(1)
    } else {
        None
    }
}

fn labelled(n: &NodeRef<'_>) -> bool {
    !n.text().trim().is_empty() || !n.desc().trim().is_empty()
}

fn names_label(n: &NodeRef<'_>, label: &str) -> bool {
    let label = label.trim();
    !label.is_empty()
        && [n.text().trim(), n.desc().trim()]
            .iter()
            .any(|v| !v.is_empty() && (*v == label || v.starts_with(label)))
}

/// The node of `tree` a tap at `at` labelled `label` aimed at (see the module).
pub fn aimed_node<'t>(tree: &'t Tree, at: Point, label: &str) -> Option<NodeRef<'t>> {
    // Rank: (names the label first, contains the point itself first, deepest, last in
    // document order — drawn on top).
    let best = tree
        .nodes()
        .filter(|n| n.has_bounds() && labelled(n))
        .filter_map(|n| {
            let r = reach(&n, at)?;
            Some(((names_label(&n, label), r == 0, n.depth()), n))
        })
        .max_by(|(a, _), (b, _)| a.cmp(b))
        .map(|(_, n)| n);
    best.or_else(|| {
        tree.nodes()
            .filter(|n| n.has_bounds() && n.bounds().contains_point(at))
            .max_by_key(|n| n.depth())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const XML: &str = r#"<hierarchy rotation="0"><node package="com.xunmeng.pinduoduo" bounds="[0,0][1080,2400]"><node text="" class="android.widget.FrameLayout" clickable="true" bounds="[0,1000][540,1100]"><node text="黑色" class="android.widget.TextView" bounds="[200,1030][340,1070]"/></node><node text="" clickable="true" resource-id="com.xunmeng.pinduoduo:id/row" bounds="[0,1200][1080,1300]"><node text="收货地址" bounds="[20,1220][200,1280]"/></node><node content-desc="返回" clickable="true" bounds="[0,100][100,200]"/><node bounds="[0,2000][1080,2100]"><node resource-id="com.xunmeng.pinduoduo:id/blank" bounds="[0,2000][500,2100]"/></node></node></hierarchy>"#;

    fn aim(x: i32, y: i32, label: &str) -> Option<(String, String, String)> {
        let t = Tree::parse(XML).unwrap();
        aimed_node(&t, Point { x, y }, label).map(|n| {
            (
                n.text().to_string(),
                n.desc().to_string(),
                n.resource_id().to_string(),
            )
        })
    }

    #[test]
    fn the_label_inside_the_button_is_the_target() {
        // At the label itself.
        assert_eq!(aim(270, 1050, "黑色").unwrap().0, "黑色");
        // At the button's edge, outside the label: still the label of that button.
        assert_eq!(aim(20, 1010, "黑色").unwrap().0, "黑色");
        // A row's centre, far from its label.
        assert_eq!(aim(540, 1250, "address row").unwrap().0, "收货地址");
        assert_eq!(aim(50, 150, "返回").unwrap().1, "返回");
    }

    #[test]
    fn no_label_gives_the_deepest_node_and_nothing_gives_none() {
        let (text, desc, id) = aim(100, 2050, "x").unwrap();
        assert_eq!((text.as_str(), desc.as_str()), ("", ""));
        assert_eq!(id, "com.xunmeng.pinduoduo:id/blank");
        assert!(aim(2000, 3000, "x").is_none());
    }
}
