//! [`SolveBackend`]: what advances one prepared batch; the CPU backend
//! over [`quilt_sweep::Solver`], the CUDA backend over
//! [`quilt_cuda::CudaSolver`], and the deck's `run.backend` choice between
//! them.
//!
//! The integrator only ever hands a backend a complete batch (every patch's
//! interior and ghost cells filled) with a time step and a sweep order, and
//! reads back afterwards only the patches' interiors and the flux buffer
//! (ghost cells after a solve are unspecified), so a backend is free to run
//! the batch wherever it likes and to bring back no more than that. Another backend (a different
//! device, a remote solver) implements [`SolveBackend`] in its own crate
//! and is handed to [`crate::Integrator::new`] without any change here.

mod cpu;
mod cuda;
mod select;

pub use cpu::CpuBackend;
pub use cuda::CudaBackend;

/// The error of a mesh operation a resident executor ran.
pub(crate) fn mesh_failure(backend: &str, what: &str, e: quilt_mesh::MeshError) -> SolveError {
    SolveError::Device {
        backend: backend.to_string(),
        message: format!("{what}: {e}"),
        source: Some(Box::new(e)),
    }
}
pub use select::backend_for;

use std::any::Any;
use std::error::Error as StdError;
use std::fmt;

use std::sync::Arc;

pub use quilt_cuda::SolveTotals;
use quilt_mesh::flat::{FlatTag, FlatTransfer, StepItems};
use quilt_mesh::locked::PageLock;
use quilt_sweep::physics::Thermo;
use quilt_sweep::{
    Batch, BatchLayout, HostAlloc, Real, StepReport, SweepError, SweepOrder, VecAlloc,
};
pub use quilt_sweep::{BoxPart, BoxRate, Restricted};

use crate::resident::ResidentPlan;

/// Why a backend could not advance a batch.
#[derive(Debug)]
pub enum SolveError {
    /// The solver rejected the batch or found a bad state (names the patch
    /// by its descriptor id and the cell relative to its interior).
    Sweep(SweepError),
    /// A device-side failure (allocation, launch, transfer...).
    Device {
        /// The backend's name.
        backend: String,
        /// What failed.
        message: String,
        /// The underlying error, if any.
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SolveError::Sweep(e) => write!(f, "{e}"),
            SolveError::Device {
                backend, message, ..
            } => write!(f, "{backend} backend: {message}"),
        }
    }
}

impl StdError for SolveError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            SolveError::Sweep(e) => Some(e),
            SolveError::Device { source, .. } => {
                source.as_deref().map(|e| e as &(dyn StdError + 'static))
            }
        }
    }
}

impl From<SweepError> for SolveError {
    fn from(e: SweepError) -> Self {
        SolveError::Sweep(e)
    }
}

/// Advances prepared batches: the solve stage of the pipeline.
///
/// `solve` advances every patch of `batch` by `dt` with the directional
/// sweeps in `order`, writing the new interior state into the batch and the
/// time-integrated boundary fluxes into its flux buffer (see
/// [`quilt_sweep::layout`]). Results must depend only on each patch's
/// filled data, not on the batch it came in or its place in a bin: the
/// integrator's pipelined and sequential modes, and its adaptive and static
/// batchings, are bitwise identical only if that holds.
pub trait SolveBackend<T: Real>: Send {
    /// Short name for logs and summaries (`"cpu"`, `"cuda"`).
    fn name(&self) -> &str;

    /// A line describing the device (model, threads, memory).
    fn device(&self) -> String;

    /// The fluid this backend solves (its equation of state and floors):
    /// the integrator's CFL scan, tagging and state checks ask the same.
    fn thermo(&self) -> Arc<dyn Thermo>;

    /// Whether `solve` includes host–device transfers; the cost model then
    /// keeps the transfer term of the solve estimate.
    fn transfers(&self) -> bool {
        false
    }

    /// Whether the backend solves states of `ncomp` components: the Euler
    /// five and `ncomp - 5` passive scalars. `Err` says why not. The
    /// default accepts any count from five up, as the CPU schemes do.
    fn solves_components(&self, ncomp: usize) -> Result<(), String> {
        if ncomp < quilt_sweep::physics::NCOMP {
            return Err(format!(
                "{ncomp} components are fewer than the Euler equations' five"
            ));
        }
        Ok(())
    }

    /// The memory batches are prepared in: what the backend reads fastest
    /// (a GPU backend hands out page-locked memory it copies from directly).
    /// The default is plain vectors.
    fn host_alloc(&self) -> Arc<dyn HostAlloc<T>> {
        Arc::new(VecAlloc)
    }

