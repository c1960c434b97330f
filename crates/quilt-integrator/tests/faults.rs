//! Bad states stop a run with an error naming step, level, patch and cell.

mod common;

use quilt_integrator::{CpuBackend, Integrator, IntegratorError, SolveBackend, SolveError};
use quilt_mesh::{PatchId, iv};
use quilt_sweep::{Batch, StepReport, SweepOrder};

#[test]
fn negative_density_in_the_state_is_reported_at_the_next_step() {
    let deck = common::closed_box();
    let mut it = common::cpu(&deck);
    for _ in 0..3 {
        it.step().unwrap();
    }
    let (index, level, id, cell) = {
        let h = it.hierarchy();
        let i = h.level_range(1).start;
        let p = &h.patches()[i];
        (i, p.level(), p.id(), p.interior().lo + iv(2, 3, 1))
    };
    it.data_mut()
        .unwrap()
        .get_mut(index)
        .unwrap()
        .old
        .set(0, &cell, -0.5);
    let e = it.step().unwrap_err();
    match &e {
        IntegratorError::BadState {
            step,
            level: l,
            patch,
            cell: c,
            what,
            ..
        } => {
            assert_eq!(*step, 4);
            assert_eq!(*l, level);
            assert_eq!(*patch, id);
            assert_eq!(*c, [cell.x, cell.y, cell.z].map(i64::from));
            assert!(what.contains("density"), "{what}");
        }
        other => panic!("{other}"),
    }
    let s = e.to_string();
    assert!(
        s.contains("step 4") && s.contains(&format!("patch {id}")) && s.contains("level 1"),
        "{s}"
    );
}

/// A backend that corrupts one cell of one patch, before or after the real
/// solve, once armed; or panics in its `panic_at`-th solve.
struct Faulty {
    inner: CpuBackend<f64>,
    patch: u64,
    cell: [u32; 3],
    value: f64,
    before: bool,
    armed: bool,
    panic_at: Option<usize>,
    solves: usize,
}

impl SolveBackend<f64> for Faulty {
    fn name(&self) -> &str {
        "faulty"
    }
    fn device(&self) -> String {
        "test".into()
    }
    fn thermo(&self) -> std::sync::Arc<dyn quilt_sweep::physics::Thermo> {
        self.inner.thermo()
    }
    fn solve(
        &mut self,
        batch: &mut Batch<f64>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        let idx = batch
            .layout()
            .patches()
            .iter()
            .position(|d| d.id == self.patch);
        self.solves += 1;
        assert!(self.panic_at != Some(self.solves), "the backend failed");
        let hit = self.armed && idx.is_some();
        if hit && self.before {
            batch.set(idx.unwrap(), 0, self.cell, self.value).unwrap();
            self.armed = false;
        }
        let r = self.inner.solve(batch, dt, order)?;
        if hit && !self.before {
            batch.set(idx.unwrap(), 4, self.cell, self.value).unwrap();
            self.armed = false;
        }
        Ok(r)
    }
}

fn faulty(before: bool, value: f64) -> (Integrator<f64, Faulty>, u64, usize) {
    let deck = common::closed_box();
    let solver = deck.solver().unwrap();
    let mut it = Integrator::new(
        &deck,
        Faulty {
            inner: CpuBackend::new(solver),
            patch: 0,
            cell: [0; 3],
            value,
            before,
            armed: false,
            panic_at: None,
            solves: 0,
        },
    )
    .unwrap();
    it.step().unwrap();
    let h = it.hierarchy();
    let i = h.level_range(1).start + 1;
    let id = u64::from(h.patches()[i].id().0);
    (it, id, i)
}

#[test]
fn a_bad_cell_handed_to_the_solver_names_level_patch_and_cell() {
    let (mut it, id, index) = faulty(true, -2.0);
    let g = it.hierarchy().ghost() as u32;
    {
        let b = it.backend_mut();
        b.patch = id;
        b.cell = [g + 4, g + 1, g + 2];
        b.armed = true;
    }
    let lo = it.hierarchy().patches()[index].interior().lo;
    let e = it.step().unwrap_err();
    match &e {
        IntegratorError::BadState {
            step,
            level,
            patch,
            cell,
            stage,
            value,
            ..
        } => {
            assert_eq!(*step, 2);
            assert_eq!(*level, 1);
            assert_eq!(*patch, PatchId(id as u32));
            assert_eq!(*cell, [lo.x as i64 + 4, lo.y as i64 + 1, lo.z as i64 + 2]);
            assert_eq!(*value, -2.0);
            assert!(stage.contains("input"), "{stage}");
        }
        other => panic!("{other}"),
    }
}

