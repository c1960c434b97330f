//! Pipelined and sequential batch loops, adaptive and static batching:
//! bitwise identical states, regrids included.

mod common;

use quilt_integrator::deck::BatchMode;

fn run(
    pipelined: bool,
    mode: BatchMode,
    n_fixed: usize,
) -> (Vec<u64>, Vec<(usize, String)>, usize) {
    let deck = common::closed_box();
    let mut it = common::cpu(&deck);
    it.set_pipelined(pipelined);
    it.set_batching(mode, n_fixed);
    let mut batches = 0;
    for _ in 0..12 {
        batches += it.step().unwrap().batches;
    }
    let boxes = it
        .hierarchy()
        .patches()
        .iter()
        .map(|p| (p.level(), p.interior().to_string()))
        .collect();
    (common::state_bits(&it), boxes, batches)
}

#[test]
fn batching_and_pipelining_do_not_change_a_bit() {
    let (reference, boxes, b0) = run(false, BatchMode::Adaptive, 1);
    assert!(boxes.iter().any(|(l, _)| *l == 1));
    let others = [
        (true, BatchMode::Adaptive, 1),
        (true, BatchMode::Static, 3),
        (false, BatchMode::Static, 1),
        (true, BatchMode::Static, 1000),
    ];
    let mut counts = vec![b0];
    for (pipelined, mode, n) in others {
        let (bits, b, batches) = run(pipelined, mode, n);
        assert_eq!(
            b, boxes,
            "hierarchy differs: pipelined {pipelined}, {mode:?} {n}"
        );
        let diff = bits.iter().zip(&reference).filter(|(a, b)| a != b).count();
        assert_eq!(
            diff, 0,
            "{diff} values differ: pipelined {pipelined}, {mode:?} {n}"
        );
        counts.push(batches);
    }
    // The configurations really batch differently.
    assert!(counts.iter().any(|&c| c != counts[0]), "{counts:?}");
    assert_eq!(
        counts[4], 12,
        "one batch per step with n_fixed above the patch count"
    );
}

/// A pool of one thread runs a pipelined run to its end, with the
/// sequential run's state (the loop's prepare and close tasks would wait
/// forever behind its driver on the pool's only thread).
#[test]
fn a_pipelined_run_on_one_thread_ends_with_the_sequential_state() {
    let (reference, boxes, _) = run(false, BatchMode::Adaptive, 1);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        let _ = tx.send(pool.install(|| run(true, BatchMode::Adaptive, 1)));
    });
    let (bits, b, _) = rx
        .recv_timeout(std::time::Duration::from_secs(600))
        .expect("the pipelined run on one thread ends");
    assert_eq!(b, boxes);
    assert!(bits == reference, "the states differ");
}

/// The paper's default scheme (every patch alone in its own bin) gives the
/// packed run's state bit for bit.
#[test]
fn one_patch_per_bin_changes_no_bit() {
    let (reference, boxes, _) = run(true, BatchMode::Adaptive, 1);
    let mut deck = common::closed_box();
    deck.batching.layout = quilt_integrator::deck::BatchLayoutKind::PerPatch;
    deck.batching.max_bins = 0;
    deck.batching.mode = BatchMode::Static;
    deck.batching.n_fixed = 5;
    let mut it = common::cpu(&deck);
    for _ in 0..12 {
        it.step().unwrap();
    }
    assert_eq!(it.num_bins(), it.hierarchy().num_patches());
    let b: Vec<(usize, String)> = it
        .hierarchy()
        .patches()
        .iter()
        .map(|p| (p.level(), p.interior().to_string()))
        .collect();
    assert_eq!(b, boxes);
    let bits = common::state_bits(&it);
    let diff = bits.iter().zip(&reference).filter(|(a, b)| a != b).count();
    assert_eq!(diff, 0, "{diff} values differ");
}

/// The time step scanned while restriction reads each level is, bit for
/// bit, that of a scan of the whole state afterwards (which `data_mut`
/// forces, since the caller may have changed the state), on steps with and
/// without a regrid before them, periodic images included.
#[test]
fn the_scan_made_with_restriction_is_the_full_scan() {
    for deck in [common::closed_box(), common::periodic_three_levels()] {
        let mut it = common::cpu(&deck);
        for _ in 0..6 {
            it.step().unwrap();
            let with_restriction = it.cfl_dt().unwrap();
            it.data_mut().unwrap();
            let full = it.cfl_dt().unwrap();
            assert_eq!(with_restriction.to_bits(), full.to_bits());
        }
        assert!(it.hierarchy().num_levels() > 1);
    }
}
