//! [`Integrator`]: the hierarchy, its data and one coarse step after
//! another with uniform time stepping (every level advances by the same
//! `dt`, the mode of Raghavan & Vadhiyar 2015).
//!
//! One step:
//! 1. `dt = cfl / max (|v_d| + c_s) / dx_d` over the interiors of all
//!    patches of all levels (the scan also rejects bad states); after a
//!    host step in one process the scan was made in step 4, as restriction
//!    read each level for the last time;
//! 2. the bins of the hierarchy packing (recomputed only after a regrid)
//!    are batched by quilt-batch, adaptive or static;
//! 3. each batch is prepared, solved by the [`SolveBackend`] and closed,
//!    pipelined or one after another ([`crate::pipeline`]);
//! 4. flux registers take the fine patches' and the probes' boundary
//!    fluxes, the coarse cells next to fine patches are refluxed and every
//!    level is restricted onto the one below, finest first; states swap;
//! 5. every `regrid_interval` steps the hierarchy is rebuilt: ghost fill,
//!    tagging, Berger–Rigoutsos clustering, regrid, re-packing. A regrid
//!    due after the run's last step (`run.max_steps`, `run.end_time`)
//!    waits until another step is asked for, as it would serve none; a
//!    checkpoint keeps it due, so a restart that extends the run takes it
//!    first and continues bit for bit as the longer run would have.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use quilt_batch::{Coefficients, CostModel, OnlineModel, Preparation, RefineOptions};
use quilt_io::{
    AmrOutput, CellFields, CheckpointReal, RunState, euler_output_with, read_checkpoint,
    write_checkpoint,
};
use quilt_mesh::fill::{BoundaryConditions, FillScratch, FillTarget, GhostFill};
use quilt_mesh::flat::{FlatTag, TransferPieces};
use quilt_mesh::flux_register::FaceFluxes;
use quilt_mesh::interp::Limiter;
use quilt_mesh::locked::{LockedArena, PatchBuf};
use quilt_mesh::regrid::{
    RegridOptions, build_hierarchy, new_level_boxes, transfer_in, transfer_with,
};
use quilt_mesh::restrict::{
    RestrictScratch, TimeLevel, restrict_hierarchy, restrict_level_scanned, restrict_level_where,
};
use quilt_mesh::{BufferPool, Hierarchy, HierarchyData, PatchSpec, Side};
use quilt_mesh::{PatchId, iv};
use quilt_sweep::physics::{FloorCounts, NCOMP, Thermo};
use quilt_sweep::{BatchLayout, Solver, SweepOrder};
use rayon::prelude::*;

use crate::Real;
use crate::backend::{BoxRate, LayoutStage, Restricted, SolveBackend, StagedItems, StagedLayout};
use crate::calibration::{
    CalibrationReport, Calibrator, coefficient_path, load_coefficients, save_coefficients,
};
use crate::cfl;
use crate::deck::{BatchMode, Deck, FloorAction, Interpolation, MAX_SCALARS, Residency};
use crate::error::IntegratorError;
use crate::pipeline::{LoopInputs, run_batches, solve_error};
use crate::plan::{FluxStore, PlanLayout, Preparations, Probe, StepPlan};
use crate::problem::{Column, DeckProblem, Faces, Problem, Refinement, columns, host_only};
use crate::ranks::Ranks;
use crate::residency::{self, RegridMove};
use crate::resident::{
    ResidentPlan, pack_interiors, resident_plan, resident_plan_with, size_compact, unpack_interiors,
};
use crate::ring::BatchRing;
use crate::schedule::Scheduler;
use crate::tagging::{check_fields, flat_criteria, tag_patches, tagged_level};
use crate::timing::{EstimateErrors, PhaseTimes};
use quilt_dist::{Balancer, Distribution, Rebalance, Transport, inherited_costs};

/// What one coarse step did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StepInfo {
    /// Number of the step (1 for the first).
    pub step: u64,
    /// Time after the step.
    pub time: f64,
    /// The step's time step.
    pub dt: f64,
    /// Interior cells of the hierarchy advanced (the cell updates of the step).
    pub cells: u64,
    /// Cells the solver advanced in all, flux probes included.
    pub solved_cells: u64,
    /// Patches of the hierarchy the step advanced.
    pub patches: usize,
    /// Levels of the hierarchy the step advanced.
    pub levels: usize,
    /// Batches.
    pub batches: usize,
    /// Bins of the hierarchy packing.
    pub bins: usize,
    /// Largest Courant number of any batch.
    pub courant: f64,
    /// Floor applications.
    pub floors: FloorCounts,
    /// Whether the hierarchy was rebuilt after the step.
    pub regridded: bool,
    /// Time per phase.
    pub phases: PhaseTimes,
    /// The cost model's estimate errors in this step.
    pub estimates: EstimateErrors,
}

/// Totals over all steps so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunTotals {
    /// Steps taken.
    pub steps: u64,
    /// Hierarchy cell updates.
    pub cells: u64,
    /// Cells the solver advanced, probes included.
    pub solved_cells: u64,
    /// Batches solved.
    pub batches: u64,
    /// Regrids done.
    pub regrids: u64,
    /// Floor applications.
    pub floors: FloorCounts,
    /// Time per phase.
    pub phases: PhaseTimes,
    /// The cost model's estimate errors over the steps after its
    /// calibration.
    pub estimates: EstimateErrors,
}

/// The AMR hydro integrator (see the module docs).
pub struct Integrator<T: Real, B: SolveBackend<T>> {
    deck: Deck,
    gas: Arc<dyn Thermo>,
    cfl: f64,
    bc: BoundaryConditions<T>,
    limiter: Limiter,
    criteria: Vec<Refinement<T>>,
    /// The problem: initial state, criteria, faces.
    problem: Arc<dyn Problem<T>>,
    /// The output's cell arrays after the passive scalars' fractions.
    columns: Vec<Column>,
    /// Why the run keeps the state on the host (criteria or boundary
    /// conditions that run host code), if it does.
    host_only: Option<String>,
    /// Where host-staged steps prepare patches and probes (fixed for a
    /// run: it follows the state arena and the backend), which every step
    /// plan's work descriptions follow.
    preparations: Preparations,
    h: Hierarchy,
    data: Option<HierarchyData<T>>,
    plan: StepPlan<T>,
    backend: B,
    ring: BatchRing<T>,
    /// Page-locked memory the patch states live in when the backend reads
    /// and writes them in place (see [`state_arena`]).
    arena: Option<LockedArena>,
    model: OnlineModel,
    /// Samples of the calibration steps (`None` once calibrated or when
    /// the coefficients came from a file).
    calibrator: Option<Calibrator>,
    /// Coefficients the calibration starts from and keeps where it has no
    /// samples.
    base: Coefficients,
    calibration: Option<CalibrationReport>,
    scheduler: Scheduler,
    time: f64,
    step: u64,
    pipelined: bool,
    totals: RunTotals,
    version: u64,
    /// Whether the steps run in device residency now (`run.residency`,
    /// or under `"auto"` what the device's memory allows).
    on_device: bool,
    /// The resident plan while the state lives in the backend (device
    /// residency).
    resident: Option<ResidentPlan>,
    /// A resident plan of the current hierarchy built ahead of the next
    /// load (to weigh it against the device's memory, or during the
    /// set-up), with what the backend built for it.
    staged: Option<StagedResident>,
    /// Whether the host copy of the state is the current one (always so in
    /// host residency).
    host_current: bool,
    /// The compact interiors of resident loads and stores, kept mapped
    /// (and page-locked, for a GPU backend) from one to the next.
    resident_io: PatchBuf<T>,
    /// The tag bits of regrids in the backend.
    tag_bits: Vec<u32>,
    /// Whether `run.residency = "auto"` has said where the state lives.
    announced: bool,
    /// The ranks of a distributed run (see [`Integrator::distribute`]).
    ranks: Option<Ranks>,
    /// Measured seconds per step of each patch (prepare, solve and close
    /// shared among a batch's patches), an exponential average over the
    /// steps since the last regrid; NaN where not measured (other ranks'
    /// patches, device residency).
    patch_costs: Vec<f64>,
    /// This step's seconds by patch, the batch loop's scratch.
    step_secs: Vec<f64>,
    /// A regrid fell due after the run's last step: it waits for the next
    /// step asked for (a later end, or a restart that extends the run).
    regrid_pending: bool,
    /// Whether runs over ranks go boundary-first ([`Integrator::set_halo_overlap`]).
    halo_overlap: bool,
    /// The CFL scan of the state the last host step left, made while its
    /// restriction read the levels ([`reflux_and_restrict`]); `None` once
    /// anything else may have changed the state.
    next_rate: Option<Result<f64, cfl::BadCell>>,
    /// Scratch of the scan made with restriction.
    rate_scratch: RateScratch<T>,
}

/// What the CFL scan made with restriction reuses from step to step.
struct RateScratch<T> {
    restrict: RestrictScratch<T>,
    rates: Vec<cfl::PatchRate>,
    /// The level whose patches the backend restricts and scans as it
    /// solves them this step ([`restricted_outputs`]), and what it found
    /// per patch of that level.
    given_level: Option<usize>,
    given: Vec<BoxRate>,
    /// Per patch of that level: whether its means and rate were given.
    marks: Vec<bool>,
}

fn limiter_of(i: Interpolation) -> Limiter {
    match i {
        Interpolation::Mc => Limiter::MonotonizedCentral,
        Interpolation::Minmod => Limiter::MinMod,
        Interpolation::Constant => Limiter::PiecewiseConstant,
    }
}

/// The problem's faces with the Euler momentum as the one vector,
/// checked against the geometry's periodic axes.
fn boundary_conditions<T: Real>(
    faces: Faces<T>,
    geometry: &quilt_mesh::Geometry,
) -> Result<BoundaryConditions<T>, IntegratorError> {
    let mut bc = BoundaryConditions::outflow().with_vector([1, 2, 3]);
    for (axis, pair) in faces.into_iter().enumerate() {
        for (side, b) in Side::BOTH.into_iter().zip(pair) {
            bc = bc
                .with_face(axis, side, b)
                .map_err(IntegratorError::mesh("boundary conditions"))?;
        }
    }
    bc.check(geometry)
        .map_err(IntegratorError::mesh("the problem's boundary conditions"))?;
    Ok(bc)
}

/// How an [`Integrator`] is built: settings, a [`Problem`] (the deck's own
/// when none is given), then a backend with the initial hierarchy
/// ([`IntegratorBuilder::build`]), a given state
/// ([`IntegratorBuilder::from_state`]) or a checkpoint
/// ([`IntegratorBuilder::restart`]).
pub struct IntegratorBuilder<T: Real> {
    deck: Deck,
    problem: Option<Arc<dyn Problem<T>>>,
}

impl<T: Real> IntegratorBuilder<T> {
    /// A builder with `settings` (every section of a deck; `[initial]`,
    /// `[[tagging]]` and `[boundary]` only matter to the deck's problem,
    /// and `[boundary]` also says which axes are periodic).
    pub fn new(settings: &Deck) -> Self {
        Self {
            deck: settings.clone(),
            problem: None,
        }
    }

    /// Solves `problem` instead of the deck's.
    pub fn problem(self, problem: impl Problem<T> + 'static) -> Self {
        self.shared_problem(Arc::new(problem))
    }

    /// [`IntegratorBuilder::problem`] with a problem shared with the caller.
    pub fn shared_problem(mut self, problem: Arc<dyn Problem<T>>) -> Self {
        self.problem = Some(problem);
        self
    }

    /// The problem to solve, the one given or the deck's, refused with
    /// the reason when it is not written for the backend's fluid
    /// ([`Problem::accepts`]).
    fn take_problem(&mut self, gas: &dyn Thermo) -> Result<Arc<dyn Problem<T>>, IntegratorError> {
        let problem = match self.problem.take() {
            Some(p) => p,
            None => Arc::new(DeckProblem::new(&self.deck)),
        };
        problem.accepts(gas).map_err(|why| {
            IntegratorError::Config(format!(
                "the problem {:?} does not suit the backend: {why}; give the builder a problem for that fluid",
                problem.name()
            ))
        })?;
        Ok(problem)
    }

    /// Builds the initial hierarchy (level 0 from the base grid, then tag →
    /// cluster → regrid up to `amr.max_levels`, each time with the
    /// problem's initial state set afresh on the new patches) and an
    /// integrator at time 0 solving through `backend`.
    pub fn build<B: SolveBackend<T>>(
        mut self,
        backend: B,
    ) -> Result<Integrator<T, B>, IntegratorError> {
        let problem = self.take_problem(&*backend.thermo())?;
        Integrator::initial(&self.deck, problem, backend)
    }

    /// The patches of `trace` (a recorded hierarchy, for example read by
    /// [`quilt_mesh::read_hierarchy`], whose file keeps cell counts but no
    /// physical domain or periodic axes) on the settings' geometry, ghost
    /// width and patch limits; an error names what does not fit (a base
    /// grid or refinement ratio of another run).
    pub fn trace_hierarchy(&self, trace: &Hierarchy) -> Result<Hierarchy, IntegratorError> {
        let geometry = self
            .deck
            .geometry()
            .map_err(IntegratorError::mesh("geometry"))?;
        let ghost = self
            .deck
            .ghost()
            .map_err(|e| IntegratorError::Config(e.to_string()))?;
        Hierarchy::new(geometry, ghost, self.deck.size_limits(), trace.specs()).map_err(
            IntegratorError::mesh("the trace's patches on the deck's geometry"),
        )
    }

    /// An integrator at time 0 over the patches of `trace` (see
    /// [`IntegratorBuilder::trace_hierarchy`]): the problem's initial
    /// state on every patch, each level restricted onto the one below, and
    /// no refinement of its own. The hierarchy changes at the deck's
    /// regrids like any other (`amr.regrid_interval = 0` keeps it).
    pub fn on_hierarchy<B: SolveBackend<T>>(
        mut self,
        trace: &Hierarchy,
        backend: B,
    ) -> Result<Integrator<T, B>, IntegratorError> {
        self.deck.validate()?;
        let hierarchy = self.trace_hierarchy(trace)?;
        let problem = self.take_problem(&*backend.thermo())?;
        let mut me = Integrator::at_initial_state(&self.deck, problem, hierarchy, backend)?;
        me.settle_residency()?;
        Ok(me)
    }

