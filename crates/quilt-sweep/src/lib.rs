//! # quilt-sweep
//!
//! The Euler physics, THE batch layout and the CPU reference of quilt's
//! directionally organised hydro schemes. The CUDA kernels reproduce these
//! results (to 1e-12 in `f64`), so every scheme is written as a per-column
//! function free of threads and allocation, over `#[repr(C)]` descriptors
//! and plain index arithmetic.
//!
//! | module | holds |
//! |---|---|
//! | [`layout`] | [`BatchLayout`], [`PatchDesc`], the data and flux-buffer index functions |
//! | [`Batch`] | the owned data and flux buffer of one batch |
//! | [`physics`] | ideal gas, conserved/primitive variables, fluxes, floors |
//! | [`scheme`] | [`Scheme`] and the per-column RTVD, TVD and WAF functions |
//! | [`Solver`] | one step over a whole batch on the CPU (rayon), CFL time step, state checks |
//! | [`exact`] | the exact Riemann solver used as reference |
//! | `uniform` (feature `uniform`) | a single-level uniform-grid driver (tiling, ghost fill, boundaries) for verification and examples |
//!
//! # Example
//!
//! ```
//! use quilt_sweep::{Batch, BatchLayout, PatchShape, Scheme, Solver, SweepOrder, Workspace};
//! use quilt_sweep::physics::{Gas, Primitive};
//!
//! let solver = Solver::new(Scheme::rtvd(), Gas::ideal(1.4)).unwrap();
//! let g = solver.ghost_width();
//! let shapes = [PatchShape::new(7, [8, 8, 8], g, [0.1; 3])];
//! let layout = BatchLayout::one_per_slot(64, 5, &shapes).unwrap();
//! let mut batch = Batch::<f64>::new(layout);
//! let u = Primitive::at_rest(1.0, 1.0).to_conserved(&solver.gas());
//! let n = 8 + 2 * g;
//! for k in 0..n { for j in 0..n { for i in 0..n { for c in 0..5 {
//!     batch.set(0, c, [i, j, k], u[c as usize]).unwrap();
//! }}}}
//! let dt = solver.max_dt(&batch, 0.8).unwrap();
//! let mut ws = Workspace::new();
//! let report = solver.advance(&mut batch, dt, SweepOrder::Xyz, &mut ws).unwrap();
//! assert_eq!(report.cells, 512);
//! ```
#![warn(missing_docs)]

mod batch;
mod driver;
mod error;
pub mod exact;
pub mod layout;
pub mod physics;
mod real;
mod restricted;
pub mod scheme;
pub mod storage;
#[cfg(any(test, feature = "uniform"))]
pub mod uniform;

pub use batch::{Batch, BoxPart};
pub use driver::{Solver, StepReport, SweepOrder, Workspace};
pub use error::{ConfigError, LayoutError, SweepError};
pub use layout::{BatchLayout, PatchDesc, PatchShape};
pub use real::Real;
pub use restricted::{BoxRate, Restricted};
pub use scheme::Scheme;
pub use storage::{AllocError, HostAlloc, HostMemory, VecAlloc};
