//! The equation of state: the one place the schemes, the state checks and
//! the CFL scan learn what pressure and sound speed a conserved state has.
//!
//! An [`Eos`] is three functions of a parameter array, generic over the
//! working precision: the pressure of a density and an internal energy
//! density, its inverse, and `ρ c²` (the adiabatic bulk modulus). The
//! schemes are generic over the equation of state and monomorphised for
//! it, so a cell's update calls them inline; the parameters are derived
//! once in `f64` ([`Eos::params`]) and rounded once to the working
//! precision ([`Gas::consts`](super::Gas::consts)), the values the CUDA
//! kernels receive too. [`IdealGas`] is quilt's; another is a type outside
//! quilt implementing the trait (the `stiffened_gas` example), with the
//! same three functions in CUDA C for the GPU (quilt-cuda's `CudaEos`).
//!
//! An equation of state also says which states are admissible: those of
//! positive density and a pressure above [`Eos::min_pressure`] (0 for a
//! gas). The state checks refuse the others, and the pressure floor keeps
//! the schemes' states that far above it.

use std::fmt::Debug;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::real::Real;

/// Number of parameters an equation of state hands to its functions.
pub const EOS_PARAMS: usize = 4;

/// An equation of state `p(ρ, ρe)` of a fluid whose conserved state is
/// density, momentum and total energy `E = ρe + ρ|v|²/2`.
///
/// The functions receive the parameters of [`Eos::params`] rounded to the
/// working precision `T`; they must be written with `T`'s operations only
/// (no conversion to `f64` inside), so that the CPU schemes and a CUDA
/// port of the same statements agree bit for bit.
pub trait Eos: Copy + Debug + PartialEq + Send + Sync + 'static {
    /// A short name for logs and errors (`"ideal gas"`).
    fn name(&self) -> &'static str;

    /// Checks the parameters.
    ///
    /// # Errors
    /// [`ConfigError`] naming the parameter that is out of range.
    fn validate(&self) -> Result<(), ConfigError>;

    /// The parameters the functions below read, derived in `f64` (for
    /// example `γ`, `γ - 1` and `1 / (γ - 1)`, so that no function
    /// divides by a constant).
    fn params(&self) -> [f64; EOS_PARAMS];

    /// The pressure at or below which no state is admissible: the state
    /// checks refuse it, and the pressure floor
    /// ([`Gas::pressure_floor`](super::Gas::pressure_floor)) counts from
    /// it. 0 for a gas; a stiffened liquid admits tension down to `-p∞`.
    fn min_pressure(&self) -> f64 {
        0.0
    }

    /// `Some(γ)` if this is the ideal gas of adiabatic index `γ`: code
    /// written for the ideal gas alone (quilt's device tagging kernels)
    /// asks, and leaves any other equation of state to the host.
    fn ideal_gamma(&self) -> Option<f64> {
        None
    }

    /// Pressure of density `rho` and internal energy density `rho_e`.
    fn pressure<T: Real>(k: &[T; EOS_PARAMS], rho: T, rho_e: T) -> T;

    /// Internal energy density at density `rho` and pressure `p`: the
    /// inverse of [`Eos::pressure`].
    fn internal_energy<T: Real>(k: &[T; EOS_PARAMS], rho: T, p: T) -> T;

    /// `ρ c_s²` at density `rho` and pressure `p` (the adiabatic bulk
    /// modulus); the schemes divide it by the density for `c_s²`.
    fn bulk_modulus<T: Real>(k: &[T; EOS_PARAMS], rho: T, p: T) -> T;
}

/// The ideal gas `p = (γ - 1) ρ e`, `ρ c² = γ p`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct IdealGas {
    /// Ratio of specific heats, `> 1`.
    pub gamma: f64,
}

impl Default for IdealGas {
    /// `γ = 1.4`.
    fn default() -> Self {
        Self { gamma: 1.4 }
    }
}

impl Eos for IdealGas {
    fn name(&self) -> &'static str {
        "ideal gas"
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.gamma.is_finite() && self.gamma > 1.0 {
            Ok(())
        } else {
            Err(ConfigError::Gamma(self.gamma))
        }
    }

    /// `[γ, γ - 1, 1 / (γ - 1), 0]`.
    fn params(&self) -> [f64; EOS_PARAMS] {
        [self.gamma, self.gamma - 1.0, 1.0 / (self.gamma - 1.0), 0.0]
    }

    fn ideal_gamma(&self) -> Option<f64> {
        Some(self.gamma)
    }

    #[inline(always)]
    fn pressure<T: Real>(k: &[T; EOS_PARAMS], _rho: T, rho_e: T) -> T {
        k[1] * rho_e
    }

    #[inline(always)]
    fn internal_energy<T: Real>(k: &[T; EOS_PARAMS], _rho: T, p: T) -> T {
        p * k[2]
    }

    #[inline(always)]
    fn bulk_modulus<T: Real>(k: &[T; EOS_PARAMS], _rho: T, p: T) -> T {
        k[0] * p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ideal_gas_functions_invert_each_other() {
        let eos = IdealGas { gamma: 5.0 / 3.0 };
        let k = eos.params();
        let e = IdealGas::internal_energy(&k, 2.0, 3.0);
        assert!((e - 4.5).abs() < 1e-14);
        assert!((IdealGas::pressure(&k, 2.0, e) - 3.0).abs() < 1e-14);
        assert!((IdealGas::bulk_modulus(&k, 2.0, 3.0) - 5.0).abs() < 1e-14);
        assert!(IdealGas { gamma: 1.0 }.validate().is_err());
        assert!(IdealGas { gamma: f64::NAN }.validate().is_err());
    }
}
