//! A smooth entropy wave advected with a non-zero background velocity:
//! second-order convergence of every scheme (van Leer type limiters).

mod common;

use common::{Arrangement, batch_for, cfl_of};
use quilt_sweep::physics::{Gas, Primitive};
use quilt_sweep::scheme::{RtvdLimiter, SlopeLimiter, TvdFlux, WafLimiter};
use quilt_sweep::uniform::{Boundary, UniformGrid, even_cuts};
use quilt_sweep::{Scheme, Solver, Workspace};

const AMP: f64 = 0.2;
const U: f64 = 1.0;
const T_END: f64 = 0.5;

/// Exact cell average of the density over `[a, b]` at time `t`.
fn rho_avg(a: f64, b: f64, t: f64) -> f64 {
    let tau = std::f64::consts::TAU;
    1.0 + AMP * ((tau * (a - U * t)).cos() - (tau * (b - U * t)).cos()) / (tau * (b - a))
}

/// L1 density error after advecting the wave to `T_END` on `n` cells along
/// `axis` (cut into several patches).
fn l1_error(scheme: Scheme, n: u32, axis: usize) -> f64 {
    let gas = Gas::ideal(1.4);
    let solver = Solver::new(scheme, gas).unwrap();
    let g = solver.ghost_width();
    let mut cells = [1; 3];
    cells[axis] = n;
    let h = 1.0 / f64::from(n);
    let mut cuts: [Vec<u32>; 3] = [vec![1], vec![1], vec![1]];
    cuts[axis] = even_cuts(n, (64 - 2 * g).min(n.div_ceil(2)));
    let mut grid =
        UniformGrid::<f64>::new(cells, [h; 3], [Boundary::Periodic; 3], g, cuts).unwrap();
    grid.init(|_, x| {
        let rho = rho_avg(x[axis] - 0.5 * h, x[axis] + 0.5 * h, 0.0);
        let mut vel = [0.0; 3];
        vel[axis] = U;
        Primitive { rho, vel, p: 1.0 }.to_conserved(&gas)
    });
    let mut batch = batch_for(&grid, Arrangement::Packed);
    grid.run(
        &solver,
        &mut batch,
        &mut Workspace::new(),
        T_END,
        cfl_of(scheme),
    )
    .unwrap();
    (0..n)
        .map(|i| {
            let mut c = [0; 3];
            c[axis] = i;
            let a = f64::from(i) * h;
            (grid.get(c).unwrap()[0] - rho_avg(a, a + h, T_END)).abs() * h
        })
        .sum()
}

fn order(scheme: Scheme) -> f64 {
    let ns = [32, 64, 128, 256];
    let errs: Vec<f64> = ns.iter().map(|&n| l1_error(scheme, n, 0)).collect();
    let rates: Vec<f64> = errs.windows(2).map(|w| (w[0] / w[1]).log2()).collect();
    let overall = (errs[0] / errs[3]).log2() / 3.0;
    eprintln!(
        "{:?}: L1 {:?}, rates {:?}, 32->256 order {overall:.3}",
        scheme,
        errs.iter().map(|e| format!("{e:.3e}")).collect::<Vec<_>>(),
        rates.iter().map(|r| format!("{r:.2}")).collect::<Vec<_>>()
    );
    overall
}

#[test]
fn rtvd_van_leer_is_second_order() {
    let o = order(Scheme::Rtvd {
        limiter: RtvdLimiter::VanLeer,
    });
    assert!(o >= 1.8, "order {o}");
}

#[test]
fn tvd_mc_is_second_order() {
    let o = order(Scheme::Tvd {
        slope: SlopeLimiter::Mc,
        flux: TvdFlux::Hll,
    });
    assert!(o >= 1.8, "order {o}");
}

#[test]
fn waf_van_leer_is_second_order() {
    let o = order(Scheme::Waf {
        limiter: WafLimiter::VanLeer,
    });
    assert!(o >= 1.8, "order {o}");
}

/// The wave along y and z gives the same errors as along x.
#[test]
fn convergence_is_axis_independent() {
    for scheme in [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()] {
        let ex = l1_error(scheme, 32, 0);
        assert_eq!(
            ex.to_bits(),
            l1_error(scheme, 32, 1).to_bits(),
            "{}",
            scheme.name()
        );
        assert_eq!(
            ex.to_bits(),
            l1_error(scheme, 32, 2).to_bits(),
            "{}",
            scheme.name()
        );
    }
}
