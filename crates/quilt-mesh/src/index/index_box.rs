//! Cell-centred index boxes.
//!
//! # Convention
//! An [`IndexBox`] is **inclusive** on both ends: it holds the cells
//! `lo[d] ..= hi[d]` along every axis `d`. This is the one convention of quilt;
//! hierarchy files, VTKHDF `AMRBox` rows and every API use it. A box with
//! `hi[d] < lo[d]` on any axis is empty. Face-centred quantities (fluxes) are
//! indexed by the cell on their high side: face `i` along `x` separates cells
//! `i - 1` and `i`, so the faces of a box along `x` run `lo.x ..= hi.x + 1`
//! (see [`IndexBox::faces`]).

use serde::{Deserialize, Serialize};

use super::int_vect::{IntVect, coarsen_vect, iv};

/// One side of a box along an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Side {
    /// The side of smaller indices.
    Lo,
    /// The side of larger indices.
    Hi,
}

impl Side {
    /// Both sides, low first.
    pub const BOTH: [Side; 2] = [Side::Lo, Side::Hi];

    /// `0` for [`Side::Lo`], `1` for [`Side::Hi`].
    #[inline]
    pub fn index(self) -> usize {
        match self {
            Side::Lo => 0,
            Side::Hi => 1,
        }
    }

    /// The other side.
    #[inline]
    pub fn flip(self) -> Side {
        match self {
            Side::Lo => Side::Hi,
            Side::Hi => Side::Lo,
        }
    }

    /// `-1` for [`Side::Lo`], `+1` for [`Side::Hi`].
    #[inline]
    pub fn sign(self) -> i32 {
        match self {
            Side::Lo => -1,
            Side::Hi => 1,
        }
    }
}

/// A rectangular set of cells `lo ..= hi` (inclusive; see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IndexBox {
    /// The lowest cell index along each axis.
    pub lo: IntVect,
    /// The highest cell index along each axis (inclusive).
    pub hi: IntVect,
}

impl IndexBox {
    /// The box `lo ..= hi`. Empty if `hi < lo` along any axis.
    #[inline]
    pub const fn new(lo: IntVect, hi: IntVect) -> Self {
        Self { lo, hi }
    }

    /// The box of `size` cells starting at `lo`.
    #[inline]
    pub fn from_lo_size(lo: IntVect, size: IntVect) -> Self {
        Self {
            lo,
            hi: lo + size - iv(1, 1, 1),
        }
    }

    /// A canonical empty box.
    #[inline]
    pub fn empty() -> Self {
        Self {
            lo: iv(0, 0, 0),
            hi: iv(-1, -1, -1),
        }
    }

    /// Whether the box holds no cell.
    #[inline]
    pub fn is_empty(&self) -> bool {
        (0..3).any(|d| self.hi[d] < self.lo[d])
    }

    /// Number of cells along each axis (zero on every axis if empty).
    #[inline]
    pub fn size(&self) -> IntVect {
        if self.is_empty() {
            iv(0, 0, 0)
        } else {
            self.hi - self.lo + iv(1, 1, 1)
        }
    }

    /// Number of cells in the box; `i64::MAX` for a box of more (one of
    /// 2^30 cells per axis, as level domains may be, has 2^90).
    #[inline]
    pub fn num_cells(&self) -> i64 {
        let s = self.size();
        (s.x as i64)
            .saturating_mul(s.y as i64)
            .saturating_mul(s.z as i64)
    }

    /// Whether cell `p` lies in the box.
    #[inline]
    pub fn contains(&self, p: &IntVect) -> bool {
        (0..3).all(|d| self.lo[d] <= p[d] && p[d] <= self.hi[d])
    }

    /// Whether every cell of `other` lies in `self` (an empty `other` always does).
    #[inline]
    pub fn contains_box(&self, other: &IndexBox) -> bool {
        other.is_empty() || (self.contains(&other.lo) && self.contains(&other.hi))
    }

    /// The cells common to both boxes (possibly empty).
    #[inline]
    pub fn intersect(&self, other: &IndexBox) -> IndexBox {
        IndexBox {
            lo: self.lo.sup(&other.lo),
            hi: self.hi.inf(&other.hi),
        }
    }

    /// Whether the boxes share at least one cell.
    #[inline]
    pub fn intersects(&self, other: &IndexBox) -> bool {
        !self.intersect(other).is_empty()
    }

    /// The smallest box containing both (an empty operand is ignored).
    pub fn bounding(&self, other: &IndexBox) -> IndexBox {
        if self.is_empty() {
            return *other;
        }
        if other.is_empty() {
            return *self;
        }
        IndexBox {
            lo: self.lo.inf(&other.lo),
            hi: self.hi.sup(&other.hi),
        }
    }

    /// The box grown by `n` cells on every side (shrunk if `n < 0`).
    #[inline]
    pub fn grow(&self, n: i32) -> IndexBox {
        self.grow_vect(&iv(n, n, n))
    }

