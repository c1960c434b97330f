//! The ideal-gas configuration and its precomputed constants.

use serde::{Deserialize, Serialize};

use super::NOT_FINITE;
use crate::error::ConfigError;
use crate::real::Real;

/// Ideal gas with adiabatic index `gamma`, plus the floors that keep the
/// solution physical.
///
/// The floors are applied to every state a scheme produces (half steps,
/// stages and final states) and each use is counted in
/// [`FloorCounts`](crate::physics::FloorCounts); an input batch that already
/// violates them is rejected instead (see
/// [`SweepError::BadState`](crate::SweepError::BadState)).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gas {
    /// Ratio of specific heats, `> 1`.
    pub gamma: f64,
    /// Smallest density a scheme may produce, `> 0`.
    pub density_floor: f64,
    /// Smallest pressure a scheme may produce, `> 0`.
    pub pressure_floor: f64,
}

impl Default for Gas {
    fn default() -> Self {
        Self {
            gamma: 1.4,
            density_floor: 1e-10,
            pressure_floor: 1e-10,
        }
    }
}

impl Gas {
    /// An ideal gas with the given `gamma` and the default floors.
    pub fn ideal(gamma: f64) -> Self {
        Self {
            gamma,
            ..Self::default()
        }
    }

    /// Checks that `gamma > 1` and that both floors are finite and positive.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.gamma.is_finite() && self.gamma > 1.0) {
            return Err(ConfigError::Gamma(self.gamma));
        }
        if !(self.density_floor.is_finite() && self.density_floor > 0.0) {
            return Err(ConfigError::Floor {
                which: "density",
                value: self.density_floor,
            });
        }
        if !(self.pressure_floor.is_finite() && self.pressure_floor > 0.0) {
            return Err(ConfigError::Floor {
                which: "pressure",
                value: self.pressure_floor,
            });
        }
        Ok(())
    }

    /// Density, velocity and pressure of the conserved values `u`
    /// (density, momentum, total energy), in `f64` whatever the run's
    /// precision (for output and diagnostics).
    pub fn primitive(&self, u: [f64; 5]) -> (f64, [f64; 3], f64) {
        let v = [u[1] / u[0], u[2] / u[0], u[3] / u[0]];
        let kinetic = 0.5 * (u[1] * v[0] + u[2] * v[1] + u[3] * v[2]);
        (u[0], v, (self.gamma - 1.0) * (u[4] - kinetic))
    }

    /// Sound speed `sqrt(gamma p / rho)`.
    pub fn sound_speed(&self, rho: f64, p: f64) -> f64 {
        (self.gamma * p / rho).sqrt()
    }

    /// [`Gas::primitive`] of a state no scheme may be given, refused:
    /// `Err((what, value))` for the first non-finite component, a
    /// density or a pressure that is not positive.
    pub fn checked_primitive(
        &self,
        u: [f64; 5],
    ) -> Result<(f64, [f64; 3], f64), (&'static str, f64)> {
        if let Some(c) = (0..5).find(|&c| !u[c].is_finite()) {
            return Err((NOT_FINITE[c], u[c]));
        }
        if u[0] <= 0.0 {
            return Err(("density is not positive", u[0]));
        }
        let (rho, v, p) = self.primitive(u);
        if p.is_nan() || p <= 0.0 {
            return Err(("pressure is not positive", p));
        }
        Ok((rho, v, p))
    }

    /// The signal rate `max_d (|v_d| + c_s) / dx_d` of one cell's conserved
    /// state `u` in cells of size `dx`, or what is wrong with the state
    /// ([`Gas::checked_primitive`], or a rate that overflows). The
    /// statement of the time step: the integrator's CFL scan and the
    /// resident CFL kernel (`kernels/amr.cu`, `flat_rate`) compute exactly
    /// these operations. The solvers' scan of their input computes the
    /// same rate by faster operations, within rounding.
    pub fn signal_rate(&self, u: [f64; 5], dx: [f64; 3]) -> Result<f64, (&'static str, f64)> {
        let (rho, v, p) = self.checked_primitive(u)?;
        let cs = self.sound_speed(rho, p);
        let rate = (0..3)
            .map(|a| (v[a].abs() + cs) / dx[a])
            .fold(0.0f64, f64::max);
        if !rate.is_finite() {
            return Err(("the signal speed over the cell size overflows", rate));
        }
        Ok(rate)
    }

    /// The constants a column function needs, rounded to `T` once on the host
    /// (the CUDA port receives the same values in its parameter block).
    pub fn consts<T: Real>(&self) -> GasConsts<T> {
        GasConsts {
            gamma: T::from_f64(self.gamma),
            gm1: T::from_f64(self.gamma - 1.0),
            inv_gm1: T::from_f64(1.0 / (self.gamma - 1.0)),
            rho_floor: T::from_f64(self.density_floor),
            p_floor: T::from_f64(self.pressure_floor),
        }
    }
}

/// Gas constants in the working precision, computed in `f64` and rounded
/// once (see [`Gas::consts`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GasConsts<T> {
    /// `gamma`.
    pub gamma: T,
    /// `gamma - 1`.
    pub gm1: T,
    /// `1 / (gamma - 1)`.
    pub inv_gm1: T,
    /// Density floor.
    pub rho_floor: T,
    /// Pressure floor.
    pub p_floor: T,
}
