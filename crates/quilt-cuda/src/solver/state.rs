//! Device and pinned buffers of one layout, built when a solver first sees
//! the layout and kept while batches of that layout follow.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{
    CudaContext, CudaEvent, CudaFunction, CudaModule, CudaStream, LaunchConfig, PushKernelArg, sys,
};
use quilt_sweep::layout::LARGE_LAYOUT;
use quilt_sweep::{BatchLayout, PatchDesc, Scheme, SweepOrder};
use rayon::prelude::*;

use crate::buffer::{DeviceBuffer, PinnedBuffer};
use crate::error::{CudaError, DriverContext};
use crate::params::{
    CONST_DESCS, ColItem, MAX_PASSES, PassInfo, RESULT_WORDS, STEP_WORDS, ScanItem, TableArgs,
};
use crate::plan::{
    Chunking, HostPlan, HostTable, PassGeom, PassSpec, TableKind, TablePtrs, item_count,
    pass_infos, step_passes,
};
use crate::real::GpuReal;
use crate::solver::spare::SpareBuffers;

/// Error slots per chunk in the results (the rest of [`RESULT_WORDS`] are
/// the two floor counters).
pub(crate) const ERROR_SLOTS: usize = RESULT_WORDS - 2;

/// The passes of one sweep order and their device table.
pub(crate) struct StepPlan {
    pub passes: Vec<PassSpec>,
    pub d_passes: DeviceBuffer<PassInfo>,
}

/// Timing events of one chunk.
pub(crate) struct ChunkEvents {
    pub up0: CudaEvent,
    pub k0: CudaEvent,
    pub scanned: CudaEvent,
    pub k1: CudaEvent,
    pub done: CudaEvent,
}

/// The small device and page-locked buffers and the events of a layout
/// state the solver gave up, refitted for a new layout by
/// [`LayoutState::tables`]: allocating them (each page-locked buffer pins
/// memory, each free synchronises the device and takes the driver's locks)
/// costs more than building the layout's tables.
pub(crate) struct Shell<T> {
    d_descs: Option<DeviceBuffer<PatchDesc>>,
    d_order: Option<DeviceBuffer<u32>>,
    d_scan: Option<DeviceBuffer<ScanItem>>,
    tables: Vec<(DeviceBuffer<ColItem>, DeviceBuffer<u32>)>,
    passes: Vec<DeviceBuffer<PassInfo>>,
    d_step: Option<DeviceBuffer<T>>,
    h_step: Option<PinnedBuffer<T>>,
    d_rates: Option<DeviceBuffer<u64>>,
    h_rates: Option<PinnedBuffer<u64>>,
    d_bad: Option<DeviceBuffer<u32>>,
    h_bad: Option<PinnedBuffer<u32>>,
    d_counters: Option<DeviceBuffer<u64>>,
    h_counters: Option<PinnedBuffer<u64>>,
    d_errors: Option<DeviceBuffer<u64>>,
    h_errors: Option<PinnedBuffer<u64>>,
    d_barrier: Option<DeviceBuffer<u32>>,
    d_queue: Option<DeviceBuffer<u32>>,
    timing: Vec<CudaEvent>,
    events: Vec<ChunkEvents>,
}

impl<T> Shell<T> {
    /// A shell with nothing to reuse.
    fn empty() -> Self {
        Self {
            d_descs: None,
            d_order: None,
            d_scan: None,
            tables: Vec::new(),
            passes: Vec::new(),
            d_step: None,
            h_step: None,
            d_rates: None,
            h_rates: None,
            d_bad: None,
            h_bad: None,
            d_counters: None,
            h_counters: None,
            d_errors: None,
            h_errors: None,
            d_barrier: None,
            d_queue: None,
            timing: Vec::new(),
            events: Vec::new(),
        }
    }
}

