//! The CPU backend handed its patches in place: it offers a page lock that
//! locks nothing (the memory stays ordinary, which the CPU reads anyway),
//! so that every state comes from the integrator's arena and every old
//! state's ghosts are filled in place, as on a GPU node. Shared by
//! `tests/in_place.rs` and the `in_place_prepare` example.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use quilt_integrator::{CpuBackend, InPlaceBox, SolveBackend, SolveError, StagedLayout};
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
    /// Fill the bins of in-place patches with NaN before loading them, so
    /// that a solve reading the bins instead of the boxes shows.
    pub poison: bool,
}

impl InPlace {
    /// `cpu` handed its patches in place.
    pub fn new(cpu: CpuBackend<f64>, poison: bool) -> Self {
        Self {
            cpu,
            boxes: Arc::new(AtomicUsize::new(0)),
            poison,
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
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        self.boxes.fetch_add(boxes.len(), Ordering::Relaxed);
        // The bins of in-place patches are unspecified.
        if self.poison {
            for b in boxes.iter() {
                let nan = vec![f64::NAN; b.old.len()];
                batch.load_patch(b.desc, &nan).expect("poison");
            }
        }
        for b in boxes.iter() {
            batch.load_patch(b.desc, b.old).expect("load");
        }
        let r = self.cpu.solve_staged(batch, staged, dt, order)?;
        for b in boxes.iter_mut() {
            batch.store_interior(b.desc, b.new).expect("store");
        }
        Ok(r)
    }
}
