//! The patch hierarchy: layout (boxes, ids, relations) apart from data.
//!
//! - [`Hierarchy`]: geometry, ghost width and levels of [`Patch`]es, with
//!   parents, children, sibling and coarse copy tags ([`Overlap`]),
//!   coarse–fine and physical ghost regions and faces, all computed once
//!   from the boxes and validated on construction.
//! - [`HierarchyData`]: one old/new [`crate::PatchState`] per patch,
//!   aligned with the hierarchy's patch indices.
//! - [`BoxBins`]: the spatial index behind overlap queries.

mod bins;
mod data;
mod layout;
mod patch;
mod pool;
mod relations;
mod summary;
#[cfg(test)]
mod tests;
mod validate;

pub use bins::BoxBins;
pub use data::HierarchyData;
pub use layout::Hierarchy;
pub use patch::{GhostCounts, Overlap, Patch, PatchId, PatchSpec, SizeLimits};
pub use pool::BufferPool;
pub use summary::{HierarchySummary, LevelSummary};
