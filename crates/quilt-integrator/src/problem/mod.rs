//! What a run solves besides the equations: the initial state, where to
//! refine, and the conditions on the domain's faces.
//!
//! A [`Problem`] is the extension point for solver authors. The
//! [`Integrator`](crate::Integrator) asks it once, when it is built, for
//! its refinement criteria and boundary conditions, and at set-up for the
//! initial state of every patch of every level of the initial refinement
//! iterations (tag, cluster, and the initial state set afresh on the new
//! patches, up to `amr.max_levels`). Everything else of a run (the mesh,
//! the schemes, the batching, the backend) comes from the settings
//! ([`Deck`](crate::deck::Deck)).
//!
//! quilt's own problems are those of the TOML decks: [`Sphere`],
//! [`Sedov`], [`Riemann`] and [`Uniform`], each an initial state of an
//! ideal gas averaged over every cell by sampling, with a [`Setting`] (the
//! gas, the criteria of `[[tagging]]` and the faces of `[boundary]`).
//! [`DeckProblem`] is the one a deck's `[initial]` names. A problem of
//! one's own may reuse parts of them through [`Setting`],
//! [`deck_refinement`] and [`deck_faces`].
//!
//! Built-in criteria and boundary conditions run on the host and in the
//! backend's device residency; [`Refinement::Custom`] criteria and
//! [`PhysicalBc::User`] faces run host code, so a problem with either is
//! host-staged (`run.residency = "auto"` says so; `"device"` is refused).

use std::fmt;
use std::sync::Arc;

use quilt_mesh::fill::PhysicalBc;
use quilt_mesh::tag::{GradientDetector, ShockDetector, TagCriterion};
use quilt_mesh::{Hierarchy, HierarchyData, IntVect, LevelGeometry, PatchData, Side};
use quilt_sweep::physics::{RHO, Thermo};

use crate::Real;
use crate::deck::TagField;
use crate::error::IntegratorError;
use crate::integrator::StepInfo;

mod output;
mod riemann;
mod sampling;
mod sedov;
mod setting;
mod sphere;
mod uniform;

pub use output::{CellFunction, OutputField};
pub(crate) use output::{Column, columns};
pub use riemann::Riemann;
pub use sedov::Sedov;
pub use setting::{DeckProblem, Setting, deck_faces, deck_refinement};
pub use sphere::Sphere;
pub use uniform::Uniform;

/// The field a refinement criterion looks at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// One conserved component (`quilt_sweep::physics::RHO` for the
    /// density).
    Component(usize),
    /// The pressure, derived from the conserved components by the
    /// equation of state.
    Pressure,
}

impl From<TagField> for Field {
    fn from(f: TagField) -> Self {
        match f {
            TagField::Density => Field::Component(RHO),
            TagField::Pressure => Field::Pressure,
        }
    }
}

/// One refinement criterion of a problem. Every criterion of a patch tags
/// into the same field (their union is refined).
#[derive(Clone)]
pub enum Refinement<T> {
    /// quilt's gradient detector on a field (also runs in the backend).
    Gradient(Field, GradientDetector),
    /// quilt's shock detector on a field (also runs in the backend).
    Shock(Field, ShockDetector),
    /// A criterion of the problem's own on a field, for example a
    /// [`quilt_mesh::tag::FnCriterion`] closure. Its input is the field over
    /// the patch's data box (the interior grown by the ghost width, ghost
    /// cells filled), split into slabs along `z` that keep the ghost width
    /// of cells on either side. It runs on the host only.
    Custom {
        /// What it is called in errors and logs.
        name: String,
        /// The field it reads.
        field: Field,
        /// The criterion.
        criterion: Arc<dyn TagCriterion<T> + Send + Sync>,
    },
}

impl<T> Refinement<T> {
    /// The field the criterion reads.
    pub fn field(&self) -> Field {
        match self {
            Refinement::Gradient(f, _) | Refinement::Shock(f, _) => *f,
            Refinement::Custom { field, .. } => *field,
        }
    }

    /// A short name for errors and logs.
    pub fn name(&self) -> &str {
        match self {
            Refinement::Gradient(..) => "gradient",
            Refinement::Shock(..) => "shock",
            Refinement::Custom { name, .. } => name,
        }
    }
}

impl<T> fmt::Debug for Refinement<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refinement::Gradient(field, d) => {
                f.debug_tuple("Gradient").field(field).field(d).finish()
            }
            Refinement::Shock(field, d) => f.debug_tuple("Shock").field(field).field(d).finish(),
            Refinement::Custom { name, field, .. } => f
                .debug_struct("Custom")
                .field("name", name)
                .field("field", field)
                .finish_non_exhaustive(),
        }
    }
}

/// The conditions on the six faces of the domain, `[axis][side]` with
/// [`Side::index`]. Faces of a periodic axis must say
/// [`PhysicalBc::Periodic`], and only they (the geometry's periodic axes
/// come from the settings' `[boundary]` section). Which components form
/// vectors (negated by reflecting walls) is the physics' business, not the
/// problem's.
pub type Faces<T> = [[PhysicalBc<T>; 2]; 3];

