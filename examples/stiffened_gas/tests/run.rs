//! The stiffened gas through quilt's public API: its limit `p∞ = 0` is the
//! ideal gas bit for bit, and the water shock tube matches its exact
//! solution (and not the ideal gas's of the same `γ`).

use quilt::cuda::CudaConfig;
use quilt::integrator::CudaBackend;
use quilt::integrator::deck::Residency;
use quilt::sweep::exact::{ExactRiemann, State1d};
use quilt::sweep::physics::{Eos, Gas, IdealGas};
use stiffened_gas::{ShockTube, StiffenedGas, X0, run, run_on, water_tube};

#[test]
fn without_stiffening_it_is_the_ideal_gas_bit_for_bit() {
    let gamma = StiffenedGas::WATER.gamma;
    let ideal = water_tube(Gas::new(StiffenedGas { gamma, p_inf: 0.0 }), 2);
    let as_ideal = ShockTube {
        gas: Gas::new(IdealGas { gamma }),
        left: ideal.left,
        right: ideal.right,
        deck_levels: ideal.deck_levels,
        scheme: ideal.scheme,
        residency: ideal.residency,
    };
    let a = run(ideal, Some(12), (gamma, 0.0)).unwrap();
    let b = run(as_ideal, Some(12), (gamma, 0.0)).unwrap();
    assert_eq!(a.steps, 12);
    assert_eq!(a.levels, 2);
    assert_eq!(a.digest, b.digest);
    assert_eq!(a.time.to_bits(), b.time.to_bits());
}

#[test]
fn the_water_shock_tube_matches_its_exact_solution() {
    let water = StiffenedGas::WATER;
    assert!(water.validate().is_ok());
    assert!(
        StiffenedGas {
            p_inf: -1.0,
            ..water
        }
        .validate()
        .is_err()
    );
    let o = run(
        water_tube(Gas::new(water), 2),
        None,
        (water.gamma, water.p_inf),
    )
    .unwrap();
    assert!((o.time - 1.2e-4).abs() < 1e-15, "{o:?}");
    assert_eq!(o.levels, 2, "{o:?}");
    // 2.2e-3 and 1.2e-2 measured on 64 base cells with one finer level.
    assert!(o.l1_density < 3e-3, "{o:?}");
    assert!(o.l1_pressure < 1.5e-2, "{o:?}");
    // No wave reaches a face: the mass is conserved to rounding.
    assert!(o.mass_drift.abs() < 1e-12, "{o:?}");
    // The same run measured against an ideal gas of water's γ: the waves
    // of the stiffened gas travel elsewhere.
    let wrong = run(water_tube(Gas::new(water), 2), None, (water.gamma, 0.0)).unwrap();
    assert_eq!(wrong.digest, o.digest);
    assert!(
        wrong.l1_density > 10.0 * o.l1_density,
        "{wrong:?} against {o:?}"
    );
}

#[test]
fn the_exact_solution_is_the_ideal_gas_one_in_shifted_pressure() {
    // The ideal gas's solution in p + p∞ satisfies the stiffened gas's
    // Rankine–Hugoniot relations across the right-moving shock.
    let w = StiffenedGas::WATER;
    let tube = water_tube(Gas::new(w), 1);
    let shift = |s: State1d| State1d::new(s.rho, s.u, s.p + w.p_inf);
    let e = ExactRiemann::new(shift(tube.left), shift(tube.right), w.gamma).unwrap();
    let (p_star, u_star) = (e.p_star() - w.p_inf, e.u_star());
    assert!(p_star > tube.right.p && p_star < tube.left.p);
    // Just behind the shock (right of the contact) at time t.
    let t = 1e-4;
    let xs: Vec<f64> = (0..4000).map(|i| X0 + i as f64 * 1e-4).collect();
    let behind = xs
        .iter()
        .map(|&x| (x, e.at(x, X0, t)))
        .rfind(|(_, s)| (s.p - w.p_inf - p_star).abs() < 1.0 && s.u > 0.0)
        .unwrap();
    let rho_star = behind.1.rho;
    // Mass: ρ_R (S - u_R) = ρ* (S - u*); momentum: the pressure jump.
    let s = rho_star * u_star / (rho_star - tube.right.rho);
    let jump = tube.right.rho * s * u_star;
    assert!(
        ((p_star - tube.right.p) - jump).abs() < 1e-6 * jump,
        "{p_star} {jump}"
    );
    // Energy, the relation the equation of state enters: the Hugoniot
    // e* - e_R = (p* + p_R) (1/ρ_R - 1/ρ*) / 2 with the stiffened gas's
    // specific internal energy (p + γ p∞) / ((γ - 1) ρ).
    let e = |rho: f64, p: f64| (p + w.gamma * w.p_inf) / ((w.gamma - 1.0) * rho);
    let lhs = e(rho_star, p_star) - e(tube.right.rho, tube.right.p);
    let rhs = 0.5 * (p_star + tube.right.p) * (1.0 / tube.right.rho - 1.0 / rho_star);
    assert!((lhs - rhs).abs() < 1e-6 * rhs.abs(), "{lhs} {rhs}");
    // Its speed is where the exact solution puts the shock.
    assert!(
        (behind.0 - (X0 + s * t)).abs() < 2e-4,
        "{} {}",
        behind.0,
        X0 + s * t
    );
}

