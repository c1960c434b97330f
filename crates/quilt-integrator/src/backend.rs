//! [`SolveBackend`]: what advances one prepared batch, and the CPU
//! implementation over [`quilt_sweep::Solver`].
//!
//! The integrator only ever hands a backend a complete batch (every patch's
//! interior and ghost cells filled) with a time step and a sweep order, and
//! reads the batch and its flux buffer back afterwards. A GPU backend
//! (quilt-cuda's `CudaSolver::advance` has the same shape) implements the
//! trait in its own crate and plugs in without any change here.

use std::error::Error as StdError;
use std::fmt;

use quilt_sweep::{Batch, Real, Solver, StepReport, SweepError, SweepOrder, Workspace};

/// Why a backend could not advance a batch.
#[derive(Debug)]
pub enum SolveError {
    /// The solver rejected the batch or found a bad state (names the patch
    /// by its descriptor id and the cell relative to its interior).
    Sweep(SweepError),
    /// A device-side failure (allocation, launch, transfer...).
    Device {
        /// The backend's name.
        backend: String,
        /// What failed.
        message: String,
        /// The underlying error, if any.
        source: Option<Box<dyn StdError + Send + Sync>>,
    },
}

impl fmt::Display for SolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SolveError::Sweep(e) => write!(f, "{e}"),
            SolveError::Device {
                backend, message, ..
            } => write!(f, "{backend} backend: {message}"),
        }
    }
}

impl StdError for SolveError {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        match self {
            SolveError::Sweep(e) => Some(e),
            SolveError::Device { source, .. } => {
                source.as_deref().map(|e| e as &(dyn StdError + 'static))
            }
        }
    }
}

impl From<SweepError> for SolveError {
    fn from(e: SweepError) -> Self {
        SolveError::Sweep(e)
    }
}

/// Advances prepared batches: the solve stage of the pipeline.
///
/// `solve` advances every patch of `batch` by `dt` with the directional
/// sweeps in `order`, writing the new interior state into the batch and the
/// time-integrated boundary fluxes into its flux buffer (see
/// [`quilt_sweep::layout`]). Results must depend only on each patch's
/// filled data, not on the batch it came in or its place in a bin: the
/// integrator's pipelined and sequential modes, and its adaptive and static
/// batchings, are bitwise identical only if that holds.
pub trait SolveBackend<T: Real>: Send {
    /// Short name for logs and summaries (`"cpu"`, `"cuda"`).
    fn name(&self) -> &str;

    /// A line describing the device (model, threads, memory).
    fn device(&self) -> String;

    /// Whether `solve` includes host–device transfers; the cost model then
    /// keeps the transfer term of the solve estimate.
    fn transfers(&self) -> bool {
        false
    }

    /// Advances one batch (see the trait docs).
    fn solve(
        &mut self,
        batch: &mut Batch<T>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError>;
}

impl<T: Real, B: SolveBackend<T> + ?Sized> SolveBackend<T> for Box<B> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn device(&self) -> String {
        (**self).device()
    }

    fn transfers(&self) -> bool {
        (**self).transfers()
    }

    fn solve(
        &mut self,
        batch: &mut Batch<T>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        (**self).solve(batch, dt, order)
    }
}

/// The CPU backend: [`Solver::advance`] with rayon over (patch, column)
/// work items, in the rayon pool the integrator runs in, with one reused
/// [`Workspace`].
#[derive(Clone, Debug)]
pub struct CpuBackend<T> {
    solver: Solver,
    workspace: Workspace<T>,
}

impl<T: Real> CpuBackend<T> {
    /// A backend advancing batches with `solver`.
    pub fn new(solver: Solver) -> Self {
        Self {
            solver,
            workspace: Workspace::new(),
        }
    }

    /// The solver.
    pub fn solver(&self) -> &Solver {
        &self.solver
    }
}

impl<T: Real> SolveBackend<T> for CpuBackend<T> {
    fn name(&self) -> &str {
        "cpu"
    }

    fn device(&self) -> String {
        format!(
            "CPU, {} rayon threads, {} scheme in {}",
            rayon::current_num_threads(),
            self.solver.scheme().name(),
            T::NAME
        )
    }

    fn solve(
        &mut self,
        batch: &mut Batch<T>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        Ok(self.solver.advance(batch, dt, order, &mut self.workspace)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_sweep::physics::{Gas, Primitive};
    use quilt_sweep::{BatchLayout, PatchShape, Scheme};

    fn uniform_batch(solver: &Solver, rho: f64) -> Batch<f64> {
        let g = solver.ghost_width();
        let shapes = [PatchShape::new(3, [6, 5, 4], g, [0.1; 3])];
        let mut b = Batch::new(BatchLayout::one_per_slot(16, 5, &shapes).unwrap());
        let u = Primitive::at_rest(rho, 1.0).to_conserved(&solver.gas());
        let e = [6 + 2 * g, 5 + 2 * g, 4 + 2 * g];
        for k in 0..e[2] {
            for j in 0..e[1] {
                for i in 0..e[0] {
                    for c in 0..5 {
                        b.set(0, c, [i, j, k], u[c as usize]).unwrap();
                    }
                }
            }
        }
        b
    }

    #[test]
    fn cpu_backend_advances_like_the_solver() {
        let solver = Solver::new(Scheme::rtvd(), Gas::ideal(1.4)).unwrap();
        let mut be = CpuBackend::<f64>::new(solver);
        let mut a = uniform_batch(&solver, 1.0);
        let mut b = a.clone();
        let r = be.solve(&mut a, 0.01, SweepOrder::Xyz).unwrap();
        let mut ws = Workspace::new();
        let r2 = solver
            .advance(&mut b, 0.01, SweepOrder::Xyz, &mut ws)
            .unwrap();
        assert_eq!(r, r2);
        assert_eq!(a, b);
        assert_eq!(r.cells, 120);
        assert_eq!(SolveBackend::<f64>::name(&be), "cpu");
        assert!(SolveBackend::<f64>::device(&be).contains("rtvd"));
    }

    #[test]
    fn bad_states_are_sweep_errors_naming_the_patch() {
        let solver = Solver::new(Scheme::rtvd(), Gas::ideal(1.4)).unwrap();
        let mut be: Box<dyn SolveBackend<f64>> = Box::new(CpuBackend::<f64>::new(solver));
        let mut a = uniform_batch(&solver, 1.0);
        a.set(0, 0, [5, 5, 5], -1.0).unwrap();
        let e = be.solve(&mut a, 0.01, SweepOrder::Xyz).unwrap_err();
        match &e {
            SolveError::Sweep(SweepError::BadState { patch, cell, .. }) => {
                assert_eq!(*patch, 3);
                assert_eq!(*cell, [2, 2, 2]);
            }
            other => panic!("{other}"),
        }
        assert!(e.to_string().contains("density"), "{e}");
    }
}
