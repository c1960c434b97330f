//! Gradient and shock detectors modelled on SAMRAI's Euler example.
//!
//! Both detectors look at the 26 neighbours of a cell, as 13 directions
//! `e` taken with both signs: the 3 axes, the 6 face diagonals and the 4
//! body diagonals. For direction `e` the step length is
//! `h_e = |(e_x dx, e_y dy, e_z dz)|` and, with `v(k)` the value `k` steps
//! along `e` from the cell,
//!
//! * face jump `F_e = max(|v(0) - v(-1)|, |v(1) - v(0)|)`,
//! * one-cell jump `J1_e = v(1) - v(-1)`, two-cell jump `J2_e = v(2) - v(-2)`.
//!
//! **Gradient detector** (SAMRAI `detectgrad3d`, Euler example
//! `tagGradientDetectorCells` with `PRESSURE_GRADIENT` / `DENSITY_GRADIENT`):
//! tag when `F_e > tol * h_e` for some `e`, i.e. when the one-sided
//! difference quotient along some axis or diagonal exceeds `tol`.
//!
//! **Shock detector** (SAMRAI `detectshock3d`, `PRESSURE_SHOCK` /
//! `DENSITY_SHOCK`): tag when for some `e`
//! `F_e > tol * h_e  and  (|J1_e| >= onset * |J2_e|  or  J1_e * J2_e < 0)`.
//! The second condition asks the jump to dominate the wider stencil: across
//! a discontinuity resolved in one cell `J1 = J2` (ratio 1), across a smooth
//! ramp `J1 = J2 / 2` (ratio 1/2), so an `onset` between 1/2 and 1 separates
//! shocks from smooth gradients of the same size; opposite signs (an
//! extremum inside the stencil) also count as a shock, as in SAMRAI.
//!
//! Cells already tagged at the previous regrid
//! ([`TagInput::with_previous`]) are tested with `tol` scaled by
//! `retag_tol_factor` (SAMRAI: 0.125) and `onset` scaled by
//! `retag_onset_factor` (SAMRAI: 0.66), which keeps refinement stable.
//!
//! SAMRAI: Hornung & Kohn (2002), "Managing application complexity in the
//! SAMRAI object-oriented framework", Concurrency Computat.: Pract. Exper.
//! 14, 347–368; the detectors are in its `Euler` example application.

use num_traits::Float;

use super::criterion::{TagCriterion, TagInput, to_field};
use super::error::TagError;
use super::tag_box::TagBox;
use crate::index::iv;

/// The 13 neighbour directions up to sign: axes, face diagonals, body diagonals.
pub const DIRECTIONS: [[i32; 3]; 13] = [
    [1, 0, 0],
    [0, 1, 0],
    [0, 0, 1],
    [0, 1, 1],
    [0, 1, -1],
    [1, 0, 1],
    [1, 0, -1],
    [1, 1, 0],
    [1, -1, 0],
    [1, 1, 1],
    [1, 1, -1],
    [1, -1, 1],
    [1, -1, -1],
];

/// SAMRAI's tolerance factor for previously tagged cells.
pub const DEFAULT_RETAG_TOL_FACTOR: f64 = 0.125;
/// SAMRAI's onset factor for previously tagged cells.
pub const DEFAULT_RETAG_ONSET_FACTOR: f64 = 0.66;
/// Default shock onset: between the smooth-ramp ratio 1/2 and the
/// discontinuity ratio 1.
pub const DEFAULT_SHOCK_ONSET: f64 = 0.85;

fn check_param(
    criterion: &'static str,
    parameter: &'static str,
    value: f64,
    max: f64,
    why: &'static str,
) -> Result<f64, TagError> {
    if value.is_finite() && (0.0..=max).contains(&value) {
        Ok(value)
    } else {
        Err(TagError::BadParameter {
            criterion,
            parameter,
            value,
            why,
        })
    }
}

/// Tags cells whose jump to a face, edge or corner neighbour exceeds
/// `tol` times the distance to it. Use it on density for a density-gradient
/// criterion and on pressure (see [`super::euler_pressure`]) for a
/// pressure-gradient criterion. See the module docs for the exact test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GradientDetector {
    tol: f64,
    retag_tol_factor: f64,
}

impl GradientDetector {
    /// A detector with gradient tolerance `tol` (field units per unit length, `>= 0`).
    pub fn new(tol: f64) -> Result<Self, TagError> {
        Ok(Self {
            tol: check_param(
                "gradient detector",
                "tol",
                tol,
                f64::MAX,
                "must be finite and >= 0",
            )?,
            retag_tol_factor: DEFAULT_RETAG_TOL_FACTOR,
        })
    }

    /// Sets the tolerance factor for previously tagged cells (in `[0, 1]`).
    pub fn with_retag_tol_factor(mut self, factor: f64) -> Result<Self, TagError> {
        self.retag_tol_factor = check_param(
            "gradient detector",
            "retag_tol_factor",
            factor,
            1.0,
            "must lie in [0, 1]",
        )?;
        Ok(self)
    }

    /// The gradient tolerance.
    pub fn tol(&self) -> f64 {
        self.tol
    }
}

/// Tags cells where a face jump exceeds `tol * h` and dominates the wider
/// stencil (`|J1| >= onset * |J2|` or `J1 * J2 < 0`). See the module docs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ShockDetector {
    tol: f64,
    onset: f64,
    retag_tol_factor: f64,
    retag_onset_factor: f64,
}