#[test]
fn the_deck_problem_refuses_another_fluid() {
    let deck = stiffened_gas::settings(1).unwrap();
    let solver =
        quilt::sweep::Solver::new(deck.scheme().unwrap(), Gas::new(StiffenedGas::WATER)).unwrap();
    let backend = quilt::integrator::CpuBackend::<f64, StiffenedGas>::new(solver);
    let err = quilt::integrator::IntegratorBuilder::<f64>::new(&deck)
        .build(backend)
        .err()
        .expect("the deck's problem is an ideal gas");
    assert!(err.to_string().contains("stiffened gas"), "{err}");
}

/// Device residency (here the CPU backend's, which executes the flat
/// items as the GPU does) tags on the stiffened gas's pressure and gives
/// the host-staged run's state bit for bit.
#[test]
fn water_runs_resident_as_it_runs_host_staged() {
    let water = StiffenedGas::WATER;
    let exact = (water.gamma, water.p_inf);
    let tube = |residency| ShockTube {
        residency,
        ..water_tube(Gas::new(water), 2)
    };
    let host = run(tube(Residency::Host), Some(8), exact).unwrap();
    let device = run(tube(Residency::Device), Some(8), exact).unwrap();
    assert_eq!(host.residency, Residency::Host);
    assert_eq!(device.residency, Residency::Device);
    assert_eq!(device.levels, 2, "{device:?}");
    assert_eq!(device.digest, host.digest, "{device:?} against {host:?}");
    assert_eq!(device.time.to_bits(), host.time.to_bits());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --ignored on the GPU machine"]
fn the_gpu_solves_water_as_the_cpu_does() {
    if quilt::cuda::probe().is_err() {
        return;
    }
    let water = StiffenedGas::WATER;
    for scheme in ["rtvd", "tvd", "waf"] {
        let tube = ShockTube {
            scheme,
            ..water_tube(Gas::new(water), 2)
        };
        let deck = tube.settings().unwrap();
        let exact = (water.gamma, water.p_inf);
        // Host-staged, then resident (tagging on the device, through the
        // equation of state's header), each against the CPU.
        let cpu = run(tube, Some(16), exact).unwrap();
        let resident = ShockTube {
            residency: Residency::Device,
            ..tube
        };
        let cuda = CudaBackend::<f64, StiffenedGas>::new(
            deck.scheme().unwrap(),
            tube.gas,
            CudaConfig::default(),
        )
        .unwrap();
        let gpu = run_on(resident, Some(16), exact, cuda).unwrap();
        assert_eq!(gpu.residency, Residency::Device, "{scheme}");
        assert_eq!(
            gpu.digest, cpu.digest,
            "{scheme} resident: {gpu:?} against {cpu:?}"
        );
        let cuda = CudaBackend::<f64, StiffenedGas>::new(
            deck.scheme().unwrap(),
            tube.gas,
            CudaConfig::default(),
        )
        .unwrap();
        let gpu = run_on(tube, Some(16), exact, cuda).unwrap();
        assert_eq!(gpu.steps, 16, "{scheme}");
        assert_eq!(gpu.digest, cpu.digest, "{scheme}: {gpu:?} against {cpu:?}");
        assert_eq!(gpu.time.to_bits(), cpu.time.to_bits(), "{scheme}");
        eprintln!("{scheme}: the GPU run is bitwise the CPU's");
    }
}
