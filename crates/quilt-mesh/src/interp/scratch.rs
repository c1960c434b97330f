//! Memory the interpolation reads from and works in: the gathered coarse
//! values ([`CoarseScratch`]) and the kernels' work arrays ([`InterpWork`]).

use super::blocks::copy_row;
use crate::error::MeshError;
use crate::index::{IndexBox, IntVect, iv};
use crate::patch_data::PatchData;
use crate::real::Real;

/// Coarse values gathered for interpolation: `ncomp` components over a
/// box of the coarse index space (structure of arrays, `x` fastest) and a
/// mask of the cells that hold data.
///
/// Cells of the box that were not given hold stale values; the kernels
/// may read them as neighbours of a given cell, and then replace the slope
/// they enter by a one-sided one.
#[derive(Debug, Clone)]
pub struct CoarseScratch<T> {
    pub(super) bx: IndexBox,
    pub(super) ncomp: usize,
    /// Values per component (`data[c·len + offset]`).
    pub(super) len: usize,
    pub(super) data: Vec<T>,
    mask: Vec<u8>,
    /// Whether `mask` is kept (ghost fill, whose plans hold the stencil
    /// flags, skips it).
    masked: bool,
}

impl<T: Real> Default for CoarseScratch<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Real> CoarseScratch<T> {
    /// Empty scratch; memory grows on first use and is then reused.
    pub fn new() -> Self {
        Self {
            bx: IndexBox::empty(),
            ncomp: 0,
            len: 0,
            data: Vec::new(),
            mask: Vec::new(),
            masked: true,
        }
    }

    /// Prepares for `ncomp` components over `bx` with no cell available.
    pub fn reset(&mut self, bx: IndexBox, ncomp: usize) -> Result<(), MeshError> {
        self.reset_unmasked(bx, ncomp)?;
        self.masked = true;
        self.mask.clear();
        self.mask.resize(self.len, 0);
        Ok(())
    }

    /// [`CoarseScratch::reset`] without the availability mask, for callers
    /// that hold precomputed stencil flags.
    pub(crate) fn reset_unmasked(&mut self, bx: IndexBox, ncomp: usize) -> Result<(), MeshError> {
        if bx.is_empty() || ncomp == 0 {
            return Err(MeshError::invalid(
                format!("coarse scratch over {bx}"),
                "the box is empty or there are no components",
            ));
        }
        let len = usize::try_from(bx.num_cells())
            .ok()
            .filter(|l| l.checked_mul(ncomp).is_some())
            .ok_or_else(|| {
                MeshError::invalid(format!("coarse scratch over {bx}"), "the box is too large")
            })?;
        self.bx = bx;
        self.ncomp = ncomp;
        self.len = len;
        if self.data.len() < len * ncomp {
            self.data.resize(len * ncomp, T::zero());
        }
        self.masked = false;
        Ok(())
    }

    /// The box the scratch covers.
    #[inline]
    pub fn bx(&self) -> IndexBox {
        self.bx
    }

    /// Number of components.
    #[inline]
    pub fn ncomp(&self) -> usize {
        self.ncomp
    }

    /// The availability mask over the box, if the scratch keeps one.
    #[inline]
    pub(super) fn mask(&self) -> Option<&[u8]> {
        self.masked.then_some(&self.mask[..self.len])
    }

    /// Every component's values over the box, in order.
    #[inline]
    pub(super) fn comps(&self) -> impl Iterator<Item = &[T]> {
        self.data[..self.ncomp * self.len].chunks_exact(self.len)
    }

    /// Whether cell `p` holds data.
    pub fn is_available(&self, p: &IntVect) -> bool {
        self.masked && self.bx.contains(p) && self.mask[self.bx.offset(p)] != 0
    }

    /// Value of component `c` at `p`, if available.
    pub fn get(&self, c: usize, p: &IntVect) -> Option<T> {
        (c < self.ncomp && self.is_available(p))
            .then(|| self.data[c * self.len + self.bx.offset(p)])
    }

