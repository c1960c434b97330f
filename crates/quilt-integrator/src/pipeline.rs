//! The batch loop of one step, sequential or pipelined.
//!
//! Sequential: prepare, solve and close one batch after another.
//! Pipelined (Raghavan & Vadhiyar 2015, section 3.2, as a dataflow in
//! [`overlap`]): the CPU prepares the next batches and closes solved ones
//! while the backend solves. Prepare reads only old states, close writes
//! only new states and the flux stores of its own patches, and a solve
//! touches only its own buffer, so the stages never race, and the result
//! is bitwise the one of the sequential loop.

mod overlap;

pub(crate) use overlap::max_alive;

use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use quilt_batch::{CloseSample, OnlineModel, PatchWork, PrepareSample, SolveSample};
use quilt_mesh::fill::OldData;
use quilt_mesh::{Hierarchy, HierarchyData, PatchId};
use quilt_sweep::{StepReport, SweepError, SweepOrder};
use smallvec::SmallVec;

use crate::Real;
use crate::backend::{LayoutStage, Restricted, SolveBackend, SolveError};
use crate::calibration::Calibrator;
use crate::error::IntegratorError;
use crate::plan::{FluxStore, PlanLayout};
use crate::ranks::Ranks;
use crate::ring::BatchRing;
use crate::schedule::{Pick, Scheduler};
use crate::stages::{self, Checked, CloseWork, Job, NewState, PROBE_ID_BASE, StagedBatch};
use crate::timing::EstimateErrors;

/// What the batch loop of one step did.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LoopStats {
    pub batches: usize,
    pub bins: usize,
    pub prepare: f64,
    pub solve: f64,
    pub close: f64,
    pub wall: f64,
    /// Wall seconds of the batches' assembly (layouts, probe packing,
    /// buffers from the ring), part of `prepare`.
    pub assemble: f64,
    /// Wall seconds of the loop's own work between the stages: batch
    /// selection and the cost model's observations.
    pub between: f64,
    /// Core-seconds of the prepare and close tasks (the sums of their
    /// per-patch times).
    pub prepare_tasks: f64,
    pub close_tasks: f64,
    pub report: StepReport,
    pub estimates: EstimateErrors,
}

/// The borrowed pieces of an integrator the loop works on.
pub(crate) struct LoopInputs<'a, T, B: ?Sized> {
    pub h: &'a Hierarchy,
    pub layout: &'a PlanLayout<T>,
    pub fluxes: &'a mut FluxStore<T>,
    pub data: &'a mut HierarchyData<T>,
    pub backend: &'a mut B,
    pub ring: &'a mut BatchRing<T>,
    pub model: &'a mut OnlineModel,
    pub calibrator: Option<&'a mut Calibrator>,
    pub scheduler: &'a mut Scheduler,
    pub time: f64,
    pub dt: f64,
    pub order: SweepOrder,
    pub step: u64,
    pub pipelined: bool,
    /// Seconds of this step by hierarchy index (zeroed by the caller):
    /// each batch's measured prepare, solve and close, shared among its
    /// jobs (a patch with its probes) by the cost model's estimates.
    pub patch_secs: &'a mut [f64],
    /// The ranks of a distributed run: the bins to batch first, and the
    /// flux blocks to post as their patches close.
    pub ranks: Option<&'a mut Ranks>,
    /// Restriction outputs by hierarchy index, handed to the backend with
    /// patches it solves in place (see [`InPlaceBox::restricted`]); empty
    /// or shorter than the hierarchy where it hands none.
    pub restricted: Vec<Option<Restricted<'a, T>>>,
}

/// The ring of batch buffers, shared by the tasks that prepare batches
/// and the loop that gives closed batches back.
type SharedRing<'a, T> = Mutex<&'a mut BatchRing<T>>;