/// A problem: initial state, refinement criteria and boundary conditions
/// (see the module docs).
///
/// ```
/// use quilt_integrator::problem::{Faces, Field, Problem, Refinement, deck_faces};
/// use quilt_integrator::deck::Deck;
/// use quilt_integrator::{CpuBackend, Integrator, IntegratorBuilder, IntegratorError};
/// use quilt_mesh::tag::FnCriterion;
/// use quilt_mesh::{IntVect, LevelGeometry};
/// use std::sync::Arc;
///
/// /// Still gas, twice as dense in the lower half of the domain, refined
/// /// where the density is above 1.5.
/// struct Layers { faces_from: Deck }
///
/// impl Problem<f64> for Layers {
///     fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, u: &mut [f64]) {
///         let z = level.cell_center(cell).z;
///         u.fill(0.0);
///         u[0] = if z < 0.5 { 2.0 } else { 1.0 };
///         u[4] = 1.0 / (1.4 - 1.0);
///     }
///     fn refinement(&self) -> Result<Vec<Refinement<f64>>, IntegratorError> {
///         let dense = FnCriterion(|i: &quilt_mesh::tag::TagInput<'_, f64>, p| {
///             i.value(&p).is_some_and(|rho| rho > 1.5)
///         });
///         Ok(vec![Refinement::Custom {
///             name: "dense".into(),
///             field: Field::Component(0),
///             criterion: Arc::new(dense),
///         }])
///     }
///     fn faces(&self) -> Result<Faces<f64>, IntegratorError> {
///         Ok(deck_faces(&self.faces_from))
///     }
/// }
///
/// let deck = Deck::parse(
///     "[domain]\nbase_cells = [16, 16, 16]\n[amr]\nmax_levels = 2\n[run]\nmax_steps = 1",
/// )?;
/// let mut run = IntegratorBuilder::new(&deck)
///     .problem(Layers { faces_from: deck.clone() })
///     .build(CpuBackend::new(deck.solver()?))?;
/// assert_eq!(run.hierarchy().num_levels(), 2);
/// run.step()?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait Problem<T: Real>: Send + Sync {
    /// A short name for logs.
    fn name(&self) -> &str {
        "problem"
    }

    /// Writes into `state` (one value per conserved component) the state
    /// averaged over cell `cell` of `level`. Called for every cell of a
    /// patch's data box, ghost cells included (they may lie outside the
    /// domain), from several threads at once.
    fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, state: &mut [f64]);

    /// `Ok` when the initial state is written for `gas`, the fluid the
    /// backend solves; else why not (the builder refuses the problem with
    /// it). quilt's problems state pressures of an ideal gas of a given
    /// γ. The default accepts every fluid.
    fn accepts(&self, gas: &dyn Thermo) -> Result<(), String> {
        let _ = gas;
        Ok(())
    }

    /// Sets the whole data box of one patch of `level` (ghost cells
    /// included) to the initial state. The default evaluates
    /// [`Problem::initial_state`] cell by cell; a problem that computes a
    /// patch at once (from a file, or with work shared between cells)
    /// overrides it.
    fn initial_patch(&self, level: &LevelGeometry, data: &mut PatchData<T>) {
        let mut state = vec![0.0; data.ncomp()];
        data.fill_cells_with(|cell, values| {
            self.initial_state(level, cell, &mut state);
            for (v, s) in values.iter_mut().zip(&state) {
                *v = T::from_f64(*s);
            }
        });
    }

    /// The refinement criteria.
    fn refinement(&self) -> Result<Vec<Refinement<T>>, IntegratorError>;

    /// The conditions on the domain's faces.
    fn faces(&self) -> Result<Faces<T>, IntegratorError>;

    /// Cell arrays of the problem's own in every output, after the Euler
    /// arrays, the passive scalars' fractions and the settings'
    /// `output.derived` (for instance a mixing indicator from a passive
    /// scalar). Their names must differ from every other cell array's;
    /// the builder checks them. Default none.
    fn output_fields(&self) -> Vec<OutputField> {
        Vec::new()
    }

    /// Whether [`Problem::after_step`] reads the state: the integrator then
    /// makes its host copy current after every step (in device residency
    /// a copy from the device, which costs about a host-staged step's
    /// transfers), else the hook gets none. Default `false`.
    fn reads_state_after_step(&self) -> bool {
        false
    }

    /// Called after every step (regrids it took included) with the
    /// step's report and the hierarchy, and the state if
    /// [`Problem::reads_state_after_step`]: diagnostics, probes, stopping
    /// criteria. An error ends [`Integrator::step`](crate::Integrator::step)
    /// with it; the step itself stays taken. In a run over ranks each rank
    /// sees its own patches' data. Interior mutability (a `Mutex`) holds
    /// what the hook accumulates. The default does nothing.
    fn after_step(&self, step: &AfterStep<'_, T>) -> Result<(), IntegratorError> {
        let _ = step;
        Ok(())
    }
}

/// What [`Problem::after_step`] is given.
pub struct AfterStep<'a, T: Real> {
    /// The step's report (number, time, time step, cells, phases).
    pub info: &'a StepInfo,
    /// The hierarchy after the step (and after a regrid it took).
    pub hierarchy: &'a Hierarchy,
    /// The state after the step (its `old` half holds the new time), if
    /// the problem reads it ([`Problem::reads_state_after_step`]).
    pub data: Option<&'a HierarchyData<T>>,
}

/// Why a problem's criteria or faces keep the state on the host, if they
/// do: the first [`Refinement::Custom`] criterion or
/// [`PhysicalBc::User`] face.
pub(crate) fn host_only<T>(refinement: &[Refinement<T>], faces: &Faces<T>) -> Option<String> {
    if let Some(r) = refinement
        .iter()
        .find(|r| matches!(r, Refinement::Custom { .. }))
    {
        return Some(format!(
            "the refinement criterion {:?} runs host code",
            r.name()
        ));
    }
    for (axis, pair) in faces.iter().enumerate() {
        for side in Side::BOTH {
            if matches!(pair[side.index()], PhysicalBc::User(_)) {
                return Some(format!(
                    "the boundary condition on axis {axis}, {side:?} face runs host code"
                ));
            }
        }
    }
    None
}
