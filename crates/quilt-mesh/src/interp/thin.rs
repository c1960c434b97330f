//! The thin kernel: boxes at most [`THIN`] fine cells wide along `x` (the
//! `x` faces of a ghost shell), one plane of coarse cells at a time.
//!
//! Per component and plane: each coarse column (along `y`) and its four
//! side neighbours are gathered into contiguous runs in one pass, their
//! slopes computed in vectorised blocks, cells that lack a neighbour
//! patched with one-sided slopes; the column is expanded once to fine `y`
//! (`u + s_y·o_y`, `s_x`, `s_z` per fine cell). Each fine row, a few cells
//! long, is then `(u + s_y·o_y) + s_x·o_x + s_z·o_z` from its columns.

use super::flags::{ALL_NEIGHBOURS, Flags};
use super::rows::fine_row;
use super::scratch::at_least;
use super::slopes::{
    SlopeRule, Stencil, cell_slopes, cell_slopes_inside, expand, offsets, run_slopes,
};
use super::{CoarseScratch, InterpWork, THIN};
use crate::error::MeshError;
use crate::fill::FillTarget;
use crate::index::{IndexBox, iv};
use crate::real::Real;

/// Coarse columns under a thin box: at most this many.
const COLS: usize = THIN as usize;

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
    let lr = R.trailing_zeros();
    let off = offsets::<T, R>();
    let cg = fine.coarsen(r);
    let sbx = coarse.bx;
    let ss = sbx.size();
    let (sy, sz) = (ss.x as usize, ss.x as usize * ss.y as usize);
    let stride = [1usize, sy, sz];
    let (cnx, cny) = (cg.size().x as usize, cg.size().y as usize);
    let (fnx, fny) = (fine.size().x as usize, fine.size().y as usize);
    debug_assert!(cnx <= COLS && fnx <= COLS);
    let inside = sbx.contains_box(&cg.grow(1));
    let cnz = cg.size().z as usize;
    let InterpWork {
        flags: plane_flags,
        sx,
        sy: vy,
        sz: vz,
        col,
        e0,
        e1,
        e2,
        tile,
        ..
    } = work;
    // Flags of the whole box, plane by plane and column by column (`x`
    // slowest within a plane), once for all components.
    at_least(plane_flags, cnz * cnx * cny);
    for (dk, qk) in (cg.lo.z..=cg.hi.z).enumerate() {
        let plane = &mut plane_flags[dk * cnx * cny..(dk + 1) * cnx * cny];
        for (dj, qj) in (cg.lo.y..=cg.hi.y).enumerate() {
            let fl = flags.row(iv(cg.lo.x, qj, qk), cnx);
            for (x, &f) in fl.iter().enumerate() {
                plane[x * cny + dj] = f;
            }
        }
    }
    for v in [&mut *sx, &mut *vy, &mut *vz] {
        at_least(v, cny);
    }
    // Gathered column: values with their low and high `y` neighbours,
    // then the low/high `x` and `z` neighbours.
    at_least(col, (cny + 2) + 4 * cny);
    // Column x expanded over whole coarse cells from x·len; fine y cell jj
    // of the box is at x·len + head_y + jj.
    let len = cny * R;
    for v in [&mut *e0, &mut *e1, &mut *e2] {
        at_least(v, cnx * len);
    }
    at_least(tile, COLS * fny);
    let (sx, vy, vz) = (&mut sx[..cny], &mut vy[..cny], &mut vz[..cny]);
    let (uy, rest) = col.split_at_mut(cny + 2);
    let (xm, rest) = rest.split_at_mut(cny);
    let (xp, rest) = rest.split_at_mut(cny);
    let (zm, rest) = rest.split_at_mut(cny);
    let zp = &mut rest[..cny];
    // Fine x cell t lies in coarse column qx[t] at offset ox[t].
    let qx: [usize; COLS] =
        std::array::from_fn(|t| (((fine.lo.x + t as i32) >> lr) - cg.lo.x).max(0) as usize);
    let ox: [T; COLS] = std::array::from_fn(|t| off[((fine.lo.x + t as i32) & m) as usize]);
    let head_y = (fine.lo.y & m) as usize;
    for (c, src) in coarse.comps().enumerate() {
        for (dk, qk) in (cg.lo.z..=cg.hi.z).enumerate() {
            let (k0, k1) = (fine.lo.z.max(qk * r), fine.hi.z.min(qk * r + m));
            let plane = &plane_flags[dk * cnx * cny..(dk + 1) * cnx * cny];
            let o00 = sbx.offset(&iv(cg.lo.x, cg.lo.y, qk));
            for x in 0..cnx {
                let ob = o00 + x;
                let pf = &plane[x * cny..(x + 1) * cny];
                let complete = all_complete(pf);
                if inside || complete {
                    gather(
                        src,
                        ob,
                        sy,
                        sz,
                        uy,
                        [&mut *xm, &mut *xp, &mut *zm, &mut *zp],
                    );
                    let st = Stencil {
                        u: &uy[1..cny + 1],
                        lo: [xm, &uy[..cny], zm],
                        hi: [xp, &uy[2..], zp],
                    };
                    run_slopes::<T, L>(&st, [&mut *sx, &mut *vy, &mut *vz]);
                    if !complete {
                        // Cells that lack a neighbour (only where `inside`).
                        for (dj, &f) in pf.iter().enumerate() {
                            if f != ALL_NEIGHBOURS {
                                [sx[dj], vy[dj], vz[dj]] =
                                    cell_slopes_inside::<T, L>(src, ob + dj * sy, f, &stride);
                            }
                        }
                    }
                } else {
                    for (dj, &f) in pf.iter().enumerate() {
                        let o = ob + dj * sy;
                        uy[dj + 1] = src[o];
                        [sx[dj], vy[dj], vz[dj]] = cell_slopes::<T, L>(src, o, f, &stride);
                    }
                }
                // Expand the column to fine y: u + s_y·o_y, s_x, s_z.
                let fc = x * len..(x + 1) * len;
                expand(
                    &off,
                    &uy[1..cny + 1],
                    vy,
                    sx,
                    vz,
                    &mut e0[fc.clone()],
                    &mut e1[fc.clone()],
                    &mut e2[fc],
                );
            }
            let cols = Columns {
                e0: &e0[..cnx * len],
                e1: &e1[..cnx * len],
                e2: &e2[..cnx * len],
                len,
                head: head_y,
                fny,
            };
            for k in k0..=k1 {
                let oz = off[(k & m) as usize];
                let rows = dst.rows_mut(c, fine.lo.x, fine.lo.y, k, fnx, fny);
                match fnx {
                    1 => cols.write::<1>(rows, &qx, &ox, oz, tile),
                    2 => cols.write::<2>(rows, &qx, &ox, oz, tile),
                    3 => cols.write::<3>(rows, &qx, &ox, oz, tile),
                    _ => cols.write::<4>(rows, &qx, &ox, oz, tile),
                }
            }
        }
    }
    Ok(())
}

