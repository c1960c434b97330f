//! The CPU backend handed its patches in place: it offers a page lock that
//! locks nothing (the memory stays ordinary, which the CPU reads anyway),
//! so that every state comes from the integrator's arena and every old
//! state's ghosts are filled in place, as on a GPU node. Shared by
//! `tests/in_place.rs` and the `in_place_prepare` example.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use quilt_integrator::{
    BoxPart, CpuBackend, InPlaceBox, SolveBackend, SolveError, StagedLayout, load_in_place,
};
use quilt_mesh::locked::PageLock;
use quilt_sweep::{Batch, StepReport, SweepOrder};

/// Locks nothing.
pub struct NoDevice;

impl PageLock for NoDevice {
    unsafe fn lock(&self, _ptr: *mut u8, _bytes: usize) -> Result<(), String> {
        Ok(())
    }
    unsafe fn unlock(&self, _ptr: *mut u8) {}
    fn kind(&self) -> &'static str {
        "no lock (CPU)"
    }
}

/// The CPU backend with a page lock, counting the patches it was handed
/// in place.
pub struct InPlace {
    pub cpu: CpuBackend<f64>,
    pub boxes: Arc<AtomicUsize>,
    /// Probes the integrator left to the backend ([`SolveBackend::fills_probes`]).
    pub probes: Arc<AtomicUsize>,
    /// Fill the bins of in-place patches and of the probes left to the
    /// backend with NaN before loading them, so that a solve reading bins
    /// nobody filled shows.
    pub poison: bool,
    /// Whether the backend fills the probes of in-place patches itself.
    pub fills_probes: bool,
    /// Whether the backend fills the restriction outputs of in-place
    /// patches ([`SolveBackend::fills_restricted`]), and how many it
    /// filled.
    pub fills_restricted: bool,
    pub restricted: Arc<AtomicUsize>,
}

impl InPlace {
    /// `cpu` handed its patches in place (and, with `fills_probes`, their
    /// probes to fill).
    pub fn new(cpu: CpuBackend<f64>, poison: bool, fills_probes: bool) -> Self {
        Self {
            cpu,
            boxes: Arc::new(AtomicUsize::new(0)),
            probes: Arc::new(AtomicUsize::new(0)),
            poison,
            fills_probes,
            fills_restricted: false,
            restricted: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl SolveBackend<f64> for InPlace {
    fn name(&self) -> &str {
        "cpu-in-place"
    }

    fn device(&self) -> String {
        self.cpu.device()
    }

    fn thermo(&self) -> Arc<dyn quilt_sweep::physics::Thermo> {
        self.cpu.thermo()
    }

    fn solve(
        &mut self,
        batch: &mut Batch<f64>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        self.cpu.solve(batch, dt, order)
    }

    fn page_lock(&self) -> Option<Arc<dyn PageLock>> {
        Some(Arc::new(NoDevice))
    }

    fn solve_in_place(
        &mut self,
        batch: &mut Batch<f64>,
        staged: Option<StagedLayout>,
        boxes: &mut [InPlaceBox<'_, f64>],
        probes: &[BoxPart],
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        self.boxes.fetch_add(boxes.len(), Ordering::Relaxed);
        self.probes.fetch_add(probes.len(), Ordering::Relaxed);
        if self.poison {
            let descs = boxes
                .iter()
                .map(|b| b.desc)
                .chain(probes.iter().map(|p| p.desc));
            let ncomp = batch.layout().ncomp() as usize;
            for d in descs {
                let n = ncomp * batch.layout().patches()[d].total_cells() as usize;
                batch.load_patch(d, &vec![f64::NAN; n]).expect("poison");
            }
        }
        load_in_place(batch, boxes, probes)?;
        let r = self.cpu.solve_staged(batch, staged, dt, order)?;
        let gas = self.cpu.solver().gas();
        for b in boxes.iter_mut() {
            batch.store_interior(b.desc, b.new).expect("store");
            if let Some(r) = b.restricted.as_mut() {
                let d = &batch.layout().patches()[b.desc];
                r.fill_from_box(d, 5, b.new, &gas)
                    .map_err(|e| SolveError::Sweep(e.into()))?;
                self.restricted.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(r)
    }

    fn fills_probes(&self) -> bool {
        self.fills_probes
    }

    fn fills_restricted(&self) -> bool {
        self.fills_restricted
    }
}
