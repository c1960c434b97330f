//! Tagging: which cells need refinement.
//!
//! * [`TagBox`]: a bit field of tagged cells over one box, with counting,
//!   iteration, union/intersection, coarsening and [`TagBox::buffer`]
//!   (buffer cells around tags).
//! * [`TagCriterion`]: a criterion tags cells of one patch from one field
//!   component given as a plain slice ([`TagInput`]).
//! * [`TagInput::from_patch`] reads one component of a
//!   [`crate::PatchData`].
//! * Built-ins modelled on SAMRAI's Euler example: [`GradientDetector`]
//!   (density or pressure gradient) and [`ShockDetector`]; user closures via
//!   [`FnCriterion`]; [`euler_pressure`] derives the pressure field.
//!
//! Tags then go to [`crate::cluster`] to become patches.

mod buffer;
mod criterion;
mod derived;
mod detectors;
mod error;
mod patch;
mod tag_box;

#[cfg(test)]
mod tests;

pub use criterion::{FnCriterion, TagCriterion, TagInput};
pub use derived::{euler_pressure, pressure_with};
pub use detectors::{
    DEFAULT_RETAG_ONSET_FACTOR, DEFAULT_RETAG_TOL_FACTOR, DEFAULT_SHOCK_ONSET, DIRECTIONS,
    GradientDetector, ShockDetector, direction_lengths,
};
pub use error::TagError;
pub(crate) use tag_box::row_ones;
pub use tag_box::{MAX_TAG_CELLS, TagBox, TagIter};
