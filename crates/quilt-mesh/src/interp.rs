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

//!
//! # Kernels
//! Both kernels compute the limited slopes once per coarse cell (per box
//! given) and then write the `r³` fine children, in monomorphised
//! versions per ratio and limiter (`SlopeRule`):
//!
//! - `rows`: one row of coarse cells along `x` at a time — slopes of the
//!   whole row in one branch-free, vectorised loop, cells with a missing
//!   neighbour patched afterwards with one-sided slopes, the row expanded
//!   once to fine `x`, then every fine row above it written as one
//!   vectorised sum;
//! - `thin`: boxes at most 4 fine cells wide along `x` (the `x`
//!   faces of a ghost shell, whose rows are 3 cells long) — the same per
//!   column of coarse cells along `y`, gathered into contiguous buffers.
//!
//! The two sum the three slope terms in different orders (`x, y, z` and
//! `y, x, z`); `reference` (tests only) states both cell by cell, and
//! the tests hold the kernels to it bit for bit.

mod blocks;
mod flags;
mod lanes;
mod rows;
mod scratch;
mod slopes;
mod thin;

#[cfg(test)]
pub(crate) mod reference;
#[cfg(test)]
pub(crate) mod tests;

use crate::error::MeshError;
use crate::fill::FillTarget;
use crate::index::IndexBox;
use crate::real::Real;

pub(crate) use blocks::copy_row;
use flags::Flags;
pub(crate) use flags::stencil_flags;
pub use scratch::{CoarseScratch, InterpWork};
use slopes::{Mc, MinMod, SlopeRule, Zero};

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
            Limiter::PiecewiseConstant => Zero::slope::<T, T>(dl, dr),
            Limiter::MinMod => MinMod::slope::<T, T>(dl, dr),
            Limiter::MonotonizedCentral => Mc::slope::<T, T>(dl, dr),
        }
    }
}

/// The limited slopes of the coarse cell at offset `o` of `src` (strides
/// `stride`) with stencil flags `f`, a missing neighbour replaced by the
/// other side's difference: what the kernels compute per cell, for
/// executors that take one cell at a time (`crate::flat`).
#[inline(always)]
pub(crate) fn flagged_slopes<T: Real>(
    limiter: Limiter,
    src: &[T],
    o: usize,
    f: u8,
    stride: &[usize; 3],
) -> [T; 3] {
    match limiter {
        Limiter::PiecewiseConstant => slopes::cell_slopes::<T, Zero>(src, o, f, stride),
        Limiter::MinMod => slopes::cell_slopes::<T, MinMod>(src, o, f, stride),
        Limiter::MonotonizedCentral => slopes::cell_slopes::<T, Mc>(src, o, f, stride),
    }
}

/// Widest box (fine cells along `x`) that the [`thin`] kernel takes; it
/// takes such a box only if it is wider than this along `y`.
const THIN: i32 = 4;

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
    let Some(mask) = coarse.mask() else {
        return Err(MeshError::invalid(
            "coarse scratch",
            "it was not prepared with `reset` (no availability mask)",
        ));
    };
    // Flags of the coarse cells under the box, once; the buffer is moved
    // out of `work` while the kernel borrows the rest.
    let cg = fine.coarsen(ratio);
    let mut fl = std::mem::take(&mut work.mask_flags);
    let done = match flags::stencil_flags_into(mask, &coarse.bx(), &cg, &mut fl) {
        Ok(()) => {
            let f = Flags { bx: cg, flags: &fl };
            dispatch(coarse, ratio, limiter, fine, f, dst, work)
        }
        Err(p) => Err(flags::no_data(p)),
    };
    work.mask_flags = fl;
    done
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
    let f = Flags {
        bx: *flags_box,
        flags,
    };
    dispatch(coarse, ratio, limiter, fine, f, dst, work)
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
    if !dst.bx().contains_box(fine) || dst.ncomp() != coarse.ncomp() {
        return Err(MeshError::BadAccess {
            field: format!("interpolation into {fine}"),
            why: format!(
                "target box {} with {} components does not hold it or differs from the {} coarse components",
                dst.bx(),
                dst.ncomp(),
                coarse.ncomp()
            ),
        });
    }
    let cg = fine.coarsen(ratio);
    if !coarse.bx().contains_box(&cg) {
        return Err(MeshError::BadAccess {
            field: format!("interpolation into {fine}"),
            why: format!(
                "coarse cells {cg} are not all inside the coarse scratch {}",
                coarse.bx()
            ),
        });
    }
    Ok(())
}

