//! Plain descriptions of the work in a patch and in a bin.
//!
//! quilt-batch depends on no other quilt crate: the integrator describes each
//! packed bin by the patches it holds (their ghost-inclusive extents and the
//! ghost-fill counts from the mesh's ghost-fill plan), and the cost model and
//! the selectors work from these counts alone.

use serde::{Deserialize, Serialize};

use crate::error::{BatchError, Result};

/// Largest accepted patch extent along one axis (ghost cells included).
///
/// Bounding each axis keeps every cell, column and face count of a bin far
/// inside `u64`, so the totals need no overflow handling downstream.
pub const MAX_EXTENT: u32 = 1 << 20;

/// Where a patch is prepared for its solve, which decides whether its
/// prepare costs the host anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Preparation {
    /// On the host: its ghost cells filled and its interior copied into its
    /// bin, or its ghosts filled where its page-locked state lies (paper
    /// eq. 3 either way: measured on the large sphere, the in-place fill's
    /// time follows the interior and copied ghosts as the copy's does,
    /// better than the ghost cells alone).
    #[default]
    Host,
    /// Nothing on the host: a flux probe the device cuts out of its
    /// parent's box.
    OnDevice,
}

/// The work one patch brings to a batch.
///
/// Counts are in cells of the patch's own level. The interior is the extent
/// minus `ghost` layers on each side; the ghost region is the rest. Ghost cells
/// that are neither interpolated nor copied (physical-boundary ghosts, filled by
/// boundary conditions) cost nothing in the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PatchWork {
    /// Ghost-inclusive extent `[nx, ny, nz]` in cells, as placed in the bin.
    pub extent: [u32; 3],
    /// Ghost width in cells on every side.
    pub ghost: u32,
    /// Ghost cells filled by interpolation from the coarser level (paper eq. 3, the `S_i`).
    pub ghost_interpolated: u64,
    /// Ghost cells copied from same-level neighbours (paper eq. 3, the `S_j`).
    pub ghost_copied: u64,
    /// Interior boundary faces whose fluxes go into flux registers at close.
    pub flux_faces: u64,
    /// How its prepare runs.
    #[serde(default)]
    pub preparation: Preparation,
}

impl PatchWork {
    /// A patch with the given ghost-inclusive extent and ghost width, no ghost
    /// cell filled and no flux-register face (fill those with the `with_*` methods).
    pub fn new(extent: [u32; 3], ghost: u32) -> Self {
        Self {
            extent,
            ghost,
            ghost_interpolated: 0,
            ghost_copied: 0,
            flux_faces: 0,
            preparation: Preparation::Host,
        }
    }

    /// Sets how the patch is prepared.
    pub fn prepared(mut self, preparation: Preparation) -> Self {
        self.preparation = preparation;
        self
    }

    /// Cells the prepare copies on the host (eq. 3's `S_copied +
    /// V_interior`; none on the device).
    pub fn copied_cells(&self) -> u64 {
        match self.preparation {
            Preparation::Host => self.ghost_copied + self.interior_cells(),
            Preparation::OnDevice => 0,
        }
    }

    /// Sets the interpolated and copied ghost-cell counts.
    pub fn with_ghost_fill(mut self, interpolated: u64, copied: u64) -> Self {
        self.ghost_interpolated = interpolated;
        self.ghost_copied = copied;
        self
    }

    /// Sets the number of flux-register faces.
    pub fn with_flux_faces(mut self, faces: u64) -> Self {
        self.flux_faces = faces;
        self
    }

    /// Ghost-inclusive cell count (what the patch occupies in its bin).
    pub fn cells(&self) -> u64 {
        self.extent.iter().map(|&e| u64::from(e)).product()
    }

    /// Interior extent (extent minus the ghost layers; zero on an invalid patch).
    pub fn interior_extent(&self) -> [u32; 3] {
        self.extent
            .map(|e| e.saturating_sub(self.ghost.saturating_mul(2)))
    }

    /// Interior cell count: the cells copied in at prepare and written back at close.
    pub fn interior_cells(&self) -> u64 {
        self.interior_extent()
            .iter()
            .map(|&e| u64::from(e))
            .product()
    }

    /// Ghost cell count (ghost-inclusive cells minus interior cells).
    pub fn ghost_cells(&self) -> u64 {
        self.cells() - self.interior_cells()
    }

    /// Boundary faces of the interior box, the most flux-register faces a patch can have.
    pub fn interior_faces(&self) -> u64 {
        let [x, y, z] = self.interior_extent().map(u64::from);
        2 * (y * z + x * z + x * y)
    }

    /// Columns swept in each direction: a column is one line of cells along the
    /// sweep axis inside this patch (columns never cross a patch boundary).
    pub fn columns(&self) -> [u64; 3] {
        let [x, y, z] = self.extent.map(u64::from);
        [y * z, x * z, x * y]
    }

