//! Gathering a column from a batch, scattering it back, recording its
//! boundary fluxes, and collecting errors and floor counts from the workers.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use super::check::rel_cell;
use super::plan::{ColumnGroup, Pass};
use super::shared::Shared;
use crate::error::SweepError;
use crate::layout::{BatchLayout, data_index, face_offset, transverse_axes};
use crate::physics::{FloorCounts, NCOMP, NOT_FINITE, column_components, scalar_not_finite};
use crate::real::Real;
use crate::scheme::ColumnBuf;
use crate::scheme::tvd;

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
    /// Data index of column cell 0 of the first passive scalar (component
    /// [`NCOMP`]); scalar `k` lies `k * comp_len` further.
    pub scalar0: usize,
    /// Data-index distance between components.
    pub comp_len: usize,
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
        let comp_len = bs * bs * bs;
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
            scalar0: base[0] + NCOMP * comp_len,
            comp_len,
        }
    }

    /// Data index of passive scalar `k` at column cell `i`.
    #[inline(always)]
    fn scalar_at(&self, k: usize, i: usize) -> usize {
        self.scalar0 + k * self.comp_len + i * self.stride
    }

    /// Copies passive scalar `k` of the column into `dst`.
    #[inline(always)]
    pub(crate) fn load_scalar<T: Real>(&self, src: &Shared<'_, T>, k: usize, dst: &mut [T]) {
        for (i, x) in dst[..self.len].iter_mut().enumerate() {
            // SAFETY: as for `load_x`: no column of this pass writes the
            // cells this column reads.
            *x = unsafe { src.get(self.scalar_at(k, i)) };
        }
    }

    /// Stores `s[i] + du[i]` for cells `lo .. hi` into passive scalar `k`
    /// of the column; returns the first non-finite value's cell instead of
    /// storing, if any.
    #[inline(always)]
    pub(crate) fn store_scalar<T: Real>(
        &self,
        dst: &Shared<'_, T>,
        k: usize,
        lo: usize,
        hi: usize,
        s: &[T],
        du: &[T],
    ) -> Result<(), (usize, f64)> {
        if let Some(i) = (lo..hi).find(|&i| !(s[i] + du[i]).is_finite()) {
            return Err((i, (s[i] + du[i]).as_f64()));
        }
        for i in lo..hi {
            // SAFETY: cells lo..hi of this column are written by it only.
            unsafe { dst.set(self.scalar_at(k, i), s[i] + du[i]) };
        }
        Ok(())
    }

    /// Adds `du[i]` for cells `lo .. hi` to passive scalar `k` of the
    /// column in `acc` (or stores it, if `!add`).
    #[inline(always)]
    pub(crate) fn accumulate_scalar<T: Real>(
        &self,
        acc: &Shared<'_, T>,
        k: usize,
        lo: usize,
        hi: usize,
        du: &[T],
        add: bool,
    ) {
        for (i, &d) in du.iter().enumerate().take(hi).skip(lo) {
            let at = self.scalar_at(k, i);
            // SAFETY: cells lo..hi of this column are accessed by it only.
            unsafe { acc.set(at, if add { acc.get(at) + d } else { d }) };
        }
    }

    /// The TVD stage combination of passive scalar `k` on cells `lo .. hi`
    /// (`tvd::stage_one_value` / `stage_two_value`, the Euler stages'
    /// formulas without floors): stage 1 writes into `stage`, stage 2 into
    /// `data`. Returns the first
    /// non-finite value's cell instead of finishing, if any.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn combine_scalar<T: Real>(
        &self,
        second: bool,
        data: &Shared<'_, T>,
        stage: &Shared<'_, T>,
        acc: &Shared<'_, T>,
        k: usize,
        lo: usize,
        hi: usize,
        du: &[T],
    ) -> Result<(), (usize, f64)> {
        for (i, &d) in du.iter().enumerate().take(hi).skip(lo) {
            let at = self.scalar_at(k, i);
            // SAFETY: cells lo..hi of this column are accessed by it only
            // during the pass.
            unsafe {
                let (w, dst) = if second {
                    let w = tvd::stage_two_value(data.get(at), stage.get(at), acc.get(at), d);
                    (w, data)
                } else {
                    (tvd::stage_one_value(data.get(at), acc.get(at), d), stage)
                };
                if !w.is_finite() {
                    return Err((i, w.as_f64()));
                }
                dst.set(at, w);
            }
        }
        Ok(())
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

    /// Records `weight * flux` (or adds it, if `add`) of the Euler
    /// components at the two interior faces of the column, if it has them.
    #[inline(always)]
    pub(crate) fn record<T: Real>(
        &self,
        flux_buf: &Shared<'_, T>,
        flux: &ColumnBuf<T>,
        weight: T,
        add: bool,
    ) {
        for v in 0..5 {
            self.record_comp(flux_buf, self.comps[v], &flux.0[v], weight, add);
        }
    }

    /// [`Column::record`] of one batch component `comp` whose face fluxes
    /// (column numbering) are `flux`.
    #[inline(always)]
    fn record_comp<T: Real>(
        &self,
        flux_buf: &Shared<'_, T>,
        comp: usize,
        flux: &[T],
        weight: T,
        add: bool,
    ) {
        let Some(faces) = self.faces else { return };
        let n = self.len - 2 * (self.face_lo + 1);
        for (side, f) in [(0, self.face_lo), (1, self.face_lo + n)] {
            let idx = faces[side] + comp * self.fstride;
            let val = weight * flux[f];
            // SAFETY: every (face, transverse cell) of a patch belongs to
            // exactly one column of the pass sweeping that face's axis.
            unsafe {
                let old = if add { flux_buf.get(idx) } else { T::zero() };
                flux_buf.set(idx, if add { old + val } else { val });
            }
        }
    }
}

impl Column {
    /// Records `weight * flux` (or adds it, if `add`) of passive scalar
    /// `k` at the two interior faces of the column, if it has them.
    #[inline(always)]
    pub(crate) fn record_scalar<T: Real>(
        &self,
        flux_buf: &Shared<'_, T>,
        k: usize,
        flux: &[T],
        weight: T,
        add: bool,
    ) {
        self.record_comp(flux_buf, NCOMP + k, flux, weight, add);
    }

    /// The error for a non-finite value `value` of passive scalar `k` at
    /// column cell `i`.
    pub(crate) fn bad_scalar(
        &self,
        layout: &BatchLayout,
        axis: usize,
        k: usize,
        (i, value): (usize, f64),
        stage: &'static str,
    ) -> SweepError {
        SweepError::BadState {
            patch: layout.patches()[self.patch].id,
            cell: self.rel(layout, axis, i),
            what: scalar_not_finite(k),
            value,
            stage,
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
