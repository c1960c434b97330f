//! Restriction (the paper's "fix-up"): conservative volume average of a
//! fine level onto the coarse cells it covers.
//!
//! A coarse cell `q` wholly covered by a fine patch's interior receives
//!
//! ```text
//! U_c(q) = (1 / r³) Σ_{f ∈ refine(q)} U_f(f)
//! ```
//!
//! (cell volumes are uniform per level, so the volume average is the plain
//! mean), hence `U_c · V_c = Σ U_f · V_f`: restriction conserves every
//! component exactly up to the round-off of the sum. Only coarse cells that
//! the fine interior covers completely are written; a validated hierarchy
//! aligns fine interiors to the ratio, so that is the whole coarsened
//! interior. Over a hierarchy, levels are restricted finest first so that
//! corrected data cascades down to level 0.

use rayon::prelude::*;

use crate::error::MeshError;
use crate::geometry::check_ratio;
use crate::hierarchy::{Hierarchy, HierarchyData};
use crate::index::{IndexBox, iv};
use crate::locked::{LockedArena, PatchBuf};
use crate::patch_data::{PatchData, PatchState};
use crate::real::Real;

/// Which of a patch's two time levels an operation reads and writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeLevel {
    /// Time `n` ([`PatchState::old`]).
    Old,
    /// Time `n + 1` ([`PatchState::new`]).
    New,
}

impl TimeLevel {
    /// The selected data of a patch state.
    pub fn of<T>(self, s: &PatchState<T>) -> &PatchData<T> {
        match self {
            TimeLevel::Old => &s.old,
            TimeLevel::New => &s.new,
        }
    }

    /// The selected data of a patch state, mutably.
    pub fn of_mut<T>(self, s: &mut PatchState<T>) -> &mut PatchData<T> {
        match self {
            TimeLevel::Old => &mut s.old,
            TimeLevel::New => &mut s.new,
        }
    }
}

/// The coarse cells (index space `ratio` times coarser) whose refinement
/// lies wholly inside `fine`.
pub fn covered_coarse_cells(fine: &IndexBox, ratio: i32) -> IndexBox {
    let lo = (fine.lo + iv(ratio - 1, ratio - 1, ratio - 1)).map(|v| v.div_euclid(ratio));
    let hi = (fine.hi + iv(1, 1, 1)).map(|v| v.div_euclid(ratio)) - iv(1, 1, 1);
    IndexBox::new(lo, hi)
}

/// Restricts `fine` onto `coarse` (`ratio` 2 or 4): every component of the
/// coarse interior cells that `fine`'s interior covers completely becomes
/// the mean of the fine cells over it. Returns the number of coarse cells
/// written (zero if the patches do not overlap).
pub fn restrict_patch<T: Real>(
    fine: &PatchData<T>,
    coarse: &mut PatchData<T>,
    ratio: i32,
) -> Result<i64, MeshError> {
    check_ratio(1, ratio)?;
    if fine.ncomp() != coarse.ncomp() {
        return Err(MeshError::BadAccess {
            field: format!(
                "restriction of {} onto {}",
                fine.interior(),
                coarse.interior()
            ),
            why: format!(
                "fine data has {} components, coarse {}",
                fine.ncomp(),
                coarse.ncomp()
            ),
        });
    }
    let region = covered_coarse_cells(&fine.interior(), ratio).intersect(&coarse.interior());
    if region.is_empty() {
        return Ok(0);
    }
    let mut acc = vec![T::zero(); region.size().x as usize];
    restrict_region(fine, coarse, &region, ratio, &mut acc);
    Ok(region.num_cells())
}

/// The kernel: `region` (coarse cells) must be covered by the fine
/// interior and lie in the coarse data box; `acc` holds one coarse row.
fn restrict_region<T: Real>(
    fine: &PatchData<T>,
    coarse: &mut PatchData<T>,
    region: &IndexBox,
    r: i32,
    acc: &mut [T],
) {
    let cdb = coarse.data_box();
    restrict_rows(fine, region, r, 0..fine.ncomp(), acc, |c, j, k, means| {
        let o = cdb.offset(&iv(region.lo.x, j, k));
        coarse.comp_mut(c)[o..o + means.len()].copy_from_slice(means);
    });
}

