//! Fitting coefficient groups from samples, with a held-out error report.

use crate::calibrate::lsq::{ErrorStats, fit_nonneg, relative_errors};
use crate::calibrate::samples::{CloseSample, PrepareSample, SolveSample, check_sample};
use crate::coeffs::{
    CLOSE_NAMES, CloseCoeffs, PREPARE_NAMES, PrepareCoeffs, SOLVE_NAMES, SolveCoeffs,
};
use crate::error::{BatchError, Result};

/// How samples are split between fitting and validation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FitOptions {
    /// Every `holdout_every`-th sample (indices `k-1, 2k-1, …`) is held out of
    /// the fit and used only to measure its error; 0 holds none out.
    /// A deterministic stride keeps reports reproducible and, when samples are
    /// generated in order of size, spreads the held-out ones over all sizes.
    pub holdout_every: usize,
}

impl Default for FitOptions {
    /// One sample in four held out.
    fn default() -> Self {
        Self { holdout_every: 4 }
    }
}

/// Result of fitting one coefficient group.
#[derive(Clone, Debug, PartialEq)]
pub struct FitReport<C> {
    /// The fitted coefficients (non-negative).
    pub coefficients: C,
    /// Relative errors on the samples used in the fit.
    pub fit: ErrorStats,
    /// Relative errors on the held-out samples (zero samples if none held out).
    pub holdout: ErrorStats,
    /// Coefficients no sample exercised (their feature was always zero); set to 0.
    pub unidentified: Vec<&'static str>,
}

fn fit_group<const N: usize>(
    what: &'static str,
    names: [&'static str; N],
    samples: impl ExactSizeIterator<Item = ([f64; N], f64)>,
    opts: &FitOptions,
) -> Result<FitReport<[f64; N]>> {
    let mut fit_rows = Vec::with_capacity(samples.len());
    let mut fit_t = Vec::with_capacity(samples.len());
    let mut hold_rows = Vec::new();
    let mut hold_t = Vec::new();
    for (i, (f, t)) in samples.enumerate() {
        check_sample(what, i, &f, t)?;
        if opts.holdout_every > 0 && i % opts.holdout_every == opts.holdout_every - 1 {
            hold_rows.push(f);
            hold_t.push(t);
        } else {
            fit_rows.push(f);
            fit_t.push(t);
        }
    }
    if opts.holdout_every > 0 && hold_rows.is_empty() {
        return Err(BatchError::TooFewSamples {
            what,
            needed: opts.holdout_every,
            got: fit_rows.len(),
        });
    }
    let (coefficients, identified) = fit_nonneg(what, &fit_rows, &fit_t)?;
    let unidentified: Vec<&'static str> = names
        .iter()
        .zip(identified)
        .filter(|(_, id)| !id)
        .map(|(n, _)| *n)
        .collect();
    if !unidentified.is_empty() {
        log::warn!("{what} fit: no sample exercised {unidentified:?}; set to 0");
    }
    let report = FitReport {
        coefficients,
        fit: relative_errors(&coefficients, &fit_rows, &fit_t),
        holdout: relative_errors(&coefficients, &hold_rows, &hold_t),
        unidentified,
    };
    log::info!(
        "{what} fit on {} samples: rms {:.2}% max {:.2}%; held out {}: mean {:.2}% max {:.2}%",
        report.fit.samples,
        100.0 * report.fit.rms_rel,
        100.0 * report.fit.max_rel,
        report.holdout.samples,
        100.0 * report.holdout.mean_rel,
        100.0 * report.holdout.max_rel
    );
    Ok(report)
}

fn map_report<const N: usize, C>(
    r: FitReport<[f64; N]>,
    f: impl Fn([f64; N]) -> C,
) -> FitReport<C> {
    FitReport {
        coefficients: f(r.coefficients),
        fit: r.fit,
        holdout: r.holdout,
        unidentified: r.unidentified,
    }
}

/// Fits the solve coefficients (eqs. 1–2) from batch or bin samples.
///
/// # Errors
/// [`BatchError::InvalidTime`] for a non-positive or non-finite time or a bad
/// feature (naming the sample), [`BatchError::TooFewSamples`], [`BatchError::Fit`].
pub fn fit_solve(samples: &[SolveSample], opts: &FitOptions) -> Result<FitReport<SolveCoeffs>> {
    let it = samples.iter().map(|s| (s.features, s.seconds));
    fit_group("solve", SOLVE_NAMES, it, opts).map(|r| map_report(r, SolveCoeffs::from_array))
}

/// Fits the prepare coefficients (eq. 3).
///
/// # Errors
/// As [`fit_solve`].
pub fn fit_prepare(
    samples: &[PrepareSample],
    opts: &FitOptions,
) -> Result<FitReport<PrepareCoeffs>> {
    let it = samples.iter().map(|s| (s.features, s.seconds));
    fit_group("prepare", PREPARE_NAMES, it, opts).map(|r| map_report(r, PrepareCoeffs::from_array))
}

/// Fits the close coefficients.
///
/// # Errors
/// As [`fit_solve`].
pub fn fit_close(samples: &[CloseSample], opts: &FitOptions) -> Result<FitReport<CloseCoeffs>> {
    let it = samples.iter().map(|s| (s.features, s.seconds));
    fit_group("close", CLOSE_NAMES, it, opts).map(|r| map_report(r, CloseCoeffs::from_array))
}