impl<T> From<LayoutState<T>> for Shell<T> {
    /// The small buffers and events of `st` (its large arrays, if it still
    /// has them, are dropped).
    fn from(st: LayoutState<T>) -> Self {
        let LayoutState {
            d_descs,
            d_order,
            d_scan,
            _tables: tables,
            steps,
            d_step,
            h_step,
            d_rates,
            h_rates,
            d_bad,
            h_bad,
            d_counters,
            h_counters,
            d_errors,
            h_errors,
            d_barrier,
            d_queue,
            start,
            ready,
            sweeps,
            end,
            events,
            ..
        } = st;
        Self {
            d_descs: Some(d_descs),
            d_order: Some(d_order),
            d_scan: Some(d_scan),
            tables,
            passes: steps.into_values().map(|p| p.d_passes).collect(),
            d_step: Some(d_step),
            h_step: Some(h_step),
            d_rates: Some(d_rates),
            h_rates: Some(h_rates),
            d_bad: Some(d_bad),
            h_bad: Some(h_bad),
            d_counters: Some(d_counters),
            h_counters: Some(h_counters),
            d_errors: Some(d_errors),
            h_errors: Some(h_errors),
            d_barrier: Some(d_barrier),
            d_queue: Some(d_queue),
            timing: vec![start, ready, sweeps, end],
            events,
        }
    }
}

/// Room allocated above a new small buffer's need (in quarters), so that
/// the next layouts, a few patches larger, can reuse it.
const SHELL_ROOM_QUARTERS: usize = 5;

/// `old` holding `len` values if it is large enough, else a new buffer
/// with room.
fn device<U: Copy>(
    ctx: &Arc<CudaContext>,
    old: Option<DeviceBuffer<U>>,
    len: usize,
) -> Result<DeviceBuffer<U>, CudaError> {
    match old.map(|b| b.reuse(len)) {
        Some(Ok(b)) => Ok(b),
        _ => DeviceBuffer::with_room(ctx, len, (len * SHELL_ROOM_QUARTERS).div_ceil(4)),
    }
}

/// [`device`] for page-locked memory; the values are zeroed either way.
fn pinned<U: bytemuck::Pod>(
    ctx: &Arc<CudaContext>,
    old: Option<PinnedBuffer<U>>,
    len: usize,
) -> Result<PinnedBuffer<U>, CudaError> {
    if let Some(mut b) = old.and_then(|b| b.reuse(len)) {
        b.as_mut_slice().fill(U::zeroed());
        return Ok(b);
    }
    let cap = (len * SHELL_ROOM_QUARTERS).div_ceil(4).max(len);
    PinnedBuffer::new(ctx, cap)?
        .reuse(len)
        .ok_or_else(|| CudaError::Config("a new page-locked buffer is too small".into()))
}

fn chunk_events(ctx: &Arc<CudaContext>) -> Result<ChunkEvents, CudaError> {
    Ok(ChunkEvents {
        up0: timing_event(ctx)?,
        k0: timing_event(ctx)?,
        scanned: timing_event(ctx)?,
        k1: timing_event(ctx)?,
        done: timing_event(ctx)?,
    })
}

pub(crate) struct LayoutState<T> {
    pub plan: HostPlan,
    pub use_const: bool,
    pub d_descs: DeviceBuffer<PatchDesc>,
    pub d_order: DeviceBuffer<u32>,
    /// The input scan's items, and the first item of each patch position.
    pub d_scan: DeviceBuffer<ScanItem>,
    pub scan_start: Vec<u32>,
    /// Uploaded tables, kept alive for the pointers in `steps`.
    _tables: Vec<(DeviceBuffer<ColItem>, DeviceBuffer<u32>)>,
    /// Host copy of every table's `pstart`, for item counts per chunk.
    pub pstart: HashMap<(crate::plan::PassGeom, TableKind), Vec<u32>>,
    pub steps: HashMap<SweepOrder, StepPlan>,
    /// Values of the state and flux arrays, and whether the scheme needs
    /// a stage and an accumulator array too.
    data_len: usize,
    flux_len: usize,
    staged_arrays: bool,
    /// The large arrays: empty until [`LayoutState::attach`].
    pub d_data: DeviceBuffer<T>,
    pub d_flux: DeviceBuffer<T>,
    pub d_stage: Option<DeviceBuffer<T>>,
    pub d_acc: Option<DeviceBuffer<T>>,
    pub d_step: DeviceBuffer<T>,
    pub h_step: PinnedBuffer<T>,
    pub d_rates: DeviceBuffer<u64>,
    pub h_rates: PinnedBuffer<u64>,
    pub d_bad: DeviceBuffer<u32>,
    pub h_bad: PinnedBuffer<u32>,
    pub d_counters: DeviceBuffer<u64>,
    pub h_counters: PinnedBuffer<u64>,
    pub d_errors: DeviceBuffer<u64>,
    pub h_errors: PinnedBuffer<u64>,
    pub d_barrier: DeviceBuffer<u32>,
    /// Next item of each pass of each chunk ([`MAX_PASSES`] per chunk),
    /// taken by the marching kernels' warps.
    pub d_queue: DeviceBuffer<u32>,
    pub h_data: Option<PinnedBuffer<T>>,
    pub h_flux: Option<PinnedBuffer<T>>,
    pub start: CudaEvent,
    pub ready: CudaEvent,
    pub sweeps: CudaEvent,
    pub end: CudaEvent,
    pub events: Vec<ChunkEvents>,
    /// Time step per patch of the current step.
    pub dt: Vec<f64>,
}

