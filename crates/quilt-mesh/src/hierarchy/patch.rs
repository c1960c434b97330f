//! One patch of the layout and the relations precomputed for it.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::MeshError;
use crate::index::{BoxList, IndexBox, IntVect, Side};

/// A patch's stable identifier: unique in its hierarchy, kept by hierarchy
/// files, independent of where the patch sits in [`super::Hierarchy::patches`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct PatchId(pub u32);

impl fmt::Display for PatchId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Bounds on the number of cells per side of a patch, ghost cells
/// included (the paper uses 16..=64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeLimits {
    /// Fewest cells per side, ghosts included.
    pub min: i32,
    /// Most cells per side, ghosts included.
    pub max: i32,
}

impl Default for SizeLimits {
    fn default() -> Self {
        Self { min: 16, max: 64 }
    }
}

impl SizeLimits {
    /// Checks that `1 <= min <= max` and that a patch of `max` cells keeps
    /// at least one interior cell with `ghost` ghost cells per side.
    pub fn check(&self, ghost: i32) -> Result<(), MeshError> {
        if self.min < 1 || self.min > self.max {
            return Err(MeshError::invalid(
                "patch size limits",
                format!("need 1 <= min <= max, got {}..={}", self.min, self.max),
            ));
        }
        if self.max <= 2 * ghost {
            return Err(MeshError::invalid(
                "patch size limits",
                format!(
                    "max {} leaves no interior cell with {ghost} ghost cells per side",
                    self.max
                ),
            ));
        }
        Ok(())
    }

    /// Whether every side of `size` (ghosts included) lies in `min..=max`.
    pub fn admits(&self, size_with_ghosts: &IntVect) -> bool {
        size_with_ghosts
            .iter()
            .all(|&s| self.min <= s && s <= self.max)
    }
}

/// A patch as given to [`super::Hierarchy::new`]: what files and regrid
/// produce.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PatchSpec {
    /// Stable id, unique in the hierarchy.
    pub id: PatchId,
    /// Interior cells in the index space of the patch's level.
    pub interior: IndexBox,
    /// The patch of the level below that it refines (`None` on level 0;
    /// `None` on a finer level means "the one it overlaps most").
    pub parent: Option<PatchId>,
}

/// A copy tag computed from the layout alone: `region` of the receiving
/// patch is read from patch `source`, destination cell `p` from source
/// cell `p - shift`. `shift` is non-zero only across periodic boundaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overlap {
    /// Index (into [`super::Hierarchy::patches`]) of the patch read from.
    pub source: usize,
    /// Cells, in the index space the overlap is stated in (see the
    /// accessor that returns it).
    pub region: IndexBox,
    /// Periodic shift from source to destination.
    pub shift: IntVect,
}

/// How the ghost cells of one patch are filled, counted from the layout:
/// the cost model needs these to estimate preparation time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GhostCounts {
    /// Ghost cells copied from siblings (periodic images included).
    pub copied: i64,
    /// Ghost cells interpolated from the coarser level.
    pub interpolated: i64,
    /// Ghost cells outside the domain, set by physical boundary conditions.
    pub physical: i64,
}

impl GhostCounts {
    /// All ghost cells.
    pub fn total(&self) -> i64 {
        self.copied + self.interpolated + self.physical
    }
}

/// One patch of a [`super::Hierarchy`]: its boxes, relations and the
/// ghost-fill plan derived from the layout. Indices (parent, children,
/// overlap sources) are positions in [`super::Hierarchy::patches`].
#[derive(Debug, Clone, PartialEq)]
pub struct Patch {
    pub(crate) id: PatchId,
    pub(crate) level: usize,
    pub(crate) interior: IndexBox,
    pub(crate) ghost_box: IndexBox,
    pub(crate) parent: Option<usize>,
    pub(crate) children: Vec<usize>,
    pub(crate) sibling_overlaps: Vec<Overlap>,
    pub(crate) coarse_overlaps: Vec<Overlap>,
    pub(crate) coarse_fine_ghosts: BoxList,
    pub(crate) physical_ghosts: BoxList,
    pub(crate) coarse_fine_faces: [[BoxList; 2]; 3],
    pub(crate) physical_faces: [[Option<IndexBox>; 2]; 3],
}

