//! Prepare and ghost fill of one patch.

use rayon::prelude::*;

use super::boundary::{self, BoundaryConditions, PhysicalSlab};
use super::plan::{FillPlan, PatchPlan};
use super::target::FillTarget;
use crate::error::MeshError;
use crate::hierarchy::{GhostCounts, Hierarchy, HierarchyData};
use crate::index::{IndexBox, IntVect, iv};
use crate::interp::{self, CoarseScratch, InterpWork, Limiter};
use crate::patch_data::{PatchData, PatchState};
use crate::real::Real;

/// Read access to the old (time-`n`) state of every patch, by patch index.
/// Implemented for [`HierarchyData`] (its `old` states) and for slices and
/// vectors of patch data.
pub trait OldData<T> {
    /// Old data of patch `index`, if there is one.
    fn old_patch(&self, index: usize) -> Option<&PatchData<T>>;
}

impl<T: Real> OldData<T> for HierarchyData<T> {
    fn old_patch(&self, index: usize) -> Option<&PatchData<T>> {
        self.get(index).map(|s| &s.old)
    }
}

impl<T> OldData<T> for [PatchData<T>] {
    fn old_patch(&self, index: usize) -> Option<&PatchData<T>> {
        self.get(index)
    }
}

impl<T> OldData<T> for Vec<PatchData<T>> {
    fn old_patch(&self, index: usize) -> Option<&PatchData<T>> {
        self.get(index)
    }
}

impl<T> OldData<T> for [&PatchData<T>] {
    fn old_patch(&self, index: usize) -> Option<&PatchData<T>> {
        self.get(index).copied()
    }
}

impl<T> OldData<T> for Vec<&PatchData<T>> {
    fn old_patch(&self, index: usize) -> Option<&PatchData<T>> {
        self.get(index).copied()
    }
}

/// Every old state but one (the patch being filled in place).
struct AllBut<'a, T> {
    before: &'a [PatchState<T>],
    after: &'a [PatchState<T>],
}

impl<T> OldData<T> for AllBut<'_, T> {
    fn old_patch(&self, index: usize) -> Option<&PatchData<T>> {
        let n = self.before.len();
        if index < n {
            Some(&self.before[index].old)
        } else if index > n {
            self.after.get(index - n - 1).map(|s| &s.old)
        } else {
            None
        }
    }
}

/// What one prepare wrote: interior cells and ghost cells by source.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FillCounts {
    /// Interior cells copied (zero for a ghost-only fill).
    pub interior: i64,
    /// Ghost cells copied, interpolated and set by boundary conditions.
    pub ghosts: GhostCounts,
}

impl FillCounts {
    /// Every cell written.
    pub fn total(&self) -> i64 {
        self.interior + self.ghosts.total()
    }
}

/// Scratch memory of one filling thread (coarse values and interpolation
/// work arrays); reused from patch to patch without allocating.
#[derive(Debug, Clone)]
pub struct FillScratch<T> {
    coarse: CoarseScratch<T>,
    work: InterpWork<T>,
}

impl<T: Real> Default for FillScratch<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Real> FillScratch<T> {
    /// Empty scratch; it grows to the largest patch on first use.
    pub fn new() -> Self {
        Self {
            coarse: CoarseScratch::new(),
            work: InterpWork::new(),
        }
    }
}

/// Ghost fill for one hierarchy: its plans, boundary conditions and
/// interpolation limiter. Build it once per regrid; it holds no field data,
/// so any number of threads may fill through it at once.
#[derive(Debug, Clone)]
pub struct GhostFill<T> {
    plan: FillPlan,
    bc: BoundaryConditions<T>,
    limiter: Limiter,
}

impl<T: Real> GhostFill<T> {
    /// Plans for `h` with boundary conditions `bc` (checked against the
    /// geometry) and `limiter` for coarse–fine interpolation.
    pub fn new(
        h: &Hierarchy,
        bc: BoundaryConditions<T>,
        limiter: Limiter,
    ) -> Result<Self, MeshError> {
        bc.check(h.geometry())?;
        Ok(Self {
            plan: FillPlan::new(h)?,
            bc,
            limiter,
        })
    }

    /// The plans.
    pub fn plan(&self) -> &FillPlan {
        &self.plan
    }

    /// The boundary conditions.
    pub fn boundary_conditions(&self) -> &BoundaryConditions<T> {
        &self.bc
    }

