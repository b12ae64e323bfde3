//! The accessibility tree the simulated app exposes and its uiautomator XML form.
//!
//! Screens build a tree of [`Node`]s in screen coordinates; [`Node::clip`] drops what a
//! scrolled container does not show and clips what it shows partly (as RecyclerViews do on a
//! real phone). [`to_xml`] writes the "pretty" dump shape of a current phone (one node per
//! line, `visible-to-user`, `drawing-order`, `hint`, `display-id`), [`to_xml_compact`] the
//! old one-line shape without them.

pub mod node;
pub mod xml;

pub use node::{Action, Node, Rect, Screen, PDD, RID_PDD};
pub use xml::{to_xml, to_xml_compact};