    /// An integrator over an existing hierarchy and data at `time` after
    /// `step` steps (see [`Integrator::from_state`]).
    pub fn from_state<B: SolveBackend<T>>(
        mut self,
        hierarchy: Hierarchy,
        data: HierarchyData<T>,
        time: f64,
        step: u64,
        backend: B,
    ) -> Result<Integrator<T, B>, IntegratorError> {
        let problem = self.take_problem(&*backend.thermo())?;
        let arena = state_arena(&backend, &self.deck);
        let data = match &arena {
            Some(a) => relocate(&hierarchy, data, a)?,
            None => data,
        };
        let mut me = Integrator::assemble(
            &self.deck,
            problem,
            hierarchy,
            data,
            (time, step),
            backend,
            arena,
        )?;
        me.settle_residency()?;
        Ok(me)
    }

    /// Continues a run from the checkpoint at `path` with these settings
    /// (see [`Integrator::restart`]).
    pub fn restart<B: SolveBackend<T>>(
        mut self,
        path: &Path,
        backend: B,
    ) -> Result<Integrator<T, B>, IntegratorError>
    where
        T: CheckpointReal,
    {
        let problem = self.take_problem(&*backend.thermo())?;
        Integrator::restart_with(path, Some(&self.deck), Some(problem), backend)
    }
}

impl<T: Real, B: SolveBackend<T>> Integrator<T, B> {
    /// Builds the initial hierarchy of `deck` (level 0 from the base grid,
    /// then tag → cluster → regrid up to `amr.max_levels`, each time with the
    /// initial condition set afresh on the new patches) and an integrator
    /// at time 0 solving through `backend`.
    pub fn new(deck: &Deck, backend: B) -> Result<Self, IntegratorError> {
        IntegratorBuilder::new(deck).build(backend)
    }

    /// [`IntegratorBuilder::build`].
    fn initial(
        deck: &Deck,
        problem: Arc<dyn Problem<T>>,
        backend: B,
    ) -> Result<Self, IntegratorError> {
        deck.validate()?;
        let geometry = deck.geometry().map_err(IntegratorError::mesh("geometry"))?;
        let ghost = deck
            .ghost()
            .map_err(|e| IntegratorError::Config(e.to_string()))?;
        let specs: Vec<PatchSpec> = deck
            .base_boxes()
            .into_iter()
            .enumerate()
            .map(|(n, b)| PatchSpec {
                id: PatchId(n as u32),
                interior: b,
                parent: None,
            })
            .collect();
        let h = Hierarchy::new(geometry, ghost, deck.size_limits(), vec![specs])
            .map_err(IntegratorError::mesh("base level"))?;
        let mut me = Self::at_initial_state(deck, problem, h, backend)?;
        // Level by level: tag the current hierarchy, cluster, and set the
        // initial condition on the new one. Its data comes from the
        // initial condition alone, so the regrid's data transfer is
        // skipped.
        for n in 1..deck.amr.max_levels {
            let t0 = Instant::now();
            let mut data = me.data.take().ok_or_else(poisoned)?;
            let new_h = match me.new_layout(&mut data) {
                Ok((new_h, _)) => new_h,
                Err(e) => {
                    me.data = Some(data);
                    return Err(e);
                }
            };
            let same = new_h.num_patches() == me.h.num_patches()
                && new_h
                    .patches()
                    .iter()
                    .zip(me.h.patches())
                    .all(|(a, b)| a.level() == b.level() && a.interior() == b.interior());
            // The old level's data is dead: its memory goes to the new
            // one, which bounds the set-up's memory peak and spares the
            // faults of fresh pages.
            let mut pool = BufferPool::with_arena(me.arena.clone());
            pool.reclaim(data);
            // A device-resident run's first load packs the interiors into
            // page-locked memory: on the set-up's last level (the earlier
            // ones' hierarchies are replaced) it is mapped and locked on a
            // thread of its own while the initial condition is set, rather
            // than in the first step. A set-up that ends early leaves it
            // to the load.
            //
            // The step plan does not depend on the data: it is made beside
            // the initial condition, and on the last level of a
            // device-resident run so are the resident plan and what the
            // backend builds for it (its layout state, its items on the
            // device), which the first load then finds ready.
            let values = new_h.total_cells() as usize * me.deck.ncomp();
            let last = n + 1 == deck.amr.max_levels;
            let resident = last && me.deck.run.residency == Residency::Device;
            let lock = resident
                .then(|| me.backend.resident().and_then(|r| r.io_lock()))
                .flatten();
            let stages = resident.then(|| {
                let items = me.backend.resident().and_then(|r| r.item_stage());
                (me.backend.layout_stage(), items)
            });
            let mut io = std::mem::take(&mut me.resident_io);
            let inputs = me.plan_inputs();
            let (data, ahead) = std::thread::scope(|s| {
                if let Some(lock) = &lock {
                    s.spawn(|| size_compact(&mut io, values, Some(lock)));
                }
                let (h, deck) = (&new_h, &me.deck);
                let ahead = s.spawn(move || {
                    let plan = plan_with(h, deck, inputs)?;
                    let staged = match &stages {
                        Some((layout_stage, items_stage)) => Some(resident_plan_with(
                            h,
                            &plan,
                            items_stage.as_deref(),
                            |l, _| stage_layout(layout_stage.as_deref(), l),
                        )?),
                        None => None,
                    };
                    Ok::<_, IntegratorError>((plan, staged))
                });
                let data = initial_data(&new_h, me.problem.as_ref(), &mut pool, me.deck.ncomp());
                let ahead = ahead.join().unwrap_or_else(|_| {
                    Err(IntegratorError::Internal(
                        "the set-up's planning thread panicked".into(),
                    ))
                });
                (data, ahead)
            });
            me.resident_io = io;
            let data = data?;
            drop(pool);
            let (plan, staged) = ahead?;
            log::info!(
                "set-up: {} levels, {} patches, {} cells in {:.3} s",
                new_h.num_levels(),
                new_h.num_patches(),
                new_h.total_cells(),
                t0.elapsed().as_secs_f64()
            );
            me.h = new_h;
            me.data = Some(data);
            me.plan = plan;
            me.version += 1;
            me.staged = staged.map(|(plan, layout, items)| StagedResident {
                plan,
                layout,
                items,
                version: me.version,
            });
            if same {
                break;
            }
        }
        me.settle_residency()?;
        me.totals = RunTotals::default();
        Ok(me)
    }

    /// An integrator at time 0 over `h` with `problem`'s initial state
    /// (each level restricted onto the one below), its states in the
    /// backend's page-locked arena where it has one.
    fn at_initial_state(
        deck: &Deck,
        problem: Arc<dyn Problem<T>>,
        h: Hierarchy,
        backend: B,
    ) -> Result<Self, IntegratorError> {
        let arena = state_arena(&backend, deck);
        let mut pool = BufferPool::with_arena(arena.clone());
        let data = initial_data(&h, problem.as_ref(), &mut pool, deck.ncomp())?;
        drop(pool);
        Self::assemble(deck, problem, h, data, (0.0, 0), backend, arena)
    }

    /// An integrator over an existing hierarchy and data (for example read
    /// from a checkpoint) at `time` after `step` steps. Only the old state
    /// of `data` is used.
    pub fn from_state(
        deck: &Deck,
        hierarchy: Hierarchy,
        data: HierarchyData<T>,
        time: f64,
        step: u64,
        backend: B,
    ) -> Result<Self, IntegratorError> {
        IntegratorBuilder::new(deck).from_state(hierarchy, data, time, step, backend)
    }

    /// [`Integrator::from_state`] before `run.residency = "auto"` is
    /// settled.
    fn assemble(
        deck: &Deck,
        problem: Arc<dyn Problem<T>>,
        hierarchy: Hierarchy,
        data: HierarchyData<T>,
        (time, step): (f64, u64),
        backend: B,
        arena: Option<LockedArena>,
    ) -> Result<Self, IntegratorError> {
        deck.validate()?;
        for w in deck.warnings() {
            log::warn!("deck: {w}");
        }
        check_deck_matches(deck, &hierarchy, "the given hierarchy")?;
        data.check_layout(&hierarchy)
            .map_err(IntegratorError::mesh("state"))?;
        if data.ncomp() != deck.ncomp() {
            return Err(IntegratorError::Config(format!(
                "the state has {} components; the Euler equations with the deck's {} passive scalars have {}",
                data.ncomp(),
                deck.hydro.scalars.len(),
                deck.ncomp()
            )));
        }
        let solver = deck
            .solver()
            .map_err(|e| IntegratorError::Config(e.to_string()))?;
        if hierarchy.ghost() < solver.ghost_width() as i32 {
            return Err(IntegratorError::Config(format!(
                "the hierarchy's ghost width {} is below the {} the {} scheme needs",
                hierarchy.ghost(),
                solver.ghost_width(),
                solver.scheme().name()
            )));
        }
        let criteria = problem.refinement()?;
        check_fields(&criteria, deck.ncomp()).map_err(IntegratorError::Config)?;
        let faces = problem.faces()?;
        let columns = columns(deck, problem.output_fields()).map_err(IntegratorError::Config)?;
        backend.solves_components(deck.ncomp()).map_err(|why| {
            IntegratorError::Config(format!(
                "the {} backend cannot solve hydro.scalars {:?}: {why}",
                backend.name(),
                deck.hydro.scalars
            ))
        })?;
        let host_only = host_only(&criteria, &faces);
        let bc = boundary_conditions(faces, hierarchy.geometry())?;
        let limiter = limiter_of(deck.amr.interpolation);
        let mut backend = backend;
        // Under "auto" a first guess by the lower bound of the state's
        // bytes, so that the plan is built for the likely mode; the exact
        // weighing follows below.
        let on_device = match deck.run.residency {
            Residency::Host => false,
            Residency::Device => match &host_only {
                Some(why) => {
                    return Err(IntegratorError::Config(format!(
                        "run.residency = \"device\", but {why}; run host-staged (\"host\" or \"auto\")"
                    )));
                }
                None => true,
            },
            Residency::Auto if host_only.is_some() => false,
            Residency::Auto => memory_budget(&mut backend, 0, deck).is_some_and(|b| {
                residency::lower_bound(&hierarchy, deck.ncomp(), std::mem::size_of::<T>()) <= b
            }),
        };
        let preparations = preparations_for(arena.is_some(), backend.fills_probes());
        let plan = StepPlan::for_deck(
            &hierarchy,
            bc.clone(),
            limiter,
            (deck, preparations),
            !on_device,
        )?;
        let queues = rayon::current_num_threads();
        let base = if backend.transfers() {
            Coefficients::gpu_default()
        } else {
            Coefficients::cpu_default()
        };
        let (coefficients, calibrator) = match coefficient_file(deck, &backend) {
            Some(path) => match load_coefficients(&path, backend.name(), &backend.device()) {
                Ok(Some(c)) => {
                    log::info!("cost model: coefficients from {}", path.display());
                    (c, None)
                }
                Ok(None) => (base, Some(Calibrator::new())),
                Err(why) => {
                    log::warn!("{why}; calibrating afresh");
                    (base, Some(Calibrator::new()))
                }
            },
            None => (base, Some(Calibrator::new())),
        };
        let mut me = Self {
            deck: deck.clone(),
            gas: backend.thermo(),
            cfl: deck.hydro.cfl,
            bc,
            limiter,
            criteria,
            problem,
            columns,
            host_only,
            preparations,
            h: hierarchy,
            data: Some(data),
            plan,
            ring: BatchRing::new(backend.host_alloc(), deck.batching.max_bins),
            arena: arena.clone(),
            backend,
            model: OnlineModel::new(CostModel::new(coefficients)?, RefineOptions::default())?,
            calibrator,
            base,
            calibration: None,
            scheduler: Scheduler::new(
                deck.batching.mode,
                deck.batching.n_fixed,
                queues,
                deck.batching.max_bins,
            ),
            time,
            step,
            pipelined: deck.batching.pipelined,
            totals: RunTotals::default(),
            version: 0,
            on_device,
            resident: None,
            staged: None,
            host_current: true,
            resident_io: PatchBuf::default(),
            tag_bits: Vec::new(),
            announced: false,
            ranks: None,
            patch_costs: Vec::new(),
            step_secs: Vec::new(),
            regrid_pending: false,
            halo_overlap: true,
            next_rate: None,
            rate_scratch: RateScratch {
                restrict: RestrictScratch::in_arena(arena.clone()),
                rates: Vec::new(),
                given_level: None,
                given: Vec::new(),
                marks: Vec::new(),
            },
        };
        // Host-staged from the start: the ring's page-locked batches are
        // allocated while the caller builds the initial hierarchy.
        if deck.run.residency == Residency::Host {
            me.prefetch_batches();
        }
        Ok(me)
    }

    /// Starts allocating the batches the step loop keeps alive (see
    /// [`BatchRing::prefetch`]).
    fn prefetch_batches(&mut self) {
        let alive = if self.pipelined {
            crate::pipeline::max_alive()
        } else {
            1
        };
        self.ring
            .prefetch(alive, self.deck.batching.bin_edge, self.deck.ncomp());
    }

    /// The deck the integrator was built from.
    pub fn deck(&self) -> &Deck {
        &self.deck
    }

