//! Device-resident hierarchies: a whole hierarchy's batch kept on the
//! device with the flat items of its step ([`StepItems`]), so that a step
//! is the fill, the probe copies, the sweeps, refluxing and restriction,
//! all launched from the host with nothing but the step's constants and
//! its verdicts crossing the bus.
//!
//! Every item phase is one launch of a `kernels/amr.cu` entry point with
//! one thread per cell of the phase; phases and levels run in order on
//! stream 0, which the sweeps' streams wait for.

use crate::CudaEos;
use crate::params::EosArgs;
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaFunction, CudaStream, LaunchConfig, PushKernelArg};
use quilt_mesh::flat::{CopyItem, FlatTag, FlatTransfer, RefluxItem, StepItems, starts};
use quilt_sweep::{BatchLayout, StepReport, SweepOrder};

use super::CudaSolver;
use super::run::ms;
use super::state::timing_event;
use crate::buffer::DeviceBuffer;
use crate::device::{self, Build};
use crate::error::{CudaError, DriverContext};
use crate::real::GpuReal;
use crate::source::KernelFile;

/// Threads per block of the item kernels.
const ITEM_BLOCK: u32 = 256;

/// One interior box of the CFL scan (`RateItem` of `kernels/amr.cu`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct RateItem {
    base: u64,
    n: [u32; 3],
    pad: u32,
    dx: [f64; 3],
}

/// One phase's items on the device: their bytes, the prefix sums of their
/// cells followed by each block's first item ([`block_firsts`]), and the
/// counts a launch needs.
struct Phase {
    items: DeviceBuffer<u8>,
    starts: DeviceBuffer<u64>,
    n: u32,
    total: u64,
}

impl Phase {
    fn new<I: bytemuck::Pod>(
        ctx: &Arc<cudarc::driver::CudaContext>,
        stream: &CudaStream,
        items: &[I],
        cells: impl Iterator<Item = [u32; 3]>,
    ) -> Result<Self, CudaError> {
        let mut s = starts(cells);
        // The kernels split an item's cell index in 32 bits.
        if let Some(w) = s.windows(2).find(|w| w[1] - w[0] > u64::from(u32::MAX)) {
            return Err(CudaError::Config(format!(
                "an item of {} cells (the kernels take at most 2^32 - 1 per item)",
                w[1] - w[0]
            )));
        }
        let bytes: &[u8] = bytemuck::cast_slice(items);
        let d_items = DeviceBuffer::new(ctx, bytes.len())?;
        d_items.upload(0, bytes, stream)?;
        let n = u32::try_from(items.len())
            .map_err(|_| CudaError::Config(format!("{} items in one phase", items.len())))?;
        let total = *s.last().unwrap_or(&0);
        let firsts = block_firsts(&s, ITEM_BLOCK);
        s.extend(firsts);
        let d_starts = DeviceBuffer::new(ctx, s.len())?;
        d_starts.upload(0, &s, stream)?;
        Ok(Self {
            items: d_items,
            starts: d_starts,
            n,
            total,
        })
    }

