//! Primitive states and their conversion to and from conserved variables
//! (host-side, `f64`).

use super::{ENE, Gas, MX, MY, MZ, NCOMP, RHO};

/// A primitive state: density, velocity and pressure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Primitive {
    /// Mass density.
    pub rho: f64,
    /// Velocity `(u, v, w)`.
    pub vel: [f64; 3],
    /// Thermal pressure.
    pub p: f64,
}

impl Primitive {
    /// A state at rest.
    pub fn at_rest(rho: f64, p: f64) -> Self {
        Self {
            rho,
            vel: [0.0; 3],
            p,
        }
    }

    /// Conserved components `[rho, rho u, rho v, rho w, E]`.
    pub fn to_conserved(&self, gas: &Gas) -> [f64; NCOMP] {
        let [u, v, w] = self.vel;
        let ke = 0.5 * self.rho * (u * u + v * v + w * w);
        [
            self.rho,
            self.rho * u,
            self.rho * v,
            self.rho * w,
            self.p / (gas.gamma - 1.0) + ke,
        ]
    }

    /// Inverse of [`Primitive::to_conserved`] (no floors applied).
    pub fn from_conserved(u: &[f64; NCOMP], gas: &Gas) -> Self {
        let rho = u[RHO];
        let vel = [u[MX] / rho, u[MY] / rho, u[MZ] / rho];
        let ke = 0.5 * (u[MX] * vel[0] + u[MY] * vel[1] + u[MZ] * vel[2]);
        Self {
            rho,
            vel,
            p: (gas.gamma - 1.0) * (u[ENE] - ke),
        }
    }
}