    /// The current hierarchy.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.h
    }

    /// The current data (the `old` state holds time [`Integrator::time`]).
    /// In device residency call [`Integrator::sync_host`] first: until
    /// then this is the state of the last such call. In a run over ranks
    /// only the patches this rank owns ([`Integrator::distribution`]) are
    /// current.
    ///
    /// # Panics
    /// After a failed regrid, which consumes the data, and in device
    /// residency after a regrid until [`Integrator::sync_host`] (a regrid
    /// in the backend leaves no host copy). [`Integrator::try_data`] says
    /// so in an error instead.
    pub fn data(&self) -> &HierarchyData<T> {
        self.data.as_ref().expect(
            "data is present unless a regrid failed or, in device residency, a regrid ran since the last sync_host",
        )
    }

    /// [`Integrator::data`], or an error saying why there is no host copy
    /// to read (a failed regrid consumed it, or in device residency a
    /// regrid ran since the last [`Integrator::sync_host`]).
    ///
    /// # Errors
    /// [`IntegratorError::Internal`] after a failed regrid;
    /// [`IntegratorError::Config`] when the host copy is missing until
    /// `sync_host`.
    pub fn try_data(&self) -> Result<&HierarchyData<T>, IntegratorError> {
        match &self.data {
            Some(d) => Ok(d),
            None if self.resident.is_some() && !self.host_current => Err(IntegratorError::Config(
                "in device residency a regrid left no host copy of the state: \
                     call sync_host before reading it"
                    .into(),
            )),
            None => Err(poisoned()),
        }
    }

    /// The data, mutably (e.g. to impose a state in tests). In device
    /// residency the backend's state is copied back first and dropped, so
    /// that the next step starts from what the caller leaves here.
    ///
    /// # Errors
    /// When the backend cannot hand its resident state back (the error of
    /// the copy), or after a failed regrid, which consumed the data.
    pub fn data_mut(&mut self) -> Result<&mut HierarchyData<T>, IntegratorError> {
        self.sync_host()?;
        self.unload_resident();
        self.next_rate = None;
        self.data.as_mut().ok_or_else(poisoned)
    }

    /// Simulated time.
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Steps taken.
    pub fn steps(&self) -> u64 {
        self.step
    }

    /// Totals since construction.
    pub fn totals(&self) -> &RunTotals {
        &self.totals
    }

    /// The backend.
    pub fn backend(&self) -> &B {
        &self.backend
    }

    /// The backend, mutably.
    pub fn backend_mut(&mut self) -> &mut B {
        &mut self.backend
    }

    /// The calibration of the cost model, once done in this run (`None`
    /// while it runs, or when the coefficients came from a file).
    pub fn calibration(&self) -> Option<&CalibrationReport> {
        self.calibration.as_ref()
    }

    /// Ends a calibration step: the warm-up step's samples are dropped,
    /// the last one's fitted (see [`crate::calibration`]).
    fn calibrate_after_step(&mut self) -> Result<(), IntegratorError> {
        let Some(cal) = self.calibrator.as_mut() else {
            return Ok(());
        };
        if !cal.end_step() {
            return Ok(());
        }
        let report = cal.fit(self.base);
        self.calibrator = None;
        self.model = OnlineModel::new(
            CostModel::new(report.coefficients)?,
            RefineOptions::default(),
        )?;
        let pct =
            |h: Option<f64>| h.map_or("not fitted".to_string(), |v| format!("{:.1} %", 100.0 * v));
        log::info!(
            "cost model calibrated on {} ({} solve, {} prepare, {} close samples): held-out error solve {}, prepare {}, close {}",
            self.backend.name(),
            report.samples[0],
            report.samples[1],
            report.samples[2],
            pct(report.holdout[0]),
            pct(report.holdout[1]),
            pct(report.holdout[2])
        );
        if let Some(path) = coefficient_file(&self.deck, &self.backend) {
            let n = report.samples.iter().sum::<usize>() as u64;
            match save_coefficients(
                &path,
                self.backend.name(),
                &self.backend.device(),
                n,
                report.coefficients,
            ) {
                Ok(()) => log::info!("cost model: coefficients written to {}", path.display()),
                Err(e) => log::warn!("cost model: coefficients not stored: {e}"),
            }
        }
        self.calibration = Some(report);
        Ok(())
    }

    /// Batch buffers the step loop has allocated so far. The loop reuses
    /// its batches across batches and steps, so this grows only when more
    /// batches are alive at once than before (at most six in the pipelined
    /// loop) or a batch larger than any before comes.
    pub fn batch_allocations(&self) -> u64 {
        self.ring.allocations()
    }

    /// Bytes of batch memory held, and what kind of memory it is
    /// (`"pageable"`, `"page-locked (CUDA)"`).
    pub fn batch_memory(&self) -> (usize, &'static str) {
        (self.ring.bytes(), self.ring.kind())
    }

    /// The cost model as refined so far.
    pub fn model(&self) -> &OnlineModel {
        &self.model
    }

    /// Incremented at every regrid: tells drivers when the hierarchy changed.
    pub fn hierarchy_version(&self) -> u64 {
        self.version
    }

    /// Packing efficiency of the current bins.
    pub fn fill_ratio(&self) -> f64 {
        self.plan.layout.fill_ratio
    }

    /// Number of bins of the current packing.
    pub fn num_bins(&self) -> usize {
        self.plan.layout.bins.len()
    }

    /// Switches between pipelined and sequential batch loops.
    pub fn set_pipelined(&mut self, on: bool) {
        self.pipelined = on;
    }

    /// Switches the batch selection (adaptive or static with `n_fixed`
    /// patches per batch).
    pub fn set_batching(&mut self, mode: BatchMode, n_fixed: usize) {
        let d = &self.deck.batching;
        self.scheduler = Scheduler::new(
            mode,
            n_fixed.max(1),
            rayon::current_num_threads(),
            d.max_bins,
        );
    }

    /// Adds output time (written by the driver) to the totals.
    pub fn record_output(&mut self, seconds: f64) {
        self.totals.phases.output += seconds;
        self.totals.phases.wall += seconds;
    }

    /// Volume integrals of the conserved components over the domain (the
    /// Euler five, then the passive scalars): the level-0 sums (finer
    /// levels are restricted onto them). A run over ranks needs
    /// [`Integrator::global_totals`], which gathers them.
    pub fn conserved_totals(&self) -> Result<Vec<f64>, IntegratorError> {
        if self.ranks.is_some() {
            return Err(over_ranks("conserved_totals", "global_totals"));
        }
        let mut out = vec![0.0; self.deck.ncomp()];
        for (c, o) in out.iter_mut().enumerate() {
            *o = self
                .data()
                .level_integral(&self.h, 0, c)
                .map_err(IntegratorError::mesh("conserved totals"))?;
        }
        Ok(out)
    }

    /// [`Integrator::conserved_totals`] of a run over ranks as well: each
    /// rank's level-0 patch sums are gathered and added in patch order, as
    /// a serial run adds them, so the totals do not depend on the rank
    /// count. Every rank must call it at the same point.
    pub fn global_totals(&mut self) -> Result<Vec<f64>, IntegratorError> {
        let nc = self.deck.ncomp();
        let Some(ranks) = self.ranks.as_mut() else {
            return self.conserved_totals();
        };
        let data = self.data.as_ref().ok_or_else(poisoned)?;
        let range = self.h.level_range(0);
        let sums = ranks.gather_patch_values(range.clone(), nc, |i, out| {
            out.extend((0..nc).map(|c| data.old(i).interior_sum(c)));
        })?;
        let volume = self
            .h
            .level_geometry(0)
            .map_or(1.0, quilt_mesh::LevelGeometry::cell_volume);
        Ok((0..nc)
            .map(|c| {
                let s: f64 = range
                    .clone()
                    .map(|i| sums[(i - range.start) * nc + c])
                    .sum();
                s * volume
            })
            .collect())
    }

    /// In a run over ranks, gathers every patch's old interior onto rank
    /// `root`, whose [`Integrator::data`] then holds the whole state (for
    /// output, say); the other ranks' states are unchanged. Every rank must
    /// call it at the same point; a serial run has nothing to gather.
    pub fn gather_onto(&mut self, root: usize) -> Result<(), IntegratorError> {
        self.sync_host()?;
        let Some(ranks) = self.ranks.as_mut() else {
            return Ok(());
        };
        if root >= ranks.size() {
            return Err(IntegratorError::Config(format!(
                "gathering onto rank {root} of a run over {} ranks",
                ranks.size()
            )));
        }
        let data = self.data.as_mut().ok_or_else(poisoned)?;
        ranks.gather_old(&self.h, root, data)
    }

    /// The ParaView output of the current state: density, velocity,
    /// pressure, total energy, the mass fraction of each passive scalar
    /// (named as in `hydro.scalars`), the derived fields of
    /// `output.derived`, the problem's [`Problem::output_fields`] and patch
    /// ids of every patch interior ([`quilt_io::euler_output_with`]). In a
    /// run over ranks every rank must call it at the same point: the state
    /// is gathered onto rank 0, which alone gets `Some`, so a run writes
    /// one file whatever its rank count.
    pub fn output(&mut self) -> Result<Option<AmrOutput>, IntegratorError> {
        self.gather_onto(0)?;
        if self.rank().is_some_and(|(r, _)| r != 0) {
            return Ok(None);
        }
        let gas = self.gas.clone();
        let fields = move |u: &[T]| {
            let (density, velocity, pressure) =
                gas.primitive(std::array::from_fn(|c| u[c].as_f64()));
            CellFields {
                density,
                velocity,
                pressure,
                total_energy: u[4].as_f64(),
            }
        };
        let data = self.data.as_ref().ok_or_else(poisoned)?;
        let scalars = self.deck.hydro.scalars.len();
        let names: Vec<&str> = (self.deck.hydro.scalars.iter().map(String::as_str))
            .chain(self.columns.iter().map(Column::name))
            .collect();
        let gas = &*self.gas;
        let columns = &self.columns;
        // A passive scalar is shown as its mass fraction `s / rho`; the
        // other columns get the cell's values in f64.
        let fractions = |u: &[T], out: &mut [f64]| {
            let rho = u[0].as_f64();
            let (fractions, rest) = out.split_at_mut(scalars);
            for (o, s) in fractions.iter_mut().zip(&u[NCOMP..]) {
                *o = s.as_f64() / rho;
            }
            if !columns.is_empty() {
                let mut cell = [0.0; NCOMP + MAX_SCALARS];
                for (c, v) in cell.iter_mut().zip(u) {
                    *c = v.as_f64();
                }
                for (o, col) in rest.iter_mut().zip(columns) {
                    *o = col.value(&cell[..u.len()], gas);
                }
            }
        };
        let out = euler_output_with(
            &self.h,
            |i| data.old(i),
            (self.time, self.step),
            fields,
            &names,
            fractions,
        )?;
        Ok(Some(out))
    }

    /// A 64-bit FNV-1a digest of the old interiors of every patch (every
    /// component, `x` fastest), combined in patch order: equal digests of
    /// two runs mean bitwise equal states, whatever their rank counts.
    /// Every rank of a run over ranks must call it at the same point.
    pub fn state_digest(&mut self) -> Result<u64, IntegratorError> {
        let data = self.data.as_ref().ok_or_else(poisoned)?;
        let n = self.h.num_patches();
        let digest = |i: usize| f64::from_bits(patch_digest(data.old(i)));
        let all = match self.ranks.as_mut() {
            Some(r) => r.gather_patch_values(0..n, 1, |i, out| out.push(digest(i)))?,
            // Patches side by side (a large hierarchy holds gigabytes),
            // combined in patch order as before.
            None => (0..n).into_par_iter().map(digest).collect(),
        };
        Ok(fnv1a(all.iter().flat_map(|d| d.to_bits().to_le_bytes())))
    }

    /// The CFL time step of the current state (errors name the first bad
    /// cell); in a run over ranks, of this rank's patches
    /// ([`Integrator::step`] takes the minimum over all ranks). A regrid
    /// still due after what was the run's last step is taken first, so
    /// that the time step is the one of the hierarchy the next step
    /// solves.
    pub fn cfl_dt(&mut self) -> Result<f64, IntegratorError> {
        self.pending_regrid()?;
        self.scan_dt()
    }

    /// [`Integrator::cfl_dt`] of the hierarchy as it is.
    fn scan_dt(&self) -> Result<f64, IntegratorError> {
        let data = self.data.as_ref().ok_or_else(poisoned)?;
        let only = self.ranks.as_ref().map(Ranks::owned);
        let rate = match self.next_rate {
            Some(r) => r,
            None => cfl::max_rate(&self.h, data, &*self.gas, only),
        };
        let rate = rate.map_err(|b| {
            let p = &self.h.patches()[b.patch];
            IntegratorError::BadState {
                step: self.step + 1,
                time: self.time,
                level: p.level(),
                patch: p.id(),
                cell: [b.cell.x, b.cell.y, b.cell.z].map(i64::from),
                what: b.what,
                value: b.value,
                stage: "at the start of the step",
            }
        })?;
        if !(rate > 0.0 && rate.is_finite()) {
            return Err(IntegratorError::Config(format!(
                "the signal speed {rate} gives no finite time step"
            )));
        }
        Ok(self.cfl / rate)
    }

    /// Spreads the run over the ranks of `transport`: every rank must have
    /// built the same integrator (same deck, same hierarchy and state, as
    /// [`Integrator::new`] does on every rank) and call this at the same
    /// point. The patches are distributed by cost (cells until measured
    /// costs exist) along a Morton curve; from here on each rank solves
    /// its own patches and exchanges with its peers what the serial step
    /// would have read across the cut, so results do not depend on the
    /// number of ranks. Host residency only.
    pub fn distribute(&mut self, transport: Box<dyn Transport>) -> Result<(), IntegratorError> {
        if self.on_device || self.deck.run.residency == Residency::Device {
            return Err(IntegratorError::Config(
                "a run over ranks needs host residency (run.residency = \"host\" or \"auto\")"
                    .into(),
            ));
        }
        if self.ranks.is_some() {
            return Err(IntegratorError::Config(
                "the run is already spread over ranks".into(),
            ));
        }
        let costs = cell_costs(&self.h);
        let dist = Distribution::balanced(&self.h, &costs, transport.size())?;
        log::info!(
            "ranks: {} patches over {} ranks, efficiency {:.3}",
            self.h.num_patches(),
            transport.size(),
            dist.efficiency(&costs)
        );
        let plan = self.owned_plan(&self.h, &dist, transport.rank())?;
        let mut ranks = Ranks::new(transport, dist, &self.h, &plan.layout)?;
        ranks.set_overlap(self.halo_overlap);
        self.plan = plan;
        self.ranks = Some(ranks);
        // Over ranks each rank scans its own patches.
        self.next_rate = None;
        Ok(())
    }

    /// Measured seconds per step of each patch, by hierarchy index: each
    /// batch's measured prepare, solve and close shared among its patches
    /// (a coarse patch carries its flux probes), averaged exponentially
    /// over the steps since the last regrid. NaN where nothing was
    /// measured: before the first step after a regrid, other ranks'
    /// patches, device residency. A regrid over ranks distributes the new
    /// patches by these costs ([`quilt_dist::inherited_costs`]).
    pub fn patch_costs(&self) -> &[f64] {
        &self.patch_costs
    }

    /// Whether a run over ranks goes boundary-first (the default): the
    /// bins whose flux blocks other ranks need are solved first, and each
    /// message of blocks is posted as soon as its patches are closed and
    /// travels while the other bins are solved. Off, every exchange waits
    /// for the batch loop to end. Results are bitwise the same either way.
    pub fn set_halo_overlap(&mut self, on: bool) {
        self.halo_overlap = on;
        if let Some(r) = self.ranks.as_mut() {
            r.set_overlap(on);
        }
    }

    /// Seconds this rank spent in exchanges by kind: the old interiors its
    /// fills read, flux blocks (posting, polling between batches and the
    /// wait after the batch loop), restriction; waits for slower ranks
    /// included. Zeros in a serial run.
    pub fn halo_seconds_by_kind(&self) -> [f64; 3] {
        self.ranks.as_ref().map_or([0.0; 3], |r| r.halo_by_kind)
    }

    /// The exchanges' volume and their pack / wait / unpack seconds, by
    /// the kinds of [`Integrator::halo_seconds_by_kind`]. Zeros in a
    /// serial run.
    pub fn halo_counts(&self) -> [quilt_dist::ExchangeCounts; 3] {
        self.ranks
            .as_ref()
            .map_or([quilt_dist::ExchangeCounts::default(); 3], |r| {
                r.halo_counts
            })
    }

    /// `(rank, ranks)` of a distributed run, `None` otherwise.
    pub fn rank(&self) -> Option<(usize, usize)> {
        self.ranks.as_ref().map(|r| (r.rank(), r.size()))
    }

    /// The distribution of the patches over the ranks, in a distributed
    /// run.
    pub fn distribution(&self) -> Option<&Distribution> {
        self.ranks.as_ref().map(Ranks::distribution)
    }

    /// Seconds this rank of a distributed run has spent in the step's
    /// exchanges (ghost data, flux blocks, restriction), waits included.
    pub fn halo_seconds(&self) -> f64 {
        self.ranks.as_ref().map_or(0.0, Ranks::halo_secs)
    }

    /// Regrids of a distributed run that adopted a fresh distribution
    /// rather than the inherited one.
    pub fn fresh_distributions(&self) -> u64 {
        self.ranks.as_ref().map_or(0, |r| r.fresh)
    }

    /// The step plan of `h` for `rank` under `dist`.
    fn owned_plan(
        &self,
        h: &Hierarchy,
        dist: &Distribution,
        rank: usize,
    ) -> Result<StepPlan<T>, IntegratorError> {
        let owned = dist.mask(rank);
        StepPlan::for_deck_owned(
            h,
            self.bc.clone(),
            self.limiter,
            (&self.deck, self.preparations),
            true,
            Some(&owned),
        )
    }

    /// The CFL time step over all ranks: each rank's own patches, then the
    /// global minimum. A bad state on any rank stops every rank; the rank
    /// that found it names the cell.
    fn ranks_dt(&mut self) -> Result<f64, IntegratorError> {
        // A rank without patches (more ranks than patches) sets no bound.
        let idle = self
            .ranks
            .as_ref()
            .is_some_and(|r| !r.owned().iter().any(|&o| o));
        let local = if idle {
            Ok(f64::INFINITY)
        } else {
            self.scan_dt()
        };
        let mine = match &local {
            Ok(dt) => *dt,
            Err(_) => f64::NAN,
        };
        let ranks = self.ranks.as_mut().ok_or_else(poisoned)?;
        let dt = ranks.all_min(mine)?;
        match local {
            Err(e) => Err(e),
            Ok(_) if dt.is_nan() => Err(IntegratorError::Config(format!(
                "step {}: another rank found a bad state (its error names the cell); rank {} stops too",
                self.step + 1,
                ranks.rank()
            ))),
            Ok(_) => Ok(dt),
        }
    }

    /// One coarse step with the CFL time step, shortened to land on
    /// `run.end_time`.
    pub fn step(&mut self) -> Result<StepInfo, IntegratorError> {
        // The time step is the new hierarchy's.
        let pending = self.pending_regrid()?;
        let t = Instant::now();
        let mut dt = if self.device_resident() {
            self.resident_dt()?
        } else if self.ranks.is_some() {
            self.ranks_dt()?
        } else {
            self.scan_dt()?
        };
        let end = self.deck.run.end_time;
        if end > self.time && self.time + dt > end {
            dt = end - self.time;
        }
        let scan = t.elapsed().as_secs_f64();
        let mut info = self.advance(dt)?;
        info.phases.other += scan;
        info.phases.wall += scan;
        self.totals.phases.other += scan;
        self.totals.phases.wall += scan;
        if let Some(secs) = pending {
            info.phases.regrid += secs;
            info.phases.wall += secs;
        }
        self.after_step(&info)?;
        Ok(info)
    }

    /// The problem's [`Problem::after_step`] hook, with the state made
    /// current on the host if it reads it.
    fn after_step(&mut self, info: &StepInfo) -> Result<(), IntegratorError> {
        let problem = Arc::clone(&self.problem);
        let reads = problem.reads_state_after_step();
        if reads {
            self.sync_host()?;
        }
        problem.after_step(&crate::problem::AfterStep {
            info,
            hierarchy: &self.h,
            data: if reads { self.data.as_ref() } else { None },
        })
    }

    /// Takes a regrid that fell due after what was the run's last step
    /// (see the module's step 5), counted in the run's totals; its
    /// seconds, if there was one.
    fn pending_regrid(&mut self) -> Result<Option<f64>, IntegratorError> {
        if !self.regrid_pending {
            return Ok(None);
        }
        let t = Instant::now();
        self.regrid_now()?;
        if self.device_resident() {
            self.ensure_resident()?;
        }
        let secs = t.elapsed().as_secs_f64();
        let totals = &mut self.totals;
        totals.regrids += 1;
        totals.phases.regrid += secs;
        totals.phases.wall += secs;
        Ok(Some(secs))
    }

    /// Whether the deck's stop criteria (`run.end_time`, `run.max_steps`)
    /// are met.
    pub fn finished(&self) -> bool {
        let r = &self.deck.run;
        (r.max_steps > 0 && self.step >= r.max_steps)
            || (r.end_time > 0.0 && self.time >= r.end_time * (1.0 - 1e-14))
    }

    /// One coarse step of `dt` (which the solver checks against its CFL
    /// limit).
    pub fn advance(&mut self, dt: f64) -> Result<StepInfo, IntegratorError> {
        self.pending_regrid()?;
        if self.device_resident() {
            return self.advance_resident(dt);
        }
        let t_step = Instant::now();
        let step = self.step + 1;
        let order = SweepOrder::for_step(self.step);
        self.next_rate = None;
        let mut data = self.data.take().ok_or_else(poisoned)?;
        if let Some(r) = self.ranks.as_mut() {
            r.begin_step();
            if let Err(e) = r.exchange_old(&mut data) {
                self.data = Some(data);
                return Err(e);
            }
        }
        // Estimate errors count once the model is calibrated.
        let calibrated = self.calibrator.is_none();
        self.step_secs.clear();
        self.step_secs.resize(self.h.num_patches(), 0.0);
        let wanted = self.ranks.is_none() && self.backend.fills_restricted();
        let restricted =
            match restricted_outputs(&self.h, self.deck.ncomp(), wanted, &mut self.rate_scratch) {
                Ok(r) => r,
                Err(e) => {
                    self.data = Some(data);
                    return Err(e);
                }
            };
        let res = run_batches(LoopInputs {
            h: &self.h,
            layout: &self.plan.layout,
            fluxes: &mut self.plan.fluxes,
            data: &mut data,
            backend: &mut self.backend,
            ring: &mut self.ring,
            model: &mut self.model,
            calibrator: self.calibrator.as_mut(),
            scheduler: &mut self.scheduler,
            time: self.time,
            dt,
            order,
            step,
            pipelined: self.pipelined,
            patch_secs: &mut self.step_secs,
            ranks: self.ranks.as_mut(),
            restricted,
        });
        let mut stats = match res {
            Ok(s) => s,
            Err(e) => {
                self.data = Some(data);
                return Err(e);
            }
        };
        average_costs(&mut self.patch_costs, &self.step_secs);
        let t = Instant::now();
        // Without ranks the next step's CFL scan is made as restriction
        // reads each level.
        let scan = self
            .ranks
            .is_none()
            .then_some((&*self.gas, &mut self.rate_scratch));
        let r = reflux_and_restrict(
            &self.h,
            &mut self.plan,
            &mut data,
            self.ranks.as_mut(),
            scan,
        );
        data.swap_all();
        self.data = Some(data);
        self.next_rate = r?;
        if let Some(ranks) = self.ranks.as_mut() {
            stats.report = ranks.combine_report(stats.report)?;
        }
        let reflux_restrict = t.elapsed().as_secs_f64();
        let floors = stats.report.floors;
        if floors.total() > 0 {
            self.report_floors(step, floors)?;
        }
        self.time += dt;
        self.step = step;
        self.calibrate_after_step()?;
        let mut phases = PhaseTimes {
            prepare: stats.prepare,
            solve: stats.solve,
            close: stats.close,
            reflux_restrict,
            idle: (stats.wall - stats.solve).max(0.0),
            batch_loop: stats.wall,
            prepare_tasks: stats.prepare_tasks,
            close_tasks: stats.close_tasks,
            ..Default::default()
        };
        let info = self.finish_step(
            dt,
            stats.report,
            stats.batches,
            stats.estimates,
            calibrated,
            t_step,
            &mut phases,
        )?;
        log::debug!(
            "step {step}: t = {:.6e}, dt = {dt:.3e}, {} batches, {:.3} s; batch loop {:.3} s: prepare {:.3} s (assembly {:.3} s; tasks {:.3} core-s), solve {:.3} s, close {:.3} s (tasks {:.3} core-s), selection and model {:.3} s; reflux and restriction {reflux_restrict:.3} s",
            self.time,
            stats.batches,
            info.phases.wall,
            stats.wall,
            stats.prepare,
            stats.assemble,
            stats.prepare_tasks,
            stats.solve,
            stats.close,
            stats.close_tasks,
            stats.between
        );
        Ok(info)
    }

    /// Logs the first floor application of the run with its cell, or
    /// stops the run when the deck treats floors as errors.
    fn report_floors(&self, step: u64, floors: FloorCounts) -> Result<(), IntegratorError> {
        let error = self.deck.hydro.on_floor == FloorAction::Error;
        if !error && self.totals.floors.total() > 0 {
            return Ok(());
        }
        let data = self.data.as_ref().ok_or_else(poisoned)?;
        let location = match cfl::find_floored(&self.h, data, &*self.gas, self.gas.floors()) {
            Some(b) => {
                let p = &self.h.patches()[b.patch];
                format!(
                    "first at level {}, patch {}, cell [{}, {}, {}]: {} ({:e})",
                    p.level(),
                    p.id(),
                    b.cell.x,
                    b.cell.y,
                    b.cell.z,
                    b.what,
                    b.value
                )
            }
            None => "the floored cells rose above the floors within the step".to_string(),
        };
        if error {
            return Err(IntegratorError::Floor {
                step,
                time: self.time,
                density: floors.density,
                pressure: floors.pressure,
                location,
            });
        }
        log::warn!(
            "step {step} (t = {}): the first floors of the run: density {} times, pressure {} times, {location}; \
             later ones are counted in the totals (hydro.on_floor = \"error\" stops the run instead)",
            self.time,
            floors.density,
            floors.pressure
        );
        Ok(())
    }

    /// Whether the steps run in device residency now.
    fn device_resident(&self) -> bool {
        self.on_device
    }

    /// Where the state lives now: [`Residency::Device`] or
    /// [`Residency::Host`] (under `run.residency = "auto"`, what the
    /// device's memory allowed at the start or the last regrid).
    pub fn residency(&self) -> Residency {
        if self.on_device {
            Residency::Device
        } else {
            Residency::Host
        }
    }

    /// Bytes of backend memory the resident state takes
    /// ([`ResidentPlan::device_bytes`]); `None` while nothing is resident.
    pub fn resident_bytes(&self) -> Option<u64> {
        self.resident
            .as_ref()
            .map(|p| p.device_bytes(std::mem::size_of::<T>()))
    }

    /// The bytes a resident state may take now (see [`memory_budget`]).
    fn memory_budget(&mut self) -> Option<u64> {
        let held = self.resident_bytes().unwrap_or(0);
        memory_budget(&mut self.backend, held, &self.deck)
    }

    /// Under `run.residency = "auto"`, with no state resident: weighs the
    /// current hierarchy's resident state against the device's memory,
    /// keeps the resident plan for the load when it fits, and adapts the
    /// step plan to the mode chosen.
    fn settle_residency(&mut self) -> Result<(), IntegratorError> {
        if self.deck.run.residency != Residency::Auto || self.resident.is_some() {
            return Ok(());
        }
        self.staged = None;
        let (fits, why) = match &self.host_only {
            Some(why) => (false, why.clone()),
            None => self.weigh_residency()?,
        };
        if fits != self.on_device || !self.announced {
            self.announced = true;
            log::info!(
                "run.residency = \"auto\": {} after step {} ({why})",
                if fits {
                    "the state lives in the backend"
                } else {
                    "the steps are host-staged"
                },
                self.step
            );
        }
        self.set_on_device(fits)
    }

    /// Whether the current hierarchy's resident state fits the device's
    /// memory, and why: keeps the resident plan for the load when it does.
    fn weigh_residency(&mut self) -> Result<(bool, String), IntegratorError> {
        let size = std::mem::size_of::<T>();
        let budget = self.memory_budget();
        let mut need = residency::lower_bound(&self.h, self.deck.ncomp(), size);
        let fits = match budget {
            Some(b) if need <= b => {
                let plan = resident_plan(&self.h, &self.plan)?;
                need = plan.device_bytes(size);
                let fits = need <= b;
                if fits {
                    self.staged = Some(StagedResident::plain(plan, self.version));
                }
                fits
            }
            _ => false,
        };
        let why = match budget {
            Some(b) => format!(
                "the state needs {:.3} GB{} of the {:.3} GB allowed",
                residency::gb(need),
                if fits { "" } else { " at least" },
                residency::gb(b)
            ),
            None => format!(
                "the {} backend has no device memory or no resident mode",
                self.backend.name()
            ),
        };
        Ok((fits, why))
    }

    /// Switches the steps' residency (nothing may be resident).
    fn set_on_device(&mut self, on: bool) -> Result<(), IntegratorError> {
        self.on_device = on;
        self.next_rate = None;
        if on {
            self.plan.drop_batches();
            self.ring.cancel_prefetch();
        } else {
            self.staged = None;
            self.plan.ensure_batches(&self.h)?;
            self.prefetch_batches();
        }
        Ok(())
    }

    /// Whether the host copy of the state ([`Integrator::data`]) is the
    /// current one. In device residency it is brought up to date by
    /// [`Integrator::sync_host`] (which regrids, checkpoints and
    /// [`Integrator::fill_ghosts`] call themselves); until then it holds
    /// the state of the last such call.
    pub fn host_is_current(&self) -> bool {
        self.host_current
    }

    /// Copies the backend's resident state back into the host copy
    /// ([`Integrator::data`]); nothing to do in host residency.
    pub fn sync_host(&mut self) -> Result<(), IntegratorError> {
        if self.host_current {
            return Ok(());
        }
        let plan = self.resident.as_ref().ok_or_else(|| {
            IntegratorError::Internal("the host copy is stale but nothing is resident".into())
        })?;
        let name = self.backend.name().to_string();
        let mut compact = std::mem::take(&mut self.resident_io);
        let ex = self
            .backend
            .resident()
            .ok_or_else(|| no_resident_mode(&name))?;
        size_compact(
            &mut compact,
            plan.items.interior_len as usize,
            ex.io_lock().as_ref(),
        );
        ex.store(&mut compact)
            .map_err(|source| backend_error(self.step, &name, source))?;
        if self.data.is_none() {
            // A regrid on the backend left no host copy: the new
            // hierarchy's is made when first asked for.
            let what = format!(
                "the host copy of the state ({} patches)",
                self.h.num_patches()
            );
            quilt_mesh::memory::check_fits(state_bytes::<T>(&self.h, self.deck.ncomp()), &what)
                .map_err(IntegratorError::mesh("host copy"))?;
            self.data = Some(
                HierarchyData::new(&self.h, self.deck.ncomp())
                    .map_err(IntegratorError::mesh("host copy"))?,
            );
        }
        let data = self.data.as_mut().ok_or_else(poisoned)?;
        unpack_interiors(plan, &mut compact, data);
        self.next_rate = None;
        self.resident_io = compact;
        self.host_current = true;
        Ok(())
    }

    /// Drops the backend's resident state (the host copy must be current).
    fn unload_resident(&mut self) {
        if self.resident.take().is_some()
            && let Some(ex) = self.backend.resident()
        {
            ex.unload();
        }
    }

    /// Loads the current hierarchy and state into the backend unless they
    /// are there.
    fn ensure_resident(&mut self) -> Result<(), IntegratorError> {
        if self.resident.is_some() {
            return Ok(());
        }
        let t = Instant::now();
        let lock = self.backend.resident().and_then(|r| r.io_lock());
        let items_stage = self.backend.resident().and_then(|r| r.item_stage());
        let mut compact = std::mem::take(&mut self.resident_io);
        // The compact interiors' memory is mapped and page-locked (most of
        // the packing's time when it grows) beside the plan: its size is
        // the hierarchy's.
        let values = self.h.total_cells() as usize * self.deck.ncomp();
        let (ahead, ()) = rayon::join(
            || match self.staged.take() {
                Some(p) if p.version == self.version => Ok(p),
                _ => resident_plan_with(&self.h, &self.plan, items_stage.as_deref(), |_, _| ())
                    .map(|(plan, (), items)| StagedResident {
                        plan,
                        layout: None,
                        items,
                        version: self.version,
                    }),
            },
            || size_compact(&mut compact, values, lock.as_ref()),
        );
        let StagedResident {
            plan,
            layout: staged,
            items,
            ..
        } = ahead?;
        let t_plan = t.elapsed().as_secs_f64();
        let stage = self.backend.layout_stage();
        let data = self.data.as_ref().ok_or_else(poisoned)?;
        let ((), staged) = rayon::join(
            || pack_interiors(&plan, data, &mut compact, lock.as_ref()),
            || staged.or_else(|| stage_layout(stage.as_deref(), &plan.layout)),
        );
        let t_state = t.elapsed().as_secs_f64() - t_plan;
        let name = self.backend.name().to_string();
        let ex = self
            .backend
            .resident()
            .ok_or_else(|| no_resident_mode(&name))?;
        ex.offer_staged(staged);
        ex.offer_items(items);
        let loaded = ex.load(&plan, &compact);
        self.resident_io = compact;
        loaded.map_err(|source| backend_error(self.step + 1, &name, source))?;
        log::info!(
            "resident state: {} patches and {} probes in {} bins, {:.1} MB with fluxes and scratch, loaded in {:.3} s (items {t_plan:.3} s, interiors {t_state:.3} s, backend {:.3} s)",
            plan.patches,
            plan.layout.patches().len() - plan.patches,
            plan.layout.nbins(),
            (plan.values() * std::mem::size_of::<T>() as u64) as f64 / 1e6,
            t.elapsed().as_secs_f64(),
            t.elapsed().as_secs_f64() - t_plan - t_state
        );
        self.resident = Some(plan);
        Ok(())
    }

    /// The CFL time step of the resident state.
    fn resident_dt(&mut self) -> Result<f64, IntegratorError> {
        self.ensure_resident()?;
        let name = self.backend.name().to_string();
        let ex = self
            .backend
            .resident()
            .ok_or_else(|| no_resident_mode(&name))?;
        let rate = ex
            .max_rate()
            .map_err(|source| backend_error(self.step + 1, &name, source))?;
        match rate {
            Some(rate) if rate > 0.0 && rate.is_finite() => Ok(self.cfl / rate),
            // A bad cell, or no finite step: the host scan says which.
            _ => {
                self.sync_host()?;
                self.scan_dt()
            }
        }
    }

    /// [`Integrator::advance`] in device residency.
    fn advance_resident(&mut self, dt: f64) -> Result<StepInfo, IntegratorError> {
        self.next_rate = None;
        let t_step = Instant::now();
        let step = self.step + 1;
        let order = SweepOrder::for_step(self.step);
        self.ensure_resident()?;
        let name = self.backend.name().to_string();
        let t = Instant::now();
        let res = self
            .backend
            .resident()
            .ok_or_else(|| no_resident_mode(&name))?
            .step(dt, order);
        let solve = t.elapsed().as_secs_f64();
        let report = match res {
            Ok(r) => r,
            Err(e) => {
                // The resident state is past its old time level: the step
                // cannot be repeated from it, nor from a stale host copy.
                let err = solve_error(e, &self.h, &self.plan.layout, step, self.time, &name);
                self.unload_resident();
                if !self.host_current {
                    self.data = None;
                }
                return Err(err);
            }
        };
        self.host_current = false;
        if report.floors.total() > 0 {
            self.sync_host()?;
            self.report_floors(step, report.floors)?;
        }
        self.time += dt;
        self.step = step;
        let mut phases = PhaseTimes {
            solve,
            batch_loop: solve,
            ..Default::default()
        };
        self.finish_step(
            dt,
            report,
            1,
            EstimateErrors::default(),
            false,
            t_step,
            &mut phases,
        )
    }

    /// The end of a step of either residency: the regrid when one is due,
    /// the step's report and the run's totals.
    #[allow(clippy::too_many_arguments)]
    fn finish_step(
        &mut self,
        dt: f64,
        report: quilt_sweep::StepReport,
        batches: usize,
        estimates: EstimateErrors,
        count_estimates: bool,
        t_step: Instant,
        phases: &mut PhaseTimes,
    ) -> Result<StepInfo, IntegratorError> {
        let step = self.step;
        let (cells, patches, levels) = (
            self.h.total_cells() as u64,
            self.h.num_patches(),
            self.h.num_levels(),
        );
        let bins = self.plan.layout.bins.len();
        let interval = self.deck.amr.regrid_interval;
        let due = self.deck.amr.max_levels > 1 && interval > 0 && step % interval == 0;
        // After the run's last step a regrid would serve no step.
        self.regrid_pending = due && self.finished();
        let regridded = due && !self.regrid_pending;
        let t = Instant::now();
        if regridded {
            self.regrid_now()?;
            if self.device_resident() {
                // The new hierarchy goes to the backend now, so that its
                // cost counts as part of the regrid.
                self.ensure_resident()?;
            }
        }
        phases.regrid = t.elapsed().as_secs_f64();
        phases.wall = t_step.elapsed().as_secs_f64();
        let info = StepInfo {
            step,
            time: self.time,
            dt,
            cells,
            solved_cells: report.cells,
            patches,
            levels,
            batches,
            bins,
            courant: report.courant,
            floors: report.floors,
            regridded,
            phases: *phases,
            estimates,
        };
        let t = &mut self.totals;
        t.steps += 1;
        t.cells += cells;
        t.solved_cells += report.cells;
        t.batches += batches as u64;
        t.regrids += u64::from(regridded);
        t.floors += report.floors;
        t.phases += *phases;
        if count_estimates {
            t.estimates += estimates;
        }
        Ok(info)
    }

    /// Rebuilds the hierarchy from the current old state: ghost fill,
    /// tagging, clustering, regrid, new step plan. A regrid left due
    /// after the run's last step is then done.
    pub fn regrid_now(&mut self) -> Result<(), IntegratorError> {
        self.rebuild()?;
        self.regrid_pending = false;
        Ok(())
    }

    /// [`Integrator::regrid_now`]'s work.
    fn rebuild(&mut self) -> Result<(), IntegratorError> {
        if self.ranks.is_some() {
            return self.regrid_ranks();
        }
        if self.resident.is_some() {
            return self.regrid_resident();
        }
        self.sync_host()?;
        self.unload_resident();
        let step = self.step;
        let mut data = self.data.take().ok_or_else(poisoned)?;
        let (new_h, [t_fill, t_tag, t_cluster]) = match self.new_layout(&mut data) {
            Ok(h) => h,
            Err(e) => {
                self.data = Some(data);
                return Err(e);
            }
        };
        // The data is consumed: unchanged patches move into the new layout,
        // and the dead new states give their memory to the new hierarchy,
        // which lowers the memory peak of a regrid by one time level and
        // spares the faults of fresh pages (in the transfer and in the next
        // step's close).
        // The step plan (fill plans, packing, registers) depends on the new
        // layout alone: it is built while the data moves.
        let (old_h, limiter, arena) = (&self.h, self.limiter, self.arena.clone());
        let (bc, batches) = (self.bc.clone(), !self.on_device);
        let shape = (&self.deck, self.preparations);
        let (moved, planned) = rayon::join(
            || {
                let t = Instant::now();
                (
                    transfer_in(
                        old_h,
                        data,
                        &new_h,
                        limiter,
                        &mut BufferPool::with_arena(arena),
                    ),
                    t.elapsed().as_secs_f64(),
                )
            },
            || {
                let t = Instant::now();
                let plan = StepPlan::for_deck(&new_h, bc, limiter, shape, batches);
                (plan, t.elapsed().as_secs_f64())
            },
        );
        let ((new_data, _), t_transfer) = (
            moved
                .0
                .map_err(|source| IntegratorError::Regrid { step, source })?,
            moved.1,
        );
        let (plan, t_plan) = (planned.0?, planned.1);
        log::info!(
            "regrid after step {step}: {} levels, {} patches, {} cells; ghost fill {t_fill:.3} s, tagging {t_tag:.3} s, clustering {t_cluster:.3} s, transfer {t_transfer:.3} s and step plan {t_plan:.3} s at once",
            new_h.num_levels(),
            new_h.num_patches(),
            new_h.total_cells()
        );
        drop_elsewhere(self.install(new_h, Some(new_data), plan));
        self.settle_residency()
    }

    /// [`Integrator::regrid_now`] over ranks: each rank fills and tags its
    /// own patches, the tags are gathered so that every rank clusters the
    /// serial run's tags into the same hierarchy, the distribution is
    /// inherited (each new patch stays with the rank holding most of its
    /// cells) unless a fresh one is more than the balancer's threshold
    /// better, and the transfer runs with the exchanges it needs.
    fn regrid_ranks(&mut self) -> Result<(), IntegratorError> {
        let mut ranks = self.ranks.take().ok_or_else(poisoned)?;
        let r = self.regrid_over(&mut ranks);
        self.ranks = Some(ranks);
        r
    }

    fn regrid_over(&mut self, ranks: &mut Ranks) -> Result<(), IntegratorError> {
        let step = self.step;
        let t0 = Instant::now();
        let mut data = self.data.take().ok_or_else(poisoned)?;
        let (new_h, rebalance) = match self.layout_over(ranks, &mut data) {
            Ok(v) => v,
            Err(e) => {
                self.data = Some(data);
                return Err(e);
            }
        };
        let t_layout = t0.elapsed().as_secs_f64();
        let Rebalance {
            distribution: new_dist,
            kept,
            fresh,
            adopted,
            cells_moved,
        } = rebalance;
        ranks.exchange_for_transfer(&self.h, &new_h, &new_dist, &mut data)?;
        let t_move = t0.elapsed().as_secs_f64() - t_layout;
        let coarse = ranks.coarse_plans(&self.h, &new_h, &new_dist);
        // Each rank fills its own new patches; the coarse cells their
        // interpolation reads from other ranks' patches arrive before each
        // level.
        let mine = new_dist.mask(ranks.rank());
        let mut before_level = |l: usize, new: &mut HierarchyData<T>| {
            ranks
                .exchange_coarse(&coarse, l, new)
                .map_err(|e| quilt_mesh::MeshError::invalid("regrid exchange", e.to_string()))
        };
        let (new_data, _) = transfer_with(
            &self.h,
            data,
            &new_h,
            self.limiter,
            &mut BufferPool::with_arena(self.arena.clone()),
            &mut before_level,
            Some(&mine),
        )
        .map_err(|source| IntegratorError::Regrid { step, source })?;
        let t_transfer = t0.elapsed().as_secs_f64() - t_layout - t_move;
        let plan = self.owned_plan(&new_h, &new_dist, ranks.rank())?;
        ranks.adopt(new_dist, &new_h, &plan.layout)?;
        ranks.fresh += u64::from(adopted);
        log::info!(
            "regrid after step {step} over {} ranks: {} levels, {} patches, {} cells; efficiency {:.3} kept, {:.3} fresh, {} ({} cells move); layout {t_layout:.3} s, old pieces {t_move:.3} s, transfer {t_transfer:.3} s, all {:.3} s",
            ranks.size(),
            new_h.num_levels(),
            new_h.num_patches(),
            new_h.total_cells(),
            kept,
            fresh,
            if adopted { "fresh adopted" } else { "kept" },
            cells_moved,
            t0.elapsed().as_secs_f64()
        );
        drop_elsewhere(self.install(new_h, Some(new_data), plan));
        Ok(())
    }

    /// The new hierarchy and distribution of a regrid over ranks (see
    /// [`Integrator::regrid_ranks`]); the data is not moved.
    fn layout_over(
        &self,
        ranks: &mut Ranks,
        data: &mut HierarchyData<T>,
    ) -> Result<(Hierarchy, Rebalance), IntegratorError> {
        let t0 = Instant::now();
        ranks.exchange_old(data)?;
        let t_old = t0.elapsed().as_secs_f64();
        let (tags, [t_fill, t_tag]) = self.fill_and_tag(data, Some(ranks.owned()))?;
        let t1 = Instant::now();
        let tags = ranks.gather_tags(&self.h, tags)?;
        let t_gather = t1.elapsed().as_secs_f64();
        let new_h = self.cluster(&tags)?;
        check_state_fits::<T>(&self.h, &new_h, self.deck.ncomp())?;
        log::debug!(
            "regrid layout after step {} over ranks: old interiors {t_old:.3} s, fill {t_fill:.3} s, tag {t_tag:.3} s, tags gathered {t_gather:.3} s, clustering {:.3} s",
            self.step,
            t1.elapsed().as_secs_f64() - t_gather
        );
        let kept = Distribution::inherited(&self.h, ranks.distribution(), &new_h)?;
        // Every rank's measured costs of its own patches, on every rank, so
        // that all compute the same distribution.
        let measured = ranks.gather_patch_values(0..self.h.num_patches(), 1, |i, out| {
            out.push(self.patch_costs.get(i).copied().unwrap_or(f64::NAN));
        })?;
        let costs = inherited_costs(&self.h, &measured, &new_h);
        let rebalance = Balancer::default().rebalance(&new_h, kept, &costs)?;
        Ok((new_h, rebalance))
    }

    /// Puts a regrid's hierarchy, host state and step plan in place and
    /// counts the new layout; returns the old ones, for
    /// [`drop_elsewhere`].
    fn install(
        &mut self,
        h: Hierarchy,
        data: Option<HierarchyData<T>>,
        plan: StepPlan<T>,
    ) -> (Hierarchy, Option<HierarchyData<T>>, StepPlan<T>) {
        self.version += 1;
        self.next_rate = None;
        self.patch_costs.clear();
        (
            std::mem::replace(&mut self.h, h),
            std::mem::replace(&mut self.data, data),
            std::mem::replace(&mut self.plan, plan),
        )
    }

    /// The hierarchy the current old state asks for: its ghosts filled,
    /// tagged, clustered level by level (the data is not moved).
    fn new_layout(
        &self,
        data: &mut HierarchyData<T>,
    ) -> Result<(Hierarchy, [f64; 3]), IntegratorError> {
        let t0 = Instant::now();
        let (tags, [t_fill, t_tag]) = self.fill_and_tag(data, None)?;
        let new_h = self.cluster(&tags)?;
        check_state_fits::<T>(&self.h, &new_h, self.deck.ncomp())?;
        let t_cluster = t0.elapsed().as_secs_f64() - t_fill - t_tag;
        Ok((new_h, [t_fill, t_tag, t_cluster]))
    }

    /// Fills the old ghosts of the patches `only` marks (every patch
    /// without it) on the levels a regrid tags, and tags them, the others
    /// getting empty fields; returns the tags and the seconds of the fill
    /// and of the tagging.
    fn fill_and_tag(
        &self,
        data: &mut HierarchyData<T>,
        only: Option<&[bool]>,
    ) -> Result<(Vec<quilt_mesh::tag::TagBox>, [f64; 2]), IntegratorError> {
        let step = self.step;
        let t0 = Instant::now();
        // Only tagged patches read their ghost cells here: the regrid's
        // transfer reads interiors, and the next step fills every ghost.
        // The levels that are not tagged (the finest a deck allows) hold
        // most of the ghost cells.
        let max_levels = self.deck.amr.max_levels;
        let tagged: Vec<bool> = (0..self.h.num_patches())
            .map(|i| {
                tagged_level(self.h.patches()[i].level(), max_levels) && only.is_none_or(|o| o[i])
            })
            .collect();
        fill_old_ghosts(&self.plan.layout.fill, data, self.time, Some(&tagged))?;
        let t_fill = t0.elapsed().as_secs_f64();
        let tags = tag_patches(
            &self.h,
            data,
            &self.criteria,
            &*self.gas,
            self.deck.amr.max_levels,
            only,
        )
        .map_err(|source| IntegratorError::Tag { step, source })?;
        Ok((tags, [t_fill, t0.elapsed().as_secs_f64() - t_fill]))
    }

    /// The hierarchy the tags `tags` (one field per patch) ask for.
    fn cluster(&self, tags: &[quilt_mesh::tag::TagBox]) -> Result<Hierarchy, IntegratorError> {
        let step = self.step;
        let a = &self.deck.amr;
        let opts = RegridOptions {
            efficiency: a.efficiency,
            combine_efficiency: a.combine_efficiency,
            nesting_buffer: a.nesting_buffer,
            undo_unprofitable_cuts: true,
            tag_buffer: a.tag_buffer,
            max_levels: a.max_levels,
            limiter: self.limiter,
            blocks: self.deck.blocks(),
        };
        let t0 = Instant::now();
        let levels = new_level_boxes(&self.h, tags, &opts)
            .map_err(|source| IntegratorError::Regrid { step, source })?;
        let t_boxes = t0.elapsed().as_secs_f64();
        let h = build_hierarchy(&self.h, &levels)
            .map_err(|source| IntegratorError::Regrid { step, source })?;
        log::debug!(
            "clustering after step {step}: level boxes {t_boxes:.3} s, hierarchy {:.3} s",
            t0.elapsed().as_secs_f64() - t_boxes
        );
        Ok(h)
    }

    /// [`Integrator::regrid_now`] with the state in the backend: the
    /// backend fills and tags, the host clusters and builds the new plans,
    /// and the backend moves the state into the new hierarchy. Nothing
    /// but the tag bits crosses to the host; its copy of the state is
    /// dropped (the next [`Integrator::sync_host`] makes a new one).
    fn regrid_resident(&mut self) -> Result<(), IntegratorError> {
        let step = self.step;
        let t0 = Instant::now();
        let name = self.backend.name().to_string();
        let old = self.resident.as_ref().ok_or_else(poisoned)?;
        let specs = flat_criteria(&self.criteria, &*self.gas).ok_or_else(|| {
            IntegratorError::Internal(
                "a host-only criterion reached a regrid in the backend".into(),
            )
        })?;
        let flat = FlatTag::new(
            &self.h,
            &old.places,
            self.deck.ncomp(),
            &specs,
            self.deck.amr.max_levels,
        )
        .map_err(IntegratorError::mesh("resident tagging"))?;
        let t_tag_items = t0.elapsed().as_secs_f64();
        let mut bits = std::mem::take(&mut self.tag_bits);
        bits.clear();
        bits.resize(flat.words as usize, 0);
        let ex = self
            .backend
            .resident()
            .ok_or_else(|| no_resident_mode(&name))?;
        let tagged = ex.tag(&flat, &mut bits);
        let t_backend = t0.elapsed().as_secs_f64() - t_tag_items;
        let tags = tagged
            .map_err(|source| backend_error(step, &name, source))
            .and_then(|()| {
                flat.tag_boxes(&self.h, &bits)
                    .map_err(IntegratorError::mesh("resident tags"))
            });
        self.tag_bits = bits;
        let tags = tags?;
        let t_tag = t0.elapsed().as_secs_f64();
        log::debug!(
            "resident tagging: items {t_tag_items:.3} s, fill and tags in the backend {t_backend:.3} s, tag boxes {:.3} s",
            t_tag - t_tag_items - t_backend
        );
        let new_h = self.cluster(&tags)?;
        let t_cluster = t0.elapsed().as_secs_f64() - t_tag;
        let old = self.resident.as_ref().ok_or_else(poisoned)?;
        let (old_h, limiter, ncomp) = (&self.h, self.limiter, self.deck.ncomp());
        let (deck, inputs) = (&self.deck, self.plan_inputs());
        // What the transfer takes of the two hierarchies alone is made
        // while the new one is planned (its packing is serial); only the
        // places are left for when the layout exists.
        let (plan, pieces) = rayon::join(
            || plan_with(&new_h, deck, inputs),
            || {
                let t = Instant::now();
                let p = TransferPieces::new(old_h, &old.places, &new_h, ncomp, limiter);
                log::debug!("transfer pieces {:.3} s", t.elapsed().as_secs_f64());
                p
            },
        );
        let plan = plan?;
        let t_plan = t0.elapsed().as_secs_f64() - t_tag - t_cluster;
        let stage = self.backend.layout_stage();
        let items_stage = self.backend.resident().and_then(|r| r.item_stage());
        // The backend's layout state is built beside the items and the
        // transfer, and its form of the items as soon as they are made:
        // nothing on the device waits for either.
        let items_stage = items_stage.as_deref();
        let (new_res, (moves, staged), items) =
            resident_plan_with(&new_h, &plan, items_stage, |layout, places| {
                rayon::join(
                    || {
                        let t = Instant::now();
                        let m = pieces.and_then(|p| p.place(places));
                        log::debug!("transfer items placed {:.3} s", t.elapsed().as_secs_f64());
                        m
                    },
                    || {
                        let t = Instant::now();
                        let s = stage_layout(stage.as_deref(), layout);
                        log::debug!("layout state {:.3} s", t.elapsed().as_secs_f64());
                        s
                    },
                )
            })?;
        let moves = moves.map_err(|source| IntegratorError::Regrid { step, source })?;
        let t_items = t0.elapsed().as_secs_f64() - t_tag - t_cluster - t_plan;
        let how = self.resident_move(&new_res)?;
        if how != RegridMove::InBackend {
            return self.regrid_through_host(new_h, plan, new_res, how);
        }
        let ex = self
            .backend
            .resident()
            .ok_or_else(|| no_resident_mode(&name))?;
        ex.offer_staged(staged);
        ex.offer_items(items);
        if let Err(source) = ex.regrid(&new_res, &moves) {
            // The backend may have dropped the old state with the new.
            self.unload_resident();
            if !self.host_current {
                self.data = None;
            }
            return Err(backend_error(step, &name, source));
        }
        log::info!(
            "regrid after step {step} in the backend: {} levels, {} patches, {} cells; tagging {t_tag:.3} s, clustering {t_cluster:.3} s, step plan {t_plan:.3} s, resident items {t_items:.3} s, transfer {:.3} s",
            new_h.num_levels(),
            new_h.num_patches(),
            new_h.total_cells(),
            t0.elapsed().as_secs_f64() - t_tag - t_cluster - t_plan - t_items
        );
        let old = (
            self.install(new_h, None, plan),
            self.resident.replace(new_res),
        );
        drop_elsewhere(old);
        self.host_current = false;
        Ok(())
    }

    /// How a regrid of the resident state moves it into `new`'s: in the
    /// backend, unless `run.residency = "auto"` finds the old and the new
    /// state too large for the device together.
    fn resident_move(&mut self, new: &ResidentPlan) -> Result<RegridMove, IntegratorError> {
        if self.deck.run.residency != Residency::Auto {
            return Ok(RegridMove::InBackend);
        }
        let size = std::mem::size_of::<T>();
        let old = self
            .resident
            .as_ref()
            .ok_or_else(poisoned)?
            .device_bytes(size);
        let new = new.device_bytes(size);
        let Some(budget) = self.memory_budget() else {
            return Ok(RegridMove::InBackend);
        };
        let how = residency::regrid_move(old, new, budget);
        if how != RegridMove::InBackend {
            log::info!(
                "run.residency = \"auto\": after step {} the old state ({:.3} GB) and the new ({:.3} GB) exceed the {:.3} GB allowed together: {}",
                self.step,
                residency::gb(old),
                residency::gb(new),
                residency::gb(budget),
                if how == RegridMove::ThroughHost {
                    "the regrid goes through host memory"
                } else {
                    "the steps continue host-staged"
                }
            );
        }
        Ok(how)
    }

    /// A regrid of the resident state to `new_h` by way of the host: the
    /// state comes back, is regridded as in host residency, and then is
    /// loaded again ([`RegridMove::ThroughHost`], with `new_res`) or stays
    /// on the host ([`RegridMove::ToHost`]).
    fn regrid_through_host(
        &mut self,
        new_h: Hierarchy,
        plan: StepPlan<T>,
        new_res: ResidentPlan,
        how: RegridMove,
    ) -> Result<(), IntegratorError> {
        let step = self.step;
        // The host regrid moves the state with its ghost cells filled.
        self.fill_ghosts()?;
        self.unload_resident();
        let data = self.data.take().ok_or_else(poisoned)?;
        let pool = &mut BufferPool::with_arena(self.arena.clone());
        let (new_data, _) = transfer_in(&self.h, data, &new_h, self.limiter, pool)
            .map_err(|source| IntegratorError::Regrid { step, source })?;
        drop_elsewhere(self.install(new_h, Some(new_data), plan));
        if how == RegridMove::ThroughHost {
            self.staged = Some(StagedResident::plain(new_res, self.version));
            Ok(())
        } else {
            self.set_on_device(false)
        }
    }

    /// What a step plan takes of this integrator besides the hierarchy and
    /// the deck ([`plan_with`]); host-staged steps get batches.
    fn plan_inputs(&self) -> PlanInputs<T> {
        (
            self.bc.clone(),
            self.limiter,
            self.preparations,
            !self.on_device,
        )
    }

    /// Fills the ghost cells of the old state (for output or analysis); the
    /// new state's contents are lost. In a run over ranks, those of this
    /// rank's patches, after receiving what they read from other ranks
    /// (every rank must call it at the same point).
    pub fn fill_ghosts(&mut self) -> Result<(), IntegratorError> {
        self.sync_host()?;
        let time = self.time;
        let data = self.data.as_mut().ok_or_else(poisoned)?;
        let only = match self.ranks.as_mut() {
            Some(r) => {
                r.exchange_old(data)?;
                Some(r.owned())
            }
            None => None,
        };
        fill_old_ghosts(&self.plan.layout.fill, data, time, only)
    }

    /// A CPU solver for the deck (what [`crate::backend::CpuBackend`] wraps).
    pub fn cpu_solver(deck: &Deck) -> Result<Solver, IntegratorError> {
        deck.solver()
            .map_err(|e| IntegratorError::Config(e.to_string()))
    }
}