    /// The interpolation limiter.
    pub fn limiter(&self) -> Limiter {
        self.limiter
    }

    /// Prepares patch `patch`: copies its old interior into `target` and
    /// fills the target's ghost cells (siblings, then coarse interpolation,
    /// then physical boundaries), reading only old state. `target` must
    /// cover exactly the patch's ghost-grown box. `time` is passed to user
    /// boundary conditions.
    pub fn prepare<D: OldData<T> + ?Sized>(
        &self,
        old: &D,
        patch: usize,
        time: f64,
        target: &mut FillTarget<'_, T>,
        scratch: &mut FillScratch<T>,
    ) -> Result<FillCounts, MeshError> {
        let p = self.check(patch, target)?;
        let src = old.old_patch(patch).ok_or_else(|| missing(patch, p))?;
        self.check_source(src, patch, target.ncomp())?;
        let ghosts = self.fill_checked(old, patch, p, Some(src), time, target, scratch)?;
        Ok(FillCounts {
            interior: p.interior.num_cells(),
            ghosts,
        })
    }

    /// Fills only the ghost cells of `target`, whose interior must already
    /// hold patch `patch`'s old interior (periodic self-images and
    /// boundary conditions read it from there).
    pub fn fill_ghosts<D: OldData<T> + ?Sized>(
        &self,
        old: &D,
        patch: usize,
        time: f64,
        target: &mut FillTarget<'_, T>,
        scratch: &mut FillScratch<T>,
    ) -> Result<GhostCounts, MeshError> {
        let p = self.check(patch, target)?;
        self.fill_checked(old, patch, p, None, time, target, scratch)
    }

    /// Fills the ghost cells of patch `patch`'s old state in place, reading
    /// the other patches' old interiors.
    pub fn fill_in_place(
        &self,
        data: &mut HierarchyData<T>,
        patch: usize,
        time: f64,
        scratch: &mut FillScratch<T>,
    ) -> Result<GhostCounts, MeshError> {
        if patch >= data.len() {
            return Err(MeshError::LayoutMismatch {
                why: format!(
                    "patch index {patch}, but the data holds {} patches",
                    data.len()
                ),
            });
        }
        let (before, rest) = data.states_mut().split_at_mut(patch);
        let (me, after) = rest.split_first_mut().expect("index checked above");
        let others = AllBut { before, after };
        let mut target = FillTarget::patch(&mut me.old);
        self.fill_ghosts(&others, patch, time, &mut target, scratch)
    }

    /// Fills the old ghost cells of the patches `only` marks (all without
    /// it) in place and in parallel, each written where it is through
    /// [`FillTarget::shared_ghosts`]: every state must be page-locked (an
    /// error names the first that is not). The exclusive borrow of `data`
    /// is what makes it sound: while the tasks run, nothing but their row
    /// reads of interiors touches the states.
    pub fn fill_locked_in_place(
        &self,
        data: &mut HierarchyData<T>,
        time: f64,
        only: Option<&[bool]>,
    ) -> Result<(), MeshError> {
        let olds: Vec<&PatchData<T>> = data.states().iter().map(|s| &s.old).collect();
        olds.par_iter()
            .enumerate()
            .filter(|(i, _)| only.is_none_or(|o| o[*i]))
            .try_for_each_init(FillScratch::new, |scratch, (i, old)| {
                // SAFETY: this task alone writes this state, at its ghost
                // cells; every other task reads interiors only, row by row
                // (`PatchData::row`), and `data` is borrowed exclusively.
                let mut t = unsafe { FillTarget::shared_ghosts(old) }?;
                self.fill_ghosts(&olds, i, time, &mut t, scratch)
                    .map(|_| ())
            })
    }

    /// Fills the old ghost cells of every patch in place (e.g. before
    /// tagging or output). Every patch reads only interiors, so the order
    /// does not matter.
    pub fn fill_all_in_place(
        &self,
        data: &mut HierarchyData<T>,
        time: f64,
    ) -> Result<(), MeshError> {
        let mut scratch = FillScratch::new();
        for i in 0..data.len() {
            self.fill_in_place(data, i, time, &mut scratch)?;
        }
        Ok(())
    }

