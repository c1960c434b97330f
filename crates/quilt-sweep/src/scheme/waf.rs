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

use super::scratch::{prefix, prefix_mut};
use super::update::update;
use super::{ColumnBuf, WafLimiter};
use crate::physics::{Eos, FloorCounts, GasConsts};
use crate::real::Real;
use crate::scheme::limiter::WAF_RATIO_CAP;

/// Cells on each side of a cell that its update reads.
pub const REACH: usize = 2;

/// Scratch of one WAF column of up to `cap` cells.
#[derive(Clone, Debug)]
pub struct WafScratch<T> {
    /// Column state `U^n` (input, unchanged).
    pub u: ColumnBuf<T>,
    /// `U^{n+1}` on cells `REACH .. len-REACH` on exit.
    pub next: ColumnBuf<T>,
    /// Per cell: `1/rho`, `v_n`, `p`, `c_s`.
    prim: [Vec<T>; 4],
    /// `F_L + F_R` per face.
    fsum: ColumnBuf<T>,
    /// Flux jumps across the three waves per face.
    dflux: [ColumnBuf<T>; 3],
    /// Wave Courant numbers `dt S_k / dx` per face.
    courant: [Vec<T>; 3],
    /// Density jumps across the three waves per face.
    drho: [Vec<T>; 3],
    /// Signed limiter weights `sign(c_k) A_k` per face.
    weight: [Vec<T>; 3],
    /// WAF face fluxes: entry `f` is the flux through the face between cells
    /// `f` and `f + 1`, valid for `f` in `1 ..= len-3`.
    pub flux: ColumnBuf<T>,
}

impl<T: Real> WafScratch<T> {
    /// Scratch for columns of up to `cap` cells.
    pub fn new(cap: usize) -> Self {
        Self {
            u: ColumnBuf::new(cap),
            next: ColumnBuf::new(cap),
            prim: std::array::from_fn(|_| vec![T::zero(); cap]),
            fsum: ColumnBuf::new(cap),
            dflux: std::array::from_fn(|_| ColumnBuf::new(cap)),
            courant: std::array::from_fn(|_| vec![T::zero(); cap]),
            drho: std::array::from_fn(|_| vec![T::zero(); cap]),
            weight: std::array::from_fn(|_| vec![T::zero(); cap]),
            flux: ColumnBuf::new(cap),
        }
    }
}

/// Primitive quantities of a column-ordered state: `(1/rho, v_n, p, c_s)`.
#[inline(always)]
fn primitive<E: Eos, T: Real>(k: &GasConsts<T>, w: &[T; 5]) -> (T, T, T, T) {
    let inv = T::one() / w[0];
    let vn = w[1] * inv;
    let ke = T::from_f64(0.5) * (w[1] * w[1] + (w[2] * w[2] + w[3] * w[3])) * inv;
    let p = E::pressure(&k.eos, w[0], w[4] - ke).max(k.p_floor);
    (inv, vn, p, (E::bulk_modulus(&k.eos, w[0], p) * inv).sqrt())
}

/// The HLLC star state of side `K` (Toro eq. 10.39).
#[inline(always)]
fn star_state<T: Real>(u: &[T; 5], inv: T, vn: T, p: T, q: T, s: T, s_star: T) -> [T; 5] {
    let rho_star = q / (s - s_star);
    [
        rho_star,
        rho_star * s_star,
        rho_star * (u[2] * inv),
        rho_star * (u[3] * inv),
        rho_star * (u[4] * inv + (s_star - vn) * (s_star + p / q)),
    ]
}

/// `sign(c) A(r, c)` for the three waves of faces `1 ..= n-3`.
#[inline(always)]
fn weights<T: Real>(psi: impl Fn(T) -> T, courant: &[T], drho: &[T], out: &mut [T], n: usize) {
    let (courant, drho, out) = (&courant[..n], &drho[..n], &mut out[..n]);
    let (zero, one) = (T::zero(), T::one());
    let cap = T::from_f64(WAF_RATIO_CAP);
    for f in 1..n - 2 {
        let c = courant[f];
        let upwind = if c > zero { drho[f - 1] } else { drho[f + 1] };
        let local = drho[f];
        // A zero local jump leaves the wave first order (r = 0).
        let ratio = (upwind / local).min(cap);
        let r = if local != zero { ratio } else { zero };
        let a = one - (one - c.abs()) * psi(r);
        let sign = if c > zero {
            one
        } else if c < zero {
            -one
        } else {
            zero
        };
        out[f] = sign * a;
    }
}

