//! [`Target`]: something to tap — the label the user would read and where to tap it.

use serde::Serialize;

use super::tree::{Bounds, NodeRef, Point};

/// Something to tap: the label the user would read and where to tap it (the centre of
/// the visible part of the label's nearest clickable ancestor).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Target {
    pub label: String,
    pub tap: Point,
    /// Bounds of the node that takes the tap.
    pub bounds: Bounds,
}

impl Target {
    /// The target for a label node; `None` when it is not on screen.
    pub fn of(node: NodeRef<'_>) -> Option<Target> {
        Target::with_label(node, node.label())
    }

    pub fn with_label(node: NodeRef<'_>, label: &str) -> Option<Target> {
        let clickable = node.nearest_clickable().unwrap_or(node);
        Some(Target {
            label: label.to_string(),
            tap: node.tap_point()?,
            bounds: clickable.bounds(),
        })
    }
}

/// The control that takes taps for a labelled node: its nearest clickable
/// ancestor-or-self, else the node.
pub fn control_of<'t>(node: NodeRef<'t>) -> NodeRef<'t> {
    node.nearest_clickable().unwrap_or(node)
}
