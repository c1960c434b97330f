//! Problems of one's own through the builder: a criterion, a boundary
//! condition and an initial state written against the public API, on the
//! host-staged path, through a checkpoint and against the residency rules.

mod common;

use std::sync::Arc;

use quilt_integrator::deck::{Deck, Residency};
use quilt_integrator::problem::{
    DeckProblem, Faces, Field, OutputField, Problem, Refinement, deck_faces,
};
use quilt_integrator::{CpuBackend, Integrator, IntegratorBuilder, IntegratorError};
use quilt_mesh::fill::{BoundaryFace, FillTarget, PhysicalBc, UserBoundary};
use quilt_mesh::tag::{FnCriterion, TagInput};
use quilt_mesh::{IntVect, LevelGeometry, Side};

const GAMMA: f64 = 1.4;

/// Conserved state of gas with density `rho`, x velocity `u`, pressure `p`.
fn conserved(rho: f64, u: f64, p: f64) -> [f64; 5] {
    [
        rho,
        rho * u,
        0.0,
        0.0,
        p / (GAMMA - 1.0) + 0.5 * rho * u * u,
    ]
}

/// Denser gas streaming in through the low x face.
#[derive(Debug)]
struct Inflow;

impl UserBoundary<f64> for Inflow {
    fn fill(&self, face: &BoundaryFace<'_>, target: &mut FillTarget<'_, f64>) {
        let u = conserved(2.0, 0.6, 2.0);
        for p in face.region.iter() {
            for (c, v) in u.iter().enumerate() {
                // The region lies in the target by the trait's contract.
                let _ = target.set(c, &p, *v);
            }
        }
    }
}

/// Gas at rest in a closed box, except for an inflow on the low x face
/// (or, with `inflow` off, the deck's reflecting wall there), refined
/// where the density rises above 1.2.
struct Stream {
    deck: Deck,
    inflow: bool,
}

impl Problem<f64> for Stream {
    fn name(&self) -> &str {
        "stream"
    }

    fn initial_state(&self, _level: &LevelGeometry, _cell: &IntVect, state: &mut [f64]) {
        state.copy_from_slice(&conserved(1.0, 0.0, 1.0));
    }

    fn refinement(&self) -> Result<Vec<Refinement<f64>>, IntegratorError> {
        let dense = FnCriterion(|i: &TagInput<'_, f64>, p| i.value(&p).is_some_and(|r| r > 1.2));
        Ok(vec![Refinement::Custom {
            name: "dense".into(),
            field: Field::Component(0),
            criterion: Arc::new(dense),
        }])
    }

    fn faces(&self) -> Result<Faces<f64>, IntegratorError> {
        let mut f = deck_faces(&self.deck);
        if self.inflow {
            f[0][Side::Lo.index()] = PhysicalBc::User(Arc::new(Inflow));
        }
        Ok(f)
    }
}

/// An integrator of `problem` under `deck` on the CPU backend.
fn build(
    deck: &Deck,
    problem: impl Problem<f64> + 'static,
) -> Result<Integrator<f64, CpuBackend<f64>>, IntegratorError> {
    IntegratorBuilder::new(deck)
        .problem(problem)
        .build(CpuBackend::new(deck.solver().unwrap()))
}

fn stream(deck: &Deck, inflow: bool) -> Integrator<f64, CpuBackend<f64>> {
    let deck_copy = deck.clone();
    build(
        deck,
        Stream {
            deck: deck_copy,
            inflow,
        },
    )
    .unwrap()
}

/// A deck's sphere set through a problem of one's own that only forwards
/// the initial state to a position-wise formula.
struct Lumps;

impl Problem<f64> for Lumps {
    fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, state: &mut [f64]) {
        let x = level.cell_center(cell);
        let r2 = (x.x - 0.3).powi(2) + (x.y - 0.5).powi(2) + (x.z - 0.5).powi(2);
        let rho = if r2 < 0.15 * 0.15 { 3.0 } else { 1.0 };
        state.copy_from_slice(&conserved(rho, 0.0, 1.0));
    }

