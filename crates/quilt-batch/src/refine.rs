//! Online refinement: follow the machine during a run from observed timings.
//!
//! The refined coefficients are `base_i * θ_i`, so the estimator works on
//! dimensionless factors `θ` (all 1 at start) and each observation is divided
//! by its measured time, making every update a relative one. Two methods:
//!
//! - [`Refinement::Rls`]: recursive least squares with exponential forgetting
//!   (Ljung & Söderström, *Theory and Practice of Recursive Identification*,
//!   1983, §2.6), one factor per coefficient. Batches of similar composition
//!   excite few directions, so with forgetting the covariance would grow
//!   without bound in the others ("wind-up"); its trace is capped at its
//!   initial value.
//! - [`Refinement::Scale`]: one factor per group, an exponential moving
//!   average of measured / predicted. Robust when observations are few.
//!
//! Both clamp every factor to `[min_factor, max_factor]`, so one outlier
//! (a page fault, a preempted thread) cannot wreck the model. A coefficient
//! whose base value is 0 stays 0: calibrate first.

use nalgebra::{SMatrix, SVector};

use crate::calibrate::{CloseSample, PrepareSample, SolveSample, check_sample};
use crate::coeffs::{CloseCoeffs, Coefficients, PrepareCoeffs, SolveCoeffs};
use crate::error::{BatchError, Result};
use crate::model::CostModel;

/// Online refinement method.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Refinement {
    /// Recursive least squares with forgetting factor in `(0, 1]` (1 = no forgetting).
    Rls {
        /// Weight of the past per observation; 0.95–0.99 follows drift within tens of batches.
        forgetting: f64,
    },
    /// One multiplicative correction per group, moving average with weight `alpha` in `(0, 1]`.
    Scale {
        /// Weight of the newest observation.
        alpha: f64,
    },
}

/// Options of [`OnlineModel`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RefineOptions {
    /// The method.
    pub method: Refinement,
    /// Smallest factor a coefficient may be scaled by, relative to its base value.
    pub min_factor: f64,
    /// Largest factor a coefficient may be scaled by.
    pub max_factor: f64,
}

impl Default for RefineOptions {
    /// RLS with forgetting 0.98, factors within `[0.25, 4]`.
    fn default() -> Self {
        Self {
            method: Refinement::Rls { forgetting: 0.98 },
            min_factor: 0.25,
            max_factor: 4.0,
        }
    }
}

impl RefineOptions {
    fn validate(&self) -> Result<()> {
        let (name, v) = match self.method {
            Refinement::Rls { forgetting } => ("forgetting", forgetting),
            Refinement::Scale { alpha } => ("alpha", alpha),
        };
        if !(v > 0.0 && v <= 1.0) {
            return Err(BatchError::InvalidOption {
                name,
                value: v.to_string(),
                reason: "must lie in (0, 1]",
            });
        }
        if !(self.min_factor > 0.0
            && self.min_factor <= 1.0
            && self.max_factor >= 1.0
            && self.max_factor.is_finite())
        {
            return Err(BatchError::InvalidOption {
                name: "min_factor/max_factor",
                value: format!("{}/{}", self.min_factor, self.max_factor),
                reason: "need 0 < min_factor <= 1 <= max_factor < inf",
            });
        }
        Ok(())
    }
}

/// Initial covariance of the factors: a prior standard deviation of 1 (100 %).
const P0: f64 = 1.0;

#[derive(Clone, Debug)]
struct Estimator<const N: usize> {
    theta: SVector<f64, N>,
    p: SMatrix<f64, N, N>,
}

impl<const N: usize> Estimator<N> {
    fn new() -> Self {
        Self {
            theta: SVector::from_element(1.0),
            p: SMatrix::identity() * P0,
        }
    }

