//! The hierarchy layout: geometry, ghost width, levels of patches.

use rustc_hash::FxHashMap;
use std::ops::Range;

use super::bins::BoxBins;
use super::patch::{Patch, PatchId, PatchSpec, SizeLimits};
use super::{relations, validate};
use crate::error::MeshError;
use crate::geometry::{Geometry, LevelGeometry};
use crate::index::IndexBox;

/// Levels of non-uniform patches over a [`Geometry`], with every relation
/// ghost fill, restriction and flux registers need precomputed.
///
/// Patches are stored level after level (coarsest first; inside a level in
/// the order given). A patch's *index* is its position in
/// [`Hierarchy::patches`]; [`crate::hierarchy::HierarchyData`] is aligned
/// with it. A patch's [`PatchId`] is stable and is what files store.
///
/// The layout holds no field data: it is built (and validated) once per
/// regrid and shared by every dataset on it.
#[derive(Debug, Clone)]
pub struct Hierarchy {
    pub(crate) geometry: Geometry,
    pub(crate) ghost: i32,
    pub(crate) limits: SizeLimits,
    pub(crate) levels: Vec<LevelGeometry>,
    pub(crate) level_starts: Vec<usize>,
    pub(crate) patches: Vec<Patch>,
    pub(crate) ids: FxHashMap<PatchId, usize>,
    pub(crate) bins: Vec<BoxBins>,
}

impl Hierarchy {
    /// Builds and validates a hierarchy: `levels[l]` are the patches of
    /// level `l` (interiors in that level's index space), `ghost` the ghost
    /// width of every patch, `limits` the bounds on patch sides including
    /// ghosts.
    ///
    /// Checks, each failure naming the level and patch: ids unique;
    /// interiors non-empty and inside the level domain; sides within
    /// `limits`; patches of a level disjoint; level 0 covering the domain;
    /// finer patches aligned to their ratio (covering whole coarse cells),
    /// with a parent on the level below that they overlap, and properly
    /// nested (the coarse cells under the ghost-grown box, clipped to the
    /// domain, all belong to level `l - 1` patches); no more levels than the
    /// geometry defines, none empty.
    pub fn new(
        geometry: Geometry,
        ghost: i32,
        limits: SizeLimits,
        levels: Vec<Vec<PatchSpec>>,
    ) -> Result<Self, MeshError> {
        let t0 = std::time::Instant::now();
        let v = validate::validate(&geometry, ghost, limits, &levels)?;
        let t_valid = t0.elapsed().as_secs_f64();
        let mut h = Hierarchy {
            levels: (0..levels.len())
                .map(|l| geometry.level(l))
                .collect::<Result<_, _>>()?,
            geometry,
            ghost,
            limits,
            level_starts: v.level_starts,
            patches: v.patches,
            ids: v.ids,
            bins: v.bins,
        };
        relations::compute(&mut h);
        log::debug!(
            "hierarchy: {} levels, {} patches, ghost {}; validated in {t_valid:.3} s, relations {:.3} s",
            h.num_levels(),
            h.num_patches(),
            h.ghost,
            t0.elapsed().as_secs_f64() - t_valid
        );
        Ok(h)
    }

    /// The same patches with another ghost width (relations recomputed;
    /// size limits and nesting checked again).
    pub fn with_ghost(&self, ghost: i32) -> Result<Self, MeshError> {
        Self::new(self.geometry.clone(), ghost, self.limits, self.specs())
    }

    /// The physical domain and level index spaces.
    #[inline]
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// Ghost width of every patch.
    #[inline]
    pub fn ghost(&self) -> i32 {
        self.ghost
    }

    /// Patch size limits (ghosts included).
    #[inline]
    pub fn limits(&self) -> SizeLimits {
        self.limits
    }

    /// Number of levels holding patches.
    #[inline]
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Number of patches on all levels.
    #[inline]
    pub fn num_patches(&self) -> usize {
        self.patches.len()
    }

    /// An error for `what` unless `mask` (one flag per patch, as the
    /// operations that act on some patches only take it) fits this
    /// hierarchy; no mask fits.
    pub fn check_mask(&self, mask: Option<&[bool]>, what: &str) -> Result<(), MeshError> {
        match mask {
            Some(m) if m.len() != self.num_patches() => Err(MeshError::invalid(
                what,
                format!(
                    "{} patches masked in a hierarchy of {}",
                    m.len(),
                    self.num_patches()
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Every patch, level after level.
    #[inline]
    pub fn patches(&self) -> &[Patch] {
        &self.patches
    }

    /// The patch at `index`, if any.
    #[inline]
    pub fn patch(&self, index: usize) -> Option<&Patch> {
        self.patches.get(index)
    }

    /// Indices of the patches of `level` (empty past the finest level).
    #[inline]
    pub fn level_range(&self, level: usize) -> Range<usize> {
        if level < self.levels.len() {
            self.level_starts[level]..self.level_starts[level + 1]
        } else {
            self.patches.len()..self.patches.len()
        }
    }

    /// The patches of `level` (empty past the finest level).
    #[inline]
    pub fn level_patches(&self, level: usize) -> &[Patch] {
        &self.patches[self.level_range(level)]
    }

    /// Index space and cell size of a level that holds patches.
    #[inline]
    pub fn level_geometry(&self, level: usize) -> Option<&LevelGeometry> {
        self.levels.get(level)
    }

    /// Index of the patch with id `id`.
    #[inline]
    pub fn index_of(&self, id: PatchId) -> Option<usize> {
        self.ids.get(&id).copied()
    }

    /// Indices of the patches of `level` whose interiors meet `region`
    /// (in that level's index space, no periodic images), ascending.
    pub fn patches_intersecting(&self, level: usize, region: &IndexBox) -> Vec<usize> {
        match self.bins.get(level) {
            Some(b) => {
                let start = self.level_starts[level];
                b.query(region).into_iter().map(|n| n + start).collect()
            }
            None => Vec::new(),
        }
    }

    /// Interior cells of one level.
    pub fn level_cells(&self, level: usize) -> i64 {
        self.level_patches(level)
            .iter()
            .map(|p| p.interior.num_cells())
            .sum()
    }

    /// Interior cells of every level.
    pub fn total_cells(&self) -> i64 {
        self.patches.iter().map(|p| p.interior.num_cells()).sum()
    }

    /// The patches as [`PatchSpec`]s, level by level: what
    /// [`Hierarchy::new`] takes back.
    pub fn specs(&self) -> Vec<Vec<PatchSpec>> {
        (0..self.num_levels())
            .map(|l| {
                self.level_patches(l)
                    .iter()
                    .map(|p| p.spec(p.parent.map(|i| self.patches[i].id)))
                    .collect()
            })
            .collect()
    }
}
