//! The step pipeline: per-step constants, chunks on streams, kernel
//! launches, and the host side of copies and checks.

use crate::CudaEos;
use crate::params::EosArgs;
use std::time::Instant;

use cudarc::driver::{CudaStream, LaunchConfig, PushKernelArg};
use quilt_sweep::{
    Batch, BatchLayout, BoxPart, BoxRate, PatchDesc, Scheme, StepReport, SweepError, SweepOrder,
};
use rayon::prelude::*;

use super::external::{EXT_PARTS, ExtTable, ExternalBox, NO_STORE, load_boxes, pack_extent};
use super::report::{decode_sweep_error, input_error};
use super::state::{ERROR_SLOTS, LayoutState};
use super::{CudaSolver, Variant};
use crate::copies::Direction;
use crate::error::{CudaError, DriverContext};
use crate::params::{GasK, MAX_PASSES, STEP_WORDS, StepArgs};
use crate::plan::{Chunking, TableKind};
use crate::real::GpuReal;
use crate::solver::kernels::SCAN_BLOCK;

/// The time step of every patch: one for all, or one per level.
#[derive(Clone, Copy, Debug)]
pub(crate) enum DtSpec<'a> {
    Uniform(f64),
    Levels(&'a [f64]),
}

impl DtSpec<'_> {
    fn of(&self, d: &PatchDesc) -> Result<f64, SweepError> {
        match *self {
            Self::Uniform(dt) => Ok(dt),
            Self::Levels(l) => l
                .get(d.level as usize)
                .copied()
                .ok_or(SweepError::MissingLevel {
                    patch: d.id,
                    level: d.level,
                    levels: l.len(),
                }),
        }
    }
}

/// Copies in parallel: the host side of a step moves hundreds of megabytes
/// between the batch and pinned memory.
pub(super) fn par_copy<T: Copy + Send + Sync>(dst: &mut [T], src: &[T]) {
    const PIECE: usize = 1 << 16;
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// [`par_copy`] of the runs `(start, len)` (ascending, disjoint) of `src`
/// into the same places of `dst`.
fn par_copy_runs<T: Copy + Send + Sync>(dst: &mut [T], src: &[T], runs: &[(usize, usize)]) {
    let mut rest = dst;
    let mut at = 0;
    let mut pieces = Vec::with_capacity(runs.len());
    for &(s, n) in runs {
        let (_, tail) = rest.split_at_mut(s - at);
        let (piece, tail) = tail.split_at_mut(n);
        pieces.push((piece, &src[s..s + n]));
        rest = tail;
        at = s + n;
    }
    pieces.into_par_iter().for_each(|(d, s)| par_copy(d, s));
}

/// How batches cross the bus, for measurements: `QUILT_CUDA_TRANSFER` =
/// `staged` copies every batch through the solver's pinned staging even
/// when it is page-locked, `whole` moves whole bins instead of their
/// occupied runs, `runs` moves the occupied runs both ways by copies
/// instead of the ghost-box load and the interior store, `mapped` has the
/// load kernel read external boxes over the bus instead of copying them
/// to the device first, `single` queues external boxes' copies one
/// `cuMemcpyAsync` each instead of as one batch; unset (or anything
/// else), the default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct TransferMode {
    staged: bool,
    whole_bins: bool,
    runs_back: bool,
    mapped_sources: bool,
    single_copies: bool,
}

/// `store_ext_T`'s `which`: the patches in external boxes.
const STORE_BOXES: i32 = 1;
/// `store_ext_T`'s `which`: the patches in the bins.
const STORE_BINS: i32 = 2;

fn transfer_mode() -> TransferMode {
    static MODE: std::sync::OnceLock<TransferMode> = std::sync::OnceLock::new();
    *MODE.get_or_init(|| {
        let v = std::env::var("QUILT_CUDA_TRANSFER").unwrap_or_default();
        let mode = TransferMode {
            staged: v == "staged",
            whole_bins: v == "whole",
            runs_back: v == "runs",
            mapped_sources: v == "mapped",
            single_copies: v == "single",
        };
        if mode.staged
            || mode.whole_bins
            || mode.runs_back
            || mode.mapped_sources
            || mode.single_copies
        {
            log::warn!(
                "QUILT_CUDA_TRANSFER={v}: batches cross the bus the slow way, for comparison"
            );
        }
        mode
    })
}

/// The ranges of a chunk that cross the bus.
fn chunk_runs<'a>(
    c: &'a crate::plan::Chunk,
    plan: &crate::plan::HostPlan,
    whole: bool,
) -> std::borrow::Cow<'a, [(usize, usize)]> {
    if whole {
        let per_bin = plan.ncomp as usize * (plan.bin_edge as usize).pow(3);
        let (a, b) = (c.bin0 as usize * per_bin, c.bin1 as usize * per_bin);
        std::borrow::Cow::Owned(vec![(a, b - a)])
    } else {
        std::borrow::Cow::Borrowed(&c.data_runs)
    }
}

/// Milliseconds between two recorded events.
pub(super) fn ms(
    a: &cudarc::driver::CudaEvent,
    b: &cudarc::driver::CudaEvent,
) -> Result<f64, CudaError> {
    Ok(f64::from(a.elapsed_ms(b).call("cuEventElapsedTime")?))
}

/// Whether the scan's Courant number `courant` passes `limit`, the CPU
/// solver's. The bitwise scan reproduces the CPU's rates, so only the
/// rounding of the final product is allowed for; the fast f32 scan
/// (`f32_scan`) computes rates in f32 with approximate reciprocals and
/// square roots (a few ulp), and a step the CPU accepts at the limit must
/// not fail on that rounding.
fn courant_exceeds(courant: f64, limit: f64, f32_scan: bool) -> bool {
    let slack = if f32_scan { 1e-5 } else { 1e-12 };
    courant > limit * (1.0 + slack)
}

impl<T: GpuReal, E: CudaEos> CudaSolver<T, E> {
    /// Makes the device state match `layout`: a kept state of that layout
    /// if there is one, else a new one; the current state is kept for
    /// later batches and hands its pinned staging over.
    fn ensure_state(&mut self, layout: &BatchLayout) -> Result<(), CudaError> {
        let ncomp = self.config.components();
        if layout.ncomp() != ncomp {
            return Err(CudaError::Unsupported(format!(
                "a batch of {} components per cell: the kernels of this solver were compiled \
                 for {ncomp} (CudaConfig::scalars = {})",
                layout.ncomp(),
                self.config.scalars
            )));
        }
        if self.state.as_ref().is_some_and(|s| s.plan.matches(layout)) {
            return Ok(());
        }
        let staged = match self.staged.take() {
            Some(st) if st.plan.matches(layout) => Some(st),
            Some(st) => {
                self.discard(st);
                None
            }
            None => None,
        };
        // Taken out before the current state is kept, so that keeping it
        // cannot evict the one wanted.
        let kept = if staged.is_none() {
            self.recent.take(|s| s.plan.matches(layout))
        } else {
            None
        };
        let staging = self.state.take().map(|mut cur| {
            let s = cur.take_staging();
            self.keep_recent(cur);
            s
        });
        let mut next = match (staged, kept) {
            (Some(mut st), _) => {
                let t = Instant::now();
                let ctx = self.dev.ctx.clone();
                let mut r = st.attach(&ctx, &self.module, &self.streams[0], &mut self.spare);
                if matches!(&r, Err(e) if e.is_out_of_memory()) {
                    self.free_caches();
                    r = st.attach(&ctx, &self.module, &self.streams[0], &mut self.spare);
                }
                self.totals.state_secs += t.elapsed().as_secs_f64();
                self.totals.staged_layouts += 1;
                r?;
                st
            }
            (None, Some(st)) => {
                st.bind(&self.module, &self.streams[0])?;
                st
            }
            (None, None) => match self.timed_new_state(layout) {
                // Kept layouts are a cache: give their memory back before
                // failing for want of it.
                Err(e)
                    if e.is_out_of_memory()
                        && !(self.recent.is_empty() && self.spare.is_empty()) =>
                {
                    self.free_caches();
                    self.timed_new_state(layout)?
                }
                r => r?,
            },
        };
        if let Some(old) = staging {
            next.adopt_staging(old);
        }
        self.state = Some(next);
        Ok(())
    }