/// Threads per block of `layout_table`.
const TABLE_BLOCK: u32 = 256;

/// Launches `layout_table` on `stream`: the items of the table `key` of
/// the layout whose descriptors and order are uploaded, from its uploaded
/// starts, into `items` (which holds the table's item count).
fn make_table(
    f: &CudaFunction,
    stream: &CudaStream,
    (geom, kind): (PassGeom, TableKind),
    descs: &DeviceBuffer<PatchDesc>,
    order: &DeviceBuffer<u32>,
    pstart: &DeviceBuffer<u32>,
    items: &DeviceBuffer<ColItem>,
) -> Result<(), CudaError> {
    let total = items.len();
    if total == 0 {
        return Ok(());
    }
    let args = TableArgs {
        descs: descs.at(0),
        order: order.at(0),
        pstart: pstart.at(0),
        items: items.at(0),
        n: item_count(order.len())?,
        total: item_count(total)?,
        kind: match kind {
            TableKind::Columns => 0,
            TableKind::Rows => 1,
            TableKind::Flat => 2,
        },
        axis: geom.axis as u32,
        read_halo: geom.read_halo,
        t_halo: geom.t_halo,
    };
    let cfg = LaunchConfig {
        grid_dim: (args.total.div_ceil(TABLE_BLOCK), 1, 1),
        block_dim: (TABLE_BLOCK, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut l = stream.launch_builder(f);
    l.arg(&args);
    // SAFETY: `args` matches `layout_table`'s parameter; the kernel reads
    // `order.len()` positions, their descriptors and `n + 1` starts, and
    // writes `total` items, all within the buffers.
    unsafe { l.launch(cfg) }.call("cuLaunchKernel(layout_table)")?;
    Ok(())
}

/// An event that records time (the default flags).
pub(super) fn timing_event(ctx: &Arc<CudaContext>) -> Result<CudaEvent, CudaError> {
    ctx.new_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))
        .call("cuEventCreate")
}

/// Copies `descs` into the module's `c_descs` constant bank on `stream`.
fn upload_const_descs(
    module: &Arc<CudaModule>,
    stream: &Arc<CudaStream>,
    descs: &[PatchDesc],
) -> Result<(), CudaError> {
    if descs.is_empty() {
        return Ok(());
    }
    let mut sym = module
        .get_global("c_descs", stream)
        .call("cuModuleGetGlobal")?;
    let bytes: &[u8] = bytemuck::cast_slice(descs);
    let mut view = sym
        .try_slice_mut(0..bytes.len())
        .ok_or_else(|| CudaError::Config("c_descs is smaller than the descriptor table".into()))?;
    stream
        .memcpy_htod(bytes, &mut view)
        .call("cuMemcpyHtoDAsync")
}