impl Patch {
    /// Stable id.
    #[inline]
    pub fn id(&self) -> PatchId {
        self.id
    }

    /// Level (0 is the coarsest).
    #[inline]
    pub fn level(&self) -> usize {
        self.level
    }

    /// Interior cells, in the level's index space.
    #[inline]
    pub fn interior(&self) -> IndexBox {
        self.interior
    }

    /// The interior grown by the hierarchy's ghost width: the box patch
    /// data is allocated over.
    #[inline]
    pub fn ghost_box(&self) -> IndexBox {
        self.ghost_box
    }

    /// Cells per side including ghosts (what the size limits bound).
    #[inline]
    pub fn size_with_ghosts(&self) -> IntVect {
        self.ghost_box.size()
    }

    /// Index of the parent patch on the level below (`None` on level 0).
    #[inline]
    pub fn parent(&self) -> Option<usize> {
        self.parent
    }

    /// Indices of the patches of the level above whose parent this is.
    #[inline]
    pub fn children(&self) -> &[usize] {
        &self.children
    }

    /// Sibling copy tags: for each same-level patch (or periodic image of
    /// one, the patch itself included) whose interior meets this patch's
    /// ghost box, the cells shared, in this level's index space. The
    /// regions are disjoint and lie in the ghost box outside the interior.
    #[inline]
    pub fn sibling_overlaps(&self) -> &[Overlap] {
        &self.sibling_overlaps
    }

    /// Coarse copy tags (empty on level 0): for each patch of the level
    /// below (or periodic image) whose interior meets the coarse cells
    /// under the ghost box grown by one coarse cell (the slope stencil of
    /// linear interpolation), the coarse cells shared, in the coarse
    /// level's index space.
    #[inline]
    pub fn coarse_overlaps(&self) -> &[Overlap] {
        &self.coarse_overlaps
    }

    /// Ghost cells inside the (periodically extended) domain that no
    /// sibling covers: they are interpolated from the level below.
    /// Always empty on level 0, which covers the domain.
    #[inline]
    pub fn coarse_fine_ghosts(&self) -> &BoxList {
        &self.coarse_fine_ghosts
    }

    /// Ghost cells outside the domain along non-periodic axes: set by
    /// physical boundary conditions.
    #[inline]
    pub fn physical_ghosts(&self) -> &BoxList {
        &self.physical_ghosts
    }

    /// The coarse–fine part of one face: cells of the single ghost layer
    /// just outside the interior on `side` of `axis` (spanning the interior
    /// along the other axes) that neither a sibling nor the physical
    /// boundary accounts for. The faces between these cells and the
    /// interior are where flux registers act.
    ///
    /// # Panics
    /// If `axis > 2`.
    #[inline]
    pub fn coarse_fine_faces(&self, axis: usize, side: Side) -> &BoxList {
        &self.coarse_fine_faces[axis][side.index()]
    }

    /// If `side` of `axis` lies on a non-periodic domain boundary, the
    /// ghost slab (ghost width deep, spanning the interior along the other
    /// axes) beyond it.
    ///
    /// # Panics
    /// If `axis > 2`.
    #[inline]
    pub fn physical_face(&self, axis: usize, side: Side) -> Option<IndexBox> {
        self.physical_faces[axis][side.index()]
    }

    /// Copied / interpolated / physical ghost cell counts.
    pub fn ghost_counts(&self) -> GhostCounts {
        GhostCounts {
            copied: self
                .sibling_overlaps
                .iter()
                .map(|o| o.region.num_cells())
                .sum(),
            interpolated: self.coarse_fine_ghosts.num_cells(),
            physical: self.physical_ghosts.num_cells(),
        }
    }

    /// This patch as a [`PatchSpec`] (parent given by id through `ids`).
    pub(crate) fn spec(&self, parent_id: Option<PatchId>) -> PatchSpec {
        PatchSpec {
            id: self.id,
            interior: self.interior,
            parent: parent_id,
        }
    }
}
