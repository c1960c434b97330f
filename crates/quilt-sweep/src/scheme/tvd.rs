//! The MUSCL-type TVD scheme of Enzo's GPU hydro solver (Wang, Abel &
//! Kaehler 2010, New Astronomy 15, 581): one column's flux difference for
//! one RK stage, and the two stage combinations.
//!
//! Per stage and axis: primitives `W = (rho, v_n, v_t1, v_t2, p)`, limited
//! slopes `dW_i = lim(W_i - W_{i-1}, W_{i+1} - W_i)` (minmod or MC), face
//! states `W_L = W_i + dW_i/2`, `W_R = W_{i+1} - dW_{i+1}/2`, an HLL (or
//! local Lax-Friedrichs) flux, and the difference
//! `dU_i = dt/dx (F_{i-1/2} - F_{i+1/2})`. The three axes' differences of a
//! stage all come from the same stage state and are summed before the
//! update (SSP-RK2, Shu & Osher 1988):
//!
//! `U* = U^n + dU(U^n)`, `U^{n+1} = (U^n + (U* + dU(U*))) / 2`.
//!
//! One stage reads [`REACH`] = 2 cells on each side, so two stages need 4
//! ghost cells; the first stage is evaluated on the interior plus 2 ghost
//! layers so that the second has its stencil.

use super::{ColumnBuf, SlopeLimiter, TvdFlux};
use crate::physics::{FloorCounts, GasConsts, apply_floors, euler_flux};
use crate::real::Real;

/// Cells on each side of a cell that one stage's difference reads.
pub const REACH: usize = 2;

/// Scratch of one TVD column of up to `cap` cells.
#[derive(Clone, Debug)]
pub struct TvdScratch<T> {
    /// Column of the stage state (input).
    pub u: ColumnBuf<T>,
    /// Primitive variables.
    w: ColumnBuf<T>,
    /// Limited slopes of the primitives.
    dw: ColumnBuf<T>,
    /// Face fluxes: entry `f` is the flux through the face between cells `f`
    /// and `f + 1`, valid for `f` in `1 ..= len-3`.
    pub flux: ColumnBuf<T>,
    /// Output: `dt/dx (F_{i-1/2} - F_{i+1/2})` for cells `2 .. len-2`.
    pub du: ColumnBuf<T>,
}

impl<T: Real> TvdScratch<T> {
    /// Scratch for columns of up to `cap` cells.
    pub fn new(cap: usize) -> Self {
        Self {
            u: ColumnBuf::new(cap),
            w: ColumnBuf::new(cap),
            dw: ColumnBuf::new(cap),
            flux: ColumnBuf::new(cap),
            du: ColumnBuf::new(cap),
        }
    }
}

/// Conserved state of primitive `w`, with its pressure and sound speed.
#[inline(always)]
fn conserved<T: Real>(k: &GasConsts<T>, w: &[T; 5]) -> ([T; 5], T) {
    let rho = w[0];
    let ke = T::lit(0.5) * rho * (w[1] * w[1] + (w[2] * w[2] + w[3] * w[3]));
    let u = [
        rho,
        rho * w[1],
        rho * w[2],
        rho * w[3],
        w[4] * k.inv_gm1 + ke,
    ];
    let cs = (k.gamma * w[4] / rho).sqrt();
    (u, cs)
}