    /// `z`: each term's contribution in seconds at the base coefficients; `y`: measured seconds.
    fn update(&mut self, z: [f64; N], y: f64, opts: &RefineOptions) {
        // Residuals relative to the measurement: the fit minimises the
        // squared relative errors the estimates are judged by. (Relative to
        // the prediction the fit would be unbiased for the mean time, but a
        // preempted task's time then pulls hard: on a loaded host the
        // per-batch errors grew two- to threefold.)
        let z = SVector::<f64, N>::from(z) / y;
        match opts.method {
            Refinement::Rls { forgetting } => {
                let pz = self.p * z;
                let denom = forgetting + z.dot(&pz);
                if !(denom.is_finite() && denom > 0.0) {
                    return;
                }
                let k = pz / denom;
                let e = 1.0 - z.dot(&self.theta);
                self.theta += k * e;
                self.p = (self.p - k * pz.transpose()) / forgetting;
                self.p = (self.p + self.p.transpose()) * 0.5;
                let cap = N as f64 * P0;
                let tr = self.p.trace();
                if tr > cap {
                    self.p *= cap / tr;
                }
            }
            Refinement::Scale { alpha } => {
                let predicted = z.sum();
                if predicted <= 0.0 {
                    return;
                }
                // Measured / predicted-at-base is 1 / predicted after the division by y.
                let f = self.theta.mean();
                let f = (1.0 - alpha) * f + alpha / predicted;
                self.theta.fill(f);
            }
        }
        for t in self.theta.iter_mut() {
            *t = t.clamp(opts.min_factor, opts.max_factor);
        }
    }

    fn factors(&self) -> [f64; N] {
        self.theta.into()
    }
}

/// A cost model that refines itself from observed timings.
#[derive(Clone, Debug)]
pub struct OnlineModel {
    base: Coefficients,
    model: CostModel,
    opts: RefineOptions,
    solve: Estimator<7>,
    prepare: Estimator<3>,
    close: Estimator<3>,
    /// The within-batch spread of the logarithm of queues' measured over
    /// estimated prepare times, pooled over batches with forgetting: the sum
    /// of squared deviations from each batch's mean, and its degrees of
    /// freedom.
    queue_deviations: (f64, f64),
    observations: u64,
}

/// Weight of the past per batch in [`OnlineModel`]'s spread of queue times:
/// about the last 20 batches count.
const SPREAD_FORGETTING: f64 = 0.95;

/// Degrees of freedom the spread of queue times needs before it is used (a
/// batch of `n` queues gives `n − 1`): one batch of two queues says little.
const SPREAD_MIN_DOF: f64 = 8.0;

fn scaled<const N: usize>(base: [f64; N], f: [f64; N]) -> [f64; N] {
    std::array::from_fn(|i| base[i] * f[i])
}

fn contributions<const N: usize>(base: [f64; N], x: [f64; N]) -> [f64; N] {
    std::array::from_fn(|i| base[i] * x[i])
}

impl OnlineModel {
    /// Starts from `model` (usually the calibrated one).
    ///
    /// # Errors
    /// [`BatchError::InvalidOption`] for a forgetting factor or alpha outside
    /// `(0, 1]` or bounds not bracketing 1.
    pub fn new(model: CostModel, opts: RefineOptions) -> Result<Self> {
        opts.validate()?;
        Ok(Self {
            base: *model.coefficients(),
            model,
            opts,
            solve: Estimator::new(),
            prepare: Estimator::new(),
            close: Estimator::new(),
            queue_deviations: (0.0, 0.0),
            observations: 0,
        })
    }

    /// The current (refined) model.
    pub fn model(&self) -> &CostModel {
        &self.model
    }

    /// Number of observations taken.
    pub fn observations(&self) -> u64 {
        self.observations
    }

    /// Current factors relative to the base coefficients, per group
    /// (solve, prepare, close), in feature order.
    pub fn factors(&self) -> ([f64; 7], [f64; 3], [f64; 3]) {
        (
            self.solve.factors(),
            self.prepare.factors(),
            self.close.factors(),
        )
    }

    /// Forgets all observations and returns to the base coefficients.
    pub fn reset(&mut self) {
        *self = Self {
            model: CostModel::new(self.base).expect("base coefficients were validated"),
            solve: Estimator::new(),
            prepare: Estimator::new(),
            close: Estimator::new(),
            queue_deviations: (0.0, 0.0),
            observations: 0,
            ..self.clone()
        };
    }