/// Advances one column of `len` cells (`len >= 2 * REACH + 1`) by one WAF
/// sweep with `dtdx = dt / dx` along the column.
pub fn waf_column<E: Eos, T: Real>(
    k: &GasConsts<T>,
    limiter: WafLimiter,
    dtdx: T,
    len: usize,
    s: &mut WafScratch<T>,
    floors: &mut FloorCounts,
) {
    assert!(
        len > 2 * REACH && len <= s.u.capacity(),
        "WAF column of {len} cells"
    );
    let n = len;
    let half = T::from_f64(0.5);

    // 1. Primitive quantities once per cell (a vectorisable loop: it holds
    //    the divisions and square roots), then the HLLC wave structure at
    //    faces 0 ..= n-2.
    {
        let u = prefix(s.u.slices(), n);
        let [pi, pv, pp, pc] = &mut s.prim;
        let (pi, pv, pp, pc) = (&mut pi[..n], &mut pv[..n], &mut pp[..n], &mut pc[..n]);
        for i in 0..n {
            let (inv, vn, p, cs) =
                primitive::<E, T>(k, &[u[0][i], u[1][i], u[2][i], u[3][i], u[4][i]]);
            pi[i] = inv;
            pv[i] = vn;
            pp[i] = p;
            pc[i] = cs;
        }
    }
    {
        let u = prefix(s.u.slices(), n);
        let [pi, pv, pp, pc] = &s.prim;
        let (pi, pv, pp, pc) = (&pi[..n], &pv[..n], &pp[..n], &pc[..n]);
        let fs = prefix_mut(s.fsum.slices_mut(), n);
        let [d1, d2, d3] = &mut s.dflux;
        let (d1, d2, d3) = (
            prefix_mut(d1.slices_mut(), n),
            prefix_mut(d2.slices_mut(), n),
            prefix_mut(d3.slices_mut(), n),
        );
        let [c1, c2, c3] = &mut s.courant;
        let (c1, c2, c3) = (&mut c1[..n], &mut c2[..n], &mut c3[..n]);
        let [r1, r2, r3] = &mut s.drho;
        let (r1, r2, r3) = (&mut r1[..n], &mut r2[..n], &mut r3[..n]);
        for f in 0..n - 1 {
            let ul = [u[0][f], u[1][f], u[2][f], u[3][f], u[4][f]];
            let ur = [
                u[0][f + 1],
                u[1][f + 1],
                u[2][f + 1],
                u[3][f + 1],
                u[4][f + 1],
            ];
            let (il, vl, pl, cl) = (pi[f], pv[f], pp[f], pc[f]);
            let (ir, vr, pr, cr) = (pi[f + 1], pv[f + 1], pp[f + 1], pc[f + 1]);
            let sl = (vl - cl).min(vr - cr);
            let sr = (vl + cl).max(vr + cr);
            let ql = ul[0] * (sl - vl);
            let qr = ur[0] * (sr - vr);
            let s_star = (pr - pl + vl * ql - vr * qr) / (ql - qr);
            let fl = [
                ul[1],
                ul[1] * vl + pl,
                ul[2] * vl,
                ul[3] * vl,
                (ul[4] + pl) * vl,
            ];
            let fr = [
                ur[1],
                ur[1] * vr + pr,
                ur[2] * vr,
                ur[3] * vr,
                (ur[4] + pr) * vr,
            ];
            let usl = star_state(&ul, il, vl, pl, ql, sl, s_star);
            let usr = star_state(&ur, ir, vr, pr, qr, sr, s_star);
            for v in 0..5 {
                let fsl = fl[v] + sl * (usl[v] - ul[v]);
                let fsr = fr[v] + sr * (usr[v] - ur[v]);
                fs[v][f] = fl[v] + fr[v];
                d1[v][f] = fsl - fl[v];
                d2[v][f] = fsr - fsl;
                d3[v][f] = fr[v] - fsr;
            }
            c1[f] = dtdx * sl;
            c2[f] = dtdx * s_star;
            c3[f] = dtdx * sr;
            r1[f] = usl[0] - ul[0];
            r2[f] = usr[0] - usl[0];
            r3[f] = ur[0] - usr[0];
        }
    }

    // 2. Limiter weights per wave (the limiter chosen outside the loops so
    //    that they are branch-free), then the WAF fluxes at faces 1 ..= n-3.
    for w in 0..3 {
        let (c, r, out) = (&s.courant[w], &s.drho[w], &mut s.weight[w]);
        match limiter {
            WafLimiter::Superbee => weights(|r| WafLimiter::Superbee.psi(r), c, r, out, n),
            WafLimiter::VanLeer => weights(|r| WafLimiter::VanLeer.psi(r), c, r, out, n),
            WafLimiter::VanAlbada => weights(|r| WafLimiter::VanAlbada.psi(r), c, r, out, n),
            WafLimiter::Minbee => weights(|r| WafLimiter::Minbee.psi(r), c, r, out, n),
        }
    }
    let [w1, w2, w3] = &s.weight;
    let (w1, w2, w3) = (&w1[..n], &w2[..n], &w3[..n]);
    for v in 0..5 {
        let (fsum, out) = (&s.fsum.0[v][..n], &mut s.flux.0[v][..n]);
        let [d1, d2, d3] = &s.dflux;
        let (d1, d2, d3) = (&d1.0[v][..n], &d2.0[v][..n], &d3.0[v][..n]);
        for f in 1..n - 2 {
            let corr = (w1[f] * d1[f] + w2[f] * d2[f]) + w3[f] * d3[f];
            out[f] = half * (fsum[f] - corr);
        }
    }

    // 3. Conservative update of cells 2 .. n-2.
    let flux = prefix(s.flux.slices(), n);
    let face = |v: usize, f: usize| flux[v][f];
    *floors += update::<E, T>(
        k,
        dtdx,
        s.u.slices(),
        s.next.slices_mut(),
        REACH,
        n - REACH,
        face,
    );
}
