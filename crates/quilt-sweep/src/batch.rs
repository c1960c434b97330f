//! [`Batch`]: the data of one batch (all bins) plus its flux buffer.

use std::fmt;

use crate::error::LayoutError;
use crate::layout::{BatchLayout, data_index};
use crate::real::Real;
use crate::storage::HostMemory;

/// The values of one batch in THE layout: `layout.data_len()` cell values
/// and `layout.flux_len()` flux values (see [`layout`](crate::layout) for
/// both index functions), in memory the batch owns: a vector, or memory a
/// backend handed out ([`HostMemory`], e.g. page-locked memory a GPU copies
/// from directly).
///
/// The CPU prepares a batch (loads patch interiors and ghosts), a
/// [`Solver`](crate::Solver) advances it, and the close step reads the
/// patches and the flux buffer back. Cells of a bin not covered by a patch
/// stay as they are. A batch is reused for other layouts with
/// [`Batch::relayout`], which keeps its memory: after the first batches of
/// a run, preparing a batch allocates nothing.
pub struct Batch<T> {
    layout: BatchLayout,
    data: Box<dyn HostMemory<T>>,
    flux: Box<dyn HostMemory<T>>,
}

impl<T: Real> Batch<T> {
    /// A zero-filled batch for `layout`, in vectors.
    pub fn new(layout: BatchLayout) -> Self {
        let data = vec![T::zero(); layout.data_len()];
        let flux = vec![T::zero(); layout.flux_len()];
        Self {
            layout,
            data: Box::new(data),
            flux: Box::new(flux),
        }
    }

    /// A batch for `layout` in the given memory (contents as they are);
    /// fails if either is too small.
    pub fn in_memory(
        layout: BatchLayout,
        data: Box<dyn HostMemory<T>>,
        flux: Box<dyn HostMemory<T>>,
    ) -> Result<Self, LayoutError> {
        check_capacity(&layout, data.as_slice().len(), flux.as_slice().len())?;
        Ok(Self { layout, data, flux })
    }

    /// Gives the batch another layout, keeping its memory and its contents
    /// (cells of the new layout's patches are to be prepared anew); fails,
    /// leaving the batch as it was, if the memory is too small.
    pub fn relayout(&mut self, layout: BatchLayout) -> Result<(), LayoutError> {
        check_capacity(&layout, self.capacity().0, self.capacity().1)?;
        self.layout = layout;
        Ok(())
    }

    /// Values the memory holds: `(data, flux)`.
    pub fn capacity(&self) -> (usize, usize) {
        (self.data.as_slice().len(), self.flux.as_slice().len())
    }

    /// Whether both arrays are in page-locked memory (see
    /// [`HostMemory::page_locked`]).
    pub fn page_locked(&self) -> bool {
        self.data.page_locked() && self.flux.page_locked()
    }

    /// The memory, for reuse by another batch.
    pub fn into_memory(self) -> (Box<dyn HostMemory<T>>, Box<dyn HostMemory<T>>) {
        (self.data, self.flux)
    }

    /// The layout.
    pub fn layout(&self) -> &BatchLayout {
        &self.layout
    }

    /// All cell values, in layout order.
    pub fn data(&self) -> &[T] {
        &self.data.as_slice()[..self.layout.data_len()]
    }

    /// All cell values, mutable (for preparing a batch in place).
    pub fn data_mut(&mut self) -> &mut [T] {
        let n = self.layout.data_len();
        &mut self.data.as_mut_slice()[..n]
    }

    /// The flux buffer written by the last step.
    pub fn flux(&self) -> &[T] {
        &self.flux.as_slice()[..self.layout.flux_len()]
    }

    /// Data and flux buffer at once, mutable (what a solver needs).
    pub fn buffers_mut(&mut self) -> (&BatchLayout, &mut [T], &mut [T]) {
        let (n, f) = (self.layout.data_len(), self.layout.flux_len());
        (
            &self.layout,
            &mut self.data.as_mut_slice()[..n],
            &mut self.flux.as_mut_slice()[..f],
        )
    }

    /// Value of component `comp` at patch-local cell `cell` (ghosts
    /// included); `None` if out of range.
    pub fn get(&self, patch: usize, comp: u32, cell: [u32; 3]) -> Option<T> {
        self.layout
            .cell_index(patch, comp, cell)
            .map(|i| self.data()[i])
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
        self.data_mut()[i] = value;
        Ok(())
    }

    /// Copies a patch from its own dense array `src` (ghosts included,
    /// component-major, x fastest: `((c * ez + k) * ey + j) * ex + i`) into
    /// the batch.
    pub fn load_patch(&mut self, patch: usize, src: &[T]) -> Result<(), LayoutError> {
        let (rows, len) = self.rows(patch, src.len())?;
        let data = self.data_mut();
        for (n, dst_start) in rows.enumerate() {
            data[dst_start..dst_start + len].copy_from_slice(&src[n * len..(n + 1) * len]);
        }
        Ok(())
    }

    /// Copies a patch (ghosts included) out of the batch into a dense array
    /// ordered as in [`Batch::load_patch`].
    pub fn store_patch(&self, patch: usize, dst: &mut [T]) -> Result<(), LayoutError> {
        let (rows, len) = self.rows(patch, dst.len())?;
        let data = self.data();
        for (n, src_start) in rows.enumerate() {
            dst[n * len..(n + 1) * len].copy_from_slice(&data[src_start..src_start + len]);
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

fn check_capacity(layout: &BatchLayout, data: usize, flux: usize) -> Result<(), LayoutError> {
    for (what, have, need) in [
        ("data", data, layout.data_len()),
        ("flux", flux, layout.flux_len()),
    ] {
        if have < need {
            return Err(LayoutError::Capacity { what, have, need });
        }
    }
    Ok(())
}

/// A copy in vectors, whatever memory the original is in.
impl<T: Real> Clone for Batch<T> {
    fn clone(&self) -> Self {
        Self {
            layout: self.layout.clone(),
            data: Box::new(self.data().to_vec()),
            flux: Box::new(self.flux().to_vec()),
        }
    }
}

/// Equal layouts and values (the memory they are in does not count).
impl<T: Real> PartialEq for Batch<T> {
    fn eq(&self, other: &Self) -> bool {
        self.layout == other.layout && self.data() == other.data() && self.flux() == other.flux()
    }
}

impl<T: Real> fmt::Debug for Batch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Batch")
            .field("layout", &self.layout)
            .field("capacity", &self.capacity())
            .field("page_locked", &self.page_locked())
            .finish_non_exhaustive()
    }
}
