//! [`CudaSolver`]: one step of a [`Batch`] on the GPU, mirroring
//! [`quilt_sweep::Solver::advance`].
//!
//! A step runs, per chunk of bins and on one of several streams: copy of
//! the chunk from the batch into pinned memory and to the device, the input
//! scan (bad states, fastest signal for the Courant check), the sweeps of
//! the chosen [`Variant`], and the copies back. The host then checks the
//! scan and the sweep error slots of every chunk and, if the step is valid,
//! copies the new state and the boundary fluxes into the batch; otherwise
//! the batch is left as it was and the error is the one the CPU solver
//! reports (input errors are reproduced on the CPU from the untouched
//! batch).

mod external;
mod hierarchy;
mod kept;
mod kernels;
mod phases;
mod report;
mod run;
mod spare;
mod stager;
mod state;

use crate::CudaEos;
use quilt_sweep::physics::IdealGas;
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaModule, CudaStream};
use quilt_sweep::physics::Gas;
use quilt_sweep::{Batch, BoxPart, Scheme, Solver, StepReport, SweepError, SweepOrder};

use crate::device::{self, Device};
use crate::error::{CudaError, DriverContext};
use crate::plan::TableKind;
use crate::probe::DeviceInfo;
use crate::real::GpuReal;
use crate::source::KernelFile;

pub use external::ExternalBox;
pub use hierarchy::{ItemStager, StagedItems};
pub(crate) use kernels::BLOCK;
pub use kernels::KernelInfo;
pub use stager::{LayoutStager, StagedLayout};

use kernels::Kernels;
use run::DtSpec;
use state::LayoutState;

/// How the kernels are organised (the three bars of the paper's Figure 10,
/// and one step between the last two).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Variant {
    /// The paper's default scheme: batches of `n_fixed` patches (in the
    /// layout the caller built, normally one patch per bin) on rotating
    /// streams, one thread block of 2 x 64 threads per patch running every
    /// pass of the step with block barriers between phases.
    Default,
    /// Packed bins (paper sec. 3.1): one launch per pass in which all thread
    /// blocks stride over the columns of every bin, two columns per block,
    /// block barriers.
    Packed,
    /// Packed bins with a warp per column (two cells per lane, warp barriers
    /// only) and descriptors in constant memory; y and z columns are read
    /// with a stride, as in the two variants above.
    PackedWarp,
    /// [`Variant::PackedWarp`] for x sweeps; y and z sweeps by warps of 32
    /// neighbouring columns, one thread marching each column, so that every
    /// access is coalesced (paper sec. 3.4); the default.
    PackedOpt,
    /// Every sweep marched (x sweeps too: each thread reads its own row,
    /// neighbouring lanes neighbouring rows, and the L1 cache serves the
    /// rest of each sector).
    PackedMarch,
}

impl Variant {
    /// Every variant.
    pub const ALL: [Variant; 4] = [
        Self::Default,
        Self::Packed,
        Self::PackedWarp,
        Self::PackedOpt,
    ];

    /// Short name for tables and logs.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Default => "default",
            Self::Packed => "packed",
            Self::PackedWarp => "packed+warp",
            Self::PackedOpt => "packed+kopt",
            Self::PackedMarch => "packed+march",
        }
    }

    fn uses_constant_descriptors(self) -> bool {
        matches!(self, Self::PackedWarp | Self::PackedOpt | Self::PackedMarch)
    }

    /// The work-list kind of the passes along each axis.
    fn table_kinds(self) -> [TableKind; 3] {
        use TableKind::{Columns, Flat, Rows};
        match self {
            Self::Default | Self::Packed => [Columns; 3],
            Self::PackedWarp => [Rows; 3],
            Self::PackedOpt => [Rows, Flat, Flat],
            Self::PackedMarch => [Flat; 3],
        }
    }
}

