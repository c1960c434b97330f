//! The CUDA backend: [`quilt_cuda::CudaSolver`] behind [`SolveBackend`].

use quilt_cuda::CudaEos;
use quilt_cuda::{
    CudaConfig, CudaError, CudaSolver, ExternalBox, GpuReal, SolveTotals, StepTiming,
};
use quilt_mesh::flat::{FlatTag, FlatTransfer, StepItems};
use quilt_sweep::physics::IdealGas;
use quilt_sweep::physics::{Gas, Thermo};
use quilt_sweep::{Batch, BatchLayout, Scheme, StepReport, SweepOrder};
use std::sync::Arc;

use super::{
    BoxPart, InPlaceBox, ItemStage, LayoutStage, ResidentSolve, SolveBackend, SolveError,
    StagedItems, StagedLayout,
};
use crate::resident::ResidentPlan;

/// Advances batches on a CUDA device: each `solve` copies the batch to
/// the device, runs the input scan and the sweeps of the configured kernel
/// variant, and copies the new state and the boundary fluxes back (the
/// paper's per-batch transfers). With FMA contraction off (the default of
/// [`CudaConfig`]) the results are bit for bit those of [`super::CpuBackend`],
/// so a run may switch backends at a restart without changing its answer.
pub struct CudaBackend<T: GpuReal, E: CudaEos = IdealGas> {
    solver: CudaSolver<T, E>,
}

impl<T: GpuReal, E: CudaEos> CudaBackend<T, E> {
    /// A backend for `scheme` and `gas` on the device and with the kernels
    /// that `config` names. Fails with the probe's error (no driver, no
    /// device, no NVRTC) instead of panicking when CUDA is unusable.
    pub fn new(scheme: Scheme, gas: Gas<E>, config: CudaConfig) -> Result<Self, CudaError> {
        Ok(Self {
            solver: CudaSolver::new(scheme, gas, config)?,
        })
    }

    /// The GPU solver (kernel information, configuration).
    pub fn solver(&self) -> &CudaSolver<T, E> {
        &self.solver
    }

    /// GPU times of the last solved batch (transfers, scan, sweeps).
    pub fn last_timing(&self) -> StepTiming {
        self.solver.last_timing()
    }
}

impl From<CudaError> for SolveError {
    fn from(e: CudaError) -> Self {
        match e {
            // The CPU's own step errors (bad state, CFL), so the integrator
            // names step, level, patch and cell exactly as on the CPU.
            CudaError::Sweep(e) => SolveError::Sweep(e),
            other => SolveError::Device {
                backend: "cuda".into(),
                message: other.to_string(),
                source: Some(Box::new(other)),
            },
        }
    }
}

/// The solver's [`quilt_cuda::LayoutStager`] behind [`LayoutStage`].
struct CudaLayoutStage<T: GpuReal>(Arc<quilt_cuda::LayoutStager<T>>);

impl<T: GpuReal> LayoutStage for CudaLayoutStage<T> {
    fn stage(&self, layout: &BatchLayout) -> Result<StagedLayout, SolveError> {
        Ok(StagedLayout::new(self.0.stage(layout)?))
    }
}

/// The solver's [`quilt_cuda::ItemStager`] behind [`ItemStage`].
struct CudaItemStage(Arc<quilt_cuda::ItemStager>);

impl ItemStage for CudaItemStage {
    fn stage(
        &self,
        layout: &BatchLayout,
        items: &StepItems,
        patches: usize,
    ) -> Result<StagedItems, SolveError> {
        Ok(StagedItems::new(self.0.stage(layout, items, patches)?))
    }
}

impl<T: GpuReal, E: CudaEos> SolveBackend<T> for CudaBackend<T, E> {
    fn name(&self) -> &str {
        "cuda"
    }

    fn thermo(&self) -> Arc<dyn Thermo> {
        Arc::new(self.solver.cpu().gas())
    }

    fn device(&self) -> String {
        let c = self.solver.config();
        format!(
            "{}, {} kernels{}{} in {}, {} streams",
            self.solver.device(),
            c.variant.name(),
            if c.fma { " with FMA" } else { "" },
            if c.fast_f32_applies::<T>() {
                " and approximate division"
            } else {
                ""
            },
            T::NAME,
            c.streams
        )
    }

    fn transfers(&self) -> bool {
        true
    }

    fn solves_components(&self, ncomp: usize) -> Result<(), String> {
        let c = self.solver.config();
        if ncomp == c.components() as usize {
            Ok(())
        } else {
            Err(format!(
                "its kernels were compiled for {} components (the five Euler ones and \
                 {} passive scalars), not {ncomp} (CudaConfig::scalars)",
                c.components(),
                c.scalars
            ))
        }
    }

    fn host_alloc(&self) -> std::sync::Arc<dyn quilt_sweep::HostAlloc<T>> {
        std::sync::Arc::new(self.solver.host_alloc())
    }

    fn solve(
        &mut self,
        batch: &mut Batch<T>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        Ok(self.solver.advance(batch, dt, order)?)
    }

