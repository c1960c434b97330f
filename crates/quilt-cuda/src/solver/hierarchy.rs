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
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaStream, PushKernelArg};
use quilt_mesh::flat::{CopyItem, FlatTag, FlatTransfer, RefluxItem, StepItems};
use quilt_sweep::{BatchLayout, StepReport, SweepOrder};
use rayon::prelude::*;

use super::CudaSolver;
use super::phases::{DeviceArena, Phase, PhaseArena};
use super::run::ms;
use super::state::timing_event;
use crate::buffer::{DeviceBuffer, PinnedBuffer};
use crate::device::{self, Build};
use crate::error::{CudaError, DriverContext};
use crate::real::GpuReal;
use crate::source::KernelFile;

/// One interior box of the CFL scan (`RateItem` of `kernels/amr.cu`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct RateItem {
    base: u64,
    n: [u32; 3],
    pad: u32,
    dx: [f64; 3],
}

/// One fine level's refluxing passes and restriction.
struct LevelPhases {
    reflux: Vec<Phase>,
    /// Device address of the coarse cells' list.
    coarse: u64,
    restrict: Phase,
}

/// The entry points of `kernels/amr.cu` for one precision.
#[derive(Clone)]
pub(crate) struct AmrKernels {
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
    /// The memory of every phase, the flags and the coarse lists.
    _arena: DeviceArena,
    ncomp: u32,
    limiter: u32,
    copies: Phase,
    interp: Phase,
    /// Device address of the interpolation's flags.
    flags: u64,
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

impl Hierarchy {
    /// The device form of a hierarchy's step items over the batch of
    /// `layout` (its first `patches` descriptors the hierarchy's patches),
    /// uploaded on `s0` (not synchronised); the state's values take
    /// `value_size` bytes.
    fn build(
        ctx: &Arc<CudaContext>,
        s0: &Arc<CudaStream>,
        (kernels, value_size): (AmrKernels, usize),
        (layout, items, patches): (&BatchLayout, &StepItems, usize),
        staging: Option<&mut Option<PinnedBuffer<u8>>>,
    ) -> Result<Self, CudaError> {
        let t0 = Instant::now();
        let fill = &items.fill;
        let load_items: Vec<CopyItem> = items.interiors.iter().map(CopyItem::reversed).collect();
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
        let mut a = PhaseArena::default();
        let copies = a.phase(&fill.copies, |c| c.n);
        let after = a.phase(&items.after, |c| c.n);
        let interp = a.phase(&fill.interp, |c| c.n);
        let flags = a.array(&fill.flags);
        let mut boundary = Vec::with_capacity(3);
        for b in &fill.boundary {
            boundary.push(a.phase(b, |c| c.n));
        }
        let mut levels = Vec::with_capacity(items.levels.len());
        for l in &items.levels {
            let r = &l.reflux;
            // Items of a pass share no cell; each pass keeps the items'
            // order, and its cells index the coarse list from the item.
            let lists: Vec<Vec<RefluxItem>> = (0..r.passes)
                .into_par_iter()
                .map(|pass| r.items.iter().filter(|i| i.pass == pass).copied().collect())
                .collect();
            let reflux: Vec<_> = lists
                .into_iter()
                .map(|list| a.phase_owned(list, |i| i.n))
                .collect();
            let coarse = a.array(&r.coarse);
            let restrict = a.phase(&l.restrict, |i| i.n);
            levels.push((reflux, coarse, restrict));
        }
        let load = a.phase(&load_items, |c| c.n);
        let store = a.phase(&items.interiors, |c| c.n);
        let rates = a.phase(&rate_items, |r| r.n);
        let t_pieces = t0.elapsed().as_secs_f64();
        let arena = a.upload(ctx, s0, staging)?;
        let t_upload = t0.elapsed().as_secs_f64() - t_pieces;
        let scratch_bytes = usize::try_from(fill.scratch_len)
            .ok()
            .and_then(|n| n.checked_mul(value_size))
            .ok_or_else(|| CudaError::Config("fill scratch overflows".into()))?;
        let scratch = DeviceBuffer::new(ctx, scratch_bytes)?;
        let rate_out = DeviceBuffer::new(ctx, 2)?;
        let mark = || timing_event(ctx);
        log::trace!(
            "hierarchy items built: pieces {t_pieces:.4} s, arena {t_upload:.4} s, scratch {:.4} s",
            t0.elapsed().as_secs_f64() - t_pieces - t_upload
        );
        let [bx, by, bz] = [0, 1, 2].map(|k| arena.phase(boundary[k]));
        Ok(Self {
            kernels,
            ncomp: items.ncomp,
            limiter: quilt_mesh::flat::limiter_code(fill.limiter),
            copies: arena.phase(copies),
            interp: arena.phase(interp),
            flags: arena.at(flags),
            boundary: [bx, by, bz],
            after: arena.phase(after),
            levels: levels
                .into_iter()
                .map(|(reflux, coarse, restrict)| LevelPhases {
                    reflux: reflux.into_iter().map(|p| arena.phase(p)).collect(),
                    coarse: arena.at(coarse),
                    restrict: arena.phase(restrict),
                })
                .collect(),
            scratch,
            rates: arena.phase(rates),
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
            load: arena.phase(load),
            store: arena.phase(store),
            interior_len: items.interior_len,
            _arena: arena,
        })
    }

