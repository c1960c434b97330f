//! Device residency (the whole hierarchy kept in the backend, every step
//! run from flat items) against host-staged batches: the same state bit
//! for bit, over steps with regrids, reflecting and periodic walls, three
//! levels, both precisions and every scheme.

mod common;

use quilt_integrator::deck::{Deck, Residency};
use quilt_integrator::{CpuBackend, Integrator, Real};

fn bits<T: Real>(it: &mut Integrator<T, CpuBackend<T>>) -> Vec<u64> {
    it.sync_host().unwrap();
    let h = it.hierarchy();
    let d = it.data();
    let mut out = Vec::new();
    for (i, p) in h.patches().iter().enumerate() {
        let pd = d.old(i);
        for c in 0..pd.ncomp() {
            for q in p.interior().iter() {
                out.push(quilt_mesh::Real::as_f64(pd.get(c, &q)).to_bits());
            }
        }
    }
    out
}

/// Runs `steps` steps in both residencies and compares after every one.
fn compare<T: Real>(deck: &Deck, steps: usize) {
    let solver = deck.solver().unwrap();
    let mut host_deck = deck.clone();
    host_deck.run.residency = Residency::Host;
    let mut host = Integrator::<T, _>::new(&host_deck, CpuBackend::new(solver)).unwrap();
    let mut dev_deck = deck.clone();
    dev_deck.run.residency = Residency::Device;
    let mut dev = Integrator::<T, _>::new(&dev_deck, CpuBackend::new(solver)).unwrap();
    let mut regrids = 0;
    for s in 1..=steps {
        let a = host.step().unwrap();
        let b = dev.step().unwrap();
        assert_eq!(a.dt.to_bits(), b.dt.to_bits(), "dt of step {s}");
        assert_eq!(a.solved_cells, b.solved_cells, "cells solved in step {s}");
        assert_eq!(
            a.courant.to_bits(),
            b.courant.to_bits(),
            "Courant number of step {s}"
        );
        regrids += usize::from(b.regridded);
        if b.regridded || s == steps {
            // The regrid ran in the backend: no host copy came back.
            assert!(!dev.host_is_current());
            let boxes = |it: &Integrator<T, CpuBackend<T>>| -> Vec<_> {
                it.hierarchy()
                    .patches()
                    .iter()
                    .map(|p| (p.level(), p.interior()))
                    .collect()
            };
            assert_eq!(boxes(&host), boxes(&dev), "hierarchy after step {s}");
            let (x, y) = (bits(&mut host), bits(&mut dev));
            let diff = x.iter().zip(&y).filter(|(p, q)| p != q).count();
            assert_eq!(
                (x.len(), diff),
                (y.len(), 0),
                "{} values of {} differ after step {s} ({})",
                diff,
                x.len(),
                <T as quilt_mesh::Real>::NAME
            );
        }
    }
    assert!(regrids > 0, "the run must regrid");
    assert!(dev.hierarchy().num_levels() > 1);
}

#[test]
fn resident_steps_match_host_steps_in_a_closed_box() {
    let deck = common::closed_box();
    compare::<f64>(&deck, 7);
    let mut d32 = deck.clone();
    d32.run.precision = quilt_integrator::deck::Precision::F32;
    compare::<f32>(&d32, 6);
}

/// Passive scalars in device residency: fill, refluxing, restriction and
/// regrid transfers carry them as items, bit for bit the host's.
#[test]
fn resident_steps_carry_passive_scalars() {
    let mut deck = common::closed_box();
    deck.amr.max_patch = 32;
    deck.hydro.scalars = vec!["inside".into(), "second".into()];
    compare::<f64>(&deck, 7);
    deck.hydro.scheme = "tvd".into();
    deck.hydro.cfl = 0.4;
    deck.run.precision = quilt_integrator::deck::Precision::F32;
    compare::<f32>(&deck, 6);
}

#[test]
fn resident_steps_match_host_steps_periodic_three_levels() {
    let mut deck = common::periodic_three_levels();
    compare::<f64>(&deck, 5);
    // Tagging in the backend by every detector on both fields.
    let mut shock = common::with_every_detector(deck.clone());
    compare::<f64>(&shock, 4);
    shock.run.precision = quilt_integrator::deck::Precision::F32;
    compare::<f32>(&shock, 4);
    for scheme in ["tvd", "waf"] {
        deck.hydro.scheme = scheme.to_string();
        deck.hydro.cfl = 0.4;
        compare::<f64>(&deck, 3);
        let mut d32 = deck.clone();
        d32.run.precision = quilt_integrator::deck::Precision::F32;
        compare::<f32>(&d32, 3);
    }
}

/// A resident run of the closed box conserves mass and energy to
/// round-off over regrids (refluxing and restriction run as items; the
/// walls exchange momentum).
#[test]
fn resident_steps_conserve_in_a_closed_box() {
    let mut deck = common::closed_box();
    deck.run.residency = Residency::Device;
    let mut it = common::cpu(&deck);
    let before = it.conserved_totals().unwrap();
    for _ in 0..11 {
        it.step().unwrap();
    }
    it.sync_host().unwrap();
    assert!(it.totals().regrids >= 2);
    let after = it.conserved_totals().unwrap();
    for c in [0, 4] {
        let rel = ((after[c] - before[c]) / before[c]).abs();
        assert!(rel < 1e-12, "component {c}: relative change {rel:e}");
    }
}

