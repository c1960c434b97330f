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

use super::scratch::{prefix, prefix_mut};
use super::{ColumnBuf, SlopeLimiter, TvdFlux};
use crate::physics::{Eos, FloorCounts, GasConsts, apply_floors, euler_flux};
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
fn conserved<E: Eos, T: Real>(k: &GasConsts<T>, w: &[T; 5]) -> ([T; 5], T) {
    let rho = w[0];
    let ke = T::from_f64(0.5) * rho * (w[1] * w[1] + (w[2] * w[2] + w[3] * w[3]));
    let u = [
        rho,
        rho * w[1],
        rho * w[2],
        rho * w[3],
        E::internal_energy(&k.eos, rho, w[4]) + ke,
    ];
    let cs = (E::bulk_modulus(&k.eos, rho, w[4]) / rho).sqrt();
    (u, cs)
}

/// HLL flux between primitive states `wl` and `wr` (Davis wave speeds);
/// all three candidates are formed and one is selected, so that the face
/// loop is branch-free.
#[inline(always)]
fn hll<E: Eos, T: Real>(k: &GasConsts<T>, wl: &[T; 5], wr: &[T; 5]) -> [T; 5] {
    let (ul, cl) = conserved::<E, T>(k, wl);
    let (ur, cr) = conserved::<E, T>(k, wr);
    let fl = euler_flux(&ul, wl[1], wl[4]);
    let fr = euler_flux(&ur, wr[1], wr[4]);
    let sl = (wl[1] - cl).min(wr[1] - cr);
    let sr = (wl[1] + cl).max(wr[1] + cr);
    let inv = T::one() / (sr - sl);
    let (left, right) = (sl >= T::zero(), sr <= T::zero());
    std::array::from_fn(|v| {
        let star = (sr * fl[v] - sl * fr[v] + sl * sr * (ur[v] - ul[v])) * inv;
        if left {
            fl[v]
        } else if right {
            fr[v]
        } else {
            star
        }
    })
}

/// Local Lax-Friedrichs (Rusanov) flux between primitive states.
#[inline(always)]
fn llf<E: Eos, T: Real>(k: &GasConsts<T>, wl: &[T; 5], wr: &[T; 5]) -> [T; 5] {
    let (ul, cl) = conserved::<E, T>(k, wl);
    let (ur, cr) = conserved::<E, T>(k, wr);
    let fl = euler_flux(&ul, wl[1], wl[4]);
    let fr = euler_flux(&ur, wr[1], wr[4]);
    let a = (wl[1].abs() + cl).max(wr[1].abs() + cr);
    let half = T::from_f64(0.5);
    std::array::from_fn(|v| half * ((fl[v] + fr[v]) - a * (ur[v] - ul[v])))
}

/// Limited slopes of one primitive for cells `1 .. n-1`.
#[inline(always)]
fn slopes<T: Real>(lim: impl Fn(T, T) -> T, w: &[T], dw: &mut [T], n: usize) {
    let (w, dw) = (&w[..n], &mut dw[..n]);
    for i in 1..n - 1 {
        dw[i] = lim(w[i] - w[i - 1], w[i + 1] - w[i]);
    }
}

/// Face fluxes for faces `1 ..= n-3` from the reconstructed states.
#[inline(always)]
fn face_fluxes<T: Real>(
    flux_of: impl Fn(&[T; 5], &[T; 5]) -> [T; 5],
    w: [&[T]; 5],
    dw: [&[T]; 5],
    out: [&mut [T]; 5],
    n: usize,
) {
    let w = prefix(w, n);
    let dw = prefix(dw, n);
    let [o0, o1, o2, o3, o4] = prefix_mut(out, n);
    let half = T::from_f64(0.5);
    for f in 1..n - 2 {
        let wl: [T; 5] = std::array::from_fn(|v| w[v][f] + half * dw[v][f]);
        let wr: [T; 5] = std::array::from_fn(|v| w[v][f + 1] - half * dw[v][f + 1]);
        let fx = flux_of(&wl, &wr);
        o0[f] = fx[0];
        o1[f] = fx[1];
        o2[f] = fx[2];
        o3[f] = fx[3];
        o4[f] = fx[4];
    }
}

