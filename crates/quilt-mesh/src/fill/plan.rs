//! Ghost-fill plans: everything a fill needs that depends on the layout
//! alone, computed once per hierarchy (no field data is cached).

use rayon::prelude::*;

use super::boundary::PhysicalSlab;
use crate::error::MeshError;
use crate::geometry::LevelGeometry;
use crate::hierarchy::{GhostCounts, Hierarchy, Overlap, PatchId};
use crate::index::{BoxList, IndexBox, Side};
use crate::interp::stencil_flags;

/// One box of coarse–fine ghosts with the stencil flags of the coarse
/// cells under it (which neighbours the gathered coarse data holds).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InterpBox {
    pub fine: IndexBox,
    pub coarse: IndexBox,
    pub flags: Vec<u8>,
}

/// The fill plan of one patch: the sources of each part of its ghost box.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchPlan {
    pub(crate) id: PatchId,
    pub(crate) level: usize,
    pub(crate) interior: IndexBox,
    pub(crate) ghost_box: IndexBox,
    pub(crate) ratio: i32,
    pub(crate) copies: Vec<Overlap>,
    pub(crate) coarse_box: IndexBox,
    pub(crate) gather: Vec<Overlap>,
    pub(crate) interp: Vec<InterpBox>,
    pub(crate) physical: Vec<PhysicalSlab>,
    pub(crate) counts: GhostCounts,
}

impl PatchPlan {
    /// The patch's id.
    pub fn id(&self) -> PatchId {
        self.id
    }

    /// Its level.
    pub fn level(&self) -> usize {
        self.level
    }

    /// Interior cells.
    pub fn interior(&self) -> IndexBox {
        self.interior
    }

    /// The ghost-grown box a target must cover.
    pub fn ghost_box(&self) -> IndexBox {
        self.ghost_box
    }

    /// Sibling copy tags (the hierarchy's `sibling_overlaps`).
    pub fn copies(&self) -> &[Overlap] {
        &self.copies
    }

    /// Coarse copy tags actually gathered: the coarse cells under the
    /// interpolated ghost boxes plus their one-cell slope stencil, as
    /// disjoint regions of the coarse index space.
    pub fn gather(&self) -> &[Overlap] {
        &self.gather
    }

    /// Ghost boxes interpolated from the coarse level (disjoint).
    pub fn interpolated(&self) -> impl Iterator<Item = IndexBox> + '_ {
        self.interp.iter().map(|b| b.fine)
    }

    /// Copied / interpolated / physical ghost cells the plan fills; equal
    /// to the hierarchy's `Patch::ghost_counts()`.
    pub fn counts(&self) -> GhostCounts {
        self.counts
    }
}

/// The fill plans of every patch of a [`Hierarchy`], aligned with its
/// patch indices.
#[derive(Debug, Clone, PartialEq)]
pub struct FillPlan {
    pub(crate) patches: Vec<PatchPlan>,
    pub(crate) levels: Vec<LevelGeometry>,
    pub(crate) ghost: i32,
}