    fn refinement(&self) -> Result<Vec<Refinement<f64>>, IntegratorError> {
        // Tags exactly the cells of the left quarter, wherever the gas is.
        let left = FnCriterion(|i: &TagInput<'_, f64>, p: IntVect| {
            (f64::from(p.x) + 0.5) * i.dx()[0] < 0.25
        });
        Ok(vec![Refinement::Custom {
            name: "left quarter".into(),
            field: Field::Pressure,
            criterion: Arc::new(left),
        }])
    }

    fn faces(&self) -> Result<Faces<f64>, IntegratorError> {
        Ok(std::array::from_fn(|_| {
            [PhysicalBc::Outflow, PhysicalBc::Outflow]
        }))
    }
}

#[test]
fn the_initial_hierarchy_refines_what_a_custom_criterion_tags() {
    let deck = common::closed_box();
    let it = build(&deck, Lumps).unwrap();
    let h = it.hierarchy();
    assert_eq!(h.num_levels(), 2);
    let fine: Vec<_> = h
        .patches()
        .iter()
        .filter(|p| p.level() == 1)
        .map(|p| p.interior())
        .collect();
    // Level 1 halves the cells: the left quarter is x < 12 there, and the
    // tag buffer of one coarse cell may add up to x < 14.
    for x in 0..12 {
        for y in 0..48 {
            for z in [0, 17, 47] {
                let c = quilt_mesh::iv(x, y, z);
                assert!(fine.iter().any(|b| b.contains(&c)), "{c:?} not refined");
            }
        }
    }
    assert!(fine.iter().all(|b| b.hi.x < 16), "{fine:?}");
    // The initial state is the problem's, on every level.
    let d = it.data();
    for (i, p) in h.patches().iter().enumerate() {
        let lg = h.level_geometry(p.level()).unwrap();
        let mut u = [0.0; 5];
        for c in [p.interior().lo, p.interior().hi] {
            Lumps.initial_state(lg, &c, &mut u);
            if p.level() == 1 {
                assert_eq!(d.old(i).get(0, &c), u[0]);
            }
        }
    }
}

#[test]
fn a_user_inflow_feeds_mass_that_a_wall_keeps_out() {
    let mut deck = common::closed_box();
    deck.run.max_steps = 6;
    let mut wall = stream(&deck, false);
    let mut inflow = stream(&deck, true);
    let m0 = wall.conserved_totals().unwrap()[0];
    assert_eq!(inflow.conserved_totals().unwrap()[0], m0);
    // Nothing is dense at the start: one level.
    assert_eq!(inflow.hierarchy().num_levels(), 1);
    while !inflow.finished() {
        wall.step().unwrap();
        inflow.step().unwrap();
    }
    let (mw, mi) = (
        wall.conserved_totals().unwrap()[0],
        inflow.conserved_totals().unwrap()[0],
    );
    assert!((mw - m0).abs() <= 1e-12 * m0, "{mw} against {m0}");
    assert!(mi > m0 * (1.0 + 1e-4), "{mi} against {m0}");
    // The dense gas that came in is refined by the problem's criterion at
    // the regrid after step 5.
    assert_eq!(inflow.hierarchy().num_levels(), 2);
    assert_eq!(wall.hierarchy().num_levels(), 1);
}

#[test]
fn host_code_keeps_the_state_on_the_host() {
    let mut deck = common::closed_box();
    deck.run.residency = Residency::Device;
    let problem = Stream {
        deck: deck.clone(),
        inflow: true,
    };
    let e = build(&deck, problem).err().expect("refused");
    assert!(e.to_string().contains("\"dense\" runs host code"), "{e}");
    deck.run.residency = Residency::Auto;
    let it = stream(&deck, true);
    assert_eq!(it.residency(), Residency::Host);
}

#[test]
fn faces_that_contradict_the_periodic_axes_are_refused() {
    let deck = common::periodic_three_levels();
    let e = build(&deck, Lumps).err().expect("refused");
    assert!(e.to_string().contains("periodic"), "{e}");
}

