//! Screen geometry: [`Bounds`] (a node's rectangle as uiautomator prints it) and
//! [`Point`] (where to tap).

use std::fmt;

use serde::Serialize;

/// A rectangle in screen pixels, `[left,top][right,bottom]` as uiautomator prints it
/// (right/bottom exclusive).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Bounds {
    pub left: i32,
    pub top: i32,
    pub right: i32,
    pub bottom: i32,
}

impl Bounds {
    pub const fn new(left: i32, top: i32, right: i32, bottom: i32) -> Self {
        Bounds {
            left,
            top,
            right,
            bottom,
        }
    }

    pub fn width(&self) -> i32 {
        self.right.saturating_sub(self.left).max(0)
    }

    pub fn height(&self) -> i32 {
        self.bottom.saturating_sub(self.top).max(0)
    }

    pub fn is_empty(&self) -> bool {
        self.width() == 0 || self.height() == 0
    }

    pub fn area(&self) -> i64 {
        i64::from(self.width()) * i64::from(self.height())
    }

    pub fn center(&self) -> Point {
        Point {
            x: self.left + self.width() / 2,
            y: self.top + self.height() / 2,
        }
    }

    /// The overlap of two rectangles; empty (all zero) when they do not overlap.
    pub fn intersect(&self, other: &Bounds) -> Bounds {
        let b = Bounds {
            left: self.left.max(other.left),
            top: self.top.max(other.top),
            right: self.right.min(other.right),
            bottom: self.bottom.min(other.bottom),
        };
        if b.is_empty() {
            Bounds::default()
        } else {
            b
        }
    }

    pub fn union(&self, other: &Bounds) -> Bounds {
        if self.is_empty() {
            return *other;
        }
        if other.is_empty() {
            return *self;
        }
        Bounds {
            left: self.left.min(other.left),
            top: self.top.min(other.top),
            right: self.right.max(other.right),
            bottom: self.bottom.max(other.bottom),
        }
    }

    /// True when `other` lies entirely inside `self`.
    pub fn contains(&self, other: &Bounds) -> bool {
        other.left >= self.left
            && other.top >= self.top
            && other.right <= self.right
            && other.bottom <= self.bottom
    }

    pub fn contains_point(&self, p: Point) -> bool {
        p.x >= self.left && p.x < self.right && p.y >= self.top && p.y < self.bottom
    }

    /// Parses `"[x1,y1][x2,y2]"`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Bounds> {
        let s = s.trim();
        let rest = s.strip_prefix('[')?;
        let (a, rest) = rest.split_once("][")?;
        let b = rest.strip_suffix(']')?;
        let (l, t) = a.split_once(',')?;
        let (r, bo) = b.split_once(',')?;
        Some(Bounds {
            left: l.trim().parse().ok()?,
            top: t.trim().parse().ok()?,
            right: r.trim().parse().ok()?,
            bottom: bo.trim().parse().ok()?,
        })
    }
}

impl fmt::Display for Bounds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "[{},{}][{},{}]",
            self.left, self.top, self.right, self.bottom
        )
    }
}

/// A screen point to tap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub struct Point {
    pub x: i32,
    pub y: i32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_parse() {
        assert_eq!(
            Bounds::parse("[0,95][1080,2354]"),
            Some(Bounds::new(0, 95, 1080, 2354))
        );
        assert_eq!(
            Bounds::parse("[-300,979][0,1374]"),
            Some(Bounds::new(-300, 979, 0, 1374))
        );
        for bad in ["", "[0,0]", "[a,0][1,1]", "[0,0][1,1", "0,0,1,1"] {
            assert_eq!(Bounds::parse(bad), None, "{bad}");
        }
    }
}
