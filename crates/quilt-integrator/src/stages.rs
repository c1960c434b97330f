//! The three stages of a batch: assemble + **prepare** (fill every patch's
//! interior and ghosts straight into its bin, then copy its probes from
//! it), **solve** (through the backend) and **close** (interiors into the
//! new state, boundary fluxes into the per-patch flux stores).
//!
//! Prepare reads only old state; close writes only new state and the flux
//! stores of its own patches. Each patch is prepared, solved and closed
//! exactly once per step, whatever the batch it lands in, so neither the
//! batching nor the overlap of stages can change a result.

use std::time::Instant;

use quilt_batch::PatchRef;
use quilt_mesh::PatchData;
use quilt_mesh::fill::{BinPlacement, FillScratch, FillTarget, OldData, split_bins};
use quilt_mesh::{Hierarchy, IndexBox};
use quilt_pack::{PackOptions, pack};
use quilt_sweep::layout::data_index;
use quilt_sweep::{Batch, BatchLayout, LayoutError, PatchShape};
use rayon::prelude::*;

use crate::Real;
use crate::backend::{BoxPart, InPlaceBox, Restricted};
use crate::error::IntegratorError;
use crate::plan::{FluxStore, PlanLayout, Shelf};

/// Descriptor ids of probes start here (hierarchy patch ids are `u32`).
pub(crate) const PROBE_ID_BASE: u64 = 1 << 32;

/// One unit of prepare and close work: a hierarchy patch and the probes
/// that copy from it.
#[derive(Clone, Debug)]
pub(crate) struct Job {
    /// Hierarchy index.
    pub patch: usize,
    /// Descriptor index in the batch layout.
    pub desc: usize,
    /// `(probe index, descriptor index)`.
    pub probes: Vec<(usize, usize)>,
}

/// A batch ready for (or past) its solve.
pub(crate) struct StagedBatch<T> {
    pub batch: Batch<T>,
    /// Global bin indices (into the step plan's bins).
    pub bins: Vec<usize>,
    /// Jobs per CPU queue.
    pub queues: Vec<Vec<Job>>,
    /// Measured prepare seconds per queue.
    pub prepare_secs: Vec<f64>,
    /// Wall seconds of the batch's assembly and buffer.
    pub assemble_secs: f64,
    /// What the backend's [`crate::LayoutStage`] built for the layout.
    pub layout_state: Option<crate::StagedLayout>,
    /// The probes prepare left to the backend ([`crate::SolveBackend::fills_probes`]),
    /// `parent` counting the patches solved in place in
    /// [`CloseWork::in_place_boxes`]' order.
    pub probes: Vec<BoxPart>,
}

