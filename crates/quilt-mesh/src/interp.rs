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
            Limiter::MinMod => minmod(dl, dr),
            Limiter::MonotonizedCentral => monotonized_central(dl, dr),
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
    /// Whether `mask` is kept (ghost fill, whose plans hold the stencil
    /// flags, skips it).
    masked: bool,
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
            masked: true,
        }
    }

    /// Prepares for `ncomp` components over `bx` with no cell available.
    pub fn reset(&mut self, bx: IndexBox, ncomp: usize) -> Result<(), MeshError> {
        self.reset_unmasked(bx, ncomp)?;
        self.masked = true;
        self.mask.clear();
        self.mask.resize(self.len, 0);
        Ok(())
    }

    /// [`CoarseScratch::reset`] without the availability mask, for callers
    /// that hold precomputed stencil flags.
    pub(crate) fn reset_unmasked(&mut self, bx: IndexBox, ncomp: usize) -> Result<(), MeshError> {
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
        self.masked = false;
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
        self.masked && self.bx.contains(p) && self.mask[self.bx.offset(p)] != 0
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
        if region.is_empty() {
            return;
        }
        let nx = region.size().x as usize;
        if self.masked {
            for k in region.lo.z..=region.hi.z {
                for j in region.lo.y..=region.hi.y {
                    let od = self.bx.offset(&iv(region.lo.x, j, k));
                    self.mask[od..od + nx].fill(1);
                }
            }
        }
        let [_, ssy, ssz] = src.strides();
        let dsz = self.bx.size();
        let (dsy, dsz) = (dsz.x as usize, dsz.x as usize * dsz.y as usize);
        let os0 = src.index(&(region.lo - shift));
        let od0 = self.bx.offset(&region.lo);
        let (ny, nz) = (region.size().y as usize, region.size().z as usize);
        for c in 0..self.ncomp {
            let s = src.comp(c);
            let d = &mut self.data[c * self.len..(c + 1) * self.len];
            for dk in 0..nz {
                for dj in 0..ny {
                    let os = os0 + dk * ssz + dj * ssy;
                    let od = od0 + dk * dsz + dj * dsy;
                    copy_row(&mut d[od..od + nx], &s[os..os + nx]);
                }
            }
        }
    }
}

/// Reusable work arrays of [`interpolate`]: stencil flags, values and
/// slopes of one row of coarse cells.
#[derive(Debug, Clone, Default)]
pub struct InterpWork<T> {
    flags: Vec<u8>,
    a: Vec<T>,
    sx: Vec<T>,
    sy: Vec<T>,
    sz: Vec<T>,
    /// Per fine cell of a row: `u + s_x·o_x`, `s_y`, `s_z` of its coarse cell.
    fx: Vec<T>,
    fy: Vec<T>,
    fz: Vec<T>,
    /// Fine values of one plane of a thin box, `x` slowest.
    tile: Vec<T>,
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
            fx: Vec::new(),
            fy: Vec::new(),
            fz: Vec::new(),
            tile: Vec::new(),
        }
    }
}

/// Offsets `o_t = (t + ½)/r − ½` of the fine cell centres in a coarse cell.
fn offsets<T: Real, const R: usize>() -> [T; R] {
    std::array::from_fn(|t| T::from_f64((t as f64 + 0.5) / R as f64 - 0.5))
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
    check(coarse, ratio, fine, dst)?;
    if !coarse.masked {
        return Err(MeshError::invalid(
            "coarse scratch",
            "it was not prepared with `reset` (no availability mask)",
        ));
    }
    dispatch(
        coarse,
        ratio,
        limiter,
        fine,
        RowFlags::Mask(&coarse.mask),
        dst,
        work,
    )
}