    /// Whether these items were built for `items` over `patches`
    /// patches (their counts, phase by phase).
    fn built_for(&self, items: &StepItems, patches: usize) -> bool {
        let fill = &items.fill;
        let n = |p: &Phase| p.n as usize;
        n(&self.copies) == fill.copies.len()
            && n(&self.after) == items.after.len()
            && n(&self.interp) == fill.interp.len()
            && self
                .boundary
                .iter()
                .zip(&fill.boundary)
                .all(|(p, b)| n(p) == b.len())
            && self.levels.len() == items.levels.len()
            && self.levels.iter().zip(&items.levels).all(|(p, l)| {
                n(&p.restrict) == l.restrict.len()
                    && p.reflux.iter().map(n).sum::<usize>() == l.reflux.items.len()
            })
            && n(&self.store) == items.interiors.len()
            && n(&self.rates) == patches
            && self.interior_len == items.interior_len
    }
}

/// Builds resident hierarchies' device items ([`CudaSolver::load_hierarchy`],
/// [`CudaSolver::regrid_hierarchy`]) on any thread, on a stream of its
/// own, while the host makes the rest of a plan and the solver runs:
/// uploading a large hierarchy's items takes tens of milliseconds.
pub struct ItemStager {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    kernels: AmrKernels,
    value_size: usize,
    /// Page-locked memory the items are gathered in before their copy.
    staging: Mutex<Option<PinnedBuffer<u8>>>,
}

/// A resident hierarchy's device items built by an [`ItemStager`], for
/// [`CudaSolver::offer_items`].
pub struct StagedItems(Hierarchy);

impl ItemStager {
    /// The device items of `items` over the batch of `layout` (its first
    /// `patches` descriptors the hierarchy's patches), uploaded.
    pub fn stage(
        &self,
        layout: &BatchLayout,
        items: &StepItems,
        patches: usize,
    ) -> Result<StagedItems, CudaError> {
        self.ctx.bind_to_thread().call("cuCtxSetCurrent")?;
        let mut staging = self.staging.lock().unwrap_or_else(PoisonError::into_inner);
        let h = Hierarchy::build(
            &self.ctx,
            &self.stream,
            (self.kernels.clone(), self.value_size),
            (layout, items, patches),
            Some(&mut staging),
        )?;
        // The staging memory is reused by the next call.
        self.stream.synchronize().call("cuStreamSynchronize")?;
        Ok(StagedItems(h))
    }
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

    /// The entry points of `kernels/amr.cu` in this solver's precision
    /// and build (compiled at the first call, then kept).
    pub(crate) fn amr_kernels(&mut self) -> Result<AmrKernels, CudaError> {
        if let Some(k) = &self.amr {
            return Ok(k.clone());
        }
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
        let k = AmrKernels {
            copy: f("flat_copy")?,
            interp: f("flat_interp")?,
            boundary: f("flat_boundary")?,
            restrict: f("flat_restrict")?,
            reflux: f("flat_reflux")?,
            rate: f("flat_rate")?,
            tag: f("flat_tag")?,
        };
        self.amr = Some(k.clone());
        Ok(k)
    }

