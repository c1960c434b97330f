//! A run spread over in-process ranks is bitwise the serial run: the
//! hierarchy after every regrid, every time step and every value of every
//! patch, with regrids on the way.

mod common;

use quilt_dist::run_ranks;
use quilt_integrator::deck::Deck;
use quilt_integrator::{CpuBackend, Integrator, Real};

const STEPS: usize = 7;

/// What one rank (or the serial run) ends with: the time steps, the
/// hierarchy's boxes, and the old interiors of its patches (all of them
/// for the serial run) by patch index.
struct Outcome {
    dts: Vec<u64>,
    boxes: Vec<String>,
    patches: Vec<(usize, Vec<u8>)>,
    fresh: u64,
    digest: u64,
    totals: Vec<u64>,
}

fn run<T: Real>(deck: &Deck, transport: Option<Box<dyn quilt_dist::Transport>>) -> Outcome {
    run_with::<T>(deck, transport, true)
}

fn run_with<T: Real>(
    deck: &Deck,
    transport: Option<Box<dyn quilt_dist::Transport>>,
    overlap: bool,
) -> Outcome {
    let solver = deck.solver().expect("solver");
    let mut it = Integrator::<T, _>::new(deck, CpuBackend::new(solver)).expect("integrator");
    it.set_halo_overlap(overlap);
    if let Some(t) = transport {
        it.distribute(t).expect("distribute");
    }
    let dts = (0..STEPS)
        .map(|_| it.step().expect("step").dt.to_bits())
        .collect();
    let digest = it.state_digest().expect("digest");
    let totals = it
        .global_totals()
        .expect("totals")
        .into_iter()
        .map(f64::to_bits)
        .collect();
    let h = it.hierarchy();
    let owned: Vec<usize> = match it.distribution() {
        Some(d) => d.owned(it.rank().map_or(0, |r| r.0)),
        None => (0..h.num_patches()).collect(),
    };
    let patches = owned
        .into_iter()
        .map(|i| {
            let d = it.data().old(i);
            let mut bytes = Vec::new();
            for c in 0..d.ncomp() {
                for q in h.patches()[i].interior().iter() {
                    bytes.extend_from_slice(bytemuck::bytes_of(&d.get(c, &q)));
                }
            }
            (i, bytes)
        })
        .collect();
    Outcome {
        dts,
        boxes: h
            .patches()
            .iter()
            .map(|p| format!("{} {}", p.level(), p.interior()))
            .collect(),
        patches,
        fresh: it.fresh_distributions(),
        digest,
        totals,
    }
}

/// An f64 CPU integrator of `deck`, spread over the ranks of `t`.
fn distributed(deck: &Deck, t: quilt_dist::ThreadRank) -> Integrator<f64, CpuBackend<f64>> {
    let solver = deck.solver().expect("solver");
    let mut it = Integrator::<f64, _>::new(deck, CpuBackend::new(solver)).expect("integrator");
    it.distribute(Box::new(t)).expect("distribute");
    it
}

fn check<T: Real>(deck: &Deck, ranks: usize) -> u64 {
    check_with::<T>(deck, ranks, true)
}

fn check_with<T: Real>(deck: &Deck, ranks: usize, overlap: bool) -> u64 {
    let serial = run::<T>(deck, None);
    let all = run_ranks(ranks, |t| run_with::<T>(deck, Some(Box::new(t)), overlap));
    let mut seen = vec![false; serial.boxes.len()];
    for (r, o) in all.iter().enumerate() {
        assert_eq!(o.boxes, serial.boxes, "rank {r} of {ranks}: hierarchy");
        assert_eq!(o.dts, serial.dts, "rank {r} of {ranks}: time steps");
        assert_eq!(o.fresh, all[0].fresh, "rank {r} of {ranks}: distributions");
        assert_eq!(o.digest, serial.digest, "rank {r} of {ranks}: state digest");
        assert_eq!(
            o.totals, serial.totals,
            "rank {r} of {ranks}: conserved totals"
        );
        for (i, bytes) in &o.patches {
            assert!(!seen[*i], "patch index {i} on two ranks");
            seen[*i] = true;
            assert!(
                *bytes == serial.patches[*i].1,
                "rank {r} of {ranks}: patch index {i} ({}) differs from the serial run",
                serial.boxes[*i]
            );
        }
    }
    assert!(
        seen.iter().all(|&s| s),
        "{ranks} ranks: a patch nobody owns"
    );
    all[0].fresh
}