/// [`interpolate`] with stencil flags precomputed by [`stencil_flags`]
/// over the coarse box `flags_box`, which must hold `fine.coarsen(ratio)`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn interpolate_planned<T: Real>(
    coarse: &CoarseScratch<T>,
    ratio: i32,
    limiter: Limiter,
    fine: &IndexBox,
    flags_box: &IndexBox,
    flags: &[u8],
    dst: &mut FillTarget<'_, T>,
    work: &mut InterpWork<T>,
) -> Result<(), MeshError> {
    if fine.is_empty() {
        return Ok(());
    }
    check(coarse, ratio, fine, dst)?;
    let cg = fine.coarsen(ratio);
    if !flags_box.contains_box(&cg) || flags.len() != flags_box.num_cells() as usize {
        return Err(MeshError::invalid(
            format!("interpolation into {fine}"),
            format!("stencil flags over {flags_box} do not cover the coarse cells {cg}"),
        ));
    }
    let rf = RowFlags::Planned {
        bx: *flags_box,
        flags,
    };
    dispatch(coarse, ratio, limiter, fine, rf, dst, work)
}

fn check<T: Real>(
    coarse: &CoarseScratch<T>,
    ratio: i32,
    fine: &IndexBox,
    dst: &FillTarget<'_, T>,
) -> Result<(), MeshError> {
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
    Ok(())
}