    fn config(&self) -> Option<LaunchConfig> {
        (self.total > 0).then(|| LaunchConfig {
            grid_dim: (self.total.div_ceil(u64::from(ITEM_BLOCK)) as u32, 1, 1),
            block_dim: (ITEM_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        })
    }
}

/// For every block of `block` threads over the cells that the prefix sums
/// `starts` count, the item of its first cell, and after them the item of
/// the last cell: the items of block `b` lie between entries `b` and
/// `b + 1`. The kernels look their block's range up here instead of
/// bisecting all the items from the top, a chain of dependent loads that
/// every block would otherwise wait for before its first copy.
fn block_firsts(starts: &[u64], block: u32) -> Vec<u64> {
    let Some(&total) = starts.last() else {
        return Vec::new();
    };
    if total == 0 {
        return Vec::new();
    }
    let n = starts.len() - 1;
    let blocks = total.div_ceil(u64::from(block));
    let mut out = Vec::with_capacity(blocks as usize + 1);
    let mut k = 0;
    for b in 0..=blocks {
        let t = (b * u64::from(block)).min(total - 1);
        // The last item starting at or before cell `t`, as the kernels'
        // bisection finds it (empty items before it are passed over).
        while k + 1 < n && starts[k + 1] <= t {
            k += 1;
        }
        out.push(k as u64);
    }
    out
}

/// One fine level's refluxing passes and restriction.
struct LevelPhases {
    reflux: Vec<Phase>,
    coarse: DeviceBuffer<u64>,
    restrict: Phase,
}

/// The entry points of `kernels/amr.cu` for one precision.
struct AmrKernels {
    copy: CudaFunction,
    interp: CudaFunction,
    boundary: CudaFunction,
    restrict: CudaFunction,
    reflux: CudaFunction,
    rate: CudaFunction,
    tag: CudaFunction,
}

/// What a resident hierarchy keeps on the device besides its batch.
pub(crate) struct Hierarchy {
    kernels: AmrKernels,
    ncomp: u32,
    limiter: u32,
    copies: Phase,
    interp: Phase,
    flags: DeviceBuffer<u8>,
    boundary: [Phase; 3],
    after: Phase,
    levels: Vec<LevelPhases>,
    scratch: DeviceBuffer<u8>,
    rates: Phase,
    rate_out: DeviceBuffer<u64>,
    /// The batch's bins, for the strides of the CFL scan.
    bins: quilt_mesh::BinGeometry,
    /// Interiors from the compact array into the batch, and back.
    load: Phase,
    store: Phase,
    /// Values of the compact array.
    interior_len: u64,
    /// Stream 0's timeline through a step: before the fill, after its
    /// copies, interpolation, boundaries and probe copies, after the
    /// sweeps, after the levels; and around the rate kernel.
    marks: [CudaEvent; 7],
    rate_marks: [CudaEvent; 2],
}

/// Seconds between two recorded events.
fn seconds(a: &CudaEvent, b: &CudaEvent) -> Result<f64, CudaError> {
    Ok(ms(a, b)? * 1e-3)
}

impl<T: GpuReal, E: CudaEos> CudaSolver<T, E> {
    /// Keeps a hierarchy on the device: its batch of `layout` (the first
    /// `patches` descriptors are the hierarchy's patches, the rest its flux
    /// probes) with every patch's interior from `interiors` (compact, in
    /// the order of `items.interiors`), and the items of its step.
    pub fn load_hierarchy(
        &mut self,
        layout: &BatchLayout,
        items: &StepItems,
        patches: usize,
        interiors: &[T],
    ) -> Result<(), CudaError> {
        self.hierarchy = None;
        if interiors.len() as u64 != items.interior_len {
            return Err(CudaError::Config(format!(
                "{} interior values given, the items move {}",
                interiors.len(),
                items.interior_len
            )));
        }
        let t0 = Instant::now();
        self.attach_resident(layout)?;
        let t_attach = t0.elapsed().as_secs_f64();
        let hierarchy = self.hierarchy_items(layout, items, patches)?;
        let s0 = self.streams[0].clone();
        let t_items = t0.elapsed().as_secs_f64() - t_attach;
        // The interiors cross the bus straight from the caller's memory:
        // a page-locked staging buffer takes longer to pin than the copy
        // does, at every load that grows it.
        self.ensure_interior_io(interiors.len())?;
        let io = self.hierarchy_io.as_ref().expect("just made");
        io.upload(0, interiors, &s0)?;
        self.hierarchy = Some(hierarchy);
        let h = self.hierarchy.as_ref().expect("just set");
        self.launch_copy(h, &h.load, io.at(0))?;
        s0.synchronize().call("cuStreamSynchronize")?;
        log::debug!(
            "hierarchy loaded: layout state {t_attach:.3} s, items {t_items:.3} s, interiors {:.3} s",
            t0.elapsed().as_secs_f64() - t_attach - t_items
        );
        Ok(())
    }

