//! The calibration routine: time a plan of sample workloads through a
//! caller-supplied [`Timer`], then fit every coefficient group.
//!
//! quilt-batch never runs a solver itself; the integrator (prepare, close,
//! CPU solve) and the GPU backend (solve) implement [`Timer`] and call
//! [`calibrate`], so each backend calibrates on its own hardware.

use crate::calibrate::fit::{FitOptions, FitReport, fit_close, fit_prepare, fit_solve};
use crate::calibrate::samples::{CloseSample, PrepareSample, SolveSample, check_time};
use crate::coeffs::{CloseCoeffs, Coefficients, PrepareCoeffs, SolveCoeffs};
use crate::error::{BatchError, CallbackError, Result};
use crate::work::{BinWork, PatchWork};

/// Times sample workloads for calibration. Every method returns seconds of
/// wall time for one run of the given work.
///
/// Only the methods the plan needs are called: a GPU backend that leaves
/// `prepare_patches` and `close_patches` empty implements just `time_solve`.
pub trait Timer {
    /// Time to solve `bins` as one batch, transfers included.
    fn time_solve(&mut self, bins: &[BinWork]) -> Result<f64, CallbackError>;

    /// Time to prepare one patch (fill its interior and ghosts into a batch buffer).
    fn time_prepare(&mut self, _patch: &PatchWork) -> Result<f64, CallbackError> {
        Err("this timer does not time prepares".into())
    }

    /// Time to close one patch (write back, accumulate flux registers).
    fn time_close(&mut self, _patch: &PatchWork) -> Result<f64, CallbackError> {
        Err("this timer does not time closes".into())
    }

    /// Whether solves move data between host and device; `false` (the CPU)
    /// zeroes the transfer feature so `t_trans` stays 0.
    fn transfers(&self) -> bool {
        true
    }
}

/// A [`Timer`] made of three closures.
pub struct FnTimer<S, P, C> {
    /// Times a batch solve.
    pub solve: S,
    /// Times a patch prepare.
    pub prepare: P,
    /// Times a patch close.
    pub close: C,
    /// Whether solves include host-device transfers.
    pub transfers: bool,
}

impl<S, P, C> Timer for FnTimer<S, P, C>
where
    S: FnMut(&[BinWork]) -> Result<f64, CallbackError>,
    P: FnMut(&PatchWork) -> Result<f64, CallbackError>,
    C: FnMut(&PatchWork) -> Result<f64, CallbackError>,
{
    fn time_solve(&mut self, bins: &[BinWork]) -> Result<f64, CallbackError> {
        (self.solve)(bins)
    }
    fn time_prepare(&mut self, patch: &PatchWork) -> Result<f64, CallbackError> {
        (self.prepare)(patch)
    }
    fn time_close(&mut self, patch: &PatchWork) -> Result<f64, CallbackError> {
        (self.close)(patch)
    }
    fn transfers(&self) -> bool {
        self.transfers
    }
}

/// What to time.
#[derive(Clone, Debug, PartialEq)]
pub struct CalibrationPlan {
    /// Batches to solve; empty to keep the base solve coefficients.
    pub solve_batches: Vec<Vec<BinWork>>,
    /// Patches to prepare; empty to keep the base prepare coefficients.
    pub prepare_patches: Vec<PatchWork>,
    /// Patches to close; empty to keep the base close coefficients.
    pub close_patches: Vec<PatchWork>,
    /// Untimed runs before each sample (caches, lazy initialisation).
    pub warmup: usize,
    /// Timed runs per sample; the median is kept (robust to a stray slow run).
    pub repeats: usize,
    /// Held-out split.
    pub fit: FitOptions,
}

/// Parameters of [`CalibrationPlan::synthetic`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SyntheticPlan {
    /// Seed of the deterministic generator.
    pub seed: u64,
    /// Number of solve batches.
    pub batches: usize,
    /// Largest number of bins per batch (at least 1 each).
    pub max_bins_per_batch: usize,
    /// Largest number of patches per bin (at least 1 each).
    pub max_patches_per_bin: usize,
    /// Number of prepare samples, and of close samples.
    pub patches: usize,
    /// Smallest and largest interior extent per axis.
    pub interior: (u32, u32),
    /// Ghost width.
    pub ghost: u32,
    /// Bytes per cell.
    pub bytes_per_cell: u32,
}

