//! Conservation in a periodic box, and the flux buffer accounts for every
//! change of a patch's content.

mod common;

use common::{Arrangement, batch_for, schemes, smooth_3d};
use quilt_sweep::layout::flux_index;
use quilt_sweep::physics::Gas;
use quilt_sweep::{Batch, Solver, SweepOrder, Workspace};

/// Interior totals of every patch (sum of U times cell volume).
fn patch_totals(b: &Batch<f64>) -> Vec<[f64; 5]> {
    b.layout()
        .patches()
        .iter()
        .enumerate()
        .map(|(p, d)| {
            let n = d.interior();
            let g = d.ghost;
            let vol = d.dx.iter().product::<f64>();
            let mut t = [0.0; 5];
            for k in 0..n[2] {
                for j in 0..n[1] {
                    for i in 0..n[0] {
                        for (c, tc) in t.iter_mut().enumerate() {
                            *tc += b.get(p, c as u32, [i + g, j + g, k + g]).unwrap() * vol;
                        }
                    }
                }
            }
            t
        })
        .collect()
}

#[test]
fn periodic_box_conserves_and_flux_buffer_balances_each_patch() {
    for scheme in schemes() {
        let solver = Solver::new(scheme, Gas::ideal(1.4)).unwrap();
        let mut grid =
            smooth_3d::<f64>(&solver, [16, 14, 12], [vec![9, 7], vec![7, 7], vec![5, 7]]);
        let mut batch = batch_for(&grid, Arrangement::Packed);
        let scale: [f64; 5] = {
            let vol = grid.dx().iter().product::<f64>();
            let mut s = [0.0; 5];
            for u in common::states(&grid) {
                for c in 0..5 {
                    s[c] += u[c].abs() * vol;
                }
            }
            s
        };
        let start = grid.totals();
        let mut ws = Workspace::new();
        let mut worst_patch = 0.0f64;
        for step in 0..6 {
            grid.fill(&mut batch).unwrap();
            let before = patch_totals(&batch);
            let dt = solver.max_dt(&batch, common::cfl_of(scheme)).unwrap();
            solver
                .advance(&mut batch, dt, SweepOrder::for_step(step), &mut ws)
                .unwrap();
            let after = patch_totals(&batch);
            // Net inflow through the six faces from the flux buffer.
            for (p, d) in batch.layout().patches().iter().enumerate() {
                let n = d.interior();
                let mut inflow = [0.0; 5];
                for axis in 0..3 {
                    let (a, b) = match axis {
                        0 => (1, 2),
                        1 => (0, 2),
                        _ => (0, 1),
                    };
                    let area = d.dx[a] * d.dx[b];
                    for (c, inc) in inflow.iter_mut().enumerate() {
                        for tb in 0..n[b] {
                            for ta in 0..n[a] {
                                let lo = flux_index(d, 5, axis, 0, c as u32, ta, tb).unwrap();
                                let hi = flux_index(d, 5, axis, 1, c as u32, ta, tb).unwrap();
                                *inc += (batch.flux()[lo] - batch.flux()[hi]) * area;
                            }
                        }
                    }
                }
                for c in 0..5 {
                    let err = (after[p][c] - before[p][c] - inflow[c]).abs() / scale[c];
                    worst_patch = worst_patch.max(err);
                }
            }
            grid.gather(&batch).unwrap();
        }
        let end = grid.totals();
        let drift: Vec<f64> = (0..5)
            .map(|c| (end[c] - start[c]).abs() / scale[c])
            .collect();
        let shown: Vec<String> = drift.iter().map(|d| format!("{d:.1e}")).collect();
        eprintln!(
            "{}: relative drift {shown:?}, worst patch flux-buffer imbalance {worst_patch:.1e}",
            scheme.name()
        );
        assert!(
            drift.iter().all(|&d| d <= 1e-13),
            "{}: {drift:?}",
            scheme.name()
        );
        assert!(worst_patch <= 1e-13, "{}: {worst_patch}", scheme.name());
    }
}

/// Reflecting walls: a blast wave in a closed box keeps mass and energy
/// (the mirrored ghost states make the wall mass and energy fluxes vanish)
/// while the walls push back on the momentum.
#[test]
fn reflecting_box_keeps_mass_and_energy() {
    use quilt_sweep::physics::Primitive;
    use quilt_sweep::uniform::{Boundary, UniformGrid};
    for scheme in schemes() {
        let solver = Solver::new(scheme, Gas::ideal(1.4)).unwrap();
        let g = solver.ghost_width();
        let bc = [Boundary::Reflecting, Boundary::Periodic, Boundary::Periodic];
        let mut grid = UniformGrid::<f64>::new(
            [48, 1, 1],
            [1.0 / 48.0; 3],
            bc,
            g,
            [vec![30, 18], vec![1], vec![1]],
        )
        .unwrap();
        let gas = solver.gas();
        grid.init(|_, x| {
            let p = if x[0] < 0.3 { 10.0 } else { 0.1 };
            Primitive {
                rho: 1.0,
                vel: [0.5, 0.0, 0.0],
                p,
            }
            .to_conserved(&gas)
        });
        let start = grid.totals();
        let mut batch = batch_for(&grid, Arrangement::OnePerSlot);
        let sum = grid
            .run(
                &solver,
                &mut batch,
                &mut Workspace::new(),
                0.1,
                common::cfl_of(scheme),
            )
            .unwrap();
        let end = grid.totals();
        let rel = |c: usize| (end[c] - start[c]).abs() / start[c].abs();
        assert!(sum.steps > 10);
        assert!(
            rel(0) <= 1e-13 && rel(4) <= 1e-13,
            "{}: mass {:e}, energy {:e}",
            scheme.name(),
            rel(0),
            rel(4)
        );
        assert!(
            rel(1) > 1e-3,
            "{}: the walls exert no force?",
            scheme.name()
        );
    }
}