    /// The device form of a hierarchy's step items over the batch of
    /// `layout` (its first `patches` descriptors the hierarchy's patches).
    fn hierarchy_items(
        &self,
        layout: &BatchLayout,
        items: &StepItems,
        patches: usize,
    ) -> Result<Hierarchy, CudaError> {
        let ctx = self.dev.ctx.clone();
        let s0 = self.streams[0].clone();
        let module = device::module(
            &self.dev,
            KernelFile::Amr,
            Build {
                fma: self.config.fma,
                eos: E::SOURCE,
                ..Build::default()
            },
        )?;
        let f = |name: &str| device::function(&module, &format!("{name}_{}", T::NAME));
        let kernels = AmrKernels {
            copy: f("flat_copy")?,
            interp: f("flat_interp")?,
            boundary: f("flat_boundary")?,
            restrict: f("flat_restrict")?,
            reflux: f("flat_reflux")?,
            rate: f("flat_rate")?,
            tag: f("flat_tag")?,
        };
        let fill = &items.fill;
        let copy_phase = |list: &[CopyItem]| Phase::new(&ctx, &s0, list, list.iter().map(|c| c.n));
        let copies = copy_phase(&fill.copies)?;
        let after = copy_phase(&items.after)?;
        let interp = Phase::new(&ctx, &s0, &fill.interp, fill.interp.iter().map(|c| c.n))?;
        let flags = DeviceBuffer::new(&ctx, fill.flags.len())?;
        flags.upload(0, &fill.flags, &s0)?;
        let boundary = [0, 1, 2].map(|a| {
            let b = &fill.boundary[a];
            Phase::new(&ctx, &s0, b, b.iter().map(|c| c.n))
        });
        let [bx, by, bz] = boundary;
        let boundary = [bx?, by?, bz?];
        let mut levels = Vec::with_capacity(items.levels.len());
        for l in &items.levels {
            let r = &l.reflux;
            // Items of a pass share no cell; each pass keeps the items'
            // order, and its cells index the coarse list from the item.
            let mut reflux = Vec::with_capacity(r.passes as usize);
            for pass in 0..r.passes {
                let list: Vec<RefluxItem> =
                    r.items.iter().filter(|i| i.pass == pass).copied().collect();
                reflux.push(Phase::new(&ctx, &s0, &list, list.iter().map(|i| i.n))?);
            }
            let coarse: Vec<u64> = r.coarse.iter().flat_map(|c| [c[0], c[1]]).collect();
            let d_coarse = DeviceBuffer::new(&ctx, coarse.len())?;
            d_coarse.upload(0, &coarse, &s0)?;
            levels.push(LevelPhases {
                reflux,
                coarse: d_coarse,
                restrict: Phase::new(&ctx, &s0, &l.restrict, l.restrict.iter().map(|i| i.n))?,
            });
        }
        let scratch_bytes = usize::try_from(fill.scratch_len)
            .ok()
            .and_then(|n| n.checked_mul(std::mem::size_of::<T>()))
            .ok_or_else(|| CudaError::Config("fill scratch overflows".into()))?;
        let scratch = DeviceBuffer::new(&ctx, scratch_bytes)?;
        let load_items: Vec<CopyItem> = items.interiors.iter().map(CopyItem::reversed).collect();
        let load = copy_phase(&load_items)?;
        let store = copy_phase(&items.interiors)?;
        let bins = layout.bins();
        let rate_items: Vec<RateItem> = layout.patches()[..patches]
            .iter()
            .map(|d| {
                let g = d.ghost as usize;
                RateItem {
                    base: bins.index(d.bin as usize, 0, d.offset.map(|v| v as usize + g)) as u64,
                    n: d.interior(),
                    pad: 0,
                    dx: d.dx,
                }
            })
            .collect();
        let rates = Phase::new(&ctx, &s0, &rate_items, rate_items.iter().map(|r| r.n))?;
        let rate_out = DeviceBuffer::new(&ctx, 2)?;
        let mark = || timing_event(&ctx);
        Ok(Hierarchy {
            kernels,
            ncomp: items.ncomp,
            limiter: quilt_mesh::flat::limiter_code(fill.limiter),
            copies,
            interp,
            flags,
            boundary,
            after,
            levels,
            scratch,
            rates,
            rate_out,
            marks: [
                mark()?,
                mark()?,
                mark()?,
                mark()?,
                mark()?,
                mark()?,
                mark()?,
            ],
            rate_marks: [mark()?, mark()?],
            bins: layout.bins(),
            load,
            store,
            interior_len: items.interior_len,
        })
    }