fn lock<'g, 'a, T>(ring: &'g SharedRing<'a, T>) -> MutexGuard<'g, &'a mut BatchRing<T>> {
    // A task that panicked while holding the ring left it consistent: its
    // methods do not unwind half-way.
    ring.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What preparing a batch reads: the step's shared inputs.
struct StageInputs<'a, 'b, T, D: ?Sized> {
    h: &'a Hierarchy,
    layout: &'a PlanLayout<T>,
    olds: &'a D,
    time: f64,
    ring: &'a SharedRing<'b, T>,
    /// Builds what the backend needs for each batch's layout meanwhile.
    stager: Option<&'a dyn LayoutStage>,
    /// The backend fills the probes of patches solved in place
    /// ([`crate::SolveBackend::fills_probes`]).
    backend_probes: bool,
}

/// Assembles and prepares the batch of `pick`, whose patches `checked`
/// holds, and has the stager build what the backend needs for its layout
/// meanwhile.
fn stage<'d, T: Real, D: OldData<T> + Sync + ?Sized>(
    inp: &StageInputs<'_, '_, T, D>,
    pick: &Pick,
    checked: Vec<Checked<'d, T>>,
) -> Result<(StagedBatch<T>, CloseWork<'d, T>), IntegratorError> {
    let StageInputs {
        h,
        layout,
        olds,
        time,
        ring,
        stager,
        backend_probes,
    } = *inp;
    let t = Instant::now();
    let (bl, queues) = stages::assemble(layout, h, &pick.bins, &pick.queues)?;
    let mut work = CloseWork::arrange(checked, &queues)?;
    let for_stager = stager.map(|_| bl.clone());
    let mut batch = lock(ring).take(bl, layout.bins.len())?;
    let assemble_secs = t.elapsed().as_secs_f64();
    let mut probes = Vec::new();
    let (layout_state, prepared) = rayon::join(
        || {
            let (s, bl) = (stager?, for_stager?);
            // The backend builds what it needs itself when this fails.
            s.stage(&bl)
                .map_err(|e| log::debug!("layout not staged: {e}"))
                .ok()
        },
        || {
            stages::prepare(
                layout,
                h,
                olds,
                time,
                &mut batch,
                &queues,
                &mut work,
                backend_probes,
                &mut probes,
            )
        },
    );
    let prepare_secs = match prepared {
        Ok(s) => s,
        Err(e) => {
            lock(ring).give(batch);
            return Err(e);
        }
    };
    let staged = StagedBatch {
        batch,
        bins: pick.bins.clone(),
        queues,
        prepare_secs,
        assemble_secs,
        layout_state,
        probes,
    };
    Ok((staged, work))
}

/// Checks out the patches of `pick` for its batch.
fn checkout_pick<'d, T: Real>(
    layout: &PlanLayout<T>,
    pick: &Pick,
    news: &mut [Option<NewState<'d, T>>],
    fluxes: &mut FluxStore<T>,
) -> Result<Vec<Checked<'d, T>>, IntegratorError> {
    let patches = stages::patches_of(layout, &pick.bins, &pick.queues);
    stages::checkout(layout, &patches, news, fluxes)
}

/// Solves a prepared batch, with the patches that live in place read and
/// written where they are.
fn solve_batch<T: Real, B: SolveBackend<T> + ?Sized, D: OldData<T> + ?Sized>(
    backend: &mut B,
    staged: &mut StagedBatch<T>,
    work: &mut CloseWork<'_, T>,
    olds: &D,
    dt: f64,
    order: SweepOrder,
) -> Result<StepReport, SolveError> {
    let layout_state = staged.layout_state.take();
    if work.any_in_place() {
        let mut boxes = work
            .in_place_boxes(&staged.queues, olds)
            .map_err(|e| SolveError::Sweep(e.into()))?;
        backend.solve_in_place(
            &mut staged.batch,
            layout_state,
            &mut boxes,
            &staged.probes,
            dt,
            order,
        )
    } else {
        backend.solve_staged(&mut staged.batch, layout_state, dt, order)
    }
}

/// The work descriptions of one queue's jobs (patches and their probes).
fn queue_work<'a, T>(
    layout: &'a PlanLayout<T>,
    jobs: &'a [Job],
) -> impl Iterator<Item = &'a PatchWork> + 'a {
    jobs.iter().flat_map(move |j| {
        std::iter::once(&layout.patch_work[j.patch])
            .chain(j.probes.iter().map(move |&(n, _)| &layout.probe_work[n]))
    })
}

