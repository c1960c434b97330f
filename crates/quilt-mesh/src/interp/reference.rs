//! A straightforward, cell-by-cell statement of what the kernels compute,
//! for bitwise regression tests: for every fine cell, its coarse cell's
//! limited slopes (one-sided where a neighbour is missing) and the sum in
//! the kernels' order of operations. Row kernels add the `x`, then `y`,
//! then `z` terms; the thin kernel (boxes at most [`THIN`] cells wide along
//! `x` and more along `y`) adds `y`, then `x`, then `z`.
use super::*;
use crate::index::{IntVect, iv};

/// The limiters as textbook formulas (`std` minimum, explicit sign).
pub(crate) fn slope<T: Real>(limiter: Limiter, dl: T, dr: T) -> T {
    let p = dl * dr;
    if p.is_nan() || p <= T::zero() {
        return T::zero();
    }
    let two = T::from_f64(2.0);
    let m = match limiter {
        Limiter::PiecewiseConstant => return T::zero(),
        Limiter::MinMod => dl.abs().min(dr.abs()),
        Limiter::MonotonizedCentral => {
            let dc = (dl + dr) * T::from_f64(0.5);
            dc.abs().min(two * dl.abs()).min(two * dr.abs())
        }
    };
    let positive = match limiter {
        Limiter::MonotonizedCentral => (dl + dr) * T::from_f64(0.5) > T::zero(),
        _ => dl > T::zero(),
    };
    if positive { m } else { -m }
}

/// Fills `fine` of `dst` cell by cell from `coarse`; `avail` says which
/// coarse cells hold data (the mask, or the plan's gathered regions).
pub(crate) fn interpolate<T: Real>(
    coarse: &CoarseScratch<T>,
    ratio: i32,
    limiter: Limiter,
    fine: &IndexBox,
    avail: &dyn Fn(&IntVect) -> bool,
    dst: &mut FillTarget<'_, T>,
) {
    let thin = fine.size().x <= THIN && fine.size().y > THIN;
    let off = |t: i32| T::from_f64(((t & (ratio - 1)) as f64 + 0.5) / ratio as f64 - 0.5);
    for f in fine.iter() {
        let q = iv(
            f.x.div_euclid(ratio),
            f.y.div_euclid(ratio),
            f.z.div_euclid(ratio),
        );
        let o = [off(f.x), off(f.y), off(f.z)];
        for c in 0..coarse.ncomp {
            let at = |p: &IntVect| coarse.data[c * coarse.len + coarse.bx.offset(p)];
            let u = at(&q);
            let mut s = [T::zero(); 3];
            for (d, sd) in s.iter_mut().enumerate() {
                let mut e = iv(0, 0, 0);
                e[d] = 1;
                let (ql, qr) = (q - e, q + e);
                let hl = coarse.bx.contains(&ql) && avail(&ql);
                let hr = coarse.bx.contains(&qr) && avail(&qr);
                let dl = u - if hl { at(&ql) } else { u };
                let dr = if hr { at(&qr) } else { u } - u;
                *sd = slope(limiter, if hl { dl } else { dr }, if hr { dr } else { dl });
            }
            let v = if thin {
                u + s[1] * o[1] + s[0] * o[0] + s[2] * o[2]
            } else {
                u + s[0] * o[0] + s[1] * o[1] + s[2] * o[2]
            };
            dst.set(c, &f, v).expect("fine box inside the target");
        }
    }
}
