//! Moving data onto the new hierarchy.
//!
//! Level by level, coarse first, every new patch's interior is
//! 1. copied from the old patches of the same level where they overlap
//!    (exact copies: data that existed keeps its values), and
//! 2. interpolated from the *new* coarser level (already filled) with the
//!    conservative limited linear scheme of [`crate::interp`], which proper
//!    nesting makes possible everywhere, on the cells no old patch covers.
//!
//! Level 0 does not change, and neither do patches whose level and box are
//! unchanged: their states are moved over without a copy. Interpolation conserves:
//! the fine cells of a coarse cell average to its value, so the
//! volume-weighted sum over the interpolated fine cells equals that of the
//! coarse cells under them to round-off. Ghost cells are left to the next
//! ghost fill. Only the `old` state (time `n`) is defined afterwards, as at
//! the start of any step: `new` is the step's output buffer (zero on new
//! patches, the moved patch's previous contents otherwise), never read
//! before it is written. Not copying it halves the memory traffic.

use rayon::prelude::*;

use crate::fill::FillTarget;
use crate::hierarchy::{BufferPool, Hierarchy, HierarchyData};
use crate::index::{BoxList, IndexBox, iv};
use crate::interp::{CoarseScratch, InterpWork, Limiter, interpolate};
use crate::real::Real;

use super::RegridError;

/// How the new interiors were filled, per level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TransferStats {
    /// Cells copied from an old patch (level 0: every cell).
    pub copied: Vec<i64>,
    /// Cells interpolated from the coarser level and not overwritten.
    pub interpolated: Vec<i64>,
}

/// Whether the two hierarchies have the same level-0 patches (a regrid
/// never changes level 0).
pub(crate) fn same_level0(old_h: &Hierarchy, new_h: &Hierarchy) -> bool {
    old_h.level_patches(0).len() == new_h.level_patches(0).len()
        && old_h
            .level_patches(0)
            .iter()
            .zip(new_h.level_patches(0))
            .all(|(a, b)| a.interior() == b.interior())
}

/// Fills data on `new_h` from `old` on `old_h` (see the module docs),
/// consuming `old` so that unchanged patches move instead of being copied.
/// The two hierarchies share the geometry and level 0.
pub fn transfer<T: Real>(
    old_h: &Hierarchy,
    old: HierarchyData<T>,
    new_h: &Hierarchy,
    limiter: Limiter,
) -> Result<(HierarchyData<T>, TransferStats), RegridError> {
    transfer_in(old_h, old, new_h, limiter, &mut BufferPool::new())
}

/// [`transfer`] with the new states' memory taken from `pool` where a
/// buffer is large enough. The old hierarchy's new states are dead (only
/// those of unchanged patches move along), so their buffers join the pool
/// first and the new hierarchy's old states take them; then, once `old`
/// has been read and its remaining buffers added too, the new states. What
/// the pool holds afterwards is left to the caller ([`transfer`] drops it).
pub fn transfer_in<T: Real>(
    old_h: &Hierarchy,
    old: HierarchyData<T>,
    new_h: &Hierarchy,
    limiter: Limiter,
    pool: &mut BufferPool<T>,
) -> Result<(HierarchyData<T>, TransferStats), RegridError> {
    transfer_with(old_h, old, new_h, limiter, pool, &mut |_, _| Ok(()), None)
}

/// For a new patch of level `l ≥ 1` with `interior` (not the twin of an
/// old patch): the old patches of its level it copies from, the cells no
/// old patch covers (interpolated from the new coarse level), and the
/// coarse cells that interpolation reads (the open cells' bounding box,
/// coarsened and grown by the slope stencil, within the coarse domain),
/// if any cell is open.
pub fn interpolated_cells(
    old_h: &Hierarchy,
    interior: &IndexBox,
    l: usize,
    ratio: i32,
    coarse_domain: &IndexBox,
) -> (Vec<usize>, BoxList, Option<IndexBox>) {
    let olds = if l < old_h.num_levels() {
        old_h.patches_intersecting(l, interior)
    } else {
        Vec::new()
    };
    // Only the cells no old patch covers are interpolated: each fine value
    // depends on its coarse cell and that cell's neighbours alone, so these
    // are the values an interpolation of the whole interior would leave
    // there.
    let mut open = BoxList::from_box(*interior);
    let covered: Vec<_> = olds
        .iter()
        .map(|&o| old_h.patches()[o].interior())
        .collect();
    open.subtract_all(&covered);
    let cbox = open
        .boxes()
        .iter()
        .copied()
        .reduce(|a, b| a.bounding(&b))
        .map(|bound| bound.coarsen(ratio).grow(1).intersect(coarse_domain));
    (olds, open, cbox)
}

/// What [`transfer_with`] calls before each level it fills.
pub type BeforeLevel<'a, T> =
    dyn FnMut(usize, &mut HierarchyData<T>) -> Result<(), crate::MeshError> + 'a;