/// Restricts `fine`'s cells over the coarse cells `region` into `out`,
/// component by component, `x` fastest: bitwise the values
/// [`restrict_patch`] writes there (a rank computes them for a coarse
/// patch another rank owns). `region` must be covered by the fine
/// interior (ratio `r`) and `out` hold `ncomp` times its cells.
pub fn restrict_into<T: Real>(
    fine: &PatchData<T>,
    region: &IndexBox,
    r: i32,
    out: &mut [T],
) -> Result<(), MeshError> {
    check_ratio(1, r)?;
    let cells = region.num_cells().max(0) as usize;
    if !fine.interior().contains_box(&region.refine(r)) || out.len() != cells * fine.ncomp() {
        return Err(MeshError::invalid(
            "restriction into a buffer",
            format!(
                "coarse cells {region} (ratio {r}) of fine interior {} into {} values",
                fine.interior(),
                out.len()
            ),
        ));
    }
    let (n, ny) = (region.size().x as usize, region.size().y as usize);
    let mut acc = vec![T::zero(); n];
    restrict_rows(
        fine,
        region,
        r,
        0..fine.ncomp(),
        &mut acc,
        |c, j, k, means| {
            let o = c * cells + ((k - region.lo.z) as usize * ny + (j - region.lo.y) as usize) * n;
            out[o..o + n].copy_from_slice(means);
        },
    );
    Ok(())
}

/// Computes the means of every coarse row of `region` (each component
/// `c` of `comps`, row `j`, plane `k`) in `acc` and hands them to
/// `put(c, j, k, means)`: the one arithmetic of every restriction. Each
/// mean sums its fine cells in one order (`dz`, then `dy`, then `x`, one
/// addition after another), whatever the ratio's code path.
fn restrict_rows<T: Real>(
    fine: &PatchData<T>,
    region: &IndexBox,
    r: i32,
    comps: std::ops::Range<usize>,
    acc: &mut [T],
    put: impl FnMut(usize, i32, i32, &[T]),
) {
    // A literal ratio, inlined, lets the compiler unroll the sums of a
    // row's cells, which dominate: coarse rows are short, ten to twenty
    // cells.
    match r {
        2 => rows_with(fine, region, 2, comps, acc, put),
        4 => rows_with(fine, region, 4, comps, acc, put),
        _ => rows_with(fine, region, r as usize, comps, acc, put),
    }
}

/// The loops of [`restrict_rows`] for ratio `ru`.
#[inline(always)]
fn rows_with<T: Real>(
    fine: &PatchData<T>,
    region: &IndexBox,
    ru: usize,
    comps: std::ops::Range<usize>,
    acc: &mut [T],
    mut put: impl FnMut(usize, i32, i32, &[T]),
) {
    let n = region.size().x as usize;
    let r = ru as i32;
    let inv = T::from_f64(1.0 / (r * r * r) as f64);
    let fdb = fine.data_box();
    let [_, sy, _] = fine.strides();
    let rows = region.size().y as usize * ru;
    for c in comps {
        let f = fine.comp(c);
        for k in region.lo.z..=region.hi.z {
            // The fine planes of the next coarse plane, while this one is
            // summed (see `crate::prefetch`): its rows are short runs a
            // plane apart, which the hardware prefetchers do not follow.
            if k < region.hi.z {
                for dz in 0..r {
                    let o = fdb.offset(&iv(region.lo.x * r, region.lo.y * r, (k + 1) * r + dz));
                    crate::prefetch::rows(f[o..].as_ptr(), rows, sy, n * ru, false);
                }
            }
            for j in region.lo.y..=region.hi.y {
                acc[..n].fill(T::zero());
                for dz in 0..r {
                    for dy in 0..r {
                        let o = fdb.offset(&iv(region.lo.x * r, j * r + dy, k * r + dz));
                        let row = &f[o..o + n * ru];
                        for (a, cell) in acc[..n].iter_mut().zip(row.chunks_exact(ru)) {
                            *a = cell.iter().fold(*a, |s, &v| s + v);
                        }
                    }
                }
                for a in &mut acc[..n] {
                    *a = *a * inv;
                }
                put(c, j, k, &acc[..n]);
            }
        }
    }
}

