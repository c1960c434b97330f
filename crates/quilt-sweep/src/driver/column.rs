//! Gathering a column from a batch, scattering it back, recording its
//! boundary fluxes, and collecting errors and floor counts from the workers.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::check::rel_cell;
use super::plan::{ColumnGroup, Pass};
use super::shared::Shared;
use crate::error::SweepError;
use crate::layout::{BatchLayout, data_index, face_offset, transverse_axes};
use crate::physics::{FloorCounts, NOT_FINITE, column_components};
use crate::real::Real;
use crate::scheme::ColumnBuf;

/// Where one column lives in the batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Column {
    /// Patch index.
    pub patch: usize,
    /// Data index of column cell 0 for each *column* component.
    pub base: [usize; 5],
    /// Column components in batch order (see `column_components`).
    pub comps: [usize; 5],
    /// Data-index distance between neighbouring column cells.
    pub stride: usize,
    /// Cells in the column.
    pub len: usize,
    /// Patch-local coordinates (ghosts included) of column cell 0.
    pub first: [usize; 3],
    /// Flux-buffer index of component 0 at the low and high interior faces,
    /// if the column lies in the patch's transverse interior.
    pub faces: Option<[usize; 2]>,
    /// Flux-buffer distance between components.
    pub fstride: usize,
    /// Column index of the face before the first interior cell.
    pub face_lo: usize,
}

impl Column {
    pub(crate) fn new(layout: &BatchLayout, pass: &Pass, g: &ColumnGroup, ta: u32) -> Self {
        let d = &layout.patches()[g.patch as usize];
        let axis = pass.axis;
        let (a, b) = transverse_axes(axis);
        let mut first = [0usize; 3];
        first[axis] = (d.ghost - pass.read_halo) as usize;
        first[a] = ta as usize;
        first[b] = g.tb as usize;
        let bs = layout.bin_edge() as usize;
        let nc = layout.ncomp() as usize;
        let cell = [0, 1, 2].map(|x| d.offset[x] as usize + first[x]);
        let comps = column_components(axis);
        let base = comps.map(|c| data_index(bs, nc, d.bin as usize, c, cell));
        let stride = [1, bs, bs * bs][axis];
        let n = d.interior();
        let gh = d.ghost;
        let inside = |t: u32, x: usize| t >= gh && t < gh + n[x];
        let faces = (inside(ta, a) && inside(g.tb, b)).then(|| {
            let within = ((g.tb - gh) * n[a] + (ta - gh)) as u64;
            [0, 1].map(|side| {
                (d.flux_offset + face_offset(d, layout.ncomp(), axis, side) + within) as usize
            })
        });
        Self {
            patch: g.patch as usize,
            base,
            comps,
            stride,
            len: pass.len(d),
            first,
            faces,
            fstride: (n[a] * n[b]) as usize,
            face_lo: pass.read_halo as usize - 1,
        }
    }

    /// Data index of column component `v` at column cell `i`.
    #[inline(always)]
    pub(crate) fn at(&self, v: usize, i: usize) -> usize {
        self.base[v] + i * self.stride
    }

    /// Patch-local coordinates of column cell `i`, relative to the interior.
    pub(crate) fn rel(&self, layout: &BatchLayout, axis: usize, i: usize) -> [i64; 3] {
        let mut c = self.first;
        c[axis] += i;
        rel_cell(&layout.patches()[self.patch], c)
    }

    /// Copies the column (contiguous along x) into `dst`.
    #[inline(always)]
    pub(crate) fn load_x<T: Real>(&self, src: &Shared<'_, T>, dst: &mut ColumnBuf<T>) {
        debug_assert_eq!(self.stride, 1);
        for v in 0..5 {
            // SAFETY: the column lies inside its patch box; no column of this
            // pass writes cells this column reads.
            dst.0[v][..self.len].copy_from_slice(unsafe { src.slice(self.base[v], self.len) });
        }
    }