impl FillPlan {
    /// Plans for every patch of `h`. Errors (naming the patch) if a ghost
    /// cell to interpolate has no coarse data under it, which a validated,
    /// properly nested hierarchy rules out.
    pub fn new(h: &Hierarchy) -> Result<Self, MeshError> {
        let levels: Vec<LevelGeometry> = (0..h.num_levels())
            .filter_map(|l| h.level_geometry(l).copied())
            .collect();
        // Patches are planned independently (thousands after a regrid).
        let patches = h
            .patches()
            .par_iter()
            .map(|p| {
                let lg = &levels[p.level()];
                let ghost_box = p.ghost_box();
                let fine_boxes = p.coarse_fine_ghosts().boxes();
                let (coarse_box, gather) = gather_plan(p.coarse_overlaps(), fine_boxes, lg.ratio);
                // Which gathered coarse cells hold data: layout only.
                let mut mask = vec![0u8; coarse_box.num_cells().max(0) as usize];
                for o in &gather {
                    for q in o.region.iter() {
                        mask[coarse_box.offset(&q)] = 1;
                    }
                }
                let interp = fine_boxes
                    .iter()
                    .map(|g| {
                        let cg = g.coarsen(lg.ratio);
                        let flags = stencil_flags(&mask, &coarse_box, &cg).map_err(|q| {
                            MeshError::NotNested {
                                level: p.level(),
                                id: p.id(),
                                uncovered: IndexBox::new(q, q),
                            }
                        })?;
                        Ok(InterpBox {
                            fine: *g,
                            coarse: cg,
                            flags,
                        })
                    })
                    .collect::<Result<Vec<_>, MeshError>>()?;
                let physical = physical_slabs(lg, &ghost_box);
                let counts = GhostCounts {
                    copied: p
                        .sibling_overlaps()
                        .iter()
                        .map(|o| o.region.num_cells())
                        .sum(),
                    interpolated: interp.iter().map(|b| b.fine.num_cells()).sum(),
                    physical: physical.iter().map(|s| s.region.num_cells()).sum(),
                };
                Ok(PatchPlan {
                    id: p.id(),
                    level: p.level(),
                    interior: p.interior(),
                    ghost_box,
                    ratio: lg.ratio,
                    copies: p.sibling_overlaps().to_vec(),
                    coarse_box,
                    gather,
                    interp,
                    physical,
                    counts,
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            patches,
            levels,
            ghost: h.ghost(),
        })
    }

    /// Number of patches.
    pub fn len(&self) -> usize {
        self.patches.len()
    }

    /// Whether there is no patch.
    pub fn is_empty(&self) -> bool {
        self.patches.is_empty()
    }

    /// The plan of patch `index`.
    pub fn patch(&self, index: usize) -> Option<&PatchPlan> {
        self.patches.get(index)
    }

    /// Every patch's plan, by patch index.
    pub fn patches(&self) -> &[PatchPlan] {
        &self.patches
    }

    /// Ghost width.
    pub fn ghost(&self) -> i32 {
        self.ghost
    }
}

/// The coarse cells to gather for interpolating `interp` (fine boxes):
/// each box's coarse cells grown by the one-cell slope stencil, made
/// disjoint, intersected with the coarse copy tags. Returns the scratch
/// box — the bounding box of the grown boxes, so that the kernels read
/// whole rows of neighbours without range checks, whether gathered or not
/// — and the tags.
fn gather_plan(coarse: &[Overlap], interp: &[IndexBox], ratio: i32) -> (IndexBox, Vec<Overlap>) {
    let mut need = BoxList::new();
    let mut bbox = IndexBox::empty();
    for g in interp {
        let grown = g.coarsen(ratio).grow(1);
        bbox = bbox.bounding(&grown);
        let mut part = BoxList::from_box(grown);
        part.subtract_all(need.boxes());
        for b in part.into_boxes() {
            need.push_disjoint(b);
        }
    }
    let mut gather = Vec::new();
    for o in coarse {
        for n in need.boxes() {
            let region = o.region.intersect(n);
            if !region.is_empty() {
                gather.push(Overlap { region, ..*o });
            }
        }
    }
    (bbox, gather)
}

/// Physical ghost slabs in application order (see `boundary.rs`): axis by
/// axis, spanning the ghost box along earlier axes and the (periodically
/// extended) domain along later ones.
fn physical_slabs(lg: &LevelGeometry, ghost_box: &IndexBox) -> Vec<PhysicalSlab> {
    let pd = lg.periodic_domain();
    let mut out = Vec::new();
    for axis in 0..3 {
        for side in Side::BOTH {
            let mut r = *ghost_box;
            match side {
                Side::Lo => r.hi[axis] = r.hi[axis].min(pd.lo[axis] - 1),
                Side::Hi => r.lo[axis] = r.lo[axis].max(pd.hi[axis] + 1),
            }
            for e in axis + 1..3 {
                r.lo[e] = r.lo[e].max(pd.lo[e]);
                r.hi[e] = r.hi[e].min(pd.hi[e]);
            }
            if !r.is_empty() {
                out.push(PhysicalSlab {
                    axis,
                    side,
                    region: r,
                    edge: match side {
                        Side::Lo => pd.lo[axis],
                        Side::Hi => pd.hi[axis],
                    },
                });
            }
        }
    }
    out
}
