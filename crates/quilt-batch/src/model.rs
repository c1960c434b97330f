//! The cost model: estimated solve, prepare and close times (paper eqs. 1–3).
//!
//! Each estimate is a dot product of a coefficient vector with a feature
//! vector of work counts. The feature functions here are the single
//! definition shared by estimation, calibration ([`mod@crate::calibrate`]) and
//! online refinement ([`crate::refine`]).

use crate::coeffs::Coefficients;
use crate::error::Result;
use crate::work::{BinWork, PatchWork, Preparation};

/// Solve features: `[Nx, Ny, Nz, cells, transfer bytes, batches]`.
pub type SolveFeatures = [f64; 6];
/// Prepare features: `[ghost interpolated, copied cells (ghost + interior), patches]`.
pub type PrepareFeatures = [f64; 3];
/// Close features: `[interior cells, flux-register faces, patches]`.
pub type CloseFeatures = [f64; 3];

/// Solve features of one bin's execution (eq. 1): no transfer, no launch.
pub fn bin_exec_features(bin: &BinWork) -> SolveFeatures {
    let t = bin.totals();
    [
        t.columns[0] as f64,
        t.columns[1] as f64,
        t.columns[2] as f64,
        t.cells as f64,
        0.0,
        0.0,
    ]
}

/// Solve features of a batch (eq. 2): the bins' execution features summed,
/// plus the bytes of the first and last bin (only those transfers are not
/// hidden behind execution) and one launch. An empty batch has no features.
pub fn batch_solve_features<'a, I>(bins: I) -> SolveFeatures
where
    I: IntoIterator<Item = &'a BinWork>,
{
    let mut f = [0.0; 6];
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
    solve: [f64; 6],
    prepare: [f64; 3],
    close: [f64; 3],
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
        })
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