    /// Copies every component on `region` (this scratch's index space)
    /// from `src`: scratch cell `p` receives source cell `p − shift`, and
    /// becomes available. `region` must lie in the scratch box, `region −
    /// shift` in the source's data box, and the component counts agree.
    pub fn copy_from(
        &mut self,
        src: &PatchData<T>,
        region: &IndexBox,
        shift: &IntVect,
    ) -> Result<(), MeshError> {
        if region.is_empty() {
            return Ok(());
        }
        let sreg = region.shift(&-shift);
        if !self.bx.contains_box(region) || !src.data_box().contains_box(&sreg) {
            return Err(MeshError::BadAccess {
                field: format!("coarse gather of {region} (shift {:?})", shift.as_slice()),
                why: format!(
                    "scratch box {} or source data box {} does not hold it",
                    self.bx,
                    src.data_box()
                ),
            });
        }
        if src.ncomp() != self.ncomp {
            return Err(MeshError::BadAccess {
                field: format!("coarse gather of {region}"),
                why: format!(
                    "source has {} components, scratch {}",
                    src.ncomp(),
                    self.ncomp
                ),
            });
        }
        self.copy_unchecked(src, region, shift);
        Ok(())
    }

    /// [`CoarseScratch::copy_from`] for callers that checked the boxes.
    pub(crate) fn copy_unchecked(
        &mut self,
        src: &PatchData<T>,
        region: &IndexBox,
        shift: &IntVect,
    ) {
        if region.is_empty() {
            return;
        }
        let nx = region.size().x as usize;
        if self.masked {
            for k in region.lo.z..=region.hi.z {
                for j in region.lo.y..=region.hi.y {
                    let od = self.bx.offset(&iv(region.lo.x, j, k));
                    self.mask[od..od + nx].fill(1);
                }
            }
        }
        let [_, ssy, ssz] = src.strides();
        let dsz = self.bx.size();
        let (dsy, dsz) = (dsz.x as usize, dsz.x as usize * dsz.y as usize);
        let os0 = src.index(&(region.lo - shift));
        let od0 = self.bx.offset(&region.lo);
        let (ny, nz) = (region.size().y as usize, region.size().z as usize);
        for c in 0..self.ncomp {
            let d = &mut self.data[c * self.len..(c + 1) * self.len];
            for dk in 0..nz {
                for dj in 0..ny {
                    let os = os0 + dk * ssz + dj * ssy;
                    let od = od0 + dk * dsz + dj * dsy;
                    // Row by row: see `PatchData::row`.
                    copy_row(&mut d[od..od + nx], src.row(c, os, nx));
                }
            }
        }
    }
}

/// Reusable work arrays of [`super::interpolate`]; they grow to the
/// largest box seen and are then reused without allocating.
#[derive(Debug, Clone, Default)]
pub struct InterpWork<T> {
    /// Stencil flags of the coarse cells under a box, from a mask.
    pub(super) mask_flags: Vec<u8>,
    /// Stencil flags of a plane of coarse cells, column by column.
    pub(super) flags: Vec<u8>,
    /// Positions of the cells of a row or plane that lack a neighbour.
    pub(super) fix: Vec<u32>,
    /// Slopes along `x`, `y`, `z` of a row or column of coarse cells.
    pub(super) sx: Vec<T>,
    pub(super) sy: Vec<T>,
    pub(super) sz: Vec<T>,
    /// A column of coarse cells and its four side neighbours, gathered
    /// into contiguous runs.
    pub(super) col: Vec<T>,
    /// Per fine cell of a line: value plus first slope term, and the two
    /// other slopes of its coarse cell.
    pub(super) e0: Vec<T>,
    pub(super) e1: Vec<T>,
    pub(super) e2: Vec<T>,
    /// Fine values of one plane of a thin box, column by column.
    pub(super) tile: Vec<T>,
}

impl<T: Real> InterpWork<T> {
    /// Empty work arrays; they grow on first use.
    pub fn new() -> Self {
        Self {
            mask_flags: Vec::new(),
            flags: Vec::new(),
            fix: Vec::new(),
            sx: Vec::new(),
            sy: Vec::new(),
            sz: Vec::new(),
            col: Vec::new(),
            e0: Vec::new(),
            e1: Vec::new(),
            e2: Vec::new(),
            tile: Vec::new(),
        }
    }
}

/// Grows `v` to at least `n` values.
#[inline]
pub(super) fn at_least<V: Copy + Default>(v: &mut Vec<V>, n: usize) {
    if v.len() < n {
        v.resize(n, V::default());
    }
}
