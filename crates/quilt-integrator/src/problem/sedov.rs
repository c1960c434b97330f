//! The Sedov–Taylor blast: energy deposited as pressure in a small sphere
//! of cold uniform gas.
//!
//! The deposit is normalised by the volume its sample points actually
//! cover on each level (see [`Sedov::deposit_volume`]), so every level
//! holds exactly the blast energy: the analytic `4/3 π r³` would miss it by
//! the discretisation of a sphere a few cells across, which is a bias in
//! the blast energy and hence (as `E^(1/5)`) in the shock radius.

use std::sync::OnceLock;

use quilt_mesh::{IntVect, LevelGeometry, iv};

use super::Setting;
use super::sampling::sampled_problem;
use super::sampling::{
    Pointwise, SAMPLES, cell_average_marked, offset2, one_side_of_sphere, sample_offset,
};
use crate::deck::SedovIc;

/// Most sample points per axis across the deposit for which its lattice
/// volume is counted (the count visits the square of this many rows);
/// beyond it the lattice volume is within about `(2/SPAN)^1.5` of the
/// analytic one and that is used instead.
const MAX_DEPOSIT_SPAN: usize = 4096;

/// Levels whose deposit volume is remembered (deeper ones count it for
/// every cell).
const REMEMBERED_LEVELS: usize = 32;

/// Whether a point at squared axis offsets `d2` from the centre lies within
/// `r`. Both the deposit and its volume count test points through this one
/// expression, so they agree on every point, bit for bit.
fn within(d2: [f64; 3], r: f64) -> bool {
    (d2[0] + d2[1] + d2[2]).sqrt() <= r
}

/// The deposit's volume on one level's sample lattice, with the lattice it
/// was counted on.
#[derive(Clone, Copy, Debug, PartialEq)]
struct LatticeVolume {
    prob_lo: [f64; 3],
    dx: [f64; 3],
    volume: f64,
}

/// A Sedov–Taylor blast (`[initial.sedov]`). Each passive scalar starts as
/// the partial density of the deposit's gas.
#[derive(Clone, Debug)]
pub struct Sedov {
    ic: SedovIc,
    setting: Setting,
    /// Per level, the deposit volume, counted on first use.
    volumes: Box<[OnceLock<LatticeVolume>]>,
}

impl Sedov {
    /// The blast `ic` in `setting`.
    pub fn new(ic: SedovIc, setting: Setting) -> Self {
        Self {
            ic,
            setting,
            volumes: (0..REMEMBERED_LEVELS).map(|_| OnceLock::new()).collect(),
        }
    }

    /// The blast.
    pub fn ic(&self) -> &SedovIc {
        &self.ic
    }

    /// The gas, criteria and faces.
    pub fn setting(&self) -> &Setting {
        &self.setting
    }

    /// Primitive state `[rho, u, v, w, p]` at point `x`. Inside the deposit
    /// the pressure is the point value `p_ambient + (γ−1) E / V` with `V`
    /// the analytic sphere volume; [`Sedov::cell_average`] uses the level's
    /// lattice volume instead.
    pub fn primitive(&self, x: [f64; 3]) -> [f64; 5] {
        self.state_at(x, self.deposit_pressure(analytic_volume(self.ic.radius)))
            .0
    }

    /// Cell average of the conserved state over cell `cell` of `level`.
    pub fn cell_average(&self, level: &LevelGeometry, cell: &IntVect) -> [f64; 5] {
        cell_average_marked(self, level, cell).0
    }

    /// Pressure inside the deposit when it covers volume `volume`: the
    /// ambient gas plus the blast energy spread over that volume.
    fn deposit_pressure(&self, volume: f64) -> f64 {
        let s = &self.ic;
        s.p_ambient + (self.setting.gamma - 1.0) * s.energy / volume
    }

    /// The volume the deposit covers on level `lg`: the number of cell
    /// sample points (of the level's lattice extended over all space, so
    /// the deposit counts whole even where the domain cuts it) within
    /// `radius` of `center`, times the volume each stands for. The
    /// deposit's pressure is `p_ambient + (γ−1) energy / volume`, so the
    /// cell averages of a level hold exactly `energy` above the ambient gas
    /// — all of it for a blast inside the domain, an eighth of it (by the
    /// lattice's mirror symmetry) for one centred on a corner of the
    /// domain, a half for one centred on a face. Falls back to the analytic
    /// `4/3 π r³` when no sample lies inside or the deposit spans more than
    /// `MAX_DEPOSIT_SPAN` samples per axis.
    pub fn deposit_volume(&self, lg: &LevelGeometry) -> f64 {
        let s = &self.ic;
        let key = |volume| LatticeVolume {
            prob_lo: [lg.prob_lo.x, lg.prob_lo.y, lg.prob_lo.z],
            dx: [lg.dx.x, lg.dx.y, lg.dx.z],
            volume,
        };
        let count = || {
            lattice_volume(lg, s.center, s.radius).unwrap_or_else(|| {
                log::debug!(
                    "Sedov deposit on level {}: lattice volume not counted, analytic volume used",
                    lg.level
                );
                analytic_volume(s.radius)
            })
        };
        match self.volumes.get(lg.level) {
            Some(cell) => {
                let v = cell.get_or_init(|| key(count()));
                // A geometry other than the first seen (same level number,
                // other lattice) is counted afresh.
                if v.prob_lo == key(0.0).prob_lo && v.dx == key(0.0).dx {
                    v.volume
                } else {
                    count()
                }
            }
            None => count(),
        }
    }
}

impl Pointwise for Sedov {
    fn setting(&self) -> &Setting {
        &self.setting
    }

    fn level_value(&self, lg: &LevelGeometry) -> f64 {
        self.deposit_pressure(self.deposit_volume(lg))
    }