    /// Advances one batch (see the trait docs).
    fn solve(
        &mut self,
        batch: &mut Batch<T>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError>;

    /// A builder of what the backend needs per batch layout, to run on the
    /// threads that prepare batches while the backend solves earlier ones
    /// (see [`LayoutStage`]); `None` (the default) if it needs nothing.
    fn layout_stage(&mut self) -> Option<Arc<dyn LayoutStage>> {
        None
    }

    /// [`SolveBackend::solve`] with what this backend's
    /// [`LayoutStage`] built for the batch's layout, if anything.
    fn solve_staged(
        &mut self,
        batch: &mut Batch<T>,
        staged: Option<StagedLayout>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        drop(staged);
        self.solve(batch, dt, order)
    }

    /// What page-locks host memory for this backend's device, if the
    /// backend reads and writes patch states in place (see
    /// [`SolveBackend::solve_in_place`]): the integrator then keeps its
    /// states in memory locked by it. `None` (the default) for a backend
    /// that gains nothing from that.
    fn page_lock(&self) -> Option<Arc<dyn PageLock>> {
        None
    }

    /// [`SolveBackend::solve_staged`] for a batch some of whose patches
    /// live outside its bins, in dense ghost boxes of their own (`boxes`),
    /// and some of whose flux probes are parts of those boxes (`probes`,
    /// only for a backend whose [`SolveBackend::fills_probes`] holds; the
    /// integrator has not copied them into their bins). The result is,
    /// bit for bit, that of [`load_in_place`] (every box's old state and
    /// every such probe loaded into the batch), solving the batch and
    /// copying each patch's interior into its new state
    /// ([`Batch::store_interior`]). The new states' ghost cells are
    /// unspecified: the default leaves them, a GPU backend that moves
    /// whole boxes gives them the old states' (the next prepare fills them
    /// before a step reads them). On an error the old states are
    /// unchanged, and the new states and the batch's fluxes unspecified
    /// (a step recomputes them). The bins of those patches are left
    /// unspecified. The default does exactly that; a GPU backend reads and writes
    /// states in memory its [`SolveBackend::page_lock`] locked where they
    /// are.
    fn solve_in_place(
        &mut self,
        batch: &mut Batch<T>,
        staged: Option<StagedLayout>,
        boxes: &mut [InPlaceBox<'_, T>],
        probes: &[BoxPart],
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        load_in_place(batch, boxes, probes)?;
        let report = self.solve_staged(batch, staged, dt, order)?;
        for b in boxes.iter_mut() {
            batch
                .store_interior(b.desc, b.new)
                .map_err(SweepError::from)?;
        }
        Ok(report)
    }

    /// Whether [`SolveBackend::solve_in_place`] fills the flux probes of
    /// patches solved in place from their boxes itself (a GPU backend
    /// that has the boxes on the device already copies them there, and
    /// spares the host the copies and the bus their bytes). `false` (the
    /// default): the integrator copies every probe into its bin while it
    /// prepares the batch.
    fn fills_probes(&self) -> bool {
        false
    }

    /// Whether [`SolveBackend::solve_in_place`] fills the
    /// [`InPlaceBox::restricted`] outputs it is handed (a GPU backend
    /// computes them from the new interiors while they are in device
    /// memory). `false` (the default): the integrator hands none and
    /// computes restriction and the next step's CFL rate itself.
    fn fills_restricted(&self) -> bool {
        false
    }

    /// Where the solves' time went so far, for a backend that moves
    /// batches to a device (transfers, kernels, bytes over the bus);
    /// `None` for one that solves in host memory.
    fn solve_totals(&self) -> Option<SolveTotals> {
        None
    }

    /// The backend's executor of whole resident steps, if it has one
    /// (`run.residency = "device"` needs it).
    fn resident(&mut self) -> Option<&mut dyn ResidentSolve<T>> {
        None
    }

    /// The memory of the device the backend computes on, after it gave
    /// back what it keeps only for reuse (cached layouts, spare arrays);
    /// `None` for a backend that computes in host memory.
    /// `run.residency = "auto"` decides by it.
    fn device_memory(&mut self) -> Option<DeviceMemory> {
        None
    }
}

/// Builds, for a batch layout, what a backend would otherwise build at the
/// start of the batch's solve (a GPU backend's tables and small device
/// buffers), so that the pipelined batch loop can do it on the preparing
/// threads. Called from several threads at once, while the backend solves.
pub trait LayoutStage: Send + Sync {
    /// What the backend needs for batches of `layout`.
    fn stage(&self, layout: &BatchLayout) -> Result<StagedLayout, SolveError>;
}

/// A patch of a batch solved where its states live
/// ([`SolveBackend::solve_in_place`]): both are dense ghost boxes in
/// [`Batch::load_patch`]'s order, of the descriptor's extent.
#[derive(Debug)]
pub struct InPlaceBox<'a, T> {
    /// Index of the patch's descriptor in the batch's layout.
    pub desc: usize,
    /// The old state, ghost cells filled: what the step reads.
    pub old: &'a [T],
    /// The new state: the step writes its interior.
    pub new: &'a mut [T],
    /// Where a backend whose [`SolveBackend::fills_restricted`] holds
    /// puts the new interior's coarse means and CFL rate
    /// ([`Restricted::fill_from_box`] on `new` after the step, bit for
    /// bit); `None` for a patch the integrator restricts and scans itself.
    /// Unspecified after an error.
    pub restricted: Option<Restricted<'a, T>>,
}

/// Loads every box's old state into its patch's bins
/// ([`Batch::load_patch`]) and every probe from its parent's old state
/// ([`Batch::load_patch_from`]): the batch [`SolveBackend::solve_in_place`]
/// solves, as a backend that reads the boxes where they are must
/// reproduce it.
pub fn load_in_place<T: Real>(
    batch: &mut Batch<T>,
    boxes: &[InPlaceBox<'_, T>],
    probes: &[BoxPart],
) -> Result<(), SweepError> {
    for b in boxes {
        batch.load_patch(b.desc, b.old)?;
    }
    for p in probes {
        let parent = p.parent_in(boxes)?;
        batch.load_patch_within(p.desc, parent.desc, parent.old, p.offset)?;
    }
    Ok(())
}

/// A backend's own value built on another thread, handed back to it. (The
/// mutex, never contended, lets a batch be shared between threads while it
/// carries a value that is only `Send`.)
struct Carried(std::sync::Mutex<Box<dyn Any + Send>>);

impl Carried {
    fn new<S: Any + Send>(s: S) -> Self {
        Self(std::sync::Mutex::new(Box::new(s)))
    }

    fn downcast<S: Any + Send>(self) -> Option<S> {
        let inner = self
            .0
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner.downcast::<S>().ok().map(|b| *b)
    }
}

/// What a [`LayoutStage`] built, handed back to its backend's
/// [`SolveBackend::solve_staged`] with the batch.
pub struct StagedLayout(Carried);

impl StagedLayout {
    /// Wraps a backend's own value.
    pub fn new<S: Any + Send>(s: S) -> Self {
        Self(Carried::new(s))
    }

    /// The backend's value, if it is an `S`.
    pub fn downcast<S: Any + Send>(self) -> Option<S> {
        self.0.downcast()
    }
}

/// Builds, on another thread, a backend's own form of a resident plan's
/// step items (a GPU backend's items uploaded to the device), so that the
/// host's other work on the plan hides it.
pub trait ItemStage: Send + Sync {
    /// What the backend needs for `items` over the batch of `layout`
    /// (its first `patches` descriptors the hierarchy's patches).
    fn stage(
        &self,
        layout: &BatchLayout,
        items: &StepItems,
        patches: usize,
    ) -> Result<StagedItems, SolveError>;
}

/// What an [`ItemStage`] built, handed back to its backend by
/// [`ResidentSolve::offer_items`].
pub struct StagedItems(Carried);

impl StagedItems {
    /// Wraps a backend's own value.
    pub fn new<S: Any + Send>(s: S) -> Self {
        Self(Carried::new(s))
    }

    /// The backend's value, if it is an `S`.
    pub fn downcast<S: Any + Send>(self) -> Option<S> {
        self.0.downcast()
    }
}

/// Free and total bytes of a device's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeviceMemory {
    /// Bytes free now.
    pub free: u64,
    /// Bytes in all.
    pub total: u64,
}

/// Runs whole steps of a hierarchy kept in the backend between regrids
/// (see [`crate::resident`]): the ghost fill, the probe copies, the solve,
/// refluxing and restriction of every patch, from the items of a
/// [`ResidentPlan`] and nothing else. Results must be those of the
/// host-staged step bit for bit.
pub trait ResidentSolve<T: Real> {
    /// Takes a new hierarchy's plan and its state: every patch's interior
    /// in the compact order of the plan's interior items.
    fn load(&mut self, plan: &ResidentPlan, interiors: &[T]) -> Result<(), SolveError>;

