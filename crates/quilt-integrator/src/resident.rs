//! Device residency: the whole hierarchy in one batch that stays in the
//! backend between regrids.
//!
//! The resident batch holds every patch of every level (the hierarchy's
//! bin packing, descriptor `i` for hierarchy patch `i`) and after them the
//! step's flux probes, packed into bins of their own (descriptor
//! `patches + n` for probe `n`). A step is then, all in the backend:
//!
//! 1. the ghost fill of every patch from the old interiors
//!    ([`quilt_mesh::flat::FlatFill`]) and the probes copied from their
//!    coarse patches;
//! 2. the sweeps of the whole batch in place (new interiors, fluxes);
//! 3. level by level, finest first: refluxing of the coarse cells next to
//!    the level's patches and restriction onto them.
//!
//! These are the host-staged step's operations on the same cells in the
//! same order, so both residencies give the same state bit for bit. The
//! state moves as compact interiors (`pack_interiors`,
//! `unpack_interiors`), and back to the host only when the host needs
//! it: regrids, outputs, checkpoints.

use std::sync::Arc;

use quilt_mesh::flat::{CopyItem, LevelItems, StepItems, Strided, rel, restrict_items};
use quilt_mesh::locked::{LockedArena, PageLock, PatchBuf};
use quilt_mesh::{Hierarchy, HierarchyData, Side, iv};
use quilt_sweep::{BatchLayout, PatchShape};
use rayon::prelude::*;

use crate::Real;
use crate::backend::{ItemStage, StagedItems};
use crate::error::IntegratorError;
use crate::plan::StepPlan;
use crate::stages::{PROBE_ID_BASE, patch_shape, size_of_box};

/// The resident batch's layout and the items of its step.
#[derive(Clone, Debug)]
pub struct ResidentPlan {
    /// Every patch (descriptors `0 .. patches`, hierarchy order), then
    /// every probe.
    pub layout: BatchLayout,
    /// The step's fill, probe copies, refluxing and restriction.
    pub items: Arc<StepItems>,
    /// Hierarchy patches (the descriptors before the probes).
    pub patches: usize,
    /// Where each hierarchy patch's ghost-grown box lives in the batch.
    pub places: Vec<Strided>,
}

impl ResidentPlan {
    /// Values of device memory the resident state needs: the batch, its
    /// flux buffer and the fill's scratch (items aside).
    pub fn values(&self) -> u64 {
        let l = &self.layout;
        l.data_len() as u64 + l.flux_len() as u64 + self.items.fill.scratch_len
    }

    /// Bytes of backend memory the resident state takes with values of
    /// `value_size` bytes: the batch with its fluxes and the fill's scratch
    /// ([`ResidentPlan::values`]), the compact interiors that loads and
    /// stores pass through, and the step's items with a prefix sum of
    /// cells per item. What `run.residency = "auto"` weighs against the
    /// device's memory.
    pub fn device_bytes(&self, value_size: usize) -> u64 {
        fn list<I>(v: &[I]) -> u64 {
            (v.len() * (size_of::<I>() + size_of::<u64>())) as u64
        }
        let it = &self.items;
        let f = &it.fill;
        let levels: u64 = it
            .levels
            .iter()
            .map(|l| list(&l.reflux.items) + list(&l.reflux.coarse) + list(&l.restrict))
            .sum();
        let items = list(&f.copies)
            + list(&f.interp)
            + f.boundary.iter().map(|b| list(b)).sum::<u64>()
            + f.flags.len() as u64
            + list(&it.after)
            + 2 * list(&it.interiors)
            + levels;
        (self.values() + it.interior_len) * value_size as u64 + items
    }
}