impl<T: Real + CheckpointReal, B: SolveBackend<T>> Integrator<T, B> {
    /// Writes a checkpoint (atomically) holding everything a bitwise
    /// restart needs: time, step, run totals, the deck, the hierarchy and
    /// the state.
    ///
    /// In a run over ranks every rank must call it at the same point: the
    /// patches are gathered onto rank 0, which writes the one file; every
    /// rank returns rank 0's outcome. The file does not depend on the rank
    /// count (only the ghost cells and the new time level of patches other
    /// ranks own are not current, and a restart reads neither), so a run
    /// restarts from it on any number of ranks ([`Integrator::distribute`]
    /// after [`Integrator::restart`]).
    pub fn write_checkpoint(&mut self, path: &Path) -> Result<(), IntegratorError> {
        self.sync_host()?;
        let mut batches = self.totals.batches;
        if let Some(r) = self.ranks.as_mut() {
            let data = self.data.as_mut().ok_or_else(poisoned)?;
            r.gather_old(&self.h, 0, data)?;
            batches = r.sum(batches)?;
            if r.rank() != 0 {
                return r.agree("writing a checkpoint", Ok(()));
            }
        }
        let written = self.write_checkpoint_here(path, batches);
        match self.ranks.as_mut() {
            Some(r) => r.agree("writing a checkpoint", written),
            None => written,
        }
    }

