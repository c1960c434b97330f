//! Limiters of the three schemes.

use serde::{Deserialize, Serialize};

use crate::real::Real;

/// Limiter of the RTVD flux corrections `lim(a, b)` with `a`, `b` the
/// backward and forward differences of the split fluxes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum RtvdLimiter {
    /// Harmonic mean `2ab/(a+b)` where `ab > 0` (van Leer 1974); GAMER's default.
    #[default]
    VanLeer,
    /// The smaller argument in magnitude where `ab > 0`; more diffusive.
    Minmod,
}

impl RtvdLimiter {
    /// Limited difference of `a` and `b`.
    #[inline(always)]
    pub fn limit<T: Real>(self, a: T, b: T) -> T {
        // Both candidates are evaluated and selected, not branched on, so
        // that the loops over faces vectorise (a division by `a + b = 0`
        // only occurs where the result is discarded).
        let ab = a * b;
        let r = match self {
            Self::VanLeer => T::from_f64(2.0) * ab / (a + b),
            Self::Minmod => {
                if a.abs() < b.abs() {
                    a
                } else {
                    b
                }
            }
        };
        if ab <= T::zero() { T::zero() } else { r }
    }
}

/// Slope limiter of the TVD scheme's piecewise-linear reconstruction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum SlopeLimiter {
    /// `minmod(a, b)`: the most diffusive TVD slope.
    Minmod,
    /// Monotonized central (van Leer 1977): `minmod(2a, 2b, (a+b)/2)`.
    #[default]
    Mc,
}

impl SlopeLimiter {
    /// Limited slope from the backward difference `a` and forward difference `b`.
    #[inline(always)]
    pub fn slope<T: Real>(self, a: T, b: T) -> T {
        if a * b <= T::zero() {
            return T::zero();
        }
        match self {
            Self::Minmod => {
                if a.abs() < b.abs() {
                    a
                } else {
                    b
                }
            }
            Self::Mc => {
                let two = T::from_f64(2.0);
                let m = (two * a.abs())
                    .min(two * b.abs())
                    .min(T::from_f64(0.5) * (a + b).abs());
                if a > T::zero() { m } else { -m }
            }
        }
    }
}

/// Interface flux of the TVD scheme.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum TvdFlux {
    /// HLL (Harten, Lax & van Leer 1983) with Davis wave-speed estimates.
    #[default]
    Hll,
    /// Local Lax-Friedrichs (Rusanov).
    Llf,
}

/// WAF limiter, applied per wave as `A = 1 - (1 - |c|) psi(r)` (Toro,
/// *Riemann Solvers and Numerical Methods for Fluid Dynamics*, 3rd ed.,
/// sec. 14.3.3).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WafLimiter {
    /// `psi = max(0, min(2r, 1), min(r, 2))` (Roe): sharpest, squares smooth extrema.
    Superbee,
    /// `psi = 2r / (1 + r)` for `r > 0`.
    #[default]
    VanLeer,
    /// `psi = r (1 + r) / (1 + r^2)` for `r > 0`.
    VanAlbada,
    /// `psi = max(0, min(r, 1))` (minmod): most diffusive.
    Minbee,
}

/// Ratios above this are clamped before a WAF limiter sees them; every
/// limiter is saturated there and the clamp keeps `inf / inf` out.
pub const WAF_RATIO_CAP: f64 = 1e6;

impl WafLimiter {
    /// `psi(r)`.
    #[inline(always)]
    pub fn psi<T: Real>(self, r: T) -> T {
        let zero = T::zero();
        let one = T::one();
        // Evaluated for every r and selected (branch-free, vectorises).
        let psi = match self {
            Self::Superbee => {
                let two = T::from_f64(2.0);
                (two * r).min(one).max(r.min(two))
            }
            Self::VanLeer => T::from_f64(2.0) * r / (one + r),
            Self::VanAlbada => r * (one + r) / (one + r * r),
            Self::Minbee => r.min(one),
        };
        if r <= zero { zero } else { psi }
    }

    /// The WAF weight `A = 1 - (1 - |c|) psi(r)` of a wave with Courant
    /// number `c` and jump ratio `r`.
    #[inline(always)]
    pub fn weight<T: Real>(self, r: T, c: T) -> T {
        T::one() - (T::one() - c.abs()) * self.psi(r)
    }
}