/// Where the kernel takes each coarse row's stencil flags from.
#[derive(Clone, Copy)]
enum RowFlags<'a> {
    /// Computed per row from the scratch's availability mask.
    Mask(&'a [u8]),
    /// Precomputed (from the layout) over `bx`.
    Planned { bx: IndexBox, flags: &'a [u8] },
}

/// Bits of a coarse cell's stencil flags: bit `2d` if the low neighbour
/// along `d` is available, bit `2d + 1` if the high one is.
const ALL_NEIGHBOURS: u8 = 0x3F;

/// Stencil flags of the coarse cells `cg` from an availability mask over
/// `mask_box` (see [`ALL_NEIGHBOURS`]); the first cell of `cg` without data
/// is the error.
pub(crate) fn stencil_flags(
    mask: &[u8],
    mask_box: &IndexBox,
    cg: &IndexBox,
) -> Result<Vec<u8>, IntVect> {
    let mut out = vec![0u8; cg.num_cells() as usize];
    let n = cg.size().x as usize;
    let mut at = 0;
    for k in cg.lo.z..=cg.hi.z {
        for j in cg.lo.y..=cg.hi.y {
            row_flags(mask, mask_box, iv(cg.lo.x, j, k), &mut out[at..at + n])?;
            at += n;
        }
    }
    Ok(out)
}

/// Stencil flags of the `out.len()` coarse cells from `start` along `x`.
fn row_flags(mask: &[u8], mbx: &IndexBox, start: IntVect, out: &mut [u8]) -> Result<(), IntVect> {
    if !mbx.contains(&start) || !mbx.contains(&(start + iv(out.len() as i32 - 1, 0, 0))) {
        return Err(start);
    }
    let ss = mbx.size();
    let stride = [1usize, ss.x as usize, ss.x as usize * ss.y as usize];
    let o0 = mbx.offset(&start);
    for (q, f) in out.iter_mut().enumerate() {
        let o = o0 + q;
        let p = start + iv(q as i32, 0, 0);
        if mask[o] == 0 {
            return Err(p);
        }
        let mut fl = 0u8;
        for d in 0..3 {
            if p[d] > mbx.lo[d] && mask[o - stride[d]] != 0 {
                fl |= 1 << (2 * d);
            }
            if p[d] < mbx.hi[d] && mask[o + stride[d]] != 0 {
                fl |= 2 << (2 * d);
            }
        }
        *f = fl;
    }
    Ok(())
}

/// One monomorphised kernel per ratio and limiter, so that the inner loops
/// have fixed trip counts and no limiter dispatch.
fn dispatch<T: Real>(
    coarse: &CoarseScratch<T>,
    ratio: i32,
    limiter: Limiter,
    fine: &IndexBox,
    rf: RowFlags<'_>,
    dst: &mut FillTarget<'_, T>,
    work: &mut InterpWork<T>,
) -> Result<(), MeshError> {
    // Boxes a few cells wide along x (the x faces of a ghost shell) have
    // rows too short for the row kernel's per-row work to pay off.
    let thin = fine.size().x <= THIN && fine.size().y > THIN;
    macro_rules! run {
        ($r:literal, $k:ident) => {
            match limiter {
                Limiter::PiecewiseConstant => {
                    $k::<T, $r>(coarse, fine, rf, dst, work, |_, _| T::zero())
                }
                Limiter::MinMod => $k::<T, $r>(coarse, fine, rf, dst, work, minmod),
                Limiter::MonotonizedCentral => {
                    $k::<T, $r>(coarse, fine, rf, dst, work, monotonized_central)
                }
            }
        };
    }
    match (ratio, thin) {
        (2, false) => run!(2, kernel),
        (2, true) => run!(2, kernel_thin),
        (_, false) => run!(4, kernel),
        (_, true) => run!(4, kernel_thin),
    }
}

/// `minmod(Δ⁻, Δ⁺)` without branches.
#[inline(always)]
fn minmod<T: Real>(dl: T, dr: T) -> T {
    let m = dl.abs().min(dr.abs()).copysign(dl);
    if dl * dr > T::zero() { m } else { T::zero() }
}

/// van Leer's MC slope without branches.
#[inline(always)]
fn monotonized_central<T: Real>(dl: T, dr: T) -> T {
    let half = T::from_f64(0.5);
    let two = T::from_f64(2.0);
    let dc = (dl + dr) * half;
    let m = dc
        .abs()
        .min(two * dl.abs())
        .min(two * dr.abs())
        .copysign(dc);
    if dl * dr > T::zero() { m } else { T::zero() }
}

/// Copies a row; short rows (ghost slabs are three cells wide) without a
/// library call.
#[inline(always)]
pub(crate) fn copy_row<T: Copy>(d: &mut [T], s: &[T]) {
    let n = d.len();
    if n > 16 {
        d.copy_from_slice(s);
        return;
    }
    let s = &s[..n];
    let mut dc = d.chunks_exact_mut(4);
    let mut sc = s.chunks_exact(4);
    for (a, b) in (&mut dc).zip(&mut sc) {
        a.copy_from_slice(b);
    }
    for (a, b) in dc.into_remainder().iter_mut().zip(sc.remainder()) {
        *a = *b;
    }
}

/// Expands per-coarse-cell values to the fine cells of a line whose first
/// cell is sub-cell `head` of coarse cell 0: fine cell `t` in coarse cell
/// `q` at sub-cell `u` gets `e0 = v[q] + s[q]·off[u]`, `e1 = w1[q]`,
/// `e2 = w2[q]`.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn expand<T: Real, const R: usize>(
    off: &[T; R],
    head: usize,
    v: &[T],
    s: &[T],
    w1: &[T],
    w2: &[T],
    e0: &mut [T],
    e1: &mut [T],
    e2: &mut [T],
) {
    let first = (R - head).min(e0.len());
    let (f0, r0) = e0.split_at_mut(first);
    let (f1, r1) = e1.split_at_mut(first);
    let (f2, r2) = e2.split_at_mut(first);
    for (x, &o) in f0.iter_mut().zip(&off[head..]) {
        *x = v[0] + s[0] * o;
    }
    f1.fill(w1[0]);
    f2.fill(w2[0]);
    let full = r0.len() / R;
    let last = 1 + full;
    let mut c0 = r0.chunks_exact_mut(R);
    for (c, (&vq, &sq)) in (&mut c0).zip(v[1..].iter().zip(&s[1..])) {
        for (x, &o) in c.iter_mut().zip(off) {
            *x = vq + sq * o;
        }
    }
    for (x, &o) in c0.into_remainder().iter_mut().zip(off) {
        *x = v[last] + s[last] * o;
    }
    for (e, w) in [(r1, w1), (r2, w2)] {
        let mut c = e.chunks_exact_mut(R);
        for (c, &wq) in (&mut c).zip(&w[1..]) {
            c.fill(wq);
        }
        let rem = c.into_remainder();
        if !rem.is_empty() {
            rem.fill(w[last]);
        }
    }
}