fn observe_prepare<T>(
    model: &mut OnlineModel,
    layout: &PlanLayout<T>,
    s: &StagedBatch<T>,
    errors: &mut EstimateErrors,
    calibrator: Option<&mut Calibrator>,
) {
    // The batch's prepare is its slowest queue's, estimated as the
    // selection estimates it: the expected slowest of the queues' loads.
    let mut loads = SmallVec::<[f64; 32]>::new();
    let mut samples = SmallVec::<[PrepareSample; 32]>::new();
    for (jobs, &secs) in s.queues.iter().zip(&s.prepare_secs) {
        let load: f64 = queue_work(layout, jobs)
            .map(|w| model.model().patch_prepare(w))
            .sum();
        loads.push(load);
        if !jobs.is_empty() && secs > 0.0 {
            samples.push(PrepareSample::patches(queue_work(layout, jobs), secs));
        }
    }
    let estimate = model.model().slowest_queue(&loads);
    let measured = s.prepare_secs.iter().copied().fold(0.0, f64::max);
    errors.add_prepare(estimate, measured);
    if log::log_enabled!(log::Level::Trace) {
        // Each queue's estimate and time: what a model of the slowest
        // queue is fitted and judged against offline.
        let queues: Vec<String> = loads
            .iter()
            .zip(&s.prepare_secs)
            .zip(&s.queues)
            .filter(|(_, jobs)| !jobs.is_empty())
            .map(|((est, secs), _)| format!("{est:.4e}/{secs:.4e}"))
            .collect();
        log::trace!(
            "prepare queues (estimate/measured s): {}; slowest expected {estimate:.4e} s at spread {:.3}",
            queues.join(" "),
            model.model().queue_spread()
        );
    }
    if let Some(c) = calibrator {
        for sample in &samples {
            c.prepare(*sample);
        }
    }
    if let Err(e) = model.observe_queues(&samples) {
        log::debug!("prepare observations skipped: {e}");
    }
}

fn observe_close<T>(
    model: &mut OnlineModel,
    layout: &PlanLayout<T>,
    s: &StagedBatch<T>,
    secs: &[f64],
    mut calibrator: Option<&mut Calibrator>,
) {
    for (jobs, &t) in s.queues.iter().zip(secs) {
        if !jobs.is_empty() && t > 0.0 {
            let sample = CloseSample::patches(queue_work(layout, jobs), t);
            if let Some(c) = calibrator.as_deref_mut() {
                c.close(sample);
            }
            if let Err(e) = model.observe_close(&sample) {
                log::debug!("close observation skipped: {e}");
            }
        }
    }
}

fn observe_solve<T>(
    model: &mut OnlineModel,
    layout: &PlanLayout<T>,
    bins: &[usize],
    secs: f64,
    transfers: bool,
    calibrator: Option<&mut Calibrator>,
) {
    if secs <= 0.0 {
        return;
    }
    let work = bins.iter().map(|&b| &layout.work[b]);
    if log::log_enabled!(log::Level::Trace) {
        let all: u64 = bins.iter().map(|&b| layout.work[b].bytes()).sum();
        log::trace!(
            "solve of {} bins: features {:?}, all bytes {all}, estimate {:.4e} s, measured {secs:.4e} s",
            bins.len(),
            SolveSample::batch(work.clone(), secs).features,
            model.model().batch_solve(work.clone()),
        );
    }
    let sample = if transfers {
        SolveSample::batch(work, secs)
    } else {
        SolveSample::batch_without_transfer(work, secs)
    };
    if let Some(c) = calibrator {
        c.solve(sample);
    }
    if let Err(e) = model.observe_solve(&sample) {
        log::debug!("solve observation skipped: {e}");
    }
}

/// `weight` of a job's work: its patch and its probes.
fn job_weight<T>(layout: &PlanLayout<T>, j: &Job, weight: &impl Fn(&PatchWork) -> f64) -> f64 {
    weight(&layout.patch_work[j.patch])
        + j.probes
            .iter()
            .map(|&(n, _)| weight(&layout.probe_work[n]))
            .sum::<f64>()
}

fn cells(w: &PatchWork) -> f64 {
    w.cells() as f64
}

/// Shares `secs` among `jobs` in proportion to `weight` of their work,
/// adding each share to the patch's entry of `patch_secs`; by cells
/// where the weights say nothing.
fn attribute<T>(
    patch_secs: &mut [f64],
    layout: &PlanLayout<T>,
    jobs: &[Job],
    secs: f64,
    weight: impl Fn(&PatchWork) -> f64,
) {
    if jobs.is_empty() || !(secs.is_finite() && secs > 0.0) {
        return;
    }
    let total: f64 = jobs.iter().map(|j| job_weight(layout, j, &weight)).sum();
    let by_cells = !(total > 0.0 && total.is_finite());
    let total = if by_cells {
        jobs.iter().map(|j| job_weight(layout, j, &cells)).sum()
    } else {
        total
    };
    if !(total.is_finite() && total > 0.0) {
        return;
    }
    for j in jobs {
        let w = if by_cells {
            job_weight(layout, j, &cells)
        } else {
            job_weight(layout, j, &weight)
        };
        if let Some(c) = patch_secs.get_mut(j.patch) {
            *c += secs * w / total;
        }
    }
}

