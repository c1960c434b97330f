//! Calibration of the cost model on the backend in use.
//!
//! The knapsack sizes each batch by the estimated solve of the batch in
//! flight, so its estimates must be those of this device and this host:
//! order-of-magnitude defaults are tens of times off (a CPU solve against
//! a GPU one, whole bins against occupied runs), and online refinement
//! only follows drift within a factor of four. The integrator therefore
//! records the timings of its first steps — every batch's solve, every CPU
//! queue's prepare and close, each with its work features — fits the three
//! coefficient groups by least squares (quilt-batch's [`fit_solve`],
//! [`fit_prepare`], [`fit_close`]) and then refines the fitted model
//! online. The first step also warms what later steps reuse (batch memory,
//! device arrays), so its samples are dropped; the fit comes after
//! [`CALIBRATION_STEPS`] steps, or later on a small hierarchy, once every
//! group has enough samples (at most [`MAX_CALIBRATION_STEPS`]).
//!
//! With `batching.coefficients_dir` set, the fitted coefficients are kept
//! in a versioned JSON file per backend and device
//! ([`coefficient_file_name`]) and a later run starts from them without
//! calibrating. A file whose provenance names another backend or device,
//! or that cannot be read or parsed, is reported (naming the file) and
//! replaced by a fresh calibration; it never stops the run.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use quilt_batch::{
    CloseSample, CoefficientFile, Coefficients, FitOptions, PrepareSample, Provenance, SolveSample,
    coefficient_file_name, fit_close, fit_prepare, fit_solve,
};

/// Steps whose timings calibrate the model; the first one's are dropped.
pub const CALIBRATION_STEPS: u64 = 2;

/// Most steps a calibration waits for every group to have
/// [`MIN_SAMPLES`] samples (a small hierarchy has few batches per step).
pub const MAX_CALIBRATION_STEPS: u64 = 10;

/// Fewest samples a group is fitted from; with fewer it keeps its base.
pub const MIN_SAMPLES: usize = 8;

/// Timing samples of one calibration step.
#[derive(Clone, Debug, Default)]
pub struct Calibrator {
    steps: u64,
    solve: Vec<SolveSample>,
    prepare: Vec<PrepareSample>,
    close: Vec<CloseSample>,
}

/// What a calibration fitted, with the held-out relative errors.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationReport {
    /// The coefficients now in use.
    pub coefficients: Coefficients,
    /// Samples per group: solve, prepare, close.
    pub samples: [usize; 3],
    /// Mean relative error of each group on held-out samples (`None` where
    /// the group kept its base coefficients).
    pub holdout: [Option<f64>; 3],
}

impl Calibrator {
    /// An empty recorder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Ends a step: whether the samples are to be fitted now — after
    /// [`CALIBRATION_STEPS`] steps once every group has [`MIN_SAMPLES`],
    /// and after [`MAX_CALIBRATION_STEPS`] in any case. The warm-up step's
    /// samples are dropped.
    pub fn end_step(&mut self) -> bool {
        self.steps += 1;
        if self.steps < CALIBRATION_STEPS {
            self.clear();
            return false;
        }
        self.len().iter().all(|&n| n >= MIN_SAMPLES) || self.steps >= MAX_CALIBRATION_STEPS
    }

    /// Forgets what was recorded.
    pub fn clear(&mut self) {
        self.solve.clear();
        self.prepare.clear();
        self.close.clear();
    }

    /// Records a batch's solve.
    pub fn solve(&mut self, s: SolveSample) {
        self.solve.push(s);
    }

    /// Records a queue's prepare.
    pub fn prepare(&mut self, s: PrepareSample) {
        self.prepare.push(s);
    }

    /// Records a queue's close.
    pub fn close(&mut self, s: CloseSample) {
        self.close.push(s);
    }

    /// Samples recorded: solve, prepare, close.
    pub fn len(&self) -> [usize; 3] {
        [self.solve.len(), self.prepare.len(), self.close.len()]
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == [0; 3]
    }