    fn layout_stage(&mut self) -> Option<Arc<dyn LayoutStage>> {
        match self.solver.stager() {
            Ok(s) => Some(Arc::new(CudaLayoutStage(s))),
            Err(e) => {
                log::debug!("layout states stay on the solver: {e}");
                None
            }
        }
    }

    fn solve_staged(
        &mut self,
        batch: &mut Batch<T>,
        staged: Option<StagedLayout>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        let staged = staged.and_then(StagedLayout::downcast::<quilt_cuda::StagedLayout<T>>);
        Ok(self.solver.advance_staged(batch, staged, dt, order)?)
    }

    fn page_lock(&self) -> Option<Arc<dyn quilt_mesh::locked::PageLock>> {
        // The default scheme copies boxes through its batches on the
        // solving thread: its patches are better prepared into the bins.
        if !self.solver.reads_boxes_in_place() {
            return None;
        }
        Some(self.solver.page_lock())
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
        let staged = staged.and_then(StagedLayout::downcast::<quilt_cuda::StagedLayout<T>>);
        let mut ext: Vec<ExternalBox<'_, T>> = boxes
            .iter_mut()
            .map(|b| ExternalBox {
                desc: b.desc,
                src: b.old,
                dst: &mut *b.new,
                restricted: b.restricted.as_mut().map(quilt_sweep::Restricted::reborrow),
            })
            .collect();
        Ok(self
            .solver
            .advance_external(batch, staged, &mut ext, probes, dt, order)?)
    }

    /// The finest level's coarse means and CFL rates come from the device
    /// as it stores the new interiors; the integrator restricts and scans
    /// the other levels. `QUILT_DEVICE_RESTRICT=0` leaves every level to
    /// the integrator, to compare.
    fn fills_restricted(&self) -> bool {
        std::env::var("QUILT_DEVICE_RESTRICT").map_or(true, |v| v != "0")
    }

    /// Probes are read out of their parents' copies on the device (or,
    /// where the boxes are not registered, copied through the batch).
    /// `QUILT_DEVICE_PROBES=0` has the integrator copy them instead, to
    /// compare.
    fn fills_probes(&self) -> bool {
        std::env::var("QUILT_DEVICE_PROBES").map_or(true, |v| v != "0")
    }

    fn solve_totals(&self) -> Option<SolveTotals> {
        Some(self.solver.totals())
    }

    fn resident(&mut self) -> Option<&mut dyn ResidentSolve<T>> {
        Some(self)
    }

    fn device_memory(&mut self) -> Option<super::DeviceMemory> {
        match self.solver.device_memory() {
            Ok((free, total)) => Some(super::DeviceMemory { free, total }),
            Err(e) => {
                log::warn!("device memory unknown ({e}): the state stays in host memory");
                None
            }
        }
    }
}

/// Device residency on the GPU: the hierarchy's batch and the items of
/// its step stay in device memory ([`CudaSolver::load_hierarchy`]).
impl<T: GpuReal, E: CudaEos> ResidentSolve<T> for CudaBackend<T, E> {
    fn load(&mut self, plan: &ResidentPlan, interiors: &[T]) -> Result<(), SolveError> {
        Ok(self
            .solver
            .load_hierarchy(&plan.layout, &plan.items, plan.patches, interiors)?)
    }

    fn max_rate(&mut self) -> Result<Option<f64>, SolveError> {
        Ok(self.solver.hierarchy_rate()?)
    }

    fn step(&mut self, dt: f64, order: SweepOrder) -> Result<StepReport, SolveError> {
        Ok(self.solver.step_hierarchy(dt, order)?)
    }

    fn store(&mut self, interiors: &mut [T]) -> Result<(), SolveError> {
        Ok(self.solver.store_hierarchy(interiors)?)
    }

    fn tag(&mut self, tag: &FlatTag, out: &mut [u32]) -> Result<(), SolveError> {
        Ok(self.solver.tag_hierarchy(tag, out)?)
    }

    fn regrid(&mut self, plan: &ResidentPlan, transfer: &FlatTransfer) -> Result<(), SolveError> {
        Ok(self
            .solver
            .regrid_hierarchy(&plan.layout, &plan.items, plan.patches, transfer)?)
    }

    fn io_lock(&self) -> Option<Arc<dyn quilt_mesh::locked::PageLock>> {
        Some(self.solver.page_lock())
    }

    fn offer_staged(&mut self, staged: Option<StagedLayout>) {
        let staged = staged.and_then(StagedLayout::downcast::<quilt_cuda::StagedLayout<T>>);
        self.solver.offer_staged(staged);
    }

    fn item_stage(&mut self) -> Option<Arc<dyn ItemStage>> {
        match self.solver.item_stager() {
            Ok(s) => Some(Arc::new(CudaItemStage(s))),
            Err(e) => {
                log::debug!("the hierarchy's items are left to the solver: {e}");
                None
            }
        }
    }

    fn offer_items(&mut self, staged: Option<StagedItems>) {
        let staged = staged.and_then(StagedItems::downcast::<quilt_cuda::StagedItems>);
        self.solver.offer_items(staged);
    }

    fn unload(&mut self) {
        self.solver.unload_hierarchy();
    }
}