/// Places boxes `extents` into bins of edge `edge` on shelves: sorted by
/// height, rows along `x`, rows stacked along `y`, layers along `z`. The
/// probes of a large hierarchy number tens of thousands, where the
/// extreme-point packing of the patches costs seconds; they are small and
/// solved once, so a simple packing suffices. Returns `(bin, offset)` per
/// box.
fn shelves(extents: &[[u32; 3]], edge: u32) -> Result<Vec<(u32, [u32; 3])>, IntegratorError> {
    if let Some(e) = extents
        .iter()
        .find(|e| e.iter().any(|&v| v > edge || v == 0))
    {
        return Err(IntegratorError::Internal(format!(
            "a probe of extent {e:?} does not fit bins of edge {edge}"
        )));
    }
    let mut order: Vec<usize> = (0..extents.len()).collect();
    order.sort_by_key(|&k| std::cmp::Reverse((extents[k][2], extents[k][1], extents[k][0])));
    let mut out = vec![(0, [0; 3]); extents.len()];
    let (mut bin, mut x, mut y, mut z) = (0u32, 0u32, 0u32, 0u32);
    let (mut row, mut layer) = (0u32, 0u32);
    for k in order {
        let [ex, ey, ez] = extents[k];
        if x + ex > edge {
            y += row;
            x = 0;
            row = 0;
        }
        if y + ey > edge {
            z += layer;
            y = 0;
            x = 0;
            row = 0;
            layer = 0;
        }
        if z + ez > edge {
            bin += 1;
            (x, y, z, row, layer) = (0, 0, 0, 0, 0);
        }
        out[k] = (bin, [x, y, z]);
        x += ex;
        row = row.max(ey);
        layer = layer.max(ez);
    }
    Ok(out)
}

/// The resident plan of `h` with its step plan `plan` (bins, probes,
/// registers).
pub(crate) fn resident_plan<T: Real>(
    h: &Hierarchy,
    plan: &StepPlan<T>,
) -> Result<ResidentPlan, IntegratorError> {
    resident_plan_with(h, plan, None, |_, _| ()).map(|(p, (), _)| p)
}