/// Restricts level `fine_level` onto level `fine_level − 1` for the chosen
/// time level of `data`, in parallel over coarse patches.
pub fn restrict_level<T: Real>(
    h: &Hierarchy,
    data: &mut HierarchyData<T>,
    fine_level: usize,
    time: TimeLevel,
) -> Result<(), MeshError> {
    restrict_level_where(h, data, fine_level, time, None)
}

/// [`restrict_level`] over the pairs of patches `only` marks, by
/// hierarchy index (a rank's own coarse and fine patches); all without it.
pub fn restrict_level_where<T: Real>(
    h: &Hierarchy,
    data: &mut HierarchyData<T>,
    fine_level: usize,
    time: TimeLevel,
    only: Option<&[bool]>,
) -> Result<(), MeshError> {
    data.check_layout(h)?;
    h.check_mask(only, "restriction mask")?;
    let mine = |i: usize| only.is_none_or(|o| o[i]);
    let ratio = fine_ratio(h, fine_level)?;
    let crange = h.level_range(fine_level - 1);
    let frange = h.level_range(fine_level);
    let (lower, upper) = data.states_mut().split_at_mut(frange.start);
    let coarse = &mut lower[crange.clone()];
    let fine = &upper[..frange.len()];
    // One task per coarse patch and component: a level's coarse patches
    // are few and of any size (one may lie under most of the finer level),
    // so tasks per patch alone leave the level to its largest.
    coarse.par_iter_mut().enumerate().for_each(|(n, cs)| {
        if !mine(crange.start + n) {
            return;
        }
        let cpatch = &h.patches()[crange.start + n];
        let under = cpatch.interior().refine(ratio);
        let cd = time.of_mut(cs);
        let (cdb, interior) = (cd.data_box(), cd.interior());
        let (len, ncomp) = (cd.comp_len(), cd.ncomp());
        let pairs: Vec<(&PatchData<T>, IndexBox)> = h
            .patches_intersecting(fine_level, &under)
            .into_iter()
            .filter(|&fi| mine(fi))
            .map(|fi| {
                let fd = time.of(&fine[fi - frange.start]);
                (
                    fd,
                    covered_coarse_cells(&fd.interior(), ratio).intersect(&interior),
                )
            })
            .filter(|(_, region)| !region.is_empty())
            .collect();
        if pairs.is_empty() {
            return;
        }
        cd.as_mut_slice()
            .par_chunks_mut(len)
            .take(ncomp)
            .enumerate()
            .for_each(|(c, comp)| {
                let mut acc = Vec::new();
                for (fd, region) in &pairs {
                    acc.resize(region.size().x as usize, T::zero());
                    restrict_rows(fd, region, ratio, c..c + 1, &mut acc, |_, j, k, means| {
                        let o = cdb.offset(&iv(region.lo.x, j, k));
                        comp[o..o + means.len()].copy_from_slice(means);
                    });
                }
            });
    });
    Ok(())
}

/// The ratio of `fine_level` to the level below; an error unless the level
/// exists and has one below it.
pub(crate) fn fine_ratio(h: &Hierarchy, fine_level: usize) -> Result<i32, MeshError> {
    if fine_level == 0 || fine_level >= h.num_levels() {
        return Err(MeshError::invalid(
            "restriction level",
            format!(
                "level {fine_level} has no coarser level to restrict onto (levels 1..{} do)",
                h.num_levels()
            ),
        ));
    }
    h.level_geometry(fine_level)
        .map(|l| l.ratio)
        .ok_or(MeshError::NoSuchLevel {
            level: fine_level,
            num_levels: h.num_levels(),
        })
}

