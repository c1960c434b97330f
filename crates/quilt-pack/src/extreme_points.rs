//! One bin's state: placed boxes, extreme points and their residual spaces
//! (Crainic, Perboli & Tadei 2008, section 3, `Update3DEPL` and
//! `UpdateResidualSpace`).
//!
//! After a box `[p, p + e)` is placed, each of its three corners
//! `p + e_a·ê_a` is projected along each of the two other axes onto the
//! nearest placed box or bin wall behind it, giving up to six new extreme
//! points. The residual space of a point along an axis is the free run from
//! the point to the first box whose cross-section contains the point's line,
//! or to the wall. It bounds from above the side an item placed there may
//! have on that axis, so it doubles as a cheap feasibility filter before the
//! exact overlap test.

use crate::Extent;
use crate::geometry::{PlacedBox, other_axes, volume};

/// A candidate corner for the next item, with its residual space.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExtremePoint {
    pub pos: [u32; 3],
    /// Free cells from `pos` along +x, +y, +z.
    pub rs: [u32; 3],
}

impl ExtremePoint {
    /// The ordering key of points in a bin: lowest first (`y`), then nearest
    /// (`z`), then leftmost (`x`). EP-FFD takes the first feasible point in
    /// this order, EP-BFD breaks merit ties with it.
    #[inline]
    fn key(pos: [u32; 3]) -> (u32, u32, u32) {
        (pos[1], pos[2], pos[0])
    }

    /// Whether an item of extent `e` passes the residual-space filter.
    #[inline]
    pub fn admits(&self, e: Extent) -> bool {
        self.rs[0] >= e[0] && self.rs[1] >= e[1] && self.rs[2] >= e[2]
    }
}

/// The state of one open bin. Storage is reused across packings (see
/// [`crate::PackWorkspace`]), so resetting keeps capacity.
#[derive(Debug, Clone, Default)]
pub(crate) struct BinState {
    pub boxes: Vec<PlacedBox>,
    /// Extreme points, unique and sorted by [`ExtremePoint::key`].
    pub eps: Vec<ExtremePoint>,
    pub free_volume: u64,
}

impl BinState {
    /// Empties the bin: one extreme point at the origin whose residual space
    /// is the whole bin.
    pub fn reset(&mut self, bin: Extent) {
        self.boxes.clear();
        self.eps.clear();
        self.eps.push(ExtremePoint {
            pos: [0; 3],
            rs: bin,
        });
        self.free_volume = volume(bin);
    }

    /// Whether `[pos, pos + e)` is free of placed boxes. The bin walls are
    /// not checked: callers only ask at points whose residual space admits
    /// `e`, which keeps the box inside the bin.
    #[inline]
    pub fn is_free(&self, pos: [u32; 3], e: Extent) -> bool {
        let hi = [pos[0] + e[0], pos[1] + e[1], pos[2] + e[2]];
        !self.boxes.iter().any(|b| b.overlaps(pos, hi))
    }

