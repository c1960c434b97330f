//! Relaxing TVD (Trac & Pen 2003, PASP 115, 303), as in GAMER's
//! `CUFLU_FluidSolver_RTVD` (Schive, Tsai & Chiueh 2010): one column,
//! one directional sweep.
//!
//! For every cell the freezing speed `c = |v_n| + c_s` splits the flux `F`
//! into right- and left-moving parts `F_R = (c U + F)/2`, `F_L = (c U - F)/2`.
//!
//! 1. Half step (first-order upwind):
//!    `U^{n+1/2}_i = U^n_i - (dt/2dx) (F*_{i+1/2} - F*_{i-1/2})`,
//!    `F*_{i+1/2} = F_R,i - F_L,i+1`, for cells `1 .. len-1`.
//! 2. Full step **from `U^n`** with the split fluxes of `U^{n+1/2}` and
//!    limited second-order corrections:
//!    `F_{i+1/2} = [F_R,i + lim(F_R,i - F_R,i-1, F_R,i+1 - F_R,i)/2]
//!               - [F_L,i+1 - lim(F_L,i+1 - F_L,i, F_L,i+2 - F_L,i+1)/2]`,
//!    `U^{n+1}_i = U^n_i - (dt/dx) (F_{i+1/2} - F_{i-1/2})`, cells `3 .. len-3`.
//!
//! Cell `i` thus depends on cells `i-3 ..= i+3`: [`REACH`] = 3 ghost cells.
//!
//! Every loop runs over cells with the component fixed or unrolled and uses
//! selects instead of branches, so that it vectorises on the CPU; a CUDA
//! port assigns one thread per cell of the column instead.

use super::scratch::{prefix, prefix_mut};
use super::update::update;
use super::{ColumnBuf, RtvdLimiter};
use crate::physics::{Eos, FloorCounts, GasConsts};
use crate::real::Real;

/// Cells on each side of a cell that its update reads.
pub const REACH: usize = 3;

/// Scratch of one RTVD column of up to `cap` cells.
#[derive(Clone, Debug)]
pub struct RtvdScratch<T> {
    /// Column state `U^n` (input, unchanged).
    pub u: ColumnBuf<T>,
    /// The half-step state during the sweep; `U^{n+1}` on cells
    /// `REACH .. len-REACH` on exit.
    pub next: ColumnBuf<T>,
    /// Right-moving split flux of the current stage.
    fr: ColumnBuf<T>,
    /// Left-moving split flux of the current stage.
    fl: ColumnBuf<T>,
    /// Full-step face fluxes: entry `f` is the flux through the face between
    /// cells `f` and `f + 1`, valid for `f` in `REACH-1 ..= len-REACH-1`.
    pub flux: ColumnBuf<T>,
}

impl<T: Real> RtvdScratch<T> {
    /// Scratch for columns of up to `cap` cells.
    pub fn new(cap: usize) -> Self {
        Self {
            u: ColumnBuf::new(cap),
            next: ColumnBuf::new(cap),
            fr: ColumnBuf::new(cap),
            fl: ColumnBuf::new(cap),
            flux: ColumnBuf::new(cap),
        }
    }
}