/// Builds the layout of a batch made of the global bins `bins`, with the
/// selector's queues (`PatchRef::bin` indexes `bins`), and its jobs. The
/// probes of the batch's patches come on their bins' shelves, packed here
/// into extra bins.
pub(crate) fn assemble<T: Real>(
    plan: &PlanLayout<T>,
    h: &Hierarchy,
    bins: &[usize],
    queues: &[Vec<PatchRef>],
) -> Result<(BatchLayout, Vec<Vec<Job>>), IntegratorError> {
    let g = plan.ghost;
    let mut shapes = Vec::new();
    let mut places = Vec::new();
    // Descriptor of the first patch of each of the batch's bins.
    let mut first_desc = Vec::with_capacity(bins.len());
    for (nb, &b) in bins.iter().enumerate() {
        first_desc.push(shapes.len());
        for &(i, offset) in &plan.bins[b].patches {
            shapes.push(patch_shape(h, i, g)?);
            places.push((nb as u32, offset));
        }
    }
    let patches = shapes.len();
    let shelves: Vec<&Shelf> = bins.iter().flat_map(|&b| &plan.shelves[b]).collect();
    let mut probe_desc = std::collections::HashMap::new();
    if !shelves.is_empty() {
        let extents: Vec<[u32; 3]> = shelves.iter().map(|s| s.extent).collect();
        let edge = plan.bin_edge;
        let packing = pack(&extents, [edge; 3], &PackOptions::default())?;
        let first = bins.len() as u32;
        for (k, shelf) in shelves.iter().enumerate() {
            let pl = &packing.placements[k];
            if pl.extent != extents[k] {
                return Err(IntegratorError::Internal(format!(
                    "a shelf was placed rotated ({:?} for {:?})",
                    pl.extent, extents[k]
                )));
            }
            for &(n, at) in &shelf.probes {
                let q = &plan.probes[n];
                let level = h.patches()[q.coarse].level();
                let lg = h.level_geometry(level).ok_or_else(|| {
                    IntegratorError::Internal(format!("probe {n} has no level geometry"))
                })?;
                probe_desc.insert(n, shapes.len());
                shapes.push(PatchShape {
                    id: PROBE_ID_BASE + n as u64,
                    extent: size_of_box(&q.interior.grow(g)),
                    ghost: g as u32,
                    level: level as u32,
                    dx: [lg.dx.x, lg.dx.y, lg.dx.z],
                    user: n as u32,
                });
                places.push((
                    first + pl.bin as u32,
                    [0, 1, 2].map(|a| pl.offset[a] + at[a]),
                ));
            }
        }
    }
    let layout = BatchLayout::packed(plan.bin_edge, plan.ncomp as u32, &shapes, &places)?;
    let mut jobs: Vec<Vec<Job>> = Vec::with_capacity(queues.len());
    let mut listed = 0;
    for q in queues {
        let mut list = Vec::with_capacity(q.len());
        for r in q {
            let b = *bins.get(r.bin).ok_or_else(|| {
                IntegratorError::Internal(format!(
                    "queue names bin {} of a batch of {}",
                    r.bin,
                    bins.len()
                ))
            })?;
            // Entries past the bin's patches are its probes, which travel
            // with their coarse patch.
            let Some(&(i, _)) = plan.bins[b].patches.get(r.patch) else {
                continue;
            };
            let probes = plan.probes_of[i]
                .iter()
                .map(|&n| {
                    probe_desc.get(&n).map(|&d| (n, d)).ok_or_else(|| {
                        IntegratorError::Internal(format!("probe {n} is on no shelf of its bin"))
                    })
                })
                .collect::<Result<_, _>>()?;
            list.push(Job {
                patch: i,
                desc: first_desc[r.bin] + r.patch,
                probes,
            });
            listed += 1;
        }
        jobs.push(list);
    }
    if listed != patches {
        return Err(IntegratorError::Internal(format!(
            "the selection's queues hold {listed} patches, the batch's bins {patches}"
        )));
    }
    Ok((layout, jobs))
}

/// The descriptor shape of hierarchy patch `i` (ghost width `g`): its id,
/// ghost-grown extent, level and cell size; `user` holds the index.
pub(crate) fn patch_shape(h: &Hierarchy, i: usize, g: i32) -> Result<PatchShape, IntegratorError> {
    let p = &h.patches()[i];
    let lg = h.level_geometry(p.level()).ok_or_else(|| {
        IntegratorError::Internal(format!("patch index {i} has no level geometry"))
    })?;
    Ok(PatchShape {
        id: u64::from(p.id().0),
        extent: size_of_box(&p.ghost_box()),
        ghost: g as u32,
        level: p.level() as u32,
        dx: [lg.dx.x, lg.dx.y, lg.dx.z],
        user: i as u32,
    })
}

pub(crate) fn size_of_box(b: &IndexBox) -> [u32; 3] {
    let s = b.size();
    [s.x, s.y, s.z].map(|v| u32::try_from(v).unwrap_or(0))
}