    /// Places `[pos, pos + e)` and updates the extreme points and residual
    /// spaces. The caller guarantees the box lies in the bin and overlaps
    /// nothing.
    pub fn place(&mut self, pos: [u32; 3], e: Extent, bin: Extent) {
        debug_assert!(self.is_free(pos, e), "placement overlaps a placed box");
        debug_assert!(
            (0..3).all(|a| pos[a] + e[a] <= bin[a]),
            "placement leaves the bin"
        );
        let new = PlacedBox::new(pos, e);

        // Up to six projections of the three far corners, computed against
        // the boxes placed so far in one pass (the new box never lies behind
        // its own corners, so it need not take part).
        let mut corners = [[0u32; 3]; 6];
        let mut dirs = [0usize; 6];
        let mut n = 0;
        for a in 0..3 {
            let mut corner = pos;
            corner[a] = new.hi[a];
            if corner[a] >= bin[a] {
                // On the wall: a point there has no room along `a`.
                continue;
            }
            let (b, c) = other_axes(a);
            for dir in [b, c] {
                corners[n] = corner;
                dirs[n] = dir;
                n += 1;
            }
        }
        let mut reach = [0u32; 6];
        for b in &self.boxes {
            for k in 0..n {
                let (p, dir) = (corners[k], dirs[k]);
                if b.hi[dir] <= p[dir] && b.spans_line(p, dir) {
                    reach[k] = reach[k].max(b.hi[dir]);
                }
            }
        }

        self.boxes.push(new);
        self.free_volume -= volume(e);

        // Points the box covers are gone; the others may lose residual space.
        self.eps.retain(|ep| !new.contains(ep.pos));
        for ep in &mut self.eps {
            shrink_residual(ep, &new);
        }

        // Residual spaces of the candidates, again in one pass; a candidate
        // inside a box (a corner may touch a box placed beside it) can host
        // nothing and is dropped.
        let mut fresh = [ExtremePoint {
            pos: [0; 3],
            rs: [0; 3],
        }; 6];
        let mut alive = [false; 6];
        for k in 0..n {
            let mut p = corners[k];
            p[dirs[k]] = reach[k];
            fresh[k] = ExtremePoint {
                pos: p,
                rs: [bin[0] - p[0], bin[1] - p[1], bin[2] - p[2]],
            };
            alive[k] = true;
        }
        for b in &self.boxes {
            for k in 0..n {
                if alive[k] {
                    if b.contains(fresh[k].pos) {
                        alive[k] = false;
                    } else {
                        shrink_residual(&mut fresh[k], b);
                    }
                }
            }
        }
        for k in (0..n).filter(|&k| alive[k]) {
            let key = ExtremePoint::key(fresh[k].pos);
            if let Err(slot) = self
                .eps
                .binary_search_by_key(&key, |ep| ExtremePoint::key(ep.pos))
            {
                self.eps.insert(slot, fresh[k]);
            }
        }
    }

    /// Drops the extreme points that cannot take a box of extent `min_e`
    /// (per-axis lower bounds on the sides of the items still to come) and
    /// says whether the bin may still take one of them: it keeps a point and
    /// `min_volume` free cells. Residual spaces only shrink and the bounds
    /// only grow, so a dropped point or a refused bin stays useless.
    pub fn prune(&mut self, min_e: Extent, min_volume: u64) -> bool {
        self.eps.retain(|ep| ep.admits(min_e));
        self.free_volume >= min_volume && !self.eps.is_empty()
    }
}

