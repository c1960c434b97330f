//! Calibration of the cost model: least-squares fits from timing samples,
//! a held-out error report, and a routine that times sample work through a
//! caller-supplied [`Timer`].

mod fit;
mod lsq;
mod routine;
mod samples;

pub use fit::{FitOptions, FitReport, fit_close, fit_prepare, fit_solve};
pub use lsq::{ErrorStats, relative_errors};
pub use routine::{Calibration, CalibrationPlan, FnTimer, SyntheticPlan, Timer, calibrate};
pub(crate) use samples::check_sample;
pub use samples::{CloseSample, PrepareSample, SolveSample};