impl ShockDetector {
    /// A detector with jump tolerance `tol` (`>= 0`) and onset ratio
    /// `onset` (in `[0, 1]`; [`DEFAULT_SHOCK_ONSET`] is a good start).
    pub fn new(tol: f64, onset: f64) -> Result<Self, TagError> {
        Ok(Self {
            tol: check_param(
                "shock detector",
                "tol",
                tol,
                f64::MAX,
                "must be finite and >= 0",
            )?,
            onset: check_param("shock detector", "onset", onset, 1.0, "must lie in [0, 1]")?,
            retag_tol_factor: DEFAULT_RETAG_TOL_FACTOR,
            retag_onset_factor: DEFAULT_RETAG_ONSET_FACTOR,
        })
    }

    /// Sets the factors applied to `tol` and `onset` for previously tagged
    /// cells (both in `[0, 1]`).
    pub fn with_retag_factors(
        mut self,
        tol_factor: f64,
        onset_factor: f64,
    ) -> Result<Self, TagError> {
        self.retag_tol_factor = check_param(
            "shock detector",
            "retag_tol_factor",
            tol_factor,
            1.0,
            "must lie in [0, 1]",
        )?;
        self.retag_onset_factor = check_param(
            "shock detector",
            "retag_onset_factor",
            onset_factor,
            1.0,
            "must lie in [0, 1]",
        )?;
        Ok(self)
    }

    /// The jump tolerance.
    pub fn tol(&self) -> f64 {
        self.tol
    }

    /// The onset ratio.
    pub fn onset(&self) -> f64 {
        self.onset
    }
}

/// The step length `h_e` of each of the [`DIRECTIONS`] for cells of size
/// `dx`: a detector's threshold along `e` is `tol · h_e`.
pub fn direction_lengths(dx: [f64; 3]) -> [f64; 13] {
    DIRECTIONS.map(|e| {
        (0..3)
            .map(|d| (e[d] as f64 * dx[d]).powi(2))
            .sum::<f64>()
            .sqrt()
    })
}

/// Linear offsets and thresholds of the 13 directions for one data box.
struct Stencil<T> {
    off: [isize; 13],
    /// `tol * h_e` for fresh and previously tagged cells.
    thr: [[T; 13]; 2],
}

impl<T: Float> Stencil<T> {
    fn new<U: Copy>(input: &TagInput<'_, U>, tol: f64, retag: f64) -> Self {
        let s = input.data_box().size();
        let (sy, sz) = (s.x as isize, s.x as isize * s.y as isize);
        let dx = input.dx();
        let mut off = [0isize; 13];
        let mut thr = [[T::zero(); 13]; 2];
        let lengths = direction_lengths(dx);
        for (k, e) in DIRECTIONS.iter().enumerate() {
            off[k] = e[0] as isize + e[1] as isize * sy + e[2] as isize * sz;
            let h = lengths[k];
            thr[0][k] = to_field(tol * h);
            thr[1][k] = to_field(tol * retag * h);
        }
        Self { off, thr }
    }
}

/// Runs `test(i, k, relaxed)` for every interior cell (linear index `i` in
/// the data) over directions `k` until one says tag.
fn scan<T: Copy>(
    input: &TagInput<'_, T>,
    tags: &mut TagBox,
    test: impl Fn(usize, usize, usize) -> bool,
) {
    let interior = input.interior();
    let data = input.data_box();
    for z in interior.lo.z..=interior.hi.z {
        for y in interior.lo.y..=interior.hi.y {
            let row0 = data.offset(&iv(interior.lo.x, y, z));
            for x in interior.lo.x..=interior.hi.x {
                let p = iv(x, y, z);
                let i = row0 + (x - interior.lo.x) as usize;
                let relaxed = usize::from(input.was_tagged(&p));
                if (0..DIRECTIONS.len()).any(|k| test(i, k, relaxed)) {
                    tags.set_unchecked(&p);
                }
            }
        }
    }
}

/// `max(|v(0) - v(-1)|, |v(1) - v(0)|)` along offset `o`.
#[inline(always)]
fn face_jump<T: Float>(v: &[T], i: usize, o: isize) -> T {
    let c = v[i];
    let m = v[i.wrapping_add_signed(-o)];
    let p = v[i.wrapping_add_signed(o)];
    (c - m).abs().max((p - c).abs())
}

impl<T: Float> TagCriterion<T> for GradientDetector {
    fn tag(&self, input: &TagInput<'_, T>, tags: &mut TagBox) -> Result<(), TagError> {
        input.check("gradient detector", 1, tags)?;
        let st = Stencil::<T>::new(input, self.tol, self.retag_tol_factor);
        let v = input.values();
        scan(input, tags, |i, k, r| {
            face_jump(v, i, st.off[k]) > st.thr[r][k]
        });
        Ok(())
    }
}

impl<T: Float> TagCriterion<T> for ShockDetector {
    fn tag(&self, input: &TagInput<'_, T>, tags: &mut TagBox) -> Result<(), TagError> {
        input.check("shock detector", 2, tags)?;
        let st = Stencil::<T>::new(input, self.tol, self.retag_tol_factor);
        let onset: [T; 2] = [
            to_field(self.onset),
            to_field(self.onset * self.retag_onset_factor),
        ];
        let v = input.values();
        scan(input, tags, |i, k, r| {
            let o = st.off[k];
            if face_jump(v, i, o) <= st.thr[r][k] {
                return false;
            }
            let j1 = v[i.wrapping_add_signed(o)] - v[i.wrapping_add_signed(-o)];
            let j2 = v[i.wrapping_add_signed(2 * o)] - v[i.wrapping_add_signed(-2 * o)];
            j1.abs() >= onset[r] * j2.abs() || j1 * j2 < T::zero()
        });
        Ok(())
    }
}