impl Default for SyntheticPlan {
    /// 48 batches of up to 8 bins of up to 6 patches, 96 prepare/close
    /// patches, interiors 4–56 cells per axis (the paper's patches are 16–64
    /// with ghosts; thinner ones make the fit better conditioned), 3 ghost
    /// layers (RTVD), 5 f64 components.
    fn default() -> Self {
        Self {
            seed: 0x5157_4c54,
            batches: 48,
            max_bins_per_batch: 8,
            max_patches_per_bin: 6,
            patches: 96,
            interior: (4, 56),
            ghost: 3,
            bytes_per_cell: 40,
        }
    }
}

/// SplitMix64 (Steele, Lea & Flood 2014): a tiny deterministic generator so the
/// library needs no random-number dependency for synthetic plans.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    /// Uniform in `[0, 1)`.
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl CalibrationPlan {
    /// A plan from explicit workloads, with 1 warm-up, 3 repeats and the default split.
    pub fn new(
        solve_batches: Vec<Vec<BinWork>>,
        prepare_patches: Vec<PatchWork>,
        close_patches: Vec<PatchWork>,
    ) -> Self {
        Self {
            solve_batches,
            prepare_patches,
            close_patches,
            warmup: 1,
            repeats: 3,
            fit: FitOptions::default(),
        }
    }

    /// A plan of random patch shapes (independent extents per axis, so the
    /// three column counts are not collinear) with random ghost-fill splits
    /// and flux-register counts, for backends that only need shapes.
    ///
    /// # Errors
    /// [`BatchError::InvalidOption`] for an empty range or zero counts.
    pub fn synthetic(p: &SyntheticPlan) -> Result<Self> {
        let bad = |name, value: String, reason| BatchError::InvalidOption {
            name,
            value,
            reason,
        };
        if p.interior.0 == 0 || p.interior.0 > p.interior.1 {
            return Err(bad(
                "interior",
                format!("{:?}", p.interior),
                "needs 1 <= min <= max",
            ));
        }
        if p.max_bins_per_batch == 0 || p.max_patches_per_bin == 0 {
            return Err(bad(
                "max_bins_per_batch/max_patches_per_bin",
                format!("{}/{}", p.max_bins_per_batch, p.max_patches_per_bin),
                "must be at least 1",
            ));
        }
        let max_extent = u64::from(p.interior.1) + 2 * u64::from(p.ghost);
        if max_extent > u64::from(crate::work::MAX_EXTENT) {
            return Err(bad(
                "interior",
                format!("{:?}", p.interior),
                "max + 2 * ghost exceeds MAX_EXTENT",
            ));
        }
        let mut rng = SplitMix64(p.seed);
        let patch = |rng: &mut SplitMix64| {
            // Log-uniform extents: as many thin as thick axes, so column
            // lengths (cells per column) vary widely and the per-column and
            // per-cell terms separate.
            let (lo, hi) = (f64::from(p.interior.0), f64::from(p.interior.1) + 1.0);
            let extent = [0; 3].map(|_: u32| {
                let e = (lo * (hi / lo).powf(rng.unit())).floor() as u32;
                e.clamp(p.interior.0, p.interior.1) + 2 * p.ghost
            });
            let w = PatchWork::new(extent, p.ghost);
            let ghosts = w.ghost_cells() as f64;
            let interp = (ghosts * rng.unit()) as u64;
            let copied = ((ghosts - interp as f64) * rng.unit()) as u64;
            let flux = (w.interior_faces() as f64 * rng.unit()) as u64;
            w.with_ghost_fill(interp, copied).with_flux_faces(flux)
        };
        // Sums over many patches average the shapes out and make the column
        // counts of the three directions nearly proportional to each other and
        // to the cell count; half of the batches and bins are therefore single,
        // so the per-direction terms stay identifiable, while the others vary
        // the transfer sizes and the number of bins per launch.
        let count = |rng: &mut SplitMix64, max: usize| {
            if max == 1 || rng.unit() < 0.5 {
                1
            } else {
                rng.range(2, max as u64) as usize
            }
        };
        let mut batches = Vec::with_capacity(p.batches);
        for _ in 0..p.batches {
            let nb = count(&mut rng, p.max_bins_per_batch);
            let mut bins = Vec::with_capacity(nb);
            for _ in 0..nb {
                let np = count(&mut rng, p.max_patches_per_bin);
                let patches = (0..np).map(|_| patch(&mut rng)).collect();
                bins.push(BinWork::new(patches, p.bytes_per_cell)?);
            }
            batches.push(bins);
        }
        let prepare = (0..p.patches).map(|_| patch(&mut rng)).collect();
        let close = (0..p.patches).map(|_| patch(&mut rng)).collect();
        Ok(Self::new(batches, prepare, close))
    }
}

