//! Blocks of x-adjacent columns, so that y and z sweeps move whole cache
//! lines between the batch and the column scratch.
//!
//! In the y and z sweeps neighbouring columns differ by one in x and are
//! therefore adjacent in memory, while the cells of one column are `B` or
//! `B^2` values apart (a power-of-two stride that maps a column onto very few
//! cache sets). Loading up to [`LANES`] neighbouring columns at once reads
//! and writes contiguous runs instead, the access pattern a CUDA warp
//! coalesces. x sweeps use blocks of one lane (their columns are contiguous).

use super::column::Column;
use super::shared::Shared;
use crate::real::Real;
use crate::scheme::ColumnBuf;

/// Columns per block.
pub(crate) const LANES: usize = 16;

/// Values of up to [`LANES`] columns, stored `[component][cell][lane]`.
pub(crate) struct Block<T> {
    vals: Vec<T>,
    cap: usize,
}

impl<T: Real> Block<T> {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            vals: vec![T::zero(); 5 * cap * LANES],
            cap,
        }
    }

    #[inline(always)]
    fn at(&self, v: usize, i: usize) -> usize {
        (v * self.cap + i) * LANES
    }

    /// Loads `lanes` columns starting at `col` (lane `l` is `col` shifted by
    /// `l` in x) from `src`.
    #[inline(always)]
    pub(crate) fn load(&mut self, src: &Shared<'_, T>, col: &Column, lanes: usize) {
        for v in 0..5 {
            for i in 0..col.len {
                let at = self.at(v, i);
                let from = col.at(v, i);
                for (l, x) in self.vals[at..at + lanes].iter_mut().enumerate() {
                    // SAFETY: the lanes are columns of this pass inside the
                    // patch box; no column of the pass writes what another
                    // reads.
                    *x = unsafe { src.get(from + l) };
                }
            }
        }
    }

    /// Copies lane `lane` into a column scratch.
    #[inline(always)]
    pub(crate) fn to_column(&self, lane: usize, len: usize, dst: &mut ColumnBuf<T>) {
        for v in 0..5 {
            let base = self.at(v, 0) + lane;
            for (i, x) in dst.0[v][..len].iter_mut().enumerate() {
                *x = self.vals[base + i * LANES];
            }
        }
    }

    /// Copies cells `lo .. hi` of a column scratch into lane `lane`;
    /// returns whether all of them are finite.
    #[inline(always)]
    pub(crate) fn put_column(
        &mut self,
        lane: usize,
        lo: usize,
        hi: usize,
        src: &ColumnBuf<T>,
    ) -> bool {
        let mut finite = true;
        for v in 0..5 {
            let base = self.at(v, 0) + lane;
            for i in lo..hi {
                let x = src.0[v][i];
                finite &= x.is_finite();
                self.vals[base + i * LANES] = x;
            }
        }
        finite
    }

    /// The lanes of column component `v` at cell `i`.
    #[inline(always)]
    pub(crate) fn row(&self, v: usize, i: usize) -> &[T] {
        let at = self.at(v, i);
        &self.vals[at..at + LANES]
    }

    /// Column-ordered state of cell `i` in lane `lane`.
    #[inline(always)]
    pub(crate) fn cell(&self, lane: usize, i: usize) -> [T; 5] {
        std::array::from_fn(|v| self.vals[self.at(v, i) + lane])
    }

    /// Stores cells `lo .. hi` of `lanes` columns starting at `col` into `dst`.
    #[inline(always)]
    pub(crate) fn store(
        &self,
        dst: &Shared<'_, T>,
        col: &Column,
        lanes: usize,
        lo: usize,
        hi: usize,
    ) {
        for v in 0..5 {
            for i in lo..hi {
                let at = self.at(v, i);
                for l in 0..lanes {
                    // SAFETY: cell i of these columns is written by them only.
                    unsafe { dst.set(col.at(v, i) + l, self.vals[at + l]) };
                }
            }
        }
    }
}