    /// Gives back the memory of kept layout states and spare arrays (the
    /// device is short of memory).
    fn free_caches(&mut self) {
        log::info!(
            "device memory exhausted: dropping {} kept layout states",
            self.recent.len()
        );
        self.recent.clear();
        self.spare.clear();
    }

    /// [`Self::new_state`], its time added to the totals.
    fn timed_new_state(&mut self, layout: &BatchLayout) -> Result<LayoutState<T>, CudaError> {
        let t = Instant::now();
        let st = self.new_state(layout);
        self.totals.state_secs += t.elapsed().as_secs_f64();
        st
    }

    /// How the layouts of this solver's batches are cut into chunks.
    pub(super) fn chunking(&self) -> Chunking {
        match self.config.variant {
            Variant::Default => Chunking::Patches(
                self.config
                    .n_fixed
                    .unwrap_or(self.config.streams * self.dev.info.multiprocessors as usize),
            ),
            _ if self.config.fused => Chunking::Bins(1),
            _ => Chunking::Bins(self.config.chunks),
        }
    }

    /// The device state of a layout not seen recently.
    fn new_state(&mut self, layout: &BatchLayout) -> Result<LayoutState<T>, CudaError> {
        let t0 = Instant::now();
        let chunking = self.chunking();
        let variant = self.config.variant;
        let st = LayoutState::new(
            &self.dev.ctx,
            &self.module,
            &self.streams[0],
            layout,
            &self.cpu.scheme(),
            chunking,
            variant.table_kinds(),
            variant.uses_constant_descriptors(),
            Some(&self.kernels.table),
            &mut self.spare,
        )?;
        log::debug!(
            "device state for a new layout ({} bins) built in {:.3} ms",
            layout.nbins(),
            t0.elapsed().as_secs_f64() * 1e3
        );
        Ok(st)
    }

    /// Keeps the device state of a layout for later batches (see
    /// [`super::RECENT_LAYOUTS`] for the bounds).
    fn keep_recent(&mut self, st: LayoutState<T>) {
        let budget = self.dev.info.total_memory / 4;
        for old in self.recent.keep(st, super::RECENT_LAYOUTS, budget) {
            self.discard(old);
        }
    }

    /// Drops a layout state: its large arrays go to the spares, the rest
    /// to the stager as a shell for its next layouts (or is freed here,
    /// without a stager).
    pub(super) fn discard(&mut self, st: LayoutState<T>) {
        let shell = st.recycle(&mut self.spare);
        if let Some(s) = &self.stager {
            s.retire(shell);
        }
    }

    /// Validates the time steps and fills the per-patch step constants
    /// (`dt/dx` and the flux weight, rounded to `T` as on the CPU).
    fn prepare_step(&mut self, dt: DtSpec<'_>) -> Result<(), CudaError> {
        let tvd = matches!(self.cpu.scheme(), Scheme::Tvd { .. });
        let st = self.state.as_mut().expect("state built");
        let h = st.h_step.as_mut_slice();
        for (p, d) in st.plan.descs.iter().enumerate() {
            let dt = dt.of(d)?;
            if !(dt.is_finite() && dt > 0.0) {
                return Err(SweepError::TimeStep(dt).into());
            }
            st.dt[p] = dt;
            let w = &mut h[STEP_WORDS * p..STEP_WORDS * (p + 1)];
            for (wa, dx) in w.iter_mut().zip(d.dx) {
                *wa = T::from_f64(dt / dx);
            }
            w[3] = if tvd {
                T::from_f64(0.5 * dt)
            } else {
                T::from_f64(dt)
            };
        }
        Ok(())
    }

    /// Starts a step on stream 0: step constants (and, with `ext`, the
    /// table of external boxes) up, counters, error slots and work queues
    /// reset; the other streams wait for it.
    fn begin_step(&self, ext: bool) -> Result<(), CudaError> {
        let st = self.state.as_ref().expect("state built");
        let s0 = &self.streams[0];
        st.start.record(s0).call("cuEventRecord")?;
        st.d_step.upload(0, st.h_step.as_slice(), s0)?;
        if ext {
            let t = self.ext_table.as_ref().expect("external table filled");
            t.d.upload(0, t.h.as_slice(), s0)?;
            if !self.ext_restricted.is_empty() {
                let out = self
                    .restrict_out
                    .as_ref()
                    .expect("restriction outputs sized");
                out.d.fill_bytes(0, out.d.len(), 0, s0)?;
            }
        }
        st.d_rates.fill_bytes(0, st.d_rates.len(), 0, s0)?;
        st.d_bad.fill_bytes(0, st.d_bad.len(), 0, s0)?;
        st.d_counters.fill_bytes(0, st.d_counters.len(), 0, s0)?;
        st.d_errors.fill_bytes(0, st.d_errors.len(), 0xff, s0)?;
        st.d_queue.fill_bytes(0, st.d_queue.len(), 0, s0)?;
        st.ready.record(s0).call("cuEventRecord")?;
        for s in &self.streams[1..] {
            s.wait(&st.ready).call("cuStreamWaitEvent")?;
        }
        Ok(())
    }

    /// Stream 0 waits for every chunk, then records the end event and the
    /// host waits for it.
    fn end_step(&self) -> Result<(), CudaError> {
        let st = self.state.as_ref().expect("state built");
        let s0 = &self.streams[0];
        for ev in &st.events {
            s0.wait(&ev.done).call("cuStreamWaitEvent")?;
        }
        st.end.record(s0).call("cuEventRecord")?;
        st.end.synchronize().call("cuEventSynchronize")
    }

    fn stream_of(&self, c: usize) -> &std::sync::Arc<CudaStream> {
        &self.streams[c % self.streams.len()]
    }

    fn step_args(&self, c: usize, order: SweepOrder) -> StepArgs<T> {
        let st = self.state.as_ref().expect("state built");
        let chunk = &st.plan.chunks[c];
        let k = self.cpu.gas().consts::<T>();
        let (opt0, opt1) = scheme_options(&self.cpu.scheme());
        StepArgs {
            data: st.d_data.at(0),
            flux: st.d_flux.at(0),
            stage: st.d_stage.as_ref().map_or(0, |b| b.at(0)),
            acc: st.d_acc.as_ref().map_or(0, |b| b.at(0)),
            descs: st.d_descs.at(0),
            step: st.d_step.at(0),
            counters: st.d_counters.at(2 * c),
            errors: st.d_errors.at(ERROR_SLOTS * c),
            barrier: st.d_barrier.at(0),
            queue: st.d_queue.at(MAX_PASSES * c),
            passes: st.steps[&order].d_passes.at(0),
            q0: chunk.q0,
            q1: chunk.q1,
            use_const: i32::from(st.use_const),
            bin_edge: st.plan.bin_edge as i32,
            opt0,
            opt1,
            pass0: 0,
            npasses: st.steps[&order].passes.len() as i32,
            k: GasK {
                eos: k.eos,
                rho_floor: k.rho_floor,
                p_floor: k.p_floor,
            },
        }
    }

    /// The first scan item of chunk `c` and a launch of one block per item
    /// (the scan's and the store's shape); `None` if the chunk has none.
    fn item_launch(&self, c: usize) -> Option<(u32, LaunchConfig)> {
        let st = self.state.as_ref().expect("state built");
        let chunk = &st.plan.chunks[c];
        let i0 = st.scan_start[chunk.q0 as usize];
        let items = st.scan_start[chunk.q1 as usize] - i0;
        (items > 0).then_some((
            i0,
            LaunchConfig {
                grid_dim: (items, 1, 1),
                block_dim: (SCAN_BLOCK, 1, 1),
                shared_mem_bytes: 0,
            },
        ))
    }

