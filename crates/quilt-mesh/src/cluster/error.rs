//! Errors of clustering.

use crate::index::IndexBox;
use crate::tag::TagError;

/// What is wrong with the input of a clustering.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// A refinement ratio other than 2 or 4.
    #[error("refinement ratio {0} is not supported (use 2 or 4)")]
    BadRatio(i32),

    /// An option out of its valid range.
    #[error("cluster option {option} = {value} is invalid: {why}")]
    BadOption {
        /// The option.
        option: &'static str,
        /// The value given.
        value: f64,
        /// The valid range.
        why: &'static str,
    },

    /// Patch size limits that leave no room for clustering.
    #[error(
        "patch sizes {min}..={max} per side (ghosts included, {ghost} per side) at ratio {ratio} allow coarse boxes of {min_coarse}..={max_coarse} cells per side; clustering needs at least one cell and max >= 2 * min - 1 so that a box over the maximum splits into two boxes over the minimum"
    )]
    SizeRange {
        /// Smallest side, ghosts included (fine cells).
        min: i32,
        /// Largest side, ghosts included (fine cells).
        max: i32,
        /// Ghost width.
        ghost: i32,
        /// Refinement ratio.
        ratio: i32,
        /// Smallest side of a box in the tag (coarse) index space.
        min_coarse: i32,
        /// Largest side of a box in the tag (coarse) index space.
        max_coarse: i32,
    },

    /// An empty domain box.
    #[error("the domain box {0} is empty")]
    EmptyDomain(IndexBox),

    /// A coarse patch that is empty or not inside the domain.
    #[error("coarse patch {index} ({patch}) is empty or not inside the domain {domain}")]
    PatchOutsideDomain {
        /// Position of the patch in the list given.
        index: usize,
        /// The patch box.
        patch: IndexBox,
        /// The domain.
        domain: IndexBox,
    },

    /// Two coarse patches share cells.
    #[error("coarse patches {a} and {b} overlap in {region}")]
    OverlappingPatches {
        /// Position of one patch.
        a: usize,
        /// Position of the other.
        b: usize,
        /// Cells they share.
        region: IndexBox,
    },

    /// Two tag fields share cells (their tags would be counted twice).
    #[error("tag fields {a} and {b} overlap in {region}")]
    OverlappingTags {
        /// Position of one field.
        a: usize,
        /// Position of the other.
        b: usize,
        /// Cells they share.
        region: IndexBox,
    },

    /// A tag-field operation failed.
    #[error(transparent)]
    Tag(#[from] TagError),
}