/// Widest box (fine cells along `x`) that [`kernel_thin`] takes.
const THIN: i32 = 4;

/// Values and limited slopes of the coarse cell at offset `o` of `src`
/// with stencil flags `f` (one-sided where a neighbour is missing).
#[inline(always)]
fn cell_slopes<T: Real>(
    src: &[T],
    o: usize,
    f: u8,
    stride: &[usize; 3],
    slope: &impl Fn(T, T) -> T,
) -> [T; 3] {
    let u = src[o];
    if f == ALL_NEIGHBOURS {
        return std::array::from_fn(|d| slope(u - src[o - stride[d]], src[o + stride[d]] - u));
    }
    std::array::from_fn(|d| {
        let hl = (f >> (2 * d)) & 1 != 0;
        let hr = (f >> (2 * d)) & 2 != 0;
        // A missing neighbour reads the cell itself, so every index is in
        // range; its difference is then replaced by the other side's.
        let dl = u - src[o - if hl { stride[d] } else { 0 }];
        let dr = src[o + if hr { stride[d] } else { 0 }] - u;
        slope(if hl { dl } else { dr }, if hr { dr } else { dl })
    })
}

/// The interpolation for boxes at most [`THIN`] cells wide along `x`,
/// one plane of coarse cells at a time: values and slopes of the plane's
/// coarse columns (along `y`), expanded to fine `y` once, then per fine
/// plane a small tile of fine values (vectorisable along `y`) written row
/// by row.
fn kernel_thin<T: Real, const R: usize>(
    coarse: &CoarseScratch<T>,
    fine: &IndexBox,
    rf: RowFlags<'_>,
    dst: &mut FillTarget<'_, T>,
    work: &mut InterpWork<T>,
    slope: impl Fn(T, T) -> T,
) -> Result<(), MeshError> {
    let r = R as i32;
    let m = r - 1;
    let lr = R.trailing_zeros();
    let off = offsets::<T, R>();
    let cg = fine.coarsen(r);
    let sbx = coarse.bx;
    let ss = sbx.size();
    let stride = [1usize, ss.x as usize, ss.x as usize * ss.y as usize];
    let (cnx, cny) = (cg.size().x as usize, cg.size().y as usize);
    let (fnx, fny) = (fine.size().x as usize, fine.size().y as usize);
    let ncell = cnx * cny;
    let InterpWork {
        flags: fbuf,
        a,
        sx,
        sy: vy,
        sz: vz,
        fx: ea,
        fy: ex,
        fz: ez,
        tile,
    } = work;
    for v in [&mut *a, &mut *sx, &mut *vy, &mut *vz] {
        if v.len() < ncell {
            v.resize(ncell, T::zero());
        }
    }
    for v in [&mut *ea, &mut *ex, &mut *ez] {
        if v.len() < cnx * fny {
            v.resize(cnx * fny, T::zero());
        }
    }
    if tile.len() < fnx * fny {
        tile.resize(fnx * fny, T::zero());
    }
    // Flags of a plane, column-major (`x` slowest), after one row's flags.
    if fbuf.len() < ncell + cnx {
        fbuf.resize(ncell + cnx, 0);
    }
    // Fine x cell t lies in coarse column qx[t] at offset ox[t].
    let qx: [usize; THIN as usize] =
        std::array::from_fn(|t| (((fine.lo.x + t as i32) >> lr) - cg.lo.x).max(0) as usize);
    let ox: [T; THIN as usize] =
        std::array::from_fn(|t| off[((fine.lo.x + t as i32) & m) as usize]);
    for qk in cg.lo.z..=cg.hi.z {
        let (k0, k1) = (fine.lo.z.max(qk * r), fine.hi.z.min(qk * r + m));
        let (plane, rowbuf) = fbuf.split_at_mut(ncell);
        for (dj, qj) in (cg.lo.y..=cg.hi.y).enumerate() {
            let start = iv(cg.lo.x, qj, qk);
            let fl: &[u8] = match rf {
                RowFlags::Mask(mask) => {
                    row_flags(mask, &sbx, start, &mut rowbuf[..cnx]).map_err(|p| {
                        MeshError::BadAccess {
                            field: format!(
                                "interpolation from coarse cell [{},{},{}]",
                                p.x, p.y, p.z
                            ),
                            why: "the cell holds no coarse data (coarse level does not cover it)"
                                .into(),
                        }
                    })?;
                    &rowbuf[..cnx]
                }
                RowFlags::Planned { bx, flags } => {
                    let o = bx.offset(&start);
                    &flags[o..o + cnx]
                }
            };
            for (x, &f) in fl.iter().enumerate() {
                plane[x * cny + dj] = f;
            }
        }
        let o00 = sbx.offset(&iv(cg.lo.x, cg.lo.y, qk));
        for c in 0..coarse.ncomp {
            let src = &coarse.data[c * coarse.len..(c + 1) * coarse.len];
            for x in 0..cnx {
                for dj in 0..cny {
                    let n = x * cny + dj;
                    let o = o00 + x + dj * stride[1];
                    let s = cell_slopes(src, o, plane[n], &stride, &slope);
                    a[n] = src[o];
                    sx[n] = s[0];
                    vy[n] = s[1];
                    vz[n] = s[2];
                }
                // Expand the column to fine y: u + s_y·o_y, s_x, s_z.
                let (col, fine_col) = (x * cny..(x + 1) * cny, x * fny..(x + 1) * fny);
                expand(
                    &off,
                    (fine.lo.y & m) as usize,
                    &a[col.clone()],
                    &vy[col.clone()],
                    &sx[col.clone()],
                    &vz[col],
                    &mut ea[fine_col.clone()],
                    &mut ex[fine_col.clone()],
                    &mut ez[fine_col],
                );
            }
            for k in k0..=k1 {
                let oz = off[(k & m) as usize];
                for t in 0..fnx {
                    let b = qx[t] * fny;
                    let (ea, ex, ez) = (&ea[b..b + fny], &ex[b..b + fny], &ez[b..b + fny]);
                    let o = ox[t];
                    for (v, ((e, x), z)) in tile[t * fny..(t + 1) * fny]
                        .iter_mut()
                        .zip(ea.iter().zip(ex).zip(ez))
                    {
                        *v = *e + *x * o + *z * oz;
                    }
                }
                for jj in 0..fny {
                    let row = dst.row_mut(c, fine.lo.x, fine.lo.y + jj as i32, k, fnx);
                    for (t, v) in row.iter_mut().enumerate() {
                        *v = tile[t * fny + jj];
                    }
                }
            }
        }
    }
    Ok(())
}

