//! Ghost fill and prepare: one patch at a time, reading only old state.
//!
//! *Prepare* (Raghavan & Vadhiyar 2015, §2) copies a patch's interior into
//! the array the solver reads and fills its ghost cells; quilt does both
//! for one patch at a time, reading only time-`n` ("old") data of any
//! patch, so patches can be prepared in parallel and in any order. The
//! destination is a [`FillTarget`]: the patch's own arrays or its place in
//! a bin of a batch buffer (quilt-sweep's layout), written directly.
//!
//! Ghost cells are filled in an order that makes edges and corners right:
//!
//! 1. **siblings**: the precomputed copy tags of the hierarchy (same-level
//!    interiors, periodic images included), row by row;
//! 2. **coarse–fine**: the remaining ghost cells inside the (periodically
//!    extended) domain, by conservative limited linear interpolation
//!    ([`crate::interp`]) from the coarse cells under them, gathered from
//!    the level below through the coarse copy tags;
//! 3. **physical**: cells outside the domain along non-periodic axes,
//!    axis after axis ([`BoundaryConditions`]: outflow, reflecting,
//!    periodic, [`UserBoundary`]).
//!
//! [`FillPlan`] holds what depends on the layout only (copy tags, coarse
//! regions to gather, interpolated boxes, boundary slabs); nothing that
//! depends on field data is cached. [`GhostFill`] bundles the plan, the
//! boundary conditions and the limiter; it is `Sync`, and each filling
//! thread passes its own [`FillScratch`].

pub(crate) mod boundary;
mod plan;
mod prepare;
mod target;

pub use boundary::{BoundaryConditions, BoundaryFace, PhysicalBc, UserBoundary};
pub use plan::{FillPlan, PatchPlan};
pub use prepare::{FillCounts, FillScratch, GhostFill, OldData};
pub use target::{BinPlacement, FillTarget, split_bins};

#[cfg(test)]
mod tests;
