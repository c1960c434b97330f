//! Shared helpers of the integrator tests.
#![allow(dead_code)]

use quilt_integrator::deck::Deck;
use quilt_integrator::{CpuBackend, Integrator, SolveBackend};

/// A small closed box (reflecting walls) with an off-centre over-pressured
/// sphere, two levels, regrids every 5 steps, several batches per step.
pub fn closed_box() -> Deck {
    Deck::parse(
        r#"
[domain]
base_cells = [24, 24, 24]
[amr]
max_levels = 2
base_patch = 12
max_patch = 24
regrid_interval = 5
tag_buffer = 1
[[tagging]]
field = "pressure"
detector = "gradient"
tol = 8.0
[boundary]
x_lo = "reflecting"
x_hi = "reflecting"
y_lo = "reflecting"
y_hi = "reflecting"
z_lo = "reflecting"
z_hi = "reflecting"
[initial.sphere]
center = [0.42, 0.47, 0.5]
radius = 0.16
rho_in = 2.0
p_in = 8.0
[run]
end_time = 10.0
[batching]
max_bins = 2
bin_edge = 32
"#,
    )
    .expect("test deck")
}

/// A box periodic along `x` and `z`, reflecting at low `y` and outflow at
/// high `y`, three levels with the refined region across the periodic `x`
/// faces, regrids every 2 steps, minmod interpolation.
pub fn periodic_three_levels() -> Deck {
    Deck::parse(
        r#"
[domain]
base_cells = [20, 20, 20]
[amr]
max_levels = 3
base_patch = 10
max_patch = 28
min_patch = 12
regrid_interval = 2
tag_buffer = 1
interpolation = "minmod"
[[tagging]]
field = "pressure"
detector = "gradient"
tol = 6.0
[boundary]
x_lo = "periodic"
x_hi = "periodic"
y_lo = "reflecting"
y_hi = "outflow"
z_lo = "periodic"
z_hi = "periodic"
[initial.sphere]
center = [0.06, 0.5, 0.47]
radius = 0.15
rho_in = 2.0
p_in = 6.0
[run]
end_time = 10.0
[batching]
bin_edge = 32
"#,
    )
    .expect("test deck")
}

/// An integrator on the CPU backend.
pub fn cpu(deck: &Deck) -> Integrator<f64, CpuBackend<f64>> {
    let solver = deck.solver().expect("solver");
    Integrator::new(deck, CpuBackend::new(solver)).expect("integrator")
}

/// Every old interior value of the Euler components of every patch, bit
/// for bit.
pub fn state_bits<B: SolveBackend<f64>>(it: &Integrator<f64, B>) -> Vec<u64> {
    component_bits(it, 0..5)
}

/// Every old interior value of components `comps` of every patch, bit for
/// bit (patch by patch, then component by component).
pub fn component_bits<B: SolveBackend<f64>>(
    it: &Integrator<f64, B>,
    comps: std::ops::Range<usize>,
) -> Vec<u64> {
    let h = it.hierarchy();
    let d = it.data();
    let mut out = Vec::new();
    for (i, p) in h.patches().iter().enumerate() {
        let pd = d.old(i);
        for c in comps.clone() {
            for q in p.interior().iter() {
                out.push(pd.get(c, &q).to_bits());
            }
        }
    }
    out
}

/// `deck` tagged by every detector on both fields: the default pressure
/// gradient and shock criteria and a density shock criterion.
pub fn with_every_detector(mut deck: Deck) -> Deck {
    use quilt_integrator::deck::{Detector, TagField, TagSection, default_tagging};
    deck.tagging = default_tagging();
    deck.tagging.push(TagSection {
        field: TagField::Density,
        detector: Detector::Shock,
        tol: 0.5,
        onset: 0.85,
    });
    deck
}