    /// The box grown by `n[d]` cells on both sides of axis `d`.
    #[inline]
    pub fn grow_vect(&self, n: &IntVect) -> IndexBox {
        IndexBox {
            lo: self.lo - n,
            hi: self.hi + n,
        }
    }

    /// The box grown by `n` cells on one side of one axis.
    pub fn grow_side(&self, axis: usize, side: Side, n: i32) -> IndexBox {
        let mut b = *self;
        match side {
            Side::Lo => b.lo[axis] -= n,
            Side::Hi => b.hi[axis] += n,
        }
        b
    }

    /// The box moved by `offset`.
    #[inline]
    pub fn shift(&self, offset: &IntVect) -> IndexBox {
        IndexBox {
            lo: self.lo + offset,
            hi: self.hi + offset,
        }
    }

    /// The same region in an index space `ratio` times finer.
    #[inline]
    pub fn refine(&self, ratio: i32) -> IndexBox {
        IndexBox {
            lo: self.lo * ratio,
            hi: (self.hi + iv(1, 1, 1)) * ratio - iv(1, 1, 1),
        }
    }

    /// The coarse cells that hold any cell of this box, in an index space
    /// `ratio` times coarser.
    ///
    /// Contract: `b.coarsen(r).refine(r).contains_box(&b)` for every box `b`.
    #[inline]
    pub fn coarsen(&self, ratio: i32) -> IndexBox {
        IndexBox {
            lo: coarsen_vect(&self.lo, ratio),
            hi: coarsen_vect(&self.hi, ratio),
        }
    }

    /// Whether the box is the refinement of a coarse box (so that every
    /// coarse cell it covers is covered completely).
    #[inline]
    pub fn is_coarsenable(&self, ratio: i32) -> bool {
        self.coarsen(ratio).refine(ratio) == *self
    }

    /// The slab of `width` cells just outside the box on one side of one
    /// axis, spanning the box along the other two axes.
    pub fn adjacent(&self, axis: usize, side: Side, width: i32) -> IndexBox {
        let mut b = *self;
        match side {
            Side::Lo => {
                b.hi[axis] = self.lo[axis] - 1;
                b.lo[axis] = self.lo[axis] - width;
            }
            Side::Hi => {
                b.lo[axis] = self.hi[axis] + 1;
                b.hi[axis] = self.hi[axis] + width;
            }
        }
        b
    }

    /// The slab of `width` cells just inside the box on one side of one axis.
    pub fn inner_slab(&self, axis: usize, side: Side, width: i32) -> IndexBox {
        let mut b = *self;
        match side {
            Side::Lo => b.hi[axis] = (self.lo[axis] + width - 1).min(self.hi[axis]),
            Side::Hi => b.lo[axis] = (self.hi[axis] - width + 1).max(self.lo[axis]),
        }
        b
    }

    /// The face-centred index box along `axis`: faces `lo ..= hi + 1` along
    /// `axis`, cells along the other two (face `i` lies between cells
    /// `i - 1` and `i`).
    pub fn faces(&self, axis: usize) -> IndexBox {
        let mut b = *self;
        b.hi[axis] += 1;
        b
    }

    /// The single layer of faces on one side of the box along `axis`, in
    /// face-centred indices.
    pub fn boundary_faces(&self, axis: usize, side: Side) -> IndexBox {
        let mut b = *self;
        let f = match side {
            Side::Lo => self.lo[axis],
            Side::Hi => self.hi[axis] + 1,
        };
        b.lo[axis] = f;
        b.hi[axis] = f;
        b
    }

    /// The ghost region of `width` cells around the box split into its 26
    /// parts: 6 faces, 12 edges and 8 corners, each tagged with the
    /// direction `(-1|0|1)³` it lies in. Together they tile
    /// `self.grow(width)` minus `self`.
    pub fn ghost_regions(&self, width: i32) -> Vec<(IntVect, IndexBox)> {
        let mut out = Vec::with_capacity(26);
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let dir = iv(dx, dy, dz);
                    if dir == iv(0, 0, 0) {
                        continue;
                    }
                    let mut b = *self;
                    for d in 0..3 {
                        match dir[d] {
                            -1 => {
                                b.lo[d] = self.lo[d] - width;
                                b.hi[d] = self.lo[d] - 1;
                            }
                            1 => {
                                b.lo[d] = self.hi[d] + 1;
                                b.hi[d] = self.hi[d] + width;
                            }
                            _ => {}
                        }
                    }
                    out.push((dir, b));
                }
            }
        }
        out
    }

    /// Split the box along `axis` so that the first part ends at cell
    /// `at - 1` and the second starts at `at`. A part may be empty.
    pub fn chop(&self, axis: usize, at: i32) -> (IndexBox, IndexBox) {
        let mut a = *self;
        let mut b = *self;
        a.hi[axis] = (at - 1).min(self.hi[axis]);
        b.lo[axis] = at.max(self.lo[axis]);
        (a, b)
    }

    /// Linear offset of cell `p` in a box-shaped array with `x` fastest.
    /// `p` must lie in the box.
    #[inline]
    pub fn offset(&self, p: &IntVect) -> usize {
        debug_assert!(self.contains(p), "{p:?} outside {self:?}");
        let s = self.size();
        let r = p - self.lo;
        (r.x as usize) + (s.x as usize) * ((r.y as usize) + (s.y as usize) * (r.z as usize))
    }

    /// Iterate over the cells, `x` fastest, then `y`, then `z`.
    pub fn iter(&self) -> BoxIter {
        BoxIter {
            b: *self,
            next: if self.is_empty() { None } else { Some(self.lo) },
        }
    }
}

