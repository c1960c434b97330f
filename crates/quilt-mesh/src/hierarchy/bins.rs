//! A uniform-bin spatial index over the boxes of one level.
//!
//! Overlap queries (validation, sibling copy tags, the synthetic
//! generator's rejection test) would be quadratic in the number of patches
//! if done pairwise; with bins at least as large as the largest box, each
//! box touches at most 8 bins and a query looks at a handful of candidates.

use rustc_hash::FxHashMap;

use crate::index::{IndexBox, coarsen_vect};

/// Boxes of one level, bucketed by a uniform grid of `bin`-cell cubes.
#[derive(Debug, Clone)]
pub struct BoxBins {
    bin: i32,
    /// Entries by bin. The keys are looked up for every box of every
    /// query: a hash of three integers, not a keyed one.
    bins: FxHashMap<[i32; 3], Vec<usize>>,
    boxes: Vec<IndexBox>,
}

impl BoxBins {
    /// An empty index with bins of `bin` cells per side (at least 1).
    /// Choose `bin` near the largest box extent.
    pub fn new(bin: i32) -> Self {
        Self {
            bin: bin.max(1),
            bins: FxHashMap::default(),
            boxes: Vec::new(),
        }
    }

    /// An index over `boxes` (entry `i` is `boxes[i]`), with the bin size
    /// set to the largest extent among them.
    pub fn from_boxes(boxes: &[IndexBox]) -> Self {
        let bin = boxes.iter().map(|b| b.size().max()).max().unwrap_or(1);
        let mut s = Self::new(bin);
        for b in boxes {
            s.push(*b);
        }
        s
    }

    /// Adds a box; it gets the next entry number (returned).
    pub fn push(&mut self, b: IndexBox) -> usize {
        let n = self.boxes.len();
        self.boxes.push(b);
        if !b.is_empty() {
            let r = b.coarsen(self.bin);
            for k in r.lo.z..=r.hi.z {
                for j in r.lo.y..=r.hi.y {
                    for i in r.lo.x..=r.hi.x {
                        self.bins.entry([i, j, k]).or_default().push(n);
                    }
                }
            }
        }
        n
    }

    /// Number of boxes.
    pub fn len(&self) -> usize {
        self.boxes.len()
    }

    /// Whether no box was added.
    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }

    /// The boxes, by entry number.
    pub fn boxes(&self) -> &[IndexBox] {
        &self.boxes
    }

    /// Entries whose boxes intersect `q`, ascending, appended to `out`
    /// (which is cleared first).
    pub fn query_into(&self, q: &IndexBox, out: &mut Vec<usize>) {
        out.clear();
        if q.is_empty() {
            return;
        }
        let lo = coarsen_vect(&q.lo, self.bin);
        let hi = coarsen_vect(&q.hi, self.bin);
        let nbins = (hi - lo).map(|v| v as i64 + 1);
        if nbins.x * nbins.y * nbins.z > self.bins.len() as i64 {
            // A query wider than the occupied bins: scan the bins instead.
            for v in self.bins.values() {
                out.extend(v.iter().copied().filter(|&n| self.boxes[n].intersects(q)));
            }
        } else {
            for k in lo.z..=hi.z {
                for j in lo.y..=hi.y {
                    for i in lo.x..=hi.x {
                        if let Some(v) = self.bins.get(&[i, j, k]) {
                            out.extend(v.iter().copied().filter(|&n| self.boxes[n].intersects(q)));
                        }
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Entries whose boxes intersect `q`, ascending.
    pub fn query(&self, q: &IndexBox) -> Vec<usize> {
        let mut out = Vec::new();
        self.query_into(q, &mut out);
        out
    }

    /// Whether any box intersects `q`.
    pub fn any_intersects(&self, q: &IndexBox) -> bool {
        if q.is_empty() {
            return false;
        }
        let lo = coarsen_vect(&q.lo, self.bin);
        let hi = coarsen_vect(&q.hi, self.bin);
        for k in lo.z..=hi.z {
            for j in lo.y..=hi.y {
                for i in lo.x..=hi.x {
                    let hit = self
                        .bins
                        .get(&[i, j, k])
                        .is_some_and(|v| v.iter().any(|&n| self.boxes[n].intersects(q)));
                    if hit {
                        return true;
                    }
                }
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::iv;
    use proptest::prelude::*;

    fn arb_box() -> impl Strategy<Value = IndexBox> {
        (
            prop::array::uniform3(-50i32..50),
            prop::array::uniform3(1i32..30),
        )
            .prop_map(|(lo, s)| {
                IndexBox::from_lo_size(iv(lo[0], lo[1], lo[2]), iv(s[0], s[1], s[2]))
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn query_matches_brute_force(
            boxes in prop::collection::vec(arb_box(), 0..40),
            q in arb_box(),
            bin in 1i32..40,
        ) {
            let mut bins = BoxBins::new(bin);
            for b in &boxes {
                bins.push(*b);
            }
            let expect: Vec<usize> =
                (0..boxes.len()).filter(|&n| boxes[n].intersects(&q)).collect();
            prop_assert_eq!(bins.query(&q), expect.clone());
            prop_assert_eq!(bins.any_intersects(&q), !expect.is_empty());
            prop_assert_eq!(BoxBins::from_boxes(&boxes).query(&q), expect);
        }
    }
}
