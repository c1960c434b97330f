//! The deck's problems: [`Setting`] (what they share besides the initial
//! state) and [`DeckProblem`] (the one `[initial].kind` names).

use quilt_mesh::fill::PhysicalBc;
use quilt_mesh::tag::{GradientDetector, ShockDetector, TagError};
use quilt_mesh::{IntVect, LevelGeometry, Side};
use quilt_sweep::physics::Thermo;

use super::{Faces, Problem, Refinement, Riemann, Sedov, Sphere, Uniform};
use crate::Real;
use crate::deck::{
    Boundary, BoundarySection, Deck, Detector, InitialKind, TagSection, default_tagging,
};
use crate::error::IntegratorError;

/// What the deck's problems share besides their initial state: the ideal
/// gas their states are given for, their refinement criteria and their
/// faces, as the deck's `hydro.gamma`, `[[tagging]]` and `[boundary]`
/// state them. The default is the default deck's.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// γ of the ideal gas whose pressures the initial states give.
    pub gamma: f64,
    /// The refinement criteria.
    pub tagging: Vec<TagSection>,
    /// The conditions on the six faces.
    pub boundary: BoundarySection,
}

impl Default for Setting {
    fn default() -> Self {
        Self {
            gamma: 1.4,
            tagging: default_tagging(),
            boundary: BoundarySection::default(),
        }
    }
}

impl Setting {
    /// The setting of `deck`.
    pub fn of(deck: &Deck) -> Self {
        Self {
            gamma: deck.hydro.gamma,
            tagging: deck.tagging.clone(),
            boundary: deck.boundary.clone(),
        }
    }

    /// The criteria of [`Setting::tagging`].
    pub fn refinement<T>(&self) -> Result<Vec<Refinement<T>>, IntegratorError> {
        refinement_of(&self.tagging).map_err(|source| IntegratorError::Tag { step: 0, source })
    }

    /// The faces of [`Setting::boundary`].
    pub fn faces<T>(&self) -> Faces<T> {
        faces_of(&self.boundary)
    }

    /// `Ok` when `gas` is the ideal gas of [`Setting::gamma`], which the
    /// initial states' pressures are stated for.
    pub fn accepts(&self, gas: &dyn Thermo) -> Result<(), String> {
        if gas.ideal_gamma() == Some(self.gamma) {
            Ok(())
        } else {
            Err(format!(
                "its initial state is an ideal gas of gamma = {}, but the backend solves the {} of parameters {:?}",
                self.gamma,
                gas.name(),
                gas.params()
            ))
        }
    }
}

/// The problem a deck's `[initial]` section names, with the deck's
/// [`Setting`]. Each passive scalar of `hydro.scalars` starts as the
/// partial density of the gas inside the sphere or the Sedov deposit, of
/// the Riemann problem's left state, or of all the gas for a uniform state.
#[derive(Clone, Debug)]
pub enum DeckProblem {
    /// `kind = "sphere"`.
    Sphere(Sphere),
    /// `kind = "sedov"`.
    Sedov(Sedov),
    /// `kind = "riemann"`.
    Riemann(Riemann),
    /// `kind = "uniform"`.
    Uniform(Uniform),
}

impl DeckProblem {
    /// The problem of `deck` (validated when the integrator is built).
    pub fn new(deck: &Deck) -> Self {
        let setting = Setting::of(deck);
        let i = &deck.initial;
        match i.kind {
            InitialKind::Sphere => Self::Sphere(Sphere::new(i.sphere.clone(), setting)),
            InitialKind::Sedov => Self::Sedov(Sedov::new(i.sedov.clone(), setting)),
            InitialKind::Riemann => Self::Riemann(Riemann::new(i.riemann.clone(), setting)),
            InitialKind::Uniform => Self::Uniform(Uniform::new(i.uniform.clone(), setting)),
        }
    }

    /// The problem, whichever it is.
    fn inner<T: Real>(&self) -> &dyn Problem<T> {
        match self {
            Self::Sphere(p) => p,
            Self::Sedov(p) => p,
            Self::Riemann(p) => p,
            Self::Uniform(p) => p,
        }
    }
}

impl<T: Real> Problem<T> for DeckProblem {
    fn name(&self) -> &str {
        self.inner::<T>().name()
    }

    fn accepts(&self, gas: &dyn Thermo) -> Result<(), String> {
        self.inner::<T>().accepts(gas)
    }

    fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, state: &mut [f64]) {
        self.inner::<T>().initial_state(level, cell, state);
    }

    fn refinement(&self) -> Result<Vec<Refinement<T>>, IntegratorError> {
        self.inner::<T>().refinement()
    }

    fn faces(&self) -> Result<Faces<T>, IntegratorError> {
        self.inner::<T>().faces()
    }
}

/// The criteria of a deck's `[[tagging]]` tables.
pub fn deck_refinement<T>(deck: &Deck) -> Result<Vec<Refinement<T>>, TagError> {
    refinement_of(&deck.tagging)
}

/// The faces of a deck's `[boundary]` section.
pub fn deck_faces<T>(deck: &Deck) -> Faces<T> {
    faces_of(&deck.boundary)
}

fn refinement_of<T>(tagging: &[TagSection]) -> Result<Vec<Refinement<T>>, TagError> {
    tagging
        .iter()
        .map(|t| {
            Ok(match t.detector {
                Detector::Gradient => {
                    Refinement::Gradient(t.field.into(), GradientDetector::new(t.tol)?)
                }
                Detector::Shock => {
                    Refinement::Shock(t.field.into(), ShockDetector::new(t.tol, t.onset)?)
                }
            })
        })
        .collect()
}

fn faces_of<T>(boundary: &BoundarySection) -> Faces<T> {
    let f = boundary.faces();
    std::array::from_fn(|axis| {
        Side::BOTH.map(|side| match f[2 * axis + side.index()] {
            Boundary::Outflow => PhysicalBc::Outflow,
            Boundary::Reflecting => PhysicalBc::Reflecting,
            Boundary::Periodic => PhysicalBc::Periodic,
        })
    })
}