    /// The largest signal rate `max_d (|v_d| + c_s) / dx_d` over the
    /// interiors of the hierarchy's patches, computed as the host's scan
    /// does; `None` if a cell is bad (the host scan then names it).
    fn max_rate(&mut self) -> Result<Option<f64>, SolveError>;

    /// One step of `dt` with the sweeps in `order`.
    fn step(&mut self, dt: f64, order: SweepOrder) -> Result<StepReport, SolveError>;

    /// Writes the patches' interiors into `interiors` (compact, as given
    /// to `load`).
    fn store(&mut self, interiors: &mut [T]) -> Result<(), SolveError>;

    /// Fills the ghost cells of the resident state and tags its patches
    /// by `tag`'s items (built over the loaded plan's
    /// [`ResidentPlan::places`]) into `out` ([`FlatTag::run`] states what
    /// is computed).
    fn tag(&mut self, tag: &FlatTag, out: &mut [u32]) -> Result<(), SolveError>;

    /// Replaces the resident hierarchy by `plan`'s, every interior set by
    /// `transfer` from the resident state ([`FlatTransfer::run`] states
    /// what is computed). After an error the resident state may be gone:
    /// callers unload it.
    fn regrid(&mut self, plan: &ResidentPlan, transfer: &FlatTransfer) -> Result<(), SolveError>;