#[test]
fn one_to_four_ranks_give_the_serial_run_f64() {
    let deck = common::periodic_three_levels();
    let mut fresh = 0;
    for ranks in 1..=4 {
        fresh += check::<f64>(&deck, ranks);
    }
    eprintln!("fresh distributions adopted: {fresh}");
}

#[test]
fn three_ranks_give_the_serial_run_f32() {
    check::<f32>(&common::periodic_three_levels(), 3);
}

/// Passive scalars over ranks: exchanged, refluxed and restricted with
/// the Euler components, the serial run's bits and totals.
#[test]
fn three_ranks_carry_passive_scalars() {
    let mut deck = common::periodic_three_levels();
    deck.hydro.scalars = vec!["inside".into(), "second".into()];
    check::<f64>(&deck, 3);
}

/// Without the boundary-first order (every exchange after the batch
/// loop) the run is the same.
#[test]
fn three_ranks_without_overlap_give_the_serial_run() {
    check_with::<f64>(&common::periodic_three_levels(), 3, false);
}

/// More ranks than patches at the start (the deck's base level has 8):
/// the idle ranks take part in every exchange and the run is still the
/// serial one.
#[test]
fn more_ranks_than_patches_give_the_serial_run() {
    check::<f64>(&common::periodic_three_levels(), 11);
}

/// Whole-state calls on one rank of several say what to call instead
/// rather than reading other ranks' stale patches.
#[test]
fn whole_state_calls_on_one_rank_are_errors() {
    let deck = common::periodic_three_levels();
    let errors = run_ranks(2, |t| {
        let mut it = distributed(&deck, t);
        it.step().expect("step");
        let totals = it.conserved_totals().unwrap_err().to_string();
        it.global_totals().expect("gathered totals");
        totals
    });
    for totals in errors {
        assert!(totals.contains("call global_totals"), "{totals}");
    }
}