    /// Prepares many patches in parallel (rayon, one scratch per worker):
    /// `jobs` pairs patch indices with their targets, e.g. from
    /// [`super::split_bins`]. Returns the counts in job order.
    pub fn prepare_many<D: OldData<T> + Sync + ?Sized>(
        &self,
        old: &D,
        time: f64,
        jobs: &mut [(usize, FillTarget<'_, T>)],
    ) -> Result<Vec<FillCounts>, MeshError> {
        jobs.par_iter_mut()
            .map_init(FillScratch::new, |s, (i, t)| {
                self.prepare(old, *i, time, t, s)
            })
            .collect()
    }

    fn check(&self, patch: usize, target: &FillTarget<'_, T>) -> Result<&PatchPlan, MeshError> {
        let p = self
            .plan
            .patch(patch)
            .ok_or_else(|| MeshError::LayoutMismatch {
                why: format!(
                    "patch index {patch}, but the hierarchy has {} patches",
                    self.plan.len()
                ),
            })?;
        if target.bx() != p.ghost_box {
            return Err(MeshError::BadAccess {
                field: format!("fill target of patch {} (level {})", p.id, p.level),
                why: format!(
                    "the target covers {}, the patch's ghost-grown box is {}",
                    target.bx(),
                    p.ghost_box
                ),
            });
        }
        self.bc.check_ncomp(target.ncomp())?;
        Ok(p)
    }

    fn check_source(
        &self,
        src: &PatchData<T>,
        index: usize,
        ncomp: usize,
    ) -> Result<(), MeshError> {
        let p = &self.plan.patches[index];
        if src.interior() != p.interior || src.ncomp() != ncomp {
            return Err(MeshError::LayoutMismatch {
                why: format!(
                    "patch index {index} (id {}): data interior {} with {} components, layout interior {} and a target with {ncomp}",
                    p.id,
                    src.interior(),
                    src.ncomp(),
                    p.interior
                ),
            });
        }
        Ok(())
    }

    /// The fill proper. `own` is the patch's old data when the interior is
    /// to be copied too (prepare); without it the target's interior must
    /// hold the data already.
    ///
    /// The target is written in slabs of [`CHUNK`] `z`-planes (aligned to
    /// multiples of `CHUNK`, hence to coarse cells): interior rows, sibling
    /// copies, interpolated cells and `x`/`y` boundary cells of a slab are
    /// written while its cache lines are hot (an `x` row of the target holds
    /// interior and ghost cells alike). The `z` boundary slabs read other
    /// planes, so they come last.
    #[allow(clippy::too_many_arguments)]
    fn fill_checked<D: OldData<T> + ?Sized>(
        &self,
        old: &D,
        patch: usize,
        p: &PatchPlan,
        own: Option<&PatchData<T>>,
        time: f64,
        t: &mut FillTarget<'_, T>,
        scratch: &mut FillScratch<T>,
    ) -> Result<GhostCounts, MeshError> {
        let ncomp = t.ncomp();
        let mut counts = GhostCounts::default();
        let FillScratch { coarse, work } = scratch;
        // Gather the coarse cells under the coarse–fine ghosts once.
        if !p.interp.is_empty() {
            coarse.reset_unmasked(p.coarse_box, ncomp)?;
            for o in &p.gather {
                let src = old
                    .old_patch(o.source)
                    .ok_or_else(|| missing(o.source, p))?;
                self.check_source(src, o.source, ncomp)?;
                coarse.copy_unchecked(src, &o.region, &o.shift);
            }
        }
        let lg = &self.plan.levels[p.level];
        let gb = p.ghost_box;
        let mut z0 = gb.lo.z;
        while z0 <= gb.hi.z {
            let z1 = gb.hi.z.min((z0.div_euclid(CHUNK) + 1) * CHUNK - 1);
            let mut slab = gb;
            slab.lo.z = z0;
            slab.hi.z = z1;
            z0 = z1 + 1;
            if let Some(src) = own {
                copy_rows(src, &p.interior.intersect(&slab), &iv(0, 0, 0), t);
            }
            // 1. Siblings (and periodic images, the patch itself included).
            for o in &p.copies {
                let region = o.region.intersect(&slab);
                if region.is_empty() {
                    continue;
                }
                match (o.source == patch, own) {
                    // The patch's own interior: from the old data when it is
                    // at hand (its image may lie in a slab not written yet),
                    // else from the target's interior, valid throughout.
                    (true, Some(src)) => copy_rows(src, &region, &o.shift, t),
                    (true, None) => copy_self(&p.interior, &region, &o.shift, t),
                    (false, _) => {
                        let src = old
                            .old_patch(o.source)
                            .ok_or_else(|| missing(o.source, p))?;
                        self.check_source(src, o.source, ncomp)?;
                        copy_rows(src, &region, &o.shift, t);
                    }
                }
                counts.copied += region.num_cells();
            }
            // 2. Coarse–fine ghosts.
            for g in &p.interp {
                let region = g.fine.intersect(&slab);
                if !region.is_empty() {
                    interp::interpolate_planned(
                        coarse,
                        p.ratio,
                        self.limiter,
                        &region,
                        &g.coarse,
                        &g.flags,
                        t,
                        work,
                    )?;
                    counts.interpolated += region.num_cells();
                }
            }
            // 3. Physical boundaries along x, then y (same planes).
            for s in p.physical.iter().filter(|s| s.axis < 2) {
                let region = s.region.intersect(&slab);
                if !region.is_empty() {
                    boundary::apply(&self.bc, &PhysicalSlab { region, ..*s }, lg, p.id, time, t);
                    counts.physical += region.num_cells();
                }
            }
        }
        // 3'. Physical boundaries along z (corners last).
        for s in p.physical.iter().filter(|s| s.axis == 2) {
            boundary::apply(&self.bc, s, lg, p.id, time, t);
            counts.physical += s.region.num_cells();
        }
        debug_assert_eq!(counts, p.counts);
        Ok(counts)
    }
}

/// Planes per slab of the fill order (a multiple of every ratio).
const CHUNK: i32 = 4;

fn missing(index: usize, p: &PatchPlan) -> MeshError {
    MeshError::LayoutMismatch {
        why: format!(
            "filling patch {} (level {}) needs old data of patch index {index}, which is missing",
            p.id, p.level
        ),
    }
}

/// Copies `region` of every component from `src` (cell `p − shift`) into
/// the target, row by row. The caller has checked that `region − shift`
/// lies in the source's interior and `region` in the target.
fn copy_rows<T: Real>(
    src: &PatchData<T>,
    region: &IndexBox,
    shift: &IntVect,
    t: &mut FillTarget<'_, T>,
) {
    if region.is_empty() {
        return;
    }
    let nx = region.size().x as usize;
    let [_, sy, sz] = src.strides();
    let o0 = src.index(&(region.lo - shift));
    let ny = region.size().y as usize;
    let nz = region.size().z as usize;
    for c in 0..t.ncomp() {
        for (dk, k) in (region.lo.z..=region.hi.z).enumerate() {
            // The next plane's rows (the next component's first at the
            // last plane), while this one is copied.
            let next = if dk + 1 < nz {
                Some((c, k + 1, o0 + (dk + 1) * sz))
            } else if c + 1 < t.ncomp() {
                Some((c + 1, region.lo.z, o0))
            } else {
                None
            };
            if let Some((nc, nk, no)) = next {
                crate::prefetch::rows(src.row_hint(nc, no), ny, sy, nx, false);
                let (to, tsy) = t.row_address(nc, region.lo.x, region.lo.y, nk);
                crate::prefetch::rows(to, ny, tsy, nx, true);
            }
            // Row by row: other fills may write the source's ghost cells
            // meanwhile (`FillTarget::shared_ghosts`).
            let plane = o0 + dk * sz;
            let rows = t.rows_mut(c, region.lo.x, region.lo.y, k, nx, ny);
            for (dj, row) in rows.enumerate() {
                interp::copy_row(row, src.row(c, plane + dj * sy, nx));
            }
        }
    }
}

/// A periodic self-image: `region` (ghost cells) from the target's own
/// interior at `p − shift`.
fn copy_self<T: Real>(
    interior: &IndexBox,
    region: &IndexBox,
    shift: &IntVect,
    t: &mut FillTarget<'_, T>,
) {
    debug_assert!(interior.contains_box(&region.shift(&-shift)));
    let nx = region.size().x as usize;
    for c in 0..t.ncomp() {
        for k in region.lo.z..=region.hi.z {
            for j in region.lo.y..=region.hi.y {
                let d = iv(region.lo.x, j, k);
                t.copy_row_within(c, d - shift, d, nx);
            }
        }
    }
}
