//! Primitive states and their conversion to and from conserved variables
//! (host-side, `f64`).

use super::{ENE, Eos, Gas, MX, MY, MZ, NCOMP, RHO};

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
    pub fn to_conserved<E: Eos>(&self, gas: &Gas<E>) -> [f64; NCOMP] {
        let [u, v, w] = self.vel;
        [
            self.rho,
            self.rho * u,
            self.rho * v,
            self.rho * w,
            gas.total_energy(self.rho, self.vel, self.p),
        ]
    }

    /// Inverse of [`Primitive::to_conserved`] (no floors applied).
    pub fn from_conserved<E: Eos>(u: &[f64; NCOMP], gas: &Gas<E>) -> Self {
        let (rho, vel, p) = gas.primitive([u[RHO], u[MX], u[MY], u[MZ], u[ENE]]);
        Self { rho, vel, p }
    }
}