/// Shares a batch's measured prepare (each queue's, by the model's
/// estimates) and solve (by cells) among its patches
/// ([`LoopInputs::patch_secs`]).
fn attribute_batch<T>(
    patch_secs: &mut [f64],
    layout: &PlanLayout<T>,
    model: &OnlineModel,
    s: &StagedBatch<T>,
    solve_secs: f64,
) {
    let m = model.model();
    let queue_cells =
        |jobs: &[Job]| -> f64 { jobs.iter().map(|j| job_weight(layout, j, &cells)).sum() };
    let total: f64 = s.queues.iter().map(|q| queue_cells(q)).sum();
    for (jobs, &prepare) in s.queues.iter().zip(&s.prepare_secs) {
        attribute(patch_secs, layout, jobs, prepare, |w| m.patch_prepare(w));
        if total > 0.0 {
            let share = solve_secs * queue_cells(jobs) / total;
            attribute(patch_secs, layout, jobs, share, cells);
        }
    }
}

/// Shares a batch's measured close, queue by queue, among its patches by
/// the model's estimates.
fn attribute_close<T>(
    patch_secs: &mut [f64],
    layout: &PlanLayout<T>,
    model: &OnlineModel,
    s: &StagedBatch<T>,
    close_secs: &[f64],
) {
    let m = model.model();
    for (jobs, &close) in s.queues.iter().zip(close_secs) {
        attribute(patch_secs, layout, jobs, close, |w| m.patch_close(w));
    }
}

fn merge(total: &mut StepReport, r: &StepReport) {
    total.floors += r.floors;
    total.courant = total.courant.max(r.courant);
    total.cells += r.cells;
}

/// Maps a backend error to one naming the step, level, patch and cell.
pub(crate) fn solve_error<T>(
    e: SolveError,
    h: &Hierarchy,
    layout: &PlanLayout<T>,
    step: u64,
    time: f64,
    backend: &str,
) -> IntegratorError {
    if let SolveError::Sweep(SweepError::BadState {
        patch,
        cell,
        what,
        value,
        stage,
    }) = &e
    {
        let located = if *patch >= PROBE_ID_BASE {
            layout
                .probes
                .get((*patch - PROBE_ID_BASE) as usize)
                .map(|q| {
                    let p = &h.patches()[q.coarse];
                    (p.level(), p.id(), q.interior.lo)
                })
        } else {
            u32::try_from(*patch)
                .ok()
                .and_then(|id| h.index_of(PatchId(id)))
                .map(|i| {
                    let p = &h.patches()[i];
                    (p.level(), p.id(), p.interior().lo)
                })
        };
        if let Some((level, id, lo)) = located {
            return IntegratorError::BadState {
                step,
                time,
                level,
                patch: id,
                cell: [0, 1, 2].map(|a| i64::from(lo[a]) + cell[a]),
                what,
                value: *value,
                stage,
            };
        }
    }
    IntegratorError::Solve {
        step,
        backend: backend.to_string(),
        source: e,
    }
}

/// What the loop learns from each finished stage: the step's statistics,
/// the cost model's observations (and the calibrator's) and the per-patch
/// seconds. Both loops report every stage of every batch here once.
struct Books<'a, T> {
    layout: &'a PlanLayout<T>,
    model: &'a mut OnlineModel,
    calibrator: Option<&'a mut Calibrator>,
    patch_secs: &'a mut [f64],
    transfers: bool,
    stats: LoopStats,
}

impl<T> Books<'_, T> {
    /// A batch was assembled and prepared in `wall` seconds.
    fn prepared(&mut self, s: &StagedBatch<T>, wall: f64) {
        self.stats.prepare += wall;
        self.stats.assemble += s.assemble_secs;
        self.stats.prepare_tasks += s.prepare_secs.iter().sum::<f64>();
        observe_prepare(
            self.model,
            self.layout,
            s,
            &mut self.stats.estimates,
            self.calibrator.as_deref_mut(),
        );
    }

    /// A batch was solved in `secs` seconds.
    fn solved(&mut self, pick: &Pick, s: &StagedBatch<T>, secs: f64, report: &StepReport) {
        self.stats.solve += secs;
        merge(&mut self.stats.report, report);
        attribute_batch(self.patch_secs, self.layout, self.model, s, secs);
        self.stats.estimates.add_solve(pick.solve_estimate, secs);
        observe_solve(
            self.model,
            self.layout,
            &s.bins,
            secs,
            self.transfers,
            self.calibrator.as_deref_mut(),
        );
    }

    /// A batch was closed in `wall` seconds, its queues' tasks in
    /// `close_secs`.
    fn closed(&mut self, s: &StagedBatch<T>, close_secs: &[f64], wall: f64) {
        self.stats.close += wall;
        self.stats.close_tasks += close_secs.iter().sum::<f64>();
        attribute_close(self.patch_secs, self.layout, self.model, s, close_secs);
        observe_close(
            self.model,
            self.layout,
            s,
            close_secs,
            self.calibrator.as_deref_mut(),
        );
        self.stats.batches += 1;
        self.stats.bins += s.bins.len();
    }
}

