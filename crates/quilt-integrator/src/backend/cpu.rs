//! The CPU backend: quilt-sweep's reference solver on rayon.

use quilt_sweep::{Batch, Real, Solver, StepReport, SweepOrder, Workspace};

use super::{SolveBackend, SolveError};

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
    use quilt_sweep::SweepError;
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
