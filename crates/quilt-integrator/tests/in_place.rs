//! Patch states kept in page-locked memory and solved in place: a backend
//! that offers a [`PageLock`] gets every state from the integrator's arena,
//! each patch's old state has its ghosts filled in place, and the solve
//! reads it there and leaves the new interior in the new state; the
//! results are bitwise those of batches in bins, in the sequential and the
//! pipelined loop, with adaptive and static batching, across regrids.

mod common;
mod in_place_cpu;

use std::sync::atomic::Ordering;

use in_place_cpu::InPlace;
use quilt_integrator::deck::{BatchLayoutKind, BatchMode};
use quilt_integrator::{CpuBackend, Integrator, SolveBackend};

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
    // With and without the probes of in-place patches left to the backend,
    // and the finest level's restriction and CFL rates.
    for (pipelined, mode, n_fixed, deck, fills_probes, fills_restricted) in [
        (false, BatchMode::Adaptive, 1, &packed, true, true),
        (true, BatchMode::Adaptive, 1, &packed, false, true),
        (true, BatchMode::Static, 3, &packed, true, false),
        (true, BatchMode::Static, 3, &per_patch, false, true),
    ] {
        let mut plain = common::cpu(deck);
        let solver = deck.solver().expect("solver");
        let mut backend = InPlace::new(CpuBackend::new(solver), true, fills_probes);
        backend.fills_restricted = fills_restricted;
        let (boxes, probes) = (backend.boxes.clone(), backend.probes.clone());
        let restricted = backend.restricted.clone();
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
            let a = plain.step().expect("plain step");
            let b = locked.step().expect("in-place step");
            regrids += usize::from(a.regridded);
            assert_eq!(a.dt.to_bits(), b.dt.to_bits(), "time steps");
        }
        assert!(regrids >= 2, "the run must cross regrids ({regrids})");
        assert!(
            boxes.load(Ordering::Relaxed) > 0,
            "no patch was solved in place"
        );
        assert_eq!(
            probes.load(Ordering::Relaxed) > 0,
            fills_probes,
            "probes left to the backend"
        );
        assert_eq!(
            restricted.load(Ordering::Relaxed) > 0,
            fills_restricted,
            "restriction outputs filled by the backend"
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
