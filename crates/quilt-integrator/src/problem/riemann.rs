//! A planar Riemann problem: two uniform states meeting at a plane.

use quilt_mesh::{IntVect, LevelGeometry};

use super::Setting;
use super::sampling::sampled_problem;
use super::sampling::{Pointwise, cell_average_marked};
use crate::deck::RiemannIc;

/// A planar Riemann problem (`[initial.riemann]`), for instance a shock
/// tube. Each passive scalar starts as the partial density of the left
/// state's gas, so it follows the contact.
#[derive(Clone, Debug, PartialEq)]
pub struct Riemann {
    /// The two states, the axis and the plane.
    pub ic: RiemannIc,
    /// The gas, criteria and faces.
    pub setting: Setting,
}

impl Riemann {
    /// The Riemann problem `ic` in `setting`.
    pub fn new(ic: RiemannIc, setting: Setting) -> Self {
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

impl Pointwise for Riemann {
    fn setting(&self) -> &Setting {
        &self.setting
    }

    fn state_at(&self, x: [f64; 3], _: f64) -> ([f64; 5], bool) {
        let s = &self.ic;
        let a = s.axis.index();
        let left = x[a] < s.x0;
        let st = if left { s.left } else { s.right };
        let mut v = [0.0; 3];
        v[a] = st[1];
        ([st[0], v[0], v[1], v[2], st[2]], left)
    }

    fn uniform_between(&self, lo: [f64; 3], hi: [f64; 3]) -> bool {
        let a = self.ic.axis.index();
        // Sample coordinates grow with the sample index, so the first and
        // last decide for all.
        (hi[a] < self.ic.x0) == (lo[a] < self.ic.x0)
    }
}

sampled_problem!(Riemann, "riemann");

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deck::Axis;

    #[test]
    fn riemann_states_follow_the_axis() {
        let ic = Riemann::new(
            RiemannIc {
                axis: Axis::Y,
                left: [2.0, 0.5, 3.0],
                ..RiemannIc::default()
            },
            Setting::default(),
        );
        assert_eq!(ic.primitive([0.9, 0.1, 0.9]), [2.0, 0.0, 0.5, 0.0, 3.0]);
        assert_eq!(ic.primitive([0.1, 0.9, 0.1]), [0.125, 0.0, 0.0, 0.0, 0.1]);
    }
}