    /// Fits every group with at least [`MIN_SAMPLES`] samples; the others
    /// (and any whose fit fails) keep `base`.
    pub fn fit(&self, base: Coefficients) -> CalibrationReport {
        let opts = FitOptions::default();
        let mut c = base;
        let mut holdout = [None; 3];
        if self.solve.len() >= MIN_SAMPLES {
            match fit_solve(&self.solve, &opts) {
                Ok(r) => {
                    c.solve = keep_unidentified(r.coefficients, base.solve, &r.unidentified);
                    holdout[0] = Some(r.holdout.mean_rel);
                }
                Err(e) => log::info!("calibration: solve coefficients not fitted: {e}"),
            }
        }
        if self.prepare.len() >= MIN_SAMPLES {
            match fit_prepare(&self.prepare, &opts) {
                Ok(r) => {
                    c.prepare = r.coefficients;
                    holdout[1] = Some(r.holdout.mean_rel);
                }
                Err(e) => log::info!("calibration: prepare coefficients not fitted: {e}"),
            }
        }
        if self.close.len() >= MIN_SAMPLES {
            match fit_close(&self.close, &opts) {
                Ok(r) => {
                    c.close = r.coefficients;
                    holdout[2] = Some(r.holdout.mean_rel);
                }
                Err(e) => log::info!("calibration: close coefficients not fitted: {e}"),
            }
        }
        CalibrationReport {
            coefficients: c,
            samples: self.len(),
            holdout,
        }
    }
}

