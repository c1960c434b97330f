//! Merging neighbouring boxes.
//!
//! Berger–Rigoutsos often cuts a cluster more finely than needed. Two boxes
//! are merged into their bounding box when that box (a) reaches the combine
//! efficiency, (b) has no side over the maximum, (c) lies in the nesting
//! region and (d) overlaps no other box. Because of (d), the bounding box
//! holds exactly the tags of the two, so its efficiency is
//! `(tags_a + tags_b) / cells`. The best pair (highest efficiency, then
//! lowest indices) is merged first, repeatedly, until no pair qualifies.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use crate::index::{IndexBox, IntVect, iv};

use super::nesting::Nesting;

/// A merge candidate: the pair, their bounding box and its tag count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pair {
    i: usize,
    j: usize,
    bbox: IndexBox,
    tags: u64,
}

impl Ord for Pair {
    /// Higher efficiency first (exact comparison), then lower indices.
    fn cmp(&self, other: &Self) -> Ordering {
        let a = self.tags as u128 * other.bbox.num_cells() as u128;
        let b = other.tags as u128 * self.bbox.num_cells() as u128;
        a.cmp(&b)
            .then_with(|| (other.i, other.j).cmp(&(self.i, self.j)))
    }
}

impl PartialOrd for Pair {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Boxes binned on a uniform grid (bins at least `max` wide, so a box
/// touches at most two bins per axis).
struct Merger<'a> {
    live: Vec<Option<(IndexBox, u64)>>,
    origin: IntVect,
    bin: i32,
    dims: IntVect,
    bins: Vec<Vec<usize>>,
    nesting: &'a Nesting,
    max: i32,
    combine: f64,
}

impl<'a> Merger<'a> {
    fn new(boxes: Vec<(IndexBox, u64)>, nesting: &'a Nesting, max: i32, combine: f64) -> Self {
        let ext = boxes
            .iter()
            .fold(IndexBox::empty(), |a, (b, _)| a.bounding(b));
        let size = ext.size();
        // Enough bins to spread the boxes, never so many that memory grows
        // with the domain rather than with the boxes.
        let cap = 8 * boxes.len() as i64 + 64;
        let mut bin = max.max(1);
        let dims = loop {
            let d = size.map(|s| (s + bin - 1) / bin).sup(&iv(1, 1, 1));
            if d.x as i64 * d.y as i64 * d.z as i64 <= cap {
                break d;
            }
            bin *= 2;
        };
        let n = boxes.len();
        let mut m = Self {
            live: boxes.into_iter().map(Some).collect(),
            origin: ext.lo,
            bin,
            dims,
            bins: vec![Vec::new(); (dims.x * dims.y * dims.z) as usize],
            nesting,
            max,
            combine,
        };
        for k in 0..n {
            m.insert(k);
        }
        m
    }

    /// The bins `b` touches, clamped to the grid (`None` if outside it).
    fn bin_range(&self, b: &IndexBox) -> Option<IndexBox> {
        let g = IndexBox::new(
            (b.lo - self.origin).map(|c| c.div_euclid(self.bin)),
            (b.hi - self.origin).map(|c| c.div_euclid(self.bin)),
        )
        .intersect(&IndexBox::new(iv(0, 0, 0), self.dims - iv(1, 1, 1)));
        (!g.is_empty()).then_some(g)
    }

    fn bin_index(&self, key: &IntVect) -> usize {
        (key.x + self.dims.x * (key.y + self.dims.y * key.z)) as usize
    }

    fn insert(&mut self, k: usize) {
        let Some((b, _)) = self.live[k] else { return };
        if let Some(r) = self.bin_range(&b) {
            for key in r.iter() {
                let i = self.bin_index(&key);
                self.bins[i].push(k);
            }
        }
    }

    fn remove(&mut self, k: usize) {
        if let Some((b, _)) = self.live[k].take()
            && let Some(r) = self.bin_range(&b)
        {
            for key in r.iter() {
                let i = self.bin_index(&key);
                self.bins[i].retain(|&x| x != k);
            }
        }
    }