    /// Checks the description; `index` is the patch's position in its bin (for the error).
    pub fn validate(&self, index: usize) -> Result<()> {
        let bad = |reason| BatchError::PatchExtent {
            patch: index,
            extent: self.extent,
            ghost: self.ghost,
            reason,
        };
        if self.extent.iter().any(|&e| e > MAX_EXTENT) {
            return Err(bad("an axis exceeds MAX_EXTENT (2^20 cells)"));
        }
        if self
            .extent
            .iter()
            .any(|&e| u64::from(e) <= 2 * u64::from(self.ghost))
        {
            return Err(bad("every axis needs more than 2 * ghost cells"));
        }
        let available = self.ghost_cells();
        let filled = self.ghost_interpolated.checked_add(self.ghost_copied);
        if filled.is_none_or(|f| f > available) {
            return Err(BatchError::GhostCounts {
                patch: index,
                interpolated: self.ghost_interpolated,
                copied: self.ghost_copied,
                available,
            });
        }
        let faces = self.interior_faces();
        if self.flux_faces > faces {
            return Err(BatchError::FluxFaces {
                patch: index,
                flux_faces: self.flux_faces,
                available: faces,
            });
        }
        Ok(())
    }
}

/// Totals over the patches of a bin, computed once when the bin is built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BinTotals {
    /// Columns swept in x, y, z (paper eq. 1: `N_x`, `N_y`, `N_z`).
    pub columns: [u64; 3],
    /// Ghost-inclusive cells: the packed volume of the bin.
    pub cells: u64,
    /// Interior cells.
    pub interior_cells: u64,
    /// Ghost cells interpolated.
    pub ghost_interpolated: u64,
    /// Ghost cells copied.
    pub ghost_copied: u64,
    /// Flux-register faces.
    pub flux_faces: u64,
    /// Bytes the bin's patch data occupies (`cells * bytes_per_cell`), the transfer size of eq. 2.
    pub bytes: u64,
}

/// A packed bin: the patches it holds plus cached totals.
///
/// Built only through [`BinWork::new`], which validates every patch, so the
/// selectors and the cost model never see an invalid bin.
#[derive(Clone, Debug, PartialEq)]
pub struct BinWork {
    patches: Vec<PatchWork>,
    bytes_per_cell: u32,
    totals: BinTotals,
}

impl BinWork {
    /// Builds a bin from its patches; `bytes_per_cell` is `ncomp * size_of::<Real>()`.
    ///
    /// # Errors
    /// [`BatchError::EmptyBin`], [`BatchError::ZeroBytesPerCell`], or the first
    /// invalid patch's error (with its index in `patches`).
    pub fn new(patches: Vec<PatchWork>, bytes_per_cell: u32) -> Result<Self> {
        if patches.is_empty() {
            return Err(BatchError::EmptyBin);
        }
        if bytes_per_cell == 0 {
            return Err(BatchError::ZeroBytesPerCell);
        }
        let mut t = BinTotals::default();
        for (i, p) in patches.iter().enumerate() {
            p.validate(i)?;
            let c = p.columns();
            for (acc, v) in t.columns.iter_mut().zip(c) {
                *acc = acc.saturating_add(v);
            }
            t.cells = t.cells.saturating_add(p.cells());
            t.interior_cells = t.interior_cells.saturating_add(p.interior_cells());
            t.ghost_interpolated = t.ghost_interpolated.saturating_add(p.ghost_interpolated);
            t.ghost_copied = t.ghost_copied.saturating_add(p.ghost_copied);
            t.flux_faces = t.flux_faces.saturating_add(p.flux_faces);
        }
        t.bytes = t.cells.saturating_mul(u64::from(bytes_per_cell));
        Ok(Self {
            patches,
            bytes_per_cell,
            totals: t,
        })
    }

    /// A bin holding one patch: the unpacked layout of the paper's default scheme.
    pub fn single(patch: PatchWork, bytes_per_cell: u32) -> Result<Self> {
        Self::new(vec![patch], bytes_per_cell)
    }

    /// The patches, in the order given to [`BinWork::new`].
    pub fn patches(&self) -> &[PatchWork] {
        &self.patches
    }

    /// Bytes per cell (`ncomp * size_of::<Real>()`).
    pub fn bytes_per_cell(&self) -> u32 {
        self.bytes_per_cell
    }

    /// Cached totals over the patches.
    pub fn totals(&self) -> &BinTotals {
        &self.totals
    }

    /// Packed volume in cells (ghost-inclusive): the value the knapsack maximises.
    pub fn volume(&self) -> u64 {
        self.totals.cells
    }

    /// Transfer size in bytes.
    pub fn bytes(&self) -> u64 {
        self.totals.bytes
    }
}