    fn hierarchy(&self) -> Result<&Hierarchy, CudaError> {
        self.hierarchy
            .as_ref()
            .ok_or_else(|| CudaError::Config("no hierarchy is loaded on the device".into()))
    }

    /// The largest signal rate over the interiors of the hierarchy's
    /// patches (as quilt-integrator's CFL scan computes it), or `None` if
    /// a cell is bad.
    pub fn hierarchy_rate(&mut self) -> Result<Option<f64>, CudaError> {
        let eos = EosArgs::of(&self.cpu.gas().eos);
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let h = self.hierarchy()?;
        let st = self.state.as_ref().expect("a loaded hierarchy has a state");
        let s0 = &self.streams[0];
        h.rate_out.fill_bytes(0, 2, 0, s0)?;
        h.rate_marks[0].record(s0).call("cuEventRecord")?;
        if let Some(cfg) = h.rates.config() {
            let [sy, sz, sc] = h.bins.strides().map(|s| s as u64);
            let (items, starts, data, out) = (
                h.rates.items.at(0),
                h.rates.starts.at(0),
                st.d_data.at(0),
                h.rate_out.at(0),
            );
            let mut l = s0.launch_builder(&h.kernels.rate);
            l.arg(&items)
                .arg(&starts)
                .arg(&h.rates.n)
                .arg(&h.rates.total)
                .arg(&sy)
                .arg(&sz)
                .arg(&sc)
                .arg(&eos)
                .arg(&data)
                .arg(&out);
            // SAFETY: arguments match `flat_rate_T`; the items address the
            // interiors of the uploaded batch.
            unsafe { l.launch(cfg) }.call("cuLaunchKernel(flat_rate)")?;
        }
        h.rate_marks[1].record(s0).call("cuEventRecord")?;
        let mut out = [0u64; 2];
        h.rate_out.download(0, &mut out, s0)?;
        s0.synchronize().call("cuStreamSynchronize")?;
        self.totals.resident_secs.rate += seconds(&h.rate_marks[0], &h.rate_marks[1])?;
        Ok((out[1] == 0).then(|| f64::from_bits(out[0])))
    }

    /// One step of the resident hierarchy: the fill, the probe copies, the
    /// sweeps (as [`CudaSolver::step_resident`]) and, finest level first,
    /// refluxing and restriction.
    pub fn step_hierarchy(&mut self, dt: f64, order: SweepOrder) -> Result<StepReport, CudaError> {
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        self.mark(0)?;
        self.launch_fill(true)?;
        let report = self.step_resident(dt, order)?;
        self.mark(5)?;
        self.launch_levels()?;
        self.mark(6)?;
        self.streams[0].synchronize().call("cuStreamSynchronize")?;
        let m = &self.hierarchy()?.marks;
        let mut parts = [0.0; 6];
        for (k, p) in parts.iter_mut().enumerate() {
            *p = seconds(&m[k], &m[k + 1])?;
        }
        log::debug!(
            "resident step on the device, ms: fill {:.3} (copies {:.3}, interpolation {:.3}, boundaries {:.3}, probes {:.3}), scan and sweeps {:.3}, refluxing and restriction {:.3}",
            1e3 * parts[..4].iter().sum::<f64>(),
            1e3 * parts[0],
            1e3 * parts[1],
            1e3 * parts[2],
            1e3 * parts[3],
            1e3 * parts[4],
            1e3 * parts[5]
        );
        let (fill, sweeps, levels) = (parts[..4].iter().sum::<f64>(), parts[4], parts[5]);
        let t = &mut self.totals;
        t.resident_steps += 1;
        t.resident_secs.fill += fill;
        t.resident_secs.sweeps += sweeps;
        t.resident_secs.levels += levels;
        Ok(report)
    }

