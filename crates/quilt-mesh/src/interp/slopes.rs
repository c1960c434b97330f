//! Limited slopes: the limiters as types (so that kernels are compiled
//! once per limiter with the slope inlined), slopes of one cell with
//! one-sided differences where a neighbour is missing, slopes of a whole
//! run of cells in one vectorisable loop, and the expansion of per-coarse
//! values to fine cells along a line.

use super::blocks::cover;
use super::flags::ALL_NEIGHBOURS;
use super::lanes::{Arith, Lanes};
use crate::real::Real;

/// A slope limiter: the limited slope from the differences to the low and
/// high neighbour, for single values and [`Lanes`] alike (one definition,
/// so the vectorised and the per-cell paths agree bit for bit).
pub(super) trait SlopeRule {
    /// The limited slope; branch-free, so that it vectorises.
    fn slope<T: Real, A: Arith<T>>(dl: A, dr: A) -> A;
}

/// Zero slopes (piecewise-constant interpolation).
pub(super) struct Zero;

/// `minmod(Δ⁻, Δ⁺)`.
pub(super) struct MinMod;

/// van Leer's monotonized central slope.
pub(super) struct Mc;

impl SlopeRule for Zero {
    #[inline(always)]
    fn slope<T: Real, A: Arith<T>>(_: A, _: A) -> A {
        A::splat(T::zero())
    }
}

// `lesser` is `min` without the NaN fix-up: its arguments here are NaN
// only if `dl` or `dr` is, and then `dl·dr > 0` fails and the slope is
// zero whatever the minimum; so the slopes equal those with `f32::min`
// bit for bit (tests compare with a reference that uses it).

impl SlopeRule for MinMod {
    #[inline(always)]
    fn slope<T: Real, A: Arith<T>>(dl: A, dr: A) -> A {
        dl.abs()
            .lesser(dr.abs())
            .copysign(dl)
            .where_positive(dl * dr)
    }
}

impl SlopeRule for Mc {
    #[inline(always)]
    fn slope<T: Real, A: Arith<T>>(dl: A, dr: A) -> A {
        let half = A::splat(T::from_f64(0.5));
        let two = A::splat(T::from_f64(2.0));
        let dc = (dl + dr) * half;
        dc.abs()
            .lesser(two * dl.abs())
            .lesser(two * dr.abs())
            .copysign(dc)
            .where_positive(dl * dr)
    }
}

/// Limited slopes of the coarse cell at offset `o` of `src` (strides
/// `stride` along `x`, `y`, `z`) with stencil flags `f`: where a neighbour
/// is missing, the other side's difference stands in for it (zero without
/// either). Reads only neighbours the flags name.
#[inline(always)]
pub(super) fn cell_slopes<T: Real, L: SlopeRule>(
    src: &[T],
    o: usize,
    f: u8,
    stride: &[usize; 3],
) -> [T; 3] {
    let u = src[o];
    let mut s = [T::zero(); 3];
    if f == ALL_NEIGHBOURS {
        for (d, s) in s.iter_mut().enumerate() {
            *s = L::slope::<T, T>(u - src[o - stride[d]], src[o + stride[d]] - u);
        }
        return s;
    }
    for (d, s) in s.iter_mut().enumerate() {
        let hl = (f >> (2 * d)) & 1 != 0;
        let hr = (f >> (2 * d)) & 2 != 0;
        // A missing neighbour reads the cell itself, so every index is in
        // range; its difference is then replaced by the other side's.
        let dl = u - src[o - if hl { stride[d] } else { 0 }];
        let dr = src[o + if hr { stride[d] } else { 0 }] - u;
        *s = L::slope::<T, T>(if hl { dl } else { dr }, if hr { dr } else { dl });
    }
    s
}

/// [`cell_slopes`] for a cell all of whose neighbours lie in `src`
/// (gathered or not): reads all six and picks by the flags without
/// branches. Same results bit for bit: with a neighbour missing, the
/// other side's difference (read from data) stands in; with both missing,
/// both arguments are zero, as `u − u` is there (or the slope is zero for
/// non-finite `u` in both).
#[inline(always)]
pub(super) fn cell_slopes_inside<T: Real, L: SlopeRule>(
    src: &[T],
    o: usize,
    f: u8,
    stride: &[usize; 3],
) -> [T; 3] {
    let c = stride[2];
    // One range check for the whole stencil.
    let w = &src[o - c..=o + c];
    let u = w[c];
    let mut s = [T::zero(); 3];
    for (d, s) in s.iter_mut().enumerate() {
        let (dl, dr) = (u - w[c - stride[d]], w[c + stride[d]] - u);
        let hl = (f >> (2 * d)) & 1 != 0;
        let hr = (f >> (2 * d)) & 2 != 0;
        let z = T::zero();
        let a = if hl {
            dl
        } else if hr {
            dr
        } else {
            z
        };
        let b = if hr {
            dr
        } else if hl {
            dl
        } else {
            z
        };
        *s = L::slope::<T, T>(a, b);
    }
    s
}