#[test]
fn nan_produced_by_a_solve_is_caught_at_the_next_step() {
    let (mut it, id, index) = faulty(false, f64::NAN);
    let g = it.hierarchy().ghost() as u32;
    {
        let b = it.backend_mut();
        b.patch = id;
        b.cell = [g, g + 5, g + 3];
        b.armed = true;
    }
    let lo = it.hierarchy().patches()[index].interior().lo;
    it.step().unwrap();
    let e = it.step().unwrap_err();
    match &e {
        IntegratorError::BadState {
            step,
            level,
            patch,
            cell,
            what,
            ..
        } => {
            assert_eq!(*step, 3);
            assert_eq!(*level, 1);
            assert_eq!(*patch, PatchId(id as u32));
            assert_eq!(*cell, [lo.x as i64, lo.y as i64 + 5, lo.z as i64 + 3]);
            assert!(what.contains("energy is not finite"), "{what}");
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("NaN"), "{e}");
}

/// A cell whose values are finite and admissible but whose signal speed
/// overflows is reported with its location, not as a bare "no finite time
/// step".
#[test]
fn an_overflowing_signal_speed_names_its_cell() {
    let deck = common::closed_box();
    let mut it = common::cpu(&deck);
    let (index, level, id, cell) = {
        let h = it.hierarchy();
        let i = h.level_range(0).start + 1;
        let p = &h.patches()[i];
        (i, p.level(), p.id(), p.interior().lo + iv(1, 2, 3))
    };
    {
        let old = &mut it.data_mut().unwrap().get_mut(index).unwrap().old;
        old.set(0, &cell, 1e-300);
        for c in 1..4 {
            old.set(c, &cell, 0.0);
        }
        old.set(4, &cell, 1e300);
    }
    let e = it.step().unwrap_err();
    match &e {
        IntegratorError::BadState {
            step,
            level: l,
            patch,
            cell: c,
            what,
            ..
        } => {
            assert_eq!(*step, 1);
            assert_eq!((*l, *patch), (level, id));
            assert_eq!(*c, [cell.x, cell.y, cell.z].map(i64::from));
            assert!(what.contains("signal speed"), "{e}");
        }
        other => panic!("{other}"),
    }
}

/// Two streams running apart open a near vacuum: with `on_floor = "error"`
/// the run stops naming the step and a floored cell; with the default
/// (`apply`) it runs on and counts them.
#[test]
fn floors_are_counted_or_stop_the_run_with_their_cell() {
    let text = |action: &str| {
        format!(
            r#"
[domain]
base_cells = [32, 16, 16]
[amr]
max_levels = 1
base_patch = 16
[hydro]
density_floor = 1e-2
pressure_floor = 1e-4
on_floor = "{action}"
[initial]
kind = "riemann"
[initial.riemann]
left = [1.0, -4.0, 0.01]
right = [1.0, 4.0, 0.01]
[run]
end_time = 1.0
"#
        )
    };
    let deck = quilt_integrator::deck::Deck::parse(&text("apply")).unwrap();
    let mut it = common::cpu(&deck);
    let mut steps = 0;
    while it.totals().floors.total() == 0 && steps < 40 {
        it.step().unwrap();
        steps += 1;
    }
    assert!(it.totals().floors.total() > 0, "no floor in {steps} steps");
    it.step().unwrap();

    let deck = quilt_integrator::deck::Deck::parse(&text("error")).unwrap();
    let mut it = common::cpu(&deck);
    let e = (0..steps)
        .find_map(|_| it.step().err())
        .expect("floors stop the run");
    let s = e.to_string();
    assert!(
        matches!(e, IntegratorError::Floor { step, .. } if step == steps),
        "{s}"
    );
    assert!(s.contains("level 0, patch") && s.contains("cell ["), "{s}");
}

#[test]
fn a_panicking_backend_unwinds_the_pipelined_step_instead_of_hanging() {
    let deck = common::closed_box();
    let solver = deck.solver().unwrap();
    let backend = Faulty {
        inner: CpuBackend::new(solver),
        patch: 0,
        cell: [0; 3],
        value: 0.0,
        before: true,
        armed: false,
        panic_at: Some(2),
        solves: 0,
    };
    let mut it = Integrator::new(&deck, backend).unwrap();
    it.set_pipelined(true);
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| it.step()));
    let payload = r.expect_err("the step should unwind");
    let msg = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("");
    assert!(msg.contains("the backend failed"), "{msg}");
}