/// Configuration of a [`CudaSolver`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CudaConfig {
    /// Kernel organisation.
    pub variant: Variant,
    /// [`Variant::PackedOpt`] and [`Variant::PackedMarch`] only: every pass
    /// of a step in one cooperative launch with grid barriers, instead of one
    /// launch per pass.
    pub fused: bool,
    /// CUDA streams the chunks rotate over (the paper's default uses 4).
    pub streams: usize,
    /// [`Variant::Default`]: patches per chunk (`n_fixed`); `None` takes
    /// `streams x multiprocessors`, the paper's choice.
    pub n_fixed: Option<usize>,
    /// Packed variants: chunks of bins per batch, pipelined over the streams
    /// (copies of one chunk overlap the kernels of another).
    pub chunks: usize,
    /// Let NVRTC contract multiply-adds into FMAs. Off (the default)
    /// reproduces the CPU reference bit for bit.
    pub fma: bool,
    /// f32 only: reciprocals, divisions and square roots by the hardware
    /// approximations (CUDA's fast math: about 1-2 ulp, and a reciprocal
    /// flushes a denormal argument or result to zero) instead of the IEEE
    /// operations, whose branches to a slow path split every limiter and
    /// state update. Off (the default) reproduces the CPU bit for bit; on,
    /// results stay within the f32 tolerance of the CPU for RTVD and TVD
    /// (GPU tests; WAF measured slightly above it). The input scan then
    /// computes its rates in f32 too, and the Courant check allows 1e-5
    /// for their rounding. Use with [`fma`](Self::fma). No effect in f64.
    pub fast_f32: bool,
    /// Device ordinal.
    pub device: usize,
    /// Resident blocks of 128 threads per multiprocessor asked of ptxas for
    /// the marching and fused kernels (`__launch_bounds__`; fewer blocks,
    /// more registers per thread). `None`: 3 in f32, 2 in f64. A tuning
    /// knob: each value compiles its own image.
    pub march_blocks: Option<u32>,
    /// Passive scalars of the batches (components after the five Euler
    /// ones, at most [`MAX_SCALARS`]): the component count is compiled into
    /// the kernels, so a solver takes batches of `5 + scalars` components
    /// only. Each pass then also runs the scheme's scalar kernel.
    pub scalars: u32,
}

/// The most passive scalars the kernels carry (their error keys hold 16
/// components).
pub const MAX_SCALARS: u32 = 11;

impl Default for CudaConfig {
    fn default() -> Self {
        Self {
            variant: Variant::PackedOpt,
            fused: false,
            streams: 4,
            n_fixed: None,
            chunks: 4,
            fma: false,
            fast_f32: false,
            device: 0,
            march_blocks: None,
            scalars: 0,
        }
    }
}

impl CudaConfig {
    /// Components per cell of the batches this configuration's kernels
    /// take: the five Euler ones and [`CudaConfig::scalars`].
    pub fn components(&self) -> u32 {
        quilt_sweep::physics::NCOMP as u32 + self.scalars
    }

    /// The default configuration with another variant.
    pub fn variant(variant: Variant) -> Self {
        Self {
            variant,
            ..Self::default()
        }
    }

    /// Whether [`fast_f32`](Self::fast_f32) changes the kernels of a
    /// solver in precision `T` (it has no effect in f64).
    pub fn fast_f32_applies<T: GpuReal>(&self) -> bool {
        self.fast_f32 && T::NAME == "f32"
    }

    fn validate(&self) -> Result<(), CudaError> {
        if self.streams == 0 || self.streams > 64 {
            return Err(CudaError::Config(format!(
                "streams = {} must lie in 1..=64",
                self.streams
            )));
        }
        if self.chunks == 0 {
            return Err(CudaError::Config("chunks must be at least 1".into()));
        }
        if self.march_blocks.is_some_and(|b| !(1..=16).contains(&b)) {
            return Err(CudaError::Config("march_blocks must lie in 1..=16".into()));
        }
        if self.scalars > MAX_SCALARS {
            return Err(CudaError::Config(format!(
                "scalars = {} exceeds the {MAX_SCALARS} passive scalars the kernels carry",
                self.scalars
            )));
        }
        if self.n_fixed == Some(0) {
            return Err(CudaError::Config("n_fixed must be at least 1".into()));
        }
        if self.fused && !matches!(self.variant, Variant::PackedOpt | Variant::PackedMarch) {
            return Err(CudaError::Config(format!(
                "fused launches exist for the {} and {} variants only, not {}",
                Variant::PackedOpt.name(),
                Variant::PackedMarch.name(),
                self.variant.name()
            )));
        }
        Ok(())
    }
}