    /// What page-locks host memory for the backend's device, so that the
    /// compact interiors given to `load` and `store` cross the bus at its
    /// full rate; `None` (the default) for a backend in host memory.
    fn io_lock(&self) -> Option<Arc<dyn PageLock>> {
        None
    }

    /// Takes what the backend's [`LayoutStage`] built (on other threads,
    /// while the host made the plan's items and interiors) for the layout
    /// of the next [`ResidentSolve::load`] or [`ResidentSolve::regrid`].
    /// The default drops it: a backend that gets nothing, or a state of
    /// another layout, builds its own.
    fn offer_staged(&mut self, staged: Option<StagedLayout>) {
        drop(staged);
    }

    /// What builds this backend's form of a plan's step items on other
    /// threads ([`ItemStage`]); `None` (the default) when the backend
    /// takes the items as they are.
    fn item_stage(&mut self) -> Option<Arc<dyn ItemStage>> {
        None
    }

    /// Takes what the backend's [`ItemStage`] built for the plan of the
    /// next [`ResidentSolve::load`] or [`ResidentSolve::regrid`]. The
    /// default drops it; a backend given items of another plan builds its
    /// own.
    fn offer_items(&mut self, staged: Option<StagedItems>) {
        drop(staged);
    }

    /// Drops the resident state (after a regrid, or to fall back to host
    /// residency).
    fn unload(&mut self);
}

impl<T: Real, B: SolveBackend<T> + ?Sized> SolveBackend<T> for Box<B> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn device(&self) -> String {
        (**self).device()
    }

    fn thermo(&self) -> Arc<dyn Thermo> {
        (**self).thermo()
    }

    fn transfers(&self) -> bool {
        (**self).transfers()
    }

    fn solves_components(&self, ncomp: usize) -> Result<(), String> {
        (**self).solves_components(ncomp)
    }

    fn host_alloc(&self) -> Arc<dyn HostAlloc<T>> {
        (**self).host_alloc()
    }

    fn solve(
        &mut self,
        batch: &mut Batch<T>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        (**self).solve(batch, dt, order)
    }

    fn layout_stage(&mut self) -> Option<Arc<dyn LayoutStage>> {
        (**self).layout_stage()
    }

    fn solve_staged(
        &mut self,
        batch: &mut Batch<T>,
        staged: Option<StagedLayout>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        (**self).solve_staged(batch, staged, dt, order)
    }

    fn page_lock(&self) -> Option<Arc<dyn PageLock>> {
        (**self).page_lock()
    }

    fn solve_in_place(
        &mut self,
        batch: &mut Batch<T>,
        staged: Option<StagedLayout>,
        boxes: &mut [InPlaceBox<'_, T>],
        probes: &[BoxPart],
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        (**self).solve_in_place(batch, staged, boxes, probes, dt, order)
    }

    fn fills_probes(&self) -> bool {
        (**self).fills_probes()
    }

    fn fills_restricted(&self) -> bool {
        (**self).fills_restricted()
    }

    fn solve_totals(&self) -> Option<SolveTotals> {
        (**self).solve_totals()
    }

    fn resident(&mut self) -> Option<&mut dyn ResidentSolve<T>> {
        (**self).resident()
    }

    fn device_memory(&mut self) -> Option<DeviceMemory> {
        (**self).device_memory()
    }
}