/// Reusable memory of [`restrict_level_scanned`]: the coarse means of
/// every fine patch of a level, patch after patch. Keep one per run and
/// hand it to every step, so that restriction allocates nothing once warm.
///
/// A backend that has a fine patch's new interior at hand may compute its
/// means itself (quilt-sweep's `Restricted` layout: component-major,
/// `x` fastest, the coarse cells the interior covers) into the patch's
/// part ([`RestrictScratch::parts_mut`] after
/// [`RestrictScratch::lay_out`]); [`restrict_level_scanned`] then only
/// copies them. With an arena ([`RestrictScratch::in_arena`]) the means
/// live in page-locked memory a device writes directly.
#[derive(Debug, Default)]
pub struct RestrictScratch<T> {
    means: PatchBuf<T>,
    starts: Vec<usize>,
    arena: Option<LockedArena>,
}

impl<T: Real> RestrictScratch<T> {
    /// Scratch whose means come from `arena` (page-locked) when given.
    pub fn in_arena(arena: Option<LockedArena>) -> Self {
        Self {
            means: PatchBuf::default(),
            starts: Vec::new(),
            arena,
        }
    }

    /// Whether the means live in page-locked memory.
    pub fn is_page_locked(&self) -> bool {
        self.means.is_page_locked()
    }

    /// Lays out the means of every fine patch of `fine_level` (`ncomp`
    /// components each), keeping the memory where it is large enough.
    pub fn lay_out(
        &mut self,
        h: &Hierarchy,
        fine_level: usize,
        ncomp: usize,
    ) -> Result<(), MeshError> {
        let r = fine_ratio(h, fine_level)?;
        self.starts.clear();
        self.starts.push(0);
        for p in &h.patches()[h.level_range(fine_level)] {
            let cells = covered_coarse_cells(&p.interior(), r).num_cells().max(0) as usize;
            self.starts
                .push(self.starts[self.starts.len() - 1] + cells * ncomp);
        }
        let total = self.starts[self.starts.len() - 1];
        if self.means.capacity() >= total {
            self.means = std::mem::take(&mut self.means)
                .refit(total)
                .ok_or_else(|| MeshError::invalid("restriction scratch", "refit lost room"))?;
            return Ok(());
        }
        // A quarter more: the next regrids' levels are a little larger.
        let room = (total * 5).div_ceil(4);
        let fresh = match &self.arena {
            Some(a) => a.alloc::<T>(room, "coarse means of restriction")?,
            None => PatchBuf::from(vec![T::zero(); room]),
        };
        self.means = fresh.refit(total).ok_or_else(|| {
            MeshError::invalid("restriction scratch", "a new buffer is too small")
        })?;
        Ok(())
    }

    /// The means of each fine patch of the level last laid out, in patch
    /// order.
    pub fn parts_mut(&mut self) -> Vec<&mut [T]> {
        let mut parts = Vec::with_capacity(self.starts.len().saturating_sub(1));
        let mut rest = &mut self.means.as_mut_slice()[..self.starts.last().copied().unwrap_or(0)];
        for w in self.starts.windows(2) {
            let (part, tail) = std::mem::take(&mut rest).split_at_mut(w[1] - w[0]);
            parts.push(part);
            rest = tail;
        }
        parts
    }
}

