//! The cost model: estimated solve, prepare and close times (paper eqs. 1–3).
//!
//! Each estimate is a dot product of a coefficient vector with a feature
//! vector of work counts. The feature functions here are the single
//! definition shared by estimation, calibration ([`mod@crate::calibrate`]) and
//! online refinement ([`crate::refine`]).

use crate::coeffs::Coefficients;
use crate::error::Result;
use crate::work::{BinWork, PatchWork, Preparation};

/// Solve features: `[Nx, Ny, Nz, cells, transfer bytes, batches, bins]`.
pub type SolveFeatures = [f64; 7];
/// Prepare features: `[ghost interpolated, copied cells (ghost + interior), patches]`.
pub type PrepareFeatures = [f64; 3];
/// Close features: `[interior cells, flux-register faces, patches]`.
pub type CloseFeatures = [f64; 3];

/// Solve features of one bin's execution (eq. 1 and the bin's fixed
/// cost): no transfer, no launch.
pub fn bin_exec_features(bin: &BinWork) -> SolveFeatures {
    let t = bin.totals();
    [
        t.columns[0] as f64,
        t.columns[1] as f64,
        t.columns[2] as f64,
        t.cells as f64,
        0.0,
        0.0,
        1.0,
    ]
}

/// Solve features of a batch (eq. 2): the bins' execution features summed,
/// plus the bytes of the first and last bin (only those transfers are not
/// hidden behind execution) and one launch. An empty batch has no features.
pub fn batch_solve_features<'a, I>(bins: I) -> SolveFeatures
where
    I: IntoIterator<Item = &'a BinWork>,
{
    let mut f = [0.0; 7];
    let mut first = None;
    let mut last = None;
    for bin in bins {
        let e = bin_exec_features(bin);
        for (acc, v) in f.iter_mut().zip(e) {
            *acc += v;
        }
        first.get_or_insert(bin.bytes());
        last = Some(bin.bytes());
    }
    if let (Some(a), Some(b)) = (first, last) {
        f[4] = a as f64 + b as f64;
        f[5] = 1.0;
    }
    f
}

/// Prepare features of one patch (eq. 3 plus the per-patch overhead): the
/// cells it interpolates and copies on the host
/// ([`PatchWork::copied_cells`]), none for one the device prepares.
pub fn patch_prepare_features(p: &PatchWork) -> PrepareFeatures {
    if p.preparation == Preparation::OnDevice {
        return [0.0; 3];
    }
    [p.ghost_interpolated as f64, p.copied_cells() as f64, 1.0]
}

/// Close features of one patch.
pub fn patch_close_features(p: &PatchWork) -> CloseFeatures {
    [p.interior_cells() as f64, p.flux_faces as f64, 1.0]
}

/// Expected time of the slowest of several queues that run at once, each
/// estimated at `loads[q]` seconds and taking `loads[q] * e^ε` with ε
/// independent and normal of standard deviation `spread` and mean
/// `-spread² / 2` (so each queue's mean is its estimate).
///
/// The plain maximum of the estimates is the slowest queue's time only
/// without noise: the largest of several noisy times exceeds the largest
/// of their means, the more so the more queues are close to the largest.
/// Computed as `E[max] = ∫ (1 − Π_q Φ_q(t)) dt` by Simpson's rule in
/// `ln t` over the maximum's range (from 5 standard deviations below the
/// largest estimate to 6 above), so it costs 33 evaluations of `erfc` per
/// queue near the top and is deterministic. 0 for no positive load; the
/// plain maximum for `spread` 0.
pub fn expected_slowest(loads: &[f64], spread: f64) -> f64 {
    let max = loads.iter().copied().fold(0.0, f64::max);
    if !(spread > 0.0 && spread.is_finite() && max > 0.0) {
        return max;
    }
    const INTERVALS: usize = 32;
    let mu = -0.5 * spread * spread;
    let (u_lo, u_hi) = (mu - 5.0 * spread, mu + 6.0 * spread);
    let lo = max * u_lo.exp();
    // A queue whose time exceeds `lo` with probability below Φ(-6) changes
    // nothing the rule resolves.
    let matters = lo * (-mu - 6.0 * spread).exp();
    // (1 − F(t)) dt/du at t = max e^u.
    let tail = |u: f64| {
        let t = max * u.exp();
        let lt = t.ln();
        let below: f64 = loads
            .iter()
            .filter(|&&l| l > matters)
            .map(|&l| {
                let z = (lt - l.ln() - mu) / spread;
                0.5 * libm::erfc(-z * std::f64::consts::FRAC_1_SQRT_2)
            })
            .product();
        (1.0 - below) * t
    };
    let h = (u_hi - u_lo) / INTERVALS as f64;
    let mut sum = tail(u_lo) + tail(u_hi);
    for i in 1..INTERVALS {
        let w = if i % 2 == 1 { 4.0 } else { 2.0 };
        sum += w * tail(u_lo + i as f64 * h);
    }
    lo + sum * h / 3.0
}

