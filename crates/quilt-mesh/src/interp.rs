//! Conservative, limited linear interpolation from a coarse level to a
//! finer one (ratio 2 or 4), for ghost fill and regrid alike.
//!
//! # Scheme
//! Each coarse cell `q` with value `u` gets one slope per axis, `s_d`, in
//! units of "change of `u` per coarse cell", from the one-sided differences
//! `Δ⁻ = u(q) − u(q − e_d)` and `Δ⁺ = u(q + e_d) − u(q)`:
//!
//! | [`Limiter`] | slope |
//! |---|---|
//! | `PiecewiseConstant` | `0` |
//! | `MinMod` | `minmod(Δ⁻, Δ⁺)` |
//! | `MonotonizedCentral` | `minmod((Δ⁻+Δ⁺)/2, 2Δ⁻, 2Δ⁺)` (van Leer's MC) |
//!
//! (`minmod` is zero if the arguments differ in sign, else the one of
//! smallest magnitude.) A fine cell `f` inside `q` receives
//!
//! ```text
//! u_f = u + Σ_d s_d · o_d,   o_d = ((f_d mod r) + ½) / r − ½
//! ```
//!
//! with `o_d` the offset of the fine cell centre from the coarse centre in
//! coarse cells. The offsets of the `r` fine cells along an axis sum to
//! zero, so the mean of the `r³` fine values in a coarse cell is `u`: the
//! interpolation conserves (exactly in exact arithmetic, to round-off in
//! floating point). A linear field has `Δ⁻ = Δ⁺`, which every limiter
//! keeps, so linear fields are reproduced exactly.
//!
//! Where a neighbour is not available (outside the coarse level's patches,
//! or beyond a non-periodic domain boundary), the slope along that axis is
//! the other one-sided difference, unlimited, or zero if neither
//! neighbour exists. This keeps linear fields exact up to the edge of the
//! coarse data; at such edges the limiter cannot prevent a new extremum of
//! at most `(r−1)/(2r)` times the one-sided jump.
//!
//! Components are interpolated independently (conserved variables for
//! Euler, so the scheme conserves mass, momentum and energy).
//!
//! # Use
//! Gather the coarse cells into a [`CoarseScratch`] (its availability mask
//! records which cells were given), then call [`interpolate`] for every
//! fine box to fill. [`InterpWork`] is reusable scratch memory.

use crate::error::MeshError;
use crate::fill::FillTarget;
use crate::index::{IndexBox, IntVect, iv};
use crate::patch_data::PatchData;
use crate::real::Real;

/// Slope limiter of the linear interpolation (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Limiter {
    /// Zero slopes: every fine cell takes its coarse cell's value.
    PiecewiseConstant,
    /// `minmod(Δ⁻, Δ⁺)`: the most dissipative limited slope.
    MinMod,
    /// van Leer's monotonized central slope (the default).
    #[default]
    MonotonizedCentral,
}

impl Limiter {
    /// The limited slope from the two one-sided differences.
    #[inline(always)]
    pub fn slope<T: Real>(self, dl: T, dr: T) -> T {
        match self {
            Limiter::PiecewiseConstant => T::zero(),
            Limiter::MinMod => {
                if dl * dr <= T::zero() {
                    T::zero()
                } else if dl.abs() < dr.abs() {
                    dl
                } else {
                    dr
                }
            }
            Limiter::MonotonizedCentral => {
                if dl * dr <= T::zero() {
                    T::zero()
                } else {
                    let two = T::one() + T::one();
                    let m = ((dl + dr) / two)
                        .abs()
                        .min(two * dl.abs())
                        .min(two * dr.abs());
                    if dl > T::zero() { m } else { -m }
                }
            }
        }
    }
}

/// Coarse values gathered for interpolation: `ncomp` components over a
/// box of the coarse index space (structure of arrays, `x` fastest) and a
/// mask of the cells that hold data.
#[derive(Debug, Clone)]
pub struct CoarseScratch<T> {
    bx: IndexBox,
    ncomp: usize,
    len: usize,
    data: Vec<T>,
    mask: Vec<u8>,
}

