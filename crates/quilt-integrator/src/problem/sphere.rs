//! The sphere problem of SAMRAI's Euler application: a dense gas sphere at
//! high pressure at rest in a uniform gas at rest.

use quilt_mesh::{IntVect, LevelGeometry};

use super::Setting;
use super::sampling::sampled_problem;
use super::sampling::{Pointwise, cell_average_marked, one_side_of_sphere};
use crate::deck::SphereIc;

/// A gas sphere at rest in a uniform gas at rest (`[initial.sphere]`).
/// Each passive scalar starts as the partial density of the sphere's gas.
#[derive(Clone, Debug, PartialEq)]
pub struct Sphere {
    /// The two states and the sphere.
    pub ic: SphereIc,
    /// The gas, criteria and faces.
    pub setting: Setting,
}

impl Sphere {
    /// The sphere `ic` in `setting`.
    pub fn new(ic: SphereIc, setting: Setting) -> Self {
        Self { ic, setting }
    }

    /// Primitive state `[rho, u, v, w, p]` at point `x`.
    pub fn primitive(&self, x: [f64; 3]) -> [f64; 5] {
        self.state_at(x, 0.0).0
    }

    /// Cell average of the conserved state over cell `cell` of `level`.
    pub fn cell_average(&self, level: &LevelGeometry, cell: &IntVect) -> [f64; 5] {
        cell_average_marked(self, level, cell).0
    }
}

impl Pointwise for Sphere {
    fn setting(&self) -> &Setting {
        &self.setting
    }

    fn state_at(&self, x: [f64; 3], _: f64) -> ([f64; 5], bool) {
        let s = &self.ic;
        let c = s.center;
        let dist = ((x[0] - c[0]).powi(2) + (x[1] - c[1]).powi(2) + (x[2] - c[2]).powi(2)).sqrt();
        if dist <= s.radius {
            ([s.rho_in, 0.0, 0.0, 0.0, s.p_in], true)
        } else {
            ([s.rho_out, 0.0, 0.0, 0.0, s.p_out], false)
        }
    }

    fn uniform_between(&self, lo: [f64; 3], hi: [f64; 3]) -> bool {
        one_side_of_sphere(lo, hi, self.ic.center, self.ic.radius)
    }
}

sampled_problem!(Sphere, "sphere");

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_mesh::{Geometry, iv};

    #[test]
    fn sphere_cells_mix_by_volume() {
        let ic = Sphere::new(SphereIc::default(), Setting::default());
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(32, 32, 32), &[]).unwrap();
        let lg = g.level(0).unwrap();
        assert_eq!(ic.cell_average(&lg, &iv(16, 16, 16))[0], 8.0);
        assert_eq!(ic.cell_average(&lg, &iv(0, 0, 0))[0], 1.0);
        let edge = ic.cell_average(&lg, &iv(19, 16, 16))[0];
        assert!(edge > 1.0 && edge < 8.0, "{edge}");
        assert_eq!(ic.primitive([0.5; 3]), [8.0, 0.0, 0.0, 0.0, 40.0]);
    }
}