    /// What every kernel over scan items reads: the device addresses of
    /// the data, the descriptors, the patch order and the items, and the
    /// bin edge.
    fn item_tables(&self) -> (u64, u64, u64, u64, i32) {
        let st = self.state.as_ref().expect("state built");
        (
            st.d_data.at(0),
            st.d_descs.at(0),
            st.d_order.at(0),
            st.d_scan.at(0),
            st.plan.bin_edge as i32,
        )
    }

    /// The input scan of chunk `c`.
    fn launch_scan(&self, c: usize, stream: &CudaStream) -> Result<(), CudaError> {
        let Some((i0, cfg)) = self.item_launch(c) else {
            return Ok(());
        };
        let st = self.state.as_ref().expect("state built");
        let (data, descs, order, scan, b) = self.item_tables();
        let (rates, bad) = (st.d_rates.at(0), st.d_bad.at(0));
        let eos = EosArgs::of(&self.cpu.gas().eos);
        let mut l = stream.launch_builder(&self.kernels.scan);
        l.arg(&data)
            .arg(&descs)
            .arg(&order)
            .arg(&scan)
            .arg(&i0)
            .arg(&b)
            .arg(&eos)
            .arg(&rates)
            .arg(&bad);
        // SAFETY: arguments match `scan_T`'s signature; buffers cover every
        // index the kernel derives from the uploaded descriptors.
        unsafe { l.launch(cfg) }.call("cuLaunchKernel(scan)")?;
        Ok(())
    }

    /// Launches `func`, one of the copies between the device data and
    /// `host`, the page-locked batch data (its unified address), over the
    /// scan items of chunk `c` on `stream`: `store_T` (interiors to the
    /// host) or `load_T` (ghost boxes to the device), which take the same
    /// arguments, or with `ext`, parts of the device table of external
    /// boxes (one address per descriptor, 0 for a patch in the bins; for
    /// `load_ext_T` also the boxes' extents), their `_ext_` twins, which
    /// take them after `host`; `store_ext_T` also takes `which` last
    /// ([`STORE_BOXES`], [`STORE_BINS`]).
    #[allow(clippy::too_many_arguments)]
    fn launch_host_copy(
        &self,
        func: &cudarc::driver::CudaFunction,
        name: &'static str,
        c: usize,
        host: u64,
        ext: &[u64],
        which: Option<i32>,
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        let Some((i0, cfg)) = self.item_launch(c) else {
            return Ok(());
        };
        let (data, descs, order, scan, b) = self.item_tables();
        let mut l = stream.launch_builder(func);
        l.arg(&data).arg(&host);
        for part in ext {
            l.arg(part);
        }
        l.arg(&descs).arg(&order).arg(&scan).arg(&i0).arg(&b);
        if let Some(which) = &which {
            l.arg(which);
        }
        // SAFETY: arguments match the signatures of `store_T` and
        // `load_T` (with `ext`, of `load_ext_T`, and with `which` too, of
        // `store_ext_T`); `host`
        // is the unified address of page-locked memory as large as the
        // device data (the layouts match), and every address in the `ext`
        // table that of a registered dense box of its descriptor's size, or
        // a copy of one in device memory, or (a probe) a part of one of the
        // extent given with it (checked by `advance_external`); all stay
        // alive and untouched by
        // the host until the caller synchronises the stream.
        unsafe { l.launch(cfg) }.call(name)?;
        Ok(())
    }

    /// Writes chunk `c`'s interiors from the device into `host`, the
    /// page-locked batch data, or into their external boxes' outputs
    /// (`ext`: the device addresses of the table's store part and of its
    /// load part, or 0 where the outputs are the host boxes themselves,
    /// and which patches, see [`Self::launch_host_copy`]), on `stream`.
    fn launch_store(
        &self,
        c: usize,
        host: *mut T,
        ext: Option<(u64, u64, i32)>,
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        let k = &self.kernels;
        let (f, name) = match ext {
            Some(_) => (&k.store_ext, "cuLaunchKernel(store_ext)"),
            None => (&k.store, "cuLaunchKernel(store)"),
        };
        let tables;
        let table: &[u64] = match ext {
            Some((t, src, _)) => {
                tables = [t, src];
                &tables
            }
            None => &[],
        };
        self.launch_host_copy(f, name, c, host as u64, table, ext.map(|e| e.2), stream)
    }