#[test]
fn a_restart_with_the_problem_continues_bit_for_bit() {
    let mut deck = common::closed_box();
    deck.run.max_steps = 8;
    let mut straight = stream(&deck, true);
    while !straight.finished() {
        straight.step().unwrap();
    }
    let dir = std::env::temp_dir().join(format!("quilt-problem-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ck.h5");
    let mut first = stream(&deck, true);
    for _ in 0..6 {
        first.step().unwrap();
    }
    first.write_checkpoint(&path).unwrap();
    drop(first);
    let problem = Stream {
        deck: deck.clone(),
        inflow: true,
    };
    let mut resumed = IntegratorBuilder::new(&deck)
        .problem(problem)
        .restart(&path, CpuBackend::new(deck.solver().unwrap()))
        .unwrap();
    while !resumed.finished() {
        resumed.step().unwrap();
    }
    assert_eq!(resumed.steps(), 8);
    assert!(common::state_bits(&resumed) == common::state_bits(&straight));
    // The deck's own problem (a wall where the inflow was) departs from it.
    let mut walled =
        Integrator::<f64, _>::restart(&path, Some(&deck), CpuBackend::new(deck.solver().unwrap()))
            .unwrap();
    while !walled.finished() {
        walled.step().unwrap();
    }
    assert!(common::state_bits(&walled) != common::state_bits(&straight));
    std::fs::remove_dir_all(&dir).ok();
}

/// What the hook saw of a step: number, time, patches, the first patch's
/// first density (if it read the state).
type Seen = (u64, f64, usize, Option<f64>);

/// The deck's problem with an after-step hook that records what it sees
/// (step, time, patches, the first patch's first density) and fails at
/// step `fail_at`.
struct Watched {
    inner: quilt_integrator::DeckProblem,
    reads: bool,
    fail_at: u64,
    seen: std::sync::Mutex<Vec<Seen>>,
}

impl Problem<f64> for Watched {
    fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, state: &mut [f64]) {
        Problem::<f64>::initial_state(&self.inner, level, cell, state)
    }
    fn refinement(&self) -> Result<Vec<Refinement<f64>>, IntegratorError> {
        Problem::<f64>::refinement(&self.inner)
    }
    fn faces(&self) -> Result<Faces<f64>, IntegratorError> {
        Problem::<f64>::faces(&self.inner)
    }
    fn reads_state_after_step(&self) -> bool {
        self.reads
    }
    fn after_step(
        &self,
        step: &quilt_integrator::AfterStep<'_, f64>,
    ) -> Result<(), IntegratorError> {
        let first = step.data.map(|d| {
            let p = &step.hierarchy.patches()[0];
            d.old(0).get(0, &p.interior().lo)
        });
        self.seen.lock().unwrap().push((
            step.info.step,
            step.info.time,
            step.hierarchy.num_patches(),
            first,
        ));
        if step.info.step == self.fail_at {
            return Err(IntegratorError::Config(format!(
                "stopped by the hook at step {}",
                step.info.step
            )));
        }
        Ok(())
    }
}

#[test]
fn the_after_step_hook_sees_every_step_and_its_error_ends_the_step() {
    let mut deck = common::closed_box();
    deck.run.max_steps = 7;
    for (residency, reads) in [
        (Residency::Host, true),
        (Residency::Device, true),
        (Residency::Host, false),
    ] {
        deck.run.residency = residency;
        let watched = Arc::new(Watched {
            inner: quilt_integrator::DeckProblem::new(&deck),
            reads,
            fail_at: 6,
            seen: std::sync::Mutex::new(Vec::new()),
        });
        let mut it = IntegratorBuilder::new(&deck)
            .problem(Shared(Arc::clone(&watched)))
            .build(CpuBackend::new(deck.solver().unwrap()))
            .unwrap();
        for s in 1..=5u64 {
            let info = it.step().unwrap();
            let seen = watched.seen.lock().unwrap();
            let &(step, time, patches, first) = seen.last().unwrap();
            assert_eq!(
                (step, time, patches),
                (s, info.time, it.hierarchy().num_patches())
            );
            if reads {
                // The state after the step (a regrid after step 5 included).
                it.sync_host().unwrap();
                let p = &it.hierarchy().patches()[0];
                let want = it.data().old(0).get(0, &p.interior().lo);
                assert_eq!(first, Some(want), "{residency:?} step {s}");
            } else {
                assert_eq!(first, None);
            }
        }
        let e = it.step().unwrap_err().to_string();
        assert!(e.contains("stopped by the hook at step 6"), "{e}");
        assert_eq!(it.steps(), 6, "the step stays taken");
    }
}

