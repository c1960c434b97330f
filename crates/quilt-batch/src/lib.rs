//! Cost model, calibration and knapsack batch selection for quilt's CPU–GPU
//! pipeline (Raghavan & Vadhiyar, IJHPCA 2015, section 3.2).
//!
//! While the GPU solves one batch of packed bins, the CPU threads prepare the
//! next. This crate estimates how long each phase takes and picks the next
//! batch so that its preparation hides behind the current solve.
//!
//! | module | holds |
//! |---|---|
//! | [`work`] | [`PatchWork`], [`BinWork`]: the counts the model needs, validated |
//! | [`coeffs`] | [`Coefficients`] (`C1..C3`, `t_trans`, `K1..K3`, …) |
//! | [`model`] | [`CostModel`]: eqs. 1–3, bin / batch / patch estimates |
//! | [`store`] | JSON coefficient files with [`Provenance`] |
//! | [`mod@calibrate`] | non-negative least squares, held-out errors, [`calibrate()`] via a [`Timer`] |
//! | [`refine`] | [`OnlineModel`]: RLS or bounded scaling from observed timings |
//! | [`select`] | [`select_adaptive`] (the paper's greedy, then a bounded branch and bound), [`select_first`], [`select_static`] (default scheme), [`Selector`] (reusable scratch) |
//!
//! It depends on no other quilt crate: the integrator describes bins by the
//! patches they hold and the ghost-fill counts of the mesh's plan.
//!
//! # Example
//! ```
//! use quilt_batch::{AdaptiveOptions, BinWork, CostModel, PatchWork, select_adaptive};
//!
//! let patch = |n: u32| PatchWork::new([n + 6; 3], 3).with_ghost_fill(1000, 2000);
//! let bins = vec![
//!     BinWork::new(vec![patch(32), patch(16)], 40)?,
//!     BinWork::new(vec![patch(48)], 40)?,
//!     BinWork::new(vec![patch(24), patch(24), patch(20)], 40)?,
//! ];
//! let model = CostModel::default();
//! // The GPU needs this long for the batch in flight:
//! let capacity = model.batch_solve(&bins[..1]);
//! let sel = select_adaptive(&bins[1..], capacity, 4, &model, &AdaptiveOptions::default())?;
//! assert!(!sel.bins().is_empty());
//! assert_eq!(sel.queues().len(), 4);
//! # Ok::<(), quilt_batch::BatchError>(())
//! ```
#![warn(missing_docs)]

pub mod calibrate;
pub mod coeffs;
mod error;
pub mod model;
pub mod refine;
pub mod select;
pub mod store;
pub mod work;

pub use calibrate::{
    Calibration, CalibrationPlan, CloseSample, ErrorStats, FitOptions, FitReport, FnTimer,
    PrepareSample, SolveSample, SyntheticPlan, Timer, calibrate, fit_close, fit_prepare, fit_solve,
};
pub use coeffs::{
    CLOSE_NAMES, CloseCoeffs, Coefficients, PREPARE_NAMES, PrepareCoeffs, SOLVE_NAMES, SolveCoeffs,
};
pub use error::{BatchError, CallbackError, Result};
pub use model::CostModel;
pub use refine::{OnlineModel, RefineOptions, Refinement};
pub use select::{
    AdaptiveOptions, FirstBatch, PatchRef, Selection, Selector, select_adaptive, select_first,
    select_static,
};
pub use store::{
    CoefficientFile, FORMAT_VERSION, Provenance, coefficient_file_name, load_or_default,
};
pub use work::{BinTotals, BinWork, MAX_EXTENT, PatchWork, Preparation};
