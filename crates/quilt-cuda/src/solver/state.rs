//! Device and pinned buffers of one layout, built when a solver first sees
//! the layout and kept while batches of that layout follow.

use std::collections::HashMap;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaEvent, CudaModule, CudaStream, sys};
use quilt_sweep::{BatchLayout, PatchDesc, Scheme, SweepOrder};

use crate::buffer::{DeviceBuffer, PinnedBuffer};
use crate::error::{CudaError, DriverContext};
use crate::params::{
    CONST_DESCS, ColItem, MAX_PASSES, PassInfo, RESULT_WORDS, STEP_WORDS, ScanItem,
};
use crate::plan::{Chunking, HostPlan, PassSpec, TableKind, TablePtrs, pass_infos, step_passes};
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

fn timing_event(ctx: &Arc<CudaContext>) -> Result<CudaEvent, CudaError> {
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
        spare: &mut SpareBuffers<T>,
    ) -> Result<Self, CudaError> {
        let plan = HostPlan::new(layout, chunking)?;
        let n = plan.descs.len();
        let d_descs = DeviceBuffer::new(ctx, n)?;
        d_descs.upload(0, &plan.descs, stream)?;
        let d_order = DeviceBuffer::new(ctx, n)?;
        d_order.upload(0, &plan.order, stream)?;
        let scan = plan.scan_table();
        let d_scan = DeviceBuffer::new(ctx, scan.items.len())?;
        d_scan.upload(0, &scan.items, stream)?;
        let scan_start = scan.pstart;
        let use_const = const_descs && n <= CONST_DESCS;
        if use_const {
            upload_const_descs(module, stream, &plan.descs)?;
        }

        // Tables of every pass of both sweep orders.
        let mut tables = Vec::new();
        let mut ptrs: TablePtrs = HashMap::new();
        let mut pstart = HashMap::new();
        let mut steps = HashMap::new();
        for order in [SweepOrder::Xyz, SweepOrder::Zyx] {
            let passes = step_passes(scheme, order, kinds);
            for p in &passes {
                let key = (p.geom, p.kind);
                if ptrs.contains_key(&key) {
                    continue;
                }
                let t = plan.table(&p.geom, p.kind)?;
                let d_items = DeviceBuffer::new(ctx, t.items.len())?;
                d_items.upload(0, &t.items, stream)?;
                let d_pstart = DeviceBuffer::new(ctx, t.pstart.len())?;
                d_pstart.upload(0, &t.pstart, stream)?;
                ptrs.insert(key, (d_items.at(0), d_pstart.at(0)));
                pstart.insert(key, t.pstart);
                tables.push((d_items, d_pstart));
            }
            let infos = pass_infos(&passes, &ptrs);
            let d_passes = DeviceBuffer::new(ctx, infos.len())?;
            d_passes.upload(0, &infos, stream)?;
            steps.insert(order, StepPlan { passes, d_passes });
        }

        let data_len = layout.data_len();
        let tvd = matches!(scheme, Scheme::Tvd { .. });
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
            d_data: spare.take(ctx, data_len)?,
            d_flux: spare.take(ctx, layout.flux_len())?,
            d_stage: if tvd {
                Some(spare.take(ctx, data_len)?)
            } else {
                None
            },
            d_acc: if tvd {
                Some(spare.take(ctx, data_len)?)
            } else {
                None
            },
            d_step: DeviceBuffer::new(ctx, STEP_WORDS * n)?,
            h_step: PinnedBuffer::new(ctx, STEP_WORDS * n)?,
            d_rates: DeviceBuffer::new(ctx, n)?,
            h_rates: PinnedBuffer::new(ctx, n)?,
            d_bad: DeviceBuffer::new(ctx, n)?,
            h_bad: PinnedBuffer::new(ctx, n)?,
            d_counters: DeviceBuffer::new(ctx, 2 * nchunks)?,
            h_counters: PinnedBuffer::new(ctx, 2 * nchunks)?,
            d_errors: DeviceBuffer::new(ctx, ERROR_SLOTS * nchunks)?,
            h_errors: PinnedBuffer::new(ctx, ERROR_SLOTS * nchunks)?,
            d_barrier: DeviceBuffer::new(ctx, 1)?,
            d_queue: DeviceBuffer::new(ctx, MAX_PASSES * nchunks)?,
            h_data: None,
            h_flux: None,
            start: timing_event(ctx)?,
            ready: timing_event(ctx)?,
            sweeps: timing_event(ctx)?,
            end: timing_event(ctx)?,
            events: (0..nchunks)
                .map(|_| {
                    Ok(ChunkEvents {
                        up0: timing_event(ctx)?,
                        k0: timing_event(ctx)?,
                        scanned: timing_event(ctx)?,
                        k1: timing_event(ctx)?,
                        done: timing_event(ctx)?,
                    })
                })
                .collect::<Result<_, CudaError>>()?,
            dt: vec![0.0; n],
            plan,
        };
        stream.synchronize().call("cuStreamSynchronize")?;
        log::debug!(
            "layout on device: {} patches, {} bins, {} chunks, descriptors in {} memory",
            n,
            layout.nbins(),
            nchunks,
            if use_const { "constant" } else { "global" }
        );
        Ok(state)
    }

    /// Gives the large device arrays to `spare` for later layouts (the
    /// rest is freed).
    pub fn recycle(self, spare: &mut SpareBuffers<T>) {
        spare.give(self.d_data);
        spare.give(self.d_flux);
        if let Some(b) = self.d_stage {
            spare.give(b);
        }
        if let Some(b) = self.d_acc {
            spare.give(b);
        }
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
