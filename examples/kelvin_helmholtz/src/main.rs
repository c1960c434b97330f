//! A Kelvin–Helmholtz shear layer fed by an inflow: an AMR solver written
//! against quilt's public API only (docs/tutorial.md walks through it).
//!
//! A dense band of gas streams faster than the gas around it. Both enter
//! the box through the low `x` face, where a boundary condition of this
//! program prescribes the two streams and a slow transverse wobble that
//! seeds the instability; they leave through the high `x` face. The `y`
//! faces are walls and `z` is periodic. A refinement criterion of this
//! program refines wherever the density jumps by more than a few per cent
//! from one cell to the next, so the levels follow the rolling interfaces.
//! A passive scalar, `dye`, marks the gas of the dense band (its mass
//! fraction is 1 there and 0 outside), so the output shows how the two
//! streams mix; the output also holds the Mach number (a derived field of
//! the settings) and `mixing`, a field of this program's own.
//!
//! ```text
//! cargo run --release -p kelvin-helmholtz -- [--steps N] [--out DIR] [--every N] [--levels N]
//! ```
//!
//! Every `--every` steps it writes `DIR/kh_NNNNNN.vtkhdf` (open the
//! `kh.vtkhdf.series` file in ParaView).

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Result;
use clap::Parser;
use quilt::integrator::deck::Deck;
use quilt::integrator::problem::{Faces, Field, OutputField, Problem, Refinement};
use quilt::integrator::{AfterStep, IntegratorBuilder, IntegratorError, SolveBackend, backend_for};
use quilt::io::VtkHdfSeries;
use quilt::mesh::fill::{BoundaryFace, FillTarget, PhysicalBc, UserBoundary};
use quilt::mesh::tag::{FnCriterion, TagInput};
use quilt::mesh::{IntVect, LevelGeometry, iv};

/// The settings: everything but the problem. `[boundary]` only says which
/// axes are periodic here; the faces themselves are the problem's.
const SETTINGS: &str = r#"
[domain]
lo = [0.0, 0.0, 0.0]
hi = [2.0, 1.0, 0.5]
base_cells = [64, 32, 16]
[amr]
max_levels = 3
base_patch = 16
max_patch = 32
regrid_interval = 4
[boundary]
z_lo = "periodic"
z_hi = "periodic"
[hydro]
gamma = 1.4
cfl = 0.4
scalars = ["dye"]
[run]
end_time = 100.0
[output]
derived = ["mach"]
"#;

const GAMMA: f64 = 1.4;
/// Pressure everywhere (the layer is in pressure balance).
const PRESSURE: f64 = 2.5;

/// The two streams: `(density, x velocity, band)` at height `y`, the
/// dense fast band between y = 0.35 and 0.65 with interfaces smoothed over
/// a few cells of the base grid; `band` (0 to 1) is the share of the
/// band's gas, the dye's mass fraction.
fn stream(y: f64) -> (f64, f64, f64) {
    let width = 0.02;
    let band = 0.5 * ((y - 0.35) / width).tanh() - 0.5 * ((y - 0.65) / width).tanh();
    (1.0 + band, 0.3 + 0.6 * band, band)
}

/// Conserved state `[ρ, ρu, ρv, ρw, E, ρ dye]` of gas with dye fraction
/// `dye`: the Euler components, then the passive scalar as a partial
/// density.
fn conserved(rho: f64, u: f64, v: f64, dye: f64) -> [f64; 6] {
    [
        rho,
        rho * u,
        rho * v,
        0.0,
        PRESSURE / (GAMMA - 1.0) + 0.5 * rho * (u * u + v * v),
        rho * dye,
    ]
}

/// The inflow on the low `x` face: both streams, with a transverse
/// velocity that oscillates in time near the interfaces.
#[derive(Debug)]
struct Inflow;

impl UserBoundary<f64> for Inflow {
    fn fill(&self, face: &BoundaryFace<'_>, target: &mut FillTarget<'_, f64>) {
        for cell in face.region.iter() {
            let y = face.level.cell_center(&cell).y;
            let (rho, u, dye) = stream(y);
            let near = (-((y - 0.35) / 0.05).powi(2)).exp() + (-((y - 0.65) / 0.05).powi(2)).exp();
            let v = 0.05 * near * (2.0 * std::f64::consts::PI * face.time / 0.5).sin();
            for (c, value) in conserved(rho, u, v, dye).into_iter().enumerate() {
                // The face's region lies in the target (UserBoundary's
                // contract), so this cannot fail.
                let _ = target.set(c, &cell, value);
            }
        }
    }
}

/// The shear layer: the problem's initial state, criterion and faces,
/// and a diagnostic of the dye every `every` steps.
struct ShearLayer {
    every: u64,
}

impl Problem<f64> for ShearLayer {
    fn name(&self) -> &str {
        "kelvin-helmholtz"
    }

    fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, state: &mut [f64]) {
        let (rho, u, dye) = stream(level.cell_center(cell).y);
        state.copy_from_slice(&conserved(rho, u, 0.0, dye));
    }

    fn refinement(&self) -> Result<Vec<Refinement<f64>>, IntegratorError> {
        // A relative density jump of 4 % to a face neighbour.
        let jump = FnCriterion(|input: &TagInput<'_, f64>, p: IntVect| {
            let Some(here) = input.value(&p) else {
                return false;
            };
            [
                iv(p.x + 1, p.y, p.z),
                iv(p.x, p.y + 1, p.z),
                iv(p.x, p.y, p.z + 1),
            ]
            .iter()
            .any(|q| {
                let next = input.value(q).unwrap_or(here);
                (next - here).abs() > 0.04 * here.min(next)
            })
        });
        Ok(vec![Refinement::Custom {
            name: "density jump".into(),
            field: Field::Component(0),
            criterion: Arc::new(jump),
        }])
    }

    fn faces(&self) -> Result<Faces<f64>, IntegratorError> {
        // [axis][side]: the inflow on the low x face, walls in y, and z
        // periodic as the settings' [boundary] section says.
        Ok([
            [PhysicalBc::User(Arc::new(Inflow)), PhysicalBc::Outflow],
            [PhysicalBc::Reflecting, PhysicalBc::Reflecting],
            [PhysicalBc::Periodic, PhysicalBc::Periodic],
        ])
    }

    fn output_fields(&self) -> Vec<OutputField> {
        // 4 φ (1 − φ) of the dye's fraction φ: 0 in either pure stream, 1
        // where they are mixed half and half.
        vec![OutputField::new("mixing", |u, _| {
            let phi = u[5] / u[0];
            4.0 * phi * (1.0 - phi)
        })]
    }

    fn reads_state_after_step(&self) -> bool {
        true
    }

    fn after_step(&self, step: &AfterStep<'_, f64>) -> Result<(), IntegratorError> {
        let Some(data) = step.data.filter(|_| step.info.step % self.every == 0) else {
            return Ok(());
        };
        // The dye's mass fraction on the base level (finer levels are
        // restricted onto it): the cells where the two streams mix, and
        // its range, which consistent advection keeps within [0, 1].
        let (mut mixed, mut lo, mut hi) = (0usize, f64::INFINITY, f64::NEG_INFINITY);
        for (i, p) in step.hierarchy.patches().iter().enumerate() {
            if p.level() != 0 {
                continue;
            }
            let d = data.old(i);
            for c in p.interior().iter() {
                let phi = d.get(5, &c) / d.get(0, &c);
                (lo, hi) = (lo.min(phi), hi.max(phi));
                mixed += usize::from((0.05..0.95).contains(&phi));
            }
        }
        log::info!(
            "step {}: the dye is mixed in {mixed} base cells, its fraction within [{lo:.2e}, {hi:.6}]",
            step.info.step
        );
        Ok(())
    }
}

fn patches_per_level(h: &quilt::mesh::Hierarchy) -> Vec<usize> {
    let mut n = vec![0; h.num_levels()];
    for p in h.patches() {
        n[p.level()] += 1;
    }
    n
}

/// A Kelvin-Helmholtz shear layer fed by an inflow, on quilt.
#[derive(Parser, Debug)]
struct Args {
    /// Coarse steps to take.
    #[arg(long, default_value_t = 1000)]
    steps: u64,
    /// Directory for the VTKHDF series (none written without it).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Steps between outputs and progress lines (0 counts as 1).
    #[arg(long, default_value_t = 50)]
    every: u64,
    /// Levels including the base level (the settings' 3 otherwise).
    #[arg(long)]
    levels: Option<usize>,
}

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let mut args = Args::parse();
    args.every = args.every.max(1);
    let mut settings = Deck::parse_named(SETTINGS, "the example's settings")?;
    settings.run.max_steps = args.steps;
    if let Some(l) = args.levels {
        settings.amr.max_levels = l;
    }
    let backend: Box<dyn SolveBackend<f64>> = backend_for(&settings)?;
    log::info!("solve backend: {}", backend.device());
    let mut run = IntegratorBuilder::new(&settings)
        .problem(ShearLayer { every: args.every })
        .build(backend)?;
    let mut series = match &args.out {
        Some(dir) => Some(VtkHdfSeries::create(dir, "kh")?),
        None => None,
    };
    let mut write = |run: &mut quilt::integrator::Integrator<f64, _>| -> Result<()> {
        if let (Some(s), Some(out)) = (series.as_mut(), run.output()?) {
            let path = s.write(&out)?;
            log::info!("wrote {}", path.display());
        }
        Ok(())
    };
    log::info!(
        "initial hierarchy: patches per level {:?}",
        patches_per_level(run.hierarchy())
    );
    write(&mut run)?;
    let mass0 = run.conserved_totals()?[0];
    while !run.finished() {
        let info = run.step()?;
        if run.steps() % args.every == 0 || run.finished() {
            log::info!(
                "step {} t = {:.4} dt = {:.3e}: {} levels, patches per level {:?}, mass {:+.3e} since the start",
                run.steps(),
                run.time(),
                info.dt,
                run.hierarchy().num_levels(),
                patches_per_level(run.hierarchy()),
                run.conserved_totals()?[0] - mass0
            );
            write(&mut run)?;
        }
    }
    Ok(())
}