/// After each close: posts what other ranks wait for, takes what arrived.
fn closed_hook<T: Real>(
    ranks: Option<&mut Ranks>,
    s: &StagedBatch<T>,
    fluxes: &FluxStore<T>,
) -> Result<(), IntegratorError> {
    match ranks {
        Some(r) => r.after_close(s.queues.iter().flatten().map(|j| j.patch), fluxes),
        None => Ok(()),
    }
}

/// Runs every batch of one step.
pub(crate) fn run_batches<T: Real, B: SolveBackend<T> + ?Sized>(
    inp: LoopInputs<'_, T, B>,
) -> Result<LoopStats, IntegratorError> {
    let LoopInputs {
        h,
        layout,
        fluxes,
        data,
        backend,
        ring,
        model,
        calibrator,
        scheduler,
        time,
        dt,
        order,
        step,
        pipelined,
        patch_secs,
        mut ranks,
        restricted,
    } = inp;
    let t_loop = Instant::now();
    let name = backend.name().to_string();
    let (olds, news) = data.split_old_new();
    let mut restricted = restricted.into_iter();
    let mut news: Vec<Option<NewState<'_, T>>> = news
        .into_iter()
        .map(|data| {
            Some(NewState {
                data,
                restricted: restricted.next().flatten(),
            })
        })
        .collect();
    let mut books = Books {
        layout,
        model,
        calibrator,
        patch_secs,
        transfers: backend.transfers(),
        stats: LoopStats::default(),
    };
    scheduler.start_first(&layout.work, ranks.as_deref().and_then(Ranks::first_bins));
    let fail = |e: SolveError| solve_error(e, h, layout, step, time, &name);
    let ring = Mutex::new(ring);
    // The pipelined loop's driver holds one of the pool's threads while it
    // waits for the prepare and close tasks it spawns into the pool: with
    // a pool of one thread they would never run. The sequential loop gives
    // the same state bit for bit.
    let pipelined = pipelined && rayon::current_num_threads() > 1;
    let stager = if pipelined && overlap::stage_layouts() {
        backend.layout_stage()
    } else {
        None
    };
    let inputs = StageInputs {
        h,
        layout,
        olds: &olds,
        time,
        ring: &ring,
        stager: stager.as_deref(),
        backend_probes: backend.fills_probes(),
    };

    if pipelined {
        overlap::run(overlap::Flow {
            inputs: &inputs,
            dt,
            order,
            backend,
            news: &mut news,
            fluxes,
            scheduler,
            ranks,
            books: &mut books,
            fail: &fail,
        })?;
    } else {
        let mut in_flight = None;
        while let Some(pick) = scheduler.next(books.model.model(), in_flight)? {
            in_flight = Some(pick.solve_estimate - pick.close_estimate);
            let t = Instant::now();
            let checked = checkout_pick(layout, &pick, &mut news, fluxes)?;
            let (mut staged, mut work) = stage(&inputs, &pick, checked)?;
            books.prepared(&staged, t.elapsed().as_secs_f64());
            let t = Instant::now();
            let r = solve_batch(backend, &mut staged, &mut work, inputs.olds, dt, order);
            let solve_secs = t.elapsed().as_secs_f64();
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    lock(&ring).give(staged.batch);
                    return Err(fail(e));
                }
            };
            books.solved(&pick, &staged, solve_secs, &r);
            let t = Instant::now();
            let close_secs = stages::close_checked_out(&staged, &mut work);
            stages::checkin(work, &mut news, fluxes);
            let wall = t.elapsed().as_secs_f64();
            books.closed(&staged, &close_secs, wall);
            let sent = closed_hook(ranks.as_deref_mut(), &staged, fluxes);
            lock(&ring).give(staged.batch);
            sent?;
        }
    }
    if let Some(i) = news.iter().position(Option::is_none) {
        return Err(IntegratorError::Internal(format!(
            "patch index {i} was not returned after close"
        )));
    }
    if !scheduler.is_done() {
        return Err(IntegratorError::Internal(
            "bins left after the batch loop".into(),
        ));
    }
    let mut stats = books.stats;
    stats.wall = t_loop.elapsed().as_secs_f64();
    Ok(stats)
}
