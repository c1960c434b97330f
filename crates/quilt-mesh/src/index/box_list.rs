//! Lists of disjoint boxes and box difference.
//!
//! The difference is what ghost fill needs: the part of a patch's ghost
//! region that no sibling covers must come from the coarse parent or a
//! physical boundary.

use smallvec::SmallVec;

use super::index_box::IndexBox;

/// `a` minus `b` as at most six disjoint boxes (slabs peeled off `a` along
/// z, then y, then x). Empty parts are left out.
pub fn box_difference(a: &IndexBox, b: &IndexBox) -> SmallVec<[IndexBox; 6]> {
    let mut out = SmallVec::new();
    let cut = a.intersect(b);
    if cut.is_empty() {
        if !a.is_empty() {
            out.push(*a);
        }
        return out;
    }
    let mut rest = *a;
    for d in (0..3).rev() {
        if rest.lo[d] < cut.lo[d] {
            let (below, above) = rest.chop(d, cut.lo[d]);
            out.push(below);
            rest = above;
        }
        if rest.hi[d] > cut.hi[d] {
            let (below, above) = rest.chop(d, cut.hi[d] + 1);
            out.push(above);
            rest = below;
        }
    }
    debug_assert_eq!(rest, cut);
    out
}

/// A list of pairwise disjoint boxes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BoxList {
    boxes: Vec<IndexBox>,
}

impl BoxList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// A list holding one box (nothing if it is empty).
    pub fn from_box(b: IndexBox) -> Self {
        let mut l = Self::new();
        if !b.is_empty() {
            l.boxes.push(b);
        }
        l
    }

    /// The boxes.
    pub fn boxes(&self) -> &[IndexBox] {
        &self.boxes
    }

    /// Consume the list into its boxes.
    pub fn into_boxes(self) -> Vec<IndexBox> {
        self.boxes
    }

    /// Whether no cell is covered.
    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }

    /// Total number of cells covered.
    pub fn num_cells(&self) -> i64 {
        self.boxes.iter().map(IndexBox::num_cells).sum()
    }

    /// Remove the cells of `b` from every box of the list.
    pub fn subtract(&mut self, b: &IndexBox) {
        if b.is_empty() {
            return;
        }
        let mut next = Vec::with_capacity(self.boxes.len());
        for a in &self.boxes {
            if a.intersects(b) {
                next.extend(box_difference(a, b));
            } else {
                next.push(*a);
            }
        }
        self.boxes = next;
    }

    /// Remove the cells of every box in `others`.
    pub fn subtract_all<'a>(&mut self, others: impl IntoIterator<Item = &'a IndexBox>) {
        for b in others {
            self.subtract(b);
            if self.boxes.is_empty() {
                break;
            }
        }
    }

    /// Keep only the cells inside `b`.
    pub fn intersect(&mut self, b: &IndexBox) {
        self.boxes = self
            .boxes
            .iter()
            .map(|a| a.intersect(b))
            .filter(|c| !c.is_empty())
            .collect();
    }

    /// Add a box that is disjoint from every box already in the list.
    pub fn push_disjoint(&mut self, b: IndexBox) {
        debug_assert!(self.boxes.iter().all(|a| !a.intersects(&b)));
        if !b.is_empty() {
            self.boxes.push(b);
        }
    }

    /// Whether cell `p` is covered.
    pub fn contains(&self, p: &super::IntVect) -> bool {
        self.boxes.iter().any(|b| b.contains(p))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::iv;
    use proptest::prelude::*;

    fn arb_box() -> impl Strategy<Value = IndexBox> {
        (
            prop::array::uniform3(-10i32..10),
            prop::array::uniform3(1i32..9),
        )
            .prop_map(|(lo, s)| {
                IndexBox::from_lo_size(iv(lo[0], lo[1], lo[2]), iv(s[0], s[1], s[2]))
            })
    }

    proptest! {
        #[test]
        fn difference_is_exact_and_disjoint(a in arb_box(), b in arb_box()) {
            let parts = box_difference(&a, &b);
            let total: i64 = parts.iter().map(IndexBox::num_cells).sum();
            prop_assert_eq!(total, a.num_cells() - a.intersect(&b).num_cells());
            for (i, p) in parts.iter().enumerate() {
                prop_assert!(a.contains_box(p));
                prop_assert!(!p.intersects(&b));
                for q in &parts[i + 1..] {
                    prop_assert!(!p.intersects(q));
                }
            }
        }

        #[test]
        fn list_subtract_matches_pointwise(a in arb_box(), bs in prop::collection::vec(arb_box(), 0..5)) {
            let mut l = BoxList::from_box(a);
            l.subtract_all(bs.iter());
            for p in a.grow(1).iter() {
                let expect = a.contains(&p) && !bs.iter().any(|b| b.contains(&p));
                prop_assert_eq!(l.contains(&p), expect);
            }
        }
    }
}
