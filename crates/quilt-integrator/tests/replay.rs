//! Trace replay: a recorded hierarchy (the JSON file `euler_sphere`
//! writes at every regrid) stepped again, from the run's own checkpoint
//! or from the problem's initial state.

mod common;

use quilt_integrator::{CpuBackend, IntegratorBuilder};
use quilt_mesh::{read_hierarchy_with, write_hierarchy};

#[test]
fn a_trace_replayed_from_its_checkpoint_continues_bit_for_bit() {
    let deck = common::periodic_three_levels();
    let interval = deck.amr.regrid_interval;
    let dir = std::env::temp_dir().join(format!("quilt-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (trace, ck) = (dir.join("trace.json"), dir.join("ck.h5"));

    // The run: a regrid after step 2 * interval, its hierarchy recorded
    // with a checkpoint, then the steps up to the next regrid.
    let mut run = common::cpu(&deck);
    for _ in 0..2 * interval {
        run.step().unwrap();
    }
    assert!(run.hierarchy().num_levels() > 1);
    write_hierarchy(run.hierarchy(), &trace).unwrap();
    run.write_checkpoint(&ck).unwrap();
    for _ in 0..interval - 1 {
        run.step().unwrap();
    }

    // The replay: the trace's hierarchy kept fixed, the checkpoint's state.
    let mut fixed = deck.clone();
    fixed.amr.regrid_interval = 0;
    let builder = IntegratorBuilder::new(&fixed);
    let h = builder
        .trace_hierarchy(&read_hierarchy_with(&trace, fixed.size_limits()).unwrap())
        .unwrap();
    let stored = quilt_io::read_checkpoint::<f64>(&ck).unwrap();
    assert_eq!(h.specs(), stored.hierarchy.specs());
    let backend = CpuBackend::new(fixed.solver().unwrap());
    let mut replay = builder
        .from_state(h, stored.data, stored.run.time, stored.run.step, backend)
        .unwrap();
    for _ in 0..interval - 1 {
        replay.step().unwrap();
    }
    assert_eq!(replay.steps(), run.steps());
    assert_eq!(replay.time().to_bits(), run.time().to_bits());
    assert_eq!(replay.hierarchy().specs(), run.hierarchy().specs());
    let (a, b) = (common::state_bits(&replay), common::state_bits(&run));
    assert!(
        a == b,
        "{} of {} values differ",
        a.iter().zip(&b).filter(|(x, y)| x != y).count(),
        a.len()
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_trace_takes_the_problems_initial_state() {
    let deck = common::closed_box();
    let dir = std::env::temp_dir().join(format!("quilt-replay-ic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let trace = dir.join("initial.json");

    // The set-up's hierarchy as a trace: the replay's initial state is the
    // set-up's, and so are the steps after it.
    let mut built = common::cpu(&deck);
    assert!(built.hierarchy().num_levels() > 1);
    write_hierarchy(built.hierarchy(), &trace).unwrap();
    let h = read_hierarchy_with(&trace, deck.size_limits()).unwrap();
    let backend = CpuBackend::new(deck.solver().unwrap());
    let mut replay = IntegratorBuilder::new(&deck)
        .on_hierarchy(&h, backend)
        .unwrap();
    assert_eq!(replay.steps(), 0);
    assert_eq!(common::state_bits(&replay), common::state_bits(&built));
    for _ in 0..3 {
        built.step().unwrap();
        replay.step().unwrap();
    }
    assert_eq!(common::state_bits(&replay), common::state_bits(&built));

    // A trace of another base grid is refused, saying why.
    let mut other = deck.clone();
    other.domain.base_cells = [48, 48, 48];
    let backend = CpuBackend::<f64>::new(other.solver().unwrap());
    let e = IntegratorBuilder::new(&other)
        .on_hierarchy(&h, backend)
        .err()
        .unwrap();
    assert!(e.to_string().contains("trace"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
