//! A backend's item stage (`ResidentSolve::item_stage`): in device
//! residency the integrator hands every load and every regrid the items
//! staged for that very plan, made during the set-up for the first load
//! and beside the rest of the plan at each regrid; a stage that fails
//! leaves the backend to build its own, with the same answer.

mod common;

use std::sync::{Arc, Mutex};

use quilt_integrator::backend::{ItemStage, ResidentSolve, StagedItems};
use quilt_integrator::deck::{Deck, Residency};
use quilt_integrator::resident::ResidentPlan;
use quilt_integrator::{CpuBackend, Integrator, SolveBackend, SolveError};
use quilt_mesh::flat::{FlatTag, FlatTransfer, StepItems};
use quilt_sweep::{Batch, BatchLayout, StepReport, SweepOrder};

/// What a stage saw of a plan: its patches and the counts of its items.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Seen {
    patches: usize,
    descriptors: usize,
    copies: usize,
    interiors: usize,
}

impl Seen {
    fn of(layout: &BatchLayout, items: &StepItems, patches: usize) -> Self {
        Self {
            patches,
            descriptors: layout.patches().len(),
            copies: items.fill.copies.len(),
            interiors: items.interiors.len(),
        }
    }
}

/// What the backend was told, in order.
#[derive(Debug, PartialEq, Eq)]
enum Event {
    Offered(Option<Seen>),
    Load(Seen),
    Regrid(Seen),
}

struct Stage {
    fail: bool,
}

impl ItemStage for Stage {
    fn stage(
        &self,
        layout: &BatchLayout,
        items: &StepItems,
        patches: usize,
    ) -> Result<StagedItems, SolveError> {
        if self.fail {
            return Err(SolveError::Device {
                backend: "staging".into(),
                message: "no room for the items".into(),
                source: None,
            });
        }
        Ok(StagedItems::new(Seen::of(layout, items, patches)))
    }
}

/// The CPU backend with an item stage that records what it is handed.
struct Staging {
    inner: CpuBackend<f64>,
    fail: bool,
    events: Arc<Mutex<Vec<Event>>>,
}

impl Staging {
    fn log(&self, e: Event) {
        self.events.lock().unwrap().push(e);
    }
}

impl SolveBackend<f64> for Staging {
    fn name(&self) -> &str {
        "staging"
    }
    fn device(&self) -> String {
        "test".into()
    }
    fn thermo(&self) -> Arc<dyn quilt_sweep::physics::Thermo> {
        self.inner.thermo()
    }
    fn solve(
        &mut self,
        batch: &mut Batch<f64>,
        dt: f64,
        order: SweepOrder,
    ) -> Result<StepReport, SolveError> {
        self.inner.solve(batch, dt, order)
    }
    fn resident(&mut self) -> Option<&mut dyn ResidentSolve<f64>> {
        Some(self)
    }
}

impl ResidentSolve<f64> for Staging {
    fn load(&mut self, plan: &ResidentPlan, interiors: &[f64]) -> Result<(), SolveError> {
        self.log(Event::Load(Seen::of(
            &plan.layout,
            &plan.items,
            plan.patches,
        )));
        self.inner.load(plan, interiors)
    }
    fn max_rate(&mut self) -> Result<Option<f64>, SolveError> {
        self.inner.max_rate()
    }
    fn step(&mut self, dt: f64, order: SweepOrder) -> Result<StepReport, SolveError> {
        ResidentSolve::step(&mut self.inner, dt, order)
    }
    fn store(&mut self, interiors: &mut [f64]) -> Result<(), SolveError> {
        self.inner.store(interiors)
    }
    fn tag(&mut self, tag: &FlatTag, out: &mut [u32]) -> Result<(), SolveError> {
        self.inner.tag(tag, out)
    }
    fn regrid(&mut self, plan: &ResidentPlan, transfer: &FlatTransfer) -> Result<(), SolveError> {
        self.log(Event::Regrid(Seen::of(
            &plan.layout,
            &plan.items,
            plan.patches,
        )));
        self.inner.regrid(plan, transfer)
    }
    fn item_stage(&mut self) -> Option<Arc<dyn ItemStage>> {
        Some(Arc::new(Stage { fail: self.fail }))
    }
    fn offer_items(&mut self, staged: Option<StagedItems>) {
        let seen = staged.map(|s| s.downcast::<Seen>().expect("a stage's own value"));
        self.log(Event::Offered(seen));
    }
    fn unload(&mut self) {
        self.inner.unload();
    }
}

fn run(deck: &Deck, fail: bool, steps: usize) -> (Vec<Event>, Vec<u64>) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let backend = Staging {
        inner: CpuBackend::new(deck.solver().unwrap()),
        fail,
        events: events.clone(),
    };
    let mut it = Integrator::new(deck, backend).unwrap();
    for _ in 0..steps {
        it.step().unwrap();
    }
    it.sync_host().unwrap();
    let bits = common::state_bits(&it);
    let events = std::mem::take(&mut *events.lock().unwrap());
    (events, bits)
}

#[test]
fn every_load_and_regrid_is_offered_the_items_of_its_own_plan() {
    let mut deck = common::closed_box();
    deck.run.residency = Residency::Device;
    let (events, staged) = run(&deck, false, 7);
    let (loads, regrids) = (
        events
            .iter()
            .filter(|e| matches!(e, Event::Load(_)))
            .count(),
        events
            .iter()
            .filter(|e| matches!(e, Event::Regrid(_)))
            .count(),
    );
    assert_eq!(loads, 1, "{events:?}");
    assert!(regrids > 0, "the run must regrid: {events:?}");
    // Each load or regrid right after the offer of its own plan's items.
    for (k, e) in events.iter().enumerate() {
        if let Event::Load(seen) | Event::Regrid(seen) = e {
            assert!(k > 0, "{events:?}");
            assert_eq!(events[k - 1], Event::Offered(Some(*seen)), "{events:?}");
        }
    }
    // A stage that fails leaves the items to the backend: the same state.
    let (events, fallen_back) = run(&deck, true, 7);
    for (k, e) in events.iter().enumerate() {
        if let Event::Load(_) | Event::Regrid(_) = e {
            assert_eq!(events[k - 1], Event::Offered(None), "{events:?}");
        }
    }
    assert_eq!(staged, fallen_back);
    let mut host = deck.clone();
    host.run.residency = Residency::Host;
    let mut it = common::cpu(&host);
    for _ in 0..7 {
        it.step().unwrap();
    }
    assert_eq!(staged, common::state_bits(&it));
}