/// Whether every cell of `flags` has all its neighbours (eight at a time).
#[inline]
fn all_complete(flags: &[u8]) -> bool {
    const ALL8: u64 = u64::from_ne_bytes([ALL_NEIGHBOURS; 8]);
    let mut chunks = flags.chunks_exact(8);
    let full = chunks.all(|ch| {
        u64::from_ne_bytes([ch[0], ch[1], ch[2], ch[3], ch[4], ch[5], ch[6], ch[7]]) == ALL8
    });
    full && chunks.remainder().iter().all(|&f| f == ALL_NEIGHBOURS)
}

/// The column of `n = u.len() − 2` scratch cells from offset `o` along `y`
/// (stride `sy`) into contiguous runs: `u` with the cells below and above
/// the column at its ends, and `side` the low/high `x` and low/high `z`
/// neighbours. Every cell read must lie in `src`.
#[inline(always)]
fn gather<T: Copy>(src: &[T], o: usize, sy: usize, sz: usize, u: &mut [T], side: [&mut [T]; 4]) {
    let n = u.len() - 2;
    u[0] = src[o - sy];
    u[n + 1] = src[o + n * sy];
    let [xm, xp, zm, zp] = side;
    let cells = u[1..n + 1]
        .iter_mut()
        .zip(&mut xm[..n])
        .zip(&mut xp[..n])
        .zip(&mut zm[..n])
        .zip(&mut zp[..n]);
    for (dj, ((((c, a), b), d), e)) in cells.enumerate() {
        // One window per cell: a single range check for its five reads.
        let w = &src[o + dj * sy - sz..=o + dj * sy + sz];
        *c = w[sz];
        *a = w[sz - 1];
        *b = w[sz + 1];
        *d = w[0];
        *e = w[2 * sz];
    }
}

/// The expanded columns of one plane and component: fine `y` cell `jj` of
/// the box in column `q` at `q·len + head + jj`.
struct Columns<'a, T> {
    e0: &'a [T],
    e1: &'a [T],
    e2: &'a [T],
    len: usize,
    head: usize,
    fny: usize,
}

impl<T: Real> Columns<'_, T> {
    /// Writes the `fny` fine rows of `W` cells of one fine plane: cell `t`
    /// of row `jj` is `(e0 + e1·ox[t]) + e2·oz` of column `qx[t]`. The sums
    /// go column by column into `tile` (`W` runs along `y`, vectorised),
    /// then each row takes its `W` values.
    #[inline(always)]
    fn write<'r, const W: usize>(
        &self,
        rows: impl Iterator<Item = &'r mut [T]>,
        qx: &[usize; COLS],
        ox: &[T; COLS],
        oz: T,
        tile: &mut [T],
    ) where
        T: 'r,
    {
        let n = self.fny;
        for (t, out) in tile.chunks_exact_mut(n).take(W).enumerate() {
            let b = qx[t] * self.len + self.head;
            let (a, x, z) = (&self.e0[b..b + n], &self.e1[b..b + n], &self.e2[b..b + n]);
            fine_row(out, a, x, z, ox[t], oz);
        }
        let cols: [&[T]; W] = std::array::from_fn(|t| &tile[t * n..(t + 1) * n]);
        for (row, jj) in rows.zip(0..n) {
            let row = &mut row[..W];
            for t in 0..W {
                row[t] = cols[t][jj];
            }
        }
    }
}