/// Fills every patch of the batch (interior and ghosts, by the mesh's ghost
/// fill straight into its bin), one rayon task per patch, and copies each
/// of the patch's probes from its filled box in the same task, while its
/// rows are in cache. Returns seconds per queue: the sum over its patches
/// (probe copies counted with their coarse patch).
///
/// A patch whose old and new states are both page-locked
/// ([`Checked::in_place`]) has only the ghost cells of its old state
/// filled, in place, and no bin: the backend reads its old state and
/// writes its new interior where they are
/// ([`crate::SolveBackend::solve_in_place`]). With `backend_probes` (the
/// backend [`crate::SolveBackend::fills_probes`]) such a patch's probes
/// are not copied either: they go to `probes`, for the backend to take
/// from the patch's old state.
#[allow(clippy::too_many_arguments)]
pub(crate) fn prepare<T: Real, D: OldData<T> + Sync + ?Sized>(
    plan: &PlanLayout<T>,
    h: &Hierarchy,
    old: &D,
    time: f64,
    batch: &mut Batch<T>,
    queues: &[Vec<Job>],
    work: &mut CloseWork<'_, T>,
    backend_probes: bool,
    probes: &mut Vec<BoxPart>,
) -> Result<Vec<f64>, IntegratorError> {
    let g = plan.ghost;
    // Patches and probes alike get a target: probes are written by the
    // task of their coarse patch.
    let placements: Vec<BinPlacement> = batch
        .layout()
        .patches()
        .iter()
        .map(|d| BinPlacement {
            bin: d.bin as usize,
            offset: d.offset.map(|v| v as usize),
            bx: if d.id >= PROBE_ID_BASE {
                plan.probes[d.user as usize].interior.grow(g)
            } else {
                h.patches()[d.user as usize].ghost_box()
            },
        })
        .collect();
    let edge = plan.bin_edge as usize;
    let targets = split_bins(batch.data_mut(), edge, plan.ncomp, &placements)
        .map_err(IntegratorError::mesh("batch targets"))?;
    let mut slots: Vec<Option<FillTarget<'_, T>>> = targets.into_iter().map(Some).collect();
    // The message is built only on failure: this runs for every patch and
    // probe of every batch.
    let mut take = |desc: usize, what: &dyn Fn() -> String| {
        slots
            .get_mut(desc)
            .and_then(Option::take)
            .ok_or_else(|| IntegratorError::Internal(format!("{} listed twice", what())))
    };
    // One task per patch, not per queue: a queue is the cost model's unit
    // of CPU work, but running queues as tasks leaves the batch to its
    // slowest queue whenever fewer workers are free than there are queues
    // (one drives the solve, others close the previous batch). Each queue
    // is charged the sum of its patches' seconds, the figure the model
    // estimates.
    // `(queue, patch, ghosts only, target, probes)`.
    type Work<'t, T> = (
        usize,
        usize,
        bool,
        FillTarget<'t, T>,
        Vec<FillTarget<'t, T>>,
    );
    let mut tasks: Vec<Work<'_, T>> = Vec::with_capacity(work.items.len());
    // Patches solved in place so far: the next one's index among them.
    let mut parents = 0;
    probes.clear();
    // `work` holds the batch's jobs in queue order (`CloseWork::arrange`).
    for (qi, k, c) in work.items.iter_mut() {
        let job = &queues[*qi][*k];
        let bin = take(job.desc, &|| format!("patch index {}", job.patch))?;
        let old = old.old_patch(job.patch).ok_or_else(|| {
            IntegratorError::Internal(format!("patch index {} has no old state", job.patch))
        })?;
        c.in_place = c.new.is_page_locked() && old.is_page_locked();
        let t = if c.in_place {
            // SAFETY: this task alone writes this old state, and only its
            // ghost cells (`fill_ghosts`); each patch is prepared once per
            // step. Every other read of an old state during the batch
            // loop is a fill's read of interior rows (`PatchData::row`) or
            // the solve's read of a state whose prepare has finished
            // (`CloseWork::in_place_boxes`); the loop holds the states
            // borrowed from the integrator throughout.
            unsafe { FillTarget::shared_ghosts(old) }
                .map_err(IntegratorError::mesh("the old state filled in place"))?
        } else {
            bin
        };
        let mut targets = Vec::with_capacity(job.probes.len());
        for &(n, pd) in &job.probes {
            let target = take(pd, &|| format!("probe {n}"))?;
            if c.in_place && backend_probes {
                // A probe's ghost box lies in its coarse patch's.
                let at = plan.probes[n].interior.grow(g).lo - h.patches()[job.patch].ghost_box().lo;
                let offset = [at.x, at.y, at.z].map(|v| u32::try_from(v).unwrap_or(u32::MAX));
                probes.push(BoxPart {
                    desc: pd,
                    parent: parents,
                    offset,
                });
            } else {
                targets.push(target);
            }
        }
        parents += usize::from(c.in_place);
        tasks.push((*qi, job.patch, c.in_place, t, targets));
    }
    let timed = tasks
        .into_par_iter()
        .with_max_len(1)
        .map_init(
            FillScratch::new,
            |scratch, (qi, patch, ghosts_only, mut target, probes)| {
                let t0 = Instant::now();
                let what = || format!("preparing patch {}", h.patches()[patch].id());
                if ghosts_only {
                    plan.fill
                        .fill_ghosts(old, patch, time, &mut target, scratch)
                        .map_err(IntegratorError::mesh(what()))?;
                } else {
                    plan.fill
                        .prepare(old, patch, time, &mut target, scratch)
                        .map_err(IntegratorError::mesh(what()))?;
                }
                for mut probe in probes {
                    let region = probe.bx();
                    probe
                        .copy_from(&target, &region)
                        .map_err(IntegratorError::mesh(what()))?;
                }
                Ok((qi, t0.elapsed().as_secs_f64()))
            },
        )
        .collect::<Result<Vec<(usize, f64)>, IntegratorError>>()?;
    let mut secs = vec![0.0; queues.len()];
    for (qi, t) in timed {
        secs[qi] += t;
    }
    Ok(secs)
}