impl<T: Real> Default for CoarseScratch<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Real> CoarseScratch<T> {
    /// Empty scratch; memory grows on first use and is then reused.
    pub fn new() -> Self {
        Self {
            bx: IndexBox::empty(),
            ncomp: 0,
            len: 0,
            data: Vec::new(),
            mask: Vec::new(),
        }
    }

    /// Prepares for `ncomp` components over `bx` with no cell available.
    pub fn reset(&mut self, bx: IndexBox, ncomp: usize) -> Result<(), MeshError> {
        if bx.is_empty() || ncomp == 0 {
            return Err(MeshError::invalid(
                format!("coarse scratch over {bx}"),
                "the box is empty or there are no components",
            ));
        }
        let len = usize::try_from(bx.num_cells()).map_err(|_| {
            MeshError::invalid(format!("coarse scratch over {bx}"), "the box is too large")
        })?;
        self.bx = bx;
        self.ncomp = ncomp;
        self.len = len;
        if self.data.len() < len * ncomp {
            self.data.resize(len * ncomp, T::zero());
        }
        self.mask.clear();
        self.mask.resize(len, 0);
        Ok(())
    }

    /// The box the scratch covers.
    #[inline]
    pub fn bx(&self) -> IndexBox {
        self.bx
    }

    /// Number of components.
    #[inline]
    pub fn ncomp(&self) -> usize {
        self.ncomp
    }

    /// Whether cell `p` holds data.
    pub fn is_available(&self, p: &IntVect) -> bool {
        self.bx.contains(p) && self.mask[self.bx.offset(p)] != 0
    }

    /// Value of component `c` at `p`, if available.
    pub fn get(&self, c: usize, p: &IntVect) -> Option<T> {
        (c < self.ncomp && self.is_available(p))
            .then(|| self.data[c * self.len + self.bx.offset(p)])
    }

    /// Copies every component on `region` (this scratch's index space)
    /// from `src`: scratch cell `p` receives source cell `p − shift`, and
    /// becomes available. `region` must lie in the scratch box, `region −
    /// shift` in the source's data box, and the component counts agree.
    pub fn copy_from(
        &mut self,
        src: &PatchData<T>,
        region: &IndexBox,
        shift: &IntVect,
    ) -> Result<(), MeshError> {
        if region.is_empty() {
            return Ok(());
        }
        let sreg = region.shift(&-shift);
        if !self.bx.contains_box(region) || !src.data_box().contains_box(&sreg) {
            return Err(MeshError::BadAccess {
                field: format!("coarse gather of {region} (shift {:?})", shift.as_slice()),
                why: format!(
                    "scratch box {} or source data box {} does not hold it",
                    self.bx,
                    src.data_box()
                ),
            });
        }
        if src.ncomp() != self.ncomp {
            return Err(MeshError::BadAccess {
                field: format!("coarse gather of {region}"),
                why: format!(
                    "source has {} components, scratch {}",
                    src.ncomp(),
                    self.ncomp
                ),
            });
        }
        self.copy_unchecked(src, region, shift);
        Ok(())
    }

    /// [`CoarseScratch::copy_from`] for callers that checked the boxes.
    pub(crate) fn copy_unchecked(
        &mut self,
        src: &PatchData<T>,
        region: &IndexBox,
        shift: &IntVect,
    ) {
        let nx = region.size().x as usize;
        let sdb = src.data_box();
        for k in region.lo.z..=region.hi.z {
            for j in region.lo.y..=region.hi.y {
                let p = iv(region.lo.x, j, k);
                let od = self.bx.offset(&p);
                self.mask[od..od + nx].fill(1);
            }
        }
        for c in 0..self.ncomp {
            let s = src.comp(c);
            let d = &mut self.data[c * self.len..(c + 1) * self.len];
            for k in region.lo.z..=region.hi.z {
                for j in region.lo.y..=region.hi.y {
                    let p = iv(region.lo.x, j, k);
                    let od = self.bx.offset(&p);
                    let os = sdb.offset(&(p - shift));
                    d[od..od + nx].copy_from_slice(&s[os..os + nx]);
                }
            }
        }
    }
}