/// A fitted solve group whose unexercised terms (the transfer term on the
/// CPU, say) are zero keeps them at zero: online refinement cannot revive a
/// zero coefficient, and a batch selection on another hierarchy may need
/// them. Base values stand in for terms no sample saw.
fn keep_unidentified(
    fitted: quilt_batch::SolveCoeffs,
    base: quilt_batch::SolveCoeffs,
    unidentified: &[&'static str],
) -> quilt_batch::SolveCoeffs {
    let mut f = fitted.to_array();
    let b = base.to_array();
    for (i, name) in quilt_batch::SOLVE_NAMES.iter().enumerate() {
        if unidentified.contains(name) {
            f[i] = b[i];
        }
    }
    quilt_batch::SolveCoeffs::from_array(f)
}

/// Where the coefficients of `backend` on `device` are kept under `dir`.
pub fn coefficient_path(dir: &Path, backend: &str, device: &str) -> PathBuf {
    dir.join(coefficient_file_name(backend, device))
}

/// The coefficients stored at `path` for `backend` on `device`, or why a
/// calibration must run instead: no file (`Ok(None)`), or a file that
/// cannot be used (`Err`, a message naming the file and what is wrong).
pub fn load_coefficients(
    path: &Path,
    backend: &str,
    device: &str,
) -> Result<Option<Coefficients>, String> {
    let file = match CoefficientFile::load(path) {
        Ok(Some(f)) => f,
        Ok(None) => return Ok(None),
        Err(e) => return Err(format!("{e}")),
    };
    let p = &file.provenance;
    if p.backend != backend || p.device != device {
        return Err(format!(
            "{}: coefficients of the {} backend on '{}', not of the {backend} backend on '{device}'",
            path.display(),
            p.backend,
            p.device
        ));
    }
    Ok(Some(file.coefficients))
}

/// Writes `coefficients` to `path` (atomically) with their provenance.
pub fn save_coefficients(
    path: &Path,
    backend: &str,
    device: &str,
    samples: u64,
    coefficients: Coefficients,
) -> Result<(), String> {
    let file = CoefficientFile::new(
        Provenance {
            backend: backend.to_string(),
            device: device.to_string(),
            date: today(),
            samples,
        },
        coefficients,
    );
    file.save(path).map_err(|e| e.to_string())
}

/// Today's date (UTC) as `YYYY-MM-DD`.
fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    // Days since 1970-01-01 to a civil date (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_batch::{BinWork, CostModel, PatchWork};

    /// Patches of assorted shapes, ghost fills and flux faces.
    fn patches(n: usize) -> Vec<PatchWork> {
        (0..n)
            .map(|i| {
                let i = i as u32;
                let e = [14 + (i * 7) % 40, 14 + (i * 11) % 40, 14 + (i * 5) % 40];
                let v: u64 = e.iter().map(|&x| u64::from(x)).product();
                let inner: u64 = e.iter().map(|&x| u64::from(x - 6)).product();
                let ghosts = v - inner;
                PatchWork::new(e, 3)
                    .with_ghost_fill(ghosts / (2 + u64::from(i % 4)), ghosts / 3)
                    .with_flux_faces(u64::from(i % 3) * 60)
            })
            .collect()
    }

    /// Timings from known coefficients, with ±1 % deterministic noise: the
    /// fit recovers them to within the noise.
    #[test]
    fn synthetic_timings_calibrate_every_group() {
        let truth = Coefficients::gpu_default();
        let model = CostModel::new(truth).unwrap();
        let ps = patches(96);
        let mut cal = Calibrator::new();
        let noise = |k: usize| 1.0 + 0.01 * ((k * 7919 % 21) as f64 / 10.0 - 1.0);
        for (k, chunk) in ps.chunks(4).enumerate() {
            let bins: Vec<BinWork> = chunk
                .chunks(2)
                .map(|c| BinWork::new(c.to_vec(), 40).unwrap())
                .collect();
            let secs = model.batch_solve(bins.iter()) * noise(k);
            cal.solve(SolveSample::batch(bins.iter(), secs));
            let prep: f64 = chunk.iter().map(|p| model.patch_prepare(p)).sum();
            cal.prepare(PrepareSample::patches(chunk.iter(), prep * noise(k + 3)));
            let close: f64 = chunk.iter().map(|p| model.patch_close(p)).sum();
            cal.close(CloseSample::patches(chunk.iter(), close * noise(k + 5)));
        }
        assert_eq!(cal.len(), [24; 3]);
        // Start far from the truth: the CPU defaults.
        let r = cal.fit(Coefficients::cpu_default());
        for h in r.holdout {
            let h = h.expect("every group fitted");
            assert!(h < 0.02, "held-out error {h}");
        }
        let fitted = CostModel::new(r.coefficients).unwrap();
        for (k, chunk) in ps.chunks(4).enumerate().step_by(5) {
            let bins: Vec<BinWork> = chunk
                .chunks(2)
                .map(|c| BinWork::new(c.to_vec(), 40).unwrap())
                .collect();
            let (a, b) = (
                model.batch_solve(bins.iter()),
                fitted.batch_solve(bins.iter()),
            );
            assert!((a - b).abs() / a < 0.03, "batch {k}: {a} vs {b}");
        }
    }

    #[test]
    fn too_few_samples_keep_the_base() {
        let mut cal = Calibrator::new();
        let ps = patches(3);
        cal.prepare(PrepareSample::patches(ps.iter(), 1e-3));
        let base = Coefficients::cpu_default();
        let r = cal.fit(base);
        assert_eq!(r.coefficients, base);
        assert_eq!(r.holdout, [None; 3]);
        cal.clear();
        assert!(cal.is_empty());
        cal.prepare(PrepareSample::patches(ps.iter(), 1e-3));
        assert!(!cal.end_step(), "the first step warms up");
        assert!(cal.is_empty());
        assert!(!cal.end_step(), "too few samples: wait");
        for _ in 3..MAX_CALIBRATION_STEPS {
            assert!(!cal.end_step());
        }
        assert!(cal.end_step(), "fit with what there is after the last step");
    }

    #[test]
    fn stored_coefficients_round_trip_and_foreign_or_bad_files_are_named() {
        let dir = std::env::temp_dir().join(format!("quilt-calibration-{}", std::process::id()));
        let path = coefficient_path(&dir, "cuda", "NVIDIA H100 80GB HBM3");
        assert!(path.ends_with("cuda-NVIDIA_H100_80GB_HBM3.json"));
        assert_eq!(load_coefficients(&path, "cuda", "x"), Ok(None));
        let c = Coefficients::gpu_default();
        save_coefficients(&path, "cuda", "NVIDIA H100 80GB HBM3", 40, c).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let version = format!("\"format_version\": {}", quilt_batch::FORMAT_VERSION);
        assert!(text.contains(&version), "{text}");
        assert_eq!(
            load_coefficients(&path, "cuda", "NVIDIA H100 80GB HBM3"),
            Ok(Some(c))
        );
        // Another device's file.
        let e = load_coefficients(&path, "cuda", "NVIDIA H200").unwrap_err();
        assert!(
            e.contains(&path.display().to_string()) && e.contains("NVIDIA H200"),
            "{e}"
        );
        // A malformed one.
        std::fs::write(&path, "{ \"format_version\": 1, ").unwrap();
        let e = load_coefficients(&path, "cuda", "NVIDIA H100 80GB HBM3").unwrap_err();
        assert!(e.contains(&path.display().to_string()), "{e}");
        // Another format version.
        let future = text.replace(&version, "\"format_version\": 9");
        std::fs::write(&path, future).unwrap();
        let e = load_coefficients(&path, "cuda", "NVIDIA H100 80GB HBM3").unwrap_err();
        assert!(e.contains(&path.display().to_string()), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn dates_are_civil() {
        let d = today();
        assert_eq!(d.len(), 10);
        assert!(d.starts_with("20"), "{d}");
    }
}