/// A shared problem (the test keeps a handle to read what it recorded).
struct Shared(Arc<Watched>);

impl Problem<f64> for Shared {
    fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, state: &mut [f64]) {
        self.0.initial_state(level, cell, state)
    }
    fn refinement(&self) -> Result<Vec<Refinement<f64>>, IntegratorError> {
        self.0.refinement()
    }
    fn faces(&self) -> Result<Faces<f64>, IntegratorError> {
        self.0.faces()
    }
    fn reads_state_after_step(&self) -> bool {
        self.0.reads_state_after_step()
    }
    fn after_step(
        &self,
        step: &quilt_integrator::AfterStep<'_, f64>,
    ) -> Result<(), IntegratorError> {
        self.0.after_step(step)
    }
}

/// The deck's sphere with a cell array of its own: the density in units
/// of the ambient gas's, less one.
struct Contrast(DeckProblem);

impl Problem<f64> for Contrast {
    fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, state: &mut [f64]) {
        Problem::<f64>::initial_state(&self.0, level, cell, state);
    }
    fn refinement(&self) -> Result<Vec<Refinement<f64>>, IntegratorError> {
        self.0.refinement()
    }
    fn faces(&self) -> Result<Faces<f64>, IntegratorError> {
        self.0.faces()
    }
    fn output_fields(&self) -> Vec<OutputField> {
        vec![OutputField::new("contrast", |u, _| u[0] - 1.0)]
    }
}

#[test]
fn outputs_hold_the_derived_fields_and_the_problems_own() {
    let mut deck = common::closed_box();
    deck.output.derived = vec!["mach".into(), "sound_speed".into()];
    let mut it = build(&deck, Contrast(DeckProblem::new(&deck))).unwrap();
    it.step().unwrap();
    let out = it.output().unwrap().unwrap();
    let gas = quilt_sweep::physics::Gas::ideal(GAMMA);
    let mut checked = 0;
    for (l, level) in out.levels.iter().enumerate() {
        let names: Vec<&str> = level.cell_arrays.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "density",
                "velocity",
                "pressure",
                "total_energy",
                "mach",
                "sound_speed",
                "contrast",
                "patch_id"
            ],
            "level {l}"
        );
        let col = |name: &str| match &level.array(name).unwrap().values {
            quilt_io::CellValues::F64(v) => v.clone(),
            other => panic!("{name}: {other:?}"),
        };
        let (rho, vel, p) = (col("density"), col("velocity"), col("pressure"));
        let (mach, c, contrast) = (col("mach"), col("sound_speed"), col("contrast"));
        for i in 0..rho.len() {
            let cs = gas.sound_speed(rho[i], p[i]);
            let v = &vel[3 * i..3 * i + 3];
            let speed = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
            assert!((c[i] - cs).abs() <= 1e-12 * cs, "level {l} cell {i}");
            assert!((mach[i] - speed / cs).abs() <= 1e-12, "level {l} cell {i}");
            assert_eq!(contrast[i], rho[i] - 1.0);
            checked += 1;
        }
    }
    assert!(checked > 1000);
    assert!(out.levels.iter().any(|l| {
        let quilt_io::CellValues::F64(m) = &l.array("mach").unwrap().values else {
            return false;
        };
        m.iter().any(|&m| m > 0.01)
    }));
    // A name another cell array has is refused when the run is built.
    struct Clash;
    impl Problem<f64> for Clash {
        fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, state: &mut [f64]) {
            Lumps.initial_state(level, cell, state);
        }
        fn refinement(&self) -> Result<Vec<Refinement<f64>>, IntegratorError> {
            Lumps.refinement()
        }
        fn faces(&self) -> Result<Faces<f64>, IntegratorError> {
            Lumps.faces()
        }
        fn output_fields(&self) -> Vec<OutputField> {
            vec![OutputField::new("mach", |u, _| u[0])]
        }
    }
    let err = build(&deck, Clash).err().expect("a clashing name");
    assert!(err.to_string().contains("\"mach\""), "{err}");
}
