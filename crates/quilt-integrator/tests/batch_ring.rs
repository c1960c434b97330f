//! The step loop reuses its batch buffers: across batches, steps and
//! regrids it allocates at most one per batch alive at once.

mod common;

use quilt_integrator::deck::BatchMode;

/// Allocations after each of 12 steps, and the batches solved.
fn allocations_after_each_step(
    pipelined: bool,
    mode: BatchMode,
    n_fixed: usize,
) -> (Vec<u64>, u64) {
    let deck = common::closed_box();
    let mut it = common::cpu(&deck);
    it.set_pipelined(pipelined);
    it.set_batching(mode, n_fixed);
    let mut regrids = 0;
    let mut counts = Vec::new();
    for _ in 0..12 {
        regrids += usize::from(it.step().unwrap().regridded);
        counts.push(it.batch_allocations());
    }
    assert!(regrids >= 2, "the run must cross regrids ({regrids})");
    let (bytes, kind) = it.batch_memory();
    assert_eq!(kind, "pageable");
    assert!(bytes > 0);
    (counts, it.totals().batches)
}

#[test]
fn batch_buffers_are_allocated_once_per_live_batch() {
    // The pipelined loop keeps at most seven batches alive: four prepared
    // ahead of the solver, and the one solving and those closing, three
    // at most (`MAX_AHEAD` and `MAX_BEHIND` of pipeline/overlap.rs). The
    // ring allocates a buffer when more batches are alive than it holds,
    // so the count grows to the most batches a run has had alive at once
    // (one more where the first batch was smaller than those after it:
    // the ring then drops it) and never with the batches or the steps.
    // Which step first reaches that most depends on the threads' timing:
    // the sequential loop reaches it in its first batch.
    for (pipelined, mode, n, live) in [
        (true, BatchMode::Adaptive, 1, 7),
        (false, BatchMode::Adaptive, 1, 1),
        (true, BatchMode::Static, 3, 7),
    ] {
        let (counts, batches) = allocations_after_each_step(pipelined, mode, n);
        let (first, last) = (counts[0], counts[counts.len() - 1]);
        assert!(
            first >= 1 && last <= live + 1,
            "pipelined {pipelined}, {mode:?}: allocations per step {counts:?}, {live} batches live"
        );
        assert!(
            batches >= 10 * last,
            "pipelined {pipelined}, {mode:?}: {last} allocations for {batches} batches"
        );
        if !pipelined {
            assert!(
                counts.iter().all(|&c| c == first),
                "sequential, {mode:?}: allocations per step {counts:?}"
            );
        }
    }
}