    /// [`Integrator::write_checkpoint`] of this process's state, with
    /// `batches` batches over all ranks.
    fn write_checkpoint_here(&self, path: &Path, batches: u64) -> Result<(), IntegratorError> {
        let t = &self.totals;
        let counters = [
            ("steps_taken", t.steps),
            ("cells_updated", t.cells),
            ("cells_solved", t.solved_cells),
            ("batches", batches),
            ("regrids", t.regrids),
            ("hierarchy_version", self.version),
            ("regrid_pending", u64::from(self.regrid_pending)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        let run = RunState {
            time: self.time,
            step: self.step,
            counters,
            values: Default::default(),
            deck: self.deck.to_toml(),
        };
        let data = self.data.as_ref().ok_or_else(poisoned)?;
        write_checkpoint(path, &run, &self.h, data)?;
        Ok(())
    }

    /// Continues a run from a checkpoint: its hierarchy, state, time and
    /// step, with `deck` if given (e.g. a later end time) or else the deck
    /// stored in the checkpoint. The run then continues bit for bit as if
    /// it had not stopped.
    pub fn restart(path: &Path, deck: Option<&Deck>, backend: B) -> Result<Self, IntegratorError> {
        Self::restart_with(path, deck, None, backend)
    }

    /// [`Integrator::restart`] solving `problem` (the deck's when `None`).
    fn restart_with(
        path: &Path,
        deck: Option<&Deck>,
        problem: Option<Arc<dyn Problem<T>>>,
        backend: B,
    ) -> Result<Self, IntegratorError> {
        let ck = read_checkpoint::<T>(path)?;
        let stored;
        let deck = match deck {
            Some(d) => d,
            None => {
                stored =
                    Deck::parse_named(&ck.run.deck, &format!("deck stored in {}", path.display()))?;
                &stored
            }
        };
        check_deck_matches(deck, &ck.hierarchy, &path.display().to_string())?;
        let mut builder = IntegratorBuilder::new(deck);
        if let Some(p) = problem {
            builder = builder.shared_problem(p);
        }
        let mut me =
            builder.from_state(ck.hierarchy, ck.data, ck.run.time, ck.run.step, backend)?;
        let c = |k: &str| ck.run.counters.get(k).copied().unwrap_or(0);
        me.totals.steps = c("steps_taken");
        me.totals.cells = c("cells_updated");
        me.totals.solved_cells = c("cells_solved");
        me.totals.batches = c("batches");
        me.totals.regrids = c("regrids");
        me.version = c("hierarchy_version");
        me.regrid_pending = c("regrid_pending") != 0;
        if me.finished() {
            // A restart that would take no step is a mistake, not a run.
            let r = &deck.run;
            let (key, value) = if r.max_steps > 0 && me.step >= r.max_steps {
                ("run.max_steps", r.max_steps.to_string())
            } else {
                ("run.end_time", r.end_time.to_string())
            };
            return Err(IntegratorError::Contradiction {
                source_name: path.display().to_string(),
                key: key.into(),
                deck: value,
                stored: format!(
                    "step {} at time {}: the run is over already (give a later {key})",
                    me.step, me.time
                ),
            });
        }
        Ok(me)
    }
}

/// The bytes a resident state may take on `backend` under `deck`'s
/// `[run]` memory settings, with `held` bytes resident now
/// ([`residency::budget`]); `None` for a backend without a resident mode.
fn memory_budget<T: Real, B: SolveBackend<T>>(
    backend: &mut B,
    held: u64,
    deck: &Deck,
) -> Option<u64> {
    backend.resident()?;
    let r = &deck.run;
    let (fraction, limit) = (r.device_memory_fraction, r.device_memory_limit);
    residency::budget(backend.device_memory(), held, fraction, limit)
}

/// Drops `old` on a thread of its own: the structures a regrid replaces
/// (the old hierarchy, its plans and, at the first resident regrid, the
/// host copy of the state) hold gigabytes in many allocations, whose
/// release the next step need not wait for. Dropped in place if no thread
/// can be started.
fn drop_elsewhere<X: Send + 'static>(old: X) {
    let spawned = std::thread::Builder::new()
        .name("quilt-drop".into())
        .spawn(move || drop(old));
    if let Err(e) = spawned {
        log::debug!("no thread for dropping the old hierarchy ({e}): dropped in place");
    }
}

/// A backend's failure in step `step`.
fn backend_error(step: u64, backend: &str, source: crate::backend::SolveError) -> IntegratorError {
    IntegratorError::Solve {
        step,
        backend: backend.to_string(),
        source,
    }
}

fn no_resident_mode(backend: &str) -> IntegratorError {
    IntegratorError::Config(format!(
        "run.residency = \"device\": the {backend} backend has no resident mode (use \"host\")"
    ))
}

/// Where a host-staged step prepares patches and their flux probes:
/// every patch on the host, and the probes on the device when the states
/// are page-locked (`arena`) and the backend fills the probes of patches
/// solved in place ([`SolveBackend::fills_probes`]). The cost model's
/// prepare estimates follow it (`QUILT_PREPARE_FEATURES=bins` has them
/// charge the probes too, to compare).
fn preparations_for(arena: bool, fills_probes: bool) -> Preparations {
    let charged = std::env::var("QUILT_PREPARE_FEATURES").is_ok_and(|v| v == "bins");
    Preparations {
        patches: Preparation::Host,
        probes: if !charged && arena && fills_probes {
            Preparation::OnDevice
        } else {
            Preparation::Host
        },
    }
}

/// Bytes of both time levels of `h`'s state, ghost cells included.
fn state_bytes<T>(h: &Hierarchy, ncomp: usize) -> u64 {
    let cells: i64 = h.patches().iter().map(|p| p.ghost_box().num_cells()).sum();
    cells as u64 * (2 * ncomp * std::mem::size_of::<T>()) as u64
}

/// Refuses a new hierarchy whose state would not fit next to the current
/// one's: the regrid would otherwise allocate until the system kills the
/// process. The dead new time level of the current state is recycled
/// first, so half of its memory counts as available.
fn check_state_fits<T>(
    old: &Hierarchy,
    new: &Hierarchy,
    ncomp: usize,
) -> Result<(), IntegratorError> {
    let need = state_bytes::<T>(new, ncomp).saturating_sub(state_bytes::<T>(old, ncomp) / 2);
    let what = format!(
        "the regridded hierarchy ({} levels, {} patches, {:.1} M cells)",
        new.num_levels(),
        new.num_patches(),
        new.total_cells() as f64 / 1e6
    );
    quilt_mesh::memory::check_fits(need, &what).map_err(IntegratorError::mesh("regrid"))
}

/// Refuses a deck that contradicts an existing hierarchy (from `source`):
/// continuing would produce a run, and checkpoints, whose deck disagrees
/// with its own mesh. Levels a deck adds beyond the existing ones, patch
/// sizes and everything else that only shapes later regrids may change.
fn check_deck_matches(deck: &Deck, h: &Hierarchy, source: &str) -> Result<(), IntegratorError> {
    let g = h.geometry();
    let fail = |key: &str, deck: String, stored: String| {
        Err(IntegratorError::Contradiction {
            source_name: source.to_string(),
            key: key.to_string(),
            deck,
            stored,
        })
    };
    let (lo, hi) = (g.prob_lo(), g.prob_hi());
    let (lo, hi) = ([lo.x, lo.y, lo.z], [hi.x, hi.y, hi.z]);
    if lo.map(f64::to_bits) != deck.domain.lo.map(f64::to_bits) {
        return fail(
            "domain.lo",
            format!("{:?}", deck.domain.lo),
            format!("lower corner {lo:?}"),
        );
    }
    if hi.map(f64::to_bits) != deck.domain.hi.map(f64::to_bits) {
        return fail(
            "domain.hi",
            format!("{:?}", deck.domain.hi),
            format!("upper corner {hi:?}"),
        );
    }
    let cells = g.base_cells();
    let cells = [cells[0], cells[1], cells[2]];
    if cells != deck.domain.base_cells {
        return fail(
            "domain.base_cells",
            format!("{:?}", deck.domain.base_cells),
            format!("base grid {cells:?}"),
        );
    }
    if g.periodic() != deck.periodic() {
        return fail(
            "boundary",
            format!("periodic axes {:?}", deck.periodic()),
            format!("periodic axes {:?}", g.periodic()),
        );
    }
    let levels = h.num_levels();
    if deck.amr.max_levels < levels {
        return fail(
            "amr.max_levels",
            deck.amr.max_levels.to_string(),
            format!("{levels} levels"),
        );
    }
    let ratios = deck.fine_ratios();
    // The geometry lists level 0's ratio (1) first.
    let have = g.ratios().get(1..levels).unwrap_or_default();
    if ratios.len() < have.len() || ratios[..have.len()] != *have {
        return fail(
            "amr.ratios",
            format!("{ratios:?}"),
            format!("ratios {have:?} between its {levels} levels"),
        );
    }
    Ok(())
}

/// Fills the old state's ghost cells of every patch in parallel: each
/// patch is prepared (interior and ghosts, reading only old interiors) into
/// its dead new state, then the states swap. The old interiors are copied
/// bit for bit, so only the ghost cells change. Page-locked states have
/// their ghost cells filled where they are instead
/// ([`GhostFill::fill_locked_in_place`]). With `only`, just the
/// patches it marks (a rank's own); the others are left as they are.
fn fill_old_ghosts<T: Real>(
    fill: &GhostFill<T>,
    data: &mut HierarchyData<T>,
    time: f64,
    only: Option<&[bool]>,
) -> Result<(), IntegratorError> {
    let wanted = |i: usize| only.is_none_or(|o| o[i]);
    if data.states().iter().all(|s| s.old.is_page_locked()) {
        // In place: only the ghost cells are written, no interior copied.
        return fill
            .fill_locked_in_place(data, time, only)
            .map_err(IntegratorError::mesh("ghost fill"));
    }
    {
        let (olds, news) = data.split_old_new();
        news.into_par_iter()
            .enumerate()
            .filter(|(i, _)| wanted(*i))
            .try_for_each_init(FillScratch::new, |scratch, (i, new)| {
                fill.prepare(&olds, i, time, &mut FillTarget::patch(new), scratch)
                    .map(|_| ())
            })
            .map_err(IntegratorError::mesh("ghost fill"))?;
    }
    for (i, s) in data.states_mut().iter_mut().enumerate() {
        if wanted(i) {
            s.swap();
        }
    }
    Ok(())
}

/// The coefficient file of the deck's directory for this backend, if the
/// deck names a directory.
fn coefficient_file<T: Real, B: SolveBackend<T>>(deck: &Deck, backend: &B) -> Option<PathBuf> {
    let dir = &deck.batching.coefficients_dir;
    (!dir.is_empty()).then(|| coefficient_path(Path::new(dir), backend.name(), &backend.device()))
}

/// The error of a whole-state call made on one rank of several.
fn over_ranks(call: &str, instead: &str) -> IntegratorError {
    IntegratorError::Config(format!(
        "{call} reads every patch, and in a run over ranks each rank holds only its own: call {instead}"
    ))
}

/// FNV-1a over `bytes`.
fn fnv1a(bytes: impl IntoIterator<Item = u8>) -> u64 {
    use std::hash::Hasher;
    let mut h = fnv::FnvHasher::default();
    for b in bytes {
        h.write_u8(b);
    }
    h.finish()
}

/// [`fnv1a`] of a patch's interior values, component by component.
fn patch_digest<T: Real>(d: &quilt_mesh::PatchData<T>) -> u64 {
    let b = d.interior();
    let mut bytes = Vec::with_capacity(b.num_cells().max(0) as usize * d.ncomp() * size_of::<T>());
    for c in 0..d.ncomp() {
        let comp = d.comp(c);
        for z in b.lo.z..=b.hi.z {
            for y in b.lo.y..=b.hi.y {
                let o = d.index(&iv(b.lo.x, y, z));
                let n = (b.hi.x - b.lo.x + 1) as usize;
                bytes.extend_from_slice(bytemuck::cast_slice(&comp[o..o + n]));
            }
        }
    }
    fnv1a(bytes)
}

/// Cells per patch: the cost of patches not timed yet.
/// Weight of a new measurement in [`Integrator`]'s per-patch costs.
const COST_WEIGHT: f64 = 0.5;

/// Folds one step's measured seconds per patch (`step`, zero where a
/// patch was not solved here) into the exponential averages `costs`.
fn average_costs(costs: &mut Vec<f64>, step: &[f64]) {
    costs.resize(step.len(), f64::NAN);
    for (c, &x) in costs.iter_mut().zip(step) {
        if x > 0.0 {
            *c = if c.is_nan() {
                x
            } else {
                COST_WEIGHT * x + (1.0 - COST_WEIGHT) * *c
            };
        }
    }
}

fn cell_costs(h: &Hierarchy) -> Vec<f64> {
    h.patches()
        .iter()
        .map(|p| p.interior().num_cells() as f64)
        .collect()
}

/// An integrator's part of a step plan ([`Integrator::plan_inputs`]): the
/// boundary conditions, the limiter, the preparations and whether the
/// plan has host-staged batches.
type PlanInputs<T> = (BoundaryConditions<T>, Limiter, Preparations, bool);

/// The step plan of `h` under `deck` with an integrator's `inputs`; made
/// without the integrator, so the set-up can make it on another thread.
fn plan_with<T: Real>(
    h: &Hierarchy,
    deck: &Deck,
    (bc, limiter, preparations, batches): PlanInputs<T>,
) -> Result<StepPlan<T>, IntegratorError> {
    StepPlan::for_deck(h, bc, limiter, (deck, preparations), batches)
}

/// A resident plan made before its load, with what the backend built for
/// it on other threads (each `None` where it built nothing), for the
/// hierarchy of one version ([`Integrator::hierarchy_version`]): a load
/// of any other takes none of it.
struct StagedResident {
    plan: ResidentPlan,
    layout: Option<StagedLayout>,
    items: Option<StagedItems>,
    version: u64,
}

impl StagedResident {
    /// `plan` alone, of the hierarchy of version `version`.
    fn plain(plan: ResidentPlan, version: u64) -> Self {
        Self {
            plan,
            layout: None,
            items: None,
            version,
        }
    }
}

/// What `stage` builds for `layout`, if it builds anything and can: a
/// backend that gets nothing builds it itself.
fn stage_layout(stage: Option<&dyn LayoutStage>, layout: &BatchLayout) -> Option<StagedLayout> {
    match stage?.stage(layout) {
        Ok(s) => Some(s),
        Err(e) => {
            log::debug!("the layout state is left to the backend: {e}");
            None
        }
    }
}

fn poisoned() -> IntegratorError {
    IntegratorError::Internal("the integrator lost its data in a failed regrid".into())
}

/// Page-locked memory for the patch states when `backend` reads and
/// writes them in place (it has a [`SolveBackend::page_lock`]) and the
/// state may be host-staged: prepare then fills the ghost cells of each
/// patch's old state where it is, the device reads it there and writes
/// the new interior into the new state, and neither prepare nor close
/// copies an interior. `QUILT_IN_PLACE=0` keeps states in pageable memory, to
/// compare.
fn state_arena<T: Real, B: SolveBackend<T>>(backend: &B, deck: &Deck) -> Option<LockedArena> {
    if deck.run.residency == Residency::Device
        || std::env::var("QUILT_IN_PLACE").is_ok_and(|v| v == "0")
    {
        return None;
    }
    let lock = backend.page_lock()?;
    log::debug!("patch states in {} memory", lock.kind());
    Some(LockedArena::new(lock, STATE_CHUNK))
}

/// `data` with every patch's old state copied into `arena`'s memory (and
/// a new state there), so that a state given from outside (a restart) is
/// read and written in place like one built here.
fn relocate<T: Real>(
    h: &Hierarchy,
    data: HierarchyData<T>,
    arena: &LockedArena,
) -> Result<HierarchyData<T>, IntegratorError> {
    data.check_layout(h)
        .map_err(IntegratorError::mesh("state"))?;
    let mut pool = BufferPool::with_arena(Some(arena.clone()));
    let mut moved = HierarchyData::<T>::new_in(h, data.ncomp(), &mut pool)
        .map_err(IntegratorError::mesh("state in page-locked memory"))?;
    moved
        .states_mut()
        .par_iter_mut()
        .zip(data.states().par_iter())
        .for_each(|(to, from)| to.old.as_mut_slice().copy_from_slice(from.old.as_slice()));
    Ok(moved)
}

/// Bytes the state arena maps and page-locks at a time: large enough that
/// a run locks a few dozen chunks, small enough that the last one wastes
/// little.
const STATE_CHUNK: usize = 256 << 20;

/// The initial condition's cell averages on every patch, then every level
/// restricted onto the one below so that the levels agree. The new time
/// level is left as the pool hands it out: a step writes every interior
/// cell of it before anything reads it, and nothing reads its ghost cells
/// (a step fills ghosts into the batch, a regrid into the dead new state),
/// so a copy of the old state would be read by no one.
fn initial_data<T: Real>(
    h: &Hierarchy,
    problem: &dyn Problem<T>,
    pool: &mut BufferPool<T>,
    ncomp: usize,
) -> Result<HierarchyData<T>, IntegratorError> {
    let mut data = HierarchyData::<T>::new_in(h, ncomp, pool)
        .map_err(IntegratorError::mesh("initial data"))?;
    data.init_old_patches_with(h, |lg, d| problem.initial_patch(lg, d))
        .map_err(IntegratorError::mesh("initial data"))?;
    restrict_hierarchy(h, &mut data, TimeLevel::Old)
        .map_err(IntegratorError::mesh("initial restriction"))?;
    Ok(data)
}

/// Flux registers from the step's flux blocks (probes give the coarse
/// fluxes, fine patches the fine ones; both in a fixed order, so the sums
/// do not depend on batching), refluxing and restriction, finest level
/// first.
///
/// Over ranks, the flux blocks and fine interiors other ranks computed are
/// received first, and each rank accumulates only the register shares of
/// fine patches next to its own coarse patches (the others' faces stay
/// zero and reflux only patches it does not own).
///
/// With `scan` (one process), each level's new state is scanned for the
/// next step's CFL time step while its restriction reads it, since
/// nothing changes a level after that; level 0 is scanned last. Returns
/// that scan's result ([`cfl::max_rate`]'s, bit for bit).
///
/// In one process the registers of all levels are accumulated at once,
/// beside the finest level's restriction: refluxing writes the coarse
/// cells next to a fine patch and restriction those under it, so the two
/// never touch the same cell and their order changes no value; only a
/// level's restriction onto the next must wait for what changes that
/// level.
fn reflux_and_restrict<T: Real>(
    h: &Hierarchy,
    plan: &mut StepPlan<T>,
    data: &mut HierarchyData<T>,
    mut ranks: Option<&mut Ranks>,
    mut scan: Option<(&dyn Thermo, &mut RateScratch<T>)>,
) -> Result<Option<Result<f64, cfl::BadCell>>, IntegratorError> {
    if let Some((_, s)) = scan.as_mut() {
        s.rates.clear();
        s.rates.resize(h.num_patches(), cfl::PatchRate::default());
    }
    if let Some(r) = ranks.as_deref_mut() {
        r.exchange_fluxes(&mut plan.fluxes)?;
    }
    let skip: Option<Vec<bool>> = ranks
        .as_deref()
        .map(|r| (0..h.num_patches()).map(|f| !r.accumulates(f)).collect());
    let owned: Option<Vec<bool>> = ranks.as_deref().map(|r| r.owned().to_vec());
    let StepPlan {
        layout,
        fluxes,
        registers,
    } = plan;
    let (layout, fluxes) = (&*layout, &*fluxes);
    let skip = skip.as_deref();
    let levels = h.num_levels();
    // Levels restricted already (one process: the finest, beside the
    // registers).
    let mut restricted_from = levels;
    if ranks.is_none() && levels > 1 {
        let t0 = Instant::now();
        let top = levels - 1;
        let (accumulated, restricted) = rayon::join(
            || {
                registers
                    .par_iter_mut()
                    .enumerate()
                    .try_for_each(|(k, reg)| {
                        accumulate_register(h, k + 1, reg, layout, fluxes, skip)
                    })
            },
            || restrict_level(h, top, data, None, scan.as_mut()),
        );
        accumulated?;
        restricted?;
        restricted_from = top;
        log::debug!(
            "registers of every level beside level {top}'s restriction: {:.4} s",
            t0.elapsed().as_secs_f64()
        );
    }
    for l in (1..levels).rev() {
        let t0 = Instant::now();
        let reg = &mut registers[l - 1];
        if ranks.is_some() {
            accumulate_register(h, l, reg, layout, fluxes, skip)?;
        }
        let t1 = Instant::now();
        reg.reflux(h, data, TimeLevel::New)
            .map_err(IntegratorError::mesh(format!("refluxing level {}", l - 1)))?;
        let t2 = Instant::now();
        // Over ranks each rank restricts its own fine patches: onto its
        // own coarse patches here, onto other ranks' in the values it
        // posts.
        if let Some(r) = ranks.as_deref_mut() {
            r.post_restriction(h, l, data)?;
        }
        if l < restricted_from {
            restrict_level(h, l, data, owned.as_deref(), scan.as_mut())?;
        }
        if let Some(r) = ranks.as_deref_mut() {
            r.receive_restriction(h, l, data)?;
        }
        log::debug!(
            "level {l}: fluxes {:.4} s, reflux {:.4} s, restriction {:.4} s",
            (t1 - t0).as_secs_f64(),
            (t2 - t1).as_secs_f64(),
            t2.elapsed().as_secs_f64()
        );
    }
    Ok(scan.map(|(gas, s)| {
        let (range, dx) = (h.level_range(0), cfl::level_dx(h, 0));
        s.rates[range.clone()]
            .par_iter_mut()
            .zip(&data.states()[range.clone()])
            .enumerate()
            .for_each(|(n, (acc, st))| {
                for k in st.new.interior().lo.z..=st.new.interior().hi.z {
                    acc.plane(&st.new, range.start + n, k, dx, gas);
                }
            });
        cfl::reduce(h, &s.rates)
    }))
}

/// Zeroes the register of fine level `l` and accumulates the step's flux
/// blocks into it, fine patch by fine patch in parallel (the patches
/// `skip` marks are left out): a probe's faces are faces of its own fine
/// patch's blocks, so each block gets its coarse fluxes (probe order) and
/// then its fine ones, as in a serial loop.
fn accumulate_register<T: Real>(
    h: &Hierarchy,
    l: usize,
    reg: &mut quilt_mesh::flux_register::FluxRegister,
    layout: &PlanLayout<T>,
    fluxes: &FluxStore<T>,
    skip: Option<&[bool]>,
) -> Result<(), IntegratorError> {
    reg.reset();
    let (probes, probes_of_fine) = (&layout.probes, &layout.probes_of_fine);
    let coarse_count = std::sync::atomic::AtomicUsize::new(0);
    reg.accumulate_par(|share| {
        let f = share.fine_patch();
        if skip.is_some_and(|s| s[f]) {
            return Ok(0);
        }
        let mut count = 0;
        for n in probes_of_fine[f].clone() {
            count += add_probe(share, h, &probes[n], &fluxes.probes[n])
                .map_err(|e| quilt_mesh::MeshError::invalid("probe fluxes", e.to_string()))?;
        }
        coarse_count.fetch_add(count, std::sync::atomic::Ordering::Relaxed);
        share.add_fine_patch_block(&fluxes.fine[f], 1.0)
    })
    .map_err(IntegratorError::mesh(format!("fluxes of level {l}")))?;
    let count = coarse_count.into_inner();
    if skip.is_none() && count != reg.num_faces() {
        return Err(IntegratorError::Internal(format!(
            "level {l}: coarse fluxes reached {count} of the register's {} faces",
            reg.num_faces()
        )));
    }
    Ok(())
}

/// Restricts level `l`'s new state onto level `l − 1` (over ranks only
/// the fine patches `owned` marks), scanning level `l` for the CFL time
/// step with `scan`.
fn restrict_level<T: Real>(
    h: &Hierarchy,
    l: usize,
    data: &mut HierarchyData<T>,
    owned: Option<&[bool]>,
    scan: Option<&mut (&dyn Thermo, &mut RateScratch<T>)>,
) -> Result<(), IntegratorError> {
    if let Some((gas, s)) = scan {
        let (range, dx) = (h.level_range(l), cfl::level_dx(h, l));
        // Patches the backend restricted and scanned as it solved
        // them: their means are in the scratch, their rates here. A
        // bad one is scanned again to name its cell.
        let given = (s.given_level == Some(l)).then(|| {
            s.marks.clear();
            for (n, g) in s.given.iter().enumerate() {
                let rate = match *g {
                    BoxRate::Max(r) => r,
                    BoxRate::Unset | BoxRate::Bad => {
                        s.marks.push(false);
                        continue;
                    }
                };
                s.rates[range.start + n] = cfl::PatchRate::of_max(rate);
                s.marks.push(true);
            }
            &s.marks[..]
        });
        let gas = *gas;
        restrict_level_scanned(
            h,
            data,
            l,
            TimeLevel::New,
            &mut s.restrict,
            &mut s.rates[range.clone()],
            given,
            |n, fine, k, acc: &mut cfl::PatchRate| acc.plane(fine, range.start + n, k, dx, gas),
        )
    } else {
        restrict_level_where(h, data, l, TimeLevel::New, owned)
    }
    .map_err(IntegratorError::mesh(format!("restricting level {l}")))
}

/// Lays out, for a backend that fills them ([`SolveBackend::fills_restricted`],
/// `wanted`), the restriction outputs of the finest level's patches: their
/// parts of the restriction scratch and their rates, by hierarchy index
/// (`None` for the other levels, and for a patch whose interior is not
/// whole coarse cells). Empty when not wanted or with one level.
fn restricted_outputs<'s, T: Real>(
    h: &Hierarchy,
    ncomp: usize,
    wanted: bool,
    s: &'s mut RateScratch<T>,
) -> Result<Vec<Option<Restricted<'s, T>>>, IntegratorError> {
    s.given_level = None;
    s.given.clear();
    let levels = h.num_levels();
    if !wanted || levels < 2 {
        return Ok(Vec::new());
    }
    let l = levels - 1;
    let ratio = h
        .level_geometry(l)
        .map(|g| g.ratio)
        .ok_or_else(|| IntegratorError::Internal(format!("level {l} has no geometry")))?;
    s.restrict
        .lay_out(h, l, ncomp)
        .map_err(IntegratorError::mesh("restriction scratch"))?;
    let range = h.level_range(l);
    s.given.resize(range.len(), BoxRate::Unset);
    s.given_level = Some(l);
    let mut out: Vec<Option<Restricted<'s, T>>> = (0..h.num_patches()).map(|_| None).collect();
    let parts = s.restrict.parts_mut().into_iter().zip(s.given.iter_mut());
    for (n, (means, rate)) in parts.enumerate() {
        let b = h.patches()[range.start + n].interior();
        if quilt_mesh::restrict::covered_coarse_cells(&b, ratio).refine(ratio) == b {
            out[range.start + n] = Some(Restricted {
                ratio: ratio as u32,
                means,
                rate,
            });
        }
    }
    Ok(out)
}