/// [`transfer_in`] calling `before_level(l, new)` before each level
/// `l ≥ 1` is filled, when the new data of levels `< l` is final: a
/// distributed run receives there the coarse cells other ranks filled,
/// which the interpolation onto level `l` reads. With `only`, only the new
/// patches it marks are filled (a rank's own patches): the others keep
/// zeros, unless they are unchanged patches, which move whole.
pub fn transfer_with<T: Real>(
    old_h: &Hierarchy,
    mut old: HierarchyData<T>,
    new_h: &Hierarchy,
    limiter: Limiter,
    pool: &mut BufferPool<T>,
    before_level: &mut BeforeLevel<'_, T>,
    only: Option<&[bool]>,
) -> Result<(HierarchyData<T>, TransferStats), RegridError> {
    let t_start = std::time::Instant::now();
    new_h.check_mask(only, "transfer mask")?;
    old.check_layout(old_h)?;
    let ncomp = old.ncomp();
    let mut stats = TransferStats::default();
    let zero = iv(0, 0, 0);

    if !same_level0(old_h, new_h) {
        return Err(RegridError::Level0Changed);
    }

    // The old patch of the same level and box as each new patch, if any.
    let twins: Vec<Option<usize>> = new_h
        .patches()
        .iter()
        .map(|p| {
            let l = p.level();
            (l < old_h.num_levels())
                .then(|| {
                    old_h
                        .patches_intersecting(l, &p.interior())
                        .into_iter()
                        .find(|&o| old_h.patches()[o].interior() == p.interior())
                })
                .flatten()
        })
        .collect();
    // Old new states are dead (never read), except those of twins, which
    // move with their patch: the rest give their memory to the new
    // hierarchy's old states.
    let mut twin_of_old = vec![false; old_h.num_patches()];
    for &o in twins.iter().flatten() {
        twin_of_old[o] = true;
    }
    for (o, twin) in twin_of_old.into_iter().enumerate() {
        if !twin {
            pool.put(old.release_new(o)?);
        }
    }
    let mut new = HierarchyData::with_old_in(new_h, ncomp, pool, only)?;
    let t_states = t_start.elapsed().as_secs_f64();
    let mut t_levels = Vec::with_capacity(new_h.num_levels());

    for l in 0..new_h.num_levels() {
        // Unchanged patches move over whole (ghost cells included). No other new patch of the level overlaps their
        // old state, which is therefore not needed below.
        let range = new_h.level_range(l);
        let moved = &twins[range.clone()];
        for (i, twin) in range.zip(moved) {
            if let Some(o) = *twin {
                std::mem::swap(&mut new.states_mut()[i], &mut old.states_mut()[o]);
            }
        }
        let moved_cells: i64 = new_h
            .level_patches(l)
            .iter()
            .zip(moved)
            .filter(|(_, m)| m.is_some())
            .map(|(p, _)| p.interior().num_cells())
            .sum();
        if l == 0 {
            stats.copied.push(moved_cells);
            stats.interpolated.push(0);
            continue;
        }

        before_level(l, &mut new)?;
        let t_level = std::time::Instant::now();
        let ratio = new_h.geometry().ratios()[l];
        let coarse_domain = new_h.geometry().level(l - 1)?.domain;
        let (cr, fr) = (new_h.level_range(l - 1), new_h.level_range(l));
        let (below, above) = new.states_mut().split_at_mut(fr.start);
        let coarse = &below[cr.clone()];
        let fine = &mut above[..fr.len()];
        let old_ref = &old;
        let wanted = |i: usize| only.is_none_or(|o| o[i]);
        let counts = fine
            .par_iter_mut()
            .zip(new_h.level_patches(l).par_iter())
            .zip(moved.par_iter())
            .zip(fr.clone().into_par_iter())
            .filter(|((_, m), i)| m.is_none() && wanted(*i))
            .map_init(
                || (CoarseScratch::<T>::new(), InterpWork::<T>::new()),
                |(scratch, work), (((state, patch), _), _)| -> Result<(i64, i64), RegridError> {
                    let interior = patch.interior();
                    let (olds, open, cbox) =
                        interpolated_cells(old_h, &interior, l, ratio, &coarse_domain);
                    if let Some(cbox) = cbox {
                        scratch.reset(cbox, ncomp)?;
                        for q in new_h.patches_intersecting(l - 1, &cbox) {
                            let region = cbox.intersect(&new_h.patches()[q].interior());
                            scratch.copy_from(&coarse[q - cr.start].old, &region, &zero)?;
                        }
                        for b in open.boxes() {
                            interpolate(
                                scratch,
                                ratio,
                                limiter,
                                b,
                                &mut FillTarget::patch(&mut state.old),
                                work,
                            )?;
                        }
                    }
                    let mut copied = 0;
                    for o in olds {
                        let region = interior.intersect(&old_h.patches()[o].interior());
                        state.old.copy_region(old_ref.old(o), &region, &zero)?;
                        copied += region.num_cells();
                    }
                    Ok((copied, interior.num_cells() - copied))
                },
            )
            .collect::<Result<Vec<_>, _>>()?;
        stats
            .copied
            .push(moved_cells + counts.iter().map(|c| c.0).sum::<i64>());
        stats.interpolated.push(counts.iter().map(|c| c.1).sum());
        t_levels.push(t_level.elapsed().as_secs_f64());
    }
    let t_renew = std::time::Instant::now();
    pool.reclaim(old);
    new.renew_in_where(new_h, pool, only)?;
    log::debug!(
        "transfer: old states {t_states:.3} s, levels 1.. {t_levels:.3?} s, new states {:.3} s",
        t_renew.elapsed().as_secs_f64()
    );
    Ok((new, stats))
}