/// A patch's new state in the step, with where a backend may put what it
/// derives from it ([`InPlaceBox::restricted`]).
pub(crate) struct NewState<'d, T> {
    pub data: &'d mut PatchData<T>,
    pub restricted: Option<Restricted<'d, T>>,
}

/// A patch checked out of the step's state for its batch: its new state
/// and its flux stores (and its probes'), owned by the batch from its
/// prepare to the end of its close, so that batches run their stages at
/// once without sharing a patch.
pub(crate) struct Checked<'d, T> {
    /// Hierarchy index.
    pub patch: usize,
    pub new: &'d mut PatchData<T>,
    /// The new state's restriction outputs, handed to the backend with the
    /// patch if it is solved in place.
    restricted: Option<Restricted<'d, T>>,
    /// Set by [`prepare`]: old and new state page-locked, the old one's
    /// ghosts filled in place.
    in_place: bool,
    flux: Vec<T>,
    /// `(probe index, flux block)`.
    probes: Vec<(usize, Vec<T>)>,
}

impl<T: Real> Checked<'_, T> {
    /// Whether the patch was prepared in its own old state and is solved
    /// from there into its new state, not in its bin: both are
    /// page-locked (decided by [`prepare`]).
    pub fn in_place(&self) -> bool {
        self.in_place
    }
}

/// A batch's patches checked out of the step's state, in the order of
/// its queues' jobs: `(queue, job in the queue, patch)`.
pub(crate) struct CloseWork<'d, T> {
    items: Vec<(usize, usize, Checked<'d, T>)>,
}

