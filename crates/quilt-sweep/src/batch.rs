//! [`Batch`]: the data of one batch (all bins) plus its flux buffer.

use std::fmt;

use crate::error::LayoutError;
use crate::layout::{BatchLayout, data_index};
use crate::real::Real;
use crate::storage::HostMemory;

/// A patch of a batch that is a part of another patch's dense ghost box
/// (a flux probe out of its coarse patch's filled box): the descriptor
/// `desc`'s extent of box `boxes[parent]`, from `offset` (cells along x,
/// y, z) on, as [`Batch::load_patch_within`] reads it. Backends that read
/// patches where they live take these beside the boxes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BoxPart {
    /// Index of the part's descriptor in the batch's layout.
    pub desc: usize,
    /// Index of the box it lies in, among the boxes handed along.
    pub parent: usize,
    /// Where the part's first cell (ghosts included) lies in that box.
    pub offset: [u32; 3],
}

impl BoxPart {
    /// The box the part lies in, of `boxes`; the error names both.
    pub fn parent_in<'b, B>(&self, boxes: &'b [B]) -> Result<&'b B, LayoutError> {
        boxes.get(self.parent).ok_or_else(|| {
            LayoutError::Access(format!(
                "probe descriptor {}: parent box {} of {}",
                self.desc,
                self.parent,
                boxes.len()
            ))
        })
    }
}

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

    /// Copies a patch from a part of a larger dense array: `src` holds a
    /// box of extent `src_extent` (ordered as in [`Batch::load_patch`],
    /// with the layout's components), and the patch (ghosts included) is
    /// its sub-box of the descriptor's extent starting at `offset`. A flux
    /// probe is loaded this way from its coarse patch's filled box.
    pub fn load_patch_from(
        &mut self,
        patch: usize,
        src: &[T],
        src_extent: [u32; 3],
        offset: [u32; 3],
    ) -> Result<(), LayoutError> {
        let d = self
            .layout
            .dense_part(patch, src.len(), src_extent, offset)?;
        let ncomp = self.layout.ncomp() as usize;
        let [sx, sy, sz] = src_extent.map(|e| e as usize);
        let (rows, len) = self.rows(patch, ncomp * d.total_cells() as usize)?;
        let [ey, ez] = [d.extent[1] as usize, d.extent[2] as usize];
        let [ox, oy, oz] = offset.map(|v| v as usize);
        let data = self.data_mut();
        for (n, dst_start) in rows.enumerate() {
            // Row n of the patch is (c, k, j) with n = (c * ez + k) * ey + j.
            let (j, k, c) = (n % ey, (n / ey) % ez, n / (ey * ez));
            let s0 = ((c * sz + oz + k) * sy + oy + j) * sx + ox;
            data[dst_start..dst_start + len].copy_from_slice(&src[s0..s0 + len]);
        }
        Ok(())
    }

    /// [`Batch::load_patch_from`] out of the dense box of another patch of
    /// the layout, `parent` (its extent is the box's): a flux probe out of
    /// its coarse patch's filled box.
    pub fn load_patch_within(
        &mut self,
        patch: usize,
        parent: usize,
        src: &[T],
        offset: [u32; 3],
    ) -> Result<(), LayoutError> {
        let extent = self.layout.patches().get(parent).map(|d| d.extent);
        let extent = extent.ok_or_else(|| {
            LayoutError::Access(format!(
                "parent index {parent} of patch index {patch} out of range ({} patches)",
                self.layout.patches().len()
            ))
        })?;
        self.load_patch_from(patch, src, extent, offset)
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

    /// Copies only the interior cells of `patch` (its extent less `ghost`
    /// cells on every side) out of the batch into `dst`, a dense array of
    /// the whole patch ordered as in [`Batch::load_patch`]; the ghost cells
    /// of `dst` keep their values. A solver writes back only interiors, so
    /// this is the way back into the patch's own array after a step.
    pub fn store_interior(&self, patch: usize, dst: &mut [T]) -> Result<(), LayoutError> {
        let (rows, len) = self.rows(patch, dst.len())?;
        let d = self.layout.patches()[patch];
        let g = d.ghost as usize;
        let [ex, ey, ez] = d.extent.map(|e| e as usize);
        if [ex, ey, ez].iter().any(|&e| e <= 2 * g) {
            return Ok(());
        }
        let data = self.data();
        for (n, src_start) in rows.enumerate() {
            // Row n of the dense array is (c, k, j) with n = (c * ez + k) * ey + j.
            let (j, k) = (n % ey, (n / ey) % ez);
            if j < g || j >= ey - g || k < g || k >= ez - g {
                continue;
            }
            let row = n * len;
            dst[row + g..row + len - g].copy_from_slice(&data[src_start + g..src_start + len - g]);
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
        let d = l.dense_patch(patch, len)?;
        let [ex, ey, ez] = d.extent.map(|e| e as usize);
        let ncomp = l.ncomp() as usize;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::PatchShape;

    /// Two patches of different shapes and ghost widths packed into one bin.
    fn layout() -> BatchLayout {
        let shapes = [
            PatchShape::new(3, [4, 5, 3], 2, [0.1; 3]),
            PatchShape::new(9, [2, 3, 6], 1, [0.2; 3]),
        ];
        BatchLayout::packed(16, 5, &shapes, &[(0, [0, 0, 0]), (0, [8, 0, 0])]).unwrap()
    }

    #[test]
    fn store_interior_copies_interiors_and_leaves_ghosts_alone() {
        let l = layout();
        let mut batch = Batch::<f64>::new(l.clone());
        for (p, d) in l.patches().iter().enumerate() {
            let n = 5 * d.total_cells() as usize;
            let src: Vec<f64> = (0..n).map(|v| (1000 * p + v) as f64).collect();
            batch.load_patch(p, &src).unwrap();
            // Round trip: every interior value back, every ghost untouched.
            let mut dst = vec![-1.0; n];
            batch.store_interior(p, &mut dst).unwrap();
            let [ex, ey, ez] = d.extent;
            let g = d.ghost;
            let mut interior = 0;
            for c in 0..5 {
                for k in 0..ez {
                    for j in 0..ey {
                        for i in 0..ex {
                            let at = (((c * ez + k) * ey + j) * ex + i) as usize;
                            let inside = [i, j, k]
                                .iter()
                                .zip(d.extent)
                                .all(|(&x, e)| x >= g && x < e - g);
                            if inside {
                                interior += 1;
                                assert_eq!(dst[at], src[at], "patch {p} c {c} cell {i} {j} {k}");
                                assert_eq!(batch.get(p, c, [i, j, k]), Some(src[at]));
                            } else {
                                assert_eq!(
                                    dst[at], -1.0,
                                    "ghost written: patch {p} cell {i} {j} {k}"
                                );
                            }
                        }
                    }
                }
            }
            assert_eq!(interior, 5 * d.interior_cells());
        }
    }

    #[test]
    fn a_patch_loads_from_part_of_a_larger_box() {
        let l = layout();
        let mut batch = Batch::<f64>::new(l.clone());
        let d = l.patches()[1];
        // A box larger by 1, 2 and 3 cells, the patch at (1, 0, 2) in it.
        let big = [d.extent[0] + 1, d.extent[1] + 2, d.extent[2] + 3];
        let off = [1, 0, 2];
        let (bx, by, bz) = (big[0] as usize, big[1] as usize, big[2] as usize);
        let src: Vec<f64> = (0..5 * bx * by * bz).map(|v| v as f64).collect();
        batch.load_patch_from(1, &src, big, off).unwrap();
        let [ex, ey, ez] = d.extent;
        for c in 0..5u32 {
            for k in 0..ez {
                for j in 0..ey {
                    for i in 0..ex {
                        let (x, y, z) = (
                            (i + off[0]) as usize,
                            (j + off[1]) as usize,
                            (k + off[2]) as usize,
                        );
                        let at = ((c as usize * bz + z) * by + y) * bx + x;
                        assert_eq!(
                            batch.get(1, c, [i, j, k]),
                            Some(src[at]),
                            "c {c} cell {i} {j} {k}"
                        );
                    }
                }
            }
        }
        // Past the box's far side, or a source of the wrong size: errors.
        assert!(batch.load_patch_from(1, &src, big, [2, 0, 2]).is_err());
        assert!(batch.load_patch_from(1, &src[1..], big, off).is_err());
        assert!(batch.load_patch_from(2, &src, big, off).is_err());
    }

    /// Within another patch's box: the parent's extent is the box's.
    #[test]
    fn a_patch_loads_from_another_patchs_box() {
        let shapes = [
            PatchShape::new(3, [4, 5, 3], 2, [0.1; 3]),
            PatchShape::new(9, [2, 3, 2], 1, [0.2; 3]),
        ];
        let l = BatchLayout::packed(16, 5, &shapes, &[(0, [0, 0, 0]), (0, [8, 0, 0])]).unwrap();
        let (child, parent) = (1, 0);
        let e = l.patches()[parent].extent;
        let src: Vec<f64> = (0..5 * e.iter().product::<u32>()).map(f64::from).collect();
        let (mut a, mut b) = (Batch::<f64>::new(l.clone()), Batch::<f64>::new(l.clone()));
        a.load_patch_within(child, parent, &src, [1, 1, 1]).unwrap();
        b.load_patch_from(child, &src, e, [1, 1, 1]).unwrap();
        assert_eq!(a.data(), b.data());
        let n = l.patches().len();
        let err = a.load_patch_within(child, n, &src, [0; 3]).unwrap_err();
        assert!(err.to_string().contains("out of range"), "{err}");
    }

    #[test]
    fn store_interior_refuses_a_wrong_length_or_patch() {
        let l = layout();
        let batch = Batch::<f32>::new(l.clone());
        let n = 5 * l.patches()[1].total_cells() as usize;
        let mut short = vec![7.0f32; n - 1];
        let err = batch.store_interior(1, &mut short).unwrap_err();
        assert!(err.to_string().contains("expected"), "{err}");
        assert!(short.iter().all(|&v| v == 7.0));
        let mut dst = vec![0.0f32; n];
        assert!(batch.store_interior(2, &mut dst).is_err());
    }
}
