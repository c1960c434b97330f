//! Cell averages of a state given as a function of position, by sampling
//! each cell at `SAMPLES³` points: a sphere or a plane cutting a cell gives
//! the volume-weighted mix, so the initial state does not depend on which
//! level a region happens to be on more than the cell size allows.

use quilt_mesh::{IntVect, LevelGeometry};
use quilt_sweep::physics::NCOMP;

use super::Setting;

/// Sample points per axis in each cell.
pub(crate) const SAMPLES: usize = 4;

/// Offset of sample `n` of a cell in units of the cell size.
pub(crate) fn sample_offset(n: usize) -> f64 {
    (n as f64 + 0.5) / SAMPLES as f64
}

/// Squared distance along one axis.
pub(crate) fn offset2(x: f64, c: f64) -> f64 {
    (x - c) * (x - c)
}

/// An ideal gas's initial state as a function of position.
pub(crate) trait Pointwise {
    /// The gas the states are given for, the criteria and the faces.
    fn setting(&self) -> &Setting;

    /// What the state of level `lg` depends on besides the position (the
    /// Sedov deposit's pressure), found once per cell.
    fn level_value(&self, lg: &LevelGeometry) -> f64 {
        let _ = lg;
        0.0
    }

    /// Primitive state `[rho, u, v, w, p]` at `x`, and whether `x` holds
    /// the *marked* gas, which passive scalars start in.
    fn state_at(&self, x: [f64; 3], level_value: f64) -> ([f64; 5], bool);

    /// Whether the state is certainly the same at every point of the box
    /// `[lo, hi]` (the first and last sample of a cell).
    fn uniform_between(&self, lo: [f64; 3], hi: [f64; 3]) -> bool;
}

/// `[rho, rho u, rho v, rho w, E]` of a primitive state of the ideal gas
/// of `gamma`.
pub(crate) fn to_conserved(gamma: f64, [rho, u, v, w, p]: [f64; 5]) -> [f64; 5] {
    [
        rho,
        rho * u,
        rho * v,
        rho * w,
        p / (gamma - 1.0) + 0.5 * rho * (u * u + v * v + w * w),
    ]
}