    fn rebuild(&mut self) {
        let c = Coefficients {
            solve: SolveCoeffs::from_array(scaled(
                self.base.solve.to_array(),
                self.solve.factors(),
            )),
            prepare: PrepareCoeffs::from_array(scaled(
                self.base.prepare.to_array(),
                self.prepare.factors(),
            )),
            close: CloseCoeffs::from_array(scaled(
                self.base.close.to_array(),
                self.close.factors(),
            )),
        };
        // Factors are clamped to a positive finite range, so scaled valid
        // coefficients stay valid.
        self.model = CostModel::new(c)
            .expect("refined coefficients stay valid")
            .with_queue_spread(self.queue_spread());
        self.observations += 1;
    }

    /// Takes one observed solve (usually a whole batch).
    ///
    /// # Errors
    /// [`BatchError::InvalidTime`] for a non-positive or non-finite time or feature.
    pub fn observe_solve(&mut self, s: &SolveSample) -> Result<()> {
        check_sample(
            "observed solve",
            self.observations as usize,
            &s.features,
            s.seconds,
        )?;
        let z = contributions(self.base.solve.to_array(), s.features);
        self.solve.update(z, s.seconds, &self.opts);
        self.rebuild();
        Ok(())
    }

    /// Takes one observed prepare (a patch or one queue's patches).
    ///
    /// # Errors
    /// As [`OnlineModel::observe_solve`].
    pub fn observe_prepare(&mut self, s: &PrepareSample) -> Result<()> {
        check_sample(
            "observed prepare",
            self.observations as usize,
            &s.features,
            s.seconds,
        )?;
        let z = contributions(self.base.prepare.to_array(), s.features);
        self.prepare.update(z, s.seconds, &self.opts);
        self.rebuild();
        Ok(())
    }

    /// Takes the prepares of one batch's queues, run at once: each refines
    /// the prepare coefficients as [`OnlineModel::observe_prepare`] does,
    /// and their spread about the model's estimates (made before these
    /// observations) refines the model's queue spread, with which
    /// [`CostModel::slowest_queue`] estimates a batch's prepare.
    ///
    /// # Errors
    /// As [`OnlineModel::observe_solve`], for the first bad sample; nothing
    /// is observed then.
    pub fn observe_queues(&mut self, samples: &[PrepareSample]) -> Result<()> {
        for (i, s) in samples.iter().enumerate() {
            check_sample(
                "observed prepare queue",
                self.observations as usize + i,
                &s.features,
                s.seconds,
            )?;
        }
        let (mut n, mut sum, mut sum_sq) = (0.0, 0.0, 0.0);
        for s in samples {
            let estimate = self.model.prepare_from_features(&s.features);
            if estimate > 0.0 {
                let r = (s.seconds / estimate).ln();
                n += 1.0;
                sum += r;
                sum_sq += r * r;
            }
        }
        if n >= 2.0 {
            let mean = sum / n;
            let (squares, dof) = self.queue_deviations;
            self.queue_deviations = (
                SPREAD_FORGETTING * squares + (sum_sq - n * mean * mean).max(0.0),
                SPREAD_FORGETTING * dof + (n - 1.0),
            );
        }
        for s in samples {
            self.observe_prepare(s)?;
        }
        Ok(())
    }

    /// The standard deviation of the logarithm of a queue's measured over
    /// estimated prepare time within a batch, as observed so far by
    /// [`OnlineModel::observe_queues`] (0 until enough queues were seen).
    pub fn queue_spread(&self) -> f64 {
        let (squares, dof) = self.queue_deviations;
        if dof >= SPREAD_MIN_DOF {
            (squares / dof).sqrt()
        } else {
            0.0
        }
    }

    /// Takes one observed close.
    ///
    /// # Errors
    /// As [`OnlineModel::observe_solve`].
    pub fn observe_close(&mut self, s: &CloseSample) -> Result<()> {
        check_sample(
            "observed close",
            self.observations as usize,
            &s.features,
            s.seconds,
        )?;
        let z = contributions(self.base.close.to_array(), s.features);
        self.close.update(z, s.seconds, &self.opts);
        self.rebuild();
        Ok(())
    }
}