impl<'d, T: Real> CloseWork<'d, T> {
    /// The checked-out patches, in [`patches_of`]'s order, paired with
    /// the jobs of `queues` (which [`assemble`] lists in the same order).
    pub fn arrange(
        patches: Vec<Checked<'d, T>>,
        queues: &[Vec<Job>],
    ) -> Result<Self, IntegratorError> {
        let jobs = queues
            .iter()
            .enumerate()
            .flat_map(|(qi, q)| q.iter().enumerate().map(move |(k, j)| (qi, k, j.patch)));
        let n = patches.len();
        let mut items = Vec::with_capacity(n);
        let mut checked = patches.into_iter();
        for (qi, k, patch) in jobs {
            let c = checked.next().filter(|c| c.patch == patch).ok_or_else(|| {
                IntegratorError::Internal(format!(
                    "patch index {patch} of a batch was not checked out in its place"
                ))
            })?;
            items.push((qi, k, c));
        }
        if let Some(c) = checked.next() {
            return Err(IntegratorError::Internal(format!(
                "patch index {} was checked out for a batch that does not hold it",
                c.patch
            )));
        }
        Ok(Self { items })
    }

    /// The patches that live in place, as the backend takes them: the
    /// descriptor, the old state (its ghosts filled by [`prepare`]) and
    /// the new one.
    pub fn in_place_boxes<'s, D: OldData<T> + ?Sized>(
        &'s mut self,
        queues: &[Vec<Job>],
        olds: &'s D,
    ) -> Result<Vec<InPlaceBox<'s, T>>, LayoutError> {
        self.items
            .iter_mut()
            .filter(|(.., c)| c.in_place())
            .map(|(qi, k, c)| {
                // `prepare` found it in the same states.
                let old = olds.old_patch(c.patch).ok_or_else(|| {
                    LayoutError::Access(format!("patch index {} has no old state", c.patch))
                })?;
                Ok(InPlaceBox {
                    desc: queues[*qi][*k].desc,
                    // The patch's prepare has finished: nothing writes its
                    // old state any more this step.
                    old: old.as_slice(),
                    new: c.new.as_mut_slice(),
                    restricted: c.restricted.as_mut().map(Restricted::reborrow),
                })
            })
            .collect()
    }

    /// Whether any patch lives in place.
    pub fn any_in_place(&self) -> bool {
        self.items.iter().any(|(.., c)| c.in_place())
    }
}

/// The hierarchy patches a selection's queues name (`bins`: the
/// selection's global bins; entries past a bin's patches are its probes).
pub(crate) fn patches_of<T>(
    plan: &PlanLayout<T>,
    bins: &[usize],
    queues: &[Vec<PatchRef>],
) -> Vec<usize> {
    queues
        .iter()
        .flatten()
        .filter_map(|r| {
            let b = *bins.get(r.bin)?;
            plan.bins.get(b)?.patches.get(r.patch).map(|&(i, _)| i)
        })
        .collect()
}

/// Takes the new states and flux stores of `patches` out of `news` and
/// `fluxes` (see [`checkin`]).
pub(crate) fn checkout<'d, T: Real>(
    plan: &PlanLayout<T>,
    patches: &[usize],
    news: &mut [Option<NewState<'d, T>>],
    fluxes: &mut FluxStore<T>,
) -> Result<Vec<Checked<'d, T>>, IntegratorError> {
    patches
        .iter()
        .map(|&i| {
            let new = news.get_mut(i).and_then(Option::take).ok_or_else(|| {
                IntegratorError::Internal(format!("patch index {i} checked out twice"))
            })?;
            let flux = std::mem::take(&mut fluxes.fine[i]);
            let probes = plan.probes_of[i]
                .iter()
                .map(|&n| (n, std::mem::take(&mut fluxes.probes[n])))
                .collect();
            Ok(Checked {
                patch: i,
                new: new.data,
                restricted: new.restricted,
                in_place: false,
                flux,
                probes,
            })
        })
        .collect()
}