    /// Live boxes meeting `b`, each once, ascending (no state of the
    /// merger changes: queries run side by side).
    fn near(&self, b: &IndexBox, out: &mut Vec<usize>) {
        out.clear();
        let Some(r) = self.bin_range(b) else { return };
        for key in r.iter() {
            for &k in &self.bins[self.bin_index(&key)] {
                if self.live[k].is_some_and(|(o, _)| o.intersects(b)) {
                    out.push(k);
                }
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// The pair of boxes `i` and `j` if they may merge now.
    fn pair(&self, i: usize, j: usize, scratch: &mut Vec<usize>) -> Option<Pair> {
        let ((a, ta), (b, tb)) = (self.live[i]?, self.live[j]?);
        let bbox = a.bounding(&b);
        let size = bbox.size();
        if (0..3).any(|d| size[d] > self.max) {
            return None;
        }
        let cells = bbox.num_cells();
        let tags = ta + tb;
        if (tags as f64) < self.combine * cells as f64 {
            return None;
        }
        if cells > a.num_cells() + b.num_cells() {
            self.near(&bbox, scratch);
            if scratch.iter().any(|&k| k != i && k != j) || !self.nesting.contains_box(&bbox) {
                return None;
            }
        }
        Some(Pair {
            i: i.min(j),
            j: i.max(j),
            bbox,
            tags,
        })
    }

    /// Boxes that may pair with `k` within `reach` cells per axis.
    fn partners(&self, k: usize, reach: IntVect, out: &mut Vec<usize>) {
        out.clear();
        if let Some((b, _)) = self.live[k] {
            self.near(&b.grow_vect(&reach), out);
            out.retain(|&o| o != k);
        }
    }
}

/// How far apart (cells per axis) a box of sides `s` and a box no larger
/// than it can be and still merge: with `t <= cells`, the bounding box's
/// efficiency `(t_a + t_b) / cells <= 2 |a| / (|a| (1 + gap / s))` reaches
/// `combine` only if `gap <= s (2 / combine - 1)`.
fn reach(s: IntVect, combine: f64, max: i32) -> IntVect {
    s.map(|s| ((s as f64 * (2.0 / combine - 1.0)).ceil() as i32).min(max))
}

/// Merges boxes as described in the module docs; returns the boxes with
/// their tag counts.
pub(crate) fn merge(
    boxes: Vec<(IndexBox, u64)>,
    nesting: &Nesting,
    max: i32,
    combine: f64,
) -> Vec<(IndexBox, u64)> {
    let mut m = Merger::new(boxes, nesting, max, combine);
    let (mut near, mut scratch) = (Vec::new(), Vec::new());
    // Each mergeable pair is found from its larger box (ties: higher
    // index), every box's pairs side by side: thousands of boxes yield a
    // few dozen pairs. The heap's order is total, so the order of the
    // search does not matter.
    let key = |m: &Merger<'_>, k: usize| m.live[k].map(|(b, _)| (b.num_cells(), k));
    let shared = &m;
    let pairs: Vec<Pair> = (0..m.live.len())
        .into_par_iter()
        .with_min_len(64)
        .map_init(
            || (Vec::new(), Vec::new()),
            |(near, scratch), i| {
                let mut found = Vec::new();
                let Some((b, _)) = shared.live[i] else {
                    return found;
                };
                shared.partners(i, reach(b.size(), combine, max), near);
                for &j in near.iter() {
                    if key(shared, j) < key(shared, i) {
                        found.extend(shared.pair(i, j, scratch));
                    }
                }
                found
            },
        )
        .flatten()
        .collect();
    let mut heap = BinaryHeap::from(pairs);
    // Pairs only lose validity as boxes merge (a merged box may block a
    // bounding box), so stale entries are skipped when they come up.
    let far = reach(iv(max, max, max), combine, max);
    while let Some(best) = heap.pop() {
        if m.live[best.i].is_none() || m.live[best.j].is_none() {
            continue;
        }
        if m.pair(best.i, best.j, &mut scratch) != Some(best) {
            continue;
        }
        m.remove(best.i);
        m.remove(best.j);
        let k = m.live.len();
        m.live.push(Some((best.bbox, best.tags)));
        m.insert(k);
        m.partners(k, far, &mut near);
        for &o in &near {
            heap.extend(m.pair(o, k, &mut scratch));
        }
    }
    m.live.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::iv;

    /// The plain greedy definition: merge the best valid pair over all pairs.
    fn reference(
        boxes: Vec<(IndexBox, u64)>,
        nesting: &Nesting,
        max: i32,
        combine: f64,
    ) -> Vec<(IndexBox, u64)> {
        let mut live: Vec<Option<(IndexBox, u64)>> = boxes.into_iter().map(Some).collect();
        loop {
            let mut best: Option<Pair> = None;
            for i in 0..live.len() {
                for j in i + 1..live.len() {
                    let (Some((a, ta)), Some((b, tb))) = (live[i], live[j]) else {
                        continue;
                    };
                    let bbox = a.bounding(&b);
                    let ok = (0..3).all(|d| bbox.size()[d] <= max)
                        && (ta + tb) as f64 >= combine * bbox.num_cells() as f64
                        && nesting.contains_box(&bbox)
                        && live.iter().enumerate().all(|(k, o)| {
                            k == i || k == j || o.is_none_or(|(ob, _)| !ob.intersects(&bbox))
                        });
                    let p = Pair {
                        i,
                        j,
                        bbox,
                        tags: ta + tb,
                    };
                    if ok && best.is_none_or(|b| p > b) {
                        best = Some(p);
                    }
                }
            }
            let Some(b) = best else { break };
            live[b.i] = None;
            live[b.j] = None;
            live.push(Some((b.bbox, b.tags)));
        }
        live.into_iter().flatten().collect()
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        #[test]
        fn matches_the_plain_greedy_merge(
            cells in proptest::collection::vec((0usize..64, proptest::array::uniform3(1i32..8), 0.3f64..1.0), 1..30),
            max in 6i32..30,
            combine in 0.4f64..0.95,
        ) {
            // Disjoint boxes: each in its own 8-cell block of a 4x4x4 lattice.
            let mut seen = std::collections::BTreeSet::new();
            let mut boxes = Vec::new();
            for (slot, s, fill) in cells {
                if !seen.insert(slot) {
                    continue;
                }
                let lo = iv((slot % 4) as i32 * 8, (slot / 4 % 4) as i32 * 8, (slot / 16) as i32 * 8);
                let b = IndexBox::from_lo_size(lo, iv(s[0], s[1], s[2]));
                let tags = ((b.num_cells() as f64 * fill).ceil() as u64).max(1);
                boxes.push((b, tags));
            }
            let n = Nesting::whole_domain(IndexBox::new(iv(0, 0, 0), iv(31, 31, 31))).unwrap();
            let mut got = merge(boxes.clone(), &n, max, combine);
            let mut want = reference(boxes, &n, max, combine);
            got.sort_by_key(|(b, _)| (b.lo.z, b.lo.y, b.lo.x));
            want.sort_by_key(|(b, _)| (b.lo.z, b.lo.y, b.lo.x));
            proptest::prop_assert_eq!(got, want);
        }
    }

    #[test]
    fn merges_only_efficient_unblocked_pairs() {
        let domain = IndexBox::new(iv(0, 0, 0), iv(63, 63, 63));
        let n = Nesting::whole_domain(domain).unwrap();
        let a = IndexBox::new(iv(0, 0, 0), iv(3, 3, 3));
        let b = IndexBox::new(iv(4, 0, 0), iv(7, 3, 3));
        let far = IndexBox::new(iv(20, 0, 0), iv(23, 3, 3));
        let out = merge(vec![(a, 64), (b, 40), (far, 64)], &n, 30, 0.8);
        // a+b: 104 of 128 cells = 0.81 >= 0.8; far is too far (efficiency).
        assert_eq!(out.len(), 2);
        assert!(out.contains(&(a.bounding(&b), 104)));
        // Too large for max 6.
        assert_eq!(merge(vec![(a, 64), (b, 64)], &n, 6, 0.5).len(), 2);
        // Blocked: an L-shaped pair whose bounding box overlaps a third box.
        let c = IndexBox::new(iv(0, 4, 0), iv(3, 7, 3));
        let d = IndexBox::new(iv(4, 4, 0), iv(7, 7, 3));
        let out = merge(vec![(b, 64), (c, 64), (d, 1)], &n, 30, 0.6);
        assert!(out.iter().all(|(x, _)| *x != b.bounding(&c)));
        assert_eq!(out.iter().map(|(_, t)| t).sum::<u64>(), 129);
    }
}