/// Right- and left-moving split fluxes of the cells `lo .. n` of `u`.
#[inline(always)]
fn split_fluxes<E: Eos, T: Real>(
    k: &GasConsts<T>,
    u: [&[T]; 5],
    fr: [&mut [T]; 5],
    fl: [&mut [T]; 5],
    lo: usize,
    n: usize,
) {
    let [u0, u1, u2, u3, u4] = prefix(u, n);
    let [r0, r1, r2, r3, r4] = prefix_mut(fr, n);
    let [l0, l1, l2, l3, l4] = prefix_mut(fl, n);
    let half = T::from_f64(0.5);
    for i in lo..n {
        let w = [u0[i], u1[i], u2[i], u3[i], u4[i]];
        let inv = T::one() / w[0];
        let vn = w[1] * inv;
        let ke = half * (w[1] * w[1] + (w[2] * w[2] + w[3] * w[3])) * inv;
        let p = E::pressure(&k.eos, w[0], w[4] - ke).max(k.p_floor);
        let c = vn.abs() + (E::bulk_modulus(&k.eos, w[0], p) * inv).sqrt();
        let f = [w[1], w[1] * vn + p, w[2] * vn, w[3] * vn, (w[4] + p) * vn];
        r0[i] = half * (c * w[0] + f[0]);
        r1[i] = half * (c * w[1] + f[1]);
        r2[i] = half * (c * w[2] + f[2]);
        r3[i] = half * (c * w[3] + f[3]);
        r4[i] = half * (c * w[4] + f[4]);
        l0[i] = half * (c * w[0] - f[0]);
        l1[i] = half * (c * w[1] - f[1]);
        l2[i] = half * (c * w[2] - f[2]);
        l3[i] = half * (c * w[3] - f[3]);
        l4[i] = half * (c * w[4] - f[4]);
    }
}

/// Second-order face fluxes `F_{f+1/2}` of one component for faces
/// `2 ..= n-4` from the split fluxes of the half-step state.
#[inline(always)]
fn limited_fluxes<T: Real>(lim: impl Fn(T, T) -> T, fr: &[T], fl: &[T], out: &mut [T], n: usize) {
    let (fr, fl, out) = (&fr[..n], &fl[..n], &mut out[..n]);
    let half = T::from_f64(0.5);
    for f in 2..n - 3 {
        let right = fr[f] + half * lim(fr[f] - fr[f - 1], fr[f + 1] - fr[f]);
        let left = fl[f + 1] - half * lim(fl[f + 1] - fl[f], fl[f + 2] - fl[f + 1]);
        out[f] = right - left;
    }
}

/// Advances one column of `len` cells (`len >= 2 * REACH + 1`) by one RTVD
/// sweep with `dtdx = dt / dx` along the column.
pub fn rtvd_column<E: Eos, T: Real>(
    k: &GasConsts<T>,
    limiter: RtvdLimiter,
    dtdx: T,
    len: usize,
    s: &mut RtvdScratch<T>,
    floors: &mut FloorCounts,
) {
    assert!(
        len > 2 * REACH && len <= s.u.capacity(),
        "RTVD column of {len} cells"
    );
    let n = len;
    let half = T::from_f64(0.5);

    // 1. First-order half step on cells 1 .. n-1.
    split_fluxes::<E, T>(k, s.u.slices(), s.fr.slices_mut(), s.fl.slices_mut(), 0, n);
    {
        let fr = prefix(s.fr.slices(), n);
        let fl = prefix(s.fl.slices(), n);
        // Face f (between f and f+1): F_R,f - F_L,f+1.
        let face = |v: usize, f: usize| fr[v][f] - fl[v][f + 1];
        *floors += update::<E, T>(
            k,
            half * dtdx,
            s.u.slices(),
            s.next.slices_mut(),
            1,
            n - 1,
            face,
        );
    }

    // 2. Second-order fluxes of the half-step state, faces 2 ..= n-4.
    split_fluxes::<E, T>(
        k,
        s.next.slices(),
        s.fr.slices_mut(),
        s.fl.slices_mut(),
        1,
        n - 1,
    );
    for ((fr, fl), out) in s.fr.0.iter().zip(&s.fl.0).zip(&mut s.flux.0) {
        // The limiter is chosen outside the loop so that each loop body is
        // branch-free and vectorises.
        match limiter {
            RtvdLimiter::VanLeer => {
                limited_fluxes(|a, b| RtvdLimiter::VanLeer.limit(a, b), fr, fl, out, n)
            }
            RtvdLimiter::Minmod => {
                limited_fluxes(|a, b| RtvdLimiter::Minmod.limit(a, b), fr, fl, out, n)
            }
        }
    }

    // 3. Full step from U^n on cells 3 .. n-3 (into `next`: the half-step
    //    state is no longer needed once its fluxes are formed).
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