    /// Copies the output boxes of chunk `c`'s external boxes from device
    /// memory into their destinations, one DMA copy each, on `stream`
    /// (behind the store kernel that wrote them). Nothing without
    /// `ext_out` (mapped stores write the destinations themselves).
    fn download_boxes(
        &mut self,
        c: usize,
        boxes: &mut [ExternalBox<'_, T>],
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        let Some(out) = &self.ext_out else {
            return Ok(());
        };
        let mut copies = std::mem::take(&mut self.box_copies);
        let st = self.state.as_ref().expect("state built");
        let chunk = &st.plan.chunks[c];
        for &p in &st.plan.order[chunk.q0 as usize..chunk.q1 as usize] {
            // A probe reads its parent's box and stores nothing.
            if let Some(Some(k)) = self.ext_reads.get(p as usize).copied()
                && boxes[k].desc == p as usize
            {
                let dst = &mut *boxes[k].dst;
                let bytes = std::mem::size_of_val(dst);
                copies.push(dst.as_mut_ptr() as u64, out.at(self.ext_copies[k].0), bytes);
            }
        }
        // SAFETY: each output box lies in `ext_out` (sized by
        // `fill_ext_table`), each destination is a registered box of the
        // same length, alive and untouched by the host until the step
        // synchronises its streams.
        unsafe { self.queue_box_copies(copies, Direction::ToHost, stream) }
    }

    /// Queues `copies` (a chunk's box copies, gathered in the lists taken
    /// from `box_copies`) on `stream`, batched unless the driver lacks the
    /// batched call or `QUILT_CUDA_TRANSFER=single` asks for single
    /// copies, and keeps the emptied lists for the next chunk.
    ///
    /// # Safety
    ///
    /// As [`crate::copies::CopyBatch::issue`].
    unsafe fn queue_box_copies(
        &mut self,
        mut copies: crate::copies::CopyBatch,
        dir: Direction,
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        let info = &self.dev.info;
        let batched = crate::copies::batches(info.driver_version) && !transfer_mode().single_copies;
        // SAFETY: the caller's.
        let r = unsafe { copies.issue(dir, info.ordinal, batched, stream) };
        self.box_copies = copies;
        r
    }

    /// The restriction outputs of chunk `c`'s external boxes that ask for
    /// them on the device (`tables`: the device addresses of the table's
    /// means and ratio parts), on `stream`, behind the sweeps.
    fn launch_restrict_out(
        &self,
        c: usize,
        tables: (u64, u64),
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        let Some((i0, cfg)) = self.item_launch(c) else {
            return Ok(());
        };
        let (data, descs, order, scan, b) = self.item_tables();
        let eos = EosArgs::of(&self.cpu.gas().eos);
        let out = self
            .restrict_out
            .as_ref()
            .expect("restriction outputs sized");
        let out = out.d.at(0);
        let mut l = stream.launch_builder(&self.kernels.restrict_out);
        l.arg(&data)
            .arg(&tables.0)
            .arg(&tables.1)
            .arg(&descs)
            .arg(&order)
            .arg(&scan)
            .arg(&i0)
            .arg(&b)
            .arg(&eos)
            .arg(&out);
        // SAFETY: arguments match `restrict_out_T`'s signature; every
        // address in the means part is a registered slice of the size its
        // descriptor's interior needs at its ratio (checked by
        // `check_boxes`), alive and untouched by the host until the step
        // synchronises; `out` holds two values per descriptor.
        unsafe { l.launch(cfg) }.call("cuLaunchKernel(restrict_out)")?;
        Ok(())
    }

    /// After a successful step: the rates of the boxes restricted on the
    /// device from their outputs, and the other boxes' restriction
    /// outputs computed on the host from their new interiors.
    fn finish_restricted(
        &mut self,
        layout: &BatchLayout,
        boxes: &mut [ExternalBox<'_, T>],
    ) -> Result<(), CudaError> {
        if !self.ext_restricted.is_empty() {
            let out = self
                .restrict_out
                .as_mut()
                .expect("restriction outputs sized");
            let s0 = &self.streams[0];
            let n = out.h.as_slice().len();
            out.d.download(0, &mut out.h.as_mut_slice()[..n], s0)?;
            s0.synchronize().call("cuStreamSynchronize")?;
        }
        let h = self
            .restrict_out
            .as_ref()
            .map_or(&[][..], |o| o.h.as_slice());
        let (gas, ncomp) = (self.cpu.gas(), layout.ncomp() as usize);
        let value = std::mem::size_of::<T>() as u64;
        // `ext_restricted` lists box indices in ascending order.
        let mut on_device = self.ext_restricted.iter().copied().peekable();
        for (k, b) in boxes.iter_mut().enumerate() {
            let Some(r) = b.restricted.as_mut() else {
                continue;
            };
            if on_device.next_if_eq(&k).is_none() {
                r.fill_from_box(&layout.patches()[b.desc], ncomp, b.dst, &gas)?;
                continue;
            }
            self.totals.bytes_down += r.means.len() as u64 * value;
            self.totals.restricted_on_device += 1;
            *r.rate = if h[2 * b.desc + 1] != 0 {
                BoxRate::Bad
            } else {
                BoxRate::Max(f64::from_bits(h[2 * b.desc]))
            };
        }
        Ok(())
    }

    /// Reads chunk `c`'s ghost boxes from `host`, the page-locked batch
    /// data, or from their external boxes (`ext`: the table's load half
    /// and its extents), onto the device on `stream`; returns the cells
    /// read.
    fn launch_load(
        &self,
        c: usize,
        host: *const T,
        ext: Option<[u64; 2]>,
        stream: &CudaStream,
    ) -> Result<usize, CudaError> {
        let k = &self.kernels;
        let (f, name) = match ext {
            Some(_) => (&k.load_ext, "cuLaunchKernel(load_ext)"),
            None => (&k.load, "cuLaunchKernel(load)"),
        };
        let table: &[u64] = ext.as_ref().map_or(&[], |e| e.as_slice());
        self.launch_host_copy(f, name, c, host as u64, table, None, stream)?;
        let st = self.state.as_ref().expect("state built");
        let chunk = &st.plan.chunks[c];
        let cells: usize = st.plan.order[chunk.q0 as usize..chunk.q1 as usize]
            .iter()
            .map(|&p| st.plan.descs[p as usize].total_cells() as usize)
            .sum();
        Ok(cells)
    }

    /// The sweeps of chunk `c` for one step in `order`.
    fn launch_sweeps(
        &self,
        c: usize,
        order: SweepOrder,
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        let st = self.state.as_ref().expect("state built");
        let chunk = &st.plan.chunks[c];
        if chunk.q1 == chunk.q0 {
            return Ok(());
        }
        let base = self.step_args(c, order);
        let passes = &st.steps[&order].passes;
        let launch = |k: &super::kernels::Kernel,
                      grid: u32,
                      args: StepArgs<T>,
                      coop: bool|
         -> Result<(), CudaError> {
            let cfg = LaunchConfig {
                grid_dim: (grid, 1, 1),
                block_dim: (k.block, 1, 1),
                shared_mem_bytes: k.smem,
            };
            let mut l = stream.launch_builder(&k.func);
            l.arg(&args);
            // SAFETY: `StepArgs<T>` is the kernels' parameter block; every
            // pointer in it covers the ranges the tables and descriptors
            // address (built together in LayoutState::new).
            if coop {
                unsafe { l.launch_cooperative(cfg) }.call("cuLaunchCooperativeKernel")?;
            } else {
                unsafe { l.launch(cfg) }.call("cuLaunchKernel")?;
            }
            Ok(())
        };
        let kern = &self.kernels;
        let variant = self.config.variant;
        // The default scheme and the fused launch run every pass of the
        // step in one launch, unless scalars put their kernel before each
        // pass's (it reads the state the pass starts from).
        if kern.scalar.is_none() {
            if variant == Variant::Default {
                return launch(&kern.default, chunk.q1 - chunk.q0, base, false);
            }
            if self.config.fused {
                st.d_barrier.fill_bytes(0, 1, 0, stream)?;
                return launch(&kern.fused, kern.fused.full_grid, base, true);
            }
        }
        for (i, p) in passes.iter().enumerate() {
            let items = st.items(p, chunk.q0, chunk.q1);
            if items == 0 {
                continue;
            }
            let args = StepArgs {
                pass0: i as i32,
                npasses: 1,
                ..base
            };
            if let Some(scalar) = &kern.scalar {
                launch(scalar, scalar.grid(items, 1), args, false)?;
            }
            match (variant, p.kind) {
                (Variant::Default, _) => launch(&kern.default, chunk.q1 - chunk.q0, args, false)?,
                (Variant::Packed, _) => {
                    launch(&kern.packed, kern.packed.grid(items, 2), args, false)?
                }
                (_, TableKind::Flat) => {
                    launch(&kern.march, kern.march.grid(items, 4), args, false)?
                }
                _ => launch(&kern.rows, kern.rows.grid(items, 4), args, false)?,
            }
        }
        Ok(())
    }

    /// Queues the copies of chunk `c`'s results (rates, bad flags, counters,
    /// error slots) into pinned memory.
    fn download_results(&mut self, c: usize, scan: bool, sweeps: bool) -> Result<(), CudaError> {
        let stream = self.stream_of(c).clone();
        let st = self.state.as_mut().expect("state built");
        let chunk = st.plan.chunks[c].clone();
        let (q0, q1) = (chunk.q0 as usize, chunk.q1 as usize);
        if scan {
            st.d_rates
                .download(q0, &mut st.h_rates.as_mut_slice()[q0..q1], &stream)?;
            st.d_bad
                .download(q0, &mut st.h_bad.as_mut_slice()[q0..q1], &stream)?;
        }
        if sweeps {
            st.d_counters.download(
                2 * c,
                &mut st.h_counters.as_mut_slice()[2 * c..2 * c + 2],
                &stream,
            )?;
            let e = ERROR_SLOTS * c;
            st.d_errors.download(
                e,
                &mut st.h_errors.as_mut_slice()[e..e + ERROR_SLOTS],
                &stream,
            )?;
        }
        Ok(())
    }

    /// Where the device's input differs from the batch (the GPU and the
    /// CPU disagree about the input only if the two copies differ): the
    /// flagged patches, and the first ghost cell (the sweeps have replaced
    /// the interiors) whose device value is not the batch's, with whether a
    /// transferred run covers it.
    fn input_mismatch(&self, batch: &Batch<T>) -> String {
        let st = self.state.as_ref().expect("state built");
        let flagged: Vec<u64> = st
            .h_bad
            .as_slice()
            .iter()
            .enumerate()
            .filter(|(_, b)| **b != 0)
            .map(|(q, _)| st.plan.descs[st.plan.order[q] as usize].id)
            .collect();
        let mut device = vec![T::zero(); batch.data().len()];
        let s0 = &self.streams[0];
        if st.d_data.download(0, &mut device, s0).is_err() || s0.synchronize().is_err() {
            return format!("flagged patches {flagged:?}; device data unreadable");
        }
        let l = batch.layout();
        for (p, d) in l.patches().iter().enumerate() {
            for c in 0..l.ncomp() {
                for k in 0..d.extent[2] {
                    for j in 0..d.extent[1] {
                        for i in 0..d.extent[0] {
                            // The sweeps have overwritten the interior; the
                            // ghost cells are still the input.
                            let g = d.ghost;
                            let inner = [i, j, k]
                                .iter()
                                .zip(d.extent)
                                .all(|(&x, e)| x >= g && x < e - g);
                            if inner {
                                continue;
                            }
                            let at = l.cell_index(p, c, [i, j, k]).expect("in the patch");
                            if bytemuck::bytes_of(&device[at])
                                != bytemuck::bytes_of(&batch.data()[at])
                            {
                                let covered = st.plan.chunks.iter().any(|ch| {
                                    ch.data_runs.iter().any(|&(s, n)| (s..s + n).contains(&at))
                                });
                                return format!(
                                    "flagged patches {flagged:?}; first difference: patch {} component {c} cell {:?} (bin {}, value index {at}): device {:?}, batch {:?}; in a transferred run: {covered}",
                                    d.id,
                                    [i, j, k],
                                    d.bin,
                                    device[at],
                                    batch.data()[at]
                                );
                            }
                        }
                    }
                }
            }
        }
        format!("flagged patches {flagged:?}; the device holds the batch's ghost cells exactly")
    }

    /// Whether any scanned patch is bad, and the largest Courant number.
    fn scan_verdict(&self) -> (bool, f64) {
        let st = self.state.as_ref().expect("state built");
        let bad = st.h_bad.as_slice().iter().any(|&b| b != 0);
        let mut courant = 0.0f64;
        for (q, &bits) in st.h_rates.as_slice().iter().enumerate() {
            let p = st.plan.order[q] as usize;
            courant = courant.max(st.dt[p] * f64::from_bits(bits));
        }
        (bad, courant)
    }

    fn cfl_exceeded(&self, courant: f64) -> bool {
        courant_exceeds(
            courant,
            self.cpu.cfl_limit(),
            self.config.fast_f32_applies::<T>(),
        )
    }

    /// The first sweep error over all chunks, decoded.
    fn sweep_error(&self, order: SweepOrder) -> Option<SweepError> {
        let st = self.state.as_ref().expect("state built");
        let errs = st.h_errors.as_slice();
        let nchunks = st.plan.chunks.len();
        (0..ERROR_SLOTS).find_map(|slot| {
            let key = (0..nchunks).map(|c| errs[ERROR_SLOTS * c + slot]).min()?;
            (key != u64::MAX)
                .then(|| decode_sweep_error(&st.plan.descs, &st.steps[&order].passes, slot, key))
        })
    }

    fn floor_counts(&self) -> quilt_sweep::physics::FloorCounts {
        let st = self.state.as_ref().expect("state built");
        let h = st.h_counters.as_slice();
        let mut f = quilt_sweep::physics::FloorCounts::default();
        for c in 0..st.plan.chunks.len() {
            f.density += h[2 * c];
            f.pressure += h[2 * c + 1];
        }
        f
    }

    fn report(&self, courant: f64) -> StepReport {
        let st = self.state.as_ref().expect("state built");
        let floors = self.floor_counts();
        let scheme = self.cpu.scheme();
        if floors.total() > 0 {
            log::warn!(
                "{} step: floors applied {} times (density {}, pressure {})",
                scheme.name(),
                floors.total(),
                floors.density,
                floors.pressure
            );
        }
        StepReport {
            floors,
            courant,
            cells: st.plan.descs.iter().map(PatchDesc::interior_cells).sum(),
            dt: st.dt.iter().copied().fold(0.0, f64::max),
        }
    }

    /// Whether a step of `batch` reads it and writes it back in place by
    /// the load and store kernels (what [`Self::run_io`] does with a
    /// page-locked batch unless `QUILT_CUDA_TRANSFER` or the default
    /// scheme asks for copies), the condition for external boxes too.
    pub(super) fn loads_in_place(&self, batch: &Batch<T>) -> bool {
        batch.page_locked() && self.reads_boxes_in_place()
    }

    /// Whether [`CudaSolver::advance_external`] reads and writes
    /// registered boxes in place with this solver's variant and transfer
    /// mode (given page-locked batches): not the default scheme, which
    /// moves whole bins, nor `QUILT_CUDA_TRANSFER=staged|whole|runs`. Where
    /// it does not, boxes are copied through the batch on the solving
    /// thread, and keeping states page-locked gains nothing.
    pub fn reads_boxes_in_place(&self) -> bool {
        let mode = transfer_mode();
        !mode.staged && !mode.runs_back && !self.whole_bins()
    }

    /// Whether steps move whole bins instead of occupied runs or ghost
    /// boxes.
    fn whole_bins(&self) -> bool {
        // The per-patch kernels of the default scheme see bin cells outside
        // their patch's rows (with occupied runs alone, the large sphere's
        // second step failed; with whole bins it runs): they move whole bins.
        transfer_mode().whole_bins || self.config.variant == Variant::Default
    }

    /// Fills the table of external boxes (per descriptor of the current
    /// layout the source's address, 0 for the bins, then the
    /// destination's, then the extent of the box read, then the address
    /// and ratio of restriction outputs the device computes: see
    /// [`ExtTable`])
    /// in pinned memory, for [`Self::begin_step`] to upload. Returns what
    /// the probes keep off the bus: their cells not uploaded on their own
    /// and their interior cells not stored; and the ghost cells the
    /// whole output boxes carry down besides the interiors.
    ///
    /// Unless `QUILT_CUDA_TRANSFER=mapped`, the store kernel writes each
    /// box's new state whole into `ext_out` (interior from the bins, ghost
    /// cells from the source's copy) and one DMA copy takes it into the
    /// destination: the table's store part names device memory then.
    ///
    /// Unless `QUILT_CUDA_TRANSFER=mapped`, each source is first copied
    /// to device memory (`cuMemcpyHtoDAsync` from its registered pages,
    /// at the bus's full rate, while the load kernel reading host memory
    /// itself gets about a third of it): the table then names the copy.
    /// A box is copied on the stream of the first chunk that reads it
    /// (itself or one of its probes); `ext_copies` holds per box the
    /// copy's offset in `ext_staging`, that first reader and its chunk, and
    /// `ext_waits` the chunks whose loads must wait for another chunk's
    /// copies, for the chunk loop to issue.
    fn fill_ext_table(
        &mut self,
        boxes: &mut [ExternalBox<'_, T>],
        probes: &[BoxPart],
    ) -> Result<(usize, usize, usize), CudaError> {
        let st = self.state.as_ref().expect("state built");
        let n = st.plan.descs.len();
        let t = ExtTable::fit(self.ext_table.take(), &self.dev.ctx, EXT_PARTS * n)?;
        let t = self.ext_table.insert(t);
        let h = t.h.as_mut_slice();
        h.fill(0);
        let (load, rest) = h.split_at_mut(n);
        let (store, rest) = rest.split_at_mut(n);
        let (geom, rest) = rest.split_at_mut(n);
        let (means, ratio) = rest.split_at_mut(n);
        // Restriction outputs the kernel writes: page-locked means only.
        self.ext_restricted.clear();
        let registry = self.registry.get();
        for (k, b) in boxes.iter().enumerate() {
            if let Some(r) = &b.restricted {
                if registry.is_some_and(|g| g.contains_slice(r.means)) {
                    means[b.desc] = r.means.as_ptr() as u64;
                    ratio[b.desc] = u64::from(r.ratio);
                    self.ext_restricted.push(k);
                }
            }
        }
        let descs = &st.plan.descs;
        self.ext_reads.clear();
        self.ext_reads.resize(n, None);
        self.ext_copies.clear();
        self.ext_waits.clear();
        let mapped = transfer_mode().mapped_sources;
        let mut saved = (0usize, 0usize, 0usize);
        // Copies start at 256-byte boundaries, as device allocations do.
        let align = (256 / std::mem::size_of::<T>()).max(1);
        let mut total = 0usize;
        for (k, b) in boxes.iter_mut().enumerate() {
            self.ext_copies.push((total, usize::MAX, 0));
            total += b.src.len().next_multiple_of(align);
            self.ext_reads[b.desc] = Some(k);
            store[b.desc] = b.dst.as_mut_ptr() as u64;
            geom[b.desc] = pack_extent(descs[b.desc].extent);
        }
        let fit = |old: Option<crate::buffer::DeviceBuffer<T>>| -> Result<_, CudaError> {
            match old.map(|d| d.reuse(total)) {
                Some(Ok(d)) => Ok(d),
                old => {
                    // Freed before the larger one is made.
                    drop(old);
                    crate::buffer::DeviceBuffer::with_room(&self.dev.ctx, total, total + total / 4)
                }
            }
        };
        let staging = if mapped {
            None
        } else {
            Some(fit(self.ext_staging.take())?)
        };
        // Whole output boxes go down by DMA (see `ExternalBox::dst`).
        if mapped {
            self.ext_out = None;
        } else {
            let out = fit(self.ext_out.take())?;
            for (k, b) in boxes.iter().enumerate() {
                store[b.desc] = out.at(self.ext_copies[k].0);
                let interior = descs[b.desc].interior_cells() as usize;
                saved.2 += b.dst.len() / st.plan.ncomp as usize - interior;
            }
            self.ext_out = Some(out);
        }
        let at = |k: usize, first: usize| match &staging {
            Some(d) => d.at(self.ext_copies[k].0 + first),
            None => boxes[k].src[first..].as_ptr() as u64,
        };
        for (k, b) in boxes.iter().enumerate() {
            load[b.desc] = at(k, 0);
        }
        for p in probes {
            let [sx, sy, sz] = descs[boxes[p.parent].desc].extent.map(|e| e as usize);
            let [ox, oy, oz] = p.offset.map(|e| e as usize);
            debug_assert!(oz < sz, "checked by check_boxes");
            load[p.desc] = at(p.parent, (oz * sy + oy) * sx + ox);
            store[p.desc] = NO_STORE;
            geom[p.desc] = pack_extent([sx, sy, sz].map(|e| e as u32));
            self.ext_reads[p.desc] = Some(p.parent);
            let d = &descs[p.desc];
            if !mapped {
                saved.0 += d.total_cells() as usize;
            }
            saved.1 += d.interior_cells() as usize;
        }
        if let Some(staging) = staging {
            // First readers, and the chunks on other streams that read a
            // box after them.
            let nstreams = self.streams.len();
            for (c, chunk) in st.plan.chunks.iter().enumerate() {
                for &p in &st.plan.order[chunk.q0 as usize..chunk.q1 as usize] {
                    let Some(k) = self.ext_reads[p as usize] else {
                        continue;
                    };
                    let (_, first, c0) = &mut self.ext_copies[k];
                    if *first == usize::MAX {
                        (*first, *c0) = (p as usize, c);
                    } else {
                        let c0 = *c0;
                        if c0 % nstreams != c % nstreams {
                            self.ext_waits.push((c as u32, c0 as u32));
                        }
                    }
                }
            }
            self.ext_waits.sort_unstable();
            self.ext_waits.dedup();
            self.ext_staging = Some(staging);
        }
        Ok(saved)
    }

    /// Copies to device memory the sources of the external boxes that
    /// chunk `c` reads first, and makes `stream` wait for the copies of
    /// earlier chunks' streams that it reads too (see
    /// [`Self::fill_ext_table`]).
    fn upload_sources(
        &mut self,
        c: usize,
        boxes: &[ExternalBox<'_, T>],
        stream: &CudaStream,
    ) -> Result<(), CudaError> {
        let Some(staging) = &self.ext_staging else {
            return Ok(());
        };
        let mut copies = std::mem::take(&mut self.box_copies);
        let st = self.state.as_ref().expect("state built");
        let chunk = &st.plan.chunks[c];
        for &p in &st.plan.order[chunk.q0 as usize..chunk.q1 as usize] {
            if let Some(Some(k)) = self.ext_reads.get(p as usize) {
                let (off, first, _) = self.ext_copies[*k];
                if first == p as usize {
                    let src = boxes[*k].src;
                    copies.push(
                        staging.at(off),
                        src.as_ptr() as u64,
                        std::mem::size_of_val(src),
                    );
                }
            }
        }
        // SAFETY: each copy lies in `ext_staging` (sized by
        // `fill_ext_table` for every box), each source is a registered
        // box, alive and unchanged until the step synchronises.
        unsafe { self.queue_box_copies(copies, Direction::ToDevice, stream) }?;
        let st = self.state.as_ref().expect("state built");
        let from = self.ext_waits.partition_point(|w| (w.0 as usize) < c);
        for &(_, c0) in self.ext_waits[from..]
            .iter()
            .take_while(|w| w.0 as usize == c)
        {
            // The other chunk's load event follows its copies.
            stream
                .wait(&st.events[c0 as usize].k0)
                .call("cuStreamWaitEvent")?;
        }
        Ok(())
    }

    /// One step with transfers (see [`CudaSolver::advance`]). A batch in
    /// page-locked memory is read and written by kernels through its
    /// mapped address, only its ghost boxes up and its interiors down; any
    /// other goes through the solver's pinned staging as copies of the
    /// occupied runs of each chunk's bins. Results come back only once the
    /// scan and the sweeps passed their checks, so a failed step leaves the
    /// batch untouched for the CPU to reproduce the error on.
    ///
    /// With `ext` (only where [`Self::loads_in_place`] holds and every box
    /// is registered, see [`CudaSolver::advance_external`]) the kernels
    /// read those descriptors' ghost boxes from their boxes and write
    /// their interiors there instead of into the batch; a failed step
    /// first loads the boxes into the batch, so that the CPU reproduces
    /// its error on the same input.
    pub(super) fn run_io(
        &mut self,
        batch: &mut Batch<T>,
        dt: DtSpec<'_>,
        order: SweepOrder,
        mut ext: Option<&mut [ExternalBox<'_, T>]>,
        probes: &[BoxPart],
    ) -> Result<StepReport, CudaError> {
        self.cpu.check_layout(batch.layout())?;
        if ext.is_some() && !self.loads_in_place(batch) {
            return Err(CudaError::Internal(
                "external boxes without the in-place load and store".into(),
            ));
        }
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        self.ensure_state(batch.layout())?;
        if let Err(e) = self.prepare_step(dt) {
            // The CPU scans the input before it looks at the time steps: let
            // it decide which error comes first.
            return Err(match e {
                CudaError::Sweep(gpu) => {
                    if let Some(boxes) = ext.as_deref() {
                        load_boxes(batch, boxes, probes)?;
                    }
                    input_error(&self.cpu, batch, dt, order, false, 0.0, Some(gpu))
                }
                e => e,
            });
        }
        // Probe cells that cross no bus, probe interiors not stored.
        let mut saved = (0, 0, 0);
        let ext_ptr = match ext.as_deref_mut() {
            Some(boxes) => {
                saved = self.fill_ext_table(boxes, probes)?;
                Some(self.ext_table.as_ref().expect("filled").d.at(0))
            }
            None => None,
        };
        // The table's parts: the destinations, the extents read, the
        // restriction outputs' addresses and ratios.
        let part = |i: usize| {
            let n = self.state.as_ref().expect("state built").plan.descs.len();
            ext_ptr.map(|p| p + (i * n * std::mem::size_of::<u64>()) as u64)
        };
        let (ext_store, ext_geom) = (part(1), part(2));
        let ext_restrict = (!self.ext_restricted.is_empty())
            .then(|| part(3).zip(part(4)))
            .flatten();
        if ext_restrict.is_some() {
            let n = self.state.as_ref().expect("state built").plan.descs.len();
            let out = ExtTable::fit(self.restrict_out.take(), &self.dev.ctx, 2 * n)?;
            self.restrict_out = Some(out);
        }
        let ext_load = ext_ptr.zip(ext_geom).map(|(a, b)| [a, b]);
        let mode = transfer_mode();
        let direct = batch.page_locked() && !mode.staged;
        let whole_bins = self.whole_bins();
        // Ghost boxes go up by the load kernel and interiors come back by
        // the store kernel unless whole bins or runs are asked for.
        let store = self.loads_in_place(batch);
        if !direct {
            let ctx = self.dev.ctx.clone();
            self.state
                .as_mut()
                .expect("state built")
                .ensure_staging(&ctx)?;
        }
        let issue = Instant::now();
        self.begin_step(ext_ptr.is_some())?;
        let mut host_ms = 0.0;
        let mut bytes_up = 0usize;
        let nchunks = self.state.as_ref().expect("state built").plan.chunks.len();
        for c in 0..nchunks {
            let stream = self.stream_of(c).clone();
            if store {
                let st = self.state.as_ref().expect("state built");
                st.events[c].up0.record(&stream).call("cuEventRecord")?;
                if let Some(boxes) = ext.as_deref() {
                    self.upload_sources(c, boxes, &stream)?;
                }
                let cells = self.launch_load(c, batch.data().as_ptr(), ext_load, &stream)?;
                bytes_up += cells * batch.layout().ncomp() as usize;
                let st = self.state.as_ref().expect("state built");
                st.events[c].k0.record(&stream).call("cuEventRecord")?;
            } else {
                let st = self.state.as_mut().expect("state built");
                let runs = &*chunk_runs(&st.plan.chunks[c], &st.plan, whole_bins);
                let src: &[T] = if direct {
                    batch.data()
                } else {
                    let t = Instant::now();
                    let h = st.h_data.as_mut().expect("staging").as_mut_slice();
                    let src = batch.data();
                    self.copies.install(|| par_copy_runs(h, src, runs));
                    host_ms += t.elapsed().as_secs_f64() * 1e3;
                    st.h_data.as_ref().expect("staging").as_slice()
                };
                st.events[c].up0.record(&stream).call("cuEventRecord")?;
                st.d_data.upload_runs(runs, src, &stream)?;
                bytes_up += runs.iter().map(|r| r.1).sum::<usize>();
                st.events[c].k0.record(&stream).call("cuEventRecord")?;
            }
            self.launch_scan(c, &stream)?;
            let st = self.state.as_ref().expect("state built");
            st.events[c].scanned.record(&stream).call("cuEventRecord")?;
            self.launch_sweeps(c, order, &stream)?;
            let st = self.state.as_mut().expect("state built");
            st.events[c].k1.record(&stream).call("cuEventRecord")?;
            if let (true, Some(table)) = (store, ext_store) {
                // The boxes' interiors and the fluxes go now, behind the
                // sweeps: neither is an input of the step, so a failed
                // step loses nothing it would need.
                let (_, data, flux) = batch.buffers_mut();
                let src = if self.ext_out.is_some() {
                    ext_ptr.expect("external table")
                } else {
                    0
                };
                self.launch_store(
                    c,
                    data.as_mut_ptr(),
                    Some((table, src, STORE_BOXES)),
                    &stream,
                )?;
                if let Some(boxes) = ext.as_deref_mut() {
                    self.download_boxes(c, boxes, &stream)?;
                }
                if let Some(tables) = ext_restrict {
                    self.launch_restrict_out(c, tables, &stream)?;
                }
                let st = self.state.as_ref().expect("state built");
                st.d_flux
                    .download_runs(&st.plan.chunks[c].flux_runs, flux, &stream)?;
            }
            let st = self.state.as_mut().expect("state built");
            if !direct {
                let chunk = &st.plan.chunks[c];
                let runs = chunk_runs(chunk, &st.plan, whole_bins);
                let h = st.h_data.as_mut().expect("staging").as_mut_slice();
                st.d_data.download_runs(&runs, h, &stream)?;
                let hf = st.h_flux.as_mut().expect("staging").as_mut_slice();
                st.d_flux.download_runs(&chunk.flux_runs, hf, &stream)?;
            }
            self.download_results(c, true, true)?;
            let st = self.state.as_ref().expect("state built");
            st.events[c].done.record(&stream).call("cuEventRecord")?;
        }
        let wait = Instant::now();
        self.end_step()?;
        self.totals.issue_secs += (wait - issue).as_secs_f64();
        self.totals.wait_secs += wait.elapsed().as_secs_f64();

        let (bad, courant) = self.scan_verdict();
        let failed = bad || self.cfl_exceeded(courant) || self.sweep_error(order).is_some();
        if failed {
            // The batch is untouched: the CPU reproduces its own error (on
            // the external boxes' values too, which the batch lacks).
            if let Some(boxes) = ext.as_deref() {
                load_boxes(batch, boxes, probes)?;
            }
            let gpu_err = self.sweep_error(order);
            let e = input_error(&self.cpu, batch, dt, order, bad, courant, gpu_err);
            return Err(match e {
                CudaError::Internal(why) => {
                    CudaError::Internal(format!("{why}; {}", self.input_mismatch(batch)))
                }
                e => e,
            });
        }
        let t = Instant::now();
        let mut download_ms = 0.0;
        {
            let st = self.state.as_ref().expect("state built");
            let (_, data, flux) = batch.buffers_mut();
            if direct {
                for (c, chunk) in st.plan.chunks.iter().enumerate() {
                    let stream = self.stream_of(c);
                    match (store, ext_store) {
                        // The boxes and fluxes went with the sweeps.
                        (true, Some(table)) => {
                            self.launch_store(
                                c,
                                data.as_mut_ptr(),
                                Some((table, 0, STORE_BINS)),
                                stream,
                            )?;
                            continue;
                        }
                        (true, None) => self.launch_store(c, data.as_mut_ptr(), None, stream)?,
                        (false, _) => {
                            let runs = chunk_runs(chunk, &st.plan, whole_bins);
                            st.d_data.download_runs(&runs, data, stream)?;
                        }
                    }
                    st.d_flux.download_runs(&chunk.flux_runs, flux, stream)?;
                }
                for s in &self.streams {
                    s.synchronize().call("cuStreamSynchronize")?;
                }
                download_ms = t.elapsed().as_secs_f64() * 1e3;
            } else {
                let h = st.h_data.as_ref().expect("staging").as_slice();
                let hf = st.h_flux.as_ref().expect("staging").as_slice();
                self.copies.install(|| {
                    for chunk in &st.plan.chunks {
                        let runs = chunk_runs(chunk, &st.plan, whole_bins);
                        par_copy_runs(data, h, &runs);
                        par_copy_runs(flux, hf, &chunk.flux_runs);
                    }
                });
                host_ms += t.elapsed().as_secs_f64() * 1e3;
            }
        }
        if let Some(boxes) = ext {
            let t = Instant::now();
            self.finish_restricted(batch.layout(), boxes)?;
            host_ms += t.elapsed().as_secs_f64() * 1e3;
        }
        let mut timing = self.collect_timing(true, host_ms)?;
        let bytes_down: usize = {
            let st = self.state.as_ref().expect("state built");
            let chunks = &st.plan.chunks;
            let flux: usize = chunks.iter().flat_map(|c| &c.flux_runs).map(|r| r.1).sum();
            let data: usize = if store {
                let l = batch.layout();
                (l.interior_cells() as usize - saved.1 + saved.2) * l.ncomp() as usize
            } else {
                chunks
                    .iter()
                    .map(|c| {
                        let runs = chunk_runs(c, &st.plan, whole_bins);
                        runs.iter().map(|r| r.1).sum::<usize>()
                    })
                    .sum()
            };
            flux + data
        };
        let value = std::mem::size_of::<T>();
        // Probes read from their parents' device copies crossed no bus.
        let bytes_up = bytes_up - saved.0 * batch.layout().ncomp() as usize;
        let tot = &mut self.totals;
        tot.gpu_secs += timing.total_ms * 1e-3;
        tot.upload_secs += timing.upload_ms * 1e-3;
        tot.kernel_secs += (timing.scan_ms + timing.sweep_ms) * 1e-3;
        tot.download_secs += (timing.download_ms + download_ms) * 1e-3;
        tot.bytes_up += (bytes_up * value) as u64;
        tot.bytes_down += (bytes_down * value) as u64;
        timing.download_ms += download_ms;
        timing.total_ms += download_ms;
        self.timing = timing;
        Ok(self.report(courant))
    }

    /// One step of the resident batch: scan, host check, sweeps.
    pub(super) fn run_resident(
        &mut self,
        dt: DtSpec<'_>,
        order: SweepOrder,
    ) -> Result<StepReport, CudaError> {
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        self.prepare_step(dt)?;
        self.begin_step(false)?;
        let nchunks = self.state.as_ref().expect("state built").plan.chunks.len();
        for c in 0..nchunks {
            let stream = self.stream_of(c).clone();
            let st = self.state.as_ref().expect("state built");
            st.events[c].k0.record(&stream).call("cuEventRecord")?;
            self.launch_scan(c, &stream)?;
            let st = self.state.as_ref().expect("state built");
            st.events[c].scanned.record(&stream).call("cuEventRecord")?;
            self.download_results(c, true, false)?;
            let st = self.state.as_ref().expect("state built");
            st.events[c].up0.record(&stream).call("cuEventRecord")?;
        }
        for c in 0..nchunks {
            let st = self.state.as_ref().expect("state built");
            st.events[c].up0.synchronize().call("cuEventSynchronize")?;
        }
        let (bad, courant) = self.scan_verdict();
        if bad || self.cfl_exceeded(courant) {
            // Nothing was swept: reproduce the error on the CPU from a copy.
            let mut copy = self.resident_batch()?;
            self.download_resident(&mut copy)?;
            return Err(input_error(&self.cpu, &copy, dt, order, bad, courant, None));
        }
        let s0 = self.streams[0].clone();
        {
            let st = self.state.as_ref().expect("state built");
            st.sweeps.record(&s0).call("cuEventRecord")?;
            for s in &self.streams[1..] {
                s.wait(&st.sweeps).call("cuStreamWaitEvent")?;
            }
        }
        for c in 0..nchunks {
            let stream = self.stream_of(c).clone();
            self.launch_sweeps(c, order, &stream)?;
            let st = self.state.as_ref().expect("state built");
            st.events[c].k1.record(&stream).call("cuEventRecord")?;
            self.download_results(c, false, true)?;
            let st = self.state.as_ref().expect("state built");
            st.events[c].done.record(&stream).call("cuEventRecord")?;
        }
        self.end_step()?;
        if let Some(e) = self.sweep_error(order) {
            return Err(e.into());
        }
        self.timing = self.collect_timing(false, 0.0)?;
        Ok(self.report(courant))
    }

    fn collect_timing(&self, io: bool, host_ms: f64) -> Result<super::StepTiming, CudaError> {
        let st = self.state.as_ref().expect("state built");
        let mut t = super::StepTiming {
            total_ms: ms(&st.start, &st.end)?,
            host_ms,
            ..Default::default()
        };
        for ev in &st.events {
            t.scan_ms += ms(&ev.k0, &ev.scanned)?;
            if io {
                t.upload_ms += ms(&ev.up0, &ev.k0)?;
                t.sweep_ms += ms(&ev.scanned, &ev.k1)?;
                t.download_ms += ms(&ev.k1, &ev.done)?;
            }
        }
        if !io {
            t.sweep_ms = ms(&st.sweeps, &st.end)?;
        }
        Ok(t)
    }

    /// An empty batch with the resident layout.
    fn resident_batch(&self) -> Result<Batch<T>, CudaError> {
        let st = self.state.as_ref().expect("state built");
        let layout = BatchLayout::from_descs(
            st.plan.bin_edge,
            st.plan.ncomp,
            st.plan.nbins,
            st.plan.descs.clone(),
        )?;
        Ok(Batch::new(layout))
    }

    /// Makes `layout` the resident one without copying data (its cells are
    /// set by the caller's kernels); the flux buffer is zeroed.
    pub(super) fn attach_resident(&mut self, layout: &BatchLayout) -> Result<(), CudaError> {
        self.cpu.check_layout(layout)?;
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        if self.resident
            && let Some(old) = self.state.take()
        {
            // A resident hierarchy's layout never comes back: its arrays go
            // to the next one instead of the cache of recent layouts.
            self.discard(old);
        }
        self.ensure_state(layout)?;
        let s0 = self.streams[0].clone();
        let st = self.state.as_ref().expect("state built");
        st.d_flux.fill_bytes(0, st.d_flux.len(), 0, &s0)?;
        self.resident = true;
        Ok(())
    }

    #[cfg(feature = "bench")]
    pub(super) fn upload_resident(&mut self, batch: &Batch<T>) -> Result<(), CudaError> {
        self.cpu.check_layout(batch.layout())?;
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        self.ensure_state(batch.layout())?;
        let ctx = self.dev.ctx.clone();
        let s0 = self.streams[0].clone();
        let st = self.state.as_mut().expect("state built");
        // Through pinned memory: several times faster than from the batch's
        // pageable vector.
        st.ensure_staging(&ctx)?;
        let h = st.h_data.as_mut().expect("staging").as_mut_slice();
        self.copies.install(|| par_copy(h, batch.data()));
        st.d_data.upload(0, h, &s0)?;
        st.d_flux.fill_bytes(0, st.d_flux.len(), 0, &s0)?;
        s0.synchronize().call("cuStreamSynchronize")
    }

    pub(super) fn download_resident(&mut self, batch: &mut Batch<T>) -> Result<(), CudaError> {
        let st = self.state.as_ref().expect("state built");
        if !st.plan.matches(batch.layout()) {
            return Err(CudaError::Config(
                "download: the batch's layout differs from the uploaded one".into(),
            ));
        }
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let s0 = self.streams[0].clone();
        let (_, data, flux) = batch.buffers_mut();
        st.d_data.download(0, data, &s0)?;
        st.d_flux.download(0, flux, &s0)?;
        s0.synchronize().call("cuStreamSynchronize")
    }
}

/// The integer codes of the scheme options (`opt0`, `opt1` in the kernels).
fn scheme_options(s: &Scheme) -> (i32, i32) {
    use quilt_sweep::scheme::{RtvdLimiter, SlopeLimiter, TvdFlux, WafLimiter};
    match *s {
        Scheme::Rtvd { limiter } => (
            match limiter {
                RtvdLimiter::VanLeer => 0,
                RtvdLimiter::Minmod => 1,
            },
            0,
        ),
        Scheme::Tvd { slope, flux } => (
            match slope {
                SlopeLimiter::Minmod => 0,
                SlopeLimiter::Mc => 1,
            },
            match flux {
                TvdFlux::Hll => 0,
                TvdFlux::Llf => 1,
            },
        ),
        Scheme::Waf { limiter } => (
            match limiter {
                WafLimiter::Superbee => 0,
                WafLimiter::VanLeer => 1,
                WafLimiter::VanAlbada => 2,
                WafLimiter::Minbee => 3,
            },
            0,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::courant_exceeds;

    #[test]
    fn the_fast_scan_may_round_past_the_limit_and_no_further() {
        let limit = 0.8;
        // The limit itself and the rounding of a bitwise product pass.
        assert!(!courant_exceeds(limit, limit, false));
        assert!(!courant_exceeds(limit * (1.0 + 1e-13), limit, false));
        assert!(courant_exceeds(limit * (1.0 + 1e-9), limit, false));
        // An f32 rate a few ulp above the CPU's passes on the fast path only.
        let f32_rounded = limit * (1.0 + 4.0 * f64::from(f32::EPSILON));
        assert!(courant_exceeds(f32_rounded, limit, false));
        assert!(!courant_exceeds(f32_rounded, limit, true));
        // A real excess fails on both.
        assert!(courant_exceeds(limit * 1.001, limit, true));
        assert!(courant_exceeds(limit * 1.001, limit, false));
    }
}