/// Cuts `ep`'s residual space at box `b` along every axis whose ray from
/// `ep` runs into `b`.
#[inline]
fn shrink_residual(ep: &mut ExtremePoint, b: &PlacedBox) {
    for a in 0..3 {
        if b.lo[a] >= ep.pos[a] && b.spans_line(ep.pos, a) {
            ep.rs[a] = ep.rs[a].min(b.lo[a] - ep.pos[a]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIN: Extent = [10, 10, 10];

    fn positions(bin: &BinState) -> Vec<[u32; 3]> {
        bin.eps.iter().map(|ep| ep.pos).collect()
    }

    #[test]
    fn first_box_gives_three_corner_points() {
        let mut s = BinState::default();
        s.reset(BIN);
        s.place([0, 0, 0], [4, 5, 6], BIN);
        // Each corner projected onto walls: duplicates collapse.
        assert_eq!(positions(&s), vec![[4, 0, 0], [0, 0, 6], [0, 5, 0]]);
        let rs: Vec<_> = s.eps.iter().map(|ep| ep.rs).collect();
        assert_eq!(rs, vec![[6, 10, 10], [10, 10, 4], [10, 5, 10]]);
        assert_eq!(s.free_volume, 1000 - 120);
    }

    #[test]
    fn corners_project_onto_boxes_behind_them() {
        let mut s = BinState::default();
        s.reset(BIN);
        s.place([0, 0, 0], [5, 3, 10], BIN); // slab at the bottom-left
        s.place([0, 3, 0], [2, 2, 2], BIN); // cube on top of it
        // The cube's right corner (2,3,0) projects down onto the slab top at
        // y = 3 (stays) and back along z to the wall; its top corner (0,5,0)
        // projects along x to the wall (stays) and along z to the wall.
        // Its front corner (0,3,2) projects along x to the wall and along y
        // onto the slab top.
        let pts = positions(&s);
        assert!(pts.contains(&[2, 3, 0]));
        assert!(pts.contains(&[0, 5, 0]));
        assert!(pts.contains(&[0, 3, 2]));
        assert!(!pts.contains(&[0, 3, 0]), "the point the cube took is gone");
        for w in pts.windows(2) {
            assert!(ExtremePoint::key(w[0]) < ExtremePoint::key(w[1]));
        }
        // Residual space of (0,3,2) along z runs to the wall; along x the
        // ray y=3,z=2 meets nothing (the cube spans z in [0,2)).
        let ep = s.eps.iter().find(|ep| ep.pos == [0, 3, 2]).unwrap();
        assert_eq!(ep.rs, [10, 7, 8]);
        // (2,3,0): along x nothing; along y nothing above; along z nothing.
        let ep = s.eps.iter().find(|ep| ep.pos == [2, 3, 0]).unwrap();
        assert_eq!(ep.rs, [8, 7, 10]);
    }

    #[test]
    fn projection_stops_at_nearest_box() {
        let mut s = BinState::default();
        s.reset(BIN);
        s.place([0, 0, 0], [10, 2, 10], BIN); // floor slab, y in [0,2)
        s.place([0, 2, 0], [10, 3, 4], BIN); // step, y in [2,5), z in [0,4)
        s.place([0, 5, 0], [3, 1, 1], BIN); // small box on the step
        // Its front corner (0,5,1) projected along y lands on the step (y=5);
        // its right corner (3,5,0) projected along y also stays at 5.
        // The far-front corner of the step (0,2,4) projected along y lands
        // on the floor slab top, y = 2.
        let pts = positions(&s);
        assert!(pts.contains(&[0, 2, 4]));
        assert!(pts.contains(&[0, 5, 1]));
        assert!(pts.contains(&[3, 5, 0]));
        // Nothing was projected into the floor slab.
        assert!(!pts.iter().any(|p| p[1] > 0 && p[1] < 2));
    }

    #[test]
    fn residual_space_shrinks_when_a_box_blocks_the_ray() {
        let mut s = BinState::default();
        s.reset(BIN);
        s.place([0, 0, 0], [3, 3, 3], BIN);
        // (3,0,0) has rs x = 7; a box placed at x = 6 on its line cuts it to 3.
        s.place([6, 0, 0], [2, 2, 2], BIN);
        let ep = s.eps.iter().find(|ep| ep.pos == [3, 0, 0]).unwrap();
        assert_eq!(ep.rs[0], 3);
        assert!(s.is_free([3, 0, 0], [3, 3, 3]));
        assert!(!s.is_free([3, 0, 0], [4, 1, 1]));
    }

    #[test]
    fn corner_inside_a_neighbour_is_dropped() {
        let mut s = BinState::default();
        s.reset(BIN);
        s.place([5, 0, 0], [5, 10, 10], BIN); // right half full
        s.place([0, 0, 0], [5, 5, 5], BIN); // its right corner (5,0,0) is inside the first box
        for ep in &s.eps {
            assert!(!s.boxes.iter().any(|b| b.contains(ep.pos)), "{:?}", ep.pos);
            assert!(ep.pos[0] < 5);
        }
    }

    #[test]
    fn prune_detects_full_bins() {
        let mut s = BinState::default();
        s.reset(BIN);
        s.place([0, 0, 0], [10, 10, 9], BIN);
        assert!(s.clone().prune([10, 10, 1], 100));
        assert!(!s.clone().prune([1, 1, 1], 101));
        assert!(!s.prune([1, 1, 2], 2));
        assert!(s.eps.is_empty());
    }
}
