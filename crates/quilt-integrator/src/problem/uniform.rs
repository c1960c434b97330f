//! A uniform state.

use super::Setting;
use super::sampling::Pointwise;
use super::sampling::sampled_problem;
use crate::deck::UniformIc;

/// A uniform state (`[initial.uniform]`), for instance to check that a
/// run keeps it exactly. Each passive scalar starts as the whole density.
#[derive(Clone, Debug, PartialEq)]
pub struct Uniform {
    /// The state.
    pub ic: UniformIc,
    /// The gas, criteria and faces.
    pub setting: Setting,
}

impl Uniform {
    /// The uniform state `ic` in `setting`.
    pub fn new(ic: UniformIc, setting: Setting) -> Self {
        Self { ic, setting }
    }
}

impl Pointwise for Uniform {
    fn setting(&self) -> &Setting {
        &self.setting
    }

    fn state_at(&self, _: [f64; 3], _: f64) -> ([f64; 5], bool) {
        let s = &self.ic;
        (
            [s.rho, s.velocity[0], s.velocity[1], s.velocity[2], s.p],
            true,
        )
    }

    fn uniform_between(&self, _: [f64; 3], _: [f64; 3]) -> bool {
        true
    }
}

sampled_problem!(Uniform, "uniform");
