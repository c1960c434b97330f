//! Weighted average flux (Toro 1989; TVD version Toro 1992) over HLLC
//! Riemann problems (Toro, Spruce & Speares 1994): one column, one
//! directional sweep.
//!
//! At every face the HLLC solution has three waves `S_L <= S* <= S_R`
//! (Davis estimates `S_L = min(u_L - a_L, u_R - a_R)`,
//! `S_R = max(u_L + a_L, u_R + a_R)`) separating four states with fluxes
//! `F^(1) = F_L, F^(2) = F*_L, F^(3) = F*_R, F^(4) = F_R`. The WAF flux is
//!
//! `F_{i+1/2} = (F_L + F_R)/2 - 1/2 sum_k sign(c_k) A_k (F^(k+1) - F^(k))`
//!
//! with wave Courant numbers `c_k = dt S_k / dx` and limiter weights
//! `A_k = 1 - (1 - |c_k|) psi(r_k)`, `r_k` the ratio of the density jump
//! across wave `k` at the upwind face (`i-1/2` if `c_k > 0`, else `i+3/2`)
//! to the one at `i+1/2`. `U^{n+1}_i = U^n_i - dt/dx (F_{i+1/2} - F_{i-1/2})`.
//!
//! Cell `i` depends on cells `i-2 ..= i+2`: [`REACH`] = 2 ghost cells.

use super::{ColumnBuf, WafLimiter};
use crate::physics::{FloorCounts, GasConsts, apply_floors, euler_flux, signal_speed};
use crate::real::Real;
use crate::scheme::limiter::WAF_RATIO_CAP;

/// Cells on each side of a cell that its update reads.
pub const REACH: usize = 2;

/// Scratch of one WAF column of up to `cap` cells.
#[derive(Clone, Debug)]
pub struct WafScratch<T> {
    /// Column state: `U^n` on entry, `U^{n+1}` on cells `REACH .. len-REACH`
    /// on exit.
    pub u: ColumnBuf<T>,
    /// `F_L + F_R` per face.
    fsum: ColumnBuf<T>,
    /// Flux jumps across the three waves per face.
    dflux: [ColumnBuf<T>; 3],
    /// Wave Courant numbers `dt S_k / dx` per face.
    courant: [Vec<T>; 3],
    /// Density jumps across the three waves per face.
    drho: [Vec<T>; 3],
    /// WAF face fluxes: entry `f` is the flux through the face between cells
    /// `f` and `f + 1`, valid for `f` in `1 ..= len-3`.
    pub flux: ColumnBuf<T>,
}

impl<T: Real> WafScratch<T> {
    /// Scratch for columns of up to `cap` cells.
    pub fn new(cap: usize) -> Self {
        Self {
            u: ColumnBuf::new(cap),
            fsum: ColumnBuf::new(cap),
            dflux: std::array::from_fn(|_| ColumnBuf::new(cap)),
            courant: std::array::from_fn(|_| vec![T::zero(); cap]),
            drho: std::array::from_fn(|_| vec![T::zero(); cap]),
            flux: ColumnBuf::new(cap),
        }
    }
}

/// The HLLC star state of side `K` (Toro eq. 10.39) and its density.
#[inline(always)]
fn star_state<T: Real>(u: &[T; 5], vn: T, p: T, q: T, s: T, s_star: T) -> [T; 5] {
    let inv = T::one() / u[0];
    let rho_star = q / (s - s_star);
    [
        rho_star,
        rho_star * s_star,
        rho_star * (u[2] * inv),
        rho_star * (u[3] * inv),
        rho_star * (u[4] * inv + (s_star - vn) * (s_star + p / q)),
    ]
}

#[inline(always)]
fn sign<T: Real>(x: T) -> T {
    if x > T::zero() {
        T::one()
    } else if x < T::zero() {
        -T::one()
    } else {
        T::zero()
    }
}

/// Advances one column of `len` cells (`len >= 2 * REACH + 1`) by one WAF
/// sweep with `dtdx = dt / dx` along the column.
pub fn waf_column<T: Real>(
    k: &GasConsts<T>,
    limiter: WafLimiter,
    dtdx: T,
    len: usize,
    s: &mut WafScratch<T>,
    floors: &mut FloorCounts,
) {
    debug_assert!(len > 2 * REACH && len <= s.u.capacity());
    let half = T::lit(0.5);

    // 1. HLLC wave structure at faces 0 ..= len-2.
    for f in 0..len - 1 {
        let ul = s.u.cell(f);
        let ur = s.u.cell(f + 1);
        let (vl, pl, cl) = signal_speed(k, &ul);
        let (vr, pr, cr) = signal_speed(k, &ur);
        let sl = (vl - cl).min(vr - cr);
        let sr = (vl + cl).max(vr + cr);
        let ql = ul[0] * (sl - vl);
        let qr = ur[0] * (sr - vr);
        let s_star = (pr - pl + vl * ql - vr * qr) / (ql - qr);
        let fl = euler_flux(&ul, vl, pl);
        let fr = euler_flux(&ur, vr, pr);
        let usl = star_state(&ul, vl, pl, ql, sl, s_star);
        let usr = star_state(&ur, vr, pr, qr, sr, s_star);
        for v in 0..5 {
            let fsl = fl[v] + sl * (usl[v] - ul[v]);
            let fsr = fr[v] + sr * (usr[v] - ur[v]);
            s.fsum.0[v][f] = fl[v] + fr[v];
            s.dflux[0].0[v][f] = fsl - fl[v];
            s.dflux[1].0[v][f] = fsr - fsl;
            s.dflux[2].0[v][f] = fr[v] - fsr;
        }
        s.courant[0][f] = dtdx * sl;
        s.courant[1][f] = dtdx * s_star;
        s.courant[2][f] = dtdx * sr;
        s.drho[0][f] = usl[0] - ul[0];
        s.drho[1][f] = usr[0] - usl[0];
        s.drho[2][f] = ur[0] - usr[0];
    }

    // 2. Limited weighted-average fluxes at faces 1 ..= len-3.
    let cap = T::lit(WAF_RATIO_CAP);
    for f in 1..len - 2 {
        let mut w = [T::zero(); 3];
        for (wave, wk) in w.iter_mut().enumerate() {
            let c = s.courant[wave][f];
            let upwind = if c > T::zero() { f - 1 } else { f + 1 };
            let local = s.drho[wave][f];
            let r = if local != T::zero() {
                (s.drho[wave][upwind] / local).min(cap)
            } else {
                T::zero()
            };
            *wk = sign(c) * limiter.weight(r, c);
        }
        for v in 0..5 {
            let corr = (w[0] * s.dflux[0].0[v][f] + w[1] * s.dflux[1].0[v][f]) + w[2] * s.dflux[2].0[v][f];
            s.flux.0[v][f] = half * (s.fsum.0[v][f] - corr);
        }
    }

    // 3. Conservative update of cells 2 .. len-2.
    for i in REACH..len - REACH {
        let mut w = [T::zero(); 5];
        for (v, wv) in w.iter_mut().enumerate() {
            *wv = s.u.0[v][i] - dtdx * (s.flux.0[v][i] - s.flux.0[v][i - 1]);
        }
        apply_floors(k, &mut w, floors);
        s.u.set_cell(i, w);
    }
}
