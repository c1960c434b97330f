//! Shared helpers of the integration tests: shock tubes on a uniform grid
//! packed into bins, and L1 errors against the exact solution.
#![allow(dead_code)]

use quilt_sweep::exact::{ExactRiemann, State1d};
use quilt_sweep::physics::{Gas, Primitive};
use quilt_sweep::uniform::{Boundary, RunSummary, UniformGrid, even_cuts};
use quilt_sweep::{Batch, PatchShape, Real, Scheme, Solver, Workspace};

/// Bin placements of `shapes` from quilt-pack (EP-BFD, default options).
pub fn pack(shapes: &[PatchShape], bin_edge: u32) -> Vec<(u32, [u32; 3])> {
    let items: Vec<[u32; 3]> = shapes.iter().map(|s| s.extent).collect();
    let packing = quilt_pack::pack(&items, [bin_edge; 3], &quilt_pack::PackOptions::default())
        .expect("packing");
    packing
        .placements
        .iter()
        .map(|p| (p.bin as u32, p.offset))
        .collect()
}

/// How a grid's tiles are laid out in the batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arrangement {
    /// Bin packing with quilt-pack.
    Packed,
    /// One tile per bin at offset 0.
    OnePerSlot,
}

pub fn batch_for<T: Real>(grid: &UniformGrid<T>, how: Arrangement) -> Batch<T> {
    match how {
        Arrangement::Packed => grid.packed_batch(64, &pack(&grid.shapes(), 64)).unwrap(),
        Arrangement::OnePerSlot => grid.one_per_slot_batch(64).unwrap(),
    }
}

/// A shock-tube setup.
#[derive(Clone, Copy, Debug)]
pub struct Tube {
    pub left: State1d,
    pub right: State1d,
    pub x0: f64,
    pub t_end: f64,
    pub gamma: f64,
}

impl Tube {
    pub fn sod() -> Self {
        Self {
            left: State1d::new(1.0, 0.0, 1.0),
            right: State1d::new(0.125, 0.0, 0.1),
            x0: 0.5,
            t_end: 0.2,
            gamma: 1.4,
        }
    }
}

/// Cuts of `n` cells along the tube into uneven tiles that fit a 64-bin
/// with ghosts `g` (sizes vary so that packing has work to do).
pub fn tube_cuts(n: u32, g: u32) -> Vec<u32> {
    let max = 64 - 2 * g;
    let mut out = Vec::new();
    let mut left = n;
    let mut i = 0u32;
    while left > 0 {
        let want = [max, max / 2 + 3, max - 7, max / 3 + 1][(i % 4) as usize];
        let take = want.min(left);
        out.push(take);
        left -= take;
        i += 1;
    }
    out
}

/// Runs `tube` along `axis` with `n` cells (transverse size `trans` cells,
/// each transverse axis cut in `trans_tiles` tiles); returns the profile
/// `(x, rho, u, p)` along the line at transverse index 0 and the run summary.
#[allow(clippy::too_many_arguments)]
pub fn run_tube<T: Real>(
    scheme: Scheme,
    tube: &Tube,
    axis: usize,
    n: u32,
    cfl: f64,
    how: Arrangement,
    trans: u32,
    trans_tiles: u32,
) -> (Vec<[f64; 4]>, RunSummary) {
    let gas = Gas::ideal(tube.gamma);
    let solver = Solver::new(scheme, gas).unwrap();
    let g = solver.ghost_width();
    let mut cells = [trans; 3];
    cells[axis] = n;
    let mut dx = [1.0 / f64::from(n); 3];
    dx[axis] = 1.0 / f64::from(n);
    let mut cuts: [Vec<u32>; 3] =
        std::array::from_fn(|_| even_cuts(trans, trans.div_ceil(trans_tiles)));
    cuts[axis] = tube_cuts(n, g);
    let mut bc = [Boundary::Periodic; 3];
    bc[axis] = Boundary::Outflow;
    let mut grid = UniformGrid::<T>::new(cells, dx, bc, g, cuts).unwrap();
    let (l, r, x0) = (tube.left, tube.right, tube.x0);
    grid.init(|_, x| {
        let s = if x[axis] < x0 { l } else { r };
        let mut vel = [0.0; 3];
        vel[axis] = s.u;
        Primitive {
            rho: s.rho,
            vel,
            p: s.p,
        }
        .to_conserved(&gas)
    });
    let mut batch = batch_for(&grid, how);
    let mut ws = Workspace::new();
    let sum = grid
        .run(&solver, &mut batch, &mut ws, tube.t_end, cfl)
        .unwrap();
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let mut c = [0u32; 3];
        c[axis] = i;
        let u = grid.get(c).unwrap().map(|v| v.as_f64());
        let w = Primitive::from_conserved(&u, &gas);
        out.push([(f64::from(i) + 0.5) / f64::from(n), w.rho, w.vel[axis], w.p]);
    }
    (out, sum)
}

