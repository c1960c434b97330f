//! Non-negative, relatively weighted linear least squares.
//!
//! Timings span orders of magnitude (a 16³ patch against a full 64³ bin), so
//! each equation is divided by its measured time: the fit minimises the sum of
//! squared *relative* errors, which is what the ≤ 5 % target is stated in.
//! Costs cannot be negative, so the fit is constrained to `x ≥ 0`.
//!
//! With at most six unknowns the non-negative problem is solved exactly by
//! enumerating supports: one Householder QR of the (column-scaled) weighted
//! system reduces it to a `k × k` triangle `R` and `Qᵀb`, then for every
//! subset `S` of columns the unconstrained solution on `S` (SVD, rank-revealing)
//! is kept if it is non-negative, and the smallest residual wins. The NNLS
//! optimum is the unconstrained optimum on its own support, so it is among the
//! candidates (see Lawson & Hanson, *Solving Least Squares Problems*, 1974,
//! ch. 23, for the active-set method this replaces at small sizes).

use nalgebra::{DMatrix, DVector};

use crate::error::{BatchError, Result};

/// Relative errors of a coefficient vector over a set of samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ErrorStats {
    /// Number of samples.
    pub samples: usize,
    /// Mean of `|predicted - measured| / measured`.
    pub mean_rel: f64,
    /// Root mean square of the relative errors.
    pub rms_rel: f64,
    /// Largest relative error.
    pub max_rel: f64,
}

/// Relative errors of `coeffs · row` against `targets` (all targets positive).
pub fn relative_errors<const N: usize>(
    coeffs: &[f64; N],
    rows: &[[f64; N]],
    targets: &[f64],
) -> ErrorStats {
    let mut s = ErrorStats {
        samples: rows.len(),
        ..ErrorStats::default()
    };
    if rows.is_empty() {
        return s;
    }
    let mut sum = 0.0;
    let mut sum2 = 0.0;
    for (row, &t) in rows.iter().zip(targets) {
        let e = (crate::model::dot(coeffs, row) - t).abs() / t;
        sum += e;
        sum2 += e * e;
        s.max_rel = s.max_rel.max(e);
    }
    let n = rows.len() as f64;
    s.mean_rel = sum / n;
    s.rms_rel = (sum2 / n).sqrt();
    s
}

/// Largest number of unknowns the support enumeration accepts (2^8 SVDs of
/// at most 8 × 8).
const MAX_UNKNOWNS: usize = 8;

/// Fits `x ≥ 0` minimising `Σ_i ((rows_i · x - t_i) / t_i)²`.
///
/// Returns the coefficients and, per column, whether any sample exercised it
/// (columns that are zero in every row are not identifiable and get 0).
/// Rows and targets must already be validated (finite, non-negative features,
/// positive targets).
pub(crate) fn fit_nonneg<const N: usize>(
    what: &'static str,
    rows: &[[f64; N]],
    targets: &[f64],
) -> Result<([f64; N], [bool; N])> {
    debug_assert_eq!(rows.len(), targets.len());
    debug_assert!(N <= MAX_UNKNOWNS);
    let m = rows.len();
    let mut scale = [0.0f64; N];
    for (row, &t) in rows.iter().zip(targets) {
        for (s, &v) in scale.iter_mut().zip(row) {
            *s = s.max(v / t);
        }
    }
    let active: Vec<usize> = (0..N).filter(|&j| scale[j] > 0.0).collect();
    let mut identified = [false; N];
    for &j in &active {
        identified[j] = true;
    }
    let k = active.len();
    if k == 0 {
        return Err(BatchError::Fit {
            what,
            reason: "every feature is zero in every sample".into(),
        });
    }
    if m < k {
        return Err(BatchError::TooFewSamples {
            what,
            needed: k,
            got: m,
        });
    }
    // Scaling each column to unit max keeps the SVD cutoff meaningful when
    // counts range from 1 (per-batch launch) to 10^6 (cells).
    let a = DMatrix::from_fn(m, k, |i, c| {
        let j = active[c];
        rows[i][j] / targets[i] / scale[j]
    });
    let mut qtb = DVector::from_element(m, 1.0);
    let qr = a.qr();
    qr.q_tr_mul(&mut qtb);
    let r = qr.r();
    let qtb = qtb.rows(0, k).into_owned();

    let mut best_resid = qtb.norm_squared();
    let mut best = vec![0.0; k];
    for mask in 1u32..(1u32 << k) {
        let cols: Vec<usize> = (0..k).filter(|&c| mask & (1 << c) != 0).collect();
        let rs = r.select_columns(cols.iter());
        let svd = rs.svd(true, true);
        let smax = svd.singular_values.max();
        if smax <= 0.0 {
            continue;
        }
        let eps = smax * 1e-10;
        let Ok(x) = svd.solve(&qtb, eps) else {
            continue;
        };
        if x.iter().any(|&v| v.is_nan() || v < 0.0) {
            continue;
        }
        let resid = (r.select_columns(cols.iter()) * &x - &qtb).norm_squared();
        if resid < best_resid {
            best_resid = resid;
            best.iter_mut().for_each(|v| *v = 0.0);
            for (&c, &v) in cols.iter().zip(x.iter()) {
                best[c] = v;
            }
        }
    }
    let mut out = [0.0; N];
    for (c, &j) in active.iter().enumerate() {
        out[j] = best[c] / scale[j];
    }
    if out.iter().any(|v| !v.is_finite()) {
        return Err(BatchError::Fit {
            what,
            reason: "solution is not finite".into(),
        });
    }
    Ok((out, identified))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_system_is_recovered() {
        let truth = [2.0e-9, 5.0e-8, 1.0e-6];
        let rows: Vec<[f64; 3]> = (0..20)
            .map(|i| {
                let i = i as f64;
                [1000.0 + 37.0 * i * i, 5000.0 - 11.0 * i, 1.0 + (i % 3.0)]
            })
            .collect();
        let t: Vec<f64> = rows.iter().map(|r| crate::model::dot(&truth, r)).collect();
        let (x, id) = fit_nonneg("test", &rows, &t).unwrap();
        assert_eq!(id, [true; 3]);
        for (a, b) in x.iter().zip(truth) {
            assert!((a - b).abs() <= 1e-9 * b, "{a} vs {b}");
        }
    }

    #[test]
    fn negative_unconstrained_solution_is_clipped_to_the_nnls_optimum() {
        // Targets fall with the second feature, so unconstrained LS wants a
        // negative second coefficient; NNLS must return 0 for it and refit the first.
        let rows = vec![[1.0, 1.0], [2.0, 3.0], [3.0, 6.0], [4.0, 8.0]];
        let t = vec![1.0, 1.8, 2.5, 3.4];
        let (x, _) = fit_nonneg("test", &rows, &t).unwrap();
        assert_eq!(x[1], 0.0);
        // With x1 = 0 the relative objective Σ (a x0 / t - 1)^2 has x0 = Σ(a/t) / Σ(a/t)^2.
        let u: Vec<f64> = rows.iter().zip(&t).map(|(r, t)| r[0] / t).collect();
        let x0 = u.iter().sum::<f64>() / u.iter().map(|v| v * v).sum::<f64>();
        assert!((x[0] - x0).abs() < 1e-12 * x0);
    }

    #[test]
    fn zero_column_is_reported_unidentified() {
        let rows = vec![[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]];
        let t = vec![2.0, 4.0, 6.0];
        let (x, id) = fit_nonneg("test", &rows, &t).unwrap();
        assert_eq!(id, [true, false]);
        assert!((x[0] - 2.0).abs() < 1e-12);
        assert_eq!(x[1], 0.0);
    }
}