/// Whether `fine` goes to the [`thin`] kernel rather than the [`rows`] one.
#[inline]
pub(crate) fn is_thin(fine: &IndexBox) -> bool {
    fine.size().x <= THIN && fine.size().y > THIN
}

/// Runs the kernel for `fine`: compiled twice, for the baseline instruction
/// set and with AVX2 (twice the vector width, same results bit for bit: no
/// fused multiply-add), chosen at run time.
fn dispatch<T: Real>(
    coarse: &CoarseScratch<T>,
    ratio: i32,
    limiter: Limiter,
    fine: &IndexBox,
    flags: Flags<'_>,
    dst: &mut FillTarget<'_, T>,
    work: &mut InterpWork<T>,
) -> Result<(), MeshError> {
    #[cfg(target_arch = "x86_64")]
    if wide_vectors() {
        // SAFETY: the CPU supports AVX2 (checked by `wide_vectors`).
        return unsafe { kernels_avx2(coarse, ratio, limiter, fine, flags, dst, work) };
    }
    kernels(coarse, ratio, limiter, fine, flags, dst, work)
}

/// Whether the AVX2 build of the kernels may run (tests can turn it off
/// per thread, to check the baseline build too).
#[cfg(target_arch = "x86_64")]
#[inline]
fn wide_vectors() -> bool {
    #[cfg(test)]
    if tests::BASELINE_ONLY.with(|b| b.get()) {
        return false;
    }
    std::arch::is_x86_feature_detected!("avx2")
}

/// [`kernels`] compiled with AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn kernels_avx2<T: Real>(
    coarse: &CoarseScratch<T>,
    ratio: i32,
    limiter: Limiter,
    fine: &IndexBox,
    flags: Flags<'_>,
    dst: &mut FillTarget<'_, T>,
    work: &mut InterpWork<T>,
) -> Result<(), MeshError> {
    kernels(coarse, ratio, limiter, fine, flags, dst, work)
}

/// One monomorphised kernel per ratio and limiter, so that the inner loops
/// have fixed trip counts and no limiter dispatch.
// Builds with debug assertions keep these calls: inlined unoptimised,
// every kernel's locals share one frame that outgrows a worker's stack.
#[cfg_attr(not(debug_assertions), inline(always))]
fn kernels<T: Real>(
    coarse: &CoarseScratch<T>,
    ratio: i32,
    limiter: Limiter,
    fine: &IndexBox,
    flags: Flags<'_>,
    dst: &mut FillTarget<'_, T>,
    work: &mut InterpWork<T>,
) -> Result<(), MeshError> {
    macro_rules! run {
        ($r:literal, $k:ident) => {
            match limiter {
                Limiter::PiecewiseConstant => {
                    $k::kernel::<T, $r, Zero>(coarse, fine, flags, dst, work)
                }
                Limiter::MinMod => $k::kernel::<T, $r, MinMod>(coarse, fine, flags, dst, work),
                Limiter::MonotonizedCentral => {
                    $k::kernel::<T, $r, Mc>(coarse, fine, flags, dst, work)
                }
            }
        };
    }
    // Boxes a few cells wide along x (the x faces of a ghost shell) have
    // rows too short for the row kernel's per-row work to pay off.
    match (ratio, is_thin(fine)) {
        (2, false) => run!(2, rows),
        (2, true) => run!(2, thin),
        (_, false) => run!(4, rows),
        (_, true) => run!(4, thin),
    }
}
