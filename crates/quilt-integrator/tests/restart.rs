//! A run restarted from a checkpoint continues bitwise identically.

mod common;

use quilt_integrator::{CpuBackend, Integrator};

#[test]
fn restart_continues_bit_for_bit() {
    let deck = common::closed_box();
    let mut straight = common::cpu(&deck);
    for _ in 0..11 {
        straight.step().unwrap();
    }

    let dir = std::env::temp_dir().join(format!("quilt-restart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ck.h5");
    let mut first = common::cpu(&deck);
    // Stop between regrids (every 5 steps) so the restart starts on a
    // hierarchy that is not rebuilt at once.
    for _ in 0..7 {
        first.step().unwrap();
    }
    first.write_checkpoint(&path).unwrap();
    let version = first.hierarchy_version();
    drop(first);

    let solver = deck.solver().unwrap();
    let mut resumed = Integrator::<f64, _>::restart(&path, None, CpuBackend::new(solver)).unwrap();
    assert_eq!(resumed.steps(), 7);
    assert_eq!(resumed.hierarchy_version(), version);
    assert_eq!(resumed.deck(), &deck);
    for _ in 0..4 {
        resumed.step().unwrap();
    }
    assert_eq!(resumed.time().to_bits(), straight.time().to_bits());
    assert_eq!(resumed.totals().regrids, straight.totals().regrids);
    let (a, b) = (common::state_bits(&resumed), common::state_bits(&straight));
    assert_eq!(a.len(), b.len());
    assert!(
        a == b,
        "{} values differ",
        a.iter().zip(&b).filter(|(x, y)| x != y).count()
    );

    // A foreign file is a clear error.
    let bogus = dir.join("bogus.h5");
    std::fs::write(&bogus, b"not a checkpoint").unwrap();
    let solver = deck.solver().unwrap();
    let e = Integrator::<f64, _>::restart(&bogus, None, CpuBackend::new(solver))
        .err()
        .unwrap();
    assert!(e.to_string().contains("bogus.h5"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

/// A deck that contradicts the checkpoint's mesh is refused, naming the
/// key, the deck's value, the stored one and the file; so is a restart
/// that would take no step.
#[test]
fn a_restart_deck_that_contradicts_the_checkpoint_is_refused() {
    let deck = common::closed_box();
    let dir = std::env::temp_dir().join(format!("quilt-restart-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ck.h5");
    let mut it = common::cpu(&deck);
    for _ in 0..2 {
        it.step().unwrap();
    }
    assert_eq!(it.hierarchy().num_levels(), 2);
    it.write_checkpoint(&path).unwrap();
    let time = it.time();
    drop(it);

    let refuse = |edit: &dyn Fn(&mut quilt_integrator::deck::Deck), key: &str, values: &[&str]| {
        let mut d = deck.clone();
        edit(&mut d);
        let solver = d.solver().unwrap();
        let e = Integrator::<f64, _>::restart(&path, Some(&d), CpuBackend::new(solver))
            .err()
            .unwrap_or_else(|| panic!("{key}: the contradicting restart ran"));
        let s = e.to_string();
        assert!(s.contains(key) && s.contains("ck.h5"), "{key}: {s}");
        for v in values {
            assert!(s.contains(v), "{key}: {v} missing in {s}");
        }
    };
    refuse(
        &|d| d.domain.base_cells = [24, 24, 48],
        "domain.base_cells",
        &["[24, 24, 48]", "[24, 24, 24]"],
    );
    refuse(&|d| d.domain.hi = [2.0, 1.0, 1.0], "domain.hi", &["2.0"]);
    refuse(&|d| d.domain.lo = [-1.0, 0.0, 0.0], "domain.lo", &["-1.0"]);
    refuse(
        &|d| {
            d.amr.max_levels = 1;
            d.amr.ratios = vec![2];
        },
        "amr.max_levels",
        &["2 levels"],
    );
    refuse(&|d| d.amr.ratios = vec![4], "amr.ratios", &["[4]", "[2]"]);
    refuse(
        &|d| {
            use quilt_integrator::deck::Boundary;
            d.boundary.x_lo = Boundary::Periodic;
            d.boundary.x_hi = Boundary::Periodic;
        },
        "boundary",
        &["[true, false, false]"],
    );
    refuse(
        &|d| d.run.end_time = time / 2.0,
        "run.end_time",
        &["over already"],
    );
    refuse(&|d| d.run.max_steps = 2, "run.max_steps", &["over already"]);

    // More levels, another end time or patch sizes are fine.
    let mut d = deck.clone();
    d.amr.max_levels = 3;
    d.amr.ratios = vec![2];
    d.run.end_time = 20.0;
    let solver = d.solver().unwrap();
    let mut it = Integrator::<f64, _>::restart(&path, Some(&d), CpuBackend::new(solver)).unwrap();
    it.step().unwrap();
    std::fs::remove_dir_all(&dir).ok();
}

/// A run that ends where a regrid falls due skips it (it would serve no
/// step); a checkpoint written there keeps it due, so a restart with a
/// later end takes it first and ends as the longer run does, bit for bit.
#[test]
fn a_regrid_due_at_the_end_waits_for_a_restart_that_extends_the_run() {
    let mut deck = common::closed_box();
    let dir = std::env::temp_dir().join(format!("quilt-restart-due-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ck.h5");
    // Regrids every 5 steps: the short run ends on one.
    deck.run.max_steps = 5;
    let mut short = common::cpu(&deck);
    let version = short.hierarchy_version();
    while !short.finished() {
        let info = short.step().unwrap();
        assert!(!info.regridded, "step {}", info.step);
    }
    assert_eq!(short.steps(), 5);
    assert_eq!(short.totals().regrids, 0);
    assert_eq!(
        short.hierarchy_version(),
        version,
        "no regrid after the last step"
    );
    short.write_checkpoint(&path).unwrap();
    // Asking for the next time step takes the regrid first.
    short.cfl_dt().unwrap();
    assert_eq!(short.totals().regrids, 1);
    assert_ne!(short.hierarchy_version(), version);
    drop(short);

    let mut longer = deck.clone();
    longer.run.max_steps = 8;
    let mut straight = common::cpu(&longer);
    while !straight.finished() {
        straight.step().unwrap();
    }
    let solver = longer.solver().unwrap();
    let mut resumed =
        Integrator::<f64, _>::restart(&path, Some(&longer), CpuBackend::new(solver)).unwrap();
    while !resumed.finished() {
        resumed.step().unwrap();
    }
    assert_eq!(straight.totals().regrids, 1);
    assert_eq!(resumed.totals().regrids, straight.totals().regrids);
    assert_eq!(resumed.hierarchy_version(), straight.hierarchy_version());
    assert_eq!(resumed.time().to_bits(), straight.time().to_bits());
    let (a, b) = (common::state_bits(&resumed), common::state_bits(&straight));
    assert!(a == b, "states differ");
    std::fs::remove_dir_all(&dir).ok();
}