/// Times of the last step, from CUDA events (milliseconds) and host clocks.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StepTiming {
    /// First to last GPU operation of the step.
    pub total_ms: f64,
    /// Input scan kernels (summed over chunks).
    pub scan_ms: f64,
    /// Sweep kernels (summed over chunks; chunks on different streams may
    /// overlap, so with several chunks this can exceed the wall time).
    pub sweep_ms: f64,
    /// Host-to-device copies (summed over chunks).
    pub upload_ms: f64,
    /// Device-to-host copies (summed over chunks).
    pub download_ms: f64,
    /// Host copies between the batch and pinned memory.
    pub host_ms: f64,
}

/// What the batches solved so far cost, summed over [`CudaSolver::advance`]
/// calls: where a host-staged solve's time goes and the bus rate it
/// reached.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveTotals {
    /// Batches solved (failed ones included).
    pub batches: u64,
    /// Host wall time inside `advance`, seconds.
    pub host_secs: f64,
    /// Of which building the device state of layouts not seen before
    /// (tables, descriptors, buffers), seconds; for a layout a
    /// [`LayoutStager`] built, only its large arrays and binding.
    pub state_secs: f64,
    /// Batches whose layout state a [`LayoutStager`] built.
    pub staged_layouts: u64,
    /// Host time spent queueing a batch's copies and kernels before it
    /// waits for the verdict, seconds: where it approaches
    /// [`gpu_secs`](Self::gpu_secs), the host's enqueueing, not the
    /// device, paces the solve.
    pub issue_secs: f64,
    /// Host time waiting for the device to finish a batch's uploads,
    /// scans, sweeps and stores after queueing them, seconds.
    pub wait_secs: f64,
    /// First to last GPU operation before the results' verdict (uploads,
    /// scans, sweeps; downloads too when staged), seconds.
    pub gpu_secs: f64,
    /// Host-to-device copies, summed over chunks, seconds.
    pub upload_secs: f64,
    /// Scan and sweep kernels, summed over chunks, seconds.
    pub kernel_secs: f64,
    /// Device-to-host copies of the results, seconds (host clock from the
    /// first to the last download of a batch copied straight into
    /// page-locked memory; summed over chunks otherwise).
    pub download_secs: f64,
    /// Bytes copied host to device.
    pub bytes_up: u64,
    /// Bytes copied device to host (states, fluxes and coarse means).
    pub bytes_down: u64,
    /// Patches whose coarse means and CFL rate the device computed
    /// (`quilt_sweep::Restricted`, see [`ExternalBox::restricted`]).
    pub restricted_on_device: u64,
    /// Steps of a resident hierarchy ([`CudaSolver::step_hierarchy`]).
    pub resident_steps: u64,
    /// Their device time (CUDA events on stream 0), seconds: the CFL
    /// rate, the ghost fill with the probe copies, the input scan and the
    /// sweeps (with the host's check of the scan between them), and
    /// refluxing with restriction.
    pub resident_secs: ResidentSeconds,
}

/// Device seconds of a resident hierarchy's steps by operation
/// ([`SolveTotals::resident_secs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ResidentSeconds {
    /// The CFL rate kernel ([`CudaSolver::hierarchy_rate`]).
    pub rate: f64,
    /// Sibling copies, interpolation, physical boundaries, probe copies.
    pub fill: f64,
    /// The input scan and the sweeps.
    pub sweeps: f64,
    /// Refluxing and restriction, finest level first.
    pub levels: f64,
}

