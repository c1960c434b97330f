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

use super::{ColumnBuf, RtvdLimiter};
use crate::physics::{FloorCounts, GasConsts, apply_floors, euler_flux, signal_speed};
use crate::real::Real;

/// Cells on each side of a cell that its update reads.
pub const REACH: usize = 3;

/// Scratch of one RTVD column of up to `cap` cells.
#[derive(Clone, Debug)]
pub struct RtvdScratch<T> {
    /// Column state: `U^n` on entry, `U^{n+1}` on cells `REACH .. len-REACH`
    /// on exit (other cells unchanged).
    pub u: ColumnBuf<T>,
    /// Half-step state.
    uh: ColumnBuf<T>,
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
            uh: ColumnBuf::new(cap),
            fr: ColumnBuf::new(cap),
            fl: ColumnBuf::new(cap),
            flux: ColumnBuf::new(cap),
        }
    }
}

/// Right- and left-moving split fluxes of the cells `lo .. hi` of `u`.
#[inline(always)]
fn split_fluxes<T: Real>(
    k: &GasConsts<T>,
    u: &ColumnBuf<T>,
    fr: &mut ColumnBuf<T>,
    fl: &mut ColumnBuf<T>,
    lo: usize,
    hi: usize,
) {
    let half = T::lit(0.5);
    for i in lo..hi {
        let ui = u.cell(i);
        let (vn, p, cs) = signal_speed(k, &ui);
        let c = vn.abs() + cs;
        let f = euler_flux(&ui, vn, p);
        for v in 0..5 {
            let cu = c * ui[v];
            fr.0[v][i] = half * (cu + f[v]);
            fl.0[v][i] = half * (cu - f[v]);
        }
    }
}

/// Advances one column of `len` cells (`len >= 2 * REACH + 1`) by one RTVD
/// sweep with `dtdx = dt / dx` along the column.
pub fn rtvd_column<T: Real>(
    k: &GasConsts<T>,
    limiter: RtvdLimiter,
    dtdx: T,
    len: usize,
    s: &mut RtvdScratch<T>,
    floors: &mut FloorCounts,
) {
    debug_assert!(len > 2 * REACH && len <= s.u.capacity());
    let half = T::lit(0.5);
    let hdtdx = half * dtdx;

    // 1. First-order half step on cells 1 .. len-1.
    split_fluxes(k, &s.u, &mut s.fr, &mut s.fl, 0, len);
    for i in 1..len - 1 {
        let mut w = [T::zero(); 5];
        for (v, wv) in w.iter_mut().enumerate() {
            let fp = s.fr.0[v][i] - s.fl.0[v][i + 1];
            let fm = s.fr.0[v][i - 1] - s.fl.0[v][i];
            *wv = s.u.0[v][i] - hdtdx * (fp - fm);
        }
        apply_floors(k, &mut w, floors);
        s.uh.set_cell(i, w);
    }

    // 2. Second-order fluxes of the half-step state, faces 2 ..= len-4.
    split_fluxes(k, &s.uh, &mut s.fr, &mut s.fl, 1, len - 1);
    for f in 2..len - 3 {
        for v in 0..5 {
            let fr = &s.fr.0[v];
            let fl = &s.fl.0[v];
            let right = fr[f] + half * limiter.limit(fr[f] - fr[f - 1], fr[f + 1] - fr[f]);
            let left = fl[f + 1] - half * limiter.limit(fl[f + 1] - fl[f], fl[f + 2] - fl[f + 1]);
            s.flux.0[v][f] = right - left;
        }
    }

    // 3. Full step from U^n on cells 3 .. len-3.
    for i in REACH..len - REACH {
        let mut w = [T::zero(); 5];
        for (v, wv) in w.iter_mut().enumerate() {
            *wv = s.u.0[v][i] - dtdx * (s.flux.0[v][i] - s.flux.0[v][i - 1]);
        }
        apply_floors(k, &mut w, floors);
        s.u.set_cell(i, w);
    }
}