/// The interface flux between primitive states `wl` and `wr`.
#[inline(always)]
fn face_flux<T: Real>(k: &GasConsts<T>, kind: TvdFlux, wl: &[T; 5], wr: &[T; 5]) -> [T; 5] {
    let (ul, cl) = conserved(k, wl);
    let (ur, cr) = conserved(k, wr);
    let fl = euler_flux(&ul, wl[1], wl[4]);
    let fr = euler_flux(&ur, wr[1], wr[4]);
    let mut f = [T::zero(); 5];
    match kind {
        TvdFlux::Hll => {
            let sl = (wl[1] - cl).min(wr[1] - cr);
            let sr = (wl[1] + cl).max(wr[1] + cr);
            if sl >= T::zero() {
                f = fl;
            } else if sr <= T::zero() {
                f = fr;
            } else {
                let inv = T::one() / (sr - sl);
                for v in 0..5 {
                    f[v] = (sr * fl[v] - sl * fr[v] + sl * sr * (ur[v] - ul[v])) * inv;
                }
            }
        }
        TvdFlux::Llf => {
            let a = (wl[1].abs() + cl).max(wr[1].abs() + cr);
            let half = T::lit(0.5);
            for v in 0..5 {
                f[v] = half * ((fl[v] + fr[v]) - a * (ur[v] - ul[v]));
            }
        }
    }
    f
}

/// Computes one stage's flux difference along one axis for a column of `len`
/// cells (`len >= 2 * REACH + 1`): fills `s.flux` (faces `1 ..= len-3`) and
/// `s.du` (cells `2 .. len-2`).
pub fn tvd_column<T: Real>(
    k: &GasConsts<T>,
    slope: SlopeLimiter,
    kind: TvdFlux,
    dtdx: T,
    len: usize,
    s: &mut TvdScratch<T>,
) {
    debug_assert!(len > 2 * REACH && len <= s.u.capacity());
    let half = T::lit(0.5);
    for i in 0..len {
        let u = s.u.cell(i);
        let inv = T::one() / u[0];
        let ke = half * (u[1] * u[1] + (u[2] * u[2] + u[3] * u[3])) * inv;
        let p = (k.gm1 * (u[4] - ke)).max(k.p_floor);
        s.w.set_cell(i, [u[0], u[1] * inv, u[2] * inv, u[3] * inv, p]);
    }
    for v in 0..5 {
        let w = &s.w.0[v];
        let dw = &mut s.dw.0[v];
        for i in 1..len - 1 {
            dw[i] = slope.slope(w[i] - w[i - 1], w[i + 1] - w[i]);
        }
    }
    for f in 1..len - 2 {
        let mut wl = [T::zero(); 5];
        let mut wr = [T::zero(); 5];
        for v in 0..5 {
            wl[v] = s.w.0[v][f] + half * s.dw.0[v][f];
            wr[v] = s.w.0[v][f + 1] - half * s.dw.0[v][f + 1];
        }
        s.flux.set_cell(f, face_flux(k, kind, &wl, &wr));
    }
    for v in 0..5 {
        for i in REACH..len - REACH {
            s.du.0[v][i] = dtdx * (s.flux.0[v][i - 1] - s.flux.0[v][i]);
        }
    }
}

/// First-stage state `U* = U^n + (acc + du)` with floors, where `acc` holds
/// the differences of the axes swept before the last one.
#[inline(always)]
pub fn stage_one<T: Real>(
    k: &GasConsts<T>,
    un: &[T; 5],
    acc: &[T; 5],
    du: &[T; 5],
    floors: &mut FloorCounts,
) -> [T; 5] {
    let mut w = [T::zero(); 5];
    for v in 0..5 {
        w[v] = un[v] + (acc[v] + du[v]);
    }
    apply_floors(k, &mut w, floors);
    w
}

/// Final state `U^{n+1} = (U^n + (U* + (acc + du))) / 2` with floors.
#[inline(always)]
pub fn stage_two<T: Real>(
    k: &GasConsts<T>,
    un: &[T; 5],
    us: &[T; 5],
    acc: &[T; 5],
    du: &[T; 5],
    floors: &mut FloorCounts,
) -> [T; 5] {
    let half = T::lit(0.5);
    let mut w = [T::zero(); 5];
    for v in 0..5 {
        w[v] = half * (un[v] + (us[v] + (acc[v] + du[v])));
    }
    apply_floors(k, &mut w, floors);
    w
}