impl ResidentSeconds {
    /// All of it.
    pub fn total(&self) -> f64 {
        self.rate + self.fill + self.sweeps + self.levels
    }

    /// The share of the fill, refluxing and restriction in the total.
    pub fn amr_share(&self) -> f64 {
        let t = self.total();
        if t > 0.0 {
            (self.fill + self.levels) / t
        } else {
            0.0
        }
    }
}

impl SolveTotals {
    /// Bytes over the bus (both directions) per second of the solves'
    /// GPU time plus their result downloads: the rate the batches reached,
    /// to hold against the measured pinned-copy bandwidth.
    pub fn bus_rate(&self) -> f64 {
        let secs = self.gpu_secs + self.download_secs;
        if secs > 0.0 {
            (self.bytes_up + self.bytes_down) as f64 / secs
        } else {
            0.0
        }
    }

    /// Host-to-device bytes per second of upload time (chunks' copies on
    /// different streams may overlap, so this is a lower bound).
    pub fn upload_rate(&self) -> f64 {
        if self.upload_secs > 0.0 {
            self.bytes_up as f64 / self.upload_secs
        } else {
            0.0
        }
    }
}

/// Layouts whose device state a [`CudaSolver`] keeps besides the current
/// one (also bounded: all solvers of a process together keep at most a
/// quarter of a device's memory, and a solver that finds the device full
/// drops its kept states before it gives up).
pub const RECENT_LAYOUTS: usize = 16;

/// The solver of one scheme and precision on one device.
///
/// Owns its streams, a module with its own constant bank, and the device
/// buffers of the layouts it saw last (built when a new layout comes, kept
/// for the next batches of that layout, so that steps over batches of
/// known layouts allocate nothing; [`RECENT_LAYOUTS`] are kept).
pub struct CudaSolver<T: GpuReal, E: CudaEos = IdealGas> {
    cpu: Solver<E>,
    config: CudaConfig,
    dev: Device,
    module: Arc<CudaModule>,
    kernels: Kernels,
    streams: Vec<Arc<CudaStream>>,
    state: Option<LayoutState<T>>,
    /// Device states of recently used layouts, most recent last: an
    /// integrator cycles through the same few batches between regrids, and
    /// rebuilding a layout's tables and buffers costs far more than its
    /// kernels.
    recent: kept::KeptStates<T>,
    /// Large device arrays of dropped layout states, for the next ones.
    spare: spare::SpareBuffers<T>,
    /// The builder of layout states on other threads, once asked for.
    stager: Option<Arc<LayoutStager<T>>>,
    /// A state the stager built for the batch being advanced.
    staged: Option<LayoutState<T>>,
    /// Threads of the host copies between a batch and pinned memory: their
    /// own pool, so that a caller preparing the next batch on its rayon
    /// pool (the integrator's pipeline) does not delay the copies.
    copies: rayon::ThreadPool,
    /// The device holds a batch uploaded by [`CudaSolver::upload`].
    resident: bool,
    /// The items of a resident hierarchy ([`CudaSolver::load_hierarchy`]).
    hierarchy: Option<hierarchy::Hierarchy>,
    /// The entry points of `kernels/amr.cu`, once compiled.
    amr: Option<hierarchy::AmrKernels>,
    /// The builder of resident hierarchies' items on other threads, once
    /// asked for.
    item_stager: Option<Arc<hierarchy::ItemStager>>,
    /// Items the stager built for the next load or regrid.
    staged_items: Option<hierarchy::Hierarchy>,
    /// Page-locked memory the items of a regrid's move are gathered into
    /// (kept for the next regrid; each move waits for its copy to pass).
    transfer_staging: Option<crate::buffer::PinnedBuffer<u8>>,
    /// The compact interiors of hierarchy loads and stores.
    hierarchy_io: Option<crate::buffer::DeviceBuffer<T>>,
    /// Host memory page-locked for this solver's context, once asked for
    /// ([`CudaSolver::page_lock`]).
    registry: OnceLock<Arc<crate::HostRegistry>>,
    /// The addresses of external boxes per descriptor, for the load and
    /// store kernels ([`CudaSolver::advance_external`]); one table for all
    /// layouts, as steps do not overlap.
    ext_table: Option<external::ExtTable>,
    /// Device copies of the external boxes' sources, one batch at a time.
    ext_staging: Option<crate::buffer::DeviceBuffer<T>>,
    /// The external boxes' new states in device memory (at the offsets of
    /// their sources' copies in `ext_staging`), each copied into its
    /// destination by one DMA copy.
    ext_out: Option<crate::buffer::DeviceBuffer<T>>,
    /// The copies of one chunk's boxes, gathered to be queued as one batch.
    box_copies: crate::copies::CopyBatch,
    /// Per descriptor of the current step: the external box its load
    /// reads (its own, or a probe's parent).
    ext_reads: Vec<Option<usize>>,
    /// Per external box of the current step: the offset of its copy in
    /// `ext_staging`, the descriptor that reads it first and its chunk.
    ext_copies: Vec<(usize, usize, usize)>,
    /// `(chunk, earlier chunk)`, sorted: the first waits for the copies
    /// the second's stream made.
    ext_waits: Vec<(u32, u32)>,
    /// The external boxes whose restriction outputs the device computes
    /// this step, and the outputs' device and host buffers (two values per
    /// descriptor: the largest rate's bits and a bad-cell flag).
    ext_restricted: Vec<usize>,
    restrict_out: Option<external::ExtTable>,
    timing: StepTiming,
    totals: SolveTotals,
}