/// [`resident_plan`], running `alongside` with the batch layout and the
/// patches' places in it ([`ResidentPlan::layout`],
/// [`ResidentPlan::places`]) while the items are built, and handing the
/// items to `stage` (a backend's [`ItemStage`]) as soon as they are: what
/// it builds comes back third (`None` without a stage, or if it failed:
/// the backend then builds its own).
pub(crate) fn resident_plan_with<T: Real, R: Send>(
    h: &Hierarchy,
    plan: &StepPlan<T>,
    stage: Option<&dyn ItemStage>,
    alongside: impl FnOnce(&BatchLayout, &[Strided]) -> R + Send,
) -> Result<(ResidentPlan, R, Option<StagedItems>), IntegratorError> {
    let t0 = std::time::Instant::now();
    let lay = &plan.layout;
    let g = lay.ghost;
    let edge = lay.bin_edge;
    let ncomp = lay.ncomp;
    let n = h.num_patches();
    let mut at = vec![None; n];
    for (b, bin) in lay.bins.iter().enumerate() {
        for &(i, offset) in &bin.patches {
            at[i] = Some((b as u32, offset));
        }
    }
    let mut shapes = Vec::with_capacity(n + lay.probes.len());
    let mut places = Vec::with_capacity(n + lay.probes.len());
    for (i, place) in at.iter().enumerate() {
        let place = place.ok_or_else(|| {
            IntegratorError::Internal(format!("patch index {i} is in no bin of the packing"))
        })?;
        shapes.push(patch_shape(h, i, g)?);
        places.push(place);
    }
    if !lay.probes.is_empty() {
        let extents: Vec<[u32; 3]> = lay
            .probes
            .iter()
            .map(|q| size_of_box(&q.interior.grow(g)))
            .collect();
        let first = lay.bins.len() as u32;
        for (k, (q, at)) in lay.probes.iter().zip(shelves(&extents, edge)?).enumerate() {
            let level = h.patches()[q.coarse].level();
            let lg = h.level_geometry(level).ok_or_else(|| {
                IntegratorError::Internal(format!("probe {k} has no level geometry"))
            })?;
            shapes.push(PatchShape {
                id: PROBE_ID_BASE + k as u64,
                extent: extents[k],
                ghost: g as u32,
                level: level as u32,
                dx: [lg.dx.x, lg.dx.y, lg.dx.z],
                user: k as u32,
            });
            places.push((first + at.0, at.1));
        }
    }
    let t_pack = t0.elapsed().as_secs_f64();
    let layout = BatchLayout::packed(edge, ncomp as u32, &shapes, &places)?;
    let strided = |d: usize| {
        let desc = &layout.patches()[d];
        Strided::in_bin(
            layout.bins(),
            desc.bin as usize,
            desc.offset.map(|v| v as usize),
        )
    };
    let patch_places: Vec<Strided> = (0..n).map(strided).collect();
    let (items, extra) = rayon::join(
        || -> Result<(StepItems, Option<StagedItems>), IntegratorError> {
            let mesh = |what: &str| IntegratorError::mesh(format!("resident {what}"));
            let t_layout = t0.elapsed().as_secs_f64();
            let after = lay
                .probes
                .iter()
                .enumerate()
                .map(|(k, q)| {
                    let bx = q.interior.grow(g);
                    CopyItem {
                        src: patch_places[q.coarse]
                            .at(rel(&bx.lo, &h.patches()[q.coarse].ghost_box().lo)),
                        dst: strided(n + k),
                        n: size_of_box(&bx),
                        route: CopyItem::IN_STORE,
                    }
                })
                .collect();
            // Levels are independent here: built side by side, finest first.
            let fine_levels: Vec<usize> = (1..h.num_levels()).rev().collect();
            let level_items = |l: usize| -> Result<LevelItems, IntegratorError> {
                let tl = std::time::Instant::now();
                // Refluxing's items and restriction's are independent.
                let (reflux, restrict) = rayon::join(
                    || -> Result<_, IntegratorError> {
                        let reg = &plan.registers[l - 1];
                        let mut flat = reg.flat();
                        let shifts = h
                            .level_geometry(l - 1)
                            .map_or_else(|| vec![iv(0, 0, 0)], |lg| lg.periodic_shifts());
                        // The probes' faces, as the host's refluxing hands them over.
                        flat.record_par(|share| {
                            let mut count = 0;
                            for k in lay.probes_of_fine[share.fine_patch()].clone() {
                                let q = &lay.probes[k];
                                let mut at = layout.patches()[n + k].flux_offset;
                                let sz = q.interior.size();
                                let area =
                                    [sz.y * sz.z, sz.x * sz.z, sz.x * sz.y].map(|a| a as u64);
                                for (axis, &a) in area.iter().enumerate() {
                                    for side in Side::BOTH {
                                        let faces = q.interior.boundary_faces(axis, side);
                                        let fs = faces.size();
                                        let src = Strided {
                                            base: at,
                                            sy: fs.x as u64,
                                            sz: fs.x as u64 * fs.y as u64,
                                            sc: a,
                                        };
                                        at += a * ncomp as u64;
                                        let outside = q.interior.adjacent(axis, side, 1);
                                        for s in &shifts {
                                            for c in
                                                h.patches_intersecting(l - 1, &outside.shift(s))
                                            {
                                                count += share.add_coarse(
                                                    c,
                                                    axis,
                                                    faces.shift(s),
                                                    src,
                                                )?;
                                            }
                                        }
                                    }
                                }
                            }
                            Ok(count)
                        })
                        .map_err(mesh("probe fluxes"))?;
                        let t_probe = tl.elapsed().as_secs_f64();
                        let reflux = flat
                            .finish(h, &patch_places, &|f| {
                                layout.patches().get(f).map(|d| d.flux_offset)
                            })
                            .map_err(mesh("refluxing"))?;
                        Ok((reflux, t_probe, tl.elapsed().as_secs_f64() - t_probe))
                    },
                    || {
                        let t = std::time::Instant::now();
                        let r = restrict_items(h, l, &patch_places).map_err(mesh("restriction"));
                        (r, t.elapsed().as_secs_f64())
                    },
                );
                let ((reflux, t_probe, t_reflux), (restrict, t_restrict)) = (reflux?, restrict);
                let restrict = restrict?;
                log::debug!(
                    "level {l} items: register and probe faces {t_probe:.3} s, reflux items {t_reflux:.3} s, beside them restriction {t_restrict:.3} s"
                );
                Ok(LevelItems {
                    level: l,
                    reflux,
                    restrict,
                })
            };
            // The fill's items and the levels' are independent too.
            let (fill, levels) = rayon::join(
                || {
                    let fill = quilt_mesh::flat::FlatFill::new(&lay.fill, &patch_places, ncomp)
                        .map_err(mesh("ghost fill"));
                    (fill, t0.elapsed().as_secs_f64() - t_layout)
                },
                || {
                    fine_levels
                        .into_par_iter()
                        .map(level_items)
                        .collect::<Result<Vec<_>, _>>()
                },
            );
            let (fill, t_fill) = fill;
            let (fill, levels) = (fill?, levels?);
            log::debug!(
                "resident items: probes placed {t_pack:.3} s, layout {:.3} s, fill {t_fill:.3} s beside probe copies, refluxing and restriction: {:.3} s",
                t_layout - t_pack,
                t0.elapsed().as_secs_f64() - t_layout
            );
            let mut interior_len = 0u64;
            let interiors = h
                .patches()
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let b = p.interior();
                    let s = b.size();
                    let (nx, ny, nz) = (s.x as u64, s.y as u64, s.z as u64);
                    let dst = Strided {
                        base: interior_len,
                        sy: nx,
                        sz: nx * ny,
                        sc: nx * ny * nz,
                    };
                    interior_len += nx * ny * nz * ncomp as u64;
                    CopyItem {
                        src: patch_places[i].at(rel(&b.lo, &p.ghost_box().lo)),
                        dst,
                        n: size_of_box(&b),
                        route: CopyItem::TO_SCRATCH,
                    }
                })
                .collect();
            let items = StepItems {
                ncomp: ncomp as u32,
                fill,
                after,
                levels,
                interiors,
                interior_len,
            };
            let staged = stage.and_then(|s| {
                let t = std::time::Instant::now();
                match s.stage(&layout, &items, n) {
                    Ok(st) => {
                        log::debug!(
                            "resident items staged in {:.3} s",
                            t.elapsed().as_secs_f64()
                        );
                        Some(st)
                    }
                    Err(e) => {
                        log::debug!("the resident items are left to the backend: {e}");
                        None
                    }
                }
            });
            Ok((items, staged))
        },
        || alongside(&layout, &patch_places),
    );
    let (items, staged) = items?;
    Ok((
        ResidentPlan {
            layout,
            items: Arc::new(items),
            patches: n,
            places: patch_places,
        },
        extra,
        staged,
    ))
}

