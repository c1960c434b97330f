//! [`Batch`]: the data of one batch (all bins) plus its flux buffer.

use crate::error::LayoutError;
use crate::layout::{BatchLayout, data_index};
use crate::real::Real;

/// The values of one batch in THE layout, owned: `layout.data_len()` cell
/// values and `layout.flux_len()` flux values (see
/// [`layout`](crate::layout) for both index functions).
///
/// The CPU prepares a batch (loads patch interiors and ghosts), a
/// [`Solver`](crate::Solver) advances it, and the close step reads the
/// patches and the flux buffer back. Cells of a bin not covered by a patch
/// stay as they are.
#[derive(Clone, Debug, PartialEq)]
pub struct Batch<T> {
    layout: BatchLayout,
    data: Vec<T>,
    flux: Vec<T>,
}

impl<T: Real> Batch<T> {
    /// A zero-filled batch for `layout`.
    pub fn new(layout: BatchLayout) -> Self {
        let data = vec![T::zero(); layout.data_len()];
        let flux = vec![T::zero(); layout.flux_len()];
        Self { layout, data, flux }
    }

    /// The layout.
    pub fn layout(&self) -> &BatchLayout {
        &self.layout
    }

    /// All cell values, in layout order.
    pub fn data(&self) -> &[T] {
        &self.data
    }

    /// All cell values, mutable (for preparing a batch in place).
    pub fn data_mut(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The flux buffer written by the last step.
    pub fn flux(&self) -> &[T] {
        &self.flux
    }

    /// Data and flux buffer at once, mutable (what a solver needs).
    pub fn buffers_mut(&mut self) -> (&BatchLayout, &mut [T], &mut [T]) {
        (&self.layout, &mut self.data, &mut self.flux)
    }

    /// Value of component `comp` at patch-local cell `cell` (ghosts
    /// included); `None` if out of range.
    pub fn get(&self, patch: usize, comp: u32, cell: [u32; 3]) -> Option<T> {
        self.layout
            .cell_index(patch, comp, cell)
            .map(|i| self.data[i])
    }

    /// Sets component `comp` at patch-local cell `cell` (ghosts included).
    pub fn set(
        &mut self,
        patch: usize,
        comp: u32,
        cell: [u32; 3],
        value: T,
    ) -> Result<(), LayoutError> {
        let i = self.layout.cell_index(patch, comp, cell).ok_or_else(|| {
            LayoutError::Access(format!(
                "cell {cell:?}, component {comp} of patch index {patch} is outside the layout"
            ))
        })?;
        self.data[i] = value;
        Ok(())
    }

    /// Copies a patch from its own dense array `src` (ghosts included,
    /// component-major, x fastest: `((c * ez + k) * ey + j) * ex + i`) into
    /// the batch.
    pub fn load_patch(&mut self, patch: usize, src: &[T]) -> Result<(), LayoutError> {
        let (rows, len) = self.rows(patch, src.len())?;
        for (n, dst_start) in rows.enumerate() {
            self.data[dst_start..dst_start + len].copy_from_slice(&src[n * len..(n + 1) * len]);
        }
        Ok(())
    }

    /// Copies a patch (ghosts included) out of the batch into a dense array
    /// ordered as in [`Batch::load_patch`].
    pub fn store_patch(&self, patch: usize, dst: &mut [T]) -> Result<(), LayoutError> {
        let (rows, len) = self.rows(patch, dst.len())?;
        for (n, src_start) in rows.enumerate() {
            dst[n * len..(n + 1) * len].copy_from_slice(&self.data[src_start..src_start + len]);
        }
        Ok(())
    }

    /// Start of every x row of `patch` in the data array, in dense patch
    /// order, and the row length; checks that the dense array has `len` values.
    fn rows(
        &self,
        patch: usize,
        len: usize,
    ) -> Result<(impl Iterator<Item = usize> + use<T>, usize), LayoutError> {
        let l = &self.layout;
        let d = *l.patches().get(patch).ok_or_else(|| {
            LayoutError::Access(format!(
                "patch index {patch} out of range ({} patches)",
                l.patches().len()
            ))
        })?;
        let [ex, ey, ez] = d.extent.map(|e| e as usize);
        let ncomp = l.ncomp() as usize;
        let want = ncomp * ex * ey * ez;
        if len != want {
            return Err(LayoutError::Access(format!(
                "patch {}: dense array has {len} values, expected {want} ({ncomp} x {:?})",
                d.id, d.extent
            )));
        }
        let b = l.bin_edge() as usize;
        let o = d.offset.map(|v| v as usize);
        let bin = d.bin as usize;
        let rows = (0..ncomp).flat_map(move |c| {
            (0..ez).flat_map(move |k| {
                (0..ey).map(move |j| data_index(b, ncomp, bin, c, [o[0], o[1] + j, o[2] + k]))
            })
        });
        Ok((rows, ex))
    }
}