/// A checkpoint written by three ranks (gathered onto rank 0) restarts
/// serially and on two ranks, and both continue bitwise as the serial run
/// that never stopped, regrids included; a checkpoint rank 0 cannot write
/// is an error on every rank.
#[test]
fn a_checkpoint_of_three_ranks_restarts_on_any_rank_count() {
    let deck = common::periodic_three_levels();
    let (before, after) = (3, 4);
    let mut serial = common::cpu(&deck);
    for _ in 0..before + after {
        serial.step().expect("step");
    }
    let serial = serial.state_digest().expect("digest");

    let dir = std::env::temp_dir().join(format!("quilt-ranks-checkpoint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("three.h5");
    run_ranks(3, |t| {
        let mut it = distributed(&deck, t);
        for _ in 0..before {
            it.step().expect("step");
        }
        it.write_checkpoint(&path).expect("checkpoint over ranks");
    });
    let restart = |t: Option<quilt_dist::ThreadRank>| {
        let solver = deck.solver().expect("solver");
        let mut it =
            Integrator::<f64, _>::restart(&path, None, CpuBackend::new(solver)).expect("restart");
        if let Some(t) = t {
            it.distribute(Box::new(t)).expect("distribute");
        }
        for _ in 0..after {
            it.step().expect("step");
        }
        it.state_digest().expect("digest")
    };
    assert_eq!(restart(None), serial, "serial restart");
    for (r, d) in run_ranks(2, |t| restart(Some(t))).into_iter().enumerate() {
        assert_eq!(d, serial, "rank {r} of 2 after the restart");
    }

    let nowhere = dir.join("missing").join("x.h5");
    let errors = run_ranks(2, |t| {
        let mut it = distributed(&deck, t);
        it.step().expect("step");
        it.write_checkpoint(&nowhere).unwrap_err().to_string()
    });
    assert!(errors[0].contains("x.h5"), "{}", errors[0]);
    assert!(
        errors[1].contains("rank 0 failed at writing a checkpoint") && errors[1].contains("x.h5"),
        "{}",
        errors[1]
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// Ghost cells filled on one rank of several are those of the serial run:
/// the rank receives what its patches' fills read from the others.
#[test]
fn ghost_fill_over_ranks_is_the_serial_fill() {
    let deck = common::periodic_three_levels();
    let steps = 3;
    let whole = |it: &Integrator<f64, CpuBackend<f64>>, i: usize| -> Vec<u64> {
        it.data()
            .old(i)
            .as_slice()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    };
    let mut serial = common::cpu(&deck);
    for _ in 0..steps {
        serial.step().expect("step");
    }
    serial.fill_ghosts().expect("fill");
    let ranks = run_ranks(3, |t| {
        let mut it = distributed(&deck, t);
        for _ in 0..steps {
            it.step().expect("step");
        }
        it.fill_ghosts().expect("fill");
        let me = it.rank().expect("a rank").0;
        let owned = it.distribution().expect("distributed").owned(me);
        owned
            .into_iter()
            .map(|i| (i, whole(&it, i)))
            .collect::<Vec<_>>()
    });
    let mut checked = 0;
    for (i, bits) in ranks.into_iter().flatten() {
        assert!(
            bits == whole(&serial, i),
            "patch index {i}: ghost fill differs"
        );
        checked += 1;
    }
    assert_eq!(checked, serial.hierarchy().num_patches());
}

/// The output of a run over ranks is gathered onto rank 0 and equals the
/// serial run's; the other ranks get none.
#[test]
fn output_over_ranks_is_the_serial_output_on_rank_zero() {
    let deck = common::periodic_three_levels();
    let steps = 3;
    let mut serial = common::cpu(&deck);
    for _ in 0..steps {
        serial.step().expect("step");
    }
    let serial = serial.output().expect("output").expect("a serial output");
    let outputs = run_ranks(3, |t| {
        let mut it = distributed(&deck, t);
        for _ in 0..steps {
            it.step().expect("step");
        }
        it.output().expect("output")
    });
    assert!(outputs[0].as_ref() == Some(&serial), "rank 0's output");
    assert!(outputs[1..].iter().all(Option::is_none));
}

/// Each rank measures the cost of its own patches, and only those.
#[test]
fn each_rank_measures_its_own_patches() {
    let deck = common::periodic_three_levels();
    let mut serial = common::cpu(&deck);
    serial.step().expect("step");
    let n = serial.hierarchy().num_patches();
    assert_eq!(serial.patch_costs().len(), n);
    assert!(
        serial
            .patch_costs()
            .iter()
            .all(|c| *c > 0.0 && c.is_finite())
    );
    run_ranks(2, |t| {
        let mut it = distributed(&deck, t);
        it.step().expect("step");
        let me = it.rank().expect("a rank").0;
        let owner = it.distribution().expect("distributed").clone();
        for (i, c) in it.patch_costs().iter().enumerate() {
            if owner.owner(i) == me {
                assert!(*c > 0.0 && c.is_finite(), "rank {me}, patch {i}: {c}");
            } else {
                assert!(c.is_nan(), "rank {me} measured patch {i} of another rank");
            }
        }
    });
}

/// A rank that stops in the middle of a run (its transport gone, as when
/// a process dies) is an error naming it on the other ranks, not a hang.
#[test]
fn a_rank_that_stops_is_an_error_on_the_others() {
    let deck = common::periodic_three_levels();
    let errors = run_ranks(2, |t| {
        let mut it = distributed(&deck, t);
        it.step().expect("first step");
        if it.rank().expect("a rank").0 == 1 {
            return None;
        }
        Some(it.step().expect_err("a step without rank 1").to_string())
    });
    let e = errors[0].as_deref().expect("rank 0's error");
    assert!(e.contains("rank 1 has stopped"), "{e}");
}