/// Every patch's old interior in the compact order of
/// [`StepItems::interiors`] (patch after patch, component after component,
/// then `z`, `y`, `x` fastest), into `out` as [`size_compact`] sizes it
/// for `lock`.
pub(crate) fn pack_interiors<T: Real>(
    plan: &ResidentPlan,
    data: &HierarchyData<T>,
    out: &mut PatchBuf<T>,
    lock: Option<&Arc<dyn PageLock>>,
) {
    size_compact(out, plan.items.interior_len as usize, lock);
    patch_parts(plan, out)
        .into_par_iter()
        .enumerate()
        .for_each(|(i, part)| {
            let d = data.old(i);
            for_rows(d, |r, from, nx| {
                part[r * nx..(r + 1) * nx].copy_from_slice(&d.as_slice()[from..from + nx]);
            });
        });
}

/// Gives `out` `n` values, reusing its memory when it holds them. Memory
/// that must grow is mapped anew, with room for an eighth more, and
/// page-locked by `lock` where there is one: the interiors then cross the
/// bus at its full rate, several times the rate from pageable memory,
/// and the memory is locked once per run rather than at every transfer.
/// Without a lock (or when the lock is refused) it is a zeroed vector,
/// whose pages the parallel copies then map: growing a vector in place
/// would write every new value from one thread first (about a second for
/// the 2.2 GB of the large sphere in f64).
pub(crate) fn size_compact<T: Real>(
    out: &mut PatchBuf<T>,
    n: usize,
    lock: Option<&Arc<dyn PageLock>>,
) {
    if let Some(b) = std::mem::take(out).refit(n) {
        *out = b;
        return;
    }
    if let Some(lock) = lock {
        // An arena of its own, dropped with the buffer: the memory of a
        // smaller array is given back, not kept for blocks to come.
        let arena = LockedArena::new(lock.clone(), 0);
        match arena.alloc::<T>(n + n / 8, "the compact interiors of the resident state") {
            Ok(b) => {
                if let Some(b) = b.refit(n) {
                    *out = b;
                    return;
                }
            }
            Err(e) => log::debug!("the compact interiors stay in pageable memory: {e}"),
        }
    }
    *out = PatchBuf::from(vec![T::zero(); n]);
}

/// The compact interiors of [`pack_interiors`] back into `data`'s old state.
pub(crate) fn unpack_interiors<T: Real>(
    plan: &ResidentPlan,
    compact: &mut [T],
    data: &mut HierarchyData<T>,
) {
    let parts = patch_parts(plan, compact);
    data.states_mut()[..plan.patches]
        .par_iter_mut()
        .zip(parts)
        .for_each(|(s, part)| {
            let d = &mut s.old;
            let mut rows = Vec::new();
            for_rows(d, |r, to, nx| rows.push((r, to, nx)));
            let buf = d.as_mut_slice();
            for (r, to, nx) in rows {
                buf[to..to + nx].copy_from_slice(&part[r * nx..(r + 1) * nx]);
            }
        });
}

