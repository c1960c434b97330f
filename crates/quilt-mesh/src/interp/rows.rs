//! The row kernel: one row of coarse cells along `x` at a time.
//!
//! Per component and row: slopes of the whole row in vectorised blocks
//! (reading neighbours of cells that lack them too, which is in range
//! whenever the scratch box holds the grown coarse box), then one-sided
//! slopes for the cells that lack a neighbour; the row is expanded once to
//! fine `x` (`u + s_x·o_x`, `s_y`, `s_z` per fine cell), and every fine row
//! above it is `(u + s_x·o_x) + s_y·o_y + s_z·o_z`, again in vectorised
//! blocks.

use super::blocks::cover;
use super::flags::{Flags, incomplete};
use super::lanes::{Arith, Lanes};
use super::scratch::at_least;
use super::slopes::{
    SlopeRule, Stencil, cell_slopes, cell_slopes_inside, expand, offsets, run_slopes,
};
use super::{CoarseScratch, InterpWork};
use crate::error::MeshError;
use crate::fill::FillTarget;
use crate::index::{IndexBox, iv};
use crate::real::Real;

/// Interpolates `fine` (see the module docs); `R` is the ratio, `L` the
/// limiter. Inlined into both builds of [`super::kernels`].
// Builds with debug assertions keep these calls: inlined unoptimised,
// every kernel's locals share one frame that outgrows a worker's stack.
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn kernel<T: Real, const R: usize, L: SlopeRule>(
    coarse: &CoarseScratch<T>,
    fine: &IndexBox,
    flags: Flags<'_>,
    dst: &mut FillTarget<'_, T>,
    work: &mut InterpWork<T>,
) -> Result<(), MeshError> {
    let r = R as i32;
    let m = r - 1;
    let off = offsets::<T, R>();
    let cg = fine.coarsen(r);
    let sbx = coarse.bx;
    let ss = sbx.size();
    let (sy, sz) = (ss.x as usize, ss.x as usize * ss.y as usize);
    let stride = [1usize, sy, sz];
    let cnx = cg.size().x as usize;
    let fnx = fine.size().x as usize;
    // Sub-cell of the first fine cell of a row in its coarse cell.
    let head = (fine.lo.x & m) as usize;
    // Every neighbour of every coarse cell under the box lies in the
    // scratch box: whole rows are read without checks.
    let inside = sbx.contains_box(&cg.grow(1));
    let InterpWork {
        fix,
        sx,
        sy: vy,
        sz: vz,
        e0,
        e1,
        e2,
        ..
    } = work;
    for v in [&mut *sx, &mut *vy, &mut *vz] {
        at_least(v, cnx);
    }
    // Expanded over whole coarse cells; fine rows read from `head` on.
    for v in [&mut *e0, &mut *e1, &mut *e2] {
        at_least(v, cnx * R);
    }
    let (sx, vy, vz) = (&mut sx[..cnx], &mut vy[..cnx], &mut vz[..cnx]);
    let (e0, e1, e2) = (&mut e0[..cnx * R], &mut e1[..cnx * R], &mut e2[..cnx * R]);
    for (c, src) in coarse.comps().enumerate() {
        for qk in cg.lo.z..=cg.hi.z {
            let (k0, k1) = (fine.lo.z.max(qk * r), fine.hi.z.min(qk * r + m));
            for qj in cg.lo.y..=cg.hi.y {
                let (j0, j1) = (fine.lo.y.max(qj * r), fine.hi.y.min(qj * r + m));
                let start = iv(cg.lo.x, qj, qk);
                let o0 = sbx.offset(&start);
                let fl = flags.row(start, cnx);
                incomplete(fl, fix);
                // With every neighbour present the reads are in range too
                // (flags only name neighbours inside the scratch box).
                if inside || fix.is_empty() {
                    let st = Stencil::row(src, o0, cnx, sy, sz);
                    run_slopes::<T, L>(&st, [&mut *sx, &mut *vy, &mut *vz]);
                    // Cells that lack a neighbour (only where `inside`).
                    for &q in fix.iter() {
                        let q = q as usize;
                        [sx[q], vy[q], vz[q]] =
                            cell_slopes_inside::<T, L>(src, o0 + q, fl[q], &stride);
                    }
                } else {
                    for q in 0..cnx {
                        [sx[q], vy[q], vz[q]] = cell_slopes::<T, L>(src, o0 + q, fl[q], &stride);
                    }
                }
                expand(&off, &src[o0..o0 + cnx], sx, vy, vz, e0, e1, e2);
                let fine_x = head..head + fnx;
                let (fx, fy, fz) = (&e0[fine_x.clone()], &e1[fine_x.clone()], &e2[fine_x]);
                for k in k0..=k1 {
                    let oz = off[(k & m) as usize];
                    let rows = dst.rows_mut(c, fine.lo.x, j0, k, fnx, (j1 - j0 + 1) as usize);
                    for (j, out) in (j0..=j1).zip(rows) {
                        fine_row(out, fx, fy, fz, off[(j & m) as usize], oz);
                    }
                }
            }
        }
    }
    Ok(())
}

/// `out = (fx + fy·oy) + fz·oz`, element by element, in blocks (the
/// thin-box kernel's columns too).
#[inline(always)]
pub(super) fn fine_row<T: Real>(out: &mut [T], fx: &[T], fy: &[T], fz: &[T], oy: T, oz: T) {
    let n = out.len();
    let (fx, fy, fz) = (&fx[..n], &fy[..n], &fz[..n]);
    cover!(n, |i, W| {
        let r = i..i + W;
        let (x, y, z) = (
            Lanes::<T, W>::load(&fx[r.clone()]),
            Lanes::load(&fy[r.clone()]),
            Lanes::load(&fz[r.clone()]),
        );
        (x + y * Lanes::splat(oy) + z * Lanes::splat(oz)).store(&mut out[r]);
    }, else {
        for i in 0..n {
            out[i] = fx[i] + fy[i] * oy + fz[i] * oz;
        }
    });
}
