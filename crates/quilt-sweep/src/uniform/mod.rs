//! A single-level uniform grid cut into patches: the smallest complete
//! driver around a [`Solver`](crate::Solver), used for verification (shock tubes,
//! convergence, conservation), the `riemann` example and the benchmarks. The
//! AMR integrator replaces it with the patch hierarchy of quilt-mesh; this
//! module only prepares batches in THE layout, it does not define another.
//!
//! One step: [`UniformGrid::fill`] copies every tile's interior and ghost
//! cells (boundary conditions applied) into the batch, the solver advances
//! the batch, [`UniformGrid::gather`] copies the interiors back.

mod grid;
mod tiling;

pub use grid::{Boundary, GridError, RunSummary, UniformGrid};
pub use tiling::{Tile, even_cuts};
