//! The crate-wide error type.
//!
//! Every variant names what is wrong and where (level, patch id, box, field,
//! file), so that a user reading the message can find the offending input.

use std::path::PathBuf;

use crate::hierarchy::{PatchId, SizeLimits};
use crate::index::{IndexBox, IntVect};

/// Errors of quilt-mesh.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MeshError {
    /// Memory for `what` exceeds the budget, or the allocator refused it.
    #[error("{what} needs {} but {}", crate::memory::format_bytes(*need), match available {
        Some(a) => format!("only {} is available (set {} to change the budget)", crate::memory::format_bytes(*a), crate::memory::MEMORY_LIMIT_VAR),
        None => "the allocation failed".to_string(),
    })]
    OutOfMemory {
        /// What was to be allocated, in the user's terms.
        what: String,
        /// Bytes it needs.
        need: u64,
        /// Bytes the budget allows, if known.
        available: Option<u64>,
    },

    /// A configuration value is out of its valid range.
    #[error("invalid {what}: {why}")]
    InvalidValue {
        /// The setting or argument (e.g. `"geometry prob_hi"`).
        what: String,
        /// Why it is rejected.
        why: String,
    },

    /// A refinement ratio other than 2 or 4.
    #[error("level {level}: refinement ratio {ratio} is not supported (use 2 or 4)")]
    BadRatio {
        /// The level whose ratio (relative to the level below) is wrong.
        level: usize,
        /// The ratio given.
        ratio: i32,
    },

    /// A level index past the levels that exist.
    #[error("level {level} does not exist (there are {num_levels} levels)")]
    NoSuchLevel {
        /// The level asked for.
        level: usize,
        /// How many levels there are.
        num_levels: usize,
    },

    /// A patch with an empty interior box.
    #[error("level {level}, patch {id}: interior box {interior} is empty")]
    EmptyPatch {
        /// Level of the patch.
        level: usize,
        /// Id of the patch.
        id: PatchId,
        /// The box given.
        interior: IndexBox,
    },

    /// A patch interior not inside its level's domain.
    #[error(
        "level {level}, patch {id}: interior {interior} is not inside the level domain {domain}"
    )]
    OutsideDomain {
        /// Level of the patch.
        level: usize,
        /// Id of the patch.
        id: PatchId,
        /// The interior box.
        interior: IndexBox,
        /// The level's domain box.
        domain: IndexBox,
    },

    /// Two patches of one level share cells.
    #[error("level {level}: patches {a} and {b} overlap in {region}")]
    Overlap {
        /// The level.
        level: usize,
        /// One patch.
        a: PatchId,
        /// The other patch.
        b: PatchId,
        /// Cells they share.
        region: IndexBox,
    },

    /// A patch whose size including ghosts is outside the size limits.
    #[error(
        "level {level}, patch {id}: size {}x{}x{} including {ghost} ghost cells per side is outside the limits {}..={} per side",
        size.x, size.y, size.z, limits.min, limits.max
    )]
    SizeLimit {
        /// Level of the patch.
        level: usize,
        /// Id of the patch.
        id: PatchId,
        /// Cells per axis including ghosts.
        size: IntVect,
        /// Ghost width.
        ghost: i32,
        /// The limits.
        limits: SizeLimits,
    },

    /// A fine patch that does not cover whole coarse cells.
    #[error(
        "level {level}, patch {id}: interior {interior} is not aligned to the refinement ratio {ratio} (it must cover whole coarse cells)"
    )]
    NotAligned {
        /// Level of the patch.
        level: usize,
        /// Id of the patch.
        id: PatchId,
        /// The interior box.
        interior: IndexBox,
        /// Ratio to the level below.
        ratio: i32,
    },

    /// A fine patch (with its ghost cells) that the level below does not cover.
    #[error(
        "level {level}, patch {id}: not properly nested: coarse cells {uncovered} (level {}) under its ghost-grown box are not covered by level {} patches",
        level - 1, level - 1
    )]
    NotNested {
        /// Level of the patch.
        level: usize,
        /// Id of the patch.
        id: PatchId,
        /// One box of uncovered coarse cells.
        uncovered: IndexBox,
    },

    /// A patch whose parent is missing, on the wrong level, or not under it.
    #[error("level {level}, patch {id}: bad parent {parent}: {why}")]
    BadParent {
        /// Level of the patch.
        level: usize,
        /// Id of the patch.
        id: PatchId,
        /// The parent id as given (`-1` for none).
        parent: i64,
        /// What is wrong.
        why: String,
    },

    /// Two patches with the same id.
    #[error("patch id {id} is used twice (levels {first_level} and {second_level})")]
    DuplicateId {
        /// The id.
        id: PatchId,
        /// Level of the first use.
        first_level: usize,
        /// Level of the second use.
        second_level: usize,
    },

    /// Level 0 leaves part of the domain uncovered.
    #[error("level 0 does not cover the domain {domain}: cells such as {uncovered} are missing")]
    DomainNotCovered {
        /// The level 0 domain.
        domain: IndexBox,
        /// One box of uncovered cells.
        uncovered: IndexBox,
    },

    /// A hierarchy level with no patches.
    #[error("level {level} has no patches")]
    EmptyLevel {
        /// The level.
        level: usize,
    },

    /// A patch-data access outside the data or with a wrong component.
    #[error("patch data {field}: {why}")]
    BadAccess {
        /// Which field or box.
        field: String,
        /// What is wrong.
        why: String,
    },

    /// Hierarchy data whose patches do not match the hierarchy layout.
    #[error("hierarchy data does not match the hierarchy: {why}")]
    LayoutMismatch {
        /// What differs.
        why: String,
    },

    /// The synthetic generator could not place the requested patches.
    #[error(
        "synthetic hierarchy: placed {placed} of {requested} patches, then {attempts} consecutive placements failed (every candidate overlapped or did not fit)"
    )]
    SyntheticExhausted {
        /// Patches placed.
        placed: usize,
        /// Patches asked for.
        requested: usize,
        /// Consecutive failed attempts before giving up.
        attempts: usize,
    },

    /// A file could not be read or written.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating-system error.
        source: std::io::Error,
    },

    /// A hierarchy file that is not valid JSON or does not follow the schema.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// Line of the error (1-based; 0 if unknown).
        line: usize,
        /// Column of the error (1-based; 0 if unknown).
        column: usize,
        /// serde's description.
        message: String,
    },

    /// A hierarchy file that parses but describes an invalid hierarchy.
    #[error("{}: {source}", path.display())]
    InFile {
        /// The file.
        path: PathBuf,
        /// What is wrong, naming level and patch.
        source: Box<MeshError>,
    },
}

impl MeshError {
    /// Shorthand for [`MeshError::InvalidValue`].
    pub fn invalid(what: impl Into<String>, why: impl Into<String>) -> Self {
        MeshError::InvalidValue {
            what: what.into(),
            why: why.into(),
        }
    }
}
