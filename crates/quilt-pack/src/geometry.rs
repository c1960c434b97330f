//! Integer boxes in a bin: extents, volumes, overlap and containment tests.

use crate::Extent;

/// The axis the orderings call "height": `y`, the `h` of `(w, h, d)`.
pub(crate) const HEIGHT_AXIS: usize = 1;

/// Cells in an extent. Fits in 64 bits for every extent accepted by
/// [`crate::pack`], which checks the bin volume and that items fit in it.
#[inline]
pub(crate) fn volume(e: Extent) -> u64 {
    u64::from(e[0]) * u64::from(e[1]) * u64::from(e[2])
}

/// Cells in an extent without overflow, for validation of untrusted input.
pub(crate) fn checked_volume(e: Extent) -> Option<u64> {
    u64::from(e[0])
        .checked_mul(u64::from(e[1]))?
        .checked_mul(u64::from(e[2]))
}

/// The base area `w·d` (the face orthogonal to the height axis).
#[inline]
pub(crate) fn base_area(e: Extent) -> u64 {
    u64::from(e[0]) * u64::from(e[2])
}

/// A placed item: the half-open cell box `[lo, hi)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PlacedBox {
    pub lo: [u32; 3],
    pub hi: [u32; 3],
}

impl PlacedBox {
    #[inline]
    pub fn new(offset: [u32; 3], extent: Extent) -> Self {
        PlacedBox {
            lo: offset,
            hi: [
                offset[0] + extent[0],
                offset[1] + extent[1],
                offset[2] + extent[2],
            ],
        }
    }

    /// Whether the cell at `p` lies in the box.
    #[inline]
    pub fn contains(&self, p: [u32; 3]) -> bool {
        (0..3).all(|a| self.lo[a] <= p[a] && p[a] < self.hi[a])
    }

    /// Whether the box shares a cell with the box `[lo, hi)`.
    #[inline]
    pub fn overlaps(&self, lo: [u32; 3], hi: [u32; 3]) -> bool {
        (0..3).all(|a| self.lo[a] < hi[a] && lo[a] < self.hi[a])
    }

    /// Whether the line through `p` along `axis` crosses the box, i.e. `p`'s
    /// two other coordinates lie in the box's range on those axes.
    #[inline]
    pub fn spans_line(&self, p: [u32; 3], axis: usize) -> bool {
        let (b, c) = other_axes(axis);
        self.lo[b] <= p[b] && p[b] < self.hi[b] && self.lo[c] <= p[c] && p[c] < self.hi[c]
    }
}

/// The two axes other than `axis`, in cyclic order.
#[inline]
pub(crate) fn other_axes(axis: usize) -> (usize, usize) {
    ((axis + 1) % 3, (axis + 2) % 3)
}
