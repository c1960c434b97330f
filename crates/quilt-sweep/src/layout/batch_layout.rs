//! [`BatchLayout`]: bins, the descriptor table and its validation.

use rayon::prelude::*;
use rustc_hash::FxHashSet;

use super::desc::{PatchDesc, PatchShape};
use super::flux::flux_len;
use crate::error::LayoutError;
use quilt_mesh::BinGeometry;

/// The paper's bin edge: 64 cells, a multiple of the warp size that gave the
/// best occupancy and packing ratio (Raghavan & Vadhiyar 2015, sec. 3.1).
pub const DEFAULT_BIN_EDGE: u32 = 64;

/// Index of component `comp` of bin cell `cell = (x, y, z)` in bin `bin`:
/// [`BinGeometry::index`], the one statement of the bin layout (identical
/// in the CUDA kernels, where it is computed in 64 bits).
#[inline(always)]
pub const fn data_index(
    bin_edge: usize,
    ncomp: usize,
    bin: usize,
    comp: usize,
    cell: [usize; 3],
) -> usize {
    BinGeometry::new(bin_edge, ncomp).index(bin, comp, cell)
}

/// The layout of a batch: bin edge, components, bins and one validated
/// [`PatchDesc`] per patch.
///
/// Construct it with [`BatchLayout::packed`] (placements from bin packing),
/// [`BatchLayout::one_per_slot`] (the paper's default scheme: every patch
/// alone at offset 0 of its own bin) or [`BatchLayout::from_descs`]. All
/// constructors check that patches fit their bins, do not overlap, have at
/// least one interior cell and a positive cell size, and that ids are unique;
/// the flux-buffer offsets are the prefix sums of [`flux_len`].
#[derive(Clone, Debug, PartialEq)]
pub struct BatchLayout {
    bin_edge: u32,
    ncomp: u32,
    nbins: u32,
    patches: Vec<PatchDesc>,
    flux_len: usize,
}

impl BatchLayout {
    /// Layout from bin-packing placements: patch `i` goes to bin
    /// `placements[i].0` at offset `placements[i].1`. The number of bins is
    /// one more than the largest bin index used.
    pub fn packed(
        bin_edge: u32,
        ncomp: u32,
        shapes: &[PatchShape],
        placements: &[(u32, [u32; 3])],
    ) -> Result<Self, LayoutError> {
        if shapes.len() != placements.len() {
            return Err(LayoutError::PlacementCount {
                patches: shapes.len(),
                placements: placements.len(),
            });
        }
        let nbins = placements.iter().map(|p| p.0 + 1).max().unwrap_or(0);
        let descs = shapes
            .iter()
            .zip(placements)
            .map(|(s, &(bin, offset))| desc_of(s, bin, offset))
            .collect();
        Self::with_flux_offsets(bin_edge, ncomp, nbins, descs)
    }

    /// The unpacked layout of the paper's default scheme: patch `i` alone in
    /// bin `i` at offset 0.
    pub fn one_per_slot(
        bin_edge: u32,
        ncomp: u32,
        shapes: &[PatchShape],
    ) -> Result<Self, LayoutError> {
        let placements: Vec<(u32, [u32; 3])> = (0..shapes.len())
            .map(|i| u32::try_from(i).map(|b| (b, [0; 3])))
            .collect::<Result<_, _>>()
            .map_err(|_| LayoutError::TooLarge {
                nbins: u32::MAX,
                ncomp,
                bin_edge,
            })?;
        Self::packed(bin_edge, ncomp, shapes, &placements)
    }

    /// Layout from complete descriptors (for example read back from a GPU
    /// launch record); validates everything, including the flux offsets.
    pub fn from_descs(
        bin_edge: u32,
        ncomp: u32,
        nbins: u32,
        descs: Vec<PatchDesc>,
    ) -> Result<Self, LayoutError> {
        let layout = Self::with_flux_offsets(bin_edge, ncomp, nbins, descs.clone())?;
        for (given, expected) in descs.iter().zip(&layout.patches) {
            if given.flux_offset != expected.flux_offset {
                return Err(LayoutError::FluxOffset {
                    patch: given.id,
                    expected: expected.flux_offset,
                    found: given.flux_offset,
                });
            }
        }
        Ok(layout)
    }