/// Computes one stage's flux difference along one axis for a column of `len`
/// cells (`len >= 2 * REACH + 1`): fills `s.flux` (faces `1 ..= len-3`) and
/// `s.du` (cells `2 .. len-2`).
pub fn tvd_column<E: Eos, T: Real>(
    k: &GasConsts<T>,
    slope: SlopeLimiter,
    kind: TvdFlux,
    dtdx: T,
    len: usize,
    s: &mut TvdScratch<T>,
) {
    assert!(
        len > 2 * REACH && len <= s.u.capacity(),
        "TVD column of {len} cells"
    );
    let n = len;
    let half = T::from_f64(0.5);
    {
        let [u0, u1, u2, u3, u4] = prefix(s.u.slices(), n);
        let [w0, w1, w2, w3, w4] = prefix_mut(s.w.slices_mut(), n);
        for i in 0..n {
            let inv = T::one() / u0[i];
            let ke = half * (u1[i] * u1[i] + (u2[i] * u2[i] + u3[i] * u3[i])) * inv;
            w0[i] = u0[i];
            w1[i] = u1[i] * inv;
            w2[i] = u2[i] * inv;
            w3[i] = u3[i] * inv;
            w4[i] = E::pressure(&k.eos, u0[i], u4[i] - ke).max(k.p_floor);
        }
    }
    // Limiter and flux are chosen outside the loops (branch-free bodies).
    for (w, dw) in s.w.0.iter().zip(&mut s.dw.0) {
        match slope {
            SlopeLimiter::Minmod => slopes(|a, b| SlopeLimiter::Minmod.slope(a, b), w, dw, n),
            SlopeLimiter::Mc => slopes(|a, b| SlopeLimiter::Mc.slope(a, b), w, dw, n),
        }
    }
    let (w, dw, out) = (s.w.slices(), s.dw.slices(), s.flux.slices_mut());
    match kind {
        TvdFlux::Hll => face_fluxes(|l, r| hll::<E, T>(k, l, r), w, dw, out, n),
        TvdFlux::Llf => face_fluxes(|l, r| llf::<E, T>(k, l, r), w, dw, out, n),
    }
    for (flux, du) in s.flux.0.iter().zip(&mut s.du.0) {
        let (flux, du) = (&flux[..n], &mut du[..n]);
        for i in REACH..n - REACH {
            du[i] = dtdx * (flux[i - 1] - flux[i]);
        }
    }
}

/// One value of the first-stage state before floors, `U^n + (acc + du)`
/// (passive scalars take it as it is).
#[inline(always)]
pub fn stage_one_value<T: Real>(un: T, acc: T, du: T) -> T {
    un + (acc + du)
}

/// One value of the final state before floors,
/// `(U^n + (U* + (acc + du))) / 2`.
#[inline(always)]
pub fn stage_two_value<T: Real>(un: T, us: T, acc: T, du: T) -> T {
    T::from_f64(0.5) * (un + (us + (acc + du)))
}

/// First-stage state `U* = U^n + (acc + du)` with floors, where `acc` holds
/// the differences of the axes swept before the last one.
#[inline(always)]
pub fn stage_one<E: Eos, T: Real>(
    k: &GasConsts<T>,
    un: &[T; 5],
    acc: &[T; 5],
    du: &[T; 5],
    floors: &mut FloorCounts,
) -> [T; 5] {
    let mut w = [T::zero(); 5];
    for v in 0..5 {
        w[v] = stage_one_value(un[v], acc[v], du[v]);
    }
    apply_floors::<E, T>(k, &mut w, floors);
    w
}

/// Final state `U^{n+1} = (U^n + (U* + (acc + du))) / 2` with floors.
#[inline(always)]
pub fn stage_two<E: Eos, T: Real>(
    k: &GasConsts<T>,
    un: &[T; 5],
    us: &[T; 5],
    acc: &[T; 5],
    du: &[T; 5],
    floors: &mut FloorCounts,
) -> [T; 5] {
    let mut w = [T::zero(); 5];
    for v in 0..5 {
        w[v] = stage_two_value(un[v], us[v], acc[v], du[v]);
    }
    apply_floors::<E, T>(k, &mut w, floors);
    w
}