/// Reusable work arrays of [`interpolate`] (values, slopes and stencil
/// flags of the coarse cells under one fine box).
#[derive(Debug, Clone, Default)]
pub struct InterpWork<T> {
    flags: Vec<u8>,
    a: Vec<T>,
    sx: Vec<T>,
    sy: Vec<T>,
    sz: Vec<T>,
    row: Vec<T>,
}

impl<T: Real> InterpWork<T> {
    /// Empty work arrays; they grow on first use.
    pub fn new() -> Self {
        Self {
            flags: Vec::new(),
            a: Vec::new(),
            sx: Vec::new(),
            sy: Vec::new(),
            sz: Vec::new(),
            row: Vec::new(),
        }
    }
}

/// Offsets `o_t = (t + ½)/r − ½` of the fine cell centres in a coarse cell.
fn offsets<T: Real>(r: i32) -> [T; 4] {
    let mut o = [T::zero(); 4];
    for (t, v) in o.iter_mut().enumerate().take(r as usize) {
        *v = T::from_f64((t as f64 + 0.5) / r as f64 - 0.5);
    }
    o
}

/// Fills the fine cells `fine` of `dst` (every component) by conservative
/// limited linear interpolation (see the module docs) from `coarse`, which
/// is `ratio` (2 or 4) times coarser. Every coarse cell under `fine` must be
/// available; neighbours that are not give one-sided slopes.
pub fn interpolate<T: Real>(
    coarse: &CoarseScratch<T>,
    ratio: i32,
    limiter: Limiter,
    fine: &IndexBox,
    dst: &mut FillTarget<'_, T>,
    work: &mut InterpWork<T>,
) -> Result<(), MeshError> {
    if fine.is_empty() {
        return Ok(());
    }
    if ratio != 2 && ratio != 4 {
        return Err(MeshError::invalid(
            "interpolation ratio",
            format!("{ratio} is not supported (use 2 or 4)"),
        ));
    }
    if !dst.bx().contains_box(fine) || dst.ncomp() != coarse.ncomp {
        return Err(MeshError::BadAccess {
            field: format!("interpolation into {fine}"),
            why: format!(
                "target box {} with {} components does not hold it or differs from the {} coarse components",
                dst.bx(),
                dst.ncomp(),
                coarse.ncomp
            ),
        });
    }
    let cg = fine.coarsen(ratio);
    if !coarse.bx.contains_box(&cg) {
        return Err(MeshError::BadAccess {
            field: format!("interpolation into {fine}"),
            why: format!(
                "coarse cells {cg} are not all inside the coarse scratch {}",
                coarse.bx
            ),
        });
    }
    stencil_flags(coarse, &cg, work)?;
    let sh = ratio.trailing_zeros();
    let m = ratio - 1;
    let off = offsets::<T>(ratio);
    let n = cg.size();
    let (cnx, cny) = (n.x as usize, n.y as usize);
    let ncell = cg.num_cells() as usize;
    for v in [&mut work.a, &mut work.sx, &mut work.sy, &mut work.sz] {
        if v.len() < ncell {
            v.resize(ncell, T::zero());
        }
    }
    if work.row.len() < cnx {
        work.row.resize(cnx, T::zero());
    }
    let fnx = fine.size().x as usize;
    for c in 0..coarse.ncomp {
        slopes(coarse, c, &cg, limiter, work);
        let InterpWork {
            a, sx, sy, sz, row, ..
        } = &mut *work;
        for k in fine.lo.z..=fine.hi.z {
            let qk = ((k >> sh) - cg.lo.z) as usize;
            let oz = off[(k & m) as usize];
            for j in fine.lo.y..=fine.hi.y {
                let qj = ((j >> sh) - cg.lo.y) as usize;
                let oy = off[(j & m) as usize];
                let rb = (qj + cny * qk) * cnx;
                for (q, b) in row[..cnx].iter_mut().enumerate() {
                    *b = a[rb + q] + sy[rb + q] * oy + sz[rb + q] * oz;
                }
                let sxr = &sx[rb..rb + cnx];
                let out = dst.row_mut(c, fine.lo.x, j, k, fnx);
                for (t, o) in out.iter_mut().enumerate() {
                    let i = fine.lo.x + t as i32;
                    let q = ((i >> sh) - cg.lo.x) as usize;
                    *o = row[q] + sxr[q] * off[(i & m) as usize];
                }
            }
        }
    }
    Ok(())
}