    fn with_flux_offsets(
        bin_edge: u32,
        ncomp: u32,
        nbins: u32,
        mut descs: Vec<PatchDesc>,
    ) -> Result<Self, LayoutError> {
        if bin_edge == 0 {
            return Err(LayoutError::BinEdge(bin_edge));
        }
        if ncomp == 0 {
            return Err(LayoutError::NoComponents);
        }
        let too_large = LayoutError::TooLarge {
            nbins,
            ncomp,
            bin_edge,
        };
        let addressable = BinGeometry::new(bin_edge as usize, ncomp as usize)
            .checked_len(nbins as usize)
            .is_some();
        if !addressable {
            return Err(too_large);
        }
        let mut ids = FxHashSet::with_capacity_and_hasher(descs.len(), Default::default());
        let mut offset = 0u64;
        for d in &mut descs {
            check_desc(d, bin_edge, nbins)?;
            if !ids.insert(d.id) {
                return Err(LayoutError::DuplicateId(d.id));
            }
            d.flux_offset = offset;
            offset += flux_len(d, ncomp);
        }
        let flux_len = usize::try_from(offset).map_err(|_| LayoutError::TooLarge {
            nbins,
            ncomp,
            bin_edge,
        })?;
        check_overlaps(&descs)?;
        Ok(Self {
            bin_edge,
            ncomp,
            nbins,
            patches: descs,
            flux_len,
        })
    }

    /// Edge `B` of the cubic bins.
    pub fn bin_edge(&self) -> u32 {
        self.bin_edge
    }

    /// Components per cell.
    pub fn ncomp(&self) -> u32 {
        self.ncomp
    }

    /// Number of bins.
    pub fn nbins(&self) -> u32 {
        self.nbins
    }

    /// The descriptor table, in patch order.
    pub fn patches(&self) -> &[PatchDesc] {
        &self.patches
    }

    /// The descriptor of patch `patch`; the error names the index.
    fn desc(&self, patch: usize) -> Result<PatchDesc, LayoutError> {
        self.patches.get(patch).copied().ok_or_else(|| {
            LayoutError::Access(format!(
                "patch index {patch} out of range ({} patches)",
                self.patches.len()
            ))
        })
    }

    /// The descriptor of patch `patch`, if a dense array of it (ghosts
    /// included, every component: `ncomp` times its extent's cells, as
    /// [`crate::Batch::load_patch`] takes) has `len` values; the error
    /// names the patch index or the lengths otherwise.
    pub fn dense_patch(&self, patch: usize, len: usize) -> Result<PatchDesc, LayoutError> {
        let d = self.desc(patch)?;
        let ncomp = self.ncomp as usize;
        let want = ncomp * d.total_cells() as usize;
        if len != want {
            return Err(LayoutError::Access(format!(
                "patch {}: dense array has {len} values, expected {want} ({ncomp} x {:?})",
                d.id, d.extent
            )));
        }
        Ok(d)
    }

    /// The descriptor of patch `patch`, if it is a part of a dense array
    /// of `len` values holding a box of extent `src_extent` (ordered as
    /// [`crate::Batch::load_patch`] takes, with the layout's components):
    /// the patch's extent (ghosts included) from `offset` on lies inside
    /// the box. The error names the patch, the box and the lengths
    /// otherwise. [`crate::Batch::load_patch_from`] reads such a part.
    pub fn dense_part(
        &self,
        patch: usize,
        len: usize,
        src_extent: [u32; 3],
        offset: [u32; 3],
    ) -> Result<PatchDesc, LayoutError> {
        let d = self.desc(patch)?;
        let ncomp = self.ncomp as usize;
        let cells = src_extent.iter().map(|&e| e as usize).product::<usize>();
        let fits = (0..3)
            .all(|a| u64::from(offset[a]) + u64::from(d.extent[a]) <= u64::from(src_extent[a]));
        if len != ncomp * cells || !fits {
            return Err(LayoutError::Access(format!(
                "patch {}: {:?} at {offset:?} of a box of {src_extent:?} with {len} values \
                 ({ncomp} components)",
                d.id, d.extent
            )));
        }
        Ok(d)
    }

