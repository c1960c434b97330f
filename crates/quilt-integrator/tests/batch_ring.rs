//! The step loop reuses its batch buffers: after the first step it
//! allocates none, across batches, steps and regrids.

mod common;

use quilt_integrator::deck::BatchMode;

fn allocations_after_each_step(pipelined: bool, mode: BatchMode, n_fixed: usize) -> Vec<u64> {
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
    counts
}

#[test]
fn no_batch_buffer_is_allocated_after_the_first_step() {
    // The pipelined loop keeps at most six batches alive: three prepared
    // ahead of the solver, and the one solving and those closing, three
    // at most (`MAX_AHEAD` and `MAX_BEHIND` of pipeline/overlap.rs).
    for (pipelined, mode, n, live) in [
        (true, BatchMode::Adaptive, 1, 6),
        (false, BatchMode::Adaptive, 1, 1),
        (true, BatchMode::Static, 3, 6),
    ] {
        let counts = allocations_after_each_step(pipelined, mode, n);
        let first = counts[0];
        // One batch per live slot, and one more where the first batch was
        // smaller than those after it (the ring then drops it).
        assert!(
            first >= 1 && first <= live + 1,
            "pipelined {pipelined}, {mode:?}: {first} allocations in the first step, {live} batches live"
        );
        assert!(
            counts.iter().all(|&c| c == first),
            "pipelined {pipelined}, {mode:?}: allocations per step {counts:?}"
        );
    }
}