/// Puts what [`checkout`] took back into `news` and `fluxes`.
pub(crate) fn checkin<'d, T: Real>(
    work: CloseWork<'d, T>,
    news: &mut [Option<NewState<'d, T>>],
    fluxes: &mut FluxStore<T>,
) {
    for (.., c) in work.items {
        news[c.patch] = Some(NewState {
            data: c.new,
            restricted: c.restricted,
        });
        fluxes.fine[c.patch] = c.flux;
        for (n, pf) in c.probes {
            fluxes.probes[n] = pf;
        }
    }
}

/// Copies every patch's interior from the batch into its checked-out new
/// state and the flux blocks of fine patches and probes into their flux
/// stores, one rayon task per patch. Returns seconds per queue (the sum
/// over its patches).
pub(crate) fn close_checked_out<T: Real>(
    staged: &StagedBatch<T>,
    work: &mut CloseWork<'_, T>,
) -> Vec<f64> {
    let batch = &staged.batch;
    // One task per patch, timed into its queue (see `prepare`).
    let times: Vec<f64> = work
        .items
        .par_iter_mut()
        .with_max_len(1)
        .map(|(qi, k, c)| {
            let job = &staged.queues[*qi][*k];
            let t0 = Instant::now();
            // A patch solved in place has its interior there already.
            if !c.in_place() {
                copy_interior(batch, job.desc, c.new);
            }
            if !c.flux.is_empty() {
                copy_flux(batch, job.desc, &mut c.flux);
            }
            for ((_, pf), &(_, pd)) in c.probes.iter_mut().zip(&job.probes) {
                copy_flux(batch, pd, pf);
            }
            t0.elapsed().as_secs_f64()
        })
        .collect();
    let mut secs = vec![0.0; staged.queues.len()];
    for ((qi, ..), t) in work.items.iter().zip(times) {
        secs[*qi] += t;
    }
    secs
}

/// Interior rows of descriptor `desc` into `new` (same interior box).
fn copy_interior<T: Real>(batch: &Batch<T>, desc: usize, new: &mut PatchData<T>) {
    let l = batch.layout();
    let d = &l.patches()[desc];
    let (b, nc) = (l.bin_edge() as usize, l.ncomp() as usize);
    let g = d.ghost as usize;
    let n = d.interior().map(|v| v as usize);
    let src = batch.data();
    let interior = new.interior();
    let data_box = new.data_box();
    let gi = (interior.lo.x - data_box.lo.x) as usize;
    let [_, sy, sz] = new.strides();
    let at = |c: usize, k: usize| {
        data_index(
            b,
            nc,
            d.bin as usize,
            c,
            [
                d.offset[0] as usize + g,
                d.offset[1] as usize + g,
                d.offset[2] as usize + g + k,
            ],
        )
    };
    for c in 0..nc {
        let dst = new.comp_mut(c);
        for k in 0..n[2] {
            // The next plane's rows, while this one is copied (see
            // `quilt_mesh::prefetch`).
            if k + 1 < n[2] {
                let s = at(c, k + 1);
                quilt_mesh::prefetch::rows(src[s..].as_ptr(), n[1], b, n[0], false);
                let o = gi + gi * sy + (gi + k + 1) * sz;
                quilt_mesh::prefetch::rows(dst[o..].as_ptr(), n[1], sy, n[0], true);
            }
            // Rows of a bin plane are `b` values apart.
            let plane = at(c, k);
            for j in 0..n[1] {
                let s = plane + j * b;
                let o = gi + (gi + j) * sy + (gi + k) * sz;
                dst[o..o + n[0]].copy_from_slice(&src[s..s + n[0]]);
            }
        }
    }
}

/// The flux block of descriptor `desc` into `out` (sized to match).
fn copy_flux<T: Real>(batch: &Batch<T>, desc: usize, out: &mut [T]) {
    let d = &batch.layout().patches()[desc];
    let start = d.flux_offset as usize;
    out.copy_from_slice(&batch.flux()[start..start + out.len()]);
}