    /// A builder of this solver's resident hierarchies' device items on
    /// other threads ([`ItemStager`]); the first call compiles the AMR
    /// kernels.
    pub fn item_stager(&mut self) -> Result<Arc<ItemStager>, CudaError> {
        if let Some(s) = &self.item_stager {
            return Ok(s.clone());
        }
        let kernels = self.amr_kernels()?;
        let ctx = self.dev.ctx.clone();
        let stream = ctx.new_stream().call("cuStreamCreate")?;
        let s = Arc::new(ItemStager {
            ctx,
            stream,
            kernels,
            value_size: std::mem::size_of::<T>(),
            staging: Mutex::new(None),
        });
        self.item_stager = Some(s.clone());
        Ok(s)
    }

    /// Gives the next [`CudaSolver::load_hierarchy`] or
    /// [`CudaSolver::regrid_hierarchy`] the device items this solver's
    /// [`ItemStager`] built for its plan. Items whose counts differ from
    /// the plan's are dropped there and built again.
    pub fn offer_items(&mut self, staged: Option<StagedItems>) {
        self.staged_items = staged.map(|s| s.0);
    }

    /// The device form of a hierarchy's step items over the batch of
    /// `layout` (its first `patches` descriptors the hierarchy's patches):
    /// the staged one if it was built for these items, else built here.
    fn hierarchy_items(
        &mut self,
        layout: &BatchLayout,
        items: &StepItems,
        patches: usize,
    ) -> Result<Hierarchy, CudaError> {
        if let Some(h) = self.staged_items.take() {
            if h.built_for(items, patches) {
                return Ok(h);
            }
            log::debug!("the staged hierarchy items are not the plan's: built again");
        }
        let kernels = self.amr_kernels()?;
        let kernels = (kernels, std::mem::size_of::<T>());
        let plan = (layout, items, patches);
        Hierarchy::build(&self.dev.ctx, &self.streams[0], kernels, plan, None)
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
                h.rates.items,
                h.rates.starts,
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
        let mut a = PhaseArena::default();
        let items = a.phase(&tag.items, |it| [it.wpr * 64, it.n[1], it.n[2]]);
        let arena = a.upload(&ctx, &s0, None)?;
        let items = arena.phase(items);
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
                items.items,
                items.starts,
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
        let t0 = Instant::now();
        self.attach_resident(layout)?;
        let t_attach = t0.elapsed().as_secs_f64();
        let h = self.hierarchy_items(layout, items, patches)?;
        let t_items = t0.elapsed().as_secs_f64() - t_attach;
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
        let mut a = PhaseArena::default();
        let copies = a.phase(&transfer.copies, |c| c.n);
        let flags = a.array(&transfer.flags);
        let mut levels = Vec::with_capacity(transfer.levels.len());
        for l in &transfer.levels {
            levels.push((a.phase(&l.gathers, |c| c.n), a.phase(&l.interp, |i| i.n)));
        }
        // Through page-locked memory: the pageable copy of these items
        // took most of a move.
        let arena = a.upload(&ctx, &s0, Some(&mut self.transfer_staging))?;
        let scratch = DeviceBuffer::<T>::new(&ctx, (transfer.scratch_len as usize).max(1))?;
        let (data, flags) = (st.d_data.at(0), arena.at(flags));
        let limiter = quilt_mesh::flat::limiter_code(transfer.limiter);
        self.launch_copy(&h, &arena.phase(copies), old.at(0))?;
        for &(gathers, interp) in &levels {
            self.launch_copy(&h, &arena.phase(gathers), scratch.at(0))?;
            let interp = arena.phase(interp);
            self.launch_interp(&h, &interp, limiter, flags, scratch.at(0), data)?;
        }
        s0.synchronize().call("cuStreamSynchronize")?;
        log::debug!(
            "regrid on the device: new state {t_attach:.3} s, step items {t_items:.3} s, transfer {:.3} s",
            t0.elapsed().as_secs_f64() - t_attach - t_items
        );
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
        let (items, starts) = (p.items, p.starts);
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
        let (items, starts) = (p.items, p.starts);
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
        self.launch_interp(h, &h.interp, h.limiter, h.flags, scratch, data)?;
        mark(2)?;
        for p in &h.boundary {
            let Some(cfg) = p.config() else {
                continue;
            };
            let (items, starts) = (p.items, p.starts);
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
                let (items, starts, coarse) = (p.items, p.starts, l.coarse);
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
                let (items, starts) = (p.items, p.starts);
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