    /// Stores cells `lo .. hi` of `src` into the column (contiguous along x);
    /// returns `false` without storing if any value is not finite.
    #[inline(always)]
    pub(crate) fn store_x<T: Real>(
        &self,
        dst: &Shared<'_, T>,
        lo: usize,
        hi: usize,
        src: &ColumnBuf<T>,
    ) -> bool {
        debug_assert_eq!(self.stride, 1);
        let mut finite = true;
        for v in 0..5 {
            for x in &src.0[v][lo..hi] {
                finite &= x.is_finite();
            }
        }
        if finite {
            for v in 0..5 {
                for (i, &x) in src.0[v][lo..hi].iter().enumerate() {
                    // SAFETY: cells lo..hi of this column are written by it only.
                    unsafe { dst.set(self.base[v] + lo + i, x) };
                }
            }
        }
        finite
    }

    /// The error for the first non-finite value among cells `lo .. hi` of
    /// `out`, if any.
    pub(crate) fn first_bad<T: Real>(
        &self,
        layout: &BatchLayout,
        axis: usize,
        out: &ColumnBuf<T>,
        lo: usize,
        hi: usize,
        stage: &'static str,
    ) -> Option<(usize, SweepError)> {
        (lo..hi).find_map(|i| {
            non_finite(&out.cell(i), &self.comps).map(|(c, value)| {
                let err = SweepError::BadState {
                    patch: layout.patches()[self.patch].id,
                    cell: self.rel(layout, axis, i),
                    what: NOT_FINITE[c],
                    value,
                    stage,
                };
                (i, err)
            })
        })
    }

    /// Records `weight * flux` (or adds it, if `add`) at the two interior
    /// faces of the column, if it has them.
    #[inline(always)]
    pub(crate) fn record<T: Real>(
        &self,
        flux_buf: &Shared<'_, T>,
        flux: &ColumnBuf<T>,
        weight: T,
        add: bool,
    ) {
        let Some(faces) = self.faces else { return };
        let n = self.len - 2 * (self.face_lo + 1);
        for (side, f) in [(0, self.face_lo), (1, self.face_lo + n)] {
            for v in 0..5 {
                let idx = faces[side] + self.comps[v] * self.fstride;
                let val = weight * flux.0[v][f];
                // SAFETY: every (face, transverse cell) of a patch belongs to
                // exactly one column of the pass sweeping that face's axis.
                unsafe {
                    let old = if add { flux_buf.get(idx) } else { T::zero() };
                    flux_buf.set(idx, if add { old + val } else { val });
                }
            }
        }
    }
}

/// The first (in a thread-independent order) error found by any worker.
#[derive(Default)]
pub(crate) struct ErrorSlot(Mutex<Option<(ErrorKey, SweepError)>>);

/// `(patch, column group, cell)`: orders errors independently of threads.
pub(crate) type ErrorKey = (usize, usize, usize);

impl ErrorSlot {
    /// Keeps `err` if its key `(patch, column group, cell)` is the smallest
    /// offered so far.
    pub(crate) fn offer(&self, key: ErrorKey, err: SweepError) {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if slot.as_ref().is_none_or(|(k, _)| key < *k) {
            *slot = Some((key, err));
        }
    }

    pub(crate) fn into_result(self) -> Result<(), SweepError> {
        match self.0.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }
}

/// Floor counts summed over workers.
#[derive(Default)]
pub(crate) struct FloorTally {
    density: AtomicU64,
    pressure: AtomicU64,
}

impl FloorTally {
    pub(crate) fn add(&self, f: &FloorCounts) {
        if f.density > 0 {
            self.density.fetch_add(f.density, Ordering::Relaxed);
        }
        if f.pressure > 0 {
            self.pressure.fetch_add(f.pressure, Ordering::Relaxed);
        }
    }

    pub(crate) fn get(&self) -> FloorCounts {
        FloorCounts {
            density: self.density.load(Ordering::Relaxed),
            pressure: self.pressure.load(Ordering::Relaxed),
        }
    }
}

/// First non-finite component of `w` (column order), as a batch component.
#[inline(always)]
pub(crate) fn non_finite<T: Real>(w: &[T; 5], comps: &[usize; 5]) -> Option<(usize, f64)> {
    if w.iter().all(|x| x.is_finite()) {
        return None;
    }
    let v = (0..5).find(|&v| !w[v].is_finite())?;
    Some((comps[v], w[v].as_f64()))
}
