//! Density and pressure floors and the counters that report their use.

use std::ops::AddAssign;

use serde::{Deserialize, Serialize};

use super::{Eos, GasConsts};
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
/// kinetic energy plus the internal energy of `p_floor` at the new density. Returns the new state and
/// whether each floor was used. Written with selects rather than branches
/// (it vectorises, and maps to predicated CUDA code); NaN values pass through
/// unchanged so that the caller can report them.
#[inline(always)]
pub fn floor_state<E: Eos, T: Real>(k: &GasConsts<T>, w: [T; 5]) -> ([T; 5], bool, bool) {
    let low_rho = w[0] < k.rho_floor;
    let rho = if low_rho { k.rho_floor } else { w[0] };
    let inv = T::one() / rho;
    let ke = T::from_f64(0.5) * (w[1] * w[1] + (w[2] * w[2] + w[3] * w[3])) * inv;
    let p = E::pressure(&k.eos, rho, w[4] - ke);
    let low_p = p < k.p_floor;
    let e = if low_p {
        ke + E::internal_energy(&k.eos, rho, k.p_floor)
    } else {
        w[4]
    };
    ([rho, w[1], w[2], w[3], e], low_rho, low_p)
}

/// [`floor_state`] in place, counting the floors used.
#[inline(always)]
pub fn apply_floors<E: Eos, T: Real>(k: &GasConsts<T>, u: &mut [T; 5], counts: &mut FloorCounts) {
    let (w, d, p) = floor_state::<E, T>(k, *u);
    *u = w;
    counts.density += u64::from(d);
    counts.pressure += u64::from(p);
}
