//! The per-patch descriptor uploaded to the GPU as it is.

use bytemuck::{Pod, Zeroable};

/// Where one patch lives in a batch and how it is discretised.
///
/// `#[repr(C)]`, 80 bytes, no padding: a descriptor table (`&[PatchDesc]`)
/// can be copied byte for byte into CUDA constant memory and read there as
///
/// ```c
/// struct PatchDesc {
///     uint64_t id; double dx[3]; uint64_t flux_offset;
///     uint32_t bin, offset[3], extent[3], ghost, level, user;
/// };
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct PatchDesc {
    /// Caller's patch id; every error about this patch names it.
    pub id: u64,
    /// Cell size along x, y, z.
    pub dx: [f64; 3],
    /// First value of this patch's block in the flux buffer (see
    /// [`flux_index`](crate::layout::flux_index)).
    pub flux_offset: u64,
    /// Bin holding the patch.
    pub bin: u32,
    /// Lowest corner of the patch box (ghosts included) inside the bin.
    pub offset: [u32; 3],
    /// Size of the patch box including `2 * ghost` ghost cells per axis.
    pub extent: [u32; 3],
    /// Ghost width on every side.
    pub ghost: u32,
    /// Refinement level (0 = coarsest); selects the time step in
    /// [`Solver::advance_levels`](crate::Solver::advance_levels).
    pub level: u32,
    /// Free for the caller (for example an index into its own patch list);
    /// ignored by quilt-sweep.
    pub user: u32,
}

const _: () = assert!(std::mem::size_of::<PatchDesc>() == 80);

impl PatchDesc {
    /// Interior size (extent minus ghosts); saturates at zero for
    /// inconsistent descriptors, which [`BatchLayout`](crate::BatchLayout)
    /// rejects.
    pub fn interior(&self) -> [u32; 3] {
        self.extent.map(|e| e.saturating_sub(2 * self.ghost))
    }

    /// Number of interior cells.
    pub fn interior_cells(&self) -> u64 {
        self.interior().iter().map(|&n| u64::from(n)).product()
    }

    /// Number of cells including ghosts.
    pub fn total_cells(&self) -> u64 {
        self.extent.iter().map(|&n| u64::from(n)).product()
    }

    /// The shape part of the descriptor (everything but the placement).
    pub fn shape(&self) -> PatchShape {
        PatchShape {
            id: self.id,
            extent: self.extent,
            ghost: self.ghost,
            level: self.level,
            dx: self.dx,
            user: self.user,
        }
    }
}

/// A patch before placement: what a layout constructor needs besides the
/// `(bin, offset)` chosen by bin packing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PatchShape {
    /// Caller's patch id.
    pub id: u64,
    /// Size including ghosts (this is what is bin-packed).
    pub extent: [u32; 3],
    /// Ghost width.
    pub ghost: u32,
    /// Refinement level.
    pub level: u32,
    /// Cell size.
    pub dx: [f64; 3],
    /// Free for the caller.
    pub user: u32,
}

impl PatchShape {
    /// A level-0 patch with an interior of `interior` cells, `ghost` ghost
    /// layers and cell size `dx`.
    pub fn new(id: u64, interior: [u32; 3], ghost: u32, dx: [f64; 3]) -> Self {
        Self {
            id,
            extent: interior.map(|n| n + 2 * ghost),
            ghost,
            level: 0,
            dx,
            user: 0,
        }
    }
}