impl<T: GpuReal, E: CudaEos> CudaSolver<T, E> {
    /// A solver for `scheme` and `gas` (validated as by
    /// [`quilt_sweep::Solver::new`]) on the configured device. Probes the
    /// driver first, compiles the scheme's kernel file on first use in the
    /// process, and creates the streams.
    pub fn new(scheme: Scheme, gas: Gas<E>, config: CudaConfig) -> Result<Self, CudaError> {
        config.validate()?;
        let cpu = Solver::new(scheme, gas).map_err(SweepError::from)?;
        let dev = device::device(config.device)?;
        let file = match scheme {
            Scheme::Rtvd { .. } => KernelFile::Rtvd,
            Scheme::Tvd { .. } => KernelFile::Tvd,
            Scheme::Waf { .. } => KernelFile::Waf,
        };
        if config.fast_f32_applies::<T>() && file == KernelFile::Waf {
            log::warn!(
                "fast_f32 with WAF: differences to the CPU measured up to 1.3e-5, above the f32 tolerance of 1e-5"
            );
        }
        let build = device::Build {
            fma: config.fma,
            fast_f32: config.fast_f32,
            march_blocks: config.march_blocks,
            scalars: config.scalars,
            eos: E::SOURCE,
        };
        let module = device::module(&dev, file, build)?;
        let kernels = Kernels::load::<T>(&module, file, &dev.info, config.scalars > 0)?;
        let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
        let copies = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("quilt-cuda-copy-{i}"))
            .build()
            .map_err(|e| CudaError::Config(format!("host copy threads: {e}")))?;
        let streams = (0..config.streams)
            .map(|_| dev.ctx.new_stream().call("cuStreamCreate"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            cpu,
            config,
            dev,
            module,
            kernels,
            streams,
            state: None,
            recent: kept::KeptStates::new(config.device),
            spare: spare::SpareBuffers::new(),
            stager: None,
            staged: None,
            copies,
            resident: false,
            hierarchy: None,
            amr: None,
            item_stager: None,
            staged_items: None,
            transfer_staging: None,
            hierarchy_io: None,
            registry: OnceLock::new(),
            ext_table: None,
            ext_staging: None,
            ext_out: None,
            box_copies: Default::default(),
            ext_reads: Vec::new(),
            ext_copies: Vec::new(),
            ext_waits: Vec::new(),
            ext_restricted: Vec::new(),
            restrict_out: None,
            timing: StepTiming::default(),
            totals: SolveTotals::default(),
        })
    }

    /// The CPU solver with the same scheme and gas (the reference).
    pub fn cpu(&self) -> &Solver<E> {
        &self.cpu
    }

    /// Large device arrays allocated so far (the rest were recycled from
    /// layouts seen before).
    pub fn device_allocations(&self) -> u64 {
        self.spare.allocations()
    }

    /// Free and total bytes of the device's memory, after the solver gave
    /// back what it keeps only for reuse: the states of recent layouts, the
    /// current one unless it holds a resident batch, and spare arrays.
    /// Waits for the solver's streams first.
    pub fn device_memory(&mut self) -> Result<(u64, u64), CudaError> {
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        for s in &self.streams {
            s.synchronize().call("cuStreamSynchronize")?;
        }
        self.recent.clear();
        if !self.resident {
            self.state = None;
        }
        if self.hierarchy.is_none() {
            self.hierarchy_io = None;
        }
        self.spare.clear();
        let (free, total) = cudarc::driver::result::mem_get_info().call("cuMemGetInfo")?;
        Ok((free as u64, total as u64))
    }

    /// An allocator of page-locked host memory in this solver's context:
    /// a batch prepared in it is copied to the device and back directly,
    /// with no staging copy on the host.
    pub fn host_alloc(&self) -> crate::PinnedAlloc {
        crate::PinnedAlloc::new(self.dev.ctx.clone())
    }

    /// The page-locking of host memory for this solver's context: one
    /// [`HostRegistry`](crate::HostRegistry) per solver, created on first
    /// use; every call returns the same one. Memory the process mapped and
    /// wrote itself (a [`quilt_mesh::locked::Mapping`]) is locked through
    /// it, and [`CudaSolver::advance_external`] reads and writes patch
    /// boxes in place only inside the ranges it holds.
    pub fn page_lock(&self) -> Arc<crate::HostRegistry> {
        self.registry
            .get_or_init(|| Arc::new(crate::HostRegistry::new(self.dev.ctx.clone())))
            .clone()
    }

    /// The configuration.
    pub fn config(&self) -> &CudaConfig {
        &self.config
    }

    /// The device.
    pub fn device(&self) -> &DeviceInfo {
        &self.dev.info
    }

    /// Registers, local memory and occupancy of the loaded kernels.
    pub fn kernel_info(&self) -> Vec<KernelInfo> {
        self.kernels.info()
    }

    /// Times of the last step.
    pub fn last_timing(&self) -> StepTiming {
        self.timing
    }

    /// Costs of every batch solved by [`CudaSolver::advance`] so far.
    pub fn totals(&self) -> SolveTotals {
        self.totals
    }

    /// Advances every patch of `batch` by `dt` with the sweeps in `order`:
    /// the same results (bit for bit with `fma` off), boundary fluxes,
    /// floor counts, Courant number and errors as
    /// [`quilt_sweep::Solver::advance`]. On an input error (bad state, time
    /// step above the CFL limit) the batch is unchanged; after a non-finite
    /// state in a sweep its interior is unspecified. A page-locked batch
    /// (from [`CudaSolver::host_alloc`]) gets back only its interiors, by a
    /// kernel writing them into it, and its fluxes: its ghost cells keep
    /// their values. Other batches get back every cell the sweeps wrote.
    pub fn advance(
        &mut self,
        batch: &mut Batch<T>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, CudaError> {
        self.timed_io(batch, DtSpec::Uniform(dt), order, None, &[])
    }

    /// A builder of this solver's layout states that runs on any thread
    /// (see [`LayoutStager`]); one per solver, created on first use.
    pub fn stager(&mut self) -> Result<Arc<LayoutStager<T>>, CudaError> {
        if let Some(s) = &self.stager {
            return Ok(s.clone());
        }
        let s = Arc::new(LayoutStager::new(
            self.dev.ctx.clone(),
            self.cpu.scheme(),
            self.chunking(),
            self.config.variant.table_kinds(),
            self.config.variant.uses_constant_descriptors(),
            self.kernels.table.clone(),
        )?);
        self.stager = Some(s.clone());
        Ok(s)
    }

    /// [`CudaSolver::advance`] with the layout's device state built ahead
    /// by this solver's [`LayoutStager`] (used if it is the batch's layout
    /// and the solver does not hold that layout's state already).
    pub fn advance_staged(
        &mut self,
        batch: &mut Batch<T>,
        staged: Option<StagedLayout<T>>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, CudaError> {
        self.staged = staged.map(|s| s.0);
        let r = self.timed_io(batch, DtSpec::Uniform(dt), order, None, &[]);
        if let Some(st) = self.staged.take() {
            self.discard(st);
        }
        r
    }

    /// Gives the next layout state this solver builds (the next
    /// [`CudaSolver::load_hierarchy`] or [`CudaSolver::regrid_hierarchy`],
    /// whose layout `staged` should be) what this solver's
    /// [`LayoutStager`] built ahead. A state of another layout is
    /// discarded there.
    pub fn offer_staged(&mut self, staged: Option<StagedLayout<T>>) {
        if let Some(old) = std::mem::replace(&mut self.staged, staged.map(|s| s.0)) {
            self.discard(old);
        }
    }

    /// As [`CudaSolver::advance`], with the time step of each patch taken
    /// from `dt_by_level[patch.level]`.
    pub fn advance_levels(
        &mut self,
        batch: &mut Batch<T>,
        dt_by_level: &[f64],
        order: SweepOrder,
    ) -> Result<StepReport, CudaError> {
        self.timed_io(batch, DtSpec::Levels(dt_by_level), order, None, &[])
    }

    /// One step with transfers ([`Self::run_io`]), counted in the totals.
    fn timed_io(
        &mut self,
        batch: &mut Batch<T>,
        dt: DtSpec<'_>,
        order: SweepOrder,
        ext: Option<&mut [ExternalBox<'_, T>]>,
        probes: &[BoxPart],
    ) -> Result<StepReport, CudaError> {
        self.resident = false;
        self.hierarchy = None;
        let t = Instant::now();
        let r = self.run_io(batch, dt, order, ext, probes);
        self.totals.batches += 1;
        self.totals.host_secs += t.elapsed().as_secs_f64();
        r
    }

    /// Copies `batch` to the device and keeps it there for
    /// [`CudaSolver::step_resident`] (benchmarks: steps without transfers;
    /// feature `bench`).
    #[cfg(feature = "bench")]
    pub fn upload(&mut self, batch: &Batch<T>) -> Result<(), CudaError> {
        self.resident = false;
        self.upload_resident(batch)?;
        self.resident = true;
        Ok(())
    }

    /// Advances the batch held on the device: the resident hierarchy's
    /// ([`CudaSolver::load_hierarchy`]) or, with the `bench` feature, one
    /// copied there by `upload`. Input errors are reported as by
    /// [`CudaSolver::advance`] and leave the device state unchanged.
    pub fn step_resident(&mut self, dt: f64, order: SweepOrder) -> Result<StepReport, CudaError> {
        if !self.resident {
            return Err(CudaError::Config(
                "step_resident needs a batch on the device (a loaded hierarchy, or upload())"
                    .into(),
            ));
        }
        self.run_resident(DtSpec::Uniform(dt), order)
    }

    /// Copies the device's batch (state and flux buffer) into `batch`, which
    /// must have the uploaded layout.
    #[cfg(feature = "bench")]
    pub fn download(&mut self, batch: &mut Batch<T>) -> Result<(), CudaError> {
        if !self.resident {
            return Err(CudaError::Config(
                "download needs a batch uploaded with upload()".into(),
            ));
        }
        self.download_resident(batch)
    }
}
