//! A fluid (equation of state and floors) and its precomputed constants.

use serde::{Deserialize, Serialize};

use super::NOT_FINITE;
use super::eos::{EOS_PARAMS, Eos, IdealGas};
use crate::error::ConfigError;
use crate::real::Real;

/// A fluid: its equation of state (by default the ideal gas) plus the
/// floors that keep the solution physical.
///
/// The floors are applied to every state a scheme produces (half steps,
/// stages and final states) and each use is counted in
/// [`FloorCounts`](crate::physics::FloorCounts); an input batch that already
/// violates them is rejected instead (see
/// [`SweepError::BadState`](crate::SweepError::BadState)).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gas<E = IdealGas> {
    /// The equation of state.
    pub eos: E,
    /// Smallest density a scheme may produce, `> 0`.
    pub density_floor: f64,
    /// How far above the equation of state's [`Eos::min_pressure`] (0 for
    /// a gas) a scheme keeps the pressure, `> 0`.
    pub pressure_floor: f64,
}

impl Default for Gas {
    /// The ideal gas with `γ = 1.4` and floors of `1e-10`.
    fn default() -> Self {
        Self::new(IdealGas::default())
    }
}

impl Gas {
    /// An ideal gas with the given `gamma` and the default floors.
    pub fn ideal(gamma: f64) -> Self {
        Self::new(IdealGas { gamma })
    }
}

impl<E: Eos> Gas<E> {
    /// A fluid of equation of state `eos` with floors of `1e-10`.
    pub fn new(eos: E) -> Self {
        Self {
            eos,
            density_floor: 1e-10,
            pressure_floor: 1e-10,
        }
    }

    /// Checks the equation of state's parameters and that both floors are
    /// finite and positive.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.eos.validate()?;
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
        (
            u[0],
            v,
            E::pressure(&self.eos.params(), u[0], u[4] - kinetic),
        )
    }

    /// Total energy density of density `rho`, velocity `vel` and pressure
    /// `p`: the inverse of [`Gas::primitive`]'s energy.
    pub fn total_energy(&self, rho: f64, vel: [f64; 3], p: f64) -> f64 {
        let [u, v, w] = vel;
        E::internal_energy(&self.eos.params(), rho, p) + 0.5 * rho * (u * u + v * v + w * w)
    }

    /// Sound speed `sqrt(ρ c² / ρ)` of [`Eos::bulk_modulus`].
    pub fn sound_speed(&self, rho: f64, p: f64) -> f64 {
        (E::bulk_modulus(&self.eos.params(), rho, p) / rho).sqrt()
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
        if p.is_nan() || p <= self.eos.min_pressure() {
            return Err((self.pressure_refusal(), p));
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

    /// The lowest pressure a scheme may produce: the equation of state's
    /// minimum plus the floor.
    pub fn lowest_pressure(&self) -> f64 {
        self.eos.min_pressure() + self.pressure_floor
    }

    /// What the state checks say of a pressure at or below
    /// [`Eos::min_pressure`].
    pub fn pressure_refusal(&self) -> &'static str {
        if self.eos.min_pressure() == 0.0 {
            "pressure is not positive"
        } else {
            "pressure is not above the equation of state's minimum"
        }
    }

    /// The constants a column function needs, rounded to `T` once on the host
    /// (the CUDA port receives the same values in its parameter block).
    pub fn consts<T: Real>(&self) -> GasConsts<T> {
        GasConsts {
            eos: self.eos.params().map(T::from_f64),
            rho_floor: T::from_f64(self.density_floor),
            p_floor: T::from_f64(self.lowest_pressure()),
        }
    }
}

/// A fluid's constants in the working precision, computed in `f64` and
/// rounded once (see [`Gas::consts`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GasConsts<T> {
    /// The equation of state's parameters ([`Eos::params`]).
    pub eos: [T; EOS_PARAMS],
    /// Density floor.
    pub rho_floor: T,
    /// Pressure floor.
    pub p_floor: T,
}