    /// Number of values of the data array: `nbins * ncomp * B^3`.
    pub fn data_len(&self) -> usize {
        self.nbins as usize * self.bins().bin()
    }

    /// The shape of the bins: their strides and index arithmetic.
    pub fn bins(&self) -> BinGeometry {
        BinGeometry::new(self.bin_edge as usize, self.ncomp as usize)
    }

    /// Number of values of the flux buffer.
    pub fn flux_len(&self) -> usize {
        self.flux_len
    }

    /// Number of interior cells over all patches.
    pub fn interior_cells(&self) -> u64 {
        self.patches.iter().map(PatchDesc::interior_cells).sum()
    }

    /// Fraction of bin volume covered by patches (ghosts included), the
    /// packing efficiency of the paper's Table 3.
    pub fn fill_ratio(&self) -> f64 {
        if self.nbins == 0 {
            return 0.0;
        }
        let used: u64 = self.patches.iter().map(PatchDesc::total_cells).sum();
        used as f64 / (f64::from(self.nbins) * f64::from(self.bin_edge).powi(3))
    }

    /// The ranges of the data array that bins `bins` hold patch cells in,
    /// ascending: whole x rows of every `(bin, component, z)` plane that a
    /// patch touches, merged where they meet or where fewer than `max_gap`
    /// values lie between them. What a device copies instead of whole bins:
    /// the rest of a bin is never read or written by a sweep.
    pub fn occupied_runs(&self, bins: std::ops::Range<u32>, max_gap: usize) -> Vec<(usize, usize)> {
        let b = self.bin_edge as usize;
        let nc = self.ncomp as usize;
        let bins = bins.start..bins.end.min(self.nbins);
        let mut in_bin: Vec<Vec<&PatchDesc>> = vec![Vec::new(); bins.len()];
        for d in &self.patches {
            if bins.contains(&d.bin) {
                in_bin[(d.bin - bins.start) as usize].push(d);
            }
        }
        let mut runs: Vec<(usize, usize)> = Vec::new();
        let mut push = |start: usize, len: usize| match runs.last_mut() {
            Some(last) if start <= last.0 + last.1 + max_gap => {
                last.1 = (start + len).max(last.0 + last.1) - last.0;
            }
            _ => runs.push((start, len)),
        };
        // Row intervals [y0, y1) of one z plane, merged.
        let mut rows: Vec<(usize, usize)> = Vec::new();
        let mut planes: Vec<Vec<(usize, usize)>> = vec![Vec::new(); b];
        for (k, patches) in in_bin.iter().enumerate() {
            if patches.is_empty() {
                continue;
            }
            let bin = bins.start as usize + k;
            for (z, plane) in planes.iter_mut().enumerate() {
                rows.clear();
                for d in patches {
                    let (z0, z1) = (d.offset[2] as usize, (d.offset[2] + d.extent[2]) as usize);
                    if (z0..z1).contains(&z) {
                        let y0 = d.offset[1] as usize;
                        rows.push((y0, y0 + d.extent[1] as usize));
                    }
                }
                rows.sort_unstable();
                plane.clear();
                for &(y0, y1) in &rows {
                    match plane.last_mut() {
                        Some(last) if y0 <= last.1 => last.1 = last.1.max(y1),
                        _ => plane.push((y0, y1)),
                    }
                }
            }
            for c in 0..nc {
                for (z, plane) in planes.iter().enumerate() {
                    let base = data_index(b, nc, bin, c, [0, 0, z]);
                    for &(y0, y1) in plane {
                        push(base + y0 * b, (y1 - y0) * b);
                    }
                }
            }
        }
        runs
    }

    /// Data index of component `comp` of patch-local cell `cell` (ghosts
    /// included, `0 .. extent`), or `None` if out of range.
    pub fn cell_index(&self, patch: usize, comp: u32, cell: [u32; 3]) -> Option<usize> {
        let d = self.patches.get(patch)?;
        if comp >= self.ncomp || (0..3).any(|a| cell[a] >= d.extent[a]) {
            return None;
        }
        Some(data_index(
            self.bin_edge as usize,
            self.ncomp as usize,
            d.bin as usize,
            comp as usize,
            [0, 1, 2].map(|a| (d.offset[a] + cell[a]) as usize),
        ))
    }
}

