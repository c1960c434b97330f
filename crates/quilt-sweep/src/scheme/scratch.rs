//! Per-column scratch arrays.

use crate::real::Real;

/// Five arrays of `cap` values, one per column component (the CPU stand-in
/// for a block of shared memory).
#[derive(Clone, Debug)]
pub struct ColumnBuf<T>(pub [Vec<T>; 5]);

impl<T: Real> ColumnBuf<T> {
    /// Zero-filled arrays of `cap` values each.
    pub fn new(cap: usize) -> Self {
        Self(std::array::from_fn(|_| vec![T::zero(); cap]))
    }

    /// The state of cell `i` as `[c0, .., c4]`.
    #[inline(always)]
    pub fn cell(&self, i: usize) -> [T; 5] {
        [
            self.0[0][i],
            self.0[1][i],
            self.0[2][i],
            self.0[3][i],
            self.0[4][i],
        ]
    }

    /// Stores the state of cell `i`.
    #[inline(always)]
    pub fn set_cell(&mut self, i: usize, v: [T; 5]) {
        for (c, x) in v.into_iter().enumerate() {
            self.0[c][i] = x;
        }
    }

    /// The five component arrays.
    #[inline(always)]
    pub fn slices(&self) -> [&[T]; 5] {
        let [a, b, c, d, e] = &self.0;
        [a, b, c, d, e]
    }

    /// The five component arrays, mutable.
    #[inline(always)]
    pub fn slices_mut(&mut self) -> [&mut [T]; 5] {
        let [a, b, c, d, e] = &mut self.0;
        [a, b, c, d, e]
    }

    /// Capacity (values per component).
    pub fn capacity(&self) -> usize {
        self.0[0].len()
    }
}

/// The first `n` values of each of five arrays. Written out rather than
/// as an array `map`: in the sweeps' large inlined bodies the compiler
/// leaves such maps as calls, once per column.
#[inline(always)]
pub(crate) fn prefix<T>(a: [&[T]; 5], n: usize) -> [&[T]; 5] {
    let [a0, a1, a2, a3, a4] = a;
    [&a0[..n], &a1[..n], &a2[..n], &a3[..n], &a4[..n]]
}

/// [`prefix`] of mutable arrays.
#[inline(always)]
pub(crate) fn prefix_mut<T>(a: [&mut [T]; 5], n: usize) -> [&mut [T]; 5] {
    let [a0, a1, a2, a3, a4] = a;
    [
        &mut a0[..n],
        &mut a1[..n],
        &mut a2[..n],
        &mut a3[..n],
        &mut a4[..n],
    ]
}