    /// The device's compact interior array holding `n` values (kept
    /// from one load, store or regrid to the next, with room to grow).
    fn ensure_interior_io(&mut self, n: usize) -> Result<(), CudaError> {
        let io = match self.hierarchy_io.take().map(|b| b.reuse(n)) {
            Some(Ok(b)) => b,
            other => {
                drop(other);
                DeviceBuffer::with_room(&self.dev.ctx, n, n + n / 4)?
            }
        };
        self.hierarchy_io = Some(io);
        Ok(())
    }

    /// Copies every patch's interior back into `interiors` (compact, in
    /// the order of the loaded items' `interiors`).
    pub fn store_hierarchy(&mut self, interiors: &mut [T]) -> Result<(), CudaError> {
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let held = self.hierarchy()?.interior_len;
        if interiors.len() as u64 != held {
            return Err(CudaError::Config(format!(
                "{} interior values asked for, the hierarchy holds {held}",
                interiors.len(),
            )));
        }
        self.ensure_interior_io(interiors.len())?;
        let h = self.hierarchy()?;
        let io = self.hierarchy_io.as_ref().expect("just made");
        let s0 = self.streams[0].clone();
        self.launch_copy(h, &h.store, io.at(0))?;
        io.download(0, interiors, &s0)?;
        s0.synchronize().call("cuStreamSynchronize")
    }

    /// Fills the ghost cells of the resident hierarchy and tags its
    /// patches by `tag`'s items into `out` (its words; as
    /// [`FlatTag::run`] computes them).
    pub fn tag_hierarchy(&mut self, tag: &FlatTag, out: &mut [u32]) -> Result<(), CudaError> {
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        if (out.len() as u64) < tag.words {
            return Err(CudaError::Config(format!(
                "{} tag words given, the items write {}",
                out.len(),
                tag.words
            )));
        }
        let levels = (tag.dx.len() as u32).max(1);
        if tag.thresholds.len() != tag.rules.len() * levels as usize * 13
            || tag.rules.len() > u32::MAX as usize
        {
            return Err(CudaError::Config(format!(
                "{} tag thresholds for {} rules and {levels} levels",
                tag.thresholds.len(),
                tag.rules.len()
            )));
        }
        self.launch_fill(false)?;
        if tag.items.is_empty() {
            return self.streams[0].synchronize().call("cuStreamSynchronize");
        }
        let ctx = self.dev.ctx.clone();
        let s0 = self.streams[0].clone();
        // One thread per bit: 64 per row word.
        let items = Phase::new(
            &ctx,
            &s0,
            &tag.items,
            tag.items.iter().map(|it| [it.wpr * 64, it.n[1], it.n[2]]),
        )?;
        let rules = DeviceBuffer::<u8>::new(&ctx, std::mem::size_of_val(tag.rules.as_slice()))?;
        rules.upload(0, bytemuck::cast_slice(&tag.rules), &s0)?;
        // In the field precision, as the detectors compare.
        let thr: Vec<T> = tag
            .thresholds
            .iter()
            .map(|&v| <T as num_traits::NumCast>::from(v).unwrap_or_else(T::infinity))
            .collect();
        let d_thr = DeviceBuffer::new(&ctx, thr.len())?;
        d_thr.upload(0, &thr, &s0)?;
        let words = tag.words as usize;
        let d_out = DeviceBuffer::<u32>::new(&ctx, words)?;
        let h = self.hierarchy()?;
        let st = self.state.as_ref().expect("a loaded hierarchy has a state");
        if let Some(cfg) = items.config() {
            let nrules = tag.rules.len() as u32;
            let (it, starts, r, t, data, o) = (
                items.items.at(0),
                items.starts.at(0),
                rules.at(0),
                d_thr.at(0),
                st.d_data.at(0),
                d_out.at(0),
            );
            let mut l = s0.launch_builder(&h.kernels.tag);
            l.arg(&it)
                .arg(&starts)
                .arg(&items.n)
                .arg(&items.total)
                .arg(&r)
                .arg(&nrules)
                .arg(&t)
                .arg(&levels)
                .arg(&data)
                .arg(&o);
            // SAFETY: arguments match `flat_tag_T`; the items address the
            // interiors (grown by the detectors' reach) of the batch.
            unsafe { l.launch(cfg) }.call("cuLaunchKernel(flat_tag)")?;
        }
        d_out.download(0, &mut out[..words], &s0)?;
        s0.synchronize().call("cuStreamSynchronize")
    }

