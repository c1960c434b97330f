//! Timing samples: a feature vector and the measured seconds.

use crate::error::{BatchError, Result};
use crate::model::{
    CloseFeatures, PrepareFeatures, SolveFeatures, batch_solve_features, bin_exec_features,
    patch_close_features, patch_prepare_features,
};
use crate::work::{BinWork, PatchWork};

/// One measured solve: a batch (eq. 2) or a single bin's execution (eq. 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolveSample {
    /// `[Nx, Ny, Nz, cells, transfer bytes, batches, bins]`, see [`crate::model::SolveFeatures`].
    pub features: SolveFeatures,
    /// Measured seconds.
    pub seconds: f64,
}

/// One measured prepare of one patch or of several (e.g. one queue's patches).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PrepareSample {
    /// `[ghost interpolated, copied cells, patches]`.
    pub features: PrepareFeatures,
    /// Measured seconds.
    pub seconds: f64,
}

/// One measured close of one patch or of several.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CloseSample {
    /// `[interior cells, flux-register faces, patches]`.
    pub features: CloseFeatures,
    /// Measured seconds.
    pub seconds: f64,
}

fn sum_features<const N: usize>(items: impl IntoIterator<Item = [f64; N]>) -> [f64; N] {
    let mut f = [0.0; N];
    for item in items {
        for (acc, v) in f.iter_mut().zip(item) {
            *acc += v;
        }
    }
    f
}

impl SolveSample {
    /// A whole batch, bins in transfer order.
    pub fn batch<'a>(bins: impl IntoIterator<Item = &'a BinWork>, seconds: f64) -> Self {
        Self {
            features: batch_solve_features(bins),
            seconds,
        }
    }

    /// A batch on a backend without host-device transfers (the CPU): the
    /// transfer feature is zeroed so `t_trans` is neither fitted nor refined.
    pub fn batch_without_transfer<'a>(
        bins: impl IntoIterator<Item = &'a BinWork>,
        seconds: f64,
    ) -> Self {
        let mut s = Self::batch(bins, seconds);
        s.features[4] = 0.0;
        s
    }

    /// One bin's execution alone (no transfer, no launch).
    pub fn bin_exec(bin: &BinWork, seconds: f64) -> Self {
        Self {
            features: bin_exec_features(bin),
            seconds,
        }
    }
}

impl PrepareSample {
    /// One patch.
    pub fn patch(patch: &PatchWork, seconds: f64) -> Self {
        Self::patches(std::iter::once(patch), seconds)
    }

    /// Several patches prepared one after the other (one CPU queue).
    pub fn patches<'a>(patches: impl IntoIterator<Item = &'a PatchWork>, seconds: f64) -> Self {
        Self {
            features: sum_features(patches.into_iter().map(patch_prepare_features)),
            seconds,
        }
    }
}

impl CloseSample {
    /// One patch.
    pub fn patch(patch: &PatchWork, seconds: f64) -> Self {
        Self::patches(std::iter::once(patch), seconds)
    }

    /// Several patches closed one after the other (one CPU queue).
    pub fn patches<'a>(patches: impl IntoIterator<Item = &'a PatchWork>, seconds: f64) -> Self {
        Self {
            features: sum_features(patches.into_iter().map(patch_close_features)),
            seconds,
        }
    }
}

/// Checks a measured time: finite and strictly positive (a zero time would
/// have infinite weight in the relative fit).
pub(crate) fn check_time(what: impl FnOnce() -> String, seconds: f64) -> Result<()> {
    if seconds.is_finite() && seconds > 0.0 {
        Ok(())
    } else {
        Err(BatchError::InvalidTime {
            what: what(),
            value: seconds,
        })
    }
}

/// Checks a sample's features (finite, non-negative) and time.
pub(crate) fn check_sample<const N: usize>(
    kind: &str,
    index: usize,
    features: &[f64; N],
    seconds: f64,
) -> Result<()> {
    if let Some(&v) = features.iter().find(|v| !(v.is_finite() && **v >= 0.0)) {
        return Err(BatchError::InvalidTime {
            what: format!("{kind} sample {index} feature"),
            value: v,
        });
    }
    check_time(|| format!("{kind} sample {index} time"), seconds)
}
