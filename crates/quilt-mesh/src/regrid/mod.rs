//! Regrid: new levels from tags, data moved conservatively.
//!
//! [`regrid`] runs the three steps, each public on its own:
//! 1. [`new_level_boxes`] — buffer the tags, cluster them level by level,
//!    finest first, with proper nesting built in (`plan.rs`);
//! 2. [`build_hierarchy`] — the new layout (unchanged patches keep their
//!    ids);
//! 3. [`transfer`] — copy old data where old patches of the same level
//!    overlap, interpolate conservatively from the new coarser level
//!    elsewhere.
//!
//! Tags are given per patch of the old hierarchy (`tags[i]` for patch `i`,
//! in its level's index space), e.g. from a [`crate::tag::TagCriterion`]
//! run through [`crate::tag::TagInput::from_patch`] on each patch.

mod build;
mod plan;
mod transfer;

#[cfg(test)]
mod tests;

pub use build::build_hierarchy;
pub use plan::new_level_boxes;
pub(crate) use transfer::same_level0;
pub use transfer::{
    BeforeLevel, TransferStats, interpolated_cells, transfer, transfer_in, transfer_with,
};

use crate::cluster::ClusterError;
use crate::error::MeshError;
use crate::hierarchy::{Hierarchy, HierarchyData};
use crate::interp::Limiter;
use crate::real::Real;
use crate::tag::{TagBox, TagError};

/// Settings of a regrid: a plain struct, start from `RegridOptions::default()`.
///
/// Patch size limits and the ghost width come from the hierarchy.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RegridOptions {
    /// Berger–Rigoutsos efficiency threshold (default 0.7).
    pub efficiency: f64,
    /// Merge threshold (default 0.85).
    pub combine_efficiency: f64,
    /// Proper-nesting buffer in coarse cells (default 1; at least
    /// `ceil(ghost / ratio)` is used).
    pub nesting_buffer: i32,
    /// See [`crate::cluster::ClusterOptions::undo_unprofitable_cuts`] (default `true`).
    pub undo_unprofitable_cuts: bool,
    /// Buffer cells added around the tags (default 2).
    pub tag_buffer: i32,
    /// Most levels the new hierarchy may have (default: as many as the
    /// geometry defines).
    pub max_levels: usize,
    /// Slope limiter of the coarse-to-fine interpolation (default MC).
    pub limiter: Limiter,
    /// Uniform blocks of this many fine cells per side instead of
    /// Berger–Rigoutsos (see [`crate::cluster::ClusterOptions::blocks`];
    /// default `None`).
    pub blocks: Option<i32>,
}

impl Default for RegridOptions {
    fn default() -> Self {
        Self {
            efficiency: 0.7,
            combine_efficiency: 0.85,
            nesting_buffer: 1,
            undo_unprofitable_cuts: true,
            tag_buffer: 2,
            max_levels: usize::MAX,
            limiter: Limiter::MonotonizedCentral,
            blocks: None,
        }
    }
}

impl RegridOptions {
    /// Checks the fields regrid itself uses (clustering checks the rest).
    pub fn validate(&self) -> Result<(), RegridError> {
        if self.tag_buffer < 0 {
            return Err(RegridError::BadOption {
                option: "tag_buffer",
                value: self.tag_buffer as f64,
                why: "must be >= 0",
            });
        }
        if self.max_levels == 0 {
            return Err(RegridError::BadOption {
                option: "max_levels",
                value: 0.0,
                why: "must be >= 1",
            });
        }
        Ok(())
    }
}

/// What went wrong during a regrid.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RegridError {
    /// Not one tag field per patch.
    #[error(
        "{tags} tag fields given for a hierarchy of {patches} patches (one per patch expected)"
    )]
    TagCount {
        /// Tag fields given.
        tags: usize,
        /// Patches of the hierarchy.
        patches: usize,
    },
    /// An option out of range.
    #[error("regrid option {option} = {value} is invalid: {why}")]
    BadOption {
        /// The option.
        option: &'static str,
        /// The value given.
        value: f64,
        /// The valid range.
        why: &'static str,
    },
    /// Old and new hierarchies differ on level 0.
    #[error("the new hierarchy's level 0 differs from the old one (regrid keeps level 0)")]
    Level0Changed,
    /// Patch ids ran out.
    #[error("no patch id left (ids are 32-bit)")]
    IdsExhausted,
    /// Clustering failed.
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// A tag-field operation failed.
    #[error(transparent)]
    Tag(#[from] TagError),
    /// The hierarchy or its data rejected the result.
    #[error(transparent)]
    Mesh(#[from] MeshError),
}

/// The result of [`regrid`].
#[derive(Debug, Clone)]
pub struct Regridded<T> {
    /// The new layout.
    pub hierarchy: Hierarchy,
    /// The data on it: the `old` state's interiors filled, ghost cells left
    /// for ghost fill, `new` undefined (the next step's output buffer).
    pub data: HierarchyData<T>,
    /// Cells copied and interpolated per level.
    pub stats: TransferStats,
}

/// Rebuilds every level above 0 from `tags` (one field per patch of `h`)
/// and moves `data` onto the new hierarchy (consumed: unchanged patches
/// are moved, not copied).
pub fn regrid<T: Real>(
    h: &Hierarchy,
    data: HierarchyData<T>,
    tags: &[TagBox],
    options: &RegridOptions,
) -> Result<Regridded<T>, RegridError> {
    let levels = new_level_boxes(h, tags, options)?;
    let hierarchy = build_hierarchy(h, &levels)?;
    let (data, stats) = transfer(h, data, &hierarchy, options.limiter)?;
    log::debug!(
        "regrid: {} levels / {} patches -> {} levels / {} patches",
        h.num_levels(),
        h.num_patches(),
        hierarchy.num_levels(),
        hierarchy.num_patches()
    );
    Ok(Regridded {
        hierarchy,
        data,
        stats,
    })
}