/// L1 errors of `(rho, u, p)` against exact cell averages.
pub fn l1_errors(profile: &[[f64; 4]], tube: &Tube) -> [f64; 3] {
    let exact = ExactRiemann::new(tube.left, tube.right, tube.gamma).unwrap();
    let h = 1.0 / profile.len() as f64;
    let mut e = [0.0; 3];
    for row in profile {
        let s = exact.cell_average(row[0] - 0.5 * h, row[0] + 0.5 * h, tube.x0, tube.t_end, 16);
        e[0] += (row[1] - s.rho).abs() * h;
        e[1] += (row[2] - s.u).abs() * h;
        e[2] += (row[3] - s.p).abs() * h;
    }
    e
}

/// Every scheme with its default options.
pub fn schemes() -> [Scheme; 3] {
    [Scheme::rtvd(), Scheme::tvd(), Scheme::waf()]
}

/// A CFL number each scheme accepts.
pub fn cfl_of(s: Scheme) -> f64 {
    0.8 * s.cfl_limit()
}

/// A smooth, fully 3D periodic state (density, pressure and all velocity
/// components vary along every axis) on a grid of `cells` cells of size 1/16.
pub fn smooth_3d<T: Real>(solver: &Solver, cells: [u32; 3], cuts: [Vec<u32>; 3]) -> UniformGrid<T> {
    let gas = solver.gas();
    let mut grid = UniformGrid::<T>::new(
        cells,
        [1.0 / 16.0; 3],
        [Boundary::Periodic; 3],
        solver.ghost_width(),
        cuts,
    )
    .unwrap();
    let l = cells.map(|n| f64::from(n) / 16.0);
    let tau = std::f64::consts::TAU;
    grid.init(|_, x| {
        let s = [0, 1, 2].map(|a| (tau * x[a] / l[a]).sin());
        let c = [0, 1, 2].map(|a| (tau * x[a] / l[a]).cos());
        Primitive {
            rho: 1.0 + 0.3 * s[0] * c[1] + 0.2 * s[2],
            vel: [
                0.4 + 0.3 * c[1] * s[2],
                -0.2 + 0.3 * s[0] * c[2],
                0.1 + 0.2 * c[0] * s[1],
            ],
            p: 1.0 + 0.2 * c[0] * s[1] * c[2],
        }
        .to_conserved(&gas)
    });
    grid
}

/// Advances `grid` by `steps` CFL-limited steps (fill, step, gather),
/// returning the flux buffer after each step.
pub fn steps<T: Real>(
    solver: &Solver,
    grid: &mut UniformGrid<T>,
    batch: &mut Batch<T>,
    n: u64,
) -> Vec<Vec<T>> {
    let mut ws = Workspace::new();
    let mut fluxes = Vec::new();
    for s in 0..n {
        grid.fill(batch).unwrap();
        let dt = solver.max_dt(batch, cfl_of(solver.scheme())).unwrap();
        solver
            .advance(batch, dt, quilt_sweep::SweepOrder::for_step(s), &mut ws)
            .unwrap();
        grid.gather(batch).unwrap();
        fluxes.push(batch.flux().to_vec());
    }
    fluxes
}

/// All conserved values of a grid, cell by cell.
pub fn states<T: Real>(grid: &UniformGrid<T>) -> Vec<[T; 5]> {
    let [nx, ny, nz] = grid.cells();
    let mut out = Vec::new();
    for k in 0..nz {
        for j in 0..ny {
            for i in 0..nx {
                out.push(grid.get([i, j, k]).unwrap());
            }
        }
    }
    out
}
