//! The CPU backend: quilt-sweep's reference solver on rayon.

use std::sync::Arc;

use quilt_mesh::flat::{CopyItem, FlatTag, FlatTransfer, StepItems, run_copies};
use quilt_sweep::physics::{Eos, IdealGas, Thermo};
use quilt_sweep::{Batch, Real, Solver, StepReport, SweepOrder, Workspace};

use super::{ResidentSolve, SolveBackend, SolveError, mesh_failure};
use crate::resident::ResidentPlan;

/// The CPU backend: [`Solver::advance`] with rayon over (patch, column)
/// work items, in the rayon pool the integrator runs in, with one reused
/// [`Workspace`]. In device residency it keeps the resident batch in host
/// memory and runs the plan's items as stated (the reference the GPU's
/// resident steps are held to).
#[derive(Debug)]
pub struct CpuBackend<T: Real, E: Eos = IdealGas> {
    solver: Solver<E>,
    workspace: Workspace<T>,
    resident: Option<CpuResident<T>>,
}

fn not_loaded() -> SolveError {
    SolveError::Device {
        backend: "cpu".into(),
        message: "no resident state is loaded".into(),
        source: None,
    }
}

#[derive(Debug)]
struct CpuResident<T: Real> {
    batch: Batch<T>,
    items: Arc<StepItems>,
    patches: usize,
    scratch: Vec<T>,
}

impl<T: Real> CpuResident<T> {
    /// `plan`'s hierarchy in `batch`.
    fn new(plan: &ResidentPlan, batch: Batch<T>) -> Self {
        Self {
            batch,
            items: plan.items.clone(),
            patches: plan.patches,
            scratch: vec![T::zero(); plan.items.fill.scratch_len as usize],
        }
    }
}

impl<T: crate::Real> CpuResident<T> {
    /// The ghost fill and the probe copies of the resident state.
    fn fill(&mut self) -> Result<(), SolveError> {
        let (_, data, _) = self.batch.buffers_mut();
        self.items
            .run_fill(data, &mut self.scratch)
            .map_err(|e| mesh_failure("cpu", "resident ghost fill", e))
    }
}

impl<T: Real, E: Eos> CpuBackend<T, E> {
    /// A backend advancing batches with `solver`.
    pub fn new(solver: Solver<E>) -> Self {
        Self {
            solver,
            workspace: Workspace::new(),
            resident: None,
        }
    }

    fn resident_state(&mut self) -> Result<&mut CpuResident<T>, SolveError> {
        self.resident.as_mut().ok_or_else(not_loaded)
    }

    /// The solver.
    pub fn solver(&self) -> &Solver<E> {
        &self.solver
    }
}

impl<T: crate::Real, E: Eos> SolveBackend<T> for CpuBackend<T, E> {
    fn name(&self) -> &str {
        "cpu"
    }

    fn device(&self) -> String {
        format!(
            "CPU, {} rayon threads, {} scheme in {}",
            rayon::current_num_threads(),
            self.solver.scheme().name(),
            <T as Real>::NAME
        )
    }

    fn thermo(&self) -> Arc<dyn Thermo> {
        Arc::new(self.solver.gas())
    }

    fn solve(
        &mut self,
        batch: &mut Batch<T>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        Ok(self.solver.advance(batch, dt, order, &mut self.workspace)?)
    }

    fn resident(&mut self) -> Option<&mut dyn ResidentSolve<T>> {
        Some(self)
    }
}

impl<T: crate::Real, E: Eos> ResidentSolve<T> for CpuBackend<T, E> {
    fn load(&mut self, plan: &ResidentPlan, interiors: &[T]) -> Result<(), SolveError> {
        self.solver.check_layout(&plan.layout)?;
        let mut batch = Batch::new(plan.layout.clone());
        let load: Vec<CopyItem> = plan
            .items
            .interiors
            .iter()
            .map(CopyItem::reversed)
            .collect();
        let mut compact = interiors.to_vec();
        run_copies(&load, plan.items.ncomp, batch.data_mut(), &mut compact)
            .map_err(|e| mesh_failure("cpu", "resident load", e))?;
        self.resident = Some(CpuResident::new(plan, batch));
        Ok(())
    }

    fn max_rate(&mut self) -> Result<Option<f64>, SolveError> {
        let gas = self.solver.gas();
        let r = self.resident_state()?;
        Ok(crate::cfl::batch_rate(&r.batch, 0..r.patches, &gas))
    }

    fn step(&mut self, dt: f64, order: SweepOrder) -> Result<StepReport, SolveError> {
        // The workspace is borrowed beside the state: not through
        // `resident_state`.
        let r = self.resident.as_mut().ok_or_else(not_loaded)?;
        r.fill()?;
        let report = self
            .solver
            .advance(&mut r.batch, dt, order, &mut self.workspace)?;
        let (_, data, flux) = r.batch.buffers_mut();
        r.items
            .run_levels(data, flux)
            .map_err(|e| mesh_failure("cpu", "resident refluxing and restriction", e))?;
        Ok(report)
    }

    fn store(&mut self, interiors: &mut [T]) -> Result<(), SolveError> {
        let r = self.resident_state()?;
        let items = r.items.clone();
        run_copies(&items.interiors, items.ncomp, r.batch.data_mut(), interiors)
            .map_err(|e| mesh_failure("cpu", "resident store", e))
    }

    fn tag(&mut self, tag: &FlatTag, out: &mut [u32]) -> Result<(), SolveError> {
        let r = self.resident_state()?;
        r.fill()?;
        tag.run(r.batch.data(), out, |k, rho, rho_e| {
            E::pressure(k, rho, rho_e)
        })
        .map_err(|e| mesh_failure("cpu", "resident tagging", e))
    }

    fn regrid(&mut self, plan: &ResidentPlan, transfer: &FlatTransfer) -> Result<(), SolveError> {
        self.solver.check_layout(&plan.layout)?;
        let r = self.resident_state()?;
        let mut batch = Batch::new(plan.layout.clone());
        let mut scratch = vec![T::zero(); transfer.scratch_len as usize];
        transfer
            .run(r.batch.data(), batch.data_mut(), &mut scratch)
            .map_err(|e| mesh_failure("cpu", "resident regrid", e))?;
        self.resident = Some(CpuResident::new(plan, batch));
        Ok(())
    }

    fn unload(&mut self) {
        self.resident = None;
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
