//! Errors of tagging.

use crate::index::{IndexBox, IntVect};

/// What went wrong while building a tag field or running a criterion.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum TagError {
    /// A tag field over more cells than [`super::MAX_TAG_CELLS`].
    #[error("tag field over {region} has {cells} cells, more than the limit of {limit}")]
    RegionTooLarge {
        /// The requested region.
        region: IndexBox,
        /// Its number of cells.
        cells: i64,
        /// The largest number of cells allowed.
        limit: i64,
    },

    /// A cell outside the tag field's region.
    #[error("cell ({}, {}, {}) lies outside the tag field region {region}", cell.x, cell.y, cell.z)]
    CellOutside {
        /// The cell.
        cell: IntVect,
        /// The tag field's region.
        region: IndexBox,
    },

    /// A field slice whose length does not match its data box.
    #[error("field data of length {len} does not match its data box {data_box} ({cells} cells)")]
    DataLength {
        /// Length of the slice.
        len: usize,
        /// The box the slice is said to cover.
        data_box: IndexBox,
        /// Number of cells of that box.
        cells: i64,
    },

    /// The box of cells to tag is not inside the field data.
    #[error("cells to tag {interior} are not inside the field data box {data_box}")]
    InteriorOutsideData {
        /// The cells to tag.
        interior: IndexBox,
        /// The field data box.
        data_box: IndexBox,
    },

    /// A detector stencil that reaches past the field data (too few ghost cells).
    #[error(
        "{criterion} needs {width} ghost cell(s) around {interior}, but the field data covers only {data_box}"
    )]
    StencilOutsideData {
        /// The criterion's name.
        criterion: &'static str,
        /// Ghost cells its stencil needs on every side.
        width: i32,
        /// The cells to tag.
        interior: IndexBox,
        /// The field data box.
        data_box: IndexBox,
    },

    /// The cells to tag are not inside the tag field that receives them.
    #[error("cells to tag {interior} are not inside the tag field region {region}")]
    InteriorOutsideTags {
        /// The cells to tag.
        interior: IndexBox,
        /// The tag field's region.
        region: IndexBox,
    },

    /// A previous-tags field that does not cover the cells to tag.
    #[error("previous tags over {region} do not cover the cells to tag {interior}")]
    PreviousTagsOutside {
        /// The cells to tag.
        interior: IndexBox,
        /// The previous tag field's region.
        region: IndexBox,
    },

    /// A cell size that is not a positive finite number.
    #[error("cell size along axis {axis} must be positive and finite, got {value}")]
    BadCellSize {
        /// The axis.
        axis: usize,
        /// The value given.
        value: f64,
    },

    /// A criterion parameter out of range.
    #[error("{criterion}: parameter {parameter} = {value} is invalid: {why}")]
    BadParameter {
        /// The criterion's name.
        criterion: &'static str,
        /// The parameter.
        parameter: &'static str,
        /// The value given.
        value: f64,
        /// The valid range.
        why: &'static str,
    },

    /// A negative buffer width.
    #[error("buffer width must be non-negative, got {0}")]
    NegativeBuffer(i32),

    /// A refinement ratio other than 2 or 4.
    #[error("refinement ratio {0} is not supported (use 2 or 4)")]
    BadRatio(i32),

    /// A component index past the patch's components.
    #[error("component {comp} does not exist (the patch has {ncomp})")]
    NoComponent {
        /// The component asked for.
        comp: usize,
        /// Components of the patch.
        ncomp: usize,
    },

    /// Raw tag words that do not form a field over their region.
    #[error("{words} tag words given for {region}, which takes {expected} with zero padding bits{}", if *padding { " (a padding bit is set)" } else { "" })]
    BadWords {
        /// The field's region.
        region: IndexBox,
        /// 32-bit words given.
        words: usize,
        /// 32-bit words the region takes.
        expected: usize,
        /// Whether the count was right but a bit past a row's end was set.
        padding: bool,
    },

    /// Component slices of different lengths.
    #[error("component {component} has length {len}, expected {expected}")]
    ComponentLength {
        /// Which component.
        component: usize,
        /// Its length.
        len: usize,
        /// The length of the others.
        expected: usize,
    },
}