/// Dot product of coefficients and features (kept in one place so every
/// estimate rounds the same way).
#[inline]
pub fn dot<const N: usize>(c: &[f64; N], f: &[f64; N]) -> f64 {
    c.iter().zip(f).map(|(a, b)| a * b).sum()
}

/// A validated coefficient set with the estimates of paper section 3.2.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CostModel {
    coefficients: Coefficients,
    solve: [f64; 7],
    prepare: [f64; 3],
    close: [f64; 3],
    queue_spread: f64,
}

impl CostModel {
    /// Wraps a coefficient set after validating it.
    ///
    /// # Errors
    /// [`crate::BatchError::InvalidCoefficient`] for a negative, NaN or infinite coefficient.
    pub fn new(coefficients: Coefficients) -> Result<Self> {
        coefficients.validate()?;
        Ok(Self {
            coefficients,
            solve: coefficients.solve.to_array(),
            prepare: coefficients.prepare.to_array(),
            close: coefficients.close.to_array(),
            queue_spread: 0.0,
        })
    }

    /// The model with `spread` as the standard deviation of the logarithm of
    /// a queue's measured over estimated prepare time, within a batch (see
    /// [`expected_slowest`]); clamped to `[0, 1]`, 0 for NaN.
    pub fn with_queue_spread(mut self, spread: f64) -> Self {
        self.queue_spread = if spread.is_nan() {
            0.0
        } else {
            spread.clamp(0.0, 1.0)
        };
        self
    }

    /// The spread of queue times given by [`CostModel::with_queue_spread`]
    /// (0 at first).
    pub fn queue_spread(&self) -> f64 {
        self.queue_spread
    }

    /// Expected prepare time of a batch whose queues are estimated at
    /// `loads` seconds: the slowest queue's, with this model's spread
    /// ([`expected_slowest`]).
    pub fn slowest_queue(&self, loads: &[f64]) -> f64 {
        expected_slowest(loads, self.queue_spread)
    }

    /// The coefficients.
    pub fn coefficients(&self) -> &Coefficients {
        &self.coefficients
    }

    /// Execution time of one bin on the solver (eq. 1).
    pub fn bin_exec(&self, bin: &BinWork) -> f64 {
        dot(&self.solve, &bin_exec_features(bin))
    }

    /// Solve time of a batch, bins in transfer order (eq. 2); zero for no bins.
    pub fn batch_solve<'a, I>(&self, bins: I) -> f64
    where
        I: IntoIterator<Item = &'a BinWork>,
    {
        dot(&self.solve, &batch_solve_features(bins))
    }

    /// Prepare time of one patch on one CPU thread (eq. 3).
    pub fn patch_prepare(&self, patch: &PatchWork) -> f64 {
        dot(&self.prepare, &patch_prepare_features(patch))
    }

    /// Prepare time of a bin: the sum over its patches (one thread).
    pub fn bin_prepare(&self, bin: &BinWork) -> f64 {
        bin.patches().iter().map(|p| self.patch_prepare(p)).sum()
    }

    /// Close time of one patch on one CPU thread.
    pub fn patch_close(&self, patch: &PatchWork) -> f64 {
        dot(&self.close, &patch_close_features(patch))
    }

    /// Close time of a bin: the sum over its patches (one thread).
    pub fn bin_close(&self, bin: &BinWork) -> f64 {
        bin.patches().iter().map(|p| self.patch_close(p)).sum()
    }

    /// Estimate from raw solve features (for samples and observations).
    pub fn solve_from_features(&self, f: &SolveFeatures) -> f64 {
        dot(&self.solve, f)
    }

    /// Estimate from raw prepare features.
    pub fn prepare_from_features(&self, f: &PrepareFeatures) -> f64 {
        dot(&self.prepare, f)
    }

    /// Estimate from raw close features.
    pub fn close_from_features(&self, f: &CloseFeatures) -> f64 {
        dot(&self.close, f)
    }
}

impl Default for CostModel {
    /// The model of [`Coefficients::cpu_default`].
    fn default() -> Self {
        Self::new(Coefficients::default()).expect("default coefficients are valid")
    }
}