    /// Replaces the resident hierarchy by the one of `layout` and `items`
    /// (as [`CudaSolver::load_hierarchy`] takes them), its interiors moved
    /// from the resident batch by `transfer` on the device. On an error
    /// the resident hierarchy is gone.
    pub fn regrid_hierarchy(
        &mut self,
        layout: &BatchLayout,
        items: &StepItems,
        patches: usize,
        transfer: &FlatTransfer,
    ) -> Result<(), CudaError> {
        self.dev.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let t0 = Instant::now();
        self.hierarchy()?;
        // The old batch stays until its values have moved; its other
        // arrays serve the new layout.
        self.hierarchy = None;
        let old = self
            .state
            .take()
            .expect("a loaded hierarchy has a state")
            .recycle_keeping_data(&mut self.spare);
        if (old.len() as u64) < transfer.old_len {
            return Err(CudaError::Config(format!(
                "the transfer reads {} values of a batch of {}",
                transfer.old_len,
                old.len()
            )));
        }
        let moved = self.move_into(layout, items, patches, transfer, &old);
        self.spare.give(old);
        moved?;
        log::debug!(
            "hierarchy regridded on the device in {:.3} s",
            t0.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// [`CudaSolver::regrid_hierarchy`] once the old batch is `old`.
    fn move_into(
        &mut self,
        layout: &BatchLayout,
        items: &StepItems,
        patches: usize,
        transfer: &FlatTransfer,
        old: &DeviceBuffer<T>,
    ) -> Result<(), CudaError> {
        self.attach_resident(layout)?;
        let h = self.hierarchy_items(layout, items, patches)?;
        let st = self.state.as_ref().expect("state attached");
        if (st.d_data.len() as u64) < transfer.new_len {
            return Err(CudaError::Config(format!(
                "the transfer writes {} values of a batch of {}",
                transfer.new_len,
                st.d_data.len()
            )));
        }
        let ctx = self.dev.ctx.clone();
        let s0 = self.streams[0].clone();
        let copy_phase = |list: &[CopyItem]| Phase::new(&ctx, &s0, list, list.iter().map(|c| c.n));
        let copies = copy_phase(&transfer.copies)?;
        let flags = DeviceBuffer::new(&ctx, transfer.flags.len().max(1))?;
        flags.upload(0, &transfer.flags, &s0)?;
        let scratch = DeviceBuffer::<T>::new(&ctx, (transfer.scratch_len as usize).max(1))?;
        let mut levels = Vec::with_capacity(transfer.levels.len());
        for l in &transfer.levels {
            levels.push((
                copy_phase(&l.gathers)?,
                Phase::new(&ctx, &s0, &l.interp, l.interp.iter().map(|i| i.n))?,
            ));
        }
        let data = st.d_data.at(0);
        let limiter = quilt_mesh::flat::limiter_code(transfer.limiter);
        self.launch_copy(&h, &copies, old.at(0))?;
        for (gathers, interp) in &levels {
            self.launch_copy(&h, gathers, scratch.at(0))?;
            self.launch_interp(&h, interp, limiter, flags.at(0), scratch.at(0), data)?;
        }
        s0.synchronize().call("cuStreamSynchronize")?;
        self.hierarchy = Some(h);
        Ok(())
    }

    /// Frees the resident hierarchy's items; its batch's arrays go to the
    /// spare arrays of the next layouts (no later batch has its layout).
    pub fn unload_hierarchy(&mut self) {
        if self.hierarchy.take().is_some() && self.resident {
            self.resident = false;
            if let Some(st) = self.state.take() {
                self.discard(st);
            }
        }
    }

    /// Launches the copy items of `p` on stream 0, with `scratch` (a
    /// device address) as their second array.
    fn launch_copy(&self, h: &Hierarchy, p: &Phase, scratch: u64) -> Result<(), CudaError> {
        let Some(cfg) = p.config() else {
            return Ok(());
        };
        let st = self.state.as_ref().expect("a loaded hierarchy has a state");
        let data = st.d_data.at(0);
        let (items, starts) = (p.items.at(0), p.starts.at(0));
        let mut l = self.streams[0].launch_builder(&h.kernels.copy);
        l.arg(&items)
            .arg(&starts)
            .arg(&p.n)
            .arg(&p.total)
            .arg(&h.ncomp)
            .arg(&data)
            .arg(&scratch);
        // SAFETY: arguments match `flat_copy_T`; items address the batch
        // and the second array they were built for.
        unsafe { l.launch(cfg) }.call("cuLaunchKernel(flat_copy)")?;
        Ok(())
    }

    /// Launches the interpolation items of `p` on stream 0 (device
    /// addresses of their flags, their coarse scratch and the batch).
    fn launch_interp(
        &self,
        h: &Hierarchy,
        p: &Phase,
        limiter: u32,
        flags: u64,
        scratch: u64,
        data: u64,
    ) -> Result<(), CudaError> {
        let Some(cfg) = p.config() else {
            return Ok(());
        };
        let (items, starts) = (p.items.at(0), p.starts.at(0));
        let mut l = self.streams[0].launch_builder(&h.kernels.interp);
        l.arg(&items)
            .arg(&starts)
            .arg(&p.n)
            .arg(&p.total)
            .arg(&h.ncomp)
            .arg(&limiter)
            .arg(&flags)
            .arg(&scratch)
            .arg(&data);
        // SAFETY: arguments match `flat_interp_T`; the items address the
        // batch and the scratch they were built for.
        unsafe { l.launch(cfg) }.call("cuLaunchKernel(flat_interp)")?;
        Ok(())
    }

    /// Records the hierarchy's mark `k` on stream 0.
    fn mark(&self, k: usize) -> Result<(), CudaError> {
        self.hierarchy()?.marks[k]
            .record(&self.streams[0])
            .call("cuEventRecord")
    }

    /// The ghost fill's launches on stream 0; with `marked`, the
    /// hierarchy's marks 1 to 4 recorded after each phase.
    fn launch_fill(&self, marked: bool) -> Result<(), CudaError> {
        let h = self.hierarchy()?;
        let st = self.state.as_ref().expect("a loaded hierarchy has a state");
        let s0 = &self.streams[0];
        let mark = |k: usize| if marked { self.mark(k) } else { Ok(()) };
        let (data, scratch) = (st.d_data.at(0), h.scratch.at(0));
        self.launch_copy(h, &h.copies, scratch)?;
        mark(1)?;
        self.launch_interp(h, &h.interp, h.limiter, h.flags.at(0), scratch, data)?;
        mark(2)?;
        for p in &h.boundary {
            let Some(cfg) = p.config() else {
                continue;
            };
            let (items, starts) = (p.items.at(0), p.starts.at(0));
            let mut l = s0.launch_builder(&h.kernels.boundary);
            l.arg(&items)
                .arg(&starts)
                .arg(&p.n)
                .arg(&p.total)
                .arg(&h.ncomp)
                .arg(&data);
            // SAFETY: arguments match `flat_boundary_T`.
            unsafe { l.launch(cfg) }.call("cuLaunchKernel(flat_boundary)")?;
        }
        mark(3)?;
        self.launch_copy(h, &h.after, scratch)?;
        mark(4)
    }

    fn launch_levels(&self) -> Result<(), CudaError> {
        let h = self.hierarchy()?;
        let st = self.state.as_ref().expect("a loaded hierarchy has a state");
        let s0 = &self.streams[0];
        let (data, flux) = (st.d_data.at(0), st.d_flux.at(0));
        for l in &h.levels {
            for p in &l.reflux {
                let Some(cfg) = p.config() else {
                    continue;
                };
                let (items, starts, coarse) = (p.items.at(0), p.starts.at(0), l.coarse.at(0));
                let mut b = s0.launch_builder(&h.kernels.reflux);
                b.arg(&items)
                    .arg(&starts)
                    .arg(&p.n)
                    .arg(&p.total)
                    .arg(&h.ncomp)
                    .arg(&coarse)
                    .arg(&flux)
                    .arg(&data);
                // SAFETY: arguments match `flat_reflux_T`.
                unsafe { b.launch(cfg) }.call("cuLaunchKernel(flat_reflux)")?;
            }
            let p = &l.restrict;
            if let Some(cfg) = p.config() {
                let (items, starts) = (p.items.at(0), p.starts.at(0));
                let mut b = s0.launch_builder(&h.kernels.restrict);
                b.arg(&items)
                    .arg(&starts)
                    .arg(&p.n)
                    .arg(&p.total)
                    .arg(&h.ncomp)
                    .arg(&data);
                // SAFETY: arguments match `flat_restrict_T`.
                unsafe { b.launch(cfg) }.call("cuLaunchKernel(flat_restrict)")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::block_firsts;
    use rand::{RngExt, SeedableRng};

    /// The kernels' answer for cell `t`: the last item starting at or
    /// before it.
    fn item_of(starts: &[u64], t: u64) -> usize {
        starts[..starts.len() - 1]
            .iter()
            .rposition(|&s| s <= t)
            .expect("cell 0 starts item 0")
    }

    /// Every cell's item lies in its block's range, and the range's ends
    /// are the items of the block's first and last cells, for phases with
    /// empty items, items larger than a block and blocks of one item.
    #[test]
    fn block_ranges_hold_every_cells_item() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for case in 0..200 {
            let n = rng.random_range(1..60);
            let mut starts = vec![0u64];
            for _ in 0..n {
                let cells = match rng.random_range(0..4) {
                    0 => 0,
                    1 => rng.random_range(1..8),
                    2 => rng.random_range(1..300),
                    _ => rng.random_range(200..2000),
                };
                starts.push(starts.last().unwrap() + cells);
            }
            let total = *starts.last().unwrap();
            let block = [1u32, 7, 32, 256][case % 4];
            let firsts = block_firsts(&starts, block);
            if total == 0 {
                assert!(firsts.is_empty());
                continue;
            }
            let blocks = total.div_ceil(u64::from(block));
            assert_eq!(firsts.len() as u64, blocks + 1, "case {case}");
            for t in 0..total {
                let b = (t / u64::from(block)) as usize;
                let (lo, hi) = (firsts[b] as usize, (firsts[b + 1] as usize + 1).min(n));
                let k = item_of(&starts, t);
                assert!(
                    lo <= k && k < hi,
                    "case {case}: cell {t} item {k} not in {lo}..{hi}"
                );
            }
            for b in 0..blocks {
                assert_eq!(
                    firsts[b as usize] as usize,
                    item_of(&starts, b * u64::from(block))
                );
            }
            assert_eq!(
                firsts[blocks as usize] as usize,
                item_of(&starts, total - 1)
            );
        }
    }
}