/// Hands a probe's six faces to the register as the coarse fluxes of the
/// coarse patches across each face (periodic images included). Returns the
/// register faces accumulated.
fn add_probe<T: Real>(
    reg: &mut quilt_mesh::flux_register::FineShare<'_>,
    h: &Hierarchy,
    q: &Probe,
    block: &[T],
) -> Result<usize, IntegratorError> {
    let level = h.patches()[q.coarse].level();
    let shifts = h
        .level_geometry(level)
        .map_or_else(|| vec![iv(0, 0, 0)], |g| g.periodic_shifts());
    let n = q.interior.size();
    let ncomp = reg.ncomp();
    let area = [n.y * n.z, n.x * n.z, n.x * n.y].map(|a| a as usize * ncomp);
    let mut at = 0;
    let mut count = 0;
    for (axis, &len) in area.iter().enumerate() {
        for side in Side::BOTH {
            let vals = block
                .get(at..at + len)
                .ok_or_else(|| IntegratorError::Internal("probe flux block too short".into()))?;
            at += len;
            let faces = q.interior.boundary_faces(axis, side);
            let outside = q.interior.adjacent(axis, side, 1);
            for s in &shifts {
                for c in h.patches_intersecting(level, &outside.shift(s)) {
                    let ff = FaceFluxes::new(vals, faces.shift(s), ncomp)
                        .map_err(IntegratorError::mesh("probe fluxes"))?;
                    count += reg
                        .add_coarse(c, axis, &ff, 1.0)
                        .map_err(IntegratorError::mesh("coarse fluxes"))?;
                }
            }
        }
    }
    Ok(count)
}