/// The interpolation, one row of coarse cells at a time: stencil flags,
/// then per component the values and slopes of the row, then the (up to
/// `R²`) fine rows above it.
fn kernel<T: Real, const R: usize>(
    coarse: &CoarseScratch<T>,
    fine: &IndexBox,
    rf: RowFlags<'_>,
    dst: &mut FillTarget<'_, T>,
    work: &mut InterpWork<T>,
    slope: impl Fn(T, T) -> T,
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
    let InterpWork {
        flags: fbuf,
        a,
        sx,
        sy: vy,
        sz: vz,
        fx,
        fy,
        fz,
        ..
    } = work;
    for v in [&mut *a, &mut *sx, &mut *vy, &mut *vz] {
        if v.len() < cnx {
            v.resize(cnx, T::zero());
        }
    }
    for v in [&mut *fx, &mut *fy, &mut *fz] {
        if v.len() < fnx {
            v.resize(fnx, T::zero());
        }
    }
    let (fx, fy, fz) = (&mut fx[..fnx], &mut fy[..fnx], &mut fz[..fnx]);
    if fbuf.len() < cnx {
        fbuf.resize(cnx, 0);
    }
    let (a, sx, vy, vz) = (
        &mut a[..cnx],
        &mut sx[..cnx],
        &mut vy[..cnx],
        &mut vz[..cnx],
    );
    for qk in cg.lo.z..=cg.hi.z {
        let (k0, k1) = (fine.lo.z.max(qk * r), fine.hi.z.min(qk * r + m));
        for qj in cg.lo.y..=cg.hi.y {
            let (j0, j1) = (fine.lo.y.max(qj * r), fine.hi.y.min(qj * r + m));
            let start = iv(cg.lo.x, qj, qk);
            let o0 = sbx.offset(&start);
            let fl: &[u8] = match rf {
                RowFlags::Mask(mask) => {
                    row_flags(mask, &sbx, start, &mut fbuf[..cnx]).map_err(|p| {
                        MeshError::BadAccess {
                            field: format!(
                                "interpolation from coarse cell [{},{},{}]",
                                p.x, p.y, p.z
                            ),
                            why: "the cell holds no coarse data (coarse level does not cover it)"
                                .into(),
                        }
                    })?;
                    &fbuf[..cnx]
                }
                RowFlags::Planned { bx, flags } => {
                    let o = bx.offset(&start);
                    &flags[o..o + cnx]
                }
            };
            let full = fl.iter().all(|&f| f == ALL_NEIGHBOURS);
            for c in 0..coarse.ncomp {
                let src = &coarse.data[c * coarse.len..(c + 1) * coarse.len];
                if full {
                    // Every neighbour present: straight slices, no selects.
                    let u = &src[o0..o0 + cnx];
                    let (xm, xp) = (&src[o0 - 1..o0 - 1 + cnx], &src[o0 + 1..o0 + 1 + cnx]);
                    let (ym, yp) = (&src[o0 - sy..o0 - sy + cnx], &src[o0 + sy..o0 + sy + cnx]);
                    let (zm, zp) = (&src[o0 - sz..o0 - sz + cnx], &src[o0 + sz..o0 + sz + cnx]);
                    for q in 0..cnx {
                        let uq = u[q];
                        a[q] = uq;
                        sx[q] = slope(uq - xm[q], xp[q] - uq);
                        vy[q] = slope(uq - ym[q], yp[q] - uq);
                        vz[q] = slope(uq - zm[q], zp[q] - uq);
                    }
                } else {
                    for q in 0..cnx {
                        let o = o0 + q;
                        let s = cell_slopes(src, o, fl[q], &stride, &slope);
                        a[q] = src[o];
                        sx[q] = s[0];
                        vy[q] = s[1];
                        vz[q] = s[2];
                    }
                }
                // Expand the row to fine cells along x once; every fine
                // row above it is then `f_x + f_y·o_y + f_z·o_z`.
                expand(&off, head, a, sx, vy, vz, fx, fy, fz);
                for k in k0..=k1 {
                    let oz = off[(k & m) as usize];
                    for j in j0..=j1 {
                        let oy = off[(j & m) as usize];
                        let out = dst.row_mut(c, fine.lo.x, j, k, fnx);
                        for (o, ((x, y), z)) in
                            out.iter_mut().zip(fx.iter().zip(fy.iter()).zip(fz.iter()))
                        {
                            *o = *x + *y * oy + *z * oz;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// A straightforward, cell-by-cell statement of what the kernels compute,
/// for bitwise regression tests: for every fine cell, its coarse cell's
/// limited slopes (one-sided where a neighbour is missing) and the sum in
/// the kernels' order of operations. Row kernels add the `x`, then `y`,
/// then `z` terms; the thin kernel (boxes at most [`THIN`] cells wide along
/// `x` and more along `y`) adds `y`, then `x`, then `z`.
#[cfg(test)]
pub(crate) mod reference {
    use super::*;

    /// The limiters as textbook formulas (`std` minimum, explicit sign).
    pub(crate) fn slope<T: Real>(limiter: Limiter, dl: T, dr: T) -> T {
        if !(dl * dr > T::zero()) {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Small deterministic generator (splitmix64) for the randomised tests.
    struct Mix(u64);

    impl Mix {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn range(&mut self, lo: i32, hi: i32) -> i32 {
            lo + self.below((hi - lo + 1) as u64) as i32
        }
        /// Values with ties, zeros, sign changes and a wide range of
        /// magnitudes, so that every limiter branch is taken.
        fn value(&mut self) -> f64 {
            match self.below(8) {
                0 => 0.0,
                1 => 1.0,
                2 => -0.5,
                _ => {
                    let m = (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                    m * 10f64.powi(self.range(-3, 3))
                }
            }
        }
    }

    /// Random coarse data with holes, random fine boxes (thin and wide,
    /// aligned and not): the kernels agree bit for bit with the cell-by-cell
    /// reference, through the mask and through planned stencil flags.
    fn bitwise_case<T: Real>(seed: u64) -> [usize; 2] {
        let mut g = Mix(seed);
        let mut w = InterpWork::new();
        let mut compared = [0usize; 2];
        for case in 0..48 {
            let r = if case % 2 == 0 { 2 } else { 4 };
            let lim = [
                Limiter::PiecewiseConstant,
                Limiter::MinMod,
                Limiter::MonotonizedCentral,
            ][case / 2 % 3];
            let ncomp = 1 + g.below(3) as usize;
            let lo = iv(g.range(-6, 3), g.range(-6, 3), g.range(-6, 3));
            let cbox =
                IndexBox::from_lo_size(lo, iv(g.range(3, 14), g.range(3, 14), g.range(3, 9)));
            let mut src = PatchData::<T>::new(cbox, 0, ncomp).unwrap();
            for c in 0..ncomp {
                src.fill_with(c, |_| T::from_f64(g.value()));
            }
            // Holes: a few random boxes of the coarse box are not given.
            let mut cs = CoarseScratch::new();
            cs.reset(cbox, ncomp).unwrap();
            let holes: Vec<IndexBox> = (0..g.below(4))
                .map(|_| {
                    let p = iv(
                        g.range(cbox.lo.x, cbox.hi.x),
                        g.range(cbox.lo.y, cbox.hi.y),
                        g.range(cbox.lo.z, cbox.hi.z),
                    );
                    IndexBox::new(p, p + iv(g.range(0, 2), g.range(0, 2), g.range(0, 2)))
                })
                .collect();
            for q in cbox.iter() {
                if !holes.iter().any(|h| h.contains(&q)) {
                    cs.copy_from(&src, &IndexBox::new(q, q), &iv(0, 0, 0))
                        .unwrap();
                }
            }
            let fbox = cbox.refine(r);
            for _ in 0..6 {
                // Thin boxes (x faces of a ghost shell) or wide ones.
                let nx = if g.below(2) == 0 {
                    g.range(1, 4)
                } else {
                    g.range(1, fbox.size().x)
                };
                let size = iv(nx, g.range(1, fbox.size().y), g.range(1, fbox.size().z));
                let lo = iv(
                    g.range(fbox.lo.x, fbox.hi.x - size.x + 1),
                    g.range(fbox.lo.y, fbox.hi.y - size.y + 1),
                    g.range(fbox.lo.z, fbox.hi.z - size.z + 1),
                );
                let fine = IndexBox::from_lo_size(lo, size);
                let cg = fine.coarsen(r);
                if holes.iter().any(|h| h.intersects(&cg)) {
                    continue;
                }
                compared[usize::from(fine.size().x <= THIN && fine.size().y > THIN)] += 1;
                let mut want = PatchData::<T>::new(fbox, 0, ncomp).unwrap();
                let mut got = want.clone();
                let avail = |p: &IntVect| cs.is_available(p);
                reference::interpolate(
                    &cs,
                    r,
                    lim,
                    &fine,
                    &avail,
                    &mut FillTarget::patch(&mut want),
                );
                interpolate(&cs, r, lim, &fine, &mut FillTarget::patch(&mut got), &mut w).unwrap();
                let same = |a: &PatchData<T>, b: &PatchData<T>| {
                    bytemuck::cast_slice::<T, u8>(a.as_slice())
                        == bytemuck::cast_slice::<T, u8>(b.as_slice())
                };
                assert!(
                    same(&want, &got),
                    "seed {seed} case {case}: mask path, {fine} r {r} {lim:?}"
                );
                // The planned path, with stencil flags over a larger box.
                let fb = cg.grow(1).intersect(&cbox);
                let flags = stencil_flags(&cs.mask, &cbox, &fb).unwrap_or_else(|_| {
                    // Cells of `fb` outside `cg` may be holes: flags only
                    // over the coarse cells under the box then.
                    stencil_flags(&cs.mask, &cbox, &cg).unwrap()
                });
                let fb = if flags.len() == fb.num_cells() as usize {
                    fb
                } else {
                    cg
                };
                let mut planned = PatchData::<T>::new(fbox, 0, ncomp).unwrap();
                interpolate_planned(
                    &cs,
                    r,
                    lim,
                    &fine,
                    &fb,
                    &flags,
                    &mut FillTarget::patch(&mut planned),
                    &mut w,
                )
                .unwrap();
                assert!(
                    same(&want, &planned),
                    "seed {seed} case {case}: planned path, {fine} r {r} {lim:?}"
                );
            }
        }
        compared
    }

    #[test]
    fn kernels_match_the_reference_bitwise() {
        let mut n = [0; 2];
        for seed in 1..=6 {
            for (a, b) in n.iter_mut().zip(bitwise_case::<f32>(seed)) {
                *a += b;
            }
            for (a, b) in n.iter_mut().zip(bitwise_case::<f64>(seed)) {
                *a += b;
            }
        }
        // Enough wide and thin boxes were compared for the test to mean
        // something.
        assert!(n[0] > 300 && n[1] > 100, "{n:?}");
    }

    #[test]
    fn reference_limiters_agree() {
        let mut g = Mix(7);
        for _ in 0..20_000 {
            let (a, b) = (g.value(), g.value());
            for lim in [
                Limiter::PiecewiseConstant,
                Limiter::MinMod,
                Limiter::MonotonizedCentral,
            ] {
                assert_eq!(
                    lim.slope(a, b).to_bits(),
                    reference::slope(lim, a, b).to_bits(),
                    "{lim:?} {a} {b}"
                );
                let (x, y) = (a as f32, b as f32);
                assert_eq!(
                    lim.slope(x, y).to_bits(),
                    reference::slope(lim, x, y).to_bits()
                );
            }
        }
    }

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
        assert_eq!(offsets::<f64, 2>(), [-0.25, 0.25]);
        assert_eq!(offsets::<f64, 4>(), [-0.375, -0.125, 0.125, 0.375]);
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
                // Thin boxes (their own kernel), at unaligned offsets and
                // next to the missing x = 5 plane, agree with the above.
                for x0 in [-2 * r + 1, 4 * r - 3, 5 * r - 3] {
                    let thin = IndexBox::new(iv(x0, 1, r + 1), iv(x0 + 2, 5 * r - 2, 6 * r));
                    let mut t = PatchData::<f64>::new(fine, 0, 2).unwrap();
                    interpolate(&cs, r, lim, &thin, &mut FillTarget::patch(&mut t), &mut w)
                        .unwrap();
                    for p in thin.iter() {
                        for c in 0..2 {
                            assert!((t.get(c, &p) - dst.get(c, &p)).abs() < 1e-12, "{p:?}");
                        }
                    }
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
