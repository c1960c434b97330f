//! Patch states kept in page-locked memory and solved in place: a backend
//! that offers a [`PageLock`] gets every state from the integrator's arena,
//! each patch's old state has its ghosts filled in place, and the solve
//! reads it there and leaves the new interior in the new state; the
//! results are bitwise those of batches in bins, in the sequential and the
//! pipelined loop, with adaptive and static batching, across regrids.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use quilt_integrator::deck::{BatchLayoutKind, BatchMode};
use quilt_integrator::{
    CpuBackend, InPlaceBox, Integrator, SolveBackend, SolveError, StagedLayout,
};
use quilt_mesh::locked::PageLock;
use quilt_sweep::{Batch, StepReport, SweepOrder};

/// Locks nothing: the memory is ordinary, which the CPU reads anyway.
struct NoDevice;

impl PageLock for NoDevice {
    unsafe fn lock(&self, _ptr: *mut u8, _bytes: usize) -> Result<(), String> {
        Ok(())
    }
    unsafe fn unlock(&self, _ptr: *mut u8) {}
    fn kind(&self) -> &'static str {
        "test lock"
    }
}

/// The CPU backend with a page lock, counting the patches it was handed
/// in place.
struct InPlace {
    cpu: CpuBackend<f64>,
    boxes: Arc<AtomicUsize>,
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
        // The bins of in-place patches are unspecified: poison them, so
        // that a solve reading them instead of the boxes shows.
        for b in boxes.iter() {
            let nan = vec![f64::NAN; b.old.len()];
            batch.load_patch(b.desc, &nan).expect("poison");
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

fn bits<B: SolveBackend<f64>>(it: &Integrator<f64, B>) -> Vec<u64> {
    let (h, d) = (it.hierarchy(), it.data());
    let mut out = Vec::new();
    for (i, p) in h.patches().iter().enumerate() {
        for c in 0..5 {
            out.extend(p.interior().iter().map(|q| d.old(i).get(c, &q).to_bits()));
        }
    }
    out
}

#[test]
fn states_solved_in_place_match_batches_in_bins_bit_for_bit() {
    let packed = common::closed_box();
    let mut per_patch = packed.clone();
    per_patch.batching.layout = BatchLayoutKind::PerPatch;
    per_patch.batching.max_bins = 0;
    for (pipelined, mode, n_fixed, deck) in [
        (false, BatchMode::Adaptive, 1, &packed),
        (true, BatchMode::Adaptive, 1, &packed),
        (true, BatchMode::Static, 3, &packed),
        (true, BatchMode::Static, 3, &per_patch),
    ] {
        let mut plain = common::cpu(deck);
        let boxes = Arc::new(AtomicUsize::new(0));
        let backend = InPlace {
            cpu: CpuBackend::new(deck.solver().expect("solver")),
            boxes: boxes.clone(),
        };
        let mut locked = Integrator::new(deck, backend).expect("integrator");
        let d = locked.data();
        assert!(
            (0..d.len()).all(|i| d.old(i).is_page_locked()),
            "every state of a fresh run lives in the arena"
        );
        let mut regrids = 0;
        for it in [&mut plain as &mut dyn Stepping, &mut locked] {
            it.configure(pipelined, mode, n_fixed);
        }
        for _ in 0..12 {
            regrids += usize::from(plain.step().expect("plain step").regridded);
            locked.step().expect("in-place step");
        }
        assert!(regrids >= 2, "the run must cross regrids ({regrids})");
        assert!(
            boxes.load(Ordering::Relaxed) > 0,
            "no patch was solved in place"
        );
        assert_eq!(
            bits(&plain),
            bits(&locked),
            "pipelined {pipelined}, {mode:?}: in place differs from bins"
        );
    }
}

/// The settings both integrators of the comparison get.
trait Stepping {
    fn configure(&mut self, pipelined: bool, mode: BatchMode, n_fixed: usize);
}

impl<B: SolveBackend<f64>> Stepping for Integrator<f64, B> {
    fn configure(&mut self, pipelined: bool, mode: BatchMode, n_fixed: usize) {
        self.set_pipelined(pipelined);
        self.set_batching(mode, n_fixed);
    }
}