/// The average of `SAMPLES³` samples that all equal `u`, summed one after
/// another as the sampled average sums them (so bit for bit the same),
/// remembered per thread for the few states an initial condition has.
fn repeated_average(u: [f64; 5]) -> [f64; 5] {
    thread_local! {
        static SEEN: std::cell::RefCell<Vec<([u64; 5], [f64; 5])>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let key = u.map(f64::to_bits);
    SEEN.with_borrow_mut(|seen| {
        if let Some((_, avg)) = seen.iter().find(|(k, _)| *k == key) {
            return *avg;
        }
        let mut sum = [0.0; 5];
        for _ in 0..SAMPLES * SAMPLES * SAMPLES {
            for c in 0..5 {
                sum[c] += u[c];
            }
        }
        let avg = sum.map(|s| s / (SAMPLES * SAMPLES * SAMPLES) as f64);
        if seen.len() >= 16 {
            seen.remove(0);
        }
        seen.push((key, avg));
        avg
    })
}

/// The cell average of the conserved state over cell `p` of level `lg`,
/// and the cell average of the marked gas's density: the partial density
/// passive scalars start with. It equals the cell's density bit for bit
/// where the whole cell is marked.
pub(crate) fn cell_average_marked<P: Pointwise + ?Sized>(
    problem: &P,
    lg: &LevelGeometry,
    p: &IntVect,
) -> ([f64; 5], f64) {
    let level_value = problem.level_value(lg);
    let gamma = problem.setting().gamma;
    let lo = lg.cell_lo_corner(p);
    let dx = lg.dx;
    let sample = |i: usize, j: usize, k: usize| {
        [
            lo.x + sample_offset(i) * dx.x,
            lo.y + sample_offset(j) * dx.y,
            lo.z + sample_offset(k) * dx.z,
        ]
    };
    let last = SAMPLES - 1;
    if problem.uniform_between(sample(0, 0, 0), sample(last, last, last)) {
        // Every sample has the state of the first: the same sums as
        // below, bit for bit, without evaluating each sample.
        let (w, inside) = problem.state_at(sample(0, 0, 0), level_value);
        let avg = repeated_average(to_conserved(gamma, w));
        return (avg, if inside { avg[0] } else { 0.0 });
    }
    let mut sum = [0.0; 5];
    let mut marked = 0.0;
    for k in 0..SAMPLES {
        for j in 0..SAMPLES {
            for i in 0..SAMPLES {
                let (w, inside) = problem.state_at(sample(i, j, k), level_value);
                let u = to_conserved(gamma, w);
                for c in 0..5 {
                    sum[c] += u[c];
                }
                if inside {
                    marked += u[0];
                }
            }
        }
    }
    let n = (SAMPLES * SAMPLES * SAMPLES) as f64;
    (sum.map(|s| s / n), marked / n)
}

/// [`cell_average_marked`] written into a cell's state: the Euler five,
/// then every passive scalar as the marked gas's partial density.
pub(crate) fn sampled_state<P: Pointwise + ?Sized>(
    problem: &P,
    lg: &LevelGeometry,
    cell: &IntVect,
    state: &mut [f64],
) {
    let (u, marked) = cell_average_marked(problem, lg, cell);
    let (euler, scalars) = state.split_at_mut(NCOMP);
    euler.copy_from_slice(&u);
    scalars.fill(marked);
}

/// `Problem` for a [`Pointwise`] problem `$ty` called `$name`: cell
/// averages by sampling, criteria and faces of its setting.
macro_rules! sampled_problem {
    ($ty:ty, $name:literal) => {
        impl<T: $crate::Real> $crate::problem::Problem<T> for $ty {
            fn name(&self) -> &str {
                $name
            }

            fn accepts(&self, gas: &dyn quilt_sweep::physics::Thermo) -> Result<(), String> {
                $crate::problem::sampling::Pointwise::setting(self).accepts(gas)
            }

            fn initial_state(
                &self,
                level: &quilt_mesh::LevelGeometry,
                cell: &quilt_mesh::IntVect,
                state: &mut [f64],
            ) {
                $crate::problem::sampling::sampled_state(self, level, cell, state);
            }

            fn refinement(
                &self,
            ) -> Result<Vec<$crate::problem::Refinement<T>>, $crate::IntegratorError> {
                $crate::problem::sampling::Pointwise::setting(self).refinement()
            }

            fn faces(&self) -> Result<$crate::problem::Faces<T>, $crate::IntegratorError> {
                Ok($crate::problem::sampling::Pointwise::setting(self).faces())
            }
        }
    };
}
pub(crate) use sampled_problem;

/// Whether the box `[lo, hi]` lies wholly inside or wholly outside the
/// sphere of centre `c` and radius `r`, with a margin far above the
/// rounding of a per-sample test.
pub(crate) fn one_side_of_sphere(lo: [f64; 3], hi: [f64; 3], c: [f64; 3], r: f64) -> bool {
    let (mut near, mut far) = (0.0, 0.0);
    for a in 0..3 {
        let (d0, d1) = ((lo[a] - c[a]).abs(), (hi[a] - c[a]).abs());
        let inside = lo[a] <= c[a] && c[a] <= hi[a];
        near += if inside { 0.0 } else { d0.min(d1).powi(2) };
        far += d0.max(d1).powi(2);
    }
    const MARGIN: f64 = 1e-9;
    far.sqrt() < r * (1.0 - MARGIN) || near.sqrt() > r * (1.0 + MARGIN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deck::{Axis, RiemannIc, SedovIc, SphereIc};
    use crate::problem::{Riemann, Sedov, Setting, Sphere};
    use quilt_mesh::{Geometry, iv};

    /// The shortcut for cells the initial state is uniform over gives the
    /// sampled average bit for bit, on every cell of a level, for every
    /// problem whose state has a discontinuity.
    #[test]
    fn uniform_cells_average_as_their_samples_do() {
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(24, 24, 24), &[]).unwrap();
        let lg = g.level(0).unwrap();
        let sphere = Sphere::new(
            SphereIc {
                radius: 0.3,
                ..SphereIc::default()
            },
            Setting::default(),
        );
        let riemann = Riemann::new(
            RiemannIc {
                x0: 0.51,
                axis: Axis::X,
                ..RiemannIc::default()
            },
            Setting::default(),
        );
        let sedov = Sedov::new(
            SedovIc {
                radius: 0.2,
                ..SedovIc::default()
            },
            Setting::default(),
        );
        let problems: [(&str, &dyn Pointwise); 3] = [
            ("sphere", &sphere),
            ("riemann", &riemann),
            ("sedov", &sedov),
        ];
        for (name, ic) in problems {
            let level_value = ic.level_value(&lg);
            let (mut shortcut, mut sampled) = (0, 0);
            for q in lg.domain.iter() {
                let lo = lg.cell_lo_corner(&q);
                let mut sum = [0.0; 5];
                for k in 0..SAMPLES {
                    for j in 0..SAMPLES {
                        for i in 0..SAMPLES {
                            let x = [
                                lo.x + sample_offset(i) * lg.dx.x,
                                lo.y + sample_offset(j) * lg.dx.y,
                                lo.z + sample_offset(k) * lg.dx.z,
                            ];
                            let u = to_conserved(ic.setting().gamma, ic.state_at(x, level_value).0);
                            for c in 0..5 {
                                sum[c] += u[c];
                            }
                        }
                    }
                }
                let want = sum.map(|s| s / (SAMPLES * SAMPLES * SAMPLES) as f64);
                assert_eq!(
                    cell_average_marked(ic, &lg, &q).0,
                    want,
                    "{name} cell {q:?}"
                );
                let hi = [lo.x, lo.y, lo.z].map(|v| v + 0.9 * lg.dx.x);
                if ic.uniform_between([lo.x, lo.y, lo.z], hi) {
                    shortcut += 1;
                } else {
                    sampled += 1;
                }
            }
            assert!(
                shortcut > 10 * sampled && sampled > 0,
                "{name}: {shortcut} / {sampled}"
            );
        }
    }
}