fn desc_of(s: &PatchShape, bin: u32, offset: [u32; 3]) -> PatchDesc {
    PatchDesc {
        id: s.id,
        dx: s.dx,
        flux_offset: 0,
        bin,
        offset,
        extent: s.extent,
        ghost: s.ghost,
        level: s.level,
        user: s.user,
    }
}

fn check_desc(d: &PatchDesc, bin_edge: u32, nbins: u32) -> Result<(), LayoutError> {
    if d.bin >= nbins {
        return Err(LayoutError::BinIndex {
            patch: d.id,
            bin: d.bin,
            nbins,
        });
    }
    if d.extent.iter().any(|&e| e <= d.ghost.saturating_mul(2)) {
        return Err(LayoutError::NoInterior {
            patch: d.id,
            extent: d.extent,
            ghost: d.ghost,
        });
    }
    if (0..3).any(|a| u64::from(d.offset[a]) + u64::from(d.extent[a]) > u64::from(bin_edge)) {
        return Err(LayoutError::OutsideBin {
            patch: d.id,
            bin: d.bin,
            offset: d.offset,
            extent: d.extent,
            bin_edge,
        });
    }
    if d.dx.iter().any(|&h| !(h.is_finite() && h > 0.0)) {
        return Err(LayoutError::Spacing {
            patch: d.id,
            dx: d.dx,
        });
    }
    Ok(())
}

/// Descriptors from which a layout is a resident hierarchy's (thousands of
/// patches and probes) rather than a batch's, and the work over it
/// (overlap check, planning, tables) goes side by side on the thread
/// pool. A batch's layout is assembled on the pipeline's coordinating
/// thread, or staged on a thread of the preparing pool, while prepare
/// tasks hold the pool: its work stays on that thread.
pub const LARGE_LAYOUT: usize = 4096;

fn check_overlaps(descs: &[PatchDesc]) -> Result<(), LayoutError> {
    let parallel = descs.len() >= LARGE_LAYOUT;
    let mut by_bin: Vec<usize> = (0..descs.len()).collect();
    let key = |&i: &usize| (descs[i].bin, descs[i].offset[0], i);
    if parallel {
        by_bin.par_sort_unstable_by_key(key);
    } else {
        by_bin.sort_unstable_by_key(key);
    }
    let mut groups = Vec::new();
    let mut start = 0;
    while start < by_bin.len() {
        let bin = descs[by_bin[start]].bin;
        let end = by_bin[start..]
            .iter()
            .position(|&i| descs[i].bin != bin)
            .map_or(by_bin.len(), |n| start + n);
        groups.push(&by_bin[start..end]);
        start = end;
    }
    // The first overlap in bin order is the one reported either way.
    let first = if parallel {
        groups
            .par_iter()
            .map(|group| check_bin(descs, group))
            .find_first(Result::is_err)
    } else {
        groups
            .iter()
            .map(|group| check_bin(descs, group))
            .find(Result::is_err)
    };
    first.unwrap_or(Ok(()))
}

/// The first overlap among `group`, the patches of one bin sorted by `x`
/// offset.
fn check_bin(descs: &[PatchDesc], group: &[usize]) -> Result<(), LayoutError> {
    for (n, &i) in group.iter().enumerate() {
        let a = &descs[i];
        for &j in &group[n + 1..] {
            let b = &descs[j];
            // Sorted by x offset: no later patch can reach back into `a`.
            if b.offset[0] >= a.offset[0] + a.extent[0] {
                break;
            }
            let overlaps = (0..3).all(|ax| {
                a.offset[ax] < b.offset[ax] + b.extent[ax]
                    && b.offset[ax] < a.offset[ax] + a.extent[ax]
            });
            if overlaps {
                let (x, y) = if i < j { (a, b) } else { (b, a) };
                return Err(LayoutError::Overlap {
                    a: x.id,
                    b: y.id,
                    bin: a.bin,
                    cell: [0, 1, 2].map(|ax| a.offset[ax].max(b.offset[ax])),
                });
            }
        }
    }
    Ok(())
}