impl<T: GpuReal> LayoutState<T> {
    /// The whole state of `layout`: [`LayoutState::tables`], then
    /// [`LayoutState::attach`].
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: &Arc<CudaContext>,
        module: &Arc<CudaModule>,
        stream: &Arc<CudaStream>,
        layout: &BatchLayout,
        scheme: &Scheme,
        chunking: Chunking,
        kinds: [TableKind; 3],
        const_descs: bool,
        table_kernel: Option<&CudaFunction>,
        spare: &mut SpareBuffers<T>,
    ) -> Result<Self, CudaError> {
        let mut st = Self::tables(
            ctx,
            stream,
            layout,
            scheme,
            chunking,
            kinds,
            const_descs,
            table_kernel,
            None,
        )?;
        st.attach(ctx, module, stream, spare)?;
        Ok(st)
    }

    /// Everything of `layout`'s state but its large arrays and the
    /// module's constant descriptors: the tables uploaded on `stream`
    /// (synchronised before returning), the small device and page-locked
    /// buffers (refitted from `shell` where they are large enough) and the
    /// events. Touches nothing a solve uses, so it may be built on any
    /// thread while the solver runs another batch.
    #[allow(clippy::too_many_arguments)]
    pub fn tables(
        ctx: &Arc<CudaContext>,
        stream: &Arc<CudaStream>,
        layout: &BatchLayout,
        scheme: &Scheme,
        chunking: Chunking,
        kinds: [TableKind; 3],
        const_descs: bool,
        table_kernel: Option<&CudaFunction>,
        shell: Option<Shell<T>>,
    ) -> Result<Self, CudaError> {
        ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let t0 = std::time::Instant::now();
        let mut shell = shell.unwrap_or_else(Shell::empty);
        let plan = HostPlan::new(layout, chunking)?;
        let t_plan = t0.elapsed().as_secs_f64();
        let n = plan.descs.len();
        // The passes of both sweep orders and their distinct tables, in
        // the order of first use.
        let orders = [SweepOrder::Xyz, SweepOrder::Zyx].map(|o| (o, step_passes(scheme, o, kinds)));
        let mut keys = Vec::new();
        for p in orders.iter().flat_map(|(_, passes)| passes) {
            if !keys.contains(&(p.geom, p.kind)) {
                keys.push((p.geom, p.kind));
            }
        }
        // A resident hierarchy's layout has tables of millions of columns:
        // with the table kernel the host makes only their starts, side by
        // side, and the device the items (tens of megabytes neither built
        // on the host nor copied over the bus); without it the tables are
        // made side by side, then uploaded. A batch's are small, and are
        // made on the one thread that stages it (a thread of the
        // preparing pool, which should not wait on work it might steal).
        let on_device = n >= LARGE_LAYOUT && table_kernel.is_some();
        let table = |(geom, kind): &(PassGeom, TableKind)| {
            if on_device {
                plan.table_starts(geom, *kind).map(|pstart| HostTable {
                    items: Vec::new(),
                    pstart,
                })
            } else {
                plan.table(geom, *kind)
            }
        };
        let (scan, built) = if n >= LARGE_LAYOUT {
            rayon::join(
                || plan.scan_table(),
                || keys.par_iter().map(table).collect::<Result<Vec<_>, _>>(),
            )
        } else {
            (plan.scan_table(), keys.iter().map(table).collect())
        };
        let built = built?;
        let t_built = t0.elapsed().as_secs_f64();
        let table_bytes: usize = built
            .iter()
            .map(|t| 8 * t.items.len() + 4 * t.pstart.len())
            .sum();
        let table_items: usize = built.iter().map(|t| t.total()).sum();
        let d_descs = device(ctx, shell.d_descs.take(), n)?;
        d_descs.upload(0, &plan.descs, stream)?;
        let d_order = device(ctx, shell.d_order.take(), n)?;
        d_order.upload(0, &plan.order, stream)?;
        let d_scan = device(ctx, shell.d_scan.take(), scan.items.len())?;
        d_scan.upload(0, &scan.items, stream)?;
        let scan_start = scan.pstart;
        let use_const = const_descs && n <= CONST_DESCS;

        // Tables of every pass of both sweep orders.
        let mut tables = Vec::new();
        let mut old_tables = std::mem::take(&mut shell.tables).into_iter();
        let mut old_passes = std::mem::take(&mut shell.passes).into_iter();
        let mut ptrs: TablePtrs = HashMap::new();
        let mut pstart = HashMap::new();
        let mut steps = HashMap::new();
        for (key, t) in keys.into_iter().zip(built) {
            let (old_items, old_pstart) = old_tables.next().unzip();
            let d_items = device(ctx, old_items, t.total())?;
            let d_pstart = device(ctx, old_pstart, t.pstart.len())?;
            d_pstart.upload(0, &t.pstart, stream)?;
            match table_kernel {
                Some(f) if on_device => {
                    make_table(f, stream, key, &d_descs, &d_order, &d_pstart, &d_items)?
                }
                _ => d_items.upload(0, &t.items, stream)?,
            }
            ptrs.insert(key, (d_items.at(0), d_pstart.at(0)));
            pstart.insert(key, t.pstart);
            tables.push((d_items, d_pstart));
        }
        for (order, passes) in orders {
            let infos = pass_infos(&passes, &ptrs);
            let d_passes = device(ctx, old_passes.next(), infos.len())?;
            d_passes.upload(0, &infos, stream)?;
            steps.insert(order, StepPlan { passes, d_passes });
        }

        let nchunks = plan.chunks.len();
        let state = Self {
            use_const,
            d_descs,
            d_order,
            d_scan,
            scan_start,
            _tables: tables,
            pstart,
            steps,
            data_len: layout.data_len(),
            flux_len: layout.flux_len(),
            staged_arrays: matches!(scheme, Scheme::Tvd { .. }),
            d_data: DeviceBuffer::empty(ctx),
            d_flux: DeviceBuffer::empty(ctx),
            d_stage: None,
            d_acc: None,
            d_step: device(ctx, shell.d_step.take(), STEP_WORDS * n)?,
            h_step: pinned(ctx, shell.h_step.take(), STEP_WORDS * n)?,
            d_rates: device(ctx, shell.d_rates.take(), n)?,
            h_rates: pinned(ctx, shell.h_rates.take(), n)?,
            d_bad: device(ctx, shell.d_bad.take(), n)?,
            h_bad: pinned(ctx, shell.h_bad.take(), n)?,
            d_counters: device(ctx, shell.d_counters.take(), 2 * nchunks)?,
            h_counters: pinned(ctx, shell.h_counters.take(), 2 * nchunks)?,
            d_errors: device(ctx, shell.d_errors.take(), ERROR_SLOTS * nchunks)?,
            h_errors: pinned(ctx, shell.h_errors.take(), ERROR_SLOTS * nchunks)?,
            d_barrier: device(ctx, shell.d_barrier.take(), 1)?,
            d_queue: device(ctx, shell.d_queue.take(), MAX_PASSES * nchunks)?,
            h_data: None,
            h_flux: None,
            start: shell.timing.pop().map_or_else(|| timing_event(ctx), Ok)?,
            ready: shell.timing.pop().map_or_else(|| timing_event(ctx), Ok)?,
            sweeps: shell.timing.pop().map_or_else(|| timing_event(ctx), Ok)?,
            end: shell.timing.pop().map_or_else(|| timing_event(ctx), Ok)?,
            events: (0..nchunks)
                .map(|_| shell.events.pop().map_or_else(|| chunk_events(ctx), Ok))
                .collect::<Result<_, CudaError>>()?,
            dt: vec![0.0; n],
            plan,
        };
        stream.synchronize().call("cuStreamSynchronize")?;
        log::debug!(
            "layout on device: {} patches, {} bins, {} chunks, descriptors in {} memory; plan {t_plan:.4} s, tables of {table_items} items {:.4} s ({}), {:.1} MB uploaded {:.4} s",
            n,
            layout.nbins(),
            nchunks,
            if use_const { "constant" } else { "global" },
            t_built - t_plan,
            if on_device {
                "starts on the host, items on the device"
            } else {
                "on the host"
            },
            table_bytes as f64 / 1e6,
            t0.elapsed().as_secs_f64() - t_built
        );
        Ok(state)
    }

    /// Gives the state its large arrays (state, fluxes, and the TVD
    /// stage and accumulator) from `spare` and makes it the module's
    /// current one ([`LayoutState::bind`]): the solver's part of a new
    /// state.
    pub fn attach(
        &mut self,
        ctx: &Arc<CudaContext>,
        module: &Arc<CudaModule>,
        stream: &Arc<CudaStream>,
        spare: &mut SpareBuffers<T>,
    ) -> Result<(), CudaError> {
        if self.d_data.capacity() == 0 {
            self.d_data = spare.take(ctx, self.data_len)?;
            self.d_flux = spare.take(ctx, self.flux_len)?;
            if self.staged_arrays {
                self.d_stage = Some(spare.take(ctx, self.data_len)?);
                self.d_acc = Some(spare.take(ctx, self.data_len)?);
            }
        }
        self.bind(module, stream)
    }

    /// Gives the large device arrays to `spare` for later layouts and
    /// returns the rest, to be dropped (its small buffers and events are
    /// freed then).
    pub fn recycle(mut self, spare: &mut SpareBuffers<T>) -> Self {
        let ctx = self.d_data.context().clone();
        for b in [
            std::mem::replace(&mut self.d_data, DeviceBuffer::empty(&ctx)),
            std::mem::replace(&mut self.d_flux, DeviceBuffer::empty(&ctx)),
        ]
        .into_iter()
        .chain(self.d_stage.take())
        .chain(self.d_acc.take())
        {
            if b.capacity() > 0 {
                spare.give(b);
            }
        }
        self
    }

    /// [`LayoutState::recycle`] of every large array but the state, which
    /// is returned (a regrid on the device reads it while the new layout
    /// is set up).
    pub fn recycle_keeping_data(self, spare: &mut SpareBuffers<T>) -> DeviceBuffer<T> {
        spare.give(self.d_flux);
        if let Some(b) = self.d_stage {
            spare.give(b);
        }
        if let Some(b) = self.d_acc {
            spare.give(b);
        }
        self.d_data
    }

    /// Hands over the pinned staging buffers (to the state of the next
    /// layout).
    pub fn take_staging(&mut self) -> (Option<PinnedBuffer<T>>, Option<PinnedBuffer<T>>) {
        (self.h_data.take(), self.h_flux.take())
    }

    /// Adopts staging buffers of a previous layout where they are large enough.
    pub fn adopt_staging(&mut self, old: (Option<PinnedBuffer<T>>, Option<PinnedBuffer<T>>)) {
        self.h_data = old.0.and_then(|b| b.reuse(self.d_data.len()));
        self.h_flux = old.1.and_then(|b| b.reuse(self.d_flux.len()));
    }

    /// Allocates the pinned staging of state and fluxes (first
    /// [`CudaSolver::advance`](super::CudaSolver::advance) only).
    pub fn ensure_staging(&mut self, ctx: &Arc<CudaContext>) -> Result<(), CudaError> {
        if self.h_data.is_none() {
            self.h_data = Some(PinnedBuffer::new(ctx, self.d_data.len())?);
        }
        if self.h_flux.is_none() {
            self.h_flux = Some(PinnedBuffer::new(ctx, self.d_flux.len())?);
        }
        Ok(())
    }

    /// Makes this state the module's current one again: the constant
    /// bank holds the descriptors of one layout at a time.
    pub fn bind(
        &self,
        module: &Arc<CudaModule>,
        stream: &Arc<CudaStream>,
    ) -> Result<(), CudaError> {
        if self.use_const {
            upload_const_descs(module, stream, &self.plan.descs)?;
            stream.synchronize().call("cuStreamSynchronize")?;
        }
        Ok(())
    }

    /// Device memory held for the state arrays (the tables are small).
    pub fn device_bytes(&self) -> usize {
        let n = self.d_data.len()
            * (1 + usize::from(self.d_stage.is_some()) + usize::from(self.d_acc.is_some()))
            + self.d_flux.len();
        n * std::mem::size_of::<T>()
    }

    /// Items of table `(geom, kind)` for patch positions `[q0, q1)`.
    pub fn items(&self, p: &PassSpec, q0: u32, q1: u32) -> u64 {
        let ps = &self.pstart[&(p.geom, p.kind)];
        u64::from(ps[q1 as usize] - ps[q0 as usize])
    }
}