/// Per coarse cell of `cg`: bit `2d` set if the low neighbour along `d` is
/// available, bit `2d + 1` if the high one is. Errors if a cell of `cg`
/// itself is not available.
fn stencil_flags<T: Real>(
    coarse: &CoarseScratch<T>,
    cg: &IndexBox,
    work: &mut InterpWork<T>,
) -> Result<(), MeshError> {
    let sbx = coarse.bx;
    let ss = sbx.size();
    let stride = [1usize, ss.x as usize, ss.x as usize * ss.y as usize];
    let ncell = cg.num_cells() as usize;
    work.flags.clear();
    work.flags.reserve(ncell);
    let mask = &coarse.mask;
    for k in cg.lo.z..=cg.hi.z {
        for j in cg.lo.y..=cg.hi.y {
            let mut o = sbx.offset(&iv(cg.lo.x, j, k));
            for i in cg.lo.x..=cg.hi.x {
                if mask[o] == 0 {
                    return Err(MeshError::BadAccess {
                        field: format!("interpolation from coarse cell [{i},{j},{k}]"),
                        why: "the cell holds no coarse data (coarse level does not cover it)"
                            .into(),
                    });
                }
                let q = [i, j, k];
                let mut f = 0u8;
                for d in 0..3 {
                    if q[d] > sbx.lo[d] && mask[o - stride[d]] != 0 {
                        f |= 1 << (2 * d);
                    }
                    if q[d] < sbx.hi[d] && mask[o + stride[d]] != 0 {
                        f |= 2 << (2 * d);
                    }
                }
                work.flags.push(f);
                o += 1;
            }
        }
    }
    Ok(())
}