/// The compact array cut into each patch's part.
fn patch_parts<'a, T>(plan: &ResidentPlan, out: &'a mut [T]) -> Vec<&'a mut [T]> {
    let lens = plan.items.interiors.iter();
    let ncomp = plan.items.ncomp as usize;
    quilt_mesh::memory::split_parts(
        out,
        lens.map(|it| it.n.iter().map(|&v| v as usize).product::<usize>() * ncomp),
    )
}

/// Calls `f(row, index in d's values, nx)` for every interior row of `d`,
/// rows numbered component after component, then `z`, then `y`.
fn for_rows<T: Real>(d: &quilt_mesh::PatchData<T>, mut f: impl FnMut(usize, usize, usize)) {
    let (lo, n) = (d.interior().lo, d.interior().size());
    let nx = n.x as usize;
    let mut r = 0;
    for c in 0..d.ncomp() {
        for z in 0..n.z {
            for y in 0..n.y {
                f(r, d.index(&(lo + iv(0, y, z))) + c * d.comp_len(), nx);
                r += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shelves_place_boxes_inside_bins_without_overlap() {
        let mut seed = 7u64;
        let mut next = |m: u32| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            1 + ((seed >> 33) as u32 % m)
        };
        let extents: Vec<[u32; 3]> = (0..3000).map(|_| [next(20), next(20), next(20)]).collect();
        let at = shelves(&extents, 32).unwrap();
        let boxes: Vec<(u32, [u32; 3], [u32; 3])> = at
            .iter()
            .zip(&extents)
            .map(|(&(b, o), &e)| (b, o, e))
            .collect();
        for (i, &(b, o, e)) in boxes.iter().enumerate() {
            assert!((0..3).all(|a| o[a] + e[a] <= 32), "box {i} leaves its bin");
            for &(b2, o2, e2) in &boxes[i + 1..] {
                let apart =
                    b != b2 || (0..3).any(|a| o[a] + e[a] <= o2[a] || o2[a] + e2[a] <= o[a]);
                assert!(apart, "box {i} overlaps another");
            }
        }
        assert!(shelves(&[[33, 1, 1]], 32).is_err());
    }

    /// Counts locks and unlocks instead of talking to a device, or
    /// refuses them all.
    #[derive(Default)]
    struct Lock {
        refuse: bool,
        locked: std::sync::atomic::AtomicUsize,
        unlocked: std::sync::atomic::AtomicUsize,
    }

    impl PageLock for Lock {
        unsafe fn lock(&self, _ptr: *mut u8, _bytes: usize) -> Result<(), String> {
            if self.refuse {
                return Err("no device".into());
            }
            self.locked
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(())
        }
        unsafe fn unlock(&self, _ptr: *mut u8) {
            self.unlocked
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        fn kind(&self) -> &'static str {
            "test lock"
        }
    }

    #[test]
    fn compact_interiors_are_locked_once_and_reused_until_they_grow() {
        use std::sync::atomic::Ordering::SeqCst;
        let lock = Arc::new(Lock::default());
        let dyn_lock: Arc<dyn PageLock> = lock.clone();
        let mut io = PatchBuf::<f64>::default();
        size_compact(&mut io, 1000, Some(&dyn_lock));
        assert!(io.is_page_locked());
        assert_eq!(io.len(), 1000);
        io[999] = 3.0;
        // Smaller, and up to the eighth of room: the same locked memory.
        size_compact(&mut io, 500, Some(&dyn_lock));
        size_compact(&mut io, 1100, Some(&dyn_lock));
        assert_eq!(io.len(), 1100);
        assert_eq!(lock.locked.load(SeqCst), 1);
        assert_eq!(lock.unlocked.load(SeqCst), 0);
        // Larger: new memory, the old unlocked with its arena.
        size_compact(&mut io, 1 << 20, Some(&dyn_lock));
        assert!(io.is_page_locked());
        assert_eq!(io.len(), 1 << 20);
        assert_eq!(lock.locked.load(SeqCst), 2);
        assert_eq!(lock.unlocked.load(SeqCst), 1);
        drop(io);
        assert_eq!(lock.unlocked.load(SeqCst), 2);

        // A refused lock, or none: pageable memory of the size asked for.
        let refusing: Arc<dyn PageLock> = Arc::new(Lock {
            refuse: true,
            ..Lock::default()
        });
        for lock in [Some(&refusing), None] {
            let mut io = PatchBuf::<f32>::default();
            size_compact(&mut io, 77, lock);
            assert!(!io.is_page_locked());
            assert_eq!(io.len(), 77);
            assert!(io.iter().all(|&v| v == 0.0));
        }
    }
}
