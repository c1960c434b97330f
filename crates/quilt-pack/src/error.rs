//! Error types: bad items, bins and options for [`crate::pack`], malformed
//! item files for [`crate::parse_items`], and option names that do not parse.

use crate::Extent;

/// Why a packing request was refused. Every variant that concerns one item
/// names its index in the caller's slice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    /// The bin has a zero side, so nothing can be packed into it.
    #[error("bin extent {bin:?} has a zero side; every bin side must be at least 1 cell")]
    EmptyBin {
        /// The offending bin extent.
        bin: Extent,
    },
    /// The bin volume does not fit in 64 bits, so volumes cannot be accounted.
    #[error("bin extent {bin:?} has a volume above 2^64 cells")]
    BinTooLarge {
        /// The offending bin extent.
        bin: Extent,
    },
    /// An item has a zero side.
    #[error(
        "item {item}: extent {extent:?} has a zero side; every item side must be at least 1 cell"
    )]
    EmptyItem {
        /// Index of the item in the input slice.
        item: usize,
        /// Its extent.
        extent: Extent,
    },
    /// An item is longer than the bin along some axis (in every allowed
    /// orientation when rotation is on).
    #[error(
        "item {item}: extent {extent:?} does not fit in bin {bin:?} \
         (axis {axis} needs {needed} cells, the bin has {available}{rotation})",
        rotation = if *.rotation_allowed { " in any orientation" } else { "" }
    )]
    ItemTooLarge {
        /// Index of the item in the input slice.
        item: usize,
        /// Its extent.
        extent: Extent,
        /// The bin extent.
        bin: Extent,
        /// First axis (0 = x, 1 = y, 2 = z) on which the item, as given, is too long.
        axis: usize,
        /// The item's side on that axis.
        needed: u32,
        /// The bin's side on that axis.
        available: u32,
        /// Whether every orientation was tried.
        rotation_allowed: bool,
    },
    /// A patch index past the end of the hierarchy's patches.
    #[error(
        "item {item}: patch index {index} is out of range (the hierarchy has {patches} patches)"
    )]
    UnknownPatch {
        /// Position of the index in the caller's list.
        item: usize,
        /// The offending patch index.
        index: usize,
        /// Number of patches in the hierarchy.
        patches: usize,
    },
    /// A clustered ordering was asked for with a cluster width outside 1..=100 %.
    #[error("cluster width delta_percent = {delta_percent} is outside 1..=100")]
    InvalidClusterWidth {
        /// The offending width in percent of the bin's base area or height.
        delta_percent: u32,
    },
}

impl PackError {
    /// The index of the offending item, where the error concerns one item.
    pub fn item(&self) -> Option<usize> {
        match self {
            PackError::EmptyItem { item, .. }
            | PackError::ItemTooLarge { item, .. }
            | PackError::UnknownPatch { item, .. } => Some(*item),
            _ => None,
        }
    }
}

/// Why an item file (one `w,h,d` line per item) could not be read. Line
/// numbers count from 1, as editors show them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ItemsFileError {
    /// A line does not hold exactly three comma-separated fields.
    #[error(
        "line {line}: expected three comma-separated sizes `w,h,d`, found {found} field(s) in `{text}`"
    )]
    FieldCount {
        /// 1-based line number.
        line: usize,
        /// Number of fields found.
        found: usize,
        /// The line as written (trimmed).
        text: String,
    },
    /// A field is not a non-negative integer that fits in 32 bits.
    #[error(
        "line {line}, field {field}: `{text}` is not a cell count (a positive integer below 2^32)"
    )]
    NotAnInteger {
        /// 1-based line number.
        line: usize,
        /// 1-based field number (1 = w, 2 = h, 3 = d).
        field: usize,
        /// The field as written (trimmed).
        text: String,
    },
    /// A field is negative.
    #[error("line {line}, field {field}: size {text} is negative")]
    Negative {
        /// 1-based line number.
        line: usize,
        /// 1-based field number.
        field: usize,
        /// The field as written (trimmed).
        text: String,
    },
    /// A field is zero.
    #[error("line {line}, field {field}: size is zero; item sides must be at least 1 cell")]
    Zero {
        /// 1-based line number.
        line: usize,
        /// 1-based field number.
        field: usize,
    },
}

impl ItemsFileError {
    /// The 1-based line the error is on.
    pub fn line(&self) -> usize {
        match self {
            ItemsFileError::FieldCount { line, .. }
            | ItemsFileError::NotAnInteger { line, .. }
            | ItemsFileError::Negative { line, .. }
            | ItemsFileError::Zero { line, .. } => *line,
        }
    }
}

/// A heuristic, merit or ordering name that [`std::str::FromStr`] did not recognise.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind} `{text}`; expected {expected}")]
pub struct ParseOptionError {
    /// What was being parsed (`heuristic`, `merit`, `sort order`, `extent`).
    pub kind: &'static str,
    /// The text that did not parse.
    pub text: String,
    /// The accepted spellings.
    pub expected: &'static str,
}