/// Values and limited slopes of component `c` on the coarse cells `cg`.
fn slopes<T: Real>(
    coarse: &CoarseScratch<T>,
    c: usize,
    cg: &IndexBox,
    limiter: Limiter,
    work: &mut InterpWork<T>,
) {
    let sbx = coarse.bx;
    let ss = sbx.size();
    let stride = [1usize, ss.x as usize, ss.x as usize * ss.y as usize];
    let src = &coarse.data[c * coarse.len..(c + 1) * coarse.len];
    let mut n = 0;
    for k in cg.lo.z..=cg.hi.z {
        for j in cg.lo.y..=cg.hi.y {
            let mut o = sbx.offset(&iv(cg.lo.x, j, k));
            for _ in cg.lo.x..=cg.hi.x {
                let u = src[o];
                let f = work.flags[n];
                let mut s = [T::zero(); 3];
                if limiter != Limiter::PiecewiseConstant {
                    for (d, sd) in s.iter_mut().enumerate() {
                        let lo = f & (1 << (2 * d)) != 0;
                        let hi = f & (2 << (2 * d)) != 0;
                        *sd = match (lo, hi) {
                            (true, true) => {
                                limiter.slope(u - src[o - stride[d]], src[o + stride[d]] - u)
                            }
                            (true, false) => u - src[o - stride[d]],
                            (false, true) => src[o + stride[d]] - u,
                            (false, false) => T::zero(),
                        };
                    }
                }
                work.a[n] = u;
                work.sx[n] = s[0];
                work.sy[n] = s[1];
                work.sz[n] = s[2];
                n += 1;
                o += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limiters() {
        let l = Limiter::MonotonizedCentral;
        assert_eq!(l.slope(1.0f64, 1.0), 1.0);
        assert_eq!(l.slope(1.0f64, 3.0), 2.0);
        assert_eq!(l.slope(1.0f64, 10.0), 2.0);
        assert_eq!(l.slope(-1.0f64, 2.0), 0.0);
        assert_eq!(l.slope(-2.0f64, -1.0), -1.5);
        let m = Limiter::MinMod;
        assert_eq!(m.slope(1.0f64, 3.0), 1.0);
        assert_eq!(m.slope(-3.0f64, -1.0), -1.0);
        assert_eq!(m.slope(3.0f64, -1.0), 0.0);
        assert_eq!(Limiter::PiecewiseConstant.slope(1.0f64, 1.0), 0.0);
        assert_eq!(offsets::<f64>(2)[..2], [-0.25, 0.25]);
        assert_eq!(offsets::<f64>(4), [-0.375, -0.125, 0.125, 0.375]);
    }

    /// A linear field on a coarse box interpolates exactly; a random field
    /// keeps every coarse cell's mean; both with holes in the mask.
    #[test]
    fn linear_exact_and_conservative() {
        for r in [2, 4] {
            for lim in [Limiter::MinMod, Limiter::MonotonizedCentral] {
                let cbox = IndexBox::new(iv(-2, 0, 1), iv(5, 4, 6));
                let mut src = PatchData::<f64>::new(cbox, 1, 2).unwrap();
                src.fill_with(0, |p| {
                    1.0 + 0.5 * p.x as f64 - 0.25 * p.y as f64 + 2.0 * p.z as f64
                });
                src.fill_with(1, |p| ((p.x * 7 + p.y * 13 + p.z * 29) % 11) as f64);
                let mut cs = CoarseScratch::new();
                cs.reset(cbox.grow(1), 2).unwrap();
                // Leave out the x = 5 plane: one-sided slopes next to it.
                let given = IndexBox::new(cbox.lo, iv(4, 4, 6));
                cs.copy_from(&src, &given, &iv(0, 0, 0)).unwrap();
                let fine = IndexBox::new(iv(-2, 0, 1), iv(4, 4, 6)).refine(r);
                let mut dst = PatchData::<f64>::new(fine, 0, 2).unwrap();
                let mut w = InterpWork::new();
                interpolate(&cs, r, lim, &fine, &mut FillTarget::patch(&mut dst), &mut w).unwrap();
                let rf = r as f64;
                for p in fine.iter() {
                    let x = |d: usize| (p[d] as f64 + 0.5) / rf - 0.5;
                    let exact = 1.0 + 0.5 * x(0) - 0.25 * x(1) + 2.0 * x(2);
                    assert!((dst.get(0, &p) - exact).abs() < 1e-12, "{p:?}");
                }
                for q in given.iter() {
                    let s = dst.region_sum(1, &IndexBox::new(q, q).refine(r));
                    let mean = s / (r * r * r) as f64;
                    assert!((mean - src.get(1, &q)).abs() < 1e-13);
                }
                // A coarse cell missing under the fine box is an error.
                let e = interpolate(
                    &cs,
                    r,
                    lim,
                    &IndexBox::new(iv(5, 0, 1), iv(5, 0, 1)).refine(r),
                    &mut FillTarget::patch(
                        &mut PatchData::<f64>::new(cbox.refine(r), 0, 2).unwrap(),
                    ),
                    &mut w,
                )
                .unwrap_err();
                assert!(e.to_string().contains("no coarse data"), "{e}");
            }
        }
    }
}