/// Neighbour values of a run of `n` coarse cells: for each axis, the run
/// of low and of high neighbours (each `n` long, aligned with the cells).
pub(super) struct Stencil<'a, T> {
    pub u: &'a [T],
    pub lo: [&'a [T]; 3],
    pub hi: [&'a [T]; 3],
}

impl<'a, T> Stencil<'a, T> {
    /// The run of `n` cells from offset `o` of `src` along `x`, whose
    /// neighbours lie at strides 1, `sy`, `sz` (all inside `src`).
    #[inline(always)]
    pub fn row(src: &'a [T], o: usize, n: usize, sy: usize, sz: usize) -> Self {
        Self {
            u: &src[o..o + n],
            lo: [
                &src[o - 1..o - 1 + n],
                &src[o - sy..o - sy + n],
                &src[o - sz..o - sz + n],
            ],
            hi: [
                &src[o + 1..o + 1 + n],
                &src[o + sy..o + sy + n],
                &src[o + sz..o + sz + n],
            ],
        }
    }
}

/// Limited slopes of every cell of a run whose neighbours all exist:
/// `s[d][i]` from `u[i] − lo[d][i]` and `hi[d][i] − u[i]`, branch-free,
/// in vectorised blocks ([`cover`]).
#[inline(always)]
pub(super) fn run_slopes<T: Real, L: SlopeRule>(st: &Stencil<'_, T>, s: [&mut [T]; 3]) {
    let n = st.u.len();
    // Every run cut to length n up front: the blocks then need no bounds
    // checks (i + W <= n is known in each).
    let u = st.u;
    let [xm, ym, zm] = st.lo.map(|v| &v[..n]);
    let [xp, yp, zp] = st.hi.map(|v| &v[..n]);
    let [sx, sy, sz] = s.map(|v| &mut v[..n]);
    cover!(n, |i, W| {
        let r = i..i + W;
        let c = Lanes::<T, W>::load(&u[r.clone()]);
        let (lo, hi) = (Lanes::load(&xm[r.clone()]), Lanes::load(&xp[r.clone()]));
        L::slope::<T, _>(c - lo, hi - c).store(&mut sx[r.clone()]);
        let (lo, hi) = (Lanes::load(&ym[r.clone()]), Lanes::load(&yp[r.clone()]));
        L::slope::<T, _>(c - lo, hi - c).store(&mut sy[r.clone()]);
        let (lo, hi) = (Lanes::load(&zm[r.clone()]), Lanes::load(&zp[r.clone()]));
        L::slope::<T, _>(c - lo, hi - c).store(&mut sz[r]);
    }, else {
        for i in 0..n {
            let c = u[i];
            sx[i] = L::slope::<T, T>(c - xm[i], xp[i] - c);
            sy[i] = L::slope::<T, T>(c - ym[i], yp[i] - c);
            sz[i] = L::slope::<T, T>(c - zm[i], zp[i] - c);
        }
    });
}

/// Offsets `o_t = (t + ½)/r − ½` of the fine cell centres in a coarse cell.
#[inline]
pub(super) fn offsets<T: Real, const R: usize>() -> [T; R] {
    std::array::from_fn(|t| T::from_f64((t as f64 + 0.5) / R as f64 - 0.5))
}

/// Expands per-coarse-cell values to the `R` fine cells of each coarse cell
/// along a line: fine cell `q·R + u` gets `e0 = v[q] + s[q]·off[u]`,
/// `e1 = w1[q]`, `e2 = w2[q]` (whole coarse cells; a fine box starting at
/// sub-cell `h` reads from `h` on).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn expand<T: Real, const R: usize>(
    off: &[T; R],
    v: &[T],
    s: &[T],
    w1: &[T],
    w2: &[T],
    e0: &mut [T],
    e1: &mut [T],
    e2: &mut [T],
) {
    let n = v.len();
    let (s, w1, w2) = (&s[..n], &w1[..n], &w2[..n]);
    let (e0, e1, e2) = (&mut e0[..n * R], &mut e1[..n * R], &mut e2[..n * R]);
    // A plain loop: the compiler vectorises it with interleaving stores.
    for q in 0..n {
        let (c0, c1, c2) = (
            &mut e0[q * R..(q + 1) * R],
            &mut e1[q * R..(q + 1) * R],
            &mut e2[q * R..(q + 1) * R],
        );
        for u in 0..R {
            c0[u] = v[q] + s[q] * off[u];
            c1[u] = w1[q];
            c2[u] = w2[q];
        }
    }
}
