//! Passive scalars: components after the Euler five are carried by the mass
//! flux, leave the Euler answer untouched, and a multiple of the density
//! stays that multiple.

use quilt_sweep::layout::flux_index;
use quilt_sweep::physics::Gas;
use quilt_sweep::{Batch, BatchLayout, PatchShape, Scheme, Solver, SweepOrder, Workspace};

const N: u32 = 12;

/// A smooth, moving state at cell `c` (ghosts included) of a patch of
/// `N`³ interior cells with `g` ghosts: `[rho, m, E]`.
fn state(c: [u32; 3], g: u32) -> [f64; 5] {
    let x = c.map(|v| (v as f64 - g as f64 + 0.5) / N as f64);
    let rho = 1.0 + 0.3 * (6.0 * x[0]).sin() * (4.0 * x[1]).cos() + 0.2 * (5.0 * x[2]).sin();
    let v = [0.8, -0.5 + 0.3 * x[2], 0.4 * (3.0 * x[0]).cos()];
    let p = 1.0 + 0.2 * (3.0 * x[1]).sin();
    let ke = 0.5 * rho * (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]);
    [rho, rho * v[0], rho * v[1], rho * v[2], p / 0.4 + ke]
}

/// One patch with `ncomp` components; scalar `k` is `frac(k, cell) * rho`.
fn batch(ncomp: u32, g: u32, frac: impl Fn(usize, [u32; 3]) -> f64) -> Batch<f64> {
    let shape = PatchShape::new(1, [N; 3], g, [1.0 / N as f64; 3]);
    let layout = BatchLayout::one_per_slot(32, ncomp, &[shape]).unwrap();
    let mut b = Batch::new(layout);
    let e = N + 2 * g;
    for k in 0..e {
        for j in 0..e {
            for i in 0..e {
                let c = [i, j, k];
                let u = state(c, g);
                for (v, x) in u.iter().enumerate() {
                    b.set(0, v as u32, c, *x).unwrap();
                }
                for s in 5..ncomp as usize {
                    b.set(0, s as u32, c, frac(s - 5, c) * u[0]).unwrap();
                }
            }
        }
    }
    b
}

fn step(solver: &Solver, b: &mut Batch<f64>) {
    let dt = solver.max_dt(b, 0.4).unwrap();
    solver
        .advance(b, dt, SweepOrder::Xyz, &mut Workspace::new())
        .unwrap();
}

fn schemes() -> [Scheme; 3] {
    [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()]
}

#[test]
fn scalars_leave_the_euler_answer_unchanged_bit_for_bit() {
    for scheme in schemes() {
        let solver = Solver::new(scheme, Gas::ideal(1.4)).unwrap();
        let g = solver.ghost_width();
        let mut plain = batch(5, g, |_, _| 0.0);
        let mut dyed = batch(7, g, |k, c| if c[0] < 9 + k as u32 { 1.0 } else { 0.0 });
        step(&solver, &mut plain);
        step(&solver, &mut dyed);
        let e = N + 2 * g;
        for k in g..e - g {
            for j in g..e - g {
                for i in g..e - g {
                    for v in 0..5 {
                        let (a, b) = (plain.get(0, v, [i, j, k]), dyed.get(0, v, [i, j, k]));
                        assert_eq!(a, b, "{}: component {v} at {:?}", scheme.name(), [i, j, k]);
                    }
                }
            }
        }
        let d = &plain.layout().patches()[0];
        for axis in 0..3 {
            for side in 0..2 {
                for (ta, tb) in [(0, 0), (3, 7), (N - 1, N - 1)] {
                    for c in 0..5 {
                        let i = flux_index(d, 5, axis, side, c, ta, tb).unwrap();
                        let j = flux_index(d, 7, axis, side, c, ta, tb).unwrap();
                        assert_eq!(plain.flux()[i], dyed.flux()[j], "{}", scheme.name());
                    }
                }
            }
        }
    }
}

#[test]
fn a_multiple_of_the_density_stays_that_multiple_with_its_fluxes() {
    for scheme in schemes() {
        let solver = Solver::new(scheme, Gas::ideal(1.4)).unwrap();
        let g = solver.ghost_width();
        let c = [0.25, 0.7];
        let mut b = batch(7, g, |k, _| c[k]);
        step(&solver, &mut b);
        let e = N + 2 * g;
        let mut worst = 0.0f64;
        for k in g..e - g {
            for j in g..e - g {
                for i in g..e - g {
                    let rho = b.get(0, 0, [i, j, k]).unwrap();
                    for (s, cs) in c.iter().enumerate() {
                        let x = b.get(0, 5 + s as u32, [i, j, k]).unwrap();
                        worst = worst.max((x - cs * rho).abs() / rho);
                    }
                }
            }
        }
        assert!(
            worst < 1e-14,
            "{}: relative departure {worst:e}",
            scheme.name()
        );
        // The scalars' face fluxes (what refluxing corrects with) are the
        // same multiples of the mass flux.
        let d = &b.layout().patches()[0];
        for axis in 0..3 {
            for side in 0..2 {
                for ta in 0..N {
                    for tb in [0, N / 2, N - 1] {
                        let at =
                            |comp| b.flux()[flux_index(d, 7, axis, side, comp, ta, tb).unwrap()];
                        let m = at(0);
                        for (s, cs) in c.iter().enumerate() {
                            let f = at(5 + s as u32);
                            assert!(
                                (f - cs * m).abs() <= 1e-14 * (1.0 + m.abs()),
                                "{}: axis {axis} side {side}: {f} vs {}",
                                scheme.name(),
                                cs * m
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_mass_fraction_stays_within_its_bounds() {
    for scheme in schemes() {
        let solver = Solver::new(scheme, Gas::ideal(1.4)).unwrap();
        let g = solver.ghost_width();
        let mut b = batch(6, g, |_, c| if c[0] + c[1] < 14 { 1.0 } else { 0.0 });
        step(&solver, &mut b);
        let e = N + 2 * g;
        let (mut lo, mut hi) = (f64::MAX, f64::MIN);
        for k in g..e - g {
            for j in g..e - g {
                for i in g..e - g {
                    let phi = b.get(0, 5, [i, j, k]).unwrap() / b.get(0, 0, [i, j, k]).unwrap();
                    lo = lo.min(phi);
                    hi = hi.max(phi);
                }
            }
        }
        assert!(
            lo > -1e-12 && hi < 1.0 + 1e-12,
            "{}: [{lo}, {hi}]",
            scheme.name()
        );
        assert!(lo < 0.01 && hi > 0.99, "{}: [{lo}, {hi}]", scheme.name());
    }
}

#[test]
fn a_non_finite_scalar_is_refused_with_its_place() {
    let solver = Solver::new(Scheme::rtvd(), Gas::ideal(1.4)).unwrap();
    let g = solver.ghost_width();
    let mut b = batch(6, g, |_, _| 0.5);
    b.set(0, 5, [4, 5, 6], f64::NAN).unwrap();
    let e = solver
        .advance(&mut b, 1e-4, SweepOrder::Xyz, &mut Workspace::new())
        .unwrap_err()
        .to_string();
    assert!(e.contains("passive scalar 0 is not finite"), "{e}");
}