/// [`restrict_level`] (every patch of both levels) that also hands every
/// interior plane of every fine patch to `scan` while the restriction
/// reads it, so that a pass over the fine level's state that restriction
/// makes anyway serves a second reader (the next step's CFL scan reads
/// each level after its restriction) without reading the memory twice.
///
/// `scan(n, fine, k, acc)` is called for fine patch `n` of the level (its
/// place on the level: hierarchy index less the level's first), with its
/// data, for every interior plane `k` in ascending order, and `acc` the
/// patch's entry of `results` (which must hold one per fine patch). The
/// coarse values are bitwise those of [`restrict_level`]: each fine patch's
/// coarse means go into `scratch` first, in parallel over fine patches,
/// then into their coarse patches, in parallel over coarse patches and
/// components.
///
/// `given` marks fine patches whose means `scratch` already holds, laid
/// out for this level ([`RestrictScratch::lay_out`]) and computed by
/// whoever solved them: those are neither read nor scanned.
#[allow(clippy::too_many_arguments)]
pub fn restrict_level_scanned<T: Real, R: Send>(
    h: &Hierarchy,
    data: &mut HierarchyData<T>,
    fine_level: usize,
    time: TimeLevel,
    scratch: &mut RestrictScratch<T>,
    results: &mut [R],
    given: Option<&[bool]>,
    scan: impl Fn(usize, &PatchData<T>, i32, &mut R) + Sync,
) -> Result<(), MeshError> {
    data.check_layout(h)?;
    let r = fine_ratio(h, fine_level)?;
    let crange = h.level_range(fine_level - 1);
    let frange = h.level_range(fine_level);
    if results.len() != frange.len() {
        return Err(MeshError::invalid(
            "scanned restriction",
            format!(
                "{} results for the {} patches of level {fine_level}",
                results.len(),
                frange.len()
            ),
        ));
    }
    if given.is_some_and(|g| g.len() != frange.len()) {
        return Err(MeshError::invalid(
            "scanned restriction",
            format!(
                "patches given for the {} patches of level {fine_level}",
                frange.len()
            ),
        ));
    }
    let ncomp = data.ncomp();
    let fine_boxes = &h.patches()[frange.clone()];
    scratch.lay_out(h, fine_level, ncomp)?;
    let parts = scratch.parts_mut();
    let (lower, upper) = data.states_mut().split_at_mut(frange.start);
    let fine = &upper[..frange.len()];
    // Each fine patch: its planes scanned in order, its coarse planes
    // restricted as soon as their fine planes have been scanned (they are
    // then in cache).
    parts
        .into_par_iter()
        .zip(results.par_iter_mut())
        .enumerate()
        .filter(|(n, _)| !given.is_some_and(|g| g[*n]))
        .for_each_init(Vec::new, |acc, (n, (out, res))| {
            let fd = time.of(&fine[n]);
            let interior = fd.interior();
            let region = covered_coarse_cells(&interior, r);
            let mut next = interior.lo.z;
            if !region.is_empty() {
                let (nx, ny) = (region.size().x as usize, region.size().y as usize);
                let cells = region.num_cells() as usize;
                acc.resize(nx, T::zero());
                for kc in region.lo.z..=region.hi.z {
                    while next < (kc + 1) * r {
                        scan(n, fd, next, res);
                        next += 1;
                    }
                    let plane = IndexBox::new(
                        iv(region.lo.x, region.lo.y, kc),
                        iv(region.hi.x, region.hi.y, kc),
                    );
                    let kz = (kc - region.lo.z) as usize;
                    restrict_rows(fd, &plane, r, 0..ncomp, acc, |c, j, _, m| {
                        let o = c * cells + (kz * ny + (j - region.lo.y) as usize) * nx;
                        out[o..o + nx].copy_from_slice(m);
                    });
                }
            }
            while next <= interior.hi.z {
                scan(n, fd, next, res);
                next += 1;
            }
        });
    let RestrictScratch { means, starts, .. } = scratch;
    let means = &means[..starts[starts.len() - 1]];
    let coarse = &mut lower[crange.clone()];
    coarse.par_iter_mut().enumerate().for_each(|(n, cs)| {
        let cpatch = &h.patches()[crange.start + n];
        let under = cpatch.interior().refine(r);
        let cd = time.of_mut(cs);
        let (cdb, interior) = (cd.data_box(), cd.interior());
        let fines = h.patches_intersecting(fine_level, &under);
        // One task per component too: a coarse patch may lie under most
        // of the finer level.
        let len = cd.comp_len();
        cd.as_mut_slice()
            .par_chunks_mut(len)
            .take(ncomp)
            .enumerate()
            .for_each(|(c, comp)| {
                for &fi in &fines {
                    let f = fi - frange.start;
                    let cover = covered_coarse_cells(&fine_boxes[f].interior(), r);
                    let region = cover.intersect(&interior);
                    if region.is_empty() {
                        continue;
                    }
                    let (nx, ny) = (cover.size().x as usize, cover.size().y as usize);
                    let src = &means[starts[f] + c * cover.num_cells() as usize..];
                    let row = region.size().x as usize;
                    for k in region.lo.z..=region.hi.z {
                        for j in region.lo.y..=region.hi.y {
                            let from = ((k - cover.lo.z) as usize * ny + (j - cover.lo.y) as usize)
                                * nx
                                + (region.lo.x - cover.lo.x) as usize;
                            let o = cdb.offset(&iv(region.lo.x, j, k));
                            comp[o..o + row].copy_from_slice(&src[from..from + row]);
                        }
                    }
                }
            });
    });
    Ok(())
}

