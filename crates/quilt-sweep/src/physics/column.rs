//! Point-wise physics in column order `[rho, m_n, m_t1, m_t2, E]`.
//!
//! These functions fix the floating-point operation order that every scheme
//! and the CUDA port share: `1/rho` is formed once and multiplied, and the
//! kinetic energy sums the normal term last-to-first as
//! `m_n^2 + (m_t1^2 + m_t2^2)`.

use super::{Eos, GasConsts};
use crate::real::Real;

/// Batch components that form the column components `[rho, m_n, m_t1, m_t2,
/// E]` of a sweep along `axis` (0, 1, 2): the normal momentum, then the two
/// others in cyclic order.
pub const fn column_components(axis: usize) -> [usize; 5] {
    [0, 1 + axis, 1 + (axis + 1) % 3, 1 + (axis + 2) % 3, 4]
}

/// Pressure [`Eos::pressure`] of `E - |m|^2 / (2 rho)` of a column-ordered state.
#[inline(always)]
pub fn pressure_of<E: Eos, T: Real>(k: &GasConsts<T>, u: &[T; 5]) -> T {
    let inv = T::one() / u[0];
    let ke = T::from_f64(0.5) * (u[1] * u[1] + (u[2] * u[2] + u[3] * u[3])) * inv;
    E::pressure(&k.eos, u[0], u[4] - ke)
}

/// Normal velocity, pressure (clamped to the pressure floor) and sound speed of
/// a column-ordered state; the building block of the flux functions.
///
/// Returns `(v_n, p, c_s)`; the clamp is silent because the state it is
/// applied to has already been floored where it was produced.
#[inline(always)]
pub fn signal_speed<E: Eos, T: Real>(k: &GasConsts<T>, u: &[T; 5]) -> (T, T, T) {
    let inv = T::one() / u[0];
    let vn = u[1] * inv;
    let ke = T::from_f64(0.5) * (u[1] * u[1] + (u[2] * u[2] + u[3] * u[3])) * inv;
    let p = E::pressure(&k.eos, u[0], u[4] - ke).max(k.p_floor);
    let cs = (E::bulk_modulus(&k.eos, u[0], p) * inv).sqrt();
    (vn, p, cs)
}

/// Euler flux along the column axis of a column-ordered state, given its
/// normal velocity `vn` and pressure `p`.
#[inline(always)]
pub fn euler_flux<T: Real>(u: &[T; 5], vn: T, p: T) -> [T; 5] {
    [u[1], u[1] * vn + p, u[2] * vn, u[3] * vn, (u[4] + p) * vn]
}
