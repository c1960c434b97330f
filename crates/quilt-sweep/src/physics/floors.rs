//! Density and pressure floors and the counters that report their use.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use super::GasConsts;
use super::column::pressure_of;
use crate::real::Real;

/// How often the floors of [`Gas`](super::Gas) were applied.
///
/// Each application to a stored or intermediate state counts once, so one
/// cell may count several times per step (for example in the RTVD half step
/// and again in the full step).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FloorCounts {
    /// Density raised to the density floor.
    pub density: u64,
    /// Pressure raised to the pressure floor (by adding thermal energy).
    pub pressure: u64,
}

impl FloorCounts {
    /// Total number of floor applications.
    pub fn total(&self) -> u64 {
        self.density + self.pressure
    }
}

impl AddAssign for FloorCounts {
    fn add_assign(&mut self, rhs: Self) {
        self.density += rhs.density;
        self.pressure += rhs.pressure;
    }
}

/// Applies the floors to one column-ordered state `[rho, m_n, m_t1, m_t2, E]`.
///
/// The density is raised first (momenta are kept, so the velocity shrinks);
/// then, if the pressure is below its floor, the total energy is reset to
/// kinetic energy plus `p_floor / (gamma - 1)`. NaN values pass through
/// unchanged so that the caller can report them.
#[inline(always)]
pub fn apply_floors<T: Real>(k: &GasConsts<T>, u: &mut [T; 5], counts: &mut FloorCounts) {
    if u[0] < k.rho_floor {
        u[0] = k.rho_floor;
        counts.density += 1;
    }
    let p = pressure_of(k, u);
    if p < k.p_floor {
        let inv = T::one() / u[0];
        let ke = T::lit(0.5) * (u[1] * u[1] + (u[2] * u[2] + u[3] * u[3])) * inv;
        u[4] = ke + k.p_floor * k.inv_gm1;
        counts.pressure += 1;
    }
}