/// Outcome of [`calibrate`].
#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// Base coefficients with every fitted group replaced.
    pub coefficients: Coefficients,
    /// Solve fit, if the plan had solve batches.
    pub solve: Option<FitReport<SolveCoeffs>>,
    /// Prepare fit, if the plan had prepare patches.
    pub prepare: Option<FitReport<PrepareCoeffs>>,
    /// Close fit, if the plan had close patches.
    pub close: Option<FitReport<CloseCoeffs>>,
    /// Number of samples timed (for [`crate::Provenance::samples`]).
    pub samples: u64,
}

fn median_time<W: ?Sized>(
    what: &'static str,
    index: usize,
    warmup: usize,
    repeats: usize,
    work: &W,
    mut time: impl FnMut(&W) -> Result<f64, CallbackError>,
    scratch: &mut Vec<f64>,
) -> Result<f64> {
    let wrap = |source| BatchError::Callback {
        what,
        index,
        source,
    };
    for _ in 0..warmup {
        time(work).map_err(wrap)?;
    }
    scratch.clear();
    for _ in 0..repeats {
        let t = time(work).map_err(wrap)?;
        check_time(|| format!("{what} sample {index} time"), t)?;
        scratch.push(t);
    }
    scratch.sort_by(f64::total_cmp);
    Ok(scratch[scratch.len() / 2])
}

/// Times every sample of `plan` through `timer` and fits the coefficient
/// groups the plan exercises; the others keep their `base` values.
///
/// # Errors
/// [`BatchError::InvalidOption`] for `repeats == 0`, [`BatchError::Callback`]
/// (sample kind and index) when the timer fails, [`BatchError::InvalidTime`]
/// for a non-positive or non-finite timing, and the fit errors of
/// [`crate::fit_solve`]. Invalid `base` coefficients give
/// [`BatchError::InvalidCoefficient`].
pub fn calibrate<T: Timer + ?Sized>(
    timer: &mut T,
    plan: &CalibrationPlan,
    base: Coefficients,
) -> Result<Calibration> {
    base.validate()?;
    if plan.repeats == 0 {
        return Err(BatchError::InvalidOption {
            name: "repeats",
            value: "0".into(),
            reason: "at least one timed run per sample",
        });
    }
    let mut scratch = Vec::with_capacity(plan.repeats);
    let mut out = Calibration {
        coefficients: base,
        solve: None,
        prepare: None,
        close: None,
        samples: 0,
    };
    if !plan.solve_batches.is_empty() {
        let transfers = timer.transfers();
        let mut samples = Vec::with_capacity(plan.solve_batches.len());
        for (i, bins) in plan.solve_batches.iter().enumerate() {
            let t = median_time(
                "solve",
                i,
                plan.warmup,
                plan.repeats,
                bins.as_slice(),
                |b| timer.time_solve(b),
                &mut scratch,
            )?;
            samples.push(if transfers {
                SolveSample::batch(bins, t)
            } else {
                SolveSample::batch_without_transfer(bins, t)
            });
        }
        let r = fit_solve(&samples, &plan.fit)?;
        out.coefficients.solve = r.coefficients;
        out.solve = Some(r);
        out.samples += samples.len() as u64;
    }
    if !plan.prepare_patches.is_empty() {
        let mut samples = Vec::with_capacity(plan.prepare_patches.len());
        for (i, p) in plan.prepare_patches.iter().enumerate() {
            p.validate(i)?;
            let t = median_time(
                "prepare",
                i,
                plan.warmup,
                plan.repeats,
                p,
                |p| timer.time_prepare(p),
                &mut scratch,
            )?;
            samples.push(PrepareSample::patch(p, t));
        }
        let r = fit_prepare(&samples, &plan.fit)?;
        out.coefficients.prepare = r.coefficients;
        out.prepare = Some(r);
        out.samples += samples.len() as u64;
    }
    if !plan.close_patches.is_empty() {
        let mut samples = Vec::with_capacity(plan.close_patches.len());
        for (i, p) in plan.close_patches.iter().enumerate() {
            p.validate(i)?;
            let t = median_time(
                "close",
                i,
                plan.warmup,
                plan.repeats,
                p,
                |p| timer.time_close(p),
                &mut scratch,
            )?;
            samples.push(CloseSample::patch(p, t));
        }
        let r = fit_close(&samples, &plan.fit)?;
        out.coefficients.close = r.coefficients;
        out.close = Some(r);
        out.samples += samples.len() as u64;
    }
    Ok(out)
}