/// What a run of the closed box did at every step.
struct Trace {
    dts: Vec<u64>,
    residency: Vec<Residency>,
    regridded: Vec<bool>,
    host_current: Vec<bool>,
    bytes: Vec<Option<u64>>,
    state: Vec<u64>,
}

fn trace(deck: &Deck, steps: usize) -> Trace {
    let mut it = common::cpu(deck);
    let mut t = Trace {
        dts: Vec::new(),
        residency: vec![it.residency()],
        regridded: vec![false],
        host_current: vec![true],
        bytes: vec![None],
        state: Vec::new(),
    };
    for _ in 0..steps {
        let info = it.step().unwrap();
        t.dts.push(info.dt.to_bits());
        t.residency.push(it.residency());
        t.regridded.push(info.regridded);
        t.host_current.push(it.host_is_current());
        t.bytes.push(it.resident_bytes());
    }
    t.state = bits(&mut it);
    t
}

/// `run.residency = "auto"` on the CPU backend, whose resident mode gets a
/// memory budget from `run.device_memory_limit`: the state stays in the
/// backend while it fits, a regrid that outgrows the budget goes through
/// the host or leaves device residency, and every run gives the answer of
/// the host-staged run bit for bit.
#[test]
fn auto_residency_follows_the_memory_budget_with_the_same_answer() {
    let steps = 9;
    let mut deck = common::closed_box();
    deck.run.residency = Residency::Host;
    let host = trace(&deck, steps);
    assert!(host.residency.iter().all(|&r| r == Residency::Host));
    let same = |t: &Trace, what: &str| {
        assert_eq!(t.dts, host.dts, "{what}: time steps");
        assert_eq!(t.state.len(), host.state.len(), "{what}: state size");
        let diff = t
            .state
            .iter()
            .zip(&host.state)
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(diff, 0, "{what}: {diff} values differ");
    };

    deck.run.residency = Residency::Device;
    let dev = trace(&deck, steps);
    same(&dev, "device");
    // The resident state's bytes before and after the first regrid.
    let first = dev.regridded.iter().position(|&r| r).expect("a regrid");
    let (s0, s1) = (dev.bytes[1].unwrap(), dev.bytes[first].unwrap());
    assert!(s0 > 0 && s1 > 0 && s0 != s1, "sizes {s0} and {s1}");

    deck.run.residency = Residency::Auto;
    // No device memory and no limit: host-staged.
    let auto = trace(&deck, steps);
    assert!(auto.residency.iter().all(|&r| r == Residency::Host));
    same(&auto, "auto without a budget");
    // A budget for everything: resident throughout, regrids in the backend.
    deck.run.device_memory_limit = 1 << 50;
    let auto = trace(&deck, steps);
    assert!(auto.residency.iter().all(|&r| r == Residency::Device));
    assert!(!auto.host_current[first]);
    same(&auto, "auto with room");
    // Room for either state alone: the first regrid goes through the host.
    deck.run.device_memory_limit = s0.max(s1);
    let auto = trace(&deck, steps);
    assert_eq!(auto.residency[first], Residency::Device);
    assert!(auto.host_current[first], "the state went through the host");
    same(&auto, "auto through the host");
    // Room for the smaller state only: the residency changes at the
    // first regrid (device to host if the hierarchy grew, else the other
    // way).
    deck.run.device_memory_limit = s0.min(s1);
    let auto = trace(&deck, steps);
    let (before, after) = if s1 > s0 {
        (Residency::Device, Residency::Host)
    } else {
        (Residency::Host, Residency::Device)
    };
    assert_eq!((auto.residency[0], auto.residency[first]), (before, after));
    same(&auto, "auto switching");
    // Too little for the first hierarchy: host-staged from the start.
    deck.run.device_memory_limit = 1;
    let auto = trace(&deck, steps);
    assert!(auto.residency.iter().all(|&r| r == Residency::Host));
    same(&auto, "auto without room");
}

/// After a regrid in the backend there is no host copy until `sync_host`:
/// `try_data` says so instead of panicking.
#[test]
fn try_data_names_the_missing_host_copy_after_a_resident_regrid() {
    let mut deck = common::closed_box();
    deck.run.residency = Residency::Device;
    let solver = deck.solver().unwrap();
    let mut it = Integrator::<f64, _>::new(&deck, CpuBackend::new(solver)).unwrap();
    assert!(it.try_data().is_ok());
    while !it.step().unwrap().regridded {}
    let Err(e) = it.try_data() else {
        panic!("a host copy after a regrid in the backend");
    };
    let e = e.to_string();
    assert!(e.contains("sync_host"), "{e}");
    it.sync_host().unwrap();
    assert!(it.try_data().is_ok());
}