/// Restricts every level onto the one below, finest first.
pub fn restrict_hierarchy<T: Real>(
    h: &Hierarchy,
    data: &mut HierarchyData<T>,
    time: TimeLevel,
) -> Result<(), MeshError> {
    for l in (1..h.num_levels()).rev() {
        restrict_level(h, data, l, time)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covered_cells() {
        let b = IndexBox::new(iv(-3, 0, 2), iv(8, 3, 9));
        assert_eq!(
            covered_coarse_cells(&b, 2),
            IndexBox::new(iv(-1, 0, 1), iv(3, 1, 4))
        );
        assert_eq!(
            covered_coarse_cells(&b, 4),
            IndexBox::new(iv(0, 0, 1), iv(1, 0, 1))
        );
        assert!(covered_coarse_cells(&IndexBox::new(iv(1, 1, 1), iv(2, 2, 2)), 4).is_empty());
    }

    #[test]
    fn mean_of_fine_cells() {
        for r in [2, 4] {
            let fi = IndexBox::new(iv(2, 4, 6), iv(2 + 3 * r - 1, 4 + 2 * r - 1, 6 + r - 1));
            let mut f = PatchData::<f64>::new(fi, 1, 2).unwrap();
            f.fill_with(0, |p| (p.x * p.x + 3 * p.y - p.z) as f64);
            f.fill_with(1, |p| p.z as f64);
            let ci = IndexBox::new(iv(0, 0, 0), iv(7, 7, 7));
            let mut c = PatchData::<f64>::new(ci, 2, 2).unwrap();
            c.fill(-1.0);
            // The fine patch is aligned only for ratio 2.
            let n = restrict_patch(&f, &mut c, r).unwrap();
            let covered = covered_coarse_cells(&fi, r);
            assert_eq!(n, covered.num_cells());
            for q in covered.iter() {
                let s = f.region_sum(0, &IndexBox::new(q, q).refine(r));
                assert!((c.get(0, &q) * (r * r * r) as f64 - s).abs() < 1e-12);
            }
            assert_eq!(c.get(0, &iv(7, 7, 7)), -1.0);
            assert!(restrict_patch(&f, &mut c, 3).is_err());
        }
    }

    #[test]
    fn scanned_restriction_is_bitwise_the_restriction_and_sees_every_plane() {
        use crate::synthetic::{SyntheticSpec, generate};
        for (ratio, seed) in [(2, 3), (4, 5)] {
            let h = generate(&SyntheticSpec {
                patches: 30,
                seed,
                ratio,
                domain_cells: 64,
                base_patch: 32,
                ..Default::default()
            })
            .unwrap();
            assert!(
                h.num_levels() > 2,
                "ratio {ratio}: {} levels",
                h.num_levels()
            );
            let filled = || {
                let mut d = HierarchyData::<f64>::new(&h, 3).unwrap();
                for (i, s) in d.states_mut().iter_mut().enumerate() {
                    for c in 0..3 {
                        s.new.fill_with(c, |p| {
                            ((p.x * 7 + p.y * 13 - p.z * 3) as f64 * 0.1 + (i + c) as f64).sin()
                        });
                    }
                }
                d
            };
            let (mut plain, mut scanned, mut given) = (filled(), filled(), filled());
            let (mut scratch, mut other) = (RestrictScratch::default(), RestrictScratch::default());
            for l in (1..h.num_levels()).rev() {
                restrict_level(&h, &mut plain, l, TimeLevel::New).unwrap();
                // Every other fine patch's means computed by someone else,
                // into its part of the scratch.
                let range = h.level_range(l);
                other.lay_out(&h, l, 3).unwrap();
                let marks: Vec<bool> = (0..range.len()).map(|n| n % 2 == 0).collect();
                for (n, part) in other.parts_mut().into_iter().enumerate() {
                    if marks[n] {
                        let fd = &given.states()[range.start + n].new;
                        let region = covered_coarse_cells(&fd.interior(), ratio);
                        restrict_into(fd, &region, ratio, part).unwrap();
                    }
                }
                restrict_level_scanned(
                    &h,
                    &mut given,
                    l,
                    TimeLevel::New,
                    &mut other,
                    &mut vec![(); range.len()],
                    Some(&marks),
                    |n, _, _, _| assert!(!marks[n], "patch {n} was given"),
                )
                .unwrap();
                let mut planes = vec![Vec::new(); h.level_range(l).len()];
                restrict_level_scanned(
                    &h,
                    &mut scanned,
                    l,
                    TimeLevel::New,
                    &mut scratch,
                    &mut planes,
                    None,
                    |n, fine, k, seen: &mut Vec<i32>| {
                        assert_eq!(
                            fine.interior(),
                            h.patches()[h.level_range(l).start + n].interior()
                        );
                        seen.push(k);
                    },
                )
                .unwrap();
                for (n, seen) in planes.iter().enumerate() {
                    let b = h.patches()[h.level_range(l).start + n].interior();
                    assert_eq!(*seen, (b.lo.z..=b.hi.z).collect::<Vec<_>>());
                }
                // A results slice of the wrong length is refused.
                assert!(
                    restrict_level_scanned(
                        &h,
                        &mut scanned,
                        l,
                        TimeLevel::New,
                        &mut scratch,
                        &mut [(); 1][..0],
                        None,
                        |_, _, _, _| {}
                    )
                    .is_err()
                );
            }
            let bits =
                |d: &PatchData<f64>| d.as_slice().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            for ((a, b), c) in plain
                .states()
                .iter()
                .zip(scanned.states())
                .zip(given.states())
            {
                assert_eq!(bits(&a.new), bits(&b.new));
                assert_eq!(bits(&a.new), bits(&c.new));
            }
        }
    }

    #[test]
    fn into_a_buffer_is_bitwise_the_patch_restriction() {
        for r in [2, 4] {
            let fi = IndexBox::new(iv(4, 0, 8), iv(4 + 3 * r - 1, 2 * r - 1, 8 + 2 * r - 1));
            let mut f = PatchData::<f32>::new(fi, 2, 3).unwrap();
            for c in 0..3 {
                f.fill_with(c, |p| {
                    ((p.x * 7 + p.y * 13 - p.z * 3 + c as i32) as f32).sin()
                });
            }
            let covered = covered_coarse_cells(&fi, r);
            let mut c = PatchData::<f32>::new(covered.grow(1), 1, 3).unwrap();
            restrict_patch(&f, &mut c, r).unwrap();
            let mut out = vec![0.0f32; 3 * covered.num_cells() as usize];
            restrict_into(&f, &covered, r, &mut out).unwrap();
            let mut at = 0;
            for comp in 0..3 {
                for q in covered.iter() {
                    assert_eq!(out[at].to_bits(), c.get(comp, &q).to_bits());
                    at += 1;
                }
            }
            // A region the fine interior does not cover, or a short buffer.
            assert!(restrict_into(&f, &covered.grow(1), r, &mut out).is_err());
            assert!(restrict_into(&f, &covered, r, &mut out[1..]).is_err());
        }
    }
}