impl std::fmt::Display for IndexBox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "[{},{},{}]..=[{},{},{}]",
            self.lo.x, self.lo.y, self.lo.z, self.hi.x, self.hi.y, self.hi.z
        )
    }
}

/// Iterator over the cells of an [`IndexBox`], `x` fastest.
#[derive(Debug, Clone)]
pub struct BoxIter {
    b: IndexBox,
    next: Option<IntVect>,
}

impl Iterator for BoxIter {
    type Item = IntVect;

    fn next(&mut self) -> Option<IntVect> {
        let cur = self.next?;
        let mut n = cur;
        n.x += 1;
        if n.x > self.b.hi.x {
            n.x = self.b.lo.x;
            n.y += 1;
            if n.y > self.b.hi.y {
                n.y = self.b.lo.y;
                n.z += 1;
            }
        }
        self.next = if n.z > self.b.hi.z { None } else { Some(n) };
        Some(cur)
    }
}

impl IntoIterator for &IndexBox {
    type Item = IntVect;
    type IntoIter = BoxIter;
    fn into_iter(self) -> BoxIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_box() -> impl Strategy<Value = IndexBox> {
        (
            prop::array::uniform3(-40i32..40),
            prop::array::uniform3(1i32..20),
        )
            .prop_map(|(lo, s)| {
                IndexBox::from_lo_size(iv(lo[0], lo[1], lo[2]), iv(s[0], s[1], s[2]))
            })
    }

    #[test]
    fn basic_geometry() {
        let b = IndexBox::new(iv(0, 0, 0), iv(3, 1, 0));
        assert_eq!(b.size(), iv(4, 2, 1));
        assert_eq!(b.num_cells(), 8);
        assert!(IndexBox::empty().is_empty());
        assert_eq!(IndexBox::empty().num_cells(), 0);
        let huge = IndexBox::new(iv(0, 0, 0), iv(1 << 30, 1 << 30, 1 << 30));
        assert_eq!(huge.num_cells(), i64::MAX);
        let cells: Vec<_> = b.iter().collect();
        assert_eq!(cells.len(), 8);
        assert_eq!(cells[1], iv(1, 0, 0));
        assert_eq!(cells[4], iv(0, 1, 0));
        for (n, p) in cells.iter().enumerate() {
            assert_eq!(b.offset(p), n);
        }
        assert_eq!(b.faces(0).size(), iv(5, 2, 1));
        assert_eq!(b.boundary_faces(0, Side::Hi).lo.x, 4);
        assert_eq!(
            b.adjacent(1, Side::Lo, 2),
            IndexBox::new(iv(0, -2, 0), iv(3, -1, 0))
        );
    }

    proptest! {
        #[test]
        fn refine_of_coarsen_contains(b in arb_box(), r in prop::sample::select(vec![2, 4])) {
            prop_assert!(b.coarsen(r).refine(r).contains_box(&b));
            prop_assert_eq!(b.refine(r).coarsen(r), b);
            prop_assert_eq!(b.refine(r).num_cells(), b.num_cells() * (r as i64).pow(3));
        }

        #[test]
        fn ghost_regions_tile_the_halo(b in arb_box(), w in 1i32..4) {
            let parts = b.ghost_regions(w);
            prop_assert_eq!(parts.len(), 26);
            let total: i64 = parts.iter().map(|(_, p)| p.num_cells()).sum();
            prop_assert_eq!(total, b.grow(w).num_cells() - b.num_cells());
            for (i, (_, p)) in parts.iter().enumerate() {
                prop_assert!(!p.intersects(&b));
                prop_assert!(b.grow(w).contains_box(p));
                for (_, q) in &parts[i + 1..] {
                    prop_assert!(!p.intersects(q));
                }
            }
        }

        #[test]
        fn intersect_is_exact(a in arb_box(), b in arb_box()) {
            let c = a.intersect(&b);
            let brute = a.iter().filter(|p| b.contains(p)).count() as i64;
            prop_assert_eq!(c.num_cells(), brute);
        }

        #[test]
        fn chop_partitions(b in arb_box(), t in 0.0f64..1.0, axis in 0usize..3) {
            let at = b.lo[axis] + ((b.size()[axis] as f64) * t) as i32;
            let (l, h) = b.chop(axis, at);
            prop_assert_eq!(l.num_cells() + h.num_cells(), b.num_cells());
            prop_assert!(!l.intersects(&h));
        }
    }
}