    fn state_at(&self, x: [f64; 3], deposit_p: f64) -> ([f64; 5], bool) {
        let s = &self.ic;
        let d2 = std::array::from_fn(|a| offset2(x[a], s.center[a]));
        if within(d2, s.radius) {
            ([s.rho, 0.0, 0.0, 0.0, deposit_p], true)
        } else {
            ([s.rho, 0.0, 0.0, 0.0, s.p_ambient], false)
        }
    }

    fn uniform_between(&self, lo: [f64; 3], hi: [f64; 3]) -> bool {
        one_side_of_sphere(lo, hi, self.ic.center, self.ic.radius)
    }
}

sampled_problem!(Sedov, "sedov");

/// `4/3 π r³`.
fn analytic_volume(r: f64) -> f64 {
    4.0 / 3.0 * std::f64::consts::PI * r.powi(3)
}

/// Volume of the sample points of level `lg` within `r` of `center`
/// (`None` when there are none or too many to count). Sample coordinates
/// are computed per axis exactly as the cell averages compute them; for
/// fixed `y`, `z` offsets the test is monotone in the `x` offset, so each
/// row is counted by a binary search over the sorted squared `x` offsets.
fn lattice_volume(lg: &LevelGeometry, center: [f64; 3], r: f64) -> Option<f64> {
    let mut d2: [Vec<f64>; 3] = Default::default();
    for (a, d2a) in d2.iter_mut().enumerate() {
        let cell = |x: f64| ((x - lg.prob_lo[a]) / lg.dx[a]).floor();
        // One cell of margin each side: a sample outside lies farther than
        // `r` from the centre by most of a cell, far beyond rounding.
        let (lo, hi) = (cell(center[a] - r) - 1.0, cell(center[a] + r) + 1.0);
        let span = (hi - lo + 1.0) * SAMPLES as f64;
        if !(span.is_finite() && span <= MAX_DEPOSIT_SPAN as f64)
            || lo < f64::from(i32::MIN)
            || hi > f64::from(i32::MAX)
        {
            return None;
        }
        for m in lo as i32..=hi as i32 {
            let corner = lg.cell_lo_corner(&iv(m, m, m))[a];
            for n in 0..SAMPLES {
                d2a.push(offset2(corner + sample_offset(n) * lg.dx[a], center[a]));
            }
        }
    }
    let [mut dx2, dy2, dz2] = d2;
    dx2.sort_by(f64::total_cmp);
    let mut count = 0u64;
    for &z in &dz2 {
        for &y in &dy2 {
            count += dx2.partition_point(|&x| within([x, y, z], r)) as u64;
        }
    }
    if count == 0 {
        return None;
    }
    let sample_volume = lg.cell_volume() / (SAMPLES * SAMPLES * SAMPLES) as f64;
    Some(count as f64 * sample_volume)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_mesh::Geometry;

    fn blast(center: [f64; 3], radius: f64, energy: f64) -> Sedov {
        Sedov::new(
            SedovIc {
                center,
                radius,
                energy,
                ..SedovIc::default()
            },
            Setting::default(),
        )
    }

    /// Blast energy held by the cell averages of `lg` over all cells of
    /// the domain (above the ambient gas's internal energy).
    fn deposited(ic: &Sedov, lg: &LevelGeometry) -> f64 {
        let ambient = ic.ic.p_ambient / (ic.setting.gamma - 1.0);
        lg.domain
            .iter()
            .map(|q| (ic.cell_average(lg, &q)[4] - ambient) * lg.cell_volume())
            .sum()
    }

    #[test]
    fn sedov_levels_hold_exactly_the_blast_energy() {
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(16, 16, 16), &[2, 2]).unwrap();
        for (center, share) in [
            ([0.47, 0.52, 0.5], 1.0),
            ([0.0, 0.0, 0.0], 0.125),
            ([0.5, 0.5, 0.0], 0.5),
        ] {
            let ic = blast(center, 0.07, 2.5);
            for lg in g.levels() {
                let e = deposited(&ic, &lg);
                let rel = (e / (share * 2.5) - 1.0).abs();
                assert!(
                    rel < 1e-12,
                    "{center:?} level {}: {e} ({rel:.2e})",
                    lg.level
                );
                // The lattice volume is the sphere's to within the
                // discretisation of a sphere a few cells across.
                let v = ic.deposit_volume(&lg) / analytic_volume(0.07);
                assert!((v - 1.0).abs() < 0.05, "level {}: {v}", lg.level);
            }
        }
    }

    #[test]
    fn sedov_volume_converges_and_has_a_fallback() {
        let ic = blast([0.5; 3], 0.1, 1.0);
        let err = |n: i32| {
            let g = Geometry::new([0.0; 3], [1.0; 3], iv(n, n, n), &[]).unwrap();
            (ic.deposit_volume(&g.level(0).unwrap()) / analytic_volume(0.1) - 1.0).abs()
        };
        assert!(err(128) < 2e-3, "{}", err(128));
        // Far too fine to count: the analytic volume.
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(8192, 8192, 8192), &[]).unwrap();
        assert_eq!(
            ic.deposit_volume(&g.level(0).unwrap()),
            analytic_volume(0.1)
        );
        // A deposit between the samples: nothing to count.
        let tiny = blast([0.5; 3], 1e-3, 1.0);
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(8, 8, 8), &[]).unwrap();
        assert_eq!(
            tiny.deposit_volume(&g.level(0).unwrap()),
            analytic_volume(1e-3)
        );
        // The point value uses the analytic volume, on top of the ambient.
        let p = ic.primitive([0.5; 3])[4];
        assert!(
            (p - (1e-5 + 0.4 / analytic_volume(0.1))).abs() < 1e-12,
            "{p}"
        );
    }
}
